//! What both session machines share: the progress of one tensor transfer
//! ([`Transfer`]), the fixed-capacity table of open streams ([`Streams`]),
//! the queue of control messages waiting to be sent ([`Outbox`]), and small
//! sets of device and memory-class codes. Fixed sizes everywhere: a peer
//! can make a session refuse, never grow.

use zerocopy::FromBytes;

use super::codes::{ErrorCode, MessageType};
use super::control::Ping;
use super::error::{ApiMisuse, SessionError, SessionErrorKind};
use super::header::{Frame, MessageHeader, Status};
use super::hello::Hello;
use super::message::Message;
use super::request::TensorRequest;
use super::shards::ShardSelect;
use super::transfer::MAX_SHARDS;

/// "No deadline".
pub(crate) const NEVER: u64 = u64::MAX;

/// Where one direction of one stream's tensor data stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// A descriptor must come next (or, with no tensor left, nothing).
    AwaitDescriptor,
    /// Data frames, then the end.
    Data { total: u64, done: u64 },
}

/// The ordering rules of `TENSOR_DESCRIPTOR` → `TENSOR_DATA`* →
/// `TENSOR_DATA_END`, composite members counted pre-order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Transfer {
    pub(crate) phase: Phase,
    /// Tensors still to come on this stream (1 + members bound so far).
    pub(crate) tensors_left: u64,
}

impl Transfer {
    pub(crate) const fn new() -> Self {
        Self {
            phase: Phase::AwaitDescriptor,
            tensors_left: 1,
        }
    }

    pub(crate) fn on_descriptor(
        &mut self,
        total: u64,
        members: u32,
    ) -> Result<(), SessionErrorKind> {
        if self.phase != Phase::AwaitDescriptor || self.tensors_left == 0 {
            return Err(unexpected(MessageType::TensorDescriptor.code()));
        }
        self.tensors_left = self
            .tensors_left
            .saturating_sub(1)
            .saturating_add(u64::from(members));
        self.phase = Phase::Data { total, done: 0 };
        Ok(())
    }

    pub(crate) const fn on_data(
        &mut self,
        offset: u64,
        len: usize,
    ) -> Result<(), SessionErrorKind> {
        let Phase::Data { total, done } = self.phase else {
            return Err(unexpected(MessageType::TensorData.code()));
        };
        if offset != done {
            return Err(SessionErrorKind::DataOutOfOrder {
                expected: done,
                found: offset,
            });
        }
        // [NP-DATA-3]: a frame carries at least one byte (an empty one
        // overruns where it stands).
        let end = done.saturating_add(len as u64);
        if len == 0 || end > total {
            return Err(SessionErrorKind::DataOverrun { total, end });
        }
        self.phase = Phase::Data { total, done: end };
        Ok(())
    }

    /// Ends the current tensor; `true` when no tensor is left on the stream.
    pub(crate) const fn on_end(&mut self) -> Result<bool, SessionErrorKind> {
        let Phase::Data { total, done } = self.phase else {
            return Err(unexpected(MessageType::TensorDataEnd.code()));
        };
        if done != total {
            return Err(SessionErrorKind::DataShort {
                total,
                received: done,
            });
        }
        self.phase = Phase::AwaitDescriptor;
        Ok(self.tensors_left == 0)
    }

    /// A transfer that expects no tensor (the request stream of a shard
    /// selection other than shard 0: nothing travels on it).
    pub(crate) const fn none() -> Self {
        Self {
            phase: Phase::AwaitDescriptor,
            tensors_left: 0,
        }
    }

    pub(crate) const fn finished(&self) -> bool {
        matches!(self.phase, Phase::AwaitDescriptor) && self.tensors_left == 0
    }
}

/// A request's stream: the response (shard 0 when parallel) travels here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Response {
    pub(crate) transfer: Transfer,
    /// Shard streams may open in this request's block.
    pub(crate) parallel: bool,
    /// `total_shards` once a descriptor said it (0 before).
    pub(crate) shards_total: u32,
    /// Shards whose data has ended.
    pub(crate) shards_done: u32,
    /// The request's `preferred_device`.
    pub(crate) device: u8,
    /// The shard selection in force (`[NP-SHARD-4]`): one shard ends the
    /// request.
    pub(crate) select: Option<ShardSelect>,
}

impl Response {
    /// The shard field of a descriptor that does not fit this request, if
    /// one does not: more than one shard unless parallel, one
    /// `total_shards` for every shard (`[NP-SHARD-2]`), the selection's
    /// shard (`[NP-SHARD-4]`).
    pub(crate) fn misfit(&self, total_shards: u32, shard_index: u32) -> Option<&'static str> {
        if total_shards > 1 && !self.parallel
            || self.shards_total != 0 && self.shards_total != total_shards
        {
            return Some("total_shards");
        }
        self.select
            .filter(|s| !s.takes(total_shards, shard_index))
            .map(|_| "shard_index")
    }
}

/// What an open stream is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A request's stream.
    Response(Response),
    /// Shard `id - parent` of the request on `parent`.
    Shard { parent: u32, transfer: Transfer },
    /// A put: data then, once ended, the acknowledgement.
    Put { transfer: Transfer, ended: bool },
}

impl Kind {
    /// The stream of `request`. Its shard selection (`[NP-SHARD-4]`) is in
    /// force exactly when the request is parallel and the server honours
    /// selections of that count (`max`, what it advertised); otherwise both
    /// sides step over the entry like any unknown extension.
    pub(crate) fn response(request: &TensorRequest<'_>, parallel: bool, max: Option<u16>) -> Self {
        let select = ShardSelect::find(&request.preferred_layouts)
            .filter(|s| parallel && max.is_some_and(|m| s.count() <= m));
        Self::Response(Response {
            transfer: match select {
                Some(s) if s.index() != 0 => Transfer::none(),
                _ => Transfer::new(),
            },
            parallel,
            shards_total: 0,
            shards_done: 0,
            device: request.preferred_device,
            select,
        })
    }

    /// A put of `total` bytes: its descriptor came with it, data is next.
    pub(crate) fn put(total: u64) -> Self {
        let mut transfer = Transfer::new();
        let _ = transfer.on_descriptor(total, 0);
        Self::Put {
            transfer,
            ended: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) id: u32,
    pub(crate) kind: Kind,
    pub(crate) deadline: u64,
}

/// The open streams, at most `S`, plus the last few closed ids (so frames
/// still in flight on a stream we closed are dropped quietly).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Streams<const S: usize> {
    slots: [Option<Slot>; S],
    closed: [u32; 8],
    closed_next: usize,
}

/// The shard block a stream id lies in (its request's id).
pub(crate) const fn block_of(id: u32) -> u32 {
    id & !(MAX_SHARDS - 1)
}

impl<const S: usize> Streams<S> {
    pub(crate) const fn new() -> Self {
        Self {
            slots: [None; S],
            closed: [0; 8],
            closed_next: 0,
        }
    }

    /// The open streams' slots.
    fn open(&self) -> impl Iterator<Item = &Slot> {
        self.slots.iter().flatten()
    }

    pub(crate) fn get(&self, id: u32) -> Option<&Slot> {
        self.open().find(|s| s.id == id)
    }

    pub(crate) fn get_mut(&mut self, id: u32) -> Option<&mut Slot> {
        self.slots.iter_mut().flatten().find(|s| s.id == id)
    }

    /// The request open on `id`, if one is.
    pub(crate) fn response(&self, id: u32) -> Option<&Response> {
        match &self.get(id)?.kind {
            Kind::Response(r) => Some(r),
            _ => None,
        }
    }

    pub(crate) fn response_mut(&mut self, id: u32) -> Option<&mut Response> {
        match &mut self.get_mut(id)?.kind {
            Kind::Response(r) => Some(r),
            _ => None,
        }
    }

    /// Whether `id` is an open request answered in parallel shards.
    pub(crate) fn parallel(&self, id: u32) -> bool {
        self.response(id).is_some_and(|r| r.parallel)
    }

    pub(crate) fn open_count(&self) -> usize {
        self.open().count()
    }

    /// Whether `id` is open, or lies in the shard block of an open parallel
    /// request (`[NP-SHARD-2]`).
    pub(crate) fn in_use(&self, id: u32) -> bool {
        self.open().any(|s| {
            s.id == id || matches!(s.kind, Kind::Response(r) if r.parallel) && block_of(id) == s.id
        })
    }

    /// Whether opening a parallel request at `id` would cover an open stream.
    pub(crate) fn block_busy(&self, id: u32) -> bool {
        self.open().any(|s| block_of(s.id) == id)
    }

    /// Opens stream `id` doing `kind`, due by `deadline`.
    pub(crate) fn insert(&mut self, id: u32, kind: Kind, deadline: u64) -> Result<(), ApiMisuse> {
        let free = self.slots.iter_mut().find(|s| s.is_none());
        *free.ok_or(ApiMisuse::NoFreeStream)? = Some(Slot { id, kind, deadline });
        Ok(())
    }

    /// Closes `id` and, for a request, its shard streams.
    pub(crate) fn remove(&mut self, id: u32) {
        for s in &mut self.slots {
            let _ = s.take_if(|slot| {
                slot.id == id || matches!(slot.kind, Kind::Shard { parent, .. } if parent == id)
            });
        }
        if let Some(c) = self.closed.get_mut(self.closed_next) {
            *c = id;
        }
        self.closed_next = self.closed_next.wrapping_add(1) & 7;
    }

    pub(crate) fn recently_closed(&self, id: u32) -> bool {
        id != 0 && self.closed.contains(&id)
    }

    /// Counts one more finished shard of request `parent`; closes the
    /// request when every shard has ended. `true` when the request is done.
    pub(crate) fn shard_done(&mut self, parent: u32) -> bool {
        let done = self.response_mut(parent).is_some_and(|r| {
            r.shards_done = r.shards_done.saturating_add(1);
            // A selection is one shard; else every shard of the total.
            let expected = r.select.map_or(r.shards_total, |_| 1);
            r.shards_total != 0 && r.shards_done >= expected && r.transfer.finished()
        });
        if done {
            self.remove(parent);
        }
        done
    }

    /// The earliest deadline of any stream.
    pub(crate) fn earliest(&self) -> u64 {
        self.open().map(|s| s.deadline).min().unwrap_or(NEVER)
    }

    /// A stream whose deadline is at or before `now`.
    pub(crate) fn expired(&self, now: u64) -> Option<u32> {
        self.open().find(|s| s.deadline <= now).map(|s| s.id)
    }
}

/// A control message waiting for `poll_transmit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pending {
    Hello,
    Pong(u64),
    Error {
        stream: u32,
        code: ErrorCode,
        text: &'static str,
    },
}

impl Pending {
    /// The `ERROR` that answers `kind` on `stream`.
    const fn error(stream: u32, kind: SessionErrorKind) -> Self {
        Self::Error {
            stream,
            code: kind.error_code(),
            text: kind.wire_text(),
        }
    }
}

/// A bounded FIFO of pending control messages.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outbox {
    items: [Option<Pending>; 8],
}

impl Outbox {
    pub(crate) const fn new() -> Self {
        Self { items: [None; 8] }
    }

    /// Queues `p`; `false` when full. A new pong replaces a waiting one.
    pub(crate) fn push(&mut self, p: Pending) -> bool {
        let pong = matches!(p, Pending::Pong(_));
        let waiting = self
            .items
            .iter()
            .position(|i| pong && matches!(i, Some(Pending::Pong(_))));
        let at = waiting.or_else(|| self.items.iter().position(Option::is_none));
        let Some(slot) = at.and_then(|i| self.items.get_mut(i)) else {
            return false;
        };
        *slot = Some(p);
        true
    }

    pub(crate) const fn front(&self) -> Option<Pending> {
        self.items[0]
    }

    pub(crate) fn pop(&mut self) {
        self.items.rotate_left(1);
        if let Some(last) = self.items.last_mut() {
            *last = None;
        }
    }

    pub(crate) const fn is_empty(&self) -> bool {
        matches!(self.items, [None, ..])
    }
}

/// A set of byte codes (device tags, memory classes) in 32 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct CodeSet([u64; 4]);

impl CodeSet {
    pub(crate) fn from_codes(codes: &[u8]) -> Self {
        let mut s = Self::default();
        for &c in codes {
            if let Some(w) = s.0.get_mut(usize::from(c >> 6)) {
                *w |= 1 << (c & 63);
            }
        }
        s
    }

    pub(crate) fn contains(&self, c: u8) -> bool {
        self.0
            .get(usize::from(c >> 6))
            .is_some_and(|w| w & (1 << (c & 63)) != 0)
    }
}

/// The fault of a peer that makes a session of `S` streams hold more
/// (`S` as a `u32`, saturating).
pub(crate) const fn too_many<const S: usize>() -> SessionErrorKind {
    #[allow(clippy::cast_possible_truncation)] // checked on the line itself
    let max = if S > u32::MAX as usize {
        u32::MAX
    } else {
        S as u32
    };
    SessionErrorKind::TooManyStreams { max }
}

/// The fault of a message of type `code` where none may come.
pub(crate) const fn unexpected(code: u32) -> SessionErrorKind {
    SessionErrorKind::Unexpected { message_type: code }
}

/// A stream's deadline after activity at `now`.
pub(crate) const fn after(now: u64, timeout: u64) -> u64 {
    now.saturating_add(timeout)
}

/// Where a connection stands (a server starts awaiting the hello; a client
/// starts before sending its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Start,
    AwaitHello,
    Open,
    Closed,
}

/// What both session machines keep of a connection: its state, the peer's
/// largest payload, the open streams, the control messages owed and the
/// timers; and what both do with them (faults, timers, `ERROR`, `PING`).
#[derive(Debug, Clone)]
pub(crate) struct Link<const S: usize> {
    pub(crate) state: State,
    pub(crate) peer_max: u32,
    pub(crate) streams: Streams<S>,
    pub(crate) outbox: Outbox,
    pub(crate) idle_deadline: u64,
    pub(crate) ping: Option<u64>,
    pub(crate) ping_deadline: u64,
}

impl<const S: usize> Link<S> {
    /// A connection in `state` at `now`, the handshake timer running.
    pub(crate) const fn new(state: State, outbox: Outbox, now: u64, handshake: u64) -> Self {
        Self {
            state,
            peer_max: 0,
            streams: Streams::new(),
            outbox,
            idle_deadline: after(now, handshake),
            ping: None,
            ping_deadline: NEVER,
        }
    }

    /// A fault on `stream`: stream 0, or any stream before the handshake
    /// is done ([NP-HELLO-1]), closes the connection (`Err`); any other
    /// stream is answered with `ERROR` and closed (`Ok`, the error to
    /// report).
    pub(crate) fn fault(
        &mut self,
        stream: u32,
        kind: SessionErrorKind,
    ) -> Result<SessionError, SessionError> {
        if stream == 0 || self.state != State::Open {
            return Err(self.fatal(stream, kind));
        }
        self.streams.remove(stream);
        self.queue(Pending::error(stream, kind))?;
        Ok(SessionError::on(stream, kind))
    }

    /// A message of type `code` on `stream` where none may come: `None`
    /// (ignored) for a late frame on a stream just closed, else a fault.
    pub(crate) fn not_open(
        &mut self,
        stream: u32,
        code: u32,
    ) -> Result<Option<SessionError>, SessionError> {
        let kind = match self.streams.get(stream) {
            Some(_) => unexpected(code),
            None if self.streams.recently_closed(stream) => return Ok(None),
            None => SessionErrorKind::UnknownStream,
        };
        self.fault(stream, kind).map(Some)
    }

    /// Frames the message at the start of `buf`; a malformed header is
    /// answered on the message's stream, then the connection closes (its
    /// payload is never read, `[NP-FRAME-2]`).
    pub(crate) fn frame<'a>(
        &mut self,
        buf: &'a [u8],
        max: u32,
    ) -> Result<Status<Frame<'a>>, SessionError> {
        Frame::parse(buf, max).map_err(|e| {
            let header = MessageHeader::read_from_prefix(buf);
            let stream = header.map_or(0, |(h, _)| h.stream_id.get());
            self.fatal(stream, SessionErrorKind::Malformed(e))
        })
    }

    /// The peer's hello (`[NP-HELLO-2]`): version 0 does not exist, and
    /// one above `newest` is not spoken; any other opens the connection.
    pub(crate) fn on_hello(&mut self, hello: &Hello<'_>, newest: u32) -> Result<(), SessionError> {
        let version = hello.protocol_version;
        if version == 0 || version > newest {
            return Err(self.fatal(0, SessionErrorKind::VersionMismatch { version }));
        }
        self.peer_max = hello.max_message_size;
        self.state = State::Open;
        Ok(())
    }

    /// The peer's `ERROR` on stream 0: the connection is over, and no
    /// `ERROR` answers it (`[NP-ERROR-3]`).
    pub(crate) const fn peer_closed(&mut self, code: ErrorCode) -> SessionError {
        self.state = State::Closed;
        SessionError::on(0, SessionErrorKind::PeerError { code })
    }

    /// The peer's `PING`: its `PONG` is queued.
    pub(crate) fn on_ping(&mut self, t: Ping) -> Result<Ping, SessionError> {
        self.queue(Pending::Pong(t.0)).map(|()| t)
    }

    /// The peer's `PONG`: it must answer our `PING`, else the connection
    /// closes.
    pub(crate) fn on_pong(&mut self, t: Ping) -> Result<Ping, SessionError> {
        if self.ping != Some(t.0) {
            return Err(self.fatal(0, SessionErrorKind::UnsolicitedPong));
        }
        self.ping = None;
        self.ping_deadline = NEVER;
        Ok(t)
    }

    /// Closes the connection with `ERROR` on `stream`.
    pub(crate) fn fatal(&mut self, stream: u32, kind: SessionErrorKind) -> SessionError {
        let _ = self.outbox.push(Pending::error(stream, kind));
        self.state = State::Closed;
        SessionError::on(stream, kind)
    }

    /// Queues `p`; a peer that makes us owe more than we can hold is not
    /// reading, and the connection closes.
    pub(crate) fn queue(&mut self, p: Pending) -> Result<(), SessionError> {
        if self.outbox.push(p) {
            return Ok(());
        }
        Err(self.fatal(0, too_many::<S>()))
    }

    /// `Err(NotEstablished)` unless the handshake is done.
    pub(crate) fn established(&self) -> Result<(), ApiMisuse> {
        if self.state != State::Open {
            return Err(ApiMisuse::NotEstablished);
        }
        Ok(())
    }

    /// `Err(TooLargeForPeer)` for a payload past the peer's maximum.
    pub(crate) fn check_size(&self, length: u64) -> Result<(), ApiMisuse> {
        let max = self.peer_max;
        if length > u64::from(max) {
            return Err(ApiMisuse::TooLargeForPeer { length, max });
        }
        Ok(())
    }
}

/// The message in `frame`, on a stream its type may travel on
/// (`[NP-STREAM-1]`: connection messages on stream 0, the rest elsewhere,
/// `ERROR` on either).
pub(crate) fn message<'a>(frame: &Frame<'a>) -> Result<Message<'a>, SessionErrorKind> {
    let msg = Message::decode(frame).map_err(SessionErrorKind::Malformed)?;
    let kind = msg.message_type();
    if kind.is_connection_message() != (frame.stream_id() == 0) && kind != MessageType::Error {
        let message_type = frame.message_type();
        return Err(SessionErrorKind::WrongStream { message_type });
    }
    Ok(msg)
}

/// The part of the two sessions' public API that is the [`Link`]'s: the
/// same methods, with the same contracts, on `ClientSession` and
/// `ServerSession` (each has a `link` and a `config` with the timeouts).
macro_rules! session_api {
    ($session:ident, $event:ident) => {
        impl<const S: usize> $session<'_, S> {
            /// Handles the message at the start of `buf`, received by `now`.
            ///
            /// `Partial` asks for more bytes (`needed` in all, already checked
            /// against the maximum message size); `Complete((event, consumed))`
            /// says what happened and how many bytes to drop.
            ///
            /// # Errors
            /// The connection is over ([`is_closed`](Self::is_closed)); the
            /// `ERROR` to send, if any, is queued.
            pub fn handle<'a>(
                &mut self,
                now: u64,
                buf: &'a [u8],
            ) -> Result<Status<($event<'a>, usize)>, SessionError> {
                if self.link.state == State::Closed {
                    return Ok(Status::Complete(($event::Ignored, buf.len())));
                }
                let frame = match self.link.frame(buf, self.config.hello.max_message_size)? {
                    Status::Complete(f) => f,
                    Status::Partial { needed } => return Ok(Status::Partial { needed }),
                };
                let (stream, code) = (frame.stream_id(), frame.message_type());
                let event = match super::stream::message(&frame) {
                    Ok(msg) => self.dispatch(now, stream, code, msg)?,
                    Err(kind) => self.fault(stream, kind)?,
                };
                // Only an open connection gets here: a fault in the
                // handshake closes it.
                self.link.idle_deadline = after(now, self.config.idle_timeout);
                Ok(Status::Complete((event, frame.len())))
            }

            /// A message of type `code` where `stream` takes none: ignored
            /// on a stream just closed, else a fault.
            fn not_open<'a>(&mut self, stream: u32, code: u32) -> Result<$event<'a>, SessionError> {
                let error = self.link.not_open(stream, code)?;
                Ok(error.map_or($event::Ignored, $event::StreamError))
            }

            /// A fault on `stream`: stream 0 closes the connection, any
            /// other stream is answered with `ERROR` and closed.
            fn fault<'a>(
                &mut self,
                stream: u32,
                kind: SessionErrorKind,
            ) -> Result<$event<'a>, SessionError> {
                self.link.fault(stream, kind).map($event::StreamError)
            }

            /// Whether the handshake is done and the connection open.
            #[must_use]
            pub fn is_established(&self) -> bool {
                self.link.state == State::Open
            }

            /// Whether the connection is over: flush
            /// [`poll_transmit`](Self::poll_transmit), then close the transport.
            #[must_use]
            pub fn is_closed(&self) -> bool {
                self.link.state == State::Closed
            }

            /// The largest payload the peer accepts (0 before the handshake).
            #[must_use]
            pub const fn peer_max_message_size(&self) -> u32 {
                self.link.peer_max
            }

            /// Streams open now.
            #[must_use]
            pub fn open_streams(&self) -> usize {
                self.link.streams.open_count()
            }

            /// Whether control messages wait for [`poll_transmit`](Self::poll_transmit).
            #[must_use]
            pub const fn has_pending(&self) -> bool {
                !self.link.outbox.is_empty()
            }

            /// Bytes a `poll_transmit` buffer needs to hold any control message.
            #[must_use]
            pub const fn max_control_len(&self) -> usize {
                let hello = self.config.hello.encoded_len().saturating_add(12);
                let error = 20 + super::control::MAX_ERROR_TEXT;
                if hello > error { hello } else { error }
            }

            /// When [`handle_timeout`](Self::handle_timeout) must run next
            /// (`None`: never, the connection is closed).
            #[must_use]
            pub fn poll_timeout(&self) -> Option<u64> {
                if self.link.state == State::Closed {
                    return None;
                }
                let link = &self.link;
                Some(
                    link.idle_deadline
                        .min(link.ping_deadline)
                        .min(link.streams.earliest()),
                )
            }

            /// Runs the timers at `now`: a stream (request, shard or put)
            /// whose peer went quiet past the request timeout is closed with
            /// `ERROR` (`TIMEOUT`) and returned; a silent connection
            /// (handshake, idle, unanswered ping) is closed with an error.
            ///
            /// # Errors
            /// The connection timed out.
            pub fn handle_timeout(&mut self, now: u64) -> Result<Option<u32>, SessionError> {
                if self.link.state == State::Closed {
                    return Ok(None);
                }
                if now >= self.link.idle_deadline || now >= self.link.ping_deadline {
                    return Err(self.link.fatal(0, SessionErrorKind::Timeout));
                }
                if let Some(id) = self.link.streams.expired(now) {
                    let _ = self.link.fault(id, SessionErrorKind::Timeout)?;
                    return Ok(Some(id));
                }
                Ok(None)
            }

            /// The next control message the session owes the peer (its hello
            /// first, then `PONG`s and `ERROR`s), written into `out`
            /// ([`max_control_len`](Self::max_control_len) bytes suffice).
            ///
            /// # Errors
            /// [`ApiMisuse::Encode`] when `out` is too small (the message
            /// stays queued).
            pub fn poll_transmit(&mut self, out: &mut [u8]) -> Result<Option<usize>, ApiMisuse> {
                let Some(p) = self.link.outbox.front() else {
                    return Ok(None);
                };
                let n = match p {
                    Pending::Hello => self.send_hello(out)?,
                    Pending::Pong(t) => Message::Pong(Ping(t)).encode(0, out)?,
                    Pending::Error { stream, code, text } => {
                        Message::Error(ErrorMessage { code, text }).encode(stream, out)?
                    }
                };
                self.link.outbox.pop();
                Ok(Some(n))
            }

            /// Records `len` bytes at `offset` on `stream` (a put the client
            /// sends, a response or shard the server sends) and returns the
            /// 20 bytes that go before them on the wire; the caller writes
            /// exactly `len` data bytes after (from an mmap, without a copy).
            ///
            /// # Errors
            /// [`ApiMisuse::OutOfOrder`] (the offset is not where the last
            /// frame ended, `len` is 0 or passes the total), a frame too
            /// large for the peer, a stream not sending, or the connection
            /// no longer open.
            pub fn data_prefix(
                &mut self,
                stream: u32,
                offset: u64,
                len: u32,
            ) -> Result<[u8; 20], ApiMisuse> {
                self.link.established()?;
                self.link.check_size(u64::from(len).saturating_add(8))?;
                self.sending(stream)?
                    .on_data(offset, len as usize)
                    .map_err(|_| ApiMisuse::OutOfOrder(stream))?;
                Ok(data_frame_prefix(stream, offset, len))
            }

            /// [`data_prefix`](Self::data_prefix) and the data, copied into `out`.
            ///
            /// # Errors
            /// As [`data_prefix`](Self::data_prefix); `out` too small.
            pub fn send_data(
                &mut self,
                stream: u32,
                offset: u64,
                data: &[u8],
                out: &mut [u8],
            ) -> Result<usize, ApiMisuse> {
                let len =
                    u32::try_from(data.len()).map_err(|_| ApiMisuse::InvalidArgument("data"))?;
                let total = 20usize.saturating_add(data.len());
                if out.len() < total {
                    return Err(ApiMisuse::Encode(crate::EncodeError::OutputTooSmall {
                        needed: total as u64,
                        available: 0,
                    }));
                }
                crate::copy_at(out, 0, &self.data_prefix(stream, offset, len)?);
                crate::copy_at(out, 20, data);
                Ok(total)
            }

            /// Closes `stream` (a request with its shards, or a put) with
            /// `ERROR`; stream 0 closes the connection.
            ///
            /// # Errors
            /// `out` too small.
            pub fn send_error(
                &mut self,
                stream: u32,
                code: ErrorCode,
                text: &str,
                out: &mut [u8],
            ) -> Result<usize, ApiMisuse> {
                let n = Message::Error(ErrorMessage { code, text }).encode(stream, out)?;
                if stream == 0 {
                    self.link.state = State::Closed;
                } else {
                    self.link.streams.remove(stream);
                }
                Ok(n)
            }

            /// Sends a `PING` with `token` at `now`; the peer must answer
            /// within the idle timeout.
            ///
            /// # Errors
            /// Not established, or `out` too small.
            pub fn send_ping(
                &mut self,
                now: u64,
                token: u64,
                out: &mut [u8],
            ) -> Result<usize, ApiMisuse> {
                self.link.established()?;
                let n = Message::Ping(Ping(token)).encode(0, out)?;
                self.link.ping = Some(token);
                self.link.ping_deadline = after(now, self.config.idle_timeout);
                Ok(n)
            }
        }
    };
}
pub(crate) use session_api;
