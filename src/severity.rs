//! Severity and confidence levels of findings, and the thresholds built on them
//! (`failOn`, `reportOn`, `minConfidence`).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A finding's severity, lowest first so that `>=` means "at least as severe".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; no action needed.
    Info,
    /// Minor.
    Low,
    /// Should be fixed.
    Medium,
    /// Must be fixed before merging.
    High,
    /// Exploitable or data-losing now.
    Critical,
}

/// How sure the model is, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// A guess.
    Low,
    /// Likely.
    Medium,
    /// Near certain.
    High,
}

/// `failOn`: a severity, or `off` (never fail on findings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailOn {
    /// Never fail on findings.
    Off,
    /// Fail on a finding at or above this severity.
    At(Severity),
}

/// The severities, as messages list them.
pub(crate) const SEVERITY_NAMES: &str = "critical, high, medium, low, info";
/// The confidence levels, as messages list them.
pub(crate) const CONFIDENCE_NAMES: &str = "high, medium, low";

/// A level that names none of the levels: the word as written, and which list it missed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LevelError {
    /// Not a severity.
    #[error("unknown severity `{0}`: expected one of {names}", names = SEVERITY_NAMES)]
    Severity(String),
    /// Not a severity, nor `off`.
    #[error("unknown severity `{0}`: expected one of {names}, off", names = SEVERITY_NAMES)]
    FailOn(String),
    /// Not a confidence level.
    #[error("unknown confidence `{0}`: expected one of {names}", names = CONFIDENCE_NAMES)]
    Confidence(String),
}

impl FromStr for Severity {
    type Err = LevelError;
    fn from_str(s: &str) -> Result<Self, LevelError> {
        match s.to_ascii_lowercase().as_str() {
            "critical" => Ok(Severity::Critical),
            "high" => Ok(Severity::High),
            "medium" => Ok(Severity::Medium),
            "low" => Ok(Severity::Low),
            "info" => Ok(Severity::Info),
            _ => Err(LevelError::Severity(s.to_string())),
        }
    }
}

impl FromStr for FailOn {
    type Err = LevelError;
    fn from_str(s: &str) -> Result<Self, LevelError> {
        if s.eq_ignore_ascii_case("off") || s.eq_ignore_ascii_case("none") {
            return Ok(FailOn::Off);
        }
        s.parse::<Severity>()
            .map(FailOn::At)
            .map_err(|_| LevelError::FailOn(s.to_string()))
    }
}

impl FromStr for Confidence {
    type Err = LevelError;
    fn from_str(s: &str) -> Result<Self, LevelError> {
        match s.to_ascii_lowercase().as_str() {
            "high" => Ok(Confidence::High),
            "medium" => Ok(Confidence::Medium),
            "low" => Ok(Confidence::Low),
            _ => Err(LevelError::Confidence(s.to_string())),
        }
    }
}

impl Severity {
    /// The severity as config and reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
            Severity::Info => "info",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for FailOn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailOn::Off => f.write_str("off"),
            FailOn::At(s) => s.fmt(f),
        }
    }
}

impl Confidence {
    /// The level as config and reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::High => "high",
            Confidence::Medium => "medium",
            Confidence::Low => "low",
        }
    }
}

impl fmt::Display for Confidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
