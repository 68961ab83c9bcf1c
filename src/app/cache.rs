//! `warden cache stats | clear | path`: the result cache's location, contents and reset.

use super::cli::{CacheAction, CacheArgs};
use super::{cache_warn, emit};
use warden::cache::location::Sources;
use warden::cache::redis::{self, RedisLevel, SharedStats};
use warden::cache::sqlite::{self, Limits, SqliteStore, Stats};
use warden::config;
use warden::error::{Error, Result};
use warden::prepare::{repo_root, start_dir};

pub(super) fn cache_cmd(args: &CacheArgs) -> Result<i32> {
    let dir = start_dir(args.dir.as_deref())?;
    let root = repo_root(&dir).unwrap_or(dir);
    let settings = config::load(args.config.as_deref(), Some(&root))?;
    settings.refuse_unknown_keys(args.strict_config)?;
    let dir = Sources::from_env(args.cache_dir.clone(), settings.cache.dir.clone())
        .dir()
        .map_err(|e| Error::Usage(e.to_string()))?;
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
    // The shared level (`[fleet] cache = true`) is looked at by stats and clear only.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("<tokio runtime>", e))?;
    let shared = match args.action {
        CacheAction::Path => None,
        _ => runtime.block_on(redis::connect(
            &settings,
            |k| std::env::var(k).ok(),
            cache_warn(&Default::default()),
        ))?,
    };
    let text = match args.action {
        CacheAction::Path => format!("{}\n", path.display()),
        CacheAction::Clear { shared: wanted } => {
            let mut text = if path.exists() {
                let n = open()?.clear()?;
                format!("cleared {n} cached answer(s) from {}\n", path.display())
            } else {
                format!("nothing to clear: no cache at {}\n", path.display())
            };
            text.push_str(&runtime.block_on(clear_shared(shared, wanted))?);
            text
        }
        CacheAction::Stats { json } => {
            let stats = if path.exists() {
                open()?.stats()?
            } else {
                Stats::empty(path.clone(), limits)
            };
            let shared = runtime.block_on(redis::shared_stats(shared));
            stats_text(&stats, shared.as_ref(), json)
        }
    };
    emit(None, &text)?;
    Ok(0)
}

/// Clears the shared level when `wanted` (`--shared`); otherwise says it was left alone.
async fn clear_shared(
    shared: Option<Result<RedisLevel, redis::Unreachable>>,
    wanted: bool,
) -> Result<String> {
    match (shared, wanted) {
        (None, false) => Ok(String::new()),
        (None, true) => Err(Error::Usage(
            "--shared: there is no shared cache level: it needs `[fleet] cache = true` and a Redis server (`[fleet] redis` or WARDEN_REDIS_URL)".into(),
        )),
        (Some(Err(redis::Unreachable { server })), true) => Err(Error::Usage(format!(
            "--shared: the shared cache at redis {server} could not be reached (see the warning above); nothing was deleted there"
        ))),
        (Some(Err(_)), false) => Ok(String::new()),
        (Some(Ok(level)), false) => Ok(format!(
            "the fleet's shared cache ({}) was left as it is: add --shared to clear it too\n",
            level.0.server()
        )),
        (Some(Ok(level)), true) => match level.clear().await {
            Ok(n) => Ok(format!(
                "cleared {n} cached answer(s) from the fleet's shared cache ({})\n",
                level.0.server()
            )),
            Err(e) => Err(Error::Usage(format!(
                "--shared: clearing the shared cache stopped: {e}"
            ))),
        },
    }
}

/// `stats` as JSON (the shared level under `shared`, null without one) or text.
fn stats_text(stats: &Stats, shared: Option<&SharedStats>, json: bool) -> String {
    if json {
        let mut v = serde_json::to_value(stats).expect("stats serialize");
        v["shared"] = serde_json::to_value(shared).expect("stats serialize");
        format!(
            "{}\n",
            serde_json::to_string_pretty(&v).expect("stats serialize")
        )
    } else {
        render(stats) + &shared.map(render_shared).unwrap_or_default()
    }
}

fn render_shared(s: &SharedStats) -> String {
    match s.entries {
        Some(n) => format!(
            "shared:  {n} answer(s) in redis {} ({})\n",
            s.server, s.keys
        ),
        None => format!(
            "shared:  redis {} could not be asked (see the warning above)\n",
            s.server
        ),
    }
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
        warden::config::format_duration(std::time::Duration::from_secs(s.max_age_secs)),
    )
}
