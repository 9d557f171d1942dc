//! The client's side of a connection as a sans-I/O state machine, the
//! mirror of [`ServerSession`](super::ServerSession):
//! [`ClientSession::handle`] for bytes from the server, [`request`] and
//! [`put`] (and the data mutators) for what the application sends,
//! [`poll_transmit`] for what the session owes (`CLIENT_HELLO` first, then
//! `PONG`s and `ERROR`s), [`poll_timeout`] / [`handle_timeout`] with time
//! passed in. `S` streams at most, no allocation, no panic on any bytes.
//!
//! It checks everything the server sends: the handshake, the order
//! descriptor → data → end on each stream (composite members counted),
//! data offsets, totals, shard streams (each in its request's block, with
//! the index its stream id implies and one `total_shards` for all), and the
//! device of every buffer against what the client accepts.
//!
//! [`request`]: ClientSession::request
//! [`put`]: ClientSession::put
//! [`poll_transmit`]: ClientSession::poll_transmit
//! [`poll_timeout`]: ClientSession::poll_timeout
//! [`handle_timeout`]: ClientSession::handle_timeout

use super::codes::{Capabilities, ErrorCode, MessageType, RequestFlags};
use super::control::{ErrorMessage, Ping};
use super::error::{ApiMisuse, SessionError, SessionErrorKind};
use super::header::Status;
use super::hello::{Hello, PROTOCOL_VERSION};
use super::message::{Message, data_frame_prefix};
use super::request::TensorRequest;
use super::shards::ShardSelect;
use super::stream::{
    CodeSet, Kind, Link, NEVER, Outbox, Pending, State, Transfer, after, block_of, too_many,
    unexpected,
};
use super::transfer::{DataFrame, DescriptorMessage, TensorPut};

/// What a client advertises and how long it waits.
#[derive(Debug, Clone, Copy)]
pub struct ClientConfig<'c> {
    /// The `CLIENT_HELLO` to send; its `max_message_size` is the largest
    /// payload this client accepts, its `devices` those it accepts buffers
    /// on.
    pub hello: Hello<'c>,
    /// Time allowed for `SERVER_HELLO`.
    pub handshake_timeout: u64,
    /// Time allowed between two complete messages while a stream is open.
    pub idle_timeout: u64,
    /// Time allowed between two messages of one request's answer, or
    /// between a put's end and its acknowledgement.
    pub request_timeout: u64,
}

/// What [`ClientSession::handle`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ClientEvent<'a> {
    /// The server accepted the session: its hello.
    Connected(Hello<'a>),
    /// A tensor (or shard, or composite member) begins on `stream_id`, in
    /// answer to the request on `request_id`.
    Descriptor {
        /// The stream it travels on.
        stream_id: u32,
        /// The request's stream.
        request_id: u32,
        /// The descriptor and transport fields.
        message: DescriptorMessage<'a>,
    },
    /// Bytes of the current tensor on `stream_id`, in order.
    Data {
        /// The stream.
        stream_id: u32,
        /// The request's stream.
        request_id: u32,
        /// Offset and bytes.
        frame: DataFrame<'a>,
    },
    /// The current tensor on `stream_id` is complete.
    DataEnd {
        /// The stream.
        stream_id: u32,
        /// The request's stream.
        request_id: u32,
        /// Whether the whole answer (every member, every shard) is in.
        request_complete: bool,
    },
    /// The server accepted the put on `stream_id`.
    PutAck {
        /// The stream.
        stream_id: u32,
    },
    /// The server closed a stream with `ERROR`.
    PeerError {
        /// The stream.
        stream_id: u32,
        /// Code and text.
        error: ErrorMessage<'a>,
    },
    /// The server broke a rule on one stream: `ERROR` queued, stream (and,
    /// for a shard, its whole request) closed.
    StreamError(SessionError),
    /// A `PING` (the `PONG` is queued).
    Ping(Ping),
    /// The `PONG` to our `PING`.
    Pong(Ping),
    /// Nothing for the application.
    Ignored,
}

/// One connection to a server.
///
/// ```
/// use hurray_core::net::*;
///
/// let hello = Hello {
///     protocol_version: PROTOCOL_VERSION, max_message_size: 1 << 16,
///     capabilities: Capabilities::NONE, layouts: LayoutList::EMPTY,
///     devices: &[0x00], memory_classes: &[],
/// };
/// let config = ClientConfig { hello, handshake_timeout: 5_000, idle_timeout: 60_000, request_timeout: 30_000 };
/// let mut client = ClientSession::<4>::new(config, 0);
/// let mut out = [0u8; 256];
/// let n = client.poll_transmit(&mut out).unwrap().unwrap();
/// assert_eq!(&out[..4], &[1, 0, 0, 0]); // CLIENT_HELLO first, on stream 0
/// assert_eq!(&out[4..8], &[0, 0, 0, 0]);
/// # let _ = n;
/// ```
#[derive(Debug, Clone)]
pub struct ClientSession<'c, const S: usize> {
    config: ClientConfig<'c>,
    link: Link<S>,
    peer_caps: Capabilities,
    /// The shard selection the server advertised (`[NP-SHARD-4]`).
    peer_select: Option<ShardSelect>,
    accepted_devices: CodeSet,
}

super::stream::session_api!(ClientSession, ClientEvent);

impl<'c, const S: usize> ClientSession<'c, S> {
    /// A session for a connection opened at `now`; its first
    /// `poll_transmit` is the `CLIENT_HELLO`.
    #[must_use]
    pub fn new(config: ClientConfig<'c>, now: u64) -> Self {
        let mut outbox = Outbox::new();
        let _ = outbox.push(Pending::Hello);
        Self {
            config,
            link: Link::new(State::Start, outbox, now, config.handshake_timeout),
            peer_caps: Capabilities::NONE,
            peer_select: None,
            accepted_devices: CodeSet::from_codes(config.hello.devices),
        }
    }

    // --- getters -----------------------------------------------------------

    /// The server's capabilities.
    #[must_use]
    pub const fn peer_capabilities(&self) -> Capabilities {
        self.peer_caps
    }

    /// The largest shard selection the server honours (`[NP-SHARD-4]`):
    /// `Some(n)` when it advertised `PARALLEL_STREAMS` and selections of up
    /// to `n` shards.
    #[must_use]
    pub fn peer_select_max(&self) -> Option<u16> {
        let parallel = self.peer_caps.contains(Capabilities::PARALLEL_STREAMS);
        self.peer_select.filter(|_| parallel).map(|s| s.count())
    }

    /// Whether the stream (a request, shard or put) is still open.
    #[must_use]
    pub fn is_open(&self, stream: u32) -> bool {
        self.link.streams.get(stream).is_some()
    }

    // --- what arrived ---------------------------------------------------------

    fn dispatch<'a>(
        &mut self,
        now: u64,
        stream_id: u32,
        code: u32,
        msg: Message<'a>,
    ) -> Result<ClientEvent<'a>, SessionError> {
        if self.link.state != State::Open {
            return match msg {
                Message::ServerHello(h) if self.link.state == State::AwaitHello => self.on_hello(h),
                Message::Error(e) if stream_id == 0 => Err(self.link.peer_closed(e.code)),
                _ => Err(self.link.fatal(stream_id, unexpected(code))),
            };
        }
        match msg {
            Message::Ping(t) => self.link.on_ping(t).map(ClientEvent::Ping),
            Message::Pong(t) => self.link.on_pong(t).map(ClientEvent::Pong),
            Message::Error(e) if stream_id == 0 => Err(self.link.peer_closed(e.code)),
            Message::Error(error) => {
                // An ERROR on a shard stream ends its whole request.
                let request = self.request_of(stream_id).unwrap_or(stream_id);
                self.link.streams.remove(request);
                self.link.streams.remove(stream_id);
                Ok(ClientEvent::PeerError { stream_id, error })
            }
            Message::TensorDescriptor(message) => self.on_descriptor(now, stream_id, message),
            Message::TensorData(_) | Message::TensorDataEnd => {
                let Some((request_id, t)) = self.receiving(stream_id, now) else {
                    return self.not_open(stream_id, code);
                };
                let event = match msg {
                    Message::TensorData(frame) => {
                        t.on_data(frame.offset, frame.data.len())
                            .map(|()| ClientEvent::Data {
                                stream_id,
                                request_id,
                                frame,
                            })
                    }
                    _ => t.on_end().map(|last| {
                        if last && stream_id != request_id {
                            self.link.streams.remove(stream_id);
                        }
                        ClientEvent::DataEnd {
                            stream_id,
                            request_id,
                            request_complete: last && self.link.streams.shard_done(request_id),
                        }
                    }),
                };
                event.or_else(|k| self.fault_request(stream_id, request_id, k))
            }
            Message::TensorPutAck => match self.link.streams.get(stream_id).map(|s| s.kind) {
                Some(Kind::Put { ended: true, .. }) => {
                    self.link.streams.remove(stream_id);
                    Ok(ClientEvent::PutAck { stream_id })
                }
                _ => self.not_open(stream_id, code),
            },
            _ => self.fault(stream_id, unexpected(code)),
        }
    }

    fn on_hello<'a>(&mut self, hello: Hello<'a>) -> Result<ClientEvent<'a>, SessionError> {
        // [NP-HELLO-2]: the server's version is at most ours.
        self.link.on_hello(&hello, PROTOCOL_VERSION)?;
        self.peer_caps = hello.capabilities;
        self.peer_select = ShardSelect::find(&hello.layouts);
        Ok(ClientEvent::Connected(hello))
    }

    /// The request a stream answers: itself, or a shard's parent.
    fn request_of(&self, stream: u32) -> Option<u32> {
        match self.link.streams.get(stream)?.kind {
            Kind::Shard { parent, .. } => Some(parent),
            Kind::Response(_) => Some(stream),
            Kind::Put { .. } => None,
        }
    }

    /// The request `stream` answers and the transfer on it, its timer
    /// restarted at `now`.
    fn receiving(&mut self, stream: u32, now: u64) -> Option<(u32, &mut Transfer)> {
        let timeout = self.config.request_timeout;
        let slot = self.link.streams.get_mut(stream)?;
        let found = match &mut slot.kind {
            Kind::Response(r) => (stream, &mut r.transfer),
            Kind::Shard { parent, transfer } => (*parent, transfer),
            Kind::Put { .. } => return None,
        };
        slot.deadline = after(now, timeout);
        Some(found)
    }

    fn on_descriptor<'a>(
        &mut self,
        now: u64,
        stream: u32,
        message: DescriptorMessage<'a>,
    ) -> Result<ClientEvent<'a>, SessionError> {
        let code = MessageType::TensorDescriptor.code();
        let (index, total) = (message.shard_index, message.total_shards);
        // Which request does this stream answer? Its own, or, for a new
        // stream in an open parallel request's block, that request's.
        let request = match self.request_of(stream) {
            Some(r) => r,
            None => {
                let parent = block_of(stream);
                if !self.link.streams.parallel(parent) || parent == stream {
                    return self.not_open(stream, code);
                }
                if index != stream.wrapping_sub(parent) {
                    return self.fault_request(stream, parent, SessionErrorKind::ShardMismatch);
                }
                let kind = Kind::Shard {
                    parent,
                    transfer: Transfer::new(),
                };
                let deadline = after(now, self.config.request_timeout);
                if self.link.streams.insert(stream, kind, deadline).is_err() {
                    return self.fault_request(stream, parent, too_many::<S>());
                }
                parent
            }
        };
        // Shard fields: index as the stream implies, one total for all.
        let Some(&response) = self.link.streams.response(request) else {
            return self.not_open(stream, code);
        };
        if index != stream.wrapping_sub(request) || response.misfit(total, index).is_some() {
            return self.fault_request(stream, request, SessionErrorKind::ShardMismatch);
        }
        // [NP-DEVICE-2]: buffers on the preferred device or one we listed.
        if let Some(b) = message.descriptor.buffers().get(0) {
            let tag = b.device_tag().code();
            if tag != response.device && !self.accepted_devices.contains(tag) {
                let kind = SessionErrorKind::DeviceRefused { device_tag: tag };
                return self.fault_request(stream, request, kind);
            }
        }
        let Some((_, t)) = self.receiving(stream, now) else {
            return self.not_open(stream, code);
        };
        if let Err(k) = t.on_descriptor(message.total_data_bytes, message.member_count()) {
            return self.fault_request(stream, request, k);
        }
        if let Some(r) = self.link.streams.response_mut(request) {
            r.shards_total = total;
        }
        Ok(ClientEvent::Descriptor {
            stream_id: stream,
            request_id: request,
            message,
        })
    }

    /// A fault on a stream of `request`: the whole request is closed, with
    /// `ERROR` on the request's stream (`[NP-SHARD-3]`).
    fn fault_request<'a>(
        &mut self,
        stream: u32,
        request: u32,
        kind: SessionErrorKind,
    ) -> Result<ClientEvent<'a>, SessionError> {
        if stream != request {
            self.link.streams.remove(stream);
        }
        let e = self.link.fault(request, kind)?;
        Ok(ClientEvent::StreamError(SessionError::on(stream, e.kind)))
    }

    // --- what to send ------------------------------------------------------------------

    /// Writes our `CLIENT_HELLO`; the server's is awaited from then on.
    fn send_hello(&mut self, out: &mut [u8]) -> Result<usize, ApiMisuse> {
        let n = Message::ClientHello(self.config.hello).encode(0, out)?;
        self.link.state = State::AwaitHello;
        Ok(n)
    }

    /// Opens `stream` for `kind` with `msg`, written into `out`; a
    /// parallel request needs a free shard block of its own.
    fn open(
        &mut self,
        stream: u32,
        kind: Kind,
        deadline: u64,
        msg: Message<'_>,
        out: &mut [u8],
    ) -> Result<usize, ApiMisuse> {
        self.link.established()?;
        self.link.check_size(msg.payload_len() as u64)?;
        let parallel = matches!(kind, Kind::Response(r) if r.parallel);
        if stream == 0
            || self.link.streams.in_use(stream)
            || parallel && (block_of(stream) != stream || self.link.streams.block_busy(stream))
        {
            return Err(ApiMisuse::StreamUnavailable(stream));
        }
        if self.link.streams.open_count() >= S {
            return Err(ApiMisuse::NoFreeStream);
        }
        let n = msg.encode(stream, out)?;
        self.link.streams.insert(stream, kind, deadline)?;
        Ok(n)
    }

    /// Sends `request` on a new `stream` at `now`. With `PARALLEL_OK` the
    /// stream id must be a multiple of [`MAX_SHARDS`](super::MAX_SHARDS) and its block free
    /// (`[NP-SHARD-2]`). A [`ShardSelect`] entry in its layout list is in
    /// force when the request is parallel and the server advertised
    /// selections of that count (`[NP-SHARD-4]`): the answer is then that
    /// one shard.
    ///
    /// # Errors
    /// [`ApiMisuse`] (stream unavailable, not established, too large for
    /// the server, no free slot, `out` too small); nothing changes.
    pub fn request(
        &mut self,
        now: u64,
        stream: u32,
        request: &TensorRequest<'_>,
        out: &mut [u8],
    ) -> Result<usize, ApiMisuse> {
        let parallel = request.flags.contains(RequestFlags::PARALLEL_OK);
        let kind = Kind::response(request, parallel, self.peer_select_max());
        let deadline = after(now, self.config.request_timeout);
        let msg = Message::TensorRequest(*request);
        self.open(stream, kind, deadline, msg, out)
    }

    /// Starts `put` on a new `stream`; send its bytes with
    /// [`data_prefix`](Self::data_prefix) / [`send_data`](Self::send_data),
    /// then [`send_data_end`](Self::send_data_end).
    ///
    /// # Errors
    /// As [`request`](Self::request).
    pub fn put(
        &mut self,
        stream: u32,
        put: &TensorPut<'_>,
        out: &mut [u8],
    ) -> Result<usize, ApiMisuse> {
        let kind = Kind::put(put.total_data_bytes);
        self.open(stream, kind, NEVER, Message::TensorPut(*put), out)
    }

    /// The transfer of the put on `stream`, while its data is sent.
    fn sending(&mut self, stream: u32) -> Result<&mut Transfer, ApiMisuse> {
        match self.link.streams.get_mut(stream).map(|s| &mut s.kind) {
            Some(Kind::Put {
                transfer,
                ended: false,
            }) => Ok(transfer),
            _ => Err(ApiMisuse::WrongState(stream)),
        }
    }

    /// Ends the put's data on `stream` at `now`; the acknowledgement is
    /// then due within the request timeout.
    ///
    /// # Errors
    /// Before every byte was sent, or the connection is no longer open.
    pub fn send_data_end(
        &mut self,
        now: u64,
        stream: u32,
        out: &mut [u8],
    ) -> Result<usize, ApiMisuse> {
        self.link.established()?;
        let mut t = *self.sending(stream)?;
        t.on_end().map_err(|_| ApiMisuse::OutOfOrder(stream))?;
        let n = Message::TensorDataEnd.encode(stream, out)?;
        let timeout = self.config.request_timeout;
        if let Some(slot) = self.link.streams.get_mut(stream) {
            slot.kind = Kind::Put {
                transfer: t,
                ended: true,
            };
            slot.deadline = after(now, timeout);
        }
        Ok(n)
    }
}
