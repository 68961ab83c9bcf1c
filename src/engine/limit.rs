//! A route's effective concurrency limit (docs/design.md section 13): `maxConcurrency` is a
//! ceiling, and the limit adapts under it, as TCP's congestion window and Netflix's
//! concurrency-limits (AIMD, Gradient2) do.
//!
//! - It starts at min(ceiling, [`INITIAL`]): 4 was the contract's default cap, which every
//!   route ran at before; starting at a ceiling of 16 against a provider that takes 4
//!   would cost 12 answers of 429 in the first round trip, starting at 4 costs one.
//! - It grows while attempts finish without back-pressure, the limit is in use (at least
//!   half of it in flight) and latency stays near the route's low-load latency: by one per
//!   answer until the first back-pressure (slow start), then by one per limit's worth of
//!   answers back up to the known-good level.
//! - Back-pressure multiplies it by [`BACKOFF`] once per round: answers of attempts
//!   that started before the last drop do not drop it again (a burst of 429 for one
//!   overshoot is one signal, though the lowest level it refused lowers the estimate). It
//!   remembers the highest level that drew none (ssthresh), never stays above it after a
//!   drop, and probes one above it only after [`PROBE_AFTER`] × that many answers; a probe that
//!   draws back-pressure returns to the known-good level (one answer, not a halving) and
//!   waits twice as long before the next.
//! - Latency that rises with load (the provider queues) shrinks it too: the mean log
//!   latency of answers that started at the current in-flight level against that of the
//!   levels at most half as high ([`INFLATED`]). A heavy tail that is the same at any load
//!   never differs by load, so such a route keeps its permits; timeouts and errors are not
//!   latency samples (section 13: a limit for routes that are slow *with load*).
//!
//! Never below 1, never above the ceiling. Plain code over the instants it is given.

use serde::Serialize;
use std::time::Duration;
use tokio::time::Instant;

/// The limit a route starts at (or its ceiling, when lower).
pub const INITIAL: usize = 4;
/// The multiplicative decrease on back-pressure or inflated latency.
pub const BACKOFF: f64 = 0.7;
/// Latency at load over low-load latency at which the provider is taken to queue.
pub const INFLATED: f64 = 2.0;
/// Growth stops while latency at load is this much above low-load latency.
const STEADY: f64 = 1.5;
/// Answers per side before latencies are compared.
const SAMPLES: u32 = 12;
/// Answers per permit at the known-good level before one probe above it.
pub const PROBE_AFTER: u32 = 8;
/// The most the probe wait doubles to (× [`PROBE_AFTER`]).
const MAX_PROBE_BACKOFF: u32 = 16;
/// In-flight levels tracked for latency (higher ones share the last).
const LEVELS: usize = 256;

/// Why a limit changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitReason {
    /// Answers without back-pressure at a limit in use: one more permit.
    Growth,
    /// One above the known-good level, after enough answers there.
    Probe,
    /// Back-pressure (429, 529, 503 with Retry-After): multiplied by [`BACKOFF`].
    BackPressure,
    /// A probe above the known-good level drew back-pressure: back to that level.
    ProbeRefused,
    /// Latency rose with load: multiplied by [`BACKOFF`].
    Latency,
}

impl LimitReason {
    /// The reason as reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitReason::Growth => "growth",
            LimitReason::Probe => "probe",
            LimitReason::BackPressure => "back_pressure",
            LimitReason::ProbeRefused => "probe_refused",
            LimitReason::Latency => "latency",
        }
    }
}

/// What a finished attempt says about the route's capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// An answer (model work done) after this long.
    Answer(Duration),
    /// "Not now" before any model work.
    BackPressure,
    /// Nothing about capacity (timeouts, errors, cancellations).
    Nothing,
}

/// One finished attempt.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// When it started.
    pub started: Instant,
    /// The route's attempts in flight when it started, itself included.
    pub in_flight: usize,
    /// What it said.
    pub signal: Signal,
}

/// One route's effective limit.
#[derive(Debug, Clone)]
pub struct AdaptiveLimit {
    ceiling: usize,
    limit: f64,
    /// The highest level known not to draw back-pressure, once one was drawn.
    known_good: Option<usize>,
    /// Answers at the known-good level since the last drop or probe (the probe wait).
    answers: u32,
    /// Answers that started above the known-good level since the last probe.
    confirmed: u32,
    probe_backoff: u32,
    last_drop: Option<Instant>,
    /// Half the level the last back-pressure drop started from: the lowest a lower
    /// estimate of the same round may take the limit to (one answer refused at a level far
    /// under the others is more likely a race between the two sides' counts than the
    /// provider's capacity).
    drop_floor: f64,
    load: LoadLatency,
}

impl AdaptiveLimit {
    /// A route with this ceiling (`maxConcurrency`; 0 counts as 1).
    pub fn new(ceiling: usize) -> Self {
        let ceiling = ceiling.max(1);
        AdaptiveLimit {
            ceiling,
            limit: ceiling.min(INITIAL) as f64,
            known_good: None,
            answers: 0,
            confirmed: 0,
            probe_backoff: 1,
            last_drop: None,
            drop_floor: 1.0,
            load: LoadLatency::default(),
        }
    }

    /// Permits that may be in flight now.
    pub fn current(&self) -> usize {
        (self.limit.floor() as usize).clamp(1, self.ceiling)
    }

    /// The ceiling.
    pub fn ceiling(&self) -> usize {
        self.ceiling
    }

    /// Learns from a finished attempt at `now`; the new limit and why, if it changed.
    pub fn record(&mut self, s: Sample, now: Instant) -> Option<(usize, LimitReason)> {
        let before = self.current();
        let reason = match s.signal {
            Signal::Nothing => None,
            Signal::BackPressure => self.back_pressure(s, now, before),
            Signal::Answer(latency) => self.answer(s, latency, now, before),
        };
        self.limit = self.limit.clamp(1.0, self.ceiling as f64);
        let after = self.current();
        match reason {
            Some(r) if after != before => Some((after, r)),
            _ => None,
        }
    }

    /// A drop counts once per round: not for attempts sent before the last drop.
    fn same_round(&self, s: &Sample) -> bool {
        self.last_drop.is_some_and(|d| s.started < d)
    }

    fn dropped(&mut self, now: Instant) {
        self.last_drop = Some(now);
        self.answers = 0;
        self.confirmed = 0;
    }

    fn back_pressure(&mut self, s: Sample, now: Instant, before: usize) -> Option<LimitReason> {
        // The attempt that drew it was one too many: the level below it held.
        let held = s.in_flight.saturating_sub(1).max(1);
        if self.same_round(&s) {
            // Not a second drop, but a better estimate: answers of one overshoot arrive in
            // any order, and the lowest level refused is the one that tells.
            return self.lower_known_good(held);
        }
        let held = held.min(before);
        self.dropped(now);
        match self.known_good {
            Some(good) if before > good => {
                self.limit = good as f64;
                self.probe_backoff = (self.probe_backoff * 2).min(MAX_PROBE_BACKOFF);
                Some(LimitReason::ProbeRefused)
            }
            _ => {
                // ×0.7, and not above the level that held (down to half the level it
                // drops from): a slow start that overshot to twice it would otherwise stay
                // above it and draw another round of "not now", each one a Retry-After
                // pause of the whole route.
                let good = self.known_good.map_or(held, |g| g.min(held));
                self.known_good = Some(good);
                self.drop_floor = (before as f64 / 2.0).max(1.0);
                self.limit = (self.limit * BACKOFF).min((good as f64).max(self.drop_floor));
                Some(LimitReason::BackPressure)
            }
        }
    }

    /// A back-pressure answer of a round already dropped for, refused at a level below the
    /// known-good one: that level is the known-good one now, and the limit keeps under it.
    fn lower_known_good(&mut self, held: usize) -> Option<LimitReason> {
        let good = self.known_good?;
        if held >= good {
            return None;
        }
        self.known_good = Some(held);
        self.limit = self.limit.min((held as f64).max(self.drop_floor));
        Some(LimitReason::BackPressure)
    }

    fn answer(
        &mut self,
        s: Sample,
        latency: Duration,
        now: Instant,
        before: usize,
    ) -> Option<LimitReason> {
        self.load.add(s.in_flight, latency);
        let ratio = self.load.inflation(s.in_flight);
        if ratio.is_some_and(|r| r >= INFLATED) {
            if self.same_round(&s) {
                return None;
            }
            self.dropped(now);
            self.limit *= BACKOFF;
            return Some(LimitReason::Latency);
        }
        let in_use = s.in_flight * 2 >= before;
        if !in_use || ratio.is_some_and(|r| r >= STEADY) || before >= self.ceiling {
            return None;
        }
        let Some(good) = self.known_good else {
            self.limit += 1.0; // slow start
            return Some(LimitReason::Growth);
        };
        if before < good {
            self.limit += 1.0 / self.limit;
            return Some(LimitReason::Growth);
        }
        if before > good {
            // Probing: a round of answers at the higher level makes it the known-good one.
            if s.in_flight > good {
                self.confirmed += 1;
            }
            if self.confirmed as usize >= before {
                self.known_good = Some(before);
                self.probe_backoff = (self.probe_backoff / 2).max(1);
                self.confirmed = 0;
                self.answers = 0;
            }
            return None;
        }
        self.answers = self.answers.saturating_add(1);
        if self.answers >= PROBE_AFTER * self.probe_backoff * good as u32 {
            self.answers = 0;
            self.confirmed = 0;
            self.limit = (before + 1) as f64;
            return Some(LimitReason::Probe);
        }
        None
    }
}

/// Mean log latency of answers by the in-flight level they started at.
#[derive(Debug, Clone, Default)]
struct LoadLatency {
    /// (answers, mean ln seconds), by level (index 0 unused).
    levels: Vec<(u32, f64)>,
}

impl LoadLatency {
    fn add(&mut self, level: usize, latency: Duration) {
        let level = level.clamp(1, LEVELS);
        if self.levels.len() <= level {
            self.levels.resize(level + 1, (0, 0.0));
        }
        let (n, mean) = &mut self.levels[level];
        *n = n.saturating_add(1);
        // A running mean, then an exponential one over about the last 16 answers.
        let alpha = (1.0 / f64::from(*n)).max(1.0 / 16.0);
        *mean += alpha * (latency.as_secs_f64().max(1e-3).ln() - *mean);
    }

    /// Latency at `level` over latency at the levels at most half as high, when both
    /// have enough answers.
    fn inflation(&self, level: usize) -> Option<f64> {
        let level = level.clamp(1, LEVELS);
        let &(n, high) = self.levels.get(level)?;
        if level < 2 || n < SAMPLES {
            return None;
        }
        let low = &self.levels[1..=level / 2];
        let count: u32 = low.iter().map(|(n, _)| *n).sum();
        if count < SAMPLES {
            return None;
        }
        let mean = low.iter().map(|(n, m)| f64::from(*n) * m).sum::<f64>() / f64::from(count);
        Some((high - mean).exp())
    }
}

#[cfg(test)]
#[path = "limit_tests.rs"]
mod tests;
