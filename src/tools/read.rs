//! `read_file {path, start_line?, end_line?}`: a file of the reviewed head as numbered
//! lines, cut at the per-call cap with a note saying where to go on.

use super::refusal::Refusal;
use super::source::Miss;
use super::{MAX_FILE_BYTES, Toolbox, fenced, guard, is_binary, line_arg, string_arg};
use crate::text::escape;
use serde_json::{Map, Value};
use std::fmt::Write;

/// Room kept in a result for its header, fence lines and the note on a cut.
const FRAME_BYTES: usize = 512;

pub(super) fn read_file(tb: &Toolbox, args: &Map<String, Value>) -> Result<String, Refusal> {
    let raw = string_arg(args, "path", true)?.unwrap_or_default();
    let start = line_arg(args, "start_line")?.unwrap_or(1);
    let end = line_arg(args, "end_line")?;
    if end.is_some_and(|e| e < start) {
        return Err(Refusal::Arguments(
            "`end_line` is before `start_line`".into(),
        ));
    }
    let path = guard::check(raw, &tb.deny)?;
    if path.is_empty() {
        return Err(Refusal::Path(
            "the top folder is not a file: use list_files to see the files".into(),
        ));
    }
    let shown = escape::inline(&path);
    let read = tb
        .source
        .read(&path, MAX_FILE_BYTES)
        .map_err(|m| Refusal::File(miss(&shown, m)))?;
    // A link inside the tree is judged by where it leads, too.
    guard::allowed(&read.resolved, &tb.deny)?;
    if is_binary(&read.bytes) {
        return Err(Refusal::File(format!(
            "`{shown}` is a binary file; it is not shown"
        )));
    }
    let text = String::from_utf8_lossy(&read.bytes);
    let total = text.lines().count() as u32;
    if start > total.max(1) {
        return Err(Refusal::File(format!(
            "`{shown}` has {total} lines; `start_line` {start} is past its end"
        )));
    }
    let budget = tb.call_bytes.saturating_sub(FRAME_BYTES);
    let mut body = String::new();
    let mut last = start.saturating_sub(1);
    for (i, line) in text.lines().enumerate().skip(start as usize - 1) {
        let n = i as u32 + 1;
        if end.is_some_and(|e| n > e) {
            break;
        }
        let row = format!("{n:>6}  {}\n", long_line(line));
        if body.len() + row.len() > budget {
            break;
        }
        body.push_str(&row);
        last = n;
    }
    let mut header = format!(
        "`{shown}` in {}: lines {start}-{last} of {total}",
        tb.source.describe()
    );
    let wanted_end = end.unwrap_or(total).min(total);
    if last < wanted_end {
        let _ = write!(
            header,
            " (cut at {} bytes; call read_file with start_line {} for more)",
            tb.call_bytes,
            last + 1
        );
    }
    Ok(fenced(&header, &body))
}

/// Why a path gave no file, in the model's terms.
pub(super) fn miss(shown: &str, m: Miss) -> String {
    match m {
        Miss::Absent => format!("`{shown}` does not exist in the reviewed tree"),
        Miss::Outside => {
            format!("`{shown}` is a link that leaves the repository: tools read only inside it")
        }
        Miss::Folder => format!("`{shown}` is a folder: use list_files with `{shown}/*`"),
        Miss::TooBig(n) => format!(
            "`{shown}` is {n} bytes, over the {MAX_FILE_BYTES}-byte file cap: it is not read; grep it for what you need"
        ),
        Miss::Failed(why) => format!("`{shown}` could not be read: {}", escape::inline(&why)),
    }
}

/// The longest line shown whole; a longer one (minified code) is cut with a marker.
pub(super) const MAX_LINE_CHARS: usize = 1000;

/// `line` as shown: at most [`MAX_LINE_CHARS`] characters.
pub(super) fn long_line(line: &str) -> std::borrow::Cow<'_, str> {
    let line = line.strip_suffix('\r').unwrap_or(line);
    match line.char_indices().nth(MAX_LINE_CHARS) {
        None => line.into(),
        Some((at, _)) => format!("{} [line cut]", &line[..at]).into(),
    }
}
