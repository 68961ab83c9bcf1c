//! The result cache: a model's answer about a chunk depends on the skill, the model and the
//! chunk's text with its context, not on which push it arrived in. Reviewed answers are
//! kept by content address ([`key`]), so a re-review asks only about what changed.
//!
//! The cache is an optimisation and never a reason for a review to fail or to report
//! something the model did not say: a missing, locked, corrupt or unwritable store gives
//! one warning and the review goes on as if cold; a value whose checksum does not match,
//! or that does not decode, is a miss.

pub mod key;
pub mod location;
pub mod redis;
mod session;
pub mod shared;
pub mod sqlite;
pub mod store;
pub mod value;

pub use key::Key;
pub use session::{Levels, ReviewCache};
pub use store::{Blob, Millis, Store, StoreError};
pub use value::Answer;

use crate::config::{CacheSettings, ProviderKind, Route, Settings};
use crate::error::Error;
use crate::fleet::Fleet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where warnings go (stderr in the command; a list in tests).
pub type Warn = Arc<dyn Fn(&str) + Send + Sync>;

/// The cache as a review uses it: one store behind checksums, decoding and the
/// warn-once-then-go-cold rule.
pub struct Cache {
    store: Box<dyn Store>,
    warn: Warn,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    warned: bool,
    /// After a store fault the rest of the run goes without the cache.
    off: bool,
}

/// How the review command asks for the cache.
pub struct Request<'a> {
    /// `[cache]` from the config.
    pub settings: &'a CacheSettings,
    /// `--no-cache`.
    pub disabled: bool,
    /// What decides the directory.
    pub sources: location::Sources,
}

/// Now, in Unix milliseconds.
pub(crate) fn now_ms() -> Millis {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as Millis
}

impl Levels {
    /// The levels of a review: the local store (see [`Cache::open`]) and, with
    /// `[fleet] cache = true` and a connected fleet, the shared level in its Redis. The
    /// cache's off switches (`--no-cache`, `[cache] enabled = false`) turn off both.
    pub fn open(req: Request, fleet: Option<&Fleet>, warn: Warn) -> Levels {
        let max_age = req.settings.max_age;
        let on = !req.disabled && req.settings.enabled;
        let shared = fleet.filter(|f| on && f.cache_enabled()).map(|f| {
            let level = redis::RedisLevel(f.clone());
            shared::Shared::new(Box::new(level), max_age, warn.clone())
        });
        Levels {
            local: Cache::open(req, warn),
            shared,
            max_age,
        }
    }
}

/// What a review over simulated routes says instead of opening the cache.
pub(crate) const OFF_FOR_SIMULATED: &str = "result cache: off for simulated routes (the simulator's answers are neither read from it nor written to it)";

/// Whether every route of the review is the built-in simulator (`--sim`, or `provider =
/// "sim"` routes). Its answers are made up for the run: kept, they would replay as "from
/// cache" in the next run and hide the profile asked for (`--sim=outage` after a healthy
/// run would show no outage). Such a review neither reads nor writes the cache.
pub(crate) fn simulated_only(routes: &[Route]) -> bool {
    !routes.is_empty() && routes.iter().all(|r| r.provider == ProviderKind::Sim)
}

/// `[fleet] cache = true` asks for a shared level: without a Redis server (`[fleet] redis`
/// or `WARDEN_REDIS_URL`) that is a configuration error, not a silently local cache.
/// `server_named`: whether the fleet has a server.
pub(crate) fn check_shared(settings: &Settings, server_named: bool) -> Result<(), Error> {
    if !settings.fleet.cache || server_named {
        return Ok(());
    }
    let message = "[fleet] cache = true needs a Redis server to share answers through: set `redis = \"redis://HOST:6379\"` in [fleet] or export WARDEN_REDIS_URL, or remove `cache = true`".to_string();
    Err(match &settings.config_path {
        Some(path) => Error::ConfigFile {
            path: path.clone(),
            message,
        },
        None => Error::Usage(message),
    })
}

impl Cache {
    /// The local store for a review, or None when the cache is turned off, or cannot be
    /// used (then after one warning).
    pub fn open(req: Request, warn: Warn) -> Option<Cache> {
        if req.disabled || !req.settings.enabled {
            return None;
        }
        let dir = match req.sources.dir() {
            Ok(d) => d,
            Err(why) => {
                warn(&format!("result cache: {why}; reviewing without it"));
                return None;
            }
        };
        let limits = sqlite::Limits {
            max_size: req.settings.max_size,
            max_age: req.settings.max_age,
            ..sqlite::Limits::default()
        };
        match sqlite::SqliteStore::open(&dir, limits) {
            Ok((store, notice)) => {
                let cache = Cache::new(Box::new(store), warn);
                if let Some(n) = notice {
                    cache.say(&format!(
                        "result cache: {n}; this review starts with an empty cache"
                    ));
                }
                Some(cache)
            }
            Err(e) => {
                warn(&format!(
                    "result cache: {e}; reviewing without it (as if cold)"
                ));
                None
            }
        }
    }

    /// A cache over `store`; `warn` is told once when a store fault turns it off.
    pub fn new(store: Box<dyn Store>, warn: Warn) -> Cache {
        Cache {
            store,
            warn,
            state: Mutex::new(State::default()),
        }
    }

    /// The first warning of the run goes out; later ones would only repeat it.
    fn say(&self, msg: &str) {
        let mut st = self.state.lock().expect("cache state");
        if !st.warned {
            st.warned = true;
            (self.warn)(msg);
        }
    }

    fn fault(&self, e: &StoreError) {
        self.say(&format!(
            "result cache: {e}; reviewing without it (as if cold)"
        ));
        self.state.lock().expect("cache state").off = true;
    }

    fn off(&self) -> bool {
        self.state.lock().expect("cache state").off
    }

    /// The answer stored under each key. Anything that is not an intact answer is a miss.
    pub fn get(&self, keys: &[Key]) -> Vec<Option<Answer>> {
        if self.off() || keys.is_empty() {
            return vec![None; keys.len()];
        }
        let blobs = match self.store.get_many(keys, now_ms()) {
            Ok(b) => b,
            Err(e) => {
                self.fault(&e);
                return vec![None; keys.len()];
            }
        };
        let mut broken = 0;
        let answers = blobs
            .into_iter()
            .map(|b| {
                let b = b?;
                let answer = b.intact().then(|| Answer::from_bytes(&b.value)).flatten();
                broken += usize::from(answer.is_none());
                answer
            })
            .collect();
        if broken > 0 {
            self.say(&format!(
                "result cache {}: {broken} stored answer(s) failed their checksum or did not decode; they were asked again",
                self.store.location()
            ));
        }
        answers
    }

    /// Stores new answers and marks reused ones as used. A failure warns (once) and is
    /// otherwise ignored: the review already has its results.
    pub fn put(&self, entries: &[(Key, Answer)], used: &[Key]) {
        if self.off() || (entries.is_empty() && used.is_empty()) {
            return;
        }
        let blobs: Vec<(Key, Blob)> = entries
            .iter()
            .map(|(k, a)| (k.clone(), Blob::seal(a.to_bytes())))
            .collect();
        if let Err(e) = self.store.put_many(&blobs, used, now_ms()) {
            self.fault(&e);
        }
    }
}

#[cfg(test)]
mod tests;
