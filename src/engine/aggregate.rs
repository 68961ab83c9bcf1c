//! The engine's own consumer of its event stream: it collects every `UnitFinished` of a
//! pass, so the pass's report is assembled from events like every other view of the run
//! (a unit answered without a request, e.g. from a cache, reports the same way).

use super::events::{Event, Sink};
use super::outcome::UnitResult;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Unit results of one pass, by unit index.
#[derive(Default)]
pub(crate) struct Aggregator {
    results: Mutex<BTreeMap<usize, Arc<UnitResult>>>,
}

impl Aggregator {
    /// A sink that feeds this aggregator.
    pub(crate) fn sink(self: &Arc<Self>) -> Sink {
        let me = self.clone();
        Sink::new(move |s| {
            if let Event::UnitFinished { unit, result } = &s.event {
                me.results
                    .lock()
                    .expect("aggregator lock")
                    .insert(*unit, result.clone());
            }
        })
    }

    /// The results of `order` (unit indices), in that order. A unit that never finished
    /// cannot happen (every unit ends with a status); it would be a bug, so it panics.
    pub(crate) fn finish(&self, order: &[usize]) -> Vec<UnitResult> {
        let mut results = self.results.lock().expect("aggregator lock");
        order
            .iter()
            .map(|i| {
                let r = results
                    .remove(i)
                    .expect("every unit finishes with a status");
                Arc::try_unwrap(r).unwrap_or_else(|shared| (*shared).clone())
            })
            .collect()
    }
}
