//! GitHub's side of publishing: reading the pull request (its head, its diff, its review
//! threads over GraphQL, its issue comments), and the writes: one review per run, thread
//! resolutions, the sticky summary edited in place. Lists are read to their last page.

use super::context::Context;
use super::diff_lines::DiffLines;
use super::http::{Api, ApiError};
use super::marker::{self, Marker};
use super::plan::Thread;
use reqwest::{Method, Url};
use serde_json::{Value, json};

/// Pages read per list at most (100 items each).
const MAX_PAGES: usize = 100;

const THREADS: &str = "query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        nodes {
          id isResolved isOutdated path line resolvedBy { login }
          comments(first: 100) { nodes { databaseId body author { login } } }
        }
        pageInfo { hasNextPage endCursor }
      }
    }
  }
}";

const RESOLVE: &str = "mutation($id: ID!) {
  resolveReviewThread(input: {threadId: $id}) { thread { id isResolved } }
}";

/// A comment of the review being posted.
#[derive(Debug, Clone)]
pub struct ReviewComment {
    /// The file.
    pub path: String,
    /// The (last) line.
    pub line: u32,
    /// The first line of a range.
    pub start_line: Option<u32>,
    /// Its Markdown.
    pub body: String,
}

impl ReviewComment {
    fn json(&self) -> Value {
        let mut c =
            json!({"path": self.path, "body": self.body, "line": self.line, "side": "RIGHT"});
        if let Some(s) = self.start_line {
            c["start_line"] = json!(s);
            c["start_side"] = json!("RIGHT");
        }
        c
    }
}

/// The GitHub API of one pull request.
pub struct Github<'a> {
    /// The client.
    pub api: Api,
    ctx: &'a Context,
}

impl<'a> Github<'a> {
    /// The pull request `ctx` names, through `api`.
    pub fn new(api: Api, ctx: &'a Context) -> Self {
        Github { api, ctx }
    }

    fn rest(&self, path: &str) -> Url {
        let p = format!("/repos/{}/{}{}", self.ctx.owner, self.ctx.name, path);
        self.api.url(&self.ctx.api_url, &p)
    }

    /// Every item of a paginated REST list.
    async fn list(&mut self, path: &str) -> Result<Vec<Value>, ApiError> {
        let mut url = self.rest(&format!("{path}?per_page=100"));
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
            match a.next {
                Some(n) => {
                    url = Url::parse(&n)
                        .map_err(|e| ApiError::Transport(format!("a bad next-page link ({e})")))?
                }
                None => return Ok(out),
            }
        }
        Ok(out)
    }

    /// The pull request's head sha.
    pub async fn head(&mut self) -> Result<String, ApiError> {
        let url = self.rest(&format!("/pulls/{}", self.ctx.number));
        let a = self.api.call(Method::GET, &url, None).await?;
        a.body["head"]["sha"]
            .as_str()
            .map(str::to_ascii_lowercase)
            .ok_or_else(|| ApiError::Transport("the pull request has no head.sha".into()))
    }

    /// The diff's lines, from the files list's patches.
    pub async fn diff(&mut self) -> Result<DiffLines, ApiError> {
        let files = self
            .list(&format!("/pulls/{}/files", self.ctx.number))
            .await?;
        let mut d = DiffLines::default();
        for f in files {
            if let (Some(path), Some(patch)) = (f["filename"].as_str(), f["patch"].as_str()) {
                d.add_patch(path, patch);
            }
        }
        Ok(d)
    }

    /// Every review thread, with warden's markers read.
    pub async fn threads(&mut self) -> Result<Vec<Thread>, ApiError> {
        let mut out = Vec::new();
        let mut after = Value::Null;
        for _ in 0..MAX_PAGES {
            let vars = json!({"owner": self.ctx.owner, "name": self.ctx.name, "number": self.ctx.number, "after": after});
            let data = self.graphql(THREADS, vars).await?;
            let rt = &data["repository"]["pullRequest"]["reviewThreads"];
            for n in rt["nodes"].as_array().into_iter().flatten() {
                out.push(thread(n));
            }
            if rt["pageInfo"]["hasNextPage"].as_bool() != Some(true) {
                return Ok(out);
            }
            after = rt["pageInfo"]["endCursor"].clone();
        }
        Ok(out)
    }

    /// The sticky summary (its id and body), if there is one.
    pub async fn sticky(&mut self) -> Result<Option<(u64, String)>, ApiError> {
        let comments = self
            .list(&format!("/issues/{}/comments", self.ctx.number))
            .await?;
        Ok(comments.iter().rev().find_map(|c| {
            let body = c["body"].as_str()?;
            body.trim_start()
                .starts_with(marker::STICKY)
                .then(|| Some((c["id"].as_u64()?, body.to_string())))?
        }))
    }

    /// Posts the run's one review.
    pub async fn post_review(
        &mut self,
        head: &str,
        body: &str,
        event: &str,
        comments: &[ReviewComment],
    ) -> Result<(), ApiError> {
        let url = self.rest(&format!("/pulls/{}/reviews", self.ctx.number));
        let payload = json!({
            "commit_id": head,
            "body": body,
            "event": event,
            "comments": comments.iter().map(ReviewComment::json).collect::<Vec<_>>(),
        });
        self.api
            .call(Method::POST, &url, Some(&payload))
            .await
            .map(|_| ())
    }

    /// Whether GitHub takes these comments' positions: a pending review holding them is
    /// created, then deleted (a pending review is visible to nobody but its author).
    pub(crate) async fn positions_ok(
        &mut self,
        head: &str,
        comments: &[ReviewComment],
    ) -> Result<bool, ApiError> {
        let url = self.rest(&format!("/pulls/{}/reviews", self.ctx.number));
        let payload = json!({
            "commit_id": head,
            "comments": comments.iter().map(ReviewComment::json).collect::<Vec<_>>(),
        });
        match self.api.call(Method::POST, &url, Some(&payload)).await {
            Ok(a) => {
                if let Some(id) = a.body["id"].as_u64() {
                    let del = self.rest(&format!("/pulls/{}/reviews/{id}", self.ctx.number));
                    self.api.call(Method::DELETE, &del, None).await?;
                }
                Ok(true)
            }
            Err(ApiError::Status(422, _)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Resolves a thread.
    pub async fn resolve(&mut self, thread_id: &str) -> Result<(), ApiError> {
        self.graphql(RESOLVE, json!({"id": thread_id}))
            .await
            .map(|_| ())
    }

    /// Edits the sticky summary, or posts it.
    pub(crate) async fn upsert_sticky(
        &mut self,
        existing: Option<u64>,
        body: &str,
    ) -> Result<(), ApiError> {
        let payload = json!({"body": body});
        if let Some(id) = existing {
            let url = self.rest(&format!("/issues/comments/{id}"));
            match self.api.call(Method::PATCH, &url, Some(&payload)).await {
                Ok(_) => return Ok(()),
                // Someone else's comment with the marker: post warden's own.
                Err(ApiError::Status(403 | 404, _)) => {}
                Err(e) => return Err(e),
            }
        }
        let url = self.rest(&format!("/issues/{}/comments", self.ctx.number));
        self.api
            .call(Method::POST, &url, Some(&payload))
            .await
            .map(|_| ())
    }

    async fn graphql(&mut self, query: &str, variables: Value) -> Result<Value, ApiError> {
        let url = self.ctx.graphql_url.clone();
        let a = self
            .api
            .call(
                Method::POST,
                &url,
                Some(&json!({"query": query, "variables": variables})),
            )
            .await?;
        if let Some(errs) = a.body.get("errors").filter(|e| !e.is_null()) {
            let msg = errs[0]["message"]
                .as_str()
                .unwrap_or("GraphQL error")
                .to_string();
            return Err(ApiError::Status(a.status.as_u16(), self.api.clean(&msg)));
        }
        Ok(a.body["data"].clone())
    }
}

fn thread(n: &Value) -> Thread {
    let comments: Vec<&Value> = n["comments"]["nodes"]
        .as_array()
        .map(|v| v.iter().collect())
        .unwrap_or_default();
    let marker = comments
        .first()
        .and_then(|c| Marker::parse(c["body"].as_str().unwrap_or("")));
    let replied = comments
        .iter()
        .skip(1)
        .any(|c| Marker::parse(c["body"].as_str().unwrap_or("")).is_none());
    let author = comments.first().and_then(|c| c["author"]["login"].as_str());
    let resolver = n["resolvedBy"]["login"].as_str();
    Thread {
        id: n["id"].as_str().unwrap_or("").to_string(),
        resolved: n["isResolved"].as_bool().unwrap_or(false),
        resolved_by_warden: marker.is_some() && author.is_some() && resolver == author,
        outdated: n["isOutdated"].as_bool().unwrap_or(false),
        path: n["path"].as_str().unwrap_or("").to_string(),
        line: n["line"].as_u64().and_then(|l| u32::try_from(l).ok()),
        marker,
        replied,
    }
}
