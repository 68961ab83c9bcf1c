//! The HTTP client and what it trusts. Companies reach their gateways through a private CA
//! or a TLS-inspecting proxy, so the client trusts, beside the roots compiled into it, the
//! system's store (with `SSL_CERT_FILE` / `SSL_CERT_DIR` in its place when set) and a
//! route's own `caCert`. Verification is never skipped and HTTPS never falls back to
//! plain HTTP. Proxies come from `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` / `NO_PROXY`,
//! except for endpoints on this machine. Redirects are never followed.

use super::attempt::Outcome;
use super::classify::Failure;
use crate::config::Route;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Why a client cannot be set up: its trust roots, or its base URL. A message fragment
/// for `route `NAME`: …` (or the forge's client).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// `SSL_CERT_FILE` cannot be read.
    #[error("SSL_CERT_FILE {}: cannot read it: {source}", path.display())]
    CertFile {
        /// The file.
        path: std::path::PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// `SSL_CERT_FILE` holds no certificate.
    #[error("SSL_CERT_FILE {}: no PEM certificate in it (-----BEGIN CERTIFICATE-----)", .0.display())]
    NoPem(std::path::PathBuf),
    /// An `SSL_CERT_DIR` entry that is no directory.
    #[error("SSL_CERT_DIR {}: not a directory", .0.display())]
    CertDir(std::path::PathBuf),
    /// A route's `caCert` that rustls refuses.
    #[error("caCert {}: {why}", path.display())]
    CaCert {
        /// The file.
        path: std::path::PathBuf,
        /// rustls's reason.
        why: rustls::Error,
    },
    /// rustls refused the configuration.
    #[error(transparent)]
    Tls(#[from] rustls::Error),
    /// The HTTP client cannot be built (the innermost reason).
    #[error("{0}")]
    Build(String),
    /// `baseUrl` does not parse.
    #[error("baseUrl is not a valid URL ({0})")]
    BaseUrl(String),
    /// `baseUrl` cannot have a path appended (`mailto:`, `data:`).
    #[error("baseUrl cannot take a path")]
    NoPath,
}

/// `SSL_CERT_FILE` and `SSL_CERT_DIR` replace the system's store when set; a path that
/// does not work would silently leave only the built-in roots, so it is an error.
fn check_env_roots() -> Result<(), ClientError> {
    if let Some(file) = std::env::var_os("SSL_CERT_FILE").filter(|v| !v.is_empty()) {
        let path = std::path::Path::new(&file);
        let pem = std::fs::read(path).map_err(|source| ClientError::CertFile {
            path: path.to_path_buf(),
            source,
        })?;
        if !CertificateDer::pem_slice_iter(&pem).any(|c| c.is_ok()) {
            return Err(ClientError::NoPem(path.to_path_buf()));
        }
    }
    if let Some(dirs) = std::env::var_os("SSL_CERT_DIR") {
        for dir in std::env::split_paths(&dirs).filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                return Err(ClientError::CertDir(dir));
            }
        }
    }
    Ok(())
}

/// The roots every HTTPS route trusts: those compiled in, and the system's store (or
/// `SSL_CERT_FILE` / `SSL_CERT_DIR`). Read once per process: parsing the system's few
/// hundred certificates costs more than everything else about a client.
fn shared_roots() -> &'static rustls::RootCertStore {
    static ROOTS: OnceLock<rustls::RootCertStore> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut store = rustls::RootCertStore::empty();
        store.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        // System stores hold some ancient certificates that do not parse: skip those.
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = store.add(cert);
        }
        store
    })
}

/// The TLS configuration of a route: the shared roots plus its `caCert`.
fn tls_config(route: &Route) -> Result<rustls::ClientConfig, ClientError> {
    let mut roots = shared_roots().clone();
    if let Some(ca) = &route.ca_cert {
        for der in &ca.der {
            roots
                .add(CertificateDer::from(der.clone()))
                .map_err(|why| ClientError::CaCert {
                    path: ca.path.clone(),
                    why,
                })?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// The client of one route.
pub(crate) fn client(
    route: &Route,
    base: &str,
    connect_timeout: Duration,
) -> Result<reqwest::Client, ClientError> {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("warden/", env!("CARGO_PKG_VERSION")))
        // A redirect would carry the key to another origin: a 3xx is the attempt's
        // outcome instead (see `http::exchange`).
        .redirect(reqwest::redirect::Policy::none());
    if base.starts_with("https://") {
        check_env_roots()?;
        builder = builder.use_preconfigured_tls(tls_config(route)?);
    }
    // Loopback never goes through a proxy: the request, key included, stays on this
    // machine (decided from the parsed URL, so `127.1` and `LOCALHOST.` count).
    if crate::config::url::is_loopback_str(base) {
        builder = builder.no_proxy();
    }
    builder
        .build()
        .map_err(|e| ClientError::Build(super::wire::root_cause(&e)))
}

/// A client for a forge's API at `base` (`warden publish`): the shared roots, no redirect
/// followed, no proxy for loopback.
pub(crate) fn api_client(
    base: &str,
    connect_timeout: Duration,
) -> Result<reqwest::Client, ClientError> {
    let mut builder = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("warden/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none());
    if base.starts_with("https://") {
        check_env_roots()?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(shared_roots().clone())
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        builder = builder.use_preconfigured_tls(config);
    }
    if crate::config::url::is_loopback_str(base) {
        builder = builder.no_proxy();
    }
    builder
        .build()
        .map_err(|e| ClientError::Build(super::wire::root_cause(&e)))
}

/// The certificate problem inside a failed request, if that is what it was.
pub(crate) fn certificate_error(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    let r = find_rustls(e)?;
    matches!(
        r,
        rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
    )
    .then(|| r.to_string())
}

/// The rustls error in a chain. An `io::Error` hides the error it wraps from `source()`
/// (it returns the wrapped error's source), and TLS errors come wrapped in two of them.
fn find_rustls<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(r) = e.downcast_ref::<rustls::Error>() {
        return Some(r);
    }
    if let Some(inner) = e
        .downcast_ref::<std::io::Error>()
        .and_then(|io| io.get_ref())
    {
        let inner: &(dyn std::error::Error + 'static) = inner;
        if let Some(r) = find_rustls(inner) {
            return Some(r);
        }
    }
    find_rustls(e.source()?)
}

/// A certificate that is not trusted is a configuration problem, not a sick provider: it
/// ends the attempt as `auth` (no retry; the route is forced open for the run, as for a
/// bad key, so later units fail over) with what to set.
pub(crate) fn certificate_failure(url: &reqwest::Url, detail: &str) -> Failure {
    let host = match (url.host_str(), url.port_or_known_default()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        (Some(h), None) => h.to_string(),
        _ => url.to_string(),
    };
    Failure::new(
        Outcome::Auth,
        format!(
            "TLS certificate of {host} is not trusted ({detail}): if the endpoint uses a private CA or a TLS-inspecting proxy, set caCert = \"ca.pem\" on this route or SSL_CERT_FILE / SSL_CERT_DIR to that CA; warden never skips verification"
        ),
    )
}
