//! One finding's fields as models really write them (docs/design.md §14, format drift): lines
//! as `18`, `18.0`, `"18"` or `"18-20"`; severities in any case, with the words models
//! use for them (`blocker`, `major`, `error`, `warning`, `minor`, `trivial`, `note`);
//! confidence as a word or a number from 0 to 1. An entry that still does not fit is
//! dropped with a reason that names the field and the value.

use super::ModelFinding;
use crate::severity::{Confidence, Severity};
use serde_json::{Map, Value};

/// Values are quoted in reasons up to this many characters.
const SHOWN: usize = 40;

/// Why an entry of the list is not a finding (each value quoted as [`shown`] cuts it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum NotAFinding {
    #[error("not an object: {0}")]
    NotObject(String),
    #[error("no severity")]
    NoSeverity,
    #[error(
        "severity {0} is none of critical, high, medium, low, info (or blocker, major, error, warning, minor, trivial, note)"
    )]
    Severity(String),
    #[error("confidence {0} is neither high, medium, low nor a number from 0 to 1")]
    Confidence(String),
    #[error("no title")]
    NoTitle,
    #[error("no line")]
    NoLine,
    #[error("line {0} is not a line number")]
    Line(String),
}

/// The finding in `v`, or why it is not one.
pub(super) fn validate(v: &Value) -> Result<ModelFinding, NotAFinding> {
    let Some(o) = v.as_object() else {
        return Err(NotAFinding::NotObject(shown(v)));
    };
    let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::trim);
    let severity = match o.get("severity") {
        None | Some(Value::Null) => return Err(NotAFinding::NoSeverity),
        Some(s) => severity(s).ok_or_else(|| NotAFinding::Severity(shown(s)))?,
    };
    let confidence = match o.get("confidence") {
        None | Some(Value::Null) => Confidence::Medium,
        Some(c) => confidence(c).ok_or_else(|| NotAFinding::Confidence(shown(c)))?,
    };
    let title = match text("title") {
        Some(t) if !t.is_empty() => t.to_string(),
        _ => return Err(NotAFinding::NoTitle),
    };
    let (line, range_end) = match o.get("line") {
        None | Some(Value::Null) => return Err(NotAFinding::NoLine),
        Some(l) => lines(l).ok_or_else(|| NotAFinding::Line(shown(l)))?,
    };
    let end_line = end_line(o).or(range_end).unwrap_or(line);
    Ok(ModelFinding {
        severity,
        confidence,
        title,
        description: text("description").unwrap_or("").to_string(),
        line,
        end_line,
        skill: text("skill").filter(|s| !s.is_empty()).map(str::to_string),
        suggestion: text("suggestion")
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        // Not trimmed: indentation is part of a replacement.
        replacement: o
            .get("replacement")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_string),
    })
}

/// The file an entry names when it is not `path` (the unit's file), cut for a reason.
/// Models write it as `file`, `path`, `filename`, `filePath` or `file_path`, maybe with
/// `./`, `a/`/`b/` (a diff's prefixes) or a `:line` after it; an absolute or longer path
/// that ends with `/path` is the same file.
pub(super) fn other_file(v: &Value, path: &str) -> Option<String> {
    let named = ["file", "path", "filename", "filePath", "file_path"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))?
        .trim();
    if named.is_empty() {
        return None;
    }
    let mut n = named.trim_start_matches("./");
    for prefix in ["a/", "b/"] {
        if let Some(rest) = n.strip_prefix(prefix)
            && rest == path
        {
            n = rest;
        }
    }
    let n = match n.rsplit_once(':') {
        Some((file, line)) if line.chars().all(|c| c.is_ascii_digit() || c == '-') => file,
        _ => n,
    };
    let same = n == path || n.ends_with(&format!("/{path}"));
    (!same).then(|| cut(named, SHOWN))
}

/// The entry's title, for naming a dropped entry (None when it has none).
pub(super) fn title_of(v: &Value) -> Option<String> {
    let t = v.get("title")?.as_str()?.trim();
    (!t.is_empty()).then(|| cut(t, 80))
}

fn end_line(o: &Map<String, Value>) -> Option<u32> {
    ["endLine", "end_line"]
        .iter()
        .find_map(|k| o.get(*k))
        .and_then(|v| lines(v).map(|(l, _)| l))
}

/// A severity word, in any case, or a word models use for one.
fn severity(v: &Value) -> Option<Severity> {
    let s = v.as_str()?.trim().to_ascii_lowercase();
    Some(match s.as_str() {
        "critical" | "blocker" => Severity::Critical,
        "high" | "major" | "error" => Severity::High,
        "medium" | "warning" => Severity::Medium,
        "low" | "minor" => Severity::Low,
        "info" | "trivial" | "note" => Severity::Info,
        _ => return None,
    })
}

/// A confidence word, or a number (or numeric text) from 0 to 1: below 0.4 is low,
/// below 0.7 medium, the rest high.
fn confidence(v: &Value) -> Option<Confidence> {
    let n = match v {
        Value::String(s) => {
            if let Ok(c) = s.trim().parse::<Confidence>() {
                return Some(c);
            }
            s.trim().parse::<f64>().ok()?
        }
        Value::Number(n) => n.as_f64()?,
        _ => return None,
    };
    if !(0.0..=1.0).contains(&n) {
        return None;
    }
    Some(if n < 0.4 {
        Confidence::Low
    } else if n < 0.7 {
        Confidence::Medium
    } else {
        Confidence::High
    })
}

/// A line number, and the end of a range when the value is one (`"18-20"`).
fn lines(v: &Value) -> Option<(u32, Option<u32>)> {
    match v {
        Value::Number(n) => Some((whole(n.as_f64()?)?, None)),
        Value::String(s) => {
            let s = s.trim();
            if let Some((a, b)) = s.split_once(['-', '–']) {
                let a = number_text(a)?;
                return Some((a, Some(number_text(b)?)));
            }
            Some((number_text(s)?, None))
        }
        _ => None,
    }
}

/// A line number written as text: digits, or a whole float (`"18.0"`).
fn number_text(s: &str) -> Option<u32> {
    let s = s.trim();
    if let Ok(n) = s.parse::<u32>() {
        return (n > 0).then_some(n);
    }
    if s.bytes().all(|c| c.is_ascii_digit() || c == b'.') {
        return whole(s.parse().ok()?);
    }
    None
}

/// A whole, positive number that fits a line number (`18.0` is 18; `12.5` is none).
fn whole(f: f64) -> Option<u32> {
    (f.fract() == 0.0 && f >= 1.0 && f <= f64::from(u32::MAX)).then_some(f as u32)
}

/// A value as a reason quotes it, cut to [`SHOWN`] characters.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{}\"", cut(s, SHOWN)),
        Value::Object(_) => "an object".into(),
        Value::Array(_) => "a list".into(),
        other => cut(&other.to_string(), SHOWN),
    }
}

fn cut(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(v: Value) -> ModelFinding {
        validate(&v).unwrap_or_else(|e| panic!("{v}: {e}"))
    }

    #[test]
    fn lines_arrive_as_numbers_whole_floats_text_and_ranges() {
        for (line, want) in [
            (json!(18), (18, 18)),
            (json!(18.0), (18, 18)),
            (json!("18"), (18, 18)),
            (json!(" 18 "), (18, 18)),
            (json!("18.0"), (18, 18)),
            (json!("18-20"), (18, 20)),
            (json!("18 – 20"), (18, 20)),
        ] {
            let f = ok(json!({"severity": "low", "title": "t", "line": line}));
            assert_eq!((f.line, f.end_line), want, "{line}");
        }
        let f = ok(json!({"severity": "low", "title": "t", "line": "18-20", "endLine": 19}));
        assert_eq!(
            (f.line, f.end_line),
            (18, 19),
            "endLine wins over the range"
        );
        for bad in [
            json!(0),
            json!(-1),
            json!(12.5),
            json!("0x10"),
            json!(""),
            json!("18-"),
            json!(4294967296u64),
            json!([5]),
        ] {
            let e = validate(&json!({"severity": "low", "title": "t", "line": bad}))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("line "), "{bad}: {e}");
        }
    }

    #[test]
    fn severities_in_any_case_and_the_words_models_use() {
        for (word, want) in [
            ("CRITICAL", Severity::Critical),
            ("Blocker", Severity::Critical),
            ("major", Severity::High),
            ("Error", Severity::High),
            ("High", Severity::High),
            ("warning", Severity::Medium),
            ("minor", Severity::Low),
            ("trivial", Severity::Info),
            ("NOTE", Severity::Info),
        ] {
            let f = ok(json!({"severity": word, "title": "t", "line": 3}));
            assert_eq!(f.severity, want, "{word}");
        }
        let e = validate(&json!({"severity": "urgent", "title": "t", "line": 3}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"urgent\""), "{e}");
    }

    #[test]
    fn confidence_as_a_word_or_a_number_from_0_to_1() {
        for (c, want) in [
            (json!("HIGH"), Confidence::High),
            (json!(0.9), Confidence::High),
            (json!("0.7"), Confidence::High),
            (json!(0.5), Confidence::Medium),
            (json!(0), Confidence::Low),
            (json!(null), Confidence::Medium),
        ] {
            let f = ok(json!({"severity": "low", "title": "t", "line": 3, "confidence": c}));
            assert_eq!(f.confidence, want, "{c}");
        }
        for bad in [json!(1.5), json!(-0.1), json!("sure"), json!(true)] {
            let e =
                validate(&json!({"severity": "low", "title": "t", "line": 3, "confidence": bad}))
                    .unwrap_err()
                    .to_string();
            assert!(e.starts_with("confidence"), "{bad}: {e}");
        }
    }

    #[test]
    fn every_reason_names_the_field() {
        for (v, reason) in [
            (json!("text"), "not an object"),
            (json!({"title": "t", "line": 3}), "no severity"),
            (json!({"severity": "low", "line": 3}), "no title"),
            (
                json!({"severity": "low", "title": " ", "line": 3}),
                "no title",
            ),
            (json!({"severity": "low", "title": "t"}), "no line"),
        ] {
            let e = validate(&v).unwrap_err().to_string();
            assert!(e.starts_with(reason), "{v}: {e}");
        }
    }
}
