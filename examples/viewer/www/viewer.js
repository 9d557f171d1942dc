// The hurray viewer's page logic: reads Blob slices, hands them to the wasm
// module (hurray-core), draws with it (hurray-gpu on WebGPU). Hand-written,
// no bundler. `window.viewer` is the state the browser test reads.
import init, * as hv from './pkg/hurray_viewer.js';

const $ = (id) => document.getElementById(id);
const SMALL = 32 << 20;      // files up to this are also checked whole (FileView)
const CHUNK = 4 << 20;       // read size for whole files and streams
const MAX_DESC = 1 << 20;    // the largest descriptor read
const MAX_LISTED = 10000;    // tensors listed (descriptors read) at most
const WINDOW = 512;          // the drawn window: at most WINDOW x WINDOW elements
const STOPS = [[0, 0, 4], [87, 16, 110], [188, 55, 84], [249, 142, 9], [252, 255, 164]];

const viewer = window.viewer = { seq: 0, done: 0, gpu: null, result: null };
let current = null; // { kind, blob, plan, tensors, session, whole }

function setError(e) {
  const r = viewer.result;
  if (typeof e === 'string') e = { kind: 'Error', offset: 0, text: e };
  r.error = e;
  $('error').textContent = `${e.kind} (byte ${e.offset}): ${e.text}`;
}

async function read(off, len) {
  const c = current;
  if (c.whole) return c.whole.subarray(off, off + len);
  const buf = new Uint8Array(await c.blob.slice(off, off + len).arrayBuffer());
  viewer.result.bytesRead += buf.length;
  return buf;
}

function progress(done, total, what) {
  const p = $('progress');
  p.hidden = done >= total;
  p.max = total; p.value = done;
  $('status').textContent = `${what}: ${done.toLocaleString()} / ${total.toLocaleString()} bytes`;
}

async function readWhole(blob) {
  const out = new Uint8Array(blob.size);
  for (let off = 0; off < blob.size; off += CHUNK) {
    out.set(await read(off, Math.min(CHUNK, blob.size - off)), off);
    progress(Math.min(off + CHUNK, blob.size), blob.size, 'reading');
  }
  return out;
}

function kindOf(name, magic) {
  if (/\.(hrrd|bin)$/i.test(name)) return 'descriptor';
  if (/\.hrrs$/i.test(name)) return 'stream';
  if (/\.hrry$/i.test(name)) return 'file';
  return String.fromCharCode(...magic) === 'HRRYFILE' ? 'file' : 'stream';
}

async function openBlob(blob, name) {
  const seq = ++viewer.seq;
  const t0 = performance.now();
  viewer.result = { name, kind: null, tensors: [], kv: [], error: null, draws: [], bytesRead: 0, firstTableMs: null };
  current = { blob, whole: null };
  for (const id of ['tensors', 'kv', 'fields', 'drawing']) $(id).hidden = true;
  $('error').textContent = '';
  try {
    const kind = kindOf(name, blob.size >= 8 ? await read(0, 8) : new Uint8Array());
    viewer.result.kind = current.kind = kind;
    if (kind === 'file') await openFile(blob);
    else if (kind === 'stream') await openStream(blob);
    else await openDescriptor(blob);
    if (viewer.result.tensors.length) {
      viewer.result.firstTableMs = performance.now() - t0;
      showTable();
      const first = viewer.result.tensors.findIndex((t) => t.view.draw && t.view.draw.rows);
      await select(first >= 0 ? first : 0, 0);
    }
  } catch (e) {
    setError(String(e && e.message || e));
  }
  $('status').textContent = `${name}: ${viewer.result.kind}, ${viewer.result.tensors.length} tensor(s), ` +
    `${viewer.result.bytesRead.toLocaleString()} of ${blob.size.toLocaleString()} bytes read`;
  $('progress').hidden = true;
  viewer.done = seq;
}

async function openFile(blob) {
  if (blob.size <= SMALL) {
    // Small files are read whole and checked whole (every descriptor, data
    // range and composite) by the core's FileView before anything is listed.
    const whole = await readWhole(blob);
    const v = JSON.parse(hv.verify_file(whole));
    if (v.error) return setError(v.error);
    current.whole = whole;
  }
  const plan = JSON.parse(hv.file_plan(await read(0, 64), await read(blob.size - 40, 40), blob.size));
  if (plan.error) return setError(plan.error);
  const [io, il] = plan.index, [ko, kl] = plan.kv;
  const idx = JSON.parse(hv.file_index(await read(io, il), io, kl ? await read(ko, kl) : new Uint8Array(), ko, plan.crc, plan.check_crc));
  if (idx.error) return setError(idx.error);
  viewer.result.kv = idx.kv;
  const list = idx.tensors.slice(0, MAX_LISTED);
  for (let i = 0; i < list.length; i++) {
    const t = list[i];
    if (t.desc[1] > MAX_DESC) return setError({ kind: 'DescriptorTooLong', offset: t.desc[0], text: `${t.name}: a ${t.desc[1]}-byte descriptor` });
    const view = JSON.parse(hv.describe(await read(t.desc[0], t.desc[1]), t.desc[0], plan.alignment));
    if (view.error) return setError(view.error);
    viewer.result.tensors.push({ name: t.name, data: t.data, descOff: t.desc, view });
    if (i % 64 === 0) progress(i, list.length, 'descriptors');
  }
}

async function openStream(blob) {
  const s = current.session = new hv.StreamSession();
  let ok = true;
  for (let off = 0; off < blob.size && ok; off += CHUNK) {
    ok = s.feed(await read(off, Math.min(CHUNK, blob.size - off)));
    progress(Math.min(off + CHUNK, blob.size), blob.size, 'decoding');
  }
  if (ok) s.finish();
  const r = JSON.parse(s.json());
  r.tensors.forEach((t, i) => viewer.result.tensors.push({ name: t.name, index: i, kept: t.kept, view: t.view }));
  if (r.error) setError(r.error);
}

async function openDescriptor(blob) {
  if (blob.size > MAX_DESC) return setError({ kind: 'DescriptorTooLong', offset: 0, text: `a ${blob.size}-byte descriptor` });
  const view = JSON.parse(hv.describe(await read(0, blob.size), 0, 64));
  if (view.error) return setError(view.error);
  viewer.result.tensors.push({ name: blob.name || 'descriptor', view });
}

function cell(tr, text) { const td = document.createElement('td'); td.textContent = text; tr.appendChild(td); }

function showTable() {
  const body = $('tensors').tBodies[0];
  body.replaceChildren();
  viewer.result.tensors.forEach((t, i) => {
    const tr = document.createElement('tr');
    const v = t.view;
    for (const x of [t.name, v.type, `[${v.shape.join(', ')}]`, v.layout, v.device, v.bytes.toLocaleString()]) cell(tr, x);
    tr.onclick = () => select(i, 0);
    body.appendChild(tr);
  });
  $('tensors').hidden = false;
  const kv = $('kv').tBodies[0];
  kv.replaceChildren();
  for (const [k, v] of viewer.result.kv) { const tr = document.createElement('tr'); cell(tr, k); cell(tr, v); kv.appendChild(tr); }
  $('kv').hidden = viewer.result.kv.length === 0;
}

async function select(i, slice) {
  const t = viewer.result.tensors[i];
  if (!t) return null;
  [...$('tensors').tBodies[0].rows].forEach((r, j) => r.classList.toggle('sel', i === j));
  const fields = $('fields').tBodies[0];
  fields.replaceChildren();
  for (const [k, a, b, v] of t.view.fields) { const tr = document.createElement('tr'); cell(tr, k); cell(tr, `${a}..${b}`); cell(tr, v); fields.appendChild(tr); }
  $('fields').hidden = false;
  const d = t.view.draw;
  if (!d || !d.rows) {
    $('drawing').hidden = false;
    $('range').textContent = `not drawn: ${d ? d.why : 'no data'}`;
    clearCanvas();
    return null;
  }
  $('slice').max = d.slices - 1;
  $('slice').value = slice;
  $('slice').onchange = () => select(i, Math.max(0, Math.min(d.slices - 1, Number($('slice').value) | 0)));
  $('slices').textContent = d.slices > 1 ? `of ${d.slices} (2-D slices of the leading dimensions)` : '';
  return draw(t, slice);
}

function clearCanvas() { const c = $('heat'); c.width = 1; c.height = 1; }

// Bytes of buffer `b` of tensor `t`, `off`..`off + len` (files: Blob slices; streams: kept data).
async function bufferBytes(t, b, off, len) {
  const buf = t.view.buffers[b];
  if (!buf || off + len > buf.size) throw new Error(`buffer ${b} is shorter than the read`);
  if (current.kind === 'file') return read(t.data[0] + buf.offset + off, len);
  if (current.kind === 'stream' && t.kept) {
    // One copy out of wasm per tensor, not one per read (a window may read
    // hundreds of rows).
    const all = t.kept_bytes || (t.kept_bytes = current.session.data(t.index));
    return all.subarray(buf.offset + off, buf.offset + off + len);
  }
  throw new Error('no data: a descriptor alone, or a stream tensor over the keep limit');
}

// The window's bytes as the Rust side planned them (`window`: the data
// reads back to back, and the scales/zero points the window uses).
async function windowBytes(t, w) {
  const len = w.reads.reduce((a, [, l]) => a + l, 0);
  const data = new Uint8Array(len);
  let at = 0;
  for (const [off, l] of w.reads) { data.set(await bufferBytes(t, 0, off, l), at); at += l; }
  const param = async (p) => p ? bufferBytes(t, p[0], p[1], p[2]) : new Uint8Array();
  return [data, await param(w.scales), await param(w.zero_points)];
}

async function draw(t, slice) {
  const d = t.view.draw;
  const wr = Math.min(d.rows, WINDOW), wc = Math.min(d.cols, WINDOW);
  try {
    let desc;
    if (current.kind === 'stream') desc = current.session.descriptor(t.index);
    else if (current.kind === 'file') desc = await read(t.descOff[0], t.descOff[1]);
    else throw new Error('no data: a descriptor alone');
    const w = JSON.parse(hv.window(desc, slice, wr, wc));
    if (w.error) throw new Error(w.error.text);
    const [data, scales, zps] = await windowBytes(t, w);
    $('drawing').hidden = false;
    if (!viewer.gpu) {
      $('range').textContent = 'no heatmap: this browser has no WebGPU adapter (the tables above are decoded on the CPU)';
      clearCanvas();
      return null;
    }
    const heat = await hv.draw(desc, data, scales, zps, slice, wr, wc);
    const c = $('heat');
    c.width = heat.width; c.height = heat.height;
    c.style.height = `${Math.max(8, Math.round(512 * heat.height / heat.width))}px`;
    c.getContext('2d').putImageData(new ImageData(new Uint8ClampedArray(heat.rgba().buffer), heat.width, heat.height), 0, 0);
    const res = { name: t.name, slice, rows: wr, cols: wc, quant: d.quant, min: heat.min, max: heat.max, cpuMin: heat.cpu_min, cpuMax: heat.cpu_max };
    heat.free();
    viewer.result.draws.push(res);
    $('range').textContent = (d.quant !== 'none' ? `${d.quant}, dequantized on the GPU: ` : '') +
      `GPU min ${res.min}  max ${res.max}   (CPU: ${res.cpuMin} / ${res.cpuMax})` +
      (wr < d.rows || wc < d.cols ? `   window ${wr}×${wc} of ${d.rows}×${d.cols}` : '');
    return res;
  } catch (e) {
    $('drawing').hidden = false;
    $('range').textContent = `not drawn: ${e && e.message || e}`;
    clearCanvas();
    return null;
  }
}

function drawScale() {
  const c = $('scale'), g = c.getContext('2d'), img = g.createImageData(256, 1);
  for (let x = 0; x < 256; x++) {
    const f = (x / 255) * 4, k = Math.min(3, Math.floor(f)), u = f - k;
    for (let ch = 0; ch < 3; ch++) img.data[x * 4 + ch] = Math.round(STOPS[k][ch] + (STOPS[k + 1][ch] - STOPS[k][ch]) * u);
    img.data[x * 4 + 3] = 255;
  }
  g.putImageData(img, 0, 0);
}

// For the test: draw tensor `name`'s slice `slice`; resolves to the result.
viewer.draw = async (name, slice) => select(viewer.result.tensors.findIndex((t) => t.name === name), slice);

async function main() {
  await init();
  drawScale();
  const pick = $('pick'), drop = $('drop');
  pick.onchange = () => pick.files[0] && openBlob(pick.files[0], pick.files[0].name);
  drop.ondragover = (e) => { e.preventDefault(); drop.classList.add('over'); };
  drop.ondragleave = () => drop.classList.remove('over');
  drop.ondrop = (e) => { e.preventDefault(); drop.classList.remove('over'); const f = e.dataTransfer.files[0]; if (f) openBlob(f, f.name); };
  if (!navigator.gpu || new URLSearchParams(location.search).has('nogpu')) {
    $('gpu').textContent = 'WebGPU: not available in this browser; tables only (decoding runs on the CPU).';
  } else {
    try {
      viewer.gpu = await hv.gpu_init();
      $('gpu').textContent = `WebGPU: ${viewer.gpu}`;
    } catch (e) {
      $('gpu').textContent = `WebGPU: no adapter (${e && e.message || e}); tables only.`;
    }
  }
  viewer.ready = true;
}
main().catch((e) => { $('gpu').textContent = `failed to start: ${e}`; viewer.ready = 'failed'; });
