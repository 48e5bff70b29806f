//! A compact log-linear histogram of non-negative nanosecond values (the lateness of each
//! write), fixed size, no allocation per value.
//!
//! Values below 2^SUB_BITS (32 ns) have one bucket each; above, every power of two
//! [2^e, 2^(e+1)) is cut into 2^SUB_BITS equal buckets, so a bucket's width is at most
//! 1/32 (3.1 %) of its values (the scheme of HdrHistogram, in its simplest form).
//! Quantiles report the UPPER edge of the bucket that holds them (capped by the exact
//! maximum): the line never under-reports its lateness.
#![forbid(unsafe_code)]

const SUB_BITS: u32 = 5;
const SUB_COUNT: usize = 1 << SUB_BITS;
/// Enough buckets for every u64: exponents 5..=63 give 59 groups after the linear one.
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB_COUNT;

#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64; BUCKETS]>,
    count: u64,
    max: u64,
}

/// The bucket of `v`.
fn bucket_of(v: u64) -> usize {
    if v < SUB_COUNT as u64 {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // 2^e <= v, e >= SUB_BITS
    let shift = e - SUB_BITS;
    let mantissa = (v >> shift) as usize; // in [SUB_COUNT, 2 * SUB_COUNT)
    (shift as usize + 1) * SUB_COUNT + (mantissa - SUB_COUNT)
}

/// The largest value that falls in bucket `i`.
fn bucket_upper(i: usize) -> u64 {
    if i < SUB_COUNT {
        return i as u64;
    }
    let shift = (i / SUB_COUNT - 1) as u32;
    let mantissa = (i % SUB_COUNT + SUB_COUNT) as u64;
    // The bucket holds [mantissa << shift, (mantissa + 1) << shift).
    ((mantissa + 1) << shift)
        .wrapping_sub(1)
        .max(mantissa << shift)
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            counts: Box::new([0; BUCKETS]),
            count: 0,
            max: 0,
        }
    }

    pub fn record(&mut self, value: u64) {
        self.counts[bucket_of(value)] += 1;
        self.count += 1;
        self.max = self.max.max(value);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    /// The q-quantile (0 < q <= 1): the upper edge of the bucket holding the
    /// ceil(q * count)-th smallest value, at most the exact maximum; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_upper(i).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        // Consecutive values map to non-decreasing buckets, every value lies at or below
        // its bucket's upper edge and above the previous bucket's.
        let mut probes: Vec<u64> = (0..5000).collect();
        for e in 5..64 {
            let p = 1u64 << e;
            probes.extend([p - 1, p, p + 1, p + p / 3]);
        }
        probes.push(u64::MAX);
        probes.sort();
        let mut last = 0;
        for &v in &probes {
            let b = bucket_of(v);
            assert!(b >= last && b < BUCKETS, "v={v} b={b}");
            assert!(v <= bucket_upper(b), "v={v} upper={}", bucket_upper(b));
            if b > 0 {
                assert!(
                    v > bucket_upper(b - 1),
                    "v={v} prev upper={}",
                    bucket_upper(b - 1)
                );
            }
            last = b;
        }
    }

    #[test]
    fn relative_error_is_at_most_one_32nd() {
        for v in [33u64, 1000, 12_345, 999_999, 50_000_000, 1 << 40] {
            let upper = bucket_upper(bucket_of(v));
            assert!((upper - v) as f64 <= v as f64 / 32.0, "v={v} upper={upper}");
        }
    }

    #[test]
    fn quantiles_of_a_known_distribution() {
        let mut h = Histogram::new();
        assert_eq!((h.quantile(0.5), h.max(), h.count()), (0, 0, 0));
        // 1..=10000 ns: p50 = 5000, p99 = 9900 (within a bucket's 1/32), max exact.
        for v in 1..=10_000u64 {
            h.record(v);
        }
        assert_eq!(h.count(), 10_000);
        assert_eq!(h.max(), 10_000);
        let p50 = h.quantile(0.5);
        let p99 = h.quantile(0.99);
        assert!((5000..=5000 + 5000 / 32).contains(&p50), "p50={p50}");
        assert!((9900..=9900 + 9900 / 32).contains(&p99), "p99={p99}");
        assert_eq!(h.quantile(1.0), 10_000);
    }

    #[test]
    fn small_values_are_exact_and_max_caps_the_edge() {
        let mut h = Histogram::new();
        for v in [3u64, 3, 3, 7] {
            h.record(v);
        }
        assert_eq!(h.quantile(0.5), 3);
        assert_eq!(h.quantile(0.99), 7);
        let mut h = Histogram::new();
        h.record(1_000_001);
        assert_eq!(
            h.quantile(0.5),
            1_000_001,
            "capped by the exact maximum, not the bucket edge"
        );
    }
}
