//! The shared level in the fleet's Redis: one string per answer under
//! `warden:[namespace:]cache:<key>`, holding the sealed value (checksum, newline, bytes), set
//! to expire after the cache's maxAge. Every call goes through the [`Fleet`] handle, so it is
//! bounded and the first failure gives the fleet's one warning and turns Redis off for the
//! run (breakers, permits and the cache alike).

use super::key::Key;
use super::shared::{MAX_VALUE_BYTES, SharedError, SharedStore};
use crate::fleet::{Fleet, FleetError, SMALL_REPLY_BYTES};
use futures_util::future::BoxFuture;
use std::sync::LazyLock;
use std::time::Duration;

/// Reads values cut to [`MAX_VALUE_BYTES`] + 1 bytes, so an oversized value costs at most
/// that much to transfer and hold (MGET would send it whole, up to Redis's 512 MB).
static GET: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/shared_get.lua")));

/// The first part of every cache key in the fleet's namespace.
const KIND: &str = "cache";

/// Keys asked per `SCAN` step when counting or clearing the shared level.
const SCAN_COUNT: usize = 1000;

/// The longest key a `SCAN` step may honestly answer, beyond the namespace's prefix: warden's
/// answers are keyed by a 64-digit hash, so this leaves room for whatever else matches.
const SCAN_KEY_BYTES: u64 = 1024;

/// The most one value's part of a read may be: the value cut to [`MAX_VALUE_BYTES`] + 1 bytes
/// and its framing (`$262145\r\n…\r\n`).
const VALUE_REPLY_BYTES: u64 = MAX_VALUE_BYTES as u64 + 1 + 32;

/// The most a pipeline of writes may be answered with, per write (`+OK\r\n`, or an error line).
const WRITE_REPLY_BYTES: u64 = 256;

/// How long one walk of the namespace (count or clear) may take, in call bounds (60 s at
/// 250 ms): each step is bounded, and this bounds the steps, so a server whose cursor never
/// comes back to 0 (hostile or broken) cannot keep `warden cache stats` or `clear` running.
const SCAN_CALLS: u32 = 240;

/// The shared level over the fleet's connection.
pub struct RedisLevel(pub Fleet);

/// What `warden cache stats` shows of the shared level.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SharedStats {
    /// The server (without its password).
    pub server: String,
    /// The keys the answers live under (`warden:[namespace:]cache:*`).
    pub keys: String,
    /// Answers held; None when the server could not be asked (the warning says why).
    pub entries: Option<u64>,
}

/// The shared level was asked for and its server could not be reached (the fleet has
/// warned once): the server, without its password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the shared cache at redis {server} could not be reached")]
pub struct Unreachable {
    /// The server, as shown.
    pub server: String,
}

/// The shared level `settings` ask for (`[fleet] cache = true`), connected on the current
/// runtime. `Ok(None)`: not asked for. `Err(server)`: asked for, but the server could not be
/// reached (after the fleet's one warning). A missing server is a configuration error.
pub async fn connect(
    settings: &crate::config::Settings,
    env: impl Fn(&str) -> Option<String>,
    warn: super::Warn,
) -> crate::Result<Option<Result<RedisLevel, Unreachable>>> {
    let target = crate::fleet::target(&settings.fleet, env)?;
    super::check_shared(settings, target.is_some())?;
    let Some(target) = target.filter(|t| t.cache) else {
        return Ok(None);
    };
    let server = target.url.to_string();
    Ok(Some(
        Fleet::connect(target, warn)
            .await
            .map(RedisLevel)
            .ok_or(Unreachable { server }),
    ))
}

/// What `warden cache stats` shows of the level [`connect`] gave (None: no shared level).
pub async fn shared_stats(level: Option<Result<RedisLevel, Unreachable>>) -> Option<SharedStats> {
    match level? {
        Ok(level) => Some(level.stats().await),
        Err(Unreachable { server }) => Some(SharedStats {
            server,
            keys: String::new(),
            entries: None,
        }),
    }
}

impl RedisLevel {
    /// What `warden cache stats` shows: the answers held, if the server answers.
    pub async fn stats(&self) -> SharedStats {
        SharedStats {
            server: self.0.server().to_string(),
            keys: self.0.key(&[KIND, "*"]),
            entries: self.count().await.ok(),
        }
    }

    fn key(&self, k: &Key) -> String {
        self.0.key(&[KIND, k.as_str()])
    }

    /// `SCAN … MATCH` pattern of every cache key in this namespace (glob characters of the
    /// namespace escaped).
    fn pattern(&self) -> String {
        let prefix = self.0.key(&[KIND, ""]);
        let mut out = String::with_capacity(prefix.len() + 2);
        for c in prefix.chars() {
            if matches!(c, '*' | '?' | '[' | ']' | '\\') {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('*');
        out
    }

    /// Whether `key` (matched by [`Self::pattern`]) is an answer of this namespace: the
    /// pattern of no namespace (`warden:cache:*`) also matches every key of a namespace
    /// named `cache` (`warden:cache:brk:…`, `warden:cache:cache:…`), which have a `:` after
    /// the prefix; an answer's key (one escaped part) never does.
    fn is_answer_key(&self, key: &str) -> bool {
        let prefix = self.0.key(&[KIND, ""]);
        key.strip_prefix(&prefix)
            .is_some_and(|rest| !rest.is_empty() && !rest.contains(':'))
    }

    /// Walks the namespace's cache keys with `SCAN`, one bounded call per step, handing
    /// each step's keys to `each`. Stops at the first failed call.
    async fn scan<F, Fut>(&self, what: &str, mut each: F) -> Result<u64, FleetError>
    where
        F: FnMut(Vec<String>) -> Fut,
        Fut: std::future::Future<Output = Result<(), FleetError>>,
    {
        let pattern = self.pattern();
        // A step answers about COUNT keys, Redis may give more: twice as many, each at most the
        // prefix and SCAN_KEY_BYTES, with their framing.
        let key_bytes = pattern.len() as u64 + SCAN_KEY_BYTES + 16;
        let page = 2 * SCAN_COUNT as u64 * key_bytes + SMALL_REPLY_BYTES;
        let mut cursor: u64 = 0;
        let mut seen = 0u64;
        let budget = self.0.call_timeout().saturating_mul(SCAN_CALLS);
        let deadline = tokio::time::Instant::now() + budget;
        for steps in 0u64.. {
            if tokio::time::Instant::now() >= deadline {
                let why = format!(
                    "SCAN did not come back to cursor 0 within {} ({steps} steps)",
                    crate::config::format_duration(budget)
                );
                return Err(self.0.distrust(what, &why));
            }
            let mut cmd = redis::cmd("SCAN");
            cmd.arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(SCAN_COUNT);
            let (next, mut keys): (u64, Vec<String>) = self.0.query_sized(what, page, cmd).await?;
            keys.retain(|k| self.is_answer_key(k));
            seen += keys.len() as u64;
            if !keys.is_empty() {
                each(keys).await?;
            }
            if next == 0 {
                return Ok(seen);
            }
            cursor = next;
        }
        unreachable!("the steps are counted until the deadline")
    }

    /// How many answers the shared level holds in this namespace.
    pub async fn count(&self) -> Result<u64, FleetError> {
        self.scan("counting the shared cache", |_| async { Ok(()) })
            .await
    }

    /// Deletes every answer of this namespace from the shared level; how many there were.
    /// Other namespaces and the fleet's other keys are left alone.
    pub async fn clear(&self) -> Result<u64, FleetError> {
        let fleet = self.0.clone();
        self.scan("clearing the shared cache", move |keys| {
            let fleet = fleet.clone();
            async move {
                let mut cmd = redis::cmd("UNLINK");
                cmd.arg(keys);
                fleet.query::<u64>("clearing the shared cache", cmd).await?;
                Ok(())
            }
        })
        .await
    }
}

impl SharedStore for RedisLevel {
    fn location(&self) -> String {
        format!("redis {} ({})", self.0.server(), self.0.key(&[KIND, "…"]))
    }

    fn get_many<'a>(
        &'a self,
        keys: &'a [Key],
    ) -> BoxFuture<'a, Result<Vec<Option<Vec<u8>>>, SharedError>> {
        Box::pin(async move {
            let mut inv = GET.prepare_invoke();
            for k in keys {
                inv.key(self.key(k));
            }
            inv.arg(MAX_VALUE_BYTES);
            const WHAT: &str = "reading the shared cache";
            let most = keys.len() as u64 * VALUE_REPLY_BYTES + SMALL_REPLY_BYTES;
            let values: Vec<Option<Vec<u8>>> = self
                .0
                .call_sized(
                    WHAT,
                    most,
                    |mut c| async move { inv.invoke_async(&mut c).await },
                )
                .await?;
            if values.len() != keys.len() {
                // Not what the script returns: a hostile or broken server.
                let why = format!("answered {} values for {} keys", values.len(), keys.len());
                self.0.distrust(WHAT, &why);
                return Err(SharedError::BadReply(why));
            }
            Ok(values)
        })
    }

    fn put_many<'a>(
        &'a self,
        entries: &'a [(Key, Vec<u8>)],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), SharedError>> {
        let ms = ttl.as_millis().clamp(1, u64::MAX as u128) as u64;
        let mut pipe = redis::pipe();
        for (k, v) in entries {
            pipe.cmd("SET")
                .arg(self.key(k))
                .arg(v.as_slice())
                .arg("PX")
                .arg(ms)
                .ignore();
        }
        let most = entries.len() as u64 * WRITE_REPLY_BYTES + SMALL_REPLY_BYTES;
        Box::pin(async move {
            self.0
                .call_sized("writing the shared cache", most, |mut c| async move {
                    pipe.query_async::<()>(&mut c).await
                })
                .await
                .map_err(SharedError::from)
        })
    }
}
