//! Layout negotiation and transcoding on loopback ([NP-LAYOUT-2]): a client
//! that allows it gets the first preferred layout the server stores or can
//! produce within its limit, and every element has the same value at the
//! same index, checked element by element through both descriptors'
//! strides.

use std::path::{Path, PathBuf};

use hurray_core::{
    BufferHandle, BuilderLayout, DescriptorBuilder, DeviceTag, ElementType, SyncMode, TensorView,
};
use hurray_net::{Client, ClientOptions, Server, ServerOptions};

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hurray-tc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A descriptor: `layout`, `shape`, optional strides and byte offset, one
/// CPU buffer of `bytes`.
fn descriptor(
    ty: ElementType,
    shape: &[u64],
    layout: BuilderLayout,
    strides: &[i64],
    byte_offset: u64,
    bytes: u64,
) -> Vec<u8> {
    let mut b = DescriptorBuilder::<8, 1>::new(ty);
    b.set_shape(shape).unwrap();
    b.set_layout(layout);
    if !strides.is_empty() {
        b.set_strides(strides).unwrap();
    }
    b.set_byte_offset(byte_offset);
    b.push_buffer(BufferHandle::new(bytes, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap())
        .unwrap();
    let mut out = vec![0u8; 512];
    let n = b.encode(&mut out).unwrap();
    out.truncate(n);
    TensorView::parse(&out).unwrap();
    out
}

/// Distinct bytes, so a misplaced element shows.
fn data(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

/// (name, descriptor, data): row-major, column-major, and strided (a
/// transposed view, every other element, a negative stride from an offset).
fn cases() -> Vec<(&'static str, Vec<u8>, Vec<u8>)> {
    use BuilderLayout::*;
    vec![
        (
            "rm",
            descriptor(ElementType::Float32, &[3, 4, 5], RowMajor, &[], 0, 240),
            data(240, 1),
        ),
        (
            "cm",
            descriptor(ElementType::Int16, &[4, 3], ColumnMajor, &[], 0, 24),
            data(24, 2),
        ),
        (
            "transposed",
            descriptor(ElementType::Float64, &[3, 4], Strided, &[1, 3], 0, 96),
            data(96, 3),
        ),
        (
            "every_other",
            descriptor(ElementType::UInt8, &[3, 4], Strided, &[8, 2], 0, 24),
            data(24, 4),
        ),
        (
            "flipped",
            descriptor(ElementType::Int32, &[3, 2], Strided, &[-2, 1], 16, 24),
            data(24, 5),
        ),
    ]
}

fn make_file(dir: &Path) -> PathBuf {
    let path = dir.join("layouts.hrry");
    let mut w =
        hurray_io::file::create(&path, hurray_core::file::WriterOptions::default()).unwrap();
    let cases = cases();
    for (name, d, bytes) in &cases {
        w.write_tensor(name, &TensorView::parse(d).unwrap(), &[bytes])
            .unwrap();
    }
    w.finish(&[]).unwrap();
    path
}

/// The bytes of the element at `index`, through the descriptor's strides.
fn element<'a>(d: &[u8], data: &'a [u8], index: &[u64]) -> &'a [u8] {
    let v = TensorView::parse(d).unwrap();
    let e = (v.element_type().bits().unwrap() / 8) as i64;
    let mut strides = vec![0i64; index.len()];
    v.strides(&mut strides).unwrap();
    let at = v.byte_offset() as i64
        + index
            .iter()
            .zip(&strides)
            .map(|(i, s)| *i as i64 * s * e)
            .sum::<i64>();
    &data[at as usize..(at + e) as usize]
}

/// Every index of `shape`.
fn indices(shape: &[u64]) -> Vec<Vec<u64>> {
    let mut all = vec![vec![]];
    for &n in shape {
        all = all
            .into_iter()
            .flat_map(|p| {
                (0..n).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    all
}

fn same_values(a: (&[u8], &[u8]), b: (&[u8], &[u8])) {
    let (va, vb) = (
        TensorView::parse(a.0).unwrap(),
        TensorView::parse(b.0).unwrap(),
    );
    assert!(va.shape().iter().eq(vb.shape().iter()));
    assert_eq!(va.element_type(), vb.element_type());
    let shape: Vec<u64> = va.shape().iter().collect();
    for idx in indices(&shape) {
        assert_eq!(
            element(a.0, a.1, &idx),
            element(b.0, b.1, &idx),
            "element {idx:?}"
        );
    }
}

async fn start(options: ServerOptions, file: &Path) -> std::net::SocketAddr {
    let server = Server::bind("127.0.0.1:0".parse().unwrap(), options, &[file])
        .await
        .unwrap();
    let addr = server.local_addr();
    tokio::spawn(server.run(std::future::pending::<()>()));
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn np_layout_2_transcoding_preserves_every_value_and_follows_the_preferences() {
    let dir = tempdir("layouts");
    let file = make_file(&dir);
    let addr = start(ServerOptions::default(), &file).await;
    let mut c = Client::connect(addr, ClientOptions::default())
        .await
        .unwrap();
    for (name, d, bytes) in cases() {
        let native = TensorView::parse(&d).unwrap().layout().tag();
        // Not allowed: native, byte for byte.
        let got = c.get(name).await.unwrap();
        assert_eq!(
            (got.descriptor.as_slice(), got.data.as_slice()),
            (&d[..], &bytes[..])
        );
        for target in [0x01u8, 0x02] {
            let got = c.get_in_layout(name, &[target]).await.unwrap();
            assert_eq!(got.view().layout().tag(), target, "{name} -> {target:#x}");
            if target != native {
                // Dense: exactly the elements, nothing else.
                let n: u64 = got.view().shape().iter().product();
                assert_eq!(
                    got.data.len() as u64,
                    n * u64::from(got.view().element_type().bits().unwrap() / 8)
                );
            }
            same_values((&got.descriptor, &got.data), (&d, &bytes));
        }
        // The first preference the server can satisfy wins: strided (0x03)
        // is neither stored (for the dense ones) nor produced by us.
        let got = c.get_in_layout(name, &[0x03, 0x02, 0x01]).await.unwrap();
        let want = if native == 0x03 { 0x03 } else { 0x02 };
        assert_eq!(got.view().layout().tag(), want, "{name}");
        same_values((&got.descriptor, &got.data), (&d, &bytes));
        // A layout we do not produce, and nothing else: native.
        let got = c.get_in_layout(name, &[0x05]).await.unwrap();
        assert_eq!(got.descriptor, d);
    }
    // Over the limit: the next preference, or native.
    let small = ServerOptions {
        transcode_max_bytes: 100,
        ..ServerOptions::default()
    };
    let addr = start(small, &file).await;
    let mut c = Client::connect(addr, ClientOptions::default())
        .await
        .unwrap();
    let got = c.get_in_layout("rm", &[0x02, 0x01]).await.unwrap();
    assert_eq!(
        got.view().layout().tag(),
        0x01,
        "240 bytes > 100: row-major as stored"
    );
    let got = c.get_in_layout("cm", &[0x01]).await.unwrap();
    assert_eq!(got.view().layout().tag(), 0x01, "24 bytes: transcoded");
    // Transcoding off: never.
    let off = ServerOptions {
        transcode_max_bytes: 0,
        ..ServerOptions::default()
    };
    let addr = start(off, &file).await;
    let mut c = Client::connect(addr, ClientOptions::default())
        .await
        .unwrap();
    let got = c.get_in_layout("cm", &[0x01]).await.unwrap();
    assert_eq!(got.view().layout().tag(), 0x02);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn column_major_tensors_are_sharded_along_their_last_axis() {
    let dir = tempdir("both");
    let path = dir.join("big.hrry");
    let d = descriptor(
        ElementType::UInt16,
        &[64, 33],
        BuilderLayout::ColumnMajor,
        &[],
        0,
        4224,
    );
    let bytes = data(4224, 9);
    let mut w =
        hurray_io::file::create(&path, hurray_core::file::WriterOptions::default()).unwrap();
    w.write_tensor("t", &TensorView::parse(&d).unwrap(), &[&bytes])
        .unwrap();
    w.finish(&[]).unwrap();
    let options = ServerOptions {
        shard_min_bytes: 0,
        ..ServerOptions::default()
    };
    let addr = start(options, &path).await;
    // Four connections: column-major shards (cut along the last axis), put
    // together in place, every value where it was.
    let got = hurray_net::fetch_parallel(addr, ClientOptions::default(), "t", 4)
        .await
        .unwrap();
    same_values((&got.descriptor, &got.data), (&d, &bytes));
    let _ = std::fs::remove_dir_all(&dir);
}
