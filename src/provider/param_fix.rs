//! Self-correcting requests (docs/design.md §14, "Current models"): a 400 that names an
//! optional parameter warden sent makes the route drop (or rename) it for the rest of the
//! run, once per parameter, and the engine re-sends the attempt at once (no attempt used,
//! no breaker verdict). A 400 that says the prompt is too long for the model's window is
//! recognised here too: the engine splits the chunk or fails over instead of failing.
//!
//! The parameter comes from the error's own `param` field (OpenAI), else from the message
//! (`Unsupported parameter: 'max_tokens'`, LiteLLM's `does not support parameters:
//! ['temperature']`, Anthropic's `temperature: ...`): only keys that the request really
//! carried count, and never `model`, `messages`, `system` or `stream`. The provider's text
//! is data: it only selects among the keys warden sent, never adds one.

use serde_json::Value;
use std::collections::BTreeSet;

/// Keys a request cannot go without: never dropped, whatever an error says.
const REQUIRED: &[&str] = &["model", "messages", "system", "stream"];

/// What to do with a refused parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fix {
    /// Send it no more.
    Drop,
    /// Send its value under this name (`max_tokens` → `max_completion_tokens`).
    Rename(String),
}

/// What a 400 asks of the route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Diagnosis {
    /// These parameters (each as sent) are refused: fix each once.
    Params(Vec<(String, Fix)>),
    /// The prompt does not fit the model's context window (in tokens, when it says).
    ContextLength { window: Option<u64> },
}

/// Reads a 400's body against the body that was sent.
pub(crate) fn diagnose(sent: &Value, anthropic: bool, error_body: &[u8]) -> Option<Diagnosis> {
    let v: Value = serde_json::from_slice(error_body).ok()?;
    let e = v.get("error").unwrap_or(&v);
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| e.as_str())
        .unwrap_or("");
    let code = e
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| e.get("type").and_then(Value::as_str))
        .unwrap_or("");
    if let Some(window) = context_length(message, code) {
        // llama.cpp names its window in a field too (`n_ctx`).
        let window = window.or_else(|| e.get("n_ctx").and_then(Value::as_u64));
        return Some(Diagnosis::ContextLength { window });
    }
    let sent = sent.as_object()?;
    let optional = |k: &str| {
        sent.contains_key(k) && !REQUIRED.contains(&k) && !(anthropic && k == "max_tokens")
    };
    let mut names: Vec<String> = Vec::new();
    if let Some(p) = e.get("param").and_then(Value::as_str) {
        let top = p.split(['.', '[']).next().unwrap_or("");
        if optional(top) {
            names.push(top.to_string());
        }
    }
    if names.is_empty() {
        names = named_in(
            message,
            sent.keys().map(String::as_str).filter(|k| optional(k)),
        );
    }
    if names.is_empty() {
        return None;
    }
    let fixes = names
        .into_iter()
        .map(|n| {
            let fix = rename_of(&n, message)
                .filter(|to| !sent.contains_key(to))
                .map_or(Fix::Drop, Fix::Rename);
            (n, fix)
        })
        .collect();
    Some(Diagnosis::Params(fixes))
}

/// The keys the message names, in the order it names them: quoted (`'k'`, `"k"`, `` `k` ``)
/// or leading a `k: ...` / `k.0...` complaint (Anthropic's validation messages).
fn named_in<'a>(message: &str, keys: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut found: Vec<(usize, String)> = Vec::new();
    for k in keys {
        let quoted = ['\'', '"', '`']
            .iter()
            .filter_map(|q| message.find(&format!("{q}{k}{q}")))
            .min();
        let leading = [":", "."]
            .iter()
            .any(|s| message.starts_with(&format!("{k}{s}")))
            .then_some(0);
        // LiteLLM's own checks: "O-series models don't support temperature=0.0".
        let assigned = message.find(&format!(" {k}="));
        if let Some(at) = quoted.or(leading).or(assigned) {
            found.push((at, k.to_string()));
        }
    }
    found.sort();
    found.into_iter().map(|(_, k)| k).collect()
}

/// The name a message asks for instead (`Use 'max_completion_tokens' instead`).
fn rename_of(param: &str, message: &str) -> Option<String> {
    let to = match param {
        "max_tokens" => "max_completion_tokens",
        "max_completion_tokens" => "max_tokens",
        _ => return None,
    };
    message.contains(to).then(|| to.to_string())
}

/// Whether the error says the prompt is too long, and the window it names: OpenAI's
/// `context_length_exceeded` ("maximum context length is 8192 tokens"), Anthropic's
/// "prompt is too long: 210000 tokens > 200000 maximum", LiteLLM's
/// `ContextWindowExceededError`.
fn context_length(message: &str, code: &str) -> Option<Option<u64>> {
    let m = message.to_ascii_lowercase();
    // llama.cpp: 400 `exceed_context_size_error`, "request (5010 tokens) exceeds the
    // available context size (4096 tokens)": a window, not a refused parameter.
    let hit = code == "context_length_exceeded"
        || code == "exceed_context_size_error"
        || m.contains("available context size")
        || m.contains("context_length_exceeded")
        || m.contains("maximum context length")
        || m.contains("prompt is too long")
        || m.contains("contextwindowexceedederror")
        || m.contains("context window");
    if !hit {
        return None;
    }
    let number_after = |needle: &str| {
        let at = m.find(needle)? + needle.len();
        let digits: String = m[at..]
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse::<u64>().ok()
    };
    let window = number_after("maximum context length is")
        .or_else(|| number_after("available context size ("))
        .or_else(|| {
            // "N tokens > M maximum": the number before "maximum".
            let before = &m[..m.find(" maximum")?];
            before.rsplit('>').next()?.trim().parse().ok()
        });
    Some(window)
}

/// The fixes a route has made so far this run, applied to every body it builds.
#[derive(Debug, Default)]
pub(crate) struct Adjustments {
    /// Parameters no longer sent.
    dropped: BTreeSet<String>,
    /// Parameters sent under another name.
    renamed: Vec<(String, String)>,
    /// Every name fixed so far (renamed-to names too): each is fixed at most once.
    fixed: BTreeSet<String>,
}

impl Adjustments {
    /// Applies the fixes to a body about to be sent.
    pub(crate) fn apply(&self, body: &mut Value) {
        let Some(o) = body.as_object_mut() else {
            return;
        };
        for (from, to) in &self.renamed {
            if let Some(v) = o.remove(from) {
                o.insert(to.clone(), v);
            }
        }
        for k in &self.dropped {
            o.remove(k);
            if k == "tools" {
                // A choice or a parallel flag without tools is refused in turn.
                o.remove("tool_choice");
                o.remove("parallel_tool_calls");
            }
        }
    }

    /// Takes a diagnosis of a body that was sent. Returns the fixes that are new (say
    /// them once), or None when nothing is left to fix: every named parameter was fixed
    /// before and this body was built after that (a second 400 on it is a real one).
    pub(crate) fn learn(&mut self, fixes: &[(String, Fix)]) -> Option<Vec<(String, Fix)>> {
        let mut new = Vec::new();
        let mut resend = false;
        for (name, fix) in fixes {
            if self.fixed.contains(name) {
                // Fixed meanwhile by another attempt (this body was built before): re-send.
                resend |=
                    self.dropped.contains(name) || self.renamed.iter().any(|(f, _)| f == name);
                continue;
            }
            self.fixed.insert(name.clone());
            match fix {
                Fix::Drop => {
                    self.dropped.insert(name.clone());
                }
                Fix::Rename(to) => {
                    self.fixed.insert(to.clone());
                    self.renamed.push((name.clone(), to.clone()));
                }
            }
            new.push((name.clone(), fix.clone()));
            resend = true;
        }
        resend.then_some(new)
    }

    /// Whether `key` is no longer sent.
    pub(crate) fn dropped(&self, key: &str) -> bool {
        self.dropped.contains(key)
    }
}

/// How a fix reads in a warning.
pub(crate) fn describe(fixes: &[(String, Fix)]) -> String {
    fixes
        .iter()
        .map(|(n, f)| match f {
            Fix::Drop => format!("no longer sends `{n}`"),
            Fix::Rename(to) => format!("sends `{n}` as `{to}`"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body() -> Value {
        json!({"model": "o4-mini", "messages": [], "stream": true, "max_tokens": 10,
               "temperature": 0, "reasoning_effort": "low", "response_format": {}})
    }

    fn d(sent: &Value, anthropic: bool, err: Value) -> Option<Diagnosis> {
        diagnose(sent, anthropic, err.to_string().as_bytes())
    }

    #[test]
    fn openai_s_refusals_name_the_parameter_and_the_new_name() {
        let max = json!({"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "type": "invalid_request_error", "param": "max_tokens", "code": "unsupported_parameter"}});
        assert_eq!(
            d(&body(), false, max),
            Some(Diagnosis::Params(vec![(
                "max_tokens".into(),
                Fix::Rename("max_completion_tokens".into())
            )]))
        );
        let temp = json!({"error": {"message": "Unsupported value: 'temperature' does not support 0 with this model. Only the default (1) value is supported.", "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}});
        assert_eq!(
            d(&body(), false, temp),
            Some(Diagnosis::Params(vec![("temperature".into(), Fix::Drop)]))
        );
    }

    #[test]
    fn relayed_messages_without_a_param_field_are_read_for_keys_that_were_sent() {
        let litellm = json!({"error": {"message": "litellm.UnsupportedParamsError: openai does not support parameters: ['temperature', 'reasoning_effort'], for model=o1. To drop these, set `litellm.drop_params=True`", "type": null, "param": null, "code": "400"}});
        assert_eq!(
            d(&body(), false, litellm),
            Some(Diagnosis::Params(vec![
                ("temperature".into(), Fix::Drop),
                ("reasoning_effort".into(), Fix::Drop)
            ]))
        );
        let relayed = json!({"error": {"message": "litellm.BadRequestError: OpenAIException - Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "param": null}});
        assert!(
            matches!(d(&body(), false, relayed), Some(Diagnosis::Params(p)) if p[0].1 == Fix::Rename("max_completion_tokens".into()))
        );
        let o_series = json!({"error": {"message": "litellm.UnsupportedParamsError: O-series models don't support temperature=0.0. Only temperature=1 is supported. To drop unsupported openai params from the call, set `litellm.drop_params = True`", "type": null, "param": null, "code": "400"}});
        assert_eq!(
            d(&body(), false, o_series),
            Some(Diagnosis::Params(vec![("temperature".into(), Fix::Drop)]))
        );
        let gpt5 = json!({"error": {"message": "litellm.UnsupportedParamsError: gpt-5-mini doesn't support temperature=0 while reasoning is active. Only temperature=1 is supported unless reasoning_effort resolves to 'none'", "param": null}});
        assert_eq!(
            d(&body(), false, gpt5),
            Some(Diagnosis::Params(vec![("temperature".into(), Fix::Drop)])),
            "reasoning_effort is named as a condition, after the refused parameter"
        );
        let anthropic = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "response_format: Extra inputs are not permitted"}});
        assert_eq!(
            d(&body(), true, anthropic),
            Some(Diagnosis::Params(vec![(
                "response_format".into(),
                Fix::Drop
            )]))
        );
    }

    #[test]
    fn required_keys_and_keys_not_sent_are_never_named() {
        for m in [
            "Invalid 'messages': empty",
            "'model' is not supported",
            "'stream' is wrong",
            "Unsupported parameter: 'top_k'",
            "something went wrong",
        ] {
            let e = json!({"error": {"message": m, "param": "messages"}});
            assert_eq!(d(&body(), false, e), None, "{m}");
        }
        let anthropic_max = json!({"error": {"message": "max_tokens: must be at most 8192"}});
        assert_eq!(
            d(&body(), true, anthropic_max),
            None,
            "required on Anthropic"
        );
        assert_eq!(diagnose(&body(), false, b"not json"), None);
    }

    #[test]
    fn context_length_errors_name_the_window() {
        let w = |m: &str, code: &str| {
            d(
                &body(),
                false,
                json!({"error": {"message": m, "code": code}}),
            )
        };
        assert_eq!(
            w(
                "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
                "context_length_exceeded"
            ),
            Some(Diagnosis::ContextLength { window: Some(8192) })
        );
        assert_eq!(
            w("prompt is too long: 210000 tokens > 200000 maximum", ""),
            Some(Diagnosis::ContextLength {
                window: Some(200000)
            })
        );
        assert_eq!(
            w("litellm.ContextWindowExceededError: too long", ""),
            Some(Diagnosis::ContextLength { window: None })
        );
        // llama.cpp's own 400, as the real server sends it (with response_format sent:
        // it must not read as a refusal of that parameter).
        let llama = json!({"error": {"code": 400, "message": "request (5010 tokens) exceeds the available context size (4096 tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 5010, "n_ctx": 4096}});
        let mut sent = body();
        sent["response_format"] = json!({"type": "json_object"});
        assert_eq!(
            d(&sent, false, llama),
            Some(Diagnosis::ContextLength { window: Some(4096) })
        );
    }

    #[test]
    fn each_parameter_is_fixed_once_and_bodies_built_before_are_resent() {
        let mut a = Adjustments::default();
        let fixes = vec![
            (
                "max_tokens".to_string(),
                Fix::Rename("max_completion_tokens".into()),
            ),
            ("temperature".to_string(), Fix::Drop),
        ];
        assert_eq!(a.learn(&fixes).map(|n| n.len()), Some(2));
        assert_eq!(
            a.learn(&fixes),
            Some(vec![]),
            "fixed meanwhile: re-send, say nothing"
        );
        let mut b = body();
        a.apply(&mut b);
        assert!(b.get("temperature").is_none() && b.get("max_tokens").is_none());
        assert_eq!(b["max_completion_tokens"], 10);
        let back = vec![(
            "max_completion_tokens".to_string(),
            Fix::Rename("max_tokens".into()),
        )];
        assert_eq!(
            a.learn(&back),
            None,
            "no ping-pong: a renamed name is not fixed again"
        );
        let mut t = json!({"tools": [], "tool_choice": "auto", "model": "m"});
        a.learn(&[("tools".into(), Fix::Drop)]);
        a.apply(&mut t);
        assert_eq!(t, json!({"model": "m"}));
    }
}
