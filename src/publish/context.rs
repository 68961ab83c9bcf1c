//! Where a review is published: the forge, the repository, the pull request, the head it
//! must still be at, and the API's addresses. Read from the CI environment (GitHub Actions
//! and GHES set the same variables), each overridable by a flag. The token goes only to
//! the API's origin, so the GraphQL address must share it.

use crate::error::Error;
use reqwest::Url;

/// The largest event file read (GitHub's payloads are a few hundred KiB at most).
const MAX_EVENT_BYTES: u64 = 8 << 20;

/// The forge a review is published to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forge {
    /// GitHub or GitHub Enterprise Server.
    Github,
    /// GitLab.
    Gitlab,
}

impl Forge {
    /// `github` or `gitlab`.
    pub fn name(self) -> &'static str {
        match self {
            Forge::Github => "github",
            Forge::Gitlab => "gitlab",
        }
    }

    /// The variable the token is read from when `[publish] tokenEnv` says none.
    pub(crate) fn default_token_env(self) -> &'static str {
        match self {
            Forge::Github => "GITHUB_TOKEN",
            Forge::Gitlab => "GITLAB_TOKEN",
        }
    }
}

/// Flags that override the environment.
#[derive(Debug, Clone, Default)]
pub struct ContextFlags {
    /// `owner/name`.
    pub repo: Option<String>,
    /// The pull request's number.
    pub number: Option<u64>,
    /// The head the review looked at.
    pub head: Option<String>,
    /// The REST API's base address.
    pub api_url: Option<String>,
    /// The GraphQL endpoint.
    pub graphql_url: Option<String>,
}

/// A pull request on a forge, and how to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The forge.
    pub forge: Forge,
    /// Repository owner (GitHub) or project id (GitLab).
    pub owner: String,
    /// Repository name (empty on GitLab).
    pub name: String,
    /// Pull request number (merge request iid).
    pub number: u64,
    /// The head sha the event names: the report must be of it.
    pub head: String,
    /// The REST base, without a trailing slash.
    pub api_url: Url,
    /// The GraphQL endpoint (GitHub).
    pub graphql_url: Url,
    /// `GITHUB_SERVER_URL/owner/name` (GitLab: `CI_PROJECT_URL`), for links.
    pub web_url: Option<String>,
    /// GitLab's project id (`CI_PROJECT_ID`; empty on GitHub).
    pub project: String,
}

/// The GitHub context from `flags` over `env` (a lookup, so tests need not touch the
/// process environment).
pub fn github(
    flags: &ContextFlags,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Context, Error> {
    let var = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let repo = flags
        .repo
        .clone()
        .or_else(|| var("GITHUB_REPOSITORY"))
        .ok_or_else(|| usage("no repository: set GITHUB_REPOSITORY or give --repo OWNER/NAME"))?;
    let (owner, name) = split_repo(&repo)?;
    let event = match var("GITHUB_EVENT_PATH") {
        Some(p) if flags.number.is_none() || flags.head.is_none() => Some(read_event(&p)?),
        _ => None,
    };
    let number = flags
        .number
        .or_else(|| event.as_ref().and_then(|e| e.0))
        .ok_or_else(|| usage("no pull request number: run on a pull_request or workflow_run event (GITHUB_EVENT_PATH), or give --pr N"))?;
    let head = flags
        .head
        .clone()
        .or_else(|| event.as_ref().and_then(|e| e.1.clone()))
        .ok_or_else(|| usage("no head sha: the event names none; give --head SHA"))?;
    check_sha(&head)?;
    let api = flags
        .api_url
        .clone()
        .or_else(|| var("GITHUB_API_URL"))
        .unwrap_or_else(|| "https://api.github.com".to_string());
    let api_url = parse_url(&api, "--api-url / GITHUB_API_URL")?;
    let graphql = flags
        .graphql_url
        .clone()
        .or_else(|| var("GITHUB_GRAPHQL_URL"))
        .unwrap_or_else(|| default_graphql(&api_url));
    let graphql_url = parse_url(&graphql, "--graphql-url / GITHUB_GRAPHQL_URL")?;
    if graphql_url.origin() != api_url.origin() {
        return Err(usage(&format!(
            "the GraphQL address {graphql_url} is not on the API's origin {}: the token goes to one origin only",
            api_url.origin().ascii_serialization()
        )));
    }
    let web_url =
        var("GITHUB_SERVER_URL").map(|s| format!("{}/{owner}/{name}", s.trim_end_matches('/')));
    Ok(Context {
        forge: Forge::Github,
        owner,
        name,
        number,
        head: head.to_ascii_lowercase(),
        api_url,
        graphql_url,
        web_url,
        project: String::new(),
    })
}

/// The GitLab context: `CI_API_V4_URL`, `CI_PROJECT_ID`, `CI_PROJECT_PATH`,
/// `CI_MERGE_REQUEST_IID`, the head from `CI_MERGE_REQUEST_SOURCE_BRANCH_SHA` or
/// `CI_COMMIT_SHA`; `--repo` is the project path (or id), `--pr` the iid.
pub fn gitlab(
    flags: &ContextFlags,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Context, Error> {
    let var = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let path = flags
        .repo
        .clone()
        .or_else(|| var("CI_PROJECT_PATH"))
        .ok_or_else(|| usage("no project: set CI_PROJECT_PATH or give --repo GROUP/PROJECT"))?;
    let ok = |s: &str| {
        s.split('/').all(|p| {
            !p.is_empty()
                && p != "."
                && p != ".."
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        })
    };
    if !ok(&path) {
        return Err(usage(&format!(
            "project `{}` is not GROUP/PROJECT",
            crate::text::escape::inline(&path)
        )));
    }
    // The id in API paths: CI_PROJECT_ID, else the path URL-encoded (GitLab takes both).
    let project = var("CI_PROJECT_ID")
        .filter(|id| flags.repo.is_none() && id.chars().all(|c| c.is_ascii_digit()))
        .unwrap_or_else(|| path.replace('/', "%2F"));
    let number = flags
        .number
        .or_else(|| var("CI_MERGE_REQUEST_IID").and_then(|n| n.trim().parse().ok()))
        .ok_or_else(|| usage("no merge request: run in a merge request pipeline (CI_MERGE_REQUEST_IID) or give --pr IID"))?;
    let head = flags
        .head
        .clone()
        .or_else(|| var("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"))
        .or_else(|| var("CI_COMMIT_SHA"))
        .ok_or_else(|| usage("no head sha: set CI_COMMIT_SHA or give --head SHA"))?;
    check_sha(&head)?;
    let api = flags
        .api_url
        .clone()
        .or_else(|| var("CI_API_V4_URL"))
        .ok_or_else(|| usage("no API address: set CI_API_V4_URL or give --api-url"))?;
    let api_url = parse_url(&api, "--api-url / CI_API_V4_URL")?;
    Ok(Context {
        forge: Forge::Gitlab,
        owner: path,
        name: String::new(),
        number,
        head: head.to_ascii_lowercase(),
        graphql_url: api_url.clone(),
        api_url,
        web_url: var("CI_PROJECT_URL").map(|u| u.trim_end_matches('/').to_string()),
        project,
    })
}

/// A head sha as the forges write it (7 to 64 hex digits); anything else is refused by name.
fn check_sha(head: &str) -> Result<(), Error> {
    if head.len() < 7 || head.len() > 64 || !head.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(usage(&format!(
            "--head: `{}` is not a commit sha",
            crate::text::escape::inline(head)
        )));
    }
    Ok(())
}

fn usage(msg: &str) -> Error {
    Error::Publish(msg.to_string())
}

fn split_repo(repo: &str) -> Result<(String, String), Error> {
    let ok = |s: &str| {
        !s.is_empty()
            && s.len() <= 100
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && s != "."
            && s != ".."
    };
    match repo.trim().split_once('/') {
        Some((o, n)) if ok(o) && ok(n) => Ok((o.to_string(), n.to_string())),
        _ => Err(usage(&format!(
            "repository `{}` is not OWNER/NAME",
            crate::text::escape::inline(repo)
        ))),
    }
}

fn parse_url(s: &str, what: &str) -> Result<Url, Error> {
    let url = Url::parse(s.trim().trim_end_matches('/')).map_err(|e| {
        usage(&format!(
            "{what}: `{}` is not a URL ({e})",
            crate::text::escape::inline(s)
        ))
    })?;
    if !matches!(url.scheme(), "https" | "http")
        || url.host_str().is_none()
        || !url.username().is_empty()
        || url.password().is_some()
        || url.query().is_some()
    {
        return Err(usage(&format!(
            "{what}: `{}` must be an http(s) address without user, password or query",
            crate::text::escape::inline(s)
        )));
    }
    if url.scheme() == "http" && !crate::config::url::is_loopback_str(s) {
        return Err(usage(&format!(
            "{what}: `{}` is plain http: the token would travel unencrypted; use https",
            crate::text::escape::inline(s)
        )));
    }
    Ok(url)
}

/// `https://api.github.com` → `…/graphql`; GHES `https://host/api/v3` → `https://host/api/graphql`.
fn default_graphql(api: &Url) -> String {
    let base = api.as_str().trim_end_matches('/');
    match base.strip_suffix("/v3") {
        Some(root) => format!("{root}/graphql"),
        None => format!("{base}/graphql"),
    }
}

/// Why a capped read gave nothing, for a message.
pub(super) fn refused(e: crate::capped_read::Refused) -> String {
    match e {
        crate::capped_read::Refused::Over(n) => format!("{n} bytes is over the size cap"),
        crate::capped_read::Refused::Io(e) => format!("cannot read it ({e})"),
    }
}

/// (number, head sha) from a `pull_request*` or `workflow_run` event.
fn read_event(path: &str) -> Result<(Option<u64>, Option<String>), Error> {
    let bytes = crate::capped_read::read(std::path::Path::new(path), MAX_EVENT_BYTES)
        .map_err(|e| usage(&format!("GITHUB_EVENT_PATH {path}: {}", refused(e))))?;
    let v: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| usage(&format!("GITHUB_EVENT_PATH {path}: not JSON ({e})")))?;
    if let Some(pr) = v.get("pull_request") {
        return Ok((
            pr["number"].as_u64(),
            pr["head"]["sha"].as_str().map(str::to_string),
        ));
    }
    if let Some(run) = v.get("workflow_run") {
        return Ok((
            run["pull_requests"][0]["number"].as_u64(),
            run["head_sha"].as_str().map(str::to_string),
        ));
    }
    Ok((v["number"].as_u64(), None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn a_pull_request_event_and_ghes_addresses_make_the_context() {
        let dir = tempfile::tempdir().unwrap();
        let ev = dir.path().join("event.json");
        std::fs::write(&ev, r#"{"pull_request":{"number":12,"head":{"sha":"ABCDEF0123456789abcdef0123456789abcdef01"}}}"#).unwrap();
        let e = env(&[
            ("GITHUB_REPOSITORY", "acme/app"),
            ("GITHUB_EVENT_PATH", ev.to_str().unwrap()),
            ("GITHUB_API_URL", "https://ghe.example.com/api/v3"),
            ("GITHUB_SERVER_URL", "https://ghe.example.com"),
        ]);
        let c = github(&ContextFlags::default(), &e).unwrap();
        assert_eq!(
            (c.owner.as_str(), c.name.as_str(), c.number),
            ("acme", "app", 12)
        );
        assert_eq!(c.head, "abcdef0123456789abcdef0123456789abcdef01");
        assert_eq!(
            c.graphql_url.as_str(),
            "https://ghe.example.com/api/graphql"
        );
        assert_eq!(
            c.web_url.as_deref(),
            Some("https://ghe.example.com/acme/app")
        );
        let flags = ContextFlags {
            number: Some(3),
            ..Default::default()
        };
        assert_eq!(github(&flags, &e).unwrap().number, 3);
    }

    #[test]
    fn a_merge_request_pipeline_makes_the_gitlab_context() {
        let e = env(&[
            ("CI_API_V4_URL", "https://gitlab.example.com/api/v4"),
            ("CI_PROJECT_ID", "42"),
            ("CI_PROJECT_PATH", "group/sub/proj"),
            ("CI_MERGE_REQUEST_IID", "5"),
            ("CI_COMMIT_SHA", "0123456789abcdef0123456789abcdef01234567"),
            (
                "CI_PROJECT_URL",
                "https://gitlab.example.com/group/sub/proj",
            ),
        ]);
        let c = gitlab(&ContextFlags::default(), &e).unwrap();
        assert_eq!(
            (c.project.as_str(), c.owner.as_str(), c.number),
            ("42", "group/sub/proj", 5)
        );
        assert_eq!(c.api_url.as_str(), "https://gitlab.example.com/api/v4");
        // --repo names the project by path: the id is the encoded path.
        let flags = ContextFlags {
            repo: Some("a/b".into()),
            ..Default::default()
        };
        assert_eq!(gitlab(&flags, &e).unwrap().project, "a%2Fb");
        let err = gitlab(
            &ContextFlags::default(),
            &env(&[("CI_PROJECT_PATH", "g/p")]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("CI_MERGE_REQUEST_IID"), "{err}");
    }

    #[test]
    fn a_workflow_run_event_names_its_pull_request() {
        let dir = tempfile::tempdir().unwrap();
        let ev = dir.path().join("event.json");
        std::fs::write(&ev, r#"{"workflow_run":{"head_sha":"0123456789abcdef0123456789abcdef01234567","pull_requests":[{"number":9}]}}"#).unwrap();
        let e = env(&[
            ("GITHUB_REPOSITORY", "a/b"),
            ("GITHUB_EVENT_PATH", ev.to_str().unwrap()),
        ]);
        let c = github(&ContextFlags::default(), &e).unwrap();
        assert_eq!(c.number, 9);
        assert_eq!(c.graphql_url.as_str(), "https://api.github.com/graphql");
    }

    #[test]
    fn a_graphql_address_on_another_origin_or_plain_http_is_refused() {
        let flags = ContextFlags {
            repo: Some("a/b".into()),
            number: Some(1),
            head: Some("abcdef0".into()),
            graphql_url: Some("https://evil.example.net/graphql".into()),
            ..Default::default()
        };
        let err = github(&flags, &env(&[])).unwrap_err().to_string();
        assert!(err.contains("not on the API's origin"), "{err}");
        let flags = ContextFlags {
            graphql_url: None,
            api_url: Some("http://api.example.com".into()),
            ..flags
        };
        let err = github(&flags, &env(&[])).unwrap_err().to_string();
        assert!(err.contains("plain http"), "{err}");
        let flags = ContextFlags {
            repo: Some("a/../b".into()),
            ..Default::default()
        };
        assert!(github(&flags, &env(&[])).is_err());
    }
}
