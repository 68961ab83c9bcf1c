//! Gitignore-style path rules on top of globset: last match wins, `!` re-includes,
//! a pattern without `/` matches at any depth, a trailing `/` matches a directory's
//! contents, a leading `/` anchors at the repository root.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// A compiled list of gitignore-style patterns (used for ignores and for skill `paths`).
#[derive(Debug, Clone)]
pub struct PathRules {
    set: GlobSet,
    /// For each glob in `set`: the index of the pattern it came from.
    owner: Vec<usize>,
    patterns: Vec<Pattern>,
}

#[derive(Debug, Clone)]
struct Pattern {
    text: String,
    negated: bool,
}

/// The verdict for one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// No pattern matched.
    None,
    /// The last matching pattern is a plain pattern (for ignores: the path is ignored).
    Matched(&'a str),
    /// The last matching pattern is a `!` pattern (for ignores: re-included).
    Negated(&'a str),
}

impl PathRules {
    /// Rules that match nothing.
    pub fn empty() -> Self {
        PathRules {
            set: GlobSet::empty(),
            owner: Vec::new(),
            patterns: Vec::new(),
        }
    }

    /// Compiles `patterns`; an invalid glob is reported with its index and globset's reason.
    pub fn new<S: AsRef<str>>(patterns: &[S]) -> Result<Self, (usize, String)> {
        let mut builder = GlobSetBuilder::new();
        let mut owner = Vec::new();
        let mut compiled = Vec::new();
        for (i, raw) in patterns.iter().enumerate() {
            let raw = raw.as_ref().trim();
            if raw.is_empty() || raw.starts_with('#') {
                continue;
            }
            let (negated, body) = match raw.strip_prefix('!') {
                Some(rest) => (true, rest),
                None => (false, raw),
            };
            for glob in expand(body) {
                let g = glob_for(&glob).map_err(|e| (i, e.to_string()))?;
                builder.add(g);
                owner.push(compiled.len());
            }
            compiled.push(Pattern {
                text: raw.to_string(),
                negated,
            });
        }
        let set = builder.build().map_err(|e| (0, e.to_string()))?;
        Ok(PathRules {
            set,
            owner,
            patterns: compiled,
        })
    }

    /// Whether there are no patterns.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The verdict of the last pattern that matches `path` (`/`-separated, relative).
    pub fn verdict(&self, path: &std::path::Path) -> Verdict<'_> {
        let last = self
            .set
            .matches(path)
            .into_iter()
            .map(|g| self.owner[g])
            .max();
        match last {
            None => Verdict::None,
            Some(p) => {
                let pat = &self.patterns[p];
                if pat.negated {
                    Verdict::Negated(&pat.text)
                } else {
                    Verdict::Matched(&pat.text)
                }
            }
        }
    }
}

/// Builds a glob with `*` not crossing `/` (gitignore semantics).
pub(crate) fn glob_for(pattern: &str) -> Result<Glob, globset::ErrorKind> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| e.kind().clone())
}

/// One gitignore pattern as the globs that implement it.
fn expand(body: &str) -> Vec<String> {
    let dir_only = body.ends_with('/');
    let body = body.trim_end_matches('/');
    let anchored = body.starts_with('/') || body.trim_start_matches('/').contains('/');
    let body = body.trim_start_matches('/');
    let base = if anchored || body.starts_with("**") {
        body.to_string()
    } else {
        format!("**/{body}")
    };
    if dir_only {
        vec![format!("{base}/**")]
    } else {
        vec![base.clone(), format!("{base}/**")]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn ignored(rules: &PathRules, p: &str) -> bool {
        matches!(rules.verdict(Path::new(p)), Verdict::Matched(_))
    }

    #[test]
    fn gitignore_semantics() {
        let r = PathRules::new(&["*.log", "/build", "docs/", "!keep.log", "src/gen/**"]).unwrap();
        assert!(ignored(&r, "a.log"));
        assert!(ignored(&r, "deep/x/a.log"));
        assert!(!ignored(&r, "deep/keep.log"));
        assert!(ignored(&r, "build/out.o"));
        assert!(!ignored(&r, "src/build/out.o"));
        assert!(ignored(&r, "x/docs/readme.md"));
        assert!(ignored(&r, "src/gen/a/b.rs"));
        assert!(!ignored(&r, "src/main.rs"));
    }

    #[test]
    fn invalid_glob_names_the_pattern_index() {
        let err = PathRules::new(&["ok", "src/[a"]).unwrap_err();
        assert_eq!(err.0, 1);
    }
}
