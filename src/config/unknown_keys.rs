//! Keys of `warden.toml` that warden does not read: where each is (file:line, from the
//! TOML's own spans) and which key was probably meant ("did you mean `failOn`?", by string
//! similarity against the keys `warden init --example` documents). They are warnings, or
//! errors under `--strict-config` / `strictConfig = true`.

use super::place::line_col;
use crate::error::Error;
use serde::Serialize;
use std::path::Path;

/// A key warden ignored, with its place and the key it is closest to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnknownKey {
    /// The key's path without array indexes (`skills.failOnn`).
    pub key: String,
    /// 1-based line and column of the key in the file; None when it cannot be found.
    pub line: Option<usize>,
    /// 1-based column.
    pub column: Option<usize>,
    /// The documented key meant, as it should be written (`failOn`, or `[defaults] failOn`
    /// for a key in the wrong table).
    pub suggestion: Option<String>,
}

impl UnknownKey {
    /// The warning line, without the file (the caller names it): "line 12: unknown key …".
    pub fn warning(&self) -> String {
        let at = self.line.map(|l| format!("line {l}: ")).unwrap_or_default();
        format!("{at}{}", self.message())
    }

    fn message(&self) -> String {
        let hint = match &self.suggestion {
            Some(s) => format!("did you mean `{s}`?"),
            None => "check its spelling".to_string(),
        };
        format!(
            "unknown key `{}` is ignored: {hint} (every key: `warden init --example`, or docs/configuration.md)",
            self.key
        )
    }

    /// The error under `--strict-config`.
    pub fn error(&self, path: &Path) -> Error {
        let message = format!(
            "{} (an error under --strict-config / strictConfig = true)",
            self.message().replace(" is ignored", "")
        );
        match self.line {
            Some(line) => Error::Config {
                path: path.to_path_buf(),
                line,
                column: self.column.unwrap_or(1),
                message,
            },
            None => Error::ConfigFile {
                path: path.to_path_buf(),
                message,
            },
        }
    }
}

/// A config warning as people read it: `FILE:LINE: …` for a placed one ("line N: …"),
/// `FILE: …` for the rest.
pub fn shown_warning(path: Option<&Path>, warning: &str) -> String {
    let Some(path) = path else {
        return warning.to_string();
    };
    let placed = warning.strip_prefix("line ").and_then(|rest| {
        let (n, rest) = rest.split_once(": ")?;
        n.parse::<usize>().ok().map(|n| (n, rest))
    });
    match placed {
        Some((n, rest)) => format!("{}:{n}: {rest}", path.display()),
        None => format!("{}: {warning}", path.display()),
    }
}

/// Places and suggestions for each ignored key path, as serde_ignored reported it
/// (`skills.0.failOnn`, with `?` for options).
pub(super) fn locate(src: &str, raw_path: &str, key: &str) -> UnknownKey {
    let at = toml::de::DeTable::parse(src)
        .ok()
        .and_then(|doc| span_of(doc.get_ref(), raw_path));
    let (line, column) = match at {
        Some(offset) => {
            let (l, c) = line_col(src, offset);
            (Some(l), Some(c))
        }
        None => (None, None),
    };
    UnknownKey {
        key: key.to_string(),
        line,
        column,
        suggestion: suggest(key),
    }
}

/// The byte offset of the key at `raw_path` in the parsed document.
fn span_of(doc: &toml::de::DeTable<'_>, raw_path: &str) -> Option<usize> {
    let segs: Vec<&str> = raw_path.split('.').filter(|s| *s != "?").collect();
    let (last, parents) = segs.split_last()?;
    let mut table = doc;
    let mut i = 0;
    while i < parents.len() {
        let value = table.get(parents[i])?.get_ref();
        i += 1;
        let value = match value {
            toml::de::DeValue::Array(items) => {
                let index: usize = parents.get(i)?.parse().ok()?;
                i += 1;
                items.get(index)?.get_ref()
            }
            other => other,
        };
        match value {
            toml::de::DeValue::Table(t) => table = t,
            _ => return None,
        }
    }
    table
        .iter()
        .find(|(k, _)| k.get_ref() == last)
        .map(|(k, _)| k.span().start)
}

/// The documented keys: `(table, key)` for every `key =` line of the example, commented or
/// not, under the `[table]`/`[[table]]` header before it.
fn documented() -> Vec<(String, String)> {
    let mut table = String::new();
    let mut out = Vec::new();
    for line in super::EXAMPLE.lines() {
        let line = line.trim_start_matches(|c: char| c == '#' || c.is_whitespace());
        if let Some(head) = line.strip_prefix('[') {
            let name = head.trim_start_matches('[');
            if let Some(end) = name.find(']') {
                table = name[..end].trim().to_string();
            }
            continue;
        }
        let Some((key, _)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            out.push((table.clone(), key.to_string()));
        }
    }
    out
}

/// The documented key `key` was probably meant to be: in its own table the closest name
/// (case aside, or within a third of its length in edits); else the same name in
/// another table.
fn suggest(key: &str) -> Option<String> {
    let (table, name) = match key.rsplit_once('.') {
        Some((t, n)) => (t, n),
        None => ("", key),
    };
    let known = documented();
    let lower = name.to_ascii_lowercase();
    let best = known
        .iter()
        .filter(|(t, _)| t == table)
        .map(|(_, k)| {
            (
                strsim::damerau_levenshtein(&lower, &k.to_ascii_lowercase()),
                k,
            )
        })
        .filter(|(d, k)| *d <= (k.len() / 3).max(1))
        .min_by_key(|(d, _)| *d);
    if let Some((_, k)) = best {
        return Some(k.clone());
    }
    known
        .iter()
        .find(|(t, k)| k == name && t != table)
        .map(|(t, k)| match t.as_str() {
            "" => format!("{k} (at the top, before any table)"),
            t => format!("[{t}] {k}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_key_is_found_and_named() {
        let src = "version = 1\n\n[defaults]\nfailOnn = \"high\"\n";
        let k = locate(src, "defaults.failOnn", "defaults.failOnn");
        assert_eq!((k.line, k.column), (Some(4), Some(1)));
        assert_eq!(k.suggestion.as_deref(), Some("failOn"));
        assert!(
            k.warning()
                .starts_with("line 4: unknown key `defaults.failOnn`")
        );
    }

    #[test]
    fn keys_in_arrays_of_tables_are_found() {
        let src = "[[skills]]\nname = \"a\"\n\n[[skills]]\nname = \"b\"\nfailon = \"low\"\n";
        let k = locate(src, "skills.1.failon", "skills.failon");
        assert_eq!(k.line, Some(6));
        assert_eq!(k.suggestion.as_deref(), Some("failOn"));
    }

    #[test]
    fn a_key_in_the_wrong_table_names_its_table() {
        let k = locate(
            "[execution]\nfailOn = \"x\"\n",
            "execution.failOn",
            "execution.failOn",
        );
        assert_eq!(k.suggestion.as_deref(), Some("[defaults] failOn"));
        let k = locate(
            "[execution]\nzzqqxx = 1\n",
            "execution.zzqqxx",
            "execution.zzqqxx",
        );
        assert_eq!(k.suggestion, None);
    }
}
