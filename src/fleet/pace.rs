//! Back-pressure shared across the fleet (docs/design.md section 13): what one process learns
//! from an upstream's "not now" slows the others down too, so N processes do not each find
//! the provider's limit on their own.
//!
//! - Publishing ([`publisher`]): an engine event consumer. A back-pressure answer's
//!   Retry-After becomes a pause key of the upstream (`SET … PX`, a longer pause wins). A
//!   limit lowered by back-pressure becomes the upstream's *fleet total* for [`SHARE_TTL`]:
//!   what the whole fleet had in flight times the engine's decrease factor ([`BACKOFF`]),
//!   at least 1. The fleet's in flight is the leases held under the total when one is set,
//!   else the sum of each live process's load as it last reported it (see below). A lower
//!   total replaces a higher one, at most once per [`ROUND`] (one overshoot answered 429
//!   in several attempts of several processes is one signal). All in one script
//!   (`lua/pace_publish.lua`), spawned off the event, so the engine never waits for Redis.
//! - Reading ([`PacedBulkhead`]): the engine's `Bulkhead` around the one it would have had.
//!   Before each permit it makes one bounded call (pipelined, no script): the fleet total
//!   and the pause left, and it reports this process's load on the upstream (a key with a
//!   PX expiry, and its name in the upstream's members). The total caps this process's
//!   effective limit (under the engine's own), and a pause still running is waited out
//!   inside the engine's permit wait, so it obeys the unit's budgets and cancellation, and
//!   under spillover other routes take the work.
//! - Sharing the total (`pace_lease.rs`): while a total is set, each attempt also holds one
//!   of its leases, so the fleet as a whole stays under it, and the total grows back by one
//!   after enough leases at it, as the engine's own limit probes above its known-good level.
//!
//! Why a fleet total with leases: measured (docs/benchmarks.md, "Fleet: shared back-pressure", `benches/fleet_pace.rs`)
//! with two processes against a provider that serves 2 at once, each process taking the
//! whole lowered limit (the first version) put N times what the provider served in flight
//! as soon as a shared pause ended, and the fleet drew about as many answers of 429 as
//! without sharing (7 against 8 a pair in the test, the second process starting a second
//! after the first); with the total leased, 2 to 4. A fixed share (total / live members)
//! was not built: it needs every process to agree on who is alive, strands the share of a
//! process with nothing left to send, and has processes resuming together after a pause
//! each come back at its full share at once. Leases bound the sum exactly, go to whichever
//! process has work, and make processes resuming together take turns under the total. They
//! cost a round trip per attempt only while a total is set (no back-pressure, no cost).
//!
//! Only durations cross processes (PX, PTTL, and lease expiries on Redis's own clock),
//! never a host's clock, so clock skew between hosts changes nothing. Whatever Redis answers
//! is bounded: a total to 1..=cap for the local limit, a pause to the review budget, each
//! member's load and the members read. When the fleet is off (the first failure, one
//! warning), this is the bulkhead under it and nothing more.

use super::pace_lease::{self, Lease, LeaseKeys, SHARE_TTL};
use super::{Fleet, Upstream, ms};
use crate::engine::bulkhead::{Bulkhead, Permit};
use crate::engine::limit::{BACKOFF, LimitReason};
use crate::engine::{Event, Sink};
use futures_util::future::BoxFuture;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

static PUBLISH: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/pace_publish.lua")));

/// How long a process's load report counts without a new one: as long as a total holds.
pub(crate) const LOAD_TTL: Duration = SHARE_TTL;

/// The most members whose loads are summed (a larger fleet's total is then too low, which
/// is slower, not more back-pressure), and the most one member's load counts for.
const MOST_MEMBERS: usize = 64;
const MOST_LOAD: usize = 1024;

/// Lowerings of the fleet total this close together are one round of back-pressure (one
/// overshoot answered 429 to several attempts, in several processes, is one signal).
pub(crate) const ROUND: Duration = Duration::from_secs(1);

/// An upstream's keys.
#[derive(Clone)]
struct Keys {
    /// The fleet total (a limit lowered by back-pressure) and its leases.
    lease: LeaseKeys,
    pause: String,
    /// The processes that reported a load, and the prefix of each one's load key.
    members: String,
    load: String,
}

fn keys(fleet: &Fleet, up: &Upstream) -> Keys {
    Keys {
        lease: LeaseKeys {
            leases: fleet.upstream_key("bpleases", up),
            total: fleet.upstream_key("bplimit", up),
            growth: fleet.upstream_key("bpgrowth", up),
        },
        pause: fleet.upstream_key("bppause", up),
        members: fleet.upstream_key("bpmembers", up),
        load: format!("{}:", fleet.upstream_key("bpload", up)),
    }
}

/// An event consumer that publishes each route's back-pressure to the fleet. `upstreams`
/// by route index; `max_pause`: the review budget (no longer pause is published).
pub fn publisher(fleet: Fleet, upstreams: &[Upstream], max_pause: Duration) -> Sink {
    let keys: Vec<Keys> = upstreams.iter().map(|u| keys(&fleet, u)).collect();
    Sink::new(move |s| {
        let (route, lowered, pause) = match &s.event {
            Event::BackPressure {
                route_index,
                retry_after: Some(ra),
                ..
            } => (*route_index, false, (*ra).min(max_pause)),
            Event::LimitChanged {
                route_index,
                reason: LimitReason::BackPressure | LimitReason::ProbeRefused,
                ..
            } => (*route_index, true, Duration::ZERO),
            _ => return,
        };
        let (Some(k), true) = (keys.get(route).cloned(), fleet.is_on()) else {
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
                        .key(k.lease.total)
                        .key(k.pause)
                        .key(k.members)
                        .key(k.lease.leases)
                        .key(k.lease.growth)
                        .arg(u8::from(lowered))
                        .arg(ms(SHARE_TTL))
                        .arg(ms(pause))
                        .arg(k.load)
                        .arg(BACKOFF)
                        .arg(MOST_MEMBERS)
                        .arg(MOST_LOAD)
                        .arg(ms(ROUND))
                        .arg(pace_lease::MOST_PROBE_WAIT)
                        .invoke_async::<i64>(&mut c)
                        .await
                })
                .await;
        });
    })
}

/// One route's state in this process.
struct RouteState {
    keys: Keys,
    /// The engine's effective limit.
    own: AtomicUsize,
    /// The fleet total as last read, bounded to 1..=cap (the cap when none).
    shared: AtomicUsize,
    /// Whether a fleet total was set at the last read: attempts then take leases.
    total_set: std::sync::atomic::AtomicBool,
    /// This process's permits of the route held now.
    held: Arc<AtomicUsize>,
    /// Its units asking for one now: with `held`, its load (what it would have in flight).
    asking: AtomicUsize,
}

/// The engine's permits, with the fleet's shared back-pressure read before each one.
pub struct PacedBulkhead {
    fleet: Fleet,
    inner: Box<dyn Bulkhead>,
    routes: Vec<RouteState>,
    max_pause: Duration,
    /// This process in the fleet's members and lease ids.
    me: String,
    next: AtomicU64,
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
        let routes = upstreams
            .iter()
            .enumerate()
            .map(|(r, u)| {
                let cap = inner.cap(r).max(1);
                RouteState {
                    keys: keys(&fleet, u),
                    own: AtomicUsize::new(cap),
                    shared: AtomicUsize::new(cap),
                    total_set: Default::default(),
                    held: Arc::default(),
                    asking: AtomicUsize::new(0),
                }
            })
            .collect();
        PacedBulkhead {
            routes,
            inner: Box::new(inner),
            fleet,
            max_pause,
            me: super::process_tag(),
            next: AtomicU64::new(0),
        }
    }

    /// One bounded call: reports this process's load (`load`: its permits held, the one
    /// asked for included) and reads the fleet total (None when none or not a whole number
    /// ≥ 1) and the pause left (bounded to the review budget). None when the fleet is off.
    async fn read(&self, route: usize, load: usize) -> Option<(Option<u64>, Duration)> {
        let k = self.routes.get(route)?.keys.clone();
        let me = self.me.clone();
        let load_ms = ms(LOAD_TTL);
        // Plain commands pipelined (not a script): an answer of another shape is no word at
        // all. The call runs in its own task: a permit wait is dropped when another route's
        // permit comes first or the unit is cancelled, and a call dropped in flight would
        // leave its reply to arrive with no read grant, which fails the connection (the
        // fleet's read cap) and turns the fleet off.
        let fleet = self.fleet.clone();
        let call = tokio::spawn(async move {
            fleet
                .call("reading shared back-pressure", |mut c| async move {
                    redis::pipe()
                        .cmd("GET")
                        .arg(k.lease.total)
                        .cmd("PTTL")
                        .arg(k.pause)
                        .cmd("SET")
                        .arg(format!("{}{me}", k.load))
                        .arg(load)
                        .arg("PX")
                        .arg(load_ms)
                        .cmd("SADD")
                        .arg(&k.members)
                        .arg(&me)
                        .cmd("PEXPIRE")
                        .arg(&k.members)
                        .arg(load_ms * 2)
                        .query_async::<Vec<redis::Value>>(&mut c)
                        .await
                })
                .await
        });
        let answers = call.await.ok()?.ok()?;
        let int = |i: usize| {
            answers
                .get(i)
                .and_then(|v| redis::from_redis_value::<i64>(v.clone()).ok())
                .unwrap_or(0)
        };
        let total = u64::try_from(int(0)).ok().filter(|n| *n >= 1);
        let pause = Duration::from_millis(u64::try_from(int(1)).unwrap_or(0));
        Some((total, pause.min(self.max_pause)))
    }

    /// This process's limit: the engine's, under the fleet total.
    fn apply(&self, route: usize) {
        let r = &self.routes[route];
        let own = r.own.load(Ordering::SeqCst);
        let shared = r.shared.load(Ordering::SeqCst);
        self.inner.set_limit(route, own.min(shared).max(1));
    }

    /// Reads the fleet's word on `route`, applies its total, and waits out its pause.
    /// The load reported is what this process is about to have in flight: the permits
    /// held plus the units asking (this one included), at most its limit (units that
    /// start together would each report one held before them).
    async fn heed(&self, route: usize) {
        let r = &self.routes[route];
        let limit = r
            .own
            .load(Ordering::SeqCst)
            .min(r.shared.load(Ordering::SeqCst));
        let wanted = r.held.load(Ordering::SeqCst) + r.asking.load(Ordering::SeqCst);
        let load = wanted.min(limit.max(1));
        let Some((total, pause)) = self.read(route, load).await else {
            r.total_set.store(false, Ordering::SeqCst);
            return;
        };
        let cap = self.inner.cap(route).max(1);
        let limit = total.map_or(cap, |t| usize::try_from(t).unwrap_or(cap).min(cap));
        r.total_set.store(total.is_some(), Ordering::SeqCst);
        if r.shared.swap(limit, Ordering::SeqCst) != limit {
            self.apply(route);
        }
        if !pause.is_zero() {
            // Spread over a quarter of the pause, so the fleet's waiting units do not all
            // come back at the same instant and draw the next round of "not now".
            let spread = rand::random::<f64>() * 0.25;
            tokio::time::sleep(pause.mul_f64(1.0 + spread).min(self.max_pause)).await;
        }
    }

    /// With the inner permit in hand, a lease under the fleet total when one is set, and
    /// this process's load counted while the permit is held.
    async fn with_lease(&self, route: usize, permit: Permit) -> Permit {
        let r = &self.routes[route];
        let lease = if r.total_set.load(Ordering::SeqCst) && self.fleet.is_on() {
            let id = format!("{}-{}", self.me, self.next.fetch_add(1, Ordering::Relaxed));
            pace_lease::take(&self.fleet, &r.keys.lease, id).await
        } else {
            None
        };
        r.held.fetch_add(1, Ordering::SeqCst);
        Permit::new(Held {
            _permit: permit,
            _lease: lease,
            held: r.held.clone(),
        })
    }

    /// The fleet total on `route` as last read, bounded to 1..=cap (the cap when none).
    pub fn shared_limit(&self, route: usize) -> usize {
        self.routes[route].shared.load(Ordering::SeqCst)
    }
}

/// A permit of the inner bulkhead, with its lease under the fleet total if it took one;
/// counted in this process's load while held.
struct Held {
    _permit: Permit,
    _lease: Option<Lease>,
    held: Arc<AtomicUsize>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.held.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts a unit asking for a permit while its wait lasts (dropped with the wait).
struct Asking<'a>(&'a AtomicUsize);

impl<'a> Asking<'a> {
    fn new(n: &'a AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::SeqCst);
        Asking(n)
    }
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Bulkhead for PacedBulkhead {
    fn acquire(&self, route: usize) -> BoxFuture<'_, Permit> {
        Box::pin(async move {
            let _asking = Asking::new(&self.routes[route].asking);
            self.heed(route).await;
            let permit = self.inner.acquire(route).await;
            self.with_lease(route, permit).await
        })
    }

    fn try_acquire(&self, route: usize) -> Option<Permit> {
        // The fleet's word takes a round trip: while it is used, permits are waited for.
        if self.fleet.is_on() {
            return None;
        }
        let permit = self.inner.try_acquire(route)?;
        let r = &self.routes[route];
        r.held.fetch_add(1, Ordering::SeqCst);
        Some(Permit::new(Held {
            _permit: permit,
            _lease: None,
            held: r.held.clone(),
        }))
    }

    fn acquire_new(&self, route: usize) -> BoxFuture<'_, Permit> {
        Box::pin(async move {
            let _asking = Asking::new(&self.routes[route].asking);
            self.heed(route).await;
            let permit = self.inner.acquire_new(route).await;
            self.with_lease(route, permit).await
        })
    }

    fn cap(&self, route: usize) -> usize {
        self.inner.cap(route)
    }

    fn set_limit(&self, route: usize, limit: usize) {
        if let Some(r) = self.routes.get(route) {
            r.own.store(limit.max(1), Ordering::SeqCst);
            self.apply(route);
        }
    }

    fn peak(&self, route: usize) -> usize {
        self.inner.peak(route)
    }
}
