//! Command-line settings layered over the file: thresholds, the review budget and the
//! built-in simulator. The command layer fills [`Overrides`] from typed flags; the rules
//! for combining them with the file live here.

use super::{Route, Settings};
use crate::error::{Error, Result};
use crate::severity::{Confidence, FailOn, Severity};
use std::time::Duration;

/// The `--sim` time scale: one simulated minute per second.
pub const SIM_SCALE: u32 = 60;

/// Settings given on the command line; each one, when present, wins over the file.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--fail-on`.
    pub fail_on: Option<FailOn>,
    /// `--report-on`.
    pub report_on: Option<Severity>,
    /// `--min-confidence`.
    pub min_confidence: Option<Confidence>,
    /// `--budget`: the review budget.
    pub budget: Option<Duration>,
    /// `--sim[=PROFILE]`: the built-in simulator in place of the configured routes.
    pub sim: Option<String>,
    /// `--no-tools`: no skill runs as a tool loop (every unit is one request).
    pub no_tools: bool,
}

impl Settings {
    /// Applies command-line overrides (the simulator first, so `--budget` still wins). A
    /// threshold flag applies to every skill: it clears the skills' own values.
    pub fn apply(&mut self, o: &Overrides) -> Result<()> {
        if let Some(p) = &o.sim {
            self.use_sim(p)?;
        }
        let skills: Vec<&mut super::SkillConfig> = self
            .skills
            .iter_mut()
            .chain(self.triggers.iter_mut().map(|t| &mut t.config))
            .collect();
        for sk in skills {
            sk.fail_on = sk.fail_on.filter(|_| o.fail_on.is_none());
            sk.report_on = sk.report_on.filter(|_| o.report_on.is_none());
            sk.min_confidence = sk.min_confidence.filter(|_| o.min_confidence.is_none());
        }
        self.fail_on = o.fail_on.unwrap_or(self.fail_on);
        self.report_on = o.report_on.unwrap_or(self.report_on);
        self.min_confidence = o.min_confidence.unwrap_or(self.min_confidence);
        if let Some(b) = o.budget {
            self.execution.review_budget = b;
        }
        if o.no_tools {
            self.execution.tools = super::ToolsMode::Off;
        }
        Ok(())
    }

    /// Routes and budgets of the embedded simulator setup: a `profile` primary and a
    /// `healthy` fallback, played [`SIM_SCALE`] times faster, with budgets scaled to match.
    pub(crate) fn use_sim(&mut self, profile: &str) -> Result<()> {
        if !super::SIM_PROFILES.contains(&profile) {
            return Err(Error::Usage(format!(
                "--sim={profile}: unknown profile: expected one of {}",
                super::SIM_PROFILES.join(", ")
            )));
        }
        let scale = f64::from(SIM_SCALE);
        // The simulator replaces every route, so skills' route restrictions go too.
        for sk in self
            .skills
            .iter_mut()
            .chain(self.triggers.iter_mut().map(|t| &mut t.config))
        {
            sk.routes = None;
        }
        self.routes = vec![
            Route::sim("sim-primary", profile, scale, 1, 4),
            Route::sim("sim-fallback", "healthy", scale, 2, 4),
        ];
        let e = &mut self.execution;
        for d in [
            &mut e.review_budget,
            &mut e.hunk_budget,
            &mut e.request_timeout,
            &mut e.connect_timeout,
            &mut e.first_token_timeout,
            &mut e.idle_timeout,
            &mut e.breaker.window,
            &mut e.breaker.open_for,
        ] {
            *d /= SIM_SCALE;
        }
        Ok(())
    }
}
