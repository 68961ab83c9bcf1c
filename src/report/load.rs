//! Each route's load over the run, for the report (docs/design.md section 13): its effective
//! limit over time (min, time-weighted median, max) and its back-pressure (answers, and
//! the time its new attempts were paused by a Retry-After or its rate-limit headers).
//! The engine says these only as events (`PassStarted`, `LimitChanged`, `BackPressure`,
//! `RoutePaused`); this collector listens while the review runs, like [`super::Warnings`].

use crate::engine::{Event, Sink};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// A route's effective limit over the run.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct LimitFigures {
    /// The lowest it was.
    pub min: usize,
    /// The limit in force for half of the run's time (time-weighted median).
    pub median: usize,
    /// The highest it was.
    pub max: usize,
}

/// A route's back-pressure over the run.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct BackpressureFigures {
    /// Attempts answered "not now" (429 rate limit, 529, 503 with Retry-After).
    pub answers: usize,
    /// Time its new attempts were paused (Retry-After or rate-limit headers), overlaps
    /// counted once, up to the end of the run.
    pub paused_ms: u64,
}

/// One route as the events told it.
#[derive(Debug)]
struct Track {
    limit: usize,
    since: Instant,
    /// Time spent at each limit (bounded by the ceiling's distinct values).
    time_at: BTreeMap<usize, Duration>,
    min: usize,
    max: usize,
    answers: usize,
    /// The end of the latest pause, and the paused time counted up to it.
    paused_until: Option<Instant>,
    paused: Duration,
}

impl Track {
    fn new(limit: usize, now: Instant) -> Track {
        Track {
            limit,
            since: now,
            time_at: BTreeMap::new(),
            min: limit,
            max: limit,
            answers: 0,
            paused_until: None,
            paused: Duration::ZERO,
        }
    }

    fn set_limit(&mut self, limit: usize, now: Instant) {
        *self.time_at.entry(self.limit).or_default() += now.saturating_duration_since(self.since);
        (self.limit, self.since) = (limit, now);
        self.min = self.min.min(limit);
        self.max = self.max.max(limit);
    }

    /// A pause from `now` for `len`; pauses arrive in time order, so an overlap is the
    /// part before the latest pause's end.
    fn pause(&mut self, now: Instant, len: Duration) {
        let end = now + len.min(Duration::from_secs(30 * 24 * 3600));
        let start = match self.paused_until {
            Some(until) if until > now => until,
            _ => now,
        };
        if end > start {
            self.paused += end - start;
            self.paused_until = Some(end);
        }
    }

    fn figures(&self, end: Instant) -> (LimitFigures, BackpressureFigures) {
        let mut time_at = self.time_at.clone();
        *time_at.entry(self.limit).or_default() += end.saturating_duration_since(self.since);
        let total: Duration = time_at.values().sum();
        let mut seen = Duration::ZERO;
        let median = time_at
            .iter()
            .find(|(_, d)| {
                seen += **d;
                seen * 2 >= total
            })
            .map_or(self.limit, |(l, _)| *l);
        let overrun = self
            .paused_until
            .map_or(Duration::ZERO, |u| u.saturating_duration_since(end));
        (
            LimitFigures {
                min: self.min,
                median,
                max: self.max,
            },
            BackpressureFigures {
                answers: self.answers,
                paused_ms: self.paused.saturating_sub(overrun).as_millis() as u64,
            },
        )
    }
}

/// Collects the routes' load from the engine's events while the review runs.
#[derive(Clone, Default)]
pub struct RouteLoad(Arc<Mutex<BTreeMap<String, Track>>>);

impl RouteLoad {
    /// A sink that keeps what the events say (tee it into the review's sink).
    pub fn sink(&self) -> Sink {
        let this = self.clone();
        Sink::new(move |s| this.event(&s.event, s.at))
    }

    /// Takes in an event emitted at `now`.
    fn event(&self, e: &Event, now: Instant) {
        let mut routes = self.0.lock().expect("route load lock");
        match e {
            // Passes share the route state: the first pass's start is the limit's.
            Event::PassStarted { routes: infos, .. } => {
                for r in infos {
                    let start = r.max_concurrency.min(crate::engine::limit::INITIAL);
                    routes
                        .entry(r.name.clone())
                        .or_insert_with(|| Track::new(start, now));
                }
            }
            Event::LimitChanged { route, limit, .. } => routes
                .entry(route.clone())
                .or_insert_with(|| Track::new(*limit, now))
                .set_limit(*limit, now),
            Event::BackPressure {
                route,
                paused_until,
                at,
                ..
            } => {
                let t = routes
                    .entry(route.clone())
                    .or_insert_with(|| Track::new(0, now));
                t.answers += 1;
                if let Some(until) = paused_until {
                    t.pause(now, until.saturating_sub(*at));
                }
            }
            // A pause by a Retry-After or the route's rate-limit headers (the same pause
            // a back-pressure answer announced overlaps itself: counted once).
            Event::RoutePaused {
                route, until, at, ..
            } => routes
                .entry(route.clone())
                .or_insert_with(|| Track::new(0, now))
                .pause(now, until.saturating_sub(*at)),
            _ => {}
        }
    }

    /// Each route's figures, the run ending now.
    pub fn figures(&self) -> BTreeMap<String, (LimitFigures, BackpressureFigures)> {
        let now = Instant::now();
        let routes = self.0.lock().expect("route load lock");
        routes
            .iter()
            .map(|(name, t)| (name.clone(), t.figures(now)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Pass, RouteInfo};

    fn limit(route: &str, limit: usize) -> Event {
        Event::LimitChanged {
            route: route.into(),
            route_index: 0,
            limit,
            ceiling: 16,
            reason: crate::engine::limit::LimitReason::BackPressure,
            at: Duration::ZERO,
        }
    }

    fn bounce(route: &str, pause: Option<u64>) -> Event {
        Event::BackPressure {
            unit: 0,
            route: route.into(),
            route_index: 0,
            bounce: 1,
            retry_after: pause.map(Duration::from_millis),
            paused_until: pause.map(|p| Duration::from_millis(1000 + p)),
            at: Duration::from_millis(1000),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_limit_s_time_weighted_median_and_paused_time_overlaps_once() {
        let load = RouteLoad::default();
        let sink = load.sink();
        sink.emit(Event::PassStarted {
            pass: Pass::Review,
            units: 10,
            budget: Duration::from_secs(60),
            routes: vec![RouteInfo {
                name: "p".into(),
                max_concurrency: 16,
                spill: true,
            }],
        });
        let ms = |n| tokio::time::advance(Duration::from_millis(n));
        ms(1000).await; // 1 s at 4
        sink.emit(limit("p", 8));
        sink.emit(bounce("p", Some(500)));
        ms(200).await;
        sink.emit(bounce("p", Some(500))); // overlaps the first by 300 ms
        sink.emit(bounce("p", None));
        ms(2800).await; // 3 s at 8
        sink.emit(limit("p", 2));
        ms(500).await; // 0.5 s at 2
        let (l, bp) = load.figures()["p"];
        assert_eq!(
            l,
            LimitFigures {
                min: 2,
                median: 8,
                max: 8
            }
        );
        assert_eq!(
            bp,
            BackpressureFigures {
                answers: 3,
                paused_ms: 700
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn header_pauses_count_and_overlap_a_retry_after_once() {
        let load = RouteLoad::default();
        let sink = load.sink();
        sink.emit(bounce("p", Some(400)));
        sink.emit(Event::RoutePaused {
            route: "p".into(),
            route_index: 0,
            until: Duration::from_millis(1400),
            reason: crate::engine::pacing::PauseReason::RetryAfter,
            at: Duration::from_millis(1000),
        });
        tokio::time::advance(Duration::from_millis(1000)).await;
        sink.emit(Event::RoutePaused {
            route: "p".into(),
            route_index: 0,
            until: Duration::from_millis(2300),
            reason: crate::engine::pacing::PauseReason::Requests,
            at: Duration::from_millis(2000),
        });
        tokio::time::advance(Duration::from_millis(1000)).await;
        let (_, bp) = load.figures()["p"];
        assert_eq!((bp.answers, bp.paused_ms), (1, 700));
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_past_the_end_counts_up_to_the_end() {
        let load = RouteLoad::default();
        load.sink().emit(bounce("p", Some(10_000)));
        tokio::time::advance(Duration::from_millis(250)).await;
        let (_, bp) = load.figures()["p"];
        assert_eq!(bp.paused_ms, 250);
    }
}
