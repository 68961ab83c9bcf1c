//! The findings object of docs/design.md §9 as one JSON Schema: what OpenAI's `response_format`
//! (json_schema, strict) and Anthropic's forced `submit_findings` tool carry, what a tool
//! loop's `submit_findings` takes, and what the prompt's answer contract describes in
//! words (a test holds the two to the same fields).
//!
//! Strict structured outputs allow no optional property: every object has
//! `additionalProperties: false` and lists every property in `required`, and the optional
//! ones are nullable. Extraction reads `null` as absent.

use serde_json::{Value, json};

/// The schema's name on the wire (`[A-Za-z0-9_-]{1,64}`).
pub const NAME: &str = "warden_findings";

/// One field of a finding: its name, its JSON Schema, and whether a model must fill it
/// (the others are nullable).
struct Field {
    name: &'static str,
    required: bool,
    schema: fn() -> Value,
}

const FIELDS: &[Field] = &[
    Field {
        name: "severity",
        required: true,
        schema: || json!({"type": "string", "enum": ["critical", "high", "medium", "low", "info"]}),
    },
    Field {
        name: "confidence",
        required: true,
        schema: || json!({"type": "string", "enum": ["high", "medium", "low"]}),
    },
    Field {
        name: "title",
        required: true,
        schema: || json!({"type": "string", "description": "short summary"}),
    },
    Field {
        name: "description",
        required: true,
        schema: || json!({"type": "string", "description": "what goes wrong and why"}),
    },
    Field {
        name: "line",
        required: true,
        schema: || json!({"type": "integer", "description": "new-file line number inside the lines under review"}),
    },
    Field {
        name: "endLine",
        required: false,
        schema: || json!({"type": ["integer", "null"], "description": "last new-file line, or null"}),
    },
    Field {
        name: "suggestion",
        required: false,
        schema: || json!({"type": ["string", "null"], "description": "a fix in words, or null"}),
    },
    Field {
        name: "replacement",
        required: false,
        schema: || json!({"type": ["string", "null"], "description": "the exact new text of lines line..endLine that fixes it, or null"}),
    },
    Field {
        name: "skill",
        required: false,
        schema: || json!({"type": ["string", "null"], "description": "the skill the finding belongs to when several run in one pass, else null"}),
    },
];

/// The names of a finding's fields, in the schema's order.
pub fn field_names() -> impl Iterator<Item = &'static str> {
    FIELDS.iter().map(|f| f.name)
}

/// The names a model must fill (the rest may be null).
pub fn required_names() -> impl Iterator<Item = &'static str> {
    FIELDS.iter().filter(|f| f.required).map(|f| f.name)
}

/// The findings object's JSON Schema, strict-valid.
pub fn schema() -> Value {
    let props: serde_json::Map<String, Value> = FIELDS
        .iter()
        .map(|f| (f.name.to_string(), (f.schema)()))
        .collect();
    let all: Vec<&str> = field_names().collect();
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["findings"],
        "properties": {
            "findings": {
                "type": "array",
                "description": "every finding; an empty list when there is nothing to report",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": all,
                    "properties": props,
                }
            }
        }
    })
}

/// The bounds of [`bounded`]: at most this many findings per answer.
pub const BOUNDED_MAX_ITEMS: u64 = 5;

/// The longest text of each string field under [`bounded`], in characters.
const BOUNDED_LENGTHS: &[(&str, u64)] = &[
    ("title", 100),
    ("description", 300),
    ("suggestion", 200),
    ("replacement", 400),
    ("skill", 64),
];

/// The findings schema with bounds (docs/design.md §15): `maxItems` on the list and
/// `maxLength` on every text. A server that turns the schema into a grammar (llama.cpp,
/// Ollama, vLLM) then cannot let a small model's answer run on: the object must close
/// within a few hundred tokens. A bound is a limit of the grammar, not a request: a
/// server that ignores it leaves the answer to the output cap, and a cut is still a cut.
pub fn bounded() -> Value {
    let mut s = schema();
    let findings = &mut s["properties"]["findings"];
    findings["maxItems"] = json!(BOUNDED_MAX_ITEMS);
    let props = &mut findings["items"]["properties"];
    for (name, max) in BOUNDED_LENGTHS {
        props[*name]["maxLength"] = json!(max);
    }
    s
}

/// What the `submit_findings` tool says it does.
pub const SUBMIT_DESCRIPTION: &str = "Submit the review's findings (an empty list when there is nothing to report). Call it exactly once, with every finding.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bounded_schema_is_the_schema_with_bounds_on_the_list_and_every_text() {
        let b = bounded();
        let items = &b["properties"]["findings"];
        assert_eq!(items["maxItems"], BOUNDED_MAX_ITEMS);
        for (name, field) in items["items"]["properties"].as_object().unwrap() {
            let text = field["type"] == "string"
                || field["type"]
                    .as_array()
                    .is_some_and(|t| t.contains(&json!("string")));
            let is_enum = field.get("enum").is_some();
            assert_eq!(
                field.get("maxLength").is_some(),
                text && !is_enum,
                "{name}: {field}"
            );
        }
        // Without the bounds it is the same schema.
        let mut stripped = b.clone();
        let f = &mut stripped["properties"]["findings"];
        f.as_object_mut().unwrap().remove("maxItems");
        for p in f["items"]["properties"]
            .as_object_mut()
            .unwrap()
            .values_mut()
        {
            p.as_object_mut().unwrap().remove("maxLength");
        }
        assert_eq!(stripped, schema());
    }

    /// Every object of a strict schema closes its properties and requires all of them.
    fn strict_ok(v: &Value, at: &str) {
        if let Some(props) = v.get("properties").and_then(Value::as_object) {
            assert_eq!(v["additionalProperties"], false, "{at}");
            let req: Vec<&str> = v["required"]
                .as_array()
                .unwrap_or_else(|| panic!("{at}: no required"))
                .iter()
                .filter_map(Value::as_str)
                .collect();
            for k in props.keys() {
                assert!(req.contains(&k.as_str()), "{at}.{k} not required");
            }
            for (k, p) in props {
                strict_ok(p, &format!("{at}.{k}"));
            }
        }
        if let Some(items) = v.get("items") {
            strict_ok(items, &format!("{at}[]"));
        }
    }

    #[test]
    fn the_schema_follows_the_strict_rules() {
        strict_ok(&schema(), "$");
        assert!(
            NAME.len() <= 64
                && NAME
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
    }

    #[test]
    fn a_strict_answer_with_nulls_is_read_whole() {
        let answer = json!({"findings": [{"severity": "high", "confidence": "low", "title": "t",
            "description": "d", "line": 4, "endLine": null, "suggestion": null,
            "replacement": null, "skill": null}]});
        let e = crate::findings::extract(&answer.to_string(), 1, 9).unwrap();
        assert_eq!(e.findings.len(), 1);
        assert_eq!((e.findings[0].line, e.findings[0].end_line), (4, 4));
        assert_eq!(e.findings[0].suggestion, None);
        assert_eq!(e.dropped_invalid, 0);
    }
}
