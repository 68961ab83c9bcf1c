//! One request body, built once per attempt: the protocol's encoder shapes prompt and
//! conversation, then the route's rules for current models apply (docs/design.md §14), in
//! this order: the model family's parameters (OpenAI reasoning models get
//! `max_completion_tokens` and no `temperature`), `reasoningEffort`, structured output
//! (OpenAI `response_format`, Anthropic a forced `submit_findings` tool), the route's
//! `params` table, and last the fixes the route learned from 400s this run.
//!
//! The shared part of every request comes first and is the same bytes for every unit of
//! a skill (the system block, then tool definitions), so that providers' prefix caches
//! hit; Anthropic gets explicit cache breakpoints on it.

use super::body_spec::BodySpec;
use super::conversation::{Conversation, SUBMIT_FINDINGS, ToolChoice, ToolSpec};
use super::param_fix::Adjustments;
use super::{AttemptRequest, anthropic, openai};
use crate::config::{ProviderKind, Route, StructuredOutput};
use serde_json::{Value, json};

/// Whether `model` is one of OpenAI's reasoning families (o1, o3, o4-mini, ..., gpt-5*),
/// also behind a gateway's prefix (`openai/o4-mini`, `azure/gpt-5.4`).
pub(crate) fn reasoning_family(model: &str) -> bool {
    let m = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    m.starts_with("gpt-5")
        || (m.starts_with('o') && m[1..].starts_with(|c: char| c.is_ascii_digit()))
}

/// Whether this request asks for structured findings: a single-shot review on a route
/// with `structuredOutput = "auto"` whose provider has not refused it this run.
fn structured(route: &Route, req: &AttemptRequest, fixes: &Adjustments) -> bool {
    let refused = if route.provider == ProviderKind::Anthropic {
        fixes.dropped("tools") || fixes.dropped("tool_choice")
    } else {
        fixes.dropped("response_format")
    };
    route.structured_output == StructuredOutput::Auto && req.conversation.is_none() && !refused
}

/// The `submit_findings` tool (the findings schema as its input), forced.
pub(crate) fn submit_findings_tool() -> ToolSpec {
    ToolSpec {
        name: SUBMIT_FINDINGS.into(),
        description: crate::findings_schema::SUBMIT_DESCRIPTION.into(),
        parameters: crate::findings_schema::schema(),
    }
}

/// The body of one attempt on `route`.
pub(crate) fn build(route: &Route, req: &AttemptRequest, fixes: &Adjustments) -> Value {
    let anthropic_wire = route.provider == ProviderKind::Anthropic;
    let forced;
    let mut conversation = req.conversation.as_ref();
    let structured = structured(route, req, fixes);
    if structured && anthropic_wire {
        forced = Conversation {
            tools: vec![submit_findings_tool()],
            choice: ToolChoice::Force(SUBMIT_FINDINGS.into()),
            turns: Vec::new(),
        };
        conversation = Some(&forced);
    }
    let spec = BodySpec {
        model: &route.model,
        prompt: &req.prompt,
        conversation,
        stream: route.stream,
        max_tokens: req.output_cap.unwrap_or(route.max_tokens),
    };
    let mut body = if anthropic_wire {
        anthropic::body(&spec)
    } else {
        openai::body(&spec)
    };
    if !anthropic_wire {
        openai_family(route, &mut body);
        if structured {
            // A local server turns the schema into a grammar: its bounds end the answer.
            let schema = if route.provider.is_local() {
                crate::findings_schema::bounded()
            } else {
                crate::findings_schema::schema()
            };
            body["response_format"] = json!({"type": "json_schema", "json_schema": {
                "name": crate::findings_schema::NAME, "strict": true,
                "schema": schema}});
        }
    }
    if let Some(o) = body.as_object_mut() {
        for (k, v) in &route.params {
            o.insert(k.clone(), v.clone());
        }
    }
    fixes.apply(&mut body);
    body
}

/// OpenAI-wire rules by family, and `reasoningEffort` in each gateway's spelling.
fn openai_family(route: &Route, body: &mut Value) {
    let Some(o) = body.as_object_mut() else {
        return;
    };
    if reasoning_family(&route.model) {
        o.remove("temperature");
        if let Some(v) = o.remove("max_tokens") {
            o.insert("max_completion_tokens".into(), v);
        }
    }
    if let Some(effort) = &route.reasoning_effort {
        if route.provider == ProviderKind::OpenRouter {
            o.insert("reasoning".into(), json!({ "effort": effort }));
        } else {
            o.insert("reasoning_effort".into(), json!(effort));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::Prompt;
    use crate::provider::Limits;
    use std::time::Duration;

    fn req() -> AttemptRequest {
        let d = Duration::from_secs(1);
        AttemptRequest::new(
            Prompt {
                system: "s".into(),
                user: "u".into(),
            },
            (1, 2),
            Limits {
                connect: d,
                first_token: d,
                idle: d,
                total: d,
            },
        )
    }

    fn route(kind: ProviderKind, model: &str) -> Route {
        Route::new("r", kind, model, 1)
    }

    #[test]
    fn families_by_model_name() {
        for m in [
            "o1",
            "o3",
            "o4-mini",
            "o1-preview",
            "gpt-5",
            "gpt-5.4",
            "gpt-5-mini",
            "openai/o4-mini",
            "azure/GPT-5.4",
        ] {
            assert!(reasoning_family(m), "{m}");
        }
        for m in [
            "gpt-4o",
            "gpt-4.1",
            "omni",
            "o",
            "claude-sonnet-4-5",
            "kimi-k2",
            "llama-3.1-o1x",
        ] {
            assert!(!reasoning_family(m), "{m}");
        }
    }

    #[test]
    fn reasoning_models_get_max_completion_tokens_and_no_temperature() {
        let none = Adjustments::default();
        let mut r = route(ProviderKind::OpenAi, "gpt-5.4");
        r.reasoning_effort = Some("low".into());
        let b = build(&r, &req(), &none);
        assert!(b.get("temperature").is_none() && b.get("max_tokens").is_none());
        assert_eq!(b["max_completion_tokens"], 4096);
        assert_eq!(b["reasoning_effort"], "low");
        let mut or = route(ProviderKind::OpenRouter, "openai/o4-mini");
        or.reasoning_effort = Some("high".into());
        let b = build(&or, &req(), &none);
        assert_eq!(b["reasoning"], json!({"effort": "high"}));
        let b = build(&route(ProviderKind::OpenAi, "gpt-4o"), &req(), &none);
        assert_eq!(
            (b["max_tokens"].clone(), b["temperature"].clone()),
            (json!(4096), json!(0))
        );
    }

    #[test]
    fn structured_output_by_protocol_and_params_last() {
        let none = Adjustments::default();
        let mut r = route(ProviderKind::OpenAi, "gpt-4o");
        r.params.insert("top_p".into(), json!(0.5));
        r.params.insert("temperature".into(), json!(0.2));
        let b = build(&r, &req(), &none);
        assert_eq!(b["response_format"]["type"], "json_schema");
        assert_eq!(b["response_format"]["json_schema"]["strict"], true);
        assert_eq!(
            (b["top_p"].clone(), b["temperature"].clone()),
            (json!(0.5), json!(0.2))
        );
        let a = build(&route(ProviderKind::Anthropic, "claude"), &req(), &none);
        assert_eq!(a["tools"][0]["name"], SUBMIT_FINDINGS);
        assert_eq!(
            a["tool_choice"],
            json!({"type": "tool", "name": SUBMIT_FINDINGS})
        );
        r.structured_output = StructuredOutput::Off;
        assert!(build(&r, &req(), &none).get("response_format").is_none());
        let mut looping = req();
        looping.conversation = Some(Conversation::default());
        let l = build(&route(ProviderKind::Anthropic, "claude"), &looping, &none);
        assert!(l.get("tools").is_none(), "a loop brings its own tools");
    }

    #[test]
    fn the_prompt_s_contract_names_exactly_the_schema_s_fields() {
        let contract = crate::prompt::ANSWER_CONTRACT;
        for name in crate::findings_schema::field_names() {
            assert!(
                contract.contains(&format!("\"{name}\"")) || name == "skill",
                "{name}"
            );
        }
        let required: Vec<&str> = crate::findings_schema::required_names().collect();
        assert_eq!(
            required,
            ["severity", "confidence", "title", "description", "line"]
        );
    }
}
