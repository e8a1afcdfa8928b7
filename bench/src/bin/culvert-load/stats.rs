//! Percentiles of what a run measured.

use std::time::Duration;

/// Durations sorted for percentiles.
#[derive(Debug, Default)]
pub(crate) struct Sorted(Vec<Duration>);

impl Sorted {
    pub(crate) fn new(mut values: Vec<Duration>) -> Self {
        values.sort_unstable();
        Self(values)
    }

    /// The nearest-rank `q` quantile (`0 < q <= 1`); zero when nothing was measured.
    pub(crate) fn quantile(&self, q: f64) -> Duration {
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        // The smallest value with at least q of the values at or below it.
        let rank = (q * self.0.len() as f64).ceil() as usize;
        self.0[rank.clamp(1, self.0.len()) - 1]
    }

    pub(crate) fn max(&self) -> Duration {
        self.0.last().copied().unwrap_or_default()
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Milliseconds with microsecond precision, for the report.
pub(crate) fn ms(duration: Duration) -> String {
    format!("{:.3}", duration.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank() {
        let values = Sorted::new((1..=100).rev().map(Duration::from_millis).collect());
        assert_eq!(values.quantile(0.5), Duration::from_millis(50));
        assert_eq!(values.quantile(0.99), Duration::from_millis(99));
        assert_eq!(values.quantile(0.999), Duration::from_millis(100));
        assert_eq!(values.quantile(0.001), Duration::from_millis(1));
        assert_eq!(values.max(), Duration::from_millis(100));
        assert_eq!(Sorted::default().quantile(0.99), Duration::ZERO);
        assert_eq!(ms(Duration::from_micros(1_234)), "1.234");
    }
}
