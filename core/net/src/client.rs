//! The client: one connection, one [`ClientSession`], requests and puts
//! one at a time (each on a fresh stream id).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hurray_core::TensorView;
use hurray_core::net::{
    Capabilities, ClientConfig, ClientEvent, ClientSession, DescriptorMessage, ErrorCode, Hello,
    LayoutList, PROTOCOL_VERSION, RequestFlags, ShardSelect, Status, TensorPut, TensorRequest,
    check_shards,
};
use hurray_io::file as hfile;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::conn::{Inbox, Io, Read, Reader, Writer};
use crate::shard::{Destination, Memory, OutFile, Parent, Placement};
use crate::{AUTH_MAGIC, Error, MAX_TOKEN_LEN};

const STREAMS: usize = 4;

/// How a [`Client`] behaves.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Largest payload accepted (and announced).
    pub max_message_size: u32,
    /// Largest tensor fetched into memory (checked before reserving it).
    pub max_fetch_bytes: u64,
    /// Time to connect and for `SERVER_HELLO`.
    pub handshake_timeout: Duration,
    /// Time allowed between two messages of an answer.
    pub request_timeout: Duration,
    /// The access token to present (see the crate docs).
    pub token: Option<Vec<u8>>,
    /// Connect over TLS (`tls::ClientTls`).
    #[cfg(feature = "tls")]
    pub tls: Option<crate::tls::ClientTls>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            max_message_size: 1 << 20,
            max_fetch_bytes: 4 << 30,
            handshake_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            token: None,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

/// A fetched tensor: its descriptor and its buffers, back to back in table
/// order (buffer `i` starts at the sum of the sizes before it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// The descriptor's bytes (parse with [`TensorView::parse`]).
    pub descriptor: Vec<u8>,
    /// Every buffer, concatenated.
    pub data: Vec<u8>,
}

impl Fetched {
    /// The validated descriptor.
    ///
    /// # Panics
    /// Never: the session validated these bytes.
    #[must_use]
    pub fn view(&self) -> TensorView<'_> {
        TensorView::parse(&self.descriptor).expect("validated by the session")
    }

    /// Buffer `i`'s bytes.
    #[must_use]
    pub fn buffer(&self, i: usize) -> Option<&[u8]> {
        let view = self.view();
        let mut at = 0usize;
        for (j, b) in view.buffers().iter().enumerate() {
            let len = usize::try_from(b.byte_size()).ok()?;
            if j == i {
                return self.data.get(at..at + len);
            }
            at += len;
        }
        None
    }
}

/// Takes the data frames of a stream: `(stream, offset, bytes)`; `true`
/// when it took them (no event is then returned for the frame).
type DataSink<'s> = dyn FnMut(u32, u64, &[u8]) -> Result<bool, Error> + Send + 's;

/// A connection to a hurray server.
pub struct Client {
    session: ClientSession<'static, STREAMS>,
    rd: Reader,
    wr: Writer,
    inbox: Inbox,
    base: Instant,
    next_stream: u32,
    options: ClientOptions,
    out: Vec<u8>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("next_stream", &self.next_stream)
            .finish()
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Client {
    /// Connects to `addr` (over TLS when [`ClientOptions`] says so),
    /// presents the token if one is set, and completes the handshake.
    ///
    /// # Errors
    /// The connection, the TLS handshake ([`Error::Tls`]) or the protocol's
    /// handshake failed or timed out, or the server refused the session.
    pub async fn connect(addr: SocketAddr, options: ClientOptions) -> Result<Self, Error> {
        let stream = tokio::time::timeout(options.handshake_timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| Error::Timeout)??;
        let _ = stream.set_nodelay(true);
        let config = ClientConfig {
            hello: Hello {
                protocol_version: PROTOCOL_VERSION,
                max_message_size: options.max_message_size,
                capabilities: Capabilities::NONE,
                layouts: LayoutList::EMPTY,
                devices: &[0x00],
                memory_classes: &[0x00],
            },
            handshake_timeout: ms(options.handshake_timeout),
            idle_timeout: ms(options.request_timeout),
            request_timeout: ms(options.request_timeout),
        };
        let stream = secure(stream, &options).await?;
        let (rd, wr) = tokio::io::split(stream);
        let mut client = Self {
            session: ClientSession::new(config, 0),
            rd,
            wr: BufWriter::with_capacity(256 << 10, wr),
            inbox: Inbox::new(options.max_message_size as usize + 12),
            base: Instant::now(),
            next_stream: 1,
            out: vec![0u8; 64 << 10],
            options,
        };
        if let Some(token) = &client.options.token {
            if token.len() > MAX_TOKEN_LEN {
                return Err(Error::Limit("token longer than 256 bytes"));
            }
            let mut pre = AUTH_MAGIC.to_vec();
            pre.extend_from_slice(&(token.len() as u32).to_le_bytes());
            pre.extend_from_slice(token);
            client.wr.write_all(&pre).await?;
        }
        client.flush().await?;
        loop {
            match client.next_event().await? {
                Ev::Connected => return Ok(client),
                Ev::Other => {}
                _ => return Err(Error::Closed),
            }
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    async fn flush(&mut self) -> Result<(), Error> {
        let mut ctl = vec![0u8; self.session.max_control_len()];
        while let Some(n) = self.session.poll_transmit(&mut ctl)? {
            self.wr.write_all(&ctl[..n]).await?;
        }
        tokio::time::timeout(self.options.request_timeout, self.wr.flush())
            .await
            .map_err(|_| Error::Timeout)??;
        Ok(())
    }

    /// The next event of the session, owned (reads as needed, with the
    /// session's deadline).
    async fn next_event(&mut self) -> Result<Ev, Error> {
        self.next_event_into(None).await
    }

    /// [`next_event`](Self::next_event), appending the data of `sink`'s
    /// stream to its vector directly (no copy per frame).
    async fn next_event_into(&mut self, mut sink: Option<&mut DataSink<'_>>) -> Result<Ev, Error> {
        loop {
            let now = self.now();
            match self.session.handle(now, self.inbox.pending()) {
                Ok(Status::Complete((event, used))) => {
                    let ev = match (event, sink.as_mut()) {
                        (
                            ClientEvent::Data {
                                stream_id, frame, ..
                            },
                            Some(put),
                        ) => {
                            if put(stream_id, frame.offset, frame.data)? {
                                Ev::Other
                            } else {
                                Ev::from(event)
                            }
                        }
                        (event, _) => Ev::from(event),
                    };
                    self.inbox.consume(used);
                    if self.session.has_pending() {
                        self.flush().await?;
                    }
                    return Ok(ev);
                }
                Ok(Status::Partial { needed }) => {
                    let deadline = self
                        .session
                        .poll_timeout()
                        .map(|t| self.base + Duration::from_millis(t.min(u64::MAX / 4)));
                    match self.inbox.fill(&mut self.rd, needed, deadline).await? {
                        Read::Bytes => {}
                        Read::Eof => return Err(Error::Closed),
                        Read::Deadline => {
                            let r = self.session.handle_timeout(self.now());
                            self.flush().await?;
                            match r {
                                Ok(None) => {}
                                Ok(Some(_)) | Err(_) => return Err(Error::Timeout),
                            }
                        }
                    }
                }
                Err(e) => {
                    let _ = self.flush().await;
                    return Err(match e.kind {
                        hurray_core::net::SessionErrorKind::PeerError { code } => Error::Peer {
                            code,
                            message: String::new(),
                        },
                        _ => e.into(),
                    });
                }
            }
        }
    }

    fn stream(&mut self) -> u32 {
        let s = self.next_stream;
        self.next_stream = self.next_stream.wrapping_add(1).max(1);
        s
    }

    /// Fetches the tensor `key` into memory.
    ///
    /// # Errors
    /// The server answered with `ERROR` ([`Error::Peer`]), the answer broke
    /// the protocol, timed out, or exceeds [`ClientOptions::max_fetch_bytes`].
    pub async fn get(&mut self, key: &str) -> Result<Fetched, Error> {
        self.get_with(key, &mut |_, _| {}).await
    }

    /// [`get`](Self::get), calling `progress(received, total)` after the
    /// descriptor and after each data frame (for a progress bar).
    ///
    /// # Errors
    /// As [`get`](Self::get).
    pub async fn get_with(
        &mut self,
        key: &str,
        progress: &mut (dyn FnMut(u64, u64) + Send),
    ) -> Result<Fetched, Error> {
        self.get_layouts(key, LayoutList::EMPTY, RequestFlags::NONE, progress)
            .await
    }

    /// Fetches `key` asking for the layouts `preferred` (tags, most wanted
    /// first) and allowing the server to transcode (`ALLOW_TRANSCODE`,
    /// [NP-LAYOUT-2]): the answer is in the first of them the tensor is
    /// stored in or the server can transcode it to, else in its native
    /// layout (check [`Fetched::view`]). Values are the same either way.
    ///
    /// # Errors
    /// As [`get`](Self::get); [`Error::Limit`] for a tag that is not a
    /// public layout tag.
    pub async fn get_in_layout(&mut self, key: &str, preferred: &[u8]) -> Result<Fetched, Error> {
        let layouts = LayoutList::tags(preferred).ok_or(Error::Limit("not a layout tag"))?;
        self.get_layouts(key, layouts, RequestFlags::ALLOW_TRANSCODE, &mut |_, _| {})
            .await
    }

    async fn get_layouts(
        &mut self,
        key: &str,
        layouts: LayoutList<'_>,
        flags: RequestFlags,
        progress: &mut (dyn FnMut(u64, u64) + Send),
    ) -> Result<Fetched, Error> {
        let stream = self.stream();
        let request = TensorRequest {
            key,
            preferred_layouts: layouts,
            preferred_device: 0x00,
            min_alignment: 64,
            flags,
        };
        let now = self.now();
        let n = self.session.request(now, stream, &request, &mut self.out)?;
        let (out, wr) = (&self.out, &mut self.wr);
        wr.write_all(&out[..n]).await?;
        self.flush().await?;
        let mut fetched: Option<Fetched> = None;
        let mut total = 0u64;
        loop {
            if let Some(f) = &fetched {
                progress(f.data.len() as u64, total);
            }
            let mut append = |s: u32, _: u64, bytes: &[u8]| -> Result<bool, Error> {
                match fetched.as_mut() {
                    Some(f) if s == stream => {
                        f.data.extend_from_slice(bytes);
                        Ok(true)
                    }
                    _ => Ok(false),
                }
            };
            match self.next_event_into(Some(&mut append)).await? {
                Ev::Descriptor {
                    stream: s,
                    descriptor,
                    total: announced,
                    ..
                } if s == stream => {
                    total = announced;
                    if total > self.options.max_fetch_bytes {
                        let n = self.session.send_error(
                            stream,
                            ErrorCode::Busy,
                            "tensor larger than this client fetches",
                            &mut self.out,
                        )?;
                        let (out, wr) = (&self.out, &mut self.wr);
                        wr.write_all(&out[..n]).await?;
                        self.flush().await?;
                        return Err(Error::Limit("tensor larger than max_fetch_bytes"));
                    }
                    let cap = usize::try_from(total).map_err(|_| Error::Limit("tensor size"))?;
                    fetched = Some(Fetched {
                        descriptor,
                        data: Vec::with_capacity(cap),
                    });
                }
                Ev::Data { stream: s, bytes } if s == stream => {
                    if let Some(f) = fetched.as_mut() {
                        f.data.extend_from_slice(&bytes);
                    }
                }
                Ev::DataEnd {
                    stream: s,
                    complete: true,
                } if s == stream => return fetched.ok_or(Error::Closed),
                Ev::PeerError {
                    stream: s,
                    code,
                    message,
                } if s == stream => {
                    return Err(Error::Peer { code, message });
                }
                Ev::StreamError(e) if e.stream_id == stream => return Err(Error::Protocol(e)),
                _ => {}
            }
        }
    }

    /// Fetches `key` and writes it as the one tensor of a new `.hrry` file
    /// at `path` (named `key`; a temporary name, synced, renamed).
    ///
    /// # Errors
    /// As [`get`](Self::get), or writing the file failed.
    pub async fn get_to_file(&mut self, key: &str, path: impl AsRef<Path>) -> Result<(), Error> {
        self.get_to_file_with(key, path, &mut |_, _| {}).await
    }

    /// [`get_to_file`](Self::get_to_file) with a progress callback (as
    /// [`get_with`](Self::get_with)).
    ///
    /// # Errors
    /// As [`get_to_file`](Self::get_to_file).
    pub async fn get_to_file_with(
        &mut self,
        key: &str,
        path: impl AsRef<Path>,
        progress: &mut (dyn FnMut(u64, u64) + Send),
    ) -> Result<(), Error> {
        let fetched = self.get_with(key, progress).await?;
        let path = path.as_ref().to_path_buf();
        let key = key.to_owned();
        tokio::task::spawn_blocking(move || -> Result<(), Error> {
            let view = fetched.view();
            let mut parts = Vec::new();
            for i in 0..view.buffers().len() {
                parts.push(fetched.buffer(i).ok_or(Error::Limit("buffer"))?);
            }
            let mut w = hfile::create(&path, hurray_core::file::WriterOptions::default())?;
            w.write_tensor(&key, &view, &parts)?;
            w.finish(&[])?;
            Ok(())
        })
        .await
        .map_err(|_| Error::Limit("file task failed"))?
    }

    /// Pushes a tensor under `key`: its descriptor and its buffers (one
    /// slice per buffer of the table, each exactly its `byte_size`).
    ///
    /// # Errors
    /// The server refused ([`Error::Peer`]), the buffers do not match the
    /// descriptor, or the connection failed.
    pub async fn put(
        &mut self,
        key: &str,
        descriptor: &TensorView<'_>,
        buffers: &[&[u8]],
    ) -> Result<(), Error> {
        self.put_with(key, descriptor, buffers, &mut |_, _| {})
            .await
    }

    /// [`put`](Self::put), calling `progress(sent, total)` after each data
    /// frame is written.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub async fn put_with(
        &mut self,
        key: &str,
        descriptor: &TensorView<'_>,
        buffers: &[&[u8]],
        progress: &mut (dyn FnMut(u64, u64) + Send),
    ) -> Result<(), Error> {
        let sizes: Vec<u64> = descriptor.buffers().iter().map(|b| b.byte_size()).collect();
        if sizes.len() != buffers.len()
            || sizes.iter().zip(buffers).any(|(s, b)| *s != b.len() as u64)
        {
            return Err(Error::Limit("buffers do not match the descriptor"));
        }
        let total: u64 = sizes.iter().sum();
        let stream = self.stream();
        let put = TensorPut {
            key,
            descriptor: *descriptor,
            total_data_bytes: total,
        };
        if self.out.len() < put.encoded_len() + 12 {
            self.out.resize(put.encoded_len() + 12, 0);
        }
        let n = self.session.put(stream, &put, &mut self.out)?;
        self.wr.write_all(&self.out[..n]).await?;
        let chunk = (self.session.peer_max_message_size() - 8).min(1 << 20) as usize;
        let mut offset = 0u64;
        for b in buffers {
            for part in b.chunks(chunk) {
                let prefix = self
                    .session
                    .data_prefix(stream, offset, part.len() as u32)?;
                self.wr.write_all(&prefix).await?;
                self.wr.write_all(part).await?;
                offset += part.len() as u64;
                progress(offset, total);
            }
        }
        let now = self.now();
        let n = self.session.send_data_end(now, stream, &mut self.out)?;
        let (out, wr) = (&self.out, &mut self.wr);
        wr.write_all(&out[..n]).await?;
        self.flush().await?;
        loop {
            match self.next_event().await? {
                Ev::PutAck { stream: s } if s == stream => return Ok(()),
                Ev::PeerError {
                    stream: s,
                    code,
                    message,
                } if s == stream => {
                    return Err(Error::Peer { code, message });
                }
                Ev::StreamError(e) if e.stream_id == stream => return Err(Error::Protocol(e)),
                _ => {}
            }
        }
    }

    /// Pushes tensor `name` of the `.hrry` file at `path` under `key`.
    ///
    /// # Errors
    /// The file is invalid or lacks `name`, or as [`put`](Self::put).
    pub async fn put_from_file(
        &mut self,
        path: impl AsRef<Path>,
        name: &str,
        key: &str,
    ) -> Result<(), Error> {
        self.put_from_file_with(path, name, key, &mut |_, _| {})
            .await
    }

    /// [`put_from_file`](Self::put_from_file) with a progress callback (as
    /// [`put_with`](Self::put_with)).
    ///
    /// # Errors
    /// As [`put_from_file`](Self::put_from_file).
    pub async fn put_from_file_with(
        &mut self,
        path: impl AsRef<Path>,
        name: &str,
        key: &str,
        progress: &mut (dyn FnMut(u64, u64) + Send),
    ) -> Result<(), Error> {
        let mut file = hfile::open(path.as_ref())?;
        let (descriptor, data) = {
            let view = file.view().map_err(hfile::Error::from)?;
            let t = view
                .index()
                .get(name)
                .map_err(hfile::Error::from)?
                .ok_or(Error::Limit("no tensor of that name in the file"))?;
            let parts: Vec<Vec<u8>> = t.buffers().map(<[u8]>::to_vec).collect();
            (t.descriptor().as_bytes().to_vec(), parts)
        };
        let view = TensorView::parse(&descriptor).map_err(|_| Error::Limit("descriptor"))?;
        let parts: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        self.put_with(key, &view, &parts, progress).await
    }

    /// Sends `PING` and waits for its `PONG`.
    ///
    /// # Errors
    /// No answer within the request timeout, or the connection failed.
    pub async fn ping(&mut self) -> Result<(), Error> {
        let token = self.now() ^ 0x5EED;
        let now = self.now();
        let n = self.session.send_ping(now, token, &mut self.out)?;
        let (out, wr) = (&self.out, &mut self.wr);
        wr.write_all(&out[..n]).await?;
        self.flush().await?;
        loop {
            if let Ev::Pong = self.next_event().await? {
                return Ok(());
            }
        }
    }
}

/// Runs the TLS handshake when the options ask for TLS.
async fn secure(stream: TcpStream, options: &ClientOptions) -> Result<Io, Error> {
    #[cfg(feature = "tls")]
    if let Some(tls) = &options.tls {
        let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::clone(&tls.config));
        let handshake = connector.connect(tls.server_name.clone(), stream);
        return match tokio::time::timeout(options.handshake_timeout, handshake).await {
            Ok(Ok(s)) => Ok(Box::new(s)),
            Ok(Err(e)) => Err(Error::Tls(format!("handshake: {e}"))),
            Err(_) => Err(Error::Timeout),
        };
    }
    let _ = options;
    Ok(Box::new(stream))
}

/// A session event with what it borrowed copied out.
enum Ev {
    Connected,
    Descriptor {
        stream: u32,
        descriptor: Vec<u8>,
        total: u64,
        index: u32,
        shards: u32,
    },
    Data {
        stream: u32,
        bytes: Vec<u8>,
    },
    DataEnd {
        stream: u32,
        complete: bool,
    },
    PutAck {
        stream: u32,
    },
    PeerError {
        stream: u32,
        code: ErrorCode,
        message: String,
    },
    StreamError(hurray_core::net::SessionError),
    Pong,
    Other,
}

impl From<ClientEvent<'_>> for Ev {
    fn from(e: ClientEvent<'_>) -> Self {
        match e {
            ClientEvent::Connected(_) => Self::Connected,
            ClientEvent::Descriptor {
                stream_id, message, ..
            } => Self::Descriptor {
                stream: stream_id,
                descriptor: message.descriptor.as_bytes().to_vec(),
                total: message.total_data_bytes,
                index: message.shard_index,
                shards: message.total_shards,
            },
            ClientEvent::Data {
                stream_id, frame, ..
            } => Self::Data {
                stream: stream_id,
                bytes: frame.data.to_vec(),
            },
            ClientEvent::DataEnd {
                stream_id,
                request_complete,
                ..
            } => Self::DataEnd {
                stream: stream_id,
                complete: request_complete,
            },
            ClientEvent::PutAck { stream_id } => Self::PutAck { stream: stream_id },
            ClientEvent::PeerError { stream_id, error } => Self::PeerError {
                stream: stream_id,
                code: error.code,
                message: error.text.to_owned(),
            },
            ClientEvent::StreamError(e) => Self::StreamError(e),
            ClientEvent::Pong(_) => Self::Pong,
            _ => Self::Other,
        }
    }
}

// --- parallel transfers ([NP-SHARD-2..4]) ------------------------------------

/// One shard that arrived: its descriptor and transport fields.
#[derive(Debug, Clone)]
struct Arrived {
    descriptor: Vec<u8>,
    total: u64,
    index: u32,
    shards: u32,
}

/// Why a descriptor cannot be taken.
#[derive(Debug)]
enum Fault {
    /// The shards do not form one tensor (`SHARD_MISMATCH`).
    Mismatch(String),
    /// A composite head: its members would follow on the stream; these
    /// fetches take one tensor (`Client::get` takes the head).
    Composite,
    /// Larger than `max_fetch_bytes`.
    TooLarge,
    /// The destination could not be made (a file, memory).
    Local(Error),
}

impl From<&str> for Fault {
    fn from(s: &str) -> Self {
        Self::Mismatch(s.to_owned())
    }
}

impl From<String> for Fault {
    fn from(s: String) -> Self {
        Self::Mismatch(s)
    }
}

/// The shards of one tensor, from one connection or several, placed into
/// one destination allocated when the first descriptor arrives.
struct Assembly {
    state: Mutex<Option<(Parent, Arc<dyn Destination>)>>,
    make: MakeDest,
    arrived: Mutex<Vec<Arrived>>,
    received: AtomicU64,
    max_bytes: u64,
}

type MakeDest = Box<dyn Fn(&Parent) -> Result<Arc<dyn Destination>, Error> + Send + Sync>;

impl Assembly {
    fn new(max_bytes: u64, make: MakeDest) -> Self {
        Self {
            state: Mutex::new(None),
            make,
            arrived: Mutex::new(Vec::new()),
            received: AtomicU64::new(0),
            max_bytes,
        }
    }

    fn parent(&self) -> Option<(Parent, Arc<dyn Destination>)> {
        self.state.lock().ok()?.clone()
    }

    /// Takes a descriptor: allocates the destination for the first, checks
    /// every one against it and against the shards already in; once all
    /// are in, checks that they tile the parent (`check_shards`).
    fn on_descriptor(&self, a: Arrived) -> Result<Placement, Fault> {
        let view = TensorView::parse(&a.descriptor).map_err(|e| e.to_string())?;
        if matches!(view.layout(), hurray_core::Layout::Composite(_)) {
            return Err(Fault::Composite);
        }
        let (parent, _) = {
            let mut st = self.state.lock().map_err(|_| Fault::from("poisoned"))?;
            if st.is_none() {
                let p = Parent::of(&view, a.total, a.shards).map_err(|e| e.to_string())?;
                if p.total > self.max_bytes {
                    return Err(Fault::TooLarge);
                }
                let dest = (self.make)(&p).map_err(Fault::Local)?;
                *st = Some((p, dest));
            }
            st.clone().ok_or(Fault::from("no parent"))?
        };
        let placement = parent
            .placement(&view, a.total)
            .map_err(|()| Fault::from("shard does not belong to the first shard's parent"))?;
        let mut arrived = self.arrived.lock().map_err(|_| Fault::from("poisoned"))?;
        if arrived
            .iter()
            .any(|o| o.shards != a.shards || o.index == a.index)
        {
            return Err(Fault::from(
                "shards disagree on total_shards or repeat an index",
            ));
        }
        arrived.push(a);
        // One shard is the whole tensor (it may itself be a stored shard:
        // its section then describes where it came from, not a tiling).
        if arrived.len() as u32 == arrived[0].shards && arrived[0].shards > 1 {
            let views: Vec<TensorView<'_>> = arrived
                .iter()
                .map(|s| TensorView::parse(&s.descriptor))
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?;
            let messages: Vec<DescriptorMessage<'_>> = views
                .iter()
                .zip(arrived.iter())
                .map(|(v, s)| DescriptorMessage {
                    descriptor: *v,
                    total_data_bytes: s.total,
                    shard_index: s.index,
                    total_shards: s.shards,
                })
                .collect();
            check_shards(&messages).map_err(|e| e.to_string())?;
        }
        Ok(placement)
    }

    /// The tensor, once every shard has arrived and ended.
    fn finish(&self) -> Result<(Parent, Arc<dyn Destination>), Error> {
        let arrived = self.arrived.lock().map_err(|_| Error::Limit("poisoned"))?;
        let expected = arrived.first().map_or(0, |a| a.shards);
        if expected == 0 || arrived.len() as u32 != expected {
            return Err(Error::ShardMismatch(format!(
                "{} of {expected} shards arrived",
                arrived.len()
            )));
        }
        self.parent().ok_or(Error::Closed)
    }
}

impl Client {
    /// A free parallel request id (a multiple of 256, [NP-SHARD-2]).
    fn block_stream(&mut self) -> u32 {
        let s = (self.next_stream.wrapping_add(255) & !255).max(256);
        self.next_stream = s.wrapping_add(256).max(1);
        s
    }

    /// Sends a parallel request for `key` (with `select`, if any) and
    /// receives its shards into `asm` until the request is complete.
    async fn receive(
        &mut self,
        key: &str,
        select: Option<ShardSelect>,
        asm: &Assembly,
        first_descriptor: Option<&tokio::sync::Notify>,
        progress: &mut (dyn FnMut(u64, u64) + Send),
    ) -> Result<(), Error> {
        let stream = self.block_stream();
        let entry = select.map(|s| s.entry());
        let layouts = match &entry {
            Some(e) => LayoutList::parse(1, e).map_err(|_| Error::Limit("selection"))?,
            None => LayoutList::EMPTY,
        };
        let request = TensorRequest {
            key,
            preferred_layouts: layouts,
            preferred_device: 0x00,
            min_alignment: 64,
            flags: RequestFlags::PARALLEL_OK,
        };
        let now = self.now();
        let n = self.session.request(now, stream, &request, &mut self.out)?;
        let (out, wr) = (&self.out, &mut self.wr);
        wr.write_all(&out[..n]).await?;
        self.flush().await?;
        let mut places: HashMap<u32, Placement> = HashMap::new();
        let fault: Fault;
        loop {
            let mut put = |s: u32, offset: u64, bytes: &[u8]| -> Result<bool, Error> {
                if s & !255 != stream {
                    return Ok(false);
                }
                let (Some(p), Some((_, dest))) = (places.get(&s), asm.parent()) else {
                    return Ok(false);
                };
                p.scatter(offset, bytes, &mut |at, b| dest.write_at(at, b))?;
                asm.received
                    .fetch_add(bytes.len() as u64, Ordering::Relaxed);
                Ok(true)
            };
            let ev = self.next_event_into(Some(&mut put)).await?;
            let total = asm.parent().map_or(0, |(p, _)| p.total);
            progress(asm.received.load(Ordering::Relaxed), total);
            match ev {
                Ev::Descriptor {
                    stream: s,
                    descriptor,
                    total,
                    index,
                    shards,
                } if s & !255 == stream => {
                    let a = Arrived {
                        descriptor,
                        total,
                        index,
                        shards,
                    };
                    match asm.on_descriptor(a) {
                        Ok(p) => {
                            places.insert(s, p);
                            if let Some(n) = first_descriptor {
                                n.notify_one();
                            }
                        }
                        Err(f) => {
                            fault = f;
                            break;
                        }
                    }
                }
                Ev::DataEnd {
                    stream: s,
                    complete: true,
                } if s & !255 == stream => return Ok(()),
                Ev::PeerError {
                    stream: s,
                    code,
                    message,
                } if s & !255 == stream => return Err(Error::Peer { code, message }),
                Ev::StreamError(e) if e.stream_id & !255 == stream => {
                    return Err(Error::Protocol(e));
                }
                _ => {}
            }
        }
        // [NP-SHARD-3]: SHARD_MISMATCH on the request's stream closes it
        // and every shard stream; the other faults abandon it the same way.
        let (code, text, error) = match fault {
            Fault::Mismatch(why) => (
                ErrorCode::ShardMismatch,
                "shards do not tile the tensor",
                Error::ShardMismatch(why),
            ),
            Fault::Composite => (
                ErrorCode::LayoutUnavailable,
                "this fetch takes one tensor, not a composite",
                Error::Limit(
                    "a composite tensor: fetch it with Client::get, or its members by name",
                ),
            ),
            Fault::TooLarge => (
                ErrorCode::Busy,
                "tensor larger than this client fetches",
                Error::Limit("tensor larger than max_fetch_bytes"),
            ),
            Fault::Local(e) => (ErrorCode::Internal, "the client cannot store the tensor", e),
        };
        let n = self.session.send_error(stream, code, text, &mut self.out)?;
        let (out, wr) = (&self.out, &mut self.wr);
        wr.write_all(&out[..n]).await?;
        self.flush().await?;
        Err(error)
    }

    /// Fetches `key` as a parallel request on this connection (the server
    /// may answer in shards, [NP-SHARD-2]), placing every shard's bytes
    /// straight into one buffer of the tensor's size.
    ///
    /// The shards are checked as they arrive and, once all are in, proven
    /// to tile the tensor; any fault is [`Error::ShardMismatch`] (and
    /// `SHARD_MISMATCH` is sent). A sharded tensor comes back as a dense
    /// tensor of the parent shape (element type, layout and extension type
    /// of the shards; shard statistics are dropped).
    ///
    /// # Errors
    /// As [`get`](Self::get), and [`Error::ShardMismatch`].
    pub async fn get_parallel(&mut self, key: &str) -> Result<Fetched, Error> {
        let (asm, slot) = memory_assembly(self.options.max_fetch_bytes);
        self.receive(key, None, &asm, None, &mut |_, _| {}).await?;
        into_fetched(&asm, &slot)
    }
}

/// Where a memory destination is kept for [`into_fetched`].
type MemorySlot = Arc<Mutex<Option<Arc<Memory>>>>;

fn memory_assembly(max: u64) -> (Assembly, MemorySlot) {
    let slot: MemorySlot = Arc::new(Mutex::new(None));
    let keep = Arc::clone(&slot);
    let asm = Assembly::new(
        max,
        Box::new(move |p: &Parent| {
            let n = usize::try_from(p.total).map_err(|_| Error::Limit("tensor size"))?;
            let m = Arc::new(Memory(Mutex::new(prefaulted(n))));
            if let Ok(mut k) = keep.lock() {
                *k = Some(Arc::clone(&m));
            }
            Ok(m as Arc<dyn Destination>)
        }),
    );
    (asm, slot)
}

/// A zeroed vector of `n` bytes whose pages are already mapped: touched by
/// several threads at once when it is large. A fresh allocation's pages
/// are mapped on first write, and the connections of a parallel fetch
/// write under one lock, so their page faults would otherwise be taken one
/// at a time; on the 16-core H200 host they bounded a 1 GiB fetch over 4
/// connections to the speed of one.
fn prefaulted(n: usize) -> Vec<u8> {
    const PAGE: usize = 4096;
    const PER_THREAD: usize = 64 << 20;
    let mut v = vec![0u8; n];
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(n / PER_THREAD);
    if threads > 1 {
        let per = n.div_ceil(threads).next_multiple_of(PAGE);
        std::thread::scope(|s| {
            for part in v.chunks_mut(per) {
                s.spawn(move || {
                    for page in part.chunks_mut(PAGE) {
                        // A write the compiler cannot drop (the allocation is
                        // known to be zeroed), so the page is mapped now.
                        page[0] = std::hint::black_box(0);
                    }
                });
            }
        });
    }
    v
}

fn into_fetched(asm: &Assembly, slot: &MemorySlot) -> Result<Fetched, Error> {
    let (parent, dest) = asm.finish()?;
    drop(dest);
    drop(asm.state.lock().map(|mut s| s.take()));
    let memory = slot
        .lock()
        .ok()
        .and_then(|mut s| s.take())
        .ok_or(Error::Closed)?;
    let memory = Arc::into_inner(memory).ok_or(Error::Limit("destination still shared"))?;
    let data = memory
        .0
        .into_inner()
        .map_err(|_| Error::Limit("poisoned"))?;
    Ok(Fetched {
        descriptor: parent.descriptor,
        data,
    })
}

/// Fetches `key` from the server at `addr` over `connections` connections
/// at once: connection `k` asks for shard `k` of exactly `connections`
/// ([NP-SHARD-4]), each shard placed straight into one buffer. Connection 0
/// asks first; the others connect only once shard 0 says the tensor was
/// cut (a server that does not honour selections, or a tensor that cannot
/// be cut, is fetched whole on connection 0).
///
/// ```no_run
/// # async fn demo() -> Result<(), hurray_net::Error> {
/// let addr = "127.0.0.1:7878".parse().unwrap();
/// let options = hurray_net::ClientOptions::default();
/// let t = hurray_net::fetch_parallel(addr, options, "layer0.weight", 4).await?;
/// println!("{} bytes", t.data.len());
/// # Ok(()) }
/// ```
///
/// # Errors
/// As [`Client::get_parallel`], from any connection.
pub async fn fetch_parallel(
    addr: SocketAddr,
    options: ClientOptions,
    key: &str,
    connections: u16,
) -> Result<Fetched, Error> {
    let (asm, slot) = memory_assembly(options.max_fetch_bytes);
    let asm = Arc::new(asm);
    fetch_into(addr, options, key, connections, &asm, &mut |_, _| {}).await?;
    into_fetched(&asm, &slot)
}

/// [`fetch_parallel`] into a new one-tensor `.hrry` file at `path` (the
/// tensor named `key`): the file is written whole first, under a temporary
/// name, with its data as holes; every shard's bytes are written in place;
/// it is synced and renamed only once every shard checked out. On any
/// error nothing is left under `path` or the temporary name.
///
/// # Errors
/// As [`fetch_parallel`], or writing the file failed.
pub async fn fetch_parallel_to_file(
    addr: SocketAddr,
    options: ClientOptions,
    key: &str,
    connections: u16,
    path: impl AsRef<Path>,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<(), Error> {
    let path = path.as_ref().to_path_buf();
    let name = key.to_owned();
    let file: Arc<Mutex<Option<Arc<OutFile>>>> = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&file);
    let asm = Arc::new(Assembly::new(
        options.max_fetch_bytes,
        Box::new(move |p: &Parent| {
            let f = Arc::new(OutFile::create(&path, &name, &p.descriptor)?);
            if let Ok(mut s) = slot.lock() {
                *s = Some(Arc::clone(&f));
            }
            Ok(f as Arc<dyn Destination>)
        }),
    ));
    let r = fetch_into(addr, options, key, connections, &asm, progress).await;
    let r = r.and_then(|()| asm.finish().map(drop));
    // Every other holder of the file goes first.
    drop(asm.state.lock().map(|mut s| s.take()));
    let out = file.lock().ok().and_then(|mut s| s.take());
    match (r, out) {
        (Ok(()), Some(f)) => {
            let f = Arc::into_inner(f).ok_or(Error::Limit("file still shared"))?;
            tokio::task::spawn_blocking(move || f.commit())
                .await
                .map_err(|_| Error::Limit("file task failed"))?
        }
        (Ok(()), None) => Err(Error::Closed),
        // Dropping the file removes its temporary name.
        (Err(e), _) => Err(e),
    }
}

/// Makes the destination of [`fetch_parallel_with`] from the tensor's
/// descriptor and data size.
pub type MakeDestination =
    Box<dyn Fn(&[u8], u64) -> Result<Arc<dyn Destination>, Error> + Send + Sync>;

/// [`fetch_parallel`] into a destination of the caller's: `make` gets the
/// tensor's descriptor (for a sharded transfer: the dense parent the shards
/// tile) and its data size once the first descriptor is in (the size
/// already checked against [`ClientOptions::max_fetch_bytes`]), and returns
/// where the bytes go ([`Destination::write_at`] is called with offsets in
/// the tensor's data, every buffer back to back, from any connection's
/// task). Returns the descriptor once every shard arrived and checked out;
/// on an error the destination's content is undefined.
///
/// # Errors
/// As [`fetch_parallel`], or `make`'s error.
pub async fn fetch_parallel_with(
    addr: SocketAddr,
    options: ClientOptions,
    key: &str,
    connections: u16,
    make: MakeDestination,
) -> Result<Vec<u8>, Error> {
    let asm = Arc::new(Assembly::new(
        options.max_fetch_bytes,
        Box::new(move |p: &Parent| make(&p.descriptor, p.total)),
    ));
    fetch_into(addr, options, key, connections, &asm, &mut |_, _| {}).await?;
    let (parent, dest) = asm.finish()?;
    drop(dest);
    drop(asm.state.lock().map(|mut s| s.take()));
    Ok(parent.descriptor)
}

async fn fetch_into(
    addr: SocketAddr,
    options: ClientOptions,
    key: &str,
    connections: u16,
    asm: &Arc<Assembly>,
    progress: &mut (dyn FnMut(u64, u64) + Send),
) -> Result<(), Error> {
    let mut first = Client::connect(addr, options.clone()).await?;
    let count = connections.clamp(1, 256);
    let select = match first.session.peer_select_max() {
        Some(max) if count > 1 && count <= max => ShardSelect::new(0, count),
        _ => None,
    };
    let Some(select) = select else {
        return first.receive(key, None, asm, None, progress).await;
    };
    // Connection 0 runs in this task; the others start once shard 0's
    // descriptor says the tensor was cut into `count` shards.
    let notify = Arc::new(tokio::sync::Notify::new());
    let failed = std::sync::atomic::AtomicBool::new(false);
    let zero = async {
        let r = first
            .receive(key, Some(select), asm, Some(&notify), progress)
            .await;
        if r.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        // Wakes the others' starter even when shard 0 never came.
        notify.notify_one();
        r
    };
    let others = async {
        notify.notified().await;
        let cut = !failed.load(Ordering::Relaxed)
            && asm
                .arrived
                .lock()
                .map(|a| a.first().is_some_and(|s| s.shards == u32::from(count)))
                .unwrap_or(false);
        if !cut {
            return Ok(());
        }
        let mut tasks = tokio::task::JoinSet::new();
        for k in 1..count {
            let (asm, options, key) = (Arc::clone(asm), options.clone(), key.to_owned());
            tasks.spawn(async move {
                let mut c = Client::connect(addr, options).await?;
                let sel = ShardSelect::new(k, count).ok_or(Error::Limit("selection"))?;
                c.receive(&key, Some(sel), &asm, None, &mut |_, _| {}).await
            });
        }
        let mut result = Ok(());
        while let Some(r) = tasks.join_next().await {
            let r = r.map_err(|_| Error::Limit("connection task failed"))?;
            if result.is_ok() {
                result = r;
            }
        }
        result
    };
    let (a, b) = tokio::join!(zero, others);
    a?;
    b
}
