//! Suspension (SEP-3415's MAY, as its guidance has it): a subscription whose deliveries fail at a sustained rate
//! over a meaningful sample (by default more than 95 % of at least 100 attempts in a rolling hour) stops being
//! delivered until its client refreshes it: its pending event waits, the refresh's `deliveryStatus.active` is
//! `false` (the refresh has just reactivated it), and delivery resumes with that event, its retries afresh. A brief
//! blip does not suspend a healthy subscription, nor a handful of failures a quiet one. A subscription its client
//! no longer refreshes expires at its TTL as before.

use std::time::{Duration, Instant};

/// When a subscription is suspended: a failure rate above `rate` over at least `min_attempts` in `window`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Suspension {
    pub(crate) rate: f64,
    pub(crate) min_attempts: u32,
    pub(crate) window: Duration,
}

/// A subscription's delivery attempts in the rolling window, estimated from the window under way and the one
/// before it (weighted by how much of it the rolling window still covers): two counters, whatever the traffic.
#[derive(Clone, Debug)]
pub(crate) struct Outcomes {
    started: Instant,
    /// Attempts and failures in the window under way, and in the one before it.
    current: (u32, u32),
    previous: (u32, u32),
}

impl Outcomes {
    pub(crate) fn new(now: Instant) -> Outcomes {
        Outcomes { started: now, current: (0, 0), previous: (0, 0) }
    }

    /// Counts an attempt that `failed` or not, made `now`.
    pub(crate) fn record(&mut self, failed: bool, window: Duration, now: Instant) {
        self.roll(window, now);
        self.current.0 = self.current.0.saturating_add(1);
        if failed {
            self.current.1 = self.current.1.saturating_add(1);
        }
    }

    /// Whether the attempts in the rolling window that ends `now` call for a suspension.
    pub(crate) fn suspends(&mut self, rule: &Suspension, now: Instant) -> bool {
        self.roll(rule.window, now);
        let elapsed = now.saturating_duration_since(self.started);
        let covered = 1.0 - elapsed.as_secs_f64() / rule.window.as_secs_f64().max(f64::MIN_POSITIVE);
        let attempts = f64::from(self.previous.0) * covered + f64::from(self.current.0);
        let failures = f64::from(self.previous.1) * covered + f64::from(self.current.1);
        attempts >= f64::from(rule.min_attempts.max(1)) && failures / attempts > rule.rate
    }

    /// Starts a new window when the one under way is over (two when it was long ago).
    fn roll(&mut self, window: Duration, now: Instant) {
        let elapsed = now.saturating_duration_since(self.started);
        if elapsed < window {
            return;
        }
        self.previous = if elapsed < window * 2 { self.current } else { (0, 0) };
        self.current = (0, 0);
        // The start of the window under way: a whole number of windows after the last one.
        let into = Duration::from_nanos((elapsed.as_nanos() % window.as_nanos().max(1)) as u64);
        self.started = now.checked_sub(into).unwrap_or(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: Suspension = Suspension { rate: 0.95, min_attempts: 100, window: Duration::from_secs(3600) };

    #[test]
    fn a_sustained_failure_rate_over_enough_attempts_suspends() {
        let now = Instant::now();
        let mut outcomes = Outcomes::new(now);
        for _ in 0..99 {
            outcomes.record(true, RULE.window, now);
        }
        assert!(!outcomes.suspends(&RULE, now), "99 attempts are not a sample");
        outcomes.record(true, RULE.window, now);
        assert!(outcomes.suspends(&RULE, now), "100 failures of 100");

        let mut healthy = Outcomes::new(now);
        for i in 0..200 {
            healthy.record(i % 10 == 0, RULE.window, now);
        }
        assert!(!healthy.suspends(&RULE, now), "10 % failures");
    }

    #[test]
    fn old_failures_count_less_as_the_window_rolls_and_not_at_all_after_two() {
        let start = Instant::now();
        let mut outcomes = Outcomes::new(start);
        for _ in 0..100 {
            outcomes.record(true, RULE.window, start);
        }
        let now = start + Duration::from_secs(3600 + 1800);
        assert!(!outcomes.suspends(&RULE, now), "half of them are still in the rolling hour: 50 attempts");
        for _ in 0..60 {
            outcomes.record(true, RULE.window, now);
        }
        assert!(outcomes.suspends(&RULE, now), "50 + 60 failures");
        for _ in 0..20 {
            outcomes.record(false, RULE.window, now);
        }
        assert!(!outcomes.suspends(&RULE, now), "20 successes of 130: under 95 %");
        let later = now + Duration::from_secs(3 * 3600);
        assert!(!outcomes.suspends(&RULE, later));
        outcomes.record(true, RULE.window, later);
        assert!(!outcomes.suspends(&RULE, later), "one failure after a long quiet");
    }
}
