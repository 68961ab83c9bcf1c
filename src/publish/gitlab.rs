//! GitLab's side of publishing: a merge request's latest version (its shas), its diffs, its
//! discussions (warden's threads, people's replies and resolutions, the sticky note), and
//! the writes: one discussion per new inline finding with a text position on the new side,
//! a note holding the run's outcome and the findings no diff line can hold, resolutions
//! (`resolved=true`), the sticky summary note edited in place. Lists are read to their last
//! page (`x-next-page`, or the `Link` header).

use super::context::Context;
use super::diff_lines::DiffLines;
use super::http::{Api, ApiError};
use super::marker::{self, Marker};
use super::plan::{self, Place, Thread};
use super::{Request, render};
use crate::config::Resolve;
use crate::report::published::Published;
use reqwest::{Method, Url};
use serde_json::{Value, json};
use std::collections::HashMap;

const MAX_PAGES: usize = 100;

/// The shas a text position needs.
struct Version {
    base: String,
    start: String,
    head: String,
}

struct Gitlab<'a> {
    api: &'a mut Api,
    ctx: &'a Context,
}

impl Gitlab<'_> {
    fn url(&self, path: &str) -> Url {
        let p = format!(
            "/projects/{}/merge_requests/{}{path}",
            self.ctx.project, self.ctx.number
        );
        self.api.url(&self.ctx.api_url, &p)
    }

    async fn list(&mut self, path: &str) -> Result<Vec<Value>, ApiError> {
        let first = self.url(&format!("{path}?per_page=100"));
        let mut url = first.clone();
        let mut out = Vec::new();
        for _ in 0..MAX_PAGES {
            let a = self.api.call(Method::GET, &url, None).await?;
            match a.body {
                Value::Array(items) => out.extend(items),
                _ => {
                    return Err(ApiError::Transport(format!(
                        "{path}: the answer is not a list"
                    )));
                }
            }
            url = match (a.next, a.next_page) {
                (Some(n), _) => Url::parse(&n)
                    .map_err(|e| ApiError::Transport(format!("a bad next-page link ({e})")))?,
                (None, Some(p)) => self.url(&format!("{path}?per_page=100&page={p}")),
                (None, None) => return Ok(out),
            };
        }
        Ok(out)
    }

    async fn version(&mut self) -> Result<Version, ApiError> {
        let url = self.url("/versions");
        let a = self.api.call(Method::GET, &url, None).await?;
        let v = &a.body[0];
        let sha = |k: &str| v[k].as_str().map(str::to_ascii_lowercase);
        match (
            sha("base_commit_sha"),
            sha("start_commit_sha"),
            sha("head_commit_sha"),
        ) {
            (Some(base), Some(start), Some(head)) => Ok(Version { base, start, head }),
            _ => Err(ApiError::Transport(
                "the merge request has no diff version".into(),
            )),
        }
    }
}

/// A discussion as a thread; its line is where its anchored text now is in the diff
/// (GitLab keeps a position at the version it was made on), none when that text is gone.
fn thread(d: &Value, diff: &DiffLines) -> Option<Thread> {
    let notes: Vec<&Value> = d["notes"]
        .as_array()?
        .iter()
        .filter(|n| n["system"] != true)
        .collect();
    let first = notes.first()?;
    let path = first["position"]["new_path"].as_str()?.to_string();
    let marker = Marker::parse(first["body"].as_str().unwrap_or(""));
    let line = marker.as_ref().and_then(|m| {
        diff.files
            .get(&path)?
            .iter()
            .find(|(_, text)| marker::anchor(text) == m.anchor)
            .map(|(l, _)| *l)
    });
    let author = first["author"]["username"].as_str();
    Some(Thread {
        id: d["id"].as_str()?.to_string(),
        resolved: first["resolved"] == true,
        resolved_by_warden: marker.is_some()
            && author.is_some()
            && first["resolved_by"]["username"].as_str() == author,
        outdated: line.is_none(),
        path,
        line,
        replied: notes
            .iter()
            .skip(1)
            .any(|n| Marker::parse(n["body"].as_str().unwrap_or("")).is_none()),
        marker,
    })
}

/// What the reads give: the diff (and each file's old path), the threads, the sticky note.
struct Read {
    diff: DiffLines,
    old_paths: HashMap<String, String>,
    threads: Vec<Thread>,
    sticky: Option<(u64, String)>,
}

async fn read(gl: &mut Gitlab<'_>) -> Result<Read, ApiError> {
    gl.version().await?;
    let mut diff = DiffLines::default();
    // A text position names the file on both sides (a rename's old path).
    let mut old_paths = HashMap::new();
    for f in gl.list("/diffs").await? {
        if let (Some(p), Some(d)) = (f["new_path"].as_str(), f["diff"].as_str()) {
            diff.add_patch(p, d);
            old_paths.insert(
                p.to_string(),
                f["old_path"].as_str().unwrap_or(p).to_string(),
            );
        }
    }
    let discussions = gl.list("/discussions").await?;
    let threads = discussions
        .iter()
        .filter_map(|d| thread(d, &diff))
        .collect();
    let sticky = discussions.iter().rev().find_map(|d| {
        let n = &d["notes"][0];
        let body = n["body"].as_str()?;
        body.trim_start()
            .starts_with(marker::STICKY)
            .then(|| Some((n["id"].as_u64()?, body.to_string())))?
    });
    Ok(Read {
        diff,
        old_paths,
        threads,
        sticky,
    })
}

/// Publishes to GitLab.
pub(super) async fn run(api: &mut Api, req: &Request, out: &mut Published) -> Result<(), ApiError> {
    let r = &req.report;
    let mut gl = Gitlab { api, ctx: &req.ctx };
    let read = read(&mut gl).await?;
    let listed = read
        .sticky
        .as_ref()
        .map(|(_, b)| marker::body_list(b))
        .unwrap_or_default();
    let p = plan::plan(&plan::Input {
        report: r,
        diff: &read.diff,
        threads: &read.threads,
        in_bodies: &listed,
        resolve: req.settings.resolve,
        max_resolve: req.settings.max_resolve,
    });
    out.already_posted = p.already_posted;
    out.suppressed = p.suppressed;
    let resolving = req.settings.resolve == Resolve::Yes && !req.dry_run;
    out.resolvable = p.resolve_over_cap + if resolving { 0 } else { p.resolve.len() };
    if req.dry_run {
        out.posted = p.new.len();
        return Ok(());
    }
    let v = gl.version().await?;
    if v.head != req.ctx.head {
        out.head_moved = true;
        out.notes.push(format!(
            "the merge request's head is {}, the report is of {}: nothing written",
            v.head, req.ctx.head
        ));
        return Ok(());
    }
    let body = post_discussions(&mut gl, req, &p, &v, &read.old_paths, out).await;
    let body = post_note(&mut gl, req, body, out).await;
    if resolving {
        for id in &p.resolve {
            let url = gl.url(&format!("/discussions/{id}?resolved=true"));
            match gl.api.call(Method::PUT, &url, None).await {
                Ok(_) => out.resolved += 1,
                Err(e) => {
                    out.failed += 1;
                    out.notes.push(format!("resolving a discussion: {e}"));
                }
            }
        }
    }
    let mut rows: Vec<String> = listed
        .iter()
        .map(|(m, ph)| {
            format!(
                "id={} skill={} anchor={} path={ph}",
                m.id, m.skill, m.anchor
            )
        })
        .collect();
    for n in p.new.iter().filter(|n| body.contains(&n.finding)) {
        rows.push(n.marker.row(&r.findings[n.finding].path));
    }
    upsert_sticky(
        &mut gl,
        read.sticky.map(|(id, _)| id),
        &render::sticky(r, &rows),
        out,
    )
    .await;
    Ok(())
}

/// One discussion per new inline finding; returns the findings for the run's note (those
/// outside the diff, and those whose position GitLab refused).
async fn post_discussions(
    gl: &mut Gitlab<'_>,
    req: &Request,
    p: &plan::Plan,
    v: &Version,
    old_paths: &HashMap<String, String>,
    out: &mut Published,
) -> Vec<usize> {
    let mut body: Vec<usize> = Vec::new();
    for n in &p.new {
        let f = &req.report.findings[n.finding];
        let Place::Inline { line, exact, .. } = n.place else {
            body.push(n.finding);
            continue;
        };
        let payload = json!({
            "body": render::comment(f, &n.marker, exact && f.start_line == f.end_line),
            "position": {
                "position_type": "text", "base_sha": v.base, "start_sha": v.start, "head_sha": v.head,
                "new_path": f.path, "new_line": line,
                "old_path": old_paths.get(&f.path).unwrap_or(&f.path),
            },
        });
        let url = gl.url("/discussions");
        match gl.api.call(Method::POST, &url, Some(&payload)).await {
            Ok(_) => out.posted += 1,
            Err(ApiError::Status(400, _)) => {
                out.moved_to_body += 1;
                body.push(n.finding);
            }
            Err(e) => {
                out.failed += 1;
                out.notes.push(format!("a discussion: {e}"));
            }
        }
    }
    body
}

/// The run's note: its outcome and the findings no diff line holds. Returns those posted.
async fn post_note(
    gl: &mut Gitlab<'_>,
    req: &Request,
    body: Vec<usize>,
    out: &mut Published,
) -> Vec<usize> {
    if body.is_empty() {
        return body;
    }
    let r = &req.report;
    let fs: Vec<&crate::report::Finding> = body.iter().map(|i| &r.findings[*i]).collect();
    let text = render::review_body(
        r,
        &req.ctx.head,
        req.ctx.web_url.as_deref(),
        &fs,
        out.moved_to_body,
    );
    let url = gl.url("/notes");
    match gl
        .api
        .call(Method::POST, &url, Some(&json!({"body": text})))
        .await
    {
        Ok(_) => {
            out.posted += body.len();
            body
        }
        Err(e) => {
            out.failed += body.len();
            out.notes.push(format!("the review note: {e}"));
            Vec::new()
        }
    }
}

/// The sticky summary note, edited in place or posted.
async fn upsert_sticky(
    gl: &mut Gitlab<'_>,
    existing: Option<u64>,
    body: &str,
    out: &mut Published,
) {
    let text = json!({ "body": body });
    let res = match existing {
        Some(id) => {
            let url = gl.url(&format!("/notes/{id}"));
            gl.api.call(Method::PUT, &url, Some(&text)).await
        }
        None => {
            let url = gl.url("/notes");
            gl.api.call(Method::POST, &url, Some(&text)).await
        }
    };
    if let Err(e) = res {
        out.failed += 1;
        out.notes.push(format!("the summary note: {e}"));
    }
}
