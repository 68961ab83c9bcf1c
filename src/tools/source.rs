//! Where tools read from: the reviewed head. In CI and for ranges that is the head
//! commit's tree through git2 (`git_source.rs`), so the model reads exactly what is
//! reviewed; locally it is the working tree (here). Both follow links only inside the
//! tree, and both say where a link led so the guard can judge the target too.

use std::path::{Path, PathBuf};

/// Why a source gave no bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Miss {
    /// Nothing at that path (or a link that leads nowhere inside the tree).
    Absent,
    /// A link that leaves the tree.
    Outside,
    /// A folder, not a file.
    Folder,
    /// Bigger than the read cap: its size.
    TooBig(u64),
    /// The operating system's or git's error, in words.
    Failed(String),
}

/// A file read: the path it resolved to (links followed) and its bytes.
#[derive(Debug, Clone)]
pub(crate) struct Read {
    pub(crate) resolved: String,
    pub(crate) bytes: Vec<u8>,
}

/// A read-only tree of files, by `/`-separated path relative to its top.
pub(crate) trait TreeSource: Send + Sync {
    /// Reads `path` (a checked path) when it is a file of at most `cap` bytes.
    fn read(&self, path: &str, cap: u64) -> Result<Read, Miss>;
    /// Visits every file's path in a stable order until `visit` returns false or
    /// `max_entries` entries were walked; whether the walk was cut.
    fn walk(&self, max_entries: usize, visit: &mut dyn FnMut(&str) -> bool) -> bool;
    /// What the model is reading, for tool results ("the head commit 1a2b3c4").
    fn describe(&self) -> String;
}

/// The working tree at `root`, with links followed only while they stay inside it.
pub(crate) struct WorkingTree {
    root: PathBuf,
    repo: Option<std::sync::Mutex<git2::Repository>>,
}

impl WorkingTree {
    /// The folder at `root` (canonicalized); git's ignore rules apply to walks when it is
    /// a repository's work tree.
    pub(crate) fn new(root: &Path) -> std::io::Result<Self> {
        let root = root.canonicalize()?;
        let repo = git2::Repository::open(&root)
            .ok()
            .map(std::sync::Mutex::new);
        Ok(WorkingTree { root, repo })
    }

    fn ignored(&self, rel: &str) -> bool {
        let Some(repo) = &self.repo else {
            return false;
        };
        let repo = repo.lock().expect("repository lock");
        repo.is_path_ignored(rel).unwrap_or(false)
    }
}

impl TreeSource for WorkingTree {
    fn read(&self, path: &str, cap: u64) -> Result<Read, Miss> {
        let full = self.root.join(path);
        if full.symlink_metadata().is_err() {
            return Err(Miss::Absent);
        }
        let Ok(target) = full.canonicalize() else {
            return Err(Miss::Absent);
        };
        let Ok(rel) = target.strip_prefix(&self.root) else {
            return Err(Miss::Outside);
        };
        if target.is_dir() {
            return Err(Miss::Folder);
        }
        let resolved = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        match crate::capped_read::read(&target, cap) {
            Ok(bytes) => Ok(Read { resolved, bytes }),
            Err(crate::capped_read::Refused::Over(n)) => Err(Miss::TooBig(n)),
            Err(crate::capped_read::Refused::Io(e)) => Err(Miss::Failed(e.to_string())),
        }
    }

    fn walk(&self, max_entries: usize, visit: &mut dyn FnMut(&str) -> bool) -> bool {
        let mut stack: Vec<String> = vec![String::new()];
        let mut seen = 0usize;
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(self.root.join(&dir)) else {
                continue;
            };
            let mut names: Vec<(String, bool)> = entries
                .filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    // Links are not walked into: a folder link could lead anywhere.
                    let kind = e.file_type().ok()?;
                    Some((name, kind.is_dir()))
                })
                .collect();
            names.sort();
            let mut subdirs = Vec::new();
            for (name, is_dir) in names {
                seen += 1;
                if seen > max_entries {
                    return true;
                }
                if name == ".git" {
                    continue;
                }
                let rel = if dir.is_empty() {
                    name
                } else {
                    format!("{dir}/{name}")
                };
                if self.ignored(&rel) {
                    continue;
                }
                if is_dir {
                    subdirs.push(rel);
                } else if !visit(&rel) {
                    return false;
                }
            }
            stack.extend(subdirs.into_iter().rev());
        }
        false
    }

    fn describe(&self) -> String {
        "the working tree".into()
    }
}
