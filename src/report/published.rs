//! What `warden publish` did on the pull request (docs/design.md §15): the `publish` object of
//! the JSON report and of `warden publish --json`, the text line and the step summary's.

use serde::{Deserialize, Serialize};

/// Counts of one publishing run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Published {
    /// Where: `github` or `gitlab`.
    pub to: String,
    /// Nothing was written (`--dry-run`).
    #[serde(default)]
    pub dry_run: bool,
    /// Findings posted this run (inline and in the review body).
    pub posted: usize,
    /// Findings already on the pull request (not posted again).
    pub already_posted: usize,
    /// Findings a person resolved or dismissed (not posted again).
    pub suppressed: usize,
    /// warden's threads resolved because their finding is fixed.
    pub resolved: usize,
    /// Threads that qualify for resolution but were only listed (`resolve = "report"`,
    /// `--dry-run`) or left past `maxResolve`.
    #[serde(default)]
    pub resolvable: usize,
    /// Inline comments moved to the review body (the forge refused their position).
    pub moved_to_body: usize,
    /// Writes that failed.
    pub failed: usize,
    /// The pull request's head moved past the reviewed one: nothing was written.
    pub head_moved: bool,
    /// Why writes failed or were skipped, for people (redacted, escaped).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Published {
    /// The one line the text output and the step summary carry.
    pub fn line(&self) -> String {
        if self.head_moved {
            return format!(
                "publish ({}): the pull request's head moved past the reviewed commit: nothing written",
                self.to
            );
        }
        let dry = if self.dry_run {
            ", dry run: nothing written"
        } else {
            ""
        };
        format!(
            "publish ({}{dry}): {} posted, {} already posted, {} suppressed, {} resolved, {} resolvable, {} moved to body, {} failed",
            self.to,
            self.posted,
            self.already_posted,
            self.suppressed,
            self.resolved,
            self.resolvable,
            self.moved_to_body,
            self.failed
        )
    }
}
