//! The hurray network protocol (upstream `docs/spec/interchange.md`
//! § Network Transport Protocol; our normative reading with the decisions
//! the upstream text leaves open: `docs/spec/network.md`), without I/O.
//!
//! # Parts
//!
//! * [`header`](MessageHeader): the 12-byte header and [`Frame::parse`],
//!   the incremental framer (`Partial` / `Complete`, httparse's shape).
//! * One codec per message family: hellos and layout lists ([`Hello`],
//!   [`LayoutList`]), requests ([`TensorRequest`]), the data plane and puts
//!   ([`DescriptorMessage`], [`DataFrame`], [`TensorPut`]), control
//!   ([`ErrorMessage`], [`Ping`], [`RdmaRegister`]); [`Message`] ties them
//!   together.
//! * Two sans-I/O session machines (quinn-proto's shape): [`ClientSession`]
//!   and [`ServerSession`]. They own no socket and read no clock: the
//!   caller hands them received bytes and the time, and takes from them the
//!   bytes to send and the next deadline. tokio (`hurray-rs-net`), a
//!   firmware TCP stack or a fuzzer drive the same machine.
//!
//! # Contract
//!
//! * Every decoder accepts **any** bytes: it never panics, never allocates,
//!   never reads past its input, and checks a length before it reads or
//!   waits for what the length covers (`payload_length` against the
//!   receiver's maximum first of all). A fault is a [`NetError`]: what was
//!   wrong and the byte offset, from the message's first header byte, of
//!   the field at fault.
//! * After a decoder returns `Ok`, the value is valid by every rule of
//!   `docs/spec/network.md` that its bytes alone can break; the embedded
//!   tensor descriptors are validated by the strict [`TensorView`](crate::TensorView)
//!   reader.
//! * Encoders write only what the decoders accept; decode ∘ encode is the
//!   identity (property-tested).
//! * The sessions accept the peer's messages only in the order the protocol
//!   allows, answer each fault with the `ERROR` code it calls for, and
//!   refuse (with [`ApiMisuse`], changing nothing) an application that
//!   tries to send out of order. Their memory is fixed: `S` streams and an
//!   eight-message control queue.

mod client;
mod codes;
mod control;
mod cursor;
mod error;
mod header;
mod hello;
mod message;
mod request;
mod server;
mod shards;
mod stream;
mod transfer;

pub use client::{ClientConfig, ClientEvent, ClientSession};
pub use codes::{Capabilities, ErrorCode, MessageType, RequestFlags};
pub use control::{ErrorMessage, MAX_ERROR_TEXT, Ping, RdmaRegister};
pub use error::{ApiMisuse, NetError, NetErrorKind, SessionError, SessionErrorKind};
pub use header::{Frame, MESSAGE_HEADER_LEN, MessageHeader, Status};
pub use hello::{Hello, HelloFixed, LayoutEntry, LayoutList, MIN_MESSAGE_SIZE, PROTOCOL_VERSION};
pub use message::{Message, data_frame_prefix};
pub use request::{MAX_KEY_LEN, TensorRequest};
pub use server::{ServerConfig, ServerEvent, ServerSession};
pub use shards::{
    SHARD_SELECT_ENTRY_LEN, SHARD_SELECT_MAGIC, SHARD_SELECT_TAG, ShardError, ShardSelect,
    check_shards,
};
pub use transfer::{
    DATA_PREFIX_LEN, DataFrame, DescriptorMessage, MAX_SHARDS, TensorPut, TransportFields,
    data_bytes,
};
