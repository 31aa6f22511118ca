//! What the latency benchmarks share: the number of samples asked for, and percentiles.

use std::time::Duration;

/// `--samples N` from the command line, else `default`.
pub fn samples(default: usize) -> usize {
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--samples" {
            return args.next().and_then(|v| v.parse().ok()).expect("a number after --samples");
        }
    }
    default
}

/// The `p` percentile of `sorted`, in microseconds.
pub fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1e6
}
