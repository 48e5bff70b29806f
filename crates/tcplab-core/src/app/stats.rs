//! Latency summaries shared by the apps.

use super::output::Value;

/// Nearest-rank percentile (`q` in 0..=1) of sorted values: the smallest value with at
/// least `q` of the samples at or below it. `None` for no samples.
pub fn percentile_sorted(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// `{p50, p90, p99, p99.9, max, mean}` of `values_ns` in milliseconds (float), as the
/// apps report latencies; values are copied and sorted.
pub fn latency_summary_ms(values_ns: &[u64]) -> Value {
    let mut v = values_ns.to_vec();
    v.sort_unstable();
    let ms = |x: Option<u64>| x.map_or(Value::None, |n| Value::F64(n as f64 / 1e6));
    let mean = if v.is_empty() {
        Value::None
    } else {
        Value::F64(v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64 / 1e6)
    };
    Value::Map(vec![
        ("count".into(), Value::U64(v.len() as u64)),
        ("p50".into(), ms(percentile_sorted(&v, 0.50))),
        ("p90".into(), ms(percentile_sorted(&v, 0.90))),
        ("p99".into(), ms(percentile_sorted(&v, 0.99))),
        ("p99.9".into(), ms(percentile_sorted(&v, 0.999))),
        ("max".into(), ms(v.last().copied())),
        ("mean".into(), mean),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile_sorted(&v, 0.5), Some(50));
        assert_eq!(percentile_sorted(&v, 0.99), Some(99));
        assert_eq!(percentile_sorted(&v, 0.999), Some(100));
        assert_eq!(percentile_sorted(&v, 0.0), Some(1));
        assert_eq!(percentile_sorted(&[], 0.5), None);
    }
}
