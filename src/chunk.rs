//! Cuts a file's hunks into reviewable chunks: hunks larger than `maxChunkSize` are split
//! at a natural break (blank line, start of a block), neighbouring hunks within
//! `maxGapLines` are coalesced while the result fits, and context lines from the new side
//! of the file are attached. Every changed line of the file lands in exactly one chunk.

use crate::config::{ChunkMode, Chunking};
use crate::diff::{FileChange, Line, LineKind};
use serde::Serialize;

/// What a chunk line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkLineKind {
    /// Unchanged.
    Context,
    /// Added on the new side.
    Added,
    /// Removed from the old side.
    Removed,
    /// Unchanged lines between two coalesced hunks that could not be read (patch input).
    Elided,
}

/// One line of a chunk as the model sees it.
#[derive(Debug, Clone)]
pub struct ChunkLine {
    /// What it is.
    pub kind: ChunkLineKind,
    /// Its old-side number, if it has one.
    pub old_no: Option<u32>,
    /// Its new-side number, if it has one.
    pub new_no: Option<u32>,
    /// For `Elided`: a note such as "12 unchanged lines".
    pub text: String,
}

/// A reviewable piece of one file: one or more (coalesced or split) hunks with context.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Chunk {
    /// New-file lines the diff lines of this chunk cover (findings must fall inside).
    pub start_line: u32,
    /// Last new-file line the chunk's diff lines cover.
    pub end_line: u32,
    /// Added lines in it.
    pub added: usize,
    /// Removed lines in it.
    pub removed: usize,
    /// How many hunks (or hunk pieces) were coalesced into it.
    pub hunks: usize,
    /// Part of a hunk that was split at `maxChunkSize`.
    pub split: bool,
    /// Its diff lines (and elided gaps), in order.
    #[serde(skip)]
    pub lines: Vec<ChunkLine>,
    /// New-side lines before the first diff line (number, text).
    #[serde(skip)]
    pub context_before: Vec<(u32, String)>,
    /// New-side lines after the last diff line.
    #[serde(skip)]
    pub context_after: Vec<(u32, String)>,
}

impl Chunk {
    /// Only removals: optional work, shed first.
    pub fn deletion_only(&self) -> bool {
        self.added == 0 && self.removed > 0
    }

    /// Bytes of the rendered chunk (diff lines and context), the measure of the size cap
    /// (`maxChunkSize`; bytes are never fewer than characters, so the cap holds for both).
    pub fn rendered_bytes(&self) -> usize {
        self.lines
            .iter()
            .map(|l| l.text.len() + LINE_OVERHEAD)
            .sum::<usize>()
            + self
                .context_before
                .iter()
                .chain(&self.context_after)
                .map(|(_, t)| t.len() + LINE_OVERHEAD)
                .sum::<usize>()
    }
}

/// Per-line overhead of the rendered form (`  123 + `).
const LINE_OVERHEAD: usize = 9;

fn size(lines: &[Line]) -> usize {
    lines.iter().map(|l| l.text.len() + LINE_OVERHEAD).sum()
}

/// A run of hunk lines that will go into one chunk whole.
struct Piece {
    lines: Vec<Line>,
    split: bool,
    /// First and last new-file positions the piece touches.
    start: u32,
    end: u32,
}

impl Piece {
    fn new(lines: Vec<Line>, split: bool, fallback_start: u32) -> Self {
        let mut nums = lines.iter().filter_map(|l| l.new_no);
        let start = nums.next().unwrap_or(fallback_start.max(1));
        let end = lines
            .iter()
            .filter_map(|l| l.new_no)
            .next_back()
            .unwrap_or(start);
        Piece {
            lines,
            split,
            start,
            end,
        }
    }

    fn has_changes(&self) -> bool {
        self.lines.iter().any(|l| l.kind != LineKind::Context)
    }
}

/// Chunks one file. `content` is its new side split into lines, when it can be read.
pub fn chunk_file(
    file: &FileChange,
    content: Option<&[String]>,
    mode: ChunkMode,
    cfg: &Chunking,
) -> Vec<Chunk> {
    let max = cfg.max_chunk_size;
    let mut pieces: Vec<Piece> = Vec::new();
    for hunk in &file.hunks {
        let lines: Vec<Line> = hunk.lines.iter().map(|l| clip_line(l, max)).collect();
        if mode == ChunkMode::WholeFile || size(&lines) <= max {
            pieces.push(Piece::new(lines, false, hunk.new_start));
        } else {
            for part in split_lines(&lines, max) {
                pieces.push(Piece::new(part, true, hunk.new_start));
            }
        }
    }
    pieces.retain(Piece::has_changes);

    let mut groups: Vec<Vec<Piece>> = Vec::new();
    for piece in pieces {
        let merge = match groups.last() {
            None => false,
            Some(_) if mode == ChunkMode::WholeFile => true,
            Some(_) if !cfg.coalesce => false,
            Some(group) => {
                let last = group.last().expect("groups are never empty");
                let gap = piece.start.saturating_sub(last.end.saturating_add(1));
                let group_size: usize = group.iter().map(|p| size(&p.lines)).sum();
                gap <= cfg.max_gap_lines
                    && group_size + gap as usize * (LINE_OVERHEAD + 40) + size(&piece.lines) <= max
            }
        };
        if merge {
            groups.last_mut().expect("checked").push(piece);
        } else {
            groups.push(vec![piece]);
        }
    }

    groups
        .into_iter()
        .map(|group| build_chunk(group, content, mode, cfg.context_lines, max))
        .collect()
}

fn build_chunk(
    group: Vec<Piece>,
    content: Option<&[String]>,
    mode: ChunkMode,
    context: u32,
    max: usize,
) -> Chunk {
    let hunks = group.len();
    let split = group.iter().any(|p| p.split);
    let start_line = group.first().map_or(1, |p| p.start);
    let end_line = group.iter().map(|p| p.end).max().unwrap_or(start_line);
    let lines = chunk_lines(group, content, max);
    let count = |k: ChunkLineKind| lines.iter().filter(|l| l.kind == k).count();
    let (added, removed) = (count(ChunkLineKind::Added), count(ChunkLineKind::Removed));
    let first_new = lines.iter().find_map(|l| l.new_no).unwrap_or(start_line);
    let last_new = lines
        .iter()
        .rev()
        .find_map(|l| l.new_no)
        .unwrap_or(first_new.saturating_sub(1));
    let (mut before, mut after) = (Vec::new(), Vec::new());
    if let Some(c) = content {
        let total = c.len() as u32;
        let (lo, hi) = if mode == ChunkMode::WholeFile {
            (1, total)
        } else {
            (
                first_new.saturating_sub(context).max(1),
                last_new.saturating_add(context).min(total),
            )
        };
        let line = |n: u32| content_line(c, n, max).map(|t| (n, t));
        before.extend((lo..first_new).filter_map(line));
        after.extend((last_new.saturating_add(1)..=hi).filter_map(line));
    }
    Chunk {
        start_line,
        end_line,
        added,
        removed,
        hunks,
        split,
        lines,
        context_before: before,
        context_after: after,
    }
}

/// The pieces' lines in order, with the unchanged lines between two pieces filled in
/// from the new side (or one elision marker when the content is unknown).
fn chunk_lines(group: Vec<Piece>, content: Option<&[String]>, max: usize) -> Vec<ChunkLine> {
    let mut lines: Vec<ChunkLine> = Vec::new();
    let mut prev_end: Option<u32> = None;
    for piece in group {
        if let Some(prev) = prev_end
            && piece.start > prev.saturating_add(1)
        {
            gap(&mut lines, prev + 1, piece.start - 1, content, max);
        }
        prev_end = Some(prev_end.map_or(piece.end, |p| p.max(piece.end)));
        lines.extend(piece.lines.into_iter().map(|l| ChunkLine {
            kind: match l.kind {
                LineKind::Context => ChunkLineKind::Context,
                LineKind::Added => ChunkLineKind::Added,
                LineKind::Removed => ChunkLineKind::Removed,
            },
            old_no: l.old_no,
            new_no: l.new_no,
            text: l.text,
        }));
    }
    lines
}

/// New-side lines `from..=to` between two coalesced pieces.
fn gap(lines: &mut Vec<ChunkLine>, from: u32, to: u32, content: Option<&[String]>, max: usize) {
    match content {
        Some(c) => lines.extend((from..=to).map(|n| ChunkLine {
            kind: ChunkLineKind::Context,
            old_no: None,
            new_no: Some(n),
            text: content_line(c, n, max).unwrap_or_default(),
        })),
        None => lines.push(ChunkLine {
            kind: ChunkLineKind::Elided,
            old_no: None,
            new_no: None,
            text: format!("{} unchanged lines", to - from + 1),
        }),
    }
}

/// Line `n` (1-based) of the new side, cut to fit a chunk; None past its end.
fn content_line(content: &[String], n: u32, max: usize) -> Option<String> {
    let text = content.get((n as usize).checked_sub(1)?)?;
    Some(clip(text, max).into_owned())
}

/// Room kept for the cut marker: "… [18446744073709551615 more characters cut]".
const MARKER_ROOM: usize = 48;

/// A line that would not fit a chunk of `max` characters on its own is cut, with a marker
/// saying how much was left out, so no line is ever sent whole past `maxChunkSize`
/// (a minified bundle or a data blob in a diff).
fn clip(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() + LINE_OVERHEAD <= max {
        return text.into();
    }
    let mut keep = max.saturating_sub(LINE_OVERHEAD + MARKER_ROOM);
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    let left = text[keep..].chars().count();
    format!("{}… [{left} more characters cut]", &text[..keep]).into()
}

fn clip_line(line: &Line, max: usize) -> Line {
    Line {
        kind: line.kind,
        old_no: line.old_no,
        new_no: line.new_no,
        text: clip(&line.text, max).into_owned(),
    }
}

/// Splits hunk lines into parts of at most `max` characters, preferring to cut after a
/// blank line or before a line that starts a block, in the second half of a part.
fn split_lines(lines: &[Line], max: usize) -> Vec<Vec<Line>> {
    let mut parts = Vec::new();
    let mut cur: Vec<Line> = Vec::new();
    let mut cur_size = 0;
    for line in lines {
        let l = line.text.len() + LINE_OVERHEAD;
        if cur_size + l > max && !cur.is_empty() {
            let at = best_break(&cur);
            let rest = cur.split_off(at);
            parts.push(std::mem::replace(&mut cur, rest));
            cur_size = size(&cur);
            if cur_size + l > max && !cur.is_empty() {
                parts.push(std::mem::take(&mut cur));
                cur_size = 0;
            }
        }
        cur_size += l;
        cur.push(line.clone());
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    parts
}

fn best_break(cur: &[Line]) -> usize {
    let half = cur.len() / 2;
    if half == 0 {
        return cur.len();
    }
    for i in (half..cur.len()).rev() {
        if cur[i - 1].text.trim().is_empty() && cur[i - 1].kind != LineKind::Removed {
            return i;
        }
    }
    for i in (half..cur.len()).rev() {
        if starts_block(&cur[i].text) {
            return i;
        }
    }
    cur.len()
}

fn starts_block(text: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "fn ",
        "pub ",
        "def ",
        "func ",
        "class ",
        "function ",
        "impl ",
        "async ",
        "export ",
        "interface ",
        "struct ",
        "enum ",
        "module ",
        "trait ",
        "type ",
        "#[",
        "@",
        "describe(",
        "it(",
        "test(",
    ];
    let trimmed = text.trim_start();
    if KEYWORDS.iter().any(|k| trimmed.starts_with(k)) {
        return true;
    }
    let unindented = !text.starts_with([' ', '\t']);
    unindented
        && trimmed
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{ChangeStatus, Hunk, RepoPath};

    fn added_hunk(start: u32, texts: &[String]) -> Hunk {
        Hunk {
            old_start: start,
            old_lines: 0,
            new_start: start,
            new_lines: texts.len() as u32,
            lines: texts
                .iter()
                .enumerate()
                .map(|(i, t)| Line {
                    kind: LineKind::Added,
                    old_no: None,
                    new_no: Some(start + i as u32),
                    text: t.clone(),
                })
                .collect(),
        }
    }

    fn file(hunks: Vec<Hunk>) -> FileChange {
        FileChange {
            path: RepoPath::from("a.rs"),
            old_path: None,
            status: ChangeStatus::Modified,
            binary: false,
            submodule: false,
            old_mode: None,
            new_mode: None,
            hunks,
        }
    }

    #[test]
    fn coalesces_near_hunks_and_fills_the_gap_from_content() {
        let content: Vec<String> = (1..=100).map(|i| format!("line {i}")).collect();
        let f = file(vec![
            added_hunk(10, &content[9..11]),
            added_hunk(30, &content[29..30]),
            added_hunk(90, &content[89..90]),
        ]);
        let chunks = chunk_file(&f, Some(&content), ChunkMode::PerHunk, &Chunking::default());
        assert_eq!(chunks.len(), 2);
        assert_eq!(
            (chunks[0].start_line, chunks[0].end_line, chunks[0].hunks),
            (10, 30, 2)
        );
        assert_eq!(chunks[0].lines.len(), 21);
        assert_eq!(chunks[0].context_before.first().unwrap().0, 1);
        assert_eq!(chunks[0].context_after.len(), 20);
        assert_eq!(chunks[1].context_after.len(), 10);
    }

    #[test]
    fn splits_a_big_hunk_at_a_blank_line_without_losing_lines() {
        let mut texts = Vec::new();
        for f in 0..40 {
            texts.push(format!("fn f{f}() {{"));
            for i in 0..10 {
                texts.push(format!("    let v{i} = compute({i}, {f});"));
            }
            texts.push("}".into());
            texts.push(String::new());
        }
        let f = file(vec![added_hunk(1, &texts)]);
        let cfg = Chunking::default();
        let chunks = chunk_file(&f, None, ChunkMode::PerHunk, &cfg);
        assert!(chunks.len() > 1);
        assert_eq!(chunks.iter().map(|c| c.added).sum::<usize>(), texts.len());
        for c in &chunks {
            assert!(
                c.rendered_bytes() <= cfg.max_chunk_size,
                "{}",
                c.rendered_bytes()
            );
            assert!(c.split);
            let first = &c.lines[0].text;
            assert!(
                first.starts_with("fn ") || first.is_empty(),
                "cut at {first:?}"
            );
        }
    }
}
