//! Everything before the first model call: select the diff, load the config and the
//! skills, and build the plan. The command layer says what the user asked for in a
//! [`Selection`]; nothing here knows about flags.

use crate::config::{self, Overrides, RunEvent, Settings};
use crate::diff::content::NoContent;
use crate::diff::target::PatchSource;
use crate::diff::{self, Target};
use crate::error::{Error, Result};
use crate::plan::{self, Plan};
use crate::report::Vcs;
use crate::skills::{self, ActiveSkill};
use crate::trust::{self, SkillUse, TrustReport};
use std::io::Read;
use std::path::{Path, PathBuf};

/// What to review and where: the diff, the directory warden runs in, the config file and
/// the skills asked for.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The diff to select.
    pub target: Target,
    /// `-p N`: leading path components stripped from a patch's names, as `git apply -p`
    /// (None: git's default, 1, guessed for traditional headers as git guesses).
    pub strip: Option<usize>,
    /// Where warden runs (`-C DIR`, else the current directory).
    pub dir: PathBuf,
    /// `-c FILE`, else `warden.toml` at the repository root.
    pub config: Option<PathBuf>,
    /// `--skill NAME…`; empty: the config's skills, else the defaults.
    pub skills: Vec<String>,
    /// A CI run (`CI` set): config and skills come from the base of the change.
    pub ci: bool,
    /// `--trust-head-config`: read them from the working tree even in CI or for a range.
    pub trust_head_config: bool,
    /// `--strict-config`: a key warden does not know is an error, not a warning.
    pub strict_config: bool,
    /// The CI event (Warden's `[[triggers]]` react to it); None: a local run.
    pub event: Option<RunEvent>,
    /// Settings given on the command line; they win over the file.
    pub overrides: Overrides,
}

/// Everything a run needs before any model is called.
#[derive(Debug)]
pub struct Prepared {
    /// The loaded settings.
    pub settings: Settings,
    /// What will be sent, in dispatch order.
    pub plan: Plan,
    /// The skills that run, with their settings.
    pub active: Vec<ActiveSkill>,
    /// Repository, revision and branch reviewed, for SARIF provenance and links.
    pub vcs: Option<Vcs>,
    /// Where config and skills came from, for every report.
    pub trust: TrustReport,
    /// The active skills' origins, for every report.
    pub skill_uses: Vec<SkillUse>,
    /// Where a skill's tools read (docs/design.md §14): the head commit's tree in CI and for
    /// ranges, the working tree locally; None without a repository.
    pub tool_head: Option<crate::tools::Head>,
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The GitHub Actions event of this run: `GITHUB_EVENT_NAME`, and the `action` of the
/// payload at `GITHUB_EVENT_PATH` when it has one. None outside GitHub Actions.
pub fn run_event_from_env() -> Option<RunEvent> {
    let name = env_var("GITHUB_EVENT_NAME").filter(|n| !n.trim().is_empty())?;
    let action = env_var("GITHUB_EVENT_PATH")
        .and_then(|p| std::fs::read(p).ok())
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v.get("action")?.as_str().map(str::to_string));
    Some(RunEvent {
        name: name.trim().to_string(),
        action,
    })
}

/// The directory warden runs in: `dir` if given (it must exist), else the current one.
pub fn start_dir(dir: Option<&Path>) -> Result<PathBuf> {
    match dir {
        Some(d) if !d.is_dir() => Err(Error::Usage(format!(
            "-C {}: no such directory",
            d.display()
        ))),
        Some(d) => Ok(d.to_path_buf()),
        None => std::env::current_dir().map_err(|e| Error::io(".", e)),
    }
}

/// The top folder of the repository around `dir`, if there is one.
pub fn repo_root(dir: &Path) -> Option<PathBuf> {
    diff::git::find_repo(dir).and_then(|r| r.workdir().map(Path::to_path_buf))
}

/// Loads the settings (config at `root` unless `explicit`) and the skills they select.
pub fn load(
    explicit: Option<&Path>,
    root: Option<&Path>,
    requested: &[String],
) -> Result<(Settings, skills::Catalog, Vec<ActiveSkill>)> {
    let settings = config::load(explicit, root)?;
    let mut catalog = skills::discover(root)?;
    skills::add_inline(&mut catalog, &settings);
    let active = skills::select(&catalog, &settings, requested)?;
    Ok((settings, catalog, active))
}

/// Selects the diff, loads config and skills (from where they can be trusted, see
/// [`crate::trust`]), and builds the plan.
pub fn prepare(sel: &Selection) -> Result<Prepared> {
    let request = |patch_paths| trust::Request {
        target: &sel.target,
        explicit_config: sel.config.as_deref(),
        ci: sel.ci,
        trust_head_config: sel.trust_head_config,
        patch_paths,
    };
    if let Target::Patch(source) = &sel.target {
        // A patch needs no repository, but one around it still supplies config and skills.
        let repo = diff::git::find_repo(&sel.dir);
        let (bytes, name) = read_patch(source, &sel.dir)?;
        let mut diff = diff::patch_text::parse_stripped(&bytes, &name, sel.strip)?;
        let mut note = None;
        if sel.strip.is_none()
            && let Some(root) = repo.as_ref().and_then(|r| r.workdir())
        {
            // Read as -p 0 only to compare: a patch -p 0 cannot read is not a no-prefix one.
            if let Ok(p0) = diff::patch_text::parse_stripped(&bytes, &name, Some(0)) {
                note = no_prefix(&diff, &p0, root, &name)?;
                if note.is_some() {
                    diff = p0;
                }
            }
        }
        let touched: Vec<String> = diff
            .files
            .iter()
            .flat_map(|f| [Some(&f.path), f.old_path.as_ref()])
            .flatten()
            .map(|p| p.to_string())
            .collect();
        let mut loaded = trust::load(repo.as_ref(), &request(&touched))?;
        loaded.settings.warnings.extend(note);
        let vcs = Vcs::discover(repo.as_ref(), None, &env_var);
        // A patch's new side is not in any tree tools could read: its units are one
        // request each.
        return finish(loaded, sel, vcs, None, |settings, active| {
            Ok(plan::build(&diff, &NoContent, settings, active))
        });
    }
    let repo = diff::git::open_repo(&sel.dir)?;
    let loaded = trust::load(Some(&repo), &request(&[]))?;
    let head = match &sel.target {
        Target::Range { head, .. } => Some(head.as_str()),
        _ => None,
    };
    let vcs = Vcs::discover(Some(&repo), head, &env_var);
    let tools = tool_head(&repo, sel);
    finish(loaded, sel, vcs, tools, |settings, active| {
        let selection = diff::git::select_capped(
            &repo,
            &sel.target,
            settings.default_branch.as_deref(),
            settings.scan.max_file_bytes,
        )?;
        Ok(plan::build(
            &selection.diff,
            &selection.content,
            settings,
            active,
        ))
    })
}

/// Selects the skills and builds the plan with `build`.
/// Applies the command line's overrides (policy is resolved once, after them), selects
/// the skills and builds the plan with `build`.
fn finish(
    mut loaded: trust::Loaded,
    sel: &Selection,
    vcs: Option<Vcs>,
    tool_head: Option<crate::tools::Head>,
    build: impl FnOnce(&Settings, &[ActiveSkill]) -> Result<Plan>,
) -> Result<Prepared> {
    loaded.settings.refuse_unknown_keys(sel.strict_config)?;
    loaded.settings.apply(&sel.overrides)?;
    skills::add_inline(&mut loaded.catalog, &loaded.settings);
    let active = skills::select_for(
        &loaded.catalog,
        &loaded.settings,
        &sel.skills,
        sel.event.as_ref(),
    )?;
    let plan = build(&loaded.settings, &active)?;
    let skill_uses = trust::skill_uses(&active, &loaded.catalog, &loaded.trust);
    if loaded.settings.execution.tools != config::ToolsMode::Off {
        let refused = crate::tools::refused_tools(&active);
        loaded.settings.warnings.extend(refused);
    }
    Ok(Prepared {
        settings: loaded.settings,
        plan,
        active,
        vcs,
        trust: loaded.trust,
        skill_uses,
        tool_head,
    })
}

/// Where tools read: the reviewed head. A range's head commit, the HEAD commit in CI
/// (the model reads exactly what is reviewed, not a checkout a CI step changed), the
/// working tree otherwise.
fn tool_head(repo: &git2::Repository, sel: &Selection) -> Option<crate::tools::Head> {
    use crate::tools::Head;
    let dir = repo.workdir().unwrap_or(repo.path()).to_path_buf();
    match &sel.target {
        Target::Range { head, .. } => Some(Head::Commit {
            repo: dir,
            rev: head.clone(),
        }),
        _ if sel.ci || repo.workdir().is_none() => Some(Head::Commit {
            repo: dir,
            rev: "HEAD".into(),
        }),
        _ => Some(Head::WorkTree(dir)),
    }
}

fn read_patch(source: &PatchSource, dir: &Path) -> Result<(Vec<u8>, String)> {
    match source {
        PatchSource::Demo => Ok((diff::target::DEMO_DIFF.to_vec(), "the built-in demo".into())),
        PatchSource::Stdin => {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| Error::io("<stdin>", e))?;
            Ok((buf, "stdin".into()))
        }
        PatchSource::File(p) => {
            let path = if p.is_absolute() {
                p.clone()
            } else {
                dir.join(p)
            };
            let bytes = std::fs::read(&path).map_err(|e| {
                Error::Usage(format!(
                    "--diff {}: cannot read the file ({e})",
                    p.display()
                ))
            })?;
            Ok((bytes, p.display().to_string()))
        }
    }
}

/// A patch written without `a/`/`b/` prefixes (`git diff --no-prefix`) read as `-p 1`
/// loses its first folder. Judged on the files the patch changes or deletes (their old
/// side must exist): when none is found under `-p 1` and every one is under `-p 0`, the
/// patch is read as `-p 0`, said in a warning (Some); when only some are, a usage error
/// names `-p 0`; otherwise (not this repository's patch, or new files only) nothing.
fn no_prefix(
    p1: &diff::DiffSet,
    p0: &diff::DiffSet,
    root: &Path,
    name: &str,
) -> Result<Option<String>> {
    let existing = |d: &diff::DiffSet| -> (usize, usize) {
        let old: Vec<String> = d
            .files
            .iter()
            .filter(|f| f.status != diff::ChangeStatus::Added)
            .map(|f| f.old_path.as_ref().unwrap_or(&f.path).to_string())
            .collect();
        let found = old.iter().filter(|p| root.join(p).exists()).count();
        (found, old.len())
    };
    let (found1, total) = existing(p1);
    let (found0, _) = existing(p0);
    if total == 0 || found1 > 0 || found0 == 0 {
        return Ok(None);
    }
    if found0 < total {
        return Err(Error::Usage(format!(
            "--diff {name}: none of the files it changes is in this repository as -p 1 reads the names, but {found0} of {total} are with the first folder kept: if it was written by `git diff --no-prefix`, pass -p 0"
        )));
    }
    Ok(Some(format!(
        "--diff {name}: its names have no a/ and b/ prefixes (as `git diff --no-prefix` writes them): read as -p 0, where every file it changes is in this repository (pass -p 1 to strip the first folder anyway)"
    )))
}
