//! TLS for the server and the client (feature `tls`): rustls on the `ring`
//! provider, TLS 1.2 and 1.3 with rustls' safe defaults, optionally client
//! certificates (mTLS).
//!
//! Everything here builds rustls configurations from PEM bytes; the
//! handshake itself runs in [`Server`](crate::Server) (before the token is
//! read, so no tensor is served or stored to a peer whose certificate
//! failed) and [`Client::connect`](crate::Client::connect), both within
//! their handshake timeout.
//!
//! ```no_run
//! # fn demo() -> Result<(), hurray_net::Error> {
//! use hurray_net::{ClientOptions, ServerOptions, tls};
//!
//! let cert = std::fs::read("server.pem")?;
//! let key = std::fs::read("server.key")?;
//! let ca = std::fs::read("ca.pem")?;
//! let server = ServerOptions {
//!     // Clients must show a certificate signed by `ca.pem`.
//!     tls: Some(tls::server_config(&cert, &key, Some(&ca))?),
//!     ..ServerOptions::default()
//! };
//! let client = ClientOptions {
//!     tls: Some(tls::ClientTls::new(tls::client_config(&ca, None)?, "localhost")?),
//!     ..ClientOptions::default()
//! };
//! # Ok(()) }
//! ```

use std::sync::Arc;

use tokio_rustls::rustls::crypto::{CryptoProvider, ring};
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};

pub use tokio_rustls::rustls;

use crate::Error;

/// The provider every configuration here uses, named explicitly (so the
/// process-wide default, which another crate may set, never matters).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

fn tls_err(what: &'static str) -> impl Fn(rustls::Error) -> Error {
    move |e| Error::Tls(format!("{what}: {e}"))
}

/// The certificates of a PEM bundle, in order.
///
/// # Errors
/// [`Error::Tls`] when the PEM is malformed or holds no certificate.
pub fn certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Tls(format!("certificate PEM: {e}")))?;
    if certs.is_empty() {
        return Err(Error::Tls("no certificate in the PEM".into()));
    }
    Ok(certs)
}

/// The first private key of a PEM file (PKCS#8, PKCS#1 or SEC1).
///
/// # Errors
/// [`Error::Tls`] when the PEM holds no key.
pub fn private_key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, Error> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| Error::Tls(format!("private key PEM: {e}")))
}

fn roots(pem: &[u8]) -> Result<Arc<RootCertStore>, Error> {
    let mut store = RootCertStore::empty();
    for c in certificates(pem)? {
        store.add(c).map_err(tls_err("trust anchor"))?;
    }
    Ok(Arc::new(store))
}

/// A server configuration: its certificate chain and key (PEM), and, when
/// `client_ca_pem` is given, a requirement that every client presents a
/// certificate that chains to one of those CAs (mTLS; a client without one
/// fails the handshake).
///
/// # Errors
/// [`Error::Tls`] on malformed PEM, a key that does not match the
/// certificate, or an unusable CA.
pub fn server_config(
    cert_chain_pem: &[u8],
    key_pem: &[u8],
    client_ca_pem: Option<&[u8]>,
) -> Result<Arc<ServerConfig>, Error> {
    let chain = certificates(cert_chain_pem)?;
    let key = private_key(key_pem)?;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(tls_err("protocol versions"))?;
    let builder = match client_ca_pem {
        Some(ca) => {
            let verifier = WebPkiClientVerifier::builder_with_provider(roots(ca)?, provider())
                .build()
                .map_err(|e| Error::Tls(format!("client CA: {e}")))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(tls_err("server certificate"))?;
    Ok(Arc::new(config))
}

/// A client configuration trusting the CAs of `ca_pem` (only those: a
/// private deployment names its own CA), presenting `identity` (certificate
/// chain PEM, key PEM) when the server asks for a client certificate.
///
/// # Errors
/// [`Error::Tls`] on malformed PEM or a key that does not match.
pub fn client_config(
    ca_pem: &[u8],
    identity: Option<(&[u8], &[u8])>,
) -> Result<Arc<ClientConfig>, Error> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(tls_err("protocol versions"))?
        .with_root_certificates(roots(ca_pem)?);
    let config = match identity {
        Some((chain, key)) => builder
            .with_client_auth_cert(certificates(chain)?, private_key(key)?)
            .map_err(tls_err("client certificate"))?,
        None => builder.with_no_client_auth(),
    };
    Ok(Arc::new(config))
}

/// What a client needs for TLS: its configuration and the name the
/// server's certificate must carry.
#[derive(Debug, Clone)]
pub struct ClientTls {
    /// The rustls configuration ([`client_config`]).
    pub config: Arc<ClientConfig>,
    /// The server's DNS name or IP address, checked against its certificate.
    pub server_name: ServerName<'static>,
}

impl ClientTls {
    /// `config` for a server named `server_name` (a DNS name or an IP
    /// address).
    ///
    /// # Errors
    /// [`Error::Tls`] when `server_name` is neither.
    pub fn new(config: Arc<ClientConfig>, server_name: &str) -> Result<Self, Error> {
        let server_name = ServerName::try_from(server_name.to_owned())
            .map_err(|_| Error::Tls(format!("`{server_name}` is not a DNS name or IP address")))?;
        Ok(Self {
            config,
            server_name,
        })
    }
}
