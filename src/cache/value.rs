//! The cached value: one `reviewed` unit's findings with their lines relative to the chunk's
//! first line, who produced them and when, and the verification verdicts if that pass ran.
//! Failures are never cached: only an answer that parsed is a review.

use crate::findings::ModelFinding;
use crate::severity::{Confidence, Severity};
use crate::verify::Verdict;
use serde::{Deserialize, Serialize};

/// Bumped when the stored shape changes; other formats decode as a miss.
const VALUE_FORMAT: u32 = 1;

/// A reviewed unit's answer as the cache keeps it: enough to answer the unit again without a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    format: u32,
    /// The route's name when it answered (names may change; the key does not use them).
    pub route: String,
    /// The provider kind that answered (`openai`, `anthropic`, …).
    pub provider: String,
    /// The model that answered (as the provider reported it, when it did).
    pub model: String,
    /// When the model answered, Unix milliseconds.
    pub cached_at: u64,
    /// The answer's findings, lines relative to the chunk.
    pub findings: Vec<StoredFinding>,
    /// Findings the answer had that were dropped (outside the chunk, invalid).
    pub dropped: usize,
    /// One verdict per finding, in order, when the verification pass checked this answer.
    pub verdicts: Option<Vec<StoredVerdict>>,
    /// The tool calls the model made before answering (docs/design.md §14), each with the hash
    /// of the result it read: the answer is reused only while replaying them on the new
    /// head gives the same hashes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<crate::engine::CallLog>,
}

/// A finding with `line`/`endLine` as offsets from the chunk's first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredFinding {
    severity: String,
    confidence: String,
    title: String,
    description: String,
    line_offset: u32,
    end_offset: u32,
    suggestion: Option<String>,
    replacement: Option<String>,
    skill: Option<String>,
}

/// A completed verification verdict, kept with the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoredVerdict {
    /// The finding held.
    Confirmed,
    /// The finding was a false positive.
    Rejected,
}

impl StoredVerdict {
    /// Only completed verdicts are kept: `unverified` means "ask again next time".
    pub(crate) fn from_verdict(v: Verdict) -> Option<StoredVerdict> {
        match v {
            Verdict::Confirmed => Some(StoredVerdict::Confirmed),
            Verdict::Rejected => Some(StoredVerdict::Rejected),
            Verdict::Unverified => None,
        }
    }
}

/// Who answered, for [`Answer::new`].
pub struct Producer<'a> {
    /// The route's name.
    pub route: &'a str,
    /// Its provider kind.
    pub provider: &'a str,
    /// The model that answered.
    pub model: &'a str,
    /// When, Unix milliseconds.
    pub at: u64,
}

impl Answer {
    /// The answer of a unit whose chunk starts at `start`.
    pub fn new(by: Producer, findings: &[ModelFinding], start: u32, dropped: usize) -> Answer {
        Answer {
            format: VALUE_FORMAT,
            route: by.route.to_string(),
            provider: by.provider.to_string(),
            model: by.model.to_string(),
            cached_at: by.at,
            findings: findings
                .iter()
                .map(|f| StoredFinding {
                    severity: f.severity.as_str().to_string(),
                    confidence: f.confidence.to_string(),
                    title: f.title.clone(),
                    description: f.description.clone(),
                    line_offset: f.line.saturating_sub(start),
                    end_offset: f.end_line.saturating_sub(start),
                    suggestion: f.suggestion.clone(),
                    replacement: f.replacement.clone(),
                    skill: f.skill.clone(),
                })
                .collect(),
            dropped,
            verdicts: None,
            tool_calls: Vec::new(),
        }
    }

    /// The answer as stored bytes (JSON).
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("answers serialize")
    }

    /// None for anything that is not an answer of this format.
    pub fn from_bytes(bytes: &[u8]) -> Option<Answer> {
        serde_json::from_slice::<Answer>(bytes)
            .ok()
            .filter(|a| a.format == VALUE_FORMAT)
            .filter(|a| {
                a.verdicts
                    .as_ref()
                    .is_none_or(|v| v.len() == a.findings.len())
            })
    }

    /// The findings re-anchored to a chunk that now spans `start..=end`. None if any of
    /// them would fall outside it or does not decode (then the value is not trusted).
    pub(crate) fn findings_at(&self, start: u32, end: u32) -> Option<Vec<ModelFinding>> {
        let span = end.checked_sub(start)?;
        self.findings
            .iter()
            .map(|f| {
                if f.line_offset > span || f.end_offset > span || f.end_offset < f.line_offset {
                    return None;
                }
                Some(ModelFinding {
                    severity: f.severity.parse::<Severity>().ok()?,
                    confidence: f.confidence.parse::<Confidence>().ok()?,
                    title: f.title.clone(),
                    description: f.description.clone(),
                    line: start + f.line_offset,
                    end_line: start + f.end_offset,
                    suggestion: f.suggestion.clone(),
                    replacement: f.replacement.clone(),
                    skill: f.skill.clone(),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(line: u32, end: u32) -> ModelFinding {
        ModelFinding {
            severity: Severity::High,
            confidence: Confidence::Medium,
            title: "t".into(),
            description: "d".into(),
            line,
            end_line: end,
            suggestion: Some("s".into()),
            replacement: Some("    fixed();\n".into()),
            skill: None,
        }
    }

    fn by() -> Producer<'static> {
        Producer {
            route: "primary",
            provider: "openai",
            model: "m",
            at: 1,
        }
    }

    #[test]
    fn findings_move_with_their_chunk() {
        let a = Answer::new(by(), &[finding(12, 14)], 10, 0);
        let back = Answer::from_bytes(&a.to_bytes()).unwrap();
        assert_eq!(back, a);
        let moved = back.findings_at(15, 20).unwrap();
        assert_eq!((moved[0].line, moved[0].end_line), (17, 19));
        assert_eq!(moved[0].suggestion.as_deref(), Some("s"));
        assert_eq!(moved[0].replacement.as_deref(), Some("    fixed();\n"));
    }

    #[test]
    fn a_finding_outside_the_chunk_distrusts_the_value() {
        let a = Answer::new(by(), &[finding(12, 14)], 10, 0);
        assert!(a.findings_at(10, 12).is_none());
        assert!(a.findings_at(10, 9).is_none());
    }

    #[test]
    fn other_formats_and_garbage_are_misses() {
        assert!(Answer::from_bytes(b"not json").is_none());
        let mut a = Answer::new(by(), &[finding(1, 1)], 1, 0);
        a.format = 99;
        assert!(Answer::from_bytes(&a.to_bytes()).is_none());
        let mut v = Answer::new(by(), &[finding(1, 1)], 1, 0);
        v.verdicts = Some(vec![]);
        assert!(
            Answer::from_bytes(&v.to_bytes()).is_none(),
            "verdicts must match findings"
        );
    }
}
