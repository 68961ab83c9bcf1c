//! What a tool call may name (docs/design.md §14): a path inside the repository, written
//! relative to its top folder, that is not git's own data and does not look like a
//! secret. The model's arguments are hostile text: every path is checked here before any
//! source is asked, and the path a link resolved to is checked again after.

use super::refusal::Refusal;
use crate::path_rules::{PathRules, Verdict};
use std::path::Path;

/// Files no tool reads or lists, whatever the configuration adds: environment files,
/// private keys, certificates and key stores, credential files of package managers and
/// clouds. `[execution] toolDeny` extends the list (gitignore-style patterns).
pub(crate) const BUILT_IN_DENY: &[&str] = &[
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.crt",
    "*.cer",
    "*.der",
    "*.jks",
    "*.keystore",
    "*.gpg",
    "*.asc",
    "*.kdbx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".pgpass",
    ".git-credentials",
    ".htpasswd",
    ".aws/",
    ".ssh/",
    ".docker/config.json",
    "credentials.json",
    "secrets.*",
    "*.tfstate",
    "*.tfvars",
];

/// A deny pattern that does not compile (the config validates them first, so only a
/// toolbox built in code meets it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{pattern}`: {why}")]
pub struct BadDeny {
    pattern: String,
    why: String,
}

/// The paths tools refuse: the built-in list and the configured one.
#[derive(Debug, Clone)]
pub(crate) struct Deny {
    rules: PathRules,
}

impl Deny {
    /// The built-in list plus `extra` (each already validated as a pattern by the config).
    pub(crate) fn new(extra: &[String]) -> Result<Self, BadDeny> {
        let all: Vec<&str> = BUILT_IN_DENY
            .iter()
            .copied()
            .chain(extra.iter().map(String::as_str))
            .collect();
        let rules = PathRules::new(&all).map_err(|(i, why)| BadDeny {
            pattern: all[i].to_string(),
            why,
        })?;
        Ok(Deny { rules })
    }

    /// The pattern that denies `path`, if one does.
    pub(crate) fn denies(&self, path: &str) -> Option<String> {
        match self.rules.verdict(Path::new(path)) {
            Verdict::Matched(p) => Some(p.to_string()),
            _ => None,
        }
    }
}

/// Why a path was refused, in words the model reads (and can act on).
pub(crate) fn check(raw: &str, deny: &Deny) -> Result<String, Refusal> {
    let clean = shape(raw)?;
    allowed(&clean, deny)?;
    Ok(clean)
}

/// `path` (already in shape) is neither git's data nor a denied file.
pub(crate) fn allowed(path: &str, deny: &Deny) -> Result<(), Refusal> {
    if path
        .split('/')
        .any(|part| part.eq_ignore_ascii_case(".git"))
    {
        return Err(Refusal::Path(format!(
            "`{path}` is refused: git's own data (.git) is not part of the reviewed tree"
        )));
    }
    if let Some(pattern) = deny.denies(path) {
        return Err(Refusal::Path(format!(
            "`{path}` is refused: it looks like a secret (deny pattern `{pattern}`); tools do not read secret-looking files"
        )));
    }
    Ok(())
}

/// The path as `/`-separated parts relative to the top folder, `.` parts dropped; no
/// absolute path, drive, backslash, `..` or control character.
fn shape(raw: &str) -> Result<String, Refusal> {
    const RELATIVE: &str =
        "give a path relative to the repository's top folder, such as `src/main.rs`";
    if raw.trim().is_empty() {
        return Err(Refusal::Path(format!(
            "an empty path names no file: {RELATIVE}"
        )));
    }
    if raw.chars().any(char::is_control) {
        return Err(Refusal::Path(format!(
            "a path with control characters is refused: {RELATIVE}"
        )));
    }
    let b = raw.as_bytes();
    let drive = b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':';
    if raw.starts_with('/') || raw.starts_with('~') || drive {
        return Err(Refusal::Path(format!(
            "absolute paths are refused (tools read only the repository under review): {RELATIVE}"
        )));
    }
    if raw.contains('\\') {
        return Err(Refusal::Path(format!(
            "use `/` between folders, not `\\`: {RELATIVE}"
        )));
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => continue,
            ".." => {
                return Err(Refusal::Path(format!(
                    "`..` is refused: tools read only inside the repository; {RELATIVE}"
                )));
            }
            p => parts.push(p),
        }
    }
    if parts.is_empty() {
        return Ok(String::new());
    }
    Ok(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deny() -> Deny {
        Deny::new(&["private/**".to_string()]).unwrap()
    }

    #[test]
    fn paths_outside_the_tree_are_refused_with_a_reason() {
        for (raw, says) in [
            ("../../etc/passwd", "`..` is refused"),
            ("src/../../x", "`..` is refused"),
            ("/etc/passwd", "absolute paths are refused"),
            ("~/.ssh/id_rsa", "absolute paths are refused"),
            ("C:/Windows/win.ini", "absolute paths are refused"),
            ("src\\..\\x", "use `/`"),
            ("a\nb", "control characters"),
            ("", "empty path"),
        ] {
            let err = check(raw, &deny()).unwrap_err().to_string();
            assert!(err.contains(says), "{raw:?}: {err}");
        }
    }

    #[test]
    fn git_data_and_secret_looking_files_are_refused() {
        for (raw, says) in [
            (".git/config", ".git"),
            ("sub/.GIT/HEAD", ".git"),
            (".env", "`.env`"),
            ("app/.env.production", ".env.*"),
            ("deploy/server.pem", "*.pem"),
            ("home/.ssh/known_hosts", ".ssh/"),
            ("keys/id_ed25519", "id_ed25519*"),
            ("private/notes.md", "private/**"),
        ] {
            let err = check(raw, &deny()).unwrap_err().to_string();
            assert!(err.contains(says), "{raw:?}: {err}");
        }
    }

    #[test]
    fn ordinary_paths_pass_in_one_shape() {
        assert_eq!(check("./src//lib.rs", &deny()).unwrap(), "src/lib.rs");
        assert_eq!(check("README.md", &deny()).unwrap(), "README.md");
        assert_eq!(check(".", &deny()).unwrap(), "");
        assert_eq!(check("docs/env.md", &deny()).unwrap(), "docs/env.md");
    }
}
