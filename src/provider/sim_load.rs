//! The load-dependent `sim` profiles (docs/design.md section 13): a provider that serves at most
//! N requests at once and answers 429 beyond (`limited`), one that serves N per second and
//! says so in OpenAI-style rate-limit headers on every answer (`paced`), and one whose
//! latency grows with the load past a knee of N in flight (`saturating`).
//!
//! Their state belongs to the route (one [`LoadState`] per `SimProvider`), shared by all its
//! attempts, and runs on tokio's clock: paused under `warden simulate`, real under
//! `warden review --sim`. An attempt holds its place in flight through a [`Slot`] that is
//! released when the attempt ends or is dropped (cancelled).

use super::ratelimit::{RateLimitInfo, Window};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// How a profile's answers depend on the route's load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// They do not (the profiles of docs/design.md section 11).
    Free,
    /// At most N in flight; a request beyond is answered 429 with Retry-After: 1 s.
    Parallel,
    /// At most N requests per (simulated) second, in fixed windows; every answer carries
    /// the window's limit, remaining count and reset; a request beyond is answered 429
    /// with a Retry-After of the window's end.
    PerSecond,
    /// Latency × max(1, in flight / N), the in-flight count taken when the request
    /// arrives (itself included).
    Knee,
}

/// N of a load profile when the route's `capacity` does not say.
pub use crate::config::SIM_DEFAULT_CAPACITY as DEFAULT_CAPACITY;

/// The Retry-After of a `limited` refusal, simulated seconds.
const LIMITED_RETRY_AFTER_S: f64 = 1.0;

/// One route's load: requests in flight and the current per-second window.
#[derive(Debug)]
pub(crate) struct LoadState {
    load: Load,
    n: u32,
    /// One simulated second, in tokio's time.
    second: Duration,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    in_flight: u32,
    /// When the first request arrived: windows count from it (set lazily, so that the
    /// state may be built outside the runtime whose clock it then reads).
    start: Option<Instant>,
    /// The current window's number and the requests it admitted.
    window: u64,
    used: u32,
}

/// What the provider does with a request that arrives now.
#[derive(Debug)]
pub(crate) enum Admit<'a> {
    /// Serve it, its latency times `slow`; the slot keeps it in flight.
    Serve { slow: f64, slot: Slot<'a> },
    /// Answer 429 at once, with this Retry-After in simulated seconds.
    Refuse { retry_after_s: f64 },
}

/// A request in flight; dropping it (the attempt ended or was cancelled) frees its place.
#[derive(Debug)]
pub(crate) struct Slot<'a>(&'a LoadState);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut inner = self.0.inner.lock().expect("sim load lock");
        inner.in_flight = inner.in_flight.saturating_sub(1);
    }
}

impl LoadState {
    /// The state of a route with `load`, `capacity` (N) and `time_scale`.
    pub fn new(load: Load, capacity: u32, time_scale: f64) -> LoadState {
        let scale = if time_scale.is_finite() && time_scale >= 1.0 {
            time_scale
        } else {
            1.0
        };
        LoadState {
            load,
            n: capacity.max(1),
            second: Duration::from_secs_f64(1.0 / scale),
            inner: Mutex::new(Inner::default()),
        }
    }

    /// Admits or refuses a request arriving now.
    pub fn admit(&self) -> Admit<'_> {
        let now = Instant::now();
        let mut inner = self.inner.lock().expect("sim load lock");
        let n = self.n;
        match self.load {
            Load::Parallel if inner.in_flight >= n => {
                return Admit::Refuse {
                    retry_after_s: LIMITED_RETRY_AFTER_S,
                };
            }
            Load::PerSecond => {
                let (window, left) = self.window_at(&mut inner, now);
                if inner.window != window {
                    inner.window = window;
                    inner.used = 0;
                }
                if inner.used >= n {
                    return Admit::Refuse {
                        retry_after_s: left.as_secs_f64() / self.second.as_secs_f64(),
                    };
                }
                inner.used += 1;
            }
            _ => {}
        }
        inner.in_flight += 1;
        let slow = match self.load {
            Load::Knee => (f64::from(inner.in_flight) / f64::from(n)).max(1.0),
            _ => 1.0,
        };
        Admit::Serve {
            slow,
            slot: Slot(self),
        }
    }

    /// What a `paced` route's headers say now (None for the other loads): the window's
    /// limit, what it has left, and the time to its end.
    pub fn headers(&self) -> Option<RateLimitInfo> {
        if self.load != Load::PerSecond {
            return None;
        }
        let mut inner = self.inner.lock().expect("sim load lock");
        let (window, left) = self.window_at(&mut inner, Instant::now());
        let used = if inner.window == window {
            inner.used
        } else {
            0
        };
        Some(RateLimitInfo {
            requests: Some(Window {
                limit: Some(u64::from(self.n)),
                remaining: u64::from(self.n.saturating_sub(used)),
                reset_after: left,
            }),
            tokens: None,
        })
    }

    /// The number of the window `now` falls in, and the time left in it.
    fn window_at(&self, inner: &mut Inner, now: Instant) -> (u64, Duration) {
        let start = *inner.start.get_or_insert(now);
        let since = now.saturating_duration_since(start);
        let second = self.second.as_nanos().max(1);
        let window = (since.as_nanos() / second) as u64;
        let end = (u128::from(window) + 1) * second;
        let left = Duration::from_nanos((end - since.as_nanos()).min(u128::from(u64::MAX)) as u64);
        (window, left)
    }

    /// Requests in flight now.
    #[cfg(test)]
    pub fn in_flight(&self) -> u32 {
        self.inner.lock().expect("sim load lock").in_flight
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve(a: Admit<'_>) -> (f64, Slot<'_>) {
        match a {
            Admit::Serve { slow, slot } => (slow, slot),
            Admit::Refuse { .. } => panic!("refused"),
        }
    }

    fn refused(a: Admit<'_>) -> f64 {
        match a {
            Admit::Refuse { retry_after_s } => retry_after_s,
            Admit::Serve { .. } => panic!("served"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn limited_serves_n_at_once_and_a_dropped_slot_frees_its_place() {
        let s = LoadState::new(Load::Parallel, 3, 60.0);
        let slots: Vec<_> = (0..3).map(|_| serve(s.admit()).1).collect();
        assert_eq!(refused(s.admit()), 1.0);
        assert_eq!(s.in_flight(), 3);
        drop(slots);
        assert_eq!(s.in_flight(), 0);
        let _again: Vec<_> = (0..3).map(|_| serve(s.admit()).1).collect();
        assert_eq!(refused(s.admit()), 1.0);
    }

    #[tokio::test(start_paused = true)]
    async fn paced_admits_n_per_second_and_its_headers_count_down() {
        // 60x: one simulated second is 1/60 s of tokio time.
        let s = LoadState::new(Load::PerSecond, 5, 60.0);
        let second = Duration::from_secs_f64(1.0 / 60.0);
        for k in 1..=5u64 {
            drop(serve(s.admit()));
            let w = s.headers().unwrap().requests.unwrap();
            assert_eq!((w.limit, w.remaining), (Some(5), 5 - k));
            assert!(w.reset_after <= second && w.reset_after > Duration::ZERO);
        }
        tokio::time::advance(second / 4).await;
        let wait = refused(s.admit());
        assert!((wait - 0.75).abs() < 1e-6, "{wait}");
        let w = s.headers().unwrap().requests.unwrap();
        assert_eq!(w.remaining, 0);
        tokio::time::advance(second).await;
        assert_eq!(s.headers().unwrap().requests.unwrap().remaining, 5);
        let _ = serve(s.admit());
        assert_eq!(s.headers().unwrap().requests.unwrap().remaining, 4);
    }

    #[tokio::test(start_paused = true)]
    async fn saturating_slows_down_past_its_knee() {
        let s = LoadState::new(Load::Knee, 2, 1.0);
        let held: Vec<_> = (0..6).map(|_| serve(s.admit())).collect();
        let slow: Vec<f64> = held.iter().map(|(f, _)| *f).collect();
        assert_eq!(slow, [1.0, 1.0, 1.5, 2.0, 2.5, 3.0]);
        drop(held);
        assert_eq!(serve(s.admit()).0, 1.0, "unloaded again");
    }

    #[test]
    fn other_loads_have_no_headers_and_odd_settings_are_bounded() {
        for load in [Load::Free, Load::Parallel, Load::Knee] {
            assert_eq!(LoadState::new(load, 4, 60.0).headers(), None);
        }
        let s = LoadState::new(Load::PerSecond, 0, f64::NAN);
        assert_eq!((s.n, s.second), (1, Duration::from_secs(1)));
    }
}
