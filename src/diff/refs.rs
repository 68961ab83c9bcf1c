//! Refs and the state of the repository, as selection needs them: a spec resolved to a
//! commit (with the nearest ref name when it names nothing), whether the working tree has
//! changes, the default branch, and why two commits share no history.

use crate::error::{Error, Result};
use git2::{Repository, StatusOptions};

/// Said after a failed lookup in a shallow clone: the history may stop short of it.
const DEEPEN: &str = "fetch more history with `git fetch --deepen=100` (repeat as needed) or all of it with `git fetch --unshallow`";

/// `base` and `head` share no history: in a shallow clone, because it was cut off.
pub(crate) fn no_merge_base(repo: &Repository, base: &str, head: &str) -> Error {
    if repo.is_shallow() {
        return Error::Git(format!(
            "this is a shallow clone and the merge base of `{base}` and `{head}` is not in its history: {DEEPEN}, or pass --base REF"
        ));
    }
    Error::Git(format!(
        "`{base}` and `{head}` have no common ancestor: pass --base REF, or use {base}..{head} to compare the trees directly"
    ))
}

pub(crate) fn commit<'r>(repo: &'r Repository, spec: &str) -> Result<git2::Commit<'r>> {
    let obj = repo.revparse_single(spec).map_err(|_| {
        if spec == "HEAD" {
            Error::Git(
                "the repository has no commits yet: commit something, or review uncommitted changes with no target"
                    .into(),
            )
        } else {
            unknown_ref(repo, spec)
        }
    })?;
    obj.peel_to_commit()
        .map_err(|_| Error::Git(format!("`{spec}` does not point to a commit")))
}

/// The error for a ref `spec` that names nothing, with the repository's nearest ref name.
fn unknown_ref(repo: &Repository, spec: &str) -> Error {
    let near = near_ref(repo, spec);
    let hint = match &near {
        Some(n) => format!("did you mean `{n}`? "),
        None => String::new(),
    };
    let message = if repo.is_shallow() {
        format!(
            "unknown ref `{spec}`: not a branch, tag or commit in this shallow clone's history: {hint}{DEEPEN}, or check `git branch -a`"
        )
    } else {
        format!(
            "unknown ref `{spec}`: not a branch, tag or commit in this repository ({hint}check `git branch -a` and `git log`)"
        )
    };
    Error::UnknownRef {
        spec: spec.to_string(),
        near,
        message,
    }
}

/// The short name of a branch or tag within two edits of `spec` (the closest), if any.
/// At most the first 10,000 refs are looked at: a hint, not a search.
fn near_ref(repo: &Repository, spec: &str) -> Option<String> {
    let refs = repo.references().ok()?;
    refs.flatten()
        .take(10_000)
        .filter_map(|r| r.shorthand().ok().map(str::to_string))
        .map(|name| (strsim::damerau_levenshtein(spec, &name), name))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, name)| name)
}

pub(crate) fn is_dirty(repo: &Repository) -> Result<bool> {
    if repo.is_bare() {
        return Ok(false);
    }
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .include_ignored(false)
        .exclude_submodules(false);
    let statuses = repo
        .statuses(Some(&mut opts))
        .map_err(|e| Error::git("cannot read the working tree status", e))?;
    Ok(!statuses.is_empty())
}

/// `defaults.defaultBranch`, else `origin/HEAD`, else `main`, else `master`.
pub(crate) fn find_default_branch<'r>(
    repo: &'r Repository,
    configured: Option<&str>,
) -> Result<(String, git2::Commit<'r>)> {
    if let Some(name) = configured {
        for spec in [name.to_string(), format!("origin/{name}")] {
            if let Ok(c) = repo.revparse_single(&spec).and_then(|o| o.peel_to_commit()) {
                return Ok((spec, c));
            }
        }
        return Err(Error::Git(format!(
            "the default branch `{name}` (defaults.defaultBranch) is neither a local branch nor origin/{name}: fix the config or pass --base REF"
        )));
    }
    for spec in [
        "origin/HEAD",
        "main",
        "master",
        "origin/main",
        "origin/master",
    ] {
        if let Ok(c) = repo.revparse_single(spec).and_then(|o| o.peel_to_commit()) {
            return Ok((spec.to_string(), c));
        }
    }
    Err(Error::Git(
        "the tree is clean and no default branch was found (tried origin/HEAD, main, master): pass --base REF, a range such as main..HEAD, or set defaults.defaultBranch"
            .into(),
    ))
}
