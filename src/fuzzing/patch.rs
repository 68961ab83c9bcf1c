//! The unified-diff parser against a small independent oracle. Whatever the bytes, the
//! parser gives files or an error on a line of the input. When it gives files:
//! - every hunk of the input is in exactly one file, with as many `+` and `-` lines as
//!   the input has in that hunk (so each file accounts exactly the lines of its hunks);
//! - no file named by a `diff --git` header or a `---`/`+++` pair vanishes, and no
//!   file appears that no header names;
//! - each hunk's lines agree with its `@@` header and number the lines in order;
//! - lines end at LF as git reads them, unless no file is found that way and the input
//!   has lone CRs (then they end lines too).

use crate::diff::patch_text::parse_bytes;
use crate::diff::{ChangeStatus, FileChange, Hunk, LineKind};

/// What the oracle reads off one hunk of the input.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct HunkFacts {
    old_start: u64,
    old_lines: u64,
    new_start: u64,
    new_lines: u64,
    added: u64,
    removed: u64,
}

/// What the oracle expects of a patch the parser accepted.
#[derive(Debug, Default)]
struct Expect {
    hunks: Vec<HunkFacts>,
    /// Headers that always make a file of their own.
    min_files: usize,
    /// Plus the headers that may belong to the file before them (a `---`/`+++` pair in
    /// a git header block) or name no file (`Binary files /dev/null and /dev/null`).
    max_files: usize,
}

/// Parses `data` as a `--diff` patch and checks the result against the oracle.
///
/// Lines end at LF as git reads them; a patch with lone CRs may instead have been read
/// with lone CRs ending lines too (classic Mac line ends), but only when the LF reading
/// finds no file: files that match the LF lines are always the LF reading.
pub fn check(data: &[u8]) {
    let lf = split(data, false);
    let lone_cr = has_lone_cr(data);
    let cr = if lone_cr {
        split(data, true)
    } else {
        Vec::new()
    };
    let files = match parse_bytes(data) {
        Ok(files) => files,
        Err(e) => {
            let most = lf.len().max(cr.len()).max(1);
            assert!(
                e.line >= 1 && e.line <= most,
                "error on line {} of {most}: {e}",
                e.line,
            );
            return;
        }
    };
    let Err(as_lf) = files_match_input(&lf, &files) else {
        return;
    };
    assert!(lone_cr, "{as_lf}");
    if let Err(as_cr) = files_match_input(&cr, &files) {
        panic!("read as LF lines: {as_lf}; read as CR lines: {as_cr}");
    }
}

/// Where the parser's files and the oracle's reading of the input part: the check that
/// failed, in words (the fuzz target panics with it).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Mismatch(String);

impl From<&str> for Mismatch {
    fn from(why: &str) -> Self {
        Mismatch(why.to_string())
    }
}

impl From<String> for Mismatch {
    fn from(why: String) -> Self {
        Mismatch(why)
    }
}

/// The oracle's checks of files the parser returned for `lines`: Err says which failed.
fn files_match_input(lines: &[&[u8]], files: &[FileChange]) -> Result<(), Mismatch> {
    let expect = scan(lines)?;
    if !(expect.min_files..=expect.max_files).contains(&files.len()) {
        return Err(format!(
            "{} files from a patch whose headers name {} to {}",
            files.len(),
            expect.min_files,
            expect.max_files
        )
        .into());
    }
    let mut got: Vec<HunkFacts> = files.iter().flat_map(|f| &f.hunks).map(facts).collect();
    let mut want = expect.hunks;
    got.sort();
    want.sort();
    if got != want {
        return Err(
            format!("the files' hunks are not the input's hunks: {got:?} != {want:?}").into(),
        );
    }
    for f in files {
        file_is_consistent(f);
    }
    Ok(())
}

fn facts(h: &Hunk) -> HunkFacts {
    HunkFacts {
        old_start: h.old_start.into(),
        old_lines: h.old_lines.into(),
        new_start: h.new_start.into(),
        new_lines: h.new_lines.into(),
        added: h.added() as u64,
        removed: h.removed() as u64,
    }
}

fn file_is_consistent(f: &FileChange) {
    assert!(!f.path.to_string().is_empty(), "a file with an empty path");
    if f.binary {
        assert!(f.hunks.is_empty(), "{}: binary with hunks", f.path);
    }
    match f.status {
        ChangeStatus::Added => assert_eq!(f.removed(), 0, "{}: created", f.path),
        ChangeStatus::Deleted => assert_eq!(f.added(), 0, "{}: deleted", f.path),
        _ => {}
    }
    // Sorted, and no line number in two hunks.
    let last = |h: &Hunk, old: bool| {
        h.lines
            .iter()
            .rev()
            .find_map(|l| if old { l.old_no } else { l.new_no })
    };
    let first = |h: &Hunk, old: bool| {
        h.lines
            .iter()
            .find_map(|l| if old { l.old_no } else { l.new_no })
    };
    for pair in f.hunks.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            a.new_start <= b.new_start && a.old_start <= b.old_start,
            "{}: hunks out of order",
            f.path
        );
        for old in [true, false] {
            if let (Some(x), Some(y)) = (last(a, old), first(b, old)) {
                assert!(x < y, "{}: hunks overlap at line {y}", f.path);
            }
        }
    }
    for h in &f.hunks {
        hunk_is_consistent(h);
    }
}

/// The lines agree with the header's counts and are numbered from its starts.
fn hunk_is_consistent(h: &Hunk) {
    let (mut old_no, mut new_no) = (u64::from(h.old_start), u64::from(h.new_start));
    let (mut old_seen, mut new_seen) = (0u64, 0u64);
    for l in &h.lines {
        let (has_old, has_new) = match l.kind {
            LineKind::Context => (true, true),
            LineKind::Added => (false, true),
            LineKind::Removed => (true, false),
        };
        assert_eq!(l.old_no.is_some(), has_old, "{l:?}");
        assert_eq!(l.new_no.is_some(), has_new, "{l:?}");
        if let Some(n) = l.old_no {
            assert_eq!(u64::from(n), old_no, "old line numbers out of order");
            old_no += 1;
            old_seen += 1;
        }
        if let Some(n) = l.new_no {
            assert_eq!(u64::from(n), new_no, "new line numbers out of order");
            new_no += 1;
            new_seen += 1;
        }
    }
    assert_eq!(old_seen, u64::from(h.old_lines), "old count");
    assert_eq!(new_seen, u64::from(h.new_lines), "new count");
}

/// Lines as `git apply` splits them, written independently of the parser: LF or CRLF,
/// and with `cr`, lone CRs too (classic Mac line ends).
fn split(input: &[u8], cr: bool) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let end = rest.iter().position(|b| *b == b'\n' || (cr && *b == b'\r'));
        let Some(end) = end else {
            out.push(rest);
            break;
        };
        let mut next = end + 1;
        if rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n') {
            next += 1;
        }
        let line = &rest[..end];
        out.push(if rest[end] == b'\n' {
            line.strip_suffix(b"\r").unwrap_or(line)
        } else {
            line
        });
        rest = &rest[next..];
    }
    out
}

fn has_lone_cr(input: &[u8]) -> bool {
    input.last() == Some(&b'\r') || input.windows(2).any(|w| w[0] == b'\r' && w[1] != b'\n')
}

/// Lines that may follow `diff --git` in git's extended header.
const GIT_HEADER_LINES: &[&[u8]] = &[
    b"old mode ",
    b"new mode ",
    b"deleted file mode ",
    b"new file mode ",
    b"copy from ",
    b"copy to ",
    b"rename from ",
    b"rename to ",
    b"rename old ",
    b"rename new ",
    b"index ",
    b"similarity index ",
    b"dissimilarity index ",
];

/// Walks the lines of a patch the parser accepted: hunks by their header's counts, file
/// headers between them.
fn scan(lines: &[&[u8]]) -> Result<Expect, Mismatch> {
    let mut x = Expect::default();
    let mut in_git_header = false;
    let mut i = 0;
    while let Some(&line) = lines.get(i) {
        let pair =
            line.starts_with(b"--- ") && lines.get(i + 1).is_some_and(|n| n.starts_with(b"+++ "));
        if line.starts_with(b"diff --git ") {
            // git skips a `diff --git` line that no header line follows (a
            // `--remerge-diff` note); warden also reads hunks or a binary marker there.
            let next = lines.get(i + 1).copied().unwrap_or_default();
            let file = next.starts_with(b"@@ -")
                || next == b"GIT binary patch"
                || (next.ends_with(b" differ")
                    && (next.starts_with(b"Binary files ") || next.starts_with(b"Files ")))
                || GIT_HEADER_LINES.iter().any(|p| next.starts_with(p));
            x.min_files += usize::from(file);
            x.max_files += 1;
            in_git_header = true;
        } else if line.starts_with(b"@@ -") {
            let (facts, next) = read_hunk(lines, i)?;
            x.hunks.push(facts);
            i = next;
            in_git_header = false;
            continue;
        } else if pair {
            x.max_files += 1;
            x.min_files += usize::from(!in_git_header);
            i += 2;
            continue;
        } else if line.starts_with(b"Binary files ") && line.ends_with(b" differ") {
            x.max_files += 1;
            in_git_header = false;
        } else if !(in_git_header && GIT_HEADER_LINES.iter().any(|p| line.starts_with(p))) {
            in_git_header = false;
        }
        i += 1;
    }
    Ok(x)
}

/// Reads the hunk whose header is at `lines[at]` by its counts; returns its facts and
/// the index after it (and after any `\ No newline at end of file` lines).
fn read_hunk(lines: &[&[u8]], at: usize) -> Result<(HunkFacts, usize), Mismatch> {
    let (old_start, old_lines, new_start, new_lines) =
        hunk_header(lines[at]).ok_or("the parser accepted a hunk header that does not parse")?;
    let mut f = HunkFacts {
        old_start,
        old_lines,
        new_start,
        new_lines,
        added: 0,
        removed: 0,
    };
    let (mut old, mut new) = (old_lines, new_lines);
    let mut i = at + 1;
    let short = "the parser accepted a hunk shorter than its header";
    while old > 0 || new > 0 {
        let line = lines.get(i).ok_or(short)?;
        match line.first() {
            None | Some(b' ') => {
                old = old.checked_sub(1).ok_or(short)?;
                new = new.checked_sub(1).ok_or(short)?;
            }
            Some(b'+') => {
                new = new.checked_sub(1).ok_or(short)?;
                f.added += 1;
            }
            Some(b'-') => {
                old = old.checked_sub(1).ok_or(short)?;
                f.removed += 1;
            }
            Some(b'\\') => {}
            Some(_) => return Err(short.into()),
        }
        i += 1;
    }
    while lines.get(i).is_some_and(|l| l.starts_with(b"\\")) {
        i += 1;
    }
    Ok((f, i))
}

/// `@@ -A[,B] +C[,D] @@`: (A, B, C, D), counts defaulting to 1.
fn hunk_header(line: &[u8]) -> Option<(u64, u64, u64, u64)> {
    fn num(s: &[u8]) -> Option<(u64, &[u8])> {
        let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
        let v = std::str::from_utf8(&s[..n]).ok()?.parse().ok()?;
        Some((v, &s[n..]))
    }
    fn range<'a>(s: &'a [u8], then: &[u8]) -> Option<(u64, u64, &'a [u8])> {
        let (start, s) = num(s)?;
        let (count, s) = match s.strip_prefix(b",") {
            Some(s) => num(s)?,
            None => (1, s),
        };
        // A range with lines that starts at 0 is the beginning: line 1, as git applies it.
        let start = if count > 0 { start.max(1) } else { start };
        Some((start, count, s.strip_prefix(then)?))
    }
    let s = line.strip_prefix(b"@@ -")?;
    let (a, b, s) = range(s, b" +")?;
    let (c, d, _) = range(s, b" @@")?;
    Some((a, b, c, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATCH: &[u8] = b"diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
diff --git a/logo.png b/logo.png
new file mode 100644
Binary files /dev/null and b/logo.png differ
--- a/plain.txt
+++ b/plain.txt
@@ -2,2 +2,3 @@ section
 keep
-old
+new
+more
";

    fn parsed() -> (Vec<&'static [u8]>, Vec<FileChange>) {
        (split(PATCH, false), parse_bytes(PATCH).unwrap())
    }

    fn must_match(lines: &[&[u8]], files: &[FileChange]) {
        if let Err(e) = files_match_input(lines, files) {
            panic!("{e}");
        }
    }

    #[test]
    fn the_oracle_reads_headers_and_hunks() {
        let x = scan(&split(PATCH, false)).unwrap();
        assert_eq!((x.min_files, x.max_files), (3, 4));
        assert_eq!(x.hunks.len(), 1);
        assert_eq!((x.hunks[0].added, x.hunks[0].removed), (2, 1));
        let (lines, files) = parsed();
        must_match(&lines, &files);
        check(PATCH);
    }

    #[test]
    #[should_panic(expected = "files from a patch whose headers name")]
    fn a_vanished_file_is_caught() {
        let (lines, mut files) = parsed();
        files.remove(0);
        files.remove(0);
        must_match(&lines, &files);
    }

    #[test]
    #[should_panic(expected = "the files' hunks are not the input's hunks")]
    fn a_miscounted_line_is_caught() {
        let (lines, mut files) = parsed();
        let h = files.iter_mut().find_map(|f| f.hunks.first_mut()).unwrap();
        h.lines.pop();
        must_match(&lines, &files);
    }

    #[test]
    fn the_oracle_splits_as_git_does() {
        assert_eq!(split(b"a\r\nb\nc", false), [&b"a"[..], b"b", b"c"]);
        assert_eq!(split(b"a\rb\rc\r", true), [&b"a"[..], b"b", b"c"]);
        assert_eq!(split(b"+x\ry\n+z\n", false), [&b"+x\ry"[..], b"+z"]);
        assert_eq!(split(b"\n\n", false), [&b""[..], b""]);
    }

    /// Found by the `patch` target: a patch the parser reads at lone CRs has an LF line
    /// starting with `@@ -` whose hunk is short in LF terms; the oracle's LF reading
    /// panicked instead of giving way to its CR reading.
    #[test]
    fn an_lf_reading_that_cannot_hold_is_not_a_finding() {
        let text = b"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\r-a\r+b\r c\r";
        assert_eq!(parse_bytes(text).unwrap()[0].hunks[0].lines.len(), 3);
        check(text);
        check(include_bytes!(
            "../../fuzz/corpus/patch/crash-oracle-lf-scan-cr-patch.diff"
        ));
    }

    /// The shapes of issue 20 keep the oracle's invariants.
    #[test]
    fn git_shapes_keep_the_invariants() {
        for text in [
            &b"diff --git a/f.c b/f.c\ndissimilarity index 82%\n--- f.c\n+++ f.c\n@@ -1 +1 @@\n-a\n+b\n"[..],
            b"diff --git a/f b/f\nremerge CONFLICT (content): x\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n",
            b"--- a/x.csv\n+++ b/x.csv\n@@ -1 +1 @@\n-a\rb\rc\rd\r\n+a\rB\rc\rd\r\n",
            b"--- a/x\n+++ b/x\n@@ -6 +0 @@\n-b\n+c\n",
            b"--- a/x\r+++ b/x\r@@ -1 +1 @@\r-a\r+b\r",
        ] {
            assert!(parse_bytes(text).is_ok_and(|f| f.len() == 1), "{text:?}");
            check(text);
        }
    }
}
