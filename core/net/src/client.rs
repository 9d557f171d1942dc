//! The client: one connection, one [`ClientSession`], requests and puts
//! one at a time (each on a fresh stream id).

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use hurray_core::TensorView;
use hurray_core::net::{
    Capabilities, ClientConfig, ClientEvent, ClientSession, ErrorCode, Hello, LayoutList,
    PROTOCOL_VERSION, RequestFlags, Status, TensorPut, TensorRequest,
};
use hurray_io::file as hfile;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::conn::{Inbox, Io, Read, Reader, Writer};
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
    async fn next_event_into(
        &mut self,
        mut sink: Option<(u32, &mut Vec<u8>)>,
    ) -> Result<Ev, Error> {
        loop {
            let now = self.now();
            match self.session.handle(now, self.inbox.pending()) {
                Ok(Status::Complete((event, used))) => {
                    let ev = match (event, sink.as_mut()) {
                        (
                            ClientEvent::Data {
                                stream_id, frame, ..
                            },
                            Some((s, data)),
                        ) if stream_id == *s => {
                            data.extend_from_slice(frame.data);
                            Ev::Other
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
        let stream = self.stream();
        let request = TensorRequest {
            key,
            preferred_layouts: LayoutList::EMPTY,
            preferred_device: 0x00,
            min_alignment: 64,
            flags: RequestFlags::NONE,
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
            let sink = fetched.as_mut().map(|f| (stream, &mut f.data));
            match self.next_event_into(sink).await? {
                Ev::Descriptor {
                    stream: s,
                    descriptor,
                    total: announced,
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
