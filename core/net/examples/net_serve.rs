//! A server for cross-implementation tests: writes `DIR/corpus.hrry` with
//! known tensors, serves it on 127.0.0.1 (a free port) with the store
//! `DIR/store`, prints `LISTEN <addr>` on stdout, and shuts down gracefully
//! when standard input closes.
//!
//! `cargo run -p hurray-rs-net --example net_serve -- DIR`
//!
//! The tensors (`tests/python/test_net_protocol.py` knows them by the same
//! rules): `bytes` u8 [1000], `weights` f32 [3, 4], `empty` u8 [0], each
//! buffer byte `i` being `(i * 31 + seed) mod 256` with seeds 1, 2, 3; and
//! `big` u8 [3 MiB] with seed 4, sent in many frames.

use std::io::Write;
use std::time::Duration;

use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
use hurray_net::{Server, ServerOptions};
use tokio::io::AsyncReadExt;

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn desc(shape: &[u64], ty: ElementType, bytes: u64) -> Vec<u8> {
    let align = if bytes == 0 { 1 } else { 64 };
    let b = [BufferHandle::new(bytes, align, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
    let mut out = vec![0u8; 256];
    let n = TensorDescriptor::row_major(ty, shape, &b)
        .encode(&mut out)
        .unwrap();
    out.truncate(n);
    out
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("usage: net_serve DIR"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("corpus.hrry");
    let big = 3 << 20;
    let tensors = [
        (
            "bytes",
            desc(&[1000], ElementType::UInt8, 1000),
            pattern(1000, 1),
        ),
        (
            "weights",
            desc(&[3, 4], ElementType::Float32, 48),
            pattern(48, 2),
        ),
        ("empty", desc(&[0], ElementType::UInt8, 0), Vec::new()),
        (
            "big",
            desc(&[big as u64], ElementType::UInt8, big as u64),
            pattern(big, 4),
        ),
    ];
    let mut w =
        hurray_io::file::create(&path, hurray_core::file::WriterOptions::default()).unwrap();
    for (name, d, data) in &tensors {
        w.write_tensor(name, &TensorView::parse(d).unwrap(), &[data])
            .unwrap();
    }
    w.finish(&[]).unwrap();
    let options = ServerOptions {
        store: Some(dir.join("store")),
        handshake_timeout: Duration::from_secs(2),
        max_message_size: 64 << 10,
        ..ServerOptions::default()
    };
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), options, &[&path])
        .await
        .unwrap();
    println!("LISTEN {}", server.local_addr());
    std::io::stdout().flush().unwrap();
    server
        .run(async {
            let mut sink = Vec::new();
            let _ = tokio::io::stdin().read_to_end(&mut sink).await;
        })
        .await
        .unwrap();
}
