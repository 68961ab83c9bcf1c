//! Patch bytes into lines, without their terminators.

/// Which bytes end a line.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Ends {
    /// LF and CRLF, as git reads every patch: a lone CR is part of its line (a CR-only
    /// CSV file inside an LF patch).
    Lf,
    /// Lone CRs too: a patch saved with classic Mac line ends, which git does not read.
    LfAndLoneCr,
}

/// Splits `input` at the line ends `ends` names.
pub(super) fn split(input: &[u8], ends: Ends) -> Vec<&[u8]> {
    let cr = ends == Ends::LfAndLoneCr;
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in input.iter().enumerate() {
        match b {
            b'\n' => {
                let line = &input[start..i];
                out.push(line.strip_suffix(b"\r").unwrap_or(line));
                start = i + 1;
            }
            b'\r' if cr && input.get(i + 1) != Some(&b'\n') => {
                out.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < input.len() {
        out.push(&input[start..]);
    }
    out
}

fn lone_crs(input: &[u8]) -> usize {
    input
        .iter()
        .enumerate()
        .filter(|(i, b)| **b == b'\r' && input.get(i + 1) != Some(&b'\n'))
        .count()
}

/// Whether a CR not followed by LF occurs anywhere.
pub(super) fn has_lone_cr(input: &[u8]) -> bool {
    lone_crs(input) > 0
}

/// Whether lone CRs outnumber LFs: most lines end in a bare CR.
pub(super) fn mostly_lone_crs(input: &[u8]) -> bool {
    lone_crs(input) > input.iter().filter(|b| **b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::{Ends, split};

    #[test]
    fn lf_crlf_and_cr_only() {
        let lf = |s: &'static [u8]| split(s, Ends::Lf);
        let cr = |s: &'static [u8]| split(s, Ends::LfAndLoneCr);
        assert_eq!(lf(b"a\nb\r\nc"), [&b"a"[..], b"b", b"c"]);
        assert_eq!(cr(b"a\rb\rc\r"), [&b"a"[..], b"b", b"c"]);
        assert_eq!(lf(b"a\rb\rc\r"), [&b"a\rb\rc\r"[..]]);
        // A lone CR inside an LF patch is content, however many there are.
        assert_eq!(lf(b"+x\ry\rz\r\n+z\n"), [&b"+x\ry\rz"[..], b"+z"]);
        assert_eq!(lf(b"\n\n"), [&b""[..], b""]);
        assert!(lf(b"").is_empty());
    }
}
