//! Repository guidance (docs/design.md §15): `REVIEW.md` and `AGENTS.md` at the repository's top
//! and `[[instructions]]` entries (`paths` globs + `text` or `file`) in warden.toml. Read
//! from the same side as the config (the base of the change in CI and for ranges), so a
//! change that edits them does not steer its own review; capped at [`GUIDANCE_CAP`] bytes
//! in all, the cut named in the plan; each unit's prompt carries, fenced as data, the
//! pieces whose paths match its file.

use super::raw::RawInstruction;
use crate::path_rules::{PathRules, Verdict};

/// The most guidance bytes, all pieces together, any prompt carries.
pub const GUIDANCE_CAP: usize = 16 * 1024;

/// The repository-level guidance files, read in this order.
pub const GUIDANCE_FILES: &[&str] = &["REVIEW.md", "AGENTS.md"];

/// One `[[instructions]]` entry, validated.
#[derive(Debug, Clone)]
pub struct Instruction {
    /// Its globs as written (empty: every file).
    pub paths: Vec<String>,
    rules: Option<PathRules>,
    /// Inline text.
    pub text: Option<String>,
    /// A repository file holding the text (read from the config's side).
    pub file: Option<String>,
}

/// One piece of guidance as loaded.
#[derive(Debug, Clone)]
pub struct GuidanceDoc {
    /// Where it came from: `REVIEW.md`, `AGENTS.md`, `[[instructions]] 2`, or the
    /// instruction's `file`.
    pub source: String,
    /// Its globs (empty: every file).
    pub paths: Vec<String>,
    rules: Option<PathRules>,
    /// The text sent (after the cap).
    pub text: String,
    /// Bytes left out by the cap.
    pub cut: usize,
    /// An instruction's `file` that the side read has not got (nothing sent).
    pub missing: bool,
}

/// Every piece of guidance of a review, in order.
#[derive(Debug, Clone, Default)]
pub struct Guidance {
    /// The pieces.
    pub docs: Vec<GuidanceDoc>,
    /// Where they were read: `base 1a2b3c4`, `the working tree`.
    pub from: String,
}

impl GuidanceDoc {
    fn applies(&self, path: &str) -> bool {
        match &self.rules {
            None => true,
            Some(r) => matches!(r.verdict(std::path::Path::new(path)), Verdict::Matched(_)),
        }
    }
}

impl Guidance {
    /// Reads the guidance through `read` (a repository path → its bytes on the trusted
    /// side, None when absent): the top-level files, then each instruction, capped.
    pub fn load(
        instructions: &[Instruction],
        from: String,
        read: &dyn Fn(&str) -> Option<Vec<u8>>,
    ) -> Guidance {
        let mut pieces: Vec<Piece> = Vec::new();
        for name in GUIDANCE_FILES {
            if let Some(b) = read(name) {
                pieces.push((name.to_string(), Vec::new(), None, Some(lossy(b))));
            }
        }
        for (i, ins) in instructions.iter().enumerate() {
            let (source, text) = match (&ins.text, &ins.file) {
                (Some(t), _) => (format!("[[instructions]] {}", i + 1), Some(t.clone())),
                (None, Some(f)) => (f.clone(), read(f).map(lossy)),
                (None, None) => continue,
            };
            pieces.push((source, ins.paths.clone(), ins.rules.clone(), text));
        }
        let mut left = GUIDANCE_CAP;
        let docs = pieces
            .into_iter()
            .map(|(source, paths, rules, text)| {
                let missing = text.is_none();
                let full = text.unwrap_or_default();
                let mut end = full.len().min(left);
                while !full.is_char_boundary(end) {
                    end -= 1;
                }
                left -= end;
                GuidanceDoc {
                    source,
                    paths,
                    rules,
                    cut: full.len() - end,
                    text: full[..end].to_string(),
                    missing,
                }
            })
            .collect();
        Guidance { docs, from }
    }

    /// The pieces that reach `path`, and their text as one block (empty: none).
    pub(crate) fn for_path(&self, path: &str) -> (Vec<String>, String) {
        let mut names = Vec::new();
        let mut text = String::new();
        for d in self.docs.iter().filter(|d| !d.text.is_empty()) {
            if d.applies(path) {
                names.push(d.source.clone());
                text.push_str(&format!("## {}\n{}\n", d.source, d.text.trim_end()));
                if d.cut > 0 {
                    text.push_str(&format!(
                        "[{} more bytes cut: guidance is capped at {} KiB]\n",
                        d.cut,
                        GUIDANCE_CAP / 1024
                    ));
                }
            }
        }
        (names, text)
    }
}

/// A piece before the cap: source, globs, their rules, and the text (None: missing).
type Piece = (String, Vec<String>, Option<PathRules>, Option<String>);

fn lossy(b: Vec<u8>) -> String {
    String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `[[instructions]]` checked: globs that compile, exactly one of `text` and `file`, a
/// `file` relative inside the repository. An error is the offset of the bad value and
/// the message (the caller names file:line:column).
pub(super) fn resolve(raw: &[RawInstruction]) -> Result<Vec<Instruction>, (usize, String)> {
    let mut out = Vec::new();
    for (i, r) in raw.iter().enumerate() {
        let n = i + 1;
        let (paths, rules) = match &r.paths {
            None => (Vec::new(), None),
            Some(p) => {
                let list = p.get_ref().clone();
                let rules = PathRules::new(&list).map_err(|(k, e)| {
                    (
                        p.span().start,
                        format!("[[instructions]] {n}: paths[{k}]: {e}"),
                    )
                })?;
                (list, Some(rules))
            }
        };
        let text = r.text.as_ref().map(|t| t.get_ref().clone());
        let file = r.file.as_ref().map(|f| f.get_ref().trim().to_string());
        let at = r
            .text
            .as_ref()
            .map(|t| t.span().start)
            .or(r.file.as_ref().map(|f| f.span().start))
            .or(r.paths.as_ref().map(|p| p.span().start))
            .unwrap_or(0);
        match (&text, &file) {
            (Some(_), Some(_)) | (None, None) => {
                return Err((
                    at,
                    format!(
                        "[[instructions]] {n}: give exactly one of `text` (the guidance) and `file` (a repository file holding it)"
                    ),
                ));
            }
            (None, Some(f))
                if f.is_empty()
                    || f.starts_with('/')
                    || f.split('/').any(|c| c == ".." || c == ".git") =>
            {
                return Err((
                    at,
                    format!(
                        "[[instructions]] {n}: file `{f}`: a path relative to the repository's top, inside it (no `..`, no `.git`)"
                    ),
                ));
            }
            _ => {}
        }
        out.push(Instruction {
            paths,
            rules,
            text,
            file,
        });
    }
    Ok(out)
}
