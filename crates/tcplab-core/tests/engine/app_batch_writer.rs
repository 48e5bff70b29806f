//! vmagent-like remote write over the app interface (issue 9): timeouts, retries with
//! backoff, a bounded queue, and what a path outage does to them.
use crate::common;

use common::*;
use tcplab_core::app::batch_writer::{BatchWriterConfig, Overflow};
use tcplab_core::app::{AppInstanceConfig, AppOutput, AppSpec, Column, Side, Value};
use tcplab_core::config::*;
use tcplab_core::sim::Simulator;

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

fn writer_app(flows: Vec<u32>, cfg: BatchWriterConfig) -> AppInstanceConfig {
    AppInstanceConfig {
        name: "vmagent".into(),
        flows,
        spec: AppSpec::BatchWriter(cfg),
    }
}

/// vmagent -> vmsingle over 100 Mbit/s, 5 ms each way, one connection.
fn scenario(duration_ns: u64, cfg: BatchWriterConfig) -> SimConfig {
    let mut sc = two_hosts(100_000_000, 5 * MS, 1000, duration_ns);
    sc.flows
        .push(driven_flow("rw", 0, 1, CcKind::Cubic, Side::Client));
    sc.apps.push(writer_app(vec![0], cfg));
    sc
}

fn run(sc: SimConfig) -> AppOutput {
    let out = Simulator::new(sc).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    out.apps.into_iter().next().unwrap()
}

fn u(app: &AppOutput, key: &str) -> u64 {
    app.get(key)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{key}: {:?}", app.get(key)))
}

fn ms(app: &AppOutput, key: &str, q: &str) -> f64 {
    match app.get(key) {
        Some(Value::Map(m)) => m
            .iter()
            .find(|(k, _)| k == q)
            .and_then(|(_, v)| v.as_f64())
            .unwrap(),
        other => panic!("{key}: {other:?}"),
    }
}

fn col_u64<'a>(app: &'a AppOutput, table: &str, col: &str) -> &'a [u64] {
    match app.table(table).unwrap().column(col) {
        Some(Column::U64(v)) => v,
        other => panic!("{table}.{col}: {other:?}"),
    }
}

fn col_u32<'a>(app: &'a AppOutput, table: &str, col: &str) -> &'a [u32] {
    match app.table(table).unwrap().column(col) {
        Some(Column::U32(v)) => v,
        other => panic!("{table}.{col}: {other:?}"),
    }
}

fn col_str<'a>(app: &'a AppOutput, table: &str, col: &str) -> &'a [String] {
    match app.table(table).unwrap().column(col) {
        Some(Column::Str(v)) => v,
        other => panic!("{table}.{col}: {other:?}"),
    }
}

/// Wire time of `bytes` of TCP payload in full-size segments (52 bytes of IP+TCP with
/// timestamps, 14 of Ethernet per frame) at `rate_bps`.
fn wire_ns(bytes: u64, rate_bps: u64) -> f64 {
    let segs = bytes.div_ceil(MSS);
    (bytes + segs * (52 + 14)) as f64 * 8.0 / rate_bps as f64 * 1e9
}

#[test]
fn on_a_clean_path_every_batch_succeeds_in_one_rtt_plus_serialization() {
    // The story's 54766-byte batches, one per second for 10 s. With an initial window
    // that holds a whole request (`ip route ... initcwnd 64`) and no slow start after
    // idle, each request leaves in one flight: its latency is one RTT (10 ms) plus the
    // serialization of the request's frames and of the response's.
    let cfg = BatchWriterConfig {
        jitter: 0.0,
        ..Default::default()
    };
    let req = cfg.request_header_bytes + cfg.body_bytes;
    let expect_ms =
        (10e6 + wire_ns(req, 100_000_000) + wire_ns(cfg.response_bytes, 100_000_000)) / 1e6;
    let mut sc = scenario(10 * S + S / 2, cfg);
    sc.flows[0].tcp.initial_cwnd = 64;
    sc.flows[0].tcp.tcp_slow_start_after_idle = false;
    let app = run(sc);
    assert_eq!(u(&app, "batches"), 10);
    assert_eq!(u(&app, "sent"), 10);
    for k in [
        "timeouts",
        "retries",
        "dropped",
        "late_responses",
        "pending",
        "in_flight",
    ] {
        assert_eq!(u(&app, k), 0, "{k}");
    }
    // A batch is taken as soon as it is produced: none ever waits.
    assert_eq!(u(&app, "max_pending"), 0);
    assert!(col_u64(&app, "series", "pending").iter().all(|&p| p == 0));
    for q in ["p50", "max"] {
        let v = ms(&app, "latency_ms", q);
        assert!(
            (v - expect_ms).abs() < 0.05,
            "{q} {v} ms, expected {expect_ms}"
        );
        // No retries, no queueing: the three latencies coincide.
        assert_eq!(ms(&app, "batch_latency_ms", q), v);
        assert_eq!(ms(&app, "delivery_delay_ms", q), v);
    }
    // One `ok` row per batch, started at the batch's production (k + 1) s.
    let start = col_u64(&app, "requests", "start_ns");
    assert_eq!(start, (1..=10).map(|k| k * S).collect::<Vec<_>>());
    assert!(col_str(&app, "requests", "outcome")
        .iter()
        .all(|o| o == "ok"));
    assert!(col_u32(&app, "requests", "attempt").iter().all(|&a| a == 1));
}

#[test]
fn with_linux_defaults_a_batch_takes_three_slow_start_rounds() {
    // Linux defaults: initcwnd 10 and slow start after idle (1 s between batches is far
    // beyond the RTO, so cwnd restarts at 10 for every batch). 38 segments leave in rounds
    // of 10, 20 and 8 (cwnd doubles per round): three RTTs, plus at most the request's and
    // response's serialization.
    let cfg = BatchWriterConfig {
        jitter: 0.0,
        ..Default::default()
    };
    let req = cfg.request_header_bytes + cfg.body_bytes;
    assert_eq!(req.div_ceil(MSS), 38);
    let lo = 30.0;
    let hi = (30e6 + wire_ns(req, 100_000_000) + wire_ns(cfg.response_bytes, 100_000_000)) / 1e6;
    let app = run(scenario(5 * S + S / 2, cfg));
    assert_eq!(u(&app, "sent"), 5);
    for q in ["p50", "max"] {
        let v = ms(&app, "latency_ms", q);
        assert!(
            v > lo && v < hi + 0.05,
            "{q} {v} ms, expected in ({lo}, {hi}]"
        );
    }
}

/// The attempts of one batch whose first attempt starts at `s1_ns` while the path is
/// down until `up_ns`, by vmagent's schedule with no jitter: every attempt whose deadline
/// comes before the path is back times out, then the worker sleeps `retry = min(2 retry,
/// retry_max)` (from `retry_min`). Returns the timed-out attempts' (start, backoff) and
/// the start of the first attempt whose deadline is after `up_ns`.
fn schedule(cfg: &BatchWriterConfig, s1_ns: u64, up_ns: u64) -> (Vec<(u64, u64)>, u64) {
    let mut failed = Vec::new();
    let mut s = s1_ns;
    let mut retry = cfg.retry_min_ns;
    while s + cfg.timeout_ns < up_ns {
        retry = (2 * retry).min(cfg.retry_max_ns);
        failed.push((s, retry));
        s += cfg.timeout_ns + retry;
    }
    (failed, s)
}

/// A writer with a 2 s timeout and backoffs of 4, 8, 16 s, on a path that is down
/// (both directions, every packet) from 2.5 s to 11.2 s.
fn outage_scenario(
    max_pending: u64,
    overflow: Overflow,
) -> (SimConfig, BatchWriterConfig, u64, u64) {
    let cfg = BatchWriterConfig {
        timeout_ns: 2 * S,
        retry_min_ns: 2 * S,
        retry_max_ns: 60 * S,
        jitter: 0.0,
        max_pending,
        overflow,
        ..Default::default()
    };
    let (down, up) = (2 * S + S / 2, 11 * S + S / 5);
    let mut sc = scenario(24 * S + S / 2, cfg.clone());
    for l in sc.links.iter_mut() {
        l.loss = LossConfig::Outage {
            start_ns: down,
            end_ns: up,
        };
    }
    (sc, cfg, down, up)
}

#[test]
fn an_outage_longer_than_the_timeout_gives_the_expected_timeouts_and_loses_no_batch() {
    let (sc, cfg, down, up) = outage_scenario(0, Overflow::DropOldest);
    assert!(
        up - down > cfg.timeout_ns,
        "the outage must outlast the timeout"
    );
    // Batches 0 and 1 (at 1 s and 2 s) are answered before the outage; batch 2, produced
    // at 3 s, is the first to meet it.
    let (failed, s_ok) = schedule(&cfg, 3 * S, up);
    assert_eq!(failed, vec![(3 * S, 4 * S), (9 * S, 8 * S)]);
    assert_eq!(s_ok, 19 * S);
    // TCP is back at the first retransmission after `up`. Its RTO doubles from its first
    // loss at 3 s (RTO ~210 ms at a 10 ms RTT), so each backoff is shorter than the time
    // since that loss plus the first RTO: the retransmission comes before
    // 2 up - 3 s + 0.21 s = 19.61 s (here 16.2 s), and with it the abandoned requests and
    // their late responses, well before the successful attempt's deadline at 21 s. So
    // the count of timeouts does not depend on TCP's exact timing.
    assert!(2 * up - 3 * S + 210 * MS + 100 * MS < s_ok + cfg.timeout_ns);

    let app = run(sc);
    let timeouts = failed.len() as u64;
    assert_eq!(u(&app, "timeouts"), timeouts);
    assert_eq!(u(&app, "retries"), timeouts);
    // Every abandoned attempt's response still came, and was discarded.
    assert_eq!(u(&app, "late_responses"), timeouts);
    // No batch lost: all 24 produced (1 s .. 24 s) were sent, nothing waits.
    assert_eq!(u(&app, "batches"), 24);
    assert_eq!(u(&app, "sent"), 24);
    assert_eq!(u(&app, "dropped"), 0);
    assert_eq!(u(&app, "pending") + u(&app, "in_flight"), 0);
    // While batch 2 was retried, batches 3 .. 18 (produced at 4 s .. 19 s) waited.
    assert_eq!(u(&app, "max_pending"), 16);
    let series_max = *col_u64(&app, "series", "pending").iter().max().unwrap();
    assert!((15..=16).contains(&series_max), "series max {series_max}");
    // The per-attempt rows of batch 2: two timeouts (latency = the timeout, with the
    // backoff slept after each), then the success at 19 s.
    let batch = col_u64(&app, "requests", "batch");
    let rows: Vec<usize> = (0..batch.len()).filter(|&i| batch[i] == 2).collect();
    assert_eq!(rows.len(), failed.len() + 1);
    let (start, lat, backoff) = (
        col_u64(&app, "requests", "start_ns"),
        col_u64(&app, "requests", "latency_ns"),
        col_u64(&app, "requests", "backoff_ns"),
    );
    let (attempt, outcome) = (
        col_u32(&app, "requests", "attempt"),
        col_str(&app, "requests", "outcome"),
    );
    for (j, &(s, b)) in failed.iter().enumerate() {
        let i = rows[j];
        assert_eq!(
            (
                attempt[i],
                start[i],
                lat[i],
                backoff[i],
                outcome[i].as_str()
            ),
            (j as u32 + 1, s, cfg.timeout_ns, b, "timeout")
        );
    }
    let i = rows[failed.len()];
    assert_eq!((attempt[i], start[i], outcome[i].as_str()), (3, s_ok, "ok"));
    assert!(
        lat[i] < 50 * MS,
        "the retry on the recovered path took {} ns",
        lat[i]
    );
    // Every other batch went through at its first attempt.
    assert_eq!(
        outcome.iter().filter(|o| *o == "timeout").count() as u64,
        timeouts
    );
    // Batch 2 took from its first attempt to 19 s; batch 3, produced at 4 s, waited too.
    assert!((ms(&app, "batch_latency_ms", "max") - (s_ok - 3 * S) as f64 / 1e6).abs() < 50.0);
    assert!(ms(&app, "delivery_delay_ms", "max") >= (s_ok - 4 * S) as f64 / 1e6);
    assert_eq!(app.get("max_backoff_s").and_then(Value::as_f64), Some(8.0));
}

#[test]
fn a_full_queue_drops_the_oldest_batch_or_the_arriving_one() {
    // The same outage with room for 10 waiting batches: of the 16 that wait, 6 are
    // dropped. vmagent's persistent queue drops its oldest (3 .. 8); the in-memory queue
    // with -remoteWrite.dropSamplesOnOverload drops the arriving ones (13 .. 18).
    for (overflow, lost) in [
        (Overflow::DropOldest, 3..=8),
        (Overflow::DropNewest, 13..=18),
    ] {
        let (sc, _, _, _) = outage_scenario(10, overflow);
        let app = run(sc);
        assert_eq!(u(&app, "dropped"), 6, "{overflow:?}");
        assert_eq!(u(&app, "max_pending"), 10);
        assert_eq!(u(&app, "sent"), 24 - 6);
        let sent: Vec<u64> = {
            let (b, o) = (
                col_u64(&app, "requests", "batch"),
                col_str(&app, "requests", "outcome"),
            );
            (0..b.len())
                .filter(|&i| o[i] == "ok")
                .map(|i| b[i])
                .collect()
        };
        let expect: Vec<u64> = (0..24).filter(|b| !lost.contains(b)).collect();
        assert_eq!(sent, expect, "{overflow:?}");
    }
}

#[test]
fn jitter_stretches_each_backoff_by_at_most_its_fraction_and_is_deterministic() {
    // With 10 % jitter both backoff bounds are drawn once per batch: the sleeps are
    // 2 x min' then doubling, with min' in [min, 1.1 min).
    let (mut sc, mut cfg, _, _) = outage_scenario(0, Overflow::DropOldest);
    cfg.jitter = 0.1;
    sc.apps[0].spec = AppSpec::BatchWriter(cfg.clone());
    let a = run(sc.clone());
    let b = run(sc.clone());
    assert_eq!(a, b, "same seed, same output");
    let backoff = col_u64(&a, "requests", "backoff_ns");
    let sleeps: Vec<u64> = backoff.iter().copied().filter(|&x| x > 0).collect();
    assert!(!sleeps.is_empty());
    for (j, &x) in sleeps.iter().enumerate() {
        let nominal = cfg.retry_min_ns << (j + 1);
        assert!(
            x >= nominal && (x as f64) < nominal as f64 * 1.1,
            "sleep {j}: {x} ns, nominal {nominal}"
        );
    }
    assert!(
        sleeps[0] > 2 * cfg.retry_min_ns,
        "a jitter of exactly 0 is unlikely"
    );
    // Another seed draws other jitter.
    sc.seed = 2;
    let c = run(sc);
    assert_ne!(col_u64(&c, "requests", "backoff_ns"), backoff);
}

#[test]
fn the_story_max_backoff_is_the_one_minute_cap_plus_jitter() {
    // vmagent's defaults (1 min timeout, backoff from 2 s doubling to a 1 min cap, 10 %
    // jitter) against a path down for 10 minutes: every sleep after the cap is reached is
    // 60 s plus up to 6 s, as the story's 65.92 s maximum.
    let cfg = BatchWriterConfig::default();
    let mut sc = scenario(12 * 60 * S, cfg);
    sc.sample_interval_ns = 10 * S;
    for l in sc.links.iter_mut() {
        l.loss = LossConfig::Outage {
            start_ns: 2 * S + S / 2,
            end_ns: 10 * 60 * S,
        };
    }
    let app = run(sc);
    let max_s = app.get("max_backoff_s").and_then(Value::as_f64).unwrap();
    assert!((60.0..66.0).contains(&max_s), "max backoff {max_s} s");
    // Attempts at 3 s, then every 60 s + backoff (2, 4, 8, 16, 32, then capped): the
    // first seven fail inside the outage.
    assert!(u(&app, "timeouts") >= 7, "{} timeouts", u(&app, "timeouts"));
    assert_eq!(u(&app, "dropped"), 0);
}

#[test]
fn several_queues_share_one_queue_of_batches_and_account_for_every_batch() {
    // -remoteWrite.queues=2: two workers (connections) take batches from one queue. A
    // batch every 10 ms comes faster than one request can take (one RTT, 10 ms, plus
    // 4.6 ms of serialization at best), so one worker cannot keep up and both are used;
    // every batch is sent, waiting, or in flight at the end.
    let cfg = BatchWriterConfig {
        interval_ns: 10 * MS,
        jitter: 0.0,
        ..Default::default()
    };
    let mut sc = two_hosts(100_000_000, 5 * MS, 1000, 2 * S + 5 * MS);
    sc.flows
        .push(driven_flow("rw.0", 0, 1, CcKind::Cubic, Side::Client));
    sc.flows
        .push(driven_flow("rw.1", 0, 1, CcKind::Cubic, Side::Client));
    sc.apps.push(writer_app(vec![0, 1], cfg));
    let app = run(sc);
    let flows = col_u32(&app, "requests", "flow");
    for f in [0, 1] {
        assert!(
            flows.iter().filter(|&&x| x == f).count() > 10,
            "connection {f} sent {} batches",
            flows.iter().filter(|&&x| x == f).count()
        );
    }
    assert_eq!(u(&app, "dropped") + u(&app, "timeouts"), 0);
    assert_eq!(
        u(&app, "sent") + u(&app, "pending") + u(&app, "in_flight"),
        u(&app, "batches")
    );
    // One every 10 ms up to 2 s.
    assert_eq!(u(&app, "batches"), 200);
    assert_eq!(u(&app, "connections"), 2);
}
