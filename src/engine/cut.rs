//! An answer the provider says was cut by the token cap, or whose findings object did not
//! end as JSON should (docs/design.md §14, "An answer is complete only when the provider says
//! it ended"): never a clean review. The findings complete before the cut are kept on the
//! unit whatever happens next; a cut is retried once with twice the output cap (up to the
//! route's `maxTokensCeiling`) when half the hunk budget is left and `maxAttempts` allows
//! another attempt; otherwise the unit ends `failed`, saying it was cut and why it was not
//! retried.

use super::Shared;
use super::outcome::UnitStatus;
use super::retry::Stop;
use super::unit_state::{LastFailure, UnitRun};
use crate::findings::{Extracted, ModelFinding};
use crate::provider::AttemptRecord;
use tokio::time::Instant;

/// What follows a cut or incomplete answer.
pub(super) enum Next {
    /// Another attempt, with this output cap.
    Retry,
    /// The unit ends so (its kept findings stay on it).
    End(Stop),
}

/// Keeps the answer's complete findings on the unit, then decides: one retry with twice
/// the output cap for a cut, an end for anything else.
pub(super) fn after_incomplete(
    sh: &Shared,
    u: &mut UnitRun,
    route: usize,
    record: &AttemptRecord,
    ex: Extracted,
    cut: bool,
    hunk_end: Instant,
) -> Next {
    let kept_now = ex.findings.len();
    keep(u, ex);
    u.result.answer_cut |= cut;
    let kept = kept_findings(u.result.findings.len(), kept_now);
    if !cut {
        return Next::End(Stop::new(
            UnitStatus::Failed,
            format!("{}; {kept}", record.reason),
        ));
    }
    let r = &sh.engine.routes[route];
    let sent = u.output_cap.unwrap_or(r.max_tokens);
    let what = format!(
        "answer cut at the output cap ({sent} tokens) on {}; {kept}",
        r.name
    );
    let not_retried =
        |why: String| Next::End(Stop::new(UnitStatus::Failed, format!("{what}; {why}")));
    if u.cut_retried {
        return not_retried("retried once with twice the cap, and cut again".into());
    }
    let next = sent.saturating_mul(2).min(r.max_tokens_ceiling);
    if next <= sent {
        return not_retried(format!(
            "not retried: the route's maxTokensCeiling is {}",
            r.max_tokens_ceiling
        ));
    }
    let made = u.attempts_made();
    if made >= sh.exec.max_attempts {
        return not_retried(format!(
            "not retried: maxAttempts = {}",
            sh.exec.max_attempts
        ));
    }
    let left = hunk_end.saturating_duration_since(Instant::now());
    if let Err(stop) = sh.retry.half_left(left, "for a retry") {
        return not_retried(format!("not retried: {}", stop.reason));
    }
    if sh.budget_spent(Instant::now()) {
        return not_retried("not retried: the review budget ran out".into());
    }
    u.cut_retried = true;
    u.output_cap = Some(next);
    u.last = Some(LastFailure {
        route,
        reason: what,
        retry_after: None,
    });
    Next::Retry
}

/// "1 complete finding kept" (and how many of them came from this answer when earlier
/// ones were kept too).
fn kept_findings(total: usize, now: usize) -> String {
    let s = if total == 1 { "" } else { "s" };
    if total == now {
        format!("{total} complete finding{s} kept")
    } else {
        format!("{total} complete finding{s} kept ({now} from this answer)")
    }
}

/// Adds the answer's findings to the unit's, once each (a retry repeats what the cut
/// answer said: the same lines and title are one finding). Its drops and the entries
/// past the cap describe the latest answer (a retry repeats those too).
pub(super) fn keep(u: &mut UnitRun, ex: Extracted) {
    let r = &mut u.result;
    r.dropped_findings = ex.dropped_count();
    merge(&mut r.findings, ex.findings);
    r.dropped = ex.dropped;
    r.findings_cut = ex.over_cap;
}

/// `into` gains each finding of `more` it does not already hold (same lines and title).
pub(super) fn merge(into: &mut Vec<ModelFinding>, more: Vec<ModelFinding>) {
    for f in more {
        let same = |g: &ModelFinding| {
            g.line == f.line && g.end_line == f.end_line && g.title.eq_ignore_ascii_case(&f.title)
        };
        if !into.iter().any(same) {
            into.push(f);
        }
    }
}
