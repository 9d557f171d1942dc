//! The server: accepts connections (up to a cap), drives one
//! [`ServerSession`] per connection, serves tensors of `.hrry` files and of
//! the store, and stores puts.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hurray_core::TensorView;
use hurray_core::net::{
    Capabilities, DescriptorMessage, ErrorCode, Hello, LayoutList, PROTOCOL_VERSION, RequestFlags,
    SHARD_SELECT_ENTRY_LEN, ServerConfig, ServerEvent, ServerSession, ShardSelect, Status,
    TensorPut, TensorRequest,
};
use hurray_io::file::{self as hfile, MappedFile};
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tracing::{debug, info, warn};

use crate::conn::{Inbox, Io, Read, Writer};
use crate::store::key_to_file_name;
use crate::{AUTH_MAGIC, Error, MAX_TOKEN_LEN};

/// Streams one connection may have open.
const STREAMS: usize = 16;

/// How a [`Server`] behaves.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// Largest payload accepted (and announced), in bytes.
    pub max_message_size: u32,
    /// Connections served at once; more are answered `BUSY` and closed.
    pub max_connections: usize,
    /// Largest tensor a put may carry (held in memory until stored).
    pub max_put_bytes: u64,
    /// Time from accept to `CLIENT_HELLO`.
    pub handshake_timeout: Duration,
    /// Time between two messages.
    pub idle_timeout: Duration,
    /// Time between two messages of a put, and for each write of an answer.
    pub request_timeout: Duration,
    /// How long [`Server::run`] waits for connections after shutdown.
    pub grace: Duration,
    /// Where puts are stored; `None` refuses every put (`UNAUTHORIZED`).
    pub store: Option<PathBuf>,
    /// The access token clients must present (see the crate docs).
    pub token: Option<Vec<u8>>,
    /// Advertise `PARALLEL_STREAMS` and shard selections
    /// (`[NP-SHARD-2]`, `[NP-SHARD-4]`), and answer parallel requests in
    /// shards where the tensor can be cut without a copy.
    pub parallel: bool,
    /// Shards of a parallel request that carries no selection (2 to 256;
    /// fewer when the tensor's slowest axis is shorter).
    pub parallel_shards: u16,
    /// Tensors smaller than this are sent whole to a parallel request that
    /// carries no selection.
    pub shard_min_bytes: u64,
    /// Largest tensor transcoded (row-major ↔ column-major, strided →
    /// either) for a client that allows it ([NP-LAYOUT-2]); 0 turns
    /// transcoding off (and `TRANSCODING` is not advertised).
    pub transcode_max_bytes: u64,
    /// Serve over TLS with this configuration (`tls::server_config`; a
    /// client CA in it makes client certificates required).
    #[cfg(feature = "tls")]
    pub tls: Option<Arc<crate::tls::rustls::ServerConfig>>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            max_message_size: 1 << 20,
            max_connections: 256,
            max_put_bytes: 1 << 30,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(30),
            grace: Duration::from_secs(30),
            store: None,
            token: None,
            parallel: true,
            parallel_shards: 4,
            shard_min_bytes: 16 << 20,
            transcode_max_bytes: 256 << 20,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

/// Counters a user can read while the server runs.
#[derive(Debug, Default)]
pub struct Counters {
    /// Connections accepted and served.
    pub connections: AtomicU64,
    /// Connections refused because the cap was reached.
    pub refused: AtomicU64,
    /// Connections open now.
    pub open: AtomicU64,
    /// Tensors served.
    pub served: AtomicU64,
    /// Tensors stored.
    pub stored: AtomicU64,
    /// Bytes received (whole messages).
    pub bytes_in: AtomicU64,
    /// Bytes sent.
    pub bytes_out: AtomicU64,
    /// Connections closed by a timeout.
    pub timeouts: AtomicU64,
    /// Connections refused before the protocol: a failed TLS handshake (a
    /// plaintext client, a missing or untrusted client certificate) or a
    /// missing or wrong token.
    pub unauthenticated: AtomicU64,
    /// `ERROR`s sent, by code: index `code` for 1–8, `9 + (code - 0xF0)`
    /// for 0xF0–0xF3, 0 for any other.
    pub errors: [AtomicU64; 13],
}

impl Counters {
    fn error(&self, code: ErrorCode) {
        let c = code.code();
        let i = match c {
            1..=8 => c as usize,
            0xF0..=0xF3 => 9 + (c - 0xF0) as usize,
            _ => 0,
        };
        self.errors[i].fetch_add(1, Ordering::Relaxed);
    }

    /// `ERROR`s sent with `code`.
    #[must_use]
    pub fn errors_sent(&self, code: ErrorCode) -> u64 {
        let c = code.code();
        let i = match c {
            1..=8 => c as usize,
            0xF0..=0xF3 => 9 + (c - 0xF0) as usize,
            _ => 0,
        };
        self.errors[i].load(Ordering::Relaxed)
    }
}

struct Shared {
    options: ServerOptions,
    files: Vec<MappedFile>,
    /// Tensor name → index into `files`.
    names: HashMap<String, usize>,
    counters: Arc<Counters>,
}

/// A bound server, ready to [`run`](Self::run).
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.listener.local_addr().ok())
            .field("tensors", &self.shared.names.len())
            .finish()
    }
}

/// Our hello's layout lists: the layouts we transcode to ([NP-LAYOUT-2])
/// and "selections of up to 256 shards" ([NP-SHARD-4]).
static LAYOUTS_BOTH: [u8; 2 + SHARD_SELECT_ENTRY_LEN] = {
    let mut l = [0u8; 2 + SHARD_SELECT_ENTRY_LEN];
    l[0] = crate::transcode::TARGETS[0];
    l[1] = crate::transcode::TARGETS[1];
    let e = match ShardSelect::advertise(256) {
        Some(s) => s.entry(),
        None => [0; SHARD_SELECT_ENTRY_LEN],
    };
    let mut i = 0;
    while i < SHARD_SELECT_ENTRY_LEN {
        l[2 + i] = e[i];
        i += 1;
    }
    l
};

fn hello_for(max: u32, parallel: bool, transcode: bool) -> Hello<'static> {
    let mut capabilities = Capabilities::NONE;
    let (count, bytes): (u16, &'static [u8]) = match (transcode, parallel) {
        (true, true) => (3, &LAYOUTS_BOTH),
        (true, false) => (2, &LAYOUTS_BOTH[..2]),
        (false, true) => (1, &LAYOUTS_BOTH[2..]),
        (false, false) => (0, &[]),
    };
    if parallel {
        capabilities = capabilities.union(Capabilities::PARALLEL_STREAMS);
    }
    if transcode {
        capabilities = capabilities.union(Capabilities::TRANSCODING);
    }
    Hello {
        protocol_version: PROTOCOL_VERSION,
        max_message_size: max,
        capabilities,
        layouts: LayoutList::parse(count, bytes).unwrap_or(LayoutList::EMPTY),
        devices: &[0x00],
        memory_classes: &[0x00],
    }
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl Server {
    /// Opens and fully validates every file of `files` (CRC, every
    /// descriptor), indexes their tensors by name (a name in two files is
    /// an error), creates the store directory if one is set, and binds
    /// `addr`.
    ///
    /// # Errors
    /// A file is invalid or cannot be opened, a name repeats, or the
    /// address cannot be bound.
    pub async fn bind(
        addr: SocketAddr,
        options: ServerOptions,
        files: &[impl AsRef<Path>],
    ) -> Result<Self, Error> {
        let mut mapped = Vec::new();
        let mut names = HashMap::new();
        for (i, path) in files.iter().enumerate() {
            let mut f = hfile::open(path.as_ref())?;
            let view = f.view().map_err(hfile::Error::from)?;
            for t in view.index().iter() {
                let t = t.map_err(hfile::Error::from)?;
                if names.insert(t.name().to_owned(), i).is_some() {
                    return Err(Error::Limit("a tensor name appears in two served files"));
                }
            }
            mapped.push(f);
        }
        if let Some(store) = &options.store {
            std::fs::create_dir_all(store)?;
        }
        let listener = TcpListener::bind(addr).await?;
        info!(%addr, tensors = names.len(), "hurray server bound");
        Ok(Self {
            listener,
            shared: Arc::new(Shared {
                options,
                files: mapped,
                names,
                counters: Arc::new(Counters::default()),
            }),
        })
    }

    /// The address the server listens on.
    ///
    /// # Panics
    /// Never in practice: a bound listener has an address.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The server's counters (shared; they keep counting while it runs).
    #[must_use]
    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.shared.counters)
    }

    /// Serves until `shutdown` completes, then stops accepting, lets every
    /// connection finish what it is doing (up to [`ServerOptions::grace`])
    /// and returns.
    ///
    /// # Errors
    /// Accepting failed for a reason other than a transient one.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), Error> {
        let permits = Arc::new(Semaphore::new(self.shared.options.max_connections));
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => {
                    let (stream, peer) = match accepted {
                        Ok(a) => a,
                        Err(e) => { warn!(error = %e, "accept failed"); continue; }
                    };
                    let shared = Arc::clone(&self.shared);
                    match Arc::clone(&permits).try_acquire_owned() {
                        Ok(permit) => {
                            shared.counters.connections.fetch_add(1, Ordering::Relaxed);
                            let stop = stop_rx.clone();
                            tasks.spawn(async move {
                                shared.counters.open.fetch_add(1, Ordering::Relaxed);
                                let r = serve(stream, &shared, stop).await;
                                shared.counters.open.fetch_sub(1, Ordering::Relaxed);
                                if let Err(e) = r {
                                    debug!(%peer, error = %e, "connection ended");
                                }
                                drop(permit);
                            });
                        }
                        Err(_) => {
                            shared.counters.refused.fetch_add(1, Ordering::Relaxed);
                            tasks.spawn(async move { refuse(stream, &shared).await; });
                        }
                    }
                    // Reap finished tasks so the set stays small.
                    while tasks.try_join_next().is_some() {}
                }
            }
        }
        info!("hurray server shutting down");
        let _ = stop_tx.send(true);
        drop(self.listener);
        let grace = self.shared.options.grace;
        let _ =
            tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} }).await;
        tasks.abort_all();
        Ok(())
    }
}

/// Answers a connection over the cap with `ERROR` `BUSY` and closes it.
async fn refuse(mut stream: TcpStream, shared: &Shared) {
    let mut out = [0u8; 64];
    let msg = hurray_core::net::Message::Error(hurray_core::net::ErrorMessage {
        code: ErrorCode::Busy,
        text: "too many connections",
    });
    if let Ok(n) = msg.encode(0, &mut out) {
        shared.counters.error(ErrorCode::Busy);
        let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(&out[..n])).await;
    }
    let _ = stream.shutdown().await;
}

/// A put being received.
struct Put {
    key: String,
    descriptor: Vec<u8>,
    data: Vec<u8>,
}

/// Writes with the request timeout; counts the bytes.
async fn send<W: AsyncWrite + Unpin>(
    wr: &mut W,
    shared: &Shared,
    bytes: &[u8],
) -> Result<(), Error> {
    match tokio::time::timeout(shared.options.request_timeout, wr.write_all(bytes)).await {
        Ok(r) => r?,
        Err(_) => return Err(Error::Timeout),
    }
    shared
        .counters
        .bytes_out
        .fetch_add(bytes.len() as u64, Ordering::Relaxed);
    Ok(())
}

async fn flush_control(
    session: &mut ServerSession<'static, STREAMS>,
    wr: &mut Writer,
    shared: &Shared,
) -> Result<(), Error> {
    let mut out = vec![0u8; session.max_control_len()];
    let mut any = false;
    while let Some(n) = session.poll_transmit(&mut out)? {
        if out[0] == 9 {
            let code = u32::from_le_bytes([out[12], out[13], out[14], out[15]]);
            shared.counters.error(ErrorCode::from_code(code));
        }
        send(wr, shared, &out[..n]).await?;
        any = true;
    }
    if any {
        match tokio::time::timeout(shared.options.request_timeout, wr.flush()).await {
            Ok(r) => r?,
            Err(_) => return Err(Error::Timeout),
        }
    }
    Ok(())
}

/// Runs the TLS handshake when the server has TLS (within the handshake
/// timeout); `None` when it failed (the connection is then dropped).
async fn secure(stream: TcpStream, shared: &Shared) -> Result<Option<Io>, Error> {
    #[cfg(feature = "tls")]
    if let Some(config) = &shared.options.tls {
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::clone(config));
        return match tokio::time::timeout(shared.options.handshake_timeout, acceptor.accept(stream))
            .await
        {
            Ok(Ok(tls)) => Ok(Some(Box::new(tls))),
            Ok(Err(e)) => {
                warn!(error = %e, "TLS handshake failed");
                Ok(None)
            }
            Err(_) => Err(Error::Timeout),
        };
    }
    let _ = shared;
    Ok(Some(Box::new(stream)))
}

/// Reads and checks the token preamble.
async fn authenticate(stream: &mut Io, shared: &Shared) -> Result<bool, Error> {
    let Some(token) = &shared.options.token else {
        return Ok(true);
    };
    let read = async {
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await?;
        let len = u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize;
        if head[..8] != AUTH_MAGIC || len > MAX_TOKEN_LEN {
            return Ok::<_, std::io::Error>(false);
        }
        let mut got = vec![0u8; len];
        stream.read_exact(&mut got).await?;
        // Compare without an early exit on the first differing byte.
        let same = got.len() == token.len()
            && got.iter().zip(token).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
        Ok(same)
    };
    match tokio::time::timeout(shared.options.handshake_timeout, read).await {
        Ok(Ok(ok)) => Ok(ok),
        Ok(Err(_)) => Ok(false),
        Err(_) => Err(Error::Timeout),
    }
}

/// One connection, start to end.
async fn serve(
    stream: TcpStream,
    shared: &Shared,
    mut stop: watch::Receiver<bool>,
) -> Result<(), Error> {
    let _ = stream.set_nodelay(true);
    let Some(mut stream) = secure(stream, shared).await? else {
        shared
            .counters
            .unauthenticated
            .fetch_add(1, Ordering::Relaxed);
        return Ok(());
    };
    if !authenticate(&mut stream, shared).await? {
        shared
            .counters
            .unauthenticated
            .fetch_add(1, Ordering::Relaxed);
        warn!("connection without a valid token refused");
        let mut out = [0u8; 64];
        let msg = hurray_core::net::Message::Error(hurray_core::net::ErrorMessage {
            code: ErrorCode::Unauthorized,
            text: "a valid access token is required",
        });
        let n = msg
            .encode(0, &mut out)
            .map_err(hurray_core::net::ApiMisuse::from)?;
        shared.counters.error(ErrorCode::Unauthorized);
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            stream.write_all(&out[..n]).await?;
            stream.flush().await?;
            stream.shutdown().await
        })
        .await;
        return Ok(());
    }
    let o = &shared.options;
    let config = ServerConfig {
        hello: hello_for(o.max_message_size, o.parallel, o.transcode_max_bytes > 0),
        handshake_timeout: ms(o.handshake_timeout),
        idle_timeout: ms(o.idle_timeout),
        request_timeout: ms(o.request_timeout),
    };
    let base = Instant::now();
    let now = || u64::try_from(base.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut session = ServerSession::<'static, STREAMS>::new(config, 0);
    let (mut rd, wr) = tokio::io::split(stream);
    let mut wr = BufWriter::with_capacity(256 << 10, wr);
    let mut inbox = Inbox::new(o.max_message_size as usize + 12);
    let mut puts: HashMap<u32, Put> = HashMap::new();
    let mut table = Vec::new();
    let mut out = vec![0u8; 64 << 10];
    loop {
        flush_control(&mut session, &mut wr, shared).await?;
        if session.is_closed() {
            break;
        }
        if *stop.borrow() && puts.is_empty() {
            debug!("closing an idle connection for shutdown");
            break;
        }
        let pending = inbox.pending();
        match session.handle(now(), pending) {
            Ok(Status::Complete((event, used))) => {
                shared
                    .counters
                    .bytes_in
                    .fetch_add(used as u64, Ordering::Relaxed);
                on_event(
                    event,
                    &mut session,
                    &mut wr,
                    shared,
                    &mut puts,
                    &mut table,
                    &mut out,
                )
                .await?;
                inbox.consume(used);
                // Answers go out now; a client waits for them.
                match tokio::time::timeout(o.request_timeout, wr.flush()).await {
                    Ok(r) => r?,
                    Err(_) => return Err(Error::Timeout),
                }
            }
            Ok(Status::Partial { needed }) => {
                let deadline = session
                    .poll_timeout()
                    .map(|t| base + Duration::from_millis(t.min(u64::MAX / 4)));
                let read = tokio::select! {
                    r = inbox.fill(&mut rd, needed, deadline) => r?,
                    _ = stop.changed() => continue,
                };
                match read {
                    Read::Bytes => {}
                    Read::Eof => break,
                    Read::Deadline => match session.handle_timeout(now()) {
                        Ok(Some(stream)) => {
                            puts.remove(&stream);
                        }
                        Ok(None) => {}
                        Err(e) => {
                            shared.counters.timeouts.fetch_add(1, Ordering::Relaxed);
                            flush_control(&mut session, &mut wr, shared).await?;
                            return Err(e.into());
                        }
                    },
                }
            }
            Err(e) => {
                warn!(error = %e, "closing a connection for a protocol violation");
                flush_control(&mut session, &mut wr, shared).await?;
                return Err(e.into());
            }
        }
    }
    let _ = wr.flush().await;
    // TLS: close_notify, so the peer can tell an end from a cut.
    let _ = tokio::time::timeout(Duration::from_secs(1), wr.shutdown()).await;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn on_event(
    event: ServerEvent<'_>,
    session: &mut ServerSession<'static, STREAMS>,
    wr: &mut Writer,
    shared: &Shared,
    puts: &mut HashMap<u32, Put>,
    table: &mut Vec<u32>,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    match event {
        ServerEvent::Request { stream_id, request } => {
            serve_request(stream_id, &request, session, wr, shared, table, out).await?;
        }
        ServerEvent::PutStart { stream_id, put } => {
            if let Err((code, text)) = start_put(&put, shared) {
                let n = session.send_error(stream_id, code, text, out)?;
                shared.counters.error(code);
                send(wr, shared, &out[..n]).await?;
            } else {
                puts.insert(
                    stream_id,
                    Put {
                        key: put.key.to_owned(),
                        descriptor: put.descriptor.as_bytes().to_vec(),
                        data: Vec::with_capacity(put.total_data_bytes as usize),
                    },
                );
            }
        }
        ServerEvent::PutData { stream_id, frame } => {
            if let Some(p) = puts.get_mut(&stream_id) {
                p.data.extend_from_slice(frame.data);
            }
        }
        ServerEvent::PutEnd { stream_id } => {
            if let Some(p) = puts.remove(&stream_id) {
                let result = store_put(p, shared).await;
                let n = match result {
                    Ok(()) => {
                        shared.counters.stored.fetch_add(1, Ordering::Relaxed);
                        session.send_put_ack(stream_id, out)?
                    }
                    Err(e) => {
                        warn!(error = %e, "storing a put failed");
                        shared.counters.error(ErrorCode::Internal);
                        session.send_error(
                            stream_id,
                            ErrorCode::Internal,
                            "storing the tensor failed",
                            out,
                        )?
                    }
                };
                send(wr, shared, &out[..n]).await?;
            }
        }
        ServerEvent::PeerError { stream_id, .. } => {
            puts.remove(&stream_id);
        }
        ServerEvent::StreamError(e) => {
            puts.remove(&e.stream_id);
        }
        _ => {}
    }
    Ok(())
}

/// Whether a put may start: a store, a key that maps to a file name, a size
/// under the limit.
fn start_put(put: &TensorPut<'_>, shared: &Shared) -> Result<(), (ErrorCode, &'static str)> {
    if shared.options.store.is_none() {
        return Err((ErrorCode::Unauthorized, "this server stores no tensors"));
    }
    if key_to_file_name(put.key).is_none() {
        return Err((ErrorCode::InvalidMessage, "key too long for the store"));
    }
    if put.total_data_bytes > shared.options.max_put_bytes {
        return Err((ErrorCode::Busy, "tensor larger than this server stores"));
    }
    Ok(())
}

/// Writes a complete put as a one-tensor `.hrry` file in the store: a
/// temporary name, synced, renamed (`hurray_io::file::create`).
async fn store_put(p: Put, shared: &Shared) -> Result<(), Error> {
    let (Some(store), Some(name)) = (shared.options.store.clone(), key_to_file_name(&p.key)) else {
        return Err(Error::Limit("no store"));
    };
    tokio::task::spawn_blocking(move || -> Result<(), Error> {
        let view = TensorView::parse(&p.descriptor).map_err(|_| Error::Limit("descriptor"))?;
        let mut parts = Vec::new();
        let mut at = 0usize;
        for b in view.buffers().iter() {
            let len = usize::try_from(b.byte_size()).map_err(|_| Error::Limit("buffer size"))?;
            parts.push(&p.data[at..at + len]);
            at += len;
        }
        let mut w = hfile::create(
            store.join(name),
            hurray_core::file::WriterOptions::default(),
        )?;
        w.write_tensor(&p.key, &view, &parts)?;
        w.finish(&[])?;
        Ok(())
    })
    .await
    .map_err(|_| Error::Limit("store task failed"))?
}

/// Serves `request`: from a served file, else from the store.
async fn serve_request(
    stream_id: u32,
    request: &TensorRequest<'_>,
    session: &mut ServerSession<'static, STREAMS>,
    wr: &mut Writer,
    shared: &Shared,
    table: &mut Vec<u32>,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    // A stored tensor is mapped for this request only.
    let mut stored = None;
    let bytes: &[u8] = match shared.names.get(request.key) {
        Some(&i) => shared.files[i].bytes(),
        None => {
            let path = shared
                .options
                .store
                .as_ref()
                .zip(key_to_file_name(request.key))
                .map(|(s, n)| s.join(n));
            match path.and_then(|p| hfile::open(p).ok()) {
                Some(f) => stored.insert(f).bytes(),
                None => {
                    return refuse_stream(
                        stream_id,
                        ErrorCode::UnknownTensor,
                        "no tensor has this key",
                        session,
                        wr,
                        shared,
                        out,
                    )
                    .await;
                }
            }
        }
    };
    let index = match hfile::index(bytes, table) {
        Ok(i) => i,
        Err(_) => {
            return refuse_stream(
                stream_id,
                ErrorCode::Internal,
                "stored file is invalid",
                session,
                wr,
                shared,
                out,
            )
            .await;
        }
    };
    let tensor = match index.get(request.key) {
        Ok(Some(t)) => t,
        _ => {
            return refuse_stream(
                stream_id,
                ErrorCode::UnknownTensor,
                "no tensor has this key",
                session,
                wr,
                shared,
                out,
            )
            .await;
        }
    };
    let view = *tensor.descriptor();
    let buffers: Vec<&[u8]> = tensor.buffers().collect();
    // [NP-LAYOUT-2]: native, or transcoded to the first preferred layout
    // we can produce within the limit.
    let limit = shared.options.transcode_max_bytes;
    let allow = limit > 0 && request.flags.contains(RequestFlags::ALLOW_TRANSCODE);
    let transcoded = crate::transcode::choose(
        &view,
        request.preferred_layouts.iter().map(|e| e.tag),
        allow,
        limit,
    )
    .and_then(|to| crate::transcode::transcode(&view, buffers.first()?, to));
    let (view, buffers) = match &transcoded {
        Some((d, data)) => (
            TensorView::parse(d).map_err(|_| Error::Limit("transcoded descriptor"))?,
            vec![data.as_slice()],
        ),
        None => (view, buffers),
    };
    // [NP-SHARD-2], [NP-SHARD-4]: how many shards, and which to send.
    let select = session.shard_select(stream_id);
    let total: u64 = buffers.iter().map(|b| b.len() as u64).sum();
    let o = &shared.options;
    let count = match select {
        Some(s) => u32::from(s.count()),
        None if session.may_shard(stream_id) && total >= o.shard_min_bytes => {
            u32::from(o.parallel_shards.clamp(1, 256))
        }
        None => 1,
    };
    let pieces = if count > 1 {
        crate::shard::plan(&view, count)
    } else {
        None
    };
    let (Some(pieces), Some(&data)) = (pieces, buffers.first()) else {
        if select.is_some_and(|s| s.index() != 0) {
            return refuse_stream(
                stream_id,
                ErrorCode::ShardMismatch,
                "this tensor cannot be cut into that many shards",
                session,
                wr,
                shared,
                out,
            )
            .await;
        }
        let Some(message) = DescriptorMessage::unsharded(view) else {
            return refuse_stream(
                stream_id,
                ErrorCode::Internal,
                "tensor too large",
                session,
                wr,
                shared,
                out,
            )
            .await;
        };
        if send_tensor(stream_id, &message, &buffers, session, wr, shared, out).await? {
            shared.counters.served.fetch_add(1, Ordering::Relaxed);
        }
        return Ok(());
    };
    let wanted = match select {
        Some(s) => usize::from(s.index())..usize::from(s.index()) + 1,
        None => 0..pieces.len(),
    };
    for (i, piece) in pieces
        .iter()
        .enumerate()
        .skip(wanted.start)
        .take(wanted.len())
    {
        let descriptor =
            TensorView::parse(&piece.descriptor).map_err(|_| Error::Limit("shard descriptor"))?;
        let message = DescriptorMessage {
            descriptor,
            total_data_bytes: piece.range.len() as u64,
            shard_index: i as u32,
            total_shards: count,
        };
        let part = &data[piece.range.clone()];
        if !send_tensor(stream_id, &message, &[part], session, wr, shared, out).await? {
            return Ok(());
        }
    }
    shared.counters.served.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Sends one tensor (or shard) of the answer to the request on
/// `request_stream`: descriptor, data frames that fit the client, end.
/// `false` when it was refused with `ERROR` instead.
#[allow(clippy::too_many_arguments)]
async fn send_tensor(
    request_stream: u32,
    message: &DescriptorMessage<'_>,
    buffers: &[&[u8]],
    session: &mut ServerSession<'static, STREAMS>,
    wr: &mut Writer,
    shared: &Shared,
    out: &mut Vec<u8>,
) -> Result<bool, Error> {
    if out.len() < message.encoded_len() + 12 {
        out.resize(message.encoded_len() + 12, 0);
    }
    let n = match session.send_descriptor(request_stream, message, out) {
        Ok(n) => n,
        Err(hurray_core::net::ApiMisuse::InvalidArgument("device_tag")) => {
            refuse_stream(
                request_stream,
                ErrorCode::DeviceUnavailable,
                "the tensor is not on the requested device",
                session,
                wr,
                shared,
                out,
            )
            .await?;
            return Ok(false);
        }
        Err(hurray_core::net::ApiMisuse::TooLargeForPeer { .. }) => {
            refuse_stream(
                request_stream,
                ErrorCode::MessageTooLarge,
                "the descriptor exceeds your maximum message size",
                session,
                wr,
                shared,
                out,
            )
            .await?;
            return Ok(false);
        }
        Err(e) => return Err(e.into()),
    };
    send(wr, shared, &out[..n]).await?;
    // Shard i travels on request_stream + i (a whole tensor on the request's
    // own stream, whatever its id).
    let stream = request_stream.saturating_add(message.shard_index);
    // The buffers back to back, in frames that fit the client.
    let chunk = (session.peer_max_message_size() - 8).min(1 << 20) as usize;
    let mut offset = 0u64;
    for buffer in buffers {
        for part in buffer.chunks(chunk) {
            let prefix = session.data_prefix(stream, offset, part.len() as u32)?;
            send(wr, shared, &prefix).await?;
            send(wr, shared, part).await?;
            offset += part.len() as u64;
        }
    }
    let n = session.send_data_end(stream, out)?;
    send(wr, shared, &out[..n]).await?;
    match tokio::time::timeout(shared.options.request_timeout, wr.flush()).await {
        Ok(r) => r?,
        Err(_) => return Err(Error::Timeout),
    }
    Ok(true)
}

#[allow(clippy::too_many_arguments)]
async fn refuse_stream(
    stream_id: u32,
    code: ErrorCode,
    text: &str,
    session: &mut ServerSession<'static, STREAMS>,
    wr: &mut Writer,
    shared: &Shared,
    out: &mut [u8],
) -> Result<(), Error> {
    let n = session.send_error(stream_id, code, text, out)?;
    shared.counters.error(code);
    send(wr, shared, &out[..n]).await?;
    Ok(())
}
