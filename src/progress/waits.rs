//! What the units that are not in flight wait for, followed from the engine's events for
//! the progress line: a route's breaker (and the connections it could not make), a
//! route paused by a Retry-After or its rate limit, a free permit; and how long the
//! oldest attempt in flight has gone without an answer. Each part has a key without its
//! clocks, so a display can tell a line that says something new from one that does not.

use crate::config::format_duration;
use crate::engine::pacing::PauseReason;
use crate::engine::{BreakerState, Event};
use crate::text::escape;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// An attempt in flight this long without an end is worth naming.
const SLOW_ATTEMPT: Duration = Duration::from_secs(10);

#[derive(Default)]
struct RouteWait {
    breaker: Option<(BreakerState, String, Instant)>,
    paused: Option<(Instant, PauseReason)>,
    /// Attempts in a row that could not connect, and where to.
    unreachable: Option<(u32, String)>,
}

/// The waits of the pass that runs.
#[derive(Default)]
pub(super) struct Waits {
    pass_start: Option<Instant>,
    queued: BTreeSet<usize>,
    finished: BTreeSet<usize>,
    /// Unit → (route, when its attempt started).
    in_flight: BTreeMap<usize, (String, Instant)>,
    /// Units running the tool calls of a turn, and since when (docs/design.md §15).
    tools: BTreeMap<usize, Instant>,
    routes: BTreeMap<String, RouteWait>,
}

/// A part of the progress line: what it says, and the same without its clocks.
pub(super) struct Said {
    pub(super) text: String,
    pub(super) key: String,
}

impl Waits {
    /// Takes in what an event changes (`now`: when it arrived).
    pub(super) fn apply(&mut self, e: &Event, now: Instant) {
        match e {
            Event::PassStarted { .. } => {
                let routes = std::mem::take(&mut self.routes);
                *self = Waits {
                    pass_start: Some(now),
                    routes,
                    ..Waits::default()
                };
            }
            Event::UnitQueued { unit, .. } => {
                self.queued.insert(*unit);
            }
            Event::AttemptStarted { unit, route, .. } => {
                self.tools.remove(unit);
                self.in_flight.insert(*unit, (route.clone(), now));
            }
            Event::ToolsRunning { unit, .. } => {
                self.tools.insert(*unit, now);
            }
            Event::AttemptFinished { unit, record, .. } => {
                self.in_flight.remove(unit);
                if record.outcome == crate::provider::Outcome::Cancelled || record.backpressure {
                    return;
                }
                let r = self.routes.entry(record.route.clone()).or_default();
                r.unreachable = record.unreachable.as_ref().map(|a| {
                    let before = r.unreachable.as_ref().map_or(0, |(n, _)| *n);
                    (before + 1, a.to_string())
                });
            }
            Event::UnitFinished { unit, .. } => {
                self.in_flight.remove(unit);
                self.tools.remove(unit);
                self.finished.insert(*unit);
            }
            Event::Breaker {
                route, to, reason, ..
            } => {
                let r = self.routes.entry(route.clone()).or_default();
                r.breaker = (*to != BreakerState::Closed).then(|| (*to, reason.clone(), now));
            }
            Event::RoutePaused {
                route,
                until,
                reason,
                ..
            } => {
                if let Some(start) = self.pass_start {
                    self.routes.entry(route.clone()).or_default().paused =
                        Some((start + *until, *reason));
                }
            }
            _ => {}
        }
    }

    /// Units queued in this pass that are neither finished, in flight nor running tools.
    fn waiting(&self) -> usize {
        self.queued
            .iter()
            .filter(|u| {
                !self.finished.contains(u)
                    && !self.in_flight.contains_key(u)
                    && !self.tools.contains_key(u)
            })
            .count()
    }

    /// What the waiting units wait for, and the oldest attempt that has gone long
    /// without an end; None when there is nothing to say.
    pub(super) fn said(&self, now: Instant) -> Option<Said> {
        let mut parts: Vec<Said> = Vec::new();
        let waiting = self.waiting();
        if waiting > 0 {
            let mut why: Vec<Said> = self
                .routes
                .iter()
                .filter_map(|(name, r)| route_wait(name, r, now, self.pass_start))
                .collect();
            if why.is_empty() {
                why.push(Said {
                    text: "a free permit".into(),
                    key: "permit".into(),
                });
            }
            let units = format!("{waiting} unit{} wait", if waiting == 1 { "" } else { "s" });
            parts.push(Said {
                text: format!("{units}: {}", join(&why, |s| &s.text)),
                key: format!("{units}: {}", join(&why, |s| &s.key)),
            });
        }
        if let Some(since) = self.tools.values().min() {
            let n = self.tools.len();
            let units = format!("{n} unit{} running tools", if n == 1 { "" } else { "s" });
            let long = now.saturating_duration_since(*since);
            parts.push(Said {
                text: if long >= SLOW_ATTEMPT {
                    format!("{units}, the longest for {}", secs(long))
                } else {
                    units.clone()
                },
                key: units,
            });
        }
        if let Some((route, started)) = self
            .in_flight
            .values()
            .min_by_key(|(_, started)| *started)
            .filter(|(_, s)| now.saturating_duration_since(*s) >= SLOW_ATTEMPT)
        {
            let n = self.in_flight.len();
            parts.push(Said {
                text: format!(
                    "{n} attempt{} in flight, the oldest on `{}` for {} without an answer",
                    if n == 1 { "" } else { "s" },
                    escape::inline(route),
                    secs(now.saturating_duration_since(*started))
                ),
                key: format!("{n} in flight, oldest on {route} slow"),
            });
        }
        (!parts.is_empty()).then(|| Said {
            text: join(&parts, |s| &s.text),
            key: join(&parts, |s| &s.key),
        })
    }
}

fn join<'a>(parts: &'a [Said], f: impl Fn(&'a Said) -> &'a String) -> String {
    parts
        .iter()
        .map(f)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Whole seconds in the one duration format ("0s", not "0ms", under a second).
fn secs(d: Duration) -> String {
    match d.as_secs() {
        0 => "0s".into(),
        s => format_duration(Duration::from_secs(s)),
    }
}

/// Why a route admits no new attempt now, if it does not.
fn route_wait(name: &str, r: &RouteWait, now: Instant, start: Option<Instant>) -> Option<Said> {
    let name = escape::inline(name);
    let since = |t: Instant| {
        start.map_or(String::new(), |s| {
            format!(" since +{}", secs(t.saturating_duration_since(s)))
        })
    };
    let unreachable = r.unreachable.as_ref().map_or(String::new(), |(n, a)| {
        format!(
            " after {n} failed connection{} to {}",
            if *n == 1 { "" } else { "s" },
            escape::inline(a)
        )
    });
    if let Some((state, reason, at)) = &r.breaker {
        return Some(Said {
            text: format!(
                "route `{name}` {}{}{unreachable} ({})",
                state.label(),
                since(*at),
                escape::inline(reason)
            ),
            key: format!("breaker {name} {}{unreachable}", state.as_str()),
        });
    }
    let (until, reason) = r.paused.filter(|(until, _)| *until > now)?;
    let by = match reason {
        PauseReason::RetryAfter => "a Retry-After",
        PauseReason::Requests => "its rate limit's requests",
        PauseReason::Tokens => "its rate limit's tokens",
    };
    Some(Said {
        text: format!(
            "`{name}` paused by {by} for {} more",
            secs(until.saturating_duration_since(now) + Duration::from_millis(999))
        ),
        key: format!("{name} paused {}", reason.as_str()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Pass, UnitInfo, UnitLabels};
    use std::sync::Arc;

    fn queued(unit: usize) -> Event {
        Event::UnitQueued {
            unit,
            info: Arc::new(UnitInfo {
                labels: UnitLabels {
                    skill: "code-review".into(),
                    path: format!("src/f{unit}.rs"),
                    priority: 0,
                },
                lines: (1, 9),
                optional: false,
                routes: vec![],
                prompt: Arc::new(crate::prompt::Prompt {
                    system: String::new(),
                    user: String::new(),
                }),
                tools: None,
                split: None,
            }),
        }
    }

    fn started(w: &mut Waits, now: Instant, units: usize) {
        let pass = Event::PassStarted {
            pass: Pass::Review,
            units,
            budget: Duration::from_secs(900),
            routes: vec![],
        };
        w.apply(&pass, now);
        for u in 0..units {
            w.apply(&queued(u), now);
        }
    }

    #[test]
    fn units_waiting_out_a_retry_after_say_so_and_for_how_long() {
        let t0 = Instant::now();
        let mut w = Waits::default();
        started(&mut w, t0, 3);
        let pause = Event::RoutePaused {
            route: "primary".into(),
            route_index: 0,
            until: Duration::from_secs(12),
            reason: PauseReason::RetryAfter,
            at: Duration::ZERO,
        };
        w.apply(&pause, t0);
        let said = w.said(t0).unwrap();
        assert_eq!(
            said.text,
            "3 units wait: `primary` paused by a Retry-After for 12s more"
        );
        // Later, the same wait has the same key and a shorter clock.
        let later = w.said(t0 + Duration::from_secs(5)).unwrap();
        assert_eq!(later.key, said.key);
        assert!(later.text.ends_with("for 7s more"), "{}", later.text);
        // The pause over and nothing else in the way: a free permit.
        let after = w.said(t0 + Duration::from_secs(13)).unwrap();
        assert_eq!(after.text, "3 units wait: a free permit");
    }

    #[test]
    fn a_long_attempt_without_an_answer_is_named() {
        let t0 = Instant::now();
        let mut w = Waits::default();
        started(&mut w, t0, 1);
        let attempt = Event::AttemptStarted {
            unit: 0,
            attempt: 1,
            route: "primary".into(),
            provider: "openai",
            model: "m".into(),
            reason: crate::engine::AttemptReason::First,
            deadline: Duration::from_secs(120),
            hunk_remaining: Duration::from_secs(300),
            review_remaining: Duration::from_secs(900),
            breaker: BreakerState::Closed,
            probe: false,
        };
        w.apply(&attempt, t0);
        assert!(
            w.said(t0 + Duration::from_secs(2)).is_none(),
            "nothing to say yet"
        );
        let said = w.said(t0 + Duration::from_secs(45)).unwrap();
        assert_eq!(
            said.text,
            "1 attempt in flight, the oldest on `primary` for 45s without an answer"
        );
    }

    #[test]
    fn units_running_tools_say_so_and_are_not_counted_as_waiting() {
        let t0 = Instant::now();
        let mut w = Waits::default();
        started(&mut w, t0, 2);
        let tools = Event::ToolsRunning {
            unit: 0,
            turn: 1,
            calls: 2,
        };
        w.apply(&tools, t0);
        let said = w.said(t0 + Duration::from_secs(1)).unwrap();
        assert_eq!(
            said.text,
            "1 unit wait: a free permit; 1 unit running tools"
        );
        let long = w.said(t0 + Duration::from_secs(12)).unwrap();
        assert_eq!(long.key, said.key, "the same wait, a longer clock");
        assert!(
            long.text.ends_with("running tools, the longest for 12s"),
            "{}",
            long.text
        );
        assert!(!long.text.contains("attempt"), "{}", long.text);
    }
}
