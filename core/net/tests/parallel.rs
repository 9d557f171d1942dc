//! Parallel transfers on loopback ([NP-SHARD-2..4]): every tensor of the
//! conformance file and of a file of our own, fetched as 1, 2 and 4 shards
//! on one connection and over 1, 2 and 4 connections, into memory and into
//! a file, equals the file's bytes; hostile servers whose shards overlap,
//! leave a gap or disagree on `total_shards` get `SHARD_MISMATCH` and leave
//! nothing under the output name. Every wait is bounded in time.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hurray_core::net::{
    Capabilities, DescriptorMessage, Hello, LayoutList, Message, PROTOCOL_VERSION, ShardSelect,
};
use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
use hurray_net::{
    Client, ClientOptions, Error, Server, ServerOptions, fetch_parallel, fetch_parallel_to_file,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hurray-par-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn handle(bytes: u64) -> [BufferHandle; 1] {
    [BufferHandle::new(bytes, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()]
}

fn encode(d: TensorDescriptor<'_>) -> Vec<u8> {
    let mut out = vec![0u8; 512];
    let n = d.encode(&mut out).unwrap();
    out.truncate(n);
    out
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| {
            (i as u8)
                .wrapping_mul(37)
                .wrapping_add(seed ^ (i >> 8) as u8)
        })
        .collect()
}

/// Row-major and column-major tensors of several ranks and sizes, one too
/// short to cut in 4 (sent whole), and one too small to cut at all.
fn make_file(dir: &Path) -> PathBuf {
    let path = dir.join("ours.hrry");
    let mut w =
        hurray_io::file::create(&path, hurray_core::file::WriterOptions::default()).unwrap();
    let cases: [(&str, &[u64], ElementType, bool); 5] = [
        ("rm3", &[9, 5, 3], ElementType::Float32, true),
        ("cm2", &[6, 7], ElementType::Int16, false),
        ("long", &[100_003], ElementType::UInt8, true),
        ("short", &[3, 4], ElementType::Float64, true),
        ("one", &[1], ElementType::UInt8, true),
    ];
    for (i, (name, shape, ty, row)) in cases.iter().enumerate() {
        let e = u64::from(ty.bits().unwrap() / 8);
        let bytes = shape.iter().product::<u64>() * e;
        let h = handle(bytes);
        let d = if *row {
            TensorDescriptor::row_major(*ty, shape, &h)
        } else {
            TensorDescriptor::column_major(*ty, shape, &h)
        };
        let d = encode(d);
        let data = pattern(bytes as usize, i as u8);
        w.write_tensor(name, &TensorView::parse(&d).unwrap(), &[&data])
            .unwrap();
    }
    w.finish(&[]).unwrap();
    path
}

/// (name, descriptor, data) of every tensor of `path`.
fn tensors(path: &Path) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let mut f = hurray_io::file::open(path).unwrap();
    let view = f.view().unwrap();
    view.index()
        .iter()
        .map(|t| {
            let t = t.unwrap();
            (
                t.name().to_owned(),
                t.descriptor().as_bytes().to_vec(),
                t.buffers().flatten().copied().collect(),
            )
        })
        .collect()
}

/// The same logical tensor: shape, element type and layout.
fn same_tensor(a: &[u8], b: &[u8]) -> bool {
    let (a, b) = (TensorView::parse(a).unwrap(), TensorView::parse(b).unwrap());
    a.shape().iter().eq(b.shape().iter())
        && a.element_type() == b.element_type()
        && a.layout().tag() == b.layout().tag()
}

async fn start(options: ServerOptions, files: &[PathBuf]) -> std::net::SocketAddr {
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), options, files)
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.run(std::future::pending::<()>()));
    addr
}

fn options(shards: u16) -> ServerOptions {
    ServerOptions {
        parallel_shards: shards,
        shard_min_bytes: 0,
        max_message_size: 4096, // several frames per shard
        request_timeout: Duration::from_secs(5),
        ..ServerOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tensor_fetched_as_1_2_4_shards_equals_the_files_bytes() {
    let dir = tempdir("roundtrip");
    let mut files = vec![make_file(&dir)];
    let shared =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/files/basic.hrry");
    if shared.exists() {
        files.push(shared);
    } else {
        assert!(
            std::env::var_os("HURRAY_REQUIRE_CONFORMANCE").is_none(),
            "{shared:?} missing"
        );
    }
    let all: Vec<_> = files.iter().flat_map(|f| tensors(f)).collect();
    assert!(all.len() >= 5);
    for n in [1u16, 2, 4] {
        let addr = start(options(n), &files).await;
        let mut c = Client::connect(addr, ClientOptions::default())
            .await
            .unwrap();
        for (name, d, data) in &all {
            // One connection, shards on the request's block.
            let got = c.get_parallel(name).await.unwrap();
            assert_eq!(&got.data, data, "{name}, {n} shards");
            assert!(same_tensor(&got.descriptor, d), "{name}");
            // n connections, shard k on connection k.
            let got = fetch_parallel(addr, ClientOptions::default(), name, n)
                .await
                .unwrap();
            assert_eq!(&got.data, data, "{name}, {n} connections");
            assert!(same_tensor(&got.descriptor, d), "{name}");
            // Into a file, in place.
            let out = dir.join(format!("{name}-{n}.hrry"));
            fetch_parallel_to_file(
                addr,
                ClientOptions::default(),
                name,
                n,
                &out,
                &mut |_, _| {},
            )
            .await
            .unwrap();
            let back = tensors(&out);
            assert_eq!(back.len(), 1);
            assert_eq!(&back[0].0, name);
            assert_eq!(&back[0].2, data, "{name}, file, {n}");
            assert!(same_tensor(&back[0].1, d));
        }
        // A whole tensor keeps its own descriptor.
        let got = c.get_parallel("one").await.unwrap();
        let original = all.iter().find(|t| t.0 == "one").unwrap();
        assert_eq!(got.descriptor, original.1);
    }
    // Only the outputs are left: no temporary names.
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        assert!(!name.contains(".tmp-"), "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// --- hostile servers ------------------------------------------------------------------

fn frame(kind: u32, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = kind.to_le_bytes().to_vec();
    v.extend_from_slice(&stream.to_le_bytes());
    v.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    v.extend_from_slice(payload);
    v
}

async fn read_frame(s: &mut tokio::net::TcpStream) -> Option<(u32, u32, Vec<u8>)> {
    let mut h = [0u8; 12];
    s.read_exact(&mut h).await.ok()?;
    let n = u32::from_le_bytes(h[8..12].try_into().unwrap()) as usize;
    let mut p = vec![0u8; n];
    s.read_exact(&mut p).await.ok()?;
    Some((
        u32::from_le_bytes(h[0..4].try_into().unwrap()),
        u32::from_le_bytes(h[4..8].try_into().unwrap()),
        p,
    ))
}

/// A shard of a u8 [4, 4] parent: `rows` rows from `row`.
#[derive(Clone, Copy)]
struct Bad {
    rows: u64,
    row: u64,
    index: u32,
    total: u32,
}

/// A server that answers every request with the given shards, then reports
/// the `ERROR` codes it received.
async fn hostile(shards: Vec<Bad>) -> (std::net::SocketAddr, tokio::task::JoinHandle<Vec<u32>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut errors = Vec::new();
        let advert = ShardSelect::advertise(256).unwrap().entry();
        let hello = Hello {
            protocol_version: PROTOCOL_VERSION,
            max_message_size: 1 << 16,
            capabilities: Capabilities::PARALLEL_STREAMS,
            layouts: LayoutList::parse(1, &advert).unwrap(),
            devices: &[0],
            memory_classes: &[0],
        };
        let mut out = vec![0u8; 4096];
        tokio::time::timeout(Duration::from_secs(10), async {
            while let Some((kind, stream, payload)) = read_frame(&mut s).await {
                match kind {
                    1 => {
                        let n = Message::ServerHello(hello).encode(0, &mut out).unwrap();
                        s.write_all(&out[..n]).await.unwrap();
                    }
                    3 => {
                        for b in &shards {
                            let h = handle(b.rows * 4);
                            let d = encode(
                                TensorDescriptor::row_major(ElementType::UInt8, &[b.rows, 4], &h)
                                    .with_shard(&[4, 4], &[b.row, 0]),
                            );
                            let m = DescriptorMessage {
                                descriptor: TensorView::parse(&d).unwrap(),
                                total_data_bytes: b.rows * 4,
                                shard_index: b.index,
                                total_shards: b.total,
                            };
                            let on = stream + b.index;
                            let n = Message::TensorDescriptor(m).encode(on, &mut out).unwrap();
                            let _ = s.write_all(&out[..n]).await;
                        }
                        for b in &shards {
                            let on = stream + b.index;
                            let mut p = 0u64.to_le_bytes().to_vec();
                            p.extend(std::iter::repeat_n(7u8, (b.rows * 4) as usize));
                            let _ = s.write_all(&frame(5, on, &p)).await;
                            let _ = s.write_all(&frame(6, on, &[])).await;
                        }
                    }
                    9 => errors.push(u32::from_le_bytes(payload[0..4].try_into().unwrap())),
                    _ => {}
                }
            }
        })
        .await
        .ok();
        errors
    });
    (addr, task)
}

fn is_shard_mismatch(e: &Error) -> bool {
    match e {
        Error::ShardMismatch(_) => true,
        Error::Protocol(p) => p.error_code() == hurray_core::net::ErrorCode::ShardMismatch,
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn np_shard_3_hostile_shards_get_shard_mismatch_and_leave_no_file() {
    let dir = tempdir("hostile");
    let cases: [(&str, Vec<Bad>); 3] = [
        (
            "overlap",
            vec![
                Bad {
                    rows: 2,
                    row: 0,
                    index: 0,
                    total: 2,
                },
                Bad {
                    rows: 2,
                    row: 1,
                    index: 1,
                    total: 2,
                },
            ],
        ),
        (
            "gap",
            vec![
                Bad {
                    rows: 1,
                    row: 0,
                    index: 0,
                    total: 2,
                },
                Bad {
                    rows: 2,
                    row: 2,
                    index: 1,
                    total: 2,
                },
            ],
        ),
        (
            "totals",
            vec![
                Bad {
                    rows: 2,
                    row: 0,
                    index: 0,
                    total: 2,
                },
                Bad {
                    rows: 2,
                    row: 2,
                    index: 1,
                    total: 3,
                },
            ],
        ),
    ];
    for (what, shards) in cases {
        // Into memory, on one connection.
        let (addr, server) = hostile(shards.clone()).await;
        let mut c = Client::connect(addr, ClientOptions::default())
            .await
            .unwrap();
        let e = tokio::time::timeout(Duration::from_secs(10), c.get_parallel("t"))
            .await
            .unwrap()
            .unwrap_err();
        assert!(is_shard_mismatch(&e), "{what}: {e}");
        drop(c);
        let errors = server.await.unwrap();
        assert!(
            errors.contains(&0x08),
            "{what}: SHARD_MISMATCH sent, got {errors:?}"
        );
        // Into a file: nothing is left under its name or a temporary one.
        let (addr, server) = hostile(shards).await;
        let out = dir.join(format!("{what}.hrry"));
        let e = tokio::time::timeout(
            Duration::from_secs(10),
            fetch_parallel_to_file(addr, ClientOptions::default(), "t", 1, &out, &mut |_, _| {}),
        )
        .await
        .unwrap()
        .unwrap_err();
        assert!(is_shard_mismatch(&e), "{what}: {e}");
        let _ = server.await;
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "{what}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_composite_is_refused_cleanly_and_the_connection_goes_on() {
    use hurray_core::LayoutSpec;
    use hurray_core::layout::{CombineOp, CompositeHead, CompositionRule};
    let dir = tempdir("composite");
    let path = dir.join("c.hrry");
    let head = encode(TensorDescriptor::new(
        ElementType::UInt8,
        &[2, 4],
        LayoutSpec::Composite(CompositeHead {
            rule: CompositionRule::Partition,
            combine_op: CombineOp::None,
            member_count: 2,
        }),
        &[],
    ));
    let h = handle(4);
    let members: Vec<Vec<u8>> = (0..2u64)
        .map(|r| {
            encode(
                TensorDescriptor::row_major(ElementType::UInt8, &[1, 4], &h)
                    .with_shard(&[2, 4], &[r, 0]),
            )
        })
        .collect();
    let mut w =
        hurray_io::file::create(&path, hurray_core::file::WriterOptions::default()).unwrap();
    w.write_tensor("c", &TensorView::parse(&head).unwrap(), &[])
        .unwrap();
    for (i, m) in members.iter().enumerate() {
        w.write_tensor(
            if i == 0 { "c.0" } else { "c.1" },
            &TensorView::parse(m).unwrap(),
            &[&[i as u8; 4]],
        )
        .unwrap();
    }
    w.finish(&[]).unwrap();
    let addr = start(options(4), &[path]).await;
    let mut c = Client::connect(addr, ClientOptions::default())
        .await
        .unwrap();
    let e = c.get_parallel("c").await.unwrap_err();
    assert!(
        matches!(e, Error::Limit(m) if m.contains("composite")),
        "{e}"
    );
    // The request was abandoned with ERROR; the connection serves on.
    let got = c.get_parallel("c.1").await.unwrap();
    assert_eq!(got.data, [1u8; 4]);
    let out = dir.join("out.hrry");
    let e = fetch_parallel_to_file(addr, ClientOptions::default(), "c", 2, &out, &mut |_, _| {})
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Limit(_)), "{e}");
    assert!(!out.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A destination of the caller's, recording every write.
struct Recorder(std::sync::Mutex<Vec<(u64, Vec<u8>)>>);

impl hurray_net::Destination for Recorder {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        self.0.lock().unwrap().push((offset, bytes.to_vec()));
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_destination_gets_every_byte_once() {
    let dir = tempdir("dest");
    let file = make_file(&dir);
    let addr = start(options(4), std::slice::from_ref(&file)).await;
    let want = tensors(&file).into_iter().find(|t| t.0 == "rm3").unwrap();
    let rec = std::sync::Arc::new(Recorder(std::sync::Mutex::new(Vec::new())));
    let keep = std::sync::Arc::clone(&rec);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let seen2 = std::sync::Arc::clone(&seen);
    let descriptor = hurray_net::fetch_parallel_with(
        addr,
        ClientOptions::default(),
        "rm3",
        3,
        Box::new(move |d, total| {
            *seen2.lock().unwrap() = Some((d.to_vec(), total));
            Ok(keep.clone() as std::sync::Arc<dyn hurray_net::Destination>)
        }),
    )
    .await
    .unwrap();
    let (d, total) = seen.lock().unwrap().clone().unwrap();
    assert_eq!(d, descriptor);
    assert_eq!(total, want.2.len() as u64);
    assert!(same_tensor(&descriptor, &want.1));
    let mut got = vec![None; want.2.len()];
    for (at, bytes) in rec.0.lock().unwrap().iter() {
        for (k, b) in bytes.iter().enumerate() {
            assert!(
                got[*at as usize + k].replace(*b).is_none(),
                "a byte written twice"
            );
        }
    }
    let got: Vec<u8> = got.into_iter().map(Option::unwrap).collect();
    assert_eq!(got, want.2);
    let _ = std::fs::remove_dir_all(&dir);
}
