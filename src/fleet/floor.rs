//! This process's own breakers as a floor under the fleet's (docs/design.md §4 rule 8 per
//! process, whatever Redis says). The fleet's window can only close a route off more
//! (open it earlier, because other jobs saw failures); what this process's own outcomes
//! opened stays open for the fleet too, so a Redis that answers "closed" forever (a bug,
//! or whoever can write the namespace) cannot make a hanging primary eat every unit's
//! request timeout.
//!
//! The rule, per admission (local first, then the fleet):
//! - Local open (within `openFor`), forced open, or half-open with all of its
//!   `halfOpenProbes` slots out: no, and the fleet is not asked (no lease is taken).
//! - Local closed: the fleet decides as it always did (closed: yes; half-open with a lease
//!   granted: a probe for the fleet; open, forced or every lease out: no).
//! - Local half-open: the attempt takes one of local's probe slots and goes only if the
//!   fleet admits it too (closed: a local probe that the fleet counts as a plain call;
//!   half-open with a lease: a probe at both levels); a fleet no gives the slot back. While
//!   a fleet probe this process sent before its own breaker opened is still out, local
//!   half-open sends nothing, so this process never has more than `halfOpenProbes` probes
//!   in flight while its breaker is half-open.
//!
//! Every outcome goes to both levels exactly once, each with what that level reserved
//! ([`Hold`]): a probe verdict where it held a slot or lease, a window entry where not, a
//! cancellation giving back what it held. The fleet's word reaches the local breaker in
//! two ways only: this process's own fleet probe succeeded (its own evidence, a good probe
//! for local too: a half-open local breaker closes, a closed one starts its window
//! afresh), or it saw the fleet's state
//! go from open or half-open to closed (another process's probe succeeded: a *half-open*
//! local breaker closes, keeping its backoff, so a lying Redis buys one window of failures
//! per ever longer open period). An open (`openFor` not over) or forced-open local breaker
//! ignores both. What the engine is shown is the more closed-off of the two levels.

use crate::engine::breaker::{Admission, BreakerState, Transition};
use crate::engine::breakers::{Breakers, Hold, LocalBreakers};
use crate::provider::Outcome;
use std::sync::{Mutex, MutexGuard};
use tokio::time::Instant;

/// This process's breakers and what the engine was last shown of each route.
pub(crate) struct Floor {
    pub(crate) local: LocalBreakers,
    marks: Vec<Mutex<Mark>>,
}

/// One route's combined state as last announced, and this process's fleet probes in
/// flight that hold no local slot (sent while its own breaker was closed).
struct Mark {
    shown: BreakerState,
    fleet_only: u32,
}

/// The local breaker's part of one admission, taken before the fleet is asked.
pub(crate) struct LocalTake {
    admission: Admission,
    transition: Option<Transition>,
}

impl LocalTake {
    /// Local said no: the fleet is not asked.
    pub(crate) fn refused(&self) -> bool {
        self.admission == Admission::No
    }
}

/// The fleet's answer to one admission.
pub(crate) struct FleetAnswer {
    /// Closed: yes; half-open with a lease: probe; otherwise no.
    pub(crate) admission: Admission,
    /// The lease's number when the fleet granted one.
    pub(crate) lease: Option<u64>,
    /// How this process's view of the fleet changed with the answer.
    pub(crate) transition: Option<Transition>,
}

/// Orders states by how closed-off they are.
fn rank(s: BreakerState) -> u8 {
    match s {
        BreakerState::Closed => 0,
        BreakerState::HalfOpen => 1,
        BreakerState::Open => 2,
        BreakerState::ForcedOpen => 3,
    }
}

/// The more closed-off of local and the fleet's view (`None`: the fleet is off).
pub(crate) fn combine(local: BreakerState, fleet: Option<BreakerState>) -> BreakerState {
    match fleet {
        Some(f) if rank(f) > rank(local) => f,
        _ => local,
    }
}

/// When the route admits again: when both open levels have half-opened; never while
/// either is forced open.
pub(crate) fn reopen(
    local: (BreakerState, Option<Instant>),
    fleet: (Option<BreakerState>, Option<Instant>),
) -> Option<Instant> {
    if local.0 == BreakerState::ForcedOpen || fleet.0 == Some(BreakerState::ForcedOpen) {
        return None;
    }
    match (local.1, fleet.1) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// An outcome that closes a half-open breaker (as both levels count it).
fn good(outcome: Outcome) -> bool {
    !outcome.no_verdict() && !outcome.forces_open() && !outcome.is_breaker_failure()
}

impl Floor {
    /// Over `local`, one breaker per route.
    pub(crate) fn new(local: LocalBreakers, routes: usize) -> Self {
        let marks = (0..routes)
            .map(|_| {
                Mutex::new(Mark {
                    shown: BreakerState::Closed,
                    fleet_only: 0,
                })
            })
            .collect();
        Floor { local, marks }
    }

    fn mark(&self, route: usize) -> MutexGuard<'_, Mark> {
        self.marks[route].lock().expect("floor mark")
    }

    /// Whether local would let an attempt through now (the fleet's view is the caller's).
    pub(crate) fn would_admit(&self, route: usize, now: Instant) -> bool {
        // Not closed and admitting: half-open, or open with `openFor` over (it half-opens
        // at the next admission).
        let closed = self.local.state(route) == BreakerState::Closed;
        self.local.would_admit(route, now) && (closed || self.mark(route).fleet_only == 0)
    }

    /// Step one: local's admission (a half-open local breaker reserves a probe slot).
    pub(crate) fn take(&self, route: usize, now: Instant) -> LocalTake {
        let (mut admission, transition) = self.local.admit(route, now);
        if admission == Admission::Probe && self.mark(route).fleet_only > 0 {
            self.local.get(route).release_probe();
            admission = Admission::No;
        }
        LocalTake {
            admission,
            transition,
        }
    }

    /// Step two: the attempt's admission from local's take and the fleet's answer
    /// (`None`: the fleet is off or failed just now, local decides alone), what it
    /// reserved, and the level transitions it caused (fleet first).
    pub(crate) fn admit(
        &self,
        route: usize,
        now: Instant,
        take: LocalTake,
        fleet: Option<FleetAnswer>,
    ) -> (Admission, Hold, Vec<Transition>) {
        let Some(f) = fleet else {
            let t = take.transition.into_iter().collect();
            return (take.admission, Hold::local(take.admission), t);
        };
        // A fleet re-close may have closed a half-open local breaker: this attempt is no
        // local probe then, and gives its slot back now.
        let vouched = self.fleet_said(route, now, f.transition.as_ref());
        let took_slot = take.admission == Admission::Probe;
        if took_slot && vouched.is_some() {
            self.local.get(route).release_probe();
        }
        let local_probe = took_slot && vouched.is_none();
        let level = f
            .transition
            .into_iter()
            .chain(vouched)
            .chain(take.transition)
            .collect();
        match f.admission {
            Admission::No => {
                if local_probe {
                    self.local.get(route).release_probe();
                }
                (Admission::No, Hold::default(), level)
            }
            Admission::Yes if local_probe => {
                (Admission::Probe, Hold::local(Admission::Probe), level)
            }
            Admission::Yes => (Admission::Yes, Hold::default(), level),
            Admission::Probe => {
                if !local_probe {
                    self.mark(route).fleet_only += 1;
                }
                let hold = Hold {
                    local_probe,
                    lease: f.lease,
                };
                (Admission::Probe, hold, level)
            }
        }
    }

    /// An outcome's local side, with what the admission reserved. This process's own
    /// fleet probe that succeeded is a good probe for local too (half-open closes, closed
    /// starts its window afresh); anything else local records as it would alone.
    pub(crate) fn record(
        &self,
        route: usize,
        now: Instant,
        outcome: Outcome,
        hold: Hold,
    ) -> Vec<Transition> {
        let mut level = Vec::new();
        if hold.lease.is_some() && !hold.local_probe {
            let mut m = self.mark(route);
            m.fleet_only = m.fleet_only.saturating_sub(1);
            drop(m);
            if good(outcome) {
                level.extend(self.local.get(route).vouched(now, true));
                return level;
            }
        }
        level.extend(self.local.record(route, now, outcome, hold.local_probe));
        level
    }

    /// The fleet's view changed (`t`): a re-close (open or half-open to closed) closes a
    /// half-open local breaker, and nothing else.
    pub(crate) fn fleet_said(
        &self,
        route: usize,
        now: Instant,
        t: Option<&Transition>,
    ) -> Option<Transition> {
        t.filter(|t| t.to == BreakerState::Closed)?;
        self.local.get(route).vouched(now, false)
    }

    /// The combined state now (`fleet`: the fleet's view, `None` when it is off).
    pub(crate) fn state(&self, route: usize, fleet: Option<BreakerState>) -> BreakerState {
        combine(self.local.state(route), fleet)
    }

    /// The transition to announce, once per change of the combined state: the reason of
    /// the first level transition that went where the combination went (`level`, fleet
    /// first), else both levels' states.
    pub(crate) fn show(
        &self,
        route: usize,
        fleet: Option<BreakerState>,
        level: Vec<Transition>,
    ) -> Option<Transition> {
        let local = self.local.state(route);
        let to = combine(local, fleet);
        let mut m = self.mark(route);
        if m.shown == to {
            return None;
        }
        let from = std::mem::replace(&mut m.shown, to);
        let reason = level
            .into_iter()
            .find(|t| t.to == to)
            .map(|t| t.reason)
            .unwrap_or_else(|| {
                let fleet = fleet.map_or("not in use", BreakerState::as_str);
                format!(
                    "this process's breaker is {}, the fleet's is {fleet}",
                    local.as_str()
                )
            });
        Some(Transition { from, to, reason })
    }
}

#[cfg(test)]
#[path = "floor_tests.rs"]
mod tests;
