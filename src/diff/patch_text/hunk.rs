//! Hunks: the `@@ -a,b +c,d @@` header (overflow-checked) and the lines it counts, and
//! the order check that keeps a file's hunks sorted and disjoint.

use super::error::ErrorKind;
use crate::diff::{Hunk, Line, LineKind};

/// A hunk's header, its ranges checked to fit u32 line numbers.
pub(super) struct Header {
    old_start: u32,
    old_lines: u32,
    new_start: u32,
    new_lines: u32,
}

/// Reads digits as git's `strtoul` would, refusing what does not fit a line number.
fn number(s: &[u8]) -> Result<(u64, &[u8]), ErrorKind> {
    let n = s.iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 {
        return Err(ErrorKind::MalformedHunkHeader);
    }
    let mut v: u64 = 0;
    for d in &s[..n] {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(d - b'0')))
            .filter(|v| *v <= u64::from(u32::MAX))
            .ok_or(ErrorKind::LineNumberTooLarge)?;
    }
    Ok((v, &s[n..]))
}

/// `START[,COUNT]` followed by `expect`; the count defaults to 1.
fn range<'a>(s: &'a [u8], expect: &[u8]) -> Result<(u32, u32, &'a [u8]), ErrorKind> {
    let (start, rest) = number(s)?;
    let (count, rest) = match rest.strip_prefix(b",") {
        Some(r) => number(r)?,
        None => (1, rest),
    };
    let rest = rest
        .strip_prefix(expect)
        .ok_or(ErrorKind::MalformedHunkHeader)?;
    // `-0,3` or `+0` (count 1): git applies such a range at the beginning of the file,
    // so its first line is line 1.
    let start = if count > 0 { start.max(1) } else { start };
    // The last line the range names must be a u32 line number too.
    if count > 0 && start + count - 1 > u64::from(u32::MAX) {
        return Err(ErrorKind::LineNumberTooLarge);
    }
    let narrow = |v: u64| u32::try_from(v).map_err(|_| ErrorKind::LineNumberTooLarge);
    Ok((narrow(start)?, narrow(count)?, rest))
}

/// Parses `@@ -START[,COUNT] +START[,COUNT] @@ SECTION`.
pub(super) fn parse_header(raw: &[u8]) -> Result<Header, ErrorKind> {
    let rest = raw
        .strip_prefix(b"@@ -")
        .ok_or(ErrorKind::MalformedHunkHeader)?;
    let (old_start, old_lines, rest) = range(rest, b" +")?;
    // What follows the second `@@` (often the enclosing function) is not used.
    let (new_start, new_lines, _section) = range(rest, b" @@")?;
    Ok(Header {
        old_start,
        old_lines,
        new_start,
        new_lines,
    })
}

/// One line of a hunk's body.
enum BodyLine<'a> {
    /// A context, added or removed line, and its text.
    Diff(LineKind, &'a [u8]),
    /// `\ No newline at end of file`.
    Marker,
    /// Not hunk text: the hunk ended before its header's counts were met.
    Other,
}

fn body_line<'a>(raw: &'a [u8]) -> BodyLine<'a> {
    match raw.split_first() {
        Some((b' ', rest)) => BodyLine::Diff(LineKind::Context, rest),
        // GNU diff writes an empty context line without its space.
        None => BodyLine::Diff(LineKind::Context, raw),
        Some((b'+', rest)) => BodyLine::Diff(LineKind::Added, rest),
        Some((b'-', rest)) => BodyLine::Diff(LineKind::Removed, rest),
        Some((b'\\', _)) => BodyLine::Marker,
        Some(_) => BodyLine::Other,
    }
}

/// The lines a hunk still expects on each side, and the next line number of each.
struct Cursor {
    old_left: u32,
    new_left: u32,
    old_no: u64,
    new_no: u64,
}

impl Cursor {
    /// Takes a line of `kind`: its (old, new) numbers, or None when the header's counts
    /// leave no room for it.
    fn take(&mut self, kind: LineKind) -> Option<(Option<u64>, Option<u64>)> {
        let (old, new) = match kind {
            LineKind::Context if self.old_left > 0 && self.new_left > 0 => (true, true),
            LineKind::Added if self.new_left > 0 => (false, true),
            LineKind::Removed if self.old_left > 0 => (true, false),
            _ => return None,
        };
        let taken = (old.then_some(self.old_no), new.then_some(self.new_no));
        self.old_left -= u32::from(old);
        self.new_left -= u32::from(new);
        self.old_no += u64::from(old);
        self.new_no += u64::from(new);
        Some(taken)
    }

    fn counts(&self) -> (u32, u32) {
        (self.old_left, self.new_left)
    }
}

/// Reads the lines of a hunk whose header is at `lines[at]`, until the header's counts
/// are met. Returns the hunk and the index of the first line after it; an error carries
/// the index of the line at fault.
pub(super) fn read(
    lines: &[&[u8]],
    at: usize,
    h: Header,
) -> Result<(Hunk, usize), (usize, ErrorKind)> {
    // Checked by `range`: every number handed out below fits u32.
    let mut cur = Cursor {
        old_left: h.old_lines,
        new_left: h.new_lines,
        old_no: u64::from(h.old_start),
        new_no: u64::from(h.new_start),
    };
    let no = |v: Option<u64>, i: usize| {
        v.map(u32::try_from)
            .transpose()
            .map_err(|_| (i, ErrorKind::LineNumberTooLarge))
    };
    let mut out = Vec::new();
    let mut i = at + 1;
    while cur.old_left > 0 || cur.new_left > 0 {
        let (old, new) = cur.counts();
        let Some(raw) = lines.get(i) else {
            return Err((i.saturating_sub(1), ErrorKind::Truncated { old, new }));
        };
        let (kind, text) = match body_line(raw) {
            BodyLine::Diff(kind, text) => (kind, text),
            BodyLine::Marker => {
                i += 1;
                continue;
            }
            BodyLine::Other => return Err((i, ErrorKind::ShortHunk { old, new })),
        };
        let Some((old_no, new_no)) = cur.take(kind) else {
            return Err((i, ErrorKind::Misfit { old, new }));
        };
        out.push(Line {
            kind,
            old_no: no(old_no, i)?,
            new_no: no(new_no, i)?,
            text: String::from_utf8_lossy(text).into_owned(),
        });
        i += 1;
    }
    // A trailing "\ No newline at end of file" belongs to this hunk.
    while lines.get(i).is_some_and(|l| l.starts_with(b"\\")) {
        i += 1;
    }
    let hunk = Hunk {
        old_start: h.old_start,
        old_lines: h.old_lines,
        new_start: h.new_start,
        new_lines: h.new_lines,
        lines: out,
    };
    Ok((hunk, i))
}

/// The half-open span of lines a hunk covers on one side. An empty range (`-5,0`) sits
/// after its start line.
fn span(start: u32, count: u32) -> (u64, u64) {
    let lo = u64::from(start) + u64::from(count == 0);
    (lo, lo + u64::from(count))
}

/// Sorts a file's hunks by position (a hand-edited patch may list them out of order) and
/// refuses hunks that overlap, which no diff tool writes and no order can make sense of.
/// `header_lines` holds each hunk's header line number, in the same order as `hunks`.
/// On overlap, returns the header line numbers of the later and the earlier hunk.
pub(super) fn order(
    hunks: &mut Vec<Hunk>,
    header_lines: &mut Vec<usize>,
) -> Result<(), (usize, usize)> {
    let mut paired: Vec<(Hunk, usize)> = hunks.drain(..).zip(header_lines.drain(..)).collect();
    paired.sort_by_key(|(h, _)| {
        (
            span(h.new_start, h.new_lines),
            span(h.old_start, h.old_lines),
        )
    });
    for pair in paired.windows(2) {
        let ((a, la), (b, lb)) = (&pair[0], &pair[1]);
        let new_ok = span(a.new_start, a.new_lines).1 <= span(b.new_start, b.new_lines).0;
        let old_ok = span(a.old_start, a.old_lines).1 <= span(b.old_start, b.old_lines).0;
        if !(new_ok && old_ok) {
            return Err(((*la).max(*lb), (*la).min(*lb)));
        }
    }
    for (h, l) in paired {
        hunks.push(h);
        header_lines.push(l);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_checked_for_overflow_and_shape() {
        assert!(parse_header(b"@@ -1,2 +3 @@ fn x()").is_ok());
        assert!(parse_header(b"@@ -4294967295 +4294967295 @@").is_ok());
        assert_eq!(
            parse_header(b"@@ -4294967295,2 +1 @@").err(),
            Some(ErrorKind::LineNumberTooLarge)
        );
        assert_eq!(
            parse_header(b"@@ -1 +18446744073709551616 @@").err(),
            Some(ErrorKind::LineNumberTooLarge)
        );
        for bad in [
            &b"@@ -1 +1"[..],
            b"@@ -x +1 @@",
            b"@@ -1, +1 @@",
            b"@@ -1 1 @@",
        ] {
            assert_eq!(
                parse_header(bad).err(),
                Some(ErrorKind::MalformedHunkHeader),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_last_line_number_that_fits_is_read_without_overflow() {
        let lines: Vec<&[u8]> = vec![b"@@ -4294967295 +4294967294,2 @@", b"-a", b"+b", b"+c"];
        let h = parse_header(lines[0]).unwrap();
        let (hunk, next) = read(&lines, 0, h).unwrap();
        assert_eq!(next, 4);
        assert_eq!(hunk.lines[2].new_no, Some(u32::MAX));
    }
}
