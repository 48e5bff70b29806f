//! Cilium's Bandwidth Manager (EDT stamping per pod aggregate, cilium bpf/lib/edt.h
//! edt_sched_departure()) in front of fq (Linux v6.12 net/sched/sch_fq.c) on a node's
//! uplink: pod -> node (a forwarding host) -> fq on the node's device -> receiver.

use crate::common;

use common::link;
use tcplab_core::config::*;
use tcplab_core::sim::{SimOutput, Simulator};

const SEC: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
/// The EDT program counts `wire_len` = skb->len at the device = IP + 14 (Ethernet), so
/// a full segment costs 1514 bytes of the pod's rate for 1448 of payload.
const PAYLOAD_SHARE: f64 = 1448.0 / 1514.0;

/// Nodes: 0 pod, 1 node (forwarding host), 2 receiver. The pod's veth is 10 Gbit/s; the
/// node's uplink 1 Gbit/s, 5 ms, with fq as Cilium installs it (horizon 2 s, 2^15
/// buckets) and the pod's EDT aggregate.
fn pod_scenario(
    cc: CcKind,
    rate_bps: u64,
    drop_horizon_ns: u64,
    fq: FqConfig,
    duration_ns: u64,
) -> SimConfig {
    let mut node = NodeConfig::new("node", NodeKind::Host);
    node.forwarding = true;
    let mut uplink = link(
        "node->dst",
        1,
        2,
        1_000_000_000,
        5 * MS,
        QueueConfig::Fq(fq),
    );
    uplink.edt = vec![EdtConfig {
        nodes: vec![0],
        rate_bps,
        drop_horizon_ns,
        ce_threshold_ns: None,
    }];
    let fifo = || QueueConfig::Pfifo {
        limit_packets: 1000,
    };
    SimConfig {
        seed: 1,
        duration_ns,
        sample_interval_ns: 100 * MS,
        nodes: vec![
            NodeConfig::new("pod", NodeKind::Host),
            node,
            NodeConfig::new("dst", NodeKind::Host),
        ],
        links: vec![
            link("pod->node", 0, 1, 10_000_000_000, 10_000, fifo()),
            uplink,
            link("dst->node", 2, 1, 1_000_000_000, 5 * MS, fifo()),
            link("node->pod", 1, 0, 10_000_000_000, 10_000, fifo()),
        ],
        flows: vec![FlowConfig::new("f", 0, 2, cc)],
        apps: Vec::new(),
        max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
        capture: None,
    }
}

fn cilium_fq() -> FqConfig {
    FqConfig {
        horizon_ns: 2 * SEC,
        buckets: 1 << 15,
        ..FqConfig::default()
    }
}

fn xstat(out: &SimOutput, link: usize, name: &str) -> u64 {
    out.links[link]
        .xstats
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap()
        .1
}

fn assert_pod_limit_holds(cc: CcKind) {
    let rate = 10_000_000;
    let d = 30 * SEC;
    let out = Simulator::new(pod_scenario(cc, rate, 2 * SEC, cilium_fq(), d))
        .unwrap()
        .run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let got = out.flows[0].bytes_received as f64 * 8.0 / (d as f64 / 1e9);
    let want = rate as f64 * PAYLOAD_SHARE;
    assert!(
        (got / want - 1.0).abs() < 0.02,
        "{cc:?}: goodput {got:.0} bit/s, expected {want:.0}"
    );
    assert!(
        out.links[1].edt[0].stamped > 10_000,
        "{:?}",
        out.links[1].edt
    );
}

#[test]
fn a_bbr_pod_gets_its_edt_rate_less_header_overhead() {
    assert_pod_limit_holds(CcKind::Bbr);
}

#[test]
fn a_cubic_pod_gets_its_edt_rate_less_header_overhead() {
    assert_pod_limit_holds(CcKind::Cubic);
}

#[test]
fn the_pods_socket_keeps_pacing_itself() {
    // fq on the node's device cannot set SK_PACING_FQ on the pod's socket (its packets
    // cross the veth orphaned): a BBR pod still paces with its own timer.
    let mut sim = Simulator::new(pod_scenario(
        CcKind::Bbr,
        10_000_000,
        2 * SEC,
        cilium_fq(),
        2 * SEC,
    ))
    .unwrap();
    sim.run_until(SEC).unwrap();
    assert_eq!(
        sim.socket(0).tp.sk_pacing_status,
        tcplab_core::tcp::sock::PacingStatus::Needed
    );
    assert!(sim.socket(0).stats.pacing_timer_events > 0);
}

#[test]
fn the_drop_horizon_drops_when_the_pod_sends_far_ahead() {
    // A 200 ms drop horizon at 10 Mbit/s admits ~165 frames ahead of now; a CUBIC pod,
    // whose TSQ budget is returned at the veth, pushes its whole window to the node, so
    // the EDT program drops what would leave later than that. fq's own limits are
    // raised so that only the EDT horizon drops.
    let rate = 10_000_000u64;
    let horizon = 200 * MS;
    let fq = FqConfig {
        flow_limit_packets: 10_000,
        ..cilium_fq()
    };
    let out = Simulator::new(pod_scenario(CcKind::Cubic, rate, horizon, fq, 20 * SEC))
        .unwrap()
        .run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    let edt = &out.links[1].edt[0];
    assert!(edt.drops > 0, "{edt:?}");
    assert_eq!(xstat(&out, 1, "flows_plimit"), 0);
    assert_eq!(xstat(&out, 1, "horizon_drops"), 0);
    // Every drop is a data packet the link accounts as a queue drop.
    assert_eq!(out.invariant.data.dropped.queue, edt.drops);
    assert!(out.flows[0].retrans_segs > 0);
    // fq never holds more than the horizon's worth of the pod's frames (+1 in service).
    let gap_ns = 1514 * SEC / (rate / 8);
    let most = (horizon / gap_ns + 1) as u32;
    let held = out.links[1].stats.max_backlog_packets;
    assert!(
        held <= most,
        "fq held {held} packets, horizon admits {most}"
    );
    assert!(
        held + 10 >= most,
        "the horizon was never approached: {held} of {most}"
    );
}

#[test]
fn edt_config_errors_name_the_field() {
    let mut cfg = pod_scenario(CcKind::Cubic, 0, SEC, cilium_fq(), SEC);
    let err = tcplab_core::sim::validate(&cfg).unwrap_err();
    assert!(
        err.starts_with("links.1.edt.0.rate_bps: 0 is outside [8,"),
        "{err}"
    );
    cfg.links[1].edt[0].rate_bps = 1_000_000;
    cfg.links[1].edt[0].nodes = vec![7];
    let err = tcplab_core::sim::validate(&cfg).unwrap_err();
    assert!(
        err.starts_with("links.1.edt.0.nodes: 7 is not a node index"),
        "{err}"
    );
    cfg.links[1].edt[0].nodes = vec![0];
    cfg.links[1].edt[0].drop_horizon_ns = 0;
    let err = tcplab_core::sim::validate(&cfg).unwrap_err();
    assert!(
        err.starts_with("links.1.edt.0.drop_horizon_ns: 0 is outside"),
        "{err}"
    );
}

#[test]
fn a_veth_that_keeps_the_socket_lets_tsq_hold_the_pod_back_at_fq() {
    // Cilium's BPF host routing: the pod's skb keeps skb->sk across the veth (Linux v6.12
    // skb_scrub_packet() does not orphan; bpf_redirect_neigh() skips ip_rcv_core()'s
    // skb_orphan()), so a packet held by fq on the node's device still counts against the
    // pod socket's TSQ budget (net/ipv4/tcp_output.c: tcp_small_queue_check(): about
    // max(2 skbs, 1 ms at the pacing rate); with this path's 10 ms RTT tcp_tso_autosize()
    // makes skbs of 2 segments). A CUBIC pod then keeps a handful of packets in fq instead
    // of filling its flow_limit of 100, and loses none there, at the same goodput.
    // Orphaned at the veth (the legacy path), it fills fq to flow_limit.
    let rate = 10_000_000;
    let d = 20 * SEC;
    let run = |keeps_sk: bool| {
        let mut cfg = pod_scenario(CcKind::Cubic, rate, 2 * SEC, cilium_fq(), d);
        cfg.links[0].orphan = true;
        cfg.links[0].keeps_sk = keeps_sk;
        let out = Simulator::new(cfg).unwrap().run();
        assert!(out.invariant.ok, "{}", out.invariant.message);
        out
    };
    let kept = run(true);
    let orphaned = run(false);
    let held_kept = kept.links[1].stats.max_backlog_packets;
    let held_orphaned = orphaned.links[1].stats.max_backlog_packets;
    assert!(
        held_orphaned >= 100,
        "orphaned: fq held at most {held_orphaned} packets"
    );
    assert!(xstat(&orphaned, 1, "flows_plimit") > 0);
    // TSQ's budget: 2 skbs of up to tcp_min_tso_segs (2) segments, plus the one on the wire,
    // once out of slow start (sampled every 100 ms from 1 s on). Slow start's last round may
    // briefly put more in fq (its pacing rate is 2 x cwnd/srtt: tcp_pacing_ss_ratio), but
    // never up to the flow_limit (no flows_plimit drop below).
    let q = &kept.queues;
    let steady: Vec<u32> = (0..q.t_ns.len())
        .filter(|&k| q.link[k] == 1 && q.t_ns[k] >= SEC)
        .map(|k| q.backlog_packets[k])
        .collect();
    assert!(steady.len() >= 100, "{} queue samples", steady.len());
    let steady_max = *steady.iter().max().unwrap();
    assert!(
        steady_max <= 8,
        "kept socket: fq held {steady_max} packets after slow start"
    );
    assert!(held_kept < 100, "kept socket: fq held {held_kept} packets");
    assert_eq!(xstat(&kept, 1, "flows_plimit"), 0);
    assert_eq!(kept.flows[0].retrans_segs, 0);
    let want = rate as f64 * PAYLOAD_SHARE;
    let got = kept.flows[0].bytes_received as f64 * 8.0 / (d as f64 / 1e9);
    assert!(
        (got / want - 1.0).abs() < 0.02,
        "kept socket: goodput {got:.0} bit/s, expected {want:.0}"
    );
}
