//! One unit's life: choose a route that admits calls, wait for its permit (bounded by the
//! budgets), attempt, and on failure decide — as the one retry owner — whether to retry,
//! fail over, or stop with an honest status.

use super::breaker::{Admission, BreakerState};
use super::events::{AttemptReason, Event};
use super::outcome::{AttemptLog, Move, UnitResult, UnitStatus};
use super::retry::{self, Stop};
use super::{Shared, UnitInfo};
use crate::provider::{AttemptRecord, AttemptRequest, Limits, Outcome};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, sleep_until};

/// The last failed attempt, which shapes the next one.
struct LastFailure {
    route: usize,
    reason: String,
    retry_after: Option<Duration>,
}

struct Slot {
    route: usize,
    permit: OwnedSemaphorePermit,
    probe: bool,
    breaker: BreakerState,
    reason: AttemptReason,
}

/// Runs one unit to its end; its result goes out as `UnitFinished`.
pub(super) async fn run(sh: &Shared<'_>, index: usize, work: &UnitInfo) {
    let mut r = UnitResult {
        unit: index,
        status: UnitStatus::Skipped,
        route: None,
        reason: String::new(),
        attempts: Vec::new(),
        routes_tried: Vec::new(),
        moves: Vec::new(),
        findings: Vec::new(),
        dropped_findings: 0,
    };
    let mut hunk_deadline: Option<Instant> = None;
    let mut last: Option<LastFailure> = None;
    loop {
        let slot = match acquire(sh, index, work, last.as_ref(), hunk_deadline).await {
            Ok(s) => s,
            Err(stop) => return finish(sh, r, stop),
        };
        let now = Instant::now();
        let hunk_end = *hunk_deadline.get_or_insert(now + sh.exec.hunk_budget);
        let route = &sh.routes[slot.route];
        let hunk_remaining = hunk_end.saturating_duration_since(now);
        let review_remaining = sh.review_remaining(now);
        let deadline = sh
            .exec
            .request_timeout
            .min(hunk_remaining)
            .min(review_remaining);
        let number = r.attempts.len() as u32 + 1;
        if let Some(prev) = r.routes_tried.last()
            && *prev != route.name
        {
            r.moves.push(Move {
                from: prev.clone(),
                to: route.name.clone(),
                reason: last.as_ref().map(|l| l.reason.clone()).unwrap_or_default(),
            });
        }
        r.routes_tried.push(route.name.clone());
        sh.sink.emit(Event::AttemptStarted {
            unit: index,
            attempt: number,
            route: route.name.clone(),
            provider: route.provider.kind(),
            model: route.provider.model().to_string(),
            reason: slot.reason.clone(),
            deadline,
            hunk_remaining,
            review_remaining,
            breaker: slot.breaker,
            probe: slot.probe,
        });
        let req = AttemptRequest {
            prompt: (*work.prompt).clone(),
            lines: work.lines,
            limits: Limits {
                connect: sh.exec.connect_timeout.min(deadline),
                first_token: sh.exec.first_token_timeout.min(deadline),
                idle: sh.exec.idle_timeout.min(deadline),
                total: deadline,
            },
        };
        let in_route = route.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        route.peak.fetch_max(in_route, Ordering::SeqCst);
        sh.in_flight.fetch_add(1, Ordering::SeqCst);
        let result = tokio::select! {
            biased;
            _ = sh.cancel.cancelled() => None,
            a = route.provider.attempt(&req) => Some(a),
        };
        // Dropping the attempt's future above has already closed its connection.
        sh.in_flight.fetch_sub(1, Ordering::SeqCst);
        route.in_flight.fetch_sub(1, Ordering::SeqCst);
        drop(slot.permit);
        let finished = Instant::now();
        let (record, extracted) = match result {
            Some(a) => (a.record, a.extracted),
            None => (cancelled_record(route, &req, finished - now), None),
        };
        let transition = route.breaker.lock().expect("breaker lock").record(
            finished,
            record.outcome,
            slot.probe,
        );
        if let Some(t) = transition {
            announce(sh, &route.name, t);
        }
        sh.sink.emit(Event::AttemptFinished {
            unit: index,
            attempt: number,
            record: record.clone(),
        });
        let outcome = record.outcome;
        let reason = record.reason.clone();
        let retry_after = record.retry_after;
        r.attempts.push(AttemptLog {
            number,
            started: now - sh.start,
            probe: slot.probe,
            record,
        });
        if outcome == Outcome::Ok {
            let ex = extracted.unwrap_or_default();
            r.findings = ex.findings;
            r.dropped_findings = ex.dropped_out_of_range + ex.dropped_invalid;
            r.route = Some(route.name.clone());
            let stop = Stop {
                status: UnitStatus::Reviewed,
                reason: format!("reviewed by {}", route.name),
            };
            return finish(sh, r, stop);
        }
        if outcome == Outcome::Cancelled || sh.cancel.is_cancelled() {
            return finish(sh, r, cancelled(sh));
        }
        let hunk_remaining = hunk_end.saturating_duration_since(Instant::now());
        if let Err(mut stop) = retry::further_attempt(
            outcome,
            number,
            sh.exec.max_attempts,
            hunk_remaining,
            sh.exec.hunk_budget,
        ) {
            stop.reason = format!(
                "{stop_reason}; last attempt on {}: {reason}",
                route.name,
                stop_reason = stop.reason
            );
            return finish(sh, r, stop);
        }
        last = Some(LastFailure {
            route: slot.route,
            reason: format!("{outcome}: {reason}"),
            retry_after,
        });
    }
}

/// Tells the event stream about a breaker transition, and wakes the units waiting for a
/// route (they re-choose).
fn announce(sh: &Shared, route: &str, t: super::breaker::Transition) {
    sh.sink.emit(Event::Breaker {
        route: route.to_string(),
        from: t.from,
        to: t.to,
        reason: t.reason,
    });
    sh.changed.notify_waiters();
}

fn finish(sh: &Shared, mut r: UnitResult, stop: Stop) {
    r.status = stop.status;
    r.reason = stop.reason;
    sh.sink.emit(Event::UnitFinished {
        unit: r.unit,
        result: Arc::new(r),
    });
}

fn cancelled(sh: &Shared) -> Stop {
    Stop {
        status: UnitStatus::Cancelled,
        reason: if sh.interrupted.is_cancelled() {
            "interrupted during an attempt".into()
        } else {
            "the review budget ran out during an attempt".into()
        },
    }
}

fn not_started(sh: &Shared) -> Stop {
    Stop {
        status: UnitStatus::Skipped,
        reason: if sh.interrupted.is_cancelled() {
            "interrupted before the unit started".into()
        } else {
            "the review budget ran out before the unit started".into()
        },
    }
}

fn cancelled_record(
    route: &super::RouteState,
    req: &AttemptRequest,
    ran: Duration,
) -> AttemptRecord {
    AttemptRecord {
        duration: ran,
        outcome: Outcome::Cancelled,
        reason: "cancelled: the connection was closed".into(),
        ..AttemptRecord::new(
            &route.name,
            route.provider.kind(),
            route.provider.model(),
            req.limits.total,
        )
    }
}

/// The routes to try, in order: config order for a first attempt; after a failure, the
/// routes after the failed one (wrapping), and the failed route itself last.
fn candidates(n: usize, last: Option<usize>) -> Vec<usize> {
    match last {
        None => (0..n).collect(),
        Some(l) => ((l + 1)..n).chain(0..l).chain([l]).collect(),
    }
}

/// Chooses a route that admits calls and takes one of its permits; waits count against
/// the review budget (and the hunk budget once the unit has started).
async fn acquire(
    sh: &Shared<'_>,
    index: usize,
    work: &UnitInfo,
    last: Option<&LastFailure>,
    hunk_deadline: Option<Instant>,
) -> Result<Slot, Stop> {
    let started = hunk_deadline.is_some();
    let wait_until = match hunk_deadline {
        Some(h) => h.min(sh.review_deadline),
        None => sh.review_deadline,
    };
    let mut announced = false;
    let mut waited_for_open_routes = false;
    loop {
        let notified = sh.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if sh.cancel.is_cancelled() {
            return Err(if started {
                cancelled(sh)
            } else if waited_for_open_routes {
                all_open()
            } else {
                not_started(sh)
            });
        }
        let now = Instant::now();
        let order = candidates(sh.routes.len(), last.map(|l| l.route));
        let choice = order.iter().copied().find(|i| {
            sh.routes[*i]
                .breaker
                .lock()
                .expect("breaker lock")
                .would_admit(now)
        });
        let Some(idx) = choice else {
            if last.is_some() || sh.routes.is_empty() {
                return Err(Stop {
                    status: UnitStatus::Unavailable,
                    reason: match last {
                        Some(l) => {
                            format!("no route admits calls (breakers open) after {}", l.reason)
                        }
                        None => "no routes are configured".into(),
                    },
                });
            }
            // A first attempt waits for a breaker to half-open, within the budgets.
            let reopen = sh
                .routes
                .iter()
                .filter_map(|rt| rt.breaker.lock().expect("breaker lock").reopens_at())
                .min();
            let Some(reopen) = reopen else {
                return Err(Stop {
                    status: UnitStatus::Unavailable,
                    reason: "every route is forced open (auth or invalid model)".into(),
                });
            };
            waited_for_open_routes = true;
            tokio::select! {
                biased;
                _ = sh.cancel.cancelled() => {}
                _ = &mut notified => {}
                _ = sleep_until(reopen.min(wait_until)) => {}
            }
            if Instant::now() >= wait_until && !sh.cancel.is_cancelled() {
                return Err(all_open());
            }
            continue;
        };
        let route = &sh.routes[idx];
        for skipped in order.iter().take_while(|i| **i != idx) {
            let state = sh.routes[*skipped]
                .breaker
                .lock()
                .expect("breaker lock")
                .state();
            sh.sink.emit(Event::RouteSkipped {
                unit: index,
                route: sh.routes[*skipped].name.clone(),
                breaker: state,
            });
        }
        // While waiting for this route's permit, wake when a route preferred to it
        // half-opens, so the unit can go back to it as a probe.
        let preferred_reopen = order
            .iter()
            .take_while(|i| **i != idx)
            .filter_map(|i| {
                sh.routes[*i]
                    .breaker
                    .lock()
                    .expect("breaker lock")
                    .reopens_at()
            })
            .min()
            .unwrap_or(wait_until);
        let mut reason = AttemptReason::First;
        if let Some(l) = last {
            if idx == l.route {
                // Same route: honour a Retry-After only if it leaves half the hunk budget.
                let wait = l.retry_after.unwrap_or(Duration::ZERO);
                let hunk_remaining = wait_until.saturating_duration_since(now);
                if !wait.is_zero()
                    && !retry::retry_after_fits(wait, hunk_remaining, sh.exec.hunk_budget)
                {
                    return Err(Stop {
                        status: UnitStatus::Unavailable,
                        reason: format!(
                            "rate limited with Retry-After {wait:?}, more than the hunk budget allows ({hunk_remaining:?} left), and no other route admits calls"
                        ),
                    });
                }
                if !announced {
                    sh.sink.emit(Event::Retry {
                        unit: index,
                        route: route.name.clone(),
                        reason: l.reason.clone(),
                        wait,
                    });
                }
                if !wait.is_zero() && !announced {
                    tokio::select! {
                        biased;
                        _ = sh.cancel.cancelled() => continue,
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
                reason = AttemptReason::Retry {
                    after: l.reason.clone(),
                };
            } else {
                if !announced {
                    sh.sink.emit(Event::Failover {
                        unit: index,
                        from: sh.routes[l.route].name.clone(),
                        to: route.name.clone(),
                        reason: l.reason.clone(),
                    });
                }
                reason = AttemptReason::Failover {
                    from: sh.routes[l.route].name.clone(),
                    after: l.reason.clone(),
                };
            }
            announced = true;
        }
        let permit = tokio::select! {
            biased;
            _ = sh.cancel.cancelled() => continue,
            p = route.permits.clone().acquire_owned() => p.expect("semaphores are never closed"),
            _ = &mut notified => continue,
            _ = sleep_until(preferred_reopen), if preferred_reopen < wait_until => continue,
            _ = sleep_until(wait_until) => {
                return Err(if started {
                    Stop { status: UnitStatus::TimedOut, reason: "the hunk budget ran out waiting for a route's concurrency permit".into() }
                } else {
                    not_started(sh)
                });
            }
        };
        if sh.cancel.is_cancelled() {
            continue; // reported at the top of the loop
        }
        let now = Instant::now();
        if work.optional && !started && sh.review_remaining(now) < sh.exec.hunk_budget {
            return Err(Stop {
                status: UnitStatus::Skipped,
                reason: "optional work shed: less than one hunk budget of review time left".into(),
            });
        }
        if let Some(h) = hunk_deadline {
            let left = h.saturating_duration_since(now);
            if left < sh.exec.hunk_budget / 2 {
                return Err(Stop {
                    status: UnitStatus::TimedOut,
                    reason: format!(
                        "less than half the hunk budget left ({left:?}) after waiting for a permit"
                    ),
                });
            }
        }
        let (admission, transition, state) = {
            let mut b = route.breaker.lock().expect("breaker lock");
            let (a, t) = b.admit(now);
            (a, t, b.state())
        };
        if let Some(t) = transition {
            announce(sh, &route.name, t);
        }
        match admission {
            Admission::No => {
                drop(permit);
                continue;
            }
            a => {
                return Ok(Slot {
                    route: idx,
                    permit,
                    probe: a == Admission::Probe,
                    breaker: state,
                    reason,
                });
            }
        }
    }
}

fn all_open() -> Stop {
    Stop {
        status: UnitStatus::Unavailable,
        reason: "every route's breaker stayed open until the budget ran out".into(),
    }
}
