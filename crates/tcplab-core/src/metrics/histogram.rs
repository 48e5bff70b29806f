//! A log-linear histogram for RTT samples (HDR-histogram style).
//!
//! Values (us) below 256 are counted exactly; above, each power of two is split into 128
//! sub-buckets (7 sub-bucket bits, as HdrHistogram with 2 significant digits), so a reported
//! percentile is the low edge of a bucket no wider than 1/128 of its values: it is at most
//! [`RELATIVE_ERROR`] (0.78 %) below the true sample, and exact below 256 us.
//! Recording is one index computation and one increment. Only the buckets between the
//! smallest and largest value seen are held, in whole powers of two (1 KB each): a flow
//! whose RTTs span 20-40 ms holds one or two, where all 7424 buckets would be 58 KB per flow
//! (issue 9's tens of thousands of connections need the difference). The window grows only
//! when a sample falls outside every power of two seen so far (at most 58 times in a flow's
//! life), so there is no allocation per sample; endpoints that never sample (receivers,
//! flows not yet started) hold nothing.

/// Sub-bucket bits: each power of two is split into `2^SUB_BITS` buckets.
pub const SUB_BITS: u32 = 7;
/// Worst-case relative error of a reported quantile (bucket width / bucket low edge).
pub const RELATIVE_ERROR: f64 = 1.0 / (1u64 << SUB_BITS) as f64;
// The promise (README, summary.json): percentiles within 1 %.
const _: () = assert!(RELATIVE_ERROR <= 0.01);
const SUB: u64 = 1 << SUB_BITS;
const LINEAR_MAX: u64 = 2 * SUB;
const BUCKETS: usize = (LINEAR_MAX as usize) + (64 - SUB_BITS as usize - 1) * SUB as usize;

/// Buckets are allocated in whole powers of two (sub-bucket groups); `BUCKETS` is a multiple.
const CHUNK: usize = SUB as usize;
const _: () = assert!(BUCKETS % CHUNK == 0);

#[derive(Clone, Debug)]
pub struct LogHistogram {
    /// Counts of buckets `base .. base + counts.len()`.
    counts: Vec<u64>,
    base: usize,
    pub count: u64,
    pub sum: u128,
    pub min: u64,
    pub max: u64,
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram { counts: Vec::new(), base: 0, count: 0, sum: 0, min: u64::MAX, max: 0 }
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
    /// Heap bytes of a histogram whose samples span 8 powers of two (a factor of 256
    /// between the smallest and largest RTT), for the memory estimate.
    pub const TYPICAL_HEAP_BYTES: usize = 8 * CHUNK * std::mem::size_of::<u64>();

    /// Heap bytes held now.
    pub fn heap_bytes(&self) -> usize {
        self.counts.capacity() * std::mem::size_of::<u64>()
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        let off = i.wrapping_sub(self.base);
        if off < self.counts.len() {
            self.counts[off] += 1;
        } else {
            self.widen_to(i);
            self.counts[i - self.base] += 1;
        }
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Hold buckets from the power of two of bucket `i` to the held ones (or just that
    /// power of two, the first time).
    #[cold]
    fn widen_to(&mut self, i: usize) {
        let lo_i = i - i % CHUNK;
        let hi_i = lo_i + CHUNK;
        let (lo, hi) = if self.counts.is_empty() {
            (lo_i, hi_i)
        } else {
            (self.base.min(lo_i), (self.base + self.counts.len()).max(hi_i))
        };
        let mut counts = vec![0; hi - lo];
        let at = self.base.saturating_sub(lo);
        counts[at..at + self.counts.len()].copy_from_slice(&self.counts);
        self.counts = counts;
        self.base = lo;
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
        for (k, &c) in self.counts.iter().enumerate() {
            acc += c;
            if acc >= rank {
                return bucket_low(self.base + k).clamp(self.min, self.max);
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
    fn only_the_powers_of_two_seen_are_held_and_quantiles_do_not_depend_on_the_order() {
        // RTTs of 20-40 ms span one power of two (2^14..2^15 us is 16.4-32.8 ms, then 2^15..)
        let mut a = LogHistogram::default();
        for v in (20_000..40_000u64).step_by(7) {
            a.record(v);
        }
        assert!(a.heap_bytes() <= 2 * CHUNK * 8, "{} bytes", a.heap_bytes());
        // the same samples in another order, with the extremes first or last, give the
        // same quantiles as a histogram holding every bucket would
        let mut b = LogHistogram::default();
        for v in (20_000..40_000u64).step_by(7).collect::<Vec<_>>().into_iter().rev() {
            b.record(v);
        }
        b.record(5);
        b.record(1 << 40);
        let mut c = LogHistogram::default();
        c.record(1 << 40);
        c.record(5);
        for v in (20_000..40_000u64).step_by(7) {
            c.record(v);
        }
        for q in [0.0, 0.01, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(b.quantile(q), c.quantile(q), "q={q}");
        }
        assert_eq!(a.quantile(0.5), {
            let mut full = vec![0u64; BUCKETS];
            for v in (20_000..40_000u64).step_by(7) {
                full[index(v)] += 1;
            }
            let rank = (0.5 * a.count as f64).ceil() as u64;
            let mut acc = 0;
            bucket_low(full.iter().position(|&n| { acc += n; acc >= rank }).unwrap())
        });
        assert_eq!(b.count, c.count);
        assert_eq!(c.quantile(1.0), 1 << 40);
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
