//! A tool loop through a real gateway (docs/design.md §14, issue 29): warden against the
//! pinned LiteLLM proxy on loopback in front of the fake provider playing a small agent
//! (it reads the file under review, then submits). The proxy relays the tool definitions
//! and the transcript upstream and the model's tool calls back, streamed (LiteLLM
//! re-chunks the calls into its own `delta.tool_calls` fragments) and not.

use crate::gateway::{attempts, review, session};
use crate::support::fake_provider::Behavior;
use crate::support::litellm::{AGENT, proxy};
use serde_json::Value;

/// The upstream requests of the unit whose file is `path`, in order: whether each was
/// streamed, and its body.
fn upstream_of(path: &str) -> Vec<(bool, Value)> {
    proxy()
        .fake
        .requests_for(AGENT)
        .into_iter()
        .filter(|r| r.body.to_string().contains(&format!("file: {path}")))
        .map(|r| (r.stream, r.body))
        .collect()
}

#[test]
fn an_agentic_review_through_litellm_relays_tools_both_ways_streamed_and_not() {
    let p = proxy();
    p.fake.script(AGENT, vec![Behavior::Agent]);
    for stream in [true, false] {
        let (repo, cfg) = session(2, "litellm", AGENT, 2);
        if !stream {
            let path = cfg.path().join("warden.toml");
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, format!("{text}stream = false\n")).unwrap();
        }
        let (report, stderr) = review(&repo, &cfg);
        let what = format!("stream={stream}: {report:#}\n{stderr}");
        assert_eq!(report["outcome"], "complete", "{what}");
        assert_eq!(report["summary"]["reviewed"], 2, "{what}");
        assert_eq!(attempts(&report), 4, "a read and a submit per unit: {what}");
        for u in report["units"].as_array().unwrap() {
            let l = &u["toolLoop"];
            assert_eq!(l["turnsUsed"], 2, "{what}");
            assert_eq!(l["callsByTool"]["read_file"], 1, "{what}");
            assert!(l["toolBytes"].as_u64().unwrap() > 0, "{what}");
        }
        // This run's two requests for one unit (the last ones of its file).
        let sent = upstream_of("src/g0.rs");
        let sent: Vec<&Value> = sent[sent.len() - 2..]
            .iter()
            .map(|(streamed, body)| {
                assert_eq!(*streamed, stream, "{body}");
                body
            })
            .collect();
        // Upstream: the tools went through on the first turn...
        let names: Vec<&str> = sent[0]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("no tools upstream: {}", sent[0]))
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert!(
            names.contains(&"read_file") && names.contains(&"submit_findings"),
            "{names:?}"
        );
        // ...and on the second, the model's call and warden's result for it: the file read.
        let messages = sent[1]["messages"].as_array().unwrap();
        let call = messages
            .iter()
            .find(|m| m["role"] == "assistant")
            .unwrap_or_else(|| panic!("no assistant turn upstream: {}", sent[1]));
        assert_eq!(
            call["tool_calls"][0]["function"]["name"], "read_file",
            "{call}"
        );
        let result = messages
            .iter()
            .find(|m| m["role"] == "tool")
            .unwrap_or_else(|| panic!("no tool result upstream: {}", sent[1]));
        assert_eq!(
            result["tool_call_id"], call["tool_calls"][0]["id"],
            "{result}"
        );
        assert!(
            result["content"]
                .to_string()
                .contains("g0_10 = compute(10)"),
            "{result}"
        );
    }
}
