//! Files of a trusted commit, read with git2: `warden.toml` and skills as the base side of
//! a change has them. Symlinks are followed inside the commit's tree (as the working tree
//! would follow them), never out of it.

use crate::error::{Error, Result};
use crate::skills::{EntryKind, SkillFiles};
use git2::{ObjectType, Oid, Repository, Tree};
use std::collections::VecDeque;
use std::path::PathBuf;

/// How many symlinks one lookup may follow before it gives up (a loop).
pub(crate) const MAX_HOPS: usize = 8;

const MODE_TREE: i32 = 0o040000;
const MODE_LINK: i32 = 0o120000;
const MODE_COMMIT: i32 = 0o160000;

/// What a path names in a tree, after its links are followed.
pub(crate) enum Found {
    /// A folder.
    Dir(Oid),
    /// A file's blob.
    File(Oid),
}

/// One commit's tree, with paths that must read as absent (files a `--diff` patch changes,
/// whose committed copy cannot be told apart from the patched one).
pub(crate) struct CommitFiles<'r> {
    repo: &'r Repository,
    tree: Tree<'r>,
    /// Shown in messages: `1a2b3c4:path`.
    short: String,
    absent: Vec<String>,
}

impl<'r> CommitFiles<'r> {
    pub(crate) fn new(
        repo: &'r Repository,
        commit: &git2::Commit<'r>,
        absent: Vec<String>,
    ) -> Result<Self> {
        let tree = commit
            .tree()
            .map_err(|e| Error::git("cannot read the trusted commit's tree", e))?;
        let short = commit.id().to_string()[..7].to_string();
        Ok(CommitFiles {
            repo,
            tree,
            short,
            absent,
        })
    }

    /// `1a2b3c4:path`, git's name for a file in a commit.
    pub(crate) fn shown(&self, path: &str) -> PathBuf {
        PathBuf::from(format!("{}:{path}", self.short))
    }

    fn is_absent(&self, path: &str) -> bool {
        self.absent
            .iter()
            .any(|a| path == a || path.starts_with(&format!("{a}/")))
    }

    /// Looks `path` up, following symlinks within the tree.
    fn lookup(&self, path: &str) -> Option<Found> {
        resolve(self.repo, &self.tree, path, &|p| self.is_absent(p)).map(|(found, _)| found)
    }

    /// The size of `path`'s blob from the object database header, without reading the
    /// blob; None when absent.
    fn size(&self, path: &str) -> Result<Option<u64>> {
        let Some(Found::File(oid)) = self.lookup(path) else {
            return Ok(None);
        };
        let odb = self
            .repo
            .odb()
            .map_err(|e| Error::git("cannot open the object database", e))?;
        let (size, _) = odb
            .read_header(oid)
            .map_err(|e| Error::git(&format!("cannot read {}", self.shown(path).display()), e))?;
        Ok(Some(size as u64))
    }

    /// The bytes of `path` in the commit; None when absent.
    pub(crate) fn read_bytes(&self, path: &str) -> Result<Option<Vec<u8>>> {
        let Some(Found::File(oid)) = self.lookup(path) else {
            return Ok(None);
        };
        let blob = self
            .repo
            .find_blob(oid)
            .map_err(|e| Error::git(&format!("cannot read {}", self.shown(path).display()), e))?;
        Ok(Some(blob.content().to_vec()))
    }

    /// Parses the config text read from `path` in the commit; the files it names (a
    /// route's `caCert`) are read from the same commit.
    pub(crate) fn parse_config(&self, text: &str, path: &str) -> Result<crate::config::Settings> {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d).to_string();
        let read = |p: &str| self.read_bytes(p);
        let shown = |p: &str| self.shown(p);
        crate::config::parse_str_beside(
            text,
            &self.shown(path),
            &crate::config::Beside::Commit {
                dir,
                read: &read,
                shown: &shown,
            },
        )
    }

    /// The config file at `path` in the commit, as text; None when absent.
    pub(crate) fn read_config(&self, path: &str) -> Result<Option<String>> {
        if let Some(size) = self.size(path)?
            && size > crate::config::MAX_CONFIG_BYTES
        {
            return Err(Error::ConfigFile {
                path: self.shown(path),
                message: crate::config::config_too_big(size),
            });
        }
        self.read_bytes(path)?
            .map(|b| {
                String::from_utf8(b).map_err(|e| Error::ConfigFile {
                    path: self.shown(path),
                    message: format!(
                        "not UTF-8 text (invalid byte at offset {}): save the file as UTF-8",
                        e.utf8_error().valid_up_to()
                    ),
                })
            })
            .transpose()
    }
}

/// Looks `path` up in the tree `root`, following symlinks within it (never out of it: a
/// link whose target is absolute or climbs above the root finds nothing); `absent` names
/// paths that must read as missing. Also returns the path it resolved to, links
/// replaced by their targets, so that a caller can judge where a link led.
pub(crate) fn resolve<'r>(
    repo: &'r Repository,
    root: &Tree<'r>,
    path: &str,
    absent: &dyn Fn(&str) -> bool,
) -> Option<(Found, String)> {
    let mut rest: VecDeque<String> = split(path);
    let mut dirs: Vec<Tree<'r>> = vec![root.clone()];
    let mut names: Vec<String> = Vec::new();
    let mut hops = 0;
    while let Some(part) = rest.pop_front() {
        match part.as_str() {
            "." => continue,
            ".." => {
                names.pop()?;
                dirs.pop();
                continue;
            }
            _ => {}
        }
        let here = dirs.last().expect("the root stays");
        let entry = here.get_name(&part)?.to_owned();
        let mut walked = names.clone();
        walked.push(part.clone());
        let walked = walked.join("/");
        if absent(&walked) {
            return None;
        }
        match entry.filemode() {
            MODE_TREE => {
                dirs.push(repo.find_tree(entry.id()).ok()?);
                names.push(part);
            }
            MODE_LINK => {
                hops += 1;
                if hops > MAX_HOPS {
                    return None;
                }
                let blob = repo.find_blob(entry.id()).ok()?;
                let target = std::str::from_utf8(blob.content()).ok()?;
                if target.starts_with('/') {
                    return None;
                }
                for p in split(target).into_iter().rev() {
                    rest.push_front(p);
                }
            }
            MODE_COMMIT => return None,
            _ if entry.kind() == Some(ObjectType::Blob) => {
                return rest.is_empty().then(|| (Found::File(entry.id()), walked));
            }
            _ => return None,
        }
    }
    let dir = dirs.last().expect("the root stays").id();
    Some((Found::Dir(dir), names.join("/")))
}

fn split(path: &str) -> VecDeque<String> {
    path.split('/')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

impl SkillFiles for CommitFiles<'_> {
    fn list(&self, dir: &str) -> Result<Vec<(String, EntryKind)>> {
        let Some(Found::Dir(oid)) = self.lookup(dir) else {
            return Ok(Vec::new());
        };
        let tree = self
            .repo
            .find_tree(oid)
            .map_err(|e| Error::git(&format!("cannot read {}", self.shown(dir).display()), e))?;
        let mut out = Vec::new();
        for entry in tree.iter() {
            let Ok(name) = entry.name().map(str::to_string) else {
                continue;
            };
            let kind = match self.lookup(&format!("{dir}/{name}")) {
                Some(Found::Dir(_)) => EntryKind::Dir,
                Some(Found::File(_)) => EntryKind::File,
                None => continue,
            };
            out.push((name, kind));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    fn read(&self, path: &str) -> Result<Option<String>> {
        if let Some(size) = self.size(path)?
            && size > crate::skills::MAX_SKILL_BYTES
        {
            return Err(Error::Skill {
                path: self.shown(path),
                message: crate::skills::skill_too_big(size),
            });
        }
        self.read_bytes(path)?
            .map(|b| {
                String::from_utf8(b).map_err(|_| Error::Skill {
                    path: self.shown(path),
                    message: "not UTF-8 text: save the file as UTF-8".into(),
                })
            })
            .transpose()
    }
}
