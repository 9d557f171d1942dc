//! # hurray-rs-net (library `hurray_net`)
//!
//! The hurray network protocol (`docs/spec/network.md`) over tokio: a
//! [`Server`] that serves the tensors of `.hrry` files by name and stores
//! tensors pushed with `TENSOR_PUT` in a directory, and a [`Client`] that
//! fetches tensors into memory or into a `.hrry` file and pushes them.
//!
//! Both are thin drivers of the core's sans-I/O machines
//! ([`hurray_core::net::ServerSession`], [`hurray_core::net::ClientSession`]):
//! every rule of the protocol is checked there; this crate moves bytes,
//! keeps time and bounds resources.
//!
//! ## What the server bounds (house style 21)
//!
//! * the message size it accepts ([`ServerOptions::max_message_size`]; a
//!   larger header is refused before one payload byte is read);
//! * connections ([`ServerOptions::max_connections`]; one more is answered
//!   `ERROR` `BUSY` and closed) and streams per connection (16);
//! * bytes in flight per connection: one read buffer of at most
//!   `max_message_size + 12` bytes, and writes awaited on the socket, so a
//!   client that does not read stops its own transfer instead of growing
//!   the server's memory; a put is held in memory only up to
//!   [`ServerOptions::max_put_bytes`], checked before a byte is reserved;
//! * time: handshake, idle and request timeouts (only whole messages count,
//!   so a peer sending a byte a minute is dropped);
//! * shutdown: [`Server::run`] stops accepting when its shutdown future
//!   completes, lets every connection finish the message it is handling,
//!   and returns once all are closed (or after [`ServerOptions::grace`]).
//!
//! ## Parallel transfers (ADR-113)
//!
//! The server advertises `PARALLEL_STREAMS` and shard selections
//! ([`ServerOptions::parallel`]) and cuts a dense row- or column-major
//! tensor along its slowest axis, each shard a zero-copy range of the
//! mapped file. [`Client::get_parallel`] asks one connection for the shards
//! ([NP-SHARD-2]); [`fetch_parallel`] and [`fetch_parallel_to_file`] spread
//! one tensor over N connections, connection k asking for shard k of N
//! ([NP-SHARD-4], `docs/spec/network.md`). Either way each shard's bytes go
//! straight to their place in one destination allocated once (host memory,
//! or a `.hrry` file written under a temporary name with its data as holes,
//! filled in place, synced and renamed), every shard is checked against the
//! first before a byte of it is placed, and the set is proven to tile the
//! tensor (`check_shards`); a fault is [`Error::ShardMismatch`] and leaves
//! no file.
//!
//! ## Layout negotiation
//!
//! The server advertises `TRANSCODING` and the layouts it produces
//! (row-major, column-major); a client that allows it
//! ([`Client::get_in_layout`]) gets the first preferred layout the tensor is
//! stored in or that the server can produce within
//! [`ServerOptions::transcode_max_bytes`], else the native one, with every
//! value at the same index ([NP-LAYOUT-2]).
//!
//! Keys never name a path outside the store: a stored tensor's file name is
//! the key with every byte outside `[A-Za-z0-9_-]` (and `.` in first
//! place) written as `%XX`, so it has no separator, is never `.` or `..`,
//! and never hidden.
//!
//! ## Access control
//!
//! The protocol has none. With [`ServerOptions::token`] set, a client must
//! open the connection with an 8-byte `HRRYAUTH` preamble, a `uint32`
//! token length and the token, before `CLIENT_HELLO`; anything else gets
//! `ERROR` `UNAUTHORIZED` (`0xF1`) and the connection is closed. The token
//! is compared without an early exit.
//!
//! With the feature `tls`, `ServerOptions::tls` and `ClientOptions::tls`
//! (built by the `tls` module from PEM) run the connection over TLS
//! (rustls on `ring`); a server configured with a client CA requires a
//! client certificate chaining to it (mTLS). The TLS handshake (and with it
//! the client certificate check) completes before the token is read, and
//! both before any tensor is served or stored. Without TLS, the token
//! travels in clear: use loopback or a TLS terminator.
//!
//! ```no_run
//! # async fn demo() -> Result<(), hurray_net::Error> {
//! use hurray_net::{Client, ClientOptions, Server, ServerOptions};
//!
//! let server = Server::bind("127.0.0.1:0".parse().unwrap(), ServerOptions::default(), &["model.hrry"]).await?;
//! let addr = server.local_addr();
//! tokio::spawn(server.run(std::future::pending::<()>()));
//! let mut client = Client::connect(addr, ClientOptions::default()).await?;
//! let tensor = client.get("layer0.weight").await?;
//! println!("{} bytes", tensor.data.len());
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod client;
mod conn;
mod error;
#[cfg(feature = "gpu")]
pub mod gpu;
mod server;
mod shard;
mod store;
#[cfg(feature = "tls")]
pub mod tls;
mod transcode;

pub use client::{
    Client, ClientOptions, Fetched, MakeDestination, fetch_parallel, fetch_parallel_to_file,
    fetch_parallel_with,
};
pub use error::Error;
pub use server::{Counters, Server, ServerOptions};
pub use shard::Destination;
pub use store::{MAX_STORED_NAME, key_to_file_name};

/// The preamble that carries an access token (before `CLIENT_HELLO`).
pub const AUTH_MAGIC: [u8; 8] = *b"HRRYAUTH";

/// The longest access token, in bytes.
pub const MAX_TOKEN_LEN: usize = 256;
