//! warden: an AI code-review runner that finishes inside its budget, fails over to
//! healthy routes, and reports honestly what was and was not reviewed.
//!
//! Data flows one way: diff selection (`diff`) → scan policy (`scan`) → chunking
//! (`chunk`) → plan (`plan`) → engine → reports. See DESIGN.md for the vocabulary.

pub mod app;
pub mod chunk;
pub mod cli;
pub mod config;
pub mod diff;
pub mod engine;
pub mod error;
pub mod findings;
mod init;
pub mod plan;
pub mod prompt;
pub mod provider;
pub mod report;
mod review;
pub mod scan;
pub mod severity;
pub mod skills;
pub mod telemetry;
pub mod verify;

pub use error::{Error, Result};

pub(crate) use review::review_cmd;
