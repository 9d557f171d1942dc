//! What both session machines share: the progress of one tensor transfer
//! ([`Transfer`]), the fixed-capacity table of open streams ([`Streams`]),
//! the queue of control messages waiting to be sent ([`Outbox`]), and small
//! sets of device and memory-class codes. Fixed sizes everywhere: a peer
//! can make a session refuse, never grow.

use super::codes::{ErrorCode, MessageType};
use super::control::{ErrorMessage, Ping};
use super::error::{ApiMisuse, SessionErrorKind};
use super::message::Message;
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
            return Err(SessionErrorKind::Unexpected {
                message_type: MessageType::TensorDescriptor.code(),
            });
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
            return Err(SessionErrorKind::Unexpected {
                message_type: MessageType::TensorData.code(),
            });
        };
        if offset != done {
            return Err(SessionErrorKind::DataOutOfOrder {
                expected: done,
                found: offset,
            });
        }
        // [NP-DATA-3]: a frame carries at least one byte.
        if len == 0 {
            return Err(SessionErrorKind::DataOverrun { total, end: done });
        }
        let end = done.saturating_add(len as u64);
        if end > total {
            return Err(SessionErrorKind::DataOverrun { total, end });
        }
        self.phase = Phase::Data { total, done: end };
        Ok(())
    }

    /// Ends the current tensor; `true` when no tensor is left on the stream.
    pub(crate) const fn on_end(&mut self) -> Result<bool, SessionErrorKind> {
        let Phase::Data { total, done } = self.phase else {
            return Err(SessionErrorKind::Unexpected {
                message_type: MessageType::TensorDataEnd.code(),
            });
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

/// What an open stream is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A request's stream: the response (shard 0 when parallel) travels here.
    Response {
        transfer: Transfer,
        /// Shard streams may open in this request's block.
        parallel: bool,
        /// `total_shards` once a descriptor said it (0 before).
        shards_total: u32,
        /// Shards whose data has ended.
        shards_done: u32,
        /// The request's `preferred_device`.
        device: u8,
        /// The shard selection in force (`[NP-SHARD-4]`): one shard ends
        /// the request.
        select: Option<ShardSelect>,
    },
    /// Shard `id - parent` of the request on `parent`.
    Shard { parent: u32, transfer: Transfer },
    /// A put: data then, once ended, the acknowledgement.
    Put { transfer: Transfer, ended: bool },
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

    pub(crate) fn get(&self, id: u32) -> Option<&Slot> {
        self.slots.iter().flatten().find(|s| s.id == id)
    }

    pub(crate) fn get_mut(&mut self, id: u32) -> Option<&mut Slot> {
        self.slots.iter_mut().flatten().find(|s| s.id == id)
    }

    pub(crate) fn open_count(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    /// Whether `id` is open, or lies in the shard block of an open parallel
    /// request (`[NP-SHARD-2]`).
    pub(crate) fn in_use(&self, id: u32) -> bool {
        self.slots.iter().flatten().any(|s| {
            s.id == id
                || matches!(s.kind, Kind::Response { parallel: true, .. }) && block_of(id) == s.id
        })
    }

    /// Whether opening a parallel request at `id` would cover an open stream.
    pub(crate) fn block_busy(&self, id: u32) -> bool {
        self.slots.iter().flatten().any(|s| block_of(s.id) == id)
    }

    pub(crate) fn insert(&mut self, slot: Slot) -> Result<(), ApiMisuse> {
        match self.slots.iter_mut().find(|s| s.is_none()) {
            Some(free) => {
                *free = Some(slot);
                Ok(())
            }
            None => Err(ApiMisuse::NoFreeStream),
        }
    }

    /// Closes `id` and, for a request, its shard streams.
    pub(crate) fn remove(&mut self, id: u32) {
        for s in &mut self.slots {
            let hit = match s {
                Some(slot) => {
                    slot.id == id || matches!(slot.kind, Kind::Shard { parent, .. } if parent == id)
                }
                None => false,
            };
            if hit {
                *s = None;
            }
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
        let done = match self.get_mut(parent) {
            Some(Slot {
                kind:
                    Kind::Response {
                        shards_total,
                        shards_done,
                        transfer,
                        select,
                        ..
                    },
                ..
            }) => {
                *shards_done = shards_done.saturating_add(1);
                let expected = if select.is_some() { 1 } else { *shards_total };
                *shards_total != 0 && *shards_done >= expected && transfer.finished()
            }
            _ => false,
        };
        if done {
            self.remove(parent);
        }
        done
    }

    /// The earliest deadline of any stream.
    pub(crate) fn earliest(&self) -> u64 {
        self.slots
            .iter()
            .flatten()
            .map(|s| s.deadline)
            .min()
            .unwrap_or(NEVER)
    }

    /// A stream whose deadline is at or before `now`.
    pub(crate) fn expired(&self, now: u64) -> Option<u32> {
        self.slots
            .iter()
            .flatten()
            .find(|s| s.deadline <= now)
            .map(|s| s.id)
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
        if let Pending::Pong(_) = p {
            if let Some(slot) = self
                .items
                .iter_mut()
                .find(|i| matches!(i, Some(Pending::Pong(_))))
            {
                *slot = Some(p);
                return true;
            }
        }
        match self.items.iter_mut().find(|i| i.is_none()) {
            Some(free) => {
                *free = Some(p);
                true
            }
            None => false,
        }
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

/// Encodes a pending message other than the hello.
pub(crate) fn encode_pending(p: Pending, out: &mut [u8]) -> Result<usize, ApiMisuse> {
    let (stream, msg) = match p {
        Pending::Pong(t) => (0, Message::Pong(Ping(t))),
        Pending::Error { stream, code, text } => {
            (stream, Message::Error(ErrorMessage { code, text }))
        }
        Pending::Hello => return Err(ApiMisuse::InvalidArgument("hello")),
    };
    Ok(msg.encode(stream, out)?)
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

/// `S` as a `u32` (saturating).
pub(crate) const fn cap<const S: usize>() -> u32 {
    #[allow(clippy::cast_possible_truncation)] // checked on the line itself
    if S > u32::MAX as usize {
        u32::MAX
    } else {
        S as u32
    }
}

/// Bytes any control message of a session with `hello` needs.
pub(crate) const fn max_control_len(hello: &super::hello::Hello<'_>) -> usize {
    let hello = hello.encoded_len().saturating_add(12);
    let error = 20 + super::control::MAX_ERROR_TEXT;
    if hello > error { hello } else { error }
}

/// A stream's deadline after activity at `now`.
pub(crate) const fn after(now: u64, timeout: u64) -> u64 {
    now.saturating_add(timeout)
}
