//! A log-linear histogram for RTT samples (HDR-histogram style).
//!
//! Values (us) below 256 are counted exactly; above, each power of two is split into 128
//! sub-buckets (7 sub-bucket bits, as HdrHistogram with 2 significant digits), so a reported
//! percentile is the low edge of a bucket no wider than 1/128 of its values: it is at most
//! [`RELATIVE_ERROR`] (0.78 %) below the true sample, and exact below 256 us.
//! Recording is one index computation and one increment. Only the buckets between the
//! smallest and largest value seen are held, in whole powers of two (512 bytes each): a flow
//! whose RTTs span 20-40 ms holds one or two, where all 7424 buckets would be 29 KB per flow
//! (issue 9's tens of thousands of connections need the difference). The window grows only
//! when a sample falls outside every power of two seen so far (at most 58 times in a flow's
//! life), so there is no allocation per sample; endpoints that never sample (receivers,
//! flows not yet started) hold nothing. Counts are held as `u32` (512 bytes per power of
//! two) and the whole window is widened to `u64` the first time a bucket would pass
//! `u32::MAX` (billions of samples in one bucket): what idle connections keep is halved,
//! counting stays exact.

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

/// Bucket counts: `u32` until one would overflow, then `u64`.
#[derive(Clone, Debug)]
enum Counts {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Counts {
    fn len(&self) -> usize {
        match self {
            Counts::Narrow(v) => v.len(),
            Counts::Wide(v) => v.len(),
        }
    }
    fn get(&self, k: usize) -> u64 {
        match self {
            Counts::Narrow(v) => v[k] as u64,
            Counts::Wide(v) => v[k],
        }
    }
}

#[derive(Clone, Debug)]
pub struct LogHistogram {
    /// Counts of buckets `base .. base + counts.len()`.
    counts: Counts,
    base: usize,
    pub count: u64,
    pub sum: u128,
    pub min: u64,
    pub max: u64,
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram {
            counts: Counts::Narrow(Vec::new()),
            base: 0,
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
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
    pub const TYPICAL_HEAP_BYTES: usize = 8 * CHUNK * std::mem::size_of::<u32>();

    /// Heap bytes held now.
    pub fn heap_bytes(&self) -> usize {
        match &self.counts {
            Counts::Narrow(v) => v.capacity() * std::mem::size_of::<u32>(),
            Counts::Wide(v) => v.capacity() * std::mem::size_of::<u64>(),
        }
    }

    #[inline]
    pub fn record(&mut self, v: u64) {
        let i = index(v);
        let mut off = i.wrapping_sub(self.base);
        if off >= self.counts.len() {
            self.widen_to(i);
            off = i - self.base;
        }
        match &mut self.counts {
            Counts::Narrow(c) => match c[off].checked_add(1) {
                Some(n) => c[off] = n,
                None => self.widen_counts(off),
            },
            Counts::Wide(c) => c[off] += 1,
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
        let len = self.counts.len();
        let (lo, hi) = if len == 0 {
            (lo_i, hi_i)
        } else {
            (self.base.min(lo_i), (self.base + len).max(hi_i))
        };
        let at = self.base.saturating_sub(lo);
        match &mut self.counts {
            Counts::Narrow(c) => {
                let mut counts = vec![0; hi - lo];
                counts[at..at + len].copy_from_slice(c);
                *c = counts;
            }
            Counts::Wide(c) => {
                let mut counts = vec![0; hi - lo];
                counts[at..at + len].copy_from_slice(c);
                *c = counts;
            }
        }
        self.base = lo;
    }

    /// Bucket `off` of the narrow counts is full: widen every count to `u64`, then count.
    #[cold]
    fn widen_counts(&mut self, off: usize) {
        if let Counts::Narrow(c) = &self.counts {
            let mut wide: Vec<u64> = c.iter().map(|&n| n as u64).collect();
            wide[off] += 1;
            self.counts = Counts::Wide(wide);
        }
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
        for k in 0..self.counts.len() {
            acc += self.counts.get(k);
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
        for v in [
            0u64,
            1,
            63,
            64,
            65,
            100,
            1000,
            12345,
            1 << 20,
            (1 << 40) + 7,
            u64::MAX / 3,
        ] {
            let i = index(v);
            assert!(i >= prev);
            prev = i;
            let lo = bucket_low(i);
            assert!(lo <= v, "v={v} lo={lo}");
            // relative width 1/128: under 1 %
            assert!(
                (v - lo) as f64 <= v as f64 * RELATIVE_ERROR,
                "v={v} lo={lo}"
            );
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
        assert!(a.heap_bytes() <= 2 * CHUNK * 4, "{} bytes", a.heap_bytes());
        // the same samples in another order, with the extremes first or last, give the
        // same quantiles as a histogram holding every bucket would
        let mut b = LogHistogram::default();
        for v in (20_000..40_000u64)
            .step_by(7)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
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
            bucket_low(
                full.iter()
                    .position(|&n| {
                        acc += n;
                        acc >= rank
                    })
                    .unwrap(),
            )
        });
        assert_eq!(b.count, c.count);
        assert_eq!(c.quantile(1.0), 1 << 40);
    }

    #[test]
    fn a_bucket_past_u32_max_widens_the_counts_and_keeps_counting() {
        let mut h = LogHistogram::default();
        h.record(300);
        h.record(1000);
        assert_eq!(h.heap_bytes(), 2 * CHUNK * 4); // u32 counts: the powers of two of 300 and 1000
                                                   // Fill the bucket of 1000 to u32::MAX, then one more: the counts widen, exactly.
        let off = index(1000) - h.base;
        if let Counts::Narrow(c) = &mut h.counts {
            c[off] = u32::MAX;
        }
        h.record(1000);
        assert!(matches!(h.counts, Counts::Wide(_)));
        assert_eq!(h.counts.get(off), u32::MAX as u64 + 1);
        assert_eq!(h.counts.get(index(300) - h.base), 1);
        assert_eq!(h.heap_bytes(), 2 * CHUNK * 8);
        // Widening the window of wide counts keeps them.
        h.record(5);
        assert_eq!(h.counts.get(index(1000) - h.base), u32::MAX as u64 + 1);
        assert_eq!(h.counts.get(index(5) - h.base), 1);
    }

    #[test]
    fn every_value_within_one_percent() {
        // Exhaustive over the RTTs that matter (1 us .. 4 s), then spot checks above.
        let mut v = 1u64;
        while v < 4_000_000 {
            let lo = bucket_low(index(v));
            assert!(
                lo <= v && (v - lo) as f64 <= 0.01 * v as f64,
                "v={v} lo={lo}"
            );
            v += 1 + v / 1000;
        }
        for v in [u64::MAX / 2, u64::MAX - 1, u64::MAX] {
            let lo = bucket_low(index(v));
            assert!(
                lo <= v && (v - lo) as f64 <= 0.01 * v as f64,
                "v={v} lo={lo}"
            );
        }
    }
}
