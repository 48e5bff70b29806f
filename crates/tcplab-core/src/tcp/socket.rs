//! A TCP endpoint: one side of a connection, with a sender half ([`TcpSock`] plus the
//! retransmit queue and loss-recovery state) and a receiver half ([`Receiver`]).
//!
//! The engine calls in on four occasions, each with a [`Ctx`] giving the time and the
//! network to transmit into: a packet arrived (`on_packet`), one of the three timers
//! fired (`on_xmit_timer`, `on_delack_timer`, `on_pacing_timer`), a transmitted packet
//! left the host's NIC (`on_tx_complete`, for TSQ), or the application acted.
//! Every packet the endpoint sends goes straight to its host's egress qdisc, so a local
//! qdisc drop is seen at once, as `NET_XMIT_DROP` is in Linux.
//!
//! The sender follows Linux v6.12: `tcp_ack()` in `tcp::input`, loss recovery (RACK-TLP,
//! PRR, RTO, F-RTO, undo) in `tcp::recovery`, and transmission (`tcp_write_xmit`, pacing,
//! TSQ, TLP) in `tcp::output`. Timers are deadlines here; the engine keeps one event
//! queued per timer and re-arms lazily, so pushing the RTO forward on every ACK is free.

use crate::cc::{Cc, CongestionOps};
use crate::config::{AppConfig, FlowConfig, TcpConfig};
use crate::event::EventQueue;
use crate::metrics::histogram::LogHistogram;
use crate::mib::Mib;
use crate::net::Network;
use crate::packet::{flags, Packet, SackBlock, MAX_SACK_BLOCKS};
use crate::rng::Rng;
use crate::tcp::chrono::{Chrono, ChronoType};
use crate::tcp::push::PushMarks;
use crate::tcp::reader::Reader;
use crate::tcp::receiver::{AckAction, Receiver};
use crate::tcp::rtt::set_rto;
use crate::tcp::rtx_queue::RtxQueue;
use crate::tcp::sock::{PacingStatus, TcpSock, TCP_INFINITE_SSTHRESH};
use crate::time::NEVER;

/// The engine's view while an endpoint runs.
pub struct Ctx<'a> {
    pub now_ns: u64,
    pub net: &'a mut Network,
    pub ev: &'a mut EventQueue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnState {
    Closed,
    SynSent,
    SynRecv,
    Established,
}

/// What the shared retransmit timer is armed for (`icsk_pending`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XmitTimer {
    None,
    /// ICSK_TIME_RETRANS (also the SYN / SYN-ACK retransmit timer).
    Retrans,
    /// ICSK_TIME_LOSS_PROBE
    LossProbe,
    /// ICSK_TIME_REO_TIMEOUT
    ReoTimeout,
    /// ICSK_TIME_PROBE0 (zero window / local-drop retry)
    Probe0,
}

/// RACK state (`tp->rack`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Rack {
    /// us: (re)transmit time of the most recently delivered skb.
    pub mstamp_us: u64,
    pub rtt_us: u32,
    pub end_seq: u64,
    pub last_delivered: u32,
    pub reo_wnd_steps: u8,
    pub reo_wnd_persist: u8,
    pub dsack_seen: bool,
    pub advanced: bool,
}

/// The application writing into the socket.
#[derive(Clone, Debug)]
pub struct AppState {
    /// Total bytes the application will write (None = unlimited, netperf TCP_STREAM).
    pub total_bytes: Option<u64>,
    pub start_ns: u64,
    pub stop_ns: u64,
    pub stopped: bool,
    /// When all the application's data was acknowledged.
    pub done_ns: Option<u64>,
    /// Written by an app object (`crate::app`), not by the bulk writer: the socket sends
    /// only what the app wrote.
    pub driven: bool,
    /// Bytes a driven app has written that the send buffer has not taken yet (a blocked
    /// `write()`).
    pub pending_bytes: u64,
}

/// Not driven by an app object.
pub const NO_APP: u32 = u32::MAX;
/// Bits of [`TcpSocket::notify`]: what happened that the socket's app must hear about.
pub mod notify {
    /// The connection reached ESTABLISHED.
    pub const ESTABLISHED: u8 = 1;
    /// The application read more bytes (`rcv.copied_seq` advanced).
    pub const READ: u8 = 2;
    /// `snd_una` advanced (only when the app wants it).
    pub const ACKED: u8 = 4;
}

/// Per-endpoint statistics beyond the MIB counters.
#[derive(Clone, Debug, Default)]
pub struct SockStats {
    pub rtt_hist: LogHistogram,
    /// Data packets this endpoint handed to the network (transmissions).
    pub data_pkts_sent: u64,
    /// Packets dropped by the local qdisc at send time.
    pub local_drops: u64,
    /// Smallest RTT sample timed from the skb's transmit stamp (us), for the engine's
    /// check that no sample is below the path's propagation delay.
    pub min_timed_rtt_us: Option<u64>,
    /// Smallest RTT sample taken from the echoed timestamp (1 ms clock), in us.
    pub min_ts_rtt_us: Option<u64>,
    /// Times TCP's internal pacing timer fired (`tcp_pace_kick()`); none under fq.
    pub pacing_timer_events: u64,
}

impl SockStats {
    /// Remember an RTT sample for the base-RTT check (one compare per ACK).
    #[inline]
    pub fn note_rtt_sample(&mut self, rtt_us: u64, from_tsecr: bool) {
        let slot = if from_tsecr {
            &mut self.min_ts_rtt_us
        } else {
            &mut self.min_timed_rtt_us
        };
        if slot.is_none_or(|m| rtt_us < m) {
            *slot = Some(rtt_us);
        }
    }
}

pub struct TcpSocket {
    pub tp: TcpSock,
    pub cc: Cc,
    pub rtx: RtxQueue,
    pub rcv: Receiver,
    pub cfg: TcpConfig,
    pub state: ConnState,
    pub node: u32,
    pub peer_node: u32,
    pub ep: u32,
    pub peer_ep: u32,
    pub app: AppState,
    pub stats: SockStats,
    /// The host's TCP builds GSO skbs (`NodeConfig::gso_skbs`, every host of a Python
    /// scenario): a burst leaves as one packet of several segments, cut into frames as it
    /// leaves the host's first link (`net::link`); off, one MSS per skb.
    pub gso_skbs: bool,
    /// With `gso_skbs`: the write queue's unsent skbs as Linux builds them (tcp_sendmsg_locked()
    /// fills skbs up to `tcp_xmit_size_goal()`; tcp_write_xmit() grows the head skb with
    /// tcp_grow_skb() and cuts it with tso_fragment()): the nominal end of the skb at the
    /// send head and of the one after it; at or below `snd_nxt` (resp. `wq_head_end`)
    /// means "a fresh skb of size_goal" (see `output::TcpSocket::send_head_skb`).
    pub wq_head_end: u64,
    pub wq_next_end: u64,
    /// Where the application's writes ended, not yet sent (`tcp_mark_push()`, `tcp::push`).
    pub push_marks: PushMarks,
    /// Where writes with `MSG_EOR` ended, not yet sent: the skb holding such an end is
    /// never merged with what follows (`TCP_SKB_CB(skb)->eor`, tcp_skb_can_collapse()), so
    /// an skb ends there (`output::TcpSocket::grow_send_head`).
    pub eor_marks: PushMarks,
    /// The app object driving this socket (index into the engine's apps), or [`NO_APP`].
    pub app_id: u32,
    /// Pending notifications for the app ([`notify`] bits); the engine delivers and
    /// clears them after each call into the socket.
    pub notify: u8,
    /// The app wants [`notify::ACKED`].
    pub notify_acked: bool,
    /// `copied_seq` last reported to the app.
    pub notified_read: u64,
    /// The application's reader (`tcp::reader`): how the receive queue is drained.
    pub reader: Reader,
    /// Deadline of the slow reader's next read (ns), or NEVER.
    pub read_deadline_ns: u64,
    /// The sender's limited-time chronographs (`ss`'s busy / rwnd_limited / sndbuf_limited).
    pub chrono: Chrono,
    /// The application is blocked on the send buffer (SOCK_NOSPACE), for the
    /// SNDBUF_LIMITED chronograph.
    pub sndbuf_nospace: bool,
    /// `tp->last_oow_ack_time` (jiffies; 0 = never): out-of-window ACKs are rate-limited.
    pub last_oow_ack_j: u32,

    // --- sender state beyond TcpSock (struct tcp_sock / inet_connection_sock) ---
    pub rack: Rack,
    pub reord_seen: u32,
    pub reordering: u32,
    pub undo_marker: u64,
    pub undo_valid: bool,
    pub undo_retrans: i32,
    /// ns of the first retransmission of the current episode (0 = none).
    pub retrans_stamp_ns: u64,
    pub prr_delivered: u32,
    pub prr_out: u32,
    pub tlp_high_seq: u64,
    pub tlp_retrans: bool,
    pub frto: bool,
    pub icsk_retransmits: u32,
    pub icsk_backoff: u32,
    /// `tcp_highest_sack_seq()`: the sequence of the skb after the highest SACKed one
    /// (`tp->highest_sack`), i.e. that segment's end; None = none.
    pub highest_sack_seq: Option<u64>,
    pub retransmit_hint: u64,
    /// SACK blocks of the previous ACK, to skip tagged runs (`tp->recv_sack_cache`).
    pub sack_cache: crate::tcp::input::SackCache,
    /// Id after the skb of the last TX completion (where the next one usually is).
    pub tx_complete_hint: u64,
    /// Latest TSval seen from the peer (echoed as TSecr).
    pub ts_recent_ns: u64,
    /// TSecr of the ACK being processed.
    pub rx_tsecr_ns: u64,
    /// `sk_sndbuf` and bytes this socket has in host queues (`sk_wmem_alloc`).
    pub sk_sndbuf: u64,
    pub wmem_alloc_bytes: u64,
    pub tsq_throttled: bool,
    /// The host's CPU is still on the transmit work of an earlier skb (`host::cpu`, "The
    /// CPU cost of packets"): `tcp_write_xmit()` waits for it (`Network::cpu_throttle`);
    /// true exactly while the socket is in its host's queue of waiters.
    pub cpu_throttled: bool,
    /// Zero-window/probe0 and SYN retransmission counters.
    pub syn_retries: u32,
    /// Packets handed to IP so far (wrapping): the IP ID of the next one, less the socket's
    /// random `inet_id` start, which only the packet capture adds (see `Packet::ip_id`).
    pub ip_id_next: u16,
    /// The packet capture records what this endpoint receives (`crate::capture`: tcpdump's
    /// receive tap, after the host's NIC): the one test the capture costs per packet here.
    pub captured: bool,
    /// Both sides offered the timestamps option (`tp->rx_opt.tstamp_ok`): on for every
    /// scenario's connection; a scripted peer (`sim::scripted`) may leave it out, and then
    /// segments carry no TSval/TSecr (both 0 here) and RTTs come from skb timing only.
    pub ts_ok: bool,
    /// Both sides offered SACK (`tcp_is_sack()`): on for every scenario's connection. A
    /// scripted peer may leave it out; then this endpoint sends no SACK blocks, every
    /// out-of-order segment is acknowledged at once (a duplicate ACK), and its own loss
    /// recovery counts duplicate ACKs instead (`tcp::reno`).
    pub sack_ok: bool,
    /// A driven application's blocked `write()` sleeps in sk_stream_wait_memory() until
    /// sk_stream_write_space() wakes it (free space at least half the queued bytes), as the
    /// bulk writer does, instead of refilling as each byte of room appears (the
    /// simplification kept for the apps of `crate::app`). Set for a scripted peer's socket.
    pub writer_sleeps: bool,
    /// `TCP_CORK` (`tp->nonagle & TCP_NAGLE_CORK`): a part-MSS tail waits for more data.
    pub corked: bool,
    /// This push is corked (`send(MSG_MORE)`: tcp_push() with TCP_NAGLE_CORK).
    pub push_cork: bool,
    /// This push passes Nagle and cork (TCP_NAGLE_PUSH, from setsockopt).
    pub push_force: bool,
    /// The segment being sent carries PSH whatever the write marks (tcp_write_wakeup()).
    pub push_force_psh: bool,
    /// `TCP_NODELAY` (`tp->nonagle & TCP_NAGLE_OFF`): Nagle's test no longer holds a
    /// part-MSS tail skb.
    pub nodelay: bool,
    /// `SOCK_SNDBUF_LOCK`: the application set `SO_SNDBUF`, so tcp_sndbuf_expand() leaves
    /// `sk_sndbuf` alone.
    pub sndbuf_locked: bool,
    /// When the SYN or SYN-ACK was (last) sent, ns: the handshake's RTT sample when it was
    /// not retransmitted (`tcp_synack_rtt_meas()`, the SYN skb's own stamp in tcp_ack()).
    pub syn_sent_ns: u64,
    /// `sysctl_tcp_tso_win_divisor` (Linux default 3).
    pub tso_win_divisor: u32,
    /// Closing: both FINs and the states after ESTABLISHED (`tcp::close`).
    pub fin: crate::tcp::close::FinState,
    /// `TCP_USER_TIMEOUT` in ms (0: off).
    pub user_timeout_ms: u32,
    /// `icsk_probes_out`: zero-window (or local-drop) probes sent without an ACK since.
    pub probes_out: u32,
    /// `icsk_probes_tstamp`: when the probe timer first fired in this episode, ns (0: none).
    pub probes_tstamp_ns: u64,
    /// `sk_err`: the error that ended the connection (a timeout: ETIMEDOUT), if any.
    pub timed_out: bool,

    // --- timers: deadlines (ns) and the event currently queued for each ---
    pub xmit_timer: XmitTimer,
    pub xmit_deadline_ns: u64,
    pub pacing_deadline_ns: u64,
    pub sched_ns: [u64; 4],
    /// The ACK number of a DCTCP special ACK being sent (`tcp::ecn`); `None` otherwise.
    pub special_ack_seq: Option<u64>,
}

/// Index into `sched_ns`.
pub const T_XMIT: usize = 0;
pub const T_DELACK: usize = 1;
pub const T_PACING: usize = 2;
/// The slow reader's next read (`read_deadline_ns`).
pub const T_READ: usize = 3;

impl TcpSocket {
    /// The two endpoints of `flow`: (client/sender, server/receiver).
    /// `hz_src` / `hz_dst` are the `CONFIG_HZ` of the sending and receiving hosts.
    pub fn pair(
        flow: &FlowConfig,
        flow_idx: u32,
        seed: u64,
        boot_ns: u64,
        end_ns: u64,
        hz_src: u32,
        hz_dst: u32,
    ) -> (TcpSocket, TcpSocket) {
        let cc_rng = Rng::for_component(seed, &format!("flow:{}:cc", flow.name));
        let srv_rng = Rng::for_component(seed, &format!("flow:{}:cc:server", flow.name));
        let (total, driven) = match flow.app {
            AppConfig::Bulk => (None, false),
            AppConfig::BulkBytes { bytes } => (Some(bytes), false),
            AppConfig::Driven => (None, true),
        };
        let app = AppState {
            total_bytes: total,
            start_ns: boot_ns + flow.start_ns,
            stop_ns: flow.stop_ns.map(|s| boot_ns + s).unwrap_or(end_ns),
            stopped: false,
            done_ns: None,
            driven,
            pending_bytes: 0,
        };
        // The side without the bulk writer sends no data of its own (ACKs only); a driven
        // flow's both sides send what the app writes.
        let idle_app = AppState {
            total_bytes: Some(0),
            start_ns: NEVER,
            stop_ns: NEVER,
            stopped: true,
            done_ns: None,
            driven: false,
            pending_bytes: 0,
        };
        let (client_app, server_app) = match (driven, flow.data_side) {
            (true, _) => (app.clone(), app),
            (false, crate::config::Side::Client) => (app, idle_app),
            (false, crate::config::Side::Server) => (idle_app, app),
        };
        // The data's receiver reads as `flow.reader` says; the other side (ACKs, or the
        // requests of a driven flow) reads at once.
        let (client_reader, server_reader) = match flow.data_side {
            crate::config::Side::Client => (crate::config::ReaderConfig::Immediate, flow.reader),
            crate::config::Side::Server => (flow.reader, crate::config::ReaderConfig::Immediate),
        };
        let mk = |node,
                  peer_node,
                  ep,
                  peer_ep,
                  cc: Cc,
                  app: AppState,
                  hz: u32,
                  reader: crate::config::ReaderConfig| {
            let cfg = flow.tcp.clone();
            let mut tp = TcpSock::init_sock(cfg.mss_bytes, cfg.initial_cwnd);
            tp.set_hz(hz);
            tp.icsk_rto = tp.tcp_timeout_init();
            tp.sk_max_pacing_rate = cfg.max_pacing_rate_bytes_per_sec;
            tp.sk_pacing_status = if cfg.fq_pacing {
                PacingStatus::Fq
            } else {
                PacingStatus::None
            };
            // SO_MAX_PACING_RATE switches on TCP's internal pacing when no qdisc paces
            // (Linux v6.12 net/core/sock.c: sk_setsockopt(), SK_PACING_NONE -> SK_PACING_NEEDED).
            if cfg.max_pacing_rate_bytes_per_sec != u64::MAX
                && tp.sk_pacing_status == PacingStatus::None
            {
                tp.sk_pacing_status = PacingStatus::Needed;
            }
            tp.snd_wnd = 65535;
            tp.max_window = 65535;
            let mut rcv = Receiver::new(&cfg, hz);
            rcv.read_immediately = reader == crate::config::ReaderConfig::Immediate;
            TcpSocket {
                rcv,
                app_id: NO_APP,
                notify: 0,
                notify_acked: false,
                notified_read: 0,
                reader: Reader::new(reader),
                read_deadline_ns: NEVER,
                chrono: Chrono::default(),
                sndbuf_nospace: false,
                last_oow_ack_j: 0,
                tp,
                cc,
                rtx: RtxQueue::new(),
                reordering: cfg.tcp_reordering,
                sk_sndbuf: cfg.tcp_wmem[1],
                cfg,
                state: ConnState::Closed,
                node,
                peer_node,
                ep,
                peer_ep,
                app,
                stats: SockStats::default(),
                rack: Rack {
                    reo_wnd_steps: 1,
                    ..Default::default()
                },
                reord_seen: 0,
                undo_marker: 0,
                undo_valid: false,
                undo_retrans: -1,
                retrans_stamp_ns: 0,
                prr_delivered: 0,
                prr_out: 0,
                tlp_high_seq: 0,
                tlp_retrans: false,
                frto: false,
                icsk_retransmits: 0,
                icsk_backoff: 0,
                highest_sack_seq: None,
                retransmit_hint: 0,
                sack_cache: Default::default(),
                tx_complete_hint: 0,
                ts_recent_ns: 0,
                rx_tsecr_ns: 0,
                wmem_alloc_bytes: 0,
                tsq_throttled: false,
                cpu_throttled: false,
                gso_skbs: false,
                wq_head_end: 0,
                wq_next_end: 0,
                push_marks: PushMarks::default(),
                eor_marks: PushMarks::default(),
                syn_retries: 0,
                ip_id_next: 0,
                captured: false,
                ts_ok: true,
                sack_ok: true,
                writer_sleeps: false,
                nodelay: flow.nodelay,
                corked: false,
                push_cork: false,
                push_force: false,
                push_force_psh: false,
                sndbuf_locked: false,
                syn_sent_ns: 0,
                tso_win_divisor: crate::tcp::output::TCP_TSO_WIN_DIVISOR,
                fin: Default::default(),
                user_timeout_ms: 0,
                probes_out: 0,
                probes_tstamp_ns: 0,
                timed_out: false,
                xmit_timer: XmitTimer::None,
                xmit_deadline_ns: NEVER,
                pacing_deadline_ns: NEVER,
                sched_ns: [NEVER; 4],
                special_ack_seq: None,
            }
        };
        // Each socket runs its own host's cc: the data sender `flow.cc`, the other end
        // `flow.receiver_cc` when its host differs.
        let other_cc = flow.receiver_cc.unwrap_or(flow.cc);
        let (client_cc, server_cc) = match flow.data_side {
            crate::config::Side::Client => (flow.cc, other_cc),
            crate::config::Side::Server => (other_cc, flow.cc),
        };
        let c_ep = 2 * flow_idx;
        let s_ep = 2 * flow_idx + 1;
        let client = mk(
            flow.src,
            flow.dst,
            c_ep,
            s_ep,
            Cc::new(client_cc, &flow.cc_params, cc_rng),
            client_app,
            hz_src,
            client_reader,
        );
        let server = mk(
            flow.dst,
            flow.src,
            s_ep,
            c_ep,
            Cc::new(server_cc, &flow.cc_params, srv_rng),
            server_app,
            hz_dst,
            server_reader,
        );
        (client, server)
    }

    /// GSO skbs (`NodeConfig::gso_skbs`) for this socket's host. On, `sk_gso_max_size` is
    /// what `sk_setup_caps()` sets (Linux v6.12 include/net/sock.h: sk_dst_gso_max_size():
    /// the device's 64 KB `gso_ipv4_max_size` less `MAX_TCP_HEADER + 1`); off (the engine's
    /// one-MSS path), tcplab keeps its earlier 64 KB for the burst size.
    pub fn set_gso_skbs(&mut self, on: bool) {
        self.gso_skbs = on;
        if on {
            self.tp.sk_gso_max_size =
                crate::tcp::sock::GSO_MAX_SIZE - (crate::tcp::sock::MAX_TCP_HEADER + 1);
        }
    }

    /// `tcp_rto_min_us()`.
    #[inline]
    pub fn rto_min_us(&self) -> u32 {
        self.cfg.rto_min_ms * 1000
    }

    /// The earliest deadline among this endpoint's timers, per timer slot.
    #[inline]
    pub fn deadlines(&self) -> [u64; 4] {
        [
            self.xmit_deadline_ns,
            self.rcv
                .delack_deadline_ns
                .min(self.rcv.comp_sack_deadline_ns),
            self.pacing_deadline_ns,
            self.read_deadline_ns,
        ]
    }

    /// `inet_csk_reset_xmit_timer(sk, what, when_jiffies, TCP_RTO_MAX)`: the timer is set
    /// to `jiffies + when` and fires at the start of that tick (timer granularity is the
    /// host's jiffy).
    pub fn reset_xmit_timer(&mut self, what: XmitTimer, now_ns: u64, when_j: u32) {
        let when = when_j.min(self.tp.tcp_rto_max());
        self.xmit_timer = what;
        self.xmit_deadline_ns = self.tp.clock().timer_deadline_ns(now_ns, when);
    }

    pub fn clear_xmit_timer(&mut self) {
        self.xmit_timer = XmitTimer::None;
        self.xmit_deadline_ns = NEVER;
    }

    /// Refresh the TCP clocks (`tcp_mstamp_refresh`).
    #[inline]
    pub fn refresh_clock(&mut self, now_ns: u64) {
        self.tp.set_now(now_ns);
    }

    /// Build a segment `[seq, end_seq)` with current ACK fields and hand it to the host's
    /// egress. Returns false if the local qdisc dropped it (NET_XMIT_DROP).
    #[inline]
    pub fn transmit(&mut self, ctx: &mut Ctx, seq: u64, end_seq: u64, pkt_flags: u16) -> bool {
        self.transmit_skb(ctx, seq, end_seq, pkt_flags, 0, 1)
    }

    /// `transmit` of one skb of `segs` segments of `gso_size` bytes each (the last one
    /// shorter), as `__tcp_transmit_skb()` hands a TSO/GSO skb to IP: one packet, one set of
    /// ACK fields and options, IP IDs for every segment (`ip_select_ident_segs()`).
    pub fn transmit_skb(
        &mut self,
        ctx: &mut Ctx,
        seq: u64,
        end_seq: u64,
        pkt_flags: u16,
        gso_size: u32,
        segs: u32,
    ) -> bool {
        let mut sack = [SackBlock::default(); MAX_SACK_BLOCKS];
        let (mut ack_seq, mut wnd, mut num_sacks, mut dsack) = self.rcv.fill_ack(&mut sack);
        let special_ack = self.special_ack_seq.is_some();
        if let Some(a) = self.special_ack_seq {
            ack_seq = a;
        }
        if !self.sack_ok {
            (num_sacks, dsack) = (0, false);
        }
        // A FIN takes one sequence number (`tcp::close`): ours moves every later segment
        // on by one, the peer's every later ACK.
        let (mut seq, mut end_seq) = (seq, end_seq);
        if self.fin.active {
            if self.fin.peer_fin_rcvd {
                ack_seq += 1;
            }
            if self.fin.fin_sent && seq == end_seq && seq == self.tp.write_seq {
                seq += 1;
                end_seq += 1;
            }
        }
        let syn = pkt_flags & flags::SYN != 0;
        if syn {
            // A SYN or SYN-ACK carries the initial window unscaled (Receiver::syn_window).
            wnd = self.rcv.syn_window();
        }
        let payload = (end_seq - seq) as u32;
        let mut f = pkt_flags;
        let (ecn_field, ecn_flags) = self.ecn_send(seq, payload, syn);
        f |= ecn_flags;
        if dsack {
            f |= flags::DSACK;
        }
        if segs > 1 {
            // __tcp_transmit_skb(): PSH on every skb of more than one segment (`tcp::push`).
            f |= flags::PSH;
        }
        if payload > 0 {
            f |= flags::TSQ;
            if self.gso_skbs {
                // skb_set_owner_w(): sk_wmem_alloc is charged the skb's truesize (tcplab
                // keeps payload-only charging with tso off, as before).
                f |= flags::SKB_HEAD;
            }
        }
        // IPv4 identification (Linux v6.12 include/net/ip.h: ip_select_ident_segs()): a
        // connected socket's `inet_id`, one per segment, from a random start the capture
        // adds. The server's SYN-ACK, which Linux sends from the listener with ID 0
        // (net/ipv4/ip_output.c: ip_build_and_send_pkt()), is counted too: its ID is written
        // as 0 by the capture, and the count it takes only shifts the random start.
        let ip_id = self.ip_id_next;
        self.ip_id_next = ip_id.wrapping_add(segs as u16);
        let pkt = Packet {
            dst_ep: self.peer_ep,
            dst_node: self.peer_node,
            src_node: self.node,
            ip_bytes: Packet::ip_len(payload, num_sacks),
            seq,
            end_seq,
            ack_seq,
            rwnd_bytes: wnd,
            tsval_ns: if self.ts_ok { ctx.now_ns } else { 0 },
            tsecr_ns: if self.ts_ok { self.ts_recent_ns } else { 0 },
            // __tcp_transmit_skb(): every skb leaves stamped with max(tcp_wstamp_ns,
            // tcp_clock_cache) (Linux v6.12 net/ipv4/tcp_output.c).
            tstamp_ns: self.tp.tcp_wstamp_ns.max(self.tp.tcp_clock_cache),
            sack,
            num_sacks,
            flags: f,
            ip_id,
            ecn: ecn_field,
            gso_segs: if segs > 1 { segs as u16 } else { 0 },
            gso_size: if segs > 1 { gso_size as u16 } else { 0 },
        };
        if payload > 0 {
            self.stats.data_pkts_sent += segs as u64;
        }
        let pkt_charge = pkt.wmem_charge();
        let ok = ctx.net.send_from_host(self.node, pkt, ctx.now_ns, ctx.ev);
        // The ACK fields went out with the segment either way only if it was sent.
        if ok {
            // A SYN-ACK leaves rcv_wnd as tcp_select_initial_window() set it (the listener's
            // request sock, Linux v6.12 net/ipv4/tcp_output.c: tcp_make_synack()).
            if !syn
                && !special_ack
                && (self.state == ConnState::Established || self.state == ConnState::SynRecv)
            {
                // tcp_select_window(): the window's moves to and from zero.
                let old_wnd = self.rcv.rcv_wnd;
                if wnd == 0 && old_wnd != 0 {
                    self.tp.inc(Mib::TCPToZeroWindowAdv);
                } else if wnd != 0 && old_wnd == 0 {
                    self.tp.inc(Mib::TCPFromZeroWindowAdv);
                }
                self.rcv.ack_sent(wnd);
            }
            if payload > 0 {
                self.wmem_alloc_bytes += pkt_charge as u64;
            }
        } else {
            self.stats.local_drops += 1;
        }
        ok
    }

    /// `tcp_send_ack()`: a pure ACK.
    pub fn send_ack(&mut self, ctx: &mut Ctx) {
        let seq = self.tp.snd_nxt;
        self.transmit(ctx, seq, seq, 0);
        self.tp.inc(Mib::TcpOutSegs);
    }

    // ------------------------------------------------------------------ connection

    /// The application connects (client side): send a SYN.
    pub fn connect(&mut self, ctx: &mut Ctx) {
        self.refresh_clock(ctx.now_ns);
        self.state = ConnState::SynSent;
        self.tp.inc(Mib::TcpActiveOpens);
        self.rcv.active_open();
        self.send_syn(ctx);
    }

    fn send_syn(&mut self, ctx: &mut Ctx) {
        // The SYN consumes no sequence space here: data starts at byte 0 (see packet.rs).
        let seq = 0;
        self.syn_sent_ns = ctx.now_ns;
        let ecn = if self.syn_retries == 0 {
            self.ecn_send_syn()
        } else {
            self.ecn_resend_syn()
        };
        self.transmit(ctx, seq, seq, flags::SYN | ecn);
        self.tp.inc(Mib::TcpOutSegs);
        let rto = self.tp.icsk_rto;
        self.reset_xmit_timer(XmitTimer::Retrans, ctx.now_ns, rto);
    }

    /// `tcp_init_transfer()`: connection established; set up buffers and congestion control.
    fn init_transfer(&mut self, ctx: &mut Ctx) {
        self.state = ConnState::Established;
        self.tp.inc(Mib::TcpCurrEstab);
        self.notify |= notify::ESTABLISHED;
        self.rcv.established(ctx.now_ns, 0);
        self.rcv.init_rcv_mss(self.tp.mss_cache as u64);
        self.reader.established(ctx.now_ns);
        self.tp.snd_cwnd = self.cfg.initial_cwnd;
        self.tp.snd_ssthresh = TCP_INFINITE_SSTHRESH;
        self.tp.snd_cwnd_stamp = self.tp.jiffies32();
        self.tp.lsndtime = self.tp.jiffies32();
        self.clear_xmit_timer();
        self.icsk_backoff = 0;
        self.syn_retries = 0;
        self.sndbuf_expand();
        self.cc.init(&mut self.tp);
        self.tp.ca_has_cong_control = self.cc.has_cong_control();
        // The connecting side's tcp_ack() of the SYN-ACK ends in tcp_cong_control() ->
        // tcp_update_pacing_rate(); the listener's tcp_rcv_state_process() calls it itself
        // once the final ACK moved it to ESTABLISHED (Linux v6.12 net/ipv4/tcp_input.c;
        // seen on the kernel: a listener's first flight leaves in tcp_tso_autosize()'s
        // 2-segment skbs, not 64 KB ones).
        if !self.tp.ca_has_cong_control {
            self.update_pacing_rate();
        }
    }

    /// A SYN-type RTT sample from the handshake (Linux v6.12 net/ipv4/tcp_input.c:
    /// tcp_synack_rtt_meas(), and tcp_ack() on the SYN's skb): from the SYN's (SYN-ACK's)
    /// send time if it was not retransmitted, else (Karn) from the echoed timestamp, if any
    /// (tcp_ack_update_rtt()'s fallback).
    fn handshake_rtt(&mut self, tsecr_ns: u64, now_ns: u64) {
        let tsecr_ns = if self.syn_retries == 0 {
            self.syn_sent_ns
        } else {
            tsecr_ns
        };
        if tsecr_ns == 0 || tsecr_ns > now_ns {
            return;
        }
        let rtt_us = ((now_ns - tsecr_ns) / 1000) as i64;
        let rto_min = self.rto_min_us();
        crate::tcp::rtt::update_rtt_min(
            &mut self.tp,
            rtt_us as u32,
            false,
            self.cfg.tcp_min_rtt_wlen_s,
        );
        crate::tcp::rtt::rtt_estimator(&mut self.tp, rtt_us, rto_min);
        set_rto(&mut self.tp);
    }

    /// The TSval this endpoint echoes as TSecr (RFC 7323 section 4.3: the TSval of the
    /// earliest segment not yet acknowledged). Linux v6.12 net/ipv4/tcp_input.c:
    /// tcp_replace_ts_recent() (called from tcp_ack() with FLAG_UPDATE_TS_RECENT) and the
    /// fast path of tcp_rcv_established(): an established socket stores the segment's TSval
    /// only when the segment starts at or before `rcv_wup` (rcv_nxt when the last ACK or
    /// window went out) and its TSval is not older than ts_recent (tcp_paws_check()). So
    /// with delayed ACKs the echo is the first segment's TSval of those the ACK covers, and
    /// a segment above a hole never moves it. The handshake takes the SYN's or SYN-ACK's
    /// TSval as it is (tcp_rcv_synsent_state_process(), tcp_openreq_init()).
    /// Simplified: a segment with an older TSval only leaves ts_recent alone; it is not
    /// dropped as tcp_validate_incoming()'s PAWS check drops it in Linux. TSvals here are
    /// engine nanoseconds, not Linux's millisecond ticks, so a segment reordered by less than
    /// a tick, which Linux accepts (same TSval), is "older" here; keeping it is the closer
    /// model.
    fn store_ts_recent(&mut self, pkt: &Packet) {
        let established = matches!(self.state, ConnState::Established);
        if !established || (pkt.seq <= self.rcv.rcv_wup() && pkt.tsval_ns >= self.ts_recent_ns) {
            self.ts_recent_ns = pkt.tsval_ns;
        }
    }

    /// A packet addressed to this endpoint arrived.
    pub fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        if self.fin.active
            && ((self.fin.teardown == crate::tcp::close::Teardown::Closed
                && self.closed_answers(ctx, pkt))
                || self.abort_on_data(ctx, pkt))
        {
            return;
        }
        let fin_pkt;
        let pkt = if self.fin.active && (self.fin.fin_sent || self.fin.peer_fin_rcvd) {
            // The FINs' sequence numbers taken off (`tcp::close`).
            let mut p = *pkt;
            self.fin_ack_in(&mut p);
            fin_pkt = p;
            &fin_pkt
        } else {
            pkt
        };
        if self.captured {
            ctx.net.capture_received(ctx.now_ns, pkt);
        }
        self.refresh_clock(ctx.now_ns);
        self.tp.inc(Mib::TcpInSegs);
        self.ecn_count_ip(pkt);
        if pkt.tsval_ns != 0 {
            self.store_ts_recent(pkt);
        }
        self.rx_tsecr_ns = pkt.tsecr_ns;
        match self.state {
            ConnState::Closed => {
                if pkt.has(flags::SYN) {
                    // Passive open: reply with a SYN-ACK.
                    self.state = ConnState::SynRecv;
                    self.tp.inc(Mib::TcpPassiveOpens);
                    self.ecn_create_request(pkt);
                    self.send_synack(ctx);
                }
                return;
            }
            ConnState::SynSent => {
                if pkt.has(flags::SYN) {
                    self.ecn_rcv_synack(pkt);
                    self.handshake_rtt(pkt.tsecr_ns, ctx.now_ns);
                    self.tp.snd_wnd = pkt.rwnd_bytes;
                    self.tp.max_window = self.tp.snd_wnd;
                    self.init_transfer(ctx);
                    // Send data (carrying the handshake's final ACK); if there is nothing
                    // to send, a pure ACK.
                    let before = self.stats.data_pkts_sent;
                    self.push_pending_frames(ctx);
                    if self.stats.data_pkts_sent == before {
                        self.send_ack(ctx);
                    }
                }
                return;
            }
            ConnState::SynRecv => {
                if pkt.has(flags::SYN) {
                    // Our SYN-ACK was lost and the client retransmitted its SYN.
                    self.send_synack(ctx);
                    return;
                }
                self.handshake_rtt(pkt.tsecr_ns, ctx.now_ns);
                self.tp.snd_wnd = pkt.rwnd_bytes;
                self.tp.max_window = self.tp.snd_wnd;
                self.init_transfer(ctx);
            }
            ConnState::Established => {
                if pkt.has(flags::SYN) {
                    // A retransmitted SYN-ACK: our handshake ACK was lost; ACK again.
                    self.send_ack(ctx);
                    return;
                }
                if !pkt.is_data() && pkt.seq < self.rcv.rcv_wup() {
                    // Linux v6.12 net/ipv4/tcp_input.c: tcp_validate_incoming() ->
                    // tcp_sequence(): a segment ending before rcv_wup is old (a zero-window
                    // probe, sent at snd_una - 1, is one). It is dropped unprocessed and
                    // answered with a duplicate ACK carrying the current window
                    // (tcp_send_dupack), at most one per tcp_invalid_ratelimit
                    // (tcp_oow_rate_limited).
                    if !self.oow_rate_limited() {
                        self.send_ack(ctx);
                    }
                    return;
                }
            }
        }
        // Established: ACK processing first (tcp_rcv_established -> tcp_ack), then data.
        self.tcp_ack(ctx, pkt);
        if pkt.is_data() {
            let srtt = self.tp.srtt_us;
            let rto = self.tp.icsk_rto;
            // tcp_sack_compress_send_ack(): a full SACK array flushes the compressed ACK.
            if self.rcv.sack_compress_must_send_ack(pkt.seq, pkt.end_seq) {
                self.send_ack(ctx);
            }
            // A GRO aggregate (`host::gro`) is one skb to TCP: one in-order (or
            // out-of-order) event of all its bytes, so `__tcp_ack_snd_check()` answers it
            // with one ACK. `TcpInSegs` counts it once (tcp_v4_rcv(): __TCP_INC_STATS per
            // skb), `data_segs_in` by its segments (tcp_segs_in(): gso_segs).
            // tcp_measure_rcv_mss() reads `gso_size` (one segment's payload) for a GRO'd
            // skb, so `rcv_mss` is unchanged by aggregation (tcplab keeps it at the MSS);
            // its `scaling_ratio` measurement reads the skb's len and truesize.
            self.rcv.set_skb(
                pkt.payload_bytes() as u64,
                pkt.segs(),
                pkt.num_sacks,
                pkt.flags,
            );
            // ECN before the segment is queued (`tcp::ecn`); DCTCP may first ACK what came
            // before it with the earlier CE state.
            self.ecn_rcv_data(ctx, pkt);
            let rcv_nxt_before = self.rcv.rcv_nxt;
            let action = self.rcv.on_data(
                ctx.now_ns,
                pkt.seq,
                pkt.end_seq,
                pkt.tsecr_ns,
                srtt,
                rto,
                &mut self.tp.mib,
            );
            self.rcv.data_segs_in += pkt.segs() as u64 - 1;
            self.ecn_data_queued();
            let mut acked_now = action == AckAction::Now;
            // A FIN on this segment is taken before the ACK goes out (tcp_data_queue() ->
            // tcp_fin(), then __tcp_ack_snd_check()): the ACK covers it (`tcp::close`).
            if (pkt.has(flags::FIN) || self.fin.active) && self.peer_fin_in(pkt) {
                acked_now = true;
            }
            if acked_now {
                self.send_ack(ctx);
            }
            if self.rcv.read_immediately {
                if self.rcv.copied_seq > self.notified_read {
                    self.notify |= notify::READ;
                }
                // The reader, woken by the in-order data (sk_data_ready), copies it and
                // runs tcp_cleanup_rbuf(): an owed ACK for a short or pushed segment goes
                // out now that the queue is drained (`tcp::push`), and a window update if
                // the read freed enough (simplified: at the instant the data arrived).
                // Just after an ACK neither can be due (nothing owed; the window it
                // carried is the one the read would offer), so the call is skipped.
                let copied = self.rcv.rcv_nxt - rcv_nxt_before;
                if !acked_now
                    && copied > 0
                    && self.state == ConnState::Established
                    && self.rcv.cleanup_rbuf(copied)
                {
                    self.send_ack(ctx);
                }
            } else {
                // The data woke the reader (sk_data_ready): a reader blocked in read()
                // takes it now; a busy or sleeping one reads at its next deadline.
                self.app_read(ctx, false);
            }
        }
        if !pkt.is_data() && (pkt.has(flags::FIN) || self.fin.active) {
            // The peer's FIN, once the data before it is in order (`tcp::close`).
            if self.peer_fin_in(pkt) {
                self.send_ack(ctx);
            }
        }
        // tcp_data_snd_check(): send what the ACK allows.
        self.push_pending_frames(ctx);
    }

    fn send_synack(&mut self, ctx: &mut Ctx) {
        self.syn_sent_ns = ctx.now_ns;
        let ecn = self.ecn_synack_flags();
        self.transmit(ctx, 0, 0, flags::SYN | ecn);
        self.tp.inc(Mib::TcpOutSegs);
        let rto = self.tp.icsk_rto;
        self.reset_xmit_timer(XmitTimer::Retrans, ctx.now_ns, rto);
    }

    /// Handshake timers: SYN / SYN-ACK retransmission with exponential backoff
    /// (`tcp_retransmit_timer` in SYN_SENT, `tcp_syn_ack_timeout`).
    pub fn syn_timer(&mut self, ctx: &mut Ctx) {
        self.tp.inc(Mib::TCPTimeouts);
        self.syn_retries += 1;
        self.tp.icsk_rto = (self.tp.icsk_rto << 1).min(self.tp.tcp_rto_max());
        match self.state {
            ConnState::SynSent => {
                self.tp.inc(Mib::TcpRetransSegs);
                self.send_syn(ctx)
            }
            ConnState::SynRecv => {
                self.tp.inc(Mib::TcpRetransSegs);
                self.send_synack(ctx)
            }
            _ => {}
        }
    }

    /// The delayed-ACK or SACK-compression timer fired.
    pub fn on_delack_timer(&mut self, ctx: &mut Ctx) {
        self.refresh_clock(ctx.now_ns);
        let mut send = false;
        if self.rcv.delack_deadline_ns <= ctx.now_ns {
            let rto = self.tp.icsk_rto;
            send |= self.rcv.on_delack_timer(rto, &mut self.tp.mib);
        }
        if self.rcv.comp_sack_deadline_ns <= ctx.now_ns {
            send |= self.rcv.on_comp_sack_timer();
        }
        if send {
            self.send_ack(ctx);
        }
    }

    /// The pacing timer fired (`tcp_pace_kick` -> `tcp_tsq_handler`).
    pub fn on_pacing_timer(&mut self, ctx: &mut Ctx) {
        self.stats.pacing_timer_events += 1;
        self.refresh_clock(ctx.now_ns);
        self.pacing_deadline_ns = NEVER;
        self.tsq_write(ctx);
    }

    /// A data packet of ours left the host's NIC (TX completion, `tcp_wfree`).
    /// `wmem_bytes`: what the packet charged (`Packet::wmem_charge`).
    pub fn on_tx_complete(&mut self, ctx: &mut Ctx, seq: u64, payload_bytes: u32, wmem_bytes: u32) {
        self.wmem_alloc_bytes = self.wmem_alloc_bytes.saturating_sub(wmem_bytes as u64);
        // Completions come in transmission order: the next is usually the next skb. A
        // TSO/GSO skb's completion covers every segment it carried (tcplab's retransmit
        // queue keeps one entry per segment), those not yet acknowledged.
        let end = seq + payload_bytes as u64;
        let first = match self.rtx.find_from(self.tx_complete_hint, seq) {
            Some(id) => Some(id),
            None if payload_bytes > self.tp.mss_cache => Some(self.rtx.lower_bound_end(seq)),
            None => None,
        };
        if let Some(mut id) = first {
            while id < self.rtx.end_id() {
                let s = self.rtx.get_mut(id);
                if s.seq >= end {
                    break;
                }
                s.in_host_queue = s.in_host_queue.saturating_sub(1);
                id += 1;
            }
            self.tx_complete_hint = id;
        }
        if self.tsq_throttled && self.state == ConnState::Established {
            self.tsq_throttled = false;
            self.refresh_clock(ctx.now_ns);
            self.tsq_write(ctx);
        }
    }

    /// The host's CPU is done with the transmit work this socket waited for
    /// (`cpu_throttled`): `tcp_write_xmit()`'s loop goes on.
    pub fn cpu_wake(&mut self, ctx: &mut Ctx) {
        self.cpu_throttled = false;
        if self.state == ConnState::Established {
            self.refresh_clock(ctx.now_ns);
            self.tsq_write(ctx);
        }
    }

    /// `tcp_tsq_write()`: retransmit what is lost, then send new data.
    pub fn tsq_write(&mut self, ctx: &mut Ctx) {
        if self.state != ConnState::Established {
            return;
        }
        if self.tp.lost_out > self.tp.retrans_out && self.tp.snd_cwnd > self.tp.packets_in_flight()
        {
            self.xmit_retransmit_queue(ctx);
        }
        self.push_pending_frames(ctx);
    }

    /// The application's writes for bulk transfer: keep the send buffer full
    /// (`tcp_sendmsg_locked` as netperf drives it), within `stop_ns` and `total_bytes`.
    pub fn app_fill(&mut self, now_ns: u64) {
        if self.app.stopped {
            return;
        }
        if now_ns >= self.app.stop_ns {
            self.app.stopped = true;
            self.sndbuf_nospace = false;
            return;
        }
        // Payload bytes the socket may hold (queued + unacked), see sndbuf_payload_bytes().
        let cap = self.tp.snd_una + self.sndbuf_payload_bytes();
        let was_blocked = self.sndbuf_nospace;
        if self.sndbuf_nospace {
            self.check_space(cap);
        }
        if self.app.driven {
            if self.writer_sleeps && was_blocked && self.sndbuf_nospace {
                return; // still asleep (`writer_sleeps`)
            }
            // A blocked write() continuing as the send buffer makes room.
            let take = self
                .app
                .pending_bytes
                .min(cap.saturating_sub(self.tp.write_seq));
            if take > 0 {
                self.tp.write_seq += take;
                self.app.pending_bytes -= take;
                // tcp_add_write_queue_tail(): data in the write queue makes the socket busy.
                self.chrono_start(ChronoType::Busy);
                if self.app.pending_bytes > 0 {
                    // The write goes to sleep on the full buffer (wait_for_space):
                    // tcp_push() marks what it wrote so far.
                    self.push_marks.mark(self.tp.write_seq);
                }
            }
            self.sndbuf_nospace = self.app.pending_bytes > 0;
            return;
        }
        // A bulk writer blocked on the send buffer sleeps in sk_stream_wait_memory() until
        // sk_stream_write_space() wakes it, i.e. until the free space is at least half the
        // queued bytes (Linux v6.12 net/core/stream.c: sk_stream_write_space(),
        // include/net/sock.h: __sk_stream_is_writeable()). Meanwhile TCP may send all it
        // holds: with a buffer little larger than the window (BBR's STARTUP at 4 MB
        // tcp_wmem[2] on a 100 Mbit/s x 100 ms path) the write queue runs dry and the next
        // write marks the flow application-limited, as the kernel's ss shows (app_limited,
        // notsent below one MSS).
        if was_blocked && self.sndbuf_nospace {
            return;
        }
        let mut target = cap;
        if let Some(total) = self.app.total_bytes {
            target = target.min(total);
        }
        if target > self.tp.write_seq {
            // tcp_sendmsg_locked() checks whether the flow is application limited first.
            let unsent = self.tp.write_seq - self.tp.snd_nxt;
            crate::tcp::rate::rate_check_app_limited(&mut self.tp, unsent, self.wmem_alloc_bytes);
            self.tp.write_seq = target;
            self.chrono_start(ChronoType::Busy);
            // The write ends, or sleeps on the full buffer: tcp_push() marks its tail skb.
            self.push_marks.mark(target);
        }
        // The bulk writer always has more to write until its total: blocked on the buffer.
        self.sndbuf_nospace = self.app.total_bytes.is_none_or(|t| self.tp.write_seq < t);
    }

    /// `tcp_check_space()` -> `tcp_new_space()` -> `sk_stream_write_space()` (Linux v6.12
    /// net/ipv4/tcp_input.c, net/core/stream.c) for an application blocked on the send
    /// buffer: it is woken (SOCK_NOSPACE cleared, the SNDBUF_LIMITED chronograph stopped)
    /// once the free space is at least half the queued bytes (`sk_stream_wspace() >=
    /// sk_stream_min_wspace()`). The bulk writer waits for that wake-up before it writes
    /// again; apps driving the socket (`app.driven`) refill as the buffer makes room (a
    /// simplification kept for them; for those the threshold only stops the chronograph).
    fn check_space(&mut self, cap: u64) {
        let queued = self.tp.write_seq - self.tp.snd_una;
        let free = cap.saturating_sub(self.tp.write_seq);
        if 2 * free >= queued {
            self.sndbuf_nospace = false;
            self.chrono_stop(ChronoType::SndbufLimited);
        }
    }

    /// A driven app writes `bytes` (`tcp_sendmsg_locked()`): the flow is checked for
    /// being application-limited first, as Linux does on every write, then the bytes
    /// enter the send buffer as it has room and go out as TCP allows.
    pub fn app_write(&mut self, ctx: &mut Ctx, bytes: u64) {
        self.app_write_with(ctx, bytes, false, false);
    }

    /// `app_write` with `send()`'s flags: `MSG_EOR` (`eor`: the write's last skb ends the
    /// record, `eor_marks`) and `MSG_MORE` (`more`: more follows, so tcp_push() neither
    /// marks PSH nor sends a part-MSS tail, `TCP_NAGLE_CORK` for this push).
    pub fn app_write_with(&mut self, ctx: &mut Ctx, bytes: u64, eor: bool, more: bool) {
        if eor && bytes > 0 {
            self.eor_marks
                .mark(self.tp.write_seq + self.app.pending_bytes + bytes);
        }
        debug_assert!(
            self.app.driven,
            "app_write on a socket not driven by an app"
        );
        if bytes == 0 {
            return;
        }
        self.refresh_clock(ctx.now_ns);
        if self.state == ConnState::Established {
            let unsent = self.tp.write_seq - self.tp.snd_nxt;
            crate::tcp::rate::rate_check_app_limited(&mut self.tp, unsent, self.wmem_alloc_bytes);
        }
        self.app.pending_bytes += bytes;
        // tcp_push() at the end of tcp_sendmsg_locked() marks the write's last skb (not
        // with MSG_MORE).
        if !more {
            self.push_marks
                .mark(self.tp.write_seq + self.app.pending_bytes);
        }
        if self.state == ConnState::Established {
            // Linux v6.12 net/ipv4/tcp.c: tcp_skb_entail() runs
            // tcp_slow_start_after_idle_check() when the write queues a new skb; it acts
            // only with nothing in flight (packets_out == 0), so checking on every write
            // is the same (simplification: a write appending to an unsent skb while
            // nothing is in flight, e.g. behind a zero window, also checks). Then
            // tcp_push() -> __tcp_push_pending_frames() -> tcp_write_xmit().
            self.slow_start_after_idle_check();
            self.push_cork = more;
            self.push_pending_frames(ctx);
            self.push_cork = false;
        }
    }

    /// `setsockopt(TCP_CORK, on)` (Linux v6.12 __tcp_sock_set_cork()): uncorking pushes
    /// what is queued, past Nagle too if TCP_NODELAY is on (TCP_NAGLE_PUSH).
    pub fn set_cork(&mut self, ctx: &mut Ctx, on: bool) {
        self.corked = on;
        if !on {
            let force = self.nodelay;
            self.push_now(ctx, force);
        }
    }

    /// `setsockopt(TCP_NODELAY, on)` (Linux v6.12 __tcp_sock_set_nodelay()): setting it
    /// pushes what is queued, past Nagle and cork (TCP_NAGLE_OFF | TCP_NAGLE_PUSH).
    pub fn set_nodelay(&mut self, ctx: &mut Ctx, on: bool) {
        self.nodelay = on;
        if on {
            self.push_now(ctx, true);
        }
    }

    /// tcp_push_pending_frames() from a socket option; `force`: TCP_NAGLE_PUSH.
    fn push_now(&mut self, ctx: &mut Ctx, force: bool) {
        if self.state == ConnState::Established {
            self.refresh_clock(ctx.now_ns);
            self.push_force = force;
            self.push_pending_frames(ctx);
            self.push_force = false;
        }
    }

    /// The slow reader reads what its policy allows now (`tcp::reader`), as
    /// `tcp_recvmsg()` does: `copied_seq` advances (the app hears of it: [`notify::READ`]),
    /// receive-buffer autotuning measures the copied bytes, and `tcp_cleanup_rbuf()` sends
    /// the ACK the read calls for (a window update when the read reopened the window).
    /// Then the reader's next read is armed. `from_timer`: the reader's own timer fired.
    pub fn app_read(&mut self, ctx: &mut Ctx, from_timer: bool) {
        let now = ctx.now_ns;
        let want = self.reader.take(now, self.rcv.unread_bytes(), from_timer);
        if want > 0 {
            let copied = self.rcv.app_read(now, want);
            self.notify |= notify::READ;
            if self.state == ConnState::Established && self.rcv.cleanup_rbuf(copied) {
                self.send_ack(ctx);
            }
        }
        self.read_deadline_ns = self.reader.next_read_ns(now, self.rcv.unread_bytes());
    }

    /// A `read()` of up to `bytes` by an application that reads by system calls
    /// (`Reader::by_syscall`): `tcp_recvmsg()` copies what is in order, then
    /// `tcp_cleanup_rbuf()` sends the ACK the read calls for, as `app_read`. Returns the
    /// bytes read (0: nothing in order to read).
    pub fn syscall_read(&mut self, ctx: &mut Ctx, bytes: u64) -> u64 {
        self.refresh_clock(ctx.now_ns);
        let copied = self.rcv.app_read(ctx.now_ns, bytes);
        if copied > 0 {
            self.notify |= notify::READ;
        }
        if self.state == ConnState::Established && self.rcv.cleanup_rbuf(copied) {
            self.send_ack(ctx);
        }
        copied
    }

    /// The slow reader's timer fired: it reads what its policy allows.
    pub fn on_read_timer(&mut self, ctx: &mut Ctx) {
        self.refresh_clock(ctx.now_ns);
        self.read_deadline_ns = NEVER;
        self.app_read(ctx, true);
    }

    /// `tcp_oow_rate_limited()` for a segment without data (Linux v6.12
    /// net/ipv4/tcp_input.c: `__tcp_oow_rate_limited()`): true if an out-of-window ACK
    /// went out less than `tcp_invalid_ratelimit` (500 ms) ago.
    fn oow_rate_limited(&mut self) -> bool {
        let now_j = self.tp.jiffies32();
        let last = self.last_oow_ack_j;
        if last != 0 {
            let elapsed = now_j.wrapping_sub(last) as i32;
            if elapsed >= 0 && (elapsed as u32) < self.tp.clock().msecs_to_jiffies(500) {
                return true;
            }
        }
        self.last_oow_ack_j = now_j.max(1);
        false
    }

    /// `tcp_chrono_start()` at the current jiffy.
    #[inline]
    pub fn chrono_start(&mut self, kind: ChronoType) {
        let now_j = self.tp.jiffies32();
        self.chrono.start(kind, now_j);
    }

    /// `tcp_chrono_stop()` at the current jiffy.
    #[inline]
    pub fn chrono_stop(&mut self, kind: ChronoType) {
        let now_j = self.tp.jiffies32();
        // tcp_rtx_and_write_queues_empty()
        let empty = self.rtx.is_empty() && self.tp.snd_nxt >= self.tp.write_seq;
        self.chrono.stop(kind, now_j, empty);
    }

    /// Payload the send buffer holds. Linux v6.12 charges every skb in the write and
    /// retransmit queues its truesize (`sk_wmem_queued`: payload + `SKB_TRUESIZE_OVERHEAD`,
    /// tcp_stream_alloc_skb(), tso_fragment()), and a writer may add data while that is
    /// below `sk_sndbuf` (sk_stream_memory_free()). With `offload: {tso: on}` tcplab
    /// converts the buffer to payload at the size its skbs are sent at, `tcp_tso_segs()`
    /// segments (measured on the kernel: `ss -m`'s `w` is payload + 850-940 B per skb of 2
    /// segments, docs/kernel-pin.md departure 5); simplified: Linux's unsent skbs are
    /// size_goal long (less overhead each). With tso off it keeps charging payload only
    /// (Linux's TCP always builds GSO skbs, so there is no kernel figure for one-MSS skbs
    /// to match; the existing results stay as they were until the default flips).
    pub fn sndbuf_payload_bytes(&self) -> u64 {
        if !self.gso_skbs {
            return self.sk_sndbuf;
        }
        let skb_bytes = self.tso_segs() as u64 * self.tp.mss_cache as u64;
        self.sk_sndbuf * skb_bytes / (skb_bytes + crate::packet::SKB_TRUESIZE_OVERHEAD as u64)
    }

    /// `tcp_sndbuf_expand()`: room for `sndbuf_expand` (2, BBR 3) windows of
    /// worst-case per-segment memory, capped by `tcp_wmem[2]` (in truesize bytes, see
    /// `sndbuf_payload_bytes`).
    pub fn sndbuf_expand(&mut self) {
        let mss = self.tp.mss_cache as u64;
        // per_mss = roundup_pow_of_two(mss + MAX_TCP_HEADER + shinfo) + sizeof(sk_buff)
        let per_mss = (mss + 320 + 320).next_power_of_two() + 256;
        let nr_segs =
            (self.tp.snd_cwnd.max(crate::tcp::sock::TCP_INIT_CWND)).max(self.reordering + 1) as u64;
        let factor = self.cc.sndbuf_expand(&self.tp).unwrap_or(2) as u64;
        let sndmem = factor * nr_segs * per_mss;
        if self.sndbuf_locked {
            return; // SOCK_SNDBUF_LOCK (tcp_should_expand_sndbuf(), tcp_init_buffer_space())
        }
        // Only ever grows (`if (sk->sk_sndbuf < sndmem)`).
        self.sk_sndbuf = sndmem.min(self.cfg.tcp_wmem[2]).max(self.sk_sndbuf);
    }
}
