//! Idle capacity under `routing = "ordered"`: how long permits of later routes that take
//! spillover sat free while units waited for a preferred route. An event consumer, like
//! the aggregator: it integrates free permits over time between events (the state only
//! changes at events), so the figure is exact on any clock.

use super::breaker::BreakerState;
use super::events::{Event, Sink};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug)]
struct Route {
    cap: usize,
    spill: bool,
    in_flight: usize,
    /// Its breaker admits new units (closed).
    closed: bool,
}

#[derive(Debug)]
struct State {
    last: Instant,
    routes: Vec<Route>,
    index: BTreeMap<String, usize>,
    /// Units queued that have not started (nor ended).
    waiting: BTreeSet<usize>,
    /// Slot-seconds left free.
    idle: f64,
}

impl State {
    /// Free permits of spillover routes after the first route that admits new units.
    fn free_later(&self) -> usize {
        let Some(first) = self.routes.iter().position(|r| r.closed) else {
            return 0;
        };
        self.routes[first + 1..]
            .iter()
            .filter(|r| r.spill && r.closed)
            .map(|r| r.cap.saturating_sub(r.in_flight))
            .sum()
    }

    fn advance(&mut self, now: Instant) {
        // Stamps are taken at emit, before the lock: a concurrent emitter's may be older.
        let now = now.max(self.last);
        if !self.waiting.is_empty() {
            let dt = now.saturating_duration_since(self.last).as_secs_f64();
            self.idle += dt * self.free_later() as f64;
        }
        self.last = now;
    }

    fn route(&mut self, name: &str) -> Option<&mut Route> {
        let i = *self.index.get(name)?;
        self.routes.get_mut(i)
    }

    fn apply(&mut self, e: &Event) {
        match e {
            Event::PassStarted { routes, .. } => {
                self.routes = routes
                    .iter()
                    .map(|r| Route {
                        cap: r.max_concurrency,
                        spill: r.spill,
                        in_flight: 0,
                        closed: true,
                    })
                    .collect();
                self.index = routes
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (r.name.clone(), i))
                    .collect();
            }
            Event::UnitQueued { unit, .. } => {
                self.waiting.insert(*unit);
            }
            Event::AttemptStarted { unit, route, .. } => {
                self.waiting.remove(unit);
                if let Some(r) = self.route(route) {
                    r.in_flight += 1;
                }
            }
            Event::AttemptFinished { record, .. } => {
                if let Some(r) = self.route(&record.route) {
                    r.in_flight = r.in_flight.saturating_sub(1);
                }
            }
            Event::UnitFinished { unit, .. } => {
                self.waiting.remove(unit);
            }
            Event::Breaker { route, to, .. } => {
                if let Some(r) = self.route(route) {
                    r.closed = *to == BreakerState::Closed;
                }
            }
            _ => {}
        }
    }
}

/// Measures idle spillover capacity over one pass.
pub(crate) struct IdleMeter(Mutex<State>);

impl IdleMeter {
    pub(crate) fn new(start: Instant) -> Self {
        IdleMeter(Mutex::new(State {
            last: start,
            routes: Vec::new(),
            index: BTreeMap::new(),
            waiting: BTreeSet::new(),
            idle: 0.0,
        }))
    }

    /// A sink that feeds this meter.
    pub(crate) fn sink(self: &Arc<Self>) -> Sink {
        let me = self.clone();
        Sink::new(move |s| {
            let mut st = me.0.lock().expect("idle meter");
            st.advance(s.at);
            st.apply(&s.event);
        })
    }

    /// The idle slot-time up to `now`, as a duration of slot-seconds.
    pub(crate) fn finish(&self, now: Instant) -> Duration {
        let mut st = self.0.lock().expect("idle meter");
        st.advance(now);
        Duration::from_secs_f64(st.idle.max(0.0))
    }
}
