//! Fleet mode: route health and capacity shared through Redis by every warden process of
//! a team's CI (`[fleet] redis`). A [`Fleet`] is one connection to that server; what is
//! shared lives under keys named by [`Fleet::key`] / [`Fleet::upstream_key`] (each
//! route's [`Upstream`], under the fleet's namespace): the engine's breakers
//! ([`breakers::FleetBreakers`]) and permits ([`bulkhead::FleetBulkhead`]), back-pressure
//! ([`pace`]) and the providers' rate-limit windows ([`windows::FleetWindows`]).
//!
//! Redis is a helper, never a dependency: every call is bounded ([`CALL_TIMEOUT`]), and
//! the first call that fails (down, slow, refusing, wrong password, protocol garbage)
//! gives one warning and turns the fleet off for the rest of the run, so the review
//! continues on local state with the same outcome it would have had without `[fleet]`.

pub mod breakers;
mod budget;
pub mod bulkhead;
mod connect;
mod dial;
mod floor;
pub mod pace;
mod pace_lease;
pub mod upstream;
pub mod windows;

pub use connect::{Target, target, unused_caps_warning};
pub use upstream::{Upstream, escape};

use redis::aio::MultiplexedConnection;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The longest any one Redis call may take before the fleet is given up for the run.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_millis(250);

/// The longest connecting (TCP, TLS, AUTH, HELLO) may take.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The most a reply to [`Fleet::call`] may be (see [`Fleet::call_sized`]): the breaker and
/// permit scripts answer a few numbers and a state, a pipeline of writes a status each, and an
/// error is a line.
pub(crate) const SMALL_REPLY_BYTES: u64 = 16 * 1024;

/// Where the fleet's one warning goes (stderr in the command; a list in tests).
pub type Warn = Arc<dyn Fn(&str) + Send + Sync>;

/// Why a fleet call gave no answer. Whatever it is, the caller goes on with local state:
/// the warning has been given (once per run) by the time the caller sees this.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FleetError {
    /// The call took longer than its bound.
    #[error("fleet: redis {server} did not answer {what} within {ms}ms")]
    Timeout {
        /// The server, without its password.
        server: String,
        /// The call.
        what: String,
        /// Its bound.
        ms: u128,
    },
    /// Redis answered with an error, or the connection failed.
    #[error("fleet: redis {server} failed {what}: {message}")]
    Redis {
        /// The server, without its password.
        server: String,
        /// The call.
        what: String,
        /// Redis's message (no password in it).
        message: String,
    },
    /// An earlier call failed: the fleet is off for the rest of this run.
    #[error("fleet: redis is not used for the rest of this run (an earlier call failed)")]
    Off,
}

/// A connection to the fleet's Redis: cheap to clone (one shared connection), safe to use
/// from any task of the runtime it was made on. It reads no more than the calls in flight can
/// honestly be answered with (see [`Fleet::call_sized`]); it does not reconnect, since the
/// first failure turns the fleet off anyway.
#[derive(Clone)]
pub struct Fleet(Arc<Inner>);

struct Inner {
    conn: MultiplexedConnection,
    /// Ends the connection when the last handle goes.
    _driver: connect::Driver,
    /// What the connection may still read (see [`budget`]).
    budget: budget::ReadBudget,
    /// `warden:` plus the escaped namespace and `:` when one is set.
    prefix: String,
    call_timeout: Duration,
    /// Set by the first failed call: from then on every call is `Off` at once.
    off: AtomicBool,
    warn: Warn,
    /// The server as messages show it (no password).
    server: String,
    /// The password in every form, so that it can be scrubbed from any message that
    /// echoes it (see [`connect::secrets`]).
    secrets: Vec<String>,
    /// `[fleet] cache`.
    cache: bool,
}

impl Fleet {
    /// Connects to `target` within [`CONNECT_TIMEOUT`]. When that fails (unreachable,
    /// refused, wrong password, not Redis), gives the one warning and returns None: the run
    /// is local.
    pub async fn connect(target: Target, warn: Warn) -> Option<Fleet> {
        Self::connect_with(target, warn, CALL_TIMEOUT).await
    }

    /// As [`Fleet::connect`], with another bound for each call (tests).
    pub async fn connect_with(target: Target, warn: Warn, call_timeout: Duration) -> Option<Fleet> {
        let server = target.url.to_string();
        let budget = budget::ReadBudget::default();
        match connect::open(&target, call_timeout, &budget).await {
            Ok(opened) => Some(Fleet(Arc::new(Inner {
                conn: opened.conn,
                _driver: opened.driver,
                budget,
                prefix: prefix(target.namespace.as_deref()),
                call_timeout,
                off: AtomicBool::new(false),
                warn,
                server,
                secrets: connect::secrets(&target),
                cache: target.cache,
            }))),
            Err(why) => {
                warn(&local_warning(&why.to_string()));
                None
            }
        }
    }

    /// A key in the fleet's namespace: `warden:[namespace:]part:part…`, each part escaped
    /// (see [`escape`]) so that parts never run into each other. Use a first part naming
    /// what the key holds (`"brk"`, `"permits"`, `"cache"`) so features never collide.
    pub fn key(&self, parts: &[&str]) -> String {
        let mut k = self.0.prefix.clone();
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                k.push(':');
            }
            k.push_str(&escape(p));
        }
        k
    }

    /// The key of `kind` (a feature's first part) for one upstream:
    /// `warden:[ns:]kind:provider:host:model`.
    pub fn upstream_key(&self, kind: &str, up: &Upstream) -> String {
        self.key(&[kind, &up.provider, &up.host, &up.model])
    }

    /// Runs one Redis exchange within the call bound, its reply at most
    /// [`SMALL_REPLY_BYTES`] (see [`Fleet::call_sized`] for larger ones). `what` names it in
    /// the warning ("recording an attempt"). `f` gets a clone of the connection:
    ///
    /// ```no_run
    /// # async fn demo(fleet: warden::fleet::Fleet) -> Result<(), warden::fleet::FleetError> {
    /// let key = fleet.key(&["demo", "counter"]);
    /// let n: u64 = fleet
    ///     .call("counting", |mut c| async move {
    ///         redis::cmd("INCR").arg(key).query_async(&mut c).await
    ///     })
    ///     .await?;
    /// # Ok(()) }
    /// ```
    ///
    /// The first failure (error or timeout) gives the fleet's one warning and turns the
    /// fleet off: this call and every later one return an error at once, and the caller
    /// goes on with local state.
    pub async fn call<T, F, Fut>(&self, what: &str, f: F) -> Result<T, FleetError>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        self.call_sized(what, SMALL_REPLY_BYTES, f).await
    }

    /// As [`Fleet::call`], for an exchange whose replies together are at most `reply_bytes`
    /// (RESP framing included) when the server is honest. The connection may read that much
    /// more while the call is in flight; a server that sends more than the calls in flight
    /// can be answered with (an endless bulk string, a huge declared length) fails the
    /// connection after at most that many bytes, and the call fails like any other.
    pub async fn call_sized<T, F, Fut>(
        &self,
        what: &str,
        reply_bytes: u64,
        f: F,
    ) -> Result<T, FleetError>
    where
        F: FnOnce(MultiplexedConnection) -> Fut,
        Fut: Future<Output = redis::RedisResult<T>>,
    {
        if !self.is_on() {
            return Err(FleetError::Off);
        }
        let i = &self.0;
        let grant = i.budget.grant(reply_bytes);
        let answer = tokio::time::timeout(i.call_timeout, f(i.conn.clone())).await;
        drop(grant);
        let err = match (answer, i.budget.overrun()) {
            (Ok(Ok(v)), _) => return Ok(v),
            // Whichever call the connection's failure reached first, the cap is the cause.
            (_, Some(why)) => FleetError::Redis {
                server: i.server.clone(),
                what: what.to_string(),
                message: why,
            },
            (Ok(Err(e)), None) if !e.is_timeout() => FleetError::Redis {
                server: i.server.clone(),
                what: what.to_string(),
                message: self.scrub(&e.to_string()),
            },
            // The client's own timeout or the call bound: both are the bound.
            _ => FleetError::Timeout {
                server: i.server.clone(),
                what: what.to_string(),
                ms: i.call_timeout.as_millis(),
            },
        };
        self.turn_off(&err);
        Err(err)
    }

    /// One command within the call bound (see [`Fleet::call`]).
    pub async fn query<T: redis::FromRedisValue + Send>(
        &self,
        what: &str,
        cmd: redis::Cmd,
    ) -> Result<T, FleetError> {
        self.query_sized(what, SMALL_REPLY_BYTES, cmd).await
    }

    /// One command whose reply is at most `reply_bytes` (see [`Fleet::call_sized`]).
    pub(crate) async fn query_sized<T: redis::FromRedisValue + Send>(
        &self,
        what: &str,
        reply_bytes: u64,
        cmd: redis::Cmd,
    ) -> Result<T, FleetError> {
        self.call_sized(what, reply_bytes, |mut c| async move {
            cmd.query_async(&mut c).await
        })
        .await
    }

    /// Whether the fleet is still used (no call has failed).
    pub fn is_on(&self) -> bool {
        !self.0.off.load(Ordering::SeqCst)
    }

    /// `[fleet] cache`: whether the result cache should use Redis as its second level.
    pub(crate) fn cache_enabled(&self) -> bool {
        self.0.cache
    }

    /// The server, as messages show it (without its password).
    pub fn server(&self) -> &str {
        &self.0.server
    }

    /// The fleet's bound on one call.
    pub(crate) fn call_timeout(&self) -> Duration {
        self.0.call_timeout
    }

    /// Gives the fleet up for the run over an answer no warden process could have given (a
    /// hostile or broken server: an unknown state, an open period longer than this
    /// process's policy allows): the one warning, then local state, as for a failed call.
    pub(crate) fn distrust(&self, what: &str, why: &str) -> FleetError {
        let err = FleetError::Redis {
            server: self.0.server.clone(),
            what: what.to_string(),
            message: self.scrub(why),
        };
        self.turn_off(&err);
        err
    }

    /// Turns the fleet off for the run, giving the one warning if it was on.
    fn turn_off(&self, why: &FleetError) {
        if !self.0.off.swap(true, Ordering::SeqCst) {
            (self.0.warn)(&local_warning(&why.to_string()));
        }
    }

    fn scrub(&self, text: &str) -> String {
        connect::scrub(text, &self.0.secrets)
    }
}

/// The fleet's one warning.
fn local_warning(why: &str) -> String {
    let why = why.strip_prefix("fleet: ").unwrap_or(why);
    format!(
        "fleet: {why}; the fleet's redis is not used for the rest of this run: breakers, permits and the cache are this process's own"
    )
}

/// This process, for values that must be unique across the fleet (window entries, probe
/// and permit leases): its pid and 64 random bits.
fn process_tag() -> String {
    format!("{}-{:016x}", std::process::id(), rand::random::<u64>())
}

/// Milliseconds, as Lua scripts take them (saturating).
fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn prefix(namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("warden:{}:", escape(ns)),
        None => "warden:".to_string(),
    }
}
