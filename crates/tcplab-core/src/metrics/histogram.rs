//! A log-linear histogram for RTT samples (HDR-histogram style).
//!
//! Values (us) below 256 are counted exactly; above, each power of two is split into 128
//! sub-buckets (7 sub-bucket bits, as HdrHistogram with 2 significant digits), so a reported
//! percentile is the low edge of a bucket no wider than 1/128 of its values: it is at most
//! [`RELATIVE_ERROR`] (0.78 %) below the true sample, and exact below 256 us.
//! Recording is one index computation and one increment: no allocation per sample. The
//! 58 KB of buckets are allocated on the first sample, so endpoints that never sample
//! (receivers, flows not yet started) cost nothing.

/// Sub-bucket bits: each power of two is split into `2^SUB_BITS` buckets.
pub const SUB_BITS: u32 = 7;
/// Worst-case relative error of a reported quantile (bucket width / bucket low edge).
pub const RELATIVE_ERROR: f64 = 1.0 / (1u64 << SUB_BITS) as f64;
// The promise (README, summary.json): percentiles within 1 %.
const _: () = assert!(RELATIVE_ERROR <= 0.01);
const SUB: u64 = 1 << SUB_BITS;
const LINEAR_MAX: u64 = 2 * SUB;
const BUCKETS: usize = (LINEAR_MAX as usize) + (64 - SUB_BITS as usize - 1) * SUB as usize;

#[derive(Clone, Debug)]
pub struct LogHistogram {
    counts: Vec<u64>,
    pub count: u64,
    pub sum: u128,
    pub min: u64,
    pub max: u64,
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram { counts: Vec::new(), count: 0, sum: 0, min: u64::MAX, max: 0 }
    }
}

#[inline]
fn index(v: u64) -> usize {
    if v < LINEAR_MAX {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros(); // >= SUB_BITS + 1
    let shift = exp - SUB_BITS;
    let sub = (v >> shift) - SUB; // in [0, SUB)
    (LINEAR_MAX + (exp - SUB_BITS - 1) as u64 * SUB + sub) as usize
}

/// Lowest value that maps to bucket `i`.
fn bucket_low(i: usize) -> u64 {
    let i = i as u64;
    if i < LINEAR_MAX {
        return i;
    }
    let j = i - LINEAR_MAX;
    let exp = j / SUB + SUB_BITS as u64 + 1;
    let sub = j % SUB;
    (SUB + sub) << (exp - SUB_BITS as u64)
}

impl LogHistogram {
    /// Heap bytes of a histogram that has recorded a sample (for the memory estimate).
    pub const HEAP_BYTES: usize = BUCKETS * std::mem::size_of::<u64>();

    #[inline]
    pub fn record(&mut self, v: u64) {
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        self.counts[index(v)] += 1;
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The value at quantile `q` in [0, 1]: the low edge of the bucket holding the
    /// ceil(q*count)-th smallest sample, clamped to [min, max].
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut acc = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= rank {
                return bucket_low(i).clamp(self.min, self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_monotone_and_tight() {
        let mut prev = 0;
        for v in [0u64, 1, 63, 64, 65, 100, 1000, 12345, 1 << 20, (1 << 40) + 7, u64::MAX / 3] {
            let i = index(v);
            assert!(i >= prev);
            prev = i;
            let lo = bucket_low(i);
            assert!(lo <= v, "v={v} lo={lo}");
            // relative width 1/128: under 1 %
            assert!((v - lo) as f64 <= v as f64 * RELATIVE_ERROR, "v={v} lo={lo}");
        }
    }

    #[test]
    fn quantiles_of_uniform_samples() {
        let mut h = LogHistogram::default();
        for v in 1..=10_000u64 {
            h.record(v);
        }
        let p50 = h.quantile(0.5) as f64;
        let p99 = h.quantile(0.99) as f64;
        assert!((p50 - 5000.0).abs() <= 5000.0 * RELATIVE_ERROR, "{p50}");
        assert!((p99 - 9900.0).abs() <= 9900.0 * RELATIVE_ERROR, "{p99}");
        assert_eq!(h.quantile(0.0), 1);
        assert_eq!(h.min, 1);
        assert_eq!(h.max, 10_000);
    }

    #[test]
    fn every_value_within_one_percent() {
        // Exhaustive over the RTTs that matter (1 us .. 4 s), then spot checks above.
        let mut v = 1u64;
        while v < 4_000_000 {
            let lo = bucket_low(index(v));
            assert!(lo <= v && (v - lo) as f64 <= 0.01 * v as f64, "v={v} lo={lo}");
            v += 1 + v / 1000;
        }
        for v in [u64::MAX / 2, u64::MAX - 1, u64::MAX] {
            let lo = bucket_low(index(v));
            assert!(lo <= v && (v - lo) as f64 <= 0.01 * v as f64, "v={v} lo={lo}");
        }
    }
}
