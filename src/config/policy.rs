//! Policy resolved once: the thresholds each skill's findings are judged with. A skill's
//! own settings (`[[skills]]`, or its trigger's `[triggers.output]`) win over
//! `[defaults]`; command-line flags win over both (they clear the per-skill values when
//! applied, see `overrides.rs`). The report filters with these thresholds and the exit
//! code is decided with them, so the two cannot disagree.

use super::{Settings, SkillConfig};
use crate::severity::{Confidence, FailOn, Severity};

/// The thresholds of one skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// A finding at or above this fails the run (exit 1).
    pub fail_on: FailOn,
    /// Findings below this are not reported (unless they fail the run).
    pub report_on: Severity,
    /// Findings below this confidence are dropped.
    pub min_confidence: Confidence,
    /// At most this many findings of the skill are reported.
    pub max_findings: Option<usize>,
}

impl Thresholds {
    /// The lowest severity shown: a finding that fails the run is always shown.
    pub(crate) fn shown_from(&self) -> Severity {
        match self.fail_on {
            FailOn::At(f) => f.min(self.report_on),
            FailOn::Off => self.report_on,
        }
    }
}

impl FailOn {
    /// Whether a finding of `severity` fails the run.
    pub fn fails(self, severity: Severity) -> bool {
        match self {
            FailOn::Off => false,
            FailOn::At(s) => severity >= s,
        }
    }
}

impl Settings {
    /// The defaults every skill starts from.
    pub(crate) fn default_thresholds(&self) -> Thresholds {
        Thresholds {
            fail_on: self.fail_on,
            report_on: self.report_on,
            min_confidence: self.min_confidence,
            max_findings: self.max_findings,
        }
    }

    /// The thresholds of a skill with settings `skill`.
    pub fn thresholds(&self, skill: &SkillConfig) -> Thresholds {
        let d = self.default_thresholds();
        Thresholds {
            fail_on: skill.fail_on.unwrap_or(d.fail_on),
            report_on: skill.report_on.unwrap_or(d.report_on),
            min_confidence: skill.min_confidence.unwrap_or(d.min_confidence),
            max_findings: skill.max_findings.or(d.max_findings),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_wins_over_defaults_field_by_field() {
        let s = Settings::default();
        let mut sk = SkillConfig::named("security-review");
        sk.fail_on = Some(FailOn::Off);
        sk.max_findings = Some(3);
        let t = s.thresholds(&sk);
        assert_eq!(t.fail_on, FailOn::Off);
        assert_eq!(t.max_findings, Some(3));
        assert_eq!(t.report_on, s.report_on);
        assert_eq!(t.min_confidence, s.min_confidence);
    }

    #[test]
    fn a_finding_that_fails_the_run_is_always_shown() {
        let t = Thresholds {
            fail_on: FailOn::At(Severity::Low),
            report_on: Severity::High,
            min_confidence: Confidence::Medium,
            max_findings: None,
        };
        assert_eq!(t.shown_from(), Severity::Low);
        assert!(FailOn::At(Severity::High).fails(Severity::Critical));
        assert!(!FailOn::At(Severity::High).fails(Severity::Medium));
        assert!(!FailOn::Off.fails(Severity::Critical));
    }
}
