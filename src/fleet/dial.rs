//! The fleet's byte stream to Redis, made here rather than by the redis client so that it
//! can be wrapped in the read budget ([`super::budget`]): TCP for `redis://`, and for
//! `rediss://` TLS verified against the roots the client used (the system's store, or
//! `SSL_CERT_FILE` / `SSL_CERT_DIR` in its place); verification is never skipped.

use redis::ConnectionAddr;
use rustls::pki_types::ServerName;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A byte stream to the server (TCP, or TLS over TCP).
pub(super) trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// Why no byte stream to the server could be opened: a message fragment (the caller
/// names the server and scrubs the password).
#[derive(Debug, thiserror::Error)]
pub(super) enum DialError {
    /// `rediss://…#insecure`, which warden refuses.
    #[error("`#insecure` is not supported: rediss:// is always verified")]
    Insecure,
    /// A host that is no TLS server name.
    #[error("`{host}` cannot be a TLS server name: {why}")]
    ServerName { host: String, why: String },
    /// The TLS handshake failed.
    #[error("TLS: {0}")]
    Tls(std::io::Error),
    /// The system's trust roots cannot be read.
    #[error("TLS roots: {0}")]
    Roots(String),
    /// rustls refused the configuration.
    #[error(transparent)]
    Config(#[from] rustls::Error),
    /// A Unix socket or another kind of address.
    #[error("{0}: only redis:// and rediss:// servers are supported")]
    Scheme(String),
    /// The TCP connection failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Connects to `addr` (the caller bounds the time); the error is a message fragment.
pub(super) async fn stream(addr: &ConnectionAddr) -> Result<Box<dyn Stream>, DialError> {
    match addr {
        ConnectionAddr::Tcp(host, port) => Ok(Box::new(tcp(host, *port).await?)),
        ConnectionAddr::TcpTls {
            host,
            port,
            insecure,
            ..
        } => {
            if *insecure {
                return Err(DialError::Insecure);
            }
            let name = ServerName::try_from(host.as_str())
                .map_err(|e| DialError::ServerName {
                    host: host.clone(),
                    why: e.to_string(),
                })?
                .to_owned();
            let config = tls_config()?;
            let tcp = tcp(host, *port).await?;
            let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
                .connect(name, tcp)
                .await
                .map_err(DialError::Tls)?;
            Ok(Box::new(tls))
        }
        other => Err(DialError::Scheme(other.to_string())),
    }
}

async fn tcp(host: &str, port: u16) -> Result<TcpStream, DialError> {
    let tcp = TcpStream::connect((host, port)).await?;
    // Requests are small and each waits for its answer: do not hold them back.
    tcp.set_nodelay(true)?;
    Ok(tcp)
}

/// The roots the redis client trusted for `rediss://`: the system's store, read by
/// `rustls-native-certs` (which takes `SSL_CERT_FILE` / `SSL_CERT_DIR` in its place when set).
/// A store that cannot be read is an error, not a silent fall back to fewer roots.
fn tls_config() -> Result<rustls::ClientConfig, DialError> {
    let native = rustls_native_certs::load_native_certs();
    if let Some(e) = native.errors.first() {
        return Err(DialError::Roots(e.to_string()));
    }
    let mut roots = rustls::RootCertStore::empty();
    // System stores hold some ancient certificates that do not parse: skip those.
    roots.add_parsable_certificates(native.certs);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
