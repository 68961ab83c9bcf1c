//! Which new-side lines of a pull request's diff take an inline comment: the lines of its
//! hunks (added and context), read from the forge's own patch text, the same diff it
//! checks a comment's position against. Their text anchors findings across pushes.

use std::collections::{BTreeMap, HashMap};

/// New-side line → its text, per hunk-covered line of one file.
pub(crate) type FileLines = BTreeMap<u32, String>;

/// The lines of every file of a pull request's diff.
#[derive(Debug, Clone, Default)]
pub struct DiffLines {
    /// path → lines.
    pub files: HashMap<String, FileLines>,
}

impl DiffLines {
    /// The text of `path`'s line `line`, if a hunk shows it.
    pub fn text(&self, path: &str, line: u32) -> Option<&str> {
        self.files.get(path)?.get(&line).map(String::as_str)
    }

    /// Whether every line of `start..=end` of `path` is in one hunk (contiguous: a gap
    /// between hunks breaks the run).
    pub fn covers(&self, path: &str, start: u32, end: u32) -> bool {
        let Some(f) = self.files.get(path) else {
            return false;
        };
        start <= end && (start..=end).all(|l| f.contains_key(&l))
    }

    /// Adds `path`'s patch text (unified hunks as the forge gives them).
    pub(crate) fn add_patch(&mut self, path: &str, patch: &str) {
        self.files.insert(path.to_string(), parse(patch));
    }
}

/// The new-side lines of unified hunks. Malformed headers end the hunk; nothing panics.
pub fn parse(patch: &str) -> FileLines {
    let mut out = FileLines::new();
    let mut next: Option<u32> = None;
    // A final newline ends the last line; it does not start an empty one.
    let patch = patch.strip_suffix('\n').unwrap_or(patch);
    for line in patch.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(h) = line.strip_prefix("@@ ") {
            next = new_start(h);
            continue;
        }
        let Some(n) = next else { continue };
        match line.as_bytes().first() {
            Some(b'+') | Some(b' ') => {
                out.insert(n, line[1..].to_string());
                next = n.checked_add(1);
            }
            Some(b'-') | Some(b'\\') => {}
            // An empty line inside a hunk is a context line whose text is empty (some
            // tools drop the space).
            None => {
                out.insert(n, String::new());
                next = n.checked_add(1);
            }
            _ => next = None,
        }
    }
    out
}

/// `-a,b +c,d @@` → c.
fn new_start(header: &str) -> Option<u32> {
    let plus = header.split_whitespace().find(|t| t.starts_with('+'))?;
    plus[1..].split(',').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_give_their_new_side_lines() {
        let patch = "@@ -1,3 +1,4 @@\n a\n-b\n+B\n+C\n c\n@@ -10,2 +11,2 @@ fn x\n x\n+y";
        let f = parse(patch);
        let lines: Vec<(u32, &str)> = f.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert_eq!(
            lines,
            vec![(1, "a"), (2, "B"), (3, "C"), (4, "c"), (11, "x"), (12, "y")]
        );
        let mut d = DiffLines::default();
        d.add_patch("p", patch);
        assert!(d.covers("p", 2, 4));
        assert!(!d.covers("p", 4, 11));
        assert!(!d.covers("q", 1, 1));
        assert_eq!(d.text("p", 12), Some("y"));
    }

    #[test]
    fn garbage_gives_no_lines_and_no_panic() {
        for p in [
            "@@ -x +y @@\n+a",
            "+a\n+b",
            "@@ -1 +4294967295 @@\n+a\n+b",
            "",
        ] {
            let _ = parse(p);
        }
        assert!(parse("@@ -x +y @@\n+a").is_empty());
        // The newline that ends the last line adds no line (an empty context line would
        // take a comment GitHub refuses).
        assert_eq!(parse("@@ -0,0 +1,2 @@\n+a\n+b\n").len(), 2);
    }
}
