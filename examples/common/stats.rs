//! Latency percentiles shared by the benchmark and load programs in `examples/`
//! (included with `#[path]`; not an example of its own).

use std::time::Duration;

/// Latency percentiles in milliseconds (nearest rank).
pub struct Stats {
    pub n: usize,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl Stats {
    pub fn of(samples: &[Duration]) -> Stats {
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        let rank = |p: f64| -> f64 {
            if ms.is_empty() {
                return f64::NAN;
            }
            let i = ((p * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1;
            ms[i]
        };
        Stats {
            n: ms.len(),
            p50: rank(0.50),
            p95: rank(0.95),
            p99: rank(0.99),
            max: ms.last().copied().unwrap_or(f64::NAN),
            mean: ms.iter().sum::<f64>() / ms.len().max(1) as f64,
        }
    }
}
