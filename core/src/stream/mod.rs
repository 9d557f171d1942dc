//! The hurray **stream** (`docs/spec/stream.md`): tensors back to back,
//! each a descriptor followed by its buffers' bytes in table order, with
//! no padding, no container header and no index. A composite head (no
//! buffers) binds the next `member_count` tensors as its members.
//!
//! One file per part: `decoder.rs` ([`StreamDecoder`], sans-I/O),
//! `writer.rs` ([`StreamWriter`], over an [`embedded_io::Write`] sink),
//! `composite.rs` (open composites in the caller's scratch, checked by
//! the rules of [`CompositeValidator`](crate::CompositeValidator)),
//! `limits.rs` ([`StreamLimits`]), `error.rs`.
//!
//! ## Contract of the decoder
//!
//! * [`StreamDecoder::decode`] accepts **any** bytes, in chunks of any
//!   size (one byte, empty, the whole stream). It never panics, never
//!   allocates, never reads out of bounds; it copies descriptor bytes into
//!   the caller's descriptor buffer (one descriptor at a time) and nothing
//!   else: buffer bytes come back as slices of the caller's input.
//! * Before a descriptor is handed out it has passed
//!   [`TensorView::parse_with`](crate::TensorView::parse_with) (every
//!   descriptor MUST), the caller's [`StreamLimits`] (descriptor length
//!   from its first 10 bytes, before the rest is taken in; each buffer's
//!   size and the stream's total from its table, before any of its data is)
//!   and the per-member rules of the composite it belongs to. A composite's
//!   close-time rules run at its last member, before
//!   [`Event::CompositeEnd`]. Composites nest at most
//!   [`MAX_COMPOSITE_DEPTH`](crate::MAX_COMPOSITE_DEPTH) deep.
//! * The same bytes give the same events (and the same error, at the same
//!   stream offset) however they are split; only `Data` events are cut at
//!   the chunk boundaries, and their bytes, joined per buffer, are the same.
//! * The end of the input is accepted ([`StreamDecoder::finish`]) only
//!   between two top-level tensors: inside a descriptor, a tensor's data or
//!   an unfinished composite it is an error.
//! * After an error the decoder stays failed and returns that error.
//!
//! ```
//! use hurray_core::stream::{Event, StreamDecoder, StreamWriter};
//! use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
//!
//! // Two float32 [3, 4] tensors, written to a byte sink...
//! let handles = [BufferHandle::new(48, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
//! let mut d = [0u8; 64];
//! let n = TensorDescriptor::row_major(ElementType::Float32, &[3, 4], &handles).encode(&mut d)?;
//! let view = TensorView::parse(&d[..n])?;
//! let mut stream = [0u8; 256];
//! let mut sink = &mut stream[..];
//! let mut w = StreamWriter::new(&mut sink, &mut []);
//! w.write_tensor(&view, &[&[1; 48]])?;
//! w.write_tensor(&view, &[&[2; 48]])?;
//! w.finish()?;
//! let len = w.position() as usize;
//!
//! // ...read back seven bytes at a time.
//! let (mut desc, mut scratch) = ([0u8; 128], [0u8; 0]);
//! let mut dec = StreamDecoder::new(&mut desc, &mut scratch);
//! let (mut tensors, mut data) = (0, 0);
//! for chunk in stream[..len].chunks(7) {
//!     let mut input = chunk;
//!     loop {
//!         let (used, event) = dec.decode(input)?;
//!         input = &input[used..];
//!         match event {
//!             Event::NeedMore => break,
//!             Event::Descriptor(v) => assert_eq!(v.element_type(), ElementType::Float32),
//!             Event::Data { bytes, .. } => data += bytes.len(),
//!             Event::TensorEnd => tensors += 1,
//!             _ => {}
//!         }
//!     }
//! }
//! dec.finish()?; // the input ended between two tensors
//! assert_eq!((tensors, data), (2, 96));
//! # Ok::<(), Box<dyn core::error::Error>>(())
//! ```

mod composite;
mod decoder;
mod error;
mod limits;
mod writer;

pub use decoder::{Event, PREFIX_LEN, Step, StreamDecoder};
pub use error::{Phase, StreamError, StreamErrorKind, WriteError};
pub use limits::StreamLimits;
pub use writer::StreamWriter;
