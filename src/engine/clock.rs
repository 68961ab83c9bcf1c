//! Checked clock arithmetic. Budgets come from users and Retry-After from providers, so
//! `Instant + Duration` is never written bare in the engine: a deadline saturates at a
//! far-future instant instead of panicking on overflow.

use std::time::Duration;
use tokio::time::Instant;

/// About thirty years: later than any run, early enough for every clock to represent.
pub const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// `now + d`, saturating at `now + FAR_FUTURE`.
pub fn deadline_after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d.min(FAR_FUTURE)).unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_durations_saturate_instead_of_overflowing() {
        let now = Instant::now();
        assert_eq!(deadline_after(now, Duration::MAX), now + FAR_FUTURE);
        assert_eq!(
            deadline_after(now, Duration::from_secs(u64::MAX)),
            now + FAR_FUTURE
        );
        assert_eq!(
            deadline_after(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
    }
}
