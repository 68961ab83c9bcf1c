//! A route's `caCert`: read and checked at config load, so that a missing, unreadable or
//! invalid file is a config error (exit 2) that names the route and the key, before any
//! request is made. A relative path is read beside the config: on disk, or from the
//! trusted commit the config itself came from (a change under review cannot swap the CA).

use super::Beside;
use super::ctx::Ctx;
use super::raw::S;
use super::route_settings::CaCert;
use crate::error::Error;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::path::{Path, PathBuf};

/// Why a `caCert` file cannot be used: a fragment after `route `NAME` caCert `FILE`: `.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CaCertError {
    /// The file on disk cannot be read.
    #[error("cannot read {}: {source} (a relative path is relative to the config file)", path.display())]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Not in the commit the config came from.
    #[error(
        "{} does not exist in the commit the config was read from (a relative path is relative to the config file)",
        .0.display()
    )]
    NotInCommit(PathBuf),
    /// The commit cannot be read.
    #[error("{0}")]
    Git(String),
    /// A PEM block that does not decode.
    #[error("certificate {n} is not valid PEM: {why}")]
    NotPem {
        n: usize,
        why: rustls::pki_types::pem::Error,
    },
    /// A certificate rustls will not trust.
    #[error("certificate {n} cannot be a trust anchor: {why}")]
    NotAnchor { n: usize, why: rustls::Error },
    /// No certificate at all.
    #[error("no certificate in the file (expected PEM: -----BEGIN CERTIFICATE-----)")]
    Empty,
}

/// Reads `caCert` and checks every certificate in it.
pub(super) fn load(value: &S<String>, ctx: &Ctx, route: &str) -> Result<CaCert, Error> {
    let given = value.get_ref().trim();
    let err = |why: String| ctx.err(value, format!("route `{route}` caCert `{given}`: {why}"));
    if given.is_empty() {
        return Err(err("must name a PEM file of CA certificates".into()));
    }
    let (path, pem) = read(given, ctx.beside).map_err(|e| err(e.to_string()))?;
    let der = parse_ca_bundle(&pem).map_err(|e| err(e.to_string()))?;
    Ok(CaCert { path, der })
}

fn read(given: &str, beside: &Beside) -> Result<(PathBuf, Vec<u8>), CaCertError> {
    let disk = |path: PathBuf| {
        std::fs::read(&path)
            .map(|pem| (path.clone(), pem))
            .map_err(|source| CaCertError::Unreadable { path, source })
    };
    if Path::new(given).is_absolute() {
        return disk(given.into());
    }
    match beside {
        Beside::Dir(dir) => disk(dir.join(given)),
        Beside::Commit { dir, read, shown } => {
            let rel = if dir.is_empty() {
                given.to_string()
            } else {
                format!("{dir}/{given}")
            };
            match read(&rel) {
                Ok(Some(pem)) => Ok((shown(&rel), pem)),
                Ok(None) => Err(CaCertError::NotInCommit(shown(&rel))),
                Err(e) => Err(CaCertError::Git(e.to_string())),
            }
        }
    }
}

/// Parses a PEM bundle (a `caCert` file) into DER certificates, each checked to be usable
/// as a trust anchor, so that a bad file is a config error before any request.
pub(crate) fn parse_ca_bundle(pem: &[u8]) -> Result<Vec<Vec<u8>>, CaCertError> {
    let mut out = Vec::new();
    for (i, item) in CertificateDer::pem_slice_iter(pem).enumerate() {
        let der = item.map_err(|why| CaCertError::NotPem { n: i + 1, why })?;
        rustls::RootCertStore::empty()
            .add(der.clone())
            .map_err(|why| CaCertError::NotAnchor { n: i + 1, why })?;
        out.push(der.to_vec());
    }
    if out.is_empty() {
        return Err(CaCertError::Empty);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_without_certificates_or_with_a_broken_one_is_refused() {
        assert!(
            parse_ca_bundle(b"")
                .unwrap_err()
                .to_string()
                .contains("no certificate")
        );
        assert!(
            parse_ca_bundle(b"hello\n")
                .unwrap_err()
                .to_string()
                .contains("no certificate")
        );
        let broken = b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n";
        assert!(
            parse_ca_bundle(broken)
                .unwrap_err()
                .to_string()
                .contains("certificate 1")
        );
        let junk_der =
            b"-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n";
        let e = parse_ca_bundle(junk_der).unwrap_err().to_string();
        assert!(e.contains("cannot be a trust anchor"), "{e}");
    }
}
