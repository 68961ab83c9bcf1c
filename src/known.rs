//! What is known of a review while it runs, for a signal that cannot wait (docs/design.md §14:
//! "signals act within 1 s in every phase, with the report written from what is known").
//!
//! The review keeps here a copy of its plan and every unit result of its review pass as
//! the engine emits it. When a signal's deadline comes and the review has not written its
//! reports yet (a CPU-bound stretch that cannot see the cancel in time, a cache that will
//! not answer), another thread builds the report from this copy: the units that finished
//! as they finished, every other unit `cancelled` or `skipped`, never shown as clean.

use crate::config::Settings;
use crate::engine::events::{Event, Pass, Sink};
use crate::engine::outcome::{EngineReport, UnitResult, UnitStatus};
use crate::plan::Plan;
use crate::report::{self, Report};
use crate::skills::ActiveSkill;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The reason a unit carries when the report was written from what was known.
pub const UNFINISHED: &str = "interrupted: the review had not ended when the signal's 1 s ran out; written from what was known";

/// A shared, cheap handle: the review fills it, a signal's deadline reads it.
#[derive(Clone, Default)]
pub struct Known {
    inner: Arc<Mutex<Option<State>>>,
}

struct State {
    plan: Plan,
    settings: Settings,
    skills: Vec<ActiveSkill>,
    started: Instant,
    /// Results of the review pass, by unit index.
    results: BTreeMap<usize, Arc<UnitResult>>,
    /// Units that had an attempt start (an unfinished one of these was cancelled).
    started_units: BTreeSet<usize>,
    /// Events after the review pass belong to the verification pass.
    review_pass_over: bool,
}

impl Known {
    /// The review has its plan (after a shard's units were dealt): from now on a report
    /// can be built.
    pub(crate) fn begin(&self, plan: &Plan, settings: &Settings, skills: &[ActiveSkill]) {
        *self.lock() = Some(State {
            plan: plan.clone(),
            settings: settings.clone(),
            skills: skills.to_vec(),
            started: Instant::now(),
            results: BTreeMap::new(),
            started_units: BTreeSet::new(),
            review_pass_over: false,
        });
    }

    /// A sink that records the review pass's unit results.
    pub(crate) fn sink(&self) -> Sink {
        let me = self.clone();
        Sink::new(move |s| me.record(&s.event))
    }

    fn record(&self, e: &Event) {
        let mut guard = self.lock();
        let Some(state) = guard.as_mut() else { return };
        if state.review_pass_over {
            return;
        }
        match e {
            Event::UnitFinished { unit, result } => {
                state.results.insert(*unit, result.clone());
            }
            Event::AttemptStarted { unit, .. } => {
                state.started_units.insert(*unit);
            }
            Event::PassStarted { pass, .. } if *pass != Pass::Review => {
                state.review_pass_over = true;
            }
            _ => {}
        }
    }

    /// Whether the review got as far as a plan.
    pub fn planned(&self) -> bool {
        self.lock().is_some()
    }

    /// The report of what is known now, redacted; None before the review had a plan.
    pub fn report(&self) -> Option<Report> {
        let guard = self.lock();
        let state = guard.as_ref()?;
        let units = state
            .plan
            .units
            .iter()
            .enumerate()
            .map(|(i, _)| match state.results.get(&i) {
                Some(r) => (**r).clone(),
                None => {
                    let status = if state.started_units.contains(&i) {
                        UnitStatus::Cancelled
                    } else {
                        UnitStatus::Skipped
                    };
                    UnitResult::unfinished(i, status, UNFINISHED)
                }
            })
            .collect();
        let exec = &state.settings.execution;
        let engine = EngineReport {
            units,
            elapsed: state.started.elapsed(),
            budget: exec.review_budget,
            budget_expired: false,
            interrupted: true,
            // The route state lives in the engine, which may be busy: no route table.
            routes: BTreeMap::new(),
            route_order: Vec::new(),
            routing: exec.routing,
            idle_slot_time: std::time::Duration::ZERO,
            cost_usd: 0.0,
        };
        Some(report::build(report::Inputs {
            plan: &state.plan,
            engine: &engine,
            settings: &state.settings,
            skills: &state.skills,
            verification: None,
            run: report::RunFacts::default(),
        }))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<State>> {
        // A panic elsewhere while holding it leaves data that is still worth reporting.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::events::Event;
    use crate::findings::ModelFinding;

    /// A plan of three files, each one unit of the built-in code-review skill.
    fn known_with_plan() -> (Known, Plan) {
        let patch: String = (0..3)
            .map(|f| {
                format!(
                    "diff --git a/src/m{f}.py b/src/m{f}.py\n--- a/src/m{f}.py\n+++ b/src/m{f}.py\n@@ -1,2 +1,3 @@\n def f():\n+    x = {f}\n     return 1\n"
                )
            })
            .collect();
        let diff =
            crate::diff::patch_text::parse_stripped(patch.as_bytes(), "t.diff", Some(1)).unwrap();
        let settings = Settings::default();
        let catalog = crate::skills::discover_from(None).unwrap();
        let skills =
            crate::skills::select(&catalog, &settings, &["code-review".to_string()]).unwrap();
        let plan = crate::plan::build(&diff, &crate::diff::content::NoContent, &settings, &skills);
        assert_eq!(plan.units.len(), 3);
        let known = Known::default();
        known.begin(&plan, &settings, &skills);
        (known, plan)
    }

    fn reviewed(unit: usize, title: &str) -> Arc<UnitResult> {
        let mut r = UnitResult::unfinished(unit, UnitStatus::Reviewed, "reviewed");
        r.findings.push(ModelFinding {
            severity: crate::severity::Severity::Medium,
            confidence: crate::severity::Confidence::High,
            title: title.into(),
            description: String::new(),
            line: 2,
            end_line: 2,
            suggestion: None,
            replacement: None,
            skill: None,
        });
        Arc::new(r)
    }

    #[test]
    fn before_a_plan_there_is_no_report() {
        assert!(!Known::default().planned());
        assert!(Known::default().report().is_none());
    }

    #[test]
    fn finished_units_keep_their_findings_and_the_rest_are_never_clean() {
        let (known, _plan) = known_with_plan();
        let sink = known.sink();
        sink.emit(Event::UnitFinished {
            unit: 0,
            result: reviewed(0, "kept"),
        });
        let zero = std::time::Duration::ZERO;
        sink.emit(Event::AttemptStarted {
            unit: 1,
            attempt: 1,
            route: "r".into(),
            provider: "sim",
            model: "m".into(),
            reason: crate::engine::events::AttemptReason::First,
            deadline: zero,
            hunk_remaining: zero,
            review_remaining: zero,
            breaker: crate::engine::breaker::BreakerState::Closed,
            probe: false,
        });
        let report = known.report().unwrap();
        let statuses: Vec<UnitStatus> = report.units.iter().map(|u| u.status).collect();
        assert_eq!(
            statuses,
            [
                UnitStatus::Reviewed,
                UnitStatus::Cancelled,
                UnitStatus::Skipped
            ]
        );
        assert!(report.interrupted);
        assert_ne!(
            report.outcome,
            crate::engine::outcome::ReviewOutcome::Complete
        );
        assert_eq!(report.findings.len(), 1);
        assert_eq!(report.findings[0].title, "kept");
        assert!(report.units[1].reason.starts_with("interrupted"));
    }

    #[test]
    fn the_verification_pass_does_not_overwrite_the_review_pass() {
        let (known, _plan) = known_with_plan();
        let sink = known.sink();
        sink.emit(Event::UnitFinished {
            unit: 0,
            result: reviewed(0, "kept"),
        });
        sink.emit(Event::PassStarted {
            pass: Pass::Verification,
            units: 1,
            budget: std::time::Duration::from_secs(1),
            routes: Vec::new(),
        });
        sink.emit(Event::UnitFinished {
            unit: 0,
            result: Arc::new(UnitResult::unfinished(0, UnitStatus::Failed, "verifier")),
        });
        let report = known.report().unwrap();
        assert_eq!(report.units[0].status, UnitStatus::Reviewed);
    }
}
