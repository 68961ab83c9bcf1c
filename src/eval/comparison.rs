//! The comparison against a baseline as data: what `report.rs` carries and `baseline.rs`
//! computes and prints, in a file of its own so the report does not import its computation.

use serde::{Deserialize, Serialize};

/// One figure before and now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// The figure (as the JSON report names it).
    pub metric: String,
    /// In the baseline.
    pub before: Option<f64>,
    /// Now.
    pub after: Option<f64>,
    /// after − before, when both are present.
    pub change: Option<f64>,
}

/// A skill × route row's changes (a row in only one of the two reports has its figures
/// on one side).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupChange {
    /// The skill.
    pub skill: String,
    /// The route.
    pub route: Option<String>,
    /// Its figures' changes.
    pub changes: Vec<Change>,
}

/// The comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// The baseline file.
    pub file: String,
    /// The baseline's routes (what was compared against).
    pub routes: Vec<String>,
    /// Overall figures.
    pub overall: Vec<Change>,
    /// Per skill × route.
    pub groups: Vec<GroupChange>,
}
