//! When a route may start its next attempt (DESIGN.md section 13): a Retry-After that came
//! with back-pressure pauses the route's new attempts, not only the bounced unit's, until
//! then. Attempts in flight go on. While a route is paused the picker passes it over as it
//! passes over an open breaker: under `spillover` (and under `ordered`, as with a breaker)
//! the later routes take the work, and waiting units come back when the pause ends.

use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

use super::clock::deadline_after;

/// Per route: paused until when.
pub(crate) struct Pacing {
    routes: Vec<Mutex<Option<Instant>>>,
}

impl Pacing {
    /// `routes` routes, none paused.
    pub(crate) fn new(routes: usize) -> Self {
        Pacing {
            routes: (0..routes).map(|_| Mutex::new(None)).collect(),
        }
    }

    /// Pauses `route` for `retry_after` from `now` (a later pause already set is kept).
    /// Returns when the route's pause now ends.
    pub(crate) fn pause(&self, route: usize, now: Instant, retry_after: Duration) -> Instant {
        let until = deadline_after(now, retry_after);
        let mut p = self.routes[route].lock().expect("pacing lock");
        let end = p.map_or(until, |t| t.max(until));
        *p = Some(end);
        end
    }

    /// When `route` may start attempts again, if it is paused at `now`.
    pub(crate) fn paused_until(&self, route: usize, now: Instant) -> Option<Instant> {
        let mut p = self.routes[route].lock().expect("pacing lock");
        match *p {
            Some(t) if t > now => Some(t),
            Some(_) => {
                *p = None;
                None
            }
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const S: fn(u64) -> Duration = Duration::from_secs;

    #[tokio::test(start_paused = true)]
    async fn a_pause_ends_at_the_latest_retry_after_and_only_for_its_route() {
        let p = Pacing::new(2);
        let t0 = Instant::now();
        assert_eq!(p.paused_until(0, t0), None);
        assert_eq!(p.pause(0, t0, S(5)), t0 + S(5));
        assert_eq!(
            p.pause(0, t0, S(2)),
            t0 + S(5),
            "a shorter one does not cut it"
        );
        assert_eq!(p.paused_until(0, t0 + S(4)), Some(t0 + S(5)));
        assert_eq!(p.paused_until(1, t0), None);
        assert_eq!(p.paused_until(0, t0 + S(5)), None, "over at its end");
        // A clamped, absurd Retry-After does not overflow the clock.
        let far = p.pause(1, t0, crate::provider::classify::MAX_RETRY_AFTER);
        assert!(far > t0 + S(3600));
    }
}
