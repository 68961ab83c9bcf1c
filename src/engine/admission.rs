//! A unit's way to its next attempt (docs/design.md rules 2 and 6–8): the route that admits
//! calls, its permit (or the first free one under spillover), the cost budget's
//! reservation, and the waits for a permit or a reopening breaker (`waits.rs`), all within
//! the unit's deadlines. `attempt.rs` makes the attempt this gives it (a [`Slot`]).

use super::Shared;
use super::breaker::{Admission, BreakerState, Transition};
use super::breakers::Hold;
use super::bulkhead::{AnyWaited, Permit, Wake, wait_for_any_permit};
use super::clock::deadline_after;
use super::cost::{Refusal, Reservation};
use super::ends::not_started;
use super::events::{AttemptReason, Event};
use super::outcome::UnitStatus;
use super::pacing::Paused;
use super::retry::Stop;
use super::route_picker::{OrderInput, Pick};
use super::unit_state::UnitRun;
use super::waits::{paused_instead, wait_for_reopen, wait_for_resume};
use super::windows::SharedTake;
use std::time::Duration;
use tokio::time::{Instant, sleep_until};

/// Chooses a route that admits calls and takes one of its permits; waits count against
/// the review budget (and the hunk budget once the unit has started).
pub(super) async fn acquire(sh: &Shared<'_>, u: &mut UnitRun<'_>) -> Result<Slot, Stop> {
    let until = u.wait_until(sh.review_deadline);
    let mut announced = false;
    loop {
        // Enabled before choosing, so a breaker change during the choice is not missed.
        let changed = sh.engine.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if sh.cancel.is_cancelled() {
            return Err(u.stop_on_cancel(sh));
        }
        // Section 14: routes whose window the prompt exceeds are passed over.
        let allowed = &u.allowed(sh);
        let input = OrderInput {
            allowed,
            last_failed: u.last.as_ref().map(|l| l.route),
        };
        let now = Instant::now();
        let paused = |r: usize| sh.engine.pacing.paused_until(r, now);
        let (route, preferred_reopen, spill) =
            match sh
                .engine
                .picker
                .pick_paced(&*sh.engine.breakers, &paused, input, now)
            {
                Pick::Route {
                    route,
                    passed_over,
                    preferred_reopen,
                    spill,
                } => {
                    if let Some(resume) = paused_instead(sh, u, route, allowed, now, until) {
                        wait_for_resume(sh, u, resume, until, changed).await?;
                        continue;
                    }
                    passed_over_events(sh, u.index(), &passed_over);
                    (route, preferred_reopen, spill)
                }
                Pick::NoneAdmits { reopen, resume } => {
                    if let Some(resume) = resume.filter(|t| reopen.is_none_or(|r| *t <= r)) {
                        wait_for_resume(sh, u, resume, until, changed).await?;
                    } else {
                        wait_for_reopen(sh, u, reopen, until, changed).await?;
                    }
                    continue;
                }
            };
        let Some(reason) = reason_for(sh, u, route, until, &mut announced).await? else {
            continue;
        };
        let wake = Wake {
            changed,
            preferred_reopen,
            until,
            cancel: &sh.cancel,
        };
        // Ordered: this route's permit. Spillover: the first free one of this route and
        // the later routes that take spillover, else whichever frees first.
        let candidates: Vec<usize> = std::iter::once(route).chain(spill).collect();
        let (route, permit) =
            match wait_for_any_permit(&*sh.engine.bulkhead, &candidates, u.fresh(), wake).await {
                AnyWaited::Permit(r, p) => (r, p),
                AnyWaited::Rechoose => continue,
                AnyWaited::Expired => return Err(permit_expired(sh, u)),
            };
        match admit(sh, u, route, permit, reason).await? {
            Admitted::Slot(slot) => return Ok(slot),
            Admitted::Rechoose => continue,
            Admitted::CostInFlight => wait_for_settlement(sh, until).await,
        }
    }
}

/// Why a unit ends whose wait for a permit ran out: the review budget, its hunk budget
/// (once started), or the review's deadline before it started.
fn permit_expired(sh: &Shared, u: &UnitRun) -> Stop {
    if sh.budget_spent(Instant::now()) {
        u.stop_on_cancel(sh)
    } else if u.hunk_end.is_some() {
        Stop::new(
            UnitStatus::TimedOut,
            "the hunk budget ran out waiting for a route's concurrency permit",
        )
    } else {
        not_started(sh)
    }
}

/// A route chosen for the next attempt, with its permit held.
pub(super) struct Slot {
    pub(super) route: usize,
    pub(super) permit: Permit,
    /// What the breakers reserved for it (given back with its outcome).
    pub(super) hold: Hold,
    pub(super) breaker: BreakerState,
    pub(super) reason: AttemptReason,
    /// The attempt's share of the cost budget, settled with its real cost.
    pub(super) reservation: Reservation,
}

/// What [`admit`] decided.
enum Admitted {
    /// The attempt may start.
    Slot(Slot),
    /// Choose the route again (cancelled, or the breaker said no).
    Rechoose,
    /// The cost budget is held by attempts in flight: wait for one to settle.
    CostInFlight,
}

/// Why the cost budget did not let an attempt start.
enum CostWait {
    /// Spend so far leaves no room: the unit ends.
    Stop(Stop),
    /// Reservations of attempts in flight are in the way; one may settle lower.
    InFlight,
}

/// Rule of `[execution] costBudget`: sets this attempt's estimate aside, or says why not.
/// A unit not started for cost is `skipped`; a started one that cannot afford a further
/// attempt is `unavailable`.
fn reserve_cost(sh: &Shared, u: &UnitRun, route: usize) -> Result<Reservation, CostWait> {
    let budget = &sh.engine.cost;
    let r = &sh.engine.routes[route];
    // A tool loop's transcript grows each turn: the estimate counts it (section 14).
    let chars = u.work.prompt.chars() + u.looping.as_ref().map_or(0, |l| l.chars());
    let estimate =
        r.observed
            .lock()
            .expect("observed usage")
            .estimate(chars, r.prices, r.max_tokens);
    budget.reserve(estimate).map_err(|refusal| match refusal {
        Refusal::InFlight => CostWait::InFlight,
        Refusal::Spent {
            spent,
            estimate,
            limit,
        } => {
            let why = format!(
                "cost budget: ${spent:.4} spent and this attempt on {} is estimated at ${estimate:.4}, past the ${limit:.2} costBudget",
                r.name
            );
            let status = if u.hunk_end.is_some() {
                UnitStatus::Unavailable
            } else {
                UnitStatus::Skipped
            };
            CostWait::Stop(Stop::new(status, why))
        }
    })
}

/// Takes one request and the attempt's estimated tokens of the route's rate-limit
/// windows, or pauses the route until they reset: this process's windows first (the
/// floor), then, in fleet mode, the windows shared with the other processes. `Ok(true)`:
/// the shared store took its part too, and is owed a settle.
async fn take_rate_limit(
    sh: &Shared<'_>,
    u: &UnitRun<'_>,
    route: usize,
    now: Instant,
) -> Result<bool, Option<Paused>> {
    let r = &sh.engine.routes[route];
    let tokens = r
        .observed
        .lock()
        .expect("observed usage")
        .tokens(u.work.prompt.chars(), r.max_tokens);
    sh.engine.pacing.take(route, now, tokens)?;
    let Some(shared) = &sh.engine.windows else {
        return Ok(false);
    };
    match shared.take(route, tokens).await {
        SharedTake::Go => Ok(true),
        SharedTake::Short { reason, wait } => {
            sh.engine.pacing.give_back(route, tokens);
            let until = deadline_after(Instant::now(), wait);
            Err(sh.engine.pacing.hold(route, until, reason))
        }
    }
}

/// Tells the event stream a route is paused (a Retry-After or its rate limit), and wakes
/// the units waiting for its permits: they choose again.
pub(super) fn announce_pause(sh: &Shared, route: usize, p: Paused) {
    let now = Instant::now();
    sh.sink.emit(Event::RoutePaused {
        route: sh.engine.routes[route].name.clone(),
        route_index: route,
        until: p.until.saturating_duration_since(sh.start),
        reason: p.reason,
        at: now.saturating_duration_since(sh.start),
    });
    sh.engine.changed.notify_waiters();
}

/// Tells the event stream about a breaker transition, and wakes the units waiting for a
/// route (they choose again).
pub(super) fn announce(sh: &Shared, route: &str, t: Transition) {
    sh.sink.emit(Event::Breaker {
        route: route.to_string(),
        from: t.from,
        to: t.to,
        reason: t.reason,
    });
    sh.engine.changed.notify_waiters();
}

/// Waits until an attempt in flight settles its reservation (or the budget ends).
async fn wait_for_settlement(sh: &Shared<'_>, until: Instant) {
    let settled = sh.engine.cost.settled.notified();
    tokio::select! {
        biased;
        _ = sh.cancel.cancelled() => {}
        _ = settled => {}
        _ = sleep_until(until) => {}
    }
}

/// With a permit in hand: the last checks before an attempt starts (budget, shedding,
/// the half-budget rule), then the breaker's admission. `Ok(None)`: choose again.
async fn admit(
    sh: &Shared<'_>,
    u: &UnitRun<'_>,
    route: usize,
    permit: Permit,
    reason: AttemptReason,
) -> Result<Admitted, Stop> {
    let now = Instant::now();
    if sh.cancel.is_cancelled() {
        return Ok(Admitted::Rechoose); // reported at the top of the loop
    }
    if sh.budget_spent(now) {
        return Err(u.stop_on_cancel(sh));
    }
    let started = u.hunk_end.is_some();
    if let Some(stop) = sh
        .shedder
        .shed(u.work.optional, started, sh.review_remaining(now))
    {
        return Err(stop);
    }
    if let Some(h) = u.hunk_end {
        let left = h.saturating_duration_since(now);
        // Rule 5's half-budget rule is for retries. A tool loop's next turn is no retry:
        // its turns spend the hunk budget by design, and the loop's own rule decides when
        // the turn left is the final one (section 14).
        let next_turn =
            u.attempts_made() == 0 && u.looping.as_ref().is_some_and(|l| l.between_turns());
        if !next_turn {
            sh.retry.half_left(left, "after waiting for a permit")?;
        } else if left.is_zero() {
            return Err(Stop::new(
                UnitStatus::TimedOut,
                "the hunk budget ran out between turns of the tool loop",
            ));
        }
    }
    let reservation = match reserve_cost(sh, u, route) {
        Ok(r) => r,
        Err(CostWait::Stop(stop)) => return Err(stop),
        Err(CostWait::InFlight) => return Ok(Admitted::CostInFlight),
    };
    // Section 13: the rate limit's remaining requests and tokens must cover it.
    let shared_take = match take_rate_limit(sh, u, route, now).await {
        Ok(shared) => shared,
        Err(paused) => {
            sh.engine.cost.settle(reservation, None);
            if let Some(p) = paused {
                announce_pause(sh, route, p);
            }
            return Ok(Admitted::Rechoose);
        }
    };
    let breakers = &sh.engine.breakers;
    let (admission, transition, hold) = breakers.admit_async(route, now).await;
    if let Some(t) = transition {
        announce(sh, &sh.engine.routes[route].name, t);
    }
    Ok(match admission {
        Admission::No => {
            sh.engine.cost.settle(reservation, None);
            // No attempt after all: it is no longer in flight across the fleet.
            if let (true, Some(shared)) = (shared_take, &sh.engine.windows) {
                shared.settle(route, None).await;
            }
            Admitted::Rechoose
        }
        Admission::Yes | Admission::Probe => Admitted::Slot(Slot {
            route,
            permit,
            hold,
            breaker: breakers.state(route),
            reason,
            reservation,
        }),
    })
}

/// Why the next attempt is made (first, retry, failover), announcing a retry or failover
/// once. A retry of the same route sleeps on a Retry-After only when half the hunk
/// budget is left after it (rule 6). `Ok(None)`: cancelled while sleeping, choose again.
async fn reason_for(
    sh: &Shared<'_>,
    u: &UnitRun<'_>,
    route: usize,
    until: Instant,
    announced: &mut bool,
) -> Result<Option<AttemptReason>, Stop> {
    let Some(l) = &u.last else {
        return Ok(Some(AttemptReason::First));
    };
    let to = &sh.engine.routes[route].name;
    if route != l.route {
        let from = sh.engine.routes[l.route].name.clone();
        if !std::mem::replace(announced, true) {
            sh.sink.emit(Event::Failover {
                unit: u.index(),
                from: from.clone(),
                to: to.clone(),
                reason: l.reason.clone(),
            });
        }
        let after = l.reason.clone();
        return Ok(Some(AttemptReason::Failover { from, after }));
    }
    let wait = l.retry_after.unwrap_or(Duration::ZERO);
    let hunk_remaining = until.saturating_duration_since(Instant::now());
    if !wait.is_zero() && !sh.retry.retry_after_fits(wait, hunk_remaining) {
        return Err(Stop::new(
            UnitStatus::Unavailable,
            format!(
                "rate limited with Retry-After {}, more than the hunk budget allows ({} left), and no other route admits calls",
                crate::config::format_duration(wait),
                crate::config::format_duration(hunk_remaining),
            ),
        ));
    }
    if !std::mem::replace(announced, true) {
        sh.sink.emit(Event::Retry {
            unit: u.index(),
            route: to.clone(),
            reason: l.reason.clone(),
            wait,
        });
        if !wait.is_zero() {
            tokio::select! {
                biased;
                _ = sh.cancel.cancelled() => return Ok(None),
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }
    let after = l.reason.clone();
    Ok(Some(AttemptReason::Retry { after }))
}

fn passed_over_events(sh: &Shared, unit: usize, passed_over: &[usize]) {
    for r in passed_over {
        sh.sink.emit(Event::RouteSkipped {
            unit,
            route: sh.engine.routes[*r].name.clone(),
            breaker: sh.engine.breakers.state(*r),
        });
    }
}
