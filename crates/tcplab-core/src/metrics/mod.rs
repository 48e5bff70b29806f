//! Measurements: RTT histograms and columnar time series.
//!
//! A leaf. Imports: other leaves only; nothing above it (the simulator fills these
//! stores, they know nothing of it).
pub mod columns;
pub mod histogram;
pub mod timeseries;

/// Serialize `(name, value)` pairs as a mapping in their order (counters named as a tool
/// prints them: `tc -s qdisc`'s xstats, `ethtool -S`), for `#[serde(serialize_with)]`.
pub fn serialize_pairs<K: AsRef<str>, V: serde::Serialize, S: serde::Serializer>(
    pairs: &[(K, V)],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(pairs.len()))?;
    for (k, v) in pairs {
        m.serialize_entry(k.as_ref(), v)?;
    }
    m.end()
}
