//! warden's integration tests: one binary, so linking stays cheap.

mod support;

mod cache;
mod cache_shared;
mod chrome_trace;
mod chunking;
mod ci_config;
mod ci_formats;
mod cli;
mod config;
mod engine_http;
mod engine_policy;
mod errors;
mod fleet;
mod fleet_redis;
mod fuzz_corpus;
mod gateway;
mod hostile_provider;
mod invariant;
mod outputs;
mod patch_input;
mod patch_property;
mod plan_limits;
mod provider;
mod provider_trust;
mod report_formats;
mod review_e2e;
mod routing;
mod scan_policy;
mod selection;
mod sim_cache;
mod simulate;
mod skills;
mod telemetry;
mod trust;
mod user_session;
