//! The scan policy: decides, for every file of the diff, whether it is worth a model's
//! time. Each file ends up kept (with a score) or skipped with a reason; nothing
//! disappears. Caps are applied after sorting by score, so they drop the least relevant.

pub(crate) mod builtin;
pub(crate) mod generated;
pub mod path_rules;
pub(crate) mod priority;

use crate::config::{ChunkMode, Settings};
use crate::diff::content::ContentSource;
use crate::diff::{ChangeStatus, FileChange, LineKind, RepoPath};
use crate::skills::ActiveSkill;
use path_rules::Verdict;
pub use priority::Score;
use serde::Serialize;

/// A file the policy keeps, with what the chunker needs.
pub struct Kept<'d> {
    pub file: &'d FileChange,
    pub score: Score,
    pub mode: ChunkMode,
    /// The new side split into lines, when it could be read.
    pub content: Option<Vec<String>>,
    /// Indices into the active skills that review this file.
    pub skills: Vec<usize>,
}

/// A file the policy skips, and why.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    pub path: RepoPath,
    /// Machine-readable: `binary`, `builtin:lockfile`, `limit:maxFiles`, ...
    pub reason: String,
    /// For people: what matched or what was exceeded.
    pub detail: String,
    pub added: usize,
    pub removed: usize,
}

pub struct Scan<'d> {
    /// Sorted by score, highest first.
    pub kept: Vec<Kept<'d>>,
    pub skipped: Vec<Skipped>,
}

/// Applies the policy to every file of the diff.
pub fn scan<'d>(
    files: &'d [FileChange],
    content: &dyn ContentSource,
    settings: &Settings,
    skills: &[ActiveSkill],
) -> Scan<'d> {
    let mut kept = Vec::new();
    let mut skipped = Vec::new();
    for file in files {
        match decide(file, content, settings, skills) {
            Ok(k) => kept.push(k),
            Err((reason, detail)) => skipped.push(Skipped {
                path: file.path.clone(),
                reason,
                detail,
                added: file.added(),
                removed: file.removed(),
            }),
        }
    }
    kept.sort_by(|a, b| {
        b.score
            .value
            .cmp(&a.score.value)
            .then_with(|| a.file.path.cmp(&b.file.path))
    });
    apply_caps(kept, skipped, settings)
}

type Decision<'d> = Result<Kept<'d>, (String, String)>;

fn decide<'d>(
    file: &'d FileChange,
    content: &dyn ContentSource,
    settings: &Settings,
    skills: &[ActiveSkill],
) -> Decision<'d> {
    let skip = |reason: &str, detail: String| Err((reason.to_string(), detail));
    if file.submodule {
        return skip("submodule", "submodule pointer changed".into());
    }
    if file.status == ChangeStatus::Deleted {
        return skip(
            "deleted",
            format!("file deleted ({} lines removed)", file.removed()),
        );
    }
    if file.binary {
        return skip("binary", "binary content".into());
    }
    if file.hunks.is_empty() {
        let detail = match (&file.old_path, file.mode_changed()) {
            (Some(old), _) => format!(
                "{} from {old} without content changes",
                status_word(file.status)
            ),
            (None, true) => format!(
                "mode change {:o} -> {:o} only",
                file.old_mode.unwrap_or(0),
                file.new_mode.unwrap_or(0)
            ),
            (None, false) if file.status == ChangeStatus::Added => "empty new file".to_string(),
            (None, false) => "no textual change".to_string(),
        };
        return skip("no-content-change", detail);
    }
    let path = file.path.to_path();
    match settings.ignore.verdict(&path) {
        Verdict::Matched(p) => {
            return skip("ignored", format!("matches ignorePaths pattern `{p}`"));
        }
        Verdict::Negated(_) => {}
        Verdict::None => {
            if let Some(cat) = builtin::category(&path) {
                return skip(
                    &format!("builtin:{cat}"),
                    format!(
                        "built-in ignore ({cat}); re-include with `!{}` in ignorePaths",
                        file.path
                    ),
                );
            }
        }
    }
    let mut mode = ChunkMode::PerHunk;
    if let Some(fp) = settings
        .chunking
        .file_patterns
        .iter()
        .find(|fp| matches!(fp.rules.verdict(&path), Verdict::Matched(_)))
    {
        if fp.mode == ChunkMode::Skip {
            return skip(
                "chunking:skip",
                format!("chunking.filePatterns `{}` has mode skip", fp.pattern),
            );
        }
        mode = fp.mode;
    }
    let applicable: Vec<usize> = skills
        .iter()
        .enumerate()
        .filter(|(_, s)| s.applies_to(&path))
        .map(|(i, _)| i)
        .collect();
    if applicable.is_empty() {
        return skip(
            "no-skill",
            "no selected skill's paths/ignorePaths admit this file".into(),
        );
    }

    let bytes = content.new_side(file);
    let lines: Option<Vec<String>> = bytes.as_ref().map(|b| split_content(b));
    let limits = &settings.scan;
    if let Some(b) = &bytes
        && b.len() as u64 > limits.max_file_bytes
    {
        return skip(
            "too-large:bytes",
            format!("{} bytes > maxFileBytes {}", b.len(), limits.max_file_bytes),
        );
    }
    let line_count = match &lines {
        Some(l) => l.len(),
        None => file
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter_map(|l| l.new_no)
            .max()
            .unwrap_or(0) as usize,
    };
    if line_count > limits.max_file_lines {
        return skip(
            "too-large:lines",
            format!(
                "{line_count} lines > maxFileLines {}",
                limits.max_file_lines
            ),
        );
    }
    let marker = match &lines {
        Some(l) => generated::marker(l.iter().map(String::as_str)),
        None => generated::marker(
            file.hunks
                .iter()
                .flat_map(|h| &h.lines)
                .filter(|l| {
                    l.kind == LineKind::Added
                        && l.new_no
                            .is_some_and(|n| n as usize <= generated::HEAD_LINES)
                })
                .map(|l| l.text.as_str()),
        ),
    };
    if let Some(m) = marker {
        return skip(
            "generated",
            format!("generated-file marker `{m}` near the top of the file"),
        );
    }
    let hit = skills.iter().any(|s| s.paths_hit(&path));
    Ok(Kept {
        file,
        score: priority::score(file, hit),
        mode,
        content: lines,
        skills: applicable,
    })
}

fn status_word(s: ChangeStatus) -> &'static str {
    match s {
        ChangeStatus::Copied => "copied",
        _ => "renamed",
    }
}

/// Splits file bytes into lines without terminators (LF or CRLF), lossily decoded.
fn split_content(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    text.lines().map(str::to_string).collect()
}

fn apply_caps<'d>(kept: Vec<Kept<'d>>, mut skipped: Vec<Skipped>, settings: &Settings) -> Scan<'d> {
    let limits = &settings.scan;
    let mut out = Vec::new();
    let mut lines = 0usize;
    let mut full = false;
    for (rank, k) in kept.into_iter().enumerate() {
        let changed = k.file.changed();
        let reason = if rank >= limits.max_files {
            Some((
                "limit:maxFiles",
                format!(
                    "ranked {} of the kept files by relevance; maxFiles is {}",
                    rank + 1,
                    limits.max_files
                ),
            ))
        } else if full || lines + changed > limits.max_changed_lines {
            full = true;
            Some((
                "limit:maxChangedLines",
                format!(
                    "{changed} changed lines would pass maxChangedLines {} ({lines} already planned from more relevant files)",
                    limits.max_changed_lines
                ),
            ))
        } else {
            None
        };
        match reason {
            Some((r, detail)) => skipped.push(Skipped {
                path: k.file.path.clone(),
                reason: r.to_string(),
                detail,
                added: k.file.added(),
                removed: k.file.removed(),
            }),
            None => {
                lines += changed;
                out.push(k);
            }
        }
    }
    Scan { kept: out, skipped }
}
