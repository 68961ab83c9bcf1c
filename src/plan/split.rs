//! A unit too large for a model's context window is split in two (docs/design.md §14, "Current
//! models"): its chunk is cut between two diff lines nearest the middle of its bytes (at
//! the end of a run of changes when there is one, so a hunk or a removal/addition pair
//! stays whole), each half keeps the real new-file numbers of its lines, and each gets
//! its own prompt built exactly as the plan builds one. The engine asks for the halves
//! only when a context-length 400 or a route's `contextWindow` says the prompt cannot
//! fit; it never sees a chunk, only [`Splittable::halves`].
//!
//! Recursion is bounded twice: a half holds at least one changed line, and a unit is cut
//! at most [`MAX_DEPTH`] times deep (at most 2^MAX_DEPTH parts).

use super::{Plan, Unit, context_files};
use crate::chunk::{Chunk, ChunkLine, ChunkLineKind};
use crate::diff::{ChangeStatus, RepoPath};
use crate::prompt::{self, FileFacts, Prompt};
use crate::skills::Skill;
use std::sync::Arc;

/// How many times one unit may be halved, halves of halves included.
pub const MAX_DEPTH: u32 = 6;

/// The file facts a prompt names, owned (a half's prompt is built long after the plan).
#[derive(Debug)]
struct FileOwned {
    path: RepoPath,
    old_path: Option<RepoPath>,
    status: ChangeStatus,
    other_files: Vec<String>,
    guidance: String,
}

/// What a unit needs to be split: its skills, its file's facts and its chunk.
#[derive(Debug, Clone)]
pub struct Splittable {
    skills: Arc<Vec<Skill>>,
    file: Arc<FileOwned>,
    chunk: Chunk,
    depth: u32,
}

/// One half of a split unit: its prompt, its new-file lines, and how to split it again.
#[derive(Debug, Clone)]
pub struct Half {
    /// The prompt of the half (the same system message, the half's lines).
    pub prompt: Prompt,
    /// New-file lines the half's diff lines cover (its findings fall inside).
    pub lines: (u32, u32),
    /// The half, to split again (it says no past [`MAX_DEPTH`]).
    pub rest: Option<Splittable>,
}

impl Plan {
    /// What the engine needs to split `unit` when its prompt does not fit a window:
    /// `skills` are the unit's (the same the plan built its prompt with).
    pub fn splittable(
        &self,
        unit: &Unit,
        skills: Arc<Vec<Skill>>,
        max_context_files: usize,
    ) -> Splittable {
        let file = &self.files[unit.file];
        Splittable {
            skills,
            file: Arc::new(FileOwned {
                path: file.path.clone(),
                old_path: file.old_path.clone(),
                status: file.status,
                other_files: context_files(&self.files, unit.file, max_context_files),
                guidance: file.guidance_text.clone(),
            }),
            chunk: file.chunks[unit.chunk].clone(),
            depth: 0,
        }
    }
}

impl Splittable {
    /// The two halves, or None when the chunk cannot be cut (fewer than two changed
    /// lines, or split [`MAX_DEPTH`] times already).
    pub fn halves(&self) -> Option<[Half; 2]> {
        if self.depth >= MAX_DEPTH {
            return None;
        }
        let (a, b) = halves(&self.chunk)?;
        Some([self.half(a), self.half(b)])
    }

    /// How many times this unit was halved to get here.
    pub fn depth(&self) -> u32 {
        self.depth
    }

    fn half(&self, chunk: Chunk) -> Half {
        let skills: Vec<&Skill> = self.skills.iter().collect();
        let f = &self.file;
        let facts = FileFacts {
            path: &f.path,
            old_path: f.old_path.as_ref(),
            status: f.status,
            other_files: &f.other_files,
            guidance: &f.guidance,
        };
        let prompt = prompt::build(&skills, &facts, &chunk);
        let lines = (chunk.start_line, chunk.end_line);
        let depth = self.depth + 1;
        Half {
            prompt,
            lines,
            rest: Some(Splittable {
                skills: self.skills.clone(),
                file: self.file.clone(),
                chunk,
                depth,
            }),
        }
    }
}

fn changed(l: &ChunkLine) -> bool {
    matches!(l.kind, ChunkLineKind::Added | ChunkLineKind::Removed)
}

/// Cuts `chunk` in two between two of its diff lines, each side holding a changed line:
/// the cut nearest half the bytes, preferring one after a run of changes ends. Context
/// around the diff lines is halved too (the lines nearest the diff kept), so every cut
/// makes both prompts smaller.
pub fn halves(chunk: &Chunk) -> Option<(Chunk, Chunk)> {
    let lines = &chunk.lines;
    let first = lines.iter().position(changed)?;
    let last = lines.iter().rposition(changed)?;
    if first == last {
        return None;
    }
    // Valid cuts: `at` in first+1..=last keeps a changed line on each side.
    let bytes: Vec<usize> = lines.iter().map(|l| l.text.len() + 9).collect();
    let total: usize = bytes.iter().sum();
    let mut before = 0usize;
    let mut best: Option<(bool, usize, usize)> = None; // (mid-run, distance, at)
    for (at, b) in bytes.iter().enumerate().take(last + 1) {
        if at > first {
            let mid_run = changed(&lines[at - 1]) && changed(&lines[at]);
            let distance = before.abs_diff(total - before);
            if best.is_none_or(|(m, d, _)| (mid_run, distance) < (m, d)) {
                best = Some((mid_run, distance, at));
            }
        }
        before += b;
    }
    let (_, _, at) = best?;
    let keep = |ctx: &[(u32, String)], nearest_last: bool| -> Vec<(u32, String)> {
        let n = ctx.len() / 2;
        if nearest_last {
            ctx[ctx.len() - n..].to_vec()
        } else {
            ctx[..n].to_vec()
        }
    };
    let a = piece(
        lines[..at].to_vec(),
        keep(&chunk.context_before, true),
        Vec::new(),
        chunk.start_line,
    );
    let b = piece(
        lines[at..].to_vec(),
        Vec::new(),
        keep(&chunk.context_after, false),
        a.end_line,
    );
    Some((a, b))
}

/// A chunk of these lines: its range from the new-file numbers it holds (a side of
/// removals only takes the line before it, where the model is told to report them).
fn piece(
    lines: Vec<ChunkLine>,
    context_before: Vec<(u32, String)>,
    context_after: Vec<(u32, String)>,
    fallback: u32,
) -> Chunk {
    let start_line = lines.iter().find_map(|l| l.new_no).unwrap_or(fallback);
    let end_line = lines
        .iter()
        .rev()
        .find_map(|l| l.new_no)
        .unwrap_or(start_line)
        .max(start_line);
    let count = |k: ChunkLineKind| lines.iter().filter(|l| l.kind == k).count();
    let runs = lines
        .iter()
        .enumerate()
        .filter(|(i, l)| changed(l) && (*i == 0 || !changed(&lines[i - 1])))
        .count();
    Chunk {
        start_line,
        end_line,
        added: count(ChunkLineKind::Added),
        removed: count(ChunkLineKind::Removed),
        hunks: runs.max(1),
        split: true,
        lines,
        context_before,
        context_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: ChunkLineKind, n: u32, text: &str) -> ChunkLine {
        ChunkLine {
            kind,
            old_no: None,
            new_no: (kind != ChunkLineKind::Removed).then_some(n),
            text: text.into(),
        }
    }

    /// Hunks of three added lines at 10, 20, ..., with two context lines between them.
    fn chunk(hunks: u32) -> Chunk {
        let mut lines = Vec::new();
        for h in 0..hunks {
            let at = 10 * (h + 1);
            for i in 0..3 {
                lines.push(line(ChunkLineKind::Added, at + i, "let x = 1;"));
            }
            if h + 1 < hunks {
                lines.push(line(ChunkLineKind::Context, at + 3, ""));
            }
        }
        let ctx = |from: u32| (from..from + 4).map(|n| (n, format!("c{n}"))).collect();
        Chunk {
            start_line: 10,
            end_line: 10 * hunks + 2,
            added: 3 * hunks as usize,
            removed: 0,
            hunks: hunks as usize,
            split: false,
            lines,
            context_before: ctx(6),
            context_after: ctx(10 * hunks + 3),
        }
    }

    #[test]
    fn a_chunk_is_cut_between_hunks_near_its_middle_keeping_line_numbers() {
        let (a, b) = halves(&chunk(4)).unwrap();
        assert_eq!((a.start_line, a.end_line), (10, 22));
        assert_eq!((b.start_line, b.end_line), (23, 42));
        assert_eq!(a.added + b.added, 12);
        assert!(a.split && b.split);
        assert_eq!((a.hunks, b.hunks), (2, 2));
        // The cut fell after a run of changes, never inside one.
        assert_eq!(b.lines[0].kind, ChunkLineKind::Context);
        // Context halved, nearest lines kept.
        assert_eq!(a.context_before, vec![(8, "c8".into()), (9, "c9".into())]);
        assert!(a.context_after.is_empty() && b.context_before.is_empty());
        assert_eq!(b.context_after.first().unwrap().0, 43);
    }

    #[test]
    fn one_changed_line_cannot_be_cut_and_a_run_of_changes_can() {
        let mut one = chunk(1);
        one.lines.truncate(1);
        assert!(halves(&one).is_none());
        let (a, b) = halves(&chunk(1)).unwrap();
        assert_eq!((a.lines.len(), b.lines.len()), (1, 2));
        assert_eq!((b.start_line, b.end_line), (11, 12));
    }

    #[test]
    fn removals_only_take_the_line_before_them() {
        let c = Chunk {
            lines: vec![
                line(ChunkLineKind::Added, 5, "a"),
                line(ChunkLineKind::Context, 6, ""),
                line(ChunkLineKind::Removed, 0, "gone"),
            ],
            ..chunk(1)
        };
        let (a, b) = halves(&c).unwrap();
        assert_eq!((a.start_line, a.end_line), (5, 6));
        assert_eq!((b.start_line, b.end_line, b.removed), (6, 6, 1));
    }
}
