//! Config and skills from a trusted commit: the base of the change (CI, ranges), or HEAD
//! of the checkout for a `--diff` patch in CI (without the files the patch touches).

use super::paths::{Steering, under};
use super::tree::CommitFiles;
use super::{ConfigFrom, Loaded, Request, TrustReport, base};
use crate::config::{self, Settings};
use crate::diff::Target;
use crate::error::{Error, Result};
use crate::skills::{self, SkillFiles};
use git2::{Commit, Repository};
use std::path::Path;

/// CI with a `--diff` patch: HEAD of the checkout, reading every file the patch touches
/// as absent (the checkout may hold either side of it).
pub(super) fn load_patch(
    repo: &Repository,
    req: &Request,
    steering: &Steering,
    reason: String,
) -> Result<Loaded> {
    let head = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    Source {
        repo,
        base: head.as_ref(),
        absent: req.patch_paths.to_vec(),
        changed: under(req.patch_paths, &steering.specs),
        explicit: req.explicit_config,
        explicit_rel: &steering.explicit_rel,
        patch: true,
    }
    .load(reason)
}

/// The base commit of the change. A clean tree's base depends on the default branch,
/// which the config may name; the config must not choose its own base, so the first look
/// uses the built-in search, and the trusted config's `defaultBranch` (if any) gets one
/// second look.
pub(super) fn load_base(
    repo: &Repository,
    req: &Request,
    steering: &Steering,
    reason: String,
) -> Result<Loaded> {
    let read = |located: &base::Located, reason: String| {
        Source {
            repo,
            base: located.base.as_ref(),
            absent: Vec::new(),
            changed: located.changed.clone(),
            explicit: req.explicit_config,
            explicit_rel: &steering.explicit_rel,
            patch: false,
        }
        .load(reason)
    };
    let first = base::locate(repo, req.target, None, &steering.specs)
        .map_err(|e| bootstrap_error(req.target, e))?;
    let loaded = read(&first, reason.clone())?;
    let second_look = match (&req.target, loaded.settings.default_branch.as_deref()) {
        (Target::Default, Some(branch)) => Some(base::locate(
            repo,
            req.target,
            Some(branch),
            &steering.specs,
        )?),
        _ => None,
    };
    match second_look {
        Some(second)
            if second.base.as_ref().map(Commit::id) != first.base.as_ref().map(Commit::id) =>
        {
            read(&second, reason)
        }
        _ => Ok(loaded),
    }
}

fn bootstrap_error(target: &Target, e: Error) -> Error {
    match target {
        Target::Default => Error::Git(format!(
            "{e}\n  (warden reads warden.toml and skills from the base of the change here, and a clean tree's base is its merge-base with the default branch, found without the config: name the base with --base REF or a range such as origin/main...HEAD)"
        )),
        _ => e,
    }
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
        let mut settings = self.settings(files.as_ref())?;
        let from = match self.base {
            Some(c) => format!("base {}", &c.id().to_string()[..7]),
            None => "an empty base".into(),
        };
        settings.guidance = config::Guidance::load(&settings.instructions, from, &|p: &str| {
            files.as_ref()?.read_bytes(p).ok()?
        });
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
