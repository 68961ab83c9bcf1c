//! A per-route circuit breaker over a rolling time window (docs/design.md rule 8). It opens when
//! at least `minCalls` attempts finished in the window and the share of timeouts and
//! unavailable outcomes reaches `failureRate`; after `openFor` it lets `halfOpenProbes`
//! probes through; a good probe closes it, a bad one re-opens it for twice as long
//! (capped). Auth and invalid-model failures force it open for the run. It is plain code
//! over the instants it is given, so tests drive it with exact numbers.

use super::clock::deadline_after;
use crate::config::BreakerSettings;
use crate::provider::Outcome;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// The longest re-open wait, as a multiple of `openFor`.
pub(crate) const MAX_BACKOFF: u32 = 8;

/// A breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Calls go through.
    Closed,
    /// Calls go elsewhere until `openFor` has passed.
    Open,
    /// Probes go through; their results close or re-open it.
    HalfOpen,
    /// Auth or invalid model: open for the rest of the run.
    ForcedOpen,
}

impl BreakerState {
    /// The state as reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
            BreakerState::ForcedOpen => "forced_open",
        }
    }

    /// The route's state as people read it (text report, step summary, progress), in
    /// words that need no circuit-breaker jargon: JSON, traces and Redis keep
    /// [`BreakerState::as_str`]'s enum values.
    pub fn label(self) -> &'static str {
        match self {
            BreakerState::Closed => "healthy",
            BreakerState::Open => "failing",
            BreakerState::HalfOpen => "probing",
            BreakerState::ForcedOpen => "failing for the run",
        }
    }
}

/// May an attempt go to this route now?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Yes.
    Yes,
    /// Yes, as one of the half-open probes (report its result with `probe = true`).
    Probe,
    /// No: try another route.
    No,
}

/// A state change, with the reason, for the event stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Transition {
    /// The state before.
    pub from: BreakerState,
    /// The state after.
    pub to: BreakerState,
    /// Why, for people.
    pub reason: String,
}

/// How a finished attempt counts in the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// Not a breaker failure (an answer, or a failure that is the request's own).
    Fine,
    /// A timeout.
    Timeout,
    /// Provider unavailable.
    Error,
}

impl Verdict {
    fn of(outcome: Outcome) -> Verdict {
        match outcome {
            Outcome::Timeout => Verdict::Timeout,
            o if o.is_breaker_failure() => Verdict::Error,
            _ => Verdict::Fine,
        }
    }
}

/// One route's breaker: plain state over the instants it is given.
#[derive(Debug)]
pub struct Breaker {
    cfg: BreakerSettings,
    state: BreakerState,
    open_until: Instant,
    /// Finished attempts in the window: (when, how it counts).
    window: VecDeque<(Instant, Verdict)>,
    /// docs/design.md section 13 under `spillover`: request-deadline timeouts of a route that
    /// still answers in time are its limit's business, not the breaker's. They count
    /// only while the window holds no success; errors (unavailable) count as always.
    slow_is_not_failed: bool,
    probes_in_flight: u32,
    /// How many times it re-opened in a row (for the doubling wait).
    level: u32,
    opens: u32,
    opened_at: Option<Instant>,
    time_open: Duration,
}

impl Breaker {
    /// A closed breaker.
    pub fn new(cfg: BreakerSettings, now: Instant) -> Self {
        Breaker {
            cfg,
            state: BreakerState::Closed,
            open_until: now,
            window: VecDeque::new(),
            slow_is_not_failed: false,
            probes_in_flight: 0,
            level: 0,
            opens: 0,
            opened_at: None,
            time_open: Duration::ZERO,
        }
    }

    /// Under `spillover` (section 13): timeouts open it only when the window holds no
    /// success; unavailable outcomes, auth and invalid model as always.
    pub fn keeping_slow_routes(mut self) -> Self {
        self.slow_is_not_failed = true;
        self
    }

    /// The current state.
    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// How many times it opened (forced opens included).
    pub fn opens(&self) -> u32 {
        self.opens
    }

    /// Total time spent open (or half-open, forced open) up to `now`.
    pub fn time_open(&self, now: Instant) -> Duration {
        let open_now = self
            .opened_at
            .map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        self.time_open.saturating_add(open_now)
    }

    /// When an open breaker will let a probe through (None unless `Open`).
    pub fn reopens_at(&self) -> Option<Instant> {
        (self.state == BreakerState::Open).then_some(self.open_until)
    }

    /// Whether `admit` would say yes now, without reserving a probe.
    pub fn would_admit(&self, now: Instant) -> bool {
        match self.state {
            BreakerState::Closed => true,
            BreakerState::Open => now >= self.open_until,
            BreakerState::HalfOpen => self.probes_in_flight < self.cfg.half_open_probes,
            BreakerState::ForcedOpen => false,
        }
    }

    /// Asks to send one attempt; a half-open breaker reserves a probe slot.
    pub fn admit(&mut self, now: Instant) -> (Admission, Option<Transition>) {
        let mut t = None;
        if self.state == BreakerState::Open && now >= self.open_until {
            t = Some(self.go(
                BreakerState::HalfOpen,
                now,
                format!(
                    "openFor elapsed; letting {} probe(s) through",
                    self.cfg.half_open_probes
                ),
            ));
        }
        let a = match self.state {
            BreakerState::Closed => Admission::Yes,
            BreakerState::HalfOpen if self.probes_in_flight < self.cfg.half_open_probes => {
                self.probes_in_flight += 1;
                Admission::Probe
            }
            _ => Admission::No,
        };
        (a, t)
    }

    /// A probe that was cancelled before it finished frees its slot without a verdict.
    pub fn release_probe(&mut self) {
        self.probes_in_flight = self.probes_in_flight.saturating_sub(1);
    }

    /// Records a finished attempt. `probe` says whether it was admitted as a probe.
    pub fn record(&mut self, now: Instant, outcome: Outcome, probe: bool) -> Option<Transition> {
        // A probe's slot comes back whatever state its result finds: with several probes,
        // an earlier verdict may already have re-opened or closed the breaker.
        if probe {
            self.release_probe();
        }
        if outcome.no_verdict() {
            return None;
        }
        if outcome.forces_open() {
            if self.state == BreakerState::ForcedOpen {
                return None;
            }
            return Some(self.go(
                BreakerState::ForcedOpen,
                now,
                format!("{outcome}: the route cannot work with this key or model; open for the rest of the run"),
            ));
        }
        let failure = outcome.is_breaker_failure();
        match self.state {
            BreakerState::HalfOpen if probe => {
                if failure {
                    self.level += 1;
                    let wait = self.open_wait();
                    self.open_until = deadline_after(now, wait);
                    Some(self.go(
                        BreakerState::Open,
                        now,
                        format!(
                            "probe failed ({outcome}); open again for {}",
                            crate::config::format_duration(wait)
                        ),
                    ))
                } else {
                    self.level = 0;
                    self.window.clear();
                    Some(self.go(
                        BreakerState::Closed,
                        now,
                        format!("probe succeeded ({outcome})"),
                    ))
                }
            }
            BreakerState::Closed => {
                self.window.push_back((now, Verdict::of(outcome)));
                let horizon = now.checked_sub(self.cfg.window).unwrap_or(now);
                while self.window.front().is_some_and(|(t, _)| *t < horizon) {
                    self.window.pop_front();
                }
                let calls = self.window.len() as u32;
                let count = |v: Verdict| self.window.iter().filter(|(_, w)| *w == v).count() as u32;
                let (timeouts, errors) = (count(Verdict::Timeout), count(Verdict::Error));
                let failures = if self.slow_is_not_failed && calls > timeouts + errors {
                    errors
                } else {
                    timeouts + errors
                };
                if calls >= self.cfg.min_calls
                    && f64::from(failures) >= self.cfg.failure_rate * f64::from(calls)
                {
                    // 1 after a good probe of its own; more after a peer's word (`vouched`).
                    self.level = self.level.saturating_add(1);
                    let wait = self.open_wait();
                    self.open_until = deadline_after(now, wait);
                    return Some(self.go(
                        BreakerState::Open,
                        now,
                        format!(
                            "{failures} of the last {calls} attempts timed out or were unavailable; open for {}",
                            crate::config::format_duration(wait)
                        ),
                    ));
                }
                None
            }
            // Late results of attempts sent before the breaker opened change nothing.
            _ => None,
        }
    }

    /// Word from outside this breaker's own probes that the route works again (a layered
    /// store's shared level, see `crate::fleet::floor`): `own`, an attempt of this process
    /// that was the shared level's probe succeeded; else the shared level's probe, sent by
    /// another process, closed it. A half-open breaker closes (its probes in flight give
    /// their slots back when they end, as after any verdict; own word resets the backoff
    /// as a good probe does; a peer's keeps it, so a store that lies about recovery buys
    /// one window of failures per ever longer open period).
    /// A closed one forgets its window on its own word only. Open (`openFor` not over) and
    /// forced open ignore it: the shared level never shortens this process's open period.
    pub fn vouched(&mut self, now: Instant, own: bool) -> Option<Transition> {
        match self.state {
            BreakerState::HalfOpen => {
                self.window.clear();
                if own {
                    self.level = 0;
                }
                let reason = if own {
                    "this process's probe for the fleet succeeded"
                } else {
                    "another process's probe succeeded (the fleet closed it); open for longer if it fails again"
                };
                Some(self.go(BreakerState::Closed, now, reason.into()))
            }
            BreakerState::Closed if own => {
                self.window.clear();
                self.level = 0;
                None
            }
            _ => None,
        }
    }

    /// Open for the rest of the run, for a reason the breaker cannot see itself (a route
    /// whose probe could not connect either, docs/design.md §14). None when already so.
    pub fn force_open(&mut self, now: Instant, reason: String) -> Option<Transition> {
        (self.state != BreakerState::ForcedOpen)
            .then(|| self.go(BreakerState::ForcedOpen, now, reason))
    }

    fn open_wait(&self) -> Duration {
        let factor = 1u32 << self.level.saturating_sub(1).min(3);
        self.cfg.open_for.saturating_mul(factor.min(MAX_BACKOFF))
    }

    fn go(&mut self, to: BreakerState, now: Instant, reason: String) -> Transition {
        let from = self.state;
        let was_open = from != BreakerState::Closed;
        let is_open = to != BreakerState::Closed;
        if !was_open && is_open {
            self.opened_at = Some(now);
        }
        if was_open
            && !is_open
            && let Some(t) = self.opened_at.take()
        {
            self.time_open = self
                .time_open
                .saturating_add(now.saturating_duration_since(t));
        }
        if to == BreakerState::Open || to == BreakerState::ForcedOpen {
            self.opens += 1;
        }
        if to == BreakerState::ForcedOpen {
            self.probes_in_flight = 0;
        }
        self.state = to;
        Transition { from, to, reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::*;

    /// docs/design.md's defaults: a 2m window, 5 calls, 50 %, 30s open, 1 probe.
    fn cfg() -> BreakerSettings {
        BreakerSettings::default()
    }

    #[test]
    fn opens_at_exactly_min_calls_and_the_failure_share() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        for o in [Timeout, Unavailable, Ok, Ok] {
            assert_eq!(b.record(t0, o, false), None);
        }
        // 5 calls, 2 failures: 40 % < 50 %.
        assert_eq!(b.record(t0, Ok, false), None);
        assert_eq!(b.state(), BreakerState::Closed);
        // 6 calls, 3 failures: exactly 50 %.
        let t = b.record(t0, Timeout, false).expect("opens");
        assert_eq!((t.from, t.to), (BreakerState::Closed, BreakerState::Open));
        assert_eq!(b.opens(), 1);
    }

    #[test]
    fn four_failures_are_not_enough_calls() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        for _ in 0..4 {
            assert_eq!(b.record(t0, Timeout, false), None);
        }
        assert_eq!(b.record(t0, Timeout, false).unwrap().to, BreakerState::Open);
    }

    #[test]
    fn under_spillover_timeouts_open_only_a_route_with_no_success_in_its_window() {
        let t0 = Instant::now();
        // A slow route that still answers: 4 timeouts of 5 calls keep it closed.
        let mut b = Breaker::new(cfg(), t0).keeping_slow_routes();
        for o in [Timeout, Timeout, Ok, Timeout, Timeout, Timeout] {
            assert_eq!(b.record(t0, o, false), None, "{o}");
        }
        assert_eq!(b.state(), BreakerState::Closed);
        // Errors count as always: 3 unavailable of 6 calls open it.
        let mut b = Breaker::new(cfg(), t0).keeping_slow_routes();
        for o in [Ok, Ok, Unavailable, Ok, Unavailable] {
            assert_eq!(b.record(t0, o, false), None, "{o}");
        }
        assert!(b.record(t0, Unavailable, false).is_some());
        // No success in the window: timeouts open it (a hanging route is left).
        let mut b = Breaker::new(cfg(), t0).keeping_slow_routes();
        for _ in 0..4 {
            assert_eq!(b.record(t0, Timeout, false), None);
        }
        let t = b.record(t0, Timeout, false).expect("opens");
        assert_eq!(t.to, BreakerState::Open);
        // Under ordered the same slow route opens (rule 8 as it is).
        let mut b = Breaker::new(cfg(), t0);
        let opened = [Timeout, Timeout, Ok, Timeout, Timeout]
            .into_iter()
            .filter_map(|o| b.record(t0, o, false))
            .count();
        assert_eq!(opened, 1);
    }

    #[test]
    fn old_results_leave_the_window() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        for _ in 0..4 {
            b.record(t0, Timeout, false);
        }
        let later = t0 + Duration::from_secs(121);
        assert_eq!(
            b.record(later, Timeout, false),
            None,
            "the first four fell out of the 2m window"
        );
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn half_open_probe_closes_or_reopens_for_longer() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        for _ in 0..5 {
            b.record(t0, Timeout, false);
        }
        assert_eq!(b.admit(t0 + Duration::from_secs(29)).0, Admission::No);
        let (a, t) = b.admit(t0 + Duration::from_secs(30));
        assert_eq!(a, Admission::Probe);
        assert_eq!(t.unwrap().to, BreakerState::HalfOpen);
        // Only one probe at a time.
        assert_eq!(b.admit(t0 + Duration::from_secs(31)).0, Admission::No);
        let t1 = t0 + Duration::from_secs(40);
        assert_eq!(b.record(t1, Timeout, true).unwrap().to, BreakerState::Open);
        // Re-opened for 60 s, not 30 s.
        assert_eq!(b.admit(t1 + Duration::from_secs(59)).0, Admission::No);
        let (a, _) = b.admit(t1 + Duration::from_secs(60));
        assert_eq!(a, Admission::Probe);
        let t2 = t1 + Duration::from_secs(61);
        assert_eq!(b.record(t2, Ok, true).unwrap().to, BreakerState::Closed);
        assert_eq!(b.admit(t2).0, Admission::Yes);
        assert_eq!(b.opens(), 2);
        assert_eq!(
            b.time_open(t2),
            Duration::from_secs(101),
            "open from t0 until the good probe"
        );
    }

    #[test]
    fn a_cancelled_probe_frees_its_slot() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        for _ in 0..5 {
            b.record(t0, Unavailable, false);
        }
        let at = t0 + Duration::from_secs(30);
        assert_eq!(b.admit(at).0, Admission::Probe);
        assert_eq!(b.record(at, Cancelled, true), None);
        assert_eq!(b.admit(at).0, Admission::Probe);
    }

    /// With several probes, the first verdict changes the state while the others are still
    /// in flight; their slots must come back whatever state they find, or each cycle admits
    /// fewer probes until a half-open breaker admits none and the route is lost for the run.
    #[test]
    fn a_probe_that_ends_after_another_probes_verdict_frees_its_slot() {
        let t0 = Instant::now();
        let mut b = Breaker::new(
            BreakerSettings {
                half_open_probes: 2,
                ..cfg()
            },
            t0,
        );
        for _ in 0..5 {
            b.record(t0, Timeout, false);
        }
        for late in [Ok, Timeout, Ok, Timeout, Ok, Timeout] {
            // Two probes; the first fails and re-opens the breaker, the second ends late.
            let now = b.reopens_at().unwrap();
            assert_eq!(b.admit(now).0, Admission::Probe);
            assert_eq!(
                b.admit(now).0,
                Admission::Probe,
                "both probe slots are free"
            );
            assert_eq!(b.record(now, Timeout, true).unwrap().to, BreakerState::Open);
            assert_eq!(
                b.record(now, late, true),
                None,
                "a late probe changes nothing"
            );
        }
        // The first probe succeeds and closes it; the second ends in the closed state.
        let now = b.reopens_at().unwrap();
        assert_eq!(b.admit(now).0, Admission::Probe);
        assert_eq!(b.admit(now).0, Admission::Probe);
        assert_eq!(b.record(now, Ok, true).unwrap().to, BreakerState::Closed);
        assert_eq!(b.record(now, Ok, true), None);
        for _ in 0..5 {
            b.record(now, Timeout, false);
        }
        let at = b.reopens_at().unwrap();
        assert_eq!(b.admit(at).0, Admission::Probe);
        assert_eq!(b.admit(at).0, Admission::Probe, "no slot was lost");
        assert_eq!(b.admit(at).0, Admission::No);
    }

    #[test]
    fn auth_and_invalid_model_force_open_for_the_run() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        assert_eq!(
            b.record(t0, Auth, false).unwrap().to,
            BreakerState::ForcedOpen
        );
        assert_eq!(b.admit(t0 + Duration::from_secs(3600)).0, Admission::No);
        let mut b = Breaker::new(cfg(), t0);
        assert_eq!(
            b.record(t0, InvalidModel, false).unwrap().to,
            BreakerState::ForcedOpen
        );
    }

    #[test]
    fn huge_open_for_saturates_instead_of_overflowing() {
        let t0 = Instant::now();
        let mut b = Breaker::new(
            BreakerSettings {
                open_for: Duration::MAX,
                window: Duration::MAX,
                ..cfg()
            },
            t0,
        );
        for _ in 0..5 {
            b.record(t0, Timeout, false);
        }
        assert_eq!(b.state(), BreakerState::Open);
        assert_eq!(b.admit(t0 + Duration::from_secs(86_400)).0, Admission::No);
        assert!(b.time_open(t0 + Duration::from_secs(60)) >= Duration::from_secs(60));
    }

    #[test]
    fn reopen_wait_is_capped() {
        let t0 = Instant::now();
        let mut b = Breaker::new(cfg(), t0);
        for _ in 0..5 {
            b.record(t0, Timeout, false);
        }
        let mut now = t0;
        for _ in 0..10 {
            now = b.reopens_at().unwrap();
            assert_eq!(b.admit(now).0, Admission::Probe);
            b.record(now, Timeout, true);
        }
        assert_eq!(b.reopens_at().unwrap() - now, Duration::from_secs(30 * 8));
    }
}
