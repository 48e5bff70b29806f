//! nfs_stream over the app interface (issue 9): sequential NFS READs over `nconnect`
//! connections feeding a player (story 000).
use crate::common;

use common::*;
use tcplab_core::app::nfs::NfsConfig;
use tcplab_core::app::{AppInstanceConfig, AppOutput, AppSpec, Column, Side, Value};
use tcplab_core::config::*;
use tcplab_core::sim::{SimOutput, Simulator};

const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

fn nfs_app(flows: Vec<u32>, cfg: NfsConfig) -> AppInstanceConfig {
    AppInstanceConfig {
        name: "plex".into(),
        flows,
        spec: AppSpec::NfsStream(cfg),
    }
}

fn f64_of(out: &AppOutput, key: &str) -> f64 {
    out.get(key)
        .and_then(|v| v.as_f64())
        .unwrap_or_else(|| panic!("{key}: {:?}", out.get(key)))
}

fn u64_col<'a>(out: &'a AppOutput, table: &str, col: &str) -> &'a [u64] {
    match out.table(table).unwrap().column(col).unwrap() {
        Column::U64(v) => v,
        c => panic!("{table}.{col}: {c:?}"),
    }
}

fn u32_col<'a>(out: &'a AppOutput, table: &str, col: &str) -> &'a [u32] {
    match out.table(table).unwrap().column(col).unwrap() {
        Column::U32(v) => v,
        c => panic!("{table}.{col}: {c:?}"),
    }
}

/// `n` connections between host 0 (the NFS client, media server) and host 1 (the NFS
/// server) over one link each way.
fn shared_path(
    n: u32,
    rate_bps: u64,
    one_way_ns: u64,
    duration_ns: u64,
    cfg: NfsConfig,
) -> SimConfig {
    let mut sc = two_hosts(rate_bps, one_way_ns, 10_000, duration_ns);
    for k in 0..n {
        sc.flows.push(driven_flow(
            &format!("plex.{k}"),
            0,
            1,
            CcKind::Cubic,
            Side::Server,
        ));
    }
    sc.apps.push(nfs_app((0..n).collect(), cfg));
    sc
}

/// `n` connections from host 0 (the NFS client) each to its own server-side host
/// `k + 1` over its own pair of links (link `2k` client->server, `2k + 1`
/// server->client), so one connection's packets can be dropped alone.
fn own_paths(
    n: u32,
    rate_bps: u64,
    one_way_ns: u64,
    duration_ns: u64,
    cfg: NfsConfig,
) -> SimConfig {
    let mut nodes = vec![NodeConfig::new("media", NodeKind::Host)];
    let mut links = Vec::new();
    let q = QueueConfig::Pfifo {
        limit_packets: 10_000,
    };
    for k in 1..=n {
        nodes.push(NodeConfig::new(format!("nfs{k}"), NodeKind::Host));
        links.push(link(
            &format!("media->nfs{k}"),
            0,
            k,
            rate_bps,
            one_way_ns,
            q.clone(),
        ));
        links.push(link(
            &format!("nfs{k}->media"),
            k,
            0,
            rate_bps,
            one_way_ns,
            q.clone(),
        ));
    }
    let mut sc = SimConfig {
        seed: 1,
        duration_ns,
        sample_interval_ns: 100_000_000,
        nodes,
        links,
        flows: Vec::new(),
        apps: Vec::new(),
        max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
        capture: None,
    };
    for k in 0..n {
        sc.flows.push(driven_flow(
            &format!("plex.{k}"),
            0,
            k + 1,
            CcKind::Cubic,
            Side::Server,
        ));
    }
    sc.apps.push(nfs_app((0..n).collect(), cfg));
    sc
}

fn run(sc: SimConfig) -> SimOutput {
    let out = Simulator::new(sc).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    out
}

#[test]
fn reads_spread_evenly_over_nconnect_connections_without_loss() {
    // nconnect=4, rsize 1 MiB, readahead 16 MiB (the scenario example's tuning): 16 READs
    // in flight over a 200 Mbit/s path with 10 ms RTT, played at 80 Mbit/s.
    let n = 4u32;
    let cfg = NfsConfig {
        rsize_bytes: MIB,
        readahead_bytes: 16 * MIB,
        ..NfsConfig::default()
    };
    let rate_bps = 200_000_000;
    let duration_ns = 4_000_000_000;
    let out = run(shared_path(
        n,
        rate_bps,
        5_000_000,
        duration_ns,
        cfg.clone(),
    ));
    let app = &out.apps[0];
    let flows = u32_col(app, "requests", "flow");
    let offsets = u64_col(app, "requests", "offset_bytes");
    let reads = flows.len();
    assert_eq!(app.get("reads").unwrap().as_u64().unwrap() as usize, reads);
    assert!(reads > 40, "{reads} READs");
    // The file is read in order in READs of rsize (rows: completed READs in issue order;
    // the last few may still be outstanding at the end).
    for (i, &o) in offsets.iter().enumerate() {
        assert_eq!(o % MIB, 0);
        if i > 0 {
            assert!(o > offsets[i - 1]);
        }
    }
    assert!(
        offsets[reads - 1] / MIB < reads as u64 + 16,
        "a hole beyond the 16 MiB window"
    );
    // The first window (16 READs issued at once, every queue at the average) goes round
    // robin from the first transport: READ i on connection i mod 4
    // (xprt_switch_find_next_entry_roundrobin()).
    for (i, &f) in flows.iter().enumerate().take(16) {
        assert_eq!(f, i as u32 % n, "READ {i}");
    }
    // Shares: round robin gives every connection each n-th READ; the queue-length skip
    // only moves a READ away from a connection holding more than the average of the
    // window's W = 16 READs, so no connection's count departs from reads / n by more than
    // W. As a share of the bytes: 1/n +- W / reads.
    let w = (cfg.readahead_bytes / cfg.rsize_bytes) as f64;
    let tol = w / reads as f64;
    let Some(Value::List(shares)) = app.get("share_of_bytes") else {
        panic!("share_of_bytes")
    };
    assert_eq!(shares.len(), n as usize);
    let mut sum = 0.0;
    for (k, s) in shares.iter().enumerate() {
        let s = s.as_f64().unwrap();
        sum += s;
        assert!(
            (s - 1.0 / n as f64).abs() <= tol,
            "connection {k}: share {s}, expected 0.25 +- {tol}"
        );
    }
    assert!((sum - 1.0).abs() < 1e-9);
    assert_eq!(f64_of(app, "bytes_read") as u64, reads as u64 * MIB);
    // No loss, a path 2.5x the bitrate: no stall; startup takes at least the startup
    // buffer's bytes at the path's rate (plus a handshake and a READ call, one RTT).
    assert_eq!(app.get("stalls").unwrap().as_u64(), Some(0));
    assert_eq!(f64_of(app, "stall_s"), 0.0);
    let startup_s = f64_of(app, "startup_delay_s");
    let startup_bytes = cfg.startup_buffer_ns as f64 / 1e9 * cfg.bitrate_bps as f64 / 8.0;
    assert!(
        startup_s >= startup_bytes * 8.0 / rate_bps as f64 + 0.02,
        "startup {startup_s} s"
    );
    // Played without a stall from the start to the end of the run.
    let played = f64_of(app, "played_s");
    assert!(
        (played - (duration_ns as f64 / 1e9 - startup_s)).abs() < 1e-6,
        "played {played} s"
    );
    // The buffer series: not playing before the startup, playing after; the buffer at the
    // end is what arrived minus what was played (contiguous, in order).
    let t = u64_col(app, "series", "t_ns");
    let playing = match app.table("series").unwrap().column("playing").unwrap() {
        Column::Bool(v) => v.clone(),
        c => panic!("{c:?}"),
    };
    for (i, &ti) in t.iter().enumerate() {
        assert_eq!(playing[i], ti as f64 / 1e9 >= startup_s, "t {ti}");
    }
    // Each connection's cwnd and ssthresh come from the flow series (the server's sender).
    for k in 0..n {
        let rows = out.series.flow.iter().filter(|&&f| f == k).count();
        assert_eq!(rows, t.len(), "flow {k} series rows");
    }
}

/// One connection's data packets dropped for a while: its READ's whole reply and the
/// next `more_dropped` data packets (the tail loss probe, then RTO retransmissions).
fn outage_run(more_dropped: u64, duration_ns: u64) -> (SimOutput, NfsConfig, u64) {
    outage_run_ra(more_dropped, duration_ns, 64 * KIB)
}

fn outage_run_ra(
    more_dropped: u64,
    duration_ns: u64,
    readahead_bytes: u64,
) -> (SimOutput, NfsConfig, u64) {
    // rsize = readahead = 64 KiB: one READ in flight at a time, so every queue is at the
    // average and the READs go round robin, READ i on connection i mod 4; a reply is
    // 64 KiB + 120 B = 46 segments of 1448 B, sent alone (nothing else queued on that
    // connection), so connection 1's j-th reply is data packets 46j .. 46j + 45 of its
    // server's link, and that reply is READ 4j + 1.
    let cfg = NfsConfig {
        rsize_bytes: 64 * KIB,
        readahead_bytes,
        max_buffer_ns: 4_000_000_000,
        ..NfsConfig::default()
    };
    let segs = (cfg.rsize_bytes + cfg.reply_header_bytes).div_ceil(MSS);
    assert_eq!(segs, 46);
    // Reply 250 of connection 1: in steady state (the 4 s buffer is full after ~2 s;
    // then a READ every 64 KiB / 10 MB/s = 6.6 ms, connection 1 every 26 ms, below the
    // RTO, so its cwnd, grown past 46 while filling, is not restarted: the whole reply
    // leaves in one flight).
    let j = 250;
    let first = segs * j;
    let drop: Vec<u64> = (first..first + segs + more_dropped).collect();
    let mut sc = own_paths(4, 1_000_000_000, 1_000_000, duration_ns, cfg.clone());
    sc.links[3].loss = LossConfig::DropList { data_packets: drop };
    (run(sc), cfg, 4 * j + 1)
}

fn stuck_read(app: &AppOutput) -> (usize, u64, u64) {
    let lat = u64_col(app, "requests", "latency_ns");
    let start = u64_col(app, "requests", "start_ns");
    let i = (0..lat.len()).max_by_key(|&i| lat[i]).unwrap();
    (i, start[i], lat[i])
}

#[test]
fn a_connection_losing_its_packets_collapses_and_the_buffer_drains_at_the_playout_rate() {
    // Drop the reply and 3 more: the tail loss probe (2 srtt after the flight,
    // tcp_send_loss_probe()) and 2 RTO retransmissions; the third RTO's retransmission
    // gets through, so the READ completes after the RTOs 1 + 2 + 4 (exponential
    // backoff, tcp_retransmit_timer()), each at least TCP_RTO_MIN = 200 ms and at most
    // 200 ms + srtt + slack on this 2 ms path, plus the probe timeout (< 50 ms).
    let r = 3;
    let (out, cfg, expect_id) = outage_run(r, 6_000_000_000);
    let app = &out.apps[0];
    let (i, start_ns, lat_ns) = stuck_read(app);
    assert_eq!(
        i as u64, expect_id,
        "the slow READ is connection 1's reply 250"
    );
    assert_eq!(u32_col(app, "requests", "flow")[i], 1);
    let rtos = ((1u64 << r) - 1) as f64;
    let lat_s = lat_ns as f64 / 1e9;
    assert!(
        lat_s >= rtos * 0.2 && lat_s <= rtos * 0.21 + 0.05,
        "stuck READ took {lat_s} s"
    );
    // The playable buffer is the contiguous prefix: nothing past the hole counts, and the
    // readahead window (one READ) lets no other READ out meanwhile, so other connections
    // deliver nothing and the buffer falls at exactly the playout rate (1 s per s) from
    // the stuck READ's start to its completion.
    let t = u64_col(app, "series", "t_ns");
    let buf = u64_col(app, "series", "buffer_ns");
    let inside: Vec<usize> = (0..t.len())
        .filter(|&k| t[k] > start_ns && t[k] < start_ns + lat_ns)
        .collect();
    assert!(inside.len() >= 10, "{} samples in the outage", inside.len());
    let (a, b) = (inside[0], *inside.last().unwrap());
    let drained = buf[a] as i64 - buf[b] as i64;
    let elapsed = (t[b] - t[a]) as i64;
    assert!(
        (drained - elapsed).abs() <= 1_000,
        "drained {drained} ns of buffer in {elapsed} ns"
    );
    // Over the whole outage: the buffer before it minus the READ's latency (less the one
    // READ's worth that arrives with it), still above zero: no stall.
    let before = buf[a] + (t[a] - start_ns);
    let read_ns = cfg.rsize_bytes * 8 * 1_000_000_000 / cfg.bitrate_bps;
    assert!(
        before > lat_ns + read_ns,
        "buffer {before} ns before a {lat_ns} ns outage"
    );
    assert_eq!(app.get("stalls").unwrap().as_u64(), Some(0));
    let min_buf = (f64_of(app, "min_buffer_s") * 1e9) as u64;
    assert!(
        min_buf <= before - lat_ns + read_ns + 100_000_000,
        "min buffer {min_buf} ns, before {before} ns"
    );
    // cwnd collapse on connection 1 only (flow series, the server's sender): after the
    // RTO it is in Loss (ca_state 4) with cwnd 1 (tcp_enter_loss(): packets in flight + 1,
    // every packet marked lost) and ssthresh = CUBIC's max(cwnd x 717 / 1024, 2) of the
    // cwnd it had (bictcp_recalc_ssthresh()); the other connections lose nothing.
    let s = &out.series;
    // The outage ends before the READ does: once the last RTO's retransmission gets
    // through, the reply's other 45 segments follow in slow start from cwnd 1 (1, 2, 4, ...
    // 6 round trips of 2 ms, plus the ACK clock), so a sample in the READ's last ~15 ms may
    // see cwnd regrow; 50 ms of margin keep it out.
    let in_outage =
        |k: usize| s.t_ns[k] > start_ns + 250_000_000 && s.t_ns[k] + 50_000_000 < start_ns + lat_ns;
    let before: Vec<usize> = (0..s.t_ns.len())
        .filter(|&k| s.flow[k] == 1 && s.t_ns[k] < start_ns)
        .collect();
    let cwnd_before = s.cwnd[*before.last().unwrap()];
    // Steady before the outage (cwnd-limited by one 46-segment reply at a time).
    assert_eq!(s.cwnd[before[before.len() - 2]], cwnd_before);
    assert!(cwnd_before >= 46, "cwnd {cwnd_before} before the outage");
    let mut seen = 0;
    for k in 0..s.t_ns.len() {
        if s.flow[k] == 1 && in_outage(k) {
            seen += 1;
            assert!(s.cwnd[k] <= 2, "t {} cwnd {}", s.t_ns[k], s.cwnd[k]);
            assert_eq!(s.ca_state[k], 4, "t {}", s.t_ns[k]);
            assert_eq!(
                s.ssthresh[k],
                (cwnd_before * 717 / 1024).max(2),
                "t {}",
                s.t_ns[k]
            );
        }
        if s.flow[k] != 1 {
            assert_eq!(s.retrans_segs[k], 0, "flow {} t {}", s.flow[k], s.t_ns[k]);
            assert_eq!(s.ca_state[k], 0, "flow {} t {}", s.flow[k], s.t_ns[k]);
        }
    }
    assert!(seen >= 5, "{seen} samples of connection 1 in the outage");
}

#[test]
fn an_outage_longer_than_the_buffer_stalls_playback() {
    // The probe and 5 RTO retransmissions dropped: 1 + 2 + 4 + 8 + 16 + 32 = 63 RTOs,
    // over 12 s (the sixth RTO's retransmission gets through), longer than the 4 s buffer: playback stalls once, from when the buffer
    // runs dry until the hole is filled and the startup buffer is back.
    let (out, cfg, expect_id) = outage_run(6, 18_000_000_000);
    let app = &out.apps[0];
    let (i, start_ns, lat_ns) = stuck_read(app);
    assert_eq!(i as u64, expect_id);
    assert_eq!(app.get("stalls").unwrap().as_u64(), Some(1));
    let t = u64_col(app, "series", "t_ns");
    let buf = u64_col(app, "series", "buffer_ns");
    let k0 = t.iter().rposition(|&x| x <= start_ns).unwrap();
    // Buffer when the READ went out: at most max_buffer, at least max less one READ.
    let before = buf[k0] - (start_ns - t[k0]).min(buf[k0]);
    assert!(
        before <= cfg.max_buffer_ns && before + 200_000_000 >= cfg.max_buffer_ns,
        "buffer {before} ns"
    );
    // The stall lasts at least from the buffer running dry to the hole's filling.
    let stall_s = f64_of(app, "stall_s");
    let at_least = (lat_ns - before) as f64 / 1e9;
    assert!(
        stall_s >= at_least,
        "stalled {stall_s} s, the outage outlasted the buffer by {at_least} s"
    );
    // ... and at most that plus refilling the startup buffer at link speed after recovery
    // (generous: 2 s of playback at >= 80 Mbit/s takes < 2 s).
    assert!(
        stall_s <= at_least + cfg.startup_buffer_ns as f64 / 1e9,
        "stalled {stall_s} s"
    );
    let playing = match app.table("series").unwrap().column("playing").unwrap() {
        Column::Bool(v) => v.clone(),
        c => panic!("{c:?}"),
    };
    let stalled = (0..t.len())
        .filter(|&k| !playing[k] && t[k] > start_ns)
        .count();
    assert!(
        stalled as f64 >= (at_least * 10.0).floor() - 1.0,
        "{stalled} samples not playing"
    );
}

#[test]
fn same_scenario_same_results() {
    let a = outage_run(3, 4_000_000_000).0;
    let b = outage_run(3, 4_000_000_000).0;
    assert_eq!(a.apps, b.apps);
    assert_eq!(a.series.cwnd, b.series.cwnd);
    assert_eq!(a.series.t_ns, b.series.t_ns);
}

#[test]
fn nconnect_above_sixteen_is_rejected() {
    let sc = shared_path(
        17,
        100_000_000,
        1_000_000,
        1_000_000_000,
        NfsConfig::default(),
    );
    let e = Simulator::new(sc).err().expect("17 connections accepted");
    assert!(e.to_string().contains("apps.0.spec.nconnect: 17"), "{e}");
}

#[test]
fn reads_past_a_hole_wait_for_it() {
    // Readahead 4 READs: while connection 1's READ 4j + 1 is stuck, the window lets the
    // next three out (round robin: connections 2, 3, 0, each skipping 1, whose one task
    // is above the average), and they arrive; but the player reads the file in order,
    // so what the other connections deliver past the hole adds nothing playable until
    // it fills: the buffer still drains at the playout rate, by rate x outage, and jumps
    // by the whole window (stuck READ + the three) when the hole fills.
    let ra = 256 * KIB;
    let (out, cfg, expect_id) = outage_run_ra(3, 6_000_000_000, ra);
    let app = &out.apps[0];
    let (i, start_ns, lat_ns) = stuck_read(app);
    assert_eq!(i as u64, expect_id);
    let done_ns = start_ns + lat_ns;
    let flows = u32_col(app, "requests", "flow");
    let starts = u64_col(app, "requests", "start_ns");
    let lats = u64_col(app, "requests", "latency_ns");
    let offsets = u64_col(app, "requests", "offset_bytes");
    let past: Vec<usize> = (i + 1..flows.len())
        .filter(|&k| starts[k] < done_ns)
        .collect();
    let w = (ra / cfg.rsize_bytes) as usize;
    assert_eq!(
        past.len(),
        w - 1,
        "READs issued past the hole before it filled"
    );
    for &k in &past {
        assert_ne!(flows[k], 1);
        assert!(
            starts[k] + lats[k] < done_ns,
            "READ {k} arrived before the hole filled"
        );
        assert!(offsets[k] + cfg.rsize_bytes - offsets[i] <= ra);
    }
    assert_eq!(flows[past[0]..past[0] + 3].to_vec(), vec![2, 3, 0]);
    let t = u64_col(app, "series", "t_ns");
    let buf = u64_col(app, "series", "buffer_ns");
    let inside: Vec<usize> = (0..t.len())
        .filter(|&k| t[k] > start_ns && t[k] < done_ns)
        .collect();
    let (a, b) = (inside[0], *inside.last().unwrap());
    let drained = buf[a] as i64 - buf[b] as i64;
    let elapsed = (t[b] - t[a]) as i64;
    assert!(
        (drained - elapsed).abs() <= 1_000,
        "drained {drained} ns of buffer in {elapsed} ns"
    );
    // After the hole fills, the next sample holds at least the window's playback more
    // (less what was played since the last sample in the outage; READs issued after the
    // fill only add), and never more than the buffer cap.
    let window_ns = (ra * 8 * 1_000_000_000 / cfg.bitrate_bps) as i64;
    let after = b + 1;
    let expect = buf[b] as i64 - (t[after] - t[b]) as i64 + window_ns;
    let got = buf[after] as i64;
    assert!(
        got >= expect - 1_000 && got <= cfg.max_buffer_ns as i64,
        "buffer {got} ns after the hole filled, expected >= {expect}"
    );
}
