//! Websocket broadcasts over the app interface (issue 9, story 004).
use crate::common;

use common::*;
use tcplab_core::app::broadcast::BroadcastConfig;
use tcplab_core::app::{AppInstanceConfig, AppOutput, AppSpec, Column, Side, Value};
use tcplab_core::config::*;
use tcplab_core::sim::{SimOutput, Simulator};

const US: u64 = 1_000;
const MS: u64 = 1_000_000;
const GBIT: u64 = 1_000_000_000;

/// A fan-in: `m` sender hosts -> one switch -> one receiver (node `m`; the switch is
/// `m + 1`), `c` connections per sender.
struct Fan {
    m: u32,
    c: u32,
    /// Senders' links.
    access_bps: u64,
    /// The switch port into the receiver, with a pfifo of `port_limit`.
    port_bps: u64,
    port_limit: u32,
    /// Every link's one-way delay.
    hop_delay_ns: u64,
}

/// 10 Gbit/s everywhere, a deep switch port.
fn fan(m: u32, c: u32, hop_delay_ns: u64) -> Fan {
    Fan {
        m,
        c,
        access_bps: 10 * GBIT,
        port_bps: 10 * GBIT,
        port_limit: 10_000,
        hop_delay_ns,
    }
}

/// The scenario of `fan`: `c` broadcast connections per sender (sender 0's first), all
/// starting at t = 0, driven by one broadcast app.
fn fan_in(fan: Fan, bc: BroadcastConfig, duration_ns: u64) -> SimConfig {
    let Fan {
        m,
        c,
        access_bps,
        port_bps,
        port_limit,
        hop_delay_ns,
    } = fan;
    let mut nodes: Vec<NodeConfig> = (0..m)
        .map(|i| NodeConfig::new(format!("app{i}"), NodeKind::Host))
        .collect();
    nodes.push(NodeConfig::new("nginx", NodeKind::Host));
    nodes.push(NodeConfig::new("switch", NodeKind::Router));
    let (dst, sw) = (m, m + 1);
    let big = QueueConfig::Pfifo {
        limit_packets: 100_000,
    };
    let mut links = Vec::new();
    for i in 0..m {
        links.push(link(
            &format!("app{i}->switch"),
            i,
            sw,
            access_bps,
            hop_delay_ns,
            big.clone(),
        ));
        links.push(link(
            &format!("switch->app{i}"),
            sw,
            i,
            access_bps,
            hop_delay_ns,
            big.clone(),
        ));
    }
    links.push(link(
        "switch->nginx",
        sw,
        dst,
        port_bps,
        hop_delay_ns,
        QueueConfig::Pfifo {
            limit_packets: port_limit,
        },
    ));
    links.push(link("nginx->switch", dst, sw, port_bps, hop_delay_ns, big));
    let mut flows = Vec::new();
    for s in 0..m {
        for k in 0..c {
            let mut f = driven_flow(&format!("bc.{s}.{k}"), s, dst, CcKind::Cubic, Side::Client);
            f.sample = false;
            flows.push(f);
        }
    }
    let app = AppInstanceConfig {
        name: "bc".into(),
        flows: (0..m * c).collect(),
        spec: AppSpec::Broadcast(BroadcastConfig {
            senders: m,
            connections_per_sender: c,
            ..bc
        }),
    };
    SimConfig {
        seed: 1,
        duration_ns,
        sample_interval_ns: 100 * MS,
        nodes,
        links,
        flows,
        apps: vec![app],
        max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
        capture: None,
    }
}

fn run(cfg: SimConfig) -> SimOutput {
    let out = Simulator::new(cfg).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    out
}

fn u64s<'a>(app: &'a AppOutput, col: &str) -> &'a [u64] {
    match app.table("bursts").unwrap().column(col) {
        Some(Column::U64(v)) => v,
        other => panic!("bursts.{col}: {other:?}"),
    }
}

fn u32s<'a>(app: &'a AppOutput, col: &str) -> &'a [u32] {
    match app.table("bursts").unwrap().column(col) {
        Some(Column::U32(v)) => v,
        other => panic!("bursts.{col}: {other:?}"),
    }
}

fn bools<'a>(app: &'a AppOutput, col: &str) -> &'a [bool] {
    match app.table("bursts").unwrap().column(col) {
        Some(Column::Bool(v)) => v,
        other => panic!("bursts.{col}: {other:?}"),
    }
}

fn get_u64(app: &AppOutput, key: &str) -> u64 {
    app.get(key)
        .and_then(|v| v.as_u64())
        .unwrap_or_else(|| panic!("{key}: {:?}", app.get(key)))
}

#[test]
fn every_burst_delivers_m_x_c_x_s_bytes_when_nothing_is_dropped() {
    // 3 senders x 20 connections, messages of 3000 bytes (three segments), five bursts of
    // 5 ms every 100 ms, on 10 Gbit/s links with room for everything: nothing is dropped,
    // so each burst delivers M x C x S bytes and completes.
    let (m, c, s) = (3u32, 20u32, 3000u64);
    let bc = BroadcastConfig {
        message_bytes: s,
        window_ns: 5 * MS,
        interval_ns: 100 * MS,
        first_burst_ns: 50 * MS,
        bursts: Some(5),
        ..Default::default()
    };
    let out = run(fan_in(fan(m, c, 50 * US), bc, 600 * MS));
    let app = &out.apps[0];
    assert_eq!(app.kind, "broadcast");
    let per_burst = m as u64 * c as u64 * s;
    assert_eq!(get_u64(app, "bursts"), 5);
    assert_eq!(u64s(app, "delivered_bytes"), &[per_burst; 5]);
    assert_eq!(u64s(app, "bytes"), &[per_burst; 5]);
    assert_eq!(u32s(app, "messages"), &[m * c; 5]);
    assert_eq!(bools(app, "complete"), &[true; 5]);
    let starts: Vec<u64> = (0..5).map(|b| 50 * MS + b * 100 * MS).collect();
    assert_eq!(u64s(app, "start_ns"), starts.as_slice());
    assert_eq!(get_u64(app, "bytes_delivered"), 5 * per_burst);
    assert_eq!(get_u64(app, "messages"), 5 * (m * c) as u64);
    assert_eq!(get_u64(app, "messages_skipped"), 0);
    assert_eq!(get_u64(app, "incomplete_bursts"), 0);
    // What the receivers read is what the flows report.
    let received: u64 = out.flows.iter().map(|f| f.bytes_received).sum();
    assert_eq!(received, 5 * per_burst);
    // No loss: no timeout, and the only retransmissions are tail loss probes (a probe
    // fires when the receiver delays its ACK of a message's tail beyond the probe
    // timeout, 2 x SRTT + 2 jiffies: Linux v6.12 net/ipv4/tcp_output.c:
    // tcp_schedule_loss_probe()); every connection established.
    assert_eq!(out.invariant.data.dropped.nic, 0);
    assert!(out.links.iter().all(|l| l.stats.drops == 0));
    let probes: u64 = out
        .flows
        .iter()
        .map(|f| f.counters.get(tcplab_core::mib::Mib::TCPLossProbes))
        .sum();
    assert_eq!(get_u64(app, "retrans_segs"), probes);
    assert_eq!(get_u64(app, "tcp_timeouts"), 0);
    assert_eq!(get_u64(app, "curr_estab"), (m * c) as u64);
    assert_eq!(app.get("timeouts_per_estab"), Some(&Value::F64(0.0)));
    // Each message of 3000 bytes leaves as 3 segments (MSS 1448) at least.
    assert!(get_u64(app, "data_segs_out") >= 5 * 3 * (m * c) as u64);
}

#[test]
fn on_an_idle_fast_path_a_burst_completes_in_the_window_plus_the_path_delay() {
    // 2 x 100 connections, 1000-byte messages within 10 ms, two hops of 500 us at
    // 10 Gbit/s: a message is read one-way delay (1 ms) plus two frames' serialization
    // after it is written, and the burst's last message is written at its largest moment,
    // just below the window. So the completion lies in [one-way delay, window + one-way
    // delay + serialization (two frames, and as much again should the last message queue
    // behind another)], and with 200 uniform moments the largest is above 0.9 of
    // the window in every burst but with probability 0.9^200.
    let (m, c) = (2u32, 100u32);
    let (window, owd) = (10 * MS, 2 * 500 * US);
    let bc = BroadcastConfig {
        message_bytes: 1000,
        window_ns: window,
        interval_ns: 50 * MS,
        first_burst_ns: 20 * MS,
        bursts: Some(6),
        ..Default::default()
    };
    let out = run(fan_in(fan(m, c, 500 * US), bc, 400 * MS));
    let app = &out.apps[0];
    let frame_ns = (1000 + 52 + 20 + 14) * 8 / 10; // at 10 Gbit/s
    let completion = u64s(app, "completion_ns");
    assert_eq!(completion.len(), 6);
    for &t in completion {
        assert!(t >= 9 * window / 10 + owd, "completion {t} ns");
        assert!(t <= window + owd + 4 * frame_ns, "completion {t} ns");
    }
    // The summary's percentiles are the table's.
    let max_ms = match app.get("completion_ms") {
        Some(Value::Map(m)) => m
            .iter()
            .find(|(k, _)| k == "max")
            .and_then(|(_, v)| v.as_f64())
            .unwrap(),
        other => panic!("completion_ms: {other:?}"),
    };
    assert_eq!(max_ms, *completion.iter().max().unwrap() as f64 / 1e6);
}

#[test]
fn the_same_scenario_gives_the_same_bursts_and_another_seed_other_moments() {
    let bc = BroadcastConfig {
        message_bytes: 2000,
        window_ns: 10 * MS,
        interval_ns: 40 * MS,
        first_burst_ns: 20 * MS,
        ..Default::default()
    };
    let cfg = fan_in(fan(2, 30, 100 * US), bc, 200 * MS);
    let a = run(cfg.clone());
    let b = run(cfg.clone());
    assert_eq!(a.apps, b.apps);
    // Until the run ends (bursts: None): bursts at 20, 60, 100, 140, 180 ms.
    assert_eq!(get_u64(&a.apps[0], "bursts"), 5);
    // One due exactly at the end (220 ms) is not reported: it had no time to be read.
    let mut longer = cfg.clone();
    longer.duration_ns = 220 * MS;
    let l = run(longer);
    assert_eq!(get_u64(&l.apps[0], "bursts"), 5);
    assert_eq!(get_u64(&l.apps[0], "incomplete_bursts"), 0);
    assert_eq!(get_u64(&l.apps[0], "messages"), 5 * 60);
    let mut other = cfg;
    other.seed = 2;
    let c = run(other);
    assert_ne!(
        u64s(&a.apps[0], "completion_ns"),
        u64s(&c.apps[0], "completion_ns")
    );
}

/// Story 004's fan-in (`nic-ring-fan-in.yaml`): 4 senders x 48 connections, each writing a
/// 10-segment message (one initial window) at the same instant, into a receiver whose
/// NAPI drains 2 us per packet behind a ring of `ring` descriptors. The switch port is
/// deep enough to drop nothing.
fn ring_fan_in(ring: u32) -> AppOutput {
    let bc = BroadcastConfig {
        message_bytes: 14_480,
        window_ns: 0,
        interval_ns: 300 * MS,
        first_burst_ns: 50 * MS,
        bursts: Some(2),
        ..Default::default()
    };
    let mut cfg = fan_in(
        Fan {
            port_bps: 25 * GBIT,
            port_limit: 20_000,
            ..fan(4, 48, 10 * US)
        },
        bc,
        1_000 * MS,
    );
    let nginx = 4;
    cfg.nodes[nginx].nic = Some(NicConfig {
        rx_ring: ring,
        rx_queues: 1,
        rx_cost_ns: 2_000,
        ..NicConfig::default()
    });
    let out = run(cfg);
    let app = out.apps[0].clone();
    // The app's counters are the sum of its connections' (the senders' side).
    let retrans: u64 = out.flows.iter().map(|f| f.retrans_segs).sum();
    let timeouts: u64 = out.flows.iter().map(|f| f.timeouts).sum();
    assert_eq!(get_u64(&app, "retrans_segs"), retrans);
    assert_eq!(get_u64(&app, "tcp_timeouts"), timeouts);
    assert_eq!(
        u64s(&app, "retrans_segs").iter().sum::<u64>(),
        retrans,
        "per-burst retransmissions add up"
    );
    assert_eq!(u64s(&app, "tcp_timeouts").iter().sum::<u64>(), timeouts);
    // Loss or not, TCP delivers every message.
    assert_eq!(bools(&app, "complete"), &[true, true]);
    assert_eq!(get_u64(&app, "bytes_delivered"), 2 * 4 * 48 * 14_480);
    app
}

#[test]
fn a_small_nic_ring_shows_retransmissions_and_timeouts_and_a_deep_one_fewer() {
    // 1920 packets arrive at 25 Gbit/s (0.48 us apart) and drain at 2 us each: a ring of
    // 1024 overflows during each burst; one of 8192 holds a whole burst.
    let small = ring_fan_in(1024);
    let deep = ring_fan_in(8192);
    let (rs, rd) = (
        get_u64(&small, "retrans_segs"),
        get_u64(&deep, "retrans_segs"),
    );
    let (ts, td) = (
        get_u64(&small, "tcp_timeouts"),
        get_u64(&deep, "tcp_timeouts"),
    );
    assert!(
        rs > 0 && ts > 0,
        "ring 1024: {rs} retransmitted, {ts} timeouts"
    );
    assert!(
        rd < rs && td < ts,
        "ring 8192: {rd} retransmitted, {td} timeouts; ring 1024: {rs}, {ts}"
    );
    let ratio = |a: &AppOutput| {
        a.get("timeouts_per_estab")
            .and_then(|v| v.as_f64())
            .unwrap()
    };
    assert_eq!(ratio(&small), ts as f64 / 192.0);
    assert!(ratio(&deep) < ratio(&small));
    let rate = |a: &AppOutput| a.get("retrans_rate").and_then(|v| v.as_f64()).unwrap();
    assert_eq!(
        rate(&small),
        rs as f64 / get_u64(&small, "data_segs_out") as f64
    );
    // The losses slow the bursts down.
    let slowest = |a: &AppOutput| *u64s(a, "completion_ns").iter().max().unwrap();
    assert!(slowest(&small) > slowest(&deep));
}

#[test]
fn connections_not_up_when_their_message_is_due_are_skipped() {
    // The first burst at t = 0, before any handshake completes: every message is skipped
    // (a server broadcasts only to connected clients); the later bursts reach everyone.
    let bc = BroadcastConfig {
        message_bytes: 500,
        window_ns: 0,
        interval_ns: 20 * MS,
        first_burst_ns: 0,
        bursts: Some(3),
        ..Default::default()
    };
    let out = run(fan_in(fan(2, 5, 100 * US), bc, 100 * MS));
    let app = &out.apps[0];
    assert_eq!(u32s(app, "messages"), &[0, 10, 10]);
    assert_eq!(u32s(app, "delivered_messages"), &[0, 10, 10]);
    assert_eq!(get_u64(app, "messages_skipped"), 10);
    assert_eq!(get_u64(app, "bytes_delivered"), 2 * 10 * 500);
}

#[test]
fn bad_broadcast_settings_are_refused_by_field() {
    let base = BroadcastConfig {
        senders: 2,
        connections_per_sender: 3,
        ..Default::default()
    };
    base.validate("apps.0.spec", 6).unwrap();
    type Edit = Box<dyn Fn(&mut BroadcastConfig)>;
    let cases: Vec<(&str, usize, Edit)> = vec![
        ("apps.0.spec.connections_per_sender: 3 x senders 2 = 6 connections, but the app drives 5 flows", 5, Box::new(|_| {})),
        ("apps.0.spec.senders: 0, expected at least 1", 6, Box::new(|c| c.senders = 0)),
        ("apps.0.spec.connections_per_sender: 0, expected", 6, Box::new(|c| c.connections_per_sender = 0)),
        ("apps.0.spec.message_bytes: 0 is outside [1, 2^40]", 6, Box::new(|c| c.message_bytes = 0)),
        ("apps.0.spec.window_ns: 2000000000 is longer than interval_ns 1000000000", 6, Box::new(|c| c.window_ns = 2_000_000_000)),
        ("apps.0.spec.interval_ns: 10 is outside [1000000,", 6, Box::new(|c| {
            c.interval_ns = 10;
            c.window_ns = 0;
        })),
        ("apps.0.spec.bursts: 0, expected at least 1", 6, Box::new(|c| c.bursts = Some(0))),
    ];
    for (want, nflows, edit) in cases {
        let mut c = base.clone();
        edit(&mut c);
        let err = c.validate("apps.0.spec", nflows).unwrap_err();
        assert!(err.starts_with(want), "want {want:?}, got {err:?}");
        assert!(!err.contains('\n'));
    }
    // Through the scenario: the app's field path.
    let mut cfg = fan_in(
        Fan {
            port_limit: 100,
            ..fan(2, 3, 100 * US)
        },
        BroadcastConfig::default(),
        200 * MS,
    );
    if let AppSpec::Broadcast(b) = &mut cfg.apps[0].spec {
        b.message_bytes = 0;
    }
    let err = Simulator::new(cfg).err().unwrap();
    assert!(err.starts_with("apps.0.spec.message_bytes: 0"), "{err}");
}

/// When each message's ACK reached the sender, from its last byte's send: (message end,
/// ms) for every message, from a capture at the sender.
fn ack_delays_ms(out: &SimOutput) -> Vec<(u64, f64)> {
    use tcplab_core::capture::{DIR_IN, DIR_OUT};
    let c = out.capture.as_ref().unwrap();
    let mut sent: Vec<(u64, u64)> = Vec::new(); // (end_seq, t_ns) of each data packet
    let mut out_rows = Vec::new();
    for i in 0..c.len() {
        if c.dir[i] == DIR_OUT && c.end_seq[i] > c.seq[i] {
            sent.push((c.end_seq[i], c.t_ns[i]));
        }
    }
    let mut k = 0;
    for i in 0..c.len() {
        if c.dir[i] != DIR_IN {
            continue;
        }
        while k < sent.len() && sent[k].0 <= c.ack_seq[i] {
            out_rows.push((sent[k].0, (c.t_ns[i] - sent[k].1) as f64 / 1e6));
            k += 1;
        }
    }
    out_rows
}

#[test]
fn a_message_of_one_full_segment_is_acked_when_read_not_at_the_delayed_ack_timer() {
    // Linux v6.12 tcp_measure_rcv_mss() (since v6.6, "tcp: fix delayed ACKs for MSS
    // boundary condition"): a full-sized segment with PSH (the end of a write,
    // tcp_mark_push()) sets ICSK_ACK_PUSHED, and the reader that drains it sends the ACK
    // (__tcp_cleanup_rbuf()); a shorter one sets it too. So a one-way message per 100 ms,
    // each one segment, is ACKed one RTT (10 ms) after it left, also after the 16 quick
    // ACKs of the connection's start are spent; before, tcplab's receiver held it for the
    // delayed-ACK timer (40 ms). The peer never replies with data: no ping-pong mode.
    for message_bytes in [1448u64, 1000] {
        let bc = BroadcastConfig {
            message_bytes,
            window_ns: 0,
            interval_ns: 100 * MS,
            first_burst_ns: 50 * MS,
            bursts: Some(40),
            ..Default::default()
        };
        let mut cfg = fan_in(fan(1, 1, 2_500 * US), bc, 4_200 * MS);
        cfg.capture = Some(tcplab_core::capture::CaptureConfig {
            flow: 0,
            at: tcplab_core::capture::CaptureAt::Sender,
            max_packets: 100_000,
        });
        let out = run(cfg);
        let delays = ack_delays_ms(&out);
        assert_eq!(delays.len(), 40, "{message_bytes} B: {delays:?}");
        for (end, ms) in &delays {
            assert!(
                *ms < 12.0,
                "{message_bytes} B: the message ending at {end} was acked after {ms} ms"
            );
        }
    }
}
