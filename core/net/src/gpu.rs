//! Fetching a tensor straight into GPU buffers (feature `gpu`).
//!
//! [`fetch_to_gpu`] is [`fetch_parallel_with`] with a destination made of
//! GPU buffers, one per entry of the tensor's buffer table, allocated once
//! the first descriptor tells their sizes. The bytes travel through host
//! memory in blocks of at most [`BLOCK`] bytes: a connection's frames fill
//! the block they belong to, and a block goes to the GPU (the transfer
//! engine's write, DMA-staged where the adapter can) as soon as its last
//! byte is in. So host memory holds only the blocks being filled, about
//! one per connection, never the whole tensor, and the GPU copies while
//! the network delivers.
//!
//! Blocks start on 4-byte boundaries of their buffer and end on one or at
//! the buffer's end, which is what a GPU write needs; frames can start and
//! end anywhere.
//!
//! A block is sent when it has received as many bytes as it holds. Shards
//! that overlap could fill one early with wrong bytes, but such a transfer
//! never succeeds: the client checks that the shards tile the tensor
//! exactly ([NP-SHARD-3]) and fails with [`Error::ShardMismatch`], and a
//! block written to twice is refused. A fetch that returns `Ok` wrote every
//! byte exactly once.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use hurray_core::TensorView;
use hurray_gpu::wgpu::BufferUsages;
use hurray_gpu::{GpuBufferHandle, GpuContext, LoadError, LoadedTensor};

use crate::{ClientOptions, Destination, Error, MakeDestination, fetch_parallel_with};

/// The most bytes a block holds in host memory before it goes to the GPU
/// (16 MiB: large enough for the transfer engine's DMA path, small enough
/// that a few connections' blocks stay a small multiple of it).
pub const BLOCK: u64 = 16 << 20;

/// A block of one buffer: `[at, at + len)` of buffer `buffer`, which is
/// `[start, start + len)` of the tensor's data.
#[derive(Debug)]
struct Block {
    buffer: usize,
    at: u64,
    start: u64,
    len: u64,
    state: Mutex<Fill>,
}

/// Where a block stands.
#[derive(Debug)]
enum Fill {
    /// Bytes arriving; the host memory is allocated at the first write.
    Filling { bytes: Vec<u8>, received: u64 },
    /// On the GPU.
    Sent,
}

/// The destination: the GPU buffers and their blocks, in data order.
#[derive(Debug)]
struct GpuDestination {
    buffers: Vec<GpuBufferHandle>,
    blocks: Vec<Block>,
}

impl GpuDestination {
    /// Allocates one buffer per entry of `descriptor`'s buffer table.
    fn new(
        ctx: &GpuContext,
        name: &str,
        descriptor: &[u8],
        usage: BufferUsages,
    ) -> Result<Self, LoadError> {
        let view = TensorView::parse(descriptor).map_err(|error| LoadError::Descriptor {
            name: name.to_owned(),
            error,
        })?;
        let usage = usage | BufferUsages::COPY_DST | BufferUsages::COPY_SRC;
        let mut buffers = Vec::new();
        let mut blocks = Vec::new();
        let mut start = 0u64;
        for (buffer, h) in view.buffers().iter().enumerate() {
            let size = h.byte_size();
            buffers.push(ctx.alloc(size, usage)?);
            let mut at = 0;
            while at < size {
                let len = BLOCK.min(size - at);
                blocks.push(Block {
                    buffer,
                    at,
                    start: start + at,
                    len,
                    state: Mutex::new(Fill::Filling {
                        bytes: Vec::new(),
                        received: 0,
                    }),
                });
                at += len;
            }
            start += size;
        }
        Ok(Self { buffers, blocks })
    }

    /// The buffers once every block is on the GPU.
    fn finish(self) -> Result<Vec<GpuBufferHandle>, Error> {
        for b in &self.blocks {
            let sent = b.state.lock().is_ok_and(|s| matches!(*s, Fill::Sent));
            if !sent {
                return Err(Error::ShardMismatch(format!(
                    "bytes {}..{} of the tensor never arrived",
                    b.start,
                    b.start + b.len
                )));
            }
        }
        Ok(self.buffers)
    }
}

impl Destination for GpuDestination {
    fn write_at(&self, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let mut offset = offset;
        let mut rest = bytes;
        while !rest.is_empty() {
            // The block holding `offset`: the last one starting at or before it.
            let i = self.blocks.partition_point(|b| b.start <= offset);
            let block = i
                .checked_sub(1)
                .and_then(|i| self.blocks.get(i))
                .filter(|b| offset - b.start < b.len)
                .ok_or_else(|| io::Error::other("write past the tensor"))?;
            let within = offset - block.start;
            let take = usize::try_from((block.len - within).min(rest.len() as u64))
                .map_err(|_| io::Error::other("block size"))?;
            let (now, later) = rest.split_at(take);
            let full = {
                let mut state = block
                    .state
                    .lock()
                    .map_err(|_| io::Error::other("poisoned"))?;
                let Fill::Filling { bytes, received } = &mut *state else {
                    return Err(io::Error::other(
                        "bytes for a block already on the GPU (overlapping shards)",
                    ));
                };
                if bytes.is_empty() {
                    let len =
                        usize::try_from(block.len).map_err(|_| io::Error::other("block size"))?;
                    bytes.resize(len, 0);
                }
                let at = usize::try_from(within).map_err(|_| io::Error::other("offset"))?;
                bytes
                    .get_mut(at..at + take)
                    .ok_or_else(|| io::Error::other("write past the block"))?
                    .copy_from_slice(now);
                *received = received.saturating_add(take as u64);
                if *received >= block.len {
                    match std::mem::replace(&mut *state, Fill::Sent) {
                        Fill::Filling { bytes, .. } => Some(bytes),
                        Fill::Sent => None,
                    }
                } else {
                    None
                }
            };
            if let Some(full) = full {
                // Outside the lock: other connections keep filling other blocks.
                let buffer = self
                    .buffers
                    .get(block.buffer)
                    .ok_or_else(|| io::Error::other("block of no buffer"))?;
                buffer.write_at(block.at, &full).map_err(io::Error::other)?;
            }
            offset += take as u64;
            rest = later;
        }
        Ok(())
    }
}

/// Fetches the tensor `key` from the server at `addr` straight into GPU
/// buffers of `ctx`, over `connections` connections when the server cuts
/// it into shards (as [`fetch_parallel`](crate::fetch_parallel)): one
/// buffer per entry of its buffer table, with `usage` plus `COPY_DST` and
/// `COPY_SRC`, and its descriptor re-tagged for the GPU
/// ([`LoadedTensor::retagged`]).
///
/// # Errors
/// As [`fetch_parallel_with`]; [`Error::Gpu`] when a buffer cannot be
/// allocated or the descriptor re-tagged; [`Error::Io`] wrapping the GPU's
/// error when a write fails.
///
/// # Examples
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use hurray_gpu::{GpuContext, wgpu::BufferUsages};
/// use hurray_net::{ClientOptions, gpu::fetch_to_gpu};
///
/// let ctx = GpuContext::new()?;
/// let addr = "127.0.0.1:7878".parse()?;
/// let options = ClientOptions::default();
/// let tensor = fetch_to_gpu(addr, options, "weights", 4, &ctx, BufferUsages::STORAGE).await?;
/// println!("{} buffers on the GPU", tensor.buffers().len());
/// # Ok(()) }
/// ```
pub async fn fetch_to_gpu(
    addr: SocketAddr,
    options: ClientOptions,
    key: &str,
    connections: u16,
    ctx: &GpuContext,
    usage: BufferUsages,
) -> Result<LoadedTensor, Error> {
    let slot: Arc<Mutex<Option<Arc<GpuDestination>>>> = Arc::new(Mutex::new(None));
    let make: MakeDestination = {
        let slot = Arc::clone(&slot);
        let ctx = ctx.clone();
        let name = key.to_owned();
        Box::new(move |descriptor: &[u8], _total: u64| {
            let dest =
                Arc::new(GpuDestination::new(&ctx, &name, descriptor, usage).map_err(Error::Gpu)?);
            *slot.lock().map_err(|_| Error::Limit("poisoned"))? = Some(Arc::clone(&dest));
            Ok(dest as Arc<dyn Destination>)
        })
    };
    let descriptor = fetch_parallel_with(addr, options, key, connections, make).await?;
    let dest = slot
        .lock()
        .map_err(|_| Error::Limit("poisoned"))?
        .take()
        .ok_or(Error::Closed)?;
    let dest = Arc::into_inner(dest).ok_or(Error::Limit("GPU destination still shared"))?;
    let buffers = dest.finish()?;
    LoadedTensor::retagged(key, &descriptor, buffers, &ctx.device).map_err(Error::Gpu)
}
