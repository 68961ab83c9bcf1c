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
///
/// The unit's own risk is the second half of the rule: a tool turn must not cost the final
/// turn its retry. A retry needs half the hunk budget left (docs/design.md §4 rule 5), so
/// a tool turn that takes what the final turn's retry would need turns one failure into a
/// lost unit where a single-shot review would have tried again: under a slow-tail primary
/// most of a loop's lost units were exactly that (a tool turn, then a final turn timed out
/// with no retry left). So a tool turn is taken only while failures are rare (at most 1
/// attempt in 50 besides the first failure), or when the hunk budget left holds the
/// tool turn and the final turn at their deadlines with half the budget still to spare.
/// A mean answer time in place of the deadline was not enough: fast answers come first,
/// and loops still lost units to tool turns that took longer than the mean. For the same
/// reason attempts still running count the slot time they hold in a turn's price.
#[derive(Debug)]
pub(super) struct Depth {
    /// Permits of every route: slots per second of budget.
    slots: u32,
    review_deadline: Instant,
    /// The request deadline: a turn's cost before any was answered.
    request_timeout: Duration,
    /// The unit's hunk budget (its final turn's retry needs half of it).
    hunk_budget: Duration,
    units_open: std::sync::atomic::AtomicUsize,
    /// Per route (by index): what its attempts took.
    observed: std::sync::Mutex<Vec<Observed>>,
    /// Attempts in flight: an id, the route and when each started.
    in_flight: std::sync::Mutex<(u64, Vec<Running>)>,
}

/// An attempt in flight: its id, its route and when it started.
type Running = (u64, usize, Instant);

/// What one route's attempts took so far.
#[derive(Debug, Default, Clone, Copy)]
struct Observed {
    /// Milliseconds its attempts held a slot, answered or not.
    slot_ms: u64,
    /// Turns it answered.
    answered: u64,
    /// Attempts that ended without an answer.
    failed: u64,
}

/// An attempt in flight, counted until it ends (or is dropped with its unit).
pub(super) struct InFlight<'a> {
    depth: &'a Depth,
    id: u64,
}

impl InFlight<'_> {
    /// The attempt held a slot of `route` for `d`; `answered`: it was an answered turn.
    /// `backpressure`: the provider said "slow down" (docs/design.md §13): a reason to
    /// wait, not a failure, so it counts only the slot time it held.
    pub(super) fn ended(self, route: usize, d: Duration, answered: bool, backpressure: bool) {
        if backpressure && !answered {
            self.depth.held(route, d);
        } else {
            self.depth.observe(route, d, answered);
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut f = self.depth.in_flight.lock().expect("depth lock");
        f.1.retain(|(id, _, _)| *id != self.id);
    }
}

/// Failures at most this share of attempts (1 in 50) are rare: losing a final turn's
/// retry to a tool turn then costs under 2 % of the loops' units. The first failure is
/// forgiven: one timeout in a handful of attempts says little of a rate (a healthy
/// route's 1 in 200 shed the loops of a generous review), the second says more.
const RARE_SHARE: (u64, u64) = (1, 50);

impl Depth {
    pub(super) fn new(
        slots: usize,
        units: usize,
        review_deadline: Instant,
        (request_timeout, hunk_budget): (Duration, Duration),
    ) -> Self {
        Depth {
            slots: slots.max(1) as u32,
            review_deadline,
            request_timeout,
            hunk_budget,
            units_open: units.into(),
            observed: Default::default(),
            in_flight: Default::default(),
        }
    }

    /// An attempt on `route` starts now: the slot time it holds counts in the price of
    /// a turn while it runs (ended attempts alone are the fast ones: early in a review,
    /// the slow route's first attempts are still running when the fast route's answers
    /// arrive).
    pub(super) fn started(&self, route: usize) -> InFlight<'_> {
        let mut f = self.in_flight.lock().expect("depth lock");
        f.0 += 1;
        let id = f.0;
        f.1.push((id, route, Instant::now()));
        InFlight { depth: self, id }
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
        self.with_route(route, |r| {
            r.slot_ms += d.as_millis() as u64;
            if answered {
                r.answered += 1;
            } else {
                r.failed += 1;
            }
        });
    }

    /// An attempt bounced with back-pressure held a slot of `route` for `d`: slot time,
    /// neither an answer nor a failure.
    fn held(&self, route: usize, d: Duration) {
        self.with_route(route, |r| r.slot_ms += d.as_millis() as u64);
    }

    fn with_route(&self, route: usize, f: impl FnOnce(&mut Observed)) {
        let mut o = self.observed.lock().expect("depth lock");
        if o.len() <= route {
            o.resize(route + 1, Observed::default());
        }
        f(&mut o[route]);
    }

    /// What an answered turn on `route` costs in slot time, so far: the route's own
    /// figure, never below the average over every route. Attempts still running count
    /// the slot time they have held.
    fn turn_cost(&self, route: usize) -> Duration {
        let mut held = Vec::new();
        {
            let f = self.in_flight.lock().expect("depth lock");
            for (_, r, at) in &f.1 {
                if held.len() <= *r {
                    held.resize(*r + 1, 0);
                }
                held[*r] += at.elapsed().as_millis() as u64;
            }
        }
        let observed = self.observed.lock().expect("depth lock");
        let own = observed.get(route).copied().unwrap_or_default();
        let own_held = held.get(route).copied().unwrap_or(0);
        let all = observed
            .iter()
            .fold((0, 0), |(s, n), o| (s + o.slot_ms, n + o.answered));
        drop(observed);
        let all = (all.0 + held.iter().sum::<u64>(), all.1);
        self.cost_of((own.slot_ms + own_held, own.answered))
            .max(self.cost_of(all))
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

    /// Whether failures are rare: at most 1 attempt in 50 so far, the first failure
    /// forgiven (nothing ended: rare).
    fn failures_rare(&self) -> bool {
        let observed = self.observed.lock().expect("depth lock");
        let (ended, failed) = observed.iter().fold((0, 0), |(n, f), o| {
            (n + o.answered + o.failed, f + o.failed)
        });
        drop(observed);
        failed.saturating_sub(1) * RARE_SHARE.1 <= ended * RARE_SHARE.0
    }

    /// Whether a tool turn leaves the unit's final turn its retry, with `hunk_left` of
    /// the unit's hunk budget left: failures are rare, or after the tool turn and a final
    /// turn both at their deadline half the hunk budget remains.
    fn keeps_final_retry(&self, hunk_left: Duration) -> bool {
        let after_final = hunk_left.saturating_sub(self.request_timeout.saturating_mul(2));
        after_final >= self.hunk_budget / 2 || self.failures_rare()
    }

    /// Whether a tool turn on `route` is affordable: the unit's share of what is left
    /// covers two more turns (a tool turn and the final one) at what a turn costs on
    /// `route`, and the tool turn leaves the final turn its retry (`hunk_left`: what is
    /// left of the unit's hunk budget).
    pub(super) fn affords_tool_turn(&self, route: usize, hunk_left: Duration) -> bool {
        self.affords_share(route) && self.keeps_final_retry(hunk_left)
    }

    /// Whether a unit's share of what is left covers two more turns (a tool turn and the
    /// final one) at what a turn costs on `route`.
    fn affords_share(&self, route: usize) -> bool {
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
        let d = Depth::new(8, 60, Instant::now() + S(15), (S(2), S(5)));
        // Nothing observed: a turn may take the whole deadline; 2 s a unit covers no
        // tool turn and its final one (4 s).
        assert!(!d.affords_share(0));
        // Fast turns observed (300 ms): 2 s a unit covers two.
        for _ in 0..10 {
            d.observe(0, Duration::from_millis(300), true);
        }
        assert!(d.affords_share(0));
        // Slow and failed attempts count their slot time too: 1.5 s a turn.
        for _ in 0..10 {
            d.observe(0, Duration::from_millis(2700), true);
        }
        assert!(!d.affords_share(0));
        // Units that end leave their share; and the share shrinks as time passes.
        for _ in 0..55 {
            d.unit_finished();
        }
        assert!(d.affords_share(0), "5 units share 24 s");
        tokio::time::advance(S(14)).await;
        assert!(!d.affords_share(0), "1 s left: 1.6 s a unit");
    }

    /// Spillover at 60x: a slow primary (route 0) and a fast fallback (route 1). The
    /// fallback's fast turns do not make the primary's turns cheap, and no route's turn is
    /// priced below the average (a tool turn on the fallback takes a permit that the
    /// primary's overflow needs).
    #[tokio::test(start_paused = true)]
    async fn each_route_prices_its_own_turns_never_below_the_average() {
        let d = Depth::new(8, 60, Instant::now() + S(15), (S(2), S(5)));
        for _ in 0..30 {
            d.observe(1, Duration::from_millis(300), true);
        }
        for _ in 0..10 {
            d.observe(0, Duration::from_millis(1800), true);
        }
        // 2 s a unit. Averaged, a turn costs 675 ms: two fit. The primary's own 1.8 s
        // turns do not.
        assert!(d.affords_share(1));
        assert!(!d.affords_share(0));
        // A route with nothing observed prices a turn at the request deadline.
        assert!(!d.affords_share(2));
        // 8 s left: 1.07 s a unit. Two of the fallback's own 300 ms turns would fit, two
        // at the average do not.
        tokio::time::advance(S(7)).await;
        assert!(!d.affords_share(1));
    }

    /// The headline's lost units: a tool turn, then a final turn that timed out with less
    /// than half the hunk budget left, so no retry. Once failures are seen, a tool turn is
    /// taken only when the tool turn and the final one fit at their deadlines with half
    /// the budget to spare.
    #[tokio::test(start_paused = true)]
    async fn a_tool_turn_leaves_the_final_turn_its_retry_once_failures_are_seen() {
        let mut d = Depth::new(8, 4, Instant::now() + S(600), (S(2), S(5)));
        // Nothing ended yet: tool turns are open; the first timeout is forgiven.
        assert!(d.keeps_final_retry(S(5)));
        d.observe(0, S(2), false);
        assert!(d.keeps_final_retry(S(5)));
        // Two timeouts: 5 s hunk budget, 2 s deadline: 5 - 2 - 2 < 2.5.
        d.observe(0, S(2), false);
        assert!(!d.keeps_final_retry(S(5)));
        assert!(!d.affords_tool_turn(0, S(5)));
        d = Depth::new(8, 4, Instant::now() + S(600), (S(2), S(20)));
        d.observe(0, S(2), false);
        d.observe(0, S(2), false);
        // A 20 s budget: 14 - 2 - 2 >= 10; 13.5 s left: 9.5 < 10.
        assert!(d.keeps_final_retry(S(14)));
        assert!(d.affords_tool_turn(0, S(14)), "the share covers it too");
        assert!(!d.keeps_final_retry(Duration::from_millis(13_500)));
        // Rare failures (a second in 50 besides the first) lift the rule; a third
        // failure on any route restores it.
        for _ in 0..48 {
            d.observe(0, Duration::from_millis(500), true);
        }
        assert!(d.keeps_final_retry(S(12)), "2 failures in 50 attempts");
        d.observe(1, S(2), false);
        assert!(!d.keeps_final_retry(S(12)), "3 in 51");
    }

    /// Attempts still running count the slot time they hold in a turn's price: under
    /// spillover the fast fallback answers first while the slow primary's first attempts
    /// are still running, and priced on the answers alone, tool turns taken then lost
    /// units.
    #[tokio::test(start_paused = true)]
    async fn attempts_still_running_count_in_a_turn_s_price() {
        // 8 permits, 60 units, 15 s: 2 s a unit.
        let d = Depth::new(8, 60, Instant::now() + S(15), (S(2), S(5)));
        let slow: Vec<_> = (0..4).map(|_| d.started(0)).collect();
        let fast: Vec<_> = (0..4).map(|_| d.started(1)).collect();
        tokio::time::advance(Duration::from_millis(300)).await;
        for f in fast {
            f.ended(1, Duration::from_millis(300), true, false);
        }
        // 4 answers of 300 ms and 4 x 300 ms still held: 600 ms a turn; 1.98 s a unit.
        assert!(d.affords_share(1));
        tokio::time::advance(Duration::from_millis(500)).await;
        // 4 x 800 ms held: 1.1 s a turn.
        assert!(!d.affords_share(1));
        // Dropped with their units, they stop counting.
        drop(slow);
        assert!(d.affords_share(1));
    }

    /// Back-pressure (429 with Retry-After, 529) is a reason to wait, not a failure: however
    /// many bounces, tool turns stay open; the slot time they held still prices a turn.
    #[tokio::test(start_paused = true)]
    async fn back_pressure_is_not_a_failure() {
        let d = Depth::new(8, 4, Instant::now() + S(600), (S(2), S(5)));
        for _ in 0..5 {
            d.started(0)
                .ended(0, Duration::from_millis(100), false, true);
        }
        assert!(d.failures_rare(), "bounces are not failures");
        assert!(d.keeps_final_retry(S(5)));
        assert_eq!(d.observed.lock().unwrap()[0].slot_ms, 500);
        d.started(0).ended(0, S(2), false, false);
        d.started(0).ended(0, S(2), false, false);
        assert!(!d.failures_rare(), "two timeouts are");
    }
}
