//! `[publish]`: how `warden publish` writes a review onto its pull request (docs/design.md §15).
//! Read from the base of the change like every other key, so a pull request cannot change
//! where its own review goes or what it may resolve. The token itself is never in the file:
//! `tokenEnv` names the variable it is read from.

use super::raw::RawPublish;

/// Threads resolved per run at most by default.
pub(crate) const DEFAULT_MAX_RESOLVE: usize = 50;

/// What becomes of warden's threads whose finding is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Resolve {
    /// Resolve them (when every rule of docs/design.md §15 holds).
    #[default]
    Yes,
    /// Only list them (`resolve = "report"`): a dry run of resolution.
    Report,
    /// Never touch them.
    No,
}

/// `[publish]` as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishSettings {
    /// The variable the token is read from; None: the forge's usual one
    /// (`GITHUB_TOKEN` / `GITLAB_TOKEN`).
    pub token_env: Option<String>,
    /// Submit `REQUEST_CHANGES` when a finding reaches `failOn`.
    pub request_changes: bool,
    /// Resolution of stale threads.
    pub resolve: Resolve,
    /// Threads resolved per run at most.
    pub max_resolve: usize,
}

impl Default for PublishSettings {
    fn default() -> Self {
        PublishSettings {
            token_env: None,
            request_changes: false,
            resolve: Resolve::Yes,
            max_resolve: DEFAULT_MAX_RESOLVE,
        }
    }
}

/// `[publish]` checked; an error is the offset of the bad value and the message (the
/// caller turns it into file:line:column, so this file needs nothing of `resolve.rs`).
pub(super) fn resolve(raw: &RawPublish) -> Result<PublishSettings, (usize, String)> {
    let err = |at: usize, msg: String| Err((at, msg));
    let mut out = PublishSettings::default();
    if let Some(v) = &raw.token_env {
        let name = v.get_ref().trim();
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return err(
                v.span().start,
                format!(
                    "publish.tokenEnv: `{name}` is not an environment variable name: write it like \"GITHUB_TOKEN\""
                ),
            );
        }
        out.token_env = Some(name.to_string());
    }
    out.request_changes = raw.request_changes.unwrap_or(false);
    if let Some(v) = &raw.resolve {
        out.resolve = match v.get_ref() {
            toml::Value::Boolean(true) => Resolve::Yes,
            toml::Value::Boolean(false) => Resolve::No,
            toml::Value::String(s) if s == "report" => Resolve::Report,
            _ => {
                return err(
                    v.span().start,
                    "publish.resolve: write true, false or \"report\" (list the threads it would resolve)".into(),
                );
            }
        };
    }
    if let Some(v) = &raw.max_resolve {
        let n = *v.get_ref();
        if !(0..=1000).contains(&n) {
            return err(
                v.span().start,
                "publish.maxResolve: write a number from 0 to 1000 (threads resolved per run)"
                    .into(),
            );
        }
        out.max_resolve = n as usize;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_str;
    use std::path::Path;

    fn parse(src: &str) -> crate::Result<PublishTable> {
        parse_str(src, Path::new("warden.toml")).map(|s| PublishTable {
            publish: s.publish,
            warnings: s.warnings,
        })
    }

    /// What these tests read of the settings.
    #[derive(Debug)]
    struct PublishTable {
        publish: PublishSettings,
        warnings: Vec<String>,
    }

    #[test]
    fn publish_keys_load_with_their_defaults() {
        let d = parse("version = 1\n").unwrap();
        assert_eq!(d.publish, PublishSettings::default());
        assert_eq!(d.publish.max_resolve, 50);
        let s = parse("version = 1\n[publish]\ntokenEnv = \"BOT_TOKEN\"\nrequestChanges = true\nresolve = \"report\"\nmaxResolve = 7\n").unwrap();
        assert_eq!(s.publish.token_env.as_deref(), Some("BOT_TOKEN"));
        assert!(s.publish.request_changes);
        assert_eq!(s.publish.resolve, Resolve::Report);
        assert_eq!(s.publish.max_resolve, 7);
        let off = parse("version = 1\n[publish]\nresolve = false\n").unwrap();
        assert_eq!(off.publish.resolve, Resolve::No);
        assert!(off.warnings.is_empty(), "{:?}", off.warnings);
    }

    #[test]
    fn bad_publish_values_name_the_key_and_line() {
        for (src, want) in [
            ("[publish]\nresolve = \"yes\"\n", "3:11: publish.resolve:"),
            ("[publish]\nmaxResolve = -1\n", "3:14: publish.maxResolve:"),
            ("[publish]\ntokenEnv = \"A B\"\n", "3:12: publish.tokenEnv:"),
        ] {
            let err = parse(&format!("version = 1\n{src}"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{src}: {err}");
        }
    }
}
