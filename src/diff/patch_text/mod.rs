//! Reads unified diff text (`--diff FILE|-`) as `git apply` reads it: git's extended
//! format (renames, copies, modes, binary markers, quoted non-UTF-8 paths) and plain
//! `diff -u`/`diff -ruN` output alike (timestamps, epoch-dated creations and deletions,
//! `Binary files … differ` lines). Every file the text names comes out as one
//! [`FileChange`]; text that cannot be read is refused with the line at fault.
//!
//! [`parse_bytes`] is a pure function from bytes to files or a typed [`PatchError`], and
//! never panics, so a fuzzer can drive it directly.

mod error;
mod file;
mod hunk;
mod lines;
mod names;
#[cfg(test)]
mod tests;

pub use error::{ErrorKind, PatchError};

use super::{DiffSet, FileChange};
use file::Pending;

/// Parses `input` into a [`DiffSet`]. `source_name` appears in errors ("stdin", a path).
pub fn parse(input: &[u8], source_name: &str) -> crate::Result<DiffSet> {
    parse_stripped(input, source_name, None)
}

/// As [`parse`], with `strip` leading components taken off every name as `git apply -p
/// N` does (None: git's default of 1, guessed for traditional headers).
pub fn parse_stripped(
    input: &[u8],
    source_name: &str,
    strip: Option<usize>,
) -> crate::Result<DiffSet> {
    let files = parse_bytes_stripped(input, strip).map_err(|e| crate::Error::Patch {
        source_name: source_name.to_string(),
        line: e.line,
        message: e.kind.to_string(),
    })?;
    Ok(DiffSet {
        files,
        description: format!("patch from {source_name}"),
    })
}

/// Parses `input` into its files, in the order the text names them.
///
/// Lines end at LF (or CRLF), as git reads them: a lone CR is part of its line (a
/// CR-only CSV file in `git diff`). Only when that reading finds no file and the input
/// has lone CRs is it read again with lone CRs ending lines too (a patch saved with
/// classic Mac line ends, which git refuses); its error is the one reported when most
/// lines end in a lone CR.
pub fn parse_bytes(input: &[u8]) -> Result<Vec<FileChange>, PatchError> {
    parse_bytes_stripped(input, None)
}

/// As [`parse_bytes`], with `git apply -p N`'s stripping: N components off the names of
/// `diff --git` lines and `---`/`+++` lines, N - 1 off `rename`/`copy` lines (which carry
/// no `a/`/`b/`), no guessing. None is git's default, 1, guessed for traditional headers.
pub fn parse_bytes_stripped(
    input: &[u8],
    strip: Option<usize>,
) -> Result<Vec<FileChange>, PatchError> {
    let lf = read(input, lines::Ends::Lf, strip);
    if lf.as_ref().is_ok_and(|f| !f.is_empty()) || !lines::has_lone_cr(input) {
        return lf;
    }
    match read(input, lines::Ends::LfAndLoneCr, strip) {
        Ok(files) if !files.is_empty() => Ok(files),
        cr if lines::mostly_lone_crs(input) => cr,
        _ => lf,
    }
}

/// One reading of `input` with the line ends `ends`.
fn read(
    input: &[u8],
    ends: lines::Ends,
    strip: Option<usize>,
) -> Result<Vec<FileChange>, PatchError> {
    let mut reader = Reader {
        lines: lines::split(input, ends),
        i: 0,
        p: strip.unwrap_or(1),
        p_known: strip.is_some(),
        files: Vec::new(),
    };
    let saw_header = reader.run()?;
    if !saw_header && !input.iter().all(u8::is_ascii_whitespace) {
        return Err(PatchError {
            line: 1,
            kind: ErrorKind::NoDiff,
        });
    }
    Ok(reader.files)
}

struct Reader<'a> {
    lines: Vec<&'a [u8]>,
    /// Index of the next line to read.
    i: usize,
    /// Leading path components to strip (`-p`), guessed once from the first traditional
    /// header as git does.
    p: usize,
    p_known: bool,
    files: Vec<FileChange>,
}

fn err(index: usize, kind: ErrorKind) -> PatchError {
    PatchError {
        line: index + 1,
        kind,
    }
}

impl<'a> Reader<'a> {
    fn line(&self, index: usize) -> Option<&'a [u8]> {
        self.lines.get(index).copied()
    }

    /// git's `find_header` loop: anything that is not a file header is skipped (mail
    /// text, `diff -ruN` command lines, `Only in` notes). Returns whether any file
    /// header was seen.
    fn run(&mut self) -> Result<bool, PatchError> {
        let mut saw = false;
        while let Some(line) = self.line(self.i) {
            if let Some(rest) = line.strip_prefix(b"diff --git ") {
                self.git_file(rest)?;
            } else if line.starts_with(b"diff --cc ")
                || line.starts_with(b"diff --combined ")
                || line.starts_with(b"@@@ ")
            {
                return Err(err(self.i, ErrorKind::Combined));
            } else if line.starts_with(b"@@ -") {
                return Err(err(self.i, ErrorKind::HunkWithoutFile));
            } else if line.starts_with(b"--- ")
                && self
                    .line(self.i + 1)
                    .is_some_and(|n| n.starts_with(b"+++ "))
            {
                self.traditional_file()?;
            } else if let Some((old, new)) = standalone_binary(line) {
                self.binary_file(old, new)?;
            } else {
                self.i += 1;
                continue;
            }
            saw = true;
        }
        Ok(saw)
    }

    /// A `diff --git` header, its extended lines, and its hunks or binary marker.
    fn git_file(&mut self, rest: &'a [u8]) -> Result<(), PatchError> {
        let at = self.i;
        let mut f = Pending {
            def_name: names::git_header_name(self.p, rest),
            is_new: Some(false),
            is_delete: Some(false),
            ..Pending::default()
        };
        self.i += 1;
        let body = self.i;
        while let Some(line) = self.line(self.i) {
            if line.starts_with(b"@@ -") {
                break;
            }
            if let Some(old) = line.strip_prefix(b"--- ") {
                let new = self.line(self.i + 1).and_then(|n| n.strip_prefix(b"+++ "));
                let taken = match new {
                    Some(new) => f
                        .take_git_names(old, new, self.p)
                        .map_err(|k| err(self.i, k))?,
                    None => false,
                };
                if !taken {
                    break;
                }
                self.i += 2;
                continue;
            }
            if !f.git_header_line(line, self.p) {
                break;
            }
            self.i += 1;
        }
        f.settle_git_names().map_err(|k| err(at, k))?;
        match self.line(self.i) {
            Some(l) if l.starts_with(b"@@ -") => self.hunks(&mut f)?,
            Some(l) if l == b"GIT binary patch" || git_binary_marker(l) => {
                // The encoded data lines that follow are skipped as text between files.
                f.binary = true;
                self.i += 1;
            }
            // git's `find_header`: a `diff --git` line followed by no header line names
            // no file (`git --remerge-diff` writes a "remerge CONFLICT" note there, and
            // the file's own header lines, if any, are read after it).
            _ if self.i == body => return Ok(()),
            _ => {}
        }
        self.finish(f, at)
    }

    /// A traditional `---`/`+++` pair, with git's rules for names and for creations and
    /// deletions (`/dev/null`, or the epoch timestamp `diff -N` writes).
    fn traditional_file(&mut self) -> Result<(), PatchError> {
        let at = self.i;
        let (Some(first), Some(second)) = (self.line(at), self.line(at + 1)) else {
            return Ok(());
        };
        let (first, second) = (&first[4..], &second[4..]);
        if !self.p_known {
            let q = names::guess_p(second);
            let p = names::guess_p(first).or(q);
            if let Some(p) = p.filter(|p| Some(*p) == q) {
                self.p = p;
                self.p_known = true;
            }
        }
        let p = self.p;
        let mut f = Pending::default();
        if names::is_dev_null(first) {
            (f.is_new, f.is_delete) = (Some(true), Some(false));
            f.new_name = names::traditional_name(second, None, p);
        } else if names::is_dev_null(second) {
            (f.is_new, f.is_delete) = (Some(false), Some(true));
            f.old_name = names::traditional_name(first, None, p);
        } else {
            let first_name = names::traditional_name(first, None, p);
            let name = names::traditional_name(second, first_name.as_deref(), p);
            if names::has_epoch_timestamp(first) {
                (f.is_new, f.is_delete) = (Some(true), Some(false));
                f.new_name = name;
            } else if names::has_epoch_timestamp(second) {
                (f.is_new, f.is_delete) = (Some(false), Some(true));
                f.old_name = name;
            } else {
                f.old_name = name.clone();
                f.new_name = name;
            }
        }
        if f.old_name.is_none() && f.new_name.is_none() {
            return Err(err(at, ErrorKind::MissingName));
        }
        self.i += 2;
        if self.line(self.i).is_some_and(|l| l.starts_with(b"@@ -")) {
            self.hunks(&mut f)?;
        }
        self.finish(f, at)
    }

    /// A `Binary files X and Y differ` line on its own, as plain `diff` writes it.
    fn binary_file(&mut self, old: &'a [u8], new: &'a [u8]) -> Result<(), PatchError> {
        let at = self.i;
        let name = |s: &[u8]| {
            (!names::is_dev_null(s))
                .then(|| names::git_line_name(s, self.p, false))
                .flatten()
        };
        let f = Pending {
            is_new: Some(names::is_dev_null(old)),
            is_delete: Some(names::is_dev_null(new)),
            old_name: name(old),
            new_name: name(new),
            binary: true,
            ..Pending::default()
        };
        self.i += 1;
        if f.old_name.is_none() && f.new_name.is_none() {
            return Ok(());
        }
        self.finish(f, at)
    }

    /// The hunks that follow a file header, each starting with `@@ -`.
    fn hunks(&mut self, f: &mut Pending) -> Result<(), PatchError> {
        while let Some(line) = self.line(self.i).filter(|l| l.starts_with(b"@@ -")) {
            let header = hunk::parse_header(line).map_err(|k| err(self.i, k))?;
            let (h, next) =
                hunk::read(&self.lines, self.i, header).map_err(|(at, k)| err(at, k))?;
            f.hunks.push(h);
            f.hunk_lines.push(self.i + 1);
            self.i = next;
        }
        // A `+`/`-` line right after a complete hunk means the counts are short: git
        // would skip it silently, warden refuses rather than drop a changed line.
        // `--- ` may start the next file, `-- ` a mail signature.
        if let Some(line) = self.line(self.i)
            && matches!(line.first(), Some(b'+' | b'-'))
            && !line.starts_with(b"--- ")
            && !matches!(line, b"-- " | b"--")
        {
            let header = f.hunk_lines.last().copied().unwrap_or(0);
            return Err(err(self.i, ErrorKind::LineAfterHunk { header }));
        }
        Ok(())
    }

    fn finish(&mut self, mut f: Pending, at: usize) -> Result<(), PatchError> {
        if let Err((later, earlier)) = hunk::order(&mut f.hunks, &mut f.hunk_lines) {
            let path = f.path().to_string();
            return Err(PatchError {
                line: later,
                kind: ErrorKind::OverlappingHunks {
                    path,
                    other: earlier,
                },
            });
        }
        let file = f.finish().map_err(|k| err(at, k))?;
        self.files.push(file);
        Ok(())
    }
}

/// `Binary files X and Y differ` or `Files X and Y differ` right after a git header.
fn git_binary_marker(line: &[u8]) -> bool {
    line.ends_with(b" differ")
        && (line.starts_with(b"Binary files ") || line.starts_with(b"Files "))
}

/// The two names of a standalone `Binary files X and Y differ` line. Names may contain
/// " and "; the split where both sides name the same file (or one is `/dev/null`) wins.
fn standalone_binary(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let body = line
        .strip_prefix(b"Binary files ")?
        .strip_suffix(b" differ")?;
    const SEP: &[u8] = b" and ";
    if body.first() == Some(&b'"') {
        let (_, rest) = names::unquote(body)?;
        let old = &body[..body.len() - rest.len()];
        return Some((old, rest.strip_prefix(SEP)?));
    }
    let splits: Vec<usize> = body
        .windows(SEP.len())
        .enumerate()
        .filter(|(_, w)| *w == SEP)
        .map(|(i, _)| i)
        .take(64)
        .collect();
    let pair = |at: usize| (&body[..at], &body[at + SEP.len()..]);
    let same = |(a, b): (&[u8], &[u8])| {
        names::is_dev_null(a)
            || names::is_dev_null(b)
            || names::git_line_name(a, 1, false) == names::git_line_name(b, 1, false)
    };
    let at = splits
        .iter()
        .copied()
        .find(|at| same(pair(*at)))
        .or(splits.first().copied())?;
    Some(pair(at))
}
