//! The one retry owner's rules (docs/design.md rules 4–6) as one small value, like tower's
//! retry `Policy`: the decision is separate from the loop that drives it, and the
//! half-budget rule is written once.

use super::outcome::UnitStatus;
use crate::provider::Outcome;
use std::time::Duration;

/// Why a unit stops instead of making a further attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    /// The unit's final status.
    pub status: UnitStatus,
    /// Why, for people.
    pub reason: String,
}

impl Stop {
    /// A stop with this status and reason.
    pub fn new(status: UnitStatus, reason: impl Into<String>) -> Self {
        Stop {
            status,
            reason: reason.into(),
        }
    }
}

/// When a unit may make a further attempt (rule 5) and sleep on a Retry-After (rule 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts per unit, the first included (`maxAttempts`).
    pub max_attempts: u32,
    /// One unit's budget (`hunkBudget`).
    pub hunk_budget: Duration,
}

impl RetryPolicy {
    /// The half-budget rule: another attempt starts only while at least half the hunk
    /// budget remains.
    pub fn has_half(&self, hunk_remaining: Duration) -> bool {
        hunk_remaining >= self.hunk_budget / 2
    }

    /// Rule 5: after a failed attempt, may the unit make another?
    pub fn further_attempt(
        &self,
        outcome: Outcome,
        attempts_made: u32,
        hunk_remaining: Duration,
    ) -> Result<(), Stop> {
        if !outcome.retryable() {
            return Err(Stop::new(
                UnitStatus::Failed,
                format!("{outcome} is not retried"),
            ));
        }
        if attempts_made >= self.max_attempts {
            let max = self.max_attempts;
            return Err(Stop::new(
                UnitStatus::Unavailable,
                format!(
                    "all {max} allowed attempt{} failed (last: {outcome})",
                    if max == 1 { "" } else { "s" }
                ),
            ));
        }
        self.half_left(hunk_remaining, &format!("after {outcome}"))
    }

    /// The half-budget rule as a stop: `TimedOut` when less than half is left `when`.
    pub fn half_left(&self, hunk_remaining: Duration, when: &str) -> Result<(), Stop> {
        if self.has_half(hunk_remaining) {
            return Ok(());
        }
        Err(Stop::new(
            UnitStatus::TimedOut,
            format!(
                "less than half the hunk budget left ({} of {}) {when}",
                crate::config::format_duration(hunk_remaining),
                crate::config::format_duration(self.hunk_budget),
            ),
        ))
    }

    /// Rule 6: may the unit sleep on a Retry-After before retrying the same route? Only
    /// if, after the wait, at least half the hunk budget is still left.
    pub fn retry_after_fits(&self, retry_after: Duration, hunk_remaining: Duration) -> bool {
        retry_after < hunk_remaining && self.has_half(hunk_remaining - retry_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const S: fn(u64) -> Duration = Duration::from_secs;

    fn policy(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            hunk_budget: S(300),
        }
    }

    #[test]
    fn non_retryable_outcomes_stop_as_failed() {
        for o in [
            Outcome::Auth,
            Outcome::InvalidModel,
            Outcome::Quota,
            Outcome::BadRequest,
            Outcome::BadResponse,
        ] {
            assert_eq!(
                policy(5).further_attempt(o, 1, S(300)).unwrap_err().status,
                UnitStatus::Failed,
                "{o}"
            );
        }
    }

    #[test]
    fn attempts_and_half_the_hunk_budget_bound_retries() {
        let p = policy(2);
        assert!(p.further_attempt(Outcome::Timeout, 1, S(180)).is_ok());
        assert_eq!(
            p.further_attempt(Outcome::Timeout, 2, S(180))
                .unwrap_err()
                .status,
            UnitStatus::Unavailable
        );
        assert!(p.further_attempt(Outcome::Unavailable, 1, S(150)).is_ok());
        let stop = p
            .further_attempt(Outcome::Unavailable, 1, S(149))
            .unwrap_err();
        assert_eq!(stop.status, UnitStatus::TimedOut);
        assert!(stop.reason.contains("2m29s of 5m"), "{}", stop.reason);
    }

    #[test]
    fn retry_after_must_leave_half_the_budget() {
        let p = policy(2);
        assert!(p.retry_after_fits(S(30), S(300)));
        assert!(!p.retry_after_fits(S(200), S(300)));
        assert!(!p.retry_after_fits(S(400), S(300)));
        assert!(!p.retry_after_fits(Duration::MAX, S(300)));
    }
}
