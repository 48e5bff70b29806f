"""The engine's columnar output: the time-series columns and their dtypes.

A leaf module (no imports), shared by the engine bridge (:mod:`tcplab.engine`, which checks
what the engine returns against it) and by validation (:mod:`tcplab.scenario.limits`, which
estimates a run's memory from the row widths) without loading NumPy or pandas.
"""

from __future__ import annotations

__all__ = ["TIMESERIES_DTYPES", "QUEUE_DTYPES", "HOST_DTYPES", "CAPTURE_DTYPES", "DTYPE_BYTES", "row_bytes"]

#: Columns of the per-flow time series and their dtypes (units in the names; cwnd,
#: ssthresh and inflight in packets as Linux keeps them; ssthresh 2147483647 = infinite).
#: ``srtt_us``/``rttvar_us`` are what ``ss`` prints as ``rtt:X/Y`` (tcp_info's tcpi_rtt and
#: tcpi_rttvar: the smoothed RTT and its mean deviation), not the RTO's floored variance.
#: ``snd_wnd_bytes`` is tcp_info's tcpi_snd_wnd, the peer's advertised window (ss ``snd_wnd:``).
#: Then what ``ss -tin`` prints of the sender: ``rto_us`` (tcpi_rto, ``rto:``), ``backoff``,
#: ``bytes_sent``, ``bytes_retrans``, ``data_segs_out`` and the chronographs ``busy_us``,
#: ``rwnd_limited_us``, ``sndbuf_limited_us`` (cumulative, as tcp_info reports them at the
#: sample), its Send-Q ``send_q_bytes`` (written, not yet acknowledged), and the receiver's
#: Recv-Q ``recv_q_bytes`` (arrived, not yet read by the application). The ``receiver_*``
#: columns are the data receiver's own socket as ss shows it on its host (it sends requests
#: and ACKs): its cwnd, ssthresh, ca_state, tcpi_rtt, tcpi_rto, backoff and total_retrans.
TIMESERIES_DTYPES: dict[str, str] = {
    "t_ns": "uint64",
    "flow": "uint32",
    "cwnd": "uint32",
    "ssthresh": "uint32",
    "srtt_us": "uint32",
    "rttvar_us": "uint32",
    "min_rtt_us": "uint32",
    "pacing_rate_bps": "uint64",
    "delivery_rate_bps": "uint64",
    "inflight": "uint32",
    "bytes_acked": "uint64",
    "bytes_received": "uint64",
    "retrans_segs": "uint64",
    "lost": "uint64",
    "ca_state": "uint8",
    "cc_mode": "uint8",
    "bbr_bw_bps": "uint64",
    "bbr_lt_use_bw": "uint8",
    "bbr_lt_bw_bps": "uint64",
    "pacing_gain": "float64",
    "cwnd_gain": "float64",
    "snd_wnd_bytes": "uint32",
    "rto_us": "uint32",
    "backoff": "uint8",
    "bytes_sent": "uint64",
    "bytes_retrans": "uint64",
    "data_segs_out": "uint32",
    "busy_us": "uint64",
    "rwnd_limited_us": "uint64",
    "sndbuf_limited_us": "uint64",
    "send_q_bytes": "uint32",
    "recv_q_bytes": "uint32",
    "receiver_cwnd": "uint32",
    "receiver_ssthresh": "uint32",
    "receiver_ca_state": "uint8",
    "receiver_srtt_us": "uint32",
    "receiver_rto_us": "uint32",
    "receiver_backoff": "uint8",
    "receiver_retrans_segs": "uint64",
}

#: Columns of the per-link queue time series (``drops`` is cumulative).
QUEUE_DTYPES: dict[str, str] = {
    "t_ns": "uint64",
    "link": "uint32",
    "backlog_packets": "uint32",
    "backlog_bytes": "uint64",
    "drops": "uint64",
}

#: Columns of the per-host time series (``out["host_series"]``), only for hosts with a CPU
#: or NIC model: ``cpu_on`` 1 while the host has its CPU; ``rx_ring_used`` descriptors
#: holding packets, summed over the receive queues; ``rx_dropped`` cumulative ring drops;
#: ``allowance_queued`` packets waiting in the cloud ingress allowance's queue.
HOST_DTYPES: dict[str, str] = {
    "t_ns": "uint64",
    "host": "uint32",
    "cpu_on": "uint8",
    "rx_ring_used": "uint32",
    "rx_dropped": "uint64",
    "allowance_queued": "uint32",
}

#: Columns of a packet capture (``out["capture"]["columns"]``, only with ``capture`` in the
#: engine config), one row per packet in time order, as tcpdump on the capture host would
#: see it (tcplab_core::capture): ``t_ns`` since the run's start; ``dir`` 0 sent by the host,
#: 1 received by it; sequence numbers are 64-bit byte offsets from the connection's start
#: (the SYN takes none); ``rwnd_bytes`` the advertised window unscaled; ``tsval_ns`` the
#: sender's clock, ``tsecr_ns`` the echoed one (0: none); ``flags`` the engine's bits
#: (``flag_bits``: syn, dsack, retrans, fin, psh, and TCP's ECN bits ece, cwr); SACK blocks
#: ``sackK_start``/``sackK_end`` (K < ``num_sacks``; a D-SACK is block 0); ``ip_bytes`` the
#: IP packet's length as the engine counts it; ``ip_id`` the sending socket's packet count;
#: ``ecn`` the IP header's ECN field as the packet was seen (0 Not-ECT, 1 ECT(1), 2 ECT(0),
#: 3 CE; RFC 3168, Linux include/net/inet_ecn.h).
CAPTURE_DTYPES: dict[str, str] = {
    "t_ns": "uint64",
    "dir": "uint8",
    "seq": "uint64",
    "end_seq": "uint64",
    "ack_seq": "uint64",
    "rwnd_bytes": "uint32",
    "tsval_ns": "uint64",
    "tsecr_ns": "uint64",
    "flags": "uint8",
    "num_sacks": "uint8",
    "sack0_start": "uint64",
    "sack0_end": "uint64",
    "sack1_start": "uint64",
    "sack1_end": "uint64",
    "sack2_start": "uint64",
    "sack2_end": "uint64",
    "ip_bytes": "uint32",
    "ip_id": "uint16",
    "ecn": "uint8",
}

#: Bytes per value of each dtype above.
DTYPE_BYTES: dict[str, int] = {"uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "float64": 8}


def row_bytes(dtypes: dict[str, str]) -> int:
    """Bytes of one row of a table with these column dtypes."""
    return sum(DTYPE_BYTES[d] for d in dtypes.values())
