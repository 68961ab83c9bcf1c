//! The effective limit's rules on exact instants (section 13).

use super::*;

const MS: fn(u64) -> Duration = Duration::from_millis;

fn answer(at: Instant, in_flight: usize, ms: u64) -> Sample {
    Sample {
        started: at,
        in_flight,
        signal: Signal::Answer(MS(ms)),
    }
}

fn refused(at: Instant, in_flight: usize) -> Sample {
    Sample {
        started: at,
        in_flight,
        signal: Signal::BackPressure,
    }
}

#[test]
fn starts_at_four_or_the_ceiling_and_never_leaves_one_to_ceiling() {
    assert_eq!(AdaptiveLimit::new(16).current(), 4);
    assert_eq!(AdaptiveLimit::new(2).current(), 2);
    assert_eq!(AdaptiveLimit::new(0).current(), 1);
    let t = Instant::now();
    let mut l = AdaptiveLimit::new(6);
    for i in 0..100 {
        l.record(answer(t, l.current(), 300), t + MS(i));
        assert!(l.current() <= 6);
    }
    assert_eq!(
        l.current(),
        6,
        "answers without back-pressure grow it to the ceiling"
    );
    let mut later = t;
    for _ in 0..50 {
        later += MS(1000);
        l.record(refused(later, l.current()), later + MS(1));
        assert!(l.current() >= 1);
    }
    assert_eq!(l.current(), 1);
}

#[test]
fn back_pressure_drops_it_once_per_round_and_remembers_the_level_that_held() {
    let t0 = Instant::now();
    let mut l = AdaptiveLimit::new(16);
    // Slow start: one more per answer while the limit is in use.
    assert_eq!(
        l.record(answer(t0, 4, 300), t0 + MS(300)),
        Some((5, LimitReason::Growth))
    );
    // The fifth in flight draws a 429: ×0.7, the level below it (4) known good.
    let t1 = t0 + MS(310);
    assert_eq!(
        l.record(refused(t1, 5), t1),
        Some((3, LimitReason::BackPressure))
    );
    // More 429s of attempts sent before that drop are the same signal.
    for _ in 0..5 {
        assert_eq!(l.record(refused(t0 + MS(305), 5), t1 + MS(5)), None);
    }
    assert_eq!(l.current(), 3);
    // Additive growth back to the known-good 4, then no further until the probe wait.
    let mut t = t1 + MS(10);
    let mut back = 0;
    while l.current() < 4 {
        t += MS(100);
        l.record(answer(t, l.current(), 300), t);
        back += 1;
    }
    assert!(back <= 3, "{back} answers back to the known-good level");
    let mut answers = 0;
    while l.current() == 4 {
        t += MS(100);
        l.record(answer(t, 4, 300), t);
        answers += 1;
        assert!(answers < 1000);
    }
    assert_eq!(
        (answers, l.current()),
        (PROBE_AFTER * 4, 5),
        "one probe above it"
    );
    // A refused probe costs that one answer: back to 4 (not ×0.7), and the next probe
    // waits twice as long.
    t += MS(10);
    assert_eq!(
        l.record(refused(t, 5), t),
        Some((4, LimitReason::ProbeRefused))
    );
    let mut answers = 0;
    while l.current() == 4 {
        t += MS(100);
        l.record(answer(t, 4, 300), t);
        answers += 1;
    }
    assert_eq!(answers, 2 * PROBE_AFTER * 4);
}

#[test]
fn an_overshoot_drops_to_the_lowest_level_it_refused_whatever_order_its_429s_arrive_in() {
    // Four answers at once grew the slow start to 8; the provider holds 4, so the 5th to
    // 8th in flight draw 429, and the one sent 8th is read first.
    let t0 = Instant::now();
    let mut l = AdaptiveLimit::new(16);
    for i in 0..4 {
        l.record(answer(t0, 4, 300), t0 + MS(300 + i));
    }
    assert_eq!(l.current(), 8);
    let t1 = t0 + MS(310);
    assert_eq!(
        l.record(refused(t0 + MS(305), 8), t1),
        Some((5, LimitReason::BackPressure)),
        "x0.7 of 8"
    );
    // The same round's 429 sent 5th says more: only 4 held. Not a second drop.
    assert_eq!(
        l.record(refused(t0 + MS(302), 5), t1 + MS(1)),
        Some((4, LimitReason::BackPressure))
    );
    for k in [6, 7] {
        assert_eq!(l.record(refused(t0 + MS(303), k), t1 + MS(2)), None);
    }
    // Answers at 4 hold it at 4 until the probe wait: no round above the level that held.
    let mut t = t1 + MS(10);
    for _ in 0..PROBE_AFTER * 4 - 1 {
        t += MS(100);
        l.record(answer(t, 4, 300), t);
        assert_eq!(l.current(), 4);
    }
}

#[test]
fn a_first_drop_keeps_the_limit_under_the_level_that_held_down_to_half_its_level() {
    // 8 in flight on a ceiling-8 route; the first 429 is of the 4th sent. The level that
    // held (3) is under half the level it drops from: one refusal that far down may be a
    // race between the two sides' counts, so the limit stops at half (4), known good 3.
    let t0 = Instant::now();
    let mut l = AdaptiveLimit::new(8);
    for _ in 0..8 {
        l.record(answer(t0, 8, 300), t0 + MS(300));
    }
    assert_eq!(l.current(), 8);
    assert_eq!(
        l.record(refused(t0 + MS(400), 4), t0 + MS(401)),
        Some((4, LimitReason::BackPressure)),
        "min(8 x 0.7, max(3, 8 / 2))"
    );
}

#[test]
fn an_accepted_probe_becomes_the_known_good_level() {
    let t0 = Instant::now();
    let mut l = AdaptiveLimit::new(16);
    l.record(refused(t0, 5), t0);
    let mut t = t0 + MS(1);
    let mut n = 0;
    while l.current() < 5 {
        t += MS(100);
        l.record(answer(t, l.current(), 300), t);
        n += 1;
        assert!(n < 1000);
    }
    // Five answers at level 5 confirm it; the next probe goes to 6 after 8 × 5 answers.
    for _ in 0..5 {
        t += MS(100);
        l.record(answer(t, 5, 300), t);
    }
    let mut answers = 0;
    while l.current() == 5 {
        t += MS(100);
        l.record(answer(t, 5, 300), t);
        answers += 1;
        assert!(answers < 1000);
    }
    assert_eq!((answers, l.current()), (PROBE_AFTER * 5, 6));
}

#[test]
fn an_idle_limit_does_not_grow() {
    let t = Instant::now();
    let mut l = AdaptiveLimit::new(16);
    for i in 0..50 {
        assert_eq!(l.record(answer(t, 1, 300), t + MS(i)), None);
    }
    assert_eq!(l.current(), 4);
}

#[test]
fn latency_that_rises_with_load_shrinks_it_and_a_heavy_tail_does_not() {
    use rand::{Rng, SeedableRng};
    // A queue: 100 ms per attempt in flight.
    let t0 = Instant::now();
    let mut l = AdaptiveLimit::new(16);
    let mut t = t0;
    let mut reasons = Vec::new();
    for i in 0..400 {
        t += MS(50);
        let level = 1 + i % l.current();
        if let Some((_, r)) = l.record(answer(t, level, 100 * level as u64), t) {
            reasons.push(r);
        }
    }
    assert!(reasons.contains(&LimitReason::Latency), "{reasons:?}");
    assert!(l.current() < 16, "{}", l.current());
    // A heavy tail (log-normal, same at any load): it keeps growing to the ceiling.
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let mut l = AdaptiveLimit::new(16);
    let mut t = t0;
    for i in 0..2000 {
        t += MS(50);
        let level = 1 + i % l.current();
        let z: f64 = rng.random_range(-2.5..2.5);
        let ms = (1500.0 * (0.86 * z).exp()) as u64;
        let changed = l.record(answer(t, level.max(l.current() / 2), ms), t);
        assert_ne!(changed.map(|c| c.1), Some(LimitReason::Latency), "at {i}");
    }
    assert_eq!(l.current(), 16);
}

#[test]
fn timeouts_and_errors_say_nothing_about_capacity() {
    let t = Instant::now();
    let mut l = AdaptiveLimit::new(16);
    for i in 0..50 {
        let s = Sample {
            started: t,
            in_flight: 4,
            signal: Signal::Nothing,
        };
        assert_eq!(l.record(s, t + MS(i)), None);
    }
    assert_eq!(l.current(), 4);
}
