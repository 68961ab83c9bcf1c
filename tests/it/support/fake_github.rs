//! A stateful fake GitHub (REST and GraphQL) on 127.0.0.1 for `warden publish`: one pull
//! request whose head and diff the test pushes, review threads that persist across pushes
//! (lines shifted or outdated as the test says), people who reply and resolve, reviews,
//! issue comments, pagination, rate limits and refused positions on demand. Every request
//! is checked first by the oracles in `github_oracle` (GitHub's own OpenAPI description and
//! GraphQL schema): one that breaks them is answered 400 and recorded as a violation.

use super::github_oracle::{check_graphql, check_rest};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

pub const TOKEN: &str = "ghs_fakeTokenForTests0123456789abcdef";
pub const OWNER: &str = "acme";
pub const NAME: &str = "shop";
pub const NUMBER: u64 = 7;
pub const BOT: &str = "github-actions[bot]";

#[derive(Clone, Debug)]
pub struct Comment {
    pub id: u64,
    pub body: String,
    pub author: String,
}

#[derive(Clone, Debug)]
pub struct FThread {
    pub id: String,
    pub path: String,
    pub line: Option<u32>,
    pub start_line: Option<u32>,
    pub resolved: bool,
    pub resolved_by: Option<String>,
    pub outdated: bool,
    pub comments: Vec<Comment>,
}

#[derive(Clone, Debug)]
pub struct Logged {
    pub at: Instant,
    pub method: String,
    pub path: String,
    pub query: String,
    pub body: Value,
    pub auth: Option<String>,
    pub status: u16,
}

#[derive(Default)]
pub struct State {
    pub head: String,
    /// path → patch text at the current head.
    pub files: BTreeMap<String, String>,
    pub threads: Vec<FThread>,
    pub issue_comments: Vec<Comment>,
    /// (id, commit_id, event, body, pending)
    pub reviews: Vec<(u64, String, String, String, bool)>,
    pub log: Vec<Logged>,
    pub violations: Vec<String>,
    /// Lines GitHub will not place a comment on (its diff differs from the files list).
    pub refused_lines: BTreeSet<(String, u32)>,
    /// Content-creating requests answered 403 + retry-after before being served.
    pub secondary_limits: usize,
    pub retry_after: u64,
    /// Every answer says the primary limit is spent until `reset` (epoch s) once.
    pub primary_limit_once: Option<u64>,
    /// The head moves to this right after the diff is read (a push during publishing).
    pub move_head_on_pull_read: Option<String>,
    /// Next-page links name `localhost` instead of 127.0.0.1: another origin.
    pub foreign_next: bool,
    /// Check every request with the oracles (on; a bench that measures warden's own time
    /// turns them off).
    pub oracles: bool,
    next_id: u64,
}

pub struct FakeGithub {
    addr: std::net::SocketAddr,
    pub state: Arc<Mutex<State>>,
    _rt: tokio::runtime::Runtime,
}

impl FakeGithub {
    pub fn start(head: &str, files: &[(&str, &str)]) -> FakeGithub {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt.block_on(TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State {
            head: head.into(),
            next_id: 1000,
            retry_after: 1,
            oracles: true,
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
                tokio::spawn(async move { serve(sock, st, addr).await });
            }
        });
        FakeGithub {
            addr,
            state,
            _rt: rt,
        }
    }

    pub fn api_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A push: the head and its diff change; each thread's line is mapped through `map`
    /// (None: its lines changed, the thread is outdated).
    pub fn push(&self, head: &str, files: &[(&str, &str)], map: impl Fn(&str, u32) -> Option<u32>) {
        let mut st = self.state.lock().unwrap();
        st.head = head.into();
        st.files = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        for t in &mut st.threads {
            match t.line.and_then(|l| map(&t.path, l)) {
                Some(l) => t.line = Some(l),
                None => {
                    t.line = None;
                    t.outdated = true;
                }
            }
        }
    }

    pub fn person_resolves(&self, i: usize) {
        let mut st = self.state.lock().unwrap();
        st.threads[i].resolved = true;
        st.threads[i].resolved_by = Some("octocat".into());
    }

    pub fn person_replies(&self, i: usize, body: &str) {
        let mut st = self.state.lock().unwrap();
        st.next_id += 1;
        let id = st.next_id;
        st.threads[i].comments.push(Comment {
            id,
            body: body.into(),
            author: "octocat".into(),
        });
    }

    pub fn threads(&self) -> Vec<FThread> {
        self.state.lock().unwrap().threads.clone()
    }

    pub fn log(&self) -> Vec<Logged> {
        self.state.lock().unwrap().log.clone()
    }

    /// Submitted (not pending) reviews: (commit_id, event, body).
    pub fn reviews(&self) -> Vec<(String, String, String)> {
        let st = self.state.lock().unwrap();
        st.reviews
            .iter()
            .filter(|r| !r.4)
            .map(|r| (r.1.clone(), r.2.clone(), r.3.clone()))
            .collect()
    }

    pub fn issue_comments(&self) -> Vec<Comment> {
        self.state.lock().unwrap().issue_comments.clone()
    }

    /// Panics naming every request the oracles refused, or sent without the token.
    pub fn assert_clean(&self) {
        let st = self.state.lock().unwrap();
        assert!(
            st.violations.is_empty(),
            "requests that break GitHub's API description:\n{}",
            st.violations.join("\n")
        );
        for l in &st.log {
            assert_eq!(
                l.auth.as_deref(),
                Some(format!("Bearer {TOKEN}").as_str()),
                "{} {} without the token",
                l.method,
                l.path
            );
        }
    }

    pub fn writes(&self) -> Vec<Logged> {
        self.log()
            .into_iter()
            .filter(|l| is_write(&l.method, &l.path, &l.body))
            .collect()
    }

    pub fn add_issue_comments(&self, n: usize, author: &str) {
        let mut st = self.state.lock().unwrap();
        for i in 0..n {
            st.next_id += 1;
            let id = st.next_id;
            st.issue_comments.push(Comment {
                id,
                body: format!("comment {i}"),
                author: author.into(),
            });
        }
    }

    /// `n` threads by people (no marker) on `path`.
    pub fn add_people_threads(&self, n: usize, path: &str, line: u32) {
        let mut st = self.state.lock().unwrap();
        for i in 0..n {
            st.next_id += 1;
            let id = st.next_id;
            st.threads.push(FThread {
                id: format!("PRRT_p{id}"),
                path: path.into(),
                line: Some(line),
                start_line: None,
                resolved: false,
                resolved_by: None,
                outdated: false,
                comments: vec![Comment {
                    id,
                    body: format!("a person's note {i}"),
                    author: "octocat".into(),
                }],
            });
        }
    }
}

/// A request that writes (a GraphQL mutation, any REST method but GET).
fn is_write(method: &str, path: &str, body: &Value) -> bool {
    if path == "/graphql" {
        return body["query"]
            .as_str()
            .unwrap_or("")
            .trim_start()
            .starts_with("mutation");
    }
    method != "GET"
}

/// The new-side lines of the hunks of a patch.
fn hunk_lines(patch: &str) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
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
            out.insert(n);
            next = Some(n + 1);
        }
    }
    out
}

struct Req {
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

async fn read_req(sock: &mut tokio::net::TcpStream) -> Option<Req> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 16384];
    let end = loop {
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let target = first.next()?.to_string();
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
        let n = sock.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    Some(Req {
        method,
        path,
        query,
        headers,
        body,
    })
}

async fn serve(mut sock: tokio::net::TcpStream, st: Arc<Mutex<State>>, addr: std::net::SocketAddr) {
    let Some(req) = read_req(&mut sock).await else {
        return;
    };
    let body: Option<Value> = if req.body.is_empty() {
        None
    } else {
        serde_json::from_slice(&req.body).ok()
    };
    let auth = req
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone());
    let (status, headers, answer) = respond(&st, &req, body.as_ref(), auth.as_deref(), addr);
    st.lock().unwrap().log.push(Logged {
        at: Instant::now(),
        method: req.method.clone(),
        path: req.path.clone(),
        query: req.query.clone(),
        body: body.clone().unwrap_or(Value::Null),
        auth,
        status,
    });
    let text = if answer.is_null() {
        String::new()
    } else {
        answer.to_string()
    };
    let mut out = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        text.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&text);
    let _ = sock.write_all(out.as_bytes()).await;
    let _ = sock.shutdown().await;
}

type Answer = (u16, Vec<(String, String)>, Value);

fn err(status: u16, msg: &str) -> Answer {
    (
        status,
        vec![],
        json!({"message": msg, "documentation_url": "https://docs.github.com/rest"}),
    )
}

fn respond(
    st: &Arc<Mutex<State>>,
    req: &Req,
    body: Option<&Value>,
    auth: Option<&str>,
    addr: std::net::SocketAddr,
) -> Answer {
    let is_graphql = req.path == "/graphql";
    let oracles = st.lock().unwrap().oracles;
    let check = if !oracles {
        Ok(())
    } else if is_graphql {
        if req.method != "POST" {
            Err("GraphQL takes POST".to_string())
        } else {
            check_graphql(body.unwrap_or(&Value::Null))
        }
    } else {
        check_rest(&req.method, &req.path, &req.query, body)
    };
    let mut s = st.lock().unwrap();
    if let Err(e) = check {
        s.violations
            .push(format!("{} {}?{}: {e}", req.method, req.path, req.query));
        return err(400, &format!("oracle: {e}"));
    }
    if auth != Some(&format!("Bearer {TOKEN}")) {
        return err(401, "Bad credentials");
    }
    let writes = is_write(&req.method, &req.path, body.unwrap_or(&Value::Null));
    if writes && s.secondary_limits > 0 {
        s.secondary_limits -= 1;
        let ra = s.retry_after.to_string();
        return (
            403,
            vec![("retry-after".into(), ra)],
            json!({"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.", "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}),
        );
    }
    let mut extra = vec![];
    if let Some(reset) = s.primary_limit_once.take() {
        extra.push(("x-ratelimit-remaining".to_string(), "0".to_string()));
        extra.push(("x-ratelimit-reset".to_string(), reset.to_string()));
    }
    let mut a = route(&mut s, req, body.unwrap_or(&Value::Null), addr);
    a.1.extend(extra);
    a
}

fn page(items: Vec<Value>, req: &Req, addr: std::net::SocketAddr, foreign: bool) -> Answer {
    let q: BTreeMap<&str, &str> = req
        .query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .collect();
    let per: usize = q
        .get("per_page")
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
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
    let mut headers = vec![];
    if page * per < items.len() {
        let host = if foreign {
            format!("localhost:{}", addr.port())
        } else {
            addr.to_string()
        };
        headers.push((
            "link".to_string(),
            format!(
                "<http://{host}{}?per_page={per}&page={}>; rel=\"next\"",
                req.path,
                page + 1
            ),
        ));
    }
    (200, headers, Value::Array(slice))
}

fn route(s: &mut State, req: &Req, body: &Value, addr: std::net::SocketAddr) -> Answer {
    let pr = format!("/repos/{OWNER}/{NAME}/pulls/{NUMBER}");
    let issue = format!("/repos/{OWNER}/{NAME}/issues/{NUMBER}");
    let m = req.method.as_str();
    let p = req.path.as_str();
    if p == "/graphql" {
        return graphql(s, body);
    }
    if m == "GET" && p == pr {
        return (
            200,
            vec![],
            json!({"number": NUMBER, "head": {"sha": s.head}, "base": {"sha": "b".repeat(40)}}),
        );
    }
    if m == "GET" && p == format!("{pr}/files") {
        let files = s
            .files
            .iter()
            .map(|(f, patch)| json!({"filename": f, "status": "modified", "patch": patch}))
            .collect();
        let a = page(files, req, addr, s.foreign_next);
        if let Some(h) = s.move_head_on_pull_read.take() {
            s.head = h;
        }
        return a;
    }
    if m == "GET" && p == format!("{issue}/comments") {
        let items = s
            .issue_comments
            .iter()
            .map(|c| json!({"id": c.id, "body": c.body, "user": {"login": c.author}}))
            .collect();
        return page(items, req, addr, s.foreign_next);
    }
    if m == "POST" && p == format!("{issue}/comments") {
        s.next_id += 1;
        let id = s.next_id;
        s.issue_comments.push(Comment {
            id,
            body: body["body"].as_str().unwrap_or("").into(),
            author: BOT.into(),
        });
        return (201, vec![], json!({"id": id}));
    }
    if m == "PATCH"
        && let Some(id) = p
            .strip_prefix(&format!("/repos/{OWNER}/{NAME}/issues/comments/"))
            .and_then(|i| i.parse::<u64>().ok())
    {
        return match s.issue_comments.iter_mut().find(|c| c.id == id) {
            Some(c) if c.author == BOT => {
                c.body = body["body"].as_str().unwrap_or("").into();
                (200, vec![], json!({"id": id}))
            }
            Some(_) => err(403, "Resource not accessible by integration"),
            None => err(404, "Not Found"),
        };
    }
    if m == "POST" && p == format!("{pr}/reviews") {
        return post_review(s, body);
    }
    if m == "DELETE"
        && let Some(id) = p
            .strip_prefix(&format!("{pr}/reviews/"))
            .and_then(|i| i.parse::<u64>().ok())
    {
        let Some(i) = s.reviews.iter().position(|r| r.0 == id) else {
            return err(404, "Not Found");
        };
        if !s.reviews[i].4 {
            return err(422, "Can not delete a non-pending pull request review");
        }
        s.reviews.remove(i);
        s.threads
            .retain(|t| !t.id.starts_with(&format!("PENDING{id}-")));
        return (200, vec![], json!({"id": id}));
    }
    err(404, "Not Found (the fake does not serve this)")
}

fn post_review(s: &mut State, body: &Value) -> Answer {
    let commit = body["commit_id"].as_str().unwrap_or("").to_string();
    if commit != s.head {
        return err(422, "commit_id is not part of the pull request");
    }
    let event = body["event"].as_str().unwrap_or("").to_string();
    let pending = event.is_empty();
    if pending && s.reviews.iter().any(|r| r.4) {
        return err(
            422,
            "User can only have one pending review per pull request",
        );
    }
    if (event == "REQUEST_CHANGES" || event == "COMMENT")
        && body["body"].as_str().unwrap_or("").is_empty()
        && body["comments"].as_array().is_none_or(|c| c.is_empty())
    {
        return err(422, "Body is required");
    }
    let comments = body["comments"].as_array().cloned().unwrap_or_default();
    for c in &comments {
        let path = c["path"].as_str().unwrap_or("");
        let line = c["line"].as_u64().unwrap_or(0) as u32;
        let lines = s.files.get(path).map(|p| hunk_lines(p)).unwrap_or_default();
        let start = c["start_line"].as_u64().map(|l| l as u32);
        let in_diff =
            |l: u32| lines.contains(&l) && !s.refused_lines.contains(&(path.to_string(), l));
        // The description leaves `side` a free string; GitHub takes LEFT or RIGHT, and this
        // fake's diff holds the new side only.
        let sides_ok =
            c["side"] == "RIGHT" && (c.get("start_line").is_none() || c["start_side"] == "RIGHT");
        if !sides_ok {
            return err(422, "side must be RIGHT for a line of the new file");
        }
        if !in_diff(line) || start.is_some_and(|st| st >= line || !(st..=line).all(in_diff)) {
            return (
                422,
                vec![],
                json!({"message": "Unprocessable Entity", "errors": ["Line could not be resolved"], "documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request", "status": "422"}),
            );
        }
        if c["body"].as_str().unwrap_or("").chars().count() > 65_536 {
            return err(422, "body is too long (maximum is 65536 characters)");
        }
    }
    if body["body"].as_str().unwrap_or("").chars().count() > 65_536 {
        return err(422, "body is too long (maximum is 65536 characters)");
    }
    s.next_id += 1;
    let id = s.next_id;
    for c in comments {
        s.next_id += 1;
        let cid = s.next_id;
        let tid = if pending {
            format!("PENDING{id}-{cid}")
        } else {
            format!("PRRT_{cid}")
        };
        if !pending {
            s.threads.push(FThread {
                id: tid,
                path: c["path"].as_str().unwrap_or("").into(),
                line: c["line"].as_u64().map(|l| l as u32),
                start_line: c["start_line"].as_u64().map(|l| l as u32),
                resolved: false,
                resolved_by: None,
                outdated: false,
                comments: vec![Comment {
                    id: cid,
                    body: c["body"].as_str().unwrap_or("").into(),
                    author: BOT.into(),
                }],
            });
        }
    }
    s.reviews.push((
        id,
        commit,
        event,
        body["body"].as_str().unwrap_or("").into(),
        pending,
    ));
    (
        200,
        vec![],
        json!({"id": id, "state": if pending { "PENDING" } else { "COMMENTED" }}),
    )
}

fn graphql(s: &mut State, body: &Value) -> Answer {
    let q = body["query"].as_str().unwrap_or("");
    let vars = &body["variables"];
    if q.contains("resolveReviewThread") {
        let id = vars["id"].as_str().unwrap_or("");
        return match s.threads.iter_mut().find(|t| t.id == id) {
            Some(t) => {
                t.resolved = true;
                t.resolved_by = Some(BOT.into());
                (
                    200,
                    vec![],
                    json!({"data": {"resolveReviewThread": {"thread": {"id": id, "isResolved": true}}}}),
                )
            }
            None => (
                200,
                vec![],
                json!({"data": null, "errors": [{"type": "NOT_FOUND", "message": format!("Could not resolve to a node with the global id of '{id}'")}]}),
            ),
        };
    }
    if q.contains("reviewThreads") {
        if vars["owner"] != OWNER || vars["name"] != NAME || vars["number"] != NUMBER {
            return (
                200,
                vec![],
                json!({"data": {"repository": null}, "errors": [{"type": "NOT_FOUND", "message": "Could not resolve to a Repository"}]}),
            );
        }
        let after: usize = vars["after"]
            .as_str()
            .and_then(|a| a.parse().ok())
            .unwrap_or(0);
        let first = 100;
        let nodes: Vec<Value> = s.threads.iter().skip(after).take(first).map(|t| json!({
            "id": t.id, "isResolved": t.resolved, "isOutdated": t.outdated, "resolvedBy": t.resolved_by.as_ref().map(|l| json!({"login": l})), "path": t.path, "line": t.line,
            "comments": {"nodes": t.comments.iter().map(|c| json!({"databaseId": c.id, "body": c.body, "author": {"login": c.author}})).collect::<Vec<_>>()}
        })).collect();
        let end = after + nodes.len();
        let more = end < s.threads.len();
        return (
            200,
            vec![],
            json!({"data": {"repository": {"pullRequest": {"reviewThreads": {"nodes": nodes, "pageInfo": {"hasNextPage": more, "endCursor": end.to_string()}}}}}}),
        );
    }
    (
        200,
        vec![],
        json!({"errors": [{"message": "the fake serves reviewThreads and resolveReviewThread only"}]}),
    )
}
