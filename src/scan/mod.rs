//! The scan policy: decides, for every file of the diff, whether it is worth a model's
//! time. Each file ends up kept (with a score) or skipped with a reason; nothing
//! disappears. Caps are applied after sorting by score, so they drop the least relevant.

pub(crate) mod builtin;
pub(crate) mod generated;

pub(crate) mod priority;

use crate::config::{ChunkMode, ScanLimits, Settings};
use crate::diff::content::ContentSource;
use crate::diff::{ChangeStatus, FileChange, LineKind, RepoPath};
use crate::path_rules::{PathRules, Verdict};
use crate::skills::ActiveSkill;
pub use priority::Score;
use serde::{Deserialize, Serialize};

/// A file the policy keeps, with what the chunker needs.
pub struct Kept<'d> {
    /// The file.
    pub file: &'d FileChange,
    /// Its relevance score and the reasons for it.
    pub score: Score,
    /// How it is chunked.
    pub mode: ChunkMode,
    /// The new side split into lines, when it could be read.
    pub content: Option<Vec<String>>,
    /// Indices into the active skills that review this file.
    pub skills: Vec<usize>,
}

/// A file the policy skips, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    /// The file.
    pub path: RepoPath,
    /// Machine-readable: `binary`, `builtin:lockfile`, `limit:maxFiles`, ...
    pub reason: String,
    /// For people: what matched or what was exceeded.
    pub detail: String,
    /// The rule that skipped it: the pattern that matched (`built-in *.min.js`,
    /// `ignorePaths vendor/`, `base .gitignore build/`), the marker and where it was found,
    /// or the limit (`maxFiles 50`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rule: String,
    /// Its added lines (accounted as skipped).
    pub added: usize,
    /// Its removed lines (accounted as skipped).
    pub removed: usize,
    /// How it changed (a creation, a rename, a mode change of a skipped file is visible).
    /// None only in reports written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ChangeStatus>,
    /// Where a renamed or copied file came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<RepoPath>,
    /// Its mode before, in octal as git writes it (`100644`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_mode: Option<String>,
    /// Its mode after, in octal (`100755`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_mode: Option<String>,
}

impl Skipped {
    /// `file`, skipped for `reason`: what it was, how it changed and why it is left out.
    pub fn of(file: &FileChange, reason: String, detail: String, rule: String) -> Skipped {
        let octal = |m: Option<u32>| m.map(|m| format!("{m:06o}"));
        Skipped {
            path: file.path.clone(),
            reason,
            detail,
            rule,
            added: file.added(),
            removed: file.removed(),
            status: Some(file.status),
            old_path: file.old_path.clone(),
            old_mode: octal(file.old_mode),
            new_mode: octal(file.new_mode),
        }
    }
}

/// The scan's verdict on every file of the diff: kept or skipped, never both, never neither.
pub struct Scan<'d> {
    /// Sorted by score, highest first.
    pub kept: Vec<Kept<'d>>,
    /// Skipped files, with reasons.
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
    let base = Base {
        content,
        gitignore: std::cell::OnceCell::new(),
    };
    for file in files {
        match decide(file, &base, settings, skills) {
            Ok(k) => kept.push(k),
            Err(skip) => {
                skipped.push(Skipped::of(file, skip.reason, skip.detail, skip.rule));
            }
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

type Decision<'d> = Result<Kept<'d>, Skip>;

/// Why a file is skipped: the reason code, a sentence for people, and the rule.
struct Skip {
    reason: String,
    detail: String,
    rule: String,
}

/// A skip whose rule is its reason (binary, deleted, no-skill, ...).
fn skip(reason: &str, detail: String) -> Skip {
    skip_by(reason, detail, reason.to_string())
}

fn skip_by(reason: &str, detail: String, rule: String) -> Skip {
    Skip {
        reason: reason.to_string(),
        detail,
        rule,
    }
}

/// The content of the change and what its base says (docs/design.md §14: only the base can
/// exempt a file).
struct Base<'c> {
    content: &'c dyn ContentSource,
    /// The base's top `.gitignore`, read when a build-root name below the top needs it.
    gitignore: std::cell::OnceCell<PathRules>,
}

impl Base<'_> {
    fn gitignore(&self) -> &PathRules {
        self.gitignore.get_or_init(|| {
            let text = self
                .content
                .base_file(".gitignore")
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            gitignore_rules(&text)
        })
    }
}

/// A `.gitignore`'s patterns as path rules; a line globset cannot read is left out (git
/// reads what it can too).
fn gitignore_rules(text: &str) -> PathRules {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .take(MAX_GITIGNORE_LINES)
        .collect();
    PathRules::new(&lines).unwrap_or_else(|_| {
        let valid: Vec<&str> = lines
            .into_iter()
            .filter(|l| PathRules::new(&[*l]).is_ok())
            .collect();
        PathRules::new(&valid).unwrap_or_else(|_| PathRules::empty())
    })
}

/// The base `.gitignore` lines read for build roots.
const MAX_GITIGNORE_LINES: usize = 10_000;

fn decide<'d>(
    file: &'d FileChange,
    base: &Base,
    settings: &Settings,
    skills: &[ActiveSkill],
) -> Decision<'d> {
    let content = base.content;
    // Known before any content is read (docs/design.md §13): a file over maxFileBytes is
    // skipped on its size, and one git's diff left unread for its size is too large
    // rather than binary.
    let size = content.new_side_size(file);
    let max = settings.scan.max_file_bytes;
    let oversized = size.filter(|s| *s > max);
    if let Some((reason, detail)) = nothing_to_review(file)
        && !(reason == "binary" && oversized.is_some())
    {
        return Err(skip(reason, detail));
    }
    if is_init_output(file) {
        return Err(skip(
            "warden-init",
            "the warden.toml `warden init` wrote, unedited: warden's own text, nothing of this change to review (edited, it is reviewed like any file)".into(),
        ));
    }
    let path = file.path.to_path();
    ignored(file, &path, settings, base)?;
    let mode = chunk_mode(&path, settings)?;
    let applicable: Vec<usize> = skills
        .iter()
        .enumerate()
        .filter(|(_, s)| s.applies_to(&path))
        .map(|(i, _)| i)
        .collect();
    if applicable.is_empty() {
        return Err(skip(
            "no-skill",
            "no selected skill's paths/ignorePaths admit this file".into(),
        ));
    }
    if let Some(size) = oversized {
        let detail = format!("{size} bytes > maxFileBytes {max} (size checked; not read)");
        return Err(skip_by(
            "too-large:bytes",
            detail,
            format!("maxFileBytes {max}"),
        ));
    }
    let bytes = content.new_side(file);
    if let Some((reason, detail, rule)) = too_large(file, bytes.as_deref(), &settings.scan) {
        return Err(skip_by(reason, detail, rule));
    }
    let lines: Option<Vec<String>> = bytes.as_ref().map(|b| split_content(b));
    if let Some((m, where_)) = generated_marker(file, lines.as_deref(), content) {
        return Err(skip_by(
            "generated",
            format!(
                "generated-file marker `{m}` near the top of the file, in its base version too"
            ),
            format!("marker `{m}` in the change and in {where_}"),
        ));
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

/// A new `warden.toml` at the top whose every line is what `warden init` writes: the
/// first review after `init` does not review the starter it just wrote. Only that exact
/// text is passed over; one edited line and the file is reviewed.
fn is_init_output(file: &FileChange) -> bool {
    if file.status != ChangeStatus::Added
        || file.path.as_bytes() != crate::config::FILE_NAME.as_bytes()
    {
        return false;
    }
    let mut lines = Vec::new();
    for hunk in &file.hunks {
        for line in &hunk.lines {
            if line.kind != LineKind::Added {
                return false;
            }
            lines.push(line.text.as_str());
        }
    }
    crate::config::is_init_output(&lines)
}

/// `ignorePaths` (a `!` pattern re-includes), then the built-in ignores: artifacts
/// anywhere, build roots at the top, and build-root folders below the top that the base's
/// `.gitignore` names (a folder the change names `build` exempts nothing by its name).
fn ignored(
    file: &FileChange,
    path: &std::path::Path,
    settings: &Settings,
    base: &Base,
) -> Result<(), Skip> {
    let builtin = |category: &str, rule: String| {
        Err(skip_by(
            &format!("builtin:{category}"),
            format!(
                "built-in ignore ({category}); re-include with `!{}` in ignorePaths",
                file.path
            ),
            rule,
        ))
    };
    match settings.ignore.verdict(path) {
        Verdict::Matched(p) => Err(skip_by(
            "ignored",
            format!("matches ignorePaths pattern `{p}`"),
            format!("ignorePaths `{p}`"),
        )),
        Verdict::Negated(_) => Ok(()),
        Verdict::None => {
            if let Some(r) = builtin::rule(path) {
                return builtin(r.category, format!("built-in `{}`", r.pattern));
            }
            if builtin::build_root_below_top(path).is_some()
                && let Verdict::Matched(p) = base.gitignore().verdict(path)
            {
                return builtin("build-output", format!("base .gitignore `{p}`"));
            }
            Ok(())
        }
    }
}

/// The first `filePatterns` entry that matches decides the mode (`skip` skips the file).
fn chunk_mode(path: &std::path::Path, settings: &Settings) -> Result<ChunkMode, Skip> {
    let chunking = &settings.chunking;
    let Some(fp) = chunking
        .file_patterns
        .iter()
        .find(|fp| matches!(fp.rules.verdict(path), Verdict::Matched(_)))
    else {
        return Ok(chunking.default_mode);
    };
    if fp.mode == ChunkMode::Skip {
        return Err(skip_by(
            "chunking:skip",
            format!("chunking.filePatterns `{}` has mode skip", fp.pattern),
            format!("chunking.filePatterns `{}`", fp.pattern),
        ));
    }
    Ok(fp.mode)
}

/// A generated-file marker near the top that exempts the file (docs/design.md §14): one in the
/// new side (else, patch input, in what the patch shows of it) that the base version has
/// too. A marker the change writes into a file whose base has none, or into a new file,
/// exempts nothing. The base is the old blob; for patch input it is what the patch shows
/// of the old side near the top (context and removed lines): a marker only on added lines
/// never exempts. Returns the marker and where the base's was found.
fn generated_marker(
    file: &FileChange,
    lines: Option<&[String]>,
    content: &dyn ContentSource,
) -> Option<(&'static str, &'static str)> {
    let shown = |side: fn(&crate::diff::Line) -> Option<u32>, kinds: &[LineKind]| {
        generated::marker(
            file.hunks
                .iter()
                .flat_map(|h| &h.lines)
                .filter(move |l| {
                    kinds.contains(&l.kind)
                        && side(l).is_some_and(|n| n as usize <= generated::HEAD_LINES)
                })
                .map(|l| l.text.as_str()),
        )
    };
    let new = |l: &crate::diff::Line| l.new_no;
    let old = |l: &crate::diff::Line| l.old_no;
    let marker = match lines {
        Some(l) => generated::marker(l.iter().map(String::as_str)),
        None => shown(new, &[LineKind::Added, LineKind::Context]),
    }?;
    if file.status == ChangeStatus::Added {
        return None;
    }
    if let Some(b) = content.old_side(file) {
        let text = split_content(&b);
        return generated::marker(text.iter().map(String::as_str))
            .map(|_| (marker, "the base version"));
    }
    shown(old, &[LineKind::Removed, LineKind::Context]).map(|_| (marker, "the patch's old side"))
}

/// Files with nothing a model can review: submodule pointers, deletions, symlinks (the
/// link text is a path, not code), binary content, and changes without changed lines.
fn nothing_to_review(file: &FileChange) -> Option<(&'static str, String)> {
    if file.submodule {
        return Some(("submodule", "submodule pointer changed".into()));
    }
    if file.status == ChangeStatus::Deleted {
        let detail = format!("file deleted ({} lines removed)", file.removed());
        return Some(("deleted", detail));
    }
    if file.new_mode == Some(SYMLINK_MODE) {
        let detail = "symbolic link: its content is a path, not code".to_string();
        return Some(("symlink", detail));
    }
    if file.binary {
        return Some(("binary", "binary content".into()));
    }
    if file.changed() > 0 {
        return None;
    }
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
        _ if !file.hunks.is_empty() => "hunks without added or removed lines".to_string(),
        (None, false) if file.status == ChangeStatus::Added => "empty new file".to_string(),
        (None, false) => "no textual change".to_string(),
    };
    Some(("no-content-change", detail))
}

const SYMLINK_MODE: u32 = 0o120000;

/// `maxFileBytes` and `maxFileLines`, on the new side when it can be read, else (patch
/// input) on what the diff shows of it: its new lines' bytes and its last line number.
fn too_large(
    file: &FileChange,
    bytes: Option<&[u8]>,
    limits: &ScanLimits,
) -> Option<(&'static str, String, String)> {
    let new_lines = || {
        file.hunks
            .iter()
            .flat_map(|h| &h.lines)
            .filter(|l| l.new_no.is_some())
    };
    let (size, size_note) = match bytes {
        Some(b) => (b.len() as u64, ""),
        None => (
            new_lines().map(|l| l.text.len() as u64 + 1).sum::<u64>(),
            "at least ",
        ),
    };
    if size > limits.max_file_bytes {
        let detail = format!(
            "{size_note}{size} bytes > maxFileBytes {}",
            limits.max_file_bytes
        );
        let rule = format!("maxFileBytes {}", limits.max_file_bytes);
        return Some(("too-large:bytes", detail, rule));
    }
    let line_count = match bytes {
        Some(b) => line_count(b),
        None => new_lines().filter_map(|l| l.new_no).max().unwrap_or(0) as usize,
    };
    if line_count > limits.max_file_lines {
        let detail = format!(
            "{size_note}{line_count} lines > maxFileLines {}",
            limits.max_file_lines
        );
        let rule = format!("maxFileLines {}", limits.max_file_lines);
        return Some(("too-large:lines", detail, rule));
    }
    None
}

/// Lines as [`split_content`] counts them: a final line without a terminator counts.
fn line_count(bytes: &[u8]) -> usize {
    let breaks = bytes.iter().filter(|b| **b == b'\n').count();
    breaks + usize::from(bytes.last().is_some_and(|b| *b != b'\n'))
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

/// `maxFiles` and `maxChangedLines`, in relevance order: a file that does not fit is
/// skipped and the rest keep filling, so a smaller, less relevant file still gets in.
fn apply_caps<'d>(kept: Vec<Kept<'d>>, mut skipped: Vec<Skipped>, settings: &Settings) -> Scan<'d> {
    let limits = &settings.scan;
    let mut out = Vec::new();
    let mut lines = 0usize;
    for k in kept {
        let changed = k.file.changed();
        let total = lines.saturating_add(changed);
        let reason = if out.len() >= limits.max_files {
            Some((
                "limit:maxFiles",
                format!("maxFiles {}", limits.max_files),
                format!(
                    "{} more relevant files are already planned; maxFiles is {}",
                    out.len(),
                    limits.max_files
                ),
            ))
        } else if total > limits.max_changed_lines {
            Some((
                "limit:maxChangedLines",
                format!("maxChangedLines {}", limits.max_changed_lines),
                format!(
                    "{changed} changed lines would make {total}, over maxChangedLines {} ({lines} already planned from more relevant files)",
                    limits.max_changed_lines
                ),
            ))
        } else {
            None
        };
        match reason {
            Some((r, rule, detail)) => {
                skipped.push(Skipped::of(k.file, r.to_string(), detail, rule));
            }
            None => {
                lines = total;
                out.push(k);
            }
        }
    }
    Scan { kept: out, skipped }
}
