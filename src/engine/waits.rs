//! A unit's waits on its way to an attempt (docs/design.md rule 6 and sections 13–15): for
//! a route paused by back-pressure or its rate-limit headers, and for an open breaker to
//! half-open. Each wait ends within the unit's deadlines, or ends the unit now, saying
//! why, rather than idle to a deadline it cannot use. `admission.rs` decides when to wait.

use super::Shared;
use super::breaker::BreakerState;
use super::ends::all_open;
use super::outcome::UnitStatus;
use super::pacing::PauseReason;
use super::retry::Stop;
use super::unit_state::UnitRun;
use tokio::time::{Instant, sleep_until};

/// Rule 6 with section 13: the route that just failed the unit is retried only if no
/// other route admits calls, and a route paused by back-pressure is only "not now". So
/// when the pick falls back to the failed route while another allowed route is merely
/// paused, and its pause fits the unit's budget (rule 6's half-budget rule), the unit
/// waits for that one instead. The soonest such pause's end, if any.
pub(super) fn paused_instead(
    sh: &Shared,
    u: &UnitRun,
    route: usize,
    allowed: &[usize],
    now: Instant,
    until: Instant,
) -> Option<Instant> {
    if u.last.as_ref().map(|l| l.route) != Some(route) {
        return None;
    }
    let resume = allowed
        .iter()
        .filter(|r| **r != route && sh.engine.breakers.would_admit(**r, now))
        .filter_map(|r| sh.engine.pacing.paused_until(*r, now))
        .min()?;
    let wait = resume.saturating_duration_since(now);
    let fits = resume < until
        && u.hunk_end.is_none_or(|h| {
            sh.retry
                .retry_after_fits(wait, h.saturating_duration_since(now))
        });
    fits.then_some(resume)
}

/// Every route that admits calls is paused by a back-pressure Retry-After (section 13):
/// the unit waits for the first to resume if that comes before its deadline and, once it
/// started, leaves half its hunk budget (rule 6); else it ends now, `unavailable`, rather
/// than idle to a deadline it cannot use.
pub(super) async fn wait_for_resume(
    sh: &Shared<'_>,
    u: &UnitRun<'_>,
    resume: Instant,
    until: Instant,
    changed: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>,
) -> Result<(), Stop> {
    let now = Instant::now();
    let wait = resume.saturating_duration_since(now);
    let fits = resume < until
        && u.hunk_end.is_none_or(|h| {
            sh.retry
                .retry_after_fits(wait, h.saturating_duration_since(now))
        });
    if !fits {
        let which = if u.hunk_end.is_some() {
            "hunk budget"
        } else {
            "review budget"
        };
        return Err(Stop::new(
            UnitStatus::Unavailable,
            format!(
                "rate limited: every route that admits calls is paused by {} for {} more, which the {which} does not allow ({} left)",
                paused_by(sh, resume, now),
                crate::config::format_duration(wait),
                crate::config::format_duration(until.saturating_duration_since(now)),
            ),
        ));
    }
    tokio::select! {
        biased;
        _ = sh.cancel.cancelled() => {}
        _ = changed => {}
        _ = sleep_until(resume) => {}
    }
    Ok(())
}

/// What paused the route that resumes at `resume`, as the unit's reason says it: a
/// window the rate-limit headers said was spent is not a Retry-After.
fn paused_by(sh: &Shared, resume: Instant, now: Instant) -> &'static str {
    let reason = (0..sh.engine.routes.len())
        .filter_map(|r| sh.engine.pacing.paused(r, now))
        .find(|p| p.until == resume)
        .map(|p| p.reason);
    match reason {
        Some(PauseReason::Requests) => "its rate-limit headers (no request left until the reset)",
        Some(PauseReason::Tokens) => "its rate-limit headers (too few tokens left until the reset)",
        Some(PauseReason::RetryAfter) | None => "Retry-After",
    }
}

/// No route admits calls. A first attempt waits, within its budget, for an open breaker
/// to half-open; a further attempt does not wait (the unit is unavailable now).
pub(super) async fn wait_for_reopen(
    sh: &Shared<'_>,
    u: &mut UnitRun<'_>,
    reopen: Option<Instant>,
    until: Instant,
    changed: std::pin::Pin<&mut tokio::sync::futures::Notified<'_>>,
) -> Result<(), Stop> {
    if let Some(l) = &u.last {
        return Err(Stop::new(
            UnitStatus::Unavailable,
            format!("no route admits calls (breakers open) after {}", l.reason),
        ));
    }
    if sh.engine.routes.is_empty() {
        return Err(Stop::new(
            UnitStatus::Unavailable,
            "no routes are configured",
        ));
    }
    // A half-open route with its probe in flight decides soon: wait for its verdict.
    let probing =
        (0..sh.engine.routes.len()).any(|r| sh.engine.breakers.state(r) == BreakerState::HalfOpen);
    let allowed: &[usize] = if u.work.routes.is_empty() {
        &sh.engine.all_routes
    } else {
        &u.work.routes
    };
    let wake_at = wake_at(sh, allowed, reopen, probing, until)?;
    no_further_round(sh, u, allowed, probing)?;
    // No idle waiting: a breaker that reopens only after this unit's deadline cannot
    // serve it, so the unit ends now instead of holding the review open.
    if !probing && wake_at >= until {
        return Err(open_past_deadline(u, wake_at, until));
    }
    u.waited_for_open_routes = true;
    tokio::select! {
        biased;
        _ = sh.cancel.cancelled() => {}
        _ = changed => {}
        _ = sleep_until(wake_at.min(until)) => {}
    }
    if Instant::now() >= until && !sh.cancel.is_cancelled() {
        return Err(all_open());
    }
    Ok(())
}

/// When a unit waiting for its routes' breakers wakes: at the soonest reopening, or at
/// its deadline while a probe decides; none when every route is dead or forced open.
fn wake_at(
    sh: &Shared,
    allowed: &[usize],
    reopen: Option<Instant>,
    probing: bool,
    until: Instant,
) -> Result<Instant, Stop> {
    let dead = dead_routes(sh, allowed);
    match (reopen, probing) {
        (_, true) => Ok(reopen.unwrap_or(until).min(until)),
        (Some(t), false) => Ok(t),
        (None, false) if !dead.is_empty() => Err(Stop::new(
            UnitStatus::Unavailable,
            format!("no route admits calls: {}", dead.join("; ")),
        )),
        (None, false) => Err(Stop::new(
            UnitStatus::Unavailable,
            "every route is forced open (auth or invalid model)",
        )),
    }
}

/// §14, §15: no unit waits through more than one probe round that failed with a fact
/// (could not connect, an error answer); a probe that timed out is a slow route, which
/// units keep waiting for (and probing) while the budget lasts. The first wait notes the
/// failed probes so far.
fn no_further_round(
    sh: &Shared,
    u: &mut UnitRun,
    allowed: &[usize],
    probing: bool,
) -> Result<(), Stop> {
    let failed: u32 = allowed
        .iter()
        .map(|r| sh.engine.dead.failed_probes(*r))
        .sum();
    match u.failed_probes_when_waiting {
        Some(seen) if failed > seen && !probing => Err(Stop::new(
            UnitStatus::Unavailable,
            format!(
                "no route admits calls: a half-open probe failed while this unit waited, and it waits no further round{}",
                unreachable_note(sh, allowed)
            ),
        )),
        None => {
            u.failed_probes_when_waiting = Some(failed);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Every breaker reopens only after the unit's deadline: it ends now, saying so.
fn open_past_deadline(u: &UnitRun, wake_at: Instant, until: Instant) -> Stop {
    let which = if u.hunk_end.is_some() {
        "hunk"
    } else {
        "review"
    };
    Stop::new(
        UnitStatus::Unavailable,
        format!(
            "every route's breaker is open until after the {which} deadline (the soonest reopens {} after it)",
            crate::config::format_duration(wake_at.saturating_duration_since(until))
        ),
    )
}

/// "route `r` is dead for the run: 3 failed connections to 127.0.0.1:9" for each of
/// `allowed` that is.
fn dead_routes(sh: &Shared, allowed: &[usize]) -> Vec<String> {
    allowed
        .iter()
        .filter_map(|r| {
            let u = sh.engine.dead.unreachable(*r).filter(|u| u.dead)?;
            Some(format!(
                "route `{}` is dead for the run: {}, its half-open probe too",
                sh.engine.routes[*r].name,
                u.describe()
            ))
        })
        .collect()
}

/// " (route `r`: 3 failed connections to 127.0.0.1:9)" for the routes whose last attempts
/// could not connect.
fn unreachable_note(sh: &Shared, allowed: &[usize]) -> String {
    let notes: Vec<String> = allowed
        .iter()
        .filter_map(|r| {
            let u = sh.engine.dead.unreachable(*r)?;
            Some(format!(
                "route `{}`: {}",
                sh.engine.routes[*r].name,
                u.describe()
            ))
        })
        .collect();
    if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join("; "))
    }
}
