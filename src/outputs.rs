//! Where a review's reports go: stdout and files, several formats from one run. Every
//! file (and `$GITHUB_STEP_SUMMARY`) is opened before the first model request, so a
//! mistyped directory costs nothing; a report that still cannot be written at the end is
//! printed to stderr rather than lost.

use crate::error::{Error, Result};
use crate::report::{Format, OutputSpec, Report, redact_text, summary_md};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

enum Sink {
    Stdout,
    /// `-o [FORMAT=]PATH`, created (truncated) when opened.
    File(PathBuf, File),
    /// `$GITHUB_STEP_SUMMARY`, appended to (other steps write there too).
    StepSummary(PathBuf, File),
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
}

fn create(path: &Path) -> Result<File> {
    File::create(path).map_err(|e| {
        Error::Usage(format!(
            "-o {}: cannot create the report file ({e}): create its directory or choose another path; nothing was sent to any model",
            path.display()
        ))
    })
}

fn open_step_summary(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| {
            Error::Usage(format!(
                "GITHUB_STEP_SUMMARY={}: cannot open the step summary for writing ({e}); nothing was sent to any model",
                path.display()
            ))
        })
}

impl Outputs {
    /// Opens every destination: `format` goes to stdout unless a bare `-o PATH` takes it,
    /// each `FORMAT=PATH` to its file, and the step summary to `step_summary` when a
    /// `github` report is written.
    pub fn open(
        format: Format,
        specs: &[OutputSpec],
        step_summary: Option<PathBuf>,
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
                sink: Sink::File(s.path.clone(), create(&s.path)?),
            });
        }
        if destinations.iter().any(|d| d.format == Format::Github)
            && let Some(path) = step_summary
        {
            let file = open_step_summary(&path)?;
            destinations.push(Destination {
                format: Format::Github,
                sink: Sink::StepSummary(path, file),
            });
        }
        Ok(Outputs {
            destinations,
            keys: crate::provider::secret::Redactor::new(&[]),
        })
    }

    /// Redacts `keys` (see `report::configured_keys`) from every output as it is written.
    pub fn redacting(mut self, keys: crate::provider::secret::Redactor) -> Self {
        self.keys = keys;
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
        let render = |format: Format| redact_text(&keys, &format.render(report));
        for d in self.destinations {
            let what = format!("the {} report", d.format.name());
            let (text, result, name, what) = match d.sink {
                Sink::Stdout => {
                    let text = render(d.format);
                    let result = write_stdout(&text);
                    (text, result, "<stdout>".into(), what)
                }
                Sink::File(path, mut file) => {
                    // Files never get terminal colours.
                    let text = console::strip_ansi_codes(&render(d.format)).into_owned();
                    let result = file.write_all(text.as_bytes()).and_then(|()| file.flush());
                    (text, result, path, what)
                }
                Sink::StepSummary(path, mut file) => {
                    let md = summary_md::render(report);
                    let text = redact_text(&keys, &crate::text::escape::guard(&md));
                    let result = file.write_all(text.as_bytes()).and_then(|()| file.flush());
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
