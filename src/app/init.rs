//! `warden init`: writes a starter warden.toml at the repository root.

use warden::cli::InitArgs;
use warden::config;
use warden::error::{Error, Result};
use warden::prepare::{repo_root, start_dir};

/// A sim route that works with no key, and real routes to uncomment.
const STARTER: &str = include_str!("starter.toml");

pub(super) fn init_cmd(args: &InitArgs) -> Result<i32> {
    let dir = start_dir(args.dir.as_deref())?;
    let root = repo_root(&dir).unwrap_or(dir);
    let path = root.join(config::FILE_NAME);
    if path.exists() && !args.force {
        return Err(Error::Usage(format!(
            "{} already exists: edit it, or pass --force to overwrite it",
            path.display()
        )));
    }
    std::fs::write(&path, STARTER).map_err(|e| Error::io(&path, e))?;
    warden::text::stdio::eprint_line(&format!("wrote {}", path.display()));
    Ok(0)
}
