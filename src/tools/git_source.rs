//! The head commit's tree as a tool source (CI and ranges): the model reads exactly the
//! files of the commit under review, never a working tree a CI step may have changed.
//! Links are followed inside the tree (`trust::tree::resolve`), never out of it.

use super::source::{Miss, Read, TreeSource};
use crate::trust::tree::{Found, resolve};
use git2::{Oid, Repository, TreeWalkMode, TreeWalkResult};
use std::path::Path;
use std::sync::Mutex;

/// One commit's tree. git2's repository is not `Sync`: calls take turns on it.
pub(crate) struct HeadTree {
    repo: Mutex<Repository>,
    tree: Oid,
    short: String,
}

impl HeadTree {
    /// The tree of `rev` (a commit-ish) in the repository at `dir`.
    pub(crate) fn open(dir: &Path, rev: &str) -> Result<Self, git2::Error> {
        let repo = Repository::open(dir)?;
        let commit = repo.revparse_single(rev)?.peel_to_commit()?;
        let tree = commit.tree_id();
        let short = commit.id().to_string()[..7].to_string();
        drop(commit);
        Ok(HeadTree {
            repo: Mutex::new(repo),
            tree,
            short,
        })
    }
}

impl HeadTree {
    /// Every file's path (normal and executable blobs; links and submodules are not
    /// listed), within `max_entries` tree entries; whether the walk was cut.
    fn paths(&self, max_entries: usize) -> (Vec<String>, bool) {
        let repo = self.repo.lock().expect("repository lock");
        let Ok(tree) = repo.find_tree(self.tree) else {
            return (Vec::new(), false);
        };
        let mut paths = Vec::new();
        let mut seen = 0usize;
        let mut cut = false;
        let _ = tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
            seen += 1;
            if seen > max_entries {
                cut = true;
                return TreeWalkResult::Abort;
            }
            if matches!(entry.filemode(), 0o100644 | 0o100755)
                && let Ok(name) = entry.name()
            {
                paths.push(format!("{dir}{name}"));
            }
            TreeWalkResult::Ok
        });
        (paths, cut)
    }
}

impl TreeSource for HeadTree {
    fn read(&self, path: &str, cap: u64) -> Result<Read, Miss> {
        let repo = self.repo.lock().expect("repository lock");
        let tree = repo
            .find_tree(self.tree)
            .map_err(|e| Miss::Failed(e.message().to_string()))?;
        let Some((found, resolved)) = resolve(&repo, &tree, path, &|_| false) else {
            return Err(Miss::Absent);
        };
        let oid = match found {
            Found::Dir(_) => return Err(Miss::Folder),
            Found::File(oid) => oid,
        };
        let odb = repo
            .odb()
            .map_err(|e| Miss::Failed(e.message().to_string()))?;
        let (size, _) = odb
            .read_header(oid)
            .map_err(|e| Miss::Failed(e.message().to_string()))?;
        if size as u64 > cap {
            return Err(Miss::TooBig(size as u64));
        }
        let blob = repo
            .find_blob(oid)
            .map_err(|e| Miss::Failed(e.message().to_string()))?;
        Ok(Read {
            resolved,
            bytes: blob.content().to_vec(),
        })
    }

    fn walk(&self, max_entries: usize, visit: &mut dyn FnMut(&str) -> bool) -> bool {
        // The paths first, then the visits: a visit reads files, which takes the lock.
        let (paths, cut) = self.paths(max_entries);
        for p in &paths {
            if !visit(p) {
                break;
            }
        }
        cut
    }

    fn describe(&self) -> String {
        format!("the head commit {}", self.short)
    }
}
