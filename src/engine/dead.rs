//! Failures that are facts end fast (docs/design.md §14): a route whose attempts cannot connect
//! at all (refused, unreachable, a name that does not resolve) and whose half-open probe
//! fails the same way is dead for the run. Its breaker is forced open, so units that only
//! it could serve end `unavailable` at once, naming its address, instead of waiting
//! through ever longer open periods for a server that is not there.
//!
//! It also counts each route's failed probes whose failure is a fact (docs/design.md §15): the
//! server could not be reached or answered with an error. A unit waiting for a breaker to
//! half-open waits through no more than one such round; a probe that timed out says only
//! that the route is slow, and units keep waiting for it (and probing it) while their
//! budget lasts.

use crate::provider::{AttemptRecord, Outcome};
use std::sync::Mutex;

/// Each route's run of attempts that could not connect.
pub(crate) struct DeadRoutes(Vec<Mutex<Reach>>);

#[derive(Default, Clone)]
struct Reach {
    /// Attempts in a row that could not connect (any other verdict resets it).
    failed_in_a_row: u32,
    /// The address they could not reach.
    address: Option<String>,
    dead: bool,
    /// Half-open probes that failed with a fact (not a timeout).
    failed_probes: u32,
}

/// What a route's connection failures say now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreachable {
    /// Attempts in a row that could not connect.
    pub(crate) in_a_row: u32,
    /// `host:port`.
    pub(crate) address: String,
    /// Dead for the run.
    pub(crate) dead: bool,
}

impl DeadRoutes {
    pub(crate) fn new(routes: usize) -> Self {
        DeadRoutes((0..routes).map(|_| Mutex::default()).collect())
    }

    fn get(&self, route: usize) -> std::sync::MutexGuard<'_, Reach> {
        self.0[route].lock().expect("dead routes lock")
    }

    /// Takes in a finished attempt (`probe`: it was a half-open probe). Returns the
    /// route's state when this attempt made it dead: a probe that could not connect after
    /// at least one attempt before it failed the same way.
    pub(crate) fn record(
        &self,
        route: usize,
        record: &AttemptRecord,
        probe: bool,
    ) -> Option<Unreachable> {
        if record.outcome == Outcome::Cancelled || record.backpressure {
            return None;
        }
        let mut r = self.get(route);
        if probe && is_fact(record) {
            r.failed_probes = r.failed_probes.saturating_add(1);
        }
        let Some(address) = &record.unreachable else {
            r.failed_in_a_row = 0;
            return None;
        };
        r.failed_in_a_row = r.failed_in_a_row.saturating_add(1);
        r.address = Some(address.to_string());
        if probe && r.failed_in_a_row >= 2 && !r.dead {
            r.dead = true;
            return Some(Unreachable {
                in_a_row: r.failed_in_a_row,
                address: address.to_string(),
                dead: true,
            });
        }
        None
    }

    /// How many of the route's half-open probes failed with a fact: a unit that saw this
    /// grow while it waited waits no further round.
    pub(crate) fn failed_probes(&self, route: usize) -> u32 {
        self.get(route).failed_probes
    }

    /// The route's run of connection failures, if its last verdict was one.
    pub(crate) fn unreachable(&self, route: usize) -> Option<Unreachable> {
        let r = self.get(route);
        let address = r.address.clone().filter(|_| r.failed_in_a_row > 0)?;
        Some(Unreachable {
            in_a_row: r.failed_in_a_row,
            address,
            dead: r.dead,
        })
    }
}

/// A failure that says the route cannot serve now, as opposed to a slow one: it could not
/// connect, or it answered with an error (5xx, 529, an error in the stream), or the key or
/// model does not work there. A timeout is not a fact: the route may answer the next probe.
fn is_fact(record: &AttemptRecord) -> bool {
    record.unreachable.is_some()
        || matches!(
            record.outcome,
            Outcome::Unavailable | Outcome::Auth | Outcome::InvalidModel
        )
}

impl Unreachable {
    /// "3 refused connections to 127.0.0.1:9" (refused, unreachable or unresolved: the
    /// attempts' reasons say which).
    pub(crate) fn describe(&self) -> String {
        let s = if self.in_a_row == 1 { "" } else { "s" };
        format!("{} failed connection{s} to {}", self.in_a_row, self.address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn rec(outcome: Outcome, unreachable: Option<&str>) -> AttemptRecord {
        AttemptRecord {
            outcome,
            unreachable: unreachable.map(Into::into),
            ..AttemptRecord::new("r", "openai", "m", Duration::from_secs(1))
        }
    }

    #[test]
    fn a_probe_that_cannot_connect_after_attempts_that_could_not_makes_the_route_dead() {
        let d = DeadRoutes::new(2);
        let refused = || rec(Outcome::Unavailable, Some("127.0.0.1:9"));
        assert_eq!(d.record(0, &refused(), false), None);
        assert_eq!(d.record(0, &refused(), false), None);
        let dead = d.record(0, &refused(), true).expect("dead");
        assert_eq!(dead.in_a_row, 3);
        assert_eq!(dead.describe(), "3 failed connections to 127.0.0.1:9");
        // Once: a later probe says nothing new.
        assert_eq!(d.record(0, &refused(), true), None);
        assert!(d.unreachable(0).unwrap().dead);
        assert_eq!(d.unreachable(1), None);
    }

    #[test]
    fn an_answer_or_a_503_in_between_means_the_route_is_there() {
        let d = DeadRoutes::new(1);
        let refused = || rec(Outcome::Unavailable, Some("h:443"));
        d.record(0, &refused(), false);
        d.record(0, &rec(Outcome::Unavailable, None), false);
        assert_eq!(d.record(0, &refused(), true), None, "one failure in a row");
        // A lone probe that cannot connect is not enough either.
        let d = DeadRoutes::new(1);
        assert_eq!(d.record(0, &refused(), true), None);
        // Cancelled attempts say nothing.
        let d = DeadRoutes::new(1);
        d.record(0, &refused(), false);
        d.record(0, &rec(Outcome::Cancelled, None), false);
        assert!(d.record(0, &refused(), true).is_some());
    }

    #[test]
    fn probes_that_time_out_are_not_facts_and_refusals_or_errors_are() {
        let d = DeadRoutes::new(2);
        d.record(0, &rec(Outcome::Timeout, None), true);
        d.record(0, &rec(Outcome::Timeout, None), true);
        assert_eq!(d.failed_probes(0), 0, "a slow route's probes");
        // Not probes: no round.
        d.record(0, &rec(Outcome::Unavailable, Some("h:1")), false);
        assert_eq!(d.failed_probes(0), 0);
        d.record(0, &rec(Outcome::Unavailable, Some("h:1")), true);
        d.record(0, &rec(Outcome::Unavailable, None), true);
        d.record(0, &rec(Outcome::Auth, None), true);
        assert_eq!(d.failed_probes(0), 3);
        // An answer, a cancelled or refused-by-the-model probe: no round failed.
        d.record(1, &rec(Outcome::Ok, None), true);
        d.record(1, &rec(Outcome::Cancelled, None), true);
        assert_eq!(d.failed_probes(1), 0);
    }
}
