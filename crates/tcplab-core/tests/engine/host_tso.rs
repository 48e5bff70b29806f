//! TSO/GSO at the sender (`NodeConfig::tso`, `offload: {tso: on}`): TCP sends skbs of
//! several segments (`tcp_tso_segs()`); the qdisc on the host's first link takes each as
//! one unit (pfifo counts skbs; Linux v6.12 net/core/dev.c: qdisc_pkt_len_init() charges
//! every frame's headers); the link puts MSS frames on the wire back to back; tbf cuts a
//! GSO skb above its `max_size` into frames (net/sched/sch_tbf.c: tbf_segment()).
use crate::common;

use common::*;
use tcplab_core::capture::{CaptureAt, CaptureConfig, DIR_IN};
use tcplab_core::config::*;
use tcplab_core::sim::{SimOutput, Simulator};

const MS: u64 = 1_000_000;

fn run(cfg: SimConfig) -> SimOutput {
    let out = Simulator::new(cfg).unwrap().run();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    out
}

/// One CUBIC bulk flow a -> b over one 100 Mbit/s link, 5 ms each way, its pfifo large
/// enough to drop nothing; the sender's host with `tso`, a capture at the receiver.
fn bulk(tso: bool) -> SimConfig {
    let mut cfg = two_hosts(100_000_000, 5 * MS, 100_000, 500 * MS);
    cfg.flows.push(FlowConfig::new("f", 0, 1, CcKind::Cubic));
    cfg.nodes[0].gso_skbs = tso;
    cfg.nodes[0].tso = tso;
    cfg.capture = Some(CaptureConfig {
        flow: 0,
        at: CaptureAt::Receiver,
        max_packets: 1_000_000,
    });
    cfg
}

#[test]
fn a_tso_skb_is_one_unit_to_its_qdisc_and_mss_frames_back_to_back_on_the_wire() {
    let off = run(bulk(false));
    let on = run(bulk(true));
    let (f_off, f_on) = (&off.flows[0], &on.flows[0]);
    let (q_off, q_on) = (&off.links[0].stats, &on.links[0].stats);
    // tso off: one packet per segment through the pfifo (those still queued at the end
    // not yet counted as sent).
    assert!(q_off.sent_skbs > f_off.data_segs_out * 9 / 10);
    // tso on: the pfifo takes skbs of several segments: fewer packets than segments, and
    // with a 10 ms min_rtt (no rtt term in tcp_tso_autosize()) no skb is above
    // gso_max_size: 65536 / 1448 = 45 segments.
    assert!(q_on.sent_skbs < f_on.data_segs_out / 2, "{q_on:?} {f_on:?}");
    assert!(q_on.sent_skbs >= f_on.data_segs_out * 9 / 10 / 45);
    // Each unit is charged its frames' bytes (qdisc_pkt_len_init(): every frame's headers).
    assert!(q_on.sent_bytes / q_on.sent_skbs > 2 * 1500);
    assert!(q_off.sent_bytes / q_off.sent_skbs <= 1500 + 38);
    // Beyond the first hop every packet is an MSS frame (the NIC segmented it), and frames
    // arrive no closer than a full frame's serialization, and exactly that within a burst.
    let c = on.capture.as_ref().unwrap();
    let frame_ns = (1500 + LinkConfig::new("x", 0, 1, 1, 0).overhead_bytes as u64) * 8 * 10;
    let mut last = None;
    let mut min_gap = u64::MAX;
    for i in 0..c.t_ns.len() {
        if c.dir[i] == DIR_IN && c.end_seq[i] > c.seq[i] {
            assert!(c.end_seq[i] - c.seq[i] <= MSS);
            if let Some(t) = last {
                min_gap = min_gap.min(c.t_ns[i] - t);
            }
            last = Some(c.t_ns[i]);
        }
    }
    assert_eq!(min_gap, frame_ns);
    // The same bytes arrive either way, in about the same time (the window grows the
    // same; only the qdisc's unit changed).
    assert!(f_on.bytes_received > f_off.bytes_received * 9 / 10);
}

#[test]
fn tbf_segments_a_gso_skb_above_its_max_size_instead_of_dropping_it() {
    // A 10 Mbit/s tbf with a 2000-byte bucket: max_size 2000 holds one 1514-byte frame,
    // not an skb of two (qdisc length >= 3028). tbf_enqueue() -> tbf_segment(): the frames
    // enter the child one by one; nothing is dropped for its size.
    let mut cfg = two_hosts(1_000_000_000, 5 * MS, 100_000, 2_000 * MS);
    cfg.flows.push(FlowConfig::new("f", 0, 1, CcKind::Cubic));
    cfg.nodes[0].gso_skbs = true;
    cfg.nodes[0].tso = true;
    cfg.links[0].queue = QueueConfig::Tbf(TbfConfig {
        rate_bps: 10_000_000,
        burst_bytes: 2000,
        limit_bytes: 200_000,
        peakrate_bps: None,
        mtu_bytes: None,
        child: None,
    });
    let out = run(cfg);
    let f = &out.flows[0];
    let l = &out.links[0];
    let child = l.child.as_ref().unwrap();
    // Every segment went through the child as a frame of its own.
    assert!(
        child.stats.sent_packets + child.stats.backlog_packets as u64 >= f.data_segs_out,
        "{child:?} {f:?}"
    );
    assert_eq!(l.stats.drops, 0, "{:?}", l.stats);
    // The flow runs at the tbf's rate (~1.2 MB in 2 s at 10 Mbit/s x 1448/1514).
    assert!(f.bytes_acked > 2_000_000, "{f:?}");
}

#[test]
fn tsq_holds_a_tso_sender_to_two_skbs_of_truesize_in_its_own_qdisc() {
    // tcp_small_queue_check(): limit = max(2 * skb->truesize, pacing_rate >> 10), and an
    // skb is sent anyway while the retransmit queue holds a single skb. A CUBIC sender on
    // a 10 Mbit/s first hop (its pacing rate is a few times the link's: ~1.2-2 ms of data,
    // a few KB, under 2 x truesize of a multi-segment skb) keeps its own pfifo at no more
    // than three skbs (two within the limit and the one that crossed it), whatever its
    // cwnd. Each skb's charge (payload + overhead, SKB_HEAD on the last frame) comes back
    // at its completion: a leak would stall the flow below the link's rate.
    let mut cfg = two_hosts(10_000_000, 20 * MS, 100_000, 3_000 * MS);
    cfg.flows.push(FlowConfig::new("f", 0, 1, CcKind::Cubic));
    cfg.nodes[0].gso_skbs = true;
    cfg.nodes[0].tso = true;
    let out = run(cfg);
    let q = &out.links[0].stats;
    assert!(q.max_backlog_packets <= 3, "{q:?}");
    let f = &out.flows[0];
    // 3 s at 10 Mbit/s x 1448/1514 is 3.6 MB; slow start takes a few hundred ms.
    assert!(f.bytes_acked > 3_000_000, "{f:?}");
}

/// The sender's data packets as its capture saw them leave (whole skbs on the sender's
/// FIFO egress: tcpdump with hardware TSO): `(seq, end_seq, is_retransmission)`.
fn sent_skbs(out: &SimOutput) -> Vec<(u64, u64, bool)> {
    let c = out.capture.as_ref().unwrap();
    let mut high = 0;
    let mut v = Vec::new();
    for i in 0..c.t_ns.len() {
        if c.dir[i] == tcplab_core::capture::DIR_OUT && c.end_seq[i] > c.seq[i] {
            v.push((c.seq[i], c.end_seq[i], c.seq[i] < high));
            high = high.max(c.end_seq[i]);
        }
    }
    v
}

/// A bulk flow with `tso` whose first link loses every frame in [400 ms, 700 ms): a
/// tail loss long enough for the RTO; the capture at the sender.
fn outage(tso: bool) -> SimOutput {
    let mut cfg = two_hosts(100_000_000, 10 * MS, 100_000, 2_000 * MS);
    cfg.flows.push(FlowConfig::new("f", 0, 1, CcKind::Cubic));
    cfg.nodes[0].gso_skbs = tso;
    cfg.nodes[0].tso = tso;
    cfg.links[0].loss = LossConfig::Outage {
        start_ns: 400 * MS,
        end_ns: 700 * MS,
    };
    cfg.capture = Some(CaptureConfig {
        flow: 0,
        at: CaptureAt::Sender,
        max_packets: 1_000_000,
    });
    run(cfg)
}

#[test]
fn a_lost_skb_is_retransmitted_as_one_skb_up_to_the_cwnd_and_never_across_skbs() {
    // Linux v6.12 tcp_xmit_retransmit_queue() -> __tcp_retransmit_skb(): a lost skb goes
    // again whole, cut by tcp_fragment() at cur_mss * (cwnd - packets_in_flight). After
    // the RTO, slow start from cwnd 1 gives quotas of 2, 3, ... segments: retransmitted
    // skbs of several segments, each inside one skb as first sent. tso off: one segment each.
    let off = sent_skbs(&outage(false));
    assert!(off.iter().any(|s| s.2));
    assert!(off.iter().all(|s| s.1 - s.0 <= MSS));
    let on = sent_skbs(&outage(true));
    let originals: Vec<(u64, u64)> = on.iter().filter(|s| !s.2).map(|s| (s.0, s.1)).collect();
    let rtx: Vec<(u64, u64)> = on.iter().filter(|s| s.2).map(|s| (s.0, s.1)).collect();
    assert!(rtx.iter().any(|r| r.1 - r.0 > MSS), "{rtx:?}");
    for r in &rtx {
        assert!(
            originals.iter().any(|o| o.0 <= r.0 && r.1 <= o.1),
            "retransmission {r:?} spans skbs"
        );
    }
}

/// New-data skbs the sender sent after `from_ns`: `(seq, end_seq)`, from a sender capture.
fn new_data_skbs(out: &SimOutput, from_ns: u64) -> Vec<(u64, u64)> {
    let c = out.capture.as_ref().unwrap();
    let mut high = 0;
    let mut v = Vec::new();
    for i in 0..c.t_ns.len() {
        if c.dir[i] == tcplab_core::capture::DIR_OUT && c.end_seq[i] > c.seq[i] {
            if c.seq[i] >= high && c.t_ns[i] >= from_ns {
                v.push((c.seq[i], c.end_seq[i]));
            }
            high = high.max(c.end_seq[i]);
        }
    }
    v
}

/// One flow over a 100 Mbit/s, 10 ms bottleneck (a 1-BDP pfifo) behind a fast first hop,
/// its sender with `tso`, a capture at the sender.
fn behind_bottleneck(cc: CcKind, tso: bool) -> SimConfig {
    let mut cfg = dumbbell(
        1,
        cc,
        100_000_000,
        10 * MS,
        QueueConfig::Pfifo {
            limit_packets: bdp_packets(100_000_000, 20 * MS),
        },
        3_000 * MS,
    );
    cfg.nodes[0].gso_skbs = tso;
    cfg.nodes[0].tso = tso;
    cfg.capture = Some(CaptureConfig {
        flow: 0,
        at: CaptureAt::Sender,
        max_packets: 1_000_000,
    });
    cfg
}

#[test]
fn tso_deferral_waits_for_a_larger_skb_while_acks_come_within_a_millisecond() {
    // Linux v6.12 tcp_tso_should_defer(): a CUBIC sender in congestion avoidance gets a
    // delayed ACK for 2 segments every ~0.24 ms (2 x 1514 B at 100 Mbit/s), so its last
    // write is always under 1 ms old and the rtx head (sent ~1 RTT ago) older than srtt/2;
    // an skb of the 2 segments an ACK frees is below max_segs and below a third of the
    // cwnd (cwnd > 6), so it waits until the room reaches one of them. Without deferral
    // each ACK sends its 2 segments (the tso-off path, or tcplab before this change).
    let on = run(behind_bottleneck(CcKind::Cubic, true));
    let skbs = new_data_skbs(&on, 1_000 * MS);
    let small = skbs.iter().filter(|s| s.1 - s.0 <= 2 * MSS).count();
    assert!(skbs.len() > 500, "{}", skbs.len());
    assert!(
        small * 10 < skbs.len(),
        "{small} of {} skbs <= 2 MSS",
        skbs.len()
    );
    // Deferral holds skbs back by at most ~1 ms: the same bytes arrive as with segments
    // released per ACK (tso off).
    let off = run(behind_bottleneck(CcKind::Cubic, false));
    let (a_on, a_off) = (on.flows[0].bytes_acked, off.flows[0].bytes_acked);
    assert!(
        a_on > a_off * 97 / 100 && a_on < a_off * 103 / 100,
        "{a_on} {a_off}"
    );
}

#[test]
fn at_the_receive_window_edge_a_part_mss_goes_out_and_never_two_unacked() {
    // Linux v6.12 tcp_write_xmit(): tcp_snd_wnd_test() only needs the first MSS inside the
    // window; tcp_mss_split_point() cuts at the window's edge, a part-MSS included, unless
    // tcp_nagle_check() holds it: Nagle on (nonagle 0), packets out and a part-MSS skb
    // still unacknowledged (tcp_minshall_check()). A receive-window-limited sender so sends
    // part-MSS skbs mid-stream, never a second while the first is unacked. (tcplab before:
    // whole segments only, so this fails there. The Minshall hold itself is also exercised
    // by the unit table `mss_split_point_cuts_at_quota_window_or_tail`.)
    let mut cfg = behind_bottleneck(CcKind::Cubic, true);
    cfg.flows[0].tcp.tcp_rmem = [4096, 65536, 65536];
    let out = run(cfg);
    let c = out.capture.as_ref().unwrap();
    let mut snd_una = 0;
    let mut high = 0;
    let mut sml: Option<u64> = None;
    let mut partials = 0;
    for i in 0..c.t_ns.len() {
        if c.dir[i] == DIR_IN {
            snd_una = snd_una.max(c.ack_seq[i]);
            continue;
        }
        if c.end_seq[i] <= c.seq[i] || c.seq[i] < high {
            continue;
        }
        high = c.end_seq[i];
        if (c.end_seq[i] - c.seq[i]) % MSS != 0 {
            // tcplab applies Nagle's Minshall check where tcp_mss_split_point() cuts a
            // longer skb, not yet tcp_nagle_test()'s hold on a tail skb of one part
            // segment (docs/kernel-pin.md): only the former are held to it.
            if let (Some(e), true) = (sml, c.end_seq[i] - c.seq[i] > MSS) {
                assert!(
                    e <= snd_una,
                    "part-MSS skb at {} while {e} unacked",
                    c.seq[i]
                );
            }
            sml = Some(c.end_seq[i]);
            partials += 1;
        }
    }
    assert!(partials > 10, "{partials}");
    assert!(out.flows[0].bytes_acked > 1_000_000);
}

/// A pod (0) behind its veth into its node (1, `orphan`: the veth crossing), the node's
/// 100 Mbit/s, 5 ms egress to a host (2); the pod with `offload: {tso: on}`, a capture at
/// the receiver. `passes_gso` as given on the pod's veth (`None`: the veth's default).
fn pod_behind_veth(passes_gso: Option<bool>) -> SimConfig {
    let pbit = 1_000_000_000_000_000;
    let pfifo = |n| QueueConfig::Pfifo { limit_packets: n };
    let veth = |from, to| LinkConfig {
        orphan: true,
        passes_gso,
        queue: pfifo(1000),
        ..LinkConfig::new(format!("veth{from}{to}"), from, to, pbit, 1_000)
    };
    let mut cfg = two_hosts(100_000_000, 5 * MS, 100_000, 1_000 * MS);
    cfg.nodes = vec![
        NodeConfig::new("pod", NodeKind::Host),
        NodeConfig::new("node", NodeKind::Router),
        NodeConfig::new("dst", NodeKind::Host),
    ];
    cfg.nodes[0].gso_skbs = true;
    cfg.nodes[0].tso = true;
    cfg.links = vec![
        veth(0, 1),
        LinkConfig {
            queue: pfifo(100_000),
            ..LinkConfig::new("node->dst", 1, 2, 100_000_000, 5 * MS)
        },
        LinkConfig {
            queue: pfifo(100_000),
            ..LinkConfig::new("dst->node", 2, 1, 100_000_000, 5 * MS)
        },
        LinkConfig {
            orphan: false,
            ..veth(1, 0)
        },
    ];
    cfg.flows.push(FlowConfig::new("f", 0, 2, CcKind::Cubic));
    cfg.capture = Some(CaptureConfig {
        flow: 0,
        at: CaptureAt::Receiver,
        max_packets: 1_000_000,
    });
    cfg
}

#[test]
fn a_pods_gso_skb_crosses_its_veth_whole_and_is_cut_at_the_nodes_egress() {
    // A veth passes GSO skbs whole (NETIF_F_GSO_SOFTWARE, drivers/net/veth.c); the node
    // forwards the skb as one (ip_finish_output_gso()) and its device cuts it into MSS
    // frames after its qdisc (validate_xmit_skb() -> skb_gso_segment(), or the NIC's TSO).
    // So the veth and the node's pfifo each count one packet per skb, and the frames
    // leave the node back to back at its 100 Mbit/s.
    let out = run(pod_behind_veth(None));
    let f = &out.flows[0];
    let (veth, egress) = (&out.links[0].stats, &out.links[1].stats);
    assert!(f.data_segs_out > 5_000, "{f:?}");
    assert!(veth.sent_skbs < f.data_segs_out / 2, "{veth:?} {f:?}");
    assert!(egress.sent_skbs < f.data_segs_out / 2, "{egress:?} {f:?}");
    // The node's qdisc charges each skb all its frames' bytes (qdisc_pkt_len_init()).
    assert!(
        egress.sent_bytes / egress.sent_skbs > 2 * 1500,
        "{egress:?}"
    );
    let c = out.capture.as_ref().unwrap();
    let frame_ns = (1500 + LinkConfig::new("x", 0, 1, 1, 0).overhead_bytes as u64) * 8 * 10;
    let (mut last, mut min_gap) = (None, u64::MAX);
    for i in 0..c.t_ns.len() {
        if c.dir[i] == DIR_IN && c.end_seq[i] > c.seq[i] {
            assert!(c.end_seq[i] - c.seq[i] <= MSS);
            if let Some(t) = last {
                min_gap = min_gap.min(c.t_ns[i] - t);
            }
            last = Some(c.t_ns[i]);
        }
    }
    assert_eq!(min_gap, frame_ns);
    // A veth set to cut (tcplab before: every link cut at the first hop) hands the node
    // MSS frames: its pfifo counts one packet per segment.
    let cut = run(pod_behind_veth(Some(false)));
    let (fc, ec) = (&cut.flows[0], &cut.links[1].stats);
    assert!(ec.sent_skbs > fc.data_segs_out * 9 / 10, "{ec:?} {fc:?}");
    // The same bytes arrive either way.
    assert!(f.bytes_acked > fc.bytes_acked * 9 / 10, "{f:?} {fc:?}");
}

/// The send buffer with tso on (issue 24, departure 5): Linux charges every queued skb its
/// truesize (`sk_wmem_queued`, checked against `sk_sndbuf` by sk_stream_memory_free()),
/// payload + SKB_TRUESIZE(MAX_TCP_HEADER) = 896 B, as `ss -m` shows on the kernel (850-940 B
/// per skb of 2 segments). Behind a 10 Mbit/s bottleneck with a deep queue the pacing rate
/// stays below 2.9 MB/s, so `tcp_tso_autosize()` gives 1 segment of the 1 ms budget and
/// `tcp_min_tso_segs` raises it to 2 (the min-RTT term is 64 KB >> (40 ms / 512 us) = 0):
/// skbs of 2896 B, charged 3792. A 256 KB buffer then holds at most
/// 262144 x 2896 / 3792 = 200203 B of data, and the flow fills it.
#[test]
fn a_tso_senders_buffer_holds_its_size_in_skb_truesize() {
    let mut cfg = dumbbell(
        1,
        CcKind::Cubic,
        10_000_000,
        20 * MS,
        QueueConfig::Pfifo {
            limit_packets: 10_000,
        },
        4_000 * MS,
    );
    cfg.nodes[0].gso_skbs = true;
    cfg.nodes[0].tso = true;
    cfg.flows[0].tcp.tcp_wmem = [4096, 262_144, 262_144];
    let mut sim = Simulator::new(cfg).unwrap();
    let skb = 2 * 1448u64;
    let cap = 262_144 * skb / (skb + tcplab_core::packet::SKB_TRUESIZE_OVERHEAD as u64);
    let mut max_held = 0u64;
    let mut t = 0;
    while t < 4_000 * MS {
        t += 100_000;
        sim.run_until(t).expect("engine error");
        let s = sim.socket(0);
        let held = s.tp.write_seq - s.tp.snd_una;
        assert!(held <= cap, "t={t}: {held} B held, the buffer holds {cap}");
        max_held = max_held.max(held);
    }
    let out = sim.finish();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    assert!(max_held >= cap - skb, "held at most {max_held} of {cap}");
}

#[test]
fn on_a_long_slow_path_the_next_ack_is_too_far_away_to_defer_for() {
    // The stable fix 295ce1eb36ae (tcp_tso_should_defer() vs large RTT): defer only while
    // the next ACK is due within min(1 ms, srtt / 2). At 5 Mbit/s ACKs come 2.4 ms or more
    // apart (a 1514 B frame's serialization, two per delayed ACK), so when an ACK frees
    // room for less than an skb the next one is always over 1 ms away: the sender sends what
    // cwnd allows and keeps cwnd in flight, as the kernel does on this path (in flight =
    // cwnd at every sample of 10 kernel runs, docs/kernel-pin.md departure 4). v6.12.0 held
    // such an skb whenever the retransmit queue's head was older than srtt / 2 (always, on
    // a long path) until the next ACK: in flight one below cwnd meanwhile.
    let q = QueueConfig::Pfifo { limit_packets: 100 };
    let mut cfg = dumbbell(1, CcKind::Cubic, 5_000_000, 50 * MS, q, 30_000 * MS);
    cfg.nodes[0].gso_skbs = true;
    cfg.nodes[0].tso = true;
    cfg.links[bottleneck(1) + 2].loss = LossConfig::Bernoulli { p: 0.01 }; // r2 -> receiver
    let out = run(cfg);
    let s = &out.series;
    let mut open = 0;
    let mut below = 0;
    for i in 0..s.t_ns.len() {
        if s.ca_state[i] == 0 && s.t_ns[i] > 2_000 * MS {
            open += 1;
            if s.inflight[i] < s.cwnd[i] {
                below += 1;
            }
        }
    }
    // 280 samples after 2 s; at 1 % loss about one in eight is in recovery (0.125 in the
    // kernel's runs of this path), so well over half remain to check.
    assert!(open > 150, "{open} samples in Open");
    assert_eq!(below, 0, "{below} of {open} Open samples below cwnd");
}
