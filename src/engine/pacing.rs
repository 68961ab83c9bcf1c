//! When a route may start its next attempt (docs/design.md section 13).
//!
//! - A Retry-After that came with back-pressure pauses the route's new attempts, not only
//!   the bounced unit's, until then. Attempts in flight go on.
//! - Rate-limit headers (`provider::ratelimit`) say how many requests and tokens are left
//!   until a reset. A route does not start an attempt that what is left cannot cover: it
//!   is paused until the reset. Attempts started since an answer's headers were read are
//!   counted against them, and so are the route's other attempts in flight when they are
//!   read (the server may not have counted those yet), so the remaining count is never
//!   overdrawn. Once a reset passes, the window is whole again (`limit`, when the headers
//!   gave it; else the window is forgotten until the next answer says more).
//!
//! While a route is paused the picker passes it over as it passes over an open breaker:
//! the later routes take the work, and waiting units come back when the pause ends.

use super::clock::deadline_after;
use crate::provider::ratelimit::{RateLimitInfo, Window};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// Why a route is paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseReason {
    /// A back-pressure answer's Retry-After.
    RetryAfter,
    /// The remaining requests of its rate limit are spoken for until the reset.
    Requests,
    /// The remaining tokens cannot cover the next attempt's estimate until the reset.
    Tokens,
}

impl PauseReason {
    /// The reason as reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            PauseReason::RetryAfter => "retry_after",
            PauseReason::Requests => "requests",
            PauseReason::Tokens => "tokens",
        }
    }
}

/// One rate-limit window as this process accounts for it.
#[derive(Debug, Clone, Copy)]
struct Budget {
    limit: Option<u64>,
    remaining: u64,
    reset_at: Instant,
    /// The longest reset seen: the window's length, for the next reset once this passes.
    length: Duration,
    /// Spoken for since `remaining` was read (attempts started, others in flight then).
    taken: u64,
}

impl Budget {
    /// A reading of `w` at `now` merged with what was known. Answers arrive out of order:
    /// one of an older window (its reset well before the known one) is stale and changes
    /// nothing; one of the same window can only lower what is left (a window's remaining
    /// count never grows before its reset); one of a newer window replaces it.
    fn read(w: &Window, now: Instant, in_flight: u64, before: Option<Budget>) -> Budget {
        let read = Budget {
            limit: w.limit,
            remaining: w.remaining,
            reset_at: deadline_after(now, w.reset_after),
            length: before.map_or(w.reset_after, |b| b.length.max(w.reset_after)),
            taken: in_flight,
        };
        let Some(known) = before.and_then(|b| b.roll(now)) else {
            return read;
        };
        let slack = read.length / 2;
        if read.reset_at + slack < known.reset_at {
            return Budget {
                length: read.length,
                ..known
            };
        }
        if read.reset_at > known.reset_at + slack {
            return read;
        }
        Budget {
            remaining: known.left().min(read.left()),
            taken: 0,
            ..read
        }
    }

    /// Past its reset the window is whole again; without a known limit it is forgotten.
    fn roll(self, now: Instant) -> Option<Budget> {
        if now < self.reset_at {
            return Some(self);
        }
        // A limit of 0 would refill to nothing at every reset, and no attempt would start
        // to hear better news: such a window is forgotten, as one without a limit.
        let limit = self.limit.filter(|l| *l > 0)?;
        let length = self.length.max(Duration::from_millis(1));
        let behind = now.saturating_duration_since(self.reset_at);
        // Whole windows passed, saturated (a clock far past the reset must not wrap).
        let passed = u32::try_from(behind.as_nanos() / length.as_nanos()).unwrap_or(u32::MAX);
        let windows = passed.saturating_add(1);
        Some(Budget {
            remaining: limit,
            reset_at: deadline_after(self.reset_at, length.saturating_mul(windows)),
            taken: 0,
            ..self
        })
    }

    fn left(&self) -> u64 {
        self.remaining.saturating_sub(self.taken)
    }
}

#[derive(Debug)]
struct RoutePace {
    paused_until: Option<Instant>,
    /// Why, while `paused_until` is set.
    paused_for: PauseReason,
    requests: Option<Budget>,
    tokens: Option<Budget>,
}

impl Default for RoutePace {
    fn default() -> Self {
        RoutePace {
            paused_until: None,
            paused_for: PauseReason::RetryAfter,
            requests: None,
            tokens: None,
        }
    }
}

impl RoutePace {
    fn roll(&mut self, now: Instant) {
        self.requests = self.requests.and_then(|b| b.roll(now));
        self.tokens = self.tokens.and_then(|b| b.roll(now));
        if self.paused_until.is_some_and(|t| t <= now) {
            self.paused_until = None;
        }
    }

    fn pause(&mut self, until: Instant, reason: PauseReason) -> bool {
        let longer = self.paused_until.is_none_or(|t| t < until);
        if longer {
            self.paused_until = Some(until);
            self.paused_for = reason;
        }
        longer
    }
}

/// A pause that started or grew, for the event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Paused {
    pub(crate) until: Instant,
    pub(crate) reason: PauseReason,
}

/// Per route: paused until when, and its rate-limit windows.
pub(crate) struct Pacing {
    routes: Vec<Mutex<RoutePace>>,
}

impl Pacing {
    /// `routes` routes, none paused.
    pub(crate) fn new(routes: usize) -> Self {
        Pacing {
            routes: (0..routes).map(|_| Mutex::default()).collect(),
        }
    }

    fn route(&self, route: usize) -> std::sync::MutexGuard<'_, RoutePace> {
        self.routes[route].lock().expect("pacing lock")
    }

    /// Pauses `route` for `retry_after` from `now` (a later pause already set is kept).
    /// Returns when the route's pause now ends.
    pub(crate) fn pause(&self, route: usize, now: Instant, retry_after: Duration) -> Instant {
        let mut p = self.route(route);
        p.pause(deadline_after(now, retry_after), PauseReason::RetryAfter);
        p.paused_until.expect("just paused")
    }

    /// When `route` may start attempts again, if it is paused at `now`.
    pub(crate) fn paused_until(&self, route: usize, now: Instant) -> Option<Instant> {
        let mut p = self.route(route);
        p.roll(now);
        p.paused_until
    }

    /// The pause of `route` at `now`, with why, if it is paused.
    pub(crate) fn paused(&self, route: usize, now: Instant) -> Option<Paused> {
        let mut p = self.route(route);
        p.roll(now);
        p.paused_until.map(|until| Paused {
            until,
            reason: p.paused_for,
        })
    }

    /// An answer's rate-limit headers, read at `now`; `in_flight`: the route's other
    /// attempts in flight (counted as spoken for).
    pub(crate) fn observe(&self, route: usize, info: &RateLimitInfo, now: Instant, in_flight: u64) {
        let mut p = self.route(route);
        if let Some(w) = &info.requests {
            p.requests = Some(Budget::read(w, now, in_flight, p.requests));
        }
        if let Some(w) = &info.tokens {
            p.tokens = Some(Budget::read(w, now, 0, p.tokens));
        }
    }

    /// Takes one request and `tokens` of the route's windows for an attempt starting at
    /// `now`; when they cannot cover it, pauses the route until the reset instead
    /// (returned, when the pause started or grew).
    pub(crate) fn take(
        &self,
        route: usize,
        now: Instant,
        tokens: u64,
    ) -> Result<(), Option<Paused>> {
        let mut p = self.route(route);
        p.roll(now);
        if let Some(until) = p.paused_until {
            return Err(Some(Paused {
                until,
                reason: p.paused_for,
            }));
        }
        // An attempt larger than the whole window (a small tokens-per-minute account)
        // is never covered by a reset: it needs the window whole, not more than whole.
        let short = |b: Option<Budget>, need: u64| {
            b.filter(|b| b.left() < need.min(b.limit.unwrap_or(u64::MAX)).max(1))
                .map(|b| b.reset_at)
        };
        let wait = short(p.requests, 1)
            .map(|t| (t, PauseReason::Requests))
            .or_else(|| short(p.tokens, tokens.max(1)).map(|t| (t, PauseReason::Tokens)));
        if let Some((until, reason)) = wait {
            let grew = p.pause(until, reason);
            return Err(grew.then_some(Paused { until, reason }));
        }
        if let Some(b) = p.requests.as_mut() {
            b.taken += 1;
        }
        if let Some(b) = p.tokens.as_mut() {
            b.taken = b.taken.saturating_add(tokens);
        }
        Ok(())
    }

    /// Gives back what [`Pacing::take`] took for an attempt that does not start after all
    /// (a shared window refused it).
    pub(crate) fn give_back(&self, route: usize, tokens: u64) {
        let mut p = self.route(route);
        if let Some(b) = p.requests.as_mut() {
            b.taken = b.taken.saturating_sub(1);
        }
        if let Some(b) = p.tokens.as_mut() {
            b.taken = b.taken.saturating_sub(tokens);
        }
    }

    /// Pauses `route` until `until` for `reason` (a window shared with other processes
    /// cannot cover its next attempt). The pause, when it started or grew.
    pub(crate) fn hold(&self, route: usize, until: Instant, reason: PauseReason) -> Option<Paused> {
        let grew = self.route(route).pause(until, reason);
        grew.then_some(Paused { until, reason })
    }
}

#[cfg(test)]
#[path = "pacing_tests.rs"]
mod tests;
