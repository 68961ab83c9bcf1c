//! Rate-limit windows shared across the fleet (docs/design.md section 13): the engine's
//! [`SharedWindows`] in Redis. A provider counts an account's remaining requests and tokens
//! for every process that uses its key, so N processes that each spent what the headers say
//! is left would overdraw it N times; here every process takes from, and reports answers
//! to, one account per upstream.
//!
//! - Keys per upstream: `rlreq` and `rltok` (hashes: limit, what is left, the reset and the
//!   window's length, in the server's own clock) and `rlfly` (the fleet's attempts in
//!   flight, leases that run out after one request deadline, so a dead process's attempts
//!   stop counting). One script (`lua/rate_window.lua`) takes and settles atomically; it
//!   merges an answer as the local pacing does (an older window changes nothing, the same
//!   window only lowers what is left, a newer one replaces it, attempts in flight are
//!   spoken for) and opens the next window when the first process comes after a reset.
//! - Only durations cross processes: a take that the window cannot cover answers the time
//!   to its reset, which the engine waits out (or spills) as for its local windows.
//! - Bounded: the script deletes what is not a window warden wrote (a length past
//!   [`MAX_RESET`], a reset further than one window away) and bounds what is left to
//!   0..=limit; here a wait is bounded by the window's length and the review budget, and an
//!   answer of another shape turns the fleet off with its one warning. Then, as when Redis
//!   is gone, the local pacing carries on alone.
//! - A route asks Redis only once its upstream is known to announce rate limits (an answer
//!   with headers here, or a window some process stored, looked up with a plain EXISTS), so
//!   routes of providers without headers cost no script call.

use super::{Fleet, Upstream, ms, process_tag};
use crate::engine::pacing::PauseReason;
use crate::engine::windows::{SharedTake, SharedWindows};
use crate::provider::ratelimit::{MAX_RESET, RateLimitInfo, Window};
use futures_util::future::BoxFuture;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

static SCRIPT: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/rate_window.lua")));

/// One route's keys: requests window, tokens window, attempts in flight.
#[derive(Clone)]
struct Keys([String; 3]);

struct RouteWindows {
    keys: Keys,
    /// Whether the upstream is known to announce rate limits.
    known: AtomicBool,
    /// This process's leases in `rlfly` (any one is given back per settled attempt).
    leases: Mutex<Vec<String>>,
}

/// The routes' rate-limit windows in the fleet's Redis.
pub struct FleetWindows {
    fleet: Fleet,
    routes: Vec<RouteWindows>,
    /// How long an attempt counts as in flight without being settled.
    lease: Duration,
    /// The longest wait a shared window may impose: the review budget.
    max_wait: Duration,
    me: String,
    next: AtomicU64,
}

impl FleetWindows {
    /// `upstreams` by route index; `lease`: one request deadline (an attempt's longest
    /// life); `max_wait`: the review budget.
    pub fn new(fleet: Fleet, upstreams: &[Upstream], lease: Duration, max_wait: Duration) -> Self {
        let routes = upstreams
            .iter()
            .map(|up| RouteWindows {
                keys: Keys(["rlreq", "rltok", "rlfly"].map(|k| fleet.upstream_key(k, up))),
                known: AtomicBool::new(false),
                leases: Mutex::default(),
            })
            .collect();
        FleetWindows {
            fleet,
            routes,
            lease: lease.max(Duration::from_millis(300)),
            max_wait,
            me: process_tag(),
            next: AtomicU64::new(0),
        }
    }

    /// Whether some process stored a window of the route's upstream: a plain EXISTS, whose
    /// answer of another shape is no window (not a reason to give the fleet up).
    async fn stored(&self, keys: Keys) -> bool {
        let fleet = self.fleet.clone();
        let [req, tok, _] = keys.0;
        // In its own task: a take dropped mid-call (the unit cancelled) must not leave a
        // reply arriving with no read grant, which would fail the connection.
        let call = tokio::spawn(async move {
            fleet
                .call("looking up shared rate-limit windows", |mut c| async move {
                    redis::cmd("EXISTS")
                        .arg(req)
                        .arg(tok)
                        .query_async::<redis::Value>(&mut c)
                        .await
                })
                .await
        });
        matches!(call.await, Ok(Ok(redis::Value::Int(n))) if n > 0)
    }

    async fn take_shared(&self, route: usize, tokens: u64) -> SharedTake {
        let Some(r) = self.routes.get(route) else {
            return SharedTake::Go;
        };
        if !self.fleet.is_on() {
            return SharedTake::Go;
        }
        if !r.known.load(Ordering::SeqCst) {
            if !self.stored(r.keys.clone()).await {
                return SharedTake::Go;
            }
            r.known.store(true, Ordering::SeqCst);
        }
        let id = format!("{}-{}", self.me, self.next.fetch_add(1, Ordering::SeqCst));
        let (fleet, keys, lease) = (self.fleet.clone(), r.keys.clone(), ms(self.lease));
        let lease_id = id.clone();
        let call = tokio::spawn(async move {
            fleet
                .call("taking from a shared rate-limit window", |mut c| {
                    let [req, tok, fly] = keys.0;
                    async move {
                        SCRIPT
                            .key(req)
                            .key(tok)
                            .key(fly)
                            .arg("take")
                            .arg(lease_id)
                            .arg(lease)
                            .arg(ms(MAX_RESET))
                            .arg(tokens)
                            .invoke_async::<redis::Value>(&mut c)
                            .await
                    }
                })
                .await
        });
        let Ok(Ok(reply)) = call.await else {
            return SharedTake::Go;
        };
        match verdict(&reply, self.max_wait) {
            Ok(SharedTake::Go) => {
                r.leases.lock().unwrap_or_else(|e| e.into_inner()).push(id);
                SharedTake::Go
            }
            Ok(short) => short,
            Err(why) => {
                self.fleet
                    .distrust("taking from a shared rate-limit window", &why.to_string());
                SharedTake::Go
            }
        }
    }

    async fn settle_shared(&self, route: usize, info: Option<RateLimitInfo>) {
        let Some(r) = self.routes.get(route) else {
            return;
        };
        let lease = r.leases.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let windows = info.unwrap_or_default();
        if windows.requests.is_some() || windows.tokens.is_some() {
            r.known.store(true, Ordering::SeqCst);
        } else if lease.is_none() {
            return;
        }
        if !self.fleet.is_on() {
            return;
        }
        let args = settle_args(lease.unwrap_or_default(), ms(self.lease), &windows);
        let (fleet, keys) = (self.fleet.clone(), r.keys.clone());
        let call = tokio::spawn(async move {
            fleet
                .call("settling a shared rate-limit window", |mut c| {
                    let [req, tok, fly] = keys.0;
                    async move {
                        let mut inv = SCRIPT.key(req);
                        inv.key(tok).key(fly);
                        for a in args {
                            inv.arg(a);
                        }
                        inv.invoke_async::<redis::Value>(&mut c).await
                    }
                })
                .await
        });
        if let Ok(Ok(reply)) = call.await
            && reply != redis::Value::Int(1)
        {
            self.fleet.distrust(
                "settling a shared rate-limit window",
                "the window script answered something other than 1",
            );
        }
    }
}

impl SharedWindows for FleetWindows {
    fn take(&self, route: usize, tokens: u64) -> BoxFuture<'_, SharedTake> {
        Box::pin(self.take_shared(route, tokens))
    }

    fn settle(&self, route: usize, info: Option<RateLimitInfo>) -> BoxFuture<'_, ()> {
        Box::pin(self.settle_shared(route, info))
    }
}

/// The settle script's arguments: the lease given back, and each window the answer gave
/// (present, limit or 0, remaining, ms to its reset, each already bounded by the header
/// reader and bounded again here).
fn settle_args(lease: String, lease_ms: u64, info: &RateLimitInfo) -> Vec<String> {
    let mut a = vec![
        "settle".to_string(),
        lease,
        lease_ms.to_string(),
        ms(MAX_RESET).to_string(),
    ];
    for w in [&info.requests, &info.tokens] {
        let cap = crate::provider::ratelimit::MAX_COUNT;
        let (present, limit, remaining, reset) = match w {
            Some(Window {
                limit,
                remaining,
                reset_after,
            }) => (
                "1",
                limit.unwrap_or(0).min(cap),
                (*remaining).min(limit.unwrap_or(cap)).min(cap),
                ms((*reset_after).min(MAX_RESET)),
            ),
            None => ("0", 0, 0, 0),
        };
        a.extend([
            present.to_string(),
            limit.to_string(),
            remaining.to_string(),
            reset.to_string(),
        ]);
    }
    a
}

/// An answer the window script never gives (a broken or hostile server).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum BadVerdict {
    #[error("the window script answered something other than three numbers")]
    NotNumbers,
    #[error("the window script answered {0} numbers, not 3")]
    Count(usize),
    #[error("the window script answered the verdict {0}")]
    Code(i64),
    #[error("the window script answered a wait of {0}ms")]
    Wait(i64),
}

/// The take script's answer, bounded: `{1, 0, 0}` taken; `{2 | 3, ms to the reset, window
/// ms}` short of requests or tokens, the wait at most the window's length, [`MAX_RESET`]
/// and `max_wait` (the review budget). Anything else is no answer the script gives (the
/// reason, for the fleet's one warning).
fn verdict(reply: &redis::Value, max_wait: Duration) -> Result<SharedTake, BadVerdict> {
    let v: Vec<i64> = redis::from_redis_value(reply.clone()).map_err(|_| BadVerdict::NotNumbers)?;
    let [code, wait_ms, len_ms] = v[..] else {
        return Err(BadVerdict::Count(v.len()));
    };
    let reason = match code {
        1 => return Ok(SharedTake::Go),
        2 => PauseReason::Requests,
        3 => PauseReason::Tokens,
        other => return Err(BadVerdict::Code(other)),
    };
    // A window that is short resets in the future: the script rolls one that is past.
    if wait_ms < 1 {
        return Err(BadVerdict::Wait(wait_ms));
    }
    let ms_of = |n: i64| Duration::from_millis(u64::try_from(n).unwrap_or(0));
    let longest = ms_of(len_ms).max(Duration::from_millis(1)).min(MAX_RESET);
    Ok(SharedTake::Short {
        reason,
        wait: ms_of(wait_ms).min(longest).min(max_wait),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value::{Array, BulkString, Int, Nil};

    const BUDGET: Duration = Duration::from_secs(30);

    fn ints(v: &[i64]) -> redis::Value {
        Array(v.iter().map(|n| Int(*n)).collect())
    }

    #[test]
    fn a_take_is_go_or_a_wait_bounded_by_the_window_and_the_budget() {
        assert_eq!(verdict(&ints(&[1, 0, 0]), BUDGET), Ok(SharedTake::Go));
        let short = |v: &[i64], budget| verdict(&ints(v), budget).unwrap();
        assert_eq!(
            short(&[2, 400, 1000], BUDGET),
            SharedTake::Short {
                reason: PauseReason::Requests,
                wait: Duration::from_millis(400)
            }
        );
        // A reset further than its window (a day for a 1 s window) waits one window.
        assert_eq!(
            short(&[3, 86_400_000, 1000], BUDGET),
            SharedTake::Short {
                reason: PauseReason::Tokens,
                wait: Duration::from_secs(1)
            }
        );
        // A window longer than warden paces by, and the review budget, bound it too.
        let wait = |v: &[i64], b| match short(v, b) {
            SharedTake::Short { wait, .. } => wait,
            SharedTake::Go => panic!("short"),
        };
        assert_eq!(wait(&[2, i64::MAX, i64::MAX], BUDGET), BUDGET);
        assert_eq!(
            wait(&[2, i64::MAX, i64::MAX], Duration::from_secs(3600)),
            MAX_RESET
        );
        assert_eq!(wait(&[2, 5, -7], BUDGET), Duration::from_millis(1));
    }

    #[test]
    fn an_answer_no_script_gives_is_a_reason_to_give_the_fleet_up() {
        for bad in [
            ints(&[1, 0]),
            ints(&[4, 0, 0]),
            ints(&[-1, 10, 10]),
            ints(&[2, 0, 1000]),
            ints(&[3, -5, 1000]),
            Int(1),
            Nil,
            BulkString(b"closed".to_vec()),
            Array(vec![BulkString(b"x".to_vec()), Int(0), Int(0)]),
        ] {
            assert!(verdict(&bad, BUDGET).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn settle_arguments_are_bounded_and_name_each_window() {
        let info = RateLimitInfo {
            requests: Some(Window {
                limit: Some(5),
                remaining: 9,
                reset_after: Duration::from_secs(3600),
            }),
            tokens: None,
        };
        let a = settle_args("me-1".into(), 700, &info);
        assert_eq!(
            a,
            [
                "settle", "me-1", "700", "600000", "1", "5", "5", "600000", "0", "0", "0", "0"
            ]
        );
    }
}
