//! Which diff to review, and where the repository and config are: the flags every
//! command that prepares a review shares, and the library's `Selection` built from them.

use clap::Args;
use std::path::PathBuf;
use warden::config::Overrides;
use warden::diff::Target;
use warden::prepare;

/// Which diff to review, and where the repository and config are.
#[derive(Debug, Clone, Args, Default)]
pub(crate) struct Selection {
    /// A..B, A...B (from the merge-base) or REF (working tree vs REF). Default: on a branch,
    /// the branch vs its merge-base with the default branch, uncommitted changes included;
    /// on the default branch, the uncommitted changes.
    #[arg(value_name = "TARGET")]
    pub(crate) target: Option<String>,
    /// Compare from this ref (with --head, default HEAD).
    #[arg(long, value_name = "REF")]
    pub(crate) base: Option<String>,
    /// Compare up to this ref (needs --base).
    #[arg(long, value_name = "REF")]
    pub(crate) head: Option<String>,
    /// Review only the staged changes (index vs HEAD).
    #[arg(long)]
    pub(crate) staged: bool,
    /// Review a unified diff from FILE, or from stdin with `-` (no repository needed).
    #[arg(long, value_name = "FILE|-")]
    pub(crate) diff: Option<String>,
    /// Review the demo change built into warden (try `warden review --sim --demo`).
    #[arg(long)]
    pub(crate) demo: bool,
    /// Strip N leading components from the patch's paths, as `git apply -p N` (default
    /// 1: the `a/` and `b/` of git's patches; 0 for `git diff --no-prefix`).
    #[arg(short = 'p', long = "strip", value_name = "N", value_parser = clap::value_parser!(u16).range(0..=64))]
    pub(crate) strip: Option<u16>,
    /// Run as if started in DIR.
    #[arg(short = 'C', value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// Config file (default: warden.toml at the repository root).
    #[arg(short = 'c', long = "config", value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Run only this skill (repeatable).
    #[arg(long = "skill", value_name = "NAME")]
    pub(crate) skills: Vec<String>,
    /// Read warden.toml and skills from the working tree even in CI or for a commit range,
    /// where they are otherwise read from the base of the change. The change under review
    /// then decides its own routes, keys' destinations and review instructions.
    #[arg(long)]
    pub(crate) trust_head_config: bool,
    /// Refuse the config when it has a key warden does not know (a typo), naming its file
    /// and line, instead of warning; `strictConfig = true` in warden.toml asks the same.
    #[arg(long)]
    pub(crate) strict_config: bool,
}

impl Selection {
    /// The `warden plan` command that shows this selection's plan, as people type it.
    pub(crate) fn plan_command(&self) -> String {
        let mut words = vec!["warden".to_string(), "plan".to_string()];
        let mut push = |flag: &str, value: Option<String>| {
            words.push(flag.to_string());
            words.extend(value);
        };
        if let Some(d) = &self.dir {
            push("-C", Some(d.display().to_string()));
        }
        if let Some(c) = &self.config {
            push("-c", Some(c.display().to_string()));
        }
        if let Some(b) = &self.base {
            push("--base", Some(b.clone()));
        }
        if let Some(h) = &self.head {
            push("--head", Some(h.clone()));
        }
        if self.staged {
            push("--staged", None);
        }
        if let Some(d) = &self.diff {
            push("--diff", Some(d.clone()));
        }
        if let Some(p) = self.strip {
            push("-p", Some(p.to_string()));
        }
        if self.demo {
            push("--demo", None);
        }
        for s in &self.skills {
            push("--skill", Some(s.clone()));
        }
        words.extend(self.target.clone());
        words
            .into_iter()
            .map(|w| {
                if w.is_empty() || w.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c))
                {
                    format!("'{}'", w.replace('\'', "'\\''"))
                } else {
                    w
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The selection as the library takes it: flags combined into one target.
    pub(crate) fn resolve(&self) -> warden::Result<prepare::Selection> {
        let ci = warden::trust::ci_from_env();
        Ok(prepare::Selection {
            target: Target::from_args(
                self.target.as_deref(),
                self.base.as_deref(),
                self.head.as_deref(),
                self.staged,
                self.diff.as_deref(),
                self.demo,
            )?,
            strip: match (self.strip, self.diff.is_some()) {
                (Some(_), false) => {
                    return Err(warden::Error::Usage(
                        "-p/--strip applies to a patch: use it with --diff FILE|-".into(),
                    ));
                }
                (strip, _) => strip.map(usize::from),
            },
            dir: prepare::start_dir(self.dir.as_deref())?,
            config: self.config.clone(),
            skills: self.skills.clone(),
            ci,
            event: if ci {
                prepare::run_event_from_env()
            } else {
                None
            },
            trust_head_config: self.trust_head_config,
            strict_config: self.strict_config,
            overrides: Overrides::default(),
        })
    }
}
