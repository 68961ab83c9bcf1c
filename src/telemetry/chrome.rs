//! `--trace FILE --trace-format chrome`: the run as a Chrome Trace Event file
//! (`{"traceEvents": [...]}`), which Perfetto and chrome://tracing open. One track per
//! route slot (a route with maxConcurrency 4 has four), each attempt a slice named by its
//! unit and outcome; retries, failovers, breaker transitions and budget expiry as instant
//! events; the review span with its budget beside it, and each unit's hunk budget on the
//! unit's own track; each route's effective limit as a counter, its pauses and answers of
//! back-pressure (`chrome_load.rs`). An event consumer: it records the engine's events as they arrive and
//! lays them out when the review is over.

#[path = "chrome_event.rs"]
mod event;
#[path = "chrome_load.rs"]
mod load;

use crate::engine::{Event, Pass, Stamped, UnitStatus};
use event::{instant, meta, ms, slice};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const REVIEW_PID: u64 = 1;
const UNITS_PID: u64 = 2;
/// Route `i` (in failover order) is process `ROUTE_PID + i`.
const ROUTE_PID: u64 = 10;

/// Records engine events with their emit time; [`Recorder::render`] makes the trace.
pub(crate) struct Recorder {
    start: Instant,
    log: Mutex<Vec<(Duration, Event)>>,
}

impl Recorder {
    pub(crate) fn new() -> Recorder {
        Recorder {
            start: Instant::now(),
            log: Mutex::new(Vec::new()),
        }
    }

    /// Keeps one event (ticks carry nothing the timeline needs).
    pub(crate) fn on_event(&self, s: &Stamped) {
        if matches!(s.event, Event::Tick { .. }) {
            return;
        }
        let ts = s.at.into_std().saturating_duration_since(self.start);
        if let Ok(mut l) = self.log.lock() {
            // Tasks emit concurrently: the log stays in arrival order with times that never
            // go back (a slice ends no earlier than the events logged before its end).
            let ts = l.last().map_or(ts, |(last, _)| ts.max(*last));
            l.push((ts, s.event.clone()));
        }
    }

    /// The trace document; a review that has not finished ends now.
    pub(crate) fn render(&self) -> Value {
        let now = self.start.elapsed();
        let log = self.log.lock().map(|l| l.clone()).unwrap_or_default();
        render(&log, now)
    }
}

/// Route slots: an attempt takes the lowest slot of its route free when it starts.
#[derive(Default)]
struct Slots {
    busy: HashMap<String, Vec<bool>>,
}

impl Slots {
    fn take(&mut self, route: &str) -> usize {
        let busy = self.busy.entry(route.to_string()).or_default();
        let slot = busy.iter().position(|b| !b).unwrap_or(busy.len());
        if slot == busy.len() {
            busy.push(false);
        }
        busy[slot] = true;
        slot
    }

    fn free(&mut self, route: &str, slot: usize) {
        if let Some(b) = self.busy.get_mut(route).and_then(|b| b.get_mut(slot)) {
            *b = false;
        }
    }

    fn used(&self, route: &str) -> usize {
        self.busy.get(route).map_or(0, Vec::len)
    }
}

/// What the layout keeps while it walks the events.
#[derive(Default)]
struct Layout {
    out: Vec<Value>,
    /// Routes in failover order, with their concurrency caps.
    routes: Vec<(String, usize)>,
    labels: HashMap<usize, String>,
    slots: Slots,
    /// Attempts in flight: (unit, attempt) → (route, slot, start, args).
    open: HashMap<(usize, u32), (String, usize, Duration, Value)>,
    /// When each unit's first attempt started (its hunk budget starts then).
    unit_start: BTreeMap<usize, Duration>,
    hunk_budget: Duration,
    review: Option<(Duration, Value)>,
    review_end: Option<(Duration, Value)>,
    /// Routes whose limit counter has its first sample (passes share the route state).
    limit_shown: BTreeSet<String>,
    /// Route processes with a pause track.
    paused: BTreeSet<u64>,
}

impl Layout {
    fn route_pid(&mut self, route: &str) -> u64 {
        let i = match self.routes.iter().position(|(r, _)| r == route) {
            Some(i) => i,
            None => {
                self.routes.push((route.to_string(), 0));
                self.routes.len() - 1
            }
        };
        ROUTE_PID + i as u64
    }

    fn label(&self, unit: usize) -> String {
        self.labels
            .get(&unit)
            .cloned()
            .unwrap_or_else(|| format!("unit {unit}"))
    }

    fn unit_instant(&mut self, name: String, ts: Duration, unit: usize, args: Value) {
        self.out
            .push(instant(name, ts, UNITS_PID, unit as u64 + 1, "t", args));
    }

    fn event(&mut self, ts: Duration, e: &Event, end: Duration) {
        match e {
            Event::ReviewStarted(info) => self.review_started(ts, info),
            Event::PassStarted {
                pass,
                budget,
                routes,
                units,
            } => self.pass_started(ts, *pass, *budget, routes, *units),
            Event::UnitQueued { unit, info } => {
                let l = &info.labels;
                self.labels.insert(
                    *unit,
                    format!("{} {}:{}-{}", l.skill, l.path, info.lines.0, info.lines.1),
                );
            }
            Event::AttemptStarted { .. } => self.attempt_started(ts, e),
            Event::AttemptFinished {
                unit,
                attempt,
                record,
            } => self.attempt_finished(ts, *unit, *attempt, record),
            Event::RouteSkipped { .. } | Event::Retry { .. } | Event::Failover { .. } => {
                self.unit_notice(ts, e)
            }
            Event::LimitChanged {
                route,
                limit,
                ceiling,
                ..
            } => {
                let pid = self.route_pid(route);
                self.limit_shown.insert(route.clone());
                self.out.push(load::limit(ts, pid, *limit, *ceiling));
            }
            Event::BackPressure {
                route,
                unit,
                retry_after,
                ..
            } => {
                let pid = self.route_pid(route);
                self.out
                    .push(load::back_pressure(ts, pid, *unit, *retry_after));
            }
            Event::RoutePaused {
                route,
                until,
                at,
                reason,
                ..
            } => {
                let pid = self.route_pid(route);
                self.paused.insert(pid);
                let end = ts + until.saturating_sub(*at);
                self.out.push(load::paused(ts, end, pid, reason.as_str()));
            }
            Event::Breaker {
                route,
                from,
                to,
                reason,
            } => {
                let pid = self.route_pid(route);
                self.out.push(instant(
                    format!("breaker {} → {}", from.as_str(), to.as_str()),
                    ts,
                    pid,
                    1,
                    "p",
                    json!({"route": route, "reason": reason}),
                ));
            }
            Event::BudgetExpired { in_flight } => self.out.push(instant(
                format!("review budget expired ({in_flight} attempts cancelled)"),
                ts,
                REVIEW_PID,
                1,
                "g",
                json!({"inFlight": in_flight}),
            )),
            Event::Warning { route, message } => self.out.push(instant(
                format!("warning: route {route}"),
                ts,
                REVIEW_PID,
                1,
                "g",
                json!({"route": route, "message": message}),
            )),
            Event::UnitFinished { unit, result } => self.unit_finished(ts, *unit, result, end),
            Event::ReviewFinished { outcome, reviewed } => {
                self.review_end = Some((
                    ts,
                    json!({"outcome": outcome.as_str(), "reviewed": reviewed}),
                ));
            }
            Event::ToolCalled {
                unit,
                turn,
                tool,
                bytes,
                error,
                repeat,
                duration,
            } => self.out.push(slice(
                format!("{tool} (turn {turn})"),
                "tool",
                ts.saturating_sub(*duration),
                ts,
                UNITS_PID,
                *unit as u64 + 1,
                json!({"tool": tool, "turn": turn, "bytes": bytes, "error": error, "repeat": repeat}),
            )),
            Event::Tick { .. } | Event::ToolsRunning { .. } => {}
        }
    }

    /// A decision about one unit, as an instant on its track: a route passed over, a
    /// retry, a failover.
    fn unit_notice(&mut self, ts: Duration, e: &Event) {
        match e {
            Event::RouteSkipped {
                unit,
                route,
                breaker,
            } => self.unit_instant(
                format!("{route} skipped (breaker {})", breaker.as_str()),
                ts,
                *unit,
                json!({"route": route, "breaker": breaker.as_str()}),
            ),
            Event::Retry {
                unit,
                route,
                reason,
                wait,
            } => self.unit_instant(
                format!("retry on {route} (wait {}ms)", ms(*wait)),
                ts,
                *unit,
                json!({"route": route, "reason": reason, "waitMs": ms(*wait)}),
            ),
            Event::Failover {
                unit,
                from,
                to,
                reason,
            } => self.unit_instant(
                format!("failover {from} → {to}"),
                ts,
                *unit,
                json!({"from": from, "to": to, "reason": reason}),
            ),
            _ => {}
        }
    }

    fn review_started(&mut self, ts: Duration, info: &crate::engine::ReviewInfo) {
        self.hunk_budget = info.hunk_budget;
        let args = json!({"target": info.target, "units": info.units,
                    "reviewBudgetMs": ms(info.review_budget), "hunkBudgetMs": ms(info.hunk_budget),
                    "requestTimeoutMs": ms(info.request_timeout)});
        self.review = Some((ts, args));
        self.out.push(slice(
            format!("review budget {}ms", ms(info.review_budget)),
            "budget",
            ts,
            ts + info.review_budget,
            REVIEW_PID,
            2,
            json!({"budgetMs": ms(info.review_budget)}),
        ));
    }

    fn pass_started(
        &mut self,
        ts: Duration,
        pass: Pass,
        budget: Duration,
        routes: &[crate::engine::RouteInfo],
        units: usize,
    ) {
        for r in routes {
            let pid = self.route_pid(&r.name);
            let i = (pid - ROUTE_PID) as usize;
            self.routes[i].1 = self.routes[i].1.max(r.max_concurrency);
            // The limit's first sample: where the engine starts it under the ceiling.
            if self.limit_shown.insert(r.name.clone()) {
                let start = r.max_concurrency.min(crate::engine::limit::INITIAL);
                self.out
                    .push(load::limit(ts, pid, start, r.max_concurrency));
            }
        }
        if pass == Pass::Verification {
            self.out.push(slice(
                format!("verification budget {}ms", ms(budget)),
                "budget",
                ts,
                ts + budget,
                REVIEW_PID,
                3,
                json!({"budgetMs": ms(budget), "units": units}),
            ));
        }
    }

    fn attempt_started(&mut self, ts: Duration, e: &Event) {
        let Event::AttemptStarted {
            unit,
            attempt,
            route,
            provider,
            model,
            reason,
            deadline,
            hunk_remaining,
            review_remaining,
            breaker,
            probe,
        } = e
        else {
            return;
        };
        self.unit_start.entry(*unit).or_insert(ts);
        let (kind, detail) = reason.describe();
        let args = json!({
            "unit": unit, "attempt": attempt, "route": route, "provider": provider,
            "model": model, "reason": kind, "reasonDetail": detail,
            "deadlineMs": ms(*deadline), "hunkRemainingMs": ms(*hunk_remaining),
            "reviewRemainingMs": ms(*review_remaining),
            "breaker": breaker.as_str(), "probe": probe,
        });
        self.route_pid(route);
        let slot = self.slots.take(route);
        self.open
            .insert((*unit, *attempt), (route.clone(), slot, ts, args));
    }

    fn attempt_finished(
        &mut self,
        ts: Duration,
        unit: usize,
        attempt: u32,
        record: &crate::provider::AttemptRecord,
    ) {
        let Some((route, slot, started, mut args)) = self.open.remove(&(unit, attempt)) else {
            return;
        };
        self.slots.free(&route, slot);
        args["outcome"] = json!(record.outcome.as_str());
        args["stage"] = json!(record.stage.map(|s| s.as_str()));
        args["httpStatus"] = json!(record.http_status);
        args["ttftMs"] = json!(record.ttft.map(ms));
        args["outcomeReason"] = json!(record.reason);
        let name = format!("{} · {}", self.label(unit), record.outcome.as_str());
        let pid = self.route_pid(&route);
        self.out.push(slice(
            name,
            "attempt",
            started,
            ts,
            pid,
            slot as u64 + 1,
            args,
        ));
    }

    /// The unit's life and its hunk budget, from the same start: whichever is longer
    /// holds the other, so the slices nest.
    fn unit_finished(
        &mut self,
        ts: Duration,
        unit: usize,
        r: &crate::engine::UnitResult,
        end: Duration,
    ) {
        let tid = unit as u64 + 1;
        let label = self.label(unit);
        let args =
            json!({"status": r.status.as_str(), "reason": r.reason, "findings": r.findings.len()});
        match self.unit_start.get(&unit).copied() {
            Some(start) => {
                self.out.push(slice(
                    format!("{label} → {}", r.status.as_str()),
                    "unit",
                    start,
                    ts,
                    UNITS_PID,
                    tid,
                    args,
                ));
                let hunk_end = (start + self.hunk_budget).min(end.max(start));
                self.out.push(slice(
                    format!("hunk budget {}ms", ms(self.hunk_budget)),
                    "budget",
                    start,
                    hunk_end,
                    UNITS_PID,
                    tid,
                    json!({"hunkBudgetMs": ms(self.hunk_budget)}),
                ));
            }
            None if r.status == UnitStatus::Skipped => {
                self.unit_instant(format!("{label} not started"), ts, unit, args);
            }
            None => {}
        }
        self.out.push(meta(
            UNITS_PID,
            Some(tid),
            "thread_name",
            &format!("unit {unit}: {label}"),
        ));
    }
}

/// The whole trace from the recorded events; a review that did not finish ends at `end`.
pub(crate) fn render(log: &[(Duration, Event)], end: Duration) -> Value {
    let mut layout = Layout::default();
    for (ts, e) in log {
        layout.event(*ts, e, end);
    }
    let (start, mut args) = layout
        .review
        .take()
        .unwrap_or_else(|| (log.first().map_or(Duration::ZERO, |(t, _)| *t), json!({})));
    let stop = match layout.review_end.take() {
        Some((t, finished)) => {
            if let (Some(a), Some(f)) = (args.as_object_mut(), finished.as_object()) {
                a.extend(f.clone());
            }
            t
        }
        None => end,
    };
    let mut out = std::mem::take(&mut layout.out);
    out.push(slice(
        "review".into(),
        "review",
        start,
        stop,
        REVIEW_PID,
        1,
        args,
    ));
    out.push(meta(REVIEW_PID, None, "process_name", "warden review"));
    out.push(meta(REVIEW_PID, Some(1), "thread_name", "review"));
    out.push(meta(REVIEW_PID, Some(2), "thread_name", "review budget"));
    out.push(meta(
        REVIEW_PID,
        Some(3),
        "thread_name",
        "verification budget",
    ));
    out.push(meta(
        UNITS_PID,
        None,
        "process_name",
        "units (hunk budgets)",
    ));
    for (i, (route, cap)) in layout.routes.iter().enumerate() {
        let pid = ROUTE_PID + i as u64;
        out.push(meta(pid, None, "process_name", &format!("route {route}")));
        out.push(json!({"ph": "M", "pid": pid, "name": "process_sort_index", "args": {"sort_index": pid}}));
        if layout.paused.contains(&pid) {
            out.push(meta(
                pid,
                Some(load::PAUSE_TID),
                "thread_name",
                &format!("{route} paused"),
            ));
        }
        for s in 0..layout.slots.used(route).max(*cap) {
            out.push(meta(
                pid,
                Some(s as u64 + 1),
                "thread_name",
                &format!("{route} slot {}", s + 1),
            ));
        }
    }
    json!({"traceEvents": out, "displayTimeUnit": "ms"})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{AttemptReason, BreakerState};
    use crate::provider::{AttemptRecord, Outcome};

    fn started(unit: usize, attempt: u32, route: &str) -> Event {
        Event::AttemptStarted {
            unit,
            attempt,
            route: route.into(),
            provider: "openai",
            model: "m".into(),
            reason: AttemptReason::First,
            deadline: Duration::from_secs(2),
            hunk_remaining: Duration::from_secs(3),
            review_remaining: Duration::from_secs(10),
            breaker: BreakerState::Closed,
            probe: false,
        }
    }

    fn finished(unit: usize, attempt: u32, route: &str, outcome: Outcome) -> Event {
        let mut record = AttemptRecord::new(route, "openai", "m", Duration::from_secs(2));
        record.outcome = outcome;
        Event::AttemptFinished {
            unit,
            attempt,
            record,
        }
    }

    #[test]
    fn concurrent_attempts_take_separate_slots_and_instants_mark_policy_events() {
        let s = Duration::from_millis;
        let log = vec![
            (s(0), Event::Tick { elapsed: s(0) }),
            (s(1), started(0, 1, "a")),
            (s(2), started(1, 1, "a")),
            (s(5), finished(0, 1, "a", Outcome::Unavailable)),
            (
                s(5),
                Event::Breaker {
                    route: "a".into(),
                    from: BreakerState::Closed,
                    to: BreakerState::Open,
                    reason: "3 failures".into(),
                },
            ),
            (
                s(6),
                Event::Retry {
                    unit: 0,
                    route: "a".into(),
                    reason: "503".into(),
                    wait: s(100),
                },
            ),
            (s(7), started(0, 2, "a")),
            (s(8), Event::BudgetExpired { in_flight: 2 }),
            (s(9), finished(1, 1, "a", Outcome::Cancelled)),
            (s(9), finished(0, 2, "a", Outcome::Cancelled)),
        ];
        let trace = render(&log, s(10));
        let ev = trace["traceEvents"].as_array().unwrap();
        let slots: Vec<(u64, u64)> = ev
            .iter()
            .filter(|e| e["cat"] == "attempt")
            .map(|e| {
                (
                    e["args"]["unit"].as_u64().unwrap(),
                    e["tid"].as_u64().unwrap(),
                )
            })
            .collect();
        // Unit 1 overlaps unit 0's first attempt: slot 2; unit 0's second attempt reuses slot 1.
        assert_eq!(slots, [(0, 1), (1, 2), (0, 1)]);
        let names: Vec<&str> = ev
            .iter()
            .filter(|e| e["ph"] == "i")
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "breaker closed → open",
                "retry on a (wait 100ms)",
                "review budget expired (2 attempts cancelled)"
            ]
        );
        let review = ev.iter().find(|e| e["cat"] == "review").unwrap();
        assert_eq!(
            (review["ts"].as_u64(), review["dur"].as_u64()),
            (Some(0), Some(10_000))
        );
        let slot_tracks = ev
            .iter()
            .filter(|e| e["name"] == "thread_name" && e["pid"] == ROUTE_PID)
            .count();
        assert_eq!(slot_tracks, 2);
    }
}
