//! The steering paths a change may touch (the config and the skill folders, and `-c FILE`
//! when it lies inside the repository), and matching paths against them.

use crate::config;
use git2::Repository;
use std::path::{Component, Path, PathBuf};

/// The repository paths that steer warden: the config and the skill folders.
const STEERING: &[&str] = &[
    config::FILE_NAME,
    "REVIEW.md",
    "AGENTS.md",
    ".warden/skills",
    ".agents/skills",
    ".claude/skills",
];

/// The steering paths of one review.
pub(super) struct Steering {
    /// Files and folders whose change the report names (and a trusted load reads around).
    pub specs: Vec<String>,
    /// `-c FILE`'s names inside the repository (as given and with symlinks resolved).
    pub explicit_rel: Vec<String>,
}

impl Steering {
    pub(super) fn of(repo: &Repository, explicit: Option<&Path>) -> Steering {
        let explicit_rel = match explicit {
            Some(p) => repo_relative(p, repo.workdir()),
            None => Vec::new(),
        };
        let mut specs: Vec<String> = STEERING.iter().map(|s| s.to_string()).collect();
        specs.extend(explicit_rel.iter().cloned());
        Steering {
            specs,
            explicit_rel,
        }
    }
}

/// The `paths` that are, or lie under, one of `specs`.
pub(super) fn under(paths: &[String], specs: &[String]) -> Vec<String> {
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
