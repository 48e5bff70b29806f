//! The packet capture (`tcplab_core::capture`): what tcpdump on the sender or the receiver
//! of a flow would record, and that it changes nothing in the run.

use crate::common;

use common::*;
use tcplab_core::capture::{CaptureAt, CaptureConfig, CaptureOutput, DIR_IN, DIR_OUT};
use tcplab_core::config::*;
use tcplab_core::packet::flags;
use tcplab_core::sim::{SimOutput, Simulator};

const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;

fn run(cfg: SimConfig) -> SimOutput {
    Simulator::new(cfg).unwrap().run()
}

/// One CUBIC flow through a 20 Mbit/s bottleneck (10 ms each way) that loses the listed
/// data packets.
fn lossy(drops: Vec<u64>, duration_ns: u64) -> SimConfig {
    let mut cfg = dumbbell(
        1,
        CcKind::Cubic,
        20_000_000,
        10 * MS,
        QueueConfig::Pfifo {
            limit_packets: 1000,
        },
        duration_ns,
    );
    cfg.links[bottleneck(1)].loss = LossConfig::DropList {
        data_packets: drops,
    };
    cfg
}

fn capture(cfg: &SimConfig, at: CaptureAt, max_packets: u64) -> SimConfig {
    let mut c = cfg.clone();
    c.capture = Some(CaptureConfig {
        flow: 0,
        at,
        max_packets,
    });
    c
}

/// Rows of one direction: (seq, end_seq, ack_seq, flags).
fn rows(c: &CaptureOutput, dir: u8) -> Vec<(u64, u64, u64, u16)> {
    (0..c.len())
        .filter(|&i| c.dir[i] == dir)
        .map(|i| (c.seq[i], c.end_seq[i], c.ack_seq[i], (c.flags[i] as u16)))
        .collect()
}

#[test]
fn capturing_changes_nothing_in_the_run() {
    let cfg = lossy(vec![300, 301, 900], 3 * S);
    let off = run(cfg.clone());
    for at in [CaptureAt::Sender, CaptureAt::Receiver] {
        let on = run(capture(&cfg, at, 1_000_000));
        assert!(off.capture.is_none() && on.capture.as_ref().is_some_and(|c| !c.is_empty()));
        assert_eq!(
            (on.events, on.packets, on.host_packets),
            (off.events, off.packets, off.host_packets)
        );
        let (a, b) = (&on.flows[0], &off.flows[0]);
        assert_eq!(
            (
                a.bytes_sent,
                a.bytes_acked,
                a.bytes_received,
                a.data_segs_out,
                a.retrans_segs,
                a.rtt.count,
                a.rtt.p99_us
            ),
            (
                b.bytes_sent,
                b.bytes_acked,
                b.bytes_received,
                b.data_segs_out,
                b.retrans_segs,
                b.rtt.count,
                b.rtt.p99_us
            )
        );
        assert_eq!(on.series.cwnd, off.series.cwnd);
        assert_eq!(on.series.srtt_us, off.series.srtt_us);
        assert_eq!(on.series.bytes_acked, off.series.bytes_acked);
    }
}

#[test]
fn the_sender_sees_every_segment_it_sent_and_every_ack_that_came_back() {
    let cfg = lossy(vec![300, 301, 900], 3 * S);
    let out = run(capture(&cfg, CaptureAt::Sender, 1_000_000));
    let c = out.capture.as_ref().unwrap();
    let f = &out.flows[0];
    assert_eq!(c.truncated, 0);
    assert_eq!(c.at, Some(CaptureAt::Sender));
    assert!(c.t_ns.windows(2).all(|w| w[0] <= w[1]), "not in time order");
    let sent = rows(c, DIR_OUT);
    let data: Vec<_> = sent.iter().filter(|r| r.1 > r.0).collect();
    // No local qdisc drop on the sender's fast access link: everything TCP sent left it.
    assert_eq!(out.links[0].stats.drops, 0);
    assert_eq!(data.len() as u64, f.data_segs_out);
    assert_eq!(data.iter().map(|r| r.1 - r.0).sum::<u64>(), f.bytes_sent);
    assert_eq!(
        data.iter().filter(|r| r.3 & flags::RETRANS != 0).count() as u64,
        f.retrans_segs
    );
    // Every retransmission repeats a range sent before (Linux's tcp_retransmit_skb resends
    // an skb of the retransmit queue), and the highest byte sent is snd_nxt.
    let mut high = 0;
    for r in &data {
        if r.3 & flags::RETRANS != 0 {
            assert!(r.1 <= high, "retransmission {r:?} beyond snd_nxt {high}");
        } else {
            assert_eq!(r.0, high, "new data must start at snd_nxt");
        }
        high = high.max(r.1);
    }
    assert!(f.retrans_segs >= 3);
    // The ACKs the sender received: the last one is what it knows acknowledged.
    let acks = rows(c, DIR_IN);
    assert_eq!(acks.last().unwrap().2, f.bytes_acked);
    assert!(
        acks.windows(2).all(|w| w[0].2 <= w[1].2),
        "cumulative ACKs went backwards"
    );
    // The handshake: our SYN first, the SYN-ACK back, then data.
    assert_eq!(
        (c.dir[0], (c.flags[0] as u16) & flags::SYN),
        (DIR_OUT, flags::SYN)
    );
    let synack = (0..c.len()).find(|&i| c.dir[i] == DIR_IN).unwrap();
    assert_eq!((c.flags[synack] as u16) & flags::SYN, flags::SYN);
    // TSval is the sender's clock at the capture point (no qdisc wait on the fast access
    // link beyond serialization of what is ahead), TSecr echoes the peer's.
    for i in 0..c.len() {
        assert!(c.tsval_ns[i] <= c.t_ns[i] + tcplab_core::time::BOOT_NS);
    }
}

#[test]
fn the_receiver_sees_a_lost_segment_as_a_hole_and_sacks_above_it() {
    // Data packet 300 is lost at the bottleneck: the receiver's ACKs stay at its start and
    // SACK what arrived above it (RFC 2018: the first block holds the latest segment),
    // until the retransmission fills the hole. The flow writes 3000 segments and is done
    // well before the end, so its last ACK is not held back by a delayed ACK.
    let mut cfg = lossy(vec![300], 3 * S);
    cfg.flows[0].app = AppConfig::BulkBytes { bytes: 3000 * MSS };
    let at_sender = run(capture(&cfg, CaptureAt::Sender, 1_000_000));
    let s = at_sender.capture.as_ref().unwrap();
    let lost = rows(s, DIR_OUT)
        .into_iter()
        .filter(|r| r.1 > r.0)
        .nth(300)
        .unwrap();
    let out = run(capture(&cfg, CaptureAt::Receiver, 1_000_000));
    let c = out.capture.as_ref().unwrap();
    let f = &out.flows[0];
    let received: Vec<_> = rows(c, DIR_IN).into_iter().filter(|r| r.1 > r.0).collect();
    // The hole: the first arrival of `lost` is missing; its retransmission arrives later.
    let first_above = received.iter().position(|r| r.0 >= lost.1).unwrap();
    assert!(received[..first_above].iter().all(|r| r.1 <= lost.0));
    assert!(received[first_above..]
        .iter()
        .any(|r| (r.0, r.1) == (lost.0, lost.1) && r.3 & flags::RETRANS != 0));
    // The receiver's ACKs between the hole and its repair.
    let mut sacked_acks = 0;
    for i in 0..c.len() {
        if c.dir[i] != DIR_OUT || c.num_sacks[i] == 0 {
            continue;
        }
        assert!(
            (c.flags[i] as u16) & flags::DSACK == 0,
            "no duplicate arrived"
        );
        assert_eq!(
            c.ack_seq[i], lost.0,
            "ACK with SACK blocks must stay at the hole"
        );
        assert_eq!(
            c.sack_start[0][i], lost.1,
            "the SACK block starts where the hole ends"
        );
        assert!(c.sack_end[0][i] > lost.1);
        sacked_acks += 1;
    }
    assert!(
        sacked_acks >= 3,
        "three duplicate ACKs at least, got {sacked_acks}"
    );
    // In the receiver's ACKs, the last acknowledges everything it received: all of it.
    let acks = rows(c, DIR_OUT);
    assert_eq!(
        (acks.last().unwrap().2, f.bytes_received),
        (3000 * MSS, 3000 * MSS)
    );
}

#[test]
fn a_duplicate_arrival_is_reported_as_a_dsack_first_block() {
    // A spurious retransmission (RFC 2883): the sender resends a segment the receiver has.
    // Reordering makes it: every reordered segment arrives after its successors, so the
    // sender's RACK may retransmit segments that were only late. Any D-SACK block then
    // lies at or below the ACK (a duplicate of acknowledged data) or inside a SACKed range.
    let mut cfg = dumbbell(
        1,
        CcKind::Cubic,
        20_000_000,
        10 * MS,
        QueueConfig::Pfifo {
            limit_packets: 1000,
        },
        3 * S,
    );
    cfg.links[bottleneck(1)].reorder = Some(ReorderConfig {
        p: 0.02,
        delay_ns: 30 * MS,
    });
    let out = run(capture(&cfg, CaptureAt::Receiver, 1_000_000));
    let c = out.capture.as_ref().unwrap();
    let mut dsacks = 0;
    for i in
        (0..c.len()).filter(|&i| c.dir[i] == DIR_OUT && (c.flags[i] as u16) & flags::DSACK != 0)
    {
        assert!(c.num_sacks[i] >= 1);
        let (s, e) = (c.sack_start[0][i], c.sack_end[0][i]);
        let below_ack = e <= c.ack_seq[i];
        let inside =
            (1..c.num_sacks[i] as usize).any(|b| c.sack_start[b][i] <= s && e <= c.sack_end[b][i]);
        assert!(
            below_ack || inside,
            "D-SACK [{s}, {e}) neither below ACK {} nor inside a SACK block",
            c.ack_seq[i]
        );
        dsacks += 1;
    }
    // The receiver sent D-SACKs for old duplicates (TCPDSACKOldSent counts when one is set;
    // a later one may replace it before an ACK goes out).
    let old = out.flows[0]
        .counters
        .get(tcplab_core::mib::Mib::TCPDSACKOldSent);
    assert!(
        old > 0 && dsacks > 0 && dsacks as u64 <= old + out.flows[0].retrans_segs,
        "{dsacks} D-SACKs, {old} set"
    );
}

#[test]
fn the_capture_is_the_same_in_two_runs() {
    let cfg = capture(&lossy(vec![100, 500], 2 * S), CaptureAt::Sender, 1_000_000);
    let (a, b) = (run(cfg.clone()), run(cfg));
    let (a, b) = (a.capture.unwrap(), b.capture.unwrap());
    assert_eq!(
        (&a.t_ns, &a.seq, &a.ack_seq, &a.tsval_ns, &a.ip_id),
        (&b.t_ns, &b.seq, &b.ack_seq, &b.tsval_ns, &b.ip_id)
    );
}

#[test]
fn max_packets_keeps_the_first_ones_and_counts_the_rest() {
    let cfg = lossy(vec![], S);
    let full = run(capture(&cfg, CaptureAt::Sender, 1_000_000))
        .capture
        .unwrap();
    let cut = run(capture(&cfg, CaptureAt::Sender, 100)).capture.unwrap();
    assert_eq!(cut.len(), 100);
    assert_eq!(cut.truncated as usize, full.len() - 100);
    assert_eq!(&cut.t_ns[..], &full.t_ns[..100]);
    assert_eq!(&cut.seq[..], &full.seq[..100]);
}

#[test]
fn ip_ids_count_the_senders_packets() {
    // Each socket numbers its packets one by one (ip_select_ident_segs), from 0 here (the
    // capture adds the random start): the sender's as it sent them, the receiver's as they
    // arrived (nothing is lost on the way back).
    let out = run(capture(&lossy(vec![], S), CaptureAt::Sender, 1_000_000));
    let c = out.capture.unwrap();
    let ids = |dir: u8| {
        (0..c.len())
            .filter(|&i| c.dir[i] == dir)
            .map(|i| (c.ip_id[i], (c.flags[i] as u16)))
            .collect::<Vec<_>>()
    };
    for dir in [DIR_OUT, DIR_IN] {
        let got = ids(dir);
        assert_eq!(got[0], (0, flags::SYN));
        assert!(got.iter().enumerate().all(|(k, &(id, _))| id == k as u16));
    }
}

#[test]
fn a_bad_capture_is_refused_by_field() {
    let cfg = lossy(vec![], S);
    let mut c = capture(&cfg, CaptureAt::Sender, 10);
    c.capture.as_mut().unwrap().flow = 1;
    let err = Simulator::new(c).err().unwrap();
    assert!(
        err.starts_with("capture.flow: 1 is not a flow index (1 flows)"),
        "{err}"
    );
    let err = Simulator::new(capture(&cfg, CaptureAt::Sender, 0))
        .err()
        .unwrap();
    assert!(
        err.starts_with("capture.max_packets: 0 is outside [1, 100000000]"),
        "{err}"
    );
    let mut c = capture(&cfg, CaptureAt::Sender, 100_000_000);
    c.max_memory_bytes = 1 << 30;
    let err = Simulator::new(c).err().unwrap();
    assert!(
        err.starts_with("capture.max_packets: 100000000 packets may hold"),
        "{err}"
    );
    let parsed = SimConfig::parse_json(
        r#"{"seed":1,"duration_ns":1,"nodes":[],"links":[],"flows":[],"capture":{"flow":0,"at":"middle"}}"#,
    );
    assert!(parsed.unwrap_err().contains("unknown variant `middle`"));
}

/// `lossy` with fq (maxrate 10 Mbit/s, so it holds packets) on the sender's own egress.
fn fq_sender(duration_ns: u64) -> SimConfig {
    let mut cfg = lossy(vec![300], duration_ns);
    cfg.links[0].queue = QueueConfig::Fq(FqConfig {
        maxrate_bps: Some(10_000_000),
        ..FqConfig::default()
    });
    cfg
}

#[test]
fn a_timed_qdisc_is_tapped_when_it_releases_a_packet() {
    // fq paces the flow at 10 Mbit/s on the sender: tcpdump sees each segment when fq hands
    // it to the driver, spaced by the pacing, not when TCP queued it.
    let cfg = fq_sender(2 * S);
    let off = run(cfg.clone());
    let on = run(capture(&cfg, CaptureAt::Sender, 1_000_000));
    assert_eq!(
        (on.events, on.flows[0].bytes_acked),
        (off.events, off.flows[0].bytes_acked)
    );
    assert_eq!(on.links[0].qdisc, "fq");
    let c = on.capture.unwrap();
    let data: Vec<usize> = (0..c.len())
        .filter(|&i| c.dir[i] == DIR_OUT && c.end_seq[i] > c.seq[i])
        .collect();
    let f = &on.flows[0];
    // Everything TCP sent left the host but what fq still held or dropped at the end.
    let held = on.links[0].stats.backlog_packets as u64 + on.links[0].stats.drops;
    assert_eq!(data.len() as u64 + held, f.data_segs_out);
    // Departures at 10 Mbit/s: 1514-byte frames at least 1.2112 ms apart once fq paces
    // (skip the first second: fq's initial quantum lets a burst through).
    let gap_ns = 1514 * 8 * 1_000_000_000 / 10_000_000;
    let late: Vec<u64> = data.iter().map(|&i| c.t_ns[i]).filter(|&t| t > S).collect();
    assert!(late.len() > 100);
    let close = late
        .windows(2)
        .filter(|w| w[1] - w[0] + 1_000 < gap_ns)
        .count();
    assert!(
        close * 20 < late.len(),
        "{close} of {} departures closer than fq's rate allows",
        late.len()
    );
}

#[test]
fn the_receivers_capture_misses_what_its_nic_ring_dropped() {
    // A receiver whose NAPI takes 1 ms a packet (1000 packets/s) behind a ring of 16
    // descriptors cannot keep up with 20 Mbit/s (1650 frames/s): the ring drops, and
    // tcpdump there sees only what the ring passed to the stack.
    let mut cfg = lossy(vec![], 2 * S);
    cfg.nodes[1].nic = Some(NicConfig {
        rx_ring: 16,
        rx_cost_ns: 1_000_000,
        ..NicConfig::default()
    });
    let out = run(capture(&cfg, CaptureAt::Receiver, 1_000_000));
    let c = out.capture.as_ref().unwrap();
    let data_in = (0..c.len())
        .filter(|&i| c.dir[i] == DIR_IN && c.end_seq[i] > c.seq[i])
        .count() as u64;
    let nic_drops = out.invariant.data.dropped.nic;
    assert!(nic_drops > 0, "the ring dropped nothing");
    assert_eq!(
        data_in, out.invariant.data.received,
        "the capture sees exactly what the stack received"
    );
}

/// RFC 7323 section 4.3, as Linux v6.12 implements it (tcp_input.c: tcp_replace_ts_recent()):
/// the receiver's ACKs echo the TSval of the earliest segment they acknowledge; a segment is
/// taken as ts_recent only if it starts at or before rcv_wup (rcv_nxt when the last ACK went
/// out) and its TSval is not older. Replayed on the receiver's own capture, where each ACK
/// sent carries rcv_wup as its ack_seq, the rule predicts every TSecr it wrote.
#[test]
fn the_receiver_echoes_the_tsval_of_the_earliest_unacknowledged_segment() {
    let cfg = lossy(vec![300, 301, 900], 3 * S);
    let out = run(capture(&cfg, CaptureAt::Receiver, 1_000_000));
    let c = out.capture.as_ref().unwrap();
    let mut ts_recent = 0u64;
    let mut rcv_wup: Option<u64> = None; // none before the first ACK: the handshake's rules
    let mut latest_tsval = 0u64;
    let (mut acks, mut older_than_latest) = (0, 0);
    for i in 0..c.len() {
        if c.dir[i] == DIR_IN {
            let in_window_start = rcv_wup.is_none_or(|w| c.seq[i] <= w);
            if c.tsval_ns[i] != 0 && in_window_start && c.tsval_ns[i] >= ts_recent {
                ts_recent = c.tsval_ns[i];
            }
            latest_tsval = latest_tsval.max(c.tsval_ns[i]);
        } else {
            if (c.flags[i] as u16) & flags::SYN == 0 {
                assert_eq!(
                    c.tsecr_ns[i], ts_recent,
                    "ACK {i} (ack {}) echoes another TSval",
                    c.ack_seq[i]
                );
                acks += 1;
                older_than_latest += usize::from(c.tsecr_ns[i] < latest_tsval);
            }
            rcv_wup = Some(c.ack_seq[i]);
        }
    }
    assert!(acks > 100, "too few ACKs to judge: {acks}");
    // Delayed ACKs (one per two segments) and the SACKs above each hole echo an older TSval
    // than the latest segment's: the rule is not "echo the last TSval seen".
    assert!(
        older_than_latest * 4 > acks,
        "{older_than_latest} of {acks} ACKs echo an older TSval"
    );
}
