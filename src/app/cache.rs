//! `warden cache stats | clear | path`: the result cache's location, contents and reset.

use super::{cache_warn, emit};
use warden::cache::location::Sources;
use warden::cache::sqlite::{self, Limits, SqliteStore, Stats};
use warden::cli::{CacheAction, CacheArgs};
use warden::config;
use warden::error::{Error, Result};
use warden::prepare::{repo_root, start_dir};

pub(super) fn cache_cmd(args: &CacheArgs) -> Result<i32> {
    let dir = start_dir(args.dir.as_deref())?;
    let root = repo_root(&dir).unwrap_or(dir);
    let settings = config::load(args.config.as_deref(), Some(&root))?;
    let dir = Sources::from_env(args.cache_dir.clone(), settings.cache.dir.clone())
        .dir()
        .map_err(Error::Usage)?;
    let path = dir.join(sqlite::FILE_NAME);
    let limits = Limits {
        max_size: settings.cache.max_size,
        max_age: settings.cache.max_age,
        ..Limits::default()
    };
    // Inspecting a cache that does not exist yet must not create one.
    let open = || -> Result<SqliteStore> {
        let (store, notice) = SqliteStore::open(&dir, limits)?;
        if let Some(n) = notice {
            cache_warn(&Default::default())(&n.to_string());
        }
        Ok(store)
    };
    let text = match args.action {
        CacheAction::Path => format!("{}\n", path.display()),
        CacheAction::Clear if !path.exists() => {
            format!("nothing to clear: no cache at {}\n", path.display())
        }
        CacheAction::Clear => {
            let n = open()?.clear()?;
            format!("cleared {n} cached answer(s) from {}\n", path.display())
        }
        CacheAction::Stats { json } => {
            let stats = if path.exists() {
                open()?.stats()?
            } else {
                Stats {
                    path: path.clone(),
                    entries: 0,
                    bytes: 0,
                    file_bytes: 0,
                    oldest_ms: None,
                    newest_ms: None,
                    max_size: limits.max_size,
                    max_age_secs: limits.max_age.as_secs(),
                }
            };
            if json {
                format!(
                    "{}\n",
                    serde_json::to_string_pretty(&stats).expect("stats serialize")
                )
            } else {
                render(&stats)
            }
        }
    };
    emit(None, &text)?;
    Ok(0)
}

fn render(s: &Stats) -> String {
    let size = |b: u64| match b {
        0..1024 => format!("{b} B"),
        1024..1_048_576 => format!("{:.1} KiB", b as f64 / 1024.0),
        _ => format!("{:.1} MiB", b as f64 / 1_048_576.0),
    };
    let when = |ms: Option<u64>| {
        ms.map(|ms| {
            humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms),
            )
            .to_string()
        })
        .unwrap_or_else(|| "-".into())
    };
    format!(
        "cache:   {}\nentries: {} answer(s), {} of {} (maxSize), {} on disk\nages:    oldest {}, newest {}; kept for {} (maxAge)\n",
        s.path.display(),
        s.entries,
        size(s.bytes),
        size(s.max_size),
        size(s.file_bytes),
        when(s.oldest_ms),
        when(s.newest_ms),
        humantime::format_duration(std::time::Duration::from_secs(s.max_age_secs)),
    )
}
