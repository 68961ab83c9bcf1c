//! Diff selection with git2 (never a `git` subprocess): resolves a [`Target`] against a
//! repository and converts libgit2's deltas into the crate's diff model.

use super::content::{ContentSource, MAX_BASE_BYTES};
use super::default_pick::DefaultPick;
pub(crate) use super::refs::{commit, no_merge_base};
use super::{ChangeStatus, DiffSet, FileChange, Hunk, Line, LineKind, RepoPath, Target};
use crate::error::{Error, Result};
use git2::{Delta, Diff, DiffFindOptions, DiffOptions, Oid, Patch, Repository};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The repository containing `dir`, if there is one warden may open (for inputs that need
/// none, such as a `--diff` patch, but use one around them for config and skills).
pub fn find_repo(dir: &Path) -> Option<Repository> {
    Repository::discover(dir).ok()
}

/// Opens the repository containing `dir`. A repository git refuses to open because
/// another user owns it (`safe.directory`) says so, with the command that trusts it.
pub fn open_repo(dir: &Path) -> Result<Repository> {
    Repository::discover(dir).map_err(|e| {
        if e.code() == git2::ErrorCode::Owner {
            let top = repo_top(dir);
            return Error::Git(format!(
                "{}: git refuses this repository because it is owned by another user (safe.directory); if you trust it, run `git config --global --add safe.directory {}`, or run warden as its owner",
                top.display(),
                top.display()
            ));
        }
        Error::Git(format!(
            "not a git repository (or any parent up to the root): {}; run warden inside a repository, pass -C DIR, or review a patch with --diff FILE",
            dir.display()
        ))
    })
}

/// The nearest directory at or above `dir` holding `.git` (else `dir`): the path git's
/// safe.directory wants.
fn repo_top(dir: &Path) -> PathBuf {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&dir)
        .to_path_buf()
}

/// The selected diff plus where its new side can be read from.
pub struct Selection<'r> {
    /// The changed files.
    pub diff: DiffSet,
    /// The new side of each file, for context and scan caps.
    pub content: GitContent<'r>,
}

/// Reads new-side content from the working tree or from blobs, as the target implies.
pub struct GitContent<'r> {
    repo: &'r Repository,
    workdir: Option<PathBuf>,
    blobs: HashMap<RepoPath, Oid>,
    /// Each file's base version, by its (new) path.
    old_blobs: HashMap<RepoPath, Oid>,
    /// The tree the change is compared against.
    base_tree: Option<Oid>,
}

impl GitContent<'_> {
    /// A blob's bytes when it is at most [`MAX_BASE_BYTES`] (its size read from the
    /// header first).
    fn small_blob(&self, oid: Oid) -> Option<Vec<u8>> {
        let (size, kind) = self.repo.odb().ok()?.read_header(oid).ok()?;
        if kind != git2::ObjectType::Blob || size as u64 > MAX_BASE_BYTES {
            return None;
        }
        Some(self.repo.find_blob(oid).ok()?.content().to_vec())
    }
}

impl ContentSource for GitContent<'_> {
    fn new_side(&self, file: &FileChange) -> Option<Vec<u8>> {
        if file.status == ChangeStatus::Deleted || file.submodule {
            return None;
        }
        if let Some(root) = &self.workdir {
            let path = root.join(file.path.to_path());
            let meta = std::fs::symlink_metadata(&path).ok()?;
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).ok()?;
                return Some(target.to_string_lossy().into_owned().into_bytes());
            }
            return std::fs::read(&path).ok();
        }
        let oid = self.blobs.get(&file.path)?;
        let blob = self.repo.find_blob(*oid).ok()?;
        Some(blob.content().to_vec())
    }

    fn new_side_size(&self, file: &FileChange) -> Option<u64> {
        if file.status == ChangeStatus::Deleted || file.submodule {
            return None;
        }
        if let Some(root) = &self.workdir {
            let meta = std::fs::symlink_metadata(root.join(file.path.to_path())).ok()?;
            return Some(meta.len());
        }
        let oid = self.blobs.get(&file.path)?;
        let (size, _) = self.repo.odb().ok()?.read_header(*oid).ok()?;
        Some(size as u64)
    }

    fn old_side(&self, file: &FileChange) -> Option<Vec<u8>> {
        self.small_blob(*self.old_blobs.get(&file.path)?)
    }

    fn base_file(&self, path: &str) -> Option<Vec<u8>> {
        let tree = self.repo.find_tree(self.base_tree?).ok()?;
        let entry = tree.get_path(Path::new(path)).ok()?;
        self.small_blob(entry.id())
    }
}

/// A selected diff: the diff, its description, the working tree it reads (if any) and
/// the base tree.
type Selected<'r> = (git2::Diff<'r>, String, Option<PathBuf>, Option<Oid>);

/// Files git's diff leaves unread when not told otherwise: libgit2's own default.
const UNCAPPED: u64 = 512 * 1024 * 1024;

/// Resolves `target` (not [`Target::Patch`]) in `repo` and reads the diff.
pub fn select<'r>(
    repo: &'r Repository,
    target: &Target,
    default_branch: Option<&str>,
) -> Result<Selection<'r>> {
    select_capped(repo, target, default_branch, UNCAPPED)
}

/// [`select`], with files over `max_file_bytes` (on either side) left unread by the diff:
/// libgit2 takes their size from the file's metadata or the object's header and marks
/// them binary without loading them, and scan names them too large from
/// [`ContentSource::new_side_size`]. A 200 MB file costs its size check.
pub fn select_capped<'r>(
    repo: &'r Repository,
    target: &Target,
    default_branch: Option<&str>,
    max_file_bytes: u64,
) -> Result<Selection<'r>> {
    let mut opts = DiffOptions::new();
    opts.max_size(i64::try_from(max_file_bytes).unwrap_or(i64::MAX))
        .context_lines(3)
        .include_typechange(true)
        .ignore_submodules(false);
    let (diff, description, workdir, base_tree) = match target {
        Target::Patch(_) => unreachable!("patch targets are read by diff::patch_text"),
        Target::Staged => {
            let head = head_tree(repo)?;
            let base = head.as_ref().map(|t| t.id());
            let index = repo
                .index()
                .map_err(|e| Error::git("cannot read the index", e))?;
            let diff = repo
                .diff_tree_to_index(head.as_ref(), Some(&index), Some(&mut opts))
                .map_err(|e| Error::git("cannot diff the index against HEAD", e))?;
            (diff, "staged changes vs HEAD".to_string(), None, base)
        }
        Target::Ref(spec) => {
            let tree = commit(repo, spec)?
                .tree()
                .map_err(|e| Error::git(spec, e))?;
            let workdir = workdir(repo)?;
            with_untracked(&mut opts);
            let diff = repo
                .diff_tree_to_workdir_with_index(Some(&tree), Some(&mut opts))
                .map_err(|e| Error::git("cannot diff the working tree", e))?;
            let base = Some(tree.id());
            (diff, format!("working tree vs {spec}"), Some(workdir), base)
        }
        Target::Range {
            base,
            head,
            symmetric,
        } => {
            let (base_commit, head_commit) = range(repo, base, head, *symmetric)?;
            let diff = tree_diff(repo, &base_commit, &head_commit, &mut opts)?;
            let dots = if *symmetric { "..." } else { ".." };
            let tree = base_commit.tree_id();
            (diff, format!("{base}{dots}{head}"), None, Some(tree))
        }
        Target::Default => match default_target(repo, default_branch, &mut opts)? {
            Some(selected) => selected,
            // `git init` and nothing committed yet: nothing to review.
            None => {
                return Ok(Selection {
                    diff: DiffSet {
                        files: Vec::new(),
                        description: "empty repository (no commits yet)".into(),
                    },
                    content: GitContent {
                        repo,
                        workdir: None,
                        blobs: HashMap::new(),
                        old_blobs: HashMap::new(),
                        base_tree: None,
                    },
                });
            }
        },
    };
    let (files, blobs, old_blobs) = convert(diff)?;
    Ok(Selection {
        diff: DiffSet { files, description },
        content: GitContent {
            repo,
            workdir,
            blobs,
            old_blobs,
            base_tree,
        },
    })
}

/// The default target ([`super::default_pick`]): on a branch, the branch vs its
/// merge-base with the default branch, uncommitted changes included; on the default
/// branch, the uncommitted changes vs HEAD. None: no commits and nothing uncommitted.
fn default_target<'r>(
    repo: &'r Repository,
    default_branch: Option<&str>,
    opts: &mut DiffOptions,
) -> Result<Option<Selected<'r>>> {
    let pick = super::default_pick::pick(repo, default_branch)?;
    let description = pick.describe();
    let base_tree = match &pick {
        DefaultPick::Unborn { dirty: false } => return Ok(None),
        DefaultPick::Unborn { dirty: true } => None,
        DefaultPick::Uncommitted { head, .. } => Some(head_tree_of(head)?),
        DefaultPick::Branch { base, .. } => Some(head_tree_of(base)?),
    };
    let workdir = workdir(repo)?;
    with_untracked(opts);
    let diff = repo
        .diff_tree_to_workdir_with_index(base_tree.as_ref(), Some(opts))
        .map_err(|e| Error::git("cannot diff the working tree", e))?;
    let base = base_tree.as_ref().map(|t| t.id());
    Ok(Some((diff, description, Some(workdir), base)))
}

fn head_tree_of<'r>(c: &git2::Commit<'r>) -> Result<git2::Tree<'r>> {
    c.tree().map_err(|e| Error::git("cannot read tree", e))
}

/// The commits a range compares: `base` (or, `symmetric`, the merge-base of `base` and
/// `head`) and `head`.
pub(crate) fn range<'r>(
    repo: &'r Repository,
    base: &str,
    head: &str,
    symmetric: bool,
) -> Result<(git2::Commit<'r>, git2::Commit<'r>)> {
    let head_commit = commit(repo, head)?;
    let base_commit = commit(repo, base)?;
    if !symmetric {
        return Ok((base_commit, head_commit));
    }
    let mb = repo
        .merge_base(base_commit.id(), head_commit.id())
        .map_err(|_| no_merge_base(repo, base, head))?;
    let mb = repo.find_commit(mb).map_err(|e| Error::git(base, e))?;
    Ok((mb, head_commit))
}

fn with_untracked(opts: &mut DiffOptions) {
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true);
}

fn tree_diff<'r>(
    repo: &'r Repository,
    old: &git2::Commit,
    new: &git2::Commit,
    opts: &mut DiffOptions,
) -> Result<Diff<'r>> {
    let old_tree = old.tree().map_err(|e| Error::git("cannot read tree", e))?;
    let new_tree = new.tree().map_err(|e| Error::git("cannot read tree", e))?;
    repo.diff_tree_to_tree(Some(&old_tree), Some(&new_tree), Some(opts))
        .map_err(|e| Error::git("cannot diff the trees", e))
}

fn workdir(repo: &Repository) -> Result<PathBuf> {
    repo.workdir().map(Path::to_path_buf).ok_or_else(|| {
        Error::Git(
            "this is a bare repository with no working tree: pass a range such as main..topic"
                .into(),
        )
    })
}

fn head_tree(repo: &Repository) -> Result<Option<git2::Tree<'_>>> {
    match repo.head() {
        Ok(head) => Ok(Some(
            head.peel_to_tree()
                .map_err(|e| Error::git("cannot read HEAD's tree", e))?,
        )),
        Err(e)
            if e.code() == git2::ErrorCode::UnbornBranch
                || e.code() == git2::ErrorCode::NotFound =>
        {
            Ok(None)
        }
        Err(e) => Err(Error::git("cannot read HEAD", e)),
    }
}

fn mode_of(file: &git2::DiffFile) -> Option<u32> {
    match u32::from(file.mode()) {
        0 => None,
        m => Some(m),
    }
}

/// Blob ids by (new) path.
type Blobs = HashMap<RepoPath, Oid>;

/// The diff's files, their new blobs and their base blobs.
fn convert(mut diff: Diff) -> Result<(Vec<FileChange>, Blobs, Blobs)> {
    let mut find = DiffFindOptions::new();
    // Renames, as `git diff` finds them by default; copy detection stays off (git's
    // default too) so a copied file is reviewed whole, not as a diff against its source.
    find.renames(true).for_untracked(true);
    diff.find_similar(Some(&mut find))
        .map_err(|e| Error::git("rename detection failed", e))?;
    let mut files = Vec::with_capacity(diff.deltas().len());
    let mut blobs = HashMap::new();
    let mut old_blobs = HashMap::new();
    for idx in 0..diff.deltas().len() {
        let patch =
            Patch::from_diff(&diff, idx).map_err(|e| Error::git("cannot read a file's diff", e))?;
        let delta = diff.get_delta(idx).expect("index within deltas");
        let status = match delta.status() {
            Delta::Added | Delta::Untracked => ChangeStatus::Added,
            Delta::Deleted => ChangeStatus::Deleted,
            Delta::Renamed => ChangeStatus::Renamed,
            Delta::Copied => ChangeStatus::Copied,
            Delta::Typechange => ChangeStatus::TypeChange,
            _ => ChangeStatus::Modified,
        };
        let new_path = delta.new_file().path_bytes().map(RepoPath::from_bytes);
        let old_path = delta.old_file().path_bytes().map(RepoPath::from_bytes);
        let path = match status {
            ChangeStatus::Deleted => old_path.clone().or(new_path.clone()),
            _ => new_path.clone().or(old_path.clone()),
        }
        .expect("git deltas always have a path");
        let old_mode = mode_of(&delta.old_file());
        let new_mode = mode_of(&delta.new_file());
        let submodule = old_mode == Some(0o160000) || new_mode == Some(0o160000);
        let binary = match &patch {
            Some(p) => p.delta().flags().is_binary(),
            None => delta.flags().is_binary(),
        } && !submodule;
        let mut hunks = Vec::new();
        if let Some(p) = &patch
            && !binary
        {
            for h in 0..p.num_hunks() {
                hunks.push(read_hunk(p, h)?);
            }
        }
        if !delta.new_file().id().is_zero() {
            blobs.insert(path.clone(), delta.new_file().id());
        }
        if !delta.old_file().id().is_zero() && status != ChangeStatus::Added {
            old_blobs.insert(path.clone(), delta.old_file().id());
        }
        files.push(FileChange {
            old_path: match status {
                ChangeStatus::Renamed | ChangeStatus::Copied => old_path.filter(|p| *p != path),
                _ => None,
            },
            path,
            status,
            binary,
            submodule,
            old_mode,
            new_mode,
            hunks,
        });
    }
    Ok((files, blobs, old_blobs))
}

fn read_hunk(patch: &Patch, h: usize) -> Result<Hunk> {
    let (hunk, count) = patch
        .hunk(h)
        .map_err(|e| Error::git("cannot read a hunk", e))?;
    let mut lines = Vec::with_capacity(count);
    for l in 0..count {
        let line = patch
            .line_in_hunk(h, l)
            .map_err(|e| Error::git("cannot read a diff line", e))?;
        let kind = match line.origin() {
            ' ' => LineKind::Context,
            '+' => LineKind::Added,
            '-' => LineKind::Removed,
            // '=', '>', '<': "no newline at end of file" markers, not lines.
            _ => continue,
        };
        let raw = line.content();
        let raw = raw.strip_suffix(b"\n").unwrap_or(raw);
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        lines.push(Line {
            kind,
            old_no: line.old_lineno(),
            new_no: line.new_lineno(),
            text: String::from_utf8_lossy(raw).into_owned(),
        });
    }
    Ok(Hunk {
        old_start: hunk.old_start(),
        old_lines: hunk.old_lines(),
        new_start: hunk.new_start(),
        new_lines: hunk.new_lines(),
        lines,
    })
}
