//! TLS (feature `tls`) on loopback, with a CA and certificates generated
//! here: round trips, client certificates required and checked (mTLS), a
//! wrong token refused over TLS, a plaintext client refused by a TLS
//! server, a client that does not trust the server's CA refusing it. In
//! every refusal nothing is served or stored.
#![cfg(feature = "tls")]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use hurray_core::net::ErrorCode;
use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
use hurray_net::tls::{ClientTls, client_config, server_config};
use hurray_net::{Client, ClientOptions, Counters, Error, Server, ServerOptions};
use rcgen::{
    BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use tokio::sync::oneshot;

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hurray-tls-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// A file with `blob` (u8 [n]).
fn make_file(dir: &Path, n: usize) -> PathBuf {
    let b = [BufferHandle::new(n as u64, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
    let mut d = vec![0u8; 256];
    let k = TensorDescriptor::row_major(ElementType::UInt8, &[n as u64], &b)
        .encode(&mut d)
        .unwrap();
    d.truncate(k);
    let path = dir.join("model.hrry");
    let mut w =
        hurray_io::file::create(&path, hurray_core::file::WriterOptions::default()).unwrap();
    w.write_tensor("blob", &TensorView::parse(&d).unwrap(), &[&pattern(n, 2)])
        .unwrap();
    w.finish(&[]).unwrap();
    path
}

/// A CA: its certificate (PEM), and what signs with it.
struct Ca {
    pem: String,
    cert: rcgen::Certificate,
    key: KeyPair,
}

fn new_ca(name: &str) -> Ca {
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name
        .push(rcgen::DnType::CommonName, format!("{name} test CA"));
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = p.self_signed(&key).unwrap();
    Ca {
        pem: cert.pem(),
        cert,
        key,
    }
}

/// A leaf certificate for `names`, signed by `ca`: (chain PEM, key PEM).
fn leaf(ca: &Ca, names: &[&str], usage: ExtendedKeyUsagePurpose) -> (String, String) {
    let key = KeyPair::generate().unwrap();
    let mut p =
        CertificateParams::new(names.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()).unwrap();
    p.extended_key_usages = vec![usage];
    let cert = p.signed_by(&key, &ca.cert, &ca.key).unwrap();
    (cert.pem(), key.serialize_pem())
}

struct Running {
    addr: std::net::SocketAddr,
    counters: Arc<Counters>,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<Result<(), Error>>,
}

impl Running {
    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        tokio::time::timeout(Duration::from_secs(10), self.done)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
    }
}

async fn start(options: ServerOptions, files: &[PathBuf]) -> Running {
    let options = ServerOptions {
        handshake_timeout: Duration::from_secs(2),
        grace: Duration::from_secs(5),
        ..options
    };
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), options, files)
        .await
        .unwrap();
    let addr = server.local_addr();
    let counters = server.counters();
    let (tx, rx) = oneshot::channel::<()>();
    let done = tokio::spawn(server.run(async move {
        let _ = rx.await;
    }));
    Running {
        addr,
        counters,
        stop: Some(tx),
        done,
    }
}

/// Waits (at most 5 s) until `f` holds: the server counts a failed
/// handshake after the client may already have seen it fail.
async fn eventually(f: impl Fn() -> bool) -> bool {
    for _ in 0..500 {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    f()
}

fn client_tls(ca: &Ca, identity: Option<&(String, String)>, name: &str) -> Option<ClientTls> {
    let config = client_config(
        ca.pem.as_bytes(),
        identity.map(|(c, k)| (c.as_bytes(), k.as_bytes())),
    )
    .unwrap();
    Some(ClientTls::new(config, name).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_round_trip_get_and_put_by_name_and_by_ip() {
    let dir = tempdir("round");
    let file = make_file(&dir, 3 << 20);
    let ca = new_ca("round");
    let (cert, key) = leaf(
        &ca,
        &["localhost", "127.0.0.1"],
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let server = start(
        ServerOptions {
            tls: Some(server_config(cert.as_bytes(), key.as_bytes(), None).unwrap()),
            token: Some(b"s3cret".to_vec()),
            store: Some(dir.join("store")),
            ..ServerOptions::default()
        },
        &[file],
    )
    .await;
    for name in ["localhost", "127.0.0.1"] {
        let mut c = Client::connect(
            server.addr,
            ClientOptions {
                tls: client_tls(&ca, None, name),
                token: Some(b"s3cret".to_vec()),
                ..ClientOptions::default()
            },
        )
        .await
        .unwrap();
        let got = c.get("blob").await.unwrap();
        assert!(got.data == pattern(3 << 20, 2), "bytes differ over TLS");
        let key = format!("pushed-{name}");
        c.put(&key, &got.view(), &[&got.data]).await.unwrap();
        assert!(c.get(&key).await.unwrap().data == got.data);
    }
    assert_eq!(server.counters.stored.load(Ordering::Relaxed), 2);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_refused_over_tls() {
    let dir = tempdir("token");
    let file = make_file(&dir, 100);
    let ca = new_ca("token");
    let (cert, key) = leaf(&ca, &["localhost"], ExtendedKeyUsagePurpose::ServerAuth);
    let server = start(
        ServerOptions {
            tls: Some(server_config(cert.as_bytes(), key.as_bytes(), None).unwrap()),
            token: Some(b"s3cret".to_vec()),
            ..ServerOptions::default()
        },
        &[file],
    )
    .await;
    for token in [Some(b"guess".to_vec()), None] {
        let e = Client::connect(
            server.addr,
            ClientOptions {
                tls: client_tls(&ca, None, "localhost"),
                token,
                ..ClientOptions::default()
            },
        )
        .await
        .unwrap_err();
        assert!(
            matches!(
                e,
                Error::Peer {
                    code: ErrorCode::Unauthorized,
                    ..
                } | Error::Closed
            ),
            "{e}"
        );
    }
    assert_eq!(server.counters.errors_sent(ErrorCode::Unauthorized), 2);
    assert_eq!(server.counters.unauthenticated.load(Ordering::Relaxed), 2);
    assert_eq!(server.counters.served.load(Ordering::Relaxed), 0);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_are_required_and_checked() {
    let dir = tempdir("mtls");
    let file = make_file(&dir, 100);
    let ca = new_ca("mtls");
    let other = new_ca("other");
    let (cert, key) = leaf(&ca, &["localhost"], ExtendedKeyUsagePurpose::ServerAuth);
    let server = start(
        ServerOptions {
            tls: Some(
                server_config(cert.as_bytes(), key.as_bytes(), Some(ca.pem.as_bytes())).unwrap(),
            ),
            ..ServerOptions::default()
        },
        &[file],
    )
    .await;
    let good = leaf(&ca, &["client"], ExtendedKeyUsagePurpose::ClientAuth);
    let forged = leaf(&other, &["client"], ExtendedKeyUsagePurpose::ClientAuth);
    // No certificate, and one from a CA the server does not trust: the
    // handshake or the first read fails; nothing is served.
    for identity in [None, Some(&forged)] {
        let r = async {
            let mut c = Client::connect(
                server.addr,
                ClientOptions {
                    tls: client_tls(&ca, identity, "localhost"),
                    ..ClientOptions::default()
                },
            )
            .await?;
            c.get("blob").await
        }
        .await;
        assert!(r.is_err(), "served without a valid client certificate");
    }
    let c = &server.counters;
    assert!(eventually(|| c.unauthenticated.load(Ordering::Relaxed) == 2).await);
    assert_eq!(c.served.load(Ordering::Relaxed), 0);
    let mut c = Client::connect(
        server.addr,
        ClientOptions {
            tls: client_tls(&ca, Some(&good), "localhost"),
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(c.get("blob").await.unwrap().data, pattern(100, 2));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_and_untrusting_clients_get_nothing() {
    let dir = tempdir("plain");
    let file = make_file(&dir, 100);
    let ca = new_ca("plain");
    let stranger = new_ca("stranger");
    let (cert, key) = leaf(&ca, &["localhost"], ExtendedKeyUsagePurpose::ServerAuth);
    let server = start(
        ServerOptions {
            tls: Some(server_config(cert.as_bytes(), key.as_bytes(), None).unwrap()),
            ..ServerOptions::default()
        },
        &[file],
    )
    .await;
    // A plaintext client: its CLIENT_HELLO is no TLS record.
    let e = Client::connect(server.addr, ClientOptions::default())
        .await
        .unwrap_err();
    assert!(
        !matches!(e, Error::Tls(_)),
        "the client did not ask for TLS: {e}"
    );
    // A client that trusts another CA refuses the server's certificate.
    let e = Client::connect(
        server.addr,
        ClientOptions {
            tls: client_tls(&stranger, None, "localhost"),
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap_err();
    assert!(matches!(e, Error::Tls(_)), "{e}");
    // A name the certificate does not carry.
    let e = Client::connect(
        server.addr,
        ClientOptions {
            tls: client_tls(&ca, None, "elsewhere.example"),
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap_err();
    assert!(matches!(e, Error::Tls(_)), "{e}");
    let c = &server.counters;
    assert!(eventually(|| c.unauthenticated.load(Ordering::Relaxed) == 3).await);
    assert_eq!(c.served.load(Ordering::Relaxed), 0);
    server.stop().await;
}

#[test]
fn bad_pem_is_a_typed_error() {
    assert!(matches!(
        server_config(b"not pem", b"not pem", None),
        Err(Error::Tls(_))
    ));
    assert!(matches!(client_config(b"", None), Err(Error::Tls(_))));
    let ca = new_ca("pem");
    let (cert, _) = leaf(&ca, &["localhost"], ExtendedKeyUsagePurpose::ServerAuth);
    let (_, other_key) = leaf(&ca, &["localhost"], ExtendedKeyUsagePurpose::ServerAuth);
    // A key that is not the certificate's.
    assert!(matches!(
        server_config(cert.as_bytes(), other_key.as_bytes(), None),
        Err(Error::Tls(_))
    ));
    assert!(
        ClientTls::new(
            client_config(ca.pem.as_bytes(), None).unwrap(),
            "not a name!"
        )
        .is_err()
    );
}
