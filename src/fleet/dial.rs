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

/// Connects to `addr` (the caller bounds the time); the error is a message fragment.
pub(super) async fn stream(addr: &ConnectionAddr) -> Result<Box<dyn Stream>, String> {
    match addr {
        ConnectionAddr::Tcp(host, port) => Ok(Box::new(tcp(host, *port).await?)),
        ConnectionAddr::TcpTls {
            host,
            port,
            insecure,
            ..
        } => {
            if *insecure {
                return Err("`#insecure` is not supported: rediss:// is always verified".into());
            }
            let name = ServerName::try_from(host.as_str())
                .map_err(|e| format!("`{host}` cannot be a TLS server name: {e}"))?
                .to_owned();
            let config = tls_config()?;
            let tcp = tcp(host, *port).await?;
            let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS: {e}"))?;
            Ok(Box::new(tls))
        }
        other => Err(format!(
            "{other}: only redis:// and rediss:// servers are supported"
        )),
    }
}

async fn tcp(host: &str, port: u16) -> Result<TcpStream, String> {
    let tcp = TcpStream::connect((host, port))
        .await
        .map_err(|e| e.to_string())?;
    // Requests are small and each waits for its answer: do not hold them back.
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    Ok(tcp)
}

/// The roots the redis client trusted for `rediss://`: the system's store, read by
/// `rustls-native-certs` (which takes `SSL_CERT_FILE` / `SSL_CERT_DIR` in its place when set).
/// A store that cannot be read is an error, not a silent fall back to fewer roots.
fn tls_config() -> Result<rustls::ClientConfig, String> {
    let native = rustls_native_certs::load_native_certs();
    if let Some(e) = native.errors.first() {
        return Err(format!("TLS roots: {e}"));
    }
    let mut roots = rustls::RootCertStore::empty();
    // System stores hold some ancient certificates that do not parse: skip those.
    roots.add_parsable_certificates(native.certs);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
