//! The crate's error.

use std::fmt;
use std::io;

use hurray_core::net::{ApiMisuse, ErrorCode, SessionError};

/// Why a client or server operation failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The socket or a file failed.
    Io(io::Error),
    /// The peer broke the protocol (the session's verdict).
    Protocol(SessionError),
    /// The peer answered with `ERROR`.
    Peer {
        /// Its code.
        code: ErrorCode,
        /// Its text.
        message: String,
    },
    /// A timeout expired.
    Timeout,
    /// The connection closed before the answer was complete.
    Closed,
    /// The caller asked for something the session refuses (our bug or the
    /// caller's).
    Misuse(ApiMisuse),
    /// A `.hrry` file could not be read or written.
    File(hurray_io::file::Error),
    /// A limit of ours refuses the transfer.
    Limit(&'static str),
    /// TLS failed: a configuration that cannot be used, or a handshake the
    /// peer or its certificate failed (feature `tls`).
    Tls(String),
    /// The shards of a parallel transfer do not form the tensor (they
    /// overlap, leave a gap, disagree on `total_shards` or on their
    /// parent); `SHARD_MISMATCH` was sent (`[NP-SHARD-3]`).
    ShardMismatch(String),
    /// The GPU side of [`gpu::fetch_to_gpu`](crate::gpu::fetch_to_gpu):
    /// allocating the buffers, or re-tagging the descriptor (feature `gpu`).
    #[cfg(feature = "gpu")]
    Gpu(hurray_gpu::LoadError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "I/O: {e}"),
            Self::Protocol(e) => write!(f, "protocol violation: {e}"),
            Self::Peer { code, message } => write!(f, "peer error {code}: {message}"),
            Self::Timeout => write!(f, "timed out"),
            Self::Closed => write!(f, "connection closed"),
            Self::Misuse(e) => write!(f, "{e}"),
            Self::File(e) => write!(f, "file: {e}"),
            Self::Limit(what) => write!(f, "limit: {what}"),
            Self::Tls(what) => write!(f, "TLS: {what}"),
            Self::ShardMismatch(what) => write!(f, "shard mismatch: {what}"),
            #[cfg(feature = "gpu")]
            Self::Gpu(e) => write!(f, "GPU: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            Self::Protocol(e) => Some(e),
            Self::Misuse(e) => Some(e),
            Self::File(e) => Some(e),
            #[cfg(feature = "gpu")]
            Self::Gpu(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<ApiMisuse> for Error {
    fn from(e: ApiMisuse) -> Self {
        Self::Misuse(e)
    }
}

impl From<SessionError> for Error {
    fn from(e: SessionError) -> Self {
        Self::Protocol(e)
    }
}

impl From<hurray_io::file::Error> for Error {
    fn from(e: hurray_io::file::Error) -> Self {
        Self::File(e)
    }
}
