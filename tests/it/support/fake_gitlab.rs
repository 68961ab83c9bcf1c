//! A stateful fake GitLab merge request on 127.0.0.1 for `warden publish --to gitlab`:
//! versions, diffs, discussions (text positions checked against the diff's new-side lines
//! and the latest version's shas, as GitLab does), notes, resolution, pagination by
//! `x-next-page`. No official OpenAPI description of these endpoints is published, so the
//! fake checks each request's required parameters and types as GitLab's API documentation
//! states them, and refuses anything else with GitLab's 400.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

pub const TOKEN: &str = "glpat-fakeTokenForTests0123456789";
pub const PROJECT: &str = "group/sub/shop";
pub const PROJECT_ID: u64 = 42;
pub const IID: u64 = 5;
pub const BOT: &str = "project_42_bot";

#[derive(Clone, Debug)]
pub struct Note {
    pub id: u64,
    pub body: String,
    pub author: String,
    pub resolvable: bool,
    pub resolved: bool,
    pub resolved_by: Option<String>,
    pub position: Option<Value>,
}

#[derive(Clone, Debug)]
pub struct Discussion {
    pub id: String,
    pub notes: Vec<Note>,
}

#[derive(Clone, Debug)]
pub struct Logged {
    pub method: String,
    pub path: String,
    pub query: String,
    pub body: Value,
    pub token: Option<String>,
    pub status: u16,
}

#[derive(Default)]
pub struct State {
    pub head: String,
    pub files: BTreeMap<String, String>,
    pub discussions: Vec<Discussion>,
    pub log: Vec<Logged>,
    pub violations: Vec<String>,
    pub refused_lines: Vec<(String, u32)>,
    next_id: u64,
}

pub struct FakeGitlab {
    addr: std::net::SocketAddr,
    pub state: Arc<Mutex<State>>,
    _rt: tokio::runtime::Runtime,
}

fn base_sha() -> String {
    "b".repeat(40)
}

impl FakeGitlab {
    pub fn start(head: &str, files: &[(&str, &str)]) -> FakeGitlab {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            head: head.into(),
            next_id: 100,
            ..Default::default()
        }));
        state.lock().unwrap().files = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        let st = state.clone();
        rt.spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    continue;
                };
                let st = st.clone();
                tokio::spawn(async move { serve(sock, st).await });
            }
        });
        FakeGitlab {
            addr,
            state,
            _rt: rt,
        }
    }

    pub fn api_url(&self) -> String {
        format!("http://{}/api/v4", self.addr)
    }

    pub fn push(&self, head: &str, files: &[(&str, &str)]) {
        let mut st = self.state.lock().unwrap();
        st.head = head.into();
        st.files = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
    }

    pub fn discussions(&self) -> Vec<Discussion> {
        self.state.lock().unwrap().discussions.clone()
    }

    /// Diff discussions (those with a position).
    pub fn threads(&self) -> Vec<Discussion> {
        self.discussions()
            .into_iter()
            .filter(|d| d.notes[0].position.is_some())
            .collect()
    }

    pub fn person_resolves(&self, id: &str) {
        let mut st = self.state.lock().unwrap();
        let d = st.discussions.iter_mut().find(|d| d.id == id).unwrap();
        d.notes.iter_mut().for_each(|n| {
            n.resolved = true;
            n.resolved_by = Some("alice".into());
        });
    }

    pub fn person_replies(&self, id: &str, body: &str) {
        let mut st = self.state.lock().unwrap();
        st.next_id += 1;
        let nid = st.next_id;
        let d = st.discussions.iter_mut().find(|d| d.id == id).unwrap();
        d.notes.push(Note {
            id: nid,
            body: body.into(),
            author: "alice".into(),
            resolvable: true,
            resolved: false,
            resolved_by: None,
            position: None,
        });
    }

    /// `n` comments by people on the merge request (individual notes).
    pub fn add_people_notes(&self, n: usize) {
        let mut st = self.state.lock().unwrap();
        for i in 0..n {
            st.next_id += 1;
            let id = st.next_id;
            st.discussions.push(Discussion {
                id: format!("{id:040x}"),
                notes: vec![Note {
                    id,
                    body: format!("a note {i}"),
                    author: "alice".into(),
                    resolvable: false,
                    resolved: false,
                    resolved_by: None,
                    position: None,
                }],
            });
        }
    }

    pub fn log(&self) -> Vec<Logged> {
        self.state.lock().unwrap().log.clone()
    }

    pub fn writes(&self) -> Vec<Logged> {
        self.log()
            .into_iter()
            .filter(|l| l.method != "GET")
            .collect()
    }

    pub fn assert_clean(&self) {
        let st = self.state.lock().unwrap();
        assert!(
            st.violations.is_empty(),
            "requests GitLab would refuse:\n{}",
            st.violations.join("\n")
        );
        for l in &st.log {
            assert_eq!(
                l.token.as_deref(),
                Some(TOKEN),
                "{} {} without the token",
                l.method,
                l.path
            );
        }
    }
}

fn hunk_lines(patch: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut next: Option<u32> = None;
    for l in patch.lines() {
        if let Some(h) = l.strip_prefix("@@ ") {
            next = h
                .split_whitespace()
                .find(|t| t.starts_with('+'))
                .and_then(|t| t[1..].split(',').next()?.parse().ok());
            continue;
        }
        let Some(n) = next else { continue };
        if l.starts_with('+') || l.starts_with(' ') {
            out.push(n);
            next = Some(n + 1);
        }
    }
    out
}

async fn serve(mut sock: tokio::net::TcpStream, st: Arc<Mutex<State>>) {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 16384];
    let end = loop {
        let Ok(n) = sock.read(&mut tmp).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_string();
    let target = first.next().unwrap_or("").to_string();
    let (path, query) = target
        .split_once('?')
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .unwrap_or((target, String::new()));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[end + 4..].to_vec();
    while body.len() < len {
        let Ok(n) = sock.read(&mut tmp).await else {
            return;
        };
        if n == 0 {
            return;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    let json: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    };
    let token = headers
        .iter()
        .find(|(k, _)| k == "private-token")
        .map(|(_, v)| v.clone());
    let (status, extra, answer) = {
        let mut s = st.lock().unwrap();
        let a = if token.as_deref() != Some(TOKEN) {
            (401, vec![], json!({"message": "401 Unauthorized"}))
        } else {
            route(&mut s, &method, &path, &query, &json)
        };
        // A malformed request is a violation; a position GitLab cannot place is an answer.
        if a.0 == 400 && !a.2.to_string().contains("line_code") {
            s.violations
                .push(format!("{method} {path}?{query}: {}", a.2));
        }
        s.log.push(Logged {
            method: method.clone(),
            path: path.clone(),
            query: query.clone(),
            body: json.clone(),
            token,
            status: a.0,
        });
        a
    };
    let text = answer.to_string();
    let mut out = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        text.len()
    );
    for (k, v) in extra {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&text);
    let _ = sock.write_all(out.as_bytes()).await;
    let _ = sock.shutdown().await;
}

type Answer = (u16, Vec<(String, String)>, Value);

fn bad(msg: &str) -> Answer {
    (
        400,
        vec![],
        json!({"message": format!("400 Bad request - {msg}")}),
    )
}

fn page(items: Vec<Value>, query: &str) -> Answer {
    let q: BTreeMap<&str, &str> = query.split('&').filter_map(|p| p.split_once('=')).collect();
    let per: usize = q
        .get("per_page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(20)
        .min(100);
    let page: usize = q
        .get("page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let slice: Vec<Value> = items
        .iter()
        .skip((page - 1) * per)
        .take(per)
        .cloned()
        .collect();
    let next = if page * per < items.len() {
        (page + 1).to_string()
    } else {
        String::new()
    };
    (
        200,
        vec![
            ("x-next-page".into(), next),
            ("x-total".into(), items.len().to_string()),
        ],
        Value::Array(slice),
    )
}

fn note_json(n: &Note) -> Value {
    json!({"id": n.id, "body": n.body, "author": {"username": n.author}, "system": false,
           "resolvable": n.resolvable, "resolved": n.resolved, "resolved_by": n.resolved_by.as_ref().map(|u| json!({"username": u})), "position": n.position, "type": if n.position.is_some() { "DiffNote" } else { "DiscussionNote" }})
}

fn route(s: &mut State, m: &str, path: &str, query: &str, body: &Value) -> Answer {
    let prefix = format!("/api/v4/projects/{PROJECT_ID}/merge_requests/{IID}");
    let alt = format!(
        "/api/v4/projects/{}/merge_requests/{IID}",
        PROJECT.replace('/', "%2F")
    );
    let Some(rest) = path
        .strip_prefix(&prefix)
        .or_else(|| path.strip_prefix(&alt))
    else {
        return (404, vec![], json!({"message": "404 Project Not Found"}));
    };
    match (m, rest) {
        ("GET", "/versions") => (
            200,
            vec![],
            json!([{"id": 1, "head_commit_sha": s.head, "base_commit_sha": base_sha(), "start_commit_sha": base_sha(), "state": "collected"}]),
        ),
        ("GET", "/diffs") => {
            let items = s.files.iter().map(|(p, d)| json!({"old_path": p, "new_path": p, "diff": d, "new_file": false, "renamed_file": false, "deleted_file": false})).collect();
            page(items, query)
        }
        ("GET", "/discussions") => {
            let items = s.discussions.iter().map(|d| json!({"id": d.id, "individual_note": d.notes[0].position.is_none() && !d.notes[0].resolvable, "notes": d.notes.iter().map(note_json).collect::<Vec<_>>()})).collect();
            page(items, query)
        }
        ("POST", "/discussions") => post_discussion(s, body),
        ("POST", "/notes") => {
            let Some(text) = body["body"].as_str() else {
                return bad("body is missing");
            };
            s.next_id += 1;
            let id = s.next_id;
            s.discussions.push(Discussion {
                id: format!("{id:040x}"),
                notes: vec![Note {
                    id,
                    body: text.into(),
                    author: BOT.into(),
                    resolvable: false,
                    resolved: false,
                    resolved_by: None,
                    position: None,
                }],
            });
            (201, vec![], json!({"id": id}))
        }
        ("PUT", r) if r.starts_with("/notes/") => {
            let Ok(id) = r["/notes/".len()..].parse::<u64>() else {
                return bad("note_id is invalid");
            };
            let Some(text) = body["body"].as_str() else {
                return bad("body is missing");
            };
            for d in &mut s.discussions {
                for n in &mut d.notes {
                    if n.id == id {
                        if n.author != BOT {
                            return (403, vec![], json!({"message": "403 Forbidden"}));
                        }
                        n.body = text.into();
                        return (200, vec![], json!({"id": id}));
                    }
                }
            }
            (404, vec![], json!({"message": "404 Not found"}))
        }
        ("PUT", r) if r.starts_with("/discussions/") => {
            let id = &r["/discussions/".len()..];
            if !matches!(query, "resolved=true" | "resolved=false") {
                return bad("resolved is missing");
            }
            let Some(d) = s.discussions.iter_mut().find(|d| d.id == id) else {
                return (404, vec![], json!({"message": "404 Not found"}));
            };
            if !d.notes[0].resolvable {
                return bad("discussion is not resolvable");
            }
            let v = query == "resolved=true";
            d.notes.iter_mut().for_each(|n| {
                n.resolved = v;
                n.resolved_by = v.then(|| BOT.to_string());
            });
            (200, vec![], json!({"id": id}))
        }
        _ => (404, vec![], json!({"message": "404 Not Found"})),
    }
}

fn post_discussion(s: &mut State, body: &Value) -> Answer {
    let Some(text) = body["body"].as_str() else {
        return bad("body is missing");
    };
    let p = &body["position"];
    if p.is_null() {
        return bad("position is missing (warden posts diff discussions only)");
    }
    for k in [
        "base_sha",
        "start_sha",
        "head_sha",
        "position_type",
        "new_path",
        "old_path",
    ] {
        if !p[k].is_string() {
            return bad(&format!("position[{k}] is missing or not a string"));
        }
    }
    if p["position_type"] != "text" {
        return bad("position[position_type] does not have a valid value");
    }
    if p["head_sha"] != s.head.as_str()
        || p["base_sha"] != base_sha().as_str()
        || p["start_sha"] != base_sha().as_str()
    {
        return bad("Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}");
    }
    let Some(line) = p["new_line"].as_u64() else {
        return bad("position[new_line] is invalid");
    };
    let path = p["new_path"].as_str().unwrap();
    let lines = s.files.get(path).map(|d| hunk_lines(d)).unwrap_or_default();
    let line = line as u32;
    if !lines.contains(&line) || s.refused_lines.contains(&(path.to_string(), line)) {
        // As GitLab answers a position outside the diff: a 400 on the note.
        return (
            400,
            vec![],
            json!({"message": "400 Bad request - Note {:line_code=>[\"can't be blank\", \"must be a valid line code\"]}"}),
        );
    }
    s.next_id += 1;
    let id = s.next_id;
    let did = format!("{id:040x}");
    s.discussions.push(Discussion {
        id: did.clone(),
        notes: vec![Note {
            id,
            body: text.into(),
            author: BOT.into(),
            resolvable: true,
            resolved: false,
            resolved_by: None,
            position: Some(p.clone()),
        }],
    });
    (201, vec![], json!({"id": did}))
}
