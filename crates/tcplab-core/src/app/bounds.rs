//! The ranges each workload's `validate()` enforces, as data: one table per app kind
//! (`BOUNDS` next to each model's `validate`), exported to Python by the binding
//! (`tcplab._core.bounds()`), where `tcplab.scenario.app_bounds` mirrors them so that a
//! mistake is reported in the user's units before anything runs.
//!
//! The tables do not replace the checks (those keep their messages); `tests` below proves
//! they say the same thing both ways: each entry is a bound `validate()` enforces exactly
//! (the limit passes, one step beyond is refused with the field's name), and every field
//! that `validate()` refuses at an extreme (0, or the largest value its type holds) has an
//! entry. The Python side then compares its mirror with these tables in both directions
//! (tests/test_app_bounds.py).

use serde::Serialize;

use super::{batch_writer, broadcast, hls, nfs, rr};

/// A limit of a field's range.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Limit {
    /// No limit on this side.
    Unbounded,
    Int(u64),
    Float(f64),
    /// The value of another field of the same app (`retry_max_ns` at least `retry_min_ns`).
    Field(&'static str),
}

/// One field's range: `lo <= value <= hi` (`lo < value` when `lo_exclusive`), and a
/// multiple of `multiple_of` when set. An optional field (`segments`, `bursts`) is checked
/// only when present.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FieldBound {
    #[serde(skip)]
    pub field: &'static str,
    pub lo: Limit,
    pub hi: Limit,
    pub lo_exclusive: bool,
    pub multiple_of: Option<u64>,
}

impl FieldBound {
    /// `lo <= field <= hi`.
    pub const fn new(field: &'static str, lo: Limit, hi: Limit) -> FieldBound {
        FieldBound {
            field,
            lo,
            hi,
            lo_exclusive: false,
            multiple_of: None,
        }
    }
    /// `lo < field <= hi`.
    pub const fn above(field: &'static str, lo: Limit, hi: Limit) -> FieldBound {
        FieldBound {
            field,
            lo,
            hi,
            lo_exclusive: true,
            multiple_of: None,
        }
    }
    /// `lo <= field <= hi`, a multiple of `m`.
    pub const fn multiple(field: &'static str, lo: Limit, hi: Limit, m: u64) -> FieldBound {
        FieldBound {
            field,
            lo,
            hi,
            lo_exclusive: false,
            multiple_of: Some(m),
        }
    }
}

/// How many connections (flows) an app of a kind drives, as its `validate()` checks it
/// (`SimConfig` adds: at least one, and each flow in one app).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Connections {
    pub lo: u64,
    /// `None`: no upper bound (broadcast: exactly `senders x connections_per_sender`).
    pub hi: Option<u64>,
}

/// Every kind's field ranges, its connections, and the names its enum fields take, keyed
/// as the configuration is (`kind`, then the engine's field names). `hls.profiles` holds
/// the range of each profile's fields.
#[derive(Clone, Debug, Serialize)]
pub struct AppBounds {
    pub fields: Vec<(&'static str, Vec<FieldBound>)>,
    pub connections: Vec<(&'static str, Connections)>,
    pub choices: Vec<(&'static str, Vec<(&'static str, &'static [&'static str])>)>,
}

/// The tables of every kind.
pub fn bounds() -> AppBounds {
    AppBounds {
        fields: vec![
            ("rr", rr::BOUNDS.to_vec()),
            ("hls", hls::BOUNDS.to_vec()),
            ("hls.profiles", hls::PROFILE_BOUNDS.to_vec()),
            ("nfs_stream", nfs::BOUNDS.to_vec()),
            ("batch_writer", batch_writer::BOUNDS.to_vec()),
            ("broadcast", broadcast::BOUNDS.to_vec()),
        ],
        connections: vec![
            ("rr", rr::CONNECTIONS),
            ("hls", hls::CONNECTIONS),
            ("nfs_stream", nfs::CONNECTIONS),
            ("batch_writer", batch_writer::CONNECTIONS),
            ("broadcast", broadcast::CONNECTIONS),
        ],
        choices: vec![(
            "batch_writer",
            vec![("overflow", crate::config::apps::Overflow::NAMES)],
        )],
    }
}

impl AppBounds {
    /// As the binding hands it to Python: `{"fields": {kind: {field: {lo, hi, lo_exclusive,
    /// multiple_of}}}, "connections": {kind: {lo, hi}}, "choices": {kind: {field: [names]}}}`.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::{json, Map, Value};
        let fields: Map<String, Value> = self
            .fields
            .iter()
            .map(|(kind, b)| {
                (
                    kind.to_string(),
                    Value::Object(b.iter().map(|f| (f.field.to_string(), json!(f))).collect()),
                )
            })
            .collect();
        let connections: Map<String, Value> = self
            .connections
            .iter()
            .map(|(k, c)| (k.to_string(), json!(c)))
            .collect();
        let choices: Map<String, Value> = self
            .choices
            .iter()
            .map(|(k, fs)| {
                (
                    k.to_string(),
                    Value::Object(
                        fs.iter()
                            .map(|(f, names)| (f.to_string(), json!(names)))
                            .collect(),
                    ),
                )
            })
            .collect();
        json!({"fields": fields, "connections": connections, "choices": choices})
    }
}

#[cfg(test)]
mod tests {
    //! The tables against the checks, through the configuration's JSON: a field is set by
    //! its name in the serialized default, the result parsed back into an `AppSpec` and
    //! checked by `AppSpec::validate` (what `sim::validate` calls).

    use serde_json::{json, Value};

    use super::*;
    use crate::config::apps::AppSpec;

    const AT: &str = "apps.0.spec";

    /// A valid configuration of each kind (its defaults, plus what has none: an HLS
    /// ladder) and a number of connections it accepts.
    fn bases() -> Vec<(&'static str, Value, usize)> {
        let mut hls = serde_json::to_value(crate::config::apps::HlsConfig::default()).unwrap();
        hls["profiles"] = json!([{"name": "a", "bitrate_bps": 1_000_000}]);
        vec![
            (
                "rr",
                serde_json::to_value(crate::config::apps::RrConfig::default()).unwrap(),
                1,
            ),
            ("hls", hls, 1),
            (
                "nfs_stream",
                serde_json::to_value(crate::config::apps::NfsConfig::default()).unwrap(),
                1,
            ),
            (
                "batch_writer",
                serde_json::to_value(crate::config::apps::BatchWriterConfig::default()).unwrap(),
                1,
            ),
            (
                "broadcast",
                serde_json::to_value(crate::config::apps::BroadcastConfig::default()).unwrap(),
                1,
            ),
        ]
    }

    /// `None` if the JSON does not parse as the kind's configuration (a value its type
    /// cannot hold); else what `validate` says.
    fn check(kind: &str, body: &Value, nflows: usize) -> Option<Result<(), String>> {
        let mut spec = body.clone();
        spec["kind"] = json!(kind);
        let spec: AppSpec = serde_json::from_value(spec).ok()?;
        Some(spec.validate(AT, nflows))
    }

    fn table(kind: &str) -> Vec<FieldBound> {
        bounds()
            .fields
            .into_iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, b)| b)
            .unwrap()
    }

    fn num(v: &Value) -> f64 {
        v.as_f64().unwrap_or(0.0)
    }

    /// Set `field` to `v` in `body`, and the fields whose limit is `field` along with it
    /// (a lower limit raises them, an upper one lowers them), as a user would.
    fn set(body: &mut Value, table: &[FieldBound], field: &str, v: Value) {
        body[field] = v.clone();
        for b in table {
            let cur = &body[b.field];
            if cur.is_null() {
                continue;
            }
            let lo_is = matches!(b.lo, Limit::Field(f) if f == field);
            let hi_is = matches!(b.hi, Limit::Field(f) if f == field);
            if (lo_is && num(cur) < num(&v)) || (hi_is && num(cur) > num(&v)) {
                set(body, table, b.field, v.clone());
            }
        }
    }

    fn refused_by_field(r: Option<Result<(), String>>, field: &str) -> bool {
        matches!(r, Some(Err(e)) if e.starts_with(&format!("{AT}.{field}")))
    }

    /// Each entry is a bound the check enforces: its limits pass, one step beyond each
    /// (an integer unit, or a hair for a float; the limit itself when exclusive) is
    /// refused with the field's name, and a non-multiple is refused.
    #[test]
    fn every_entry_is_a_bound_validate_enforces() {
        for (kind, base, nflows) in bases() {
            assert_eq!(
                check(kind, &base, nflows),
                Some(Ok(())),
                "{kind}: the base configuration"
            );
            let t = table(kind);
            for b in &t {
                let like = if base[b.field].is_null() {
                    json!(1u64)
                } else {
                    base[b.field].clone()
                };
                for (limit, is_lo) in [(b.lo, true), (b.hi, false)] {
                    let limit = match limit {
                        Limit::Unbounded => continue,
                        Limit::Field(f) => base[f].clone(),
                        Limit::Int(x) => json!(x),
                        Limit::Float(x) => json!(x),
                    };
                    // (at the limit, one step beyond), exact in the field's own type.
                    let (at_limit, beyond) = if like.is_f64() {
                        let (x, step) = (num(&limit), 1e-9);
                        let at = if is_lo && b.lo_exclusive { x + step } else { x };
                        let beyond = if is_lo {
                            if b.lo_exclusive {
                                x
                            } else {
                                x - step
                            }
                        } else {
                            x + step
                        };
                        (json!(at), (beyond >= 0.0).then(|| json!(beyond)))
                    } else {
                        let x = limit.as_u64().expect("an integer limit");
                        let at = if is_lo && b.lo_exclusive { x + 1 } else { x };
                        let beyond = if is_lo {
                            if b.lo_exclusive {
                                Some(x)
                            } else {
                                x.checked_sub(1)
                            }
                        } else {
                            x.checked_add(1)
                        };
                        (json!(at), beyond.map(|v| json!(v)))
                    };
                    let mut ok = base.clone();
                    set(&mut ok, &t, b.field, at_limit.clone());
                    assert_eq!(
                        check(kind, &ok, nflows),
                        Some(Ok(())),
                        "{kind}.{}: {at_limit} at its limit",
                        b.field
                    );
                    let Some(beyond) = beyond else { continue };
                    let mut bad = ok.clone();
                    bad[b.field] = beyond.clone();
                    assert!(
                        refused_by_field(check(kind, &bad, nflows), b.field),
                        "{kind}.{}: {beyond} past its limit was not refused by name: {:?}",
                        b.field,
                        check(kind, &bad, nflows)
                    );
                }
                if let Some(m) = b.multiple_of {
                    let mut bad = base.clone();
                    bad[b.field] = json!(num(&base[b.field]) as u64 + m / 2);
                    assert!(
                        refused_by_field(check(kind, &bad, nflows), b.field),
                        "{kind}.{}: not a multiple of {m}",
                        b.field
                    );
                }
            }
        }
    }

    /// Fields whose product the check ties to the number of connections rather than to a
    /// range (`senders x connections_per_sender` = the app's flows): a huge value is
    /// refused as a mismatch, not as out of range.
    const TIED_TO_CONNECTIONS: [(&str, &str); 2] = [
        ("broadcast", "senders"),
        ("broadcast", "connections_per_sender"),
    ];

    /// Every field the check refuses at an extreme has an entry, and the entry says so:
    /// 0 refused means a positive (or exclusive) lower limit, the largest value refused
    /// means an upper limit. A negative float refused means a lower limit.
    #[test]
    fn every_field_validate_bounds_has_an_entry() {
        for (kind, base, nflows) in bases() {
            let t = table(kind);
            for (field, value) in base.as_object().unwrap() {
                if !(value.is_number() || value.is_null()) {
                    continue;
                }
                let tied = TIED_TO_CONNECTIONS.contains(&(kind, field.as_str()));
                let entry = t.iter().find(|b| b.field == field);
                let (low, high) = if value.is_f64() {
                    (json!(-1.0), json!(1e300))
                } else {
                    // The largest value the field's type holds: try u64, then u32.
                    let mut high = json!(u64::MAX);
                    let mut probe = base.clone();
                    probe[field] = high.clone();
                    if check(kind, &probe, nflows).is_none() {
                        high = json!(u32::MAX);
                    }
                    (json!(0), high)
                };
                for (probe_value, is_low) in [(low, true), (high, false)] {
                    if tied && !is_low {
                        continue;
                    }
                    let mut probe = base.clone();
                    probe[field] = probe_value.clone();
                    if !refused_by_field(check(kind, &probe, nflows), field) {
                        continue;
                    }
                    let e = entry.unwrap_or_else(|| panic!("{kind}.{field}: validate() refuses {probe_value} but the bounds table has no entry"));
                    let limited = if is_low {
                        e.lo != Limit::Unbounded && (e.lo_exclusive || e.lo != Limit::Int(0))
                    } else {
                        e.hi != Limit::Unbounded
                    };
                    assert!(limited, "{kind}.{field}: validate() refuses {probe_value}, the table's entry {e:?} does not");
                }
            }
        }
    }

    #[test]
    fn the_connection_counts_are_what_validate_accepts() {
        for (kind, base, _) in bases() {
            let c = bounds()
                .connections
                .into_iter()
                .find(|(k, _)| *k == kind)
                .unwrap()
                .1;
            if kind == "broadcast" {
                continue; // senders x connections_per_sender, checked by its own test
            }
            assert_eq!(
                check(kind, &base, c.lo as usize),
                Some(Ok(())),
                "{kind}: {} connections",
                c.lo
            );
            if c.lo > 1 {
                assert!(
                    check(kind, &base, c.lo as usize - 1).unwrap().is_err(),
                    "{kind}"
                );
            }
            if let Some(hi) = c.hi {
                assert_eq!(
                    check(kind, &base, hi as usize),
                    Some(Ok(())),
                    "{kind}: {hi} connections"
                );
                assert!(
                    check(kind, &base, hi as usize + 1).unwrap().is_err(),
                    "{kind}: {} connections",
                    hi + 1
                );
            } else {
                assert_eq!(
                    check(kind, &base, 1000),
                    Some(Ok(())),
                    "{kind}: 1000 connections"
                );
            }
        }
    }

    /// Each choice is a name the configuration takes, a name beyond them is refused, and
    /// they are the names of every variant (the match below stops compiling when a variant
    /// is added).
    #[test]
    fn the_choices_are_the_names_the_configuration_takes() {
        use crate::config::apps::Overflow;
        let every = |o: Overflow| match o {
            Overflow::DropOldest | Overflow::DropNewest => serde_json::to_value(o).unwrap(),
        };
        let variants: Vec<Value> = [Overflow::DropOldest, Overflow::DropNewest]
            .into_iter()
            .map(every)
            .collect();
        assert_eq!(
            variants,
            Overflow::NAMES.iter().map(|n| json!(n)).collect::<Vec<_>>()
        );
        for (kind, fields) in bounds().choices {
            let (_, base, nflows) = bases().into_iter().find(|b| b.0 == kind).unwrap();
            for (field, names) in fields {
                for name in names {
                    let mut body = base.clone();
                    body[field] = json!(name);
                    assert_eq!(
                        check(kind, &body, nflows),
                        Some(Ok(())),
                        "{kind}.{field}: {name}"
                    );
                }
                let mut body = base.clone();
                body[field] = json!("no_such_name");
                assert_eq!(
                    check(kind, &body, nflows),
                    None,
                    "{kind}.{field}: a name beyond the choices"
                );
            }
        }
    }

    #[test]
    fn the_profile_bitrate_bound_is_what_validate_enforces() {
        let (_, base, _) = bases().into_iter().find(|b| b.0 == "hls").unwrap();
        let [b] = hls::PROFILE_BOUNDS else {
            panic!("one profile field is bounded")
        };
        let (Limit::Int(lo), Limit::Int(hi)) = (b.lo, b.hi) else {
            panic!("integer limits")
        };
        for (v, ok) in [(lo, true), (hi, true), (lo - 1, false), (hi + 1, false)] {
            let mut body = base.clone();
            body["profiles"][0][b.field] = json!(v);
            let r = check("hls", &body, 1).unwrap();
            assert_eq!(r.is_ok(), ok, "bitrate {v}: {r:?}");
        }
    }
}
