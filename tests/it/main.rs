//! warden's integration tests: one binary, so linking stays cheap.

mod support;

mod chunking;
mod engine_policy;
mod config;
mod errors;
mod invariant;
mod provider;
mod scan_policy;
mod selection;
mod skills;
