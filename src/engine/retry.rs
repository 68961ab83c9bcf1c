//! The one retry owner's rules (DESIGN.md rules 4–6) as plain functions.

use super::outcome::UnitStatus;
use crate::provider::Outcome;
use std::time::Duration;

/// Why a unit stops instead of making a further attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    pub status: UnitStatus,
    pub reason: String,
}

/// Rule 5: after a failed attempt, may the unit make another?
pub fn further_attempt(
    outcome: Outcome,
    attempts_made: u32,
    max_attempts: u32,
    hunk_remaining: Duration,
    hunk_budget: Duration,
) -> Result<(), Stop> {
    if !outcome.retryable() {
        return Err(Stop {
            status: UnitStatus::Failed,
            reason: format!("{outcome} is not retried"),
        });
    }
    if attempts_made >= max_attempts {
        return Err(Stop {
            status: UnitStatus::Unavailable,
            reason: format!(
                "all {max_attempts} allowed attempt{} failed (last: {outcome})",
                if max_attempts == 1 { "" } else { "s" }
            ),
        });
    }
    if hunk_remaining < hunk_budget / 2 {
        return Err(Stop {
            status: UnitStatus::TimedOut,
            reason: format!(
                "less than half the hunk budget left ({hunk_remaining:?} of {hunk_budget:?}) after {outcome}"
            ),
        });
    }
    Ok(())
}

/// Rule 6: may the unit sleep on a Retry-After before retrying the same route? Only if,
/// after the wait, at least half the hunk budget is still left.
pub fn retry_after_fits(
    retry_after: Duration,
    hunk_remaining: Duration,
    hunk_budget: Duration,
) -> bool {
    retry_after < hunk_remaining && hunk_remaining - retry_after >= hunk_budget / 2
}

#[cfg(test)]
mod tests {
    use super::*;
    const S: fn(u64) -> Duration = Duration::from_secs;

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
                further_attempt(o, 1, 5, S(300), S(300)).unwrap_err().status,
                UnitStatus::Failed,
                "{o}"
            );
        }
    }

    #[test]
    fn attempts_and_half_the_hunk_budget_bound_retries() {
        assert!(further_attempt(Outcome::Timeout, 1, 2, S(180), S(300)).is_ok());
        assert_eq!(
            further_attempt(Outcome::Timeout, 2, 2, S(180), S(300))
                .unwrap_err()
                .status,
            UnitStatus::Unavailable
        );
        assert!(further_attempt(Outcome::Unavailable, 1, 2, S(150), S(300)).is_ok());
        assert_eq!(
            further_attempt(Outcome::Unavailable, 1, 2, S(149), S(300))
                .unwrap_err()
                .status,
            UnitStatus::TimedOut
        );
    }

    #[test]
    fn retry_after_must_leave_half_the_budget() {
        assert!(retry_after_fits(S(30), S(300), S(300)));
        assert!(!retry_after_fits(S(200), S(300), S(300)));
        assert!(!retry_after_fits(S(400), S(300), S(300)));
    }
}
