//! What to review, as the user asked for it on the command line.

use crate::error::{Error, Result};
use std::path::PathBuf;

/// The diff to select. Resolution against a repository happens in [`super::git`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Dirty tree: staged + unstaged + untracked vs HEAD. Clean tree: the current branch
    /// vs its merge-base with the default branch.
    Default,
    /// The index vs HEAD (`--staged`).
    Staged,
    /// `REF` alone: the working tree (with the index) vs REF, as `git diff REF`.
    Ref(String),
    /// `A..B`, `A...B` (`symmetric`: from the merge-base), or `--base A [--head B]`.
    Range {
        /// The old side.
        base: String,
        /// The new side.
        head: String,
        /// `A...B`: from the merge-base of the two.
        symmetric: bool,
    },
    /// `--diff FILE|-`: unified diff text, no repository needed.
    Patch(PatchSource),
}

/// Where `--diff` reads its patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchSource {
    /// `--diff -`.
    Stdin,
    /// `--diff FILE` (relative to the directory warden runs in).
    File(PathBuf),
    /// `--demo`: the demo change built into the binary (`fixtures/demo.diff`), so the
    /// first command works from a release archive, which has no fixtures.
    Demo,
}

/// The demo change `--demo` reviews.
pub const DEMO_DIFF: &[u8] = include_bytes!("../../fixtures/demo.diff");

impl Target {
    /// Combines the selection flags into one target, rejecting combinations that
    /// cannot mean anything.
    pub fn from_args(
        positional: Option<&str>,
        base: Option<&str>,
        head: Option<&str>,
        staged: bool,
        diff: Option<&str>,
        demo: bool,
    ) -> Result<Target> {
        let given: Vec<&str> = [
            positional.map(|_| "a target"),
            base.map(|_| "--base"),
            staged.then_some("--staged"),
            diff.map(|_| "--diff"),
            demo.then_some("--demo"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if given.len() > 1 {
            return Err(Error::Usage(format!(
                "{} and {} select different diffs: give only one of a target (A..B, A...B, REF), --base, --staged, --diff or --demo",
                given[0], given[1]
            )));
        }
        if head.is_some() && base.is_none() {
            return Err(Error::Usage(
                "--head needs --base: pass --base REF --head REF (or the range BASE..HEAD)".into(),
            ));
        }
        if demo {
            return Ok(Target::Patch(PatchSource::Demo));
        }
        if let Some(d) = diff {
            return Ok(Target::Patch(if d == "-" {
                PatchSource::Stdin
            } else {
                PatchSource::File(PathBuf::from(d))
            }));
        }
        if staged {
            return Ok(Target::Staged);
        }
        if let Some(b) = base {
            return Ok(Target::Range {
                base: b.to_string(),
                head: head.unwrap_or("HEAD").to_string(),
                symmetric: false,
            });
        }
        match positional {
            None => Ok(Target::Default),
            Some(spec) => Ok(parse_range(spec)),
        }
    }
}

fn parse_range(spec: &str) -> Target {
    let or_head = |s: &str| {
        if s.is_empty() {
            "HEAD".to_string()
        } else {
            s.to_string()
        }
    };
    if let Some((a, b)) = spec.split_once("...") {
        return Target::Range {
            base: or_head(a),
            head: or_head(b),
            symmetric: true,
        };
    }
    if let Some((a, b)) = spec.split_once("..") {
        return Target::Range {
            base: or_head(a),
            head: or_head(b),
            symmetric: false,
        };
    }
    Target::Ref(spec.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_git_spelling() {
        let t = |s| Target::from_args(Some(s), None, None, false, None, false).unwrap();
        assert_eq!(
            t("main...topic"),
            Target::Range {
                base: "main".into(),
                head: "topic".into(),
                symmetric: true
            }
        );
        assert_eq!(
            t("v1.."),
            Target::Range {
                base: "v1".into(),
                head: "HEAD".into(),
                symmetric: false
            }
        );
        assert_eq!(t("HEAD~2"), Target::Ref("HEAD~2".into()));
    }

    #[test]
    fn conflicting_selections_are_usage_errors() {
        let err = Target::from_args(Some("a..b"), None, None, true, None, false).unwrap_err();
        assert!(err.to_string().contains("--staged"));
        let err = Target::from_args(None, None, Some("x"), false, None, false).unwrap_err();
        assert!(err.to_string().contains("--head needs --base"));
    }
}
