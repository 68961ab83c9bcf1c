//! Findings extraction from a model's answer (DESIGN.md section 9). The answer is data:
//! warden only looks for one JSON object with a `findings` list, tolerating code fences
//! and prose around it, and checks every entry against the schema. An answer with no such
//! object is a `bad_response`, never a clean review.

use crate::severity::{Confidence, Severity};
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

/// What was extracted from one answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    /// The valid findings inside the chunk's lines.
    pub findings: Vec<ModelFinding>,
    /// Findings whose lines fall outside the chunk.
    pub dropped_out_of_range: usize,
    /// Entries that do not match the schema (missing title, unknown severity, no line).
    pub dropped_invalid: usize,
}

/// Extracts findings whose lines fall in `start..=end` (new-file numbers of the chunk).
/// Err carries a short reason for the `bad_response` outcome.
pub fn extract(answer: &str, start: u32, end: u32) -> Result<Extracted, String> {
    let Some(list) = find_findings_list(answer) else {
        let shown: String = answer.chars().take(80).collect();
        return Err(format!(
            "no JSON object with a `findings` list in the answer (starts with {shown:?})"
        ));
    };
    let mut out = Extracted::default();
    for item in list {
        match validate(&item) {
            None => out.dropped_invalid += 1,
            Some(f) if f.line < start || f.line > end => out.dropped_out_of_range += 1,
            Some(mut f) => {
                f.end_line = f.end_line.clamp(f.line, end);
                out.findings.push(f);
            }
        }
    }
    Ok(out)
}

/// The first JSON object in `text` that has a `findings` array.
fn find_findings_list(text: &str) -> Option<Vec<Value>> {
    let take = |v: Value| match v {
        Value::Object(mut m) => match m.remove("findings") {
            Some(Value::Array(a)) => Some(a),
            _ => None,
        },
        _ => None,
    };
    if let Ok(v) = serde_json::from_str::<Value>(text.trim())
        && let Some(list) = take(v)
    {
        return Some(list);
    }
    // Prose or fences around it: try each `{` as the start of an object.
    for (i, _) in text.match_indices('{') {
        let mut de = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
        if let Some(Ok(v)) = de.next()
            && let Some(list) = take(v)
        {
            return Some(list);
        }
    }
    None
}

fn validate(v: &Value) -> Option<ModelFinding> {
    let o = v.as_object()?;
    let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::trim);
    let severity: Severity = text("severity")?.parse().ok()?;
    let confidence: Confidence = match text("confidence") {
        Some(c) => c.parse().ok()?,
        None => Confidence::Medium,
    };
    let title = text("title").filter(|t| !t.is_empty())?.to_string();
    let line = as_line(o.get("line")?)?;
    let end_line = o.get("endLine").and_then(as_line).unwrap_or(line);
    Some(ModelFinding {
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

fn as_line(v: &Value) -> Option<u32> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .filter(|n| *n > 0 && *n <= u32::MAX as u64)
            .map(|n| n as u32),
        Value::String(s) => s.trim().parse().ok().filter(|n| *n > 0),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerates_fences_and_prose() {
        let a = "Here is my review:\n```json\n{\"findings\": [{\"severity\": \"high\", \"confidence\": \"high\", \"title\": \"SQL injection\", \"description\": \"d\", \"line\": 12}]}\n```\nThanks!";
        let e = extract(a, 10, 20).unwrap();
        assert_eq!(e.findings.len(), 1);
        assert_eq!(e.findings[0].end_line, 12);
        assert_eq!(e.findings[0].replacement, None);
    }

    #[test]
    fn a_replacement_keeps_its_indentation() {
        let a = r#"{"findings": [{"severity": "low", "title": "t", "line": 3, "replacement": "    let x = y?;\n"}]}"#;
        let e = extract(a, 1, 10).unwrap();
        assert_eq!(
            e.findings[0].replacement.as_deref(),
            Some("    let x = y?;\n")
        );
    }

    #[test]
    fn drops_out_of_range_and_invalid_entries_and_counts_them() {
        let a = r#"{"findings": [
            {"severity": "low", "confidence": "low", "title": "ok", "line": 5, "endLine": 99},
            {"severity": "low", "title": "outside", "line": 50},
            {"severity": "urgent", "title": "bad severity", "line": 5},
            {"severity": "low", "line": 5}
        ]}"#;
        let e = extract(a, 1, 10).unwrap();
        assert_eq!(e.findings.len(), 1);
        assert_eq!(e.findings[0].end_line, 10);
        assert_eq!((e.dropped_out_of_range, e.dropped_invalid), (1, 2));
    }

    #[test]
    fn no_findings_object_is_an_error() {
        assert!(extract("Looks good to me!", 1, 10).is_err());
        assert!(extract("{\"result\": []}", 1, 10).is_err());
        assert_eq!(
            extract("{\"findings\": []}", 1, 10).unwrap().findings.len(),
            0
        );
    }
}
