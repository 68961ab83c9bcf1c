//! Files cut by limits (`maxFiles`, `maxChangedLines`, `maxFileBytes`, `maxFileLines`):
//! padding a pull request must not push a file out of review silently, so every format a
//! person reads counts them and names them, one line per limit (docs/design.md §13).

use super::Report;
use crate::config::ScanLimits;
use crate::scan::Skipped;
use serde::{Deserialize, Serialize};

/// The files one limit cut.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Cut {
    /// The skipped files' reason (`limit:maxFiles`, `too-large:bytes`, …).
    pub reason: String,
    /// The setting, as `[defaults.scan]` names it (`maxFiles`).
    pub limit: String,
    /// Its value in this run.
    pub value: u64,
    /// How many changed files it cut.
    pub files: usize,
}

impl Cut {
    /// "50 changed files not reviewed: limit maxFiles = 10".
    pub fn message(&self) -> String {
        format!(
            "{} changed file{} not reviewed: limit {} = {}",
            self.files,
            if self.files == 1 { "" } else { "s" },
            self.limit,
            self.value
        )
    }
}

/// The cuts of a plan's skipped files, one per limit that cut any, in a fixed order.
pub(crate) fn cuts(skipped: &[Skipped], limits: &ScanLimits) -> Vec<Cut> {
    [
        ("limit:maxFiles", "maxFiles", limits.max_files as u64),
        (
            "limit:maxChangedLines",
            "maxChangedLines",
            limits.max_changed_lines as u64,
        ),
        ("too-large:bytes", "maxFileBytes", limits.max_file_bytes),
        (
            "too-large:lines",
            "maxFileLines",
            limits.max_file_lines as u64,
        ),
    ]
    .into_iter()
    .filter_map(|(reason, limit, value)| {
        let files = skipped.iter().filter(|s| s.reason == reason).count();
        (files > 0).then(|| Cut {
            reason: reason.to_string(),
            limit: limit.to_string(),
            value,
            files,
        })
    })
    .collect()
}

impl Report {
    /// The paths `cut` names, in the plan's order.
    pub fn cut_paths<'a>(&'a self, cut: &'a Cut) -> impl Iterator<Item = String> + 'a {
        self.skipped_files
            .iter()
            .filter(move |s| s.reason == cut.reason)
            .map(|s| s.path.to_string())
    }

    /// The cuts' messages joined for a verdict line ("50 changed files not reviewed: limit
    /// maxFiles = 10; 2 changed files …"); None without cuts.
    pub fn cuts_line(&self) -> Option<String> {
        (!self.cuts.is_empty()).then(|| {
            self.cuts
                .iter()
                .map(Cut::message)
                .collect::<Vec<_>>()
                .join("; ")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::RepoPath;

    fn skipped(path: &str, reason: &str) -> Skipped {
        Skipped {
            path: RepoPath::from(path),
            reason: reason.into(),
            detail: String::new(),
            rule: String::new(),
            added: 1,
            removed: 0,
            status: None,
            old_path: None,
            old_mode: None,
            new_mode: None,
        }
    }

    #[test]
    fn each_limit_that_cut_files_is_one_line_with_its_count_and_value() {
        let limits = ScanLimits {
            max_files: 10,
            max_changed_lines: 500,
            max_file_bytes: 1000,
            max_file_lines: 30,
        };
        let list: Vec<Skipped> = (0..50)
            .map(|i| skipped(&format!("f{i}.rs"), "limit:maxFiles"))
            .chain([
                skipped("big.rs", "too-large:bytes"),
                skipped("a.lock", "builtin:lockfile"),
            ])
            .collect();
        let c = cuts(&list, &limits);
        let msgs: Vec<String> = c.iter().map(Cut::message).collect();
        assert_eq!(
            msgs,
            [
                "50 changed files not reviewed: limit maxFiles = 10",
                "1 changed file not reviewed: limit maxFileBytes = 1000"
            ]
        );
        assert!(cuts(&list[50..51], &limits).len() == 1);
        assert!(
            cuts(&list[51..], &limits).is_empty(),
            "a lockfile is not a cut"
        );
    }
}
