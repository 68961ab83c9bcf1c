//! Answers that ask for another request instead of failing the unit (docs/design.md §14): a
//! 400 naming a parameter the route has now dropped or renamed is re-sent at once. Such
//! an attempt uses none of `maxAttempts` and is no verdict on the route's health (the
//! breaker counts nothing, as for back-pressure). A unit re-sends at most
//! [`MAX_RESENDS`] times: each parameter is fixed once per route, so this bound is only
//! met by a provider that keeps naming new ones.

use crate::provider::{AttemptRecord, Correction};

/// The most re-sends one unit makes.
pub(super) const MAX_RESENDS: u32 = 8;

/// Whether the attempt is no verdict on the route (back-pressure, or a correction).
pub(super) fn no_verdict(record: &AttemptRecord) -> bool {
    record.backpressure || record.correction.is_some()
}

/// Whether the attempt counts toward `maxAttempts`: a correction (a fixed parameter, a
/// prompt too long for the window) is no attempt spent against the route.
pub(super) fn counts(record: &AttemptRecord) -> bool {
    !record.backpressure && record.correction.is_none()
}

/// Whether the unit sends the attempt again at once (and counts the re-send in
/// `resends`, the unit's count so far).
pub(super) fn again(resends: &mut u32, record: &AttemptRecord) -> bool {
    if record.correction != Some(Correction::Adjusted) || *resends >= MAX_RESENDS {
        return false;
    }
    *resends += 1;
    true
}
