//! The new-file text around a finding, taken from the chunk that was reviewed, so that
//! reports can show the code (SARIF `region.snippet` and `contextRegion`) without
//! reading the working tree again.

use crate::chunk::{Chunk, ChunkLineKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Lines shown before and after a finding's own lines.
const AROUND: u32 = 2;
/// A longer line is cut (minified code must not blow up a report).
const LINE_CHARS: usize = 400;
/// Lines of context kept at most (a finding over a whole chunk keeps its first lines).
const MAX_LINES: u32 = 40;

/// Consecutive new-file lines `start_line..=end_line` of the reviewed file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SourceContext {
    /// First new-file line shown.
    pub start_line: u32,
    /// Last new-file line shown.
    pub end_line: u32,
    /// The lines, each ending in `\n`.
    pub text: String,
}

impl SourceContext {
    /// Lines `start..=end` of this context (those it has), e.g. a finding's own lines.
    pub fn lines(&self, start: u32, end: u32) -> Option<String> {
        if start < self.start_line || start > self.end_line {
            return None;
        }
        let skip = (start - self.start_line) as usize;
        let take = (end.min(self.end_line) - start + 1) as usize;
        Some(
            self.text
                .split_inclusive('\n')
                .skip(skip)
                .take(take)
                .collect(),
        )
    }
}

fn cut(line: &str) -> String {
    if line.chars().count() <= LINE_CHARS {
        return line.to_string();
    }
    let mut s: String = line.chars().take(LINE_CHARS).collect();
    s.push('…');
    s
}

/// The finding's lines `start..=end` with up to two lines either side, as far as the chunk
/// has them without a gap; None when the chunk does not hold line `start`.
pub(crate) fn context(chunk: &Chunk, start: u32, end: u32) -> Option<SourceContext> {
    let mut new_side: BTreeMap<u32, &str> = BTreeMap::new();
    for (n, t) in chunk.context_before.iter().chain(&chunk.context_after) {
        new_side.insert(*n, t);
    }
    for l in &chunk.lines {
        if matches!(l.kind, ChunkLineKind::Added | ChunkLineKind::Context)
            && let Some(n) = l.new_no
        {
            new_side.insert(n, &l.text);
        }
    }
    new_side.get(&start)?;
    let mut first = start;
    while first > start.saturating_sub(AROUND).max(1) && new_side.contains_key(&(first - 1)) {
        first -= 1;
    }
    let want_last = end
        .max(start)
        .saturating_add(AROUND)
        .min(first + MAX_LINES - 1);
    let mut last = start;
    while last < want_last && new_side.contains_key(&(last + 1)) {
        last += 1;
    }
    let text = (first..=last)
        .map(|n| format!("{}\n", cut(new_side[&n].trim_end_matches(['\r', '\n']))))
        .collect();
    Some(SourceContext {
        start_line: first,
        end_line: last,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::ChunkLine;

    fn chunk(lines: &[(u32, &str)]) -> Chunk {
        Chunk {
            start_line: lines[0].0,
            end_line: lines[lines.len() - 1].0,
            added: lines.len(),
            removed: 0,
            hunks: 1,
            split: false,
            lines: lines
                .iter()
                .map(|(n, t)| ChunkLine {
                    kind: ChunkLineKind::Added,
                    old_no: None,
                    new_no: Some(*n),
                    text: t.to_string(),
                })
                .collect(),
            context_before: vec![(lines[0].0 - 1, "before".into())],
            context_after: vec![],
        }
    }

    #[test]
    fn takes_two_lines_either_side_without_crossing_a_gap() {
        let c = chunk(&[(5, "a"), (6, "b"), (7, "c"), (9, "after gap")]);
        let ctx = context(&c, 6, 6).unwrap();
        assert_eq!((ctx.start_line, ctx.end_line), (4, 7));
        assert_eq!(ctx.text, "before\na\nb\nc\n");
        assert_eq!(ctx.lines(6, 6).unwrap(), "b\n");
        assert_eq!(ctx.lines(6, 99).unwrap(), "b\nc\n");
        assert_eq!(ctx.lines(2, 3), None);
        assert!(context(&c, 8, 8).is_none(), "line 8 is not in the chunk");
    }

    #[test]
    fn long_lines_are_cut() {
        let long = "x".repeat(5000);
        let c = chunk(&[(1, &long)]);
        let ctx = context(&c, 1, 1).unwrap();
        assert_eq!(ctx.text.chars().count(), LINE_CHARS + 2);
    }
}
