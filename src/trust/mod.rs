//! Where warden's own instructions come from. A change under review is written by someone
//! else, so in CI and for commit ranges `warden.toml` and repository skills are read from
//! the base side of the change (a trusted commit), never from the head or the working tree:
//! a pull request cannot point the CI's key at its own server (`baseUrl`) or replace the
//! reviewer's instructions (a skill saying "report nothing"). Files the change touches are
//! still reviewed as code, and every report says which they are.
//!
//! The base is what the diff is against: the merge-base for `A...B`, `A` for `A..B` and
//! `--base A`, `REF` for `warden REF`, HEAD for `--staged` or on the default branch, the
//! merge-base with the default branch for a branch (`diff::default_pick`). A `--diff` patch has no base commit: in CI,
//! HEAD of the checkout is read, except every file the patch touches (the checkout may
//! hold either side of it). A local review of the working tree, or `--trust-head-config`,
//! reads the working tree as before.

//!
//! Loading reads top to bottom once: [`load`] decides where to read from (`Mode`), names
//! the steering paths (`paths.rs`), then one loader reads: `local.rs` (the working tree),
//! or `commit.rs` (a trusted commit, found by `base.rs` and read through `tree.rs`).

mod base;
mod commit;
mod local;
mod paths;
mod report;
pub(crate) mod tree;

pub use report::{ConfigFrom, SkillSource, SkillUse, TrustReport, skill_uses};

use crate::config::{self, Settings};
use crate::diff::Target;
use crate::error::Result;
use crate::skills::{self, Catalog};
use git2::Repository;
use paths::Steering;
use std::path::Path;

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
        return outside_any_repository(req);
    };
    let mode = Mode::decide(req);
    let steering = Steering::of(repo, req.explicit_config);
    match mode {
        Mode::WorkingTree(reason) => local::load(repo, req, &steering, reason),
        Mode::PatchOnHead => commit::load_patch(repo, req, &steering, mode.reason()),
        Mode::BaseCommit(_) => commit::load_base(repo, req, &steering, mode.reason()),
    }
}

/// Where config and skills are read from, and why (the report's `trust.reason`).
enum Mode {
    /// The working tree as it is: a local review, or `--trust-head-config`.
    WorkingTree(String),
    /// CI with a `--diff` patch: HEAD of the checkout, without the files it touches.
    PatchOnHead,
    /// The base commit of the change: CI, or a commit range.
    BaseCommit(&'static str),
}

impl Mode {
    fn decide(req: &Request) -> Mode {
        let range = matches!(req.target, Target::Range { .. });
        let trusted = !req.trust_head_config && (req.ci || range);
        match (trusted, req.ci, matches!(req.target, Target::Patch(_))) {
            (true, true, true) => Mode::PatchOnHead,
            (true, true, false) => Mode::BaseCommit("CI is set"),
            (true, false, _) => Mode::BaseCommit("a commit range is reviewed"),
            (false, _, _) if req.trust_head_config => Mode::WorkingTree(report::OPT_OUT.into()),
            (false, _, _) => Mode::WorkingTree("local review".into()),
        }
    }

    fn reason(&self) -> String {
        match self {
            Mode::WorkingTree(r) => r.clone(),
            Mode::PatchOnHead => "CI is set; a --diff patch has no base commit, so HEAD of the checkout is read without the files the patch touches".into(),
            Mode::BaseCommit(r) => (*r).into(),
        }
    }
}

/// A patch outside any repository: the config as given (or none) and built-in skills.
fn outside_any_repository(req: &Request) -> Result<Loaded> {
    let mut settings = config::load(req.explicit_config, None)?;
    settings.guidance =
        config::Guidance::load(&settings.instructions, "the config".into(), &|_| None);
    let config_file = settings
        .config_path
        .as_ref()
        .map(|p| p.display().to_string());
    Ok(Loaded {
        settings,
        catalog: skills::discover(None)?,
        trust: TrustReport {
            config_from: ConfigFrom::None,
            commit: None,
            reason: "no repository".into(),
            config_file,
            changed_by_review: Vec::new(),
        },
    })
}
