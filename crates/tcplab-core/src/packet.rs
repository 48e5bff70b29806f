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

/// Flags carried by a packet. The low byte holds what a capture reports (see
/// `capture::REPORTED_FLAGS`) beside some of the engine's bookkeeping; the high byte only
/// bookkeeping.
pub mod flags {
    /// The segment is a SYN (connection request or reply).
    pub const SYN: u16 = 1 << 0;
    /// The first SACK block is a D-SACK (RFC 2883) report.
    pub const DSACK: u16 = 1 << 1;
    /// The data segment is a retransmission (for counters only; the receiver cannot tell).
    pub const RETRANS: u16 = 1 << 2;
    /// Counted against the sending socket's TSQ budget until it leaves the host NIC.
    pub const TSQ: u16 = 1 << 3;
    /// FIN: the sender has no more data.
    pub const FIN: u16 = 1 << 4;
    /// PSH, as Linux v6.12 sets it (see `tcp::push`): on every skb of more than one
    /// segment (`__tcp_transmit_skb()`) and on the skb at the end of an application's
    /// write (`tcp_mark_push()`). Cutting an skb into frames leaves it on the last
    /// (`tcp_gso_segment()`); it ends a GRO aggregate (`tcp_gro_receive()`) and lets the
    /// receiver's reader ACK a drained queue at once (`ICSK_ACK_PUSHED`).
    pub const PSH: u16 = 1 << 5;
    /// A local sender's packet that crossed a veth into its node still holding its socket
    /// (`skb->sk`, see `LinkConfig::keeps_sk`): its TSQ completion is owed by the next
    /// device it leaves (the node's own), not by the veth.
    pub const SK_KEPT: u16 = 1 << 11;
    /// The packet carries its skb's truesize overhead in its sender's `sk_wmem_alloc`
    /// ([`SKB_TRUESIZE_OVERHEAD`](super::SKB_TRUESIZE_OVERHEAD)): every data skb of a socket
    /// with `offload: {tso: on}`; when the skb is cut into frames only the last keeps it
    /// (Linux v6.12 net/ipv4/tcp_offload.c: tcp_gso_segment() hands the skb's socket charge
    /// to its segments, the last one taking what is left), so the charges add up.
    pub const SKB_HEAD: u16 = 1 << 12;
    /// A segment after the first of one TSO/GSO burst. tcplab sends a burst as separate
    /// segments, where Linux hands its qdisc one skb; qdiscs that limit in packets (fq's
    /// `flow_limit` and `limit` count skbs, `qdisc_qlen`) count only the burst's first
    /// segment. The NIC segments the skb, so the flag is cleared when the packet leaves
    /// its first link.
    pub const GSO_TAIL: u16 = 1 << 8;
    /// ECE (ECN-Echo, RFC 3168): on a SYN, with CWR, the request to use ECN; on a SYN-ACK
    /// alone, its acceptance; on every other segment, "a CE mark arrived and you have not
    /// yet told me you reduced" (`TCP_ECN_DEMAND_CWR`, see `tcp::ecn`).
    pub const ECE: u16 = 1 << 6;
    /// CWR (Congestion Window Reduced): the sender reduced its window after an ECE; set on
    /// the first new data segment after the reduction (`TCP_ECN_QUEUE_CWR`). Cutting an
    /// skb into frames leaves it on the first (`tcp_gso_segment()`: `th->cwr = 0` after it).
    pub const CWR: u16 = 1 << 7;
    /// RST: the sender reset the connection (`tcp::close`).
    pub const RST: u16 = 1 << 9;
    /// The ACK bit is clear (every other packet of the engine carries ACK fields): a reset
    /// answering a segment for a socket that no longer exists (`tcp::close`).
    pub const NO_ACK: u16 = 1 << 10;
}

/// The IP header's ECN field (RFC 3168 section 5; Linux include/net/inet_ecn.h `INET_ECN_*`),
/// the low two bits of the IPv4 TOS byte.
pub mod ecn {
    /// Not ECN-capable transport.
    pub const NOT_ECT: u8 = 0;
    /// ECN-capable transport, codepoint ECT(1).
    pub const ECT_1: u8 = 1;
    /// ECN-capable transport, codepoint ECT(0): what Linux's TCP sends (`INET_ECN_xmit()`).
    pub const ECT_0: u8 = 2;
    /// Congestion experienced: set by a marking queue on an ECN-capable packet.
    pub const CE: u8 = 3;
    /// `INET_ECN_MASK`.
    pub const MASK: u8 = 3;

    /// `INET_ECN_set_ce()`: mark an ECN-capable packet CE; false (no change) for not-ECT.
    #[inline]
    pub fn set_ce(field: &mut u8) -> bool {
        if *field == NOT_ECT {
            return false;
        }
        *field = CE;
        true
    }
}

/// `SKB_DATA_ALIGN(sizeof(struct sk_buff))` on x86-64 (Linux v6.12): the sk_buff's part of
/// every `skb->truesize`.
const SKB_STRUCT_BYTES: u64 = 256;
/// `SKB_DATA_ALIGN(sizeof(struct skb_shared_info))` on x86-64 (Linux v6.12).
const SKB_SHINFO_BYTES: u64 = 320;
/// `NET_SKB_PAD` (max(32, L1_CACHE_BYTES) = 64 on x86-64): headroom a receive buffer reserves.
const NET_SKB_PAD_BYTES: u64 = 64;

/// `skb->truesize` of a linear skb holding `len_bytes` of packet in a buffer of its own
/// (Linux v6.12 __alloc_skb() via kmalloc_reserve(): `NET_SKB_PAD` + the data,
/// cache-aligned, plus the shared info, rounded up to kmalloc's power-of-two size class;
/// truesize = that buffer plus the sk_buff, `SKB_TRUESIZE(size)`). What a receiving device
/// gives a frame when it copies it into such a buffer (tun_get_user() ->
/// sock_alloc_send_pskb(), drivers using netdev_alloc_skb()/napi_alloc_skb() for linear
/// receive buffers), and what fq_codel's memory limit charges. A 1500-byte IP packet takes
/// a 2 KB buffer: 2304, which is what tcp_measure_rcv_mss() sees on this project's kernel
/// test bed (a receiver behind the TUN delay line advertises 160/256 of its buffer: `ss`'s
/// rcv_ssthresh 3932160 of a 6291456-byte tcp_rmem[2]); a pure ACK 768. Simplified:
/// drivers that receive into page fragments (ixgbe's half pages, mlx5's strides) have
/// their own truesize; tcplab uses this one for every host.
pub fn linear_skb_truesize(len_bytes: u32) -> u64 {
    // Never below kmalloc's 512-byte class: NET_SKB_PAD + shared info alone are 384 bytes.
    let data = (NET_SKB_PAD_BYTES + len_bytes as u64).next_multiple_of(64) + SKB_SHINFO_BYTES;
    data.next_power_of_two() + SKB_STRUCT_BYTES
}

/// `skb->truesize` of a received skb of `payload` bytes in `segs` frames with `num_sacks`
/// SACK blocks, as its receiver holds it: each frame in its own linear receive buffer
/// ([`linear_skb_truesize`]); a GRO aggregate is charged the sum of its frames
/// (skb_gro_receive() adds each merged skb's truesize to the aggregate's).
pub fn rx_truesize(payload: u32, segs: u32, num_sacks: u8) -> u64 {
    let frame_ip = Packet::ip_len(payload.div_ceil(segs), num_sacks);
    segs as u64 * linear_skb_truesize(frame_ip)
}

/// `MAX_TCP_HEADER` on x86-64 with a distribution's config (Linux v6.12:
/// L1_CACHE_ALIGN(128 + MAX_HEADER), MAX_HEADER = LL_MAX_HEADER 128 + 48): the linear head
/// tcp_stream_alloc_skb() reserves for headers.
const MAX_TCP_HEADER_BYTES: u64 = 320;

/// `skb->truesize` of a TCP skb beyond the payload it holds in page frags: the head from
/// the small-head cache, `SKB_TRUESIZE(MAX_TCP_HEADER)` = 320 + sk_buff 256 + shared info
/// 320 = 896 bytes (Linux v6.12 net/core/skbuff.c: kmalloc_reserve() takes heads of
/// `SKB_HEAD_ALIGN(MAX_TCP_HEADER)` = 640 from skb_small_head_cache; tcp_sendmsg_locked()
/// then adds each copied byte to truesize). A local sender's 1448-byte skb is 2344 bytes.
pub const SKB_TRUESIZE_OVERHEAD: u32 =
    (MAX_TCP_HEADER_BYTES + SKB_STRUCT_BYTES + SKB_SHINFO_BYTES) as u32;

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
    pub flags: u16,
    /// The sending socket's count of packets it handed to IP (wrapping), the IPv4
    /// identification before its random start: Linux v6.12 include/net/ip.h:
    /// ip_select_ident_segs() gives a connected socket's packets `inet_id`, advanced by
    /// one per segment. Read only by the packet capture (`crate::capture`), which adds
    /// the socket's start; nothing in the model depends on it.
    pub ip_id: u16,
    /// The IP header's ECN field ([`ecn`]): the sender's codepoint, possibly CE-marked by a
    /// queue on the way or cleared by a bleaching link.
    pub ecn: u8,
    /// Segments this packet carries (`skb_shinfo(skb)->gso_segs`): set by the sending
    /// socket for a TSO/GSO skb (`offload: {tso: on}`, segmented into MSS frames as it
    /// leaves its first link, see `net::link`) or by the receiving host's GRO
    /// (`host::gro`); 0 for a packet of one segment.
    pub gso_segs: u16,
    /// `skb_shinfo(skb)->gso_size` of a TSO/GSO skb from its sender: the payload of each
    /// frame but the last; 0 for anything else (GRO's aggregates keep 0: nothing
    /// segments them again in the model).
    pub gso_size: u16,
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
        (self.gso_segs as u32).max(1)
    }

    /// A sender's TSO/GSO skb of more than one segment, still to be segmented.
    #[inline]
    pub fn is_gso(&self) -> bool {
        self.gso_size != 0 && self.gso_segs > 1
    }

    /// The `k`-th frame of a TSO/GSO skb as the NIC (TSO) or `skb_segment()` (GSO) cuts it
    /// (Linux v6.12 net/ipv4/tcp_offload.c: tcp_gso_segment()): `gso_size` bytes of
    /// payload each, the last taking the rest; the same ACK fields, options and stamp; the
    /// IP ID advanced by one per frame (`inet_gso_segment()`'s `id++`); FIN and PSH only on
    /// the last frame (`tcp_gso_segment()` clears them on the others), as the skb's
    /// truesize charge (`flags::SKB_HEAD`).
    #[inline]
    pub fn gso_frame(&self, k: u32) -> Packet {
        let seq = self.seq + k as u64 * self.gso_size as u64;
        let end_seq = (seq + self.gso_size as u64).min(self.end_seq);
        let mut f = *self;
        f.seq = seq;
        f.end_seq = end_seq;
        f.ip_bytes = Packet::ip_len((end_seq - seq) as u32, self.num_sacks);
        f.ip_id = self.ip_id.wrapping_add(k as u16);
        if k + 1 < self.gso_segs as u32 {
            f.flags &= !(flags::SKB_HEAD | flags::FIN | flags::PSH);
        }
        if k > 0 {
            // tcp_gso_segment(): CWR only on the first segment.
            f.flags &= !flags::CWR;
        }
        f.gso_segs = 0;
        f.gso_size = 0;
        f
    }

    /// Bytes a qdisc charges for this packet with `overhead` bytes of framing per frame:
    /// Linux v6.12 net/core/dev.c: qdisc_pkt_len_init(): `skb->len + (gso_segs - 1) *
    /// hdr_len`, the headers of every frame the skb becomes.
    #[inline]
    pub fn qdisc_len(&self, overhead: u32) -> u32 {
        let one = self.ip_bytes + overhead;
        if self.is_gso() {
            one + (self.gso_segs as u32 - 1) * (Packet::ip_len(0, self.num_sacks) + overhead)
        } else {
            one
        }
    }

    /// What this packet's TX completion gives back to its sender's `sk_wmem_alloc`: its
    /// payload, plus the skb's overhead where it carries it (`flags::SKB_HEAD`).
    #[inline]
    pub fn wmem_charge(&self) -> u32 {
        let head = if self.flags & flags::SKB_HEAD != 0 {
            SKB_TRUESIZE_OVERHEAD
        } else {
            0
        };
        self.payload_bytes() + head
    }

    #[inline]
    pub fn is_data(&self) -> bool {
        self.end_seq > self.seq
    }

    #[inline]
    pub fn has(&self, flag: u16) -> bool {
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
    fn a_1500_byte_frame_is_received_into_a_2k_buffer() {
        // __alloc_skb(NET_SKB_PAD + 1500): SKB_DATA_ALIGN(1564) = 1600, + 320 of shared
        // info = 1920 -> kmalloc-2048; truesize = SKB_TRUESIZE(2048 - 320) = 2304, so
        // tcp_measure_rcv_mss() gives scaling_ratio = 1448 * 256 / 2304 = 160.
        assert_eq!(linear_skb_truesize(1500), 2304);
        assert_eq!((1448u64 << 8) / linear_skb_truesize(1500), 160);
        // A small frame fits a 512-byte class: SKB_DATA_ALIGN(64 + 52) + 320 = 448.
        assert_eq!(linear_skb_truesize(52), 512 + 256);
        // A 9000-byte MTU frame needs a 16 KB buffer.
        assert_eq!(linear_skb_truesize(9000), 16384 + 256);
    }

    #[test]
    fn gso_frames_keep_psh_fin_and_the_skb_charge_on_the_last_only() {
        // tcp_gso_segment(): th->fin = th->psh = 0 on every segment but the last.
        let skb = Packet {
            seq: 0,
            end_seq: 3 * 1448,
            gso_segs: 3,
            gso_size: 1448,
            flags: flags::PSH | flags::FIN | flags::SKB_HEAD | flags::TSQ,
            ..Default::default()
        };
        for k in 0..3 {
            let f = skb.gso_frame(k);
            let last = k == 2;
            assert_eq!(f.has(flags::PSH), last);
            assert_eq!(f.has(flags::FIN), last);
            assert_eq!(f.has(flags::SKB_HEAD), last);
            assert!(f.has(flags::TSQ));
        }
    }

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
