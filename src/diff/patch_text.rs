//! Reads unified diff text (`--diff FILE|-`): git's extended format (renames, modes,
//! binary markers, quoted non-UTF-8 paths) and plain `diff -u` output alike.
//! Errors name the input and the line, so a bad paste is easy to find.

use super::{ChangeStatus, DiffSet, FileChange, Hunk, Line, LineKind, RepoPath};
use crate::error::{Error, Result};

/// Parses `input` into a [`DiffSet`]. `source_name` appears in errors ("stdin", a path).
pub fn parse(input: &[u8], source_name: &str) -> Result<DiffSet> {
    let mut parser = Parser {
        source_name,
        files: Vec::new(),
        current: None,
    };
    let lines: Vec<&[u8]> = split_lines(input);
    let mut i = 0;
    let mut saw_any_header = false;
    while i < lines.len() {
        let raw = lines[i];
        let line_no = i + 1;
        if let Some(rest) = raw.strip_prefix(b"diff --git ") {
            parser.finish_file();
            parser.current = Some(PendingFile::from_git_header(rest));
            saw_any_header = true;
            i += 1;
            continue;
        }
        if raw.starts_with(b"--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with(b"+++ ")) {
            let old = header_path(&raw[4..]);
            let new = header_path(&lines[i + 1][4..]);
            let fresh = match &parser.current {
                Some(p) => p.saw_paths || !p.hunks.is_empty(),
                None => true,
            };
            if fresh {
                parser.finish_file();
                parser.current = Some(PendingFile::default());
            }
            let file = parser.current.as_mut().expect("set above");
            file.saw_paths = true;
            if old_is_dev_null(&raw[4..]) {
                file.status = Some(ChangeStatus::Added);
            } else if file.old_path.is_none() {
                file.old_path = old;
            }
            if old_is_dev_null(&lines[i + 1][4..]) {
                file.status = Some(ChangeStatus::Deleted);
            } else if file.new_path.is_none() {
                file.new_path = new;
            }
            saw_any_header = true;
            i += 2;
            continue;
        }
        if raw.starts_with(b"@@") {
            if parser.current.is_none() {
                return Err(parser.error(
                    line_no,
                    "hunk header before any file header: expected `diff --git` or `---`/`+++` lines first",
                ));
            }
            let header = parse_hunk_header(raw).ok_or_else(|| {
                parser.error(
                    line_no,
                    "malformed hunk header: expected `@@ -START[,COUNT] +START[,COUNT] @@`",
                )
            })?;
            let (hunk, next) =
                read_hunk(&lines, i + 1, header).map_err(|(at, msg)| Error::Patch {
                    source_name: source_name.to_string(),
                    line: at + 1,
                    message: msg,
                })?;
            parser.current.as_mut().expect("checked").hunks.push(hunk);
            i = next;
            continue;
        }
        if let Some(file) = parser.current.as_mut() {
            file.extended_header(raw);
        }
        i += 1;
    }
    parser.finish_file();
    if !saw_any_header && lines.iter().any(|l| !l.iter().all(u8::is_ascii_whitespace)) {
        return Err(parser.error(
            1,
            "no diff found: expected unified diff text with `diff --git` or `---`/`+++` file headers (for example the output of `git diff`)",
        ));
    }
    Ok(DiffSet {
        files: parser.files,
        description: format!("patch from {source_name}"),
    })
}

struct Parser<'a> {
    source_name: &'a str,
    files: Vec<FileChange>,
    current: Option<PendingFile>,
}

impl Parser<'_> {
    fn error(&self, line: usize, message: &str) -> Error {
        Error::Patch {
            source_name: self.source_name.to_string(),
            line,
            message: message.to_string(),
        }
    }

    fn finish_file(&mut self) {
        if let Some(p) = self.current.take() {
            self.files.push(p.finish());
        }
    }
}

#[derive(Default)]
struct PendingFile {
    git_old: Option<RepoPath>,
    git_new: Option<RepoPath>,
    old_path: Option<RepoPath>,
    new_path: Option<RepoPath>,
    status: Option<ChangeStatus>,
    old_mode: Option<u32>,
    new_mode: Option<u32>,
    binary: bool,
    saw_paths: bool,
    hunks: Vec<Hunk>,
}

impl PendingFile {
    fn from_git_header(rest: &[u8]) -> Self {
        let (old, new) = split_git_header_paths(rest);
        PendingFile {
            git_old: old,
            git_new: new,
            ..Default::default()
        }
    }

    fn extended_header(&mut self, raw: &[u8]) {
        let text = String::from_utf8_lossy(raw);
        let mode = |s: &str| u32::from_str_radix(s.trim(), 8).ok();
        if let Some(m) = text.strip_prefix("old mode ") {
            self.old_mode = mode(m);
        } else if let Some(m) = text.strip_prefix("new mode ") {
            self.new_mode = mode(m);
        } else if let Some(m) = text.strip_prefix("deleted file mode ") {
            self.old_mode = mode(m);
            self.status = Some(ChangeStatus::Deleted);
        } else if let Some(m) = text.strip_prefix("new file mode ") {
            self.new_mode = mode(m);
            self.status = Some(ChangeStatus::Added);
        } else if let Some(p) = raw.strip_prefix(b"rename from ") {
            self.old_path = Some(unquote(p));
            self.status = Some(ChangeStatus::Renamed);
        } else if let Some(p) = raw.strip_prefix(b"rename to ") {
            self.new_path = Some(unquote(p));
            self.status = Some(ChangeStatus::Renamed);
        } else if let Some(p) = raw.strip_prefix(b"copy from ") {
            self.old_path = Some(unquote(p));
            self.status = Some(ChangeStatus::Copied);
        } else if let Some(p) = raw.strip_prefix(b"copy to ") {
            self.new_path = Some(unquote(p));
            self.status = Some(ChangeStatus::Copied);
        } else if text.starts_with("Binary files ") || text.starts_with("GIT binary patch") {
            self.binary = true;
        } else if let Some(m) = text.strip_prefix("index ") {
            // `index abc..def 100644`: the mode of an unchanged-mode file.
            if let Some(m) = m.split_whitespace().nth(1).and_then(mode) {
                self.old_mode.get_or_insert(m);
                self.new_mode.get_or_insert(m);
            }
        }
    }

    fn finish(self) -> FileChange {
        let new_path = self.new_path.clone().or(self.git_new.clone());
        let old_path = self.old_path.clone().or(self.git_old.clone());
        let status = self.status.unwrap_or(ChangeStatus::Modified);
        let path = match status {
            ChangeStatus::Deleted => old_path.clone().or(new_path.clone()),
            _ => new_path.clone().or(old_path.clone()),
        }
        .unwrap_or_else(|| RepoPath::from("<unnamed>"));
        let old_path = match status {
            ChangeStatus::Renamed | ChangeStatus::Copied => old_path.filter(|p| *p != path),
            _ => None,
        };
        let is_gitlink = |m: Option<u32>| m == Some(0o160000);
        FileChange {
            path,
            old_path,
            status,
            binary: self.binary,
            submodule: is_gitlink(self.old_mode) || is_gitlink(self.new_mode),
            old_mode: self.old_mode,
            new_mode: self.new_mode,
            hunks: self.hunks,
        }
    }
}

struct HunkHeader {
    old_start: u32,
    old_lines: u32,
    new_start: u32,
    new_lines: u32,
    section: String,
}

fn parse_hunk_header(raw: &[u8]) -> Option<HunkHeader> {
    let text = String::from_utf8_lossy(raw);
    let rest = text.strip_prefix("@@ -")?;
    let (ranges, section) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |s: &str| -> Option<(u32, u32)> {
        match s.split_once(',') {
            Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
            None => Some((s.parse().ok()?, 1)),
        }
    };
    let (old_start, old_lines) = range(old)?;
    let (new_start, new_lines) = range(new)?;
    Some(HunkHeader {
        old_start,
        old_lines,
        new_start,
        new_lines,
        section: section.trim().to_string(),
    })
}

/// Reads hunk lines starting at `start` until the header's counts are met.
fn read_hunk(
    lines: &[&[u8]],
    start: usize,
    h: HunkHeader,
) -> std::result::Result<(Hunk, usize), (usize, String)> {
    let mut old_left = h.old_lines;
    let mut new_left = h.new_lines;
    let mut old_no = h.old_start;
    let mut new_no = h.new_start;
    let mut out = Vec::new();
    let mut i = start;
    while old_left > 0 || new_left > 0 {
        let Some(raw) = lines.get(i) else {
            return Err((
                i.saturating_sub(1),
                format!(
                    "hunk ends early: the input stops with {old_left} old and {new_left} new lines still expected by its `@@` header"
                ),
            ));
        };
        let (kind, text) = match raw.first() {
            Some(b' ') => (LineKind::Context, &raw[1..]),
            // Some tools strip the space of an empty context line.
            None => (LineKind::Context, &raw[..]),
            Some(b'+') => (LineKind::Added, &raw[1..]),
            Some(b'-') => (LineKind::Removed, &raw[1..]),
            Some(b'\\') => {
                i += 1;
                continue;
            }
            _ => {
                return Err((
                    i,
                    format!(
                        "hunk ends early: expected {old_left} more old and {new_left} more new lines (each starting with ' ', '+' or '-') as its `@@` header says"
                    ),
                ));
            }
        };
        let text = String::from_utf8_lossy(text).into_owned();
        match kind {
            LineKind::Context if old_left > 0 && new_left > 0 => {
                out.push(Line {
                    kind,
                    old_no: Some(old_no),
                    new_no: Some(new_no),
                    text,
                });
                old_no += 1;
                new_no += 1;
                old_left -= 1;
                new_left -= 1;
            }
            LineKind::Added if new_left > 0 => {
                out.push(Line {
                    kind,
                    old_no: None,
                    new_no: Some(new_no),
                    text,
                });
                new_no += 1;
                new_left -= 1;
            }
            LineKind::Removed if old_left > 0 => {
                out.push(Line {
                    kind,
                    old_no: Some(old_no),
                    new_no: None,
                    text,
                });
                old_no += 1;
                old_left -= 1;
            }
            _ => {
                return Err((
                    i,
                    format!(
                        "line does not fit its hunk: the `@@` header leaves {old_left} old and {new_left} new lines here"
                    ),
                ));
            }
        }
        i += 1;
    }
    // A trailing "\ No newline at end of file" belongs to this hunk.
    while lines.get(i).is_some_and(|l| l.starts_with(b"\\")) {
        i += 1;
    }
    Ok((
        Hunk {
            old_start: h.old_start,
            old_lines: h.old_lines,
            new_start: h.new_start,
            new_lines: h.new_lines,
            section: h.section,
            lines: out,
        },
        i,
    ))
}

/// Splits on `\n`, dropping a `\r` before it, so CRLF input reads like LF input.
fn split_lines(input: &[u8]) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = input
        .split(|b| *b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .collect();
    if input.ends_with(b"\n") {
        out.pop();
    }
    out
}

fn old_is_dev_null(raw: &[u8]) -> bool {
    strip_timestamp(raw) == b"/dev/null"
}

/// `--- a/path\t2024-01-01 ...` → `path`; `/dev/null` → None.
fn header_path(raw: &[u8]) -> Option<RepoPath> {
    let p = strip_timestamp(raw);
    if p == b"/dev/null" {
        return None;
    }
    let p = unquote(p);
    Some(strip_side_prefix(p.as_bytes()))
}

fn strip_timestamp(raw: &[u8]) -> &[u8] {
    if raw.first() == Some(&b'"') {
        return raw;
    }
    match raw.iter().position(|b| *b == b'\t') {
        Some(t) => &raw[..t],
        None => raw,
    }
}

fn strip_side_prefix(p: &[u8]) -> RepoPath {
    let stripped = p
        .strip_prefix(b"a/")
        .or_else(|| p.strip_prefix(b"b/"))
        .unwrap_or(p);
    RepoPath::from_bytes(stripped)
}

/// `a/x b/x` (or quoted forms) from a `diff --git` line. Unquoted paths with spaces are
/// ambiguous; the common case of equal old and new paths is split in the middle.
fn split_git_header_paths(rest: &[u8]) -> (Option<RepoPath>, Option<RepoPath>) {
    if rest.first() == Some(&b'"')
        && let Some(end) = closing_quote(rest)
    {
        let old = unquote(&rest[..=end]);
        let tail = rest[end + 1..].trim_ascii_start();
        let new = unquote(tail);
        return (
            Some(strip_side_prefix(old.as_bytes())),
            Some(strip_side_prefix(new.as_bytes())),
        );
    }
    let len = rest.len();
    if len % 2 == 1 {
        let half = len / 2;
        if rest[half] == b' ' && rest[2..half] == rest[half + 3..] {
            let p = strip_side_prefix(&rest[..half]);
            return (Some(p.clone()), Some(p));
        }
    }
    if let Some(pos) = find(rest, b" b/") {
        return (
            Some(strip_side_prefix(&rest[..pos])),
            Some(strip_side_prefix(&rest[pos + 1..])),
        );
    }
    (None, None)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn closing_quote(s: &[u8]) -> Option<usize> {
    let mut i = 1;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Undoes git's C-style quoting (`"a/\303\251.txt"`), giving raw bytes.
fn unquote(raw: &[u8]) -> RepoPath {
    let Some(inner) = raw.strip_prefix(b"\"").and_then(|r| r.strip_suffix(b"\"")) else {
        return RepoPath::from_bytes(raw);
    };
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        if inner[i] != b'\\' || i + 1 == inner.len() {
            out.push(inner[i]);
            i += 1;
            continue;
        }
        let c = inner[i + 1];
        match c {
            b'0'..=b'7' if i + 3 < inner.len() + 1 => {
                let digits = &inner[i + 1..(i + 4).min(inner.len())];
                let value = digits
                    .iter()
                    .take_while(|d| (b'0'..=b'7').contains(d))
                    .fold(0u32, |acc, d| acc * 8 + u32::from(d - b'0'));
                let used = digits
                    .iter()
                    .take_while(|d| (b'0'..=b'7').contains(d))
                    .count();
                out.push(value as u8);
                i += 1 + used;
            }
            _ => {
                out.push(match c {
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    b'a' => 7,
                    b'b' => 8,
                    b'f' => 12,
                    b'v' => 11,
                    other => other,
                });
                i += 2;
            }
        }
    }
    RepoPath::from_bytes(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_unified_diff_and_git_extended_headers() {
        let text =
            b"--- a/foo.txt\t2024-01-01\n+++ b/foo.txt\n@@ -1,2 +1,3 @@\n one\n+two\n three\n\
diff --git a/old.rs b/new.rs\nsimilarity index 90%\nrename from old.rs\nrename to new.rs\n\
diff --git a/bin.png b/bin.png\nBinary files a/bin.png and b/bin.png differ\n\
diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n";
        let set = parse(text, "test").unwrap();
        let names: Vec<String> = set.files.iter().map(|f| f.path.to_string()).collect();
        assert_eq!(names, ["foo.txt", "new.rs", "bin.png", "run.sh"]);
        assert_eq!(set.files[0].added(), 1);
        assert_eq!(set.files[1].status, ChangeStatus::Renamed);
        assert_eq!(
            set.files[1].old_path.as_ref().unwrap().to_string(),
            "old.rs"
        );
        assert!(set.files[2].binary);
        assert!(set.files[3].mode_changed());
    }

    #[test]
    fn copies_and_deletions() {
        let text = b"diff --git a/a.rs b/b.rs\nsimilarity index 95%\ncopy from a.rs\ncopy to b.rs\n--- a/a.rs\n+++ b/b.rs\n@@ -1 +1,2 @@\n x\n+y\n\
diff --git a/gone.rs b/gone.rs\ndeleted file mode 100644\n--- a/gone.rs\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-a\n-b\n";
        let set = parse(text, "t").unwrap();
        assert_eq!(set.files[0].status, ChangeStatus::Copied);
        assert_eq!(set.files[0].path.to_string(), "b.rs");
        assert_eq!(set.files[0].old_path.as_ref().unwrap().to_string(), "a.rs");
        assert_eq!(set.files[1].status, ChangeStatus::Deleted);
        assert_eq!(set.files[1].path.to_string(), "gone.rs");
        assert_eq!(set.files[1].removed(), 2);
    }

    #[test]
    fn unquotes_octal_escaped_non_utf8_paths() {
        let text = b"diff --git \"a/caf\\303\\251\" \"b/caf\\303\\251\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/caf\\303\\251\"\n@@ -0,0 +1 @@\n+x\n";
        let set = parse(text, "t").unwrap();
        assert_eq!(set.files[0].path.to_string(), "café");
        assert_eq!(set.files[0].status, ChangeStatus::Added);
    }

    #[test]
    fn short_hunk_is_an_error_with_a_line_number() {
        let text = b"--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n";
        let err = parse(text, "p.diff").unwrap_err().to_string();
        assert!(err.starts_with("p.diff:4:"), "{err}");
        assert!(err.contains("hunk ends early"), "{err}");
    }

    #[test]
    fn text_without_any_diff_is_an_error() {
        let err = parse(b"hello\nworld\n", "stdin").unwrap_err().to_string();
        assert!(err.contains("no diff found"), "{err}");
    }

    #[test]
    fn crlf_and_no_newline_marker() {
        let text = b"--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n\\ No newline at end of file\r\n+b\r\n\\ No newline at end of file\r\n";
        let set = parse(text, "t").unwrap();
        let h = &set.files[0].hunks[0];
        assert_eq!((h.added(), h.removed()), (1, 1));
        assert_eq!(h.lines[1].text, "b");
    }
}
