//! A unit in flight as plain data: its result so far, its clocks, its last failure, what
//! it learned about its routes. It imports only what lies below the unit's driver
//! (`unit.rs`): the helpers that change it (admission, context, cut, resend, turns) take it
//! as an argument, and none of them is called back from here.

use super::Shared;
use super::ends::{all_open, cancelled, not_started};
use super::events::UnitInfo;
use super::outcome::{Move, UnitResult, UnitStatus};
use super::retry::Stop;
use super::turns::LoopState;
use std::time::Duration;
use tokio::time::Instant;

/// The last failed attempt, which shapes the next one.
pub(super) struct LastFailure {
    pub(super) route: usize,
    pub(super) reason: String,
    pub(super) retry_after: Option<Duration>,
}

/// A unit in flight: its result so far, its hunk deadline once started, its last failure.
pub(super) struct UnitRun<'w> {
    pub(super) work: &'w UnitInfo,
    pub(super) result: UnitResult,
    pub(super) hunk_end: Option<Instant>,
    pub(super) last: Option<LastFailure>,
    /// It waited for an open breaker to half-open (a first attempt may).
    pub(super) waited_for_open_routes: bool,
    /// Its routes' probes failed with a fact (summed, see `dead::DeadRoutes`) when it first
    /// waited for a breaker to half-open: more later means such a round failed while it
    /// waited, and it waits no further round (docs/design.md §14, §15). Probes that time out do
    /// not count: a slow route is waited on while the budget lasts.
    pub(super) failed_probes_when_waiting: Option<u32>,
    /// Answers of back-pressure so far (section 13).
    pub(super) bounces: u32,
    /// Its tool loop, when its skill reads the repository (section 14).
    pub(super) looping: Option<LoopState>,
    /// Where the current turn's attempts start in `result.attempts` (a failed turn is
    /// retried under `maxAttempts`, not the unit).
    pub(super) turn_from: usize,
    /// Attempts sent again after the route fixed a refused parameter (section 14).
    pub(super) resends: u32,
    /// The output cap of its next attempts, once a cut raised it (section 14).
    pub(super) output_cap: Option<u32>,
    /// Its one retry after a cut was made.
    pub(super) cut_retried: bool,
    /// Routes whose context window its prompt does not fit (section 14): passed over.
    pub(super) too_small: Vec<usize>,
    /// Routes whose model refused it (section 15): not asked again.
    pub(super) refused_by: Vec<usize>,
    /// Attempts of the unit made before this run of it (a half follows the whole).
    pub(super) number_from: u32,
    /// Said after its reason: its tool loop was dropped for a context window (§14).
    pub(super) window_note: Option<String>,
}

impl<'w> UnitRun<'w> {
    pub(super) fn new(index: usize, work: &'w UnitInfo) -> Self {
        UnitRun {
            work,
            result: UnitResult::unfinished(index, UnitStatus::Skipped, ""),
            hunk_end: None,
            last: None,
            waited_for_open_routes: false,
            failed_probes_when_waiting: None,
            bounces: 0,
            looping: None,
            turn_from: 0,
            resends: 0,
            output_cap: None,
            cut_retried: false,
            too_small: Vec::new(),
            refused_by: Vec::new(),
            number_from: 0,
            window_note: None,
        }
    }

    /// The routes the unit may use, in its order.
    pub(super) fn base_routes<'s>(&'s self, sh: &'s Shared) -> &'s [usize] {
        if self.work.routes.is_empty() {
            &sh.engine.all_routes
        } else {
            &self.work.routes
        }
    }

    /// The routes the unit may use whose window its prompt does not exceed (or unknown).
    pub(super) fn allowed(&self, sh: &Shared) -> Vec<usize> {
        let base = self.base_routes(sh);
        base.iter()
            .copied()
            .filter(|r| !self.too_small.contains(r) && !self.refused_by.contains(r))
            .collect()
    }

    /// The number of the unit's next attempt.
    pub(super) fn next_number(&self) -> u32 {
        self.number_from + self.result.attempts.len() as u32 + 1
    }

    /// Neither started nor bounced: it waits behind the units already in line (a started
    /// or bounced unit goes first, at the head of the queue).
    pub(super) fn fresh(&self) -> bool {
        self.hunk_end.is_none() && self.bounces == 0
    }

    /// Attempts that count toward `maxAttempts`: back-pressure answers do not, nor the
    /// answered turns of a tool loop before this one.
    pub(super) fn attempts_made(&self) -> u32 {
        let a = &self.result.attempts[self.turn_from.min(self.result.attempts.len())..];
        a.iter()
            .filter(|a| super::resend::counts(&a.record))
            .count() as u32
    }

    pub(super) fn index(&self) -> usize {
        self.result.unit
    }

    /// Waits end at the hunk deadline once the unit started, else at the review deadline.
    pub(super) fn wait_until(&self, review_deadline: Instant) -> Instant {
        self.hunk_end
            .map_or(review_deadline, |h| h.min(review_deadline))
    }

    /// Why the unit stops when the review budget ran out or the run was interrupted.
    pub(super) fn stop_on_cancel(&self, sh: &Shared) -> Stop {
        if self.hunk_end.is_some() {
            cancelled(sh)
        } else if self.waited_for_open_routes {
            all_open()
        } else {
            not_started(sh)
        }
    }

    /// A unit that ends after answers of back-pressure says how many (a unit skipped for
    /// the budget after five "not now" was not merely late).
    pub(super) fn with_bounces(&self, stop: Stop) -> Stop {
        if self.bounces == 0 || stop.reason.contains("(back-pressure)") {
            return stop;
        }
        let n = self.bounces;
        let s = if n == 1 { "" } else { "s" };
        Stop::new(
            stop.status,
            format!("{} (rate limited {n} time{s}, back-pressure)", stop.reason),
        )
    }

    /// Records that an attempt goes to `route` (and the move, if it changed).
    pub(super) fn note_route(&mut self, route: &str) {
        let r = &mut self.result;
        if let Some(prev) = r.routes_tried.last()
            && prev != route
        {
            if let Some(l) = &mut self.looping {
                l.moved();
            }
            r.moves.push(Move {
                from: prev.clone(),
                to: route.to_string(),
                reason: self
                    .last
                    .as_ref()
                    .map(|l| l.reason.clone())
                    .unwrap_or_default(),
            });
        }
        r.routes_tried.push(route.to_string());
    }

    /// The unit ends so: its status and reason (with the window's note), its result.
    pub(super) fn finish(mut self, stop: Stop) -> UnitResult {
        self.result.status = stop.status;
        self.result.reason = match self.window_note.take() {
            Some(note) => format!("{} ({note})", stop.reason),
            None => stop.reason,
        };
        self.into_result()
    }

    /// The result so far (its tool loop's figures closed).
    pub(super) fn into_result(mut self) -> UnitResult {
        if let Some(l) = self.looping.take() {
            l.close(&mut self.result);
        }
        self.result
    }
}
