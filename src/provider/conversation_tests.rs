//! The conversation seam on the wire: both encoders on one transcript (a failover
//! mid-loop sends it to the other protocol), and both decoders on all four answer shapes.

use super::anthropic::{self, AnthropicDecoder};
use super::body_spec::BodySpec;
use super::conversation::*;
use super::openai::{self, OpenAiDecoder};
use super::sse::SseReader;
use super::wire::{Answer, Decoder, Step};
use crate::prompt::Prompt;
use serde_json::{Value, json};

fn prompt() -> Prompt {
    Prompt {
        system: "system block".into(),
        user: "the chunk".into(),
    }
}

fn spec<'a>(p: &'a Prompt, c: Option<&'a Conversation>) -> BodySpec<'a> {
    BodySpec {
        model: "m",
        prompt: p,
        conversation: c,
        stream: true,
        max_tokens: 4096,
    }
}

/// A loop two turns in: the model read a file and sent a call with broken JSON.
fn conversation() -> Conversation {
    Conversation {
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "read a file".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        choice: ToolChoice::Force("read_file".into()),
        turns: vec![
            Turn::Assistant {
                text: "let me look".into(),
                calls: vec![
                    ToolCall {
                        id: "call.1".into(),
                        name: "read_file".into(),
                        arguments: "{\"path\": \"src/a.rs\"}".into(),
                    },
                    ToolCall {
                        id: "call_2".into(),
                        name: "read_file".into(),
                        arguments: "{\"path\": ".into(),
                    },
                ],
            },
            Turn::Results(vec![
                ToolResult {
                    call_id: "call.1".into(),
                    name: "read_file".into(),
                    content: "fn a() {}".into(),
                    is_error: false,
                },
                ToolResult {
                    call_id: "call_2".into(),
                    name: "read_file".into(),
                    content: "arguments are not JSON".into(),
                    is_error: true,
                },
            ]),
        ],
    }
}

#[test]
fn single_shot_bodies_carry_the_two_messages_and_no_tools() {
    let p = prompt();
    let o = openai::body(&spec(&p, None));
    assert_eq!(o["messages"].as_array().unwrap().len(), 2);
    assert!(o.get("tools").is_none() && o.get("tool_choice").is_none());
    let a = anthropic::body(&spec(&p, None));
    assert_eq!(
        a["messages"],
        json!([{"role": "user", "content": "the chunk"}])
    );
    assert!(a.get("tools").is_none() && a.get("tool_choice").is_none());
    let empty = Conversation::default();
    assert_eq!(
        openai::body(&spec(&p, Some(&empty))),
        o,
        "no tools, no turns"
    );
}

#[test]
fn openai_encodes_tools_calls_and_results() {
    let (p, c) = (prompt(), conversation());
    let b = openai::body(&spec(&p, Some(&c)));
    assert_eq!(b["tools"][0]["type"], "function");
    assert_eq!(b["tools"][0]["function"]["name"], "read_file");
    assert_eq!(b["tools"][0]["function"]["parameters"]["type"], "object");
    assert_eq!(
        b["tool_choice"],
        json!({"type": "function", "function": {"name": "read_file"}})
    );
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 5, "system, user, assistant, two tool results");
    assert_eq!(m[2]["role"], "assistant");
    assert_eq!(m[2]["content"], "let me look");
    assert_eq!(m[2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        m[2]["tool_calls"][1]["function"]["arguments"],
        "{\"path\": "
    );
    assert_eq!(
        m[3],
        json!({"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": "fn a() {}"})
    );
    assert_eq!(m[4]["content"], "error: arguments are not JSON");
    let mut auto = c.clone();
    auto.choice = ToolChoice::None;
    assert_eq!(openai::body(&spec(&p, Some(&auto)))["tool_choice"], "none");
}

#[test]
fn anthropic_encodes_tools_calls_and_results() {
    let (p, c) = (prompt(), conversation());
    let b = anthropic::body(&spec(&p, Some(&c)));
    assert_eq!(b["tools"][0]["name"], "read_file");
    assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
    assert_eq!(
        b["tool_choice"],
        json!({"type": "tool", "name": "read_file"})
    );
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 3, "user, assistant, user with the results");
    let blocks = m[1]["content"].as_array().unwrap();
    assert_eq!(blocks[0], json!({"type": "text", "text": "let me look"}));
    assert_eq!(
        blocks[1],
        json!({"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "src/a.rs"}})
    );
    assert_eq!(
        blocks[2]["input"],
        json!({"invalid_arguments": "{\"path\": "}),
        "broken arguments stay visible and the block stays valid"
    );
    let results = m[2]["content"].as_array().unwrap();
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["tool_use_id"], "call_1");
    assert_eq!(results[1]["is_error"], true);
}

#[test]
fn a_results_turn_after_a_user_message_joins_it() {
    let p = prompt();
    let c = Conversation {
        turns: vec![Turn::Results(vec![ToolResult {
            call_id: "x".into(),
            name: "grep".into(),
            content: "none".into(),
            is_error: false,
        }])],
        ..Conversation::default()
    };
    let b = anthropic::body(&spec(&p, Some(&c)));
    let m = b["messages"].as_array().unwrap();
    assert_eq!(m.len(), 1, "user messages never follow each other");
    assert_eq!(
        m[0]["content"][0],
        json!({"type": "text", "text": "the chunk"})
    );
    assert_eq!(m[0]["content"][1]["type"], "tool_result");
}

/// Feeds a stream (or a whole body) to a decoder.
fn decode(d: &mut dyn Decoder, stream: Option<&str>, body: &str) -> (Answer, Vec<bool>) {
    let Some(s) = stream else {
        return (d.body(body.as_bytes()).unwrap(), vec![]);
    };
    let mut items = Vec::new();
    SseReader::new().feed(s.as_bytes(), &mut items).unwrap();
    let mut progress = Vec::new();
    let mut done = false;
    for i in &items {
        match d.item(i).unwrap() {
            Step::Content => progress.push(true),
            Step::Reasoning => progress.push(false),
            Step::Other => {}
            Step::Done => done = true,
        }
    }
    (d.end_of_stream(done).unwrap(), progress)
}

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

fn oa_delta(delta: Value, finish: Value) -> String {
    data(
        json!({"id": "x", "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
    )
}

#[test]
fn openai_streamed_calls_join_by_index_and_keep_broken_arguments_raw() {
    let s = [
        oa_delta(json!({"role": "assistant", "content": null}), Value::Null),
        oa_delta(json!({"reasoning_content": "thinking"}), Value::Null),
        oa_delta(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": ""}},
                                   {"index": 1, "id": "call_b", "type": "function", "function": {"name": "grep", "arguments": "{\"pat"}}]}),
            Value::Null,
        ),
        oa_delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\":"}}]}), Value::Null),
        oa_delta(json!({"tool_calls": [{"index": 1, "function": {"arguments": "tern\": \"x\"}"}}]}), Value::Null),
        oa_delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"a"}}]}), Value::Null),
        oa_delta(json!({}), json!("tool_calls")),
        "data: [DONE]\n\n".into(),
    ]
    .concat();
    let (a, progress) = decode(&mut OpenAiDecoder::default(), Some(&s), "");
    assert_eq!(
        progress,
        [false, true, true, true, true],
        "reasoning, then call fragments"
    );
    assert_eq!(a.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(a.calls.len(), 2);
    assert_eq!(
        (
            a.calls[0].id.as_str(),
            a.calls[0].name.as_str(),
            a.calls[0].arguments.as_str()
        ),
        ("call_a", "read_file", "{\"path\": \"a")
    );
    assert_eq!(a.calls[1].arguments, "{\"pattern\": \"x\"}");
}

#[test]
fn openai_whole_answers_carry_calls_without_content() {
    let body = json!({"id": "x", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls",
        "message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\": \"TODO\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "list_files", "arguments": {"dir": "src"}}}]}}]});
    let (a, _) = decode(&mut OpenAiDecoder::default(), None, &body.to_string());
    assert_eq!(a.text, "");
    assert_eq!(a.calls.len(), 2);
    assert_eq!(a.calls[0].arguments, "{\"pattern\": \"TODO\"}");
    assert_eq!(
        a.calls[1].arguments, "{\"dir\":\"src\"}",
        "an object is sent as its JSON"
    );
    let bare = json!({"choices": [{"index": 0, "message": {"role": "assistant"}, "finish_reason": "stop"}]});
    assert!(
        OpenAiDecoder::default()
            .body(bare.to_string().as_bytes())
            .is_err()
    );
}

fn ev(kind: &str, v: Value) -> String {
    format!("event: {kind}\ndata: {v}\n\n")
}

#[test]
fn anthropic_streamed_tool_use_blocks_join_their_pieces() {
    let s = [
        ev("message_start", json!({"type": "message_start", "message": {"id": "msg", "model": "m", "usage": {"input_tokens": 5}}})),
        ev("content_block_start", json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}})),
        ev("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}})),
        ev("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}})),
        ev("content_block_start", json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}})),
        ev("content_block_delta", json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "reading"}})),
        ev("content_block_start", json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}})),
        ev("content_block_delta", json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"path\""}})),
        ev("content_block_delta", json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": ": \"b.rs\"}"}})),
        ev("content_block_start", json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "grep", "input": {}}})),
        ev("content_block_delta", json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{\"pattern\": tru"}})),
        ev("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}})),
        ev("message_stop", json!({"type": "message_stop"})),
    ]
    .concat();
    let (a, progress) = decode(&mut AnthropicDecoder::default(), Some(&s), "");
    assert_eq!(progress, [false, false, true, true, true, true, true, true]);
    assert_eq!(a.text, "reading");
    assert_eq!(a.finish_reason.as_deref(), Some("tool_use"));
    assert_eq!(a.calls.len(), 2);
    assert_eq!(
        (a.calls[0].id.as_str(), a.calls[0].arguments.as_str()),
        ("toolu_1", "{\"path\": \"b.rs\"}")
    );
    assert_eq!(a.calls[1].arguments, "{\"pattern\": tru", "kept raw");
}

#[test]
fn anthropic_whole_answers_carry_tool_use_blocks() {
    let body = json!({"id": "msg", "type": "message", "model": "m", "stop_reason": "tool_use",
        "content": [{"type": "thinking", "thinking": "not the answer", "signature": "s"},
                    {"type": "text", "text": "two calls"},
                    {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "a"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "submit_findings", "input": {"findings": []}}],
        "usage": {"input_tokens": 1, "output_tokens": 2}});
    let (a, _) = decode(&mut AnthropicDecoder::default(), None, &body.to_string());
    assert_eq!(a.text, "two calls", "thinking is not the answer");
    assert_eq!(a.calls.len(), 2);
    assert_eq!(a.calls[1].name, "submit_findings");
    assert_eq!(a.calls[1].arguments, "{\"findings\":[]}");
}

/// A transcript built from one protocol's answer, sent to the other, and back.
#[test]
fn a_transcript_crosses_protocols_both_ways() {
    let p = prompt();
    let oa = json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
        "content": "", "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\": \"x\"}"}}]}}]});
    let (a, _) = decode(&mut OpenAiDecoder::default(), None, &oa.to_string());
    let results = |calls: &[ToolCall]| {
        Turn::Results(
            calls
                .iter()
                .map(|c| ToolResult {
                    call_id: c.id.clone(),
                    name: c.name.clone(),
                    content: "1 match".into(),
                    is_error: false,
                })
                .collect(),
        )
    };
    let mut c = conversation();
    c.turns = vec![
        Turn::Assistant {
            text: a.text.clone(),
            calls: a.calls.clone(),
        },
        results(&a.calls),
    ];
    let to_anthropic = anthropic::body(&spec(&p, Some(&c)));
    let m = to_anthropic["messages"].as_array().unwrap();
    assert_eq!(
        m[1]["content"].as_array().unwrap().len(),
        1,
        "no empty text block"
    );
    assert_eq!(m[1]["content"][0]["input"], json!({"pattern": "x"}));
    assert_eq!(m[1]["content"][0]["id"], m[2]["content"][0]["tool_use_id"]);

    let an = json!({"type": "message", "stop_reason": "tool_use", "content": [
        {"type": "tool_use", "id": "toolu_01A", "name": "read_file", "input": {"path": "src/a.rs"}}]});
    let (b, _) = decode(&mut AnthropicDecoder::default(), None, &an.to_string());
    c.turns.push(Turn::Assistant {
        text: b.text.clone(),
        calls: b.calls.clone(),
    });
    c.turns.push(results(&b.calls));
    let to_openai = openai::body(&spec(&p, Some(&c)));
    let m = to_openai["messages"].as_array().unwrap();
    assert_eq!(m.len(), 2 + 4);
    assert_eq!(m[2]["tool_calls"][0]["id"], "call_9");
    assert_eq!(m[2]["content"], Value::Null);
    assert_eq!(m[4]["tool_calls"][0]["id"], "toolu_01A");
    assert_eq!(
        m[4]["tool_calls"][0]["function"]["arguments"],
        "{\"path\":\"src/a.rs\"}"
    );
    assert_eq!(m[5]["tool_call_id"], "toolu_01A");
    let back = anthropic::body(&spec(&p, Some(&c)));
    assert_eq!(
        back["messages"].as_array().unwrap().len(),
        5,
        "user, (assistant, user) × 2"
    );
}
