//! `hurray serve`, `hurray get` and `hurray put`, run as a user runs them,
//! over loopback: a round trip byte for byte, a put stored and fetched
//! back, the peer's refusals as exit status 1, usage errors as 2, tokens.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Output, Stdio};

use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};

const BIN: &str = env!("CARGO_BIN_EXE_hurray");

fn dir(name: &str) -> PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("net-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn desc(shape: &[u64], ty: ElementType, bytes: u64) -> Vec<u8> {
    let b =
        [BufferHandle::new(bytes, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).expect("handle")];
    let mut out = vec![0u8; 256];
    let n = TensorDescriptor::row_major(ty, shape, &b)
        .encode(&mut out)
        .expect("encodes");
    out.truncate(n);
    out
}

/// A tensor of a fixture: name, descriptor, bytes.
type Tensor = (String, Vec<u8>, Vec<u8>);

/// `weights` f32 [3, 4] and `big` u8 [3 MiB + 5] (many frames).
fn make_file(d: &Path) -> (PathBuf, Vec<Tensor>) {
    let big = (3 << 20) + 5;
    let tensors = vec![
        (
            "weights".to_owned(),
            desc(&[3, 4], ElementType::Float32, 48),
            pattern(48, 2),
        ),
        (
            "big".to_owned(),
            desc(&[big as u64], ElementType::UInt8, big as u64),
            pattern(big, 4),
        ),
    ];
    let path = d.join("model.hrry");
    let mut w = hurray_io::file::create(&path, hurray_core::file::WriterOptions::default())
        .expect("creates");
    for (name, de, data) in &tensors {
        w.write_tensor(name, &TensorView::parse(de).expect("valid"), &[data])
            .expect("writes");
    }
    w.finish(&[]).expect("finishes");
    (path, tensors)
}

/// A running `hurray serve`, killed when dropped.
struct Served {
    child: Child,
    addr: String,
    stderr: BufReader<ChildStderr>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str], envs: &[(&str, &str)]) -> Served {
    let mut cmd = Command::new(BIN);
    cmd.arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .env_remove("HURRAY_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("serve starts");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("reads");
    let addr = line
        .split(" on ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    Served {
        child,
        addr,
        stderr,
    }
}

fn run(args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("HURRAY_TOKEN")
        .stdin(Stdio::null());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("runs")
}

fn status(o: &Output) -> i32 {
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!e.contains("panicked"), "the command panicked: {e}");
    o.status.code().expect("exited, not killed")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The one tensor of `path`: its name, descriptor and bytes.
fn read_one(path: &Path) -> Tensor {
    let mut f = hurray_io::file::open(path).expect("a valid file");
    let view = f.view().expect("valid");
    assert_eq!(view.len(), 1, "one tensor");
    let t = view.iter().next().expect("one");
    let data: Vec<u8> = t.buffers().flatten().copied().collect();
    (
        t.name().to_owned(),
        t.descriptor().as_bytes().to_vec(),
        data,
    )
}

#[test]
fn get_writes_a_one_tensor_file_byte_for_byte() {
    let d = dir("get");
    let (file, tensors) = make_file(&d);
    let s = serve(&[file.to_str().expect("utf8"), "--insecure"], &[]);
    for (name, de, data) in &tensors {
        let out = d.join(format!("{name}.hrry"));
        let o = run(
            &[
                "get",
                &s.addr,
                name,
                "-o",
                out.to_str().expect("utf8"),
                "--insecure",
            ],
            &[],
        );
        assert_eq!(status(&o), 0, "{}", stderr(&o));
        assert!(o.stdout.is_empty(), "nothing on stdout");
        let (n, got_desc, got) = read_one(&out);
        assert_eq!(&n, name);
        assert_eq!(&got_desc, de);
        assert!(got == *data, "{name}: bytes differ");
    }
    // No temporary file is left beside the outputs.
    let names: Vec<String> = std::fs::read_dir(&d)
        .expect("lists")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| n.ends_with(".hrry")),
        "stray files: {names:?}"
    );
}

#[test]
fn get_parallel_over_several_connections_writes_the_same_bytes() {
    let d = dir("get-parallel");
    let (file, tensors) = make_file(&d);
    let s = serve(&[file.to_str().expect("utf8"), "--insecure"], &[]);
    for n in ["2", "4"] {
        for (name, de, data) in &tensors {
            let out = d.join(format!("{name}-{n}.hrry"));
            let o = run(
                &[
                    "get",
                    &s.addr,
                    name,
                    "-o",
                    out.to_str().expect("utf8"),
                    "--parallel",
                    n,
                    "--insecure",
                ],
                &[],
            );
            assert_eq!(status(&o), 0, "{}", stderr(&o));
            let (got_name, got_desc, got) = read_one(&out);
            assert_eq!(&got_name, name);
            let (a, b) = (
                TensorView::parse(&got_desc).expect("valid"),
                TensorView::parse(de).expect("valid"),
            );
            assert!(a.shape().iter().eq(b.shape().iter()), "{name}: shape");
            assert_eq!(a.element_type(), b.element_type());
            assert!(got == *data, "{name}: bytes differ over {n} connections");
        }
    }
    let o = run(
        &[
            "get",
            &s.addr,
            "x",
            "-o",
            "x.hrry",
            "--parallel",
            "0",
            "--insecure",
        ],
        &[],
    );
    assert_eq!(status(&o), 2, "--parallel 0 is a usage error");
}

#[test]
fn an_unknown_name_is_exit_1_and_leaves_the_output_untouched() {
    let d = dir("unknown");
    let (file, _) = make_file(&d);
    let s = serve(&[file.to_str().expect("utf8"), "--insecure"], &[]);
    let out = d.join("out.hrry");
    std::fs::write(&out, b"keep me").expect("writes");
    let o = run(
        &[
            "get",
            &s.addr,
            "nope",
            "-o",
            out.to_str().expect("utf8"),
            "--insecure",
        ],
        &[],
    );
    assert_eq!(status(&o), 1);
    assert!(stderr(&o).contains("UNKNOWN_TENSOR"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).expect("reads"), b"keep me");
}

#[test]
fn put_stores_and_get_fetches_it_back() {
    let d = dir("put");
    let (file, tensors) = make_file(&d);
    let store = d.join("store");
    let s = serve(
        &["--store", store.to_str().expect("utf8"), "--insecure"],
        &[],
    );
    let f = file.to_str().expect("utf8");
    let o = run(
        &["put", &s.addr, f, "big", "--as", "a/b.c", "--insecure"],
        &[],
    );
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    // Stored inside the store, under the escaped key.
    assert!(store.join("a%2Fb%2Ec.hrry").is_file());
    let out = d.join("back.hrry");
    let o = run(
        &[
            "get",
            &s.addr,
            "a/b.c",
            "-o",
            out.to_str().expect("utf8"),
            "--insecure",
        ],
        &[],
    );
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    let (n, de, data) = read_one(&out);
    assert_eq!(n, "a/b.c");
    assert_eq!(de, tensors[1].1);
    assert!(data == tensors[1].2, "bytes differ");
    // A name the file lacks: usage error, nothing sent.
    let o = run(&["put", &s.addr, f, "nope", "--insecure"], &[]);
    assert_eq!(status(&o), 2, "{}", stderr(&o));
}

#[test]
fn a_server_without_a_store_refuses_puts() {
    let d = dir("nostore");
    let (file, _) = make_file(&d);
    let f = file.to_str().expect("utf8");
    let s = serve(&[f, "--insecure"], &[]);
    let o = run(&["put", &s.addr, f, "weights", "--insecure"], &[]);
    assert_eq!(status(&o), 1);
    assert!(stderr(&o).contains("UNAUTHORIZED"), "{}", stderr(&o));
}

#[test]
fn tokens_are_required_and_checked() {
    let d = dir("token");
    let (file, _) = make_file(&d);
    let f = file.to_str().expect("utf8");
    let good = d.join("good.token");
    std::fs::write(&good, "s3cret\n").expect("writes");
    let s = serve(
        &[
            f,
            "--token-file",
            good.to_str().expect("utf8"),
            "--insecure",
        ],
        &[],
    );
    let out = d.join("w.hrry");
    let o_path = out.to_str().expect("utf8");
    // The right token (from the environment; the file's newline is trimmed).
    let o = run(
        &["get", &s.addr, "weights", "-o", o_path, "--insecure"],
        &[("HURRAY_TOKEN", "s3cret")],
    );
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    assert!(out.is_file());
    std::fs::remove_file(&out).expect("removes");
    // A wrong token, and none at all: refused before anything is served.
    for envs in [&[("HURRAY_TOKEN", "wrong")][..], &[][..]] {
        let o = run(
            &["get", &s.addr, "weights", "-o", o_path, "--insecure"],
            envs,
        );
        assert_eq!(status(&o), 1, "{}", stderr(&o));
        assert!(stderr(&o).contains("UNAUTHORIZED"), "{}", stderr(&o));
        assert!(!out.exists(), "nothing written");
    }
}

#[test]
fn plaintext_or_no_authentication_without_insecure_is_a_usage_error_on_both_sides() {
    let d = dir("insecure");
    let (file, _) = make_file(&d);
    let f = file.to_str().expect("utf8");
    let token = d.join("t");
    std::fs::write(&token, "tok").expect("writes");
    let t = token.to_str().expect("utf8");
    // Plaintext, with or without a token.
    for extra in [&[][..], &["--token-file", t][..]] {
        let mut args = vec!["serve", f, "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let o = run(&args, &[]);
        assert_eq!(status(&o), 2, "{}", stderr(&o));
        assert!(stderr(&o).contains("without TLS"), "{}", stderr(&o));
        let mut args = vec!["get", "127.0.0.1:1", "weights", "-o", "x.hrry"];
        args.extend_from_slice(extra);
        let o = run(&args, &[]);
        assert_eq!(status(&o), 2, "{}", stderr(&o));
        assert!(stderr(&o).contains("without TLS"), "{}", stderr(&o));
        let mut args = vec!["put", "127.0.0.1:1", f, "weights"];
        args.extend_from_slice(extra);
        let o = run(&args, &[]);
        assert_eq!(status(&o), 2, "{}", stderr(&o));
    }
}

#[test]
fn serve_refuses_bad_input_before_listening() {
    let d = dir("bad");
    let bad = d.join("bad.hrry");
    std::fs::write(&bad, b"HRRYFILE but not really").expect("writes");
    let o = run(
        &[
            "serve",
            bad.to_str().expect("utf8"),
            "--listen",
            "127.0.0.1:0",
            "--insecure",
        ],
        &[],
    );
    assert_eq!(status(&o), 1, "{}", stderr(&o));
    let o = run(&["serve", "--listen", "127.0.0.1:0", "--insecure"], &[]);
    assert_eq!(status(&o), 2, "nothing to serve: {}", stderr(&o));
    let o = run(
        &["get", "not an address", "x", "-o", "x.hrry", "--insecure"],
        &[],
    );
    assert_eq!(status(&o), 2, "{}", stderr(&o));
}

#[test]
fn a_refused_connection_is_exit_1() {
    // Bind then drop a listener: its port is (almost certainly) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("binds")
        .local_addr()
        .expect("addr")
        .port();
    let o = run(
        &[
            "get",
            &format!("127.0.0.1:{port}"),
            "x",
            "-o",
            "x.hrry",
            "--insecure",
        ],
        &[],
    );
    assert_eq!(status(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot connect"), "{}", stderr(&o));
}

#[cfg(unix)]
#[test]
fn sigterm_stops_the_server_gracefully_with_a_summary() {
    use std::io::Read as _;
    let d = dir("term");
    let (file, _) = make_file(&d);
    let mut s = serve(&[file.to_str().expect("utf8"), "--insecure"], &[]);
    let out = d.join("w.hrry");
    let o = run(
        &[
            "get",
            &s.addr,
            "weights",
            "-o",
            out.to_str().expect("utf8"),
            "--insecure",
        ],
        &[],
    );
    assert_eq!(status(&o), 0, "{}", stderr(&o));
    let killed = Command::new("kill")
        .args(["-TERM", &s.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let exit = s.child.wait().expect("waits");
    assert_eq!(exit.code(), Some(0), "a graceful stop is a success");
    let mut rest = String::new();
    s.stderr.read_to_string(&mut rest).expect("reads");
    assert!(
        rest.contains("1 tensor(s) served"),
        "summary on stderr: {rest:?}"
    );
}

/// TLS through the command, with a CA generated here.
#[cfg(feature = "tls")]
mod tls {
    use super::*;
    use rcgen::{
        BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair,
        KeyUsagePurpose,
    };

    /// PEM files in `d`: `ca.pem`, `server.pem`/`server.key` (localhost,
    /// 127.0.0.1), `client.pem`/`client.key`.
    fn pki(d: &Path) {
        let ca_key = KeyPair::generate().expect("key");
        let mut p = CertificateParams::new(Vec::<String>::new()).expect("params");
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = p.self_signed(&ca_key).expect("CA");
        std::fs::write(d.join("ca.pem"), ca.pem()).expect("writes");
        for (name, sans, usage) in [
            (
                "server",
                vec!["localhost".to_owned(), "127.0.0.1".to_owned()],
                ExtendedKeyUsagePurpose::ServerAuth,
            ),
            (
                "client",
                vec!["client".to_owned()],
                ExtendedKeyUsagePurpose::ClientAuth,
            ),
        ] {
            let key = KeyPair::generate().expect("key");
            let mut p = CertificateParams::new(sans).expect("params");
            p.extended_key_usages = vec![usage];
            let cert = p.signed_by(&key, &ca, &ca_key).expect("signs");
            std::fs::write(d.join(format!("{name}.pem")), cert.pem()).expect("writes");
            std::fs::write(d.join(format!("{name}.key")), key.serialize_pem()).expect("writes");
        }
    }

    fn p(d: &Path, name: &str) -> String {
        d.join(name).to_str().expect("utf8").to_owned()
    }

    #[test]
    fn tls_and_token_round_trip_and_a_wrong_token_is_refused() {
        let d = dir("tls");
        pki(&d);
        let (file, tensors) = make_file(&d);
        let store = p(&d, "store");
        let s = serve(
            &[
                file.to_str().expect("utf8"),
                "--store",
                &store,
                "--cert",
                &p(&d, "server.pem"),
                "--key",
                &p(&d, "server.key"),
            ],
            &[("HURRAY_TOKEN", "s3cret")],
        );
        let out = p(&d, "big.hrry");
        let ca = p(&d, "ca.pem");
        let good = [("HURRAY_TOKEN", "s3cret")];
        let o = run(&["get", &s.addr, "big", "-o", &out, "--ca", &ca], &good);
        assert_eq!(status(&o), 0, "{}", stderr(&o));
        let (_, de, data) = read_one(Path::new(&out));
        assert_eq!(de, tensors[1].1);
        assert!(data == tensors[1].2, "bytes differ over TLS");
        let o = run(
            &[
                "put",
                &s.addr,
                file.to_str().expect("utf8"),
                "weights",
                "--ca",
                &ca,
            ],
            &good,
        );
        assert_eq!(status(&o), 0, "{}", stderr(&o));
        assert!(d.join("store/weights.hrry").is_file());
        // The server's certificate names localhost too.
        let port = s.addr.rsplit_once(':').expect("port").1;
        let o = run(
            &[
                "get",
                &format!("localhost:{port}"),
                "weights",
                "-o",
                &out,
                "--ca",
                &ca,
            ],
            &good,
        );
        assert_eq!(status(&o), 0, "{}", stderr(&o));
        // A wrong token over TLS: refused, nothing written.
        std::fs::remove_file(&out).expect("removes");
        let o = run(
            &["get", &s.addr, "big", "-o", &out, "--ca", &ca],
            &[("HURRAY_TOKEN", "guess")],
        );
        assert_eq!(status(&o), 1, "{}", stderr(&o));
        assert!(stderr(&o).contains("UNAUTHORIZED"), "{}", stderr(&o));
        assert!(!Path::new(&out).exists());
        // A plaintext client (allowed by its --insecure) gets nothing.
        let o = run(&["get", &s.addr, "big", "-o", &out, "--insecure"], &good);
        assert_eq!(status(&o), 1, "{}", stderr(&o));
        assert!(!Path::new(&out).exists());
        // A server name its certificate lacks.
        let o = run(
            &[
                "get",
                &s.addr,
                "big",
                "-o",
                &out,
                "--ca",
                &ca,
                "--server-name",
                "other.example",
            ],
            &good,
        );
        assert_eq!(status(&o), 1, "{}", stderr(&o));
        assert!(stderr(&o).contains("TLS"), "{}", stderr(&o));
    }

    #[test]
    fn client_certificates_alone_authenticate() {
        let d = dir("mtls");
        pki(&d);
        let (file, tensors) = make_file(&d);
        let s = serve(
            &[
                file.to_str().expect("utf8"),
                "--cert",
                &p(&d, "server.pem"),
                "--key",
                &p(&d, "server.key"),
                "--client-ca",
                &p(&d, "ca.pem"),
            ],
            &[],
        );
        let out = p(&d, "w.hrry");
        let ca = p(&d, "ca.pem");
        let o = run(
            &[
                "get",
                &s.addr,
                "weights",
                "-o",
                &out,
                "--ca",
                &ca,
                "--cert",
                &p(&d, "client.pem"),
                "--key",
                &p(&d, "client.key"),
            ],
            &[],
        );
        assert_eq!(status(&o), 0, "{}", stderr(&o));
        assert_eq!(read_one(Path::new(&out)).2, tensors[0].2);
        // A token but no client certificate: the handshake fails.
        std::fs::remove_file(&out).expect("removes");
        let o = run(
            &["get", &s.addr, "weights", "-o", &out, "--ca", &ca],
            &[("HURRAY_TOKEN", "anything")],
        );
        assert_eq!(status(&o), 1, "{}", stderr(&o));
        assert!(!Path::new(&out).exists());
    }

    #[test]
    fn tls_without_authentication_is_a_usage_error() {
        let d = dir("noauth");
        pki(&d);
        let (file, _) = make_file(&d);
        let o = run(
            &[
                "serve",
                file.to_str().expect("utf8"),
                "--listen",
                "127.0.0.1:0",
                "--cert",
                &p(&d, "server.pem"),
                "--key",
                &p(&d, "server.key"),
            ],
            &[],
        );
        assert_eq!(status(&o), 2, "{}", stderr(&o));
        assert!(
            stderr(&o).contains("without authentication"),
            "{}",
            stderr(&o)
        );
        let o = run(
            &[
                "get",
                "127.0.0.1:1",
                "w",
                "-o",
                "x.hrry",
                "--ca",
                &p(&d, "ca.pem"),
            ],
            &[],
        );
        assert_eq!(status(&o), 2, "{}", stderr(&o));
        // A key file that is not PEM.
        let o = run(
            &[
                "serve",
                file.to_str().expect("utf8"),
                "--listen",
                "127.0.0.1:0",
                "--cert",
                &p(&d, "server.pem"),
                "--key",
                &p(&d, "ca.pem"),
            ],
            &[("HURRAY_TOKEN", "t")],
        );
        assert_eq!(status(&o), 2, "{}", stderr(&o));
    }
}
