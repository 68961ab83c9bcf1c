//! Findings extraction from a model's answer (docs/design.md §9 and §14). The answer is data:
//! warden looks for the answer's own JSON object with a `findings` list — the last
//! top-level object that has one, fenced or not; never a format example quoted before
//! it nor a field nested inside a finding — and checks every entry against the schema,
//! tolerating the drift real models write (`fields.rs`). The answer is read in one pass
//! (`scan.rs`), linear in its length, nesting at most [`MAX_NESTING`] deep.
//!
//! An answer with no such object is a `bad_response`, never a clean review. An object the
//! answer ends inside (a cut) or that stops being JSON keeps the entries complete before
//! that point and says so in [`Extracted::incomplete`]: the caller never calls it clean.

mod fields;
mod scan;

pub use scan::MAX_NESTING;

use crate::severity::{Confidence, Severity};
use scan::{End, Entries, Found, Pass};
use serde_json::Value;

/// One finding as the model reported it, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelFinding {
    /// How bad.
    pub severity: Severity,
    /// How sure the model is (medium when it did not say).
    pub confidence: Confidence,
    /// A short summary.
    pub title: String,
    /// What goes wrong and why.
    pub description: String,
    /// New-file line it starts on (inside the chunk).
    pub line: u32,
    /// New-file line it ends on (clamped to the chunk).
    pub end_line: u32,
    /// A fix in words, when the model gave one.
    pub suggestion: Option<String>,
    /// The exact new text of lines `line..=end_line` that would fix the problem.
    pub replacement: Option<String>,
    /// The skill the model attributed it to (consolidated requests ask for it).
    pub skill: Option<String>,
}

/// How many findings one answer may contribute unless `[execution]
/// maxFindingsPerAnswer` says otherwise (docs/design.md §13, "Bounds"): a provider answering
/// 100,000 findings costs what 100 do.
pub(crate) const DEFAULT_MAX_FINDINGS_PER_ANSWER: usize = 100;

/// How many dropped entries one answer names; the rest are counted.
pub(crate) const MAX_NAMED_DROPS: usize = 20;

/// An entry of the answer's list that did not become a finding, named for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// Its place in the answer's list, from 1.
    pub entry: usize,
    /// Its title, when it had one (cut to 80 characters).
    pub title: Option<String>,
    /// Why it was dropped ("severity \"urgent\" is none of ...", "line 50 is outside the
    /// lines under review (10-20)").
    pub reason: String,
}

/// What was extracted from one answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    /// The valid findings inside the chunk's lines, at most the cap.
    pub findings: Vec<ModelFinding>,
    /// Findings whose lines fall outside the chunk.
    pub dropped_out_of_range: usize,
    /// Entries that do not match the schema (missing title, unknown severity, no line),
    /// and an entry the answer stopped inside.
    pub dropped_invalid: usize,
    /// Entries that name a file other than the unit's (a tool loop read it): never moved
    /// onto the unit's file, dropped and counted (docs/design.md §15).
    pub dropped_other_file: usize,
    /// The first [`MAX_NAMED_DROPS`] dropped entries (either kind), named.
    pub dropped: Vec<Dropped>,
    /// Entries after the cap was reached: counted, never read into findings.
    pub over_cap: usize,
    /// Set when the object did not end as JSON should: the answer ended inside it (a
    /// cut) or it stopped being JSON. The findings complete before that are kept; the
    /// answer is never a clean review.
    pub incomplete: Option<String>,
}

impl Extracted {
    /// Entries dropped, of either kind.
    pub(crate) fn dropped_count(&self) -> usize {
        self.dropped_out_of_range + self.dropped_invalid + self.dropped_other_file
    }
}

/// Why an answer has no findings list to read: the `bad_response` outcome's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoFindings {
    /// The answer stops inside a JSON object before any `findings` list.
    #[error("the answer ends inside its last JSON object, before a `findings` list")]
    Unclosed,
    /// Nesting past [`MAX_NESTING`]: the reader stops rather than recurse.
    #[error("the answer nests JSON deeper than {max} levels (at byte {at}): not read", max = MAX_NESTING)]
    TooDeep {
        /// The byte where the limit was passed.
        at: usize,
    },
    /// No object with a `findings` list anywhere.
    #[error("no JSON object with a `findings` list in the answer (starts with {start:?})")]
    NoList {
        /// The answer's first 80 characters.
        start: String,
    },
    /// The reading was cut off before it ended (its thread panicked or was cancelled).
    #[error("the findings extraction did not finish ({0})")]
    Unfinished(String),
}

/// Extracts findings whose lines fall in `start..=end` (new-file numbers of the chunk),
/// keeping at most [`DEFAULT_MAX_FINDINGS_PER_ANSWER`]. Err carries a short reason for
/// the `bad_response` outcome.
pub fn extract(answer: &str, start: u32, end: u32) -> Result<Extracted, NoFindings> {
    extract_capped(answer, start, end, DEFAULT_MAX_FINDINGS_PER_ANSWER)
}

/// [`extract`] keeping at most `cap` findings. The list is read one entry at a time: each
/// entry is checked and dropped or kept until `cap` are kept, and every later entry is
/// read to its end and counted in `over_cap`. Time is linear in the answer and memory is
/// the kept findings plus one entry.
pub(crate) fn extract_capped(
    answer: &str,
    start: u32,
    end: u32,
    cap: usize,
) -> Result<Extracted, NoFindings> {
    extract_counted(answer, start, end, cap).0
}

/// [`extract_capped`] for a unit of the file `path`: an entry that names another file
/// (`file`, `path`, `filename`, `filePath`, `file_path`) is dropped and counted in
/// [`Extracted::dropped_other_file`], never read as a finding of this file.
pub(crate) fn extract_for(
    answer: &str,
    path: &str,
    (start, end): (u32, u32),
    cap: usize,
) -> Result<Extracted, NoFindings> {
    extract_scoped(answer, Some(path), start, end, cap).0
}

/// [`extract_capped`], and the bytes the pass stepped over (the counting tests hold this
/// to the answer's length).
pub(crate) fn extract_counted(
    answer: &str,
    start: u32,
    end: u32,
    cap: usize,
) -> (Result<Extracted, NoFindings>, usize) {
    extract_scoped(answer, None, start, end, cap)
}

fn extract_scoped(
    answer: &str,
    path: Option<&str>,
    start: u32,
    end: u32,
    cap: usize,
) -> (Result<Extracted, NoFindings>, usize) {
    let mut pass = Pass::new(answer);
    let range = Range { start, end, cap };
    let found = pass.run(|| Collector {
        range,
        path,
        entries: 0,
        out: Extracted::default(),
    });
    let result = match found {
        Found::Object(c, end) => {
            let mut out = c.out;
            out.incomplete = match end {
                End::Closed => None,
                End::Unclosed => Some("the answer ends inside its findings object".into()),
                End::Broken(why) => Some(format!("the findings object is {why}")),
            };
            Ok(out)
        }
        Found::UnclosedWithoutList => Err(NoFindings::Unclosed),
        Found::TooDeep(at) => Err(NoFindings::TooDeep { at }),
        Found::Nothing => Err(NoFindings::NoList {
            start: answer.chars().take(80).collect(),
        }),
    };
    (result, pass.work)
}

#[derive(Clone, Copy)]
struct Range {
    start: u32,
    end: u32,
    cap: usize,
}

/// Sorts one candidate's entries into kept, dropped (named) and over the cap.
struct Collector<'p> {
    range: Range,
    /// The unit's file, when known: entries naming another are dropped.
    path: Option<&'p str>,
    entries: usize,
    out: Extracted,
}

impl Collector<'_> {
    fn drop_named(&mut self, title: Option<String>, reason: String) {
        if self.out.dropped.len() < MAX_NAMED_DROPS {
            self.out.dropped.push(Dropped {
                entry: self.entries,
                title,
                reason,
            });
        }
    }
}

impl Entries for Collector<'_> {
    fn wants(&self) -> bool {
        self.out.findings.len() < self.range.cap
    }

    fn entry(&mut self, v: Value) {
        self.entries += 1;
        let Range { start, end, .. } = self.range;
        if let Some(other) = self.path.and_then(|p| fields::other_file(&v, p)) {
            self.out.dropped_other_file += 1;
            let why = format!(
                "it names another file ({other:?}, not {:?}): not moved onto this one",
                self.path.unwrap_or_default()
            );
            self.drop_named(fields::title_of(&v), why);
            return;
        }
        match fields::validate(&v) {
            Err(why) => {
                self.out.dropped_invalid += 1;
                self.drop_named(fields::title_of(&v), why.to_string());
            }
            Ok(f) if f.line < start || f.line > end => {
                self.out.dropped_out_of_range += 1;
                let why = format!(
                    "line {} is outside the lines under review ({start}-{end})",
                    f.line
                );
                self.drop_named(Some(f.title), why);
            }
            Ok(mut f) => {
                f.end_line = f.end_line.clamp(f.line, end);
                self.out.findings.push(f);
            }
        }
    }

    fn skipped(&mut self) {
        self.entries += 1;
        self.out.over_cap += 1;
    }

    fn lost(&mut self, why: String) {
        self.entries += 1;
        if self.wants() {
            self.out.dropped_invalid += 1;
            self.drop_named(None, why);
        } else {
            self.out.over_cap += 1;
        }
    }
}

#[cfg(test)]
mod tests;
