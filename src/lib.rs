#![warn(missing_docs)]
//! warden: an AI code-review runner that finishes inside its budget, fails over to
//! healthy routes, and reports honestly what was and was not reviewed.
//!
//! Data flows one way: diff selection (`diff`) → scan policy (`scan`) → chunking
//! (`chunk`) → plan (`plan`) → engine → events → reports. [`prepare::prepare`] does
//! everything before the first model call, [`review::run`] the rest. The `warden` binary
//! is a thin command layer over these two. See ARCHITECTURE.md for the map.

pub mod atomic_file;
pub mod cache;
mod capped_read;
pub mod chunk;
pub mod config;
pub mod diff;
pub mod engine;
pub mod error;
pub mod eval;
pub mod findings;
pub mod findings_schema;
pub mod fleet;
#[doc(hidden)]
pub mod fuzzing;
pub mod known;
pub mod outputs;
pub mod path_rules;
pub mod plan;
pub mod prepare;
pub mod progress;
pub mod prompt;
pub mod provider;
pub mod publish;
pub mod render;
pub mod report;
pub mod review;
pub mod scan;
pub mod session;
pub mod severity;
pub mod shard;
pub mod simulate;
pub mod skills;
pub mod telemetry;
pub mod text;
pub mod tools;
pub mod trust;
pub mod verify;

pub use error::{Error, Result};
