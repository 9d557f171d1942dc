//! The `hurray` binary, run as a user runs it: every subcommand on good,
//! bad, truncated and hostile descriptors, streams and files, from paths
//! and from standard input, with its exit status (0 valid, 1 bad input,
//! 2 usage), what goes to stdout and what to stderr.

#[allow(unreachable_pub)]
#[path = "../../tests/common/mod.rs"]
mod common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::{Desc, composite, cpu, lay, ty};
use hurray_core::TensorView;
use hurray_core::file::{FileWriter, IndexEntry, KvArray, KvValue, WriterOptions};
use serde_json::Value;
use sha2::{Digest, Sha256};

const BIN: &str = env!("CARGO_BIN_EXE_hurray");

fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        // The command may stop reading early (an error): a broken pipe here is fine.
        let _ = pipe.write_all(bytes);
    }
    child.wait_with_output().expect("exits")
}

fn status(o: &Output) -> i32 {
    o.status.code().expect("exited, not killed by a signal")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn no_panic(o: &Output) {
    let e = stderr(o);
    assert!(
        !e.contains("panicked") && status(o) != 101,
        "the command panicked: {e}"
    );
}

fn dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

fn put(name: &str, bytes: &[u8]) -> String {
    let p = dir().join(name);
    std::fs::write(&p, bytes).expect("writes");
    p.to_string_lossy().into_owned()
}

fn data(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn dense(shape: &[u64]) -> Vec<u8> {
    let n: u64 = shape.iter().product();
    Desc::dense(ty::F32, shape, n * 4).bytes()
}

fn head(count: u32, shape: &[u64]) -> Vec<u8> {
    Desc::new(ty::F32, lay::COMPOSITE, shape)
        .layout(composite(1, 0, count))
        .bytes()
}

fn part(shape: &[u64], parent: &[u64], offset: &[u64]) -> Vec<u8> {
    let n: u64 = shape.iter().product();
    Desc::dense(ty::F32, shape, n * 4)
        .shard(parent, offset)
        .bytes()
}

/// The tensors of the fixtures: (descriptor, buffers).
fn tensors() -> Vec<(Vec<u8>, Vec<Vec<u8>>)> {
    let coo = Desc::new(ty::F32, lay::COO, &[4, 4])
        .layout(common::coo(2, 0))
        .buffers(&[cpu(8), cpu(32)])
        .bytes();
    vec![
        (dense(&[3]), vec![data(12, 1)]),
        (head(2, &[4, 4]), vec![]),
        (part(&[4, 2], &[4, 4], &[0, 0]), vec![data(32, 2)]),
        (part(&[4, 2], &[4, 4], &[0, 2]), vec![data(32, 3)]),
        (coo, vec![data(8, 4), data(32, 5)]),
    ]
}

fn stream() -> Vec<u8> {
    let mut s = Vec::new();
    for (d, bufs) in tensors() {
        s.extend_from_slice(&d);
        for b in bufs {
            s.extend_from_slice(&b);
        }
    }
    s
}

const NAMES: [&str; 5] = ["a", "part", "part.left", "part.right", "sparse"];

fn file() -> Vec<u8> {
    let t = tensors();
    let views: Vec<TensorView<'_>> = t
        .iter()
        .map(|(d, _)| TensorView::parse(d).expect("valid"))
        .collect();
    let mut index = [IndexEntry::default(); 5];
    let options = WriterOptions {
        has_kv: true,
        ..WriterOptions::default()
    };
    let mut w = FileWriter::new(Vec::new(), options, &mut index[..]).expect("writer");
    for ((name, view), (_, bufs)) in NAMES.iter().zip(&views).zip(&t) {
        let b: Vec<&[u8]> = bufs.iter().map(Vec::as_slice).collect();
        w.write_tensor(name, view, &b).expect("writes");
    }
    w.finish(&[
        ("producer", KvValue::String("cli test")),
        ("blob", KvValue::Bytes(&[0xde, 0xad])),
        ("dims", KvValue::Array(KvArray::Uint64(&[3, 4]))),
        ("ratio", KvValue::Float64(0.5)),
    ])
    .expect("finishes")
}

fn sha(bufs: &[Vec<u8>]) -> String {
    let mut h = Sha256::new();
    for b in bufs {
        h.update(b);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn json(o: &Output) -> Value {
    assert_eq!(status(o), 0, "stderr: {}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("one JSON object")
}

#[test]
fn inspect_json_of_a_stream_lists_every_tensor_in_byte_order() {
    let path = put("s.hrrys", &stream());
    let v = json(&run(&["inspect", "--json", &path], None));
    assert_eq!(v["format"], "stream");
    let ts = v["tensors"].as_array().expect("tensors");
    let want = tensors();
    assert_eq!(ts.len(), want.len());
    for (i, (t, (_, bufs))) in ts.iter().zip(&want).enumerate() {
        assert_eq!(t["index"], i as u64);
        assert_eq!(t["element_type"], "float32");
        assert_eq!(t["element_type_tag"], 3);
        assert_eq!(t["data_sha256"], sha(bufs), "tensor {i}");
        let sizes: Vec<u64> = bufs.iter().map(|b| b.len() as u64).collect();
        assert_eq!(t["buffer_byte_sizes"], serde_json::json!(sizes));
        assert!(t.get("name").is_none() && t.get("data_offset").is_none());
    }
    assert_eq!(ts[1]["composite"], true);
    assert_eq!(ts[1]["members"], 2);
    assert!(ts[0].get("composite").is_none());
    assert_eq!(ts[2]["shape"], serde_json::json!([4, 2]));
    assert_eq!(ts[4]["layout_tag"], u64::from(lay::COO));
    // The same from standard input.
    let o = run(&["inspect", "--json", "-"], Some(&stream()));
    let mut w = json(&o);
    w["file"] = v["file"].clone();
    assert_eq!(w, v);
}

#[test]
fn inspect_json_of_a_file_gives_names_offsets_digests_and_kv() {
    let bytes = file();
    let path = put("f.hrry", &bytes);
    let v = json(&run(&["inspect", "--json", &path], None));
    assert_eq!(v["format"], "file");
    assert_eq!(v["version"], serde_json::json!([1, 0]));
    assert_eq!(v["alignment"], 4096);
    let ts = v["tensors"].as_array().expect("tensors");
    let want = tensors();
    assert_eq!(ts.len(), 5);
    let mut last = 0;
    for ((t, name), (desc, bufs)) in ts.iter().zip(NAMES).zip(&want) {
        assert_eq!(t["name"], name);
        assert_eq!(t["data_sha256"], sha(bufs), "{name}");
        let at = t["descriptor_offset"].as_u64().expect("offset");
        assert!(at > last, "file order");
        last = at;
        let at = usize::try_from(at).expect("fits");
        assert_eq!(&bytes[at..at + desc.len()], desc.as_slice());
        if let Some(first) = bufs.first() {
            let d = usize::try_from(t["data_offset"].as_u64().expect("data")).expect("fits");
            assert_eq!(&bytes[d..d + first.len()], first.as_slice());
            assert_eq!(d % 4096, 0);
        }
    }
    assert_eq!(ts[1]["composite"], true);
    assert_eq!(v["kv"]["producer"], "cli test");
    assert_eq!(v["kv"]["blob"], "dead");
    assert_eq!(v["kv"]["dims"], serde_json::json!([3, 4]));
    assert_eq!(v["kv"]["ratio"], 0.5);
    // From standard input: the same object.
    let mut w = json(&run(&["inspect", "--json", "-"], Some(&bytes)));
    w["file"] = v["file"].clone();
    assert_eq!(w, v);
}

#[test]
fn inspect_of_a_descriptor_is_the_descriptor_record() {
    let path = put("d.bin", &dense(&[3]));
    let v = json(&run(&["inspect", "--json", &path], None));
    assert_eq!(v["version_major"], 1);
    assert_eq!(v["layout"]["name"], "row_major");
    assert_eq!(v["file"], path.as_str());
    let o = run(&["inspect", &path], None);
    assert_eq!(status(&o), 0);
    let text = String::from_utf8(o.stdout).expect("utf-8");
    assert!(text.contains("descriptor_length") && text.ends_with("; valid\n"));
}

#[test]
fn inspect_text_of_files_and_streams() {
    for (name, bytes, first) in [
        ("t.hrry", file(), "hurray file 1.0"),
        ("t.hrrys", stream(), "hurray stream, 5 tensor(s)"),
    ] {
        let path = put(name, &bytes);
        let o = run(&["inspect", &path], None);
        assert_eq!(status(&o), 0, "{}", stderr(&o));
        assert!(o.stderr.is_empty());
        let text = String::from_utf8(o.stdout).expect("utf-8");
        assert!(
            text.lines().next().expect("a line").contains(first),
            "{text}"
        );
        assert!(text.contains("(2 members)") && text.ends_with("= valid\n"));
    }
}

#[test]
fn ls_lists_name_type_shape_bytes() {
    let path = put("ls.hrry", &file());
    let o = run(&["ls", &path], None);
    assert_eq!(status(&o), 0);
    let text = String::from_utf8(o.stdout).expect("utf-8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5);
    assert!(lines.contains(&"a\tfloat32\t[3]\t12"), "{text}");
    assert!(lines.contains(&"sparse\tfloat32\t[4, 4]\t40"), "{text}");
    let o = run(&["ls", "-"], Some(&stream()));
    assert_eq!(status(&o), 0);
    let text = String::from_utf8(o.stdout).expect("utf-8");
    assert_eq!(text.lines().next(), Some("0\tfloat32\t[3]\t12"));
}

#[test]
fn verify_is_silent_on_valid_inputs() {
    let f = put("v.hrry", &file());
    let s = put("v.hrrys", &stream());
    let d = put("v.bin", &dense(&[2, 2]));
    let o = run(&["verify", &f, &s, &d], None);
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    assert!(o.stdout.is_empty() && o.stderr.is_empty());
    let o = run(&["verify", "-"], Some(&stream()));
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    // The empty stream is valid.
    let o = run(&["verify", "-"], Some(b""));
    assert_eq!(status(&o), 0, "{}", stderr(&o));
}

#[test]
fn verify_rejects_every_truncation_with_an_offset() {
    for (whole, kind) in [(stream(), "s"), (file(), "f")] {
        // Every cut of the stream (it may end only between tensors); a
        // sample of cuts of the file (any cut breaks it).
        let tensor_ends: Vec<usize> = {
            let mut ends = vec![0];
            let mut at = 0;
            for (d, bufs) in tensors() {
                at += d.len() + bufs.iter().map(Vec::len).sum::<usize>();
                ends.push(at);
            }
            ends
        };
        let step = if kind == "s" { 1 } else { 97 };
        for cut in (0..whole.len()).step_by(step) {
            // Forced: a stream cut right after its first descriptor is, by
            // its bytes, a lone descriptor.
            let format = if kind == "s" { "stream" } else { "file" };
            let o = run(&["verify", "--format", format, "-"], Some(&whole[..cut]));
            no_panic(&o);
            // The stream's valid cuts: between top-level tensors (not
            // inside the composite, tensors 1..=3).
            let valid = kind == "s" && [0, 1, 4, 5].iter().any(|&t| tensor_ends[t] == cut);
            if valid {
                assert_eq!(status(&o), 0, "cut {cut}: {}", stderr(&o));
            } else {
                assert_eq!(status(&o), 1, "{kind} cut {cut}");
                assert!(stderr(&o).contains("error at byte "), "{}", stderr(&o));
                assert!(o.stdout.is_empty());
            }
        }
    }
}

#[test]
fn bad_inputs_exit_1_with_the_typed_error_and_its_offset() {
    let mut d = dense(&[3]);
    let mut bad = d.clone();
    bad[4] = 9; // version_major
    let path = put("bad.bin", &bad);
    let o = run(&["inspect", &path], None);
    assert_eq!(status(&o), 1);
    assert!(stderr(&o).contains("error at byte 4"), "{}", stderr(&o));
    // A stream whose second tensor is bad: the offset is the stream's.
    d.extend_from_slice(&data(12, 0));
    let first = d.len();
    d.extend_from_slice(&bad);
    d.extend_from_slice(&data(12, 0));
    let o = run(&["verify", "-"], Some(&d));
    assert_eq!(status(&o), 1);
    assert!(
        stderr(&o).contains(&format!("error at byte {}", first + 4)),
        "{}",
        stderr(&o)
    );
    // A file with a flipped index byte: the CRC.
    let mut f = file();
    let n = f.len();
    f[n - 50] ^= 0x40;
    let o = run(&["verify", "-"], Some(&f));
    assert_eq!(status(&o), 1);
    assert!(stderr(&o).contains("error at byte "));
    // Bad inputs do not stop the others; a missing path is bad input too.
    let good = put("good.bin", &dense(&[1]));
    let o = run(&["ls", "/nonexistent/x.hrry", &good], None);
    assert_eq!(status(&o), 1);
    assert!(stderr(&o).contains("cannot read"));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "-\tfloat32\t[1]\t4\n");
    let o = run(&["verify", dir().to_str().expect("utf-8")], None);
    assert_eq!(status(&o), 1);
}

/// xorshift: deterministic hostile bytes.
fn noise(seed: &mut u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed as u8
        })
        .collect()
}

#[test]
fn hostile_bytes_never_panic() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let bases = [file(), stream(), dense(&[2, 3])];
    let commands: [&[&str]; 4] = [
        &["verify", "-"],
        &["inspect", "--json", "-"],
        &["ls", "-"],
        &["cat", "-", "0"],
    ];
    for round in 0..120 {
        let mut bytes = bases[round % 3].clone();
        match round % 4 {
            0 => {
                let len = (seed % 300) as usize;
                bytes = noise(&mut seed, len);
            }
            1 => {
                // Flip a few bytes.
                for _ in 0..3 {
                    let r = noise(&mut seed, 8);
                    let at = u64::from_le_bytes(r.try_into().expect("8")) as usize % bytes.len();
                    bytes[at] ^= 1 << (seed % 8);
                }
            }
            2 => {
                // Keep the magic, then noise.
                bytes.truncate(10);
                bytes.extend(noise(&mut seed, 200));
            }
            _ => {
                let at = (seed as usize) % bytes.len();
                let len = noise(&mut seed, 1)[0] as usize;
                bytes.splice(at..at, noise(&mut seed, len));
            }
        }
        let o = run(commands[round % 4], Some(&bytes));
        no_panic(&o);
        assert!((0..=2).contains(&status(&o)), "round {round}");
        if status(&o) == 1 {
            assert!(stderr(&o).contains("<stdin>: "), "{}", stderr(&o));
        }
    }
}

#[test]
fn cat_writes_a_tensors_buffers() {
    let t = tensors();
    let f = put("c.hrry", &file());
    let o = run(&["cat", &f, "sparse"], None);
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    assert_eq!(o.stdout, t[4].1.concat());
    let o = run(&["cat", &f, "part"], None);
    assert_eq!(status(&o), 0);
    assert!(o.stdout.is_empty(), "a composite head has no bytes");
    let o = run(&["cat", "-", "3"], Some(&stream()));
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    assert_eq!(o.stdout, t[3].1.concat());
    let o = run(&["cat", "-", "4"], Some(&stream()));
    assert_eq!(o.stdout, t[4].1.concat());
    // What the input lacks is a usage error.
    for (args, input) in [
        (vec!["cat", f.as_str(), "nope"], None),
        (vec!["cat", "-", "5"], Some(stream())),
        (vec!["cat", "-", "x"], Some(stream())),
    ] {
        let o = run(&args, input.as_deref());
        assert_eq!(status(&o), 2, "{args:?}");
        assert!(o.stdout.is_empty());
    }
    let d = put("c.bin", &dense(&[1]));
    assert_eq!(status(&run(&["cat", &d, "0"], None)), 2);
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["inspect"],
        &["bogus"],
        &["inspect", "--jsn", "x"],
        &["inspect", "--extension-layout", "zz", "x"],
        &["cat", "x"],
        &["verify", "--format", "tape", "x"],
    ] {
        let o = run(args, None);
        assert_eq!(status(&o), 2, "{args:?}");
        assert!(o.stdout.is_empty());
    }
    let o = run(&["--help"], None);
    assert_eq!(status(&o), 0);
    assert!(String::from_utf8_lossy(&o.stdout).contains("verify"));
}

#[test]
fn reader_options_and_a_forced_format_are_honoured() {
    // `--format stream` reads a lone descriptor as a one-tensor stream
    // (which then lacks its data).
    let d = put("o.bin", &dense(&[3]));
    let o = run(&["verify", "--format", "stream", &d], None);
    assert_eq!(status(&o), 1);
    let o = run(&["verify", "--format", "descriptor", &d], None);
    assert_eq!(status(&o), 0);
    let o = run(
        &[
            "inspect",
            "--json",
            "--extension-layout",
            "0x6875727261790001",
            "--private-schemes",
            &d,
        ],
        None,
    );
    assert_eq!(status(&o), 0);
}

/// The public corpus' file decodes to its manifest entry.
#[test]
fn shared_corpus_file_matches_its_manifest() {
    let dir = std::env::var_os("HURRAY_CONFORMANCE_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance"),
        PathBuf::from,
    );
    let Ok(text) = std::fs::read_to_string(dir.join("manifest.json")) else {
        assert!(
            std::env::var_os("HURRAY_REQUIRE_CONFORMANCE").is_none(),
            "no conformance corpus in {}",
            dir.display()
        );
        println!(
            "SKIPPED shared_corpus_file_matches_its_manifest: no {}",
            dir.display()
        );
        return;
    };
    let manifest: Value = serde_json::from_str(&text).expect("manifest");
    let files = manifest["files"].as_array().expect("files");
    assert!(!files.is_empty());
    for f in files {
        let path = dir.join(f["file"].as_str().expect("file"));
        let v = json(&run(
            &["inspect", "--json", path.to_str().expect("utf-8")],
            None,
        ));
        assert_eq!(v["format"], "file");
        let want = f["tensors"].as_array().expect("tensors");
        let have = v["tensors"].as_array().expect("tensors");
        assert_eq!(have.len(), want.len());
        for w in want {
            let h = have
                .iter()
                .find(|h| h["name"] == w["name"])
                .expect("named tensor");
            for k in ["element_type", "element_type_tag", "shape"] {
                assert_eq!(h[k], w[k], "{k} of {}", w["name"]);
            }
            let bytes: u64 = h["buffer_byte_sizes"]
                .as_array()
                .expect("sizes")
                .iter()
                .filter_map(Value::as_u64)
                .sum();
            assert_eq!(Some(bytes), w["data_bytes"].as_u64());
        }
        for kv in f["kv"].as_array().expect("kv") {
            let key = kv["key"].as_str().expect("key");
            let want = match kv["kind"].as_str() {
                Some("string") => kv["value_string"].clone(),
                Some("int64") => kv["value_int"].clone(),
                other => panic!("manifest kind {other:?}"),
            };
            assert_eq!(v["kv"][key], want, "{key}");
        }
        let o = run(&["verify", path.to_str().expect("utf-8")], None);
        assert_eq!(status(&o), 0);
    }
}
