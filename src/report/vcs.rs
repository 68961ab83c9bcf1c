//! Which repository, revision and branch a review looked at: SARIF's
//! `versionControlProvenance` (code scanning ties results to a commit with it) and the
//! links in the Markdown comment. Taken from the CI environment when it says, else from
//! the repository itself.

use serde::{Deserialize, Serialize};

/// Version-control facts about the reviewed code; every field is optional.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Vcs {
    /// `$GITHUB_SERVER_URL/$GITHUB_REPOSITORY`, else the `origin` remote with any
    /// credentials removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repository_uri: Option<String>,
    /// The commit reviewed (the head of a range, else HEAD).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// The branch reviewed, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// A web address that serves `/blob/<revision>/<path>` (GitHub), for links.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_url: Option<String>,
}

impl Vcs {
    /// Reads the facts from `env` (a variable lookup, so tests need not touch the process
    /// environment) and `repo`; `head` is the reviewed head ref when a range was given.
    /// None when nothing at all is known.
    pub fn discover(
        repo: Option<&git2::Repository>,
        head: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<Vcs> {
        let var = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let web_url = var("GITHUB_SERVER_URL")
            .zip(var("GITHUB_REPOSITORY"))
            .map(|(server, repo)| format!("{}/{}", server.trim_end_matches('/'), repo));
        let remote = repo.and_then(|r| {
            r.find_remote("origin")
                .ok()
                .and_then(|o| o.url().ok().and_then(remote_uri))
        });
        let revision = repo
            .and_then(|r| {
                r.revparse_single(head.unwrap_or("HEAD"))
                    .and_then(|o| o.peel_to_commit())
                    .ok()
            })
            .map(|c| c.id().to_string())
            .or_else(|| var("GITHUB_SHA"));
        let current_branch = repo.and_then(|r| {
            let h = r.head().ok()?;
            h.is_branch()
                .then(|| h.shorthand().ok().map(str::to_string))?
        });
        let branch = var("GITHUB_HEAD_REF")
            .or(current_branch)
            .or_else(|| var("GITHUB_REF_NAME"));
        let vcs = Vcs {
            repository_uri: web_url.clone().or(remote),
            revision,
            branch,
            web_url,
        };
        (vcs != Vcs::default()).then_some(vcs)
    }

    /// A link to `path` lines `start..=end` at the reviewed revision, when both the web
    /// address and the revision are known.
    pub fn link(&self, path: &str, start: u32, end: u32) -> Option<String> {
        let web = self.web_url.as_ref()?;
        let rev = self.revision.as_ref()?;
        let anchor = if end > start {
            format!("#L{start}-L{end}")
        } else {
            format!("#L{start}")
        };
        Some(format!("{web}/blob/{rev}/{}{anchor}", encode_path(path)))
    }
}

/// A remote's URL as a URI without credentials: `https://user:token@host/x` loses
/// `user:token@`; scp-like `git@host:o/r.git` becomes `ssh://git@host/o/r.git`. Local
/// paths are not a repository address anyone else can use: None.
fn remote_uri(url: &str) -> Option<String> {
    if let Some((scheme, rest)) = url.split_once("://") {
        if scheme == "file" {
            return None;
        }
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        return Some(format!("{scheme}://{host}{path}"));
    }
    let (user_host, path) = url.split_once(':')?;
    if user_host.contains('/') || path.starts_with("//") || user_host.len() < 2 {
        return None; // a path (or a Windows drive letter), not scp-like syntax
    }
    Some(format!(
        "ssh://{user_host}/{}",
        path.trim_start_matches('/')
    ))
}

/// Percent-encodes a repository path for a URL, keeping `/` and unreserved characters.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_urls_lose_credentials_and_local_paths_are_not_uris() {
        assert_eq!(
            remote_uri("https://x-access-token:ghs_SECRET@github.com/o/r.git").as_deref(),
            Some("https://github.com/o/r.git")
        );
        assert_eq!(
            remote_uri("git@github.com:o/r.git").as_deref(),
            Some("ssh://git@github.com/o/r.git")
        );
        assert_eq!(remote_uri("/srv/git/r.git"), None);
        assert_eq!(remote_uri("../r"), None);
        assert_eq!(remote_uri("file:///srv/git/r.git"), None);
        assert_eq!(remote_uri("C:/repos/r"), None);
    }

    #[test]
    fn github_env_gives_links_and_the_repository_uri() {
        let env = |k: &str| match k {
            "GITHUB_SERVER_URL" => Some("https://github.com/".to_string()),
            "GITHUB_REPOSITORY" => Some("o/r".to_string()),
            "GITHUB_SHA" => Some("abc123".to_string()),
            "GITHUB_HEAD_REF" => Some("feature".to_string()),
            _ => None,
        };
        let v = Vcs::discover(None, None, &env).unwrap();
        assert_eq!(v.repository_uri.as_deref(), Some("https://github.com/o/r"));
        assert_eq!(v.branch.as_deref(), Some("feature"));
        assert_eq!(
            v.link("src/a b#.rs", 3, 5).as_deref(),
            Some("https://github.com/o/r/blob/abc123/src/a%20b%23.rs#L3-L5")
        );
        assert_eq!(
            v.link("a.rs", 3, 3).as_deref(),
            Some("https://github.com/o/r/blob/abc123/a.rs#L3")
        );
        assert_eq!(Vcs::discover(None, None, &|_| None), None);
    }
}
