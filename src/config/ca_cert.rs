//! A route's `caCert`: read and checked at config load, so that a missing, unreadable or
//! invalid file is a config error (exit 2) that names the route and the key, before any
//! request is made. A relative path is read beside the config: on disk, or from the
//! trusted commit the config itself came from (a change under review cannot swap the CA).

use super::Beside;
use super::raw::S;
use super::resolve::Ctx;
use super::route_settings::CaCert;
use crate::error::Error;
use std::path::{Path, PathBuf};

/// Reads `caCert` and checks every certificate in it.
pub(super) fn load(value: &S<String>, ctx: &Ctx, route: &str) -> Result<CaCert, Error> {
    let given = value.get_ref().trim();
    let err = |why: String| ctx.err(value, format!("route `{route}` caCert `{given}`: {why}"));
    if given.is_empty() {
        return Err(err("must name a PEM file of CA certificates".into()));
    }
    let (path, pem) = read(given, ctx.beside).map_err(err)?;
    let der = crate::provider::tls::parse_ca_bundle(&pem).map_err(err)?;
    Ok(CaCert { path, der })
}

fn read(given: &str, beside: &Beside) -> Result<(PathBuf, Vec<u8>), String> {
    let disk = |path: PathBuf| {
        std::fs::read(&path)
            .map(|pem| (path.clone(), pem))
            .map_err(|e| {
                format!(
                    "cannot read {}: {e} (a relative path is relative to the config file)",
                    path.display()
                )
            })
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
                Ok(None) => Err(format!(
                    "{} does not exist in the commit the config was read from (a relative path is relative to the config file)",
                    shown(&rel).display()
                )),
                Err(e) => Err(e.to_string()),
            }
        }
    }
}
