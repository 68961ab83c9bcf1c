//! What the in-process engine benches share: one review through the engine on a runtime
//! of two workers (the machine's cores), timed from the outside.

use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use warden::engine::{Engine, EngineReport, UnitStatus, UnitWork};

/// Runs `units` through `engine`: its report, the wall time, and the units reviewed.
pub fn review(engine: &Engine, units: Vec<UnitWork>) -> (EngineReport, Duration, usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let t0 = Instant::now();
    let report = rt.block_on(engine.run(units, CancellationToken::new()));
    let wall = t0.elapsed();
    let reviewed = report
        .units
        .iter()
        .filter(|u| u.status == UnitStatus::Reviewed)
        .count();
    (report, wall, reviewed)
}
