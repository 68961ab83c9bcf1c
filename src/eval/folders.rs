//! warden's own case folders: a folder holding `case.json` (schemas/eval-case-v1.schema.json)
//! is one case; a folder of such folders is a corpus, its cases in name order. A case
//! reviews a patch (no repository needed) or a range of a repository, and lists the
//! findings a good review reports (`expected`; none: a clean case).

use super::case::{self, Case, Corpus, Reference, Shape};
use crate::diff::Target;
use crate::diff::target::PatchSource;
use crate::error::{Error, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The file that makes a folder a case.
pub const CASE_FILE: &str = "case.json";
const MAX_CASE_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CaseFile {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    patch: Option<String>,
    #[serde(default)]
    repo: Option<String>,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    base: Option<String>,
    #[serde(default)]
    head: Option<String>,
    #[serde(default)]
    expected: Vec<Expected>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Expected {
    path: String,
    start_line: u32,
    #[serde(default)]
    end_line: Option<u32>,
    #[serde(default)]
    text: String,
}

/// The case at `dir` (it holds `case.json`) or the cases of its sub-folders. `run_dir`
/// is where patch cases run (the evaluation's directory: its config and skills).
pub fn load(dir: &Path, run_dir: &Path) -> Result<Corpus> {
    let mut folders: Vec<PathBuf> = if dir.join(CASE_FILE).is_file() {
        vec![dir.to_path_buf()]
    } else {
        std::fs::read_dir(dir)
            .map_err(|e| Error::Usage(format!("{}: cannot read the folder ({e})", dir.display())))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join(CASE_FILE).is_file())
            .collect()
    };
    folders.sort();
    if folders.is_empty() {
        return Err(Error::Usage(format!(
            "{}: no {CASE_FILE} in it or in its folders: a case folder holds {CASE_FILE} (see schemas/eval-case-v1.schema.json)",
            dir.display()
        )));
    }
    let cases = folders
        .iter()
        .map(|f| one(f, run_dir))
        .collect::<Result<Vec<_>>>()?;
    let mut seen = std::collections::BTreeSet::new();
    for c in &cases {
        if !seen.insert(c.id.clone()) {
            return Err(Error::Usage(format!(
                "{}: case id {:?} is used twice in {}: give each case its own id",
                c.origin,
                c.id,
                dir.display()
            )));
        }
    }
    Ok(Corpus {
        source: dir.display().to_string(),
        shape: Shape::Folders,
        cases,
        left_out: BTreeMap::new(),
    })
}

fn one(folder: &Path, run_dir: &Path) -> Result<Case> {
    let file = folder.join(CASE_FILE);
    let origin = file.display().to_string();
    let bytes = crate::capped_read::read(&file, MAX_CASE_BYTES)
        .map_err(|_| Error::Usage(format!("{origin}: cannot read it (at most 4 MiB)")))?;
    let raw: CaseFile = serde_json::from_slice(&bytes).map_err(|e| {
        Error::Usage(format!(
            "{origin}:{}:{}: {e} (see schemas/eval-case-v1.schema.json)",
            e.line(),
            e.column()
        ))
    })?;
    let _ = raw.description;
    let id = raw.id.clone().unwrap_or_else(|| {
        folder
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| origin.clone())
    });
    let (dir, target) = target_of(&raw, folder, run_dir, &origin)?;
    let references = raw
        .expected
        .into_iter()
        .map(|e| {
            let end_line = e.end_line.unwrap_or(e.start_line);
            let r = Reference {
                path: e.path,
                start_line: e.start_line,
                end_line,
                text: e.text,
            };
            case::checked(r, &origin)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Case {
        id,
        origin,
        dir,
        target,
        references,
    })
}

/// A patch (relative to the folder) reviewed from `run_dir`, or a range of a repository
/// (relative to the folder) whose commits must exist.
fn target_of(
    raw: &CaseFile,
    folder: &Path,
    run_dir: &Path,
    origin: &str,
) -> Result<(PathBuf, Target)> {
    match (&raw.patch, &raw.repo) {
        (Some(patch), None) => {
            let path = folder.join(patch);
            if !path.is_file() {
                return Err(Error::Usage(format!(
                    "{origin}: patch {} does not exist",
                    path.display()
                )));
            }
            let path = path.canonicalize().map_err(|e| Error::io(&path, e))?;
            Ok((
                run_dir.to_path_buf(),
                Target::Patch(PatchSource::File(path)),
            ))
        }
        (None, Some(repo)) => {
            let dir = folder.join(repo);
            let clone = case::open_clone(&dir, origin)?;
            let target = match (&raw.target, &raw.base, &raw.head) {
                (Some(t), None, None) => {
                    Target::from_args(Some(t), None, None, false, None, false)?
                }
                (None, Some(b), h) => {
                    Target::from_args(None, Some(b), h.as_deref(), false, None, false)?
                }
                _ => {
                    return Err(Error::Usage(format!(
                        "{origin}: a repository case names its change with \"target\" (A..B) or \"base\" (and \"head\")"
                    )));
                }
            };
            if let Target::Range { base, head, .. } = &target {
                case::commit_in(&clone, &dir, base, origin)?;
                case::commit_in(&clone, &dir, head, origin)?;
            }
            Ok((dir, target))
        }
        _ => Err(Error::Usage(format!(
            "{origin}: a case reviews either a \"patch\" or a \"repo\" range: give exactly one"
        ))),
    }
}
