//! The cache key: what a model's answer about a chunk depends on, and nothing else.
//!
//! In the key: the prompt format version, the system prompt (which holds the skill names,
//! the skills' instructions — every skill of a consolidated unit — and the answer
//! contract), the route's provider, endpoint, model and `maxTokens`, the file's path and
//! change status (the prompt's file header), and the chunk's lines and context rendered with line numbers *relative
//! to the chunk's first line*. Not in the key: absolute line numbers, the list of other
//! changed files, the route's name, timestamps, the run. So a push that moves an unchanged
//! chunk down a file, or changes another file, still finds its answer. A unit that runs as
//! a tool loop (docs/design.md §14) adds the loop it was offered (tools and bounds): a
//! single-shot answer is not reused for a loop, nor a loop's for a single shot or for a
//! loop with other tools or bounds.
//! docs/cache.md explains the choice for users.

use crate::chunk::{Chunk, ChunkLineKind};
use crate::config::Route;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::fmt::Write;

/// Bumped when the key's composition or the stored value's format changes.
const KEY_FORMAT: u32 = 1;

/// A content address: SHA-256 of the key material, as 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(String);

impl Key {
    /// The key as 64 hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A key from its hex form (for tests of the stores).
    #[cfg(test)]
    pub(crate) fn from_hex(s: &str) -> Key {
        Key(s.to_string())
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The unit's side of the key: everything but the route.
pub struct UnitMaterial<'a> {
    /// The system prompt exactly as sent.
    pub system: &'a str,
    /// The file's path in the repository.
    pub path: &'a str,
    /// The prompt's file header: the path and what happened to the file ("modified",
    /// "new file", "renamed from X"), without line numbers or other files.
    pub header: &'a str,
    /// The chunk reviewed (its lines and context).
    pub chunk: &'a Chunk,
    /// The tool loop the unit runs as ([`loop_material`]); None: one request.
    pub tools: Option<&'a str>,
}

/// What a unit's loop adds to its key: the tools offered and every bound that changes what
/// the model may read (turns, calls, bytes per call and per unit).
pub(crate) fn loop_material(
    plan: &crate::tools::LoopPlan,
    b: &crate::config::ToolBounds,
) -> String {
    let tools: Vec<&str> = plan.tools.iter().map(|t| t.name()).collect();
    serde_json::json!({"tools": tools, "maxTurns": plan.max_turns, "maxToolCalls": b.max_tool_calls,
        "resultBytes": b.result_bytes, "unitBytes": b.unit_bytes})
    .to_string()
}

#[derive(Serialize)]
struct Material<'a> {
    key_format: u32,
    prompt_format: u32,
    system: &'a str,
    provider: &'a str,
    base_url: Option<&'a str>,
    model: &'a str,
    max_tokens: u32,
    /// `reasoningEffort`, `params`, `structuredOutput = "off"`: what else changes the
    /// answer (absent when at their defaults, so earlier keys stay valid).
    #[serde(skip_serializing_if = "Option::is_none")]
    wire: Option<String>,
    path: &'a str,
    header: &'a str,
    chunk: String,
    /// The tool loop offered (absent for one request, so earlier keys stay valid).
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a str>,
}

/// The route's request options beyond the model, when any is set.
fn wire(route: &Route) -> Option<String> {
    let off = route.structured_output == crate::config::StructuredOutput::Off;
    if route.reasoning_effort.is_none() && route.params.is_empty() && !off {
        return None;
    }
    let v = serde_json::json!({"effort": route.reasoning_effort, "params": route.params, "structuredOff": off});
    Some(v.to_string())
}

/// The key of `unit` answered by `route`.
pub fn key(unit: &UnitMaterial, route: &Route) -> Key {
    let m = Material {
        key_format: KEY_FORMAT,
        prompt_format: crate::prompt::FORMAT_VERSION,
        system: unit.system,
        provider: route.provider.as_str(),
        // The endpoint decides which model answers a name: a gateway's "default" is not
        // another gateway's. Trailing slashes do not change the endpoint.
        base_url: route.base_url.as_deref().map(|u| u.trim_end_matches('/')),
        model: &route.model,
        max_tokens: route.max_tokens,
        wire: wire(route),
        path: unit.path,
        header: unit.header,
        chunk: relative_chunk(unit.chunk),
        tools: unit.tools,
    };
    // JSON keeps the parts unambiguous (no separator can be forged by content).
    let bytes = serde_json::to_vec(&m).expect("key material serializes");
    Key(hex(&Sha256::digest(&bytes)))
}

/// Lowercase hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// The chunk as the model sees it, with every line number made relative to the chunk's
/// first line, so the same text at another place in the file has the same key.
pub(crate) fn relative_chunk(chunk: &Chunk) -> String {
    let base = i64::from(chunk.start_line);
    let rel = |n: u32| i64::from(n) - base;
    let mut out = String::new();
    for (n, t) in &chunk.context_before {
        let _ = writeln!(out, "{:>+6}   {t}", rel(*n));
    }
    for l in &chunk.lines {
        let n = l.new_no.map(rel);
        let _ = match (l.kind, n) {
            (ChunkLineKind::Context, Some(n)) => writeln!(out, "{n:>+6}   {}", l.text),
            (ChunkLineKind::Added, Some(n)) => writeln!(out, "{n:>+6} + {}", l.text),
            (ChunkLineKind::Removed, _) => writeln!(out, "{:>6} - {}", "", l.text),
            (ChunkLineKind::Elided, _) => writeln!(out, "{:>6}   ... {} ...", "", l.text),
            (kind, None) => writeln!(out, "{:>6} {kind:?} {}", "?", l.text),
        };
    }
    for (n, t) in &chunk.context_after {
        let _ = writeln!(out, "{:>+6}   {t}", rel(*n));
    }
    let _ = writeln!(
        out,
        "span {}",
        chunk.end_line.saturating_sub(chunk.start_line)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::ChunkLine;

    /// A chunk of `added` lines starting at `start`, with two context lines each side.
    fn chunk_at(start: u32, added: &[&str]) -> Chunk {
        let lines: Vec<ChunkLine> = added
            .iter()
            .enumerate()
            .map(|(i, t)| ChunkLine {
                kind: ChunkLineKind::Added,
                old_no: None,
                new_no: Some(start + i as u32),
                text: t.to_string(),
            })
            .collect();
        let end = start + added.len() as u32 - 1;
        Chunk {
            start_line: start,
            end_line: end,
            added: added.len(),
            removed: 0,
            hunks: 1,
            split: false,
            lines,
            context_before: vec![(start - 2, "ctx a".into()), (start - 1, "ctx b".into())],
            context_after: vec![(end + 1, "ctx c".into())],
        }
    }

    fn unit<'a>(chunk: &'a Chunk, system: &'a str, path: &'a str) -> UnitMaterial<'a> {
        UnitMaterial {
            system,
            path,
            header: "File: a.rs (modified)",
            chunk,
            tools: None,
        }
    }

    fn route(model: &str) -> Route {
        Route {
            model: model.into(),
            ..Route::sim("r", "healthy", 60.0, 1, 4)
        }
    }

    #[test]
    fn same_text_elsewhere_in_the_file_has_the_same_key() {
        let (a, b) = (chunk_at(10, &["x", "y"]), chunk_at(57, &["x", "y"]));
        let r = route("m");
        assert_eq!(
            key(&unit(&a, "sys", "a.rs"), &r),
            key(&unit(&b, "sys", "a.rs"), &r)
        );
        assert_eq!(key(&unit(&a, "sys", "a.rs"), &r).as_str().len(), 64);
    }

    #[test]
    fn everything_the_answer_depends_on_changes_the_key() {
        let c = chunk_at(10, &["x", "y"]);
        let r = route("m");
        let base = key(&unit(&c, "sys", "a.rs"), &r);
        let other_text = chunk_at(10, &["x", "z"]);
        assert_ne!(base, key(&unit(&other_text, "sys", "a.rs"), &r));
        assert_ne!(base, key(&unit(&c, "sys2", "a.rs"), &r), "skill text");
        assert_ne!(base, key(&unit(&c, "sys", "b.rs"), &r), "path");
        assert_ne!(base, key(&unit(&c, "sys", "a.rs"), &route("m2")), "model");
        let mut effort = route("m");
        effort.reasoning_effort = Some("high".into());
        assert_ne!(
            base,
            key(&unit(&c, "sys", "a.rs"), &effort),
            "reasoningEffort"
        );
        let mut params = route("m");
        params.params.insert("top_p".into(), serde_json::json!(0.5));
        assert_ne!(base, key(&unit(&c, "sys", "a.rs"), &params), "params");
        let mut tokens = route("m");
        tokens.max_tokens += 1;
        assert_ne!(base, key(&unit(&c, "sys", "a.rs"), &tokens), "maxTokens");
        let mut gateway = route("m");
        gateway.base_url = Some("http://127.0.0.1:9/v1".into());
        assert_ne!(base, key(&unit(&c, "sys", "a.rs"), &gateway), "endpoint");
        let mut added = unit(&c, "sys", "a.rs");
        added.header = "File: a.rs (new file)";
        assert_ne!(base, key(&added, &r), "status");
        let mut ctx = chunk_at(10, &["x", "y"]);
        ctx.context_before[0].1 = "changed context".into();
        assert_ne!(base, key(&unit(&ctx, "sys", "a.rs"), &r), "context");
    }

    #[test]
    fn the_tool_loop_offered_is_part_of_the_key() {
        use crate::tools::{LoopPlan, Tool};
        let c = chunk_at(10, &["x", "y"]);
        let r = route("m");
        let single = key(&unit(&c, "sys", "a.rs"), &r);
        let bounds = crate::config::ToolBounds::default();
        let plan = |tools: &[Tool], max_turns| LoopPlan {
            tools: tools.to_vec(),
            max_turns,
        };
        let with = |m: &str| {
            let mut u = unit(&c, "sys", "a.rs");
            u.tools = Some(m);
            key(&u, &r)
        };
        let four = loop_material(&plan(&Tool::ALL, 4), &bounds);
        let looped = with(&four);
        assert_ne!(single, looped, "a loop is not a single shot");
        assert_eq!(looped, with(&four), "the same loop, the same key");
        assert_ne!(
            looped,
            with(&loop_material(&plan(&Tool::ALL, 6), &bounds)),
            "turns"
        );
        assert_ne!(
            looped,
            with(&loop_material(&plan(&[Tool::ReadFile], 4), &bounds)),
            "tool set"
        );
        for changed in [
            crate::config::ToolBounds {
                max_tool_calls: 3,
                ..bounds
            },
            crate::config::ToolBounds {
                result_bytes: 2048,
                ..bounds
            },
            crate::config::ToolBounds {
                unit_bytes: 4096,
                ..bounds
            },
        ] {
            assert_ne!(
                looped,
                with(&loop_material(&plan(&Tool::ALL, 4), &changed)),
                "{changed:?}"
            );
        }
    }

    #[test]
    fn route_name_is_not_part_of_the_key() {
        let c = chunk_at(3, &["x"]);
        let mut renamed = route("m");
        renamed.name = "renamed".into();
        assert_eq!(
            key(&unit(&c, "s", "a.rs"), &route("m")),
            key(&unit(&c, "s", "a.rs"), &renamed)
        );
    }
}
