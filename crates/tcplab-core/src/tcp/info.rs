//! `struct tcp_info` of one socket, as `getsockopt(TCP_INFO)` fills it (Linux v6.12
//! net/ipv4/tcp.c: tcp_get_info()): the names are the kernel's `tcpi_*` fields and the
//! units its (microseconds for times and RTTs, packets for cwnd and ssthresh, bytes for
//! the byte counters, jiffies converted to microseconds or milliseconds as the kernel
//! converts them). packetdrill's `%{ }%` assertions read these (`tcplab packetdrill`).
//!
//! Not reported (tcplab has no state for them): `tcpi_rehash`, `tcpi_rcv_ooopack`, `tcpi_last_ack_recv`, `tcpi_total_rto_*`, `tcpi_fastopen_*`;
//! `tcpi_options` and the window-scale fields are the caller's (it knows what the
//! handshake negotiated). `tcpi_dsack_dups` counts the D-SACKs received
//! (`TcpExtTCPDSACKRecv`), as the kernel's `tp->dsack_dups` does.

use crate::mib::Mib;
use crate::tcp::rate::delivery_rate_bytes_per_sec;
use crate::tcp::sock::TCP_INFINITE_SSTHRESH;
use crate::tcp::socket::{ConnState, TcpSocket};

/// `enum { TCP_ESTABLISHED = 1, TCP_SYN_SENT, TCP_SYN_RECV, ..., TCP_CLOSE = 7 }`.
fn tcp_state(s: ConnState) -> u64 {
    match s {
        ConnState::Established => 1,
        ConnState::SynSent => 2,
        ConnState::SynRecv => 3,
        ConnState::Closed => 7,
    }
}

impl TcpSocket {
    /// `tcp_get_info()` at `now_ns` on a path of `pmtu_bytes`: `(name, value)` in the order
    /// of `struct tcp_info`.
    pub fn tcp_info(&self, now_ns: u64, pmtu_bytes: u32) -> Vec<(&'static str, u64)> {
        let tp = &self.tp;
        let clock = tp.clock();
        let now_j = clock.ns_to_jiffies32(now_ns);
        let msecs_since = |j: u32| clock.jiffies_to_usecs(now_j.wrapping_sub(j)) / 1000;
        let r = self.rcv.info();
        let chrono = self.chrono.stats(now_j, tp.hz());
        let mss = tp.mss_cache as u64;
        vec![
            (
                "tcpi_state",
                match self.state {
                    ConnState::Established => self.fin.teardown.tcp_state(),
                    s => tcp_state(s),
                },
            ),
            ("tcpi_ca_state", tp.ca_state as u64),
            ("tcpi_retransmits", self.icsk_retransmits as u64),
            ("tcpi_probes", self.probes_out as u64),
            ("tcpi_backoff", self.icsk_backoff as u64),
            ("tcpi_rto", clock.jiffies_to_usecs(tp.icsk_rto)),
            ("tcpi_ato", clock.jiffies_to_usecs(r.ato_j)),
            ("tcpi_snd_mss", mss),
            ("tcpi_rcv_mss", r.rcv_mss),
            ("tcpi_unacked", tp.packets_out as u64),
            ("tcpi_sacked", tp.sacked_out as u64),
            ("tcpi_lost", tp.lost_out as u64),
            ("tcpi_retrans", tp.retrans_out as u64),
            ("tcpi_fackets", 0),
            ("tcpi_last_data_sent", msecs_since(tp.lsndtime)),
            ("tcpi_last_data_recv", msecs_since(r.lrcvtime_j)),
            ("tcpi_pmtu", pmtu_bytes as u64),
            ("tcpi_rcv_ssthresh", r.rcv_ssthresh),
            ("tcpi_rtt", (tp.srtt_us >> 3) as u64),
            ("tcpi_rttvar", (tp.mdev_us >> 2) as u64),
            (
                "tcpi_snd_ssthresh",
                tp.snd_ssthresh.min(TCP_INFINITE_SSTHRESH) as u64,
            ),
            ("tcpi_snd_cwnd", tp.snd_cwnd as u64),
            ("tcpi_advmss", r.advmss),
            ("tcpi_reordering", self.reordering as u64),
            ("tcpi_rcv_rtt", r.rcv_rtt_us),
            ("tcpi_rcv_space", r.rcv_space),
            ("tcpi_total_retrans", tp.total_retrans as u64),
            ("tcpi_pacing_rate", tp.sk_pacing_rate),
            ("tcpi_max_pacing_rate", tp.sk_max_pacing_rate),
            ("tcpi_bytes_acked", tp.bytes_acked),
            ("tcpi_bytes_received", self.rcv.bytes_received),
            ("tcpi_segs_out", tp.mib.get(Mib::TcpOutSegs)),
            ("tcpi_segs_in", tp.mib.get(Mib::TcpInSegs)),
            ("tcpi_notsent_bytes", tp.write_seq - tp.snd_nxt),
            ("tcpi_min_rtt", tp.min_rtt_us() as u64),
            ("tcpi_data_segs_in", self.rcv.data_segs_in),
            ("tcpi_data_segs_out", tp.data_segs_out as u64),
            ("tcpi_delivery_rate", delivery_rate_bytes_per_sec(tp)),
            ("tcpi_delivery_rate_app_limited", tp.rate_app_limited as u64),
            ("tcpi_busy_time", chrono.busy_us),
            ("tcpi_rwnd_limited", chrono.rwnd_limited_us),
            ("tcpi_sndbuf_limited", chrono.sndbuf_limited_us),
            ("tcpi_delivered", tp.delivered as u64),
            ("tcpi_delivered_ce", tp.delivered_ce as u64),
            ("tcpi_bytes_sent", tp.bytes_sent),
            ("tcpi_bytes_retrans", tp.bytes_retrans),
            ("tcpi_dsack_dups", tp.mib.get(Mib::TCPDSACKRecv)),
            ("tcpi_reord_seen", self.reord_seen as u64),
            ("tcpi_snd_wnd", tp.snd_wnd as u64),
            ("tcpi_rcv_wnd", r.rcv_wnd),
        ]
    }
}
