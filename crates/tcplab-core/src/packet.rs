//! Packets on the wire.
//!
//! A [`Packet`] is the compact record of one IP packet carrying one TCP segment: no
//! payload bytes, only what the model reads. Every TCP packet carries ACK fields
//! (cumulative ACK, window, SACK blocks, timestamps) as Linux's do; a data segment
//! additionally covers `[seq, end_seq)`. Sequence numbers are 64-bit byte offsets from
//! the connection's start (tcplab departs from Linux's 32-bit wrapping sequence space:
//! wrap-around changes no congestion-control behaviour and 64 bits remove a class of
//! comparisons).
//!
//! Sizes: the IP packet is 20 (IPv4) + 20 (TCP) + 12 (timestamps option) + SACK option +
//! payload bytes, which is why MSS is 1448 on a 1500-byte MTU. Links add their own
//! per-packet framing overhead on top (see `net::link`).
//!
//! A leaf. Imports: nothing of the crate.

/// IPv4 + TCP header with the timestamps option, as Linux sends them (`tcp_established_options`).
pub const TCP_IP_HEADER_BYTES: u32 = 20 + 20 + 12;
/// Largest number of SACK blocks that fit beside the timestamps option.
pub const MAX_SACK_BLOCKS: usize = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// Flags carried by a packet.
pub mod flags {
    /// The segment is a SYN (connection request or reply).
    pub const SYN: u8 = 1 << 0;
    /// The first SACK block is a D-SACK (RFC 2883) report.
    pub const DSACK: u8 = 1 << 1;
    /// The data segment is a retransmission (for counters only; the receiver cannot tell).
    pub const RETRANS: u8 = 1 << 2;
    /// Counted against the sending socket's TSQ budget until it leaves the host NIC.
    pub const TSQ: u8 = 1 << 3;
    /// FIN: the sender has no more data.
    pub const FIN: u8 = 1 << 4;
    /// A segment after the first of one TSO/GSO burst. tcplab sends a burst as separate
    /// segments, where Linux hands its qdisc one skb; qdiscs that limit in packets (fq's
    /// `flow_limit` and `limit` count skbs, `qdisc_qlen`) count only the burst's first
    /// segment. The NIC segments the skb, so the flag is cleared when the packet leaves
    /// its first link.
    pub const GSO_TAIL: u8 = 1 << 5;
    /// A local sender's packet that crossed a veth into its node still holding its socket
    /// (`skb->sk`, see `LinkConfig::keeps_sk`): its TSQ completion is owed by the next
    /// device it leaves (the node's own), not by the veth.
    pub const SK_KEPT: u8 = 1 << 6;
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Packet {
    /// Index of the endpoint that receives this packet.
    pub dst_ep: u32,
    /// Node the packet is addressed to.
    pub dst_node: u32,
    /// Node that sent it (for TSQ completion and per-host counters).
    pub src_node: u32,
    /// IP packet length in bytes (headers + payload), what `ip -s` counts.
    pub ip_bytes: u32,
    /// Data covered by this segment: `[seq, end_seq)`; empty for a pure ACK.
    pub seq: u64,
    pub end_seq: u64,
    /// Cumulative acknowledgement (next byte expected by the sender of this packet).
    pub ack_seq: u64,
    /// Advertised receive window in bytes (already unscaled).
    pub rwnd_bytes: u32,
    /// Timestamps option: TSval is the sender's clock at transmission (ns), TSecr echoes.
    pub tsval_ns: u64,
    pub tsecr_ns: u64,
    /// Earliest departure time (`skb->tstamp` in the EDT model, Linux >= 4.20): the
    /// sender's `tcp_wstamp_ns` when TCP built it, possibly moved later by an EDT shaper
    /// (Cilium's Bandwidth Manager). fq holds a packet until then; 0 = not stamped.
    pub tstamp_ns: u64,
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    pub num_sacks: u8,
    pub flags: u8,
    /// The sending socket's count of packets it handed to IP (wrapping), the IPv4
    /// identification before its random start: Linux v6.12 include/net/ip.h:
    /// ip_select_ident_segs() gives a connected socket's packets `inet_id`, advanced by
    /// one per segment. Read only by the packet capture (`crate::capture`), which adds
    /// the socket's start; nothing in the model depends on it.
    pub ip_id: u16,
    /// Segments merged into this packet by the receiving host's GRO (`host::gro`,
    /// `skb_shinfo(skb)->gso_segs` of a GRO'd skb); 0 for a packet as it left its sender.
    pub gro_segs: u16,
}

impl Packet {
    #[inline]
    pub fn payload_bytes(&self) -> u32 {
        (self.end_seq - self.seq) as u32
    }

    /// Wire segments this packet stands for: `max(1, gso_segs)` as Linux counts them
    /// (include/net/tcp.h: tcp_segs_in()).
    #[inline]
    pub fn segs(&self) -> u32 {
        (self.gro_segs as u32).max(1)
    }

    #[inline]
    pub fn is_data(&self) -> bool {
        self.end_seq > self.seq
    }

    #[inline]
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// IP length of a segment with `payload` bytes and `num_sacks` SACK blocks
    /// (2 NOPs + kind + length + 8 bytes per block, as Linux pads it).
    #[inline]
    pub fn ip_len(payload: u32, num_sacks: u8) -> u32 {
        let sack_opt = if num_sacks > 0 {
            4 + 8 * num_sacks as u32
        } else {
            0
        };
        TCP_IP_HEADER_BYTES + sack_opt + payload
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mss_1448_fills_a_1500_byte_mtu() {
        assert_eq!(Packet::ip_len(1448, 0), 1500);
        assert_eq!(Packet::ip_len(0, 0), 52);
        assert_eq!(Packet::ip_len(0, 3), 80);
    }

    #[test]
    fn packet_stays_compact() {
        assert!(
            std::mem::size_of::<Packet>() <= 136,
            "{}",
            std::mem::size_of::<Packet>()
        );
    }
}
