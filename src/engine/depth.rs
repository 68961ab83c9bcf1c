//! The depth rule: how many tool turns the review's budget affords a unit, from the turn
//! cost observed per route. Shared by the engine and `warden simulate` (which runs the
//! engine on a paused clock).

use std::time::Duration;
use tokio::time::Instant;

/// The depth rule (§14 with §4.9): tool turns are optional work. A unit may take another
/// tool turn only when its share of the slot time left (slot time ÷ units not finished)
/// covers that turn and the final one at what a turn costs on the route that would take
/// it; units that finish early leave their share to the rest. A turn on a route costs the
/// slot time of every attempt the route served so far (failed, timed out and bounced ones
/// too: they held a permit) over the turns it answered; before it answered any, the request
/// deadline (depth comes from observed latency: a guess below it let the first units of a
/// slow route take tool turns they could not afford). Priced per route and never below the
/// average over every route: on the average alone, under spillover a healthy fallback's
/// fast turns made the slow primary's turns look cheap; on the route's figure alone, under
/// `ordered` units took tool turns on the fallback's permits that the primary's overflow
/// needed (docs/tool-loops.md has the figures).
/// So when the budget cannot cover every unit once, tool turns go first, down to
/// single-shot reviews.
#[derive(Debug)]
pub(super) struct Depth {
    /// Permits of every route: slots per second of budget.
    slots: u32,
    review_deadline: Instant,
    /// The request deadline: a turn's cost before any was answered.
    request_timeout: Duration,
    units_open: std::sync::atomic::AtomicUsize,
    /// Per route (by index): milliseconds its attempts held a slot, and its turns answered.
    observed: std::sync::Mutex<Vec<(u64, u64)>>,
}

impl Depth {
    pub(super) fn new(
        slots: usize,
        units: usize,
        review_deadline: Instant,
        request_timeout: Duration,
    ) -> Self {
        Depth {
            slots: slots.max(1) as u32,
            review_deadline,
            request_timeout,
            units_open: units.into(),
            observed: Default::default(),
        }
    }

    /// A unit ended (its share goes to the others).
    pub(super) fn unit_finished(&self) {
        let _ = self.units_open.fetch_update(
            std::sync::atomic::Ordering::SeqCst,
            std::sync::atomic::Ordering::SeqCst,
            |n| Some(n.saturating_sub(1)),
        );
    }

    /// An attempt held a slot of `route` for `d`; `answered`: it was an answered turn.
    pub(super) fn observe(&self, route: usize, d: Duration, answered: bool) {
        let mut o = self.observed.lock().expect("depth lock");
        if o.len() <= route {
            o.resize(route + 1, (0, 0));
        }
        o[route].0 += d.as_millis() as u64;
        o[route].1 += u64::from(answered);
    }

    /// What an answered turn on `route` costs in slot time, so far: the route's own
    /// figure, never below the average over every route.
    fn turn_cost(&self, route: usize) -> Duration {
        let observed = self.observed.lock().expect("depth lock");
        let own = observed.get(route).copied().unwrap_or_default();
        let all = observed
            .iter()
            .fold((0, 0), |(s, n), (ds, dn)| (s + ds, n + dn));
        drop(observed);
        self.cost_of(own).max(self.cost_of(all))
    }

    /// Slot time over turns answered; the request deadline before any was answered.
    fn cost_of(&self, (spent_ms, answered): (u64, u64)) -> Duration {
        let spent = Duration::from_millis(spent_ms);
        if answered == 0 {
            // Nothing observed yet: a turn may take its whole request deadline.
            return self.request_timeout.max(spent);
        }
        spent / answered.min(u64::from(u32::MAX)) as u32
    }

    /// Whether a unit's share of what is left covers two more turns (a tool turn and the
    /// final one) at what a turn costs on `route`.
    pub(super) fn affords_tool_turn(&self, route: usize) -> bool {
        let turn = self.turn_cost(route);
        let left = self
            .review_deadline
            .saturating_duration_since(Instant::now());
        let open = self
            .units_open
            .load(std::sync::atomic::Ordering::SeqCst)
            .max(1) as u32;
        let share = left.saturating_mul(self.slots) / open;
        share >= turn.saturating_mul(2)
    }
}

#[cfg(test)]
mod tests {
    use super::Depth;
    use std::time::Duration;
    use tokio::time::Instant;

    const S: fn(u64) -> Duration = Duration::from_secs;

    /// The headline at 60x: 8 permits, 60 units, 15 s, a 2 s request deadline.
    #[tokio::test(start_paused = true)]
    async fn depth_comes_from_observed_turns_and_the_budget_left() {
        let d = Depth::new(8, 60, Instant::now() + S(15), S(2));
        // Nothing observed: a turn may take the whole deadline; 2 s a unit covers no
        // tool turn and its final one (4 s).
        assert!(!d.affords_tool_turn(0));
        // Fast turns observed (300 ms): 2 s a unit covers two.
        for _ in 0..10 {
            d.observe(0, Duration::from_millis(300), true);
        }
        assert!(d.affords_tool_turn(0));
        // Slow and failed attempts count their slot time too: 1.5 s a turn.
        for _ in 0..10 {
            d.observe(0, Duration::from_millis(2700), true);
        }
        assert!(!d.affords_tool_turn(0));
        // Units that end leave their share; and the share shrinks as time passes.
        for _ in 0..55 {
            d.unit_finished();
        }
        assert!(d.affords_tool_turn(0), "5 units share 24 s");
        tokio::time::advance(S(14)).await;
        assert!(!d.affords_tool_turn(0), "1 s left: 1.6 s a unit");
    }

    /// Spillover at 60x: a slow primary (route 0) and a fast fallback (route 1). The
    /// fallback's fast turns do not make the primary's turns cheap, and no route's turn is
    /// priced below the average (a tool turn on the fallback takes a permit that the
    /// primary's overflow needs).
    #[tokio::test(start_paused = true)]
    async fn each_route_prices_its_own_turns_never_below_the_average() {
        let d = Depth::new(8, 60, Instant::now() + S(15), S(2));
        for _ in 0..30 {
            d.observe(1, Duration::from_millis(300), true);
        }
        for _ in 0..10 {
            d.observe(0, Duration::from_millis(1800), true);
        }
        // 2 s a unit. Averaged, a turn costs 675 ms: two fit. The primary's own 1.8 s
        // turns do not.
        assert!(d.affords_tool_turn(1));
        assert!(!d.affords_tool_turn(0));
        // A route with nothing observed prices a turn at the request deadline.
        assert!(!d.affords_tool_turn(2));
        // 8 s left: 1.07 s a unit. Two of the fallback's own 300 ms turns would fit, two
        // at the average do not.
        tokio::time::advance(S(7)).await;
        assert!(!d.affords_tool_turn(1));
    }
}
