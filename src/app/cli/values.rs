//! Flag values of the library's plain types (severities, confidence, report and trace
//! formats). Each parser wraps a `ValueEnum` of this layer's own (a newtype or a mirror of
//! the library's enum), so `--help` lists the values with their descriptions and a bad
//! value is clap's own error naming the flag, while the library never sees clap.

use clap::ValueEnum;
use clap::builder::{EnumValueParser, PossibleValue, TypedValueParser};
use std::time::Duration;
use warden::report::Format;
use warden::severity::{Confidence, FailOn, Severity};
use warden::telemetry::TraceFormat;

/// `--budget`: a duration such as 15m, 90s or 500ms, above zero and at most 7 days.
pub(crate) fn parse_budget(s: &str) -> Result<Duration, String> {
    warden::config::parse_duration(s).map_err(|e| e.to_string())
}

/// `--report-on`: a severity, in any case.
pub(crate) fn severity() -> impl TypedValueParser<Value = Severity> {
    EnumValueParser::<SeverityArg>::new().map(|s| s.0)
}

/// `--min-confidence`: a confidence level, in any case.
pub(crate) fn confidence() -> impl TypedValueParser<Value = Confidence> {
    EnumValueParser::<ConfidenceArg>::new().map(|c| c.0)
}

/// `--fail-on`: a severity, or `off` (alias `none`).
pub(crate) fn fail_on() -> impl TypedValueParser<Value = FailOn> {
    EnumValueParser::<FailOnArg>::new().map(|f| f.0)
}

/// `--format`: a report format.
pub(crate) fn format() -> impl TypedValueParser<Value = Format> {
    EnumValueParser::<FormatArg>::new().map(Format::from)
}

/// `--trace-format`.
pub(crate) fn trace_format() -> impl TypedValueParser<Value = TraceFormat> {
    EnumValueParser::<TraceFormatArg>::new().map(TraceFormat::from)
}

#[derive(Debug, Clone, Copy)]
struct SeverityArg(Severity);

impl ValueEnum for SeverityArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            SeverityArg(Severity::Critical),
            SeverityArg(Severity::High),
            SeverityArg(Severity::Medium),
            SeverityArg(Severity::Low),
            SeverityArg(Severity::Info),
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.as_str()))
    }
}

#[derive(Debug, Clone, Copy)]
struct ConfidenceArg(Confidence);

impl ValueEnum for ConfidenceArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            ConfidenceArg(Confidence::High),
            ConfidenceArg(Confidence::Medium),
            ConfidenceArg(Confidence::Low),
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.as_str()))
    }
}

#[derive(Debug, Clone, Copy)]
struct FailOnArg(FailOn);

impl ValueEnum for FailOnArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            FailOnArg(FailOn::At(Severity::Critical)),
            FailOnArg(FailOn::At(Severity::High)),
            FailOnArg(FailOn::At(Severity::Medium)),
            FailOnArg(FailOn::At(Severity::Low)),
            FailOnArg(FailOn::At(Severity::Info)),
            FailOnArg(FailOn::Off),
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self.0 {
            FailOn::Off => PossibleValue::new("off").alias("none"),
            FailOn::At(s) => PossibleValue::new(s.as_str()),
        })
    }
}

/// A report format (`--format`, and the FORMAT of `--output FORMAT=PATH`): the library's
/// [`Format`], with the descriptions `--help` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FormatArg {
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

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Format {
        match f {
            FormatArg::Text => Format::Text,
            FormatArg::Json => Format::Json,
            FormatArg::Sarif => Format::Sarif,
            FormatArg::Github => Format::Github,
            FormatArg::Rdjsonl => Format::Rdjsonl,
            FormatArg::Rdjson => Format::Rdjson,
            FormatArg::Gitlab => Format::Gitlab,
            FormatArg::Markdown => Format::Markdown,
        }
    }
}

/// The `--trace` file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TraceFormatArg {
    /// Every span and event, one JSON object per line (docs/trace-format.md).
    Jsonl,
    /// Chrome Trace Event format, for Perfetto or chrome://tracing.
    Chrome,
}

impl From<TraceFormatArg> for TraceFormat {
    fn from(f: TraceFormatArg) -> TraceFormat {
        match f {
            TraceFormatArg::Jsonl => TraceFormat::Jsonl,
            TraceFormatArg::Chrome => TraceFormat::Chrome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mirror names every library format by the library's own name, in its order.
    #[test]
    fn the_format_mirror_is_the_library_format() {
        let mirrored: Vec<Format> = FormatArg::value_variants()
            .iter()
            .map(|f| {
                let name = f.to_possible_value().unwrap().get_name().to_string();
                let format = Format::from(*f);
                assert_eq!(format.as_str(), name);
                format
            })
            .collect();
        assert_eq!(mirrored, Format::ALL);
    }
}
