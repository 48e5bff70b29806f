//! Behaviour tests of the TCP mechanisms the README promises, each derived from the Linux
//! code it follows (v6.12 net/ipv4/tcp_input.c, tcp_output.c; net/core/sock.c): PRR,
//! F-RTO and spurious-RTO undo, TSQ, pacing, SACK compression, receive-window limiting,
//! and the RTT variance `ss` shows.
//!
//! The simulator is stepped in small increments and the sender's and receiver's state is
//! read between steps (`Simulator::socket`), so each test checks the mechanism where it
//! acts, not only its end result. Losses come from explicit drop lists (data packets
//! entering the bottleneck, counted from 0), so every scenario is exact and repeatable.

use crate::common;
use common::*;
use tcplab_core::config::*;
use tcplab_core::mib::Mib;
use tcplab_core::sim::{SimOutput, Simulator};
use tcplab_core::tcp::sock::CaState;
use tcplab_core::tcp::socket::TcpSocket;

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// Step `sim` from its current time to `until_ns` in `dt_ns` increments, calling `f` after
/// each step with the scenario time.
fn step(sim: &mut Simulator, until_ns: u64, dt_ns: u64, mut f: impl FnMut(u64, &Simulator)) {
    let mut t = sim.now_rel_ns();
    while t < until_ns {
        t = (t + dt_ns).min(until_ns);
        sim.run_until(t).expect("engine error");
        f(t, sim);
    }
}

fn finish(sim: Simulator) -> SimOutput {
    let out = sim.finish();
    assert!(out.invariant.ok, "{}", out.invariant.message);
    out
}

fn sender(sim: &Simulator, flow: usize) -> &TcpSocket {
    sim.socket(2 * flow)
}

fn receiver(sim: &Simulator, flow: usize) -> &TcpSocket {
    sim.socket(2 * flow + 1)
}

// ------------------------------------------------------------------------------ PRR

#[test]
fn prr_sends_in_proportion_to_delivery_and_ends_at_ssthresh() {
    // Linux v6.12 tcp_input.c: tcp_cwnd_reduction() (RFC 6937 PRR). While the pipe is
    // above ssthresh, each ACK sets cwnd so that the packets sent since recovery began
    // (prr_out) reach ceil(prr_delivered * ssthresh / prior_cwnd): sending is
    // delivery scaled by ssthresh/prior_cwnd. tcp_end_cwnd_reduction() then sets
    // cwnd = ssthresh when Recovery ends (CUBIC's ssthresh = prior_cwnd * 717/1024).
    //
    // Three packets of one window are dropped on a 10 Mbit/s, 40 ms path during slow
    // start; the SACKs that follow start one recovery episode.
    let mut cfg = dumbbell(
        1,
        CcKind::Cubic,
        10_000_000,
        20 * MS,
        QueueConfig::Pfifo {
            limit_packets: 1000,
        },
        5 * S,
    );
    cfg.flows[0].app = AppConfig::BulkBytes { bytes: 600 * MSS };
    cfg.flows[0].cc_params.hystart = false;
    // a receive window far above cwnd, so that only PRR limits sending during recovery
    cfg.flows[0].tcp.tcp_rmem = [4096, 6291456, 6291456];
    cfg.links[bottleneck(1)].loss = LossConfig::DropList {
        data_packets: vec![100, 104, 108],
    };
    let mut sim = Simulator::new(cfg).unwrap();

    let mut entry: Option<(u32, u32)> = None; // (prior_cwnd, ssthresh)
    let mut proportional = (0u32, 0u32); // last (prr_delivered, prr_out) with the pipe above ssthresh
    let mut bounded_steps = 0;
    let mut exit_cwnd: Option<(u32, u32)> = None; // (cwnd, ssthresh) on the step Recovery ended
    step(&mut sim, 5 * S, 20 * US, |t, sim| {
        let s = sender(sim, 0);
        let tp = &s.tp;
        if tp.ca_state == CaState::Recovery {
            let (prior, ssth) = *entry.get_or_insert((tp.prior_cwnd, tp.snd_ssthresh));
            assert_eq!(
                (tp.prior_cwnd, tp.snd_ssthresh),
                (prior, ssth),
                "t={t}: a second recovery episode"
            );
            if tp.packets_in_flight() > ssth {
                // delta < 0: prr_out <= ceil(prr_delivered * ssthresh / prior_cwnd), or the
                // one retransmission PRR forces out first
                let allowed = (s.prr_delivered as u64 * ssth as u64)
                    .div_ceil(prior as u64)
                    .max(1);
                assert!(
                    s.prr_out as u64 <= allowed,
                    "t={t}: prr_out {} > {allowed} (prr_delivered {})",
                    s.prr_out,
                    s.prr_delivered
                );
                proportional = (s.prr_delivered, s.prr_out);
            } else {
                // delta >= 0 (the pipe has fallen to ssthresh): PRR-SSRB sends at most what is
                // delivered, and never lets cwnd above ssthresh: cwnd = in_flight + min(delta, sndcnt).
                assert!(
                    tp.snd_cwnd <= ssth,
                    "t={t}: cwnd {} above ssthresh {ssth} in recovery",
                    tp.snd_cwnd
                );
                bounded_steps += 1;
            }
        } else if entry.is_some() && exit_cwnd.is_none() {
            exit_cwnd = Some((tp.snd_cwnd, tp.snd_ssthresh));
        }
    });
    let out = finish(sim);
    let c = &out.flows[0].counters;
    assert_eq!(out.flows[0].bytes_received, 600 * MSS);
    assert_eq!(c.get(Mib::TCPSackRecovery), 1, "{c:?}");
    assert_eq!(c.get(Mib::TCPTimeouts), 0, "{c:?}");

    let (prior, ssthresh) = entry.expect("no recovery");
    assert_eq!(
        ssthresh,
        (prior * 717 / 1024).max(2),
        "CUBIC's ssthresh from prior_cwnd {prior}"
    );
    assert!(
        prior >= 40,
        "the drops should hit a large window, prior_cwnd {prior}"
    );
    // While the pipe was above ssthresh: sent = delivered * ssthresh / prior_cwnd (rounded up).
    let (delivered, sent) = proportional;
    let expected = delivered as f64 * ssthresh as f64 / prior as f64;
    assert!(
        delivered as f64 >= 0.5 * prior as f64,
        "the proportional phase delivered only {delivered} of {prior}"
    );
    assert!(
        (sent as f64 - expected).abs() <= 1.0,
        "prr_out {sent}, expected {expected:.1} = {delivered} * {ssthresh} / {prior}"
    );
    assert!(
        bounded_steps > 0,
        "the pipe never reached ssthresh during recovery"
    );
    // tcp_end_cwnd_reduction(): cwnd = ssthresh; CUBIC's cong_avoid on the same ACK may add one.
    let (cwnd, ssth) = exit_cwnd.expect("recovery never ended");
    assert!(
        cwnd >= ssth && cwnd <= ssth + 1,
        "cwnd {cwnd} after recovery, ssthresh {ssth}"
    );
}

// ----------------------------------------------------------------- F-RTO and undo

/// Flow 0 (A) sends over a 1 Mbit/s, 40 ms path, its receive window held to ~5 packets so
/// it never queues itself; at `burst_ns` flow 1 (C) starts with a 40-packet initial window
/// on the same bottleneck: 40 x 12.1 ms = 485 ms of queue, well above A's RTO
/// (srtt + 200 ms ~ 250 ms). `drops` are A/C data packets entering the bottleneck.
/// Run 4 s, watching flow 0 around its RTO: whether it entered Loss, its cwnd just before,
/// and its cwnd on the first sample after it left Loss.
fn through_an_rto(mut sim: Simulator) -> (SimOutput, bool, u32, Option<u32>) {
    let mut cwnd_before = 0;
    let mut saw_loss = false;
    let mut cwnd_after_undo = None;
    step(&mut sim, 4 * S, 50 * US, |_, sim| {
        let tp = &sender(sim, 0).tp;
        if tp.ca_state == CaState::Loss {
            saw_loss = true;
        } else if !saw_loss {
            cwnd_before = tp.snd_cwnd;
        } else if cwnd_after_undo.is_none() {
            cwnd_after_undo = Some(tp.snd_cwnd);
        }
    });
    (finish(sim), saw_loss, cwnd_before, cwnd_after_undo)
}

fn delay_spike(burst_ns: u64, drops: Vec<u64>) -> SimConfig {
    let mut cfg = dumbbell(
        2,
        CcKind::Cubic,
        1_000_000,
        20 * MS,
        QueueConfig::Pfifo {
            limit_packets: 1000,
        },
        4 * S,
    );
    // A's receive window is 8 KB: its receiver offers scaling_ratio = 160/256 of the
    // buffer once it has measured a full-sized segment (1448 B in a 2304 B truesize), so
    // 8192 * 256 / 160 = 13107.2 B of buffer.
    cfg.flows[0].tcp.tcp_rmem = [4096, 13108, 13108];
    cfg.flows[1].start_ns = burst_ns;
    cfg.flows[1].tcp.initial_cwnd = 40;
    cfg.flows[1].tcp.tcp_rmem = [4096, 131072, 6291456];
    cfg.flows[1].app = AppConfig::BulkBytes { bytes: 40 * MSS };
    cfg.links[bottleneck(2)].loss = LossConfig::DropList {
        data_packets: drops,
    };
    cfg
}

#[test]
fn a_delay_spike_rto_is_undone_by_eifel_detection() {
    // No loss at all: the ACKs of A's last window sit behind C's burst, so A's RTO fires
    // although nothing was lost. The first ACK after the spike advances snd_una and echoes
    // a timestamp older than the retransmission: tcp_process_loss() ->
    // tcp_try_undo_loss(sk, false) -> tcp_may_undo() -> tcp_packet_delayed() is true, so
    // the RTO is undone (TCPLossUndo) and cwnd is restored (tcp_undo_cwnd_reduction:
    // CUBIC's undo_cwnd = max(cwnd, loss_cwnd)). This is the Eifel path, not F-RTO's
    // (TCPSpuriousRTOs counts only F-RTO's own detection, tcp_try_undo_loss(sk, true)).
    let sim = Simulator::new(delay_spike(S, vec![])).unwrap();
    let (out, saw_loss, cwnd_before, cwnd_after_undo) = through_an_rto(sim);
    let c = &out.flows[0].counters;
    assert!(
        saw_loss && c.get(Mib::TCPTimeouts) >= 1,
        "the spike should cause an RTO: {c:?}"
    );
    assert_eq!(
        out.links[bottleneck(2)].stats.drops + out.links[bottleneck(2)].wire.loss_drops,
        0,
        "nothing is lost"
    );
    assert!(
        c.get(Mib::TCPLossUndo) >= 1,
        "the spurious RTO was not undone: {c:?}"
    );
    let after = cwnd_after_undo.expect("never left Loss");
    assert!(
        after >= cwnd_before,
        "cwnd {after} after the undo, {cwnd_before} before the RTO"
    );
}

#[test]
fn frto_detects_a_spurious_rto_from_sacks_of_never_retransmitted_data() {
    // A's packet k is dropped and the packets after it queue behind C's burst, so A's RTO
    // fires for k while k+1.. are still on their way. After the RTO the SACKs of k+1..
    // arrive: they do not advance snd_una (k is missing) but SACK data that was never
    // retransmitted, below high_seq: FLAG_ORIG_SACK_ACKED (tcp_sacktag_one). With F-RTO
    // on (tcp_frto = 2, set in tcp_enter_loss), tcp_process_loss() step 3.b calls
    // tcp_try_undo_loss(sk, true): TCPSpuriousRTOs and TCPLossUndo count, the state returns
    // to Open and cwnd is restored; k is then repaired by fast recovery.
    //
    // Find k: the first A packet to enter the bottleneck after C's whole burst (from a run
    // without drops, identical up to that point). Data packets enter in send order; the
    // access links add 1 us + 121 us per packet, so sample 2 ms after C's last send.
    let burst = S;
    let mut probe = Simulator::new(delay_spike(burst, vec![])).unwrap();
    let mut k = None;
    let mut c_done_at = None;
    step(&mut probe, 2 * S, 10 * US, |t, sim| {
        let a = sender(sim, 0).tp.data_segs_out as u64;
        let c = sender(sim, 1).tp.data_segs_out as u64;
        if c >= 40 && c_done_at.is_none() {
            c_done_at = Some(t);
        }
        if let Some(t0) = c_done_at {
            if t >= t0 + 2 * MS && k.is_none() {
                k = Some(a + c); // index of A's next packet: all earlier ones have entered
            }
        }
    });
    let k = k.expect("C's burst never went out");
    let sim = Simulator::new(delay_spike(burst, vec![k])).unwrap();
    let (out, saw_loss, cwnd_before, cwnd_after_undo) = through_an_rto(sim);
    let c = &out.flows[0].counters;
    assert!(saw_loss && c.get(Mib::TCPTimeouts) >= 1, "no RTO: {c:?}");
    assert_eq!(c.get(Mib::TCPSpuriousRTOs), 1, "{c:?}");
    assert!(c.get(Mib::TCPLossUndo) >= 1, "{c:?}");
    let after = cwnd_after_undo.expect("never left Loss");
    assert!(
        after >= cwnd_before,
        "cwnd {after} after the undo, {cwnd_before} before the RTO"
    );

    // The same run with tcp_frto = 0: no F-RTO, so the RTO stands (nothing undone).
    let mut cfg = delay_spike(burst, vec![k]);
    cfg.flows[0].tcp.tcp_frto = 0;
    let mut sim = Simulator::new(cfg).unwrap();
    sim.run_until(4 * S).expect("engine error");
    let c = &finish(sim).flows[0].counters;
    assert!(c.get(Mib::TCPTimeouts) >= 1, "{c:?}");
    assert_eq!(c.get(Mib::TCPSpuriousRTOs), 0, "{c:?}");
}

// ------------------------------------------------------------------------------ TSQ

/// One sender whose own NIC is the bottleneck: s0 -(rate, delay, pfifo 10000)-> dst.
/// (Built from the dumbbell's config so that new config fields keep their defaults.)
fn direct(cc: CcKind, rate_bps: u64, one_way_delay_ns: u64, duration_ns: u64) -> SimConfig {
    let mut cfg = dumbbell(
        1,
        cc,
        rate_bps,
        one_way_delay_ns,
        QueueConfig::Pfifo {
            limit_packets: 10_000,
        },
        duration_ns,
    );
    let template = cfg.links[bottleneck(1)].clone();
    cfg.nodes.truncate(2); // s0, dst
    let link = |from: u32, to: u32| LinkConfig {
        name: format!("{from}->{to}"),
        from,
        to,
        ..template.clone()
    };
    cfg.links = vec![link(0, 1), link(1, 0)];
    cfg.flows[0].dst = 1;
    cfg.sample_interval_ns = 10 * MS;
    cfg
}

#[test]
fn tsq_keeps_the_host_queue_small_and_the_link_busy() {
    // Linux v6.12 tcp_output.c: tcp_small_queue_check(). Before each skb, the bytes the
    // socket has below it (qdisc + NIC, sk_wmem_alloc) may not exceed
    // limit = max(2 * skb->truesize, sk_pacing_rate >> sk_pacing_shift), capped at
    // tcp_limit_output_bytes when the socket is not paced; TX completion (tcp_tsq_handler)
    // lets it send again. So the sender's own qdisc holds at most limit + one skb, never the
    // 10000 packets it would accept, and the NIC never idles. (tcplab counts payload bytes
    // in wmem_alloc and adds SKB_TRUESIZE_OVERHEAD of skb overhead to the truesize.)
    let rate = 1_000_000_000;
    let mut sim = Simulator::new(direct(CcKind::Cubic, rate, 5 * MS, 2 * S)).unwrap();
    let max_skb = 65_536 + tcplab_core::packet::SKB_TRUESIZE_OVERHEAD as u64;
    // The limit applies when an skb is sent; when the pacing rate falls (leaving slow start)
    // the bytes already below the socket drain at the NIC rate: compare with the largest
    // limit of the last 2 ms (a full limit drains in (rate >> 10) / rate ~ 1 ms).
    let mut recent: std::collections::VecDeque<(u64, u64)> = Default::default();
    let mut worst = 0.0f64;
    let mut max_limit = 0u64;
    step(&mut sim, 2 * S, 20 * US, |t, sim| {
        let s = sender(sim, 0);
        let limit = (2 * max_skb)
            .max(s.tp.sk_pacing_rate >> s.tp.sk_pacing_shift)
            .min(s.cfg.tcp_limit_output_bytes);
        recent.push_back((t, limit));
        while recent.front().is_some_and(|&(t0, _)| t0 + 2 * MS < t) {
            recent.pop_front();
        }
        let limit = recent.iter().map(|&(_, l)| l).max().unwrap();
        max_limit = max_limit.max(limit);
        let ratio = s.wmem_alloc_bytes as f64 / (limit + max_skb) as f64;
        assert!(
            ratio <= 1.0,
            "t={t}: {} bytes below the socket, limit {limit} + one skb",
            s.wmem_alloc_bytes
        );
        worst = worst.max(ratio);
    });
    let out = finish(sim);
    let nic = &out.links[0].stats;
    // The qdisc never held more than the largest limit plus one skb (payload bytes) ...
    let bound = (max_limit + max_skb) / 1448;
    assert!(
        (nic.max_backlog_packets as u64) <= bound,
        "sender qdisc held {} packets, bound {bound}",
        nic.max_backlog_packets
    );
    // ... which is ~0.5 ms of data at 1 Gbit/s, not the 10000 packets (121 ms) it accepts.
    assert!(
        nic.max_backlog_packets < 1000,
        "sender qdisc held {} packets",
        nic.max_backlog_packets
    );
    assert!(
        worst > 0.3,
        "TSQ never came near its limit ({worst:.2}): the test does not exercise it"
    );
    // ... and the NIC stays busy: goodput above 90 % of the payload rate after slow start.
    let f = &out.flows[0];
    let goodput = f.bytes_received as f64 * 8.0 / 2.0;
    assert!(
        goodput > 0.9 * rate as f64 * 1448.0 / 1514.0,
        "goodput {:.0} Mbit/s",
        goodput / 1e6
    );
}

// --------------------------------------------------------------------------- pacing

#[test]
fn pacing_spaces_departures_by_length_over_rate() {
    // SO_MAX_PACING_RATE caps sk_pacing_rate (tcp_update_pacing_rate) and switches on
    // TCP's internal pacing (net/core/sock.c: sk_setsockopt(), SK_PACING_NONE ->
    // SK_PACING_NEEDED). Each skb then advances the departure clock by len / rate
    // (tcp_output.c: tcp_update_skb_after_send(), less up to half of it as credit for a
    // late send), and tcp_pacing_check() holds the next skb until then. At 10 Mbit/s on a
    // 100 Mbit/s path the flow is pacing-limited: departures are spaced len / rate apart and
    // the payload rate equals the pacing rate.
    let rate_bytes = 1_250_000u64; // 10 Mbit/s
    let mut cfg = dumbbell(
        1,
        CcKind::Cubic,
        100_000_000,
        10 * MS,
        QueueConfig::Pfifo {
            limit_packets: 1000,
        },
        3 * S,
    );
    cfg.flows[0].tcp.max_pacing_rate_bytes_per_sec = rate_bytes;
    let mut sim = Simulator::new(cfg).unwrap();
    let mut departures: Vec<(u64, u64)> = Vec::new(); // (t, bytes sent in that step)
    let mut prev_bytes = 0;
    step(&mut sim, 3 * S, 10 * US, |t, sim| {
        let tp = &sender(sim, 0).tp;
        if t > S {
            assert_eq!(
                tp.sk_pacing_rate, rate_bytes,
                "pacing rate not at the cap at t={t}"
            );
        }
        let b = tp.bytes_sent + tp.bytes_retrans;
        if b > prev_bytes && t > S {
            departures.push((t, b - prev_bytes));
        }
        prev_bytes = b;
    });
    finish(sim);
    assert!(
        departures.len() > 100,
        "only {} departures",
        departures.len()
    );
    // each gap is at least half the previous skb's length over the rate (the credit), less
    // one 10 us step of observation
    for w in departures.windows(2) {
        let ((t0, len0), (t1, _)) = (w[0], w[1]);
        let min_gap = len0 * 1_000_000_000 / rate_bytes / 2;
        assert!(
            t1 - t0 + 10 * US >= min_gap,
            "departures {t0} and {t1} ns: {len0} B needs {min_gap} ns"
        );
    }
    // and on average exactly len / rate: bytes over the interval = rate x time (1 %)
    let (t_first, _) = departures[0];
    let (t_last, _) = *departures.last().unwrap();
    let bytes: u64 = departures[1..].iter().map(|d| d.1).sum();
    let measured = bytes as f64 / ((t_last - t_first) as f64 / 1e9);
    assert!(
        (measured / rate_bytes as f64 - 1.0).abs() < 0.01,
        "paced at {measured:.0} B/s, cap {rate_bytes} B/s"
    );
}

// ------------------------------------------------------------------ SACK compression

#[test]
fn sack_compression_holds_acks_while_data_is_out_of_order() {
    // Linux v6.12 tcp_input.c: __tcp_ack_snd_check(). With out-of-order data queued, the
    // first TCP_FASTRETRANS_THRESH (3) ACKs for a given rcv_nxt go out at once; after that
    // ACKs are compressed: one when the timer of min(tcp_comp_sack_delay_ns, 5 % of RTT)
    // fires (tcp_compressed_ack_kick) or when tcp_comp_sack_nr (44) are held.
    // Here: 100 Mbit/s, 20 ms RTT, so the timer is min(1 ms, 1 ms) = 1 ms, and ~8 segments
    // arrive per ms (< 44): while a hole is open the receiver sends at most 3 ACKs plus one
    // per ms, instead of one per segment.
    let run = |comp_sack_nr: u32| {
        let mut cfg = dumbbell(
            1,
            CcKind::Cubic,
            100_000_000,
            10 * MS,
            QueueConfig::Pfifo {
                limit_packets: 1000,
            },
            2 * S,
        );
        cfg.flows[0].tcp.tcp_comp_sack_nr = comp_sack_nr;
        cfg.links[bottleneck(1)].loss = LossConfig::DropList {
            data_packets: vec![3000],
        };
        let mut sim = Simulator::new(cfg).unwrap();
        let (mut ooo_ns, mut ooo_segs, mut ooo_acks, mut episodes) = (0u64, 0u64, 0u64, 0u64);
        let mut prev = (0u64, 0u64, 0u64); // (rcv_nxt, data_segs_in, acks sent)
        let dt = 20 * US;
        step(&mut sim, 2 * S, dt, |_, sim| {
            let r = receiver(sim, 0);
            let now = (
                r.rcv.rcv_nxt,
                r.rcv.data_segs_in,
                r.tp.mib.get(Mib::TcpOutSegs),
            );
            // a step in which segments arrived but rcv_nxt did not move: out-of-order
            if now.1 > prev.1 && now.0 == prev.0 {
                if ooo_segs == 0 {
                    episodes += 1;
                }
                ooo_ns += dt;
                ooo_segs += now.1 - prev.1;
                ooo_acks += now.2 - prev.2;
            }
            prev = now;
        });
        let out = finish(sim);
        assert_eq!(out.flows[0].counters.get(Mib::TCPSackRecovery), 1);
        (ooo_ns, ooo_segs, ooo_acks, episodes)
    };
    let (ooo_ns, segs, acks, episodes) = run(44);
    assert_eq!(episodes, 1);
    assert!(segs >= 100, "only {segs} segments arrived out of order");
    let timer_acks = ooo_ns.div_ceil(MS);
    assert!(
        acks <= 3 + timer_acks + 1,
        "{acks} ACKs for {segs} out-of-order segments over {} us",
        ooo_ns / US
    );
    assert!(
        acks * 4 < segs,
        "{acks} ACKs for {segs} out-of-order segments: not compressed"
    );
    // tcp_comp_sack_nr = 0 turns compression off: an ACK per out-of-order segment.
    let (_, segs0, acks0, _) = run(0);
    assert!(
        acks0 as f64 >= 0.9 * segs0 as f64,
        "{acks0} ACKs for {segs0} segments without compression"
    );
}

// ------------------------------------------------------------- receive-window limit

#[test]
fn a_small_receive_buffer_limits_inflight_to_the_window() {
    // The sender never has more than the advertised window outstanding (tcp_output.c:
    // tcp_snd_wnd_test()), so with a receive buffer far below the BDP the flow is
    // rwnd-limited: goodput = window / RTT, not the link rate. tcp_rmem max 64 KB gives
    // a window of 64 KB x scaling_ratio (tcp_win_from_space): 50 % until the receiver
    // measures a full-sized segment, then 1448 / truesize (tcp_measure_rcv_mss(): 160/256
    // for a 1500-byte frame in a 2304-byte skb) = 40 KB, about 28 segments; at
    // 100 Mbit/s x 40 ms (BDP 330 packets) that is 8 Mbit/s.
    let ratio = (1448u64 << 8) / tcplab_core::packet::linear_skb_truesize(1500);
    let window = (65536 * ratio) >> 8;
    let mut cfg = dumbbell(
        1,
        CcKind::Cubic,
        100_000_000,
        20 * MS,
        QueueConfig::Pfifo {
            limit_packets: 1000,
        },
        5 * S,
    );
    cfg.flows[0].tcp.tcp_rmem = [4096, 65536, 65536];
    let mut sim = Simulator::new(cfg).unwrap();
    let mut max_wnd = 0u64;
    step(&mut sim, 5 * S, 50 * US, |t, sim| {
        let tp = &sender(sim, 0).tp;
        let outstanding = tp.snd_nxt - tp.snd_una;
        assert!(
            outstanding <= tp.snd_wnd as u64,
            "t={t}: {outstanding} B outstanding, window {}",
            tp.snd_wnd
        );
        if t > 100 * MS {
            max_wnd = max_wnd.max(tp.snd_wnd as u64); // (before the handshake: the initial 65535)
        }
        let advertised = receiver(sim, 0).rcv.rcv_wnd;
        assert!(
            advertised <= window,
            "t={t}: advertised {advertised} B from a 64 KB buffer (window {window})"
        );
    });
    let out = finish(sim);
    assert!(
        (window - 2 * MSS..=window).contains(&max_wnd),
        "window {max_wnd}"
    );
    // goodput: at most window / base RTT, and at least 90 % of it (no queue, no loss)
    let base_rtt = 0.040 + 4.0 * 1e-6;
    let bound = max_wnd as f64 * 8.0 / base_rtt;
    let f = &out.flows[0];
    let steady = f.bytes_received as f64 * 8.0 / 5.0;
    assert!(
        steady <= bound,
        "goodput {steady:.0} above window/RTT {bound:.0}"
    );
    assert!(
        steady >= 0.9 * bound,
        "goodput {steady:.0} below 90 % of window/RTT {bound:.0}"
    );
    assert!(steady < 0.1 * 100e6, "not window-limited");
}

// ------------------------------------------------------------------ ss's rtt:X/Y

#[test]
fn rttvar_column_is_the_mean_deviation_ss_shows() {
    // ss prints rtt:X/Y from tcp_info: tcpi_rtt = srtt_us >> 3 and tcpi_rttvar =
    // mdev_us >> 2 (Linux v6.12 net/ipv4/tcp.c: tcp_get_info()), the mean deviation, not
    // the RTO's rttvar_us (which never drops below TCP_RTO_MIN, 200 ms). On a path whose
    // RTT moves only with a 50-packet queue (50 x 121 us = 6 ms at 100 Mbit/s), the
    // deviation stays below that range.
    let rate = 100_000_000;
    let mut cfg = dumbbell(
        1,
        CcKind::Cubic,
        rate,
        10 * MS,
        QueueConfig::Pfifo { limit_packets: 50 },
        10 * S,
    );
    cfg.sample_interval_ns = 100 * MS;
    let mut sim = Simulator::new(cfg).unwrap();
    sim.run_until(10 * S).expect("engine error");
    let out = finish(sim);
    let s = &out.series;
    let queue_us = 50 * 1514 * 8 * 1_000_000 / rate;
    for i in 0..s.len() {
        if s.t_ns[i] < S {
            continue;
        }
        assert!(
            s.rttvar_us[i] <= queue_us as u32,
            "t={} ms: rttvar {} us",
            s.t_ns[i] / MS,
            s.rttvar_us[i]
        );
    }
    assert!(
        s.rttvar_us.iter().any(|&v| v > 0),
        "the deviation is never measured"
    );
}
