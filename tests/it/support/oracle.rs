//! The fake provider as a scripted oracle for `warden eval`: per file under review it
//! answers with findings at chosen lines (the references it "finds", the false positives
//! it adds; what it leaves out it misses), one answer list per call so repeated runs can
//! differ; a file can be made to fail instead. Judge requests (warden's judge prompt) are
//! answered by a rule over each numbered pair. Answers come after a chosen delay, as a
//! real model's would.

#![allow(dead_code)]

use super::fake_provider::{Behavior, FakeProvider, finding, findings_answer};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the oracle answers for one file.
#[derive(Clone)]
enum Script {
    /// Call k gets findings at `calls[k % len]` (each a line).
    Findings(Vec<Vec<u32>>),
    /// Every call gets this behaviour (a failure: the file's unit is not reviewed).
    Fail(Behavior),
}

type JudgeRule = dyn Fn(&Value) -> bool + Send + Sync;

#[derive(Default)]
struct State {
    scripts: HashMap<String, (Script, usize)>,
    /// The user message of every review request, by file.
    prompts: HashMap<String, Vec<String>>,
    judge_requests: usize,
}

/// The oracle; install it on a fake with [`Oracle::install`].
#[derive(Clone)]
pub struct Oracle {
    state: Arc<Mutex<State>>,
    judge: Option<Arc<JudgeRule>>,
    delay: Duration,
}

impl Default for Oracle {
    fn default() -> Self {
        Oracle::new()
    }
}

impl Oracle {
    /// An oracle that answers after 20 ms and finds nothing anywhere.
    pub fn new() -> Oracle {
        Oracle {
            state: Arc::default(),
            judge: None,
            delay: Duration::from_millis(20),
        }
    }

    /// Answers after `d` (the time to the response headers).
    pub fn delay(mut self, d: Duration) -> Oracle {
        self.delay = d;
        self
    }

    /// Every call for `path` gets findings at `lines`.
    pub fn finds(self, path: &str, lines: &[u32]) -> Oracle {
        self.finds_per_call(path, vec![lines.to_vec()])
    }

    /// Call k for `path` gets findings at `calls[k % calls.len()]`.
    pub fn finds_per_call(self, path: &str, calls: Vec<Vec<u32>>) -> Oracle {
        let script = Script::Findings(calls);
        self.state
            .lock()
            .unwrap()
            .scripts
            .insert(path.into(), (script, 0));
        self
    }

    /// Every call for `path` is answered with `b` (its unit ends not reviewed).
    pub fn fails(self, path: &str, b: Behavior) -> Oracle {
        let script = Script::Fail(b);
        self.state
            .lock()
            .unwrap()
            .scripts
            .insert(path.into(), (script, 0));
        self
    }

    /// Judge requests say "same problem" for each pair `rule` accepts (the pair as the
    /// prompt lists it: `reference.comment`, `finding.title`, ...).
    pub fn judge(mut self, rule: impl Fn(&Value) -> bool + Send + Sync + 'static) -> Oracle {
        self.judge = Some(Arc::new(rule));
        self
    }

    /// The user messages of the review requests for `path`, in arrival order.
    pub fn prompts(&self, path: &str) -> Vec<String> {
        self.state
            .lock()
            .unwrap()
            .prompts
            .get(path)
            .cloned()
            .unwrap_or_default()
    }

    /// How many judge requests came.
    pub fn judge_requests(&self) -> usize {
        self.state.lock().unwrap().judge_requests
    }

    /// Makes `fake` answer every request through this oracle.
    pub fn install(&self, fake: &FakeProvider) {
        let me = self.clone();
        fake.respond_with(Arc::new(move |body| Some(me.answer(body))));
    }

    fn answer(&self, body: &Value) -> Behavior {
        let text = all_text(body);
        let delayed = |b: Behavior| Behavior::DelayHeaders(self.delay, Box::new(b));
        if text.contains("You are warden's judge") {
            self.state.lock().unwrap().judge_requests += 1;
            return delayed(Behavior::Answer(self.judge_answer(&text)));
        }
        let Some(path) = text
            .lines()
            .find_map(|l| l.strip_prefix("file: "))
            .map(str::to_string)
        else {
            return delayed(Behavior::Answer(findings_answer(json!([]))));
        };
        let mut st = self.state.lock().unwrap();
        st.prompts
            .entry(path.clone())
            .or_default()
            .push(text.clone());
        let Some((script, calls)) = st.scripts.get_mut(&path) else {
            return delayed(Behavior::Answer(findings_answer(json!([]))));
        };
        let n = *calls;
        *calls += 1;
        match script {
            Script::Fail(b) => b.clone(),
            Script::Findings(per_call) => {
                let lines = &per_call[n % per_call.len()];
                let found: Vec<Value> = lines
                    .iter()
                    .map(|l| finding(*l, "high", &format!("problem at line {l}")))
                    .collect();
                delayed(Behavior::Answer(findings_answer(json!(found))))
            }
        }
    }

    fn judge_answer(&self, text: &str) -> String {
        let pairs: Vec<Value> = text
            .split_once("```json\n")
            .and_then(|(_, rest)| rest.split_once("\n```"))
            .and_then(|(json, _)| serde_json::from_str(json).ok())
            .unwrap_or_default();
        let rule = self.judge.clone();
        let same: Vec<Value> = pairs
            .iter()
            .filter(|p| rule.as_ref().is_none_or(|r| r(p)))
            .map(|p| {
                let n = p["pair"].as_u64().unwrap_or(0) as u32;
                finding(n, "info", "same problem")
            })
            .collect();
        findings_answer(json!(same))
    }
}

/// Every string in the request body, joined by newlines (both protocols' messages).
fn all_text(v: &Value) -> String {
    let mut out = String::new();
    fn walk(v: &Value, out: &mut String) {
        match v {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            Value::Object(o) => o.values().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    walk(v, &mut out);
    out
}

/// A unified diff adding `path` with `lines` numbered lines (`    let v{i} = {i};`).
pub fn new_file_patch(path: &str, lines: u32) -> String {
    let body: String = (1..=lines)
        .map(|i| format!("+    let v{i} = {i};\n"))
        .collect();
    format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{lines} @@\n{body}"
    )
}

/// A case folder `name` under `root`: a patch adding `path` (`lines` lines) and the
/// references at `refs` (start, end).
pub fn case_folder(
    root: &std::path::Path,
    name: &str,
    path: &str,
    lines: u32,
    refs: &[(u32, u32)],
) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("change.patch"), new_file_patch(path, lines)).unwrap();
    let expected: Vec<Value> = refs
        .iter()
        .map(|(s, e)| json!({"path": path, "startLine": s, "endLine": e, "text": format!("bug at {s}")}))
        .collect();
    let case = json!({"id": name, "patch": "change.patch", "expected": expected});
    std::fs::write(
        dir.join("case.json"),
        serde_json::to_string_pretty(&case).unwrap(),
    )
    .unwrap();
}
