//! `warden eval`: review quality measured (docs/design.md §14, "Measured quality"). A corpus
//! of cases — changes with the problems a good review of each reports — is reviewed case
//! by case through the normal pipeline, each review's findings are matched to the case's
//! references, and the report gives precision, recall, F1, noise on clean cases, and cost
//! and time per case and per true finding, overall, per run and per skill × route. What
//! was not reviewed is listed and its references kept apart from the model's misses.
//!
//! Corpora: AACR-Bench-shaped JSONL over local clones (`jsonl.rs`), warden's case
//! folders (`folders.rs`), the repository's own fix commits reversed (`history.rs`).
//! Running: `run.rs`; matching: `matching.rs` and `score.rs`; figures: `metrics.rs`,
//! `aggregate.rs`; the judge: `judge.rs`; outputs: `report.rs`, `render.rs`,
//! `baseline.rs` (the data in `comparison.rs`), `progress.rs`.

mod aggregate;
pub mod baseline;
pub mod case;
pub mod comparison;
pub mod folders;
pub mod history;
mod hunks;
pub mod jsonl;
mod judge;
pub mod matching;
pub mod metrics;
pub mod outcome;
pub mod progress;
pub mod render;
pub mod report;
pub mod run;
pub mod score;

pub use case::{Case, Corpus, Reference, Shape};
pub use report::EvalReport;
pub use run::{Options, Setup, run, setup};

use crate::error::{Error, Result};
use std::path::Path;

/// The corpus at `path`: a JSONL file (its `repo`s cloned under `repos`, by default the
/// file's folder), or a case folder or a folder of them (patch cases run in `run_dir`).
pub fn load(path: &Path, repos: Option<&Path>, run_dir: &Path) -> Result<Corpus> {
    if path.is_dir() {
        return folders::load(path, run_dir);
    }
    if !path.is_file() {
        return Err(Error::Usage(format!(
            "{}: no such corpus: give a JSONL file, a case folder or a folder of case folders",
            path.display()
        )));
    }
    let default = path.parent().unwrap_or(Path::new("."));
    jsonl::load(path, repos.unwrap_or(default))
}
