//! `hurray serve`, `hurray get` and `hurray put`: the network protocol
//! (`docs/spec/network.md`) from the command line, through `hurray-rs-net`.
//!
//! * `hurray serve PATH... --listen ADDR [--store DIR]` validates every
//!   file fully before binding (a bad file is exit 1 and nothing is
//!   served), serves their tensors by name, stores pushed tensors in `DIR`,
//!   prints `hurray: serving N tensor(s) on ADDR` on standard error once it
//!   listens, and shuts down gracefully on Ctrl-C or `SIGTERM` (the
//!   transfers under way finish), printing what it served.
//! * `hurray get ADDR NAME -o OUT.hrry` fetches tensor `NAME` and writes
//!   it as the one tensor, named `NAME`, of a new `.hrry` file: under a
//!   temporary name in the same directory, synced, then renamed, so `OUT`
//!   is either the whole tensor or untouched. The bytes are written in
//!   place into that file as they arrive (never held whole in memory);
//!   `--parallel N` fetches over N connections (ADR-113).
//! * `hurray put ADDR FILE NAME [--as KEY]` pushes tensor `NAME` of the
//!   `.hrry` file `FILE` (stored under `KEY`, by default `NAME`).
//!
//! Progress of a transfer goes to standard error, as for the other
//! subcommands (only on a terminal, only for long work); nothing is written
//! to standard output. Exit status: 0 on success; 1 when the transfer
//! failed (the peer's `ERROR` code and text, a timeout, a refused
//! connection, a bad file); 2 on a usage error.
//!
//! ## Access control
//!
//! TLS and authentication are the default; each side refuses to start
//! without them (usage error) unless given `--insecure`, which allows
//! plaintext and no authentication (loopback and tests).
//!
//! * TLS (feature `tls`, on by default): `serve --cert PEM --key PEM`;
//!   `get`/`put --ca PEM` (only that CA is trusted; the server's
//!   certificate must carry ADDR's host, or `--server-name`).
//! * Client certificates (mTLS): `serve --client-ca PEM` requires them;
//!   `get`/`put --cert PEM --key PEM` present one.
//! * A shared token: read from the file named by `--token-file`, or else
//!   from the environment variable `HURRAY_TOKEN` (never from the command
//!   line, where other users of the machine see it in the process list).
//!
//! Without `--insecure`, a server needs TLS and a token or a client CA; a
//! client needs TLS and a token or a client certificate. The server runs
//! the TLS handshake (with the client certificate check), then the token
//! check, before any tensor is served or stored.

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;

use clap::Args;
use hurray_net::{Client, ClientOptions, Counters, Server, ServerOptions};

use crate::progress::Progress;

/// The environment variable read for the token when `--token-file` is not
/// given.
pub const TOKEN_ENV: &str = "HURRAY_TOKEN";

/// The token and the `--insecure` switch (both sides).
#[derive(Debug, Clone, Args)]
pub struct TokenArgs {
    /// Read the shared access token from this file (surrounding whitespace
    /// is trimmed). Default: the environment variable HURRAY_TOKEN.
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Allow plaintext and no authentication (loopback and tests only).
    #[arg(long)]
    pub insecure: bool,
}

/// How `serve` protects its connections.
#[derive(Debug, Clone, Args)]
pub struct ServerAccess {
    /// The server's certificate chain (PEM): serve over TLS.
    #[arg(long, value_name = "PEM", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The private key of --cert (PEM).
    #[arg(long, value_name = "PEM", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Require client certificates signed by these CAs (PEM; mTLS).
    #[arg(long, value_name = "PEM", requires = "cert")]
    pub client_ca: Option<PathBuf>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub token: TokenArgs,
}

/// How `get` and `put` protect their connection.
#[derive(Debug, Clone, Args)]
pub struct ClientAccess {
    /// Connect over TLS, trusting only these CAs (PEM).
    #[arg(long, value_name = "PEM")]
    pub ca: Option<PathBuf>,
    /// Present this client certificate chain (PEM) when the server asks.
    #[arg(long, value_name = "PEM", requires = "key", requires = "ca")]
    pub cert: Option<PathBuf>,
    /// The private key of --cert (PEM).
    #[arg(long, value_name = "PEM", requires = "cert")]
    pub key: Option<PathBuf>,
    /// The name the server's certificate must carry (default: ADDR's host).
    #[arg(long, value_name = "NAME", requires = "ca")]
    pub server_name: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub token: TokenArgs,
}

/// `hurray serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// `.hrry` files whose tensors are served (a name in two files is an error).
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Address to listen on (`HOST:PORT`; port 0 picks a free one).
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
    /// Directory where pushed tensors are stored (one `.hrry` per key; created
    /// if missing). Without it, every put is refused.
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// Connections served at once; more are answered BUSY.
    #[arg(long, value_name = "N", default_value_t = 256)]
    pub max_connections: usize,
    /// Largest tensor a put may carry, in MiB (held in memory until stored).
    #[arg(long, value_name = "MIB", default_value_t = 1024)]
    pub max_put_mib: u64,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub access: ServerAccess,
}

/// `hurray get`.
#[derive(Debug, Clone, Args)]
pub struct GetArgs {
    /// The server (`HOST:PORT`).
    #[arg(value_name = "ADDR")]
    pub addr: String,
    /// The tensor's name (its key on the server).
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The `.hrry` file to write (replaced whole, or left untouched on failure).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Largest tensor fetched, in MiB (checked before any memory is reserved).
    #[arg(long, value_name = "MIB", default_value_t = 4096)]
    pub max_mib: u64,
    /// Connections to fetch over: connection k asks for shard k of N
    /// (a server that cannot cut the tensor sends it whole on one).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    pub parallel: u16,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub access: ClientAccess,
}

/// `hurray put`.
#[derive(Debug, Clone, Args)]
pub struct PutArgs {
    /// The server (`HOST:PORT`).
    #[arg(value_name = "ADDR")]
    pub addr: String,
    /// The `.hrry` file holding the tensor.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The tensor's name in FILE.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// The key to store it under (default: NAME).
    #[arg(long = "as", value_name = "KEY")]
    pub as_key: Option<String>,
    #[command(flatten)]
    #[allow(missing_docs)]
    pub access: ClientAccess,
}

/// Why a network subcommand failed.
#[derive(Debug)]
pub enum NetFailure {
    /// The command line asks for something impossible (exit 2).
    Usage(String),
    /// The transfer or the server failed (exit 1).
    Failed(String),
}

impl NetFailure {
    /// Prints the failure on standard error and gives the exit status.
    #[must_use]
    pub fn report(self) -> ExitCode {
        match self {
            Self::Usage(m) => {
                eprintln!("hurray: {m}");
                ExitCode::from(2)
            }
            Self::Failed(m) => {
                eprintln!("hurray: {m}");
                ExitCode::from(1)
            }
        }
    }
}

fn failed(what: &str) -> impl Fn(hurray_net::Error) -> NetFailure + '_ {
    move |e| NetFailure::Failed(format!("{what}: {e}"))
}

/// The token to present or require: `--token-file`, else `HURRAY_TOKEN`,
/// else none.
///
/// # Errors
/// [`NetFailure::Usage`] when the file cannot be read, or the token is
/// empty or longer than [`hurray_net::MAX_TOKEN_LEN`].
pub fn token(args: &TokenArgs) -> Result<Option<Vec<u8>>, NetFailure> {
    let raw = match &args.token_file {
        Some(p) => Some(std::fs::read(p).map_err(|e| {
            NetFailure::Usage(format!("cannot read the token file {}: {e}", p.display()))
        })?),
        None => std::env::var_os(TOKEN_ENV).map(|v| v.into_encoded_bytes()),
    };
    match raw.map(|t| t.trim_ascii().to_vec()) {
        Some(t) if t.is_empty() => Err(NetFailure::Usage("the access token is empty".into())),
        Some(t) if t.len() > hurray_net::MAX_TOKEN_LEN => Err(NetFailure::Usage(format!(
            "the access token is longer than {} bytes",
            hurray_net::MAX_TOKEN_LEN
        ))),
        t => Ok(t),
    }
}

/// The rule both sides apply: without `--insecure`, TLS and a way to tell
/// clients apart (a token, or client certificates).
fn require_secure(
    insecure: bool,
    tls: bool,
    authenticated: bool,
    side: &str,
) -> Result<(), NetFailure> {
    if insecure {
        return Ok(());
    }
    if !tls {
        return Err(NetFailure::Usage(format!(
            "{side} without TLS: give {} (or --insecure for plaintext, on loopback only)",
            if side == "serving" {
                "--cert PEM --key PEM"
            } else {
                "--ca PEM"
            }
        )));
    }
    if !authenticated {
        return Err(NetFailure::Usage(format!(
            "{side} without authentication: give --token-file PATH or set {TOKEN_ENV}{} \
             (or --insecure, on loopback only)",
            if side == "serving" {
                ", or --client-ca PEM"
            } else {
                ", or --cert PEM --key PEM"
            }
        )));
    }
    Ok(())
}

#[cfg(feature = "tls")]
fn read(path: &Path, what: &str) -> Result<Vec<u8>, NetFailure> {
    std::fs::read(path)
        .map_err(|e| NetFailure::Usage(format!("cannot read the {what} {}: {e}", path.display())))
}

/// The host part of `HOST:PORT` (without an IPv6 literal's brackets).
#[cfg(feature = "tls")]
fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// Resolves `HOST:PORT` to its first address.
async fn resolve(addr: &str) -> Result<SocketAddr, NetFailure> {
    let mut addrs = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| NetFailure::Usage(format!("`{addr}` is not an address (HOST:PORT): {e}")))?;
    addrs
        .next()
        .ok_or_else(|| NetFailure::Usage(format!("`{addr}` resolves to no address")))
}

fn runtime(multi: bool) -> Result<tokio::runtime::Runtime, NetFailure> {
    let mut b = if multi {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    b.enable_all()
        .build()
        .map_err(|e| NetFailure::Failed(format!("cannot start the runtime: {e}")))
}

/// A progress bar that appears once the total is known (on a terminal, for
/// long work only: [`Progress::for_bytes`]).
struct Bar {
    what: String,
    bar: Option<Progress>,
}

impl Bar {
    fn new(what: &str) -> Self {
        Self {
            what: what.to_owned(),
            bar: None,
        }
    }

    fn update(&mut self, done: u64, total: u64) {
        let what = &self.what;
        self.bar
            .get_or_insert_with(|| Progress::for_bytes(Some(total), what))
            .set(done);
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish();
        }
    }
}

fn client_options(access: &ClientAccess, addr: &str) -> Result<ClientOptions, NetFailure> {
    let token = token(&access.token)?;
    require_secure(
        access.token.insecure,
        access.ca.is_some(),
        token.is_some() || access.cert.is_some(),
        "connecting",
    )?;
    #[allow(unused_mut)]
    let mut options = ClientOptions {
        token,
        // Large frames: fewer messages per byte on a fast link.
        max_message_size: 4 << 20,
        ..ClientOptions::default()
    };
    if let Some(ca) = &access.ca {
        #[cfg(feature = "tls")]
        {
            let ca = read(ca, "CA file")?;
            let identity = match (&access.cert, &access.key) {
                (Some(c), Some(k)) => Some((read(c, "certificate")?, read(k, "key")?)),
                _ => None,
            };
            let config = hurray_net::tls::client_config(
                &ca,
                identity.as_ref().map(|(c, k)| (c.as_slice(), k.as_slice())),
            )
            .map_err(|e| NetFailure::Usage(e.to_string()))?;
            let name = access
                .server_name
                .as_deref()
                .unwrap_or_else(|| host_of(addr));
            options.tls = Some(
                hurray_net::tls::ClientTls::new(config, name)
                    .map_err(|e| NetFailure::Usage(e.to_string()))?,
            );
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = (ca, addr);
            return Err(NetFailure::Usage(
                "this hurray was built without TLS (feature `tls`)".into(),
            ));
        }
    }
    Ok(options)
}

/// `hurray get`: fetches a tensor into a new `.hrry` file.
///
/// # Errors
/// See the module docs.
pub fn get(args: &GetArgs) -> Result<(), NetFailure> {
    let mut options = client_options(&args.access, &args.addr)?;
    options.max_fetch_bytes = args.max_mib.saturating_mul(1 << 20);
    let rt = runtime(args.parallel > 1)?;
    rt.block_on(async {
        let addr = resolve(&args.addr).await?;
        let mut bar = Bar::new(&args.name);
        // Shards (or the whole tensor) are written in place into the
        // output, never held in memory whole.
        let r = hurray_net::fetch_parallel_to_file(
            addr,
            options,
            &args.name,
            args.parallel,
            &args.output,
            &mut |d, t| bar.update(d, t),
        )
        .await;
        bar.finish();
        r.map_err(|e| {
            use std::io::ErrorKind as K;
            let what = match &e {
                hurray_net::Error::Io(io)
                    if matches!(
                        io.kind(),
                        K::ConnectionRefused | K::AddrNotAvailable | K::TimedOut
                    ) =>
                {
                    format!("cannot connect to {addr}")
                }
                _ => format!("get `{}` from {addr}", args.name),
            };
            failed(&what)(e)
        })
    })
}

/// `hurray put`: pushes a tensor of a `.hrry` file.
///
/// # Errors
/// See the module docs.
pub fn put(args: &PutArgs) -> Result<(), NetFailure> {
    let options = client_options(&args.access, &args.addr)?;
    // The file is checked before any connection is made.
    check_has_tensor(&args.file, &args.name)?;
    let key = args.as_key.as_deref().unwrap_or(&args.name);
    let rt = runtime(false)?;
    rt.block_on(async {
        let addr = resolve(&args.addr).await?;
        let mut client = Client::connect(addr, options)
            .await
            .map_err(failed(&format!("cannot connect to {addr}")))?;
        let mut bar = Bar::new(&args.name);
        let r = client
            .put_from_file_with(&args.file, &args.name, key, &mut |d, t| bar.update(d, t))
            .await;
        bar.finish();
        r.map_err(failed(&format!("put `{key}` to {addr}")))
    })
}

fn check_has_tensor(path: &Path, name: &str) -> Result<(), NetFailure> {
    let mut f = hurray_io::file::open(path)
        .map_err(|e| NetFailure::Failed(format!("{}: {e}", path.display())))?;
    let view = f
        .view()
        .map_err(|e| NetFailure::Failed(format!("{}: {e}", path.display())))?;
    match view.get(name) {
        Some(_) => Ok(()),
        None => Err(NetFailure::Usage(format!(
            "{}: no tensor named `{name}`",
            path.display()
        ))),
    }
}

/// Completes on Ctrl-C or (on Unix) `SIGTERM`.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn summary(c: &Counters) -> String {
    let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    format!(
        "hurray: stopped: {} connection(s), {} refused as busy, {} unauthenticated, \
         {} tensor(s) served, {} stored, {} bytes out, {} bytes in",
        l(&c.connections),
        l(&c.refused),
        l(&c.unauthenticated),
        l(&c.served),
        l(&c.stored),
        l(&c.bytes_out),
        l(&c.bytes_in),
    )
}

/// `hurray serve`: serves until Ctrl-C or `SIGTERM`.
///
/// # Errors
/// See the module docs.
pub fn serve(args: &ServeArgs) -> Result<(), NetFailure> {
    if args.paths.is_empty() && args.store.is_none() {
        return Err(NetFailure::Usage(
            "nothing to serve: give .hrry files, --store DIR, or both".into(),
        ));
    }
    let access = &args.access;
    let token = token(&access.token)?;
    require_secure(
        access.token.insecure,
        access.cert.is_some(),
        token.is_some() || access.client_ca.is_some(),
        "serving",
    )?;
    #[allow(unused_mut)]
    let mut options = ServerOptions {
        token,
        store: args.store.clone(),
        max_connections: args.max_connections.max(1),
        max_put_bytes: args.max_put_mib.saturating_mul(1 << 20),
        max_message_size: 4 << 20,
        ..ServerOptions::default()
    };
    if let (Some(cert), Some(key)) = (&access.cert, &access.key) {
        #[cfg(feature = "tls")]
        {
            let client_ca = access
                .client_ca
                .as_deref()
                .map(|p| read(p, "client CA file"))
                .transpose()?;
            options.tls = Some(
                hurray_net::tls::server_config(
                    &read(cert, "certificate")?,
                    &read(key, "key")?,
                    client_ca.as_deref(),
                )
                .map_err(|e| NetFailure::Usage(e.to_string()))?,
            );
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = (cert, key);
            return Err(NetFailure::Usage(
                "this hurray was built without TLS (feature `tls`)".into(),
            ));
        }
    }
    let rt = runtime(true)?;
    rt.block_on(async {
        let addr = resolve(&args.listen).await?;
        let tensors = count_tensors(&args.paths)?;
        let server = Server::bind(addr, options, &args.paths)
            .await
            .map_err(failed("cannot serve"))?;
        let counters = server.counters();
        eprintln!(
            "hurray: serving {tensors} tensor(s) on {} ({})",
            server.local_addr(),
            match (access.cert.is_some(), access.client_ca.is_some()) {
                (true, true) => "TLS, client certificates required",
                (true, false) => "TLS",
                (false, _) => "plaintext, insecure",
            }
        );
        let r = server.run(shutdown_signal()).await;
        if std::io::stderr().is_terminal() || r.is_ok() {
            eprintln!("{}", summary(&counters));
        }
        r.map_err(failed("server"))
    })
}

/// How many tensors `paths` hold (each file fully validated; the server
/// validates them again when it binds, which is cheap next to serving).
fn count_tensors(paths: &[PathBuf]) -> Result<usize, NetFailure> {
    let mut n = 0;
    for p in paths {
        let mut f = hurray_io::file::open(p)
            .map_err(|e| NetFailure::Failed(format!("{}: {e}", p.display())))?;
        let view = f
            .view()
            .map_err(|e| NetFailure::Failed(format!("{}: {e}", p.display())))?;
        n += view.len() as usize;
    }
    Ok(n)
}
