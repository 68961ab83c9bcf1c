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

/// How many findings one answer may contribute unless `[execution]
/// maxFindingsPerAnswer` says otherwise (DESIGN.md §13, "Bounds"): a provider answering
/// 100,000 findings costs what 100 do.
pub const DEFAULT_MAX_FINDINGS_PER_ANSWER: usize = 100;

/// What was extracted from one answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    /// The valid findings inside the chunk's lines, at most the cap.
    pub findings: Vec<ModelFinding>,
    /// Findings whose lines fall outside the chunk.
    pub dropped_out_of_range: usize,
    /// Entries that do not match the schema (missing title, unknown severity, no line).
    pub dropped_invalid: usize,
    /// Entries after the cap was reached: counted, never read into findings.
    pub cut: usize,
}

/// Extracts findings whose lines fall in `start..=end` (new-file numbers of the chunk),
/// keeping at most [`DEFAULT_MAX_FINDINGS_PER_ANSWER`]. Err carries a short reason for
/// the `bad_response` outcome.
pub fn extract(answer: &str, start: u32, end: u32) -> Result<Extracted, String> {
    extract_capped(answer, start, end, DEFAULT_MAX_FINDINGS_PER_ANSWER)
}

/// [`extract`] keeping at most `cap` findings. The list is read one entry at a time (no
/// tree of the whole answer is built): each entry is checked and dropped or kept until
/// `cap` are kept, and every later entry is skipped over and counted in `cut`. Time is
/// linear in the answer and memory is the kept findings plus one entry.
pub fn extract_capped(answer: &str, start: u32, end: u32, cap: usize) -> Result<Extracted, String> {
    let range = Range { start, end, cap };
    // The first `{` that starts an object with a `findings` list; prose or fences around
    // it are skipped. Each try starts from nothing, so a broken object leaves no trace.
    for (i, _) in answer.match_indices('{') {
        let mut out = Extracted::default();
        let mut de = serde_json::Deserializer::from_str(&answer[i..]);
        if let Ok(true) = serde::de::DeserializeSeed::deserialize(
            Object {
                range,
                out: &mut out,
            },
            &mut de,
        ) {
            return Ok(out);
        }
    }
    let shown: String = answer.chars().take(80).collect();
    Err(format!(
        "no JSON object with a `findings` list in the answer (starts with {shown:?})"
    ))
}

#[derive(Clone, Copy)]
struct Range {
    start: u32,
    end: u32,
    cap: usize,
}

/// An object: true when it holds a `findings` list (read into `out`), false when not.
struct Object<'a> {
    range: Range,
    out: &'a mut Extracted,
}

impl<'de> serde::de::DeserializeSeed<'de> for Object<'_> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Object<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object with a `findings` list")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "findings" && !found {
                found = map.next_value_seed(List {
                    range: self.range,
                    out: &mut *self.out,
                })?;
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// The `findings` value: a list read entry by entry (true), or anything else (false).
struct List<'a> {
    range: Range,
    out: &'a mut Extracted,
}

impl<'de> serde::de::DeserializeSeed<'de> for List<'_> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for List<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of findings")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let Range { start, end, cap } = self.range;
        let out = self.out;
        while out.findings.len() < cap {
            let Some(item) = seq.next_element::<Value>()? else {
                return Ok(true);
            };
            match validate(&item) {
                None => out.dropped_invalid += 1,
                Some(f) if f.line < start || f.line > end => out.dropped_out_of_range += 1,
                Some(mut f) => {
                    f.end_line = f.end_line.clamp(f.line, end);
                    out.findings.push(f);
                }
            }
        }
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
            out.cut += 1;
        }
        Ok(true)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
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

    fn flood(n: usize) -> String {
        let one = r#"{"severity": "low", "title": "t", "line": 5}"#;
        format!("{{\"findings\": [{}]}}", vec![one; n].join(","))
    }

    #[test]
    fn a_flood_keeps_the_cap_and_counts_the_rest() {
        let e = extract(&flood(100_000), 1, 10).unwrap();
        assert_eq!(e.findings.len(), DEFAULT_MAX_FINDINGS_PER_ANSWER);
        assert_eq!(e.cut, 100_000 - DEFAULT_MAX_FINDINGS_PER_ANSWER);
        let e = extract_capped(&flood(7), 1, 10, 3).unwrap();
        assert_eq!((e.findings.len(), e.cut), (3, 4));
        let e = extract_capped(&flood(3), 1, 10, 3).unwrap();
        assert_eq!((e.findings.len(), e.cut), (3, 0));
    }

    #[test]
    fn dropped_entries_do_not_fill_the_cap() {
        let a = r#"{"findings": [
            {"severity": "low", "title": "outside", "line": 50},
            {"severity": "urgent", "title": "bad", "line": 5},
            {"severity": "low", "title": "a", "line": 5},
            {"severity": "low", "title": "b", "line": 6},
            {"severity": "low", "title": "c", "line": 7}
        ], "note": {"findings": 1}}"#;
        let e = extract_capped(a, 1, 10, 2).unwrap();
        let titles: Vec<_> = e.findings.iter().map(|f| f.title.as_str()).collect();
        assert_eq!(titles, ["a", "b"]);
        assert_eq!(
            (e.dropped_out_of_range, e.dropped_invalid, e.cut),
            (1, 1, 1)
        );
    }

    #[test]
    fn the_first_object_with_a_list_wins_and_a_broken_one_leaves_no_trace() {
        // The first object's list is cut short: nothing of it is kept.
        let a = r#"{"findings": [{"severity": "low", "title": "lost", "line": 5}, 
            then {"findings": null} and {"x": 1, "findings": [{"severity": "high", "title": "kept", "line": 6}]}"#;
        let e = extract(a, 1, 10).unwrap();
        assert_eq!(e.findings.len(), 1);
        assert_eq!(e.findings[0].title, "kept");
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
