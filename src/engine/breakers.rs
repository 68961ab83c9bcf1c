//! Breaker state behind a small interface. The engine asks "may route r take a call
//! now?" and reports what happened; [`LocalBreakers`] answers from one [`Breaker`] per
//! route in this process. Another store (shared across processes, `crate::fleet`)
//! implements the same trait; the engine asks it through the `_async` methods, which may
//! consult that store, and the sync ones answer from what this process last saw.

use super::breaker::{Admission, Breaker, BreakerState, Transition};
use crate::config::{BreakerSettings, Routing};
use crate::provider::Outcome;
use futures_util::future::BoxFuture;
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// A route's breaker figures for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerFigures {
    /// The state now.
    pub state: BreakerState,
    /// Times it opened.
    pub opens: u32,
    /// Time spent not closed.
    pub time_open: Duration,
}

/// What one admission reserved for its attempt, handed back with that attempt's outcome
/// exactly once (a cancellation too), so that every level of a store gives back what it
/// took and nothing else: a probe slot of this process's own breaker, a shared store's
/// probe lease, both, or neither. A plain count per route could not say which of two
/// attempts in flight held which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hold {
    /// One of this process's own breaker's `halfOpenProbes` slots.
    pub local_probe: bool,
    /// A shared store's probe lease, by the number the store gave it.
    pub lease: Option<u64>,
}

impl Hold {
    /// As a store of local breakers only counts `admission`.
    pub fn local(admission: Admission) -> Hold {
        Hold {
            local_probe: admission == Admission::Probe,
            lease: None,
        }
    }

    /// A half-open probe at some level (what events and reports call a probe).
    pub fn probe(self) -> bool {
        self.local_probe || self.lease.is_some()
    }
}

/// The breakers of every route, by route index (failover order).
pub trait Breakers: Send + Sync {
    /// Whether `admit` would say yes now, without reserving a probe.
    fn would_admit(&self, route: usize, now: Instant) -> bool;
    /// Asks to send one attempt; a half-open breaker reserves a probe slot.
    fn admit(&self, route: usize, now: Instant) -> (Admission, Option<Transition>);
    /// Records a finished attempt (`probe`: it was admitted as a probe).
    fn record(
        &self,
        route: usize,
        now: Instant,
        outcome: Outcome,
        probe: bool,
    ) -> Option<Transition>;
    /// As [`Breakers::admit`], asking a shared store when there is one (the engine
    /// calls this one), with what the admission reserved. By default: `admit`.
    fn admit_async(
        &self,
        route: usize,
        now: Instant,
    ) -> BoxFuture<'_, (Admission, Option<Transition>, Hold)> {
        let (a, t) = self.admit(route, now);
        Box::pin(std::future::ready((a, t, Hold::local(a))))
    }
    /// As [`Breakers::record`], into a shared store when there is one (the engine calls
    /// this one), with the admission's [`Hold`]. By default: `record`.
    fn record_async(
        &self,
        route: usize,
        now: Instant,
        outcome: Outcome,
        hold: Hold,
    ) -> BoxFuture<'_, Option<Transition>> {
        let t = self.record(route, now, outcome, hold.local_probe);
        Box::pin(std::future::ready(t))
    }
    /// Opens `route`'s breaker for the rest of the run (a route dead for this process:
    /// its probe could not connect either). None when it already was.
    fn force_open(&self, route: usize, now: Instant, reason: String) -> Option<Transition>;
    /// When an open breaker lets a probe through (None unless open).
    fn reopens_at(&self, route: usize) -> Option<Instant>;
    /// The state now.
    fn state(&self, route: usize) -> BreakerState;
    /// State, opens and time open, for the report.
    fn figures(&self, route: usize, now: Instant) -> BreakerFigures;
}

/// One in-process breaker per route.
pub struct LocalBreakers(Vec<Mutex<Breaker>>);

impl LocalBreakers {
    /// `routes` closed breakers with the same settings.
    pub fn new(routes: usize, cfg: BreakerSettings, now: Instant) -> Self {
        LocalBreakers(
            (0..routes)
                .map(|_| Mutex::new(Breaker::new(cfg, now)))
                .collect(),
        )
    }

    /// As [`LocalBreakers::new`], with section 13's rule for `spillover`: timeouts open a
    /// breaker only when its window holds no success (see `Breaker::keeping_slow_routes`).
    /// Under `ordered` the same holds for the last route: no route follows it to take its
    /// units, so opening it for slowness would only leave its permits idle while units
    /// wait for it (a slow route is not dead, docs/design.md §15). Errors and a route that
    /// answers nothing in time still open it.
    pub fn for_routing(
        routes: usize,
        cfg: BreakerSettings,
        now: Instant,
        routing: Routing,
    ) -> Self {
        LocalBreakers(
            (0..routes)
                .map(|r| {
                    let b = Breaker::new(cfg, now);
                    let last = r + 1 == routes;
                    Mutex::new(match routing {
                        Routing::Spillover => b.keeping_slow_routes(),
                        Routing::Ordered if last => b.keeping_slow_routes(),
                        Routing::Ordered => b,
                    })
                })
                .collect(),
        )
    }

    /// One route's breaker, locked (for a layered store's own steps).
    pub(crate) fn get(&self, route: usize) -> std::sync::MutexGuard<'_, Breaker> {
        self.0[route].lock().expect("breaker lock")
    }
}

impl Breakers for LocalBreakers {
    fn would_admit(&self, route: usize, now: Instant) -> bool {
        self.get(route).would_admit(now)
    }

    fn admit(&self, route: usize, now: Instant) -> (Admission, Option<Transition>) {
        self.get(route).admit(now)
    }

    fn record(
        &self,
        route: usize,
        now: Instant,
        outcome: Outcome,
        probe: bool,
    ) -> Option<Transition> {
        self.get(route).record(now, outcome, probe)
    }

    fn force_open(&self, route: usize, now: Instant, reason: String) -> Option<Transition> {
        self.get(route).force_open(now, reason)
    }

    fn reopens_at(&self, route: usize) -> Option<Instant> {
        self.get(route).reopens_at()
    }

    fn state(&self, route: usize) -> BreakerState {
        self.get(route).state()
    }

    fn figures(&self, route: usize, now: Instant) -> BreakerFigures {
        let b = self.get(route);
        BreakerFigures {
            state: b.state(),
            opens: b.opens(),
            time_open: b.time_open(now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::{Ok, Timeout};

    /// A slow route (timeouts with an answer among them) as each breaker of a store sees
    /// it: opened or not.
    fn opens_on_slowness(b: &LocalBreakers, route: usize, now: Instant) -> bool {
        [Timeout, Timeout, Ok, Timeout, Timeout, Timeout]
            .into_iter()
            .any(|o| b.record(route, now, o, false).is_some())
    }

    #[test]
    fn under_ordered_only_the_last_route_keeps_a_slow_route_closed() {
        let now = Instant::now();
        let cfg = BreakerSettings::default();
        let b = LocalBreakers::for_routing(3, cfg, now, Routing::Ordered);
        assert!(
            opens_on_slowness(&b, 0, now),
            "a later route takes its units"
        );
        assert!(opens_on_slowness(&b, 1, now));
        assert!(
            !opens_on_slowness(&b, 2, now),
            "nothing follows the last route"
        );
        let one = LocalBreakers::for_routing(1, cfg, now, Routing::Ordered);
        assert!(!opens_on_slowness(&one, 0, now), "a route alone");
        // A route that answers nothing in time still opens.
        let one = LocalBreakers::for_routing(1, cfg, now, Routing::Ordered);
        let opened = (0..5).any(|_| one.record(0, now, Timeout, false).is_some());
        assert!(opened);
        let spill = LocalBreakers::for_routing(2, cfg, now, Routing::Spillover);
        assert!(!opens_on_slowness(&spill, 0, now));
    }
}
