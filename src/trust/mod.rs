//! Where warden's own instructions come from. A change under review is written by someone
//! else, so in CI and for commit ranges `warden.toml` and repository skills are read from
//! the base side of the change (a trusted commit), never from the head or the working tree:
//! a pull request cannot point the CI's key at its own server (`baseUrl`) or replace the
//! reviewer's instructions (a skill saying "report nothing"). Files the change touches are
//! still reviewed as code, and every report says which they are.
//!
//! The base is what the diff is against: the merge-base for `A...B`, `A` for `A..B` and
//! `--base A`, `REF` for `warden REF`, HEAD for a dirty tree or `--staged`, the merge-base
//! with the default branch for a clean tree. A `--diff` patch has no base commit: in CI,
//! HEAD of the checkout is read, except every file the patch touches (the checkout may
//! hold either side of it). A local review of the working tree, or `--trust-head-config`,
//! reads the working tree as before.

mod base;
mod report;
mod tree;

pub use report::{ConfigFrom, SkillSource, SkillUse, TrustReport, skill_uses, skills_line};

use crate::config::{self, Settings};
use crate::diff::Target;
use crate::error::{Error, Result};
use crate::skills::{self, Catalog, SkillFiles};
use git2::{Commit, Repository};
use std::path::{Component, Path, PathBuf};
use tree::CommitFiles;

/// The repository paths that steer warden: the config and the skill folders.
const STEERING: &[&str] = &[
    config::FILE_NAME,
    ".warden/skills",
    ".agents/skills",
    ".claude/skills",
];

/// Whether the environment says this is a CI run: `CI` set, non-empty, and not `false` or
/// `0` (GitHub Actions, GitLab CI, Buildkite, CircleCI and most others set `CI=true`).
pub fn ci_from_env() -> bool {
    std::env::var("CI").is_ok_and(|v| {
        let v = v.trim();
        !v.is_empty() && !v.eq_ignore_ascii_case("false") && v != "0"
    })
}

/// What the caller asked for.
pub struct Request<'a> {
    /// What is reviewed (its base is the trusted side).
    pub target: &'a Target,
    /// `-c FILE`, relative to the current directory.
    pub explicit_config: Option<&'a Path>,
    /// A CI run.
    pub ci: bool,
    /// `--trust-head-config`.
    pub trust_head_config: bool,
    /// For a patch target: every path it touches (old and new names).
    pub patch_paths: &'a [String],
}

/// Settings and skills, and what the report says about where they came from.
pub struct Loaded {
    /// The settings, from the trusted source.
    pub settings: Settings,
    /// The skills, from the trusted source.
    pub catalog: Catalog,
    /// What every report says about where they came from.
    pub trust: TrustReport,
}

/// Loads config and skills from where `req` says they can be trusted. `repo` is None only
/// for a patch outside any repository.
pub fn load(repo: Option<&Repository>, req: &Request) -> Result<Loaded> {
    let Some(repo) = repo else {
        let settings = config::load(req.explicit_config, None)?;
        let config_file = settings
            .config_path
            .as_ref()
            .map(|p| p.display().to_string());
        return Ok(Loaded {
            settings,
            catalog: skills::discover(None)?,
            trust: TrustReport {
                config_from: ConfigFrom::None,
                commit: None,
                reason: "no repository".into(),
                config_file,
                changed_by_review: Vec::new(),
            },
        });
    };
    let is_patch = matches!(req.target, Target::Patch(_));
    let trusted = !req.trust_head_config && (req.ci || matches!(req.target, Target::Range { .. }));
    let explicit_rel = match req.explicit_config {
        Some(p) => repo_relative(p, repo.workdir()),
        None => Vec::new(),
    };
    let mut specs: Vec<String> = STEERING.iter().map(|s| s.to_string()).collect();
    specs.extend(explicit_rel.iter().cloned());
    let reason = match (trusted, req.ci, is_patch) {
        (true, true, true) => "CI is set; a --diff patch has no base commit, so HEAD of the checkout is read without the files the patch touches",
        (true, true, false) => "CI is set",
        (true, false, _) => "a commit range is reviewed",
        (false, _, _) if req.trust_head_config => report::OPT_OUT,
        (false, _, _) => "local review",
    }
    .to_string();
    if !trusted {
        return working_tree(repo, req, &specs, reason);
    }
    if is_patch {
        let head = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let changed = under(req.patch_paths, &specs);
        let source = Source {
            repo,
            base: head.as_ref(),
            absent: req.patch_paths.to_vec(),
            changed,
            explicit: req.explicit_config,
            explicit_rel: &explicit_rel,
            patch: true,
        };
        return source.load(reason);
    }
    // A clean tree's base depends on the default branch, which the config may name; the
    // config must not choose its own base, so the first look uses the built-in search,
    // and the trusted config's `defaultBranch` (if any) gets one second look.
    let first = base::sides(repo, req.target, None).map_err(|e| bootstrap_error(req.target, e))?;
    let mut loaded =
        trusted_source(repo, &first, req, &specs, &explicit_rel)?.load(reason.clone())?;
    if matches!(req.target, Target::Default)
        && let Some(branch) = loaded.settings.default_branch.clone()
    {
        let second = base::sides(repo, req.target, Some(&branch))?;
        if second.base.as_ref().map(Commit::id) != first.base.as_ref().map(Commit::id) {
            loaded = trusted_source(repo, &second, req, &specs, &explicit_rel)?.load(reason)?;
        }
    }
    Ok(loaded)
}

fn trusted_source<'a>(
    repo: &'a Repository,
    sides: &'a base::Sides<'a>,
    req: &'a Request,
    specs: &[String],
    explicit_rel: &'a [String],
) -> Result<Source<'a>> {
    Ok(Source {
        repo,
        base: sides.base.as_ref(),
        absent: Vec::new(),
        changed: base::changed_paths(repo, sides, specs)?,
        explicit: req.explicit_config,
        explicit_rel,
        patch: false,
    })
}

fn bootstrap_error(target: &Target, e: Error) -> Error {
    match target {
        Target::Default => Error::Git(format!(
            "{e}\n  (warden reads warden.toml and skills from the base of the change here, and a clean tree's base is its merge-base with the default branch, found without the config: name the base with --base REF or a range such as origin/main...HEAD)"
        )),
        _ => e,
    }
}

/// A local review: the working tree, as given; the changed steering files are listed for
/// the report only (best effort: if the sides cannot be resolved, diff selection reports
/// why right after).
fn working_tree(
    repo: &Repository,
    req: &Request,
    specs: &[String],
    reason: String,
) -> Result<Loaded> {
    let root = repo.workdir();
    let settings = config::load(req.explicit_config, root)?;
    let catalog = skills::discover(root)?;
    let changed = if matches!(req.target, Target::Patch(_)) {
        under(req.patch_paths, specs)
    } else {
        base::sides(repo, req.target, settings.default_branch.as_deref())
            .and_then(|s| base::changed_paths(repo, &s, specs))
            .unwrap_or_default()
    };
    let config_file = settings.config_path.as_ref().map(|p| {
        root.and_then(|r| p.strip_prefix(r).ok())
            .unwrap_or(p)
            .display()
            .to_string()
    });
    Ok(Loaded {
        settings,
        catalog,
        trust: TrustReport {
            config_from: ConfigFrom::WorkingTree,
            commit: None,
            reason,
            config_file,
            changed_by_review: changed,
        },
    })
}

/// Config and skills from a trusted commit.
struct Source<'a> {
    repo: &'a Repository,
    /// None: the base has no commits, so no repository config and no repository skills.
    base: Option<&'a Commit<'a>>,
    /// Paths that read as absent in `base` (a patch's files).
    absent: Vec<String>,
    /// Steering paths the change touches, for the report.
    changed: Vec<String>,
    explicit: Option<&'a Path>,
    /// `explicit`'s names inside the repository (as given and with symlinks resolved).
    explicit_rel: &'a [String],
    patch: bool,
}

impl Source<'_> {
    fn load(self, reason: String) -> Result<Loaded> {
        let files = self
            .base
            .map(|c| CommitFiles::new(self.repo, c, self.absent.clone()))
            .transpose()?;
        let settings = self.settings(files.as_ref())?;
        let catalog = skills::discover_from(files.as_ref().map(|f| f as &dyn SkillFiles))?;
        Ok(Loaded {
            trust: TrustReport {
                config_from: ConfigFrom::Base,
                commit: self.base.map(|c| c.id().to_string()),
                reason,
                config_file: settings
                    .config_path
                    .as_ref()
                    .map(|p| p.display().to_string()),
                changed_by_review: self.changed,
            },
            settings,
            catalog,
        })
    }

    /// `-c FILE` as given, unless the change touches it (then its trusted version); else
    /// `warden.toml` of the trusted commit; else the built-in defaults.
    fn settings(&self, files: Option<&CommitFiles>) -> Result<Settings> {
        if let Some(explicit) = self.explicit {
            let touched = self
                .explicit_rel
                .iter()
                .find(|r| self.changed.contains(r) || self.absent.contains(r));
            let Some(rel) = touched else {
                return config::load(Some(explicit), None);
            };
            let text = match files {
                Some(f) if !self.patch => f.read_config(rel)?,
                _ => None,
            };
            let Some(text) = text else {
                let why = if self.patch {
                    "the --diff patch changes this file, and a patch has no base commit to read a trusted version from"
                } else {
                    "the change under review adds this file, so it has no trusted (base) version"
                };
                return Err(Error::Usage(format!(
                    "-c {}: {why}: pass a config from outside the change, or --trust-head-config to use it as it is",
                    explicit.display()
                )));
            };
            let files = files.expect("text came from the commit");
            return files.parse_config(&text, rel);
        }
        let Some(files) = files else {
            return Ok(Settings::default());
        };
        match files.read_config(config::FILE_NAME)? {
            Some(text) => files.parse_config(&text, config::FILE_NAME),
            None => Ok(Settings::default()),
        }
    }
}

/// The `paths` that are, or lie under, one of `specs`.
fn under(paths: &[String], specs: &[String]) -> Vec<String> {
    let mut out: Vec<String> = paths
        .iter()
        .filter(|p| {
            specs
                .iter()
                .any(|s| *p == s || p.starts_with(&format!("{s}/")))
        })
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `path`'s names relative to the repository root, if it lies inside: as given (made
/// absolute, `.` and `..` folded) and with symlinks resolved. Empty when outside.
fn repo_relative(path: &Path, workdir: Option<&Path>) -> Vec<String> {
    let Some(workdir) = workdir else {
        return Vec::new();
    };
    let root = workdir
        .canonicalize()
        .unwrap_or_else(|_| workdir.to_path_buf());
    let abs = std::env::current_dir()
        .map(|d| d.join(path))
        .unwrap_or_else(|_| path.to_path_buf());
    let lexical = fold(&abs);
    // The lexical name relative to the root, under either spelling of the root.
    let lexical_rel = lexical
        .strip_prefix(&root)
        .or_else(|_| lexical.strip_prefix(workdir))
        .ok()
        .map(Path::to_path_buf);
    let resolved_rel = abs
        .canonicalize()
        .ok()
        .and_then(|c| c.strip_prefix(&root).ok().map(Path::to_path_buf));
    let mut out: Vec<String> = [lexical_rel, resolved_rel]
        .into_iter()
        .flatten()
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .filter(|p| !p.is_empty())
        .collect();
    out.dedup();
    out
}

/// `.` and `..` folded without touching the filesystem.
fn fold(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
