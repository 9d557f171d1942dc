//! Throughput and latency of the hurray network protocol on loopback,
//! against a plain TCP copy of the same bytes in the same process.
//!
//! `cargo run --release -p hurray-rs-net --example net_bench -- [MiB] [--quick]`
//!
//! 1. One client fetches one tensor of `MiB` MiB (default 1024) from a
//!    server that serves it from a mapped `.hrry` file; the baseline writes
//!    the same mapped bytes over a plain TCP connection in 1 MiB writes and
//!    reads them into one vector. Best of 3 each; every byte is checked.
//!    With `--features tls`, the same fetch over TLS (rustls on ring, a CA
//!    and certificate generated at start) against the plaintext protocol.
//! 2. The same tensor fetched in parallel (ADR-113): over 1, 2, 4 and 8
//!    connections (`fetch_parallel`: connection k asks for shard k of N;
//!    with 1, the server cuts it into 4 shards on the one connection), each
//!    shard placed in place into one buffer. Best of 3 each, every byte
//!    checked; the ratio against 1 connection is printed.
//!    The same into a `.hrry` file (`fetch_parallel_to_file`: positional
//!    writes, nothing shared between connections), 1 and 4 connections.
//! 3. 64 concurrent clients each fetch 1,000 small tensors (20 with
//!    `--quick`): p50 and p99 latency per fetch, every byte checked.
//!
//! With `--features gpu`, the same tensor straight into a GPU buffer
//! (`hurray_net::gpu::fetch_to_gpu`) over 1 and 4 connections.
//!
//! Prints numbers; asserts no timing.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
use hurray_net::{Client, ClientOptions, Server, ServerOptions, fetch_parallel};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn desc(n: u64) -> Vec<u8> {
    let b = [BufferHandle::new(n, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
    let mut out = vec![0u8; 256];
    let k = TensorDescriptor::row_major(ElementType::UInt8, &[n], &b)
        .encode(&mut out)
        .unwrap();
    out.truncate(k);
    out
}

fn fill(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn write_file(path: &PathBuf, tensors: &[(String, Vec<u8>)]) {
    let mut w = hurray_io::file::create(path, hurray_core::file::WriterOptions::default()).unwrap();
    let descs: Vec<Vec<u8>> = tensors.iter().map(|(_, d)| desc(d.len() as u64)).collect();
    for ((name, data), d) in tensors.iter().zip(&descs) {
        w.write_tensor(name, &TensorView::parse(d).unwrap(), &[data])
            .unwrap();
    }
    w.finish(&[]).unwrap();
}

async fn plain_copy(data: &'static [u8]) -> Duration {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let sender = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        for chunk in data.chunks(1 << 20) {
            s.write_all(chunk).await.unwrap();
        }
        s.flush().await.unwrap();
    });
    let t = Instant::now();
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut got = Vec::with_capacity(data.len());
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = s.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    let d = t.elapsed();
    sender.await.unwrap();
    assert!(got == data, "plain copy corrupted the bytes");
    d
}

/// Best of 3 fetches of `big` over TLS (a CA and server certificate made
/// here, with rcgen).
#[cfg(feature = "tls")]
async fn tls_fetch(big: &PathBuf, data: &[u8]) -> Duration {
    use hurray_net::tls::{ClientTls, client_config, server_config};
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = p.self_signed(&ca_key).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &ca, &ca_key)
        .unwrap();
    let options = ServerOptions {
        tls: Some(
            server_config(cert.pem().as_bytes(), key.serialize_pem().as_bytes(), None).unwrap(),
        ),
        ..ServerOptions::default()
    };
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), options, &[big])
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.run(std::future::pending::<()>()));
    let tls = ClientTls::new(
        client_config(ca.pem().as_bytes(), None).unwrap(),
        "localhost",
    )
    .unwrap();
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let options = ClientOptions {
            tls: Some(tls.clone()),
            ..ClientOptions::default()
        };
        let mut c = Client::connect(addr, options).await.unwrap();
        let t = Instant::now();
        let got = c.get("big").await.unwrap();
        best = best.min(t.elapsed());
        assert!(got.data == data, "TLS corrupted the bytes");
    }
    best
}

/// With `--features gpu`: the same tensor straight into a GPU buffer
/// (`hurray_net::gpu::fetch_to_gpu`) over 1 and 4 connections, best of 3,
/// read back and checked once per count.
#[cfg(feature = "gpu")]
async fn gpu_fetch(addr: std::net::SocketAddr, data: &[u8], gbps: impl Fn(Duration) -> f64) {
    use hurray_gpu::GpuContext;
    use hurray_gpu::wgpu::BufferUsages;
    let ctx = match GpuContext::new() {
        Ok(c) => c,
        Err(e) => {
            println!("the same tensor into GPU buffers: no GPU ({e})");
            return;
        }
    };
    println!(
        "the same tensor into GPU buffers ({}), best of 3:",
        ctx.adapter_info().name
    );
    let mut one = Duration::MAX;
    for conns in [1u16, 4] {
        let mut best = Duration::MAX;
        let mut last = None;
        for _ in 0..3 {
            drop(last.take());
            let t = Instant::now();
            let got = hurray_net::gpu::fetch_to_gpu(
                addr,
                ClientOptions::default(),
                "big",
                conns,
                &ctx,
                BufferUsages::STORAGE,
            )
            .await
            .unwrap();
            best = best.min(t.elapsed());
            last = Some(got);
        }
        let got = last.expect("three fetches ran");
        let mut back = Vec::new();
        got.buffers()[0].read(&mut back).unwrap();
        assert!(back == data, "the GPU buffer's bytes differ");
        if conns == 1 {
            one = best;
        }
        println!(
            "  {conns} connection(s)   {:8.3} GB/s   x{:.2} of 1 connection",
            gbps(best),
            one.as_secs_f64() / best.as_secs_f64()
        );
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let mib: usize = args
        .iter()
        .find_map(|a| a.parse().ok())
        .unwrap_or(if quick { 64 } else { 1024 });
    let dir = std::env::temp_dir().join(format!("hurray-net-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.hrry");
    let n = mib << 20;
    let data = fill(n, 7);
    write_file(&big, &[("big".to_owned(), data.clone())]);
    let data: &'static [u8] = Box::leak(data.into_boxed_slice());

    // 1. One large tensor.
    let options = ServerOptions {
        max_connections: 128,
        ..ServerOptions::default()
    };
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), options.clone(), &[&big])
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.run(std::future::pending::<()>()));
    let mut best_plain = Duration::MAX;
    let mut best_proto = Duration::MAX;
    for _ in 0..3 {
        best_plain = best_plain.min(plain_copy(data).await);
        let mut c = Client::connect(addr, ClientOptions::default())
            .await
            .unwrap();
        let t = Instant::now();
        let got = c.get("big").await.unwrap();
        best_proto = best_proto.min(t.elapsed());
        assert!(got.data == data, "protocol corrupted the bytes");
    }
    let gbps = |d: Duration| n as f64 / d.as_secs_f64() / 1e9;
    println!("one tensor of {mib} MiB, best of 3:");
    println!("  plain TCP copy     {:8.3} GB/s", gbps(best_plain));
    println!("  hurray protocol    {:8.3} GB/s", gbps(best_proto));
    println!(
        "  ratio              {:8.3}",
        best_plain.as_secs_f64() / best_proto.as_secs_f64()
    );
    #[cfg(feature = "tls")]
    {
        let best_tls = tls_fetch(&big, data).await;
        println!("  over TLS (ring)    {:8.3} GB/s", gbps(best_tls));
        println!(
            "  TLS / plaintext    {:8.3}",
            best_proto.as_secs_f64() / best_tls.as_secs_f64()
        );
    }

    // 2. Parallel: N connections, shard k on connection k.
    println!("the same tensor in parallel (in place), best of 3:");
    let mut one = Duration::MAX;
    for conns in [1u16, 2, 4, 8] {
        let mut best = Duration::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            let got = fetch_parallel(addr, ClientOptions::default(), "big", conns)
                .await
                .unwrap();
            best = best.min(t.elapsed());
            assert!(got.data == data, "a parallel fetch corrupted the bytes");
        }
        if conns == 1 {
            one = best;
        }
        println!(
            "  {conns} connection(s)   {:8.3} GB/s   x{:.2} of 1 connection",
            gbps(best),
            one.as_secs_f64() / best.as_secs_f64()
        );
    }

    // 2b. Into a file (pwrite per frame, nothing shared between the
    // connections), 1 and 4 connections; the file is read back and checked.
    println!("the same tensor into a .hrry file (in place), best of 3:");
    let out = dir.join("out.hrry");
    let mut one = Duration::MAX;
    for conns in [1u16, 4] {
        let mut best = Duration::MAX;
        for _ in 0..3 {
            let _ = std::fs::remove_file(&out);
            let t = Instant::now();
            hurray_net::fetch_parallel_to_file(
                addr,
                ClientOptions::default(),
                "big",
                conns,
                &out,
                &mut |_, _| {},
            )
            .await
            .unwrap();
            best = best.min(t.elapsed());
            let mut f = hurray_io::file::open(&out).unwrap();
            let index = f.index().unwrap();
            let t = index.get("big").unwrap().unwrap();
            assert!(t.buffers().next() == Some(data), "the file's bytes differ");
        }
        if conns == 1 {
            one = best;
        }
        println!(
            "  {conns} connection(s)   {:8.3} GB/s   x{:.2} of 1 connection",
            gbps(best),
            one.as_secs_f64() / best.as_secs_f64()
        );
    }
    let _ = std::fs::remove_file(&out);

    #[cfg(feature = "gpu")]
    gpu_fetch(addr, data, gbps).await;

    // 3. Many clients, small tensors.
    let per_client = if quick { 20 } else { 1000 };
    let small: Vec<(String, Vec<u8>)> = (0..64)
        .map(|i| (format!("t{i}"), fill(4096 + i * 64, i as u64 + 1)))
        .collect();
    let smallf = dir.join("small.hrry");
    write_file(&smallf, &small);
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), options, &[&smallf])
        .await
        .unwrap();
    let addr = server.local_addr();
    let counters = server.counters();
    tokio::spawn(server.run(std::future::pending::<()>()));
    let small: &'static [(String, Vec<u8>)] = Box::leak(small.into_boxed_slice());
    let t = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..64usize {
        tasks.push(tokio::spawn(async move {
            let mut client = Client::connect(addr, ClientOptions::default())
                .await
                .unwrap();
            let mut lat = Vec::with_capacity(per_client);
            for k in 0..per_client {
                let (name, want) = &small[(c + k) % small.len()];
                let s = Instant::now();
                let got = client.get(name).await.unwrap();
                lat.push(s.elapsed());
                assert!(&got.data == want);
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let wall = t.elapsed();
    all.sort();
    let p = |q: f64| all[((all.len() as f64 - 1.0) * q) as usize];
    println!(
        "64 clients x {per_client} small tensors (4-8 KiB): {} fetches in {:.2?}, every byte right",
        all.len(),
        wall
    );
    println!("  latency p50 {:?}  p99 {:?}", p(0.50), p(0.99));
    println!(
        "  server errors sent: {}",
        counters
            .errors
            .iter()
            .map(|e| e.load(std::sync::atomic::Ordering::Relaxed))
            .sum::<u64>()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
