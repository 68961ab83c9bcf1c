//! What reports say about trust: where config and skills were read from, which of them the
//! change under review touches, and where each skill of the run came from.

use crate::skills::{ActiveSkill, Catalog, SkillOrigin};
use serde::{Deserialize, Serialize};

/// The `reason` of a run with `--trust-head-config`.
pub const OPT_OUT: &str = "--trust-head-config";

/// Where `warden.toml` and repository skills were read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfigFrom {
    /// A trusted commit: the base of the change (HEAD of the checkout for a patch in CI).
    Base,
    /// The working tree, as a local review (or `--trust-head-config`) reads it.
    WorkingTree,
    /// No repository: only `-c FILE` and the built-ins.
    None,
}

/// The report's `trust` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrustReport {
    /// Where `warden.toml` was read.
    pub config_from: ConfigFrom,
    /// The trusted commit (with `configFrom: base`; null when the base has no commits).
    pub commit: Option<String>,
    /// Why this source: `CI is set`, `a commit range is reviewed`, `--trust-head-config`, ...
    pub reason: String,
    /// The config file used (`1a2b3c4:warden.toml` when read from a commit), or null:
    /// built-in defaults, no repository config.
    pub config_file: Option<String>,
    /// Config and skill files the change under review adds, edits, deletes or renames. They
    /// are reviewed as code; with `configFrom: base` they are not used.
    pub changed_by_review: Vec<String>,
}

/// Where a skill of the run came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SkillSource {
    /// Embedded in warden.
    BuiltIn,
    /// From the trusted commit named in `trust.commit`.
    Base,
    /// From the working tree, and not touched by the change under review.
    Repository,
    /// From the working tree, as the change under review adds or edits it.
    Change,
}

/// Where one skill of the run came from (the report's `skills` entries carry it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillUse {
    /// The skill.
    pub name: String,
    /// Where it came from.
    pub origin: SkillSource,
    /// The repository path of the skill file (absent for built-ins).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A repository skill that replaces the built-in of the same name.
    pub overrides_builtin: bool,
}

impl TrustReport {
    /// The base commit, abbreviated to 7 characters as the reports show it.
    pub(crate) fn short_commit(&self) -> String {
        match &self.commit {
            Some(c) => c.chars().take(7).collect(),
            None => "(no commits)".into(),
        }
    }

    /// One line for people, or None when there is nothing to say (a local review that
    /// touches no config). Unescaped: renderers escape it.
    pub fn line(&self) -> Option<String> {
        let changed = self.changed_by_review.join(", ");
        match (self.config_from, self.changed_by_review.is_empty()) {
            (ConfigFrom::Base, true) => Some(format!(
                "config and skills read from base {} ({})",
                self.short_commit(),
                self.reason
            )),
            (ConfigFrom::Base, false) => Some(format!(
                "config and skills read from base {} ({}); the change edits {changed}: reviewed as code, not used",
                self.short_commit(),
                self.reason
            )),
            (_, false) => Some(format!(
                "the change edits {changed}, and this run uses the edited versions ({})",
                self.reason
            )),
            (_, true) => None,
        }
    }

    /// When config was read from a base that has none while the change (or the working
    /// tree, `head_has_config`) has one: which side was read, why, and the two ways out,
    /// as lines (the first finishes "no model routes are configured: …"). None otherwise.
    /// Unescaped.
    pub fn base_without_config(&self, head_has_config: bool) -> Option<Vec<String>> {
        let name = crate::config::FILE_NAME;
        if self.config_from != ConfigFrom::Base || self.config_file.is_some() {
            return None;
        }
        let adds = self.changed_by_review.iter().any(|p| p == name);
        if !adds && !head_has_config {
            return None;
        }
        let ci = self.reason.starts_with("CI");
        let side = match (adds, ci) {
            (true, true) => {
                "this change adds one, which is not used for its own review (a pull request cannot configure the review of itself)"
            }
            (true, false) => {
                "the change adds one, which is not used (a change cannot configure its own review)"
            }
            (false, _) => {
                "the one in the working tree is not part of what is reviewed, so it is not used"
            }
        };
        let first = format!(
            "{name} was read from the base of the change, commit {} (because {}), and the base has no {name}; {side}",
            self.short_commit(),
            self.reason.trim_start_matches("because ")
        );
        let ways = if ci {
            [
                format!("merge {name} first (on its own, or with this change once a person has read it): the pull requests after it are reviewed with it"),
                "--trust-head-config reads the change's own config: for a local run on your own change, never in CI on others' pull requests".to_string(),
            ]
        } else {
            [
                "--trust-head-config uses the config in your working tree for this local run"
                    .to_string(),
                format!(
                    "commit {name} to the base branch (merge it first): every range and CI run then reads it"
                ),
            ]
        };
        Some(vec![first, ways[0].clone(), ways[1].clone()])
    }

    /// The stderr (and annotation) warning when the change touches config or skills and
    /// this run reads them from a trusted commit, or uses them by `--trust-head-config`.
    /// A local review stays quiet: editing one's own config is not news. Unescaped.
    pub fn warning(&self) -> Option<String> {
        let opted_out = self.reason == OPT_OUT;
        if self.changed_by_review.is_empty() || (self.config_from != ConfigFrom::Base && !opted_out)
        {
            return None;
        }
        let changed = self.changed_by_review.join(", ");
        Some(match self.config_from {
            ConfigFrom::Base => format!(
                "the change under review edits {changed}: they are reviewed as code, but config and skills come from base {} ({}); pass --trust-head-config to use the edited versions",
                self.short_commit(),
                self.reason
            ),
            _ => format!(
                "the change under review edits {changed}, and this run uses the edited versions ({})",
                self.reason
            ),
        })
    }
}

/// The origin of each active skill. A repository skill is `base` when repository files came
/// from the trusted commit, else `change` when the change under review touches it.
pub fn skill_uses(active: &[ActiveSkill], catalog: &Catalog, trust: &TrustReport) -> Vec<SkillUse> {
    active
        .iter()
        .map(|a| {
            let name = a.skill.name.clone();
            let overrides_builtin = a.skill.origin != SkillOrigin::BuiltIn
                && catalog.shadowed.iter().any(|(hidden, _)| {
                    hidden.name == name && hidden.origin == SkillOrigin::BuiltIn
                });
            let (origin, path) = match &a.skill.origin {
                SkillOrigin::BuiltIn => (SkillSource::BuiltIn, None),
                SkillOrigin::Repo(p) => {
                    let p = p.to_string_lossy().replace('\\', "/");
                    let origin = if trust.config_from == ConfigFrom::Base {
                        SkillSource::Base
                    } else if trust.changed_by_review.contains(&p) {
                        SkillSource::Change
                    } else {
                        SkillSource::Repository
                    };
                    (origin, Some(p))
                }
            };
            SkillUse {
                name,
                origin,
                path,
                overrides_builtin,
            }
        })
        .collect()
}
