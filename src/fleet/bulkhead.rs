//! Fleet permits: a route's `fleetMaxConcurrency` caps its upstream's attempts in flight
//! across every process of the fleet. A fleet permit is a lease in Redis (taken by a Lua
//! script, atomically against the cap), renewed while its attempt runs and given back when
//! the attempt ends; a process that dies loses its leases within one request deadline.
//!
//! An attempt holds its route's local permit (`maxConcurrency`) and then a fleet permit.
//! Waiting for the fleet permit is part of the engine's wait for a permit, so it obeys
//! the same budgets and cancellation. When the fleet is off (Redis failed once), the local
//! permit alone is handed out.

use super::{Fleet, Upstream, ms};
use crate::engine::bulkhead::{Bulkhead, LocalBulkhead, Permit};
use futures_util::future::BoxFuture;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

static ACQUIRE: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/permit_acquire.lua")));
static RENEW: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(include_str!("lua/permit_renew.lua")));

/// How often a process waiting for a fleet permit asks again (plus up to as much jitter).
pub(crate) const POLL: Duration = Duration::from_millis(50);

/// A route's fleet cap, by route index.
pub struct FleetCap {
    /// The route's upstream.
    pub upstream: Upstream,
    /// `fleetMaxConcurrency` (None: the route has only its local cap).
    pub cap: Option<usize>,
}

/// Local permits, plus fleet permits for routes with `fleetMaxConcurrency`.
pub struct FleetBulkhead {
    fleet: Fleet,
    local: LocalBulkhead,
    /// Per route: the permits key and the fleet cap.
    caps: Vec<Option<(String, usize)>>,
    /// How long a permit lives without renewal: one request deadline.
    lease: Duration,
    me: String,
    next: AtomicU64,
}

impl FleetBulkhead {
    /// `local_caps` are the routes' `maxConcurrency`; `lease` is one request deadline.
    pub fn new(
        fleet: Fleet,
        local_caps: impl IntoIterator<Item = usize>,
        caps: &[FleetCap],
        lease: Duration,
    ) -> Self {
        FleetBulkhead {
            caps: caps
                .iter()
                .map(|c| {
                    c.cap
                        .map(|n| (fleet.upstream_key("permits", &c.upstream), n.max(1)))
                })
                .collect(),
            local: LocalBulkhead::new(local_caps),
            fleet,
            lease: lease.max(Duration::from_millis(300)),
            me: super::process_tag(),
            next: AtomicU64::new(0),
        }
    }

    /// With the local permit in hand, waits for a fleet permit of `route` (if it has a
    /// fleet cap and the fleet is on). Dropping this future gives both up; dropped while
    /// its script is on the wire (a spillover wait that another route won), the script
    /// finishes in its own task and a lease it took is given back (see `try_take`).
    async fn with_fleet_permit(&self, route: usize, local: Permit) -> Permit {
        let Some((key, cap)) = self.caps[route].clone() else {
            return local;
        };
        let lease_ms = ms(self.lease);
        loop {
            if !self.fleet.is_on() {
                return local;
            }
            let id = format!("{}-{}", self.me, self.next.fetch_add(1, Ordering::Relaxed));
            let taken = self.try_take(&key, cap, lease_ms, &id).await;
            match taken {
                Ok(1) => return self.held(local, key, id),
                Ok(0) => {
                    let jitter = POLL.mul_f64(rand::random::<f64>());
                    tokio::time::sleep(POLL + jitter).await;
                }
                Ok(n) => {
                    let why = format!("answered {n} to a permit script that returns 0 or 1");
                    self.fleet.distrust("taking a fleet permit", &why);
                    return local;
                }
                Err(_) => return local,
            }
        }
    }

    /// One try at a fleet permit. The script runs in its own task: a wait dropped while
    /// it is on the wire (another route's permit came first, a pause made the unit choose
    /// again, cancellation) would leave its reply to arrive with no read grant, which fails
    /// the connection and turns the fleet off; a permit it took for a wait that is gone is
    /// given back.
    async fn try_take(
        &self,
        key: &str,
        cap: usize,
        lease_ms: u64,
        id: &str,
    ) -> Result<u8, super::FleetError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (fleet, key, id) = (self.fleet.clone(), key.to_string(), id.to_string());
        tokio::spawn(async move {
            let mut inv = ACQUIRE.prepare_invoke();
            inv.key(&key).arg(cap).arg(lease_ms).arg(&id);
            let taken: Result<u8, _> = fleet
                .call("taking a fleet permit", |mut c| async move {
                    inv.invoke_async(&mut c).await
                })
                .await;
            if let Err(Ok(1)) = tx.send(taken) {
                give_back(fleet, key, id).await;
            }
        });
        rx.await.unwrap_or(Err(super::FleetError::Off))
    }

    fn held(&self, local: Permit, key: String, id: String) -> Permit {
        let stop = CancellationToken::new();
        tokio::spawn(renew(
            self.fleet.clone(),
            key.clone(),
            id.clone(),
            self.lease,
            stop.clone(),
        ));
        Permit::new(Leased {
            _local: local,
            fleet: self.fleet.clone(),
            key,
            id,
            stop,
        })
    }
}

/// Gives a permit back.
async fn give_back(fleet: Fleet, key: String, id: String) {
    let _ = fleet
        .query::<u8>(
            "giving back a fleet permit",
            redis::cmd("ZREM").arg(key).arg(id).clone(),
        )
        .await;
}

/// Renews a permit's lease every third of it while the attempt runs; stops when told to,
/// between calls (aborting the task could drop a call on the wire, see `try_take`).
async fn renew(fleet: Fleet, key: String, id: String, lease: Duration, stop: CancellationToken) {
    let lease_ms = ms(lease);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(lease / 3) => {}
        }
        let (key, id) = (key.clone(), id.clone());
        let renewed = fleet
            .call("renewing a fleet permit", |mut c| async move {
                RENEW
                    .key(key)
                    .arg(lease_ms)
                    .arg(id)
                    .invoke_async::<u8>(&mut c)
                    .await
            })
            .await;
        if renewed.is_err() {
            return;
        }
    }
}

/// A held fleet permit (and the local one under it); dropping it gives both back.
struct Leased {
    _local: Permit,
    fleet: Fleet,
    key: String,
    id: String,
    /// Stops the renewer between calls.
    stop: CancellationToken,
}

impl Drop for Leased {
    fn drop(&mut self) {
        self.stop.cancel();
        let (fleet, key, id) = (
            self.fleet.clone(),
            std::mem::take(&mut self.key),
            std::mem::take(&mut self.id),
        );
        // Outside a runtime (shutting down) the lease simply runs out.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(give_back(fleet, key, id));
        }
    }
}

impl Bulkhead for FleetBulkhead {
    fn acquire(&self, route: usize) -> BoxFuture<'_, Permit> {
        Box::pin(async move {
            let local = self.local.acquire(route).await;
            self.with_fleet_permit(route, local).await
        })
    }

    fn try_acquire(&self, route: usize) -> Option<Permit> {
        // A fleet permit takes a round trip: routes with a fleet cap are waited for.
        if self.caps[route].is_some() && self.fleet.is_on() {
            return None;
        }
        self.local.try_acquire(route)
    }

    fn acquire_new(&self, route: usize) -> BoxFuture<'_, Permit> {
        Box::pin(async move {
            let local = self.local.acquire_new(route).await;
            self.with_fleet_permit(route, local).await
        })
    }

    fn cap(&self, route: usize) -> usize {
        self.local.cap(route)
    }

    /// The effective limit gates the local permits, taken before a fleet permit: this
    /// process holds at most that many, and `fleetMaxConcurrency` still bounds the sum.
    fn set_limit(&self, route: usize, limit: usize) {
        self.local.set_limit(route, limit);
    }

    fn peak(&self, route: usize) -> usize {
        self.local.peak(route)
    }
}
