//! Pauses and rate-limit windows on exact instants.

use super::*;

const S: fn(u64) -> Duration = Duration::from_secs;
const MS: fn(u64) -> Duration = Duration::from_millis;

fn requests(limit: Option<u64>, remaining: u64, reset_after: Duration) -> RateLimitInfo {
    RateLimitInfo {
        requests: Some(Window {
            limit,
            remaining,
            reset_after,
        }),
        tokens: None,
    }
}

#[tokio::test(start_paused = true)]
async fn a_pause_ends_at_the_latest_retry_after_and_only_for_its_route() {
    let p = Pacing::new(2);
    let t0 = Instant::now();
    assert_eq!(p.paused_until(0, t0), None);
    assert_eq!(p.pause(0, t0, S(5)), t0 + S(5));
    assert_eq!(
        p.pause(0, t0, S(2)),
        t0 + S(5),
        "a shorter one does not cut it"
    );
    assert_eq!(p.paused_until(0, t0 + S(4)), Some(t0 + S(5)));
    assert_eq!(p.paused_until(1, t0), None);
    assert_eq!(p.paused_until(0, t0 + S(5)), None, "over at its end");
    // A clamped, absurd Retry-After does not overflow the clock.
    let far = p.pause(1, t0, crate::provider::classify::MAX_RETRY_AFTER);
    assert!(far > t0 + S(3600));
}

#[tokio::test(start_paused = true)]
async fn the_remaining_requests_are_never_overdrawn_counting_attempts_in_flight() {
    let p = Pacing::new(1);
    let t0 = Instant::now();
    assert!(p.take(0, t0, 100).is_ok(), "no headers yet: no pacing");
    // 3 left for 800 ms, with 1 other attempt in flight: 2 more may start.
    p.observe(0, &requests(Some(5), 3, MS(800)), t0, 1);
    assert!(p.take(0, t0, 100).is_ok());
    assert!(p.take(0, t0, 100).is_ok());
    let refused = p.take(0, t0, 100).unwrap_err().expect("a new pause");
    assert_eq!(
        (refused.until, refused.reason),
        (t0 + MS(800), PauseReason::Requests)
    );
    assert_eq!(p.paused_until(0, t0 + MS(799)), Some(t0 + MS(800)));
    // After the reset the window is whole again: 5, and the next reset a window later.
    let t1 = t0 + MS(800);
    for _ in 0..5 {
        assert!(p.take(0, t1, 100).is_ok());
    }
    let again = p.take(0, t1, 100).unwrap_err().expect("paused again");
    assert_eq!(again.until, t1 + MS(800));
}

#[tokio::test(start_paused = true)]
async fn tokens_must_cover_the_estimate_and_an_unknown_limit_is_forgotten_at_reset() {
    let p = Pacing::new(1);
    let t0 = Instant::now();
    let info = RateLimitInfo {
        requests: Some(Window {
            limit: None,
            remaining: 0,
            reset_after: S(2),
        }),
        tokens: Some(Window {
            limit: Some(10_000),
            remaining: 5_000,
            reset_after: S(1),
        }),
    };
    p.observe(0, &info, t0, 0);
    let e = p.take(0, t0, 100).unwrap_err().unwrap();
    assert_eq!((e.until, e.reason), (t0 + S(2), PauseReason::Requests));
    let t2 = t0 + S(2);
    // The requests window (no limit given) is forgotten; tokens rolled to 10 000.
    assert!(p.take(0, t2, 6_000).is_ok());
    let e = p.take(0, t2, 6_000).unwrap_err().unwrap();
    assert_eq!(e.reason, PauseReason::Tokens);
    assert!(e.until > t2 && e.until <= t2 + S(1), "{:?}", e.until - t2);
}

#[tokio::test(start_paused = true)]
async fn answers_out_of_order_never_raise_what_is_left_of_a_window() {
    let p = Pacing::new(1);
    let t0 = Instant::now();
    p.observe(0, &requests(Some(5), 1, MS(900)), t0, 0);
    // A later answer of the same window read when more was left: still 1 left.
    p.observe(0, &requests(Some(5), 4, MS(950)), t0 + MS(10), 0);
    assert!(p.take(0, t0 + MS(20), 1).is_ok());
    assert!(p.take(0, t0 + MS(20), 1).is_err());
    // After the reset the window is whole; a late answer of the old window (its reset
    // long past) does not roll it back.
    let t1 = t0 + MS(1000);
    assert!(p.take(0, t1, 1).is_ok());
    p.observe(0, &requests(Some(5), 0, MS(5)), t1, 0);
    for _ in 0..4 {
        assert!(p.take(0, t1 + MS(10), 1).is_ok());
    }
    assert!(p.take(0, t1 + MS(10), 1).is_err(), "5 per window, not more");
}

#[tokio::test(start_paused = true)]
async fn a_take_given_back_is_free_again_and_a_held_route_says_why() {
    let p = Pacing::new(1);
    let t0 = Instant::now();
    p.observe(0, &requests(Some(5), 1, MS(800)), t0, 0);
    assert!(p.take(0, t0, 1).is_ok());
    p.give_back(0, 1);
    assert!(
        p.take(0, t0, 1).is_ok(),
        "the one left, given back, is left"
    );
    // Another process's window holds the route: paused for that reason until then.
    let held = p
        .hold(0, t0 + MS(300), PauseReason::Requests)
        .expect("a new pause");
    assert_eq!(held.until, t0 + MS(300));
    assert_eq!(
        p.hold(0, t0 + MS(100), PauseReason::Tokens),
        None,
        "not shorter"
    );
    let e = p.take(0, t0 + MS(10), 1).unwrap_err().unwrap();
    assert_eq!((e.until, e.reason), (t0 + MS(300), PauseReason::Requests));
    assert_eq!(p.paused_until(0, t0 + MS(300)), None);
}

fn tokens(limit: Option<u64>, remaining: u64, reset_after: Duration) -> RateLimitInfo {
    RateLimitInfo {
        requests: None,
        tokens: Some(Window {
            limit,
            remaining,
            reset_after,
        }),
    }
}

#[tokio::test(start_paused = true)]
async fn an_attempt_larger_than_the_whole_token_window_starts_once_the_window_is_whole() {
    // A 1,000-token-a-minute account and an attempt estimated at 5,000: no reset ever
    // covers it, so waiting for one is waiting for ever. Once the window is whole the
    // attempt starts (the provider decides; a 429 is a bounce like any other).
    let p = Pacing::new(1);
    let t0 = Instant::now();
    p.observe(0, &tokens(Some(1000), 200, S(60)), t0, 0);
    let refused = p.take(0, t0, 5000).unwrap_err().expect("a pause");
    assert_eq!(
        (refused.until, refused.reason),
        (t0 + S(60), PauseReason::Tokens)
    );
    let t1 = t0 + S(60);
    assert!(
        p.take(0, t1, 5000).is_ok(),
        "the whole window is all there is"
    );
    assert!(
        p.take(0, t1, 5000).is_err(),
        "and it is spent until the next reset"
    );
    assert!(p.take(0, t1 + S(60), 5000).is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_window_with_a_limit_of_zero_does_not_pause_the_route_for_ever() {
    // "limit 0, remaining 0, reset 1s": rolled over, the window refills to 0 every second
    // and no attempt would ever start to hear better news. A limit of 0 is not a window.
    let p = Pacing::new(1);
    let t0 = Instant::now();
    p.observe(0, &requests(Some(0), 0, S(1)), t0, 0);
    p.observe(0, &tokens(Some(0), 0, S(1)), t0, 0);
    let _ = p.take(0, t0, 100);
    assert!(
        p.take(0, t0 + S(1), 100).is_ok(),
        "still paused after the reset"
    );
}
