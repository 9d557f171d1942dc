//! The server's side of a connection as a sans-I/O state machine
//! (quinn-proto's shape): [`ServerSession::handle`] for bytes that arrived,
//! the `send_*` mutators for what the application answers (each checks the
//! stream's state and writes the message into the caller's buffer),
//! [`ServerSession::poll_transmit`] for control messages the session owes
//! the peer (`SERVER_HELLO`, `PONG`, `ERROR`), and
//! [`ServerSession::poll_timeout`] / [`ServerSession::handle_timeout`] with
//! time passed in (milliseconds of any monotonic clock). No socket, no
//! clock, no allocation: `S` streams at most, fixed at compile time.
//!
//! What it guarantees is the [module's contract](super#contract); a fault
//! on a stream closes that stream only, a fault on stream 0 (or in the
//! handshake) closes the connection.

use super::codes::{Capabilities, ErrorCode, RequestFlags};
use super::control::{ErrorMessage, Ping};
use super::error::{ApiMisuse, SessionError, SessionErrorKind};
use super::header::Status;
use super::hello::{Hello, PROTOCOL_VERSION};
use super::message::{Message, data_frame_prefix};
use super::request::TensorRequest;
use super::shards::ShardSelect;
use super::stream::{
    CodeSet, Kind, Link, NEVER, Outbox, Pending, Response, Slot, State, Transfer, after, block_of,
    too_many, unexpected,
};
use super::transfer::{DataFrame, DescriptorMessage, TensorPut};

/// What a server advertises and how long it waits.
#[derive(Debug, Clone, Copy)]
pub struct ServerConfig<'c> {
    /// The advertisement sent in `SERVER_HELLO`; its `protocol_version` is
    /// replaced by the version the session settles on, and its
    /// `max_message_size` is the largest payload this server accepts.
    pub hello: Hello<'c>,
    /// Time allowed from the connection's start to `CLIENT_HELLO`.
    pub handshake_timeout: u64,
    /// Time allowed between two complete messages.
    pub idle_timeout: u64,
    /// Time allowed between two messages of a put.
    pub request_timeout: u64,
}

/// What [`ServerSession::handle`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ServerEvent<'a> {
    /// The handshake is done (`SERVER_HELLO` is queued): the client's hello.
    Hello(Hello<'a>),
    /// A tensor is requested on `stream_id`: answer with
    /// [`send_descriptor`](ServerSession::send_descriptor) and data, or
    /// [`send_error`](ServerSession::send_error).
    Request {
        /// The stream.
        stream_id: u32,
        /// The request.
        request: TensorRequest<'a>,
    },
    /// A put starts on `stream_id`.
    PutStart {
        /// The stream.
        stream_id: u32,
        /// Key, descriptor and size.
        put: TensorPut<'a>,
    },
    /// Bytes of a put, in order.
    PutData {
        /// The stream.
        stream_id: u32,
        /// Offset and bytes.
        frame: DataFrame<'a>,
    },
    /// Every byte of the put arrived: answer with
    /// [`send_put_ack`](ServerSession::send_put_ack) or an error.
    PutEnd {
        /// The stream.
        stream_id: u32,
    },
    /// The client closed a stream with `ERROR`.
    PeerError {
        /// The stream.
        stream_id: u32,
        /// Its code and text.
        error: ErrorMessage<'a>,
    },
    /// The client broke a rule on one stream: the session queued the
    /// `ERROR` and closed the stream; the connection goes on.
    StreamError(SessionError),
    /// A `PING` (the `PONG` is queued).
    Ping(Ping),
    /// The `PONG` to our last `PING`.
    Pong(Ping),
    /// Nothing for the application (a late frame on a stream we closed, or
    /// bytes after the connection closed).
    Ignored,
}

/// One client connection, seen from the server.
///
/// ```
/// use hurray_core::net::*;
///
/// let config = ServerConfig {
///     hello: Hello {
///         protocol_version: PROTOCOL_VERSION,
///         max_message_size: 1 << 16,
///         capabilities: Capabilities::NONE,
///         layouts: LayoutList::tags(&[0x01]).unwrap(),
///         devices: &[0x00],
///         memory_classes: &[0x00],
///     },
///     handshake_timeout: 5_000, idle_timeout: 60_000, request_timeout: 30_000,
/// };
/// let mut server = ServerSession::<4>::new(config, 0);
///
/// // The client's hello arrives...
/// let mut wire = [0u8; 64];
/// let n = Message::ClientHello(Hello { max_message_size: 4096, ..config.hello }).encode(0, &mut wire)?;
/// let Status::Complete((event, used)) = server.handle(1, &wire[..n]).unwrap() else { panic!() };
/// assert!(matches!(event, ServerEvent::Hello(_)));
/// assert_eq!(used, n);
/// // ...and the session owes it a SERVER_HELLO.
/// let mut out = [0u8; 256];
/// let m = server.poll_transmit(&mut out).unwrap().unwrap();
/// assert_eq!(out[0], 0x02);
/// assert!(server.is_established());
/// # let _ = m; Ok::<(), hurray_core::EncodeError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ServerSession<'c, const S: usize> {
    config: ServerConfig<'c>,
    link: Link<S>,
    version: u32,
    peer_devices: CodeSet,
}

super::stream::session_api!(ServerSession, ServerEvent);

impl<'c, const S: usize> ServerSession<'c, S> {
    /// A session for a connection accepted at `now`.
    #[must_use]
    pub fn new(config: ServerConfig<'c>, now: u64) -> Self {
        let outbox = Outbox::new();
        Self {
            config,
            link: Link::new(State::AwaitHello, outbox, now, config.handshake_timeout),
            version: PROTOCOL_VERSION,
            peer_devices: CodeSet::default(),
        }
    }

    // --- getters -----------------------------------------------------------

    /// The largest payload this server accepts.
    #[must_use]
    pub const fn max_message_size(&self) -> u32 {
        self.config.hello.max_message_size
    }

    /// Whether the open request on `stream` may be answered in several
    /// shards: it set `PARALLEL_OK` on a shard-block id and we advertised
    /// `PARALLEL_STREAMS` (`[NP-SHARD-2]`).
    #[must_use]
    pub fn may_shard(&self, stream: u32) -> bool {
        self.link.streams.parallel(stream)
    }

    /// The shard selection in force for the open request on `stream`
    /// (`[NP-SHARD-4]`): send shard `index` of exactly `count` (or, for
    /// index 0 only, the whole tensor), nothing else.
    #[must_use]
    pub fn shard_select(&self, stream: u32) -> Option<ShardSelect> {
        self.link.streams.response(stream).and_then(|r| r.select)
    }

    // --- what arrived -------------------------------------------------------

    fn dispatch<'a>(
        &mut self,
        now: u64,
        stream_id: u32,
        code: u32,
        msg: Message<'a>,
    ) -> Result<ServerEvent<'a>, SessionError> {
        if self.link.state == State::AwaitHello {
            let Message::ClientHello(hello) = msg else {
                return Err(self.link.fatal(stream_id, unexpected(code)));
            };
            return self.on_hello(hello);
        }
        match msg {
            Message::Ping(t) => self.link.on_ping(t).map(ServerEvent::Ping),
            Message::Pong(t) => self.link.on_pong(t).map(ServerEvent::Pong),
            Message::Error(e) if stream_id == 0 => Err(self.link.peer_closed(e.code)),
            Message::Error(error) => {
                self.link.streams.remove(stream_id);
                Ok(ServerEvent::PeerError { stream_id, error })
            }
            Message::TensorRequest(request) => {
                let advertised = ShardSelect::find(&self.config.hello.layouts).map(|a| a.count());
                let event = ServerEvent::Request { stream_id, request };
                self.open(stream_id, now, event, |ok_parallel| {
                    let parallel = ok_parallel
                        && request.flags.contains(RequestFlags::PARALLEL_OK)
                        && block_of(stream_id) == stream_id;
                    Kind::response(&request, parallel, advertised)
                })
            }
            Message::TensorPut(put) => {
                let event = ServerEvent::PutStart { stream_id, put };
                self.open(stream_id, now, event, |_| Kind::put(put.total_data_bytes))
            }
            Message::TensorData(_) | Message::TensorDataEnd => {
                let timeout = self.config.request_timeout;
                let Some(Slot {
                    kind:
                        Kind::Put {
                            transfer,
                            ended: ended @ false,
                        },
                    deadline,
                    ..
                }) = self.link.streams.get_mut(stream_id)
                else {
                    return self.not_open(stream_id, code);
                };
                *deadline = after(now, timeout);
                let r = match msg {
                    Message::TensorData(frame) => transfer
                        .on_data(frame.offset, frame.data.len())
                        .map(|()| ServerEvent::PutData { stream_id, frame }),
                    _ => transfer.on_end().map(|_| {
                        *ended = true;
                        ServerEvent::PutEnd { stream_id }
                    }),
                };
                r.or_else(|kind| self.fault(stream_id, kind))
            }
            // Server-to-client messages, a second hello, and RDMA (never
            // negotiated, [NP-RDMA-1]).
            _ => self.fault(stream_id, unexpected(code)),
        }
    }

    fn on_hello<'a>(&mut self, hello: Hello<'a>) -> Result<ServerEvent<'a>, SessionError> {
        // [NP-HELLO-2]: a newer client is answered with our version, which
        // it accepts or refuses.
        self.link.on_hello(&hello, u32::MAX)?;
        self.version = hello.protocol_version.min(PROTOCOL_VERSION);
        self.peer_devices = CodeSet::from_codes(hello.devices);
        self.link.queue(Pending::Hello)?;
        Ok(ServerEvent::Hello(hello))
    }

    /// Opens `stream` for a request or put and reports `event`; when
    /// refused, the `ERROR` is queued and the event is the stream's error.
    fn open<'a>(
        &mut self,
        stream: u32,
        now: u64,
        event: ServerEvent<'a>,
        kind: impl FnOnce(bool) -> Kind,
    ) -> Result<ServerEvent<'a>, SessionError> {
        let caps = self.config.hello.capabilities;
        let kind = kind(caps.contains(Capabilities::PARALLEL_STREAMS));
        if self.link.streams.in_use(stream)
            || matches!(kind, Kind::Response(r) if r.parallel)
                && self.link.streams.block_busy(stream)
        {
            // [NP-STREAM-2]: the ERROR closes the stream already open too.
            return self.fault(stream, SessionErrorKind::StreamInUse);
        }
        if self.link.streams.open_count() >= S {
            return self.fault(stream, too_many::<S>());
        }
        let deadline = match kind {
            Kind::Put { .. } => after(now, self.config.request_timeout),
            _ => NEVER,
        };
        // Cannot fail: a slot is free (checked above).
        let _ = self.link.streams.insert(stream, kind, deadline);
        Ok(event)
    }

    // --- what to send ------------------------------------------------------------

    /// Writes our `SERVER_HELLO`, with the version the session settled on.
    fn send_hello(&self, out: &mut [u8]) -> Result<usize, ApiMisuse> {
        let hello = Hello {
            protocol_version: self.version,
            ..self.config.hello
        };
        Ok(Message::ServerHello(hello).encode(0, out)?)
    }

    /// Answers the request on `request_stream` with a descriptor: on that
    /// stream, or for shard `i > 0` of a parallel answer on stream
    /// `request_stream + i` (`[NP-SHARD-2]`). Checks the order, the shard
    /// fields against the request, the device rule (`[NP-DEVICE-1]`) and
    /// the client's maximum message size; writes the message into `out`.
    ///
    /// # Errors
    /// [`ApiMisuse`] and no change when any check fails.
    pub fn send_descriptor(
        &mut self,
        request_stream: u32,
        msg: &DescriptorMessage<'_>,
        out: &mut [u8],
    ) -> Result<usize, ApiMisuse> {
        self.link.established()?;
        self.link.check_size(msg.encoded_len() as u64)?;
        let Some(&r) = self.link.streams.response(request_stream) else {
            return Err(ApiMisuse::WrongState(request_stream));
        };
        if let Some(field) = r.misfit(msg.total_shards, msg.shard_index) {
            return Err(ApiMisuse::InvalidArgument(field));
        }
        if let Some(b) = msg.descriptor.buffers().get(0) {
            let tag = b.device_tag().code();
            // Rule 4 of the device negotiation: CPU only as a fallback the
            // client listed, for a device the server advertised.
            let fallback = tag == 0
                && self.peer_devices.contains(0)
                && self.config.hello.lists_device(r.device);
            if tag != r.device && !fallback {
                return Err(ApiMisuse::InvalidArgument("device_tag"));
            }
        }
        let stream = request_stream.saturating_add(msg.shard_index);
        let first = msg.shard_index == 0;
        if !first && self.link.streams.get(stream).is_some() {
            return Err(ApiMisuse::WrongState(stream));
        }
        let mut t = if first { r.transfer } else { Transfer::new() };
        t.on_descriptor(msg.total_data_bytes, msg.member_count())
            .map_err(|_| ApiMisuse::WrongState(stream))?;
        let n = Message::TensorDescriptor(*msg).encode(stream, out)?;
        if !first {
            let kind = Kind::Shard {
                parent: request_stream,
                transfer: t,
            };
            self.link.streams.insert(stream, kind, NEVER)?;
        }
        if let Some(response) = self.link.streams.response_mut(request_stream) {
            if first {
                response.transfer = t;
            }
            response.shards_total = msg.total_shards;
        }
        Ok(n)
    }

    /// The transfer on `stream` (a response or a shard) the server sends.
    fn sending(&mut self, stream: u32) -> Result<&mut Transfer, ApiMisuse> {
        match self.link.streams.get_mut(stream).map(|s| &mut s.kind) {
            Some(Kind::Response(Response { transfer, .. }) | Kind::Shard { transfer, .. }) => {
                Ok(transfer)
            }
            _ => Err(ApiMisuse::WrongState(stream)),
        }
    }

    /// Ends the current tensor on `stream` (every byte sent); the last one
    /// of a request or shard closes its stream.
    ///
    /// # Errors
    /// [`ApiMisuse::OutOfOrder`] before every byte was sent.
    pub fn send_data_end(&mut self, stream: u32, out: &mut [u8]) -> Result<usize, ApiMisuse> {
        self.link.established()?;
        let mut t = *self.sending(stream)?;
        let done = t.on_end().map_err(|_| ApiMisuse::OutOfOrder(stream))?;
        let n = Message::TensorDataEnd.encode(stream, out)?;
        *self.sending(stream)? = t;
        if done {
            // The shard's stream closes; its request when it was the last.
            let mut request = stream;
            if let Some(Kind::Shard { parent, .. }) = self.link.streams.get(stream).map(|s| s.kind)
            {
                request = parent;
                self.link.streams.remove(stream);
            }
            let _ = self.link.streams.shard_done(request);
        }
        Ok(n)
    }

    /// Acknowledges the put on `stream` (all of its data arrived) and
    /// closes the stream.
    ///
    /// # Errors
    /// [`ApiMisuse::WrongState`] before the put's data ended.
    pub fn send_put_ack(&mut self, stream: u32, out: &mut [u8]) -> Result<usize, ApiMisuse> {
        self.link.established()?;
        let kind = self.link.streams.get(stream).map(|s| s.kind);
        if !matches!(kind, Some(Kind::Put { ended: true, .. })) {
            return Err(ApiMisuse::WrongState(stream));
        }
        let n = Message::TensorPutAck.encode(stream, out)?;
        self.link.streams.remove(stream);
        Ok(n)
    }

    /// The stream id a shard of `request_stream` travels on.
    #[must_use]
    pub const fn shard_stream(request_stream: u32, shard_index: u32) -> u32 {
        block_of(request_stream).wrapping_add(shard_index)
    }
}
