//! Patch bytes into lines, without their terminators.

/// Splits `input` at line ends. LF and CRLF end lines as git reads them. Input whose line
/// ends are mostly lone CRs (a patch saved with classic Mac line ends) is split at lone
/// CRs too, so it does not read as one long line naming one file.
pub(super) fn split(input: &[u8]) -> Vec<&[u8]> {
    let cr_mode = lone_crs(input) > input.iter().filter(|b| **b == b'\n').count();
    let mut out = Vec::new();
    let mut start = 0;
    for (i, b) in input.iter().enumerate() {
        match b {
            b'\n' => {
                let line = &input[start..i];
                out.push(line.strip_suffix(b"\r").unwrap_or(line));
                start = i + 1;
            }
            b'\r' if cr_mode && input.get(i + 1) != Some(&b'\n') => {
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

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn lf_crlf_and_cr_only() {
        assert_eq!(split(b"a\nb\r\nc"), [&b"a"[..], b"b", b"c"]);
        assert_eq!(split(b"a\rb\rc\r"), [&b"a"[..], b"b", b"c"]);
        // A lone CR inside an LF patch is content.
        assert_eq!(split(b"+x\ry\n+z\n"), [&b"+x\ry"[..], b"+z"]);
        assert_eq!(split(b"\n\n"), [&b""[..], b""]);
        assert!(split(b"").is_empty());
    }
}
