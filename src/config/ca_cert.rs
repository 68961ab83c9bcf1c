//! A route's `caCert`: read and checked at config load, so that a missing, unreadable or
//! invalid file is a config error (exit 2) that names the route and the key, before any
//! request is made.

use super::raw::S;
use super::resolve::Ctx;
use super::settings::CaCert;
use crate::error::Error;

/// Reads `caCert` (relative to the config file's directory) and checks every certificate.
pub(super) fn load(value: &S<String>, ctx: &Ctx, route: &str) -> Result<CaCert, Error> {
    let given = value.get_ref().trim();
    let err = |why: String| ctx.err(value, format!("route `{route}` caCert `{given}`: {why}"));
    if given.is_empty() {
        return Err(err("must name a PEM file of CA certificates".into()));
    }
    let path = match ctx.path.parent() {
        Some(dir) if !std::path::Path::new(given).is_absolute() => dir.join(given),
        _ => given.into(),
    };
    let pem = std::fs::read(&path).map_err(|e| {
        err(format!(
            "cannot read {}: {e} (relative paths are relative to the config file)",
            path.display()
        ))
    })?;
    let der = crate::provider::tls::parse_ca_bundle(&pem).map_err(err)?;
    Ok(CaCert { path, der })
}
