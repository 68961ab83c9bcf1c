//! What each rule (skill) checks, carried in the report so that SARIF rules can give code
//! scanning the `fullDescription` and `help` it requires, without renderers reaching back
//! into the skill catalog.

use crate::skills::{ActiveSkill, SkillOrigin};
use crate::trust::{SkillSource, SkillUse};
use serde::{Deserialize, Serialize};

/// The longest instructions summary kept per skill (characters).
const SUMMARY_CHARS: usize = 1500;

/// One skill as a rule: its name, one-line description and a summary of its instructions.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SkillInfo {
    /// The skill's name.
    pub name: String,
    /// What it checks, in one line.
    pub description: String,
    /// The first paragraphs of the skill's instructions (Markdown), up to 1,500 characters.
    pub summary: String,
    /// Where the skill came from: `built-in`, `base` (the trusted commit), `repository`
    /// (the working tree) or `change` (the working tree, as the change under review has it).
    pub origin: SkillSource,
    /// The repository path of the skill file (absent for built-ins).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// A repository skill that replaces the built-in of the same name.
    pub overrides_builtin: bool,
}

impl SkillInfo {
    pub(crate) fn from_active(active: &[ActiveSkill]) -> Vec<SkillInfo> {
        active
            .iter()
            .map(|a| {
                let (origin, path) = match &a.skill.origin {
                    SkillOrigin::BuiltIn => (SkillSource::BuiltIn, None),
                    SkillOrigin::Repo(p) => {
                        (SkillSource::Repository, Some(p.display().to_string()))
                    }
                };
                SkillInfo {
                    name: a.skill.name.clone(),
                    description: a.skill.description.clone(),
                    summary: summary(&a.skill.prompt),
                    origin,
                    path,
                    overrides_builtin: false,
                }
            })
            .collect()
    }

    /// Takes the origin the trust model found (`crate::trust::skill_uses`), which knows
    /// where repository files were read from and what the change touches.
    pub fn set_origin(&mut self, u: &SkillUse) {
        self.origin = u.origin;
        self.path = u.path.clone();
        self.overrides_builtin = u.overrides_builtin;
    }
}

/// Whole paragraphs from the start of `body` while they fit in [`SUMMARY_CHARS`]; the
/// first paragraph is cut at a word boundary if it alone is longer.
pub(crate) fn summary(body: &str) -> String {
    let mut out = String::new();
    for para in body.split("\n\n").map(str::trim).filter(|p| !p.is_empty()) {
        let len = out.chars().count() + para.chars().count() + 2;
        if len > SUMMARY_CHARS {
            if out.is_empty() {
                let cut: String = para.chars().take(SUMMARY_CHARS - 1).collect();
                let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(a, _)| a);
                out = format!("{cut}…");
            }
            break;
        }
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(para);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_keeps_whole_paragraphs_that_fit() {
        let body = format!(
            "First para.\nstill first.\n\nSecond.\n\n{}",
            "x ".repeat(900)
        );
        assert_eq!(summary(&body), "First para.\nstill first.\n\nSecond.");
        let long = "word ".repeat(400);
        let s = summary(&long);
        assert!(
            s.chars().count() <= SUMMARY_CHARS && s.ends_with("word…"),
            "{s}"
        );
        assert_eq!(summary("  \n\n"), "");
    }
}
