//! `warden init`: writes a starter warden.toml at the repository root (or, with
//! `--example`, the full commented example), and says what to do next.

use super::cli::InitArgs;
use warden::config;
use warden::error::{Error, Result};
use warden::prepare::{repo_root, start_dir};

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
    let text = if args.example {
        config::EXAMPLE
    } else {
        config::STARTER
    };
    // Replaced, not written through: a link committed at warden.toml is not followed.
    warden::atomic_file::write(&path, text.as_bytes()).map_err(|e| Error::io(&path, e))?;
    let what = if args.example {
        "every key with its default"
    } else {
        "a starter with a simulated route"
    };
    warden::text::stdio::eprint_line(&format!(
        "wrote {} ({what})\n\
         next: `warden review` reviews your changes on the simulator (no key needed; this new \
         warden.toml is not reviewed while it is as init wrote it). For a real model, replace \
         the `sim` route with one for your provider (see the commented routes in the file, or \
         docs/configuration.md) and export the key variable its apiKeyEnv names.",
        path.display()
    ));
    Ok(0)
}
