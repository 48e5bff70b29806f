//! Columnar time series: one `Vec` per column, one row per (sample time, flow) or
//! (sample time, link). Capacity is reserved up front from the run length and the
//! sampling interval, so sampling never reallocates in steady state. Growth goes through
//! `try_reserve`, so running out of memory is an error the simulator returns, not an abort.

use std::collections::TryReserveError;
use std::mem::size_of;

#[derive(Debug, Default)]
pub struct FlowSeries {
    pub t_ns: Vec<u64>,
    pub flow: Vec<u32>,
    pub cwnd: Vec<u32>,
    pub ssthresh: Vec<u32>,
    /// ss's `rtt:X/Y` X: tcp_info's tcpi_rtt (`srtt_us >> 3`).
    pub srtt_us: Vec<u32>,
    /// ss's `rtt:X/Y` Y: tcp_info's tcpi_rttvar (`mdev_us >> 2`, the mean deviation).
    pub rttvar_us: Vec<u32>,
    pub min_rtt_us: Vec<u32>,
    pub pacing_rate_bps: Vec<u64>,
    pub delivery_rate_bps: Vec<u64>,
    pub inflight: Vec<u32>,
    pub bytes_acked: Vec<u64>,
    pub bytes_received: Vec<u64>,
    pub retrans_segs: Vec<u64>,
    pub lost: Vec<u64>,
    pub ca_state: Vec<u8>,
    pub cc_mode: Vec<u8>,
    pub bbr_bw_bps: Vec<u64>,
    /// BBR's `lt_use_bw` (1: the long-term "policer" rate is the bandwidth estimate).
    pub bbr_lt_use_bw: Vec<u8>,
    /// BBR's `lt_bw` (the long-term rate sampled over lossy intervals), bit/s.
    pub bbr_lt_bw_bps: Vec<u64>,
    pub pacing_gain: Vec<f64>,
    pub cwnd_gain: Vec<f64>,
    /// The peer's advertised receive window, bytes: tcp_info's tcpi_snd_wnd (`tp->snd_wnd`,
    /// Linux v6.12 net/ipv4/tcp.c: tcp_get_info()), what ss prints as `snd_wnd:` and iperf3
    /// as `snd_wnd`.
    pub snd_wnd_bytes: Vec<u32>,
    /// tcp_info's tcpi_rto, us (`jiffies_to_usecs(icsk_rto)`): what ss prints as `rto:`.
    pub rto_us: Vec<u32>,
    /// tcp_info's tcpi_backoff (`icsk_backoff`, RTO doublings in a row): ss's `backoff:`.
    pub backoff: Vec<u8>,
    /// tcp_info's tcpi_bytes_sent (payload bytes sent, retransmissions included).
    pub bytes_sent: Vec<u64>,
    /// tcp_info's tcpi_bytes_retrans.
    pub bytes_retrans: Vec<u64>,
    /// tcp_info's tcpi_data_segs_out.
    pub data_segs_out: Vec<u32>,
    /// tcp_info's tcpi_busy_time, tcpi_rwnd_limited, tcpi_sndbuf_limited, us (the chronographs
    /// as `tcp_get_info_chrono_stats()` reads them at the sample): ss's `busy:`,
    /// `rwnd_limited:`, `sndbuf_limited:`.
    pub busy_us: Vec<u64>,
    pub rwnd_limited_us: Vec<u64>,
    pub sndbuf_limited_us: Vec<u64>,
    /// The sender's Send-Q as ss shows it: `write_seq - snd_una`, bytes written and not yet
    /// acknowledged (Linux v6.12 net/ipv4/tcp_diag.c: tcp_diag_get_info(), idiag_wqueue).
    pub send_q_bytes: Vec<u32>,
    /// The receiver's Recv-Q: `rcv_nxt - copied_seq`, bytes received and not yet read by the
    /// application (tcp_diag_get_info(), idiag_rqueue).
    pub recv_q_bytes: Vec<u32>,
}

impl FlowSeries {
    /// Bytes one row takes across all columns (keep in step with the columns above; the
    /// memory estimate of a run is built on it).
    pub const ROW_BYTES: usize = 2 * size_of::<u64>() // t_ns, flow (u32) + cwnd (u32)
        + 4 * size_of::<u32>() // ssthresh, srtt_us, rttvar_us, min_rtt_us
        + 2 * size_of::<u64>() // pacing_rate_bps, delivery_rate_bps
        + size_of::<u32>() // inflight
        + 4 * size_of::<u64>() // bytes_acked, bytes_received, retrans_segs, lost
        + 2 * size_of::<u8>() // ca_state, cc_mode
        + size_of::<u64>() // bbr_bw_bps
        + size_of::<u8>() // bbr_lt_use_bw
        + size_of::<u64>() // bbr_lt_bw_bps
        + 2 * size_of::<f64>() // pacing_gain, cwnd_gain
        + size_of::<u32>() // snd_wnd_bytes
        + size_of::<u32>() // rto_us
        + size_of::<u8>() // backoff
        + 2 * size_of::<u64>() // bytes_sent, bytes_retrans
        + size_of::<u32>() // data_segs_out
        + 3 * size_of::<u64>() // busy_us, rwnd_limited_us, sndbuf_limited_us
        + 2 * size_of::<u32>(); // send_q_bytes, recv_q_bytes

    /// Make room for `additional` more rows in every column, or fail without aborting.
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), TryReserveError> {
        self.t_ns.try_reserve(additional)?;
        self.flow.try_reserve(additional)?;
        self.cwnd.try_reserve(additional)?;
        self.ssthresh.try_reserve(additional)?;
        self.srtt_us.try_reserve(additional)?;
        self.rttvar_us.try_reserve(additional)?;
        self.min_rtt_us.try_reserve(additional)?;
        self.pacing_rate_bps.try_reserve(additional)?;
        self.delivery_rate_bps.try_reserve(additional)?;
        self.inflight.try_reserve(additional)?;
        self.bytes_acked.try_reserve(additional)?;
        self.bytes_received.try_reserve(additional)?;
        self.retrans_segs.try_reserve(additional)?;
        self.lost.try_reserve(additional)?;
        self.ca_state.try_reserve(additional)?;
        self.cc_mode.try_reserve(additional)?;
        self.bbr_bw_bps.try_reserve(additional)?;
        self.bbr_lt_use_bw.try_reserve(additional)?;
        self.bbr_lt_bw_bps.try_reserve(additional)?;
        self.pacing_gain.try_reserve(additional)?;
        self.cwnd_gain.try_reserve(additional)?;
        self.snd_wnd_bytes.try_reserve(additional)?;
        self.rto_us.try_reserve(additional)?;
        self.backoff.try_reserve(additional)?;
        self.bytes_sent.try_reserve(additional)?;
        self.bytes_retrans.try_reserve(additional)?;
        self.data_segs_out.try_reserve(additional)?;
        self.busy_us.try_reserve(additional)?;
        self.rwnd_limited_us.try_reserve(additional)?;
        self.sndbuf_limited_us.try_reserve(additional)?;
        self.send_q_bytes.try_reserve(additional)?;
        self.recv_q_bytes.try_reserve(additional)?;
        Ok(())
    }

    /// Rows that fit before the next reservation.
    pub fn spare_rows(&self) -> usize {
        self.t_ns.capacity() - self.t_ns.len()
    }

    pub fn with_capacity(n: usize) -> Self {
        FlowSeries {
            t_ns: Vec::with_capacity(n),
            flow: Vec::with_capacity(n),
            cwnd: Vec::with_capacity(n),
            ssthresh: Vec::with_capacity(n),
            srtt_us: Vec::with_capacity(n),
            rttvar_us: Vec::with_capacity(n),
            min_rtt_us: Vec::with_capacity(n),
            pacing_rate_bps: Vec::with_capacity(n),
            delivery_rate_bps: Vec::with_capacity(n),
            inflight: Vec::with_capacity(n),
            bytes_acked: Vec::with_capacity(n),
            bytes_received: Vec::with_capacity(n),
            retrans_segs: Vec::with_capacity(n),
            lost: Vec::with_capacity(n),
            ca_state: Vec::with_capacity(n),
            cc_mode: Vec::with_capacity(n),
            bbr_bw_bps: Vec::with_capacity(n),
            bbr_lt_use_bw: Vec::with_capacity(n),
            bbr_lt_bw_bps: Vec::with_capacity(n),
            pacing_gain: Vec::with_capacity(n),
            cwnd_gain: Vec::with_capacity(n),
            snd_wnd_bytes: Vec::with_capacity(n),
            rto_us: Vec::with_capacity(n),
            backoff: Vec::with_capacity(n),
            bytes_sent: Vec::with_capacity(n),
            bytes_retrans: Vec::with_capacity(n),
            data_segs_out: Vec::with_capacity(n),
            busy_us: Vec::with_capacity(n),
            rwnd_limited_us: Vec::with_capacity(n),
            sndbuf_limited_us: Vec::with_capacity(n),
            send_q_bytes: Vec::with_capacity(n),
            recv_q_bytes: Vec::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }
}

#[derive(Debug, Default)]
pub struct QueueSeries {
    pub t_ns: Vec<u64>,
    pub link: Vec<u32>,
    pub backlog_packets: Vec<u32>,
    pub backlog_bytes: Vec<u64>,
    pub drops: Vec<u64>,
}

impl QueueSeries {
    /// Bytes one row takes across all columns.
    pub const ROW_BYTES: usize = size_of::<u64>() + 2 * size_of::<u32>() + 2 * size_of::<u64>();

    /// Make room for `additional` more rows in every column, or fail without aborting.
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), TryReserveError> {
        self.t_ns.try_reserve(additional)?;
        self.link.try_reserve(additional)?;
        self.backlog_packets.try_reserve(additional)?;
        self.backlog_bytes.try_reserve(additional)?;
        self.drops.try_reserve(additional)?;
        Ok(())
    }

    /// Rows that fit before the next reservation.
    pub fn spare_rows(&self) -> usize {
        self.t_ns.capacity() - self.t_ns.len()
    }

    pub fn with_capacity(n: usize) -> Self {
        QueueSeries {
            t_ns: Vec::with_capacity(n),
            link: Vec::with_capacity(n),
            backlog_packets: Vec::with_capacity(n),
            backlog_bytes: Vec::with_capacity(n),
            drops: Vec::with_capacity(n),
        }
    }
}


/// One row per (sample time, host with a CPU or NIC model): the host's CPU state and its
/// NIC's receive side (rings summed over the receive queues).
#[derive(Debug, Default)]
pub struct HostSeries {
    pub t_ns: Vec<u64>,
    pub host: Vec<u32>,
    /// 1 while the host is on its CPU.
    pub cpu_on: Vec<u8>,
    /// Descriptors holding packets, summed over the receive queues.
    pub rx_ring_used: Vec<u32>,
    /// Packets the rings dropped so far (cumulative).
    pub rx_dropped: Vec<u64>,
    /// Packets waiting in the ingress allowance's queue.
    pub allowance_queued: Vec<u32>,
}

impl HostSeries {
    /// Bytes one row takes across all columns.
    pub const ROW_BYTES: usize = 2 * size_of::<u64>() + 3 * size_of::<u32>() + size_of::<u8>();

    /// Make room for `additional` more rows in every column, or fail without aborting.
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), TryReserveError> {
        self.t_ns.try_reserve(additional)?;
        self.host.try_reserve(additional)?;
        self.cpu_on.try_reserve(additional)?;
        self.rx_ring_used.try_reserve(additional)?;
        self.rx_dropped.try_reserve(additional)?;
        self.allowance_queued.try_reserve(additional)?;
        Ok(())
    }

    /// Rows that fit before the next reservation.
    pub fn spare_rows(&self) -> usize {
        self.t_ns.capacity() - self.t_ns.len()
    }
}
