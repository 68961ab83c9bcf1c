//! Low budget (docs/design.md rule 9): optional work that has not started is refused at once
//! when less than one hunk budget of review time is left, instead of queueing for time
//! it cannot have (tower's load shedding). Every refusal is a reported `skipped` unit.

use super::outcome::UnitStatus;
use super::retry::Stop;
use std::time::Duration;

/// Sheds optional work when the review budget runs low.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shedder {
    /// One unit's budget: optional work needs at least this much review time left.
    pub hunk_budget: Duration,
}

impl Shedder {
    /// Whether a unit about to start is shed (`started`: it already made an attempt).
    pub fn shed(&self, optional: bool, started: bool, review_remaining: Duration) -> Option<Stop> {
        (optional && !started && review_remaining < self.hunk_budget).then(|| {
            Stop::new(
                UnitStatus::Skipped,
                "optional work shed: less than one hunk budget of review time left",
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_optional_unstarted_work_is_shed_and_only_when_time_is_short() {
        let s = Shedder {
            hunk_budget: Duration::from_secs(30),
        };
        let short = Duration::from_secs(29);
        let enough = Duration::from_secs(30);
        assert_eq!(
            s.shed(true, false, short).unwrap().status,
            UnitStatus::Skipped
        );
        assert!(s.shed(true, false, enough).is_none());
        assert!(
            s.shed(false, false, short).is_none(),
            "required work is never shed"
        );
        assert!(
            s.shed(true, true, short).is_none(),
            "a started unit finishes"
        );
    }
}
