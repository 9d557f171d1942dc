//! Hurray streams over `std::io` (and tokio with the `tokio` feature):
//! [`StreamReader`] turns a [`Read`](std::io::Read) into the core decoder's
//! [`Event`]s, [`StreamWriter`] writes tensors to a
//! [`Write`](std::io::Write). The format and every check are
//! `hurray_core::stream`'s (`docs/spec/stream.md`).
//!
//! ```
//! use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
//! use hurray_io::stream::{Event, StreamReader, StreamWriter};
//!
//! let handles = [BufferHandle::new(16, 64, DeviceTag::Cpu, SyncMode::ProducerSynced)?];
//! let mut d = [0u8; 64];
//! let n = TensorDescriptor::row_major(ElementType::Int32, &[4], &handles).encode(&mut d)?;
//! let view = TensorView::parse(&d[..n])?;
//!
//! let mut w = StreamWriter::new(Vec::new());
//! w.write_tensor(&view, &[&[7; 16]])?;
//! w.write_tensor(&view, &[&[8; 16]])?;
//! let bytes = w.finish()?;
//!
//! let mut r = StreamReader::new(&bytes[..]);
//! let mut data = Vec::new();
//! while let Some(event) = r.next_event()? {
//!     if let Event::Data { bytes, .. } = event {
//!         data.extend_from_slice(bytes); // a slice of the reader's buffer
//!     }
//! }
//! assert_eq!(data, [[7u8; 16], [8; 16]].concat());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod read;
#[cfg(feature = "tokio")]
mod tokio;
mod write;

pub use hurray_core::stream::{Event, StreamError, StreamErrorKind, StreamLimits, WriteError};
pub use read::{Options, ReadError, StreamReader, Tensor};
#[cfg(feature = "tokio")]
#[cfg_attr(docsrs, doc(cfg(feature = "tokio")))]
pub use tokio::{AsyncStreamReader, AsyncStreamWriter};
pub use write::{IoSink, StreamWriter};
