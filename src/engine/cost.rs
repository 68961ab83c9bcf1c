//! Money: what an attempt cost, and the review's cost budget (`[execution] costBudget`).
//!
//! An attempt's cost is what the provider reports (OpenRouter's `usage.cost`), else its
//! token usage at the route's prices. The budget admits an attempt only while the spend
//! so far plus the reservations of the attempts in flight plus this attempt's estimate
//! stay within it; a settled attempt swaps its reservation for its real cost. Estimates
//! come from the prompt's size and the most the route has been seen to use (the route's
//! `maxTokens` of output until an answer has been seen), so they err on the high side.

use crate::config::Prices;
use crate::provider::Usage;
use std::sync::Mutex;
use tokio::sync::Notify;

/// Characters per input token assumed before a route has reported any usage (on the
/// high side: real tokenizers average about four).
const CHARS_PER_TOKEN_GUESS: f64 = 3.0;

/// The cost of one attempt in USD: the provider's own figure, else tokens at `prices`.
/// None when neither is known.
pub fn attempt_cost(usage: Option<Usage>, prices: Option<Prices>) -> Option<f64> {
    let u = usage?;
    if let Some(c) = u.cost {
        return Some(c);
    }
    let p = prices?;
    if u.input_tokens.is_none() && u.output_tokens.is_none() {
        return None;
    }
    let input = u.input_tokens.unwrap_or(0);
    let cached = u.cached_input_tokens.unwrap_or(0).min(input);
    let written = u.cache_write_tokens.unwrap_or(0).min(input - cached);
    let fresh = input - cached - written;
    Some(p.cost_split(fresh, cached, written, u.output_tokens.unwrap_or(0)))
}

/// What a route has been seen to use, for estimates.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    /// The most output tokens one answer used.
    max_output: Option<u64>,
    /// The most input tokens per prompt character.
    max_input_per_char: Option<f64>,
    /// The most one attempt cost (for routes priced only by what the provider reports).
    max_cost: Option<f64>,
}

impl Observed {
    /// Learns from a finished attempt of a prompt of `chars` characters.
    pub(crate) fn learn(&mut self, chars: usize, usage: Option<Usage>, cost: Option<f64>) {
        let Some(u) = usage else { return };
        if let Some(o) = u.output_tokens {
            self.max_output = Some(self.max_output.map_or(o, |m| m.max(o)));
        }
        if let Some(i) = u.input_tokens
            && chars > 0
        {
            let r = i as f64 / chars as f64;
            self.max_input_per_char = Some(self.max_input_per_char.map_or(r, |m| m.max(r)));
        }
        if let Some(c) = cost {
            self.max_cost = Some(self.max_cost.map_or(c, |m| m.max(c)));
        }
    }

    /// The tokens an attempt with a prompt of `chars` characters is estimated to use
    /// (input as learned, else a guess; output as the most seen, else `max_tokens`): what
    /// a rate limit's remaining tokens must cover (docs/design.md section 13).
    pub(crate) fn tokens(&self, chars: usize, max_tokens: u32) -> u64 {
        let input = self.input_tokens(chars);
        let output = self
            .max_output
            .map_or(u64::from(max_tokens), |o| o.min(u64::from(max_tokens)));
        input.saturating_add(output)
    }

    /// The input tokens of a prompt of `chars` characters: at the most per character the
    /// route reported, else the guess (on the high side).
    pub(crate) fn input_tokens(&self, chars: usize) -> u64 {
        let per_char = self
            .max_input_per_char
            .unwrap_or(1.0 / CHARS_PER_TOKEN_GUESS);
        (chars as f64 * per_char).ceil() as u64
    }

    /// The input tokens of a prompt for a context window check (docs/design.md §14): the
    /// window is a hard limit, so never fewer than the guess, whatever the route
    /// reported (a gateway's usage may count a cached or trimmed prompt).
    pub(crate) fn window_tokens(&self, chars: usize) -> u64 {
        let guess = (chars as f64 / CHARS_PER_TOKEN_GUESS).ceil() as u64;
        self.input_tokens(chars).max(guess)
    }

    /// The estimated cost of an attempt with a prompt of `chars` characters on a route
    /// with these prices and answer cap.
    pub(crate) fn estimate(&self, chars: usize, prices: Option<Prices>, max_tokens: u32) -> f64 {
        match prices {
            Some(p) => {
                let per_char = self
                    .max_input_per_char
                    .unwrap_or(1.0 / CHARS_PER_TOKEN_GUESS);
                let input = (chars as f64 * per_char).ceil() as u64;
                let output = self
                    .max_output
                    .map_or(u64::from(max_tokens), |o| o.min(u64::from(max_tokens)));
                p.cost(input, output)
            }
            None => self.max_cost.unwrap_or(0.0),
        }
    }
}

/// Why an attempt was not admitted by the cost budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Refusal {
    /// Spend so far plus this estimate passes the budget: waiting cannot help.
    Spent {
        spent: f64,
        estimate: f64,
        limit: f64,
    },
    /// Only the reservations of attempts in flight stand in the way: one may settle lower.
    InFlight,
}

/// Money set aside for one attempt in flight.
#[derive(Debug)]
#[must_use = "a reservation is settled with the attempt's real cost"]
pub(crate) struct Reservation(f64);

#[derive(Debug, Default)]
struct Ledger {
    spent: f64,
    reserved: f64,
}

/// The review's cost budget, shared by every pass.
#[derive(Debug, Default)]
pub(crate) struct CostBudget {
    limit: Option<f64>,
    ledger: Mutex<Ledger>,
    /// Woken whenever a reservation settles.
    pub(crate) settled: Notify,
}

impl CostBudget {
    pub(crate) fn new(limit: Option<f64>) -> Self {
        CostBudget {
            limit,
            ..CostBudget::default()
        }
    }

    /// Sets `estimate` aside for an attempt, or says why not.
    pub(crate) fn reserve(&self, estimate: f64) -> Result<Reservation, Refusal> {
        let Some(limit) = self.limit else {
            return Ok(Reservation(0.0));
        };
        let mut l = self.ledger.lock().expect("cost ledger");
        if l.spent + estimate > limit {
            return Err(Refusal::Spent {
                spent: l.spent,
                estimate,
                limit,
            });
        }
        if l.spent + l.reserved + estimate > limit {
            return Err(Refusal::InFlight);
        }
        l.reserved += estimate;
        Ok(Reservation(estimate))
    }

    /// Swaps a reservation for what the attempt really cost (unknown counts as nothing).
    pub(crate) fn settle(&self, r: Reservation, cost: Option<f64>) {
        {
            let mut l = self.ledger.lock().expect("cost ledger");
            l.reserved = (l.reserved - r.0).max(0.0);
            l.spent += cost.unwrap_or(0.0);
        }
        self.settled.notify_waiters();
    }

    /// Spend so far, USD.
    pub(crate) fn spent(&self) -> f64 {
        self.ledger.lock().expect("cost ledger").spent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(i: u64, o: u64, cost: Option<f64>) -> Option<Usage> {
        Some(Usage {
            input_tokens: Some(i),
            output_tokens: Some(o),
            cost,
            ..Usage::default()
        })
    }

    #[test]
    fn provider_cost_wins_over_prices() {
        let p = Some(Prices {
            input: 3.0,
            output: 15.0,
            ..Prices::default()
        });
        assert_eq!(attempt_cost(usage(1000, 100, Some(0.5)), p), Some(0.5));
        let c = attempt_cost(usage(1_000_000, 100_000, None), p).unwrap();
        assert!((c - 4.5).abs() < 1e-9, "{c}");
        assert_eq!(attempt_cost(usage(10, 10, None), None), None);
        assert_eq!(attempt_cost(None, p), None);
    }

    #[test]
    fn cached_reads_and_writes_are_priced_at_their_own_prices() {
        let p = Prices {
            input: 3.0,
            output: 15.0,
            cached_input: Some(0.3),
            cache_write: Some(3.75),
        };
        let u = Some(Usage {
            input_tokens: Some(1_000_000),
            cached_input_tokens: Some(600_000),
            cache_write_tokens: Some(100_000),
            output_tokens: Some(0),
            ..Usage::default()
        });
        let c = attempt_cost(u, Some(p)).unwrap();
        // 300k fresh at 3.0, 600k read at 0.3, 100k written at 3.75.
        assert!((c - (0.9 + 0.18 + 0.375)).abs() < 1e-9, "{c}");
        let unset = Prices {
            cached_input: None,
            cache_write: None,
            ..p
        };
        let c = attempt_cost(u, Some(unset)).unwrap();
        assert!((c - 3.0).abs() < 1e-9, "unset: input price: {c}");
    }

    #[test]
    fn estimates_use_max_tokens_until_an_answer_is_seen() {
        let p = Some(Prices {
            input: 0.0,
            output: 1_000_000.0,
            ..Prices::default()
        });
        let mut o = Observed::default();
        assert_eq!(o.estimate(300, p, 4096), 4096.0);
        o.learn(300, usage(100, 50, None), None);
        assert_eq!(o.estimate(300, p, 4096), 50.0);
        o.learn(300, usage(100, 70, None), None);
        assert_eq!(
            o.estimate(300, p, 4096),
            70.0,
            "the most seen, not the mean"
        );
        let input_only = Some(Prices {
            input: 1_000_000.0,
            output: 0.0,
            ..Prices::default()
        });
        assert_eq!(
            o.estimate(600, input_only, 4096),
            200.0,
            "100 tokens per 300 chars"
        );
    }

    #[test]
    fn reservations_of_attempts_in_flight_count_against_the_budget() {
        let b = CostBudget::new(Some(1.0));
        let a = b.reserve(0.4).unwrap();
        let c = b.reserve(0.4).unwrap();
        assert_eq!(b.reserve(0.4).unwrap_err(), Refusal::InFlight);
        b.settle(a, Some(0.1));
        let d = b.reserve(0.4).unwrap();
        assert!(matches!(b.reserve(0.2), Err(Refusal::InFlight)));
        b.settle(c, Some(0.4));
        b.settle(d, Some(0.4));
        assert!((b.spent() - 0.9).abs() < 1e-9);
        assert!(matches!(b.reserve(0.2), Err(Refusal::Spent { .. })));
        assert!(b.reserve(0.1).is_ok());
        let free = CostBudget::new(None);
        assert!(free.reserve(1e9).is_ok());
    }
}
