//! Where a review's reports go: stdout and files, several formats from one run. Every
//! file (and `$GITHUB_STEP_SUMMARY`) is opened before the first model request, so a
//! mistyped directory costs nothing; a report that still cannot be written at the end is
//! printed to stderr rather than lost.
//!
//! Files never follow a link inside the repository (docs/design.md §14): each is written as a
//! temporary beside it and renamed over it (a link the change committed at `warden.sarif`
//! is replaced, its target untouched), and a path through a linked folder inside the
//! checkout is refused before any request ([`refuse_linked_folders`]).

use crate::atomic_file::Output;
use crate::error::{Error, Result};
use crate::render::{self, Layout, summary_md};
use crate::report::{Format, OutputSpec, Report, redact_text};
use std::io::Write;
use std::path::{Component, Path, PathBuf};

enum Sink {
    Stdout,
    /// `-o [FORMAT=]PATH`: a temporary beside it, renamed over it once written.
    File(PathBuf, Output),
    /// `$GITHUB_STEP_SUMMARY`, appended to (other steps write there too): what it holds
    /// and the summary, through a temporary beside it.
    StepSummary(PathBuf, Output),
}

/// Refuses `path` (given with `what`, e.g. `-o` or `--trace`) when it passes through a
/// folder that is a symbolic link inside `checkout`: a change can commit such a link to
/// make warden create files outside the repository. A link at the file itself is
/// replaced by the write, not followed. Paths outside the checkout are the user's own.
pub fn refuse_linked_folders(path: &Path, checkout: Option<&Path>, what: &str) -> Result<()> {
    let Some(root) = checkout.and_then(|c| c.canonicalize().ok()) else {
        return Ok(());
    };
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| Error::io(".", e))?
            .join(path)
    };
    let Ok(rest) = absolute.strip_prefix(&root) else {
        return Ok(());
    };
    let folders: Vec<Component> = rest.components().collect();
    let mut at = root.clone();
    for c in folders.iter().take(folders.len().saturating_sub(1)) {
        at.push(c);
        let linked = std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink());
        if linked {
            return Err(Error::Usage(format!(
                "{what} {}: {} is a symbolic link inside the repository; warden does not write through links the change may have planted: choose a path outside it or without links; nothing was sent to any model",
                path.display(),
                at.display()
            )));
        }
        if matches!(c, Component::ParentDir) {
            // Above a `..` the walk has left what it can vouch for; a link before it was
            // caught above.
            break;
        }
    }
    Ok(())
}

struct Destination {
    format: Format,
    sink: Sink,
}

/// The opened destinations of one review.
pub struct Outputs {
    destinations: Vec<Destination>,
    /// Keys redacted from every rendered output (the report is redacted already; this
    /// is the second line).
    keys: crate::provider::secret::Redactor,
    /// How the text report on stdout is laid out (files are never wrapped).
    layout: Layout,
}

fn create(path: &Path, checkout: Option<&Path>) -> Result<Output> {
    Output::open(path, checkout).map_err(|e| {
        Error::Usage(format!(
            "-o {}: cannot create the report file ({e}): create its directory or choose another path; nothing was sent to any model",
            path.display()
        ))
    })
}

fn open_step_summary(path: &Path, checkout: Option<&Path>) -> Result<Output> {
    Output::open(path, checkout).map_err(|e| {
        Error::Usage(format!(
            "GITHUB_STEP_SUMMARY={}: cannot open the step summary for writing ({e}); nothing was sent to any model",
            path.display()
        ))
    })
}

/// Writes `text` to `file` and renames it over its destination (`before`: what the
/// destination held, kept in front, for a file that is appended to).
fn finish(mut file: Output, before: &[u8], text: &str) -> std::io::Result<()> {
    file.file().write_all(before)?;
    file.file().write_all(text.as_bytes())?;
    file.commit()
}

impl Outputs {
    /// Opens every destination: `format` goes to stdout unless a bare `-o PATH` takes it,
    /// each `FORMAT=PATH` to its file, and the step summary to `step_summary` when a
    /// `github` report is written. A path through a linked folder inside `checkout` is
    /// refused.
    pub fn open(
        format: Format,
        specs: &[OutputSpec],
        step_summary: Option<PathBuf>,
        checkout: Option<&Path>,
    ) -> Result<Outputs> {
        let bare: Vec<&OutputSpec> = specs.iter().filter(|s| s.format.is_none()).collect();
        if let [a, b, ..] = bare.as_slice() {
            return Err(Error::Usage(format!(
                "-o {} and -o {}: only one bare PATH takes the --format report; name the format of the others, e.g. -o sarif={}",
                a.path.display(),
                b.path.display(),
                b.path.display()
            )));
        }
        let mut seen: Vec<&Path> = Vec::new();
        for s in specs {
            if seen.contains(&s.path.as_path()) {
                return Err(Error::Usage(format!(
                    "-o {}: two reports would be written to the same file",
                    s.path.display()
                )));
            }
            seen.push(&s.path);
            refuse_linked_folders(&s.path, checkout, "-o")?;
        }
        let mut destinations = Vec::new();
        if bare.is_empty() {
            destinations.push(Destination {
                format,
                sink: Sink::Stdout,
            });
        }
        for s in specs {
            destinations.push(Destination {
                format: s.format.unwrap_or(format),
                sink: Sink::File(s.path.clone(), create(&s.path, checkout)?),
            });
        }
        if destinations.iter().any(|d| d.format == Format::Github)
            && let Some(path) = step_summary
        {
            refuse_linked_folders(&path, checkout, "GITHUB_STEP_SUMMARY=")?;
            let file = open_step_summary(&path, checkout)?;
            destinations.push(Destination {
                format: Format::Github,
                sink: Sink::StepSummary(path, file),
            });
        }
        Ok(Outputs {
            destinations,
            keys: crate::provider::secret::Redactor::new(&[]),
            layout: Layout::default(),
        })
    }

    /// Redacts `keys` (see `report::configured_keys`) from every output as it is written.
    pub fn redacting(mut self, keys: crate::provider::secret::Redactor) -> Self {
        self.keys = keys;
        self
    }

    /// Lays out the text report on stdout (its width, `-v`'s full route table).
    pub fn text_layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// Whether stdout receives a report (then colour follows the terminal).
    pub fn uses_stdout(&self) -> bool {
        self.destinations
            .iter()
            .any(|d| matches!(d.sink, Sink::Stdout))
    }

    /// Writes every report. A destination that fails gets its report printed to stderr;
    /// the others are still written; the first failure is returned (exit 2).
    pub fn write(self, report: &Report) -> Result<()> {
        let mut first_error = None;
        let keys = self.keys;
        let layout = self.layout;
        let render = |format: Format| redact_text(&keys, &render::render(format, report));
        for d in self.destinations {
            let what = format!("the {} report", d.format.name());
            let (text, result, name, what) = match d.sink {
                Sink::Stdout => {
                    let text = redact_text(&keys, &render::render_with(d.format, report, layout));
                    let result = write_stdout(&text);
                    (text, result, "<stdout>".into(), what)
                }
                Sink::File(path, file) => {
                    // Files never get terminal colours.
                    let text = console::strip_ansi_codes(&render(d.format)).into_owned();
                    let result = finish(file, &[], &text);
                    (text, result, path, what)
                }
                Sink::StepSummary(path, file) => {
                    let md = summary_md::render(report);
                    let text = redact_text(&keys, &crate::text::escape::guard(&md));
                    // Appended: what the file held first (written in place, a device or
                    // a pipe keeps its own).
                    let before = match &file {
                        Output::Replace(_) => std::fs::read(&path).unwrap_or_default(),
                        Output::Direct(..) => Vec::new(),
                    };
                    let result = finish(file, &before, &text);
                    (text, result, path, "the step summary".to_string())
                }
            };
            if let Err(e) = result {
                crate::text::stdio::eprint_line(&format!(
                    "error: {}: cannot write {what} ({e}); here it is instead:\n{text}",
                    name.display(),
                ));
                first_error.get_or_insert(Error::io(name, e));
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// A closed stdout (`warden | head`) is not an error: warden stops writing quietly.
pub fn write_stdout(text: &str) -> std::io::Result<()> {
    crate::text::stdio::print(text)
}
