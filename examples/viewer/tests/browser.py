#!/usr/bin/env python3
"""Drives the viewer page in a real headless Chromium (WebGPU on SwiftShader)
through chromedriver's W3C WebDriver API, standard library only.

    browser.py --www DIR --fixtures DIR [--conformance DIR ...]
               [--screenshot PNG] [--perf JSON]

Opens every fixture (files, streams, descriptors written by our writers, and
hostile ones) through the page's file picker, and checks: the listed tensors
against the fixture manifest and the conformance manifests; the GPU's min/max
of every drawn window against the values written (and the page's CPU
oracle); the exact error text (the core's) for the hostile inputs; known
pixels of the heatmap of a known pattern, in the canvas and in a screenshot;
for `big.hrry` (1 GiB), that only slices were read; and that without WebGPU
the page says so and still lists the tensors.
"""
import argparse
import base64
import functools
import http.server
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zlib

ELEM = "element-6066-11e4-a52e-4f735466cecf"
STOP0, STOP4 = (0, 0, 4), (252, 255, 164)
FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Driver:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.sid = None

    def call(self, method, path, body=None, timeout=180):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.load(r)["value"]
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{method} {path}: {e.read()[:2000]!r}") from None

    def s(self, method, path, body=None, timeout=180):
        return self.call(method, f"/session/{self.sid}{path}", body, timeout)

    def run(self, script, *args):
        return self.s("POST", "/execute/sync", {"script": script, "args": list(args)})

    def run_async(self, script, *args):
        return self.s("POST", "/execute/async", {"script": script, "args": list(args)})

    def find(self, css):
        return self.s("POST", "/element", {"using": "css selector", "value": css})[ELEM]


def wait(d, cond, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        v = d.run(cond)
        if v:
            return v
        time.sleep(0.05)
    raise RuntimeError(f"timed out after {timeout}s waiting for {what}")


def open_file(d, path, timeout=60):
    seq = d.run("return window.viewer.seq;")
    d.run("document.getElementById('pick').value = '';")
    d.s("POST", f"/element/{d.find('#pick')}/value", {"text": os.path.abspath(path)})
    wait(d, f"return window.viewer.done > {seq};", timeout, f"{path} to open")
    return d.run("return window.viewer.result;")


def draw(d, name, slice_):
    return d.run_async("const done = arguments[arguments.length - 1];"
                       "window.viewer.draw(arguments[0], arguments[1]).then(done, (e) => done(String(e)));",
                       name, slice_)


def png_pixels(data):
    """Decodes an 8-bit RGB/RGBA non-interlaced PNG: (width, height, rows of bytes, channels)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
            ch = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, rows, prev, stride = zlib.decompress(idat), [], bytearray(w * ch), w * ch
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - ch] if x >= ch else 0
            b, c = prev[x], prev[x - ch] if x >= ch else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows, ch


def pixel(img, x, y):
    w, h, rows, ch = img
    return tuple(rows[y][x * ch:x * ch + 3])


def check_tensors(res, expect, where):
    got = [(t["name"], t["view"]["type"], t["view"]["shape"]) for t in res["tensors"]]
    want = [(t["name"], t["type"], t["shape"]) for t in expect]
    check(got == want, f"{where}: tensors {got} != {want}")


def fixtures(d, fx):
    quantized = set()
    manifest = json.load(open(os.path.join(fx, "manifest.json")))
    for f in manifest["files"]:
        res = open_file(d, os.path.join(fx, f["file"]))
        where = f["file"]
        check(res["kind"] == f["kind"], f"{where}: kind {res['kind']} != {f['kind']}")
        if f["error"]:
            err = res["error"] or {}
            check(err.get("text") == f["error"], f"{where}: error {err!r} != {f['error']!r}")
            check(isinstance(err.get("offset"), int), f"{where}: error without an offset")
            txt = d.run("return document.getElementById('error').textContent;")
            check(f["error"] in txt, f"{where}: the page shows {txt!r}")
            print(f"ok {where}: {err.get('kind')} at byte {err.get('offset')}")
            continue
        check(res["error"] is None, f"{where}: unexpected error {res['error']}")
        check_tensors(res, f["tensors"], where)
        for t in f["tensors"]:
            for slice_, lo, hi in t["draws"]:
                if f["kind"] == "descriptor":
                    continue
                r = draw(d, t["name"], slice_)
                ok = isinstance(r, dict) and r["min"] == lo and r["max"] == hi and r["cpuMin"] == lo and r["cpuMax"] == hi
                check(ok, f"{where}: {t['name']}[{slice_}] GPU/CPU min/max {r} != {lo}/{hi}")
                check(isinstance(r, dict) and r["quant"] == t["quant"], f"{where}: {t['name']} drawn as {r}, not {t['quant']}")
                if ok and t["quant"] != "none":
                    quantized.add(t["quant"])
        print(f"ok {where}: {len(res['tensors'])} tensors, {len(res['draws'])} draws")
    every = {"per_tensor_affine", "per_channel_affine", "per_block_affine", "nf4", "mxfp"}
    check(quantized == every, f"schemes dequantized on the GPU: {sorted(quantized)} != {sorted(every)}")
    print(f"ok every quantization scheme dequantized on the GPU: {', '.join(sorted(quantized))}")


def fields(d, fx):
    """The fields pane is the core's walker: names, byte ranges and values
    that the spec fixes for known descriptors."""
    path = os.path.join(fx, "ramp.hrrd")
    res = open_file(d, path)
    f = res["tensors"][0]["view"]["fields"] if res["tensors"] else []
    by = {n: (a, b, v) for n, a, b, v in f}
    # float32 [64, 128], one buffer: the fixed header is 20 bytes, then the shape.
    check(by.get("shape[0]") == (20, 28, "64 (0x40)") and by.get("shape[1]") == (28, 36, "128 (0x80)")
          and by.get("byte_offset", (0,))[:2] == (36, 44), f"ramp.hrrd fields {f[:12]}")
    # Every byte once, in order.
    ends = [(a, b) for _, a, b, _ in f]
    check(f and ends[0][0] == 0 and all(x[1] == y[0] for x, y in zip(ends, ends[1:]))
          and ends[-1][1] == os.path.getsize(path), f"ramp.hrrd field ranges {ends}")
    check(any(n == "buffer[0].byte_size" and v == str(64 * 128 * 4) + " (0x8000)" for n, _, _, v in f),
          f"ramp.hrrd buffer[0].byte_size {by.get('buffer[0].byte_size')}")
    # The page shows them: the row of shape[1] in the fields table.
    d.run("window.viewer.draw('ramp.hrrd', 0);")
    rows = d.run("return [...document.querySelectorAll('#fields tbody tr')].map((r) => [...r.cells].map((c) => c.textContent));")
    check(["shape[1]", "28..36", "128 (0x80)"] in rows, f"ramp.hrrd fields pane {rows[:10]}")
    # A per-block descriptor: the scheme's fields at the spec's offsets from
    # its tag (axis +4, block_size +8, buffers +12/+16, scale type +20).
    res = open_file(d, os.path.join(fx, "quant.hrry"))
    t = next((t for t in res["tensors"] if t["name"] == "pb_i4_f16"), None)
    q = {n: (a, b, v) for n, a, b, v in (t["view"]["fields"] if t else []) if n.startswith("quant.")}
    x = q.get("quant.scheme_tag", (0, 0, ""))[0]
    want = {"quant.scheme_tag": (x, x + 1, "3 (per_block_affine)"), "quant.axis": (x + 4, x + 8, "1"),
            "quant.block_size": (x + 8, x + 12, "8"), "quant.scale_buffer_index": (x + 12, x + 16, "1"),
            "quant.zero_point_buffer_index": (x + 16, x + 20, "2"), "quant.scale_type_tag": (x + 20, x + 21, "1")}
    check(x > 0 and all(q.get(k) == v for k, v in want.items()), f"pb_i4_f16 quant fields {q}")
    print(f"ok fields pane: {len(f)} fields of ramp.hrrd, per-block scheme fields at {x}..{x + 24}")


def conformance(d, root):
    m = json.load(open(os.path.join(root, "manifest.json")))
    n = 0
    for e in m.get("descriptors", []):
        res = open_file(d, os.path.join(root, e["file"]))
        x, where = e["expect"], f"{root}/{e['file']}"
        if res["error"] or len(res["tensors"]) != 1:
            check(False, f"{where}: {res['error']}")
            continue
        v = res["tensors"][0]["view"]
        # Private element types are named "private" here; dynamic dims
        # (u64::MAX) come through JSON as floats.
        same_type = v["type"] == x["element_type"] or (v["type"] == "private" and x["element_type_tag"] >= 0xF0)
        same_shape = [float(a) for a in v["shape"]] == [float(b) for b in x["shape"]]
        check(same_type and same_shape, f"{where}: {v['type']} {v['shape']}")
        check([b["size"] for b in v["buffers"]] == x["buffer_byte_sizes"], f"{where}: buffers {v['buffers']}")
        n += 1
    for f in m.get("files", []):
        res, where = open_file(d, os.path.join(root, f["file"])), f"{root}/{f['file']}"
        check(res["error"] is None, f"{where}: {res['error']}")
        check_tensors(res, [{"name": t["name"], "type": t["element_type"], "shape": t["shape"]} for t in f["tensors"]], where)
        got = [t["view"]["bytes"] for t in res["tensors"]]
        check(got == [t["data_bytes"] for t in f["tensors"]], f"{where}: bytes {got}")
        kv = {k: v for k, v in res["kv"]}
        for e in f.get("kv", []):
            want = e["value_string"] if e["kind"] == "string" else str(e["value_int"])
            check(kv.get(e["key"]) == want, f"{where}: KV {e['key']} = {kv.get(e['key'])!r}")
        n += 1
    print(f"ok {root}: {n} inputs")


def heatmap_pixels(d, fx, shot):
    open_file(d, os.path.join(fx, "pattern.hrry"))
    r = draw(d, "ramp", 0)
    check(isinstance(r, dict) and r["min"] == 0 and r["max"] == 8191, f"ramp: {r}")
    # The canvas itself: ramp[r][c] = r*128 + c, so (0,0) is the minimum and
    # (127,63) the maximum; the middle value maps to the middle stop.
    px = d.run("const g = document.getElementById('heat').getContext('2d');"
               "return [[0,0],[127,63],[0,32]].map(([x,y]) => Array.from(g.getImageData(x,y,1,1).data));")
    check(tuple(px[0][:3]) == STOP0 and tuple(px[1][:3]) == STOP4, f"canvas corners {px}")
    check(px[2][:3] == [188, 55, 84] or abs(px[2][0] - 188) <= 3, f"canvas middle {px[2]} (expected near stop 2)")
    # The screenshot: the canvas is drawn at 4x (512 px for 128 columns).
    img = png_pixels(base64.b64decode(d.s("GET", f"/element/{d.find('#heat')}/screenshot")))
    w, h = img[0], img[1]
    tl, br = pixel(img, 3, 3), pixel(img, w - 4, h - 4)
    check(tl == STOP0 and br == STOP4, f"screenshot {w}x{h}: corners {tl} {br}")
    if shot:
        with open(shot, "wb") as f:
            f.write(base64.b64decode(d.s("GET", "/screenshot")))
        print(f"screenshot: {shot}")
    print(f"ok heatmap pixels ({w}x{h} element screenshot)")


def big(d, fx, perf):
    path = os.path.join(fx, "big.hrry")
    if not os.path.exists(path):
        return
    size = os.path.getsize(path)
    res = open_file(d, path, timeout=120)
    check(res["error"] is None and res["tensors"] and res["tensors"][0]["view"]["shape"] == [16384, 16384],
          f"big: {res['error']} {res['tensors'][:1]}")
    window = 512 * 512 * 4
    read = res["bytesRead"]
    # Header, trailer, index, descriptor and the 512x512 window: nothing else.
    check(read < window + 64 * 1024, f"big: read {read} bytes of {size}")
    dr = res["draws"][0] if res["draws"] else None
    check(dr and dr["min"] == 0 and dr["max"] == 511 * 16384 + 511, f"big: draw {dr}")
    print(f"ok big.hrry: {size} bytes, {read} read, first table {res['firstTableMs']:.1f} ms")
    if perf:
        json.dump({"file_bytes": size, "bytes_read": read, "first_table_ms": res["firstTableMs"]}, open(perf, "w"))


def no_webgpu(d, base, fx):
    d.s("POST", "/url", {"url": base + "/?nogpu"})
    wait(d, "return window.viewer && window.viewer.ready === true;", 60, "the page (no WebGPU)")
    res = open_file(d, os.path.join(fx, "pattern.hrry"))
    msg = d.run("return document.getElementById('gpu').textContent + ' | ' + document.getElementById('range').textContent;")
    check(len(res["tensors"]) == 6 and not res["draws"] and "not available" in msg, f"no WebGPU: {msg} {len(res['tensors'])}")
    print(f"ok without WebGPU: {msg}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--www", required=True)
    ap.add_argument("--fixtures", required=True)
    ap.add_argument("--conformance", action="append", default=[])
    ap.add_argument("--screenshot")
    ap.add_argument("--perf")
    a = ap.parse_args()

    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=a.www)
    handler.extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                              ".wasm": "application/wasm", ".js": "text/javascript"}
    http.server.SimpleHTTPRequestHandler.log_message = lambda *args: None
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{srv.server_address[1]}"

    port = free_port()
    drv = subprocess.Popen([shutil.which("chromedriver") or "chromedriver", f"--port={port}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    profile = tempfile.mkdtemp()
    d = Driver(port)
    try:
        for _ in range(100):
            try:
                d.call("GET", "/status", timeout=2)
                break
            except Exception:
                time.sleep(0.1)
        args = ["--headless=new", "--enable-unsafe-webgpu", "--enable-features=Vulkan",
                "--use-vulkan=swiftshader", "--use-webgpu-adapter=swiftshader",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", f"--user-data-dir={profile}", "--window-size=1100,900",
                "--force-device-scale-factor=1"]
        if os.geteuid() == 0:
            args += ["--no-sandbox", "--disable-gpu-sandbox"]
        opts = {"args": args}
        chromium = shutil.which("chromium")
        if chromium:
            opts["binary"] = chromium
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": opts}}}
        d.sid = d.call("POST", "/session", caps)["sessionId"]
        d.s("POST", "/timeouts", {"script": 120000})
        d.s("POST", "/url", {"url": base + "/"})
        wait(d, "return window.viewer && window.viewer.ready;", 60, "the page to start")
        gpu = d.run("return window.viewer.gpu;")
        print(f"WebGPU adapter: {gpu}")
        if not gpu:
            print("  the page says:", d.run("return document.getElementById('gpu').textContent;"))
        if os.environ.get("VIEWER_REQUIRE_WEBGPU"):
            check(bool(gpu), "no WebGPU adapter (VIEWER_REQUIRE_WEBGPU is set)")
        fixtures(d, a.fixtures)
        fields(d, a.fixtures)
        for root in a.conformance:
            conformance(d, root)
        heatmap_pixels(d, a.fixtures, a.screenshot)
        big(d, a.fixtures, a.perf)
        no_webgpu(d, base, a.fixtures)
    finally:
        if d.sid:
            try:
                d.s("DELETE", "")
            except Exception:
                pass
        drv.terminate()
        drv.wait(10)
        srv.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    if FAILS:
        print(f"{len(FAILS)} check(s) failed")
        sys.exit(1)
    print("viewer: all browser checks passed")


if __name__ == "__main__":
    main()
