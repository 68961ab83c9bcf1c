//! The conversation seam over real HTTP (docs/design.md §14): a request with tools and a
//! transcript reaches the fake in the route's own protocol, and the fake's tool calls come
//! back as `Attempt::calls` — both protocols, streamed and not, parallel calls, broken
//! argument JSON kept raw, and findings through `submit_findings`.

use crate::provider::route;
use crate::support::fake_provider::{Behavior, FakeProvider, finding};
use crate::support::fake_tools::{call, submit};
use serde_json::json;
use std::time::Duration;
use warden::config::ProviderKind;
use warden::prompt::Prompt;
use warden::provider::{
    AttemptRequest, Conversation, FinishReason, HttpProvider, Limits, Outcome, Provider,
    SUBMIT_FINDINGS, ToolCall, ToolChoice, ToolResult, ToolSpec, Turn,
};

fn request(conversation: Option<Conversation>) -> AttemptRequest {
    let d = Duration::from_secs(5);
    let mut r = AttemptRequest::new(
        Prompt {
            system: "system".into(),
            user: "review lines 1-20".into(),
        },
        (1, 20),
        Limits {
            connect: d,
            first_token: d,
            idle: d,
            total: d,
        },
    );
    r.conversation = conversation;
    r
}

fn tools() -> Vec<ToolSpec> {
    ["read_file", "grep", SUBMIT_FINDINGS]
        .iter()
        .map(|n| ToolSpec {
            name: n.to_string(),
            description: format!("the {n} tool"),
            // Strict-valid (OpenAI refuses `submit_findings`, a strict function, otherwise).
            parameters: json!({"type": "object", "properties": {}, "required": [],
                               "additionalProperties": false}),
        })
        .collect()
}

fn kinds() -> [(ProviderKind, bool); 4] {
    [
        (ProviderKind::OpenAi, true),
        (ProviderKind::OpenAi, false),
        (ProviderKind::Anthropic, true),
        (ProviderKind::Anthropic, false),
    ]
}

fn provider(fake: &FakeProvider, kind: ProviderKind, stream: bool, model: &str) -> HttpProvider {
    let r = route("r", kind, model, &fake.base_url(), stream);
    HttpProvider::new(&r, None, Duration::from_secs(2))
}

#[test]
fn parallel_calls_come_back_whole_in_both_protocols_streamed_and_not() {
    let fake = FakeProvider::start();
    fake.script(
        "agent",
        vec![Behavior::ToolCalls(vec![
            call("read_file", json!({"path": "src/lib.rs"})),
            ("grep".into(), "{\"pattern\": \"unclosed".into()),
        ])],
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (kind, stream) in kinds() {
        let p = provider(&fake, kind, stream, "agent");
        let conv = Conversation {
            tools: tools(),
            ..Conversation::default()
        };
        let a = rt.block_on(p.attempt(&request(Some(conv))));
        let what = format!("{kind:?} stream={stream}");
        assert_eq!(a.record.outcome, Outcome::Ok, "{what}: {}", a.record.reason);
        assert!(
            a.extracted.is_none(),
            "{what}: a turn of calls, no findings"
        );
        assert_eq!(a.finish, Some(FinishReason::ToolCalls), "{what}");
        assert_eq!(a.calls.len(), 2, "{what}");
        assert_eq!(a.calls[0].name, "read_file");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&a.calls[0].arguments).unwrap(),
            json!({"path": "src/lib.rs"}),
            "{what}"
        );
        if stream || kind == ProviderKind::OpenAi {
            assert_eq!(
                a.calls[1].arguments, "{\"pattern\": \"unclosed",
                "{what}: raw"
            );
        }
        assert_ne!(a.calls[0].id, a.calls[1].id, "{what}");
        if stream {
            assert!(a.record.ttft.is_some() && a.record.first_content.is_some());
        }
    }
}

#[test]
fn findings_arrive_through_submit_findings_and_are_not_calls() {
    let fake = FakeProvider::start();
    fake.script(
        "agent",
        vec![Behavior::ToolCalls(vec![submit(json!([
            finding(3, "high", "bug"),
            finding(99, "low", "outside")
        ]))])],
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (kind, stream) in kinds() {
        let p = provider(&fake, kind, stream, "agent");
        let conv = Conversation {
            tools: tools(),
            choice: ToolChoice::Force(SUBMIT_FINDINGS.into()),
            turns: vec![],
        };
        let a = rt.block_on(p.attempt(&request(Some(conv))));
        let what = format!("{kind:?} stream={stream}");
        assert_eq!(a.record.outcome, Outcome::Ok, "{what}: {}", a.record.reason);
        let ex = a.extracted.expect("findings");
        assert_eq!(ex.findings.len(), 1, "{what}");
        assert_eq!(ex.dropped_out_of_range, 1, "{what}");
        assert!(
            a.calls.is_empty(),
            "{what}: submit_findings is not a call to answer"
        );
    }
}

#[test]
fn the_transcript_reaches_the_wire_in_each_protocol() {
    let fake = FakeProvider::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let conv = Conversation {
        tools: tools(),
        choice: ToolChoice::Auto,
        turns: vec![
            Turn::Assistant {
                text: String::new(),
                calls: vec![ToolCall {
                    id: "call_0".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\": \"a\"}".into(),
                }],
            },
            Turn::Results(vec![ToolResult {
                call_id: "call_0".into(),
                name: "read_file".into(),
                content: "fn a() {}".into(),
                is_error: false,
            }]),
        ],
    };
    for (kind, model) in [(ProviderKind::OpenAi, "o"), (ProviderKind::Anthropic, "a")] {
        let p = provider(&fake, kind, true, model);
        let a = rt.block_on(p.attempt(&request(Some(conv.clone()))));
        assert_eq!(a.record.outcome, Outcome::Ok, "{}", a.record.reason);
        assert!(
            a.extracted.is_some(),
            "a text answer is read by the text contract"
        );
    }
    let o = &fake.requests_for("o")[0].body;
    assert_eq!(o["messages"][2]["tool_calls"][0]["id"], "call_0");
    assert_eq!(o["messages"][3]["role"], "tool");
    assert_eq!(o["tool_choice"], "auto");
    let a = &fake.requests_for("a")[0].body;
    assert_eq!(a["messages"][1]["content"][0]["type"], "tool_use");
    assert_eq!(a["messages"][2]["content"][0]["tool_use_id"], "call_0");
    assert_eq!(a["tools"][2]["name"], SUBMIT_FINDINGS);
    assert_eq!(a["tool_choice"], json!({"type": "auto"}));
}

#[test]
fn a_single_shot_request_is_the_two_messages_and_calls_alone_are_no_review() {
    let fake = FakeProvider::start();
    // A server that answers calls whatever `tool_choice` forces (the real APIs cannot).
    fake.ignore_tool_choice();
    fake.script(
        "stray",
        vec![Behavior::ToolCalls(vec![call("read_file", json!({}))])],
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (kind, stream) in kinds() {
        let p = provider(&fake, kind, stream, "plain");
        let a = rt.block_on(p.attempt(&request(None)));
        assert_eq!(a.record.outcome, Outcome::Ok);
        let p = provider(&fake, kind, stream, "stray");
        let a = rt.block_on(p.attempt(&request(None)));
        assert_eq!(
            a.record.outcome,
            Outcome::BadResponse,
            "{kind:?} {stream}: a single-shot answer of calls has no findings: {}",
            a.record.reason
        );
    }
    for r in fake.requests_for("plain") {
        // No tools but, on Anthropic, the forced submit_findings of structured output.
        let tools = r.body.get("tools").and_then(|t| t.as_array());
        assert!(
            tools.is_none_or(|t| t.len() == 1 && t[0]["name"] == SUBMIT_FINDINGS),
            "{}",
            r.body
        );
        let n = r.body["messages"].as_array().unwrap().len();
        assert_eq!(n, if r.path.ends_with("/messages") { 1 } else { 2 });
    }
}

#[test]
fn the_output_cap_overrides_the_route_s_max_tokens() {
    let fake = FakeProvider::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (kind, model) in [(ProviderKind::OpenAi, "o"), (ProviderKind::Anthropic, "a")] {
        let p = provider(&fake, kind, false, model);
        let mut req = request(None);
        rt.block_on(p.attempt(&req));
        req.output_cap = Some(2048);
        rt.block_on(p.attempt(&req));
    }
    for model in ["o", "a"] {
        let r = fake.requests_for(model);
        assert_eq!(r[0].body["max_tokens"], 1024, "the route's maxTokens");
        assert_eq!(r[1].body["max_tokens"], 2048, "the attempt's cap");
    }
}

/// Every `cache_control` marker in a body, by where it sits.
fn breakpoints(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                if k == "cache_control" {
                    out.push(at.to_string());
                } else {
                    breakpoints(x, &format!("{at}.{k}"), out);
                }
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                breakpoints(x, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn anthropic_loop_requests_mark_the_system_block_the_tools_and_the_transcript_for_the_cache() {
    let fake = FakeProvider::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let p = provider(&fake, ProviderKind::Anthropic, true, "cached");
    let turn = |n: usize| {
        [
            Turn::Assistant {
                text: String::new(),
                calls: vec![ToolCall {
                    id: format!("call_{n}"),
                    name: "read_file".into(),
                    arguments: format!("{{\"path\": \"src/f{n}.rs\"}}"),
                }],
            },
            Turn::Results(vec![ToolResult {
                call_id: format!("call_{n}"),
                name: "read_file".into(),
                content: format!("fn f{n}() {{}}"),
                is_error: false,
            }]),
        ]
    };
    let mut conv = Conversation {
        tools: tools(),
        choice: ToolChoice::Auto,
        turns: turn(0).to_vec(),
    };
    rt.block_on(p.attempt(&request(Some(conv.clone()))));
    conv.turns.extend(turn(1));
    rt.block_on(p.attempt(&request(Some(conv))));
    let sent = fake.requests_for("cached");
    let (first, second) = (&sent[0].body, &sent[1].body);
    for body in [first, second] {
        let mut marks = Vec::new();
        breakpoints(body, "$", &mut marks);
        marks.sort();
        let last = body["messages"].as_array().unwrap().len() - 1;
        let blocks = body["messages"][last]["content"].as_array().unwrap().len() - 1;
        assert_eq!(
            marks,
            [
                format!("$.messages[{last}].content[{blocks}]"),
                "$.system[0]".to_string(),
                "$.tools[2]".to_string(),
            ],
            "the system block, the last tool and the transcript's last block (at most 4): {body}"
        );
        assert_eq!(
            body["messages"][last]["content"][blocks]["type"],
            "tool_result"
        );
    }
    // The next turn's request starts with the same bytes: the first turn's transcript is a
    // prefix of it (the marker moves to the new last block).
    let strip = |v: &serde_json::Value| {
        let mut v = v.clone();
        for m in v["messages"].as_array_mut().unwrap() {
            if let Some(c) = m["content"].as_array_mut() {
                for b in c {
                    b.as_object_mut().unwrap().remove("cache_control");
                }
            }
        }
        v
    };
    let (a, b) = (strip(first), strip(second));
    assert_eq!(a["system"], b["system"]);
    assert_eq!(a["tools"], b["tools"]);
    let n = a["messages"].as_array().unwrap().len();
    assert_eq!(
        a["messages"].as_array().unwrap()[..n],
        b["messages"].as_array().unwrap()[..n]
    );
}

#[test]
fn interleaved_parallel_fragments_join_by_index_and_block_in_both_streams() {
    use serde_json::Value;
    let data = |v: Value| format!("data: {v}\n\n");
    let chunk = |delta: Value, finish: Value| {
        data(
            json!({"id": "gen-x", "object": "chat.completion.chunk", "model": "inter",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let piece = |i: u32, args: &str| {
        chunk(
            json!({"tool_calls": [{"index": i, "function": {"arguments": args}}]}),
            Value::Null,
        )
    };
    // OpenAI: text first, both calls opened, then their argument pieces alternating, and
    // one chunk carrying pieces of both.
    let mut openai = chunk(
        json!({"role": "assistant", "content": "Reading two files."}),
        Value::Null,
    );
    for (i, name) in [(0, "read_file"), (1, "grep")] {
        openai += &chunk(
            json!({"tool_calls": [{"index": i, "id": format!("call_{i}"), "type": "function",
                                   "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        );
    }
    openai += &piece(1, "{\"pattern\": ");
    openai += &piece(0, "{\"path\": ");
    openai += &chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"src/a.rs\"}"}},
                              {"index": 1, "function": {"arguments": "\"fn main\"}"}}]}),
        Value::Null,
    );
    openai += &chunk(json!({}), json!("tool_calls"));
    openai += "data: [DONE]\n\n";
    // Anthropic: a text block, then two tool_use blocks whose input_json_delta pieces
    // arrive three to a block.
    let ev = |kind: &str, v: Value| format!("event: {kind}\ndata: {v}\n\n");
    let mut anthropic = ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_x", "model": "inter",
               "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    anthropic += &ev(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0,
        "content_block": {"type": "text", "text": ""}}),
    );
    anthropic += &ev(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "text_delta", "text": "Reading two files."}}),
    );
    anthropic += &ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    for (i, name, pieces) in [
        (1, "read_file", ["{\"pa", "th\": \"src/", "a.rs\"}"]),
        (2, "grep", ["{\"pattern\"", ": \"fn ", "main\"}"]),
    ] {
        anthropic += &ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": i,
            "content_block": {"type": "tool_use", "id": format!("toolu_{i}"), "name": name, "input": {}}}),
        );
        for p in pieces {
            anthropic += &ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": i,
                "delta": {"type": "input_json_delta", "partial_json": p}}),
            );
        }
        anthropic += &ev(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        );
    }
    anthropic += &ev(
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}}),
    );
    anthropic += &ev("message_stop", json!({"type": "message_stop"}));

    let fake = FakeProvider::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    for (kind, model, stream) in [
        (ProviderKind::OpenAi, "inter-openai", openai),
        (ProviderKind::Anthropic, "inter-anthropic", anthropic),
    ] {
        fake.script(model, vec![Behavior::OkThen(stream)]);
        let p = provider(&fake, kind, true, model);
        let conv = Conversation {
            tools: tools(),
            ..Conversation::default()
        };
        let a = rt.block_on(p.attempt(&request(Some(conv))));
        assert_eq!(
            a.record.outcome,
            Outcome::Ok,
            "{kind:?}: {}",
            a.record.reason
        );
        assert_eq!(a.finish, Some(FinishReason::ToolCalls), "{kind:?}");
        let calls: Vec<(String, Value)> = a
            .calls
            .iter()
            .map(|c| (c.name.clone(), serde_json::from_str(&c.arguments).unwrap()))
            .collect();
        assert_eq!(
            calls,
            [
                ("read_file".to_string(), json!({"path": "src/a.rs"})),
                ("grep".to_string(), json!({"pattern": "fn main"})),
            ],
            "{kind:?}"
        );
        assert_ne!(a.calls[0].id, a.calls[1].id, "{kind:?}");
    }
}
