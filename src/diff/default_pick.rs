//! What `warden review` with no target compares, decided once for the diff and for trust:
//! on a branch, the branch against its merge-base with the default branch, uncommitted
//! changes included (what its pull request will show, plus what is not committed yet); on
//! the default branch, the uncommitted changes. An untracked file (a `warden.toml` that
//! `warden init` just wrote) never turns a branch's review into "uncommitted changes" only.

use super::refs::{commit, find_default_branch, is_dirty, no_merge_base};
use crate::error::Result;
use git2::{Commit, Repository};

/// The base of a review with no target and how people read it.
pub(crate) enum DefaultPick<'r> {
    /// Nothing committed yet: the uncommitted changes against an empty tree, if any.
    Unborn { dirty: bool },
    /// The uncommitted changes against HEAD (on the default branch, or no branch to
    /// compare with). `why` finishes "uncommitted changes …".
    Uncommitted { head: Commit<'r>, why: String },
    /// The branch's commits and the uncommitted changes against the merge-base.
    Branch { base: Commit<'r>, what: String },
}

impl DefaultPick<'_> {
    /// The description the plan and every report's first line carry.
    pub(crate) fn describe(&self) -> String {
        match self {
            DefaultPick::Unborn { .. } => "uncommitted changes (no commits yet)".into(),
            DefaultPick::Uncommitted { why, .. } => format!("uncommitted changes {why}"),
            DefaultPick::Branch { what, .. } => what.clone(),
        }
    }
}

/// Decides what a review with no target compares. `default_branch` is the config's
/// `defaults.defaultBranch` (else origin/HEAD, main, master are tried).
pub(crate) fn pick<'r>(
    repo: &'r Repository,
    default_branch: Option<&str>,
) -> Result<DefaultPick<'r>> {
    let Ok(head) = commit_of_head(repo) else {
        return Ok(DefaultPick::Unborn {
            dirty: is_dirty(repo)?,
        });
    };
    let branch = current_branch(repo);
    let (name, default) = match find_default_branch(repo, default_branch) {
        Ok(found) => found,
        // No branch to compare with: the uncommitted changes are still worth a look.
        Err(_) if is_dirty(repo)? => {
            return Ok(DefaultPick::Uncommitted {
                head,
                why: "vs HEAD (no default branch found to compare the branch with)".into(),
            });
        }
        Err(e) => return Err(e),
    };
    let local = local_name(repo, &name);
    let on_default = head.id() == default.id() || branch.as_deref() == Some(local.as_str());
    if on_default {
        return Ok(DefaultPick::Uncommitted {
            head,
            why: format!("on {local}, the default branch (vs HEAD)"),
        });
    }
    let mb = repo
        .merge_base(default.id(), head.id())
        .map_err(|_| no_merge_base(repo, &name, "HEAD"))?;
    let base = repo
        .find_commit(mb)
        .map_err(|e| crate::error::Error::git(&name, e))?;
    let label = branch.unwrap_or_else(|| "HEAD".into());
    if mb == head.id() {
        return Ok(DefaultPick::Uncommitted {
            head,
            why: format!("on {label}, which has no commits beyond {name} (vs HEAD)"),
        });
    }
    let short = &mb.to_string()[..7];
    Ok(DefaultPick::Branch {
        base,
        what: format!(
            "branch {label} vs its merge-base with {name} ({short}), uncommitted changes included"
        ),
    })
}

fn commit_of_head(repo: &Repository) -> Result<Commit<'_>> {
    commit(repo, "HEAD")
}

/// HEAD's branch name, None when detached.
fn current_branch(repo: &Repository) -> Option<String> {
    let head = repo.head().ok()?;
    if !head.is_branch() {
        return None;
    }
    head.shorthand().ok().map(str::to_string)
}

/// The branch name behind a default-branch spec: `origin/HEAD` → what it points at,
/// `origin/main` → `main`.
fn local_name(repo: &Repository, spec: &str) -> String {
    let spec = if spec == "origin/HEAD" {
        repo.find_reference("refs/remotes/origin/HEAD")
            .ok()
            .and_then(|r| r.symbolic_target().ok().flatten().map(str::to_string))
            .map(|t| t.trim_start_matches("refs/remotes/").to_string())
            .unwrap_or_else(|| spec.to_string())
    } else {
        spec.to_string()
    };
    spec.strip_prefix("origin/").unwrap_or(&spec).to_string()
}
