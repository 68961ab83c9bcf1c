//! The report formats, and `-o/--output [FORMAT=]PATH` destinations: one review can write
//! several formats (SARIF for code scanning, rdjsonl for reviewdog, a PR comment) without
//! running twice.

use crate::text::escape;
use std::path::PathBuf;
use std::str::FromStr;

/// A report format (`--format`, and the FORMAT of `--output FORMAT=PATH`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// For people, in a terminal or a CI log.
    Text,
    /// The report as JSON (schemaVersion 1, schemas/report-v1.schema.json).
    Json,
    /// SARIF 2.1.0, as GitHub code scanning ingests it.
    Sarif,
    /// GitHub Actions annotations (and the step summary when $GITHUB_STEP_SUMMARY is set).
    Github,
    /// reviewdog Diagnostic Format, one diagnostic per line (`reviewdog -f=rdjsonl`).
    Rdjsonl,
    /// reviewdog DiagnosticResult, one JSON document (`reviewdog -f=rdjson`).
    Rdjson,
    /// GitLab Code Quality report (the merge request widget).
    Gitlab,
    /// A pull-request comment body (at most 65,536 characters, with a sticky marker).
    Markdown,
}

impl Format {
    /// Every format, as messages list them.
    pub const NAMES: &'static str = "text, json, sarif, github, rdjsonl, rdjson, gitlab, markdown";

    /// Every format, in the order of [`Format::NAMES`].
    pub const ALL: [Format; 8] = [
        Format::Text,
        Format::Json,
        Format::Sarif,
        Format::Github,
        Format::Rdjsonl,
        Format::Rdjson,
        Format::Gitlab,
        Format::Markdown,
    ];

    /// The format's name on the command line.
    pub fn name(self) -> String {
        self.as_str().to_string()
    }

    /// The format's name on the command line, borrowed.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Sarif => "sarif",
            Format::Github => "github",
            Format::Rdjsonl => "rdjsonl",
            Format::Rdjson => "rdjson",
            Format::Gitlab => "gitlab",
            Format::Markdown => "markdown",
        }
    }

    /// The format a bare `-o PATH` writes when no format flag says: from the file's
    /// extension (`.sarif`, `.json`, `.md`, `.jsonl`, `.rdjson`, `.txt`…). `Ok(None)`: no
    /// extension (the `--format` report); an extension that names no report format (`.xml`)
    /// is an error naming the flag.
    pub fn from_extension(path: &std::path::Path) -> Result<Option<Format>, String> {
        let Some(ext) = path.extension() else {
            return Ok(None);
        };
        let ext = ext.to_string_lossy().to_ascii_lowercase();
        Ok(Some(match ext.as_str() {
            "txt" | "text" | "log" => Format::Text,
            "json" => Format::Json,
            "sarif" => Format::Sarif,
            "jsonl" | "rdjsonl" | "ndjson" => Format::Rdjsonl,
            "rdjson" => Format::Rdjson,
            "md" | "markdown" => Format::Markdown,
            _ => {
                return Err(format!(
                    "-o/--output {}: `.{}` names no report format warden writes (by extension: .txt, .json, .sarif, .jsonl, .rdjson, .md); name the format, e.g. -o sarif={} or --format FORMAT (one of {})",
                    path.display(),
                    escape::inline(&ext),
                    path.display(),
                    Format::NAMES
                ));
            }
        }))
    }

    /// The format of that name, in any ASCII case (`SARIF=out` names SARIF).
    pub fn named(s: &str) -> Option<Format> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str().eq_ignore_ascii_case(s))
    }
}

/// One `-o/--output` value: `FORMAT=PATH`, or a bare `PATH` for the `--format` report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputSpec {
    /// None: the `--format` format.
    pub format: Option<Format>,
    /// Where it goes.
    pub path: PathBuf,
}

/// Why an `-o` value is refused (the message names the value and the way out).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutputSpecError {
    /// `sarf=out.sarif`: a word before `=` that names no format.
    #[error("`{spec}`: unknown format `{name}`: expected one of {names} (a file whose name has `=` in it is written ./{spec})", names = Format::NAMES)]
    UnknownFormat {
        /// The value as given.
        spec: String,
        /// The word before `=`.
        name: String,
    },
    /// `sarif=`: a format and no path.
    #[error("`{spec}`: no path after `{}=`", format.name())]
    NoPathAfter {
        /// The value as given.
        spec: String,
        /// The format it names.
        format: Format,
    },
    /// An empty value.
    #[error("expected PATH or FORMAT=PATH with FORMAT one of {}", Format::NAMES)]
    Empty,
    /// `sarif=-`: stdout carries the `--format` report.
    #[error("`{spec}`: stdout carries the --format report; for {0} on stdout use --format {0}", format.name())]
    StdoutFormat {
        /// The value as given.
        spec: String,
        /// The format it names.
        format: Format,
    },
    /// `-`: stdout carries the `--format` report.
    #[error("`{spec}`: stdout already receives the --format report; leave out -o")]
    Stdout {
        /// The value as given.
        spec: String,
    },
}

impl FromStr for OutputSpec {
    type Err = OutputSpecError;

    /// `sarif=out.sarif` names a format; `out.json` or `./a=b` is a path. A word before
    /// `=` that is not a format (`sarf=out.sarif`) is refused rather than taken as a file
    /// name, and so is `-`: stdout carries the `--format` report.
    fn from_str(s: &str) -> Result<Self, OutputSpecError> {
        let spec = s.to_string();
        let (format, path) = match s.split_once('=') {
            Some((name, path)) => match Format::named(name) {
                Some(format) => (Some(format), path),
                None if is_word(name) => {
                    let name = name.to_string();
                    return Err(OutputSpecError::UnknownFormat { spec, name });
                }
                None => (None, s),
            },
            None => (None, s),
        };
        if path.is_empty() {
            return Err(match format {
                Some(format) => OutputSpecError::NoPathAfter { spec, format },
                None => OutputSpecError::Empty,
            });
        }
        if path == "-" {
            return Err(match format {
                Some(format) => OutputSpecError::StdoutFormat { spec, format },
                None => OutputSpecError::Stdout { spec },
            });
        }
        Ok(OutputSpec {
            format,
            path: PathBuf::from(path),
        })
    }
}

/// A bare word (letters, digits, `-`, `_`): what a format name, or a mistyped one, looks
/// like; a path has a `/` or a `.` somewhere before its `=`.
fn is_word(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_specs_name_a_format_only_when_it_is_one() {
        let s: OutputSpec = "sarif=out/w.sarif".parse().unwrap();
        assert_eq!(s.format, Some(Format::Sarif));
        assert_eq!(s.path, PathBuf::from("out/w.sarif"));
        let s: OutputSpec = "RDJSONL=a".parse().unwrap();
        assert_eq!(s.format, Some(Format::Rdjsonl));
        let s: OutputSpec = "./x=y.json".parse().unwrap();
        assert_eq!((s.format, s.path), (None, PathBuf::from("./x=y.json")));
        assert!("json=".parse::<OutputSpec>().is_err());
        assert!("".parse::<OutputSpec>().is_err());
        let s: OutputSpec = "out/a=b.json".parse().unwrap();
        assert_eq!((s.format, s.path), (None, PathBuf::from("out/a=b.json")));
        let s: OutputSpec = "a.b=c".parse().unwrap();
        assert_eq!((s.format, s.path), (None, PathBuf::from("a.b=c")));
    }
}
