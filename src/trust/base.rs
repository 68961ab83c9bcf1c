//! The two sides of the change under review, as far as trust needs them: the base commit
//! (what the diff is against, hence what the repository had before the change) and the new
//! side, and which config and skill paths differ between them.

use crate::diff::DefaultPick;
use crate::diff::Target;
use crate::diff::git::{commit, range};
use crate::error::{Error, Result};
use git2::{Commit, DiffOptions, Repository};

/// Where the new side of the change lives.
enum NewSide<'r> {
    Tree(Commit<'r>),
    Index,
    WorkDir,
}

/// The base commit (None: HEAD is unborn, the base is empty) and the new side.
struct Sides<'r> {
    base: Option<Commit<'r>>,
    new: NewSide<'r>,
}

/// The base commit of the change (None: HEAD is unborn, the base is empty) and the
/// steering paths the change touches.
pub(super) struct Located<'r> {
    pub base: Option<Commit<'r>>,
    pub changed: Vec<String>,
}

/// Finds the base of the change under review and which of `specs` differ from it: what a
/// trusted load reads from, and what every report names as changed by the review.
pub(super) fn locate<'r>(
    repo: &'r Repository,
    target: &Target,
    default_branch: Option<&str>,
    specs: &[String],
) -> Result<Located<'r>> {
    let sides = sides(repo, target, default_branch)?;
    let changed = changed_paths(repo, &sides, specs)?;
    Ok(Located {
        base: sides.base,
        changed,
    })
}

fn head<'r>(repo: &'r Repository) -> Result<Option<Commit<'r>>> {
    match repo.head() {
        Ok(h) => h
            .peel_to_commit()
            .map(Some)
            .map_err(|e| Error::git("cannot read HEAD", e)),
        Err(e)
            if e.code() == git2::ErrorCode::UnbornBranch
                || e.code() == git2::ErrorCode::NotFound =>
        {
            Ok(None)
        }
        Err(e) => Err(Error::git("cannot read HEAD", e)),
    }
}

/// The sides `diff::git::select` compares for `target` (not a patch), resolved the same
/// way: ranges from their base (the merge-base for `A...B`), `--staged` from HEAD, `REF`
/// from REF, no target as `diff::default_pick` decides (a branch from its merge-base with
/// `default_branch`, the default branch from HEAD).
fn sides<'r>(
    repo: &'r Repository,
    target: &Target,
    default_branch: Option<&str>,
) -> Result<Sides<'r>> {
    Ok(match target {
        Target::Patch(_) => Sides {
            base: head(repo)?,
            new: NewSide::WorkDir,
        },
        Target::Staged => Sides {
            base: head(repo)?,
            new: NewSide::Index,
        },
        Target::Ref(spec) => Sides {
            base: Some(commit(repo, spec)?),
            new: NewSide::WorkDir,
        },
        Target::Range {
            base,
            head,
            symmetric,
        } => {
            let (base, head) = range(repo, base, head, *symmetric)?;
            Sides {
                base: Some(base),
                new: NewSide::Tree(head),
            }
        }
        Target::Default => match crate::diff::pick_default(repo, default_branch)? {
            // An empty repository: an empty base.
            DefaultPick::Unborn { .. } => Sides {
                base: None,
                new: NewSide::WorkDir,
            },
            DefaultPick::Uncommitted { head, .. } => Sides {
                base: Some(head),
                new: NewSide::WorkDir,
            },
            DefaultPick::Branch { base, .. } => Sides {
                base: Some(base),
                new: NewSide::WorkDir,
            },
        },
    })
}

/// The paths under `specs` (files or folders, literal) that differ between the sides:
/// added, edited, deleted, renamed (both names) or changed type.
fn changed_paths(repo: &Repository, sides: &Sides, specs: &[String]) -> Result<Vec<String>> {
    let mut opts = DiffOptions::new();
    for s in specs {
        opts.pathspec(s);
    }
    opts.disable_pathspec_match(true)
        .include_typechange(true)
        .ignore_submodules(true);
    let base_tree = sides
        .base
        .as_ref()
        .map(|c| c.tree())
        .transpose()
        .map_err(|e| Error::git("cannot read the base tree", e))?;
    let diff = match &sides.new {
        NewSide::Tree(c) => {
            let tree = c
                .tree()
                .map_err(|e| Error::git("cannot read the head tree", e))?;
            repo.diff_tree_to_tree(base_tree.as_ref(), Some(&tree), Some(&mut opts))
        }
        NewSide::Index => repo.diff_tree_to_index(base_tree.as_ref(), None, Some(&mut opts)),
        NewSide::WorkDir => {
            opts.include_untracked(true).recurse_untracked_dirs(true);
            repo.diff_tree_to_workdir_with_index(base_tree.as_ref(), Some(&mut opts))
        }
    }
    .map_err(|e| Error::git("cannot compare config and skill files", e))?;
    let mut out: Vec<String> = Vec::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(p) = file.path_bytes() {
                out.push(String::from_utf8_lossy(p).into_owned());
            }
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}
