//! Review skills: `SKILL.md` prompts found in the repository (`.warden/skills`,
//! `.agents/skills`, `.claude/skills`) and built in (`skills/`, embedded at compile
//! time). A repository skill overrides a built-in one of the same name.

mod files;
pub(crate) mod front_matter;

pub(crate) use files::too_big as skill_too_big;
pub use files::{EntryKind, MAX_SKILL_BYTES, SkillFiles, WorkTree};

use crate::config::{RunEvent, Settings, SkillConfig, Thresholds};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Repository folders searched for skills, highest precedence first.
pub(crate) const SKILL_DIRS: &[&str] = &[".warden/skills", ".agents/skills", ".claude/skills"];

/// Skills run when the config has no `[[skills]]` and no `--skill` is given.
pub(crate) const DEFAULT_SKILLS: &[&str] = &["code-review", "security-review"];

const BUILT_IN: &[(&str, &str)] = &[
    (
        "code-review",
        include_str!("../../skills/code-review/SKILL.md"),
    ),
    (
        "security-review",
        include_str!("../../skills/security-review/SKILL.md"),
    ),
    (
        "dos-review",
        include_str!("../../skills/dos-review/SKILL.md"),
    ),
];

/// Where a skill was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillOrigin {
    /// Embedded in warden.
    BuiltIn,
    /// A file in the repository (or the config that defines it inline), as shown to people.
    Repo(PathBuf),
}

/// A review skill: instructions to the model, with a name and a description.
#[derive(Debug, Clone)]
pub struct Skill {
    /// Its name (front matter `name`, else the file or folder name).
    pub name: String,
    /// What it checks, in one line.
    pub description: String,
    /// Front matter `allowed-tools` (Warden's names: `Read Grep Glob` make the skill a
    /// tool loop, docs/design.md §14; see [`crate::tools::Tool::from_skill_name`]).
    pub allowed_tools: Vec<String>,
    /// The Markdown body: the skill's instructions to the model.
    pub prompt: String,
    /// Where it was found.
    pub origin: SkillOrigin,
}

/// Every skill found, effective ones first-found-wins.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// The effective skills, in discovery order.
    pub skills: Vec<Skill>,
    /// Skills hidden by a same-named one found earlier: (hidden, origin of the winner).
    pub shadowed: Vec<(Skill, SkillOrigin)>,
}

/// A skill chosen for this run, with its settings and the thresholds resolved from them.
#[derive(Debug, Clone)]
pub struct ActiveSkill {
    /// The skill itself.
    pub skill: Skill,
    /// Its `[[skills]]` (or trigger) settings.
    pub config: SkillConfig,
    /// The thresholds its findings are judged with (report and exit code).
    pub thresholds: Thresholds,
}

impl Catalog {
    /// The effective skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name == name)
    }

    fn add(&mut self, skill: Skill) {
        match self.skills.iter().find(|s| s.name == skill.name) {
            Some(winner) => {
                let origin = winner.origin.clone();
                self.shadowed.push((skill, origin));
            }
            None => self.skills.push(skill),
        }
    }
}

/// Finds skills under `root` (the repository's top folder; None for patch input outside
/// a repository) and the built-ins.
pub fn discover(root: Option<&Path>) -> Result<Catalog> {
    match root {
        Some(root) => discover_from(Some(&WorkTree(root))),
        None => discover_from(None),
    }
}

/// Finds skills in `files` (None: built-ins only) and the built-ins. A skill is
/// `DIR/NAME/SKILL.md` or `DIR/NAME.md` in one of [`SKILL_DIRS`].
pub(crate) fn discover_from(files: Option<&dyn SkillFiles>) -> Result<Catalog> {
    let mut catalog = Catalog::default();
    if let Some(files) = files {
        for dir in SKILL_DIRS {
            for (name, kind) in files.list(dir)? {
                let (path, fallback) = match kind {
                    EntryKind::Dir => (format!("{dir}/{name}/SKILL.md"), name),
                    EntryKind::File if name.ends_with(".md") => {
                        let stem = if name == "SKILL.md" {
                            name.clone()
                        } else {
                            name.trim_end_matches(".md").to_string()
                        };
                        (format!("{dir}/{name}"), stem)
                    }
                    EntryKind::File => continue,
                };
                let Some(text) = files.read(&path)? else {
                    continue;
                };
                let shown = PathBuf::from(&path);
                catalog.add(build(
                    &text,
                    &fallback,
                    SkillOrigin::Repo(shown.clone()),
                    &shown,
                )?);
            }
        }
    }
    for (name, text) in BUILT_IN {
        catalog.add(build(text, name, SkillOrigin::BuiltIn, Path::new(name))?);
    }
    Ok(catalog)
}

fn build(text: &str, fallback_name: &str, origin: SkillOrigin, shown: &Path) -> Result<Skill> {
    let parsed = front_matter::parse(text).map_err(|e| Error::Skill {
        path: shown.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(Skill {
        name: parsed.name.unwrap_or_else(|| fallback_name.to_string()),
        description: parsed.description,
        allowed_tools: parsed.allowed_tools,
        prompt: parsed.body,
        origin,
    })
}

/// The skills this run uses, as for a local run (every trigger's skill): see [`select_for`].
pub fn select(
    catalog: &Catalog,
    settings: &Settings,
    requested: &[String],
) -> Result<Vec<ActiveSkill>> {
    select_for(catalog, settings, requested, None)
}

/// The skills this run uses, in order: `--skill` names if given, else the `[[skills]]`
/// entries, else the skills of the `[[triggers]]` that react to `event` (Warden's
/// earlier layout; locally every trigger), else the defaults. Each comes with its
/// settings and its resolved thresholds.
pub(crate) fn select_for(
    catalog: &Catalog,
    settings: &Settings,
    requested: &[String],
    event: Option<&RunEvent>,
) -> Result<Vec<ActiveSkill>> {
    let configs: Vec<SkillConfig> = if !requested.is_empty() {
        requested.iter().map(|n| config_of(settings, n)).collect()
    } else if !settings.skills.is_empty() {
        settings.skills.clone()
    } else if !settings.triggers.is_empty() {
        settings
            .triggers
            .iter()
            .filter(|t| t.matches(event))
            .map(|t| t.config.clone())
            .collect()
    } else {
        DEFAULT_SKILLS
            .iter()
            .map(|n| config_of(settings, n))
            .collect()
    };
    let mut out: Vec<ActiveSkill> = Vec::new();
    for mut config in configs {
        if out.iter().any(|a| a.skill.name == config.name) {
            continue;
        }
        let skill = catalog
            .get(&config.name)
            .ok_or_else(|| unknown(catalog, &config))?;
        if config.paths.is_none() {
            config.paths = settings.default_paths.clone();
        }
        out.push(ActiveSkill {
            skill: skill.clone(),
            thresholds: settings.thresholds(&config),
            config,
        });
    }
    Ok(out)
}

/// The settings of skill `name`: its `[[skills]]` entry, else its first trigger's, else none.
fn config_of(settings: &Settings, name: &str) -> SkillConfig {
    settings
        .skills
        .iter()
        .chain(settings.triggers.iter().map(|t| &t.config))
        .find(|c| c.name == name)
        .cloned()
        .unwrap_or_else(|| SkillConfig::named(name))
}

/// No skill answers to `config.name`: a config error at the place the file names it,
/// else (`--skill`) a usage error.
fn unknown(catalog: &Catalog, config: &SkillConfig) -> Error {
    let name = &config.name;
    let known: Vec<&str> = catalog.skills.iter().map(|s| s.name.as_str()).collect();
    let message = format!(
        "unknown skill `{name}`: known skills are {} (add one as .warden/skills/{name}/SKILL.md, or define it in warden.toml with [[skills]] name and prompt)",
        known.join(", ")
    );
    match &config.named_at {
        Some(at) => Error::Config {
            path: at.path.clone(),
            line: at.line,
            column: at.column,
            message,
        },
        None => Error::Usage(message),
    }
}

/// Adds the skills defined in the config (`[[skills]] prompt = …`) to `catalog`; they
/// come first, so they win over a skill file of the same name.
pub(crate) fn add_inline(catalog: &mut Catalog, settings: &Settings) {
    let file = settings
        .config_path
        .as_ref()
        .and_then(|p| p.file_name())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(crate::config::FILE_NAME));
    for s in settings.inline_skills.iter().rev() {
        let skill = Skill {
            name: s.name.clone(),
            description: s.description.clone(),
            allowed_tools: s.allowed_tools.clone(),
            prompt: s.prompt.clone(),
            origin: SkillOrigin::Repo(file.clone()),
        };
        if let Some(pos) = catalog.skills.iter().position(|x| x.name == s.name) {
            let hidden = std::mem::replace(&mut catalog.skills[pos], skill);
            catalog
                .shadowed
                .push((hidden, SkillOrigin::Repo(file.clone())));
        } else {
            catalog.skills.insert(0, skill);
        }
    }
}

impl ActiveSkill {
    /// Whether this skill reviews `path` (its `paths` and `ignorePaths`).
    pub(crate) fn applies_to(&self, path: &Path) -> bool {
        use crate::path_rules::Verdict;
        if let Some(paths) = &self.config.paths
            && !matches!(paths.verdict(path), Verdict::Matched(_))
        {
            return false;
        }
        !matches!(self.config.ignore.verdict(path), Verdict::Matched(_))
    }

    /// Whether the skill has explicit `paths` that match (a relevance signal).
    pub(crate) fn paths_hit(&self, path: &Path) -> bool {
        use crate::path_rules::Verdict;
        self.config
            .paths
            .as_ref()
            .is_some_and(|p| matches!(p.verdict(path), Verdict::Matched(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_skills_load() {
        let c = discover(None).unwrap();
        let names: Vec<&str> = c.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["code-review", "security-review", "dos-review"]);
        assert!(
            c.skills
                .iter()
                .all(|s| !s.prompt.is_empty() && !s.description.is_empty())
        );
    }
}
