//! Back-pressure shared across the fleet (DESIGN.md section 13): what one process learns
//! from an upstream's "not now" slows the others down too, so N processes do not each find
//! the provider's limit on their own.
//!
//! - Publishing ([`publisher`]): an engine event consumer. A back-pressure answer's
//!   Retry-After becomes a pause key of the upstream (`SET … PX`, a longer pause wins); a
//!   limit lowered by back-pressure becomes the upstream's lowered-limit key (the lowest
//!   wins) for [`SHARE_TTL`]. Both in one script (`lua/pace_publish.lua`), spawned off the
//!   event, so the engine never waits for Redis there.
//! - Reading ([`PacedBulkhead`]): the engine's `Bulkhead` around the one it would have had.
//!   Before each permit it makes one bounded call (a GET and a PTTL, pipelined): the upstream's
//!   lowered limit caps this process's effective limit (under the engine's own), and a
//!   pause still running is waited out inside the engine's permit wait, so it obeys the
//!   unit's budgets and cancellation, and under spillover other routes take the work.
//!
//! Only durations cross processes (PX, PTTL), never wall clocks, so clock skew between
//! hosts changes nothing. Whatever Redis answers is bounded: a limit to 1..=cap, a pause to
//! the review budget. When the fleet is off (the first failure, one warning), this is the
//! bulkhead under it and nothing more.

use super::{Fleet, Upstream, ms};
use crate::engine::bulkhead::{Bulkhead, Permit};
use crate::engine::limit::LimitReason;
use crate::engine::{Event, Sink};
use futures_util::future::BoxFuture;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

static PUBLISH: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/pace_publish.lua")));

/// How long a limit lowered by back-pressure holds the other processes: long enough for
/// them to meet it, short enough that a provider that recovered is used again.
pub const SHARE_TTL: Duration = Duration::from_secs(10);

/// The upstream's two keys: lowered limit, pause.
fn keys(fleet: &Fleet, up: &Upstream) -> (String, String) {
    (
        fleet.upstream_key("bplimit", up),
        fleet.upstream_key("bppause", up),
    )
}

/// An event consumer that publishes each route's back-pressure to the fleet. `upstreams`
/// by route index; `max_pause`: the review budget (no longer pause is published).
pub fn publisher(fleet: Fleet, upstreams: &[Upstream], max_pause: Duration) -> Sink {
    let keys: Vec<(String, String)> = upstreams.iter().map(|u| keys(&fleet, u)).collect();
    Sink::new(move |e| {
        let (route, limit, pause) = match e {
            Event::BackPressure {
                route_index,
                retry_after: Some(ra),
                ..
            } => (route_index, 0, ra.min(max_pause)),
            Event::LimitChanged {
                route_index,
                limit,
                reason: LimitReason::BackPressure | LimitReason::ProbeRefused,
                ..
            } => (route_index, limit.max(1), Duration::ZERO),
            _ => return,
        };
        let (Some((lk, pk)), true) = (keys.get(route).cloned(), fleet.is_on()) else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let fleet = fleet.clone();
        rt.spawn(async move {
            let _ = fleet
                .call("sharing back-pressure", |mut c| async move {
                    PUBLISH
                        .key(lk)
                        .key(pk)
                        .arg(limit)
                        .arg(ms(SHARE_TTL))
                        .arg(ms(pause))
                        .invoke_async::<u8>(&mut c)
                        .await
                })
                .await;
        });
    })
}

/// The engine's permits, with the fleet's shared back-pressure read before each one.
pub struct PacedBulkhead {
    fleet: Fleet,
    inner: Box<dyn Bulkhead>,
    keys: Vec<(String, String)>,
    /// The engine's effective limit, by route.
    own: Vec<AtomicUsize>,
    /// The fleet's lowered limit, by route (the cap when none).
    shared: Vec<AtomicUsize>,
    max_pause: Duration,
}

impl PacedBulkhead {
    /// `inner`: the permits to hand out; `upstreams` by route index; `max_pause`: the
    /// review budget, the longest pause read from Redis that is waited out.
    pub fn new(
        fleet: Fleet,
        inner: impl Bulkhead + 'static,
        upstreams: &[Upstream],
        max_pause: Duration,
    ) -> Self {
        let caps: Vec<usize> = (0..upstreams.len()).map(|r| inner.cap(r).max(1)).collect();
        PacedBulkhead {
            keys: upstreams.iter().map(|u| keys(&fleet, u)).collect(),
            own: caps.iter().map(|c| AtomicUsize::new(*c)).collect(),
            shared: caps.iter().map(|c| AtomicUsize::new(*c)).collect(),
            inner: Box::new(inner),
            fleet,
            max_pause,
        }
    }

    /// One bounded call: the upstream's lowered limit (bounded to 1..=cap, the cap when
    /// none) and the pause left (bounded to the review budget). None when the fleet is off.
    async fn read(&self, route: usize) -> Option<(usize, Duration)> {
        let (lk, pk) = self.keys.get(route)?.clone();
        // Plain GET and PTTL (not a script): an answer of another shape is no word at all.
        // The call runs in its own task: a permit wait is dropped when another route's
        // permit comes first or the unit is cancelled, and a call dropped in flight would
        // leave its reply to arrive with no read grant, which fails the connection (the
        // fleet's read cap) and turns the fleet off.
        let fleet = self.fleet.clone();
        let call = tokio::spawn(async move {
            fleet
                .call("reading shared back-pressure", |mut c| async move {
                    redis::pipe()
                        .cmd("GET")
                        .arg(lk)
                        .cmd("PTTL")
                        .arg(pk)
                        .query_async::<(redis::Value, redis::Value)>(&mut c)
                        .await
                })
                .await
        });
        let (limit, pause_ms) = call.await.ok()?.ok()?;
        let int = |v: &redis::Value| redis::from_redis_value::<i64>(v.clone()).unwrap_or(0);
        let (limit, pause_ms) = (int(&limit), int(&pause_ms));
        let cap = self.inner.cap(route).max(1);
        let limit = match usize::try_from(limit) {
            Ok(n) if n >= 1 => n.min(cap),
            _ => cap,
        };
        let pause = Duration::from_millis(u64::try_from(pause_ms).unwrap_or(0));
        Some((limit, pause.min(self.max_pause)))
    }

    /// This process's limit: the engine's, under the fleet's lowered one.
    fn apply(&self, route: usize) {
        let own = self.own[route].load(Ordering::SeqCst);
        let shared = self.shared[route].load(Ordering::SeqCst);
        self.inner.set_limit(route, own.min(shared).max(1));
    }

    /// Reads the fleet's word on `route`, applies its limit, and waits out its pause.
    async fn heed(&self, route: usize) {
        let Some((limit, pause)) = self.read(route).await else {
            return;
        };
        if self.shared[route].swap(limit, Ordering::SeqCst) != limit {
            self.apply(route);
        }
        if !pause.is_zero() {
            // Spread over a quarter of the pause, so the fleet's waiting units do not all
            // come back at the same instant and draw the next round of "not now".
            let spread = rand::random::<f64>() * 0.25;
            tokio::time::sleep(pause.mul_f64(1.0 + spread).min(self.max_pause)).await;
        }
    }

    /// The fleet's lowered limit on `route` as last read (the cap when none).
    pub fn shared_limit(&self, route: usize) -> usize {
        self.shared[route].load(Ordering::SeqCst)
    }
}

impl Bulkhead for PacedBulkhead {
    fn acquire(&self, route: usize) -> BoxFuture<'_, Permit> {
        Box::pin(async move {
            self.heed(route).await;
            self.inner.acquire(route).await
        })
    }

    fn try_acquire(&self, route: usize) -> Option<Permit> {
        // The fleet's word takes a round trip: while it is used, permits are waited for.
        if self.fleet.is_on() {
            return None;
        }
        self.inner.try_acquire(route)
    }

    fn acquire_new(&self, route: usize) -> BoxFuture<'_, Permit> {
        Box::pin(async move {
            self.heed(route).await;
            self.inner.acquire_new(route).await
        })
    }

    fn cap(&self, route: usize) -> usize {
        self.inner.cap(route)
    }

    fn set_limit(&self, route: usize, limit: usize) {
        if let Some(own) = self.own.get(route) {
            own.store(limit.max(1), Ordering::SeqCst);
            self.apply(route);
        }
    }

    fn peak(&self, route: usize) -> usize {
        self.inner.peak(route)
    }
}
