//! Columnar time series: one `Vec` per column, one row per (sample time, flow) or
//! (sample time, link). Capacity is reserved up front from the run length and the
//! sampling interval, so sampling never reallocates in steady state. Growth goes through
//! `try_reserve`, so running out of memory is an error the simulator returns, not an abort.
//!
//! Each store is declared once, with `column_store!` (`metrics::columns`): the struct,
//! its `try_reserve`, its row size for the memory estimate (`ROW_BYTES`, the sum of its
//! columns' element sizes) and `into_columns`, which hands the columns by name to the
//! binding (NumPy arrays that take over these buffers). A column added here reaches Python
//! with no other list to edit.

use super::columns::column_store;

column_store! {
    /// One row per (sample time, sampled flow): the data sender's state as `ss -ti` and
    /// tcp_info show it (see `sim`'s sampler for where each value comes from).
    pub struct FlowSeries {
        t_ns: u64,
        flow: u32,
        cwnd: u32,
        ssthresh: u32,
        /// ss's `rtt:X/Y` X: tcp_info's tcpi_rtt (`srtt_us >> 3`).
        srtt_us: u32,
        /// ss's `rtt:X/Y` Y: tcp_info's tcpi_rttvar (`mdev_us >> 2`, the mean deviation).
        rttvar_us: u32,
        min_rtt_us: u32,
        pacing_rate_bps: u64,
        delivery_rate_bps: u64,
        inflight: u32,
        bytes_acked: u64,
        bytes_received: u64,
        retrans_segs: u64,
        lost: u64,
        ca_state: u8,
        cc_mode: u8,
        bbr_bw_bps: u64,
        /// BBR's `lt_use_bw` (1: the long-term "policer" rate is the bandwidth estimate).
        bbr_lt_use_bw: u8,
        /// BBR's `lt_bw` (the long-term rate sampled over lossy intervals), bit/s.
        bbr_lt_bw_bps: u64,
        pacing_gain: f64,
        cwnd_gain: f64,
        /// The peer's advertised receive window, bytes: tcp_info's tcpi_snd_wnd (`tp->snd_wnd`,
        /// Linux v6.12 net/ipv4/tcp.c: tcp_get_info()), what ss prints as `snd_wnd:` and iperf3
        /// as `snd_wnd`.
        snd_wnd_bytes: u32,
        /// tcp_info's tcpi_rto, us (`jiffies_to_usecs(icsk_rto)`): what ss prints as `rto:`.
        rto_us: u32,
        /// tcp_info's tcpi_backoff (`icsk_backoff`, RTO doublings in a row): ss's `backoff:`.
        backoff: u8,
        /// tcp_info's tcpi_bytes_sent (payload bytes sent, retransmissions included).
        bytes_sent: u64,
        /// tcp_info's tcpi_bytes_retrans.
        bytes_retrans: u64,
        /// tcp_info's tcpi_data_segs_out.
        data_segs_out: u32,
        /// tcp_info's tcpi_busy_time, tcpi_rwnd_limited, tcpi_sndbuf_limited, us (the chronographs
        /// as `tcp_get_info_chrono_stats()` reads them at the sample): ss's `busy:`,
        /// `rwnd_limited:`, `sndbuf_limited:`.
        busy_us: u64,
        rwnd_limited_us: u64,
        sndbuf_limited_us: u64,
        /// The sender's Send-Q as ss shows it: `write_seq - snd_una`, bytes written and not yet
        /// acknowledged (Linux v6.12 net/ipv4/tcp_diag.c: tcp_diag_get_info(), idiag_wqueue).
        send_q_bytes: u32,
        /// The receiver's Recv-Q: `rcv_nxt - copied_seq`, bytes received and not yet read by the
        /// application (tcp_diag_get_info(), idiag_rqueue).
        recv_q_bytes: u32,
        /// The data receiver's own socket as `ss -ti` shows it on its host: it sends too (the
        /// requests of a request/response or NFS client, and ACKs), so it has a cwnd, an
        /// ssthresh and a ca_state of its own, moved only by the loss of what *it* sends and by
        /// its own RTOs (an NFS client's `cwnd:2 ssthresh:2` says its READ calls were lost or
        /// timed out, not that the replies were slow).
        receiver_cwnd: u32,
        receiver_ssthresh: u32,
        receiver_ca_state: u8,
        /// tcp_info's tcpi_rtt of the receiver's socket (`srtt_us >> 3`; 0 before it has a sample).
        receiver_srtt_us: u32,
        /// tcp_info's tcpi_rto and tcpi_backoff of the receiver's socket.
        receiver_rto_us: u32,
        receiver_backoff: u8,
        /// tcp_info's tcpi_total_retrans of the receiver's socket (what it retransmitted).
        receiver_retrans_segs: u64,
    }
}

column_store! {
    /// One row per (sample time, link): its egress qdisc's backlog and drops so far.
    pub struct QueueSeries {
        t_ns: u64,
        link: u32,
        backlog_packets: u32,
        backlog_bytes: u64,
        drops: u64,
    }
}

column_store! {
    /// One row per (sample time, host with a CPU or NIC model): the host's CPU state and its
    /// NIC's receive side (rings summed over the receive queues).
    pub struct HostSeries {
        t_ns: u64,
        host: u32,
        /// 1 while the host is on its CPU.
        cpu_on: u8,
        /// Descriptors holding packets, summed over the receive queues.
        rx_ring_used: u32,
        /// Packets the rings dropped so far (cumulative).
        rx_dropped: u64,
        /// Packets waiting in the ingress allowance's queue.
        allowance_queued: u32,
    }
}
