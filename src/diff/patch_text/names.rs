//! File names in patch headers, read as `git apply` reads them (apply.c): C-style
//! quoting, `-p` leading components, timestamps after traditional names, `/dev/null`.

/// Undoes C-style quoting at the start of `s` (`"a/caf\303\251"`). Returns the bytes and
/// what follows the closing quote, or None when `s` is not a well-formed quoted string.
pub(super) fn unquote(s: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut i = 1;
    if s.first() != Some(&b'"') {
        return None;
    }
    let mut out = Vec::new();
    while let Some(&c) = s.get(i) {
        match c {
            b'"' => return Some((out, &s[i + 1..])),
            b'\\' => {
                let e = *s.get(i + 1)?;
                match e {
                    b'0'..=b'3' => {
                        let digits = s.get(i + 1..i + 4)?;
                        if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                            return None;
                        }
                        let v = digits
                            .iter()
                            .fold(0u16, |acc, d| acc * 8 + u16::from(d - b'0'));
                        out.push(u8::try_from(v).ok()?);
                        i += 4;
                        continue;
                    }
                    b'a' => out.push(7),
                    b'b' => out.push(8),
                    b'f' => out.push(12),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'v' => out.push(11),
                    b'\\' | b'"' => out.push(e),
                    _ => return None,
                }
                i += 2;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    None
}

/// `/dev/null` followed by whitespace or the end: the missing side of a creation or deletion.
pub(super) fn is_dev_null(line: &[u8]) -> bool {
    line.strip_prefix(b"/dev/null")
        .is_some_and(|rest| rest.first().is_none_or(u8::is_ascii_whitespace))
}

/// The name after `p` leading components (`a/x` → `x` for p = 1); None when there are
/// fewer, or the name is absolute.
pub(super) fn skip_prefix(p: usize, name: &[u8]) -> Option<&[u8]> {
    if p == 0 {
        return (name.first() != Some(&b'/')).then_some(name);
    }
    let mut left = p;
    for (i, c) in name.iter().enumerate() {
        if *c == b'/' {
            left -= 1;
            if left == 0 {
                return (i != 0).then(|| &name[i + 1..]);
            }
        }
    }
    None
}

/// Collapses runs of `/`, as git does for every name it reads.
fn squash_slashes(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    for &c in name {
        if !(c == b'/' && out.last() == Some(&b'/')) {
            out.push(c);
        }
    }
    out
}

/// A quoted name with `p` components removed.
fn quoted_name(line: &[u8], p: usize) -> Option<Vec<u8>> {
    let (name, _) = unquote(line)?;
    let mut rest: &[u8] = &name;
    for _ in 0..p {
        let slash = rest.iter().position(|c| *c == b'/')?;
        rest = &rest[slash + 1..];
    }
    Some(squash_slashes(rest))
}

/// How an unquoted name ends: at `end`, at the first tab, or at the end of the line.
#[derive(Clone, Copy)]
enum End {
    At(usize),
    Tab,
    Line,
}

/// git's `find_name_common`: `p` components off, and `def` preferred when the name is
/// `def` with something tacked on (`file.orig`).
fn common_name(line: &[u8], def: Option<&[u8]>, p: usize, end: End) -> Option<Vec<u8>> {
    let stop = match end {
        End::At(e) => e.min(line.len()),
        End::Tab => line.iter().position(|c| *c == b'\t').unwrap_or(line.len()),
        End::Line => line.len(),
    };
    let line = &line[..stop];
    let start = if p == 0 {
        Some(0)
    } else {
        line.iter()
            .enumerate()
            .filter(|(_, c)| **c == b'/')
            .nth(p - 1)
            .map(|(i, _)| i + 1)
    };
    let name = match start {
        Some(s) if s < line.len() => &line[s..],
        _ => return def.map(squash_slashes),
    };
    if let Some(d) = def
        && d.len() < name.len()
        && name.starts_with(d)
    {
        return Some(squash_slashes(d));
    }
    Some(squash_slashes(name))
}

/// A name in a git header line (`--- a/x`, `rename from x`): quoted, or up to a tab.
pub(super) fn git_line_name(line: &[u8], p: usize, tab_ends: bool) -> Option<Vec<u8>> {
    if line.first() == Some(&b'"')
        && let Some(n) = quoted_name(line, p)
    {
        return Some(n);
    }
    common_name(line, None, p, if tab_ends { End::Tab } else { End::Line })
}

/// A name in a traditional `---`/`+++` line: the timestamp after it goes, whether a tab
/// or spaces separate it; without a timestamp the name ends at the first tab.
pub(super) fn traditional_name(line: &[u8], def: Option<&[u8]>, p: usize) -> Option<Vec<u8>> {
    if line.first() == Some(&b'"')
        && let Some(n) = quoted_name(line, p)
    {
        return Some(n);
    }
    match timestamp_len(line) {
        0 => common_name(line, def, p, End::Tab),
        n => common_name(line, def, p, End::At(line.len() - n)),
    }
}

/// git's `-p` guess from a traditional name: 0 when the name has no directory part.
pub(super) fn guess_p(line: &[u8]) -> Option<usize> {
    if is_dev_null(line) {
        return None;
    }
    let name = traditional_name(line, None, 0)?;
    (!name.contains(&b'/')).then_some(0)
}

fn digits(s: &[u8]) -> bool {
    s.iter().all(u8::is_ascii_digit)
}

/// Length of a trailing ` +0500` time zone.
fn tz_len(l: &[u8]) -> usize {
    let n = l.len();
    if n < 6 || l[n - 6] != b' ' || !matches!(l[n - 5], b'+' | b'-') || !digits(&l[n - 4..]) {
        return 0;
    }
    6
}

/// Length of a trailing ` +08:00` time zone.
fn tz_colon_len(l: &[u8]) -> usize {
    let n = l.len();
    if n < 7 {
        return 0;
    }
    let t = &l[n - 7..];
    if t[0] != b' ' || !matches!(t[1], b'+' | b'-') || !digits(&t[2..4]) || t[4] != b':' {
        return 0;
    }
    if !digits(&t[5..]) { 0 } else { 7 }
}

/// Length of a trailing ` 07:01:32`.
fn short_time_len(l: &[u8]) -> usize {
    let n = l.len();
    if n < 9 {
        return 0;
    }
    let t = &l[n - 9..];
    let ok = t[0] == b' '
        && digits(&t[1..3])
        && t[3] == b':'
        && digits(&t[4..6])
        && t[6] == b':'
        && digits(&t[7..9]);
    if ok { 9 } else { 0 }
}

/// Length of a trailing ` 19:41:17.620000023`.
fn fractional_time_len(l: &[u8]) -> usize {
    let Some(dot) = l.iter().rposition(|c| !c.is_ascii_digit()) else {
        return 0;
    };
    if l[dot] != b'.' || dot + 1 == l.len() {
        return 0;
    }
    match short_time_len(&l[..dot]) {
        0 => 0,
        n => l.len() - dot + n,
    }
}

/// Length of a trailing `2010-07-05` (or two-digit year `72-02-05`).
fn date_len(l: &[u8]) -> usize {
    let n = l.len();
    if n < 8 {
        return 0;
    }
    let d = &l[n - 8..];
    if !digits(&d[0..2]) || d[2] != b'-' || !digits(&d[3..5]) || d[5] != b'-' || !digits(&d[6..]) {
        return 0;
    }
    if n >= 10 && digits(&l[n - 10..n - 8]) {
        10
    } else {
        8
    }
}

/// git's `diff_timestamp_len`: the length of a POSIX or GNU timestamp (with the
/// whitespace before it) at the end of a traditional name line, or 0.
pub(super) fn timestamp_len(line: &[u8]) -> usize {
    if !line.last().is_some_and(u8::is_ascii_digit) {
        return 0;
    }
    let mut end = line.len();
    let zone = match tz_len(line) {
        0 => tz_colon_len(line),
        n => n,
    };
    end -= zone;
    let time = match short_time_len(&line[..end]) {
        0 => fractional_time_len(&line[..end]),
        n => n,
    };
    end -= time;
    let date = date_len(&line[..end]);
    if date == 0 || date == end {
        return 0;
    }
    end -= date;
    match line[end - 1] {
        b'\t' => line.len() - (end - 1),
        b' ' => {
            let spaces = line[..end].iter().rev().take_while(|c| **c == b' ').count();
            line.len() - (end - spaces)
        }
        _ => 0,
    }
}

/// git's `has_epoch_timestamp`: the stamp after the last tab is the Unix epoch in its own
/// time zone, which is how `diff -N` marks the missing side of a creation or deletion.
pub(super) fn has_epoch_timestamp(line: &[u8]) -> bool {
    let Some(tab) = line.iter().rposition(|c| *c == b'\t') else {
        return false;
    };
    let stamp = &line[tab + 1..];
    let (epoch_hour, rest) = if let Some(r) = stamp.strip_prefix(b"1969-12-31 ") {
        (24, r)
    } else if let Some(r) = stamp.strip_prefix(b"1970-01-01 ") {
        (0, r)
    } else {
        return false;
    };
    epoch_clock(rest).is_some_and(|(local, zone)| local - zone == epoch_hour * 60)
}

/// `hh:mm:00(.0+)? [+-]hh:?mm` → (minutes of the day, zone offset in minutes).
fn epoch_clock(s: &[u8]) -> Option<(i32, i32)> {
    let num = |b: &[u8]| -> Option<i32> {
        digits(b).then(|| b.iter().fold(0i32, |a, d| a * 10 + i32::from(d - b'0')))
    };
    let (hh, rest) = (s.get(..2)?, s.get(2..)?);
    let rest = rest.strip_prefix(b":")?;
    let (mm, rest) = (rest.get(..2)?, rest.get(2..)?);
    let mut rest = rest.strip_prefix(b":00")?;
    if let Some(r) = rest.strip_prefix(b".") {
        let zeros = r.iter().take_while(|c| **c == b'0').count();
        if zeros == 0 {
            return None;
        }
        rest = &r[zeros..];
    }
    let rest = rest.strip_prefix(b" ")?;
    let sign = match rest.first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let zone = rest.get(1..)?;
    let (zh, zm) = match zone.len() {
        4 => (&zone[..2], &zone[2..]),
        5 if zone[2] == b':' => (&zone[..2], &zone[3..]),
        _ => return None,
    };
    let in_range = |b: &[u8], top: u8| b[0] <= top;
    if !in_range(hh, b'2') || !in_range(mm, b'5') || !in_range(zh, b'2') || !in_range(zm, b'5') {
        return None;
    }
    Some((num(hh)? * 60 + num(mm)?, sign * (num(zh)? * 60 + num(zm)?)))
}

/// git's `git_header_name`: the one name of a `diff --git A B` line when A and B name the
/// same file (after `p` components); None when they differ or it is ambiguous, in which
/// case the name must come from later header lines.
pub(super) fn git_header_name(p: usize, line: &[u8]) -> Option<Vec<u8>> {
    if line.first() == Some(&b'"') {
        let (first, after) = unquote(line)?;
        let first = skip_prefix(p, &first)?.to_vec();
        let second = after.trim_ascii_start();
        if second.is_empty() {
            return None;
        }
        let second_name = if second[0] == b'"' {
            let (s, _) = unquote(second)?;
            skip_prefix(p, &s)?.to_vec()
        } else {
            skip_prefix(p, second)?.to_vec()
        };
        return (second_name == first).then_some(first);
    }
    let name = skip_prefix(p, line)?;
    // With an unquoted first name, a quote can only start the second name.
    if let Some(q) = name.iter().position(|c| *c == b'"') {
        let (s, _) = unquote(&name[q..])?;
        let np = skip_prefix(p, &s)?;
        let ok = np.len() < q && name.starts_with(np) && name[np.len()].is_ascii_whitespace();
        return ok.then(|| np.to_vec());
    }
    same_name_twice(p, name)
}

/// `NAME<sep>PREFIX/NAME`: the split where both halves name the same file. Linear: the
/// second half's length only falls as the split moves right, so at most one split has
/// halves of equal length, and only that one is compared.
fn same_name_twice(p: usize, name: &[u8]) -> Option<Vec<u8>> {
    let n = name.len();
    // slashes[i]: how many `/` are in name[..i].
    let mut slashes = Vec::with_capacity(n + 1);
    slashes.push(0usize);
    for c in name {
        slashes.push(slashes.last().copied().unwrap_or(0) + usize::from(*c == b'/'));
    }
    for len in 0..n {
        if !matches!(name[len], b' ' | b'\t') {
            continue;
        }
        let rest = len + 1;
        // Where git's skip of `p` components fails, it gives up on the whole line.
        if rest == n || slashes[n] - slashes[rest] < p || (p <= 1 && name[rest] == b'/') {
            return None;
        }
        // The second half must be `len` long: it starts at n - len, right after the p-th
        // slash past the separator.
        let Some(second_start) = n.checked_sub(len).filter(|s| *s > rest || p == 0) else {
            continue;
        };
        let fits = if p == 0 {
            second_start == rest
        } else {
            name[second_start - 1] == b'/' && slashes[second_start - 1] - slashes[rest] == p - 1
        };
        if fits && name[second_start..] == name[..len] {
            return Some(name[..len].to_vec());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: Option<Vec<u8>>) -> Option<String> {
        v.map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    #[test]
    fn traditional_names_drop_timestamps_as_git_does() {
        let t = |l: &str| s(traditional_name(l.as_bytes(), None, 1));
        assert_eq!(
            t("a/x.rs\t2024-01-01 10:00:00.123456789 +0100").as_deref(),
            Some("x.rs")
        );
        assert_eq!(t("a/x y.rs 2024-01-01 10:00:00").as_deref(), Some("x y.rs"));
        assert_eq!(
            t("a/x y.rs   2024-01-01 10:00:00 -0700").as_deref(),
            Some("x y.rs")
        );
        assert_eq!(
            t("a/x\ty.rs\t2024-01-01 10:00:00 +08:00").as_deref(),
            Some("x\ty.rs")
        );
        assert_eq!(t("a/x\tjunk").as_deref(), Some("x"));
        assert_eq!(
            t("\"a/sp ace\"\t2024-01-01 10:00:00").as_deref(),
            Some("sp ace")
        );
        assert_eq!(t("a/deep///x").as_deref(), Some("deep/x"));
        assert_eq!(t("noslash"), None);
        assert_eq!(
            s(traditional_name(b"a/x.rs.orig", Some(b"x.rs"), 1)).as_deref(),
            Some("x.rs")
        );
    }

    #[test]
    fn epoch_stamps_in_any_zone() {
        assert!(has_epoch_timestamp(
            b"a/x\t1970-01-01 00:00:00.000000000 +0000"
        ));
        assert!(has_epoch_timestamp(b"a/x\t1970-01-01 01:00:00 +0100"));
        assert!(has_epoch_timestamp(b"a/x\t1969-12-31 19:00:00.0 -0500"));
        assert!(has_epoch_timestamp(b"a/x\t1970-01-01 05:30:00 +05:30"));
        assert!(!has_epoch_timestamp(b"a/x\t1970-01-01 00:00:01 +0000"));
        assert!(!has_epoch_timestamp(b"a/x\t1970-01-01 01:00:00 +0000"));
        assert!(!has_epoch_timestamp(b"a/x 1970-01-01 00:00:00 +0000"));
        assert!(!has_epoch_timestamp(b"a/x\t1970-01-01 00:00"));
    }

    #[test]
    fn git_header_names() {
        let g = |l: &str| s(git_header_name(1, l.as_bytes()));
        assert_eq!(g("a/x.rs b/x.rs").as_deref(), Some("x.rs"));
        assert_eq!(g("a/sp ace b/sp ace").as_deref(), Some("sp ace"));
        assert_eq!(g("a/d/x b/d/x").as_deref(), Some("d/x"));
        assert_eq!(g("a/x b/y"), None);
        assert_eq!(
            g("\"a/caf\\303\\251\" \"b/caf\\303\\251\"").as_deref(),
            Some("café")
        );
        assert_eq!(g("a/q \"b/q\"").as_deref(), Some("q"));
        assert_eq!(g("a/x"), None);
        assert_eq!(s(git_header_name(0, b"x y x")), None);
        assert_eq!(s(git_header_name(0, b"x x")).as_deref(), Some("x"));
        // Many separators stay linear and unambiguous.
        let long = format!("a/{0} b/{0}", " ".repeat(10_000));
        assert_eq!(g(&long).map(|n| n.len()), Some(10_000));
    }

    #[test]
    fn quoting() {
        assert_eq!(
            unquote(b"\"a\\tb\\\"\" rest"),
            Some((b"a\tb\"".to_vec(), &b" rest"[..]))
        );
        assert_eq!(unquote(b"\"\\777\""), None);
        assert_eq!(unquote(b"\"open"), None);
        assert_eq!(unquote(b"\"bad \\q\""), None);
        assert!(is_dev_null(b"/dev/null\t1970-01-01"));
        assert!(!is_dev_null(b"/dev/nullx"));
    }
}
