//! A scripted peer: one tcplab socket driven packet by packet and call by call by a test
//! script instead of by another TCP (`tcplab packetdrill`, python/tcplab/packetdrill).
//!
//! The model. packetdrill runs a script against one kernel socket whose peer is a TUN
//! device: the script writes the peer's packets into the TUN, reads what the socket sends
//! out of it, and makes the application's system calls itself. Here the simulator has two
//! hosts: host 0 ("tcplab") holds the socket under test, endpoint [`TESTED_EP`], and host 1
//! ("script") stands for the TUN and the script: its endpoint [`SCRIPT_EP`] is a socket that
//! never acts. Packets the tested socket sends cross one link to host 1 as they would cross
//! the TUN (the link passes TSO/GSO skbs whole, as packetdrill's TUN takes them: one `>`
//! line per skb) and are collected instead of being delivered ([`Simulator::script_take_out`]);
//! the script's packets are handed to the tested socket's receive path at the current
//! simulated time ([`Simulator::script_inject`]), as the kernel takes a packet written to a
//! TUN (`tun_get_user()` -> `netif_rx()`: no GRO, no link). The application is driven
//! ([`AppConfig::Driven`]): it writes and reads only when the script calls `write()` or
//! `read()`.
//!
//! ECN: the script's packets carry their IP ECN field and ECE/CWR flags as written, and the
//! socket's come out with theirs (`tcp::ecn`). The tested socket is the flow's client
//! endpoint in whichever role the script gives it, so it reads `net.ipv4.tcp_ecn` from
//! `TcpConfig::tcp_ecn[Side::Client]`; [`Simulator::script_set_ecn`] sets both entries, as
//! the scripted host is one machine.
//!
//! Time: the script's time 0 is the scenario's start; the caller advances the clock with
//! `run_until` between its events, so the socket's timers (RTO, TLP, delayed ACK, pacing)
//! fire in between exactly as in a run.
//!
//! Simplified: the link to host 1 has a finite rate (100 Gbit/s: a 64 KB skb takes 5 us),
//! where a TUN's transmit has no serialization; TSQ completions arrive that much later.

use crate::cc::Cc;
use crate::config::{
    AppConfig, CcKind, CcParams, FlowConfig, LinkConfig, NodeConfig, NodeKind, SimConfig,
    TcpConfig, DEFAULT_MAX_MEMORY_BYTES,
};
use crate::packet::Packet;
use crate::rng::Rng;
use crate::tcp::receiver::Receiver;
use crate::tcp::socket::{Ctx, TcpSocket};
use crate::time::BOOT_NS;

use super::Simulator;

/// The endpoint under test (the flow's client side in the engine's numbering; it connects
/// only when the script calls `connect()`, and opens passively on the script's SYN).
pub const TESTED_EP: u32 = 0;
/// The endpoint standing for the script: packets addressed to it are collected.
pub const SCRIPT_EP: u32 = 1;
/// The TUN device's MTU in packetdrill (1500): the MSS option the tested socket sends.
pub const TUN_MTU_BYTES: u32 = 1500;
/// IPv4 + TCP headers without options.
const IP_TCP_HEADER_BYTES: u32 = 40;
/// `TCPOLEN_TSTAMP_ALIGNED`.
const TS_OPTION_BYTES: u32 = 12;
/// How long a scripted run may go on (simulated): far beyond any script.
const SCRIPT_HORIZON_NS: u64 = 24 * 3600 * 1_000_000_000;
/// The rate of the link standing for the TUN (see the module docs).
const TUN_RATE_BPS: u64 = 100_000_000_000;

/// What the script's preamble sets up: the sysctls as the engine's TCP settings, the
/// congestion control and its module parameters.
#[derive(Clone, Debug)]
pub struct ScriptedConfig {
    pub tcp: TcpConfig,
    pub cc: CcKind,
    pub cc_params: CcParams,
    /// `CONFIG_HZ` of the tested host.
    pub hz: u32,
    pub seed: u64,
    /// `net.ipv4.tcp_tso_win_divisor`.
    pub tso_win_divisor: u32,
}

impl Simulator {
    /// A simulator whose one socket is driven by a script (see the module docs).
    pub fn scripted(sc: &ScriptedConfig) -> Result<Simulator, String> {
        let mut tcp = sc.tcp.clone();
        // The MSS option the socket sends (`dst_metric_advmss()`), the timestamps taken
        // off until the peer's SYN says whether they are on (`script_negotiate`).
        tcp.mss_bytes = TUN_MTU_BYTES - IP_TCP_HEADER_BYTES - TS_OPTION_BYTES;
        let link = |name: &str, from, to| LinkConfig {
            passes_gso: Some(true),
            ..LinkConfig::new(name, from, to, TUN_RATE_BPS, 0)
        };
        let node = |name: &str| {
            let mut n = NodeConfig::new(name, NodeKind::Host);
            n.hz = sc.hz;
            // Linux's TCP builds GSO skbs and the TUN takes them whole (TUN_F_TSO4).
            n.gso_skbs = true;
            n.tso = true;
            n
        };
        let nodes = vec![node("tcplab"), node("script")];
        let mut flow = FlowConfig::new("script", 0, 1, sc.cc);
        flow.app = AppConfig::Driven;
        flow.tcp = tcp;
        flow.cc_params = sc.cc_params.clone();
        flow.sample = false;
        let cfg = SimConfig {
            seed: sc.seed,
            duration_ns: SCRIPT_HORIZON_NS,
            sample_interval_ns: SCRIPT_HORIZON_NS,
            nodes,
            links: vec![link("to_script", 0, 1), link("from_script", 1, 0)],
            flows: vec![flow],
            apps: Vec::new(),
            max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
            capture: None,
        };
        // Built without `validate`, which refuses a driven flow with no app object: here the
        // script is the application.
        let mut sim = Simulator::build_checked(cfg, false)?;
        sim.script_ep = SCRIPT_EP;
        let s = &mut sim.socks[TESTED_EP as usize];
        s.rcv.read_immediately = false;
        s.reader.by_syscall = true;
        s.writer_sleeps = true;
        s.tso_win_divisor = sc.tso_win_divisor;
        Ok(sim)
    }

    /// The socket under test.
    pub fn script_socket(&self) -> &TcpSocket {
        &self.socks[TESTED_EP as usize]
    }

    /// The socket under test, to set socket options on.
    pub fn script_socket_mut(&mut self) -> &mut TcpSocket {
        &mut self.socks[TESTED_EP as usize]
    }

    /// The packets the socket sent since the last call, with the time each reached the
    /// script, in order.
    pub fn script_take_out(&mut self) -> Vec<(u64, Packet)> {
        std::mem::take(&mut self.script_out)
            .into_iter()
            .map(|(t, p)| (t - BOOT_NS, p))
            .collect()
    }

    /// What the peer's SYN (passive open) or SYN-ACK (active open) says of the options,
    /// applied before the socket processes it (Linux v6.12 tcp_openreq_init() /
    /// tcp_rcv_synsent_state_process(), tcp_sync_mss()): the sending MSS is the smaller of
    /// the path's and the peer's MSS option, less the timestamp option when both sides use
    /// it; without timestamps the segments carry none. A listener not yet in a connection
    /// also sizes its initial window with the MSS it will use (tcp_openreq_init_rwin()).
    /// `user_mss_bytes`: `setsockopt(TCP_MAXSEG)` (0: not set), which caps both our MSS
    /// option and the sending MSS (tcp_mss_clamp(), `rx_opt.mss_clamp`).
    pub fn script_negotiate(
        &mut self,
        peer_mss_bytes: u32,
        ts_ok: bool,
        sack_ok: bool,
        user_mss_bytes: u32,
    ) {
        let hz = self.cfg.nodes[0].hz;
        let s = &mut self.socks[TESTED_EP as usize];
        let ts_bytes = if ts_ok { TS_OPTION_BYTES } else { 0 };
        let mut path_mss = TUN_MTU_BYTES - IP_TCP_HEADER_BYTES;
        if user_mss_bytes != 0 {
            path_mss = path_mss.min(user_mss_bytes);
        }
        s.ts_ok = ts_ok;
        s.sack_ok = sack_ok;
        s.tp.mss_cache = path_mss
            .min(peer_mss_bytes)
            .saturating_sub(ts_bytes)
            .max(48);
        if s.state == crate::tcp::socket::ConnState::Closed {
            s.cfg.mss_bytes = path_mss - ts_bytes;
            let mut rcv = Receiver::new(&s.cfg, hz);
            rcv.read_immediately = false;
            s.rcv = rcv;
        } else {
            s.rcv.set_advmss((path_mss - ts_bytes) as u64);
        }
        s.rcv.sack_ok = sack_ok;
    }

    /// `setsockopt(TCP_CONGESTION)`: a new congestion control for the socket (before the
    /// connection is set up; tcplab does not switch one in the middle of a connection).
    pub fn script_set_cc(&mut self, kind: CcKind) {
        let seed = self.cfg.seed;
        let params = self.cfg.flows[0].cc_params.clone();
        let s = &mut self.socks[TESTED_EP as usize];
        s.cc = Cc::new(kind, &params, Rng::for_component(seed, "flow:script:cc"));
    }

    /// `sysctl net.ipv4.tcp_ecn` and `tcp_ecn_fallback` after the socket was made: Linux
    /// reads them when it uses them (`tcp_ecn_send_syn()`, `tcp_ecn_create_request()`,
    /// `tcp_ecn_clear_syn()`), so the socket's configuration follows (see the module docs).
    pub fn script_set_ecn(&mut self, tcp_ecn: u8, fallback: bool) {
        let s = &mut self.socks[TESTED_EP as usize];
        s.cfg.tcp_ecn = [tcp_ecn; 2];
        s.cfg.tcp_ecn_fallback = fallback;
    }

    /// The script's packet reaches the socket now.
    pub fn script_inject(&mut self, mut pkt: Packet) {
        pkt.dst_ep = TESTED_EP;
        pkt.dst_node = 0;
        pkt.src_node = 1;
        let now = self.now_ns;
        self.deliver(pkt, now);
    }

    /// `connect()`: the socket sends its SYN now.
    pub fn script_connect(&mut self) {
        self.with_tested(|s, ctx| s.connect(ctx));
    }

    /// `write()` of `bytes`: queued now (a blocking write completes as the send buffer
    /// takes it: `TcpSocket::app.pending_bytes` is what it has not taken yet).
    pub fn script_write(&mut self, bytes: u64) {
        self.with_tested(|s, ctx| s.app_write(ctx, bytes));
    }

    /// `send()` of `bytes` with `MSG_EOR` (`eor`) and `MSG_MORE` (`more`).
    pub fn script_send(&mut self, bytes: u64, eor: bool, more: bool) {
        self.with_tested(|s, ctx| s.app_write_with(ctx, bytes, eor, more));
    }

    /// `setsockopt(TCP_CORK, on)`.
    pub fn script_set_cork(&mut self, on: bool) {
        self.with_tested(|s, ctx| s.set_cork(ctx, on));
    }

    /// `setsockopt(TCP_NODELAY, on)`.
    pub fn script_set_nodelay(&mut self, on: bool) {
        self.with_tested(|s, ctx| s.set_nodelay(ctx, on));
    }

    /// `read()` of up to `bytes`: the bytes read now.
    pub fn script_read(&mut self, bytes: u64) -> u64 {
        let mut n = 0;
        self.with_tested(|s, ctx| n = s.syscall_read(ctx, bytes));
        n
    }

    /// When the next event of the engine is due (simulated ns since the script's start),
    /// if any: the script's runner steps to it instead of polling.
    pub fn script_next_event_ns(&self) -> Option<u64> {
        self.ev.peek_time().map(|t| t.saturating_sub(BOOT_NS))
    }

    /// Bytes the send buffer can take now (a non-blocking `write()` copies at most this).
    pub fn script_sndbuf_room(&self) -> u64 {
        let s = &self.socks[TESTED_EP as usize];
        let cap = s.tp.snd_una + s.sndbuf_payload_bytes();
        cap.saturating_sub(s.tp.write_seq + s.app.pending_bytes)
    }

    /// `tc qdisc replace dev tun0 root pfifo limit N` (None: `tc qdisc delete dev tun0
    /// root`, the default FIFO again): the queue in front of the TUN, empty when replaced.
    pub fn script_set_tun_pfifo_limit(&mut self, limit_packets: Option<u32>) {
        let limit = limit_packets.unwrap_or(1000);
        self.net.links[0].qdisc =
            crate::net::qdisc::Qdisc::new(&crate::config::QueueConfig::Pfifo {
                limit_packets: limit,
            });
    }

    /// `close()` (`rd`: the receiving side too) or `shutdown(SHUT_WR)`: the FIN, or a
    /// reset if received data was left unread (`tcp::close`).
    pub fn script_close(&mut self, rd: bool) {
        self.with_tested(|s, ctx| s.app_close(ctx, rd));
    }

    /// Call into the tested socket at the current time, then re-arm its timers.
    fn with_tested(&mut self, f: impl FnOnce(&mut TcpSocket, &mut Ctx)) {
        let now = self.now_ns;
        let mut ctx = Ctx {
            now_ns: now,
            net: &mut self.net,
            ev: &mut self.ev,
        };
        f(&mut self.socks[TESTED_EP as usize], &mut ctx);
        if !self.net.cpu_tx.is_empty() {
            self.queue_cpu_tx();
        }
        self.after_sock(TESTED_EP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::flags;
    use crate::tcp::close::Teardown;

    const MS: u64 = 1_000_000;

    fn host() -> Simulator {
        let sc = ScriptedConfig {
            tcp: TcpConfig::default(),
            cc: CcKind::Cubic,
            cc_params: CcParams::default(),
            hz: 1000,
            seed: 1,
            tso_win_divisor: 3,
        };
        Simulator::scripted(&sc).unwrap()
    }

    fn ack(ack_seq: u64, win: u32) -> Packet {
        Packet {
            ack_seq,
            rwnd_bytes: win,
            ..Packet::default()
        }
    }

    /// The script's SYN at 100 ms (MSS 1000, no timestamps), the socket's SYN-ACK, and the
    /// final ACK at 200 ms: an established passive connection.
    fn passive_open(sim: &mut Simulator) {
        passive_open_with(sim, 1000, true);
    }

    /// [`passive_open`] with the SYN's MSS and whether it offers SACK.
    fn passive_open_with(sim: &mut Simulator, peer_mss_bytes: u32, sack_ok: bool) {
        sim.run_until(100 * MS).unwrap();
        sim.script_negotiate(peer_mss_bytes, false, sack_ok, 0);
        sim.script_inject(Packet {
            flags: flags::SYN,
            rwnd_bytes: 32792,
            ..Packet::default()
        });
        sim.run_until(200 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(out.len(), 1);
        assert!(out[0].1.has(flags::SYN));
        assert_eq!(out[0].1.tsval_ns, 0, "no timestamps were negotiated");
        sim.script_inject(ack(0, 257 << 7));
    }

    #[test]
    fn a_passive_open_without_timestamps_times_the_synack_and_sets_the_pacing_rate() {
        let mut sim = host();
        passive_open(&mut sim);
        let s = sim.script_socket();
        assert_eq!(
            s.tp.mss_cache, 1000,
            "min(path 1460, peer 1000), no TS option"
        );
        // tcp_synack_rtt_meas(): the SYN-ACK left at 100 ms, the ACK came at 200 ms.
        assert_eq!(s.tp.srtt_us >> 3, 100_000);
        // tcp_rcv_state_process() (SYN_RECV -> ESTABLISHED): tcp_update_pacing_rate(),
        // 200 % of cwnd * mss / srtt in slow start.
        assert_eq!(s.tp.sk_pacing_rate, 2 * 10 * 1000 * 10);
        assert_eq!(s.rcv.info().rcv_mss, 1000, "tcp_initialize_rcv_mss()");
    }

    #[test]
    fn the_first_flight_goes_out_in_tso_autosize_skbs() {
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_write(30_000);
        sim.run_until(201 * MS).unwrap();
        let out = sim.script_take_out();
        // tcp_tso_autosize(): 200 kB/s >> 10 is 195 bytes, below one MSS: min_tso_segs (2)
        // per skb, the cwnd's 10 segments in 5 skbs (as the kernel sends them).
        let lens: Vec<u32> = out.iter().map(|(_, p)| p.payload_bytes()).collect();
        assert_eq!(lens, [2000; 5]);
        assert!(
            out.iter().all(|(_, p)| p.has(flags::PSH)),
            "multi-segment skbs"
        );
    }

    #[test]
    fn nagle_holds_a_short_tail_behind_an_unacked_short_segment_unless_nodelay() {
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_write(500);
        sim.run_until(201 * MS).unwrap();
        assert_eq!(sim.script_take_out().len(), 1, "nothing in flight: sent");
        sim.script_write(500);
        sim.run_until(202 * MS).unwrap();
        assert!(
            sim.script_take_out().is_empty(),
            "a part-MSS skb is out unacked (Minshall): held"
        );
        sim.script_inject(ack(500, 257 << 7));
        sim.run_until(203 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(out.len(), 1, "the ACK releases it");
        assert_eq!((out[0].1.seq, out[0].1.end_seq), (500, 1000));

        let mut sim = host();
        passive_open(&mut sim);
        sim.script_set_nodelay(true);
        sim.script_write(500);
        sim.script_write(500);
        sim.run_until(201 * MS).unwrap();
        assert_eq!(sim.script_take_out().len(), 2, "TCP_NODELAY");
    }

    #[test]
    fn close_sends_a_fin_after_the_data_and_the_peer_fin_is_acked_past_it() {
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_write(1000);
        sim.run_until(201 * MS).unwrap();
        sim.script_take_out();
        sim.script_inject(ack(1000, 257 << 7));
        sim.script_close(true);
        sim.run_until(202 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(out.len(), 1);
        let fin = out[0].1;
        assert!(fin.has(flags::FIN));
        assert_eq!(
            (fin.seq, fin.end_seq),
            (1000, 1000),
            "the FIN follows the data"
        );
        assert_eq!(sim.script_socket().fin.teardown, Teardown::FinWait1);
        // The peer acks the FIN (data offset 1000 + 1) and sends its own.
        sim.script_inject(Packet {
            flags: flags::FIN,
            ..ack(1001, 257 << 7)
        });
        sim.run_until(203 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(sim.script_socket().fin.teardown, Teardown::TimeWait);
        assert_eq!(out.len(), 1, "FIN_WAIT2 acks the peer's FIN at once");
        assert_eq!(out[0].1.ack_seq, 1, "past the peer's FIN");
        assert_eq!(out[0].1.seq, 1001, "past our FIN");
    }

    #[test]
    fn an_unacked_fin_is_probed_then_retransmitted_with_backoff() {
        // user_timeout.pkt on the kernel: the FIN at 2.1 s, again at 2.41, 2.73 and 3.38 s:
        // a loss probe (min(2 srtt + TCP_RTO_MIN, RTO) = 300 ms), the RTO restarted from it
        // (300 ms), then the RTO doubled (600 ms).
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_close(true);
        sim.run_until(201 * MS).unwrap();
        assert!(sim.script_take_out()[0].1.has(flags::FIN));
        sim.run_until(1500 * MS).unwrap();
        let out = sim.script_take_out();
        let times: Vec<u64> = out.iter().map(|(t, _)| t / MS).collect();
        assert_eq!(times, [500, 800, 1400]);
        assert!(out.iter().all(|(_, p)| p.has(flags::FIN)));
        assert_eq!(
            sim.script_socket()
                .tp
                .mib
                .get(crate::mib::Mib::TCPLossProbes),
            1
        );
    }

    #[test]
    fn data_after_close_resets_and_the_user_timeout_drops_the_connection() {
        // user_timeout.pkt's end: data arriving in FIN_WAIT1 after close() gets a bare RST
        // (TCPAbortOnData) at the sequence number it acknowledged.
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_close(true);
        sim.run_until(300 * MS).unwrap();
        sim.script_take_out();
        sim.script_inject(Packet {
            seq: 0,
            end_seq: 1,
            ..ack(0, 32792)
        });
        sim.run_until(301 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(out.len(), 1);
        assert!(out[0].1.has(flags::RST) && out[0].1.has(flags::NO_ACK));
        assert_eq!(out[0].1.seq, 0);
        assert_eq!(sim.script_socket().fin.teardown, Teardown::Closed);
        // TCP_USER_TIMEOUT of 1 s: the data at 200 ms, its loss probe at 500 ms, the RTO's
        // retransmission at 800 ms (retrans_stamp: tcp_retransmit_skb(), not the probe),
        // the next at 1400 ms (0.6 s on); at 2600 ms 1.8 s have passed: dropped, silently.
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_socket_mut().user_timeout_ms = 1000;
        sim.script_write(1000);
        sim.run_until(10_000 * MS).unwrap();
        let times: Vec<u64> = sim.script_take_out().iter().map(|(t, _)| t / MS).collect();
        assert_eq!(times, [200, 500, 800, 1400]);
        assert_eq!(sim.script_socket().fin.teardown, Teardown::Closed);
    }

    #[test]
    fn close_with_unread_data_resets() {
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_inject(Packet {
            seq: 0,
            end_seq: 100,
            ..ack(0, 257 << 7)
        });
        sim.run_until(300 * MS).unwrap();
        sim.script_take_out();
        sim.script_close(true);
        sim.run_until(301 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(out.len(), 1);
        assert!(out[0].1.has(flags::RST) && !out[0].1.has(flags::FIN));
        assert_eq!(out[0].1.ack_seq, 100);
    }

    #[test]
    fn an_rto_forgets_the_loss_probe_before_it() {
        // cubic-rto-ss-ca-cwnd-bump.pkt's first part: a segment, its TLP at +300 ms, the RTO
        // at +600 ms; the ACK of the retransmission, then ACKs of new data. tcp_enter_loss()
        // clears tlp_high_seq, so the TLP's ACK-advancing check cannot reduce the cwnd a
        // second time: slow start goes on from 2 (ssthresh 7 after the loss).
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_socket_mut().sndbuf_locked = true;
        sim.script_write(1000);
        sim.run_until(300 * MS).unwrap();
        sim.script_inject(ack(1000, 257 << 7));
        sim.script_write(1000);
        sim.run_until(1000 * MS).unwrap();
        let times: Vec<u64> = sim.script_take_out().iter().map(|(t, _)| t / MS).collect();
        // srtt 100 ms: the TLP at 2 srtt + 2 ms-ish rounding is 300 ms on, the RTO
        // (srtt + 4 rttvar = 300 ms) 300 ms after it.
        assert_eq!(times.len(), 4, "first send, data, TLP, RTO: {times:?}");
        sim.script_inject(ack(2000, 257 << 7));
        let s = sim.script_socket();
        assert_eq!((s.tp.snd_cwnd, s.tp.snd_ssthresh), (2, 7));
        assert_eq!(s.tlp_high_seq, 0);
        sim.script_write(20_000);
        sim.run_until(1100 * MS).unwrap();
        sim.script_take_out();
        sim.script_inject(ack(3000, 257 << 7));
        let s = sim.script_socket();
        assert_eq!(s.tp.snd_cwnd, 3, "slow start, no second reduction");
        assert_eq!(s.tp.snd_ssthresh, 7);
    }

    #[test]
    fn a_closed_socket_answers_with_a_bare_reset() {
        // close() in SYN_SENT: the socket is gone; the SYN-ACK gets an RST at the
        // sequence number it acknowledged, without ACK or options (tcp_v4_send_reset()).
        let mut sim = host();
        sim.script_connect();
        sim.run_until(MS).unwrap();
        assert!(sim.script_take_out()[0].1.has(flags::SYN));
        sim.script_close(true);
        sim.run_until(100 * MS).unwrap();
        sim.script_negotiate(1460, false, true, 0);
        sim.script_inject(Packet {
            flags: flags::SYN,
            ..ack(0, 32000)
        });
        sim.run_until(101 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(out.len(), 1, "no SYN retransmission, one reset");
        let rst = out[0].1;
        assert!(rst.has(flags::RST) && rst.has(flags::NO_ACK));
        assert_eq!((rst.seq, rst.tsval_ns, rst.num_sacks), (0, 0, 0));
    }

    #[test]
    fn a_partial_retransmission_cuts_its_skb() {
        // tcp_fragment() in __tcp_retransmit_skb(): the head of a 2-segment skb resent
        // alone (cwnd 1 after an RTO) leaves the rest an skb of its own.
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_write(4000);
        sim.run_until(201 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(out.len(), 2, "two 2-segment skbs");
        sim.run_until(1000 * MS).unwrap(); // TLP, then the RTO resends 0..1000 alone
        let rtx: Vec<(u64, u64)> = sim
            .script_take_out()
            .iter()
            .map(|(_, p)| (p.seq, p.end_seq))
            .collect();
        assert!(rtx.contains(&(0, 1000)), "{rtx:?}");
        let q = &sim.script_socket().rtx;
        let id = q.lower_bound_end(1000);
        assert!(q.get(id).skb_head, "1000..2000 begins an skb now");
    }

    #[test]
    fn without_sack_three_duplicate_acks_retransmit_the_head() {
        // fr-4pkt.pkt: four segments out, three duplicate ACKs: each counts as a segment
        // delivered (tcp_add_reno_sack()), the third marks the head lost
        // (tcp_newreno_mark_lost(): sacked_out >= reordering) and it is resent at once.
        let mut sim = host();
        passive_open_with(&mut sim, 1460, false);
        sim.script_write(4 * 1460);
        sim.run_until(300 * MS).unwrap();
        assert_eq!(sim.script_take_out().len(), 2, "two 2-segment skbs");
        for k in 1..=3u32 {
            sim.script_inject(ack(0, 257 << 7));
            let s = sim.script_socket();
            assert_eq!(s.tp.sacked_out, k, "duplicate ACK {k} counted");
        }
        let s = sim.script_socket();
        assert_eq!(s.tp.ca_state, crate::tcp::sock::CaState::Recovery);
        assert_eq!(s.tp.lost_out, 1);
        sim.run_until(301 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].1.seq, out[0].1.end_seq),
            (0, 1460),
            "the head, fast"
        );
        assert!(out[0].1.num_sacks == 0);
        sim.script_inject(ack(4 * 1460, 257 << 7));
        let s = sim.script_socket();
        assert_eq!((s.tp.sacked_out, s.tp.packets_out), (0, 0));
    }

    #[test]
    fn cork_holds_small_writes_until_uncorked_and_msg_more_sets_no_psh() {
        // sockopt_cork_nodelay.pkt: TCP_CORK holds part-MSS data whatever is in flight
        // (tcp_nagle_check() with TCP_NAGLE_CORK); uncorking pushes it as one segment.
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_set_cork(true);
        sim.script_write(40);
        sim.run_until(250 * MS).unwrap();
        sim.script_write(40);
        sim.run_until(260 * MS).unwrap();
        assert!(sim.script_take_out().is_empty(), "corked");
        sim.script_set_cork(false);
        sim.run_until(261 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].1.seq, out[0].1.end_seq), (0, 80));
        assert!(out[0].1.has(flags::PSH), "the writes' end");
        sim.script_inject(ack(80, 257 << 7));
        // send(MSG_MORE) twice with TCP_NODELAY on: held by MSG_MORE's cork, then pushed
        // by setting TCP_NODELAY (TCP_NAGLE_PUSH), without PSH (tcp_push() marks no end).
        sim.script_set_nodelay(true);
        sim.script_send(40, false, true);
        sim.script_send(40, false, true);
        sim.run_until(300 * MS).unwrap();
        assert!(sim.script_take_out().is_empty(), "MSG_MORE holds");
        sim.script_set_nodelay(true);
        sim.run_until(301 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].1.seq, out[0].1.end_seq), (80, 160));
        assert!(!out[0].1.has(flags::PSH));
    }

    #[test]
    fn msg_eor_ends_an_skb_that_later_data_does_not_join() {
        // no-coalesce-small.pkt: 10400 bytes, 400 with MSG_EOR, 10000 more: the skb
        // holding byte 10800 ends there (tcp_skb_can_collapse()), whatever the cwnd allows.
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_inject(ack(0, 514 << 7));
        sim.script_socket_mut().tp.snd_cwnd = 40;
        sim.script_write(10_400);
        sim.script_send(400, true, false);
        sim.script_write(10_000);
        sim.run_until(201 * MS).unwrap();
        let ends: Vec<u64> = sim
            .script_take_out()
            .iter()
            .map(|(_, p)| p.end_seq)
            .collect();
        assert!(
            ends.contains(&10_800),
            "an skb ends at the record: {ends:?}"
        );
        assert_eq!(ends.last(), Some(&20_800));
    }

    #[test]
    fn an_ack_that_arms_racks_reordering_timer_does_not_rearm_the_rto_over_it() {
        // no-coalesce-retrans.pkt's first retransmission: an ACK that advances snd_una and
        // SACKs above a hole leaves that hole within RACK's reordering window (one SACKed
        // skb of two segments, under the dupthresh of 3: reo_wnd = min_rtt / 4).
        // tcp_rack_mark_lost() arms the REO timer and tcp_identify_packet_loss() clears FLAG_SET_XMIT_TIMER, so
        // tcp_ack() does not replace it with the TLP or the RTO: the hole goes out when the
        // window has passed, not a probe timeout later.
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_write(10_000);
        sim.run_until(201 * MS).unwrap();
        // five skbs of two segments (the TSO size goal at this cwnd)
        let sent: Vec<(u64, u64)> = sim
            .script_take_out()
            .iter()
            .map(|(_, p)| (p.seq, p.end_seq))
            .collect();
        assert_eq!(sent[..2], [(0, 2000), (2000, 4000)]);
        sim.run_until(210 * MS).unwrap();
        let mut p = ack(2000, 257 << 7);
        p.sack[0] = crate::packet::SackBlock {
            start: 4000,
            end: 6000,
        };
        p.num_sacks = 1;
        sim.script_inject(p);
        let s = sim.script_socket();
        assert_eq!(s.tp.sacked_out, 2);
        assert_eq!(s.tp.lost_out, 0, "within the reordering window");
        assert_eq!(s.xmit_timer, crate::tcp::socket::XmitTimer::ReoTimeout);
        // min_rtt 10 ms: reo_wnd 2.5 ms; the timer is that (3 jiffies at HZ 1000) plus
        // TCP_TIMEOUT_MIN (2): 5 ms after the ACK.
        sim.run_until(214 * MS).unwrap();
        assert!(sim.script_take_out().is_empty());
        sim.run_until(216 * MS).unwrap();
        let out = sim.script_take_out();
        assert!(!out.is_empty());
        assert_eq!(out[0].1.seq, 2000, "the hole: {out:?}");
        assert_eq!(
            sim.script_socket().tp.ca_state,
            crate::tcp::sock::CaState::Recovery
        );
    }

    #[test]
    fn a_loss_probe_that_sends_nothing_restarts_the_rto_from_the_heads_send_time() {
        // tcp_write_timer_handler() leaves icsk_pending at ICSK_TIME_LOSS_PROBE while
        // tcp_send_loss_probe() runs; a probe it does not send (one TLP is already out:
        // tlp_high_seq) ends in tcp_rearm_rto(), which then offsets the RTO from the head's
        // send time (tcp_rto_delta_us()) instead of starting a whole RTO from now.
        use crate::tcp::socket::XmitTimer;
        use crate::time::BOOT_NS;
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_write(10_000);
        sim.run_until(201 * MS).unwrap();
        sim.script_take_out();
        sim.run_until(210 * MS).unwrap();
        sim.script_inject(ack(2000, 257 << 7));
        assert_eq!(sim.script_socket().xmit_timer, XmitTimer::LossProbe);
        // the first probe goes out (the last segment again) and records tlp_high_seq
        let first_probe_ns = sim.script_socket().xmit_deadline_ns - BOOT_NS;
        sim.run_until(first_probe_ns + MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(
            (out.len(), out[0].1.seq, out[0].1.end_seq),
            (1, 9000, 10_000)
        );
        assert_eq!(sim.script_socket().tlp_high_seq, 10_000);
        // an ACK below tlp_high_seq keeps it and schedules another probe
        sim.script_inject(ack(4000, 257 << 7));
        let s = sim.script_socket();
        assert_eq!(s.xmit_timer, XmitTimer::LossProbe);
        let probe_ns = s.xmit_deadline_ns - BOOT_NS;
        sim.run_until(probe_ns + MS / 2).unwrap();
        assert!(sim.script_take_out().is_empty(), "no second probe");
        let s = sim.script_socket();
        assert_eq!(s.xmit_timer, XmitTimer::Retrans);
        // the head (4000:6000) left at 200 ms: the RTO runs from there, not from the probe,
        // and at least one jiffy (tcp_rearm_rto(): max(tcp_rto_delta_us(), 1))
        let rto_ns = s.tp.icsk_rto as u64 * MS;
        let deadline_ns = s.xmit_deadline_ns - BOOT_NS;
        assert!(
            deadline_ns < probe_ns + rto_ns,
            "{deadline_ns} vs {probe_ns} + {rto_ns}"
        );
        let expected_ns = (200 * MS + rto_ns).max(probe_ns + MS);
        assert!(
            deadline_ns.abs_diff(expected_ns) <= MS,
            "{deadline_ns} vs {expected_ns}"
        );
    }

    #[test]
    fn a_connection_without_sack_schedules_no_loss_probe() {
        // sendmsg_msg_more.pkt (its SYN offers no sackOK): tcp_schedule_loss_probe() returns
        // false unless tcp_is_sack(), so an ACK that leaves data in flight arms the RTO, and
        // a corked tail waits for the ACK instead of leaving as a probe.
        let mut sim = host();
        passive_open_with(&mut sim, 1000, false);
        assert!(!sim.script_socket().sack_ok);
        sim.script_write(10_000);
        sim.run_until(201 * MS).unwrap();
        sim.script_take_out();
        sim.run_until(210 * MS).unwrap();
        sim.script_inject(ack(2000, 257 << 7));
        assert_eq!(
            sim.script_socket().xmit_timer,
            crate::tcp::socket::XmitTimer::Retrans
        );
    }

    #[test]
    fn sack_reordering_is_measured_to_the_end_of_the_highest_sacked_segment() {
        // sack-shift-sacked-7-3-4-8-9-fack.pkt: segments 7 then 3 SACKed; 3 was in a hole
        // below the highest SACK, reordering = (highest_sack_seq - 3's start) / mss, where
        // tcp_highest_sack_seq() is the seq of the skb *after* the highest SACKed one:
        // (8000 - 3000) / 1000 = 5 segments (7001:8001 -> 3001:4001 in the script).
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_write(10_000);
        sim.run_until(201 * MS).unwrap();
        sim.script_take_out();
        let sack = |blocks: &[(u64, u64)]| {
            let mut p = ack(0, 257 << 7);
            for (i, &(s, e)) in blocks.iter().enumerate() {
                p.sack[i] = crate::packet::SackBlock { start: s, end: e };
            }
            p.num_sacks = blocks.len() as u8;
            p
        };
        sim.script_inject(sack(&[(7000, 8000)]));
        assert_eq!(sim.script_socket().highest_sack_seq, Some(8000));
        sim.run_until(230 * MS).unwrap();
        sim.script_inject(sack(&[(3000, 4000), (7000, 8000)]));
        assert_eq!(sim.script_socket().reordering, 5);
    }

    #[test]
    fn a_window_update_after_an_idle_spell_restarts_the_cwnd() {
        // slow-start-after-win-update.pkt: data queued behind a zero window for 3 s; the
        // window update checks for an idle restart (tcp_ack_update_window() ->
        // tcp_slow_start_after_idle_check()): cwnd back to 10, so 5 segments per skb.
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_socket_mut().cfg.tcp_min_tso_segs = 10;
        sim.script_socket_mut().tp.snd_cwnd = 36;
        sim.script_write(10_000);
        sim.run_until(201 * MS).unwrap();
        sim.script_take_out();
        sim.script_inject(ack(10_000, 0));
        sim.script_write(20_000);
        sim.run_until(3_500 * MS).unwrap();
        sim.script_take_out(); // window probes
        assert_eq!(sim.script_socket().tp.snd_cwnd, 36);
        sim.script_inject(ack(10_000, 511 << 7));
        sim.run_until(3_501 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(sim.script_socket().tp.snd_cwnd, 10);
        assert_eq!(out[0].1.payload_bytes(), 5000, "half the restarted cwnd");
    }

    #[test]
    fn an_ecn_setup_syn_is_accepted_and_a_ce_mark_is_echoed_until_cwr() {
        use crate::packet::ecn;
        // tcp_ecn = 2 (the default) accepts a SYN with ECE|CWR: ECE alone on the SYN-ACK
        // (tcp_ecn_make_synack()), which is not-ECT (cubic does not need ECN).
        let mut sim = host();
        sim.run_until(100 * MS).unwrap();
        sim.script_negotiate(1000, false, true, 0);
        sim.script_inject(Packet {
            flags: flags::SYN | flags::ECE | flags::CWR,
            rwnd_bytes: 32792,
            ..Packet::default()
        });
        sim.run_until(200 * MS).unwrap();
        let synack = sim.script_take_out()[0].1;
        assert!(synack.has(flags::SYN) && synack.has(flags::ECE) && !synack.has(flags::CWR));
        assert_eq!(synack.ecn, ecn::NOT_ECT);
        sim.script_inject(ack(0, 257 << 7));
        // A CE-marked segment: its ACK (and every one after) carries ECE, not-ECT...
        let data = |seq: u64, f: u16, mark: u8| Packet {
            seq,
            end_seq: seq + 1000,
            flags: f,
            ecn: mark,
            ..ack(0, 257 << 7)
        };
        sim.script_inject(data(0, flags::PSH, ecn::CE));
        sim.script_inject(data(1000, flags::PSH, ecn::ECT_0));
        sim.run_until(201 * MS).unwrap();
        let out = sim.script_take_out();
        assert!(!out.is_empty());
        assert!(out
            .iter()
            .all(|(_, p)| p.has(flags::ECE) && p.ecn == ecn::NOT_ECT));
        // ... until a segment with CWR (tcp_ecn_accept_cwr()), ACKed at once.
        sim.script_inject(data(2000, flags::PSH | flags::CWR, ecn::ECT_0));
        sim.run_until(202 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1.ack_seq, 3000);
        assert!(!out[0].1.has(flags::ECE));
        // Our new data is ECT(0) (tcp_ecn_send()).
        sim.script_write(1000);
        sim.run_until(203 * MS).unwrap();
        let out = sim.script_take_out();
        assert_eq!((out[0].1.payload_bytes(), out[0].1.ecn), (1000, ecn::ECT_0));
    }

    #[test]
    fn tcp_ecn_set_on_the_scripted_host_is_read_when_used() {
        // tcp_ecn = 1 by connect(): the SYN asks (tcp_ecn_send_syn()).
        let mut sim = host();
        sim.script_set_ecn(1, true);
        sim.script_connect();
        sim.run_until(MS).unwrap();
        let syn = sim.script_take_out()[0].1;
        assert!(syn.has(flags::SYN) && syn.has(flags::ECE) && syn.has(flags::CWR));
        // With tcp_ecn_fallback the retransmitted SYN does not (tcp_ecn_clear_syn()).
        sim.run_until(1100 * MS).unwrap();
        let again = sim.script_take_out()[0].1;
        assert!(again.has(flags::SYN) && !again.has(flags::ECE) && !again.has(flags::CWR));
        // tcp_ecn = 0 when the SYN comes: refused (tcp_ecn_create_request()).
        let mut sim = host();
        sim.script_set_ecn(0, true);
        sim.run_until(100 * MS).unwrap();
        sim.script_negotiate(1000, false, true, 0);
        sim.script_inject(Packet {
            flags: flags::SYN | flags::ECE | flags::CWR,
            rwnd_bytes: 32792,
            ..Packet::default()
        });
        sim.run_until(101 * MS).unwrap();
        let synack = sim.script_take_out()[0].1;
        assert!(synack.has(flags::SYN) && !synack.has(flags::ECE));
    }

    #[test]
    fn local_drops_are_probed_every_half_second_until_the_user_timeout() {
        // user-timeout-probe.pkt: a qdisc that refuses everything (pfifo limit 0); the data
        // waits, tcp_probe_timer() retries every TCP_RESOURCE_PROBE_INTERVAL (500 ms, no
        // backoff) and counts icsk_probes_out; 3 s after its first run it gives up (sk_err
        // ETIMEDOUT) having sent 6 probes.
        let mut sim = host();
        passive_open(&mut sim);
        sim.script_socket_mut().user_timeout_ms = 3000;
        sim.script_set_tun_pfifo_limit(Some(0));
        sim.script_write(24);
        sim.run_until(3_600 * MS).unwrap();
        assert!(sim.script_socket().probes_out >= 6);
        sim.run_until(4_500 * MS).unwrap();
        let s = sim.script_socket();
        assert!(s.timed_out, "dropped after the user timeout");
        assert_eq!(s.probes_out, 6);
        assert_eq!(s.icsk_backoff, 0, "local drops do not back off");
        assert!(
            sim.script_take_out().is_empty(),
            "nothing ever left the host"
        );
    }
}
