//! The server and client on loopback: round trips (memory, file, put and
//! back, the shared conformance file), limits, tokens, shutdown, and
//! hostile peers written byte by byte; after hostile and idle peers the
//! server's open fds and heap bytes return to their baseline (a counting
//! allocator). Every wait is bounded in time.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use hurray_core::net::ErrorCode;
use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
use hurray_net::{Client, ClientOptions, Counters, Error, Server, ServerOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// The tests run one at a time: the idle-connection test compares the
/// process's open fds and live heap bytes with a baseline, which a
/// concurrent test would move.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The system allocator, counting the bytes the process holds, so a test can
/// check that the server's memory returns to its baseline once hostile or
/// idle peers are gone.
#[allow(unsafe_code)]
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};

    static LIVE: AtomicIsize = AtomicIsize::new(0);

    /// Live heap bytes of the whole process.
    pub(crate) fn live() -> isize {
        LIVE.load(Relaxed)
    }

    struct Counting;

    #[global_allocator]
    static COUNTING: Counting = Counting;

    // SAFETY: every call forwards to `System` with the caller's arguments
    // unchanged; the counter is bookkeeping only.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: as the caller's contract.
            let p = unsafe { System.alloc(layout) };
            if !p.is_null() {
                LIVE.fetch_add(layout.size() as isize, Relaxed);
            }
            p
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: as the caller's contract.
            let p = unsafe { System.alloc_zeroed(layout) };
            if !p.is_null() {
                LIVE.fetch_add(layout.size() as isize, Relaxed);
            }
            p
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: as the caller's contract.
            unsafe { System.dealloc(ptr, layout) };
            LIVE.fetch_sub(layout.size() as isize, Relaxed);
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: as the caller's contract.
            let p = unsafe { System.realloc(ptr, layout, new_size) };
            if !p.is_null() {
                LIVE.fetch_add(new_size as isize - layout.size() as isize, Relaxed);
            }
            p
        }
    }
}

/// A fresh directory under the target dir.
fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hurray-net-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn desc(shape: &[u64], ty: ElementType, bytes: u64) -> Vec<u8> {
    let b = [BufferHandle::new(bytes, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
    let mut out = vec![0u8; 256];
    let n = TensorDescriptor::row_major(ty, shape, &b)
        .encode(&mut out)
        .unwrap();
    out.truncate(n);
    out
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// A file with `weights` (f32 [3, 4]) and `blob` (u8 [n]).
fn make_file(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("model.hrry");
    let mut w =
        hurray_io::file::create(&path, hurray_core::file::WriterOptions::default()).unwrap();
    let d1 = desc(&[3, 4], ElementType::Float32, 48);
    let d2 = desc(&[n as u64], ElementType::UInt8, n as u64);
    let (v1, v2) = (
        TensorView::parse(&d1).unwrap(),
        TensorView::parse(&d2).unwrap(),
    );
    let (b1, b2) = (pattern(48, 1), pattern(n, 2));
    w.write_tensor("weights", &v1, &[&b1]).unwrap();
    w.write_tensor("blob", &v2, &[&b2]).unwrap();
    w.finish(&[]).unwrap();
    path
}

struct Running {
    addr: std::net::SocketAddr,
    counters: std::sync::Arc<Counters>,
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

fn quick() -> ServerOptions {
    ServerOptions {
        handshake_timeout: Duration::from_millis(500),
        idle_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(2),
        grace: Duration::from_secs(5),
        ..ServerOptions::default()
    }
}

// --- raw peers ----------------------------------------------------------------------

fn msg(kind: u32, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = kind.to_le_bytes().to_vec();
    v.extend_from_slice(&stream.to_le_bytes());
    v.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    v.extend_from_slice(payload);
    v
}

fn hello() -> Vec<u8> {
    let mut p = 1u32.to_le_bytes().to_vec();
    p.extend_from_slice(&65536u32.to_le_bytes());
    p.extend_from_slice(&0u64.to_le_bytes());
    p.extend_from_slice(&[0, 0, 1, 0, 0, 1, 0, 0]); // no layouts, devices [CPU], classes [STANDARD]
    msg(1, 0, &p)
}

/// Reads one message, or `None` at EOF; panics after 5 s.
async fn read_msg(s: &mut TcpStream) -> Option<(u32, u32, Vec<u8>)> {
    tokio::time::timeout(Duration::from_secs(5), async {
        let mut h = [0u8; 12];
        if s.read_exact(&mut h).await.is_err() {
            return None;
        }
        let n = u32::from_le_bytes(h[8..12].try_into().unwrap()) as usize;
        let mut p = vec![0u8; n];
        s.read_exact(&mut p).await.ok()?;
        Some((
            u32::from_le_bytes(h[0..4].try_into().unwrap()),
            u32::from_le_bytes(h[4..8].try_into().unwrap()),
            p,
        ))
    })
    .await
    .expect("the server answers or closes within 5 s")
}

async fn expect_eof(s: &mut TcpStream) {
    let mut b = [0u8; 64];
    let r = tokio::time::timeout(Duration::from_secs(5), s.read(&mut b))
        .await
        .expect("closed within 5 s");
    assert!(matches!(r, Ok(0) | Err(_)), "expected EOF, got {r:?}");
}

fn code_of(m: &(u32, u32, Vec<u8>)) -> u32 {
    assert_eq!(m.0, 9, "an ERROR");
    u32::from_le_bytes(m.2[0..4].try_into().unwrap())
}

async fn handshake(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&hello()).await.unwrap();
    let m = read_msg(&mut s).await.unwrap();
    assert_eq!((m.0, m.1), (2, 0));
    s
}

async fn good_client_works(addr: std::net::SocketAddr, n: usize) {
    let mut c = Client::connect(addr, ClientOptions::default())
        .await
        .unwrap();
    let t = c.get("blob").await.unwrap();
    assert_eq!(t.data, pattern(n, 2));
}

// --- round trips ---------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_into_memory_and_file_put_and_get_back() {
    let _serial = SERIAL.lock().await;
    let dir = tempdir("roundtrip");
    let n = 3 << 20; // 3 MiB: many frames
    let file = make_file(&dir, n);
    let store = dir.join("store");
    let server = start(
        ServerOptions {
            store: Some(store.clone()),
            ..quick()
        },
        &[file],
    )
    .await;
    let mut c = Client::connect(
        server.addr,
        ClientOptions {
            max_message_size: 64 << 10,
            ..ClientOptions::default()
        },
    )
    .await
    .unwrap();
    let w = c.get("weights").await.unwrap();
    assert_eq!(w.data, pattern(48, 1));
    assert_eq!(w.view().element_type(), ElementType::Float32);
    assert!(w.view().shape().iter().eq([3, 4]));
    let b = c.get("blob").await.unwrap();
    assert_eq!(b.data, pattern(n, 2));
    // Into a file: one tensor, named by its key.
    let out = dir.join("fetched.hrry");
    c.get_to_file("weights", &out).await.unwrap();
    let mut f = hurray_io::file::open(&out).unwrap();
    let view = f.view().unwrap();
    let t = view.index().get("weights").unwrap().unwrap();
    assert_eq!(t.buffers().next().unwrap(), &pattern(48, 1)[..]);
    // Put, then get it back from the store.
    let d = desc(&[5], ElementType::UInt8, 5);
    c.put(
        "new/one",
        &TensorView::parse(&d).unwrap(),
        &[&[9, 8, 7, 6, 5]],
    )
    .await
    .unwrap();
    assert!(store.join("new%2Fone.hrry").exists());
    assert_eq!(c.get("new/one").await.unwrap().data, [9, 8, 7, 6, 5]);
    // A tensor of a file, pushed under another key.
    c.put_from_file(dir.join("model.hrry"), "weights", "copy")
        .await
        .unwrap();
    assert_eq!(c.get("copy").await.unwrap().data, pattern(48, 1));
    // Unknown key, and the session goes on.
    let e = c.get("nope").await.unwrap_err();
    assert!(
        matches!(
            e,
            Error::Peer {
                code: ErrorCode::UnknownTensor,
                ..
            }
        ),
        "{e}"
    );
    c.ping().await.unwrap();
    assert_eq!(server.counters.stored.load(Ordering::Relaxed), 2);
    assert!(server.counters.served.load(Ordering::Relaxed) >= 5);
    // No temporary file is left in the store.
    let names: Vec<String> = std::fs::read_dir(&store)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| n.ends_with(".hrry")), "{names:?}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shared_conformance_file_round_trips() {
    let _serial = SERIAL.lock().await;
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/files/basic.hrry");
    if !path.exists() {
        assert!(
            std::env::var_os("HURRAY_REQUIRE_CONFORMANCE").is_none(),
            "{path:?} missing"
        );
        eprintln!("SKIPPED: {path:?} not found");
        return;
    }
    let mut f = hurray_io::file::open(&path).unwrap();
    let view = f.view().unwrap();
    let tensors: Vec<(String, Vec<u8>, Vec<u8>)> = view
        .index()
        .iter()
        .map(|t| {
            let t = t.unwrap();
            (
                t.name().to_owned(),
                t.descriptor().as_bytes().to_vec(),
                t.buffers().flatten().copied().collect(),
            )
        })
        .collect();
    assert!(!tensors.is_empty());
    let server = start(quick(), std::slice::from_ref(&path)).await;
    let mut c = Client::connect(server.addr, ClientOptions::default())
        .await
        .unwrap();
    for (name, d, data) in &tensors {
        let got = c.get(name).await.unwrap();
        assert_eq!((&got.descriptor, &got.data), (d, data), "{name}");
    }
    server.stop().await;
}

// --- limits and access ----------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_stay_inside_the_store_and_limits_hold() {
    let _serial = SERIAL.lock().await;
    let dir = tempdir("keys");
    let store = dir.join("store");
    let server = start(
        ServerOptions {
            store: Some(store.clone()),
            max_put_bytes: 100,
            ..quick()
        },
        &[] as &[PathBuf],
    )
    .await;
    let mut c = Client::connect(server.addr, ClientOptions::default())
        .await
        .unwrap();
    let d = desc(&[4], ElementType::UInt8, 4);
    let v = TensorView::parse(&d).unwrap();
    for key in ["../escape", "/etc/passwd", "..", ".hidden", "a/../../b"] {
        c.put(key, &v, &[&[1, 2, 3, 4]]).await.unwrap();
        assert_eq!(c.get(key).await.unwrap().data, [1, 2, 3, 4]);
    }
    // Everything landed inside the store, nothing beside it.
    assert_eq!(std::fs::read_dir(&store).unwrap().count(), 5);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    // Over max_put_bytes: BUSY before a byte is stored.
    let big = desc(&[101], ElementType::UInt8, 101);
    let e = c
        .put("big", &TensorView::parse(&big).unwrap(), &[&[0; 101]])
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Peer {
                code: ErrorCode::Busy,
                ..
            }
        ),
        "{e}"
    );
    // A key whose stored name would be too long.
    let e = c
        .put(&"é".repeat(100), &v, &[&[1, 2, 3, 4]])
        .await
        .unwrap_err();
    assert!(
        matches!(
            e,
            Error::Peer {
                code: ErrorCode::InvalidMessage,
                ..
            }
        ),
        "{e}"
    );
    c.ping().await.unwrap();
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_required_when_set() {
    let _serial = SERIAL.lock().await;
    let dir = tempdir("token");
    let file = make_file(&dir, 100);
    let server = start(
        ServerOptions {
            token: Some(b"s3cret".to_vec()),
            ..quick()
        },
        &[file],
    )
    .await;
    let e = Client::connect(server.addr, ClientOptions::default())
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
    let wrong = ClientOptions {
        token: Some(b"guess".to_vec()),
        ..ClientOptions::default()
    };
    assert!(Client::connect(server.addr, wrong).await.is_err());
    let right = ClientOptions {
        token: Some(b"s3cret".to_vec()),
        ..ClientOptions::default()
    };
    let mut c = Client::connect(server.addr, right).await.unwrap();
    assert_eq!(c.get("blob").await.unwrap().data, pattern(100, 2));
    assert_eq!(server.counters.errors_sent(ErrorCode::Unauthorized), 2);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_a_transfer_finish() {
    let _serial = SERIAL.lock().await;
    let dir = tempdir("shutdown");
    let n = 8 << 20;
    let file = make_file(&dir, n);
    let server = start(quick(), &[file]).await;
    let mut c = Client::connect(server.addr, ClientOptions::default())
        .await
        .unwrap();
    let fetch = tokio::spawn(async move { c.get("blob").await.map(|t| t.data.len()) });
    tokio::time::sleep(Duration::from_millis(5)).await;
    let addr = server.addr;
    server.stop().await; // returns once every connection has ended
    assert_eq!(fetch.await.unwrap().unwrap(), n);
    // No longer accepting.
    assert!(
        Client::connect(
            addr,
            ClientOptions {
                handshake_timeout: Duration::from_secs(1),
                ..ClientOptions::default()
            }
        )
        .await
        .is_err()
    );
}

// --- hostile peers ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_peers_get_the_right_error_and_others_keep_being_served() {
    let _serial = SERIAL.lock().await;
    let dir = tempdir("hostile");
    let n = 1000;
    let file = make_file(&dir, n);
    let store = dir.join("store");
    let server = start(
        ServerOptions {
            store: Some(store.clone()),
            ..quick()
        },
        &[file],
    )
    .await;
    let heap_before = counting::live();
    let addr = server.addr;
    let good = tokio::spawn(async move {
        for _ in 0..20 {
            good_client_works(addr, n).await;
        }
    });

    // Garbage first bytes: INVALID_MESSAGE, then the connection closes.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    // Bytes 8..12 ("\r\nHo") read as a length over the maximum: the size
    // is judged first ([NP-FRAME-2]), else the type would be ([NP-FRAME-3]).
    assert_eq!(code_of(&read_msg(&mut s).await.unwrap()), 7);
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    assert_eq!(code_of(&read_msg(&mut s).await.unwrap()), 6);
    expect_eof(&mut s).await;

    // A header announcing 4 GiB: MESSAGE_TOO_LARGE, closed, nothing reserved.
    let mut s = handshake(addr).await;
    s.write_all(&[3, 0, 0, 0, 1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF])
        .await
        .unwrap();
    let m = read_msg(&mut s).await.unwrap();
    assert_eq!((code_of(&m), m.1), (7, 1));
    expect_eof(&mut s).await;

    // Out of order: data before the hello.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(&msg(5, 1, &[0; 9])).await.unwrap();
    assert_eq!(code_of(&read_msg(&mut s).await.unwrap()), 6);
    expect_eof(&mut s).await;

    // An unknown type on a stream: that stream gets ERROR, the connection lives.
    let mut s = handshake(addr).await;
    s.write_all(&msg(0xF7, 5, b"private")).await.unwrap();
    let m = read_msg(&mut s).await.unwrap();
    assert_eq!((code_of(&m), m.1), (6, 5));
    s.write_all(&msg(0x0A, 0, &42u64.to_le_bytes()))
        .await
        .unwrap();
    assert_eq!(
        read_msg(&mut s).await.unwrap(),
        (0x0B, 0, 42u64.to_le_bytes().to_vec())
    );

    // A put whose descriptor lies about its size.
    let d = desc(&[8], ElementType::UInt8, 8);
    let mut p = 1u32.to_le_bytes().to_vec();
    p.push(b'k');
    p.extend_from_slice(&(d.len() as u32).to_le_bytes());
    p.extend_from_slice(&d);
    p.extend_from_slice(&1000u64.to_le_bytes()); // total_data_bytes 1000, buffers say 8
    s.write_all(&msg(7, 9, &p)).await.unwrap();
    let m = read_msg(&mut s).await.unwrap();
    assert_eq!((code_of(&m), m.1), (6, 9));

    // A disconnect mid-put leaves nothing in the store.
    let mut p = 1u32.to_le_bytes().to_vec();
    p.push(b'h');
    p.extend_from_slice(&(d.len() as u32).to_le_bytes());
    p.extend_from_slice(&d);
    p.extend_from_slice(&8u64.to_le_bytes());
    s.write_all(&msg(7, 11, &p)).await.unwrap();
    let mut frame = 0u64.to_le_bytes().to_vec();
    frame.extend_from_slice(&[1, 2, 3]);
    s.write_all(&msg(5, 11, &frame)).await.unwrap();
    drop(s);

    // A slow sender: one byte every 100 ms of a hello is no message at all.
    let mut s = TcpStream::connect(addr).await.unwrap();
    let start = std::time::Instant::now();
    let h = hello();
    let mut closed = false;
    for b in &h {
        if s.write_all(&[*b]).await.is_err() {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        if start.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    if !closed {
        let m = read_msg(&mut s).await;
        assert!(m.is_none() || code_of(m.as_ref().unwrap()) == 0xF0, "{m:?}");
    }
    assert!(start.elapsed() < Duration::from_secs(4));
    assert!(server.counters.timeouts.load(Ordering::Relaxed) >= 1);

    tokio::time::timeout(Duration::from_secs(30), good)
        .await
        .unwrap()
        .unwrap();
    // Every hostile connection is gone, the store holds no file or temporary.
    wait_until(|| server.counters.open.load(Ordering::Relaxed) == 0).await;
    assert_eq!(std::fs::read_dir(&store).unwrap().count(), 0);
    assert!(server.counters.errors_sent(ErrorCode::InvalidMessage) >= 4);
    assert_eq!(server.counters.errors_sent(ErrorCode::MessageTooLarge), 2);
    let grown = counting::live() - heap_before;
    eprintln!("heap after the hostile peers: {grown:+} B");
    assert!(
        grown < HEAP_SLACK,
        "the server kept {grown} B after the hostile peers"
    );
    server.stop().await;
}

/// Heap growth allowed once peers are gone, beyond what the runtime keeps
/// for good: first-use allocations (logging, lazily built state), far below
/// what one wave's per-connection buffers would be if any were kept.
const HEAP_SLACK: isize = 64 << 10;

/// 500 peers connect to `server` and say nothing; returns how many were
/// refused with BUSY and how many timed out in their handshake, once every
/// one was closed and the server holds no connection.
async fn idle_wave(server: &Running) -> (u64, u64) {
    let refused = server.counters.refused.load(Ordering::Relaxed);
    let timeouts = server.counters.timeouts.load(Ordering::Relaxed);
    let mut idle = Vec::new();
    for _ in 0..500 {
        idle.push(TcpStream::connect(server.addr).await.unwrap());
    }
    let ended = || {
        server.counters.refused.load(Ordering::Relaxed) - refused
            + server.counters.timeouts.load(Ordering::Relaxed)
            - timeouts
    };
    wait_until(|| ended() >= 500).await;
    let mut busy = 0;
    for s in &mut idle {
        match read_msg(s).await {
            Some(m) if code_of(&m) == 0xF2 => busy += 1,
            Some(m) => assert_eq!(code_of(&m), 0xF0),
            None => {}
        }
        expect_eof(s).await;
    }
    drop(idle);
    wait_until(|| server.counters.open.load(Ordering::Relaxed) == 0).await;
    let refused = server.counters.refused.load(Ordering::Relaxed) - refused;
    assert_eq!(busy, refused, "every refused peer read BUSY");
    (
        busy,
        server.counters.timeouts.load(Ordering::Relaxed) - timeouts,
    )
}

/// Waits for `f` to hold. The bound is for liveness, not speed: 500 sockets
/// accepted, refused and closed took over 5 s on a 2-core box running four
/// builds beside the test, so it is generous.
async fn wait_until(f: impl Fn() -> bool) {
    for _ in 0..600 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("condition not reached within 30 s");
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_idle_connections_are_capped_and_timed_out() {
    let _serial = SERIAL.lock().await;
    let dir = tempdir("idle");
    let file = make_file(&dir, 64);
    let server = start(
        ServerOptions {
            max_connections: 64,
            handshake_timeout: Duration::from_millis(300),
            ..quick()
        },
        &[file],
    )
    .await;
    let before = open_fds();
    let heap_before = counting::live();
    let (busy, timed_out) = idle_wave(&server).await;
    // Past the cap: BUSY and closed; the rest time out in their handshake.
    // Exactly 436 are refused when the 500 connect faster than the handshake
    // timeout; on a loaded box an early one may time out first and free its
    // slot, so the split is checked, not its exact value.
    assert_eq!(busy + timed_out, 500);
    assert!(
        busy >= 1 && timed_out >= 64,
        "busy {busy}, timed out {timed_out}"
    );
    // A good client is served afterwards, and the fds are back where they were.
    good_client_works(server.addr, 64).await;
    wait_until(|| open_fds() <= before + 2).await;
    // Memory: a wave grows what the runtime keeps for good (its I/O driver's
    // registrations, about 1.4 MB for 500 sockets, sized by the most sockets
    // ever open at once, which the machine's load decides). It stops
    // growing: a later wave must leave the heap where the one before left it.
    // A leak of 128 B per connection would grow every wave past the slack.
    let mut last = counting::live();
    eprintln!(
        "heap: {:+} B after the first 500 idle peers",
        last - heap_before
    );
    let mut grown = isize::MAX;
    for wave in 2..=4 {
        let (busy, timed_out) = idle_wave(&server).await;
        assert_eq!(busy + timed_out, 500);
        good_client_works(server.addr, 64).await;
        let now = counting::live();
        grown = now - last;
        last = now;
        eprintln!("heap: {grown:+} B more after wave {wave}");
        if grown < HEAP_SLACK {
            break;
        }
    }
    assert!(
        grown < HEAP_SLACK,
        "the server kept {grown} B more after each of three more waves of 500 idle peers"
    );
    // And what the runtime keeps for good stays bounded (a wave can hand
    // back what an earlier one kept, which must not hide a leak).
    assert!(
        last - heap_before < 4 << 20,
        "the server keeps {} B after its idle waves",
        last - heap_before
    );
    server.stop().await;
}
