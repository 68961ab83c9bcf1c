//! The reasons a unit ends for the review's own clocks (docs/design.md section 5): the
//! review budget or a signal cut it during an attempt, before it started, or while every
//! route's breaker stayed open. Written once here, so the unit's driver, its admission
//! and its waits say them alike.

use super::Shared;
use super::outcome::UnitStatus;
use super::retry::Stop;

/// Cut by the review budget or a signal during an attempt: `cancelled`.
pub(super) fn cancelled(sh: &Shared) -> Stop {
    Stop::new(
        UnitStatus::Cancelled,
        if sh.interrupted.is_cancelled() {
            "interrupted during an attempt"
        } else {
            "the review budget ran out during an attempt"
        },
    )
}

/// Cut before its first attempt: `skipped`.
pub(super) fn not_started(sh: &Shared) -> Stop {
    Stop::new(
        UnitStatus::Skipped,
        if sh.interrupted.is_cancelled() {
            "interrupted before the unit started"
        } else {
            "the review budget ran out before the unit started"
        },
    )
}

/// It waited for an open breaker to half-open until its budget ran out: `unavailable`.
pub(super) fn all_open() -> Stop {
    Stop::new(
        UnitStatus::Unavailable,
        "every route's breaker stayed open until the budget ran out",
    )
}
