//! Fetching straight into GPU buffers (feature `gpu`): every tensor of the
//! conformance file and of a file of ours, fetched whole and as 4 shards
//! over 4 connections, reads back from the GPU equal to the file's bytes,
//! with a descriptor re-tagged for the GPU; tensors of several blocks, odd
//! sizes and several buffers included. Without a GPU the test prints
//! `SKIPPED` (a failure with `HURRAY_REQUIRE_GPU=1`, as every GPU test).
#![cfg(feature = "gpu")]

#[path = "../../../gpu/tests/common/gate.rs"]
mod gate;

use std::path::{Path, PathBuf};
use std::time::Duration;

use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
use hurray_gpu::wgpu::{Backend, BufferUsages};
use hurray_gpu::{BackendError, GpuContext, LoadError};
use hurray_net::gpu::{BLOCK, fetch_to_gpu};
use hurray_net::{ClientOptions, Error, Server, ServerOptions};

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("hurray-netgpu-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| {
            (i as u8)
                .wrapping_mul(31)
                .wrapping_add(seed ^ (i >> 9) as u8)
        })
        .collect()
}

/// Tensors of one block, of several (the last one of an odd length), one
/// too small to cut into shards, and an empty one.
fn make_file(dir: &Path) -> PathBuf {
    let path = dir.join("ours.hrry");
    let mut w =
        hurray_io::file::create(&path, hurray_core::file::WriterOptions::default()).unwrap();
    let big = BLOCK + (BLOCK / 2) + 3; // two blocks, the second of odd length
    let cases: [(&str, u64); 4] = [("big", big), ("odd", 100_003), ("tiny", 5), ("empty", 0)];
    for (i, (name, n)) in cases.iter().enumerate() {
        let h = [BufferHandle::new(*n, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
        let shape = [*n];
        let d = TensorDescriptor::row_major(ElementType::UInt8, &shape, &h);
        let mut b = vec![0u8; 512];
        let len = d.encode(&mut b).unwrap();
        b.truncate(len);
        let data = pattern(*n as usize, i as u8);
        w.write_tensor(name, &TensorView::parse(&b).unwrap(), &[&data])
            .unwrap();
    }
    w.finish(&[]).unwrap();
    path
}

fn conformance_file() -> Option<PathBuf> {
    let dir = std::env::var_os("HURRAY_CONFORMANCE_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance"),
        PathBuf::from,
    );
    let p = dir.join("files/basic.hrry");
    if p.exists() {
        Some(p)
    } else {
        assert!(
            std::env::var_os("HURRAY_REQUIRE_CONFORMANCE").is_none_or(|v| v != "1"),
            "{} is missing",
            p.display()
        );
        None
    }
}

/// (name, data buffers) of every tensor of `path`.
fn tensors(path: &Path) -> Vec<(String, Vec<Vec<u8>>)> {
    let mut f = hurray_io::file::open(path).unwrap();
    let view = f.view().unwrap();
    view.index()
        .iter()
        .map(|t| {
            let t = t.unwrap();
            (
                t.name().to_owned(),
                t.buffers().map(<[u8]>::to_vec).collect(),
            )
        })
        .collect()
}

#[test]
fn every_tensor_fetched_into_gpu_buffers_reads_back_as_the_file() {
    let test = "every_tensor_fetched_into_gpu_buffers_reads_back_as_the_file";
    let Some(ctx) = gate::need(test, GpuContext::new()) else {
        return;
    };
    let dir = tempdir("all");
    let mut files = vec![make_file(&dir)];
    files.extend(conformance_file());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let options = ServerOptions {
            parallel_shards: 4,
            shard_min_bytes: 0,
            max_message_size: 1 << 20,
            request_timeout: Duration::from_secs(60),
            ..ServerOptions::default()
        };
        let server = Server::bind("127.0.0.1:0".parse().unwrap(), options, &files)
            .await
            .unwrap();
        let addr = server.local_addr();
        tokio::spawn(server.run(std::future::pending::<()>()));
        let client = ClientOptions {
            request_timeout: Duration::from_secs(60),
            ..ClientOptions::default()
        };
        let mut fetched = 0;
        for file in &files {
            for (name, buffers) in tensors(file) {
                for connections in [1u16, 4] {
                    let got = tokio::time::timeout(
                        Duration::from_secs(120),
                        fetch_to_gpu(
                            addr,
                            client.clone(),
                            &name,
                            connections,
                            &ctx,
                            BufferUsages::STORAGE,
                        ),
                    )
                    .await
                    .expect("the fetch finished in time");
                    if ctx.adapter_info().backend != Backend::Vulkan
                        && ctx.adapter_info().backend != Backend::Metal
                    {
                        // GL has no hurray device tag: the re-tag is refused, typed.
                        assert!(
                            matches!(
                                got,
                                Err(Error::Gpu(LoadError::Backend(BackendError::NoDeviceTag(_))))
                            ),
                            "{name}: {got:?}"
                        );
                        continue;
                    }
                    let got = got.unwrap_or_else(|e| panic!("{name} over {connections}: {e}"));
                    assert_eq!(got.name(), name);
                    let view = got.descriptor().unwrap();
                    assert_eq!(got.buffers().len(), buffers.len(), "{name}");
                    for (i, (gpu, want)) in got.buffers().iter().zip(&buffers).enumerate() {
                        let entry = view.buffers().get(i).unwrap();
                        assert_eq!(entry.byte_size(), want.len() as u64, "{name} buffer {i}");
                        if !want.is_empty() {
                            assert_ne!(entry.device_tag(), DeviceTag::Cpu, "{name}: re-tagged");
                        }
                        let mut back = Vec::new();
                        gpu.read(&mut back).unwrap();
                        assert!(
                            back == *want,
                            "{name} buffer {i} over {connections} connections"
                        );
                    }
                    fetched += 1;
                }
            }
        }
        if ctx.adapter_info().backend == Backend::Vulkan {
            assert!(fetched >= 8, "fetched {fetched}");
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
}
