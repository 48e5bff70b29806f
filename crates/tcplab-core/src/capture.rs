//! Packet capture: one flow's packets as `tcpdump -i any` on one of its two hosts sees them.
//!
//! The model: tcpdump taps a host's traffic in two places (Linux v6.12 net/core/dev.c):
//! outgoing packets in `dev_hard_start_xmit()` -> `dev_queue_xmit_nit()`, when the qdisc
//! hands them to the driver, i.e. after every queue of the host (a packet its own qdisc
//! drops is never seen); incoming packets in `__netif_receive_skb_core()`, when the NAPI
//! poll takes them off the NIC's ring (a packet the ring or an ingress allowance drops is
//! never seen). tcplab taps the same two places: the capture host's egress link toward the
//! peer, when a packet starts serialization (a FIFO's packet when it is enqueued, with the
//! start its departure is known to have, possibly ahead of the event that enqueued it:
//! `Link::enqueue_tapped`; a timed qdisc's when it dequeues it: [`TappedQdisc`]), and the
//! capture endpoint's receipt of a packet (`TcpSocket::on_packet`, after the host's NIC and
//! CPU models). A packet lost on the wire after it left is seen at the sender and not at
//! the receiver, as with tcpdump.
//!
//! Each record is the engine's [`Packet`](crate::packet::Packet) (no payload bytes) with its time; the Python front
//! turns them into a pcap file with real headers (`tcplab.exports.pcap`). Off, the capture
//! costs one flag test per packet a socket receives (the tapped link is taken off the FIFO
//! fast path, and a timed qdisc is wrapped, so other links pay nothing); on, it allocates
//! only as its buffers grow (amortised doubling, fallibly), up to
//! `max_packets` per direction; packets beyond are counted as `truncated`. The two
//! directions are merged in time order at the end of the run (at equal times, a received
//! packet before a sent one: what a host sends at the instant it receives a packet is
//! almost always the answer to it).
//!
//! Imports: the leaves and `net` (its taps, `net::tap`); `sim` assembles it.

use crate::metrics::columns::Column;
use crate::packet::{flags, MAX_SACK_BLOCKS};

pub use crate::config::capture::{CaptureAt, CaptureConfig, DEFAULT_MAX_PACKETS, MAX_MAX_PACKETS};
pub use crate::net::tap::{install_tap, take_tap, CaptureBuf, EgressTap, Record, TappedQdisc};

/// The engine flags a capture reports (the others are the engine's bookkeeping).
/// All are in the flags' low byte, so the column keeps one byte per packet.
pub const REPORTED_FLAGS: u16 =
    flags::SYN | flags::DSACK | flags::RETRANS | flags::FIN | flags::PSH | flags::ECE | flags::CWR;
const _: () = assert!(REPORTED_FLAGS <= 0xff);

/// Bytes one captured packet takes while the run goes on (per direction buffer) plus its
/// share of the columns at the end: the bound the configuration check uses.
pub const BYTES_PER_PACKET: u64 = 2 * std::mem::size_of::<Record>() as u64 + COLUMN_BYTES;
/// One row of [`CaptureOutput`]'s columns.
const COLUMN_BYTES: u64 = 8 * 6 + 4 * 2 + 2 + 4 + 16 * MAX_SACK_BLOCKS as u64;

/// The checks of `sim::validate` for `capture` (field paths from the config root): the
/// flow exists, and `max_packets` fits in what the run's memory budget leaves.
pub fn validate(cfg: &CaptureConfig, flows: usize, budget_bytes: u64) -> Result<(), String> {
    if cfg.flow as usize >= flows {
        return Err(format!(
            "capture.flow: {} is not a flow index ({flows} flows)",
            cfg.flow
        ));
    }
    if cfg.max_packets == 0 || cfg.max_packets > MAX_MAX_PACKETS {
        return Err(format!(
            "capture.max_packets: {} is outside [1, {MAX_MAX_PACKETS}] packets",
            cfg.max_packets
        ));
    }
    let need = cfg.max_packets.saturating_mul(BYTES_PER_PACKET);
    if need > budget_bytes {
        return Err(format!(
            "capture.max_packets: {} packets may hold {need} bytes, beyond the {budget_bytes} bytes max_memory_bytes \
             leaves after the run's own estimate; expected at most {} packets (or a larger max_memory_bytes)",
            cfg.max_packets,
            budget_bytes / BYTES_PER_PACKET
        ));
    }
    Ok(())
}

/// Direction of a captured packet, as seen from the capture host.
pub const DIR_OUT: u8 = 0;
pub const DIR_IN: u8 = 1;

/// The capture of a run, as columns (one row per packet, in time order). `Serialize`
/// gives the header (see its impl); the columns are handed over whole
/// ([`CaptureOutput::into_columns`]).
#[derive(Debug, Default)]
pub struct CaptureOutput {
    pub flow: u32,
    pub at: Option<CaptureAt>,
    /// The capture host (node index) and its endpoint (`2 * flow` = the flow's client).
    pub node: u32,
    pub ep: u32,
    /// Packets seen but not kept (beyond `max_packets`, or out of memory).
    pub truncated: u64,
    /// The values of the flags the `flags` column reports ([`REPORTED_FLAGS`]), by name.
    pub flag_bits: FlagBits,
    /// Time since the scenario's start, ns.
    pub t_ns: Vec<u64>,
    /// [`DIR_OUT`] (sent by the capture host) or [`DIR_IN`] (received by it).
    pub dir: Vec<u8>,
    pub seq: Vec<u64>,
    pub end_seq: Vec<u64>,
    pub ack_seq: Vec<u64>,
    pub rwnd_bytes: Vec<u32>,
    /// The sender's clock (engine ns) at transmission, and the echoed peer value (0: none).
    pub tsval_ns: Vec<u64>,
    pub tsecr_ns: Vec<u64>,
    /// `packet::flags` bits among [`REPORTED_FLAGS`].
    pub flags: Vec<u8>,
    pub num_sacks: Vec<u8>,
    /// SACK blocks `[start, end)` (byte offsets); unused blocks are 0.
    pub sack_start: [Vec<u64>; MAX_SACK_BLOCKS],
    pub sack_end: [Vec<u64>; MAX_SACK_BLOCKS],
    pub ip_bytes: Vec<u32>,
    /// The sending socket's packet count (`Packet::ip_id`).
    pub ip_id: Vec<u16>,
    /// The IP header's ECN field (`packet::ecn`) as the capture point saw it.
    pub ecn: Vec<u8>,
}

/// `packet::flags` values of the reported flags.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct FlagBits {
    pub syn: u8,
    pub dsack: u8,
    pub retrans: u8,
    pub fin: u8,
    pub psh: u8,
    pub ece: u8,
    pub cwr: u8,
}

impl Default for FlagBits {
    fn default() -> Self {
        FlagBits {
            syn: flags::SYN as u8,
            dsack: flags::DSACK as u8,
            retrans: flags::RETRANS as u8,
            fin: flags::FIN as u8,
            psh: flags::PSH as u8,
            ece: flags::ECE as u8,
            cwr: flags::CWR as u8,
        }
    }
}

/// `{flow, at, node, ep, truncated, columns, flag_bits}`: `columns` is a null that marks
/// their place (`metrics::columns::handed_over`); the binding puts them there.
impl serde::Serialize for CaptureOutput {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("CaptureOutput", 7)?;
        st.serialize_field("flow", &self.flow)?;
        st.serialize_field("at", &self.at)?;
        st.serialize_field("node", &self.node)?;
        st.serialize_field("ep", &self.ep)?;
        st.serialize_field("truncated", &self.truncated)?;
        st.serialize_field("columns", &())?;
        st.serialize_field("flag_bits", &self.flag_bits)?;
        st.end()
    }
}

impl CaptureOutput {
    /// The columns by name, in order (SACK blocks as `sack{b}_start`, `sack{b}_end`); the
    /// buffers move, no copy.
    pub fn into_columns(self) -> Vec<(String, Column)> {
        let mut out = vec![
            ("t_ns".to_string(), Column::U64(self.t_ns)),
            ("dir".to_string(), Column::U8(self.dir)),
            ("seq".to_string(), Column::U64(self.seq)),
            ("end_seq".to_string(), Column::U64(self.end_seq)),
            ("ack_seq".to_string(), Column::U64(self.ack_seq)),
            ("rwnd_bytes".to_string(), Column::U32(self.rwnd_bytes)),
            ("tsval_ns".to_string(), Column::U64(self.tsval_ns)),
            ("tsecr_ns".to_string(), Column::U64(self.tsecr_ns)),
            ("flags".to_string(), Column::U8(self.flags)),
            ("num_sacks".to_string(), Column::U8(self.num_sacks)),
        ];
        for (b, (start, end)) in self.sack_start.into_iter().zip(self.sack_end).enumerate() {
            out.push((format!("sack{b}_start"), Column::U64(start)));
            out.push((format!("sack{b}_end"), Column::U64(end)));
        }
        out.push(("ip_bytes".to_string(), Column::U32(self.ip_bytes)));
        out.push(("ip_id".to_string(), Column::U16(self.ip_id)));
        out.push(("ecn".to_string(), Column::U8(self.ecn)));
        out
    }

    pub fn len(&self) -> usize {
        self.t_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t_ns.is_empty()
    }
}

/// Merge the two directions in time order (received before sent at equal times, each
/// direction in the order seen), keep the first `max_packets`, and lay them out as columns
/// with times relative to `boot_ns`.
pub fn merge(
    cfg: &CaptureConfig,
    node: u32,
    ep: u32,
    out: CaptureBuf,
    inc: CaptureBuf,
    boot_ns: u64,
) -> CaptureOutput {
    let mut rows: Vec<(u64, u8, Record)> = Vec::with_capacity(out.len() + inc.len());
    rows.extend(inc.records().iter().map(|r| (r.t_ns, DIR_IN, *r)));
    rows.extend(out.records().iter().map(|r| (r.t_ns, DIR_OUT, *r)));
    // Stable: each direction keeps its own order; DIR_IN (1) sorts before DIR_OUT (0).
    rows.sort_by_key(|&(t, dir, _)| (t, dir == DIR_OUT));
    let keep = rows.len().min(cfg.max_packets as usize);
    let truncated = out.dropped + inc.dropped + (rows.len() - keep) as u64;
    rows.truncate(keep);
    let mut c = CaptureOutput {
        flow: cfg.flow,
        at: Some(cfg.at),
        node,
        ep,
        truncated,
        ..Default::default()
    };
    for (t, dir, r) in rows {
        let p = &r.pkt;
        c.t_ns.push(t.saturating_sub(boot_ns));
        c.dir.push(dir);
        c.seq.push(p.seq);
        c.end_seq.push(p.end_seq);
        c.ack_seq.push(p.ack_seq);
        c.rwnd_bytes.push(p.rwnd_bytes);
        c.tsval_ns.push(p.tsval_ns);
        c.tsecr_ns.push(p.tsecr_ns);
        c.flags.push((p.flags & REPORTED_FLAGS) as u8);
        c.num_sacks.push(p.num_sacks);
        for b in 0..MAX_SACK_BLOCKS {
            let used = b < p.num_sacks as usize;
            c.sack_start[b].push(if used { p.sack[b].start } else { 0 });
            c.sack_end[b].push(if used { p.sack[b].end } else { 0 });
        }
        c.ip_bytes.push(p.ip_bytes);
        c.ip_id.push(p.ip_id);
        c.ecn.push(p.ecn);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::Packet;

    fn pkt(seq: u64, dst_ep: u32) -> Packet {
        Packet {
            seq,
            end_seq: seq + 10,
            dst_ep,
            flags: flags::TSQ | flags::RETRANS,
            ..Default::default()
        }
    }

    #[test]
    fn a_buffer_keeps_max_packets_and_counts_the_rest() {
        let mut b = CaptureBuf::new(3);
        for i in 0..5 {
            b.record(i, &pkt(i, 1));
        }
        assert_eq!((b.len(), b.dropped), (3, 2));
    }

    #[test]
    fn the_egress_tap_keeps_only_the_flows_packets() {
        let mut t = EgressTap {
            peer_ep: 3,
            buf: CaptureBuf::new(10),
            cut_frames: false,
        };
        t.observe(5, &pkt(0, 3));
        t.observe(6, &pkt(0, 1));
        assert_eq!(t.buf.len(), 1);
    }

    #[test]
    fn tcpdump_sees_a_gso_skb_whole_with_tso_and_its_frames_with_software_gso() {
        let mut skb = pkt(0, 3);
        skb.seq = 1000;
        skb.end_seq = 1000 + 3 * 1448 - 100;
        skb.gso_segs = 3;
        skb.gso_size = 1448;
        for (cut_frames, want) in [
            (false, vec![(1000, 5244)]),
            (true, vec![(1000, 2448), (2448, 3896), (3896, 5244)]),
        ] {
            let mut t = EgressTap {
                peer_ep: 3,
                buf: CaptureBuf::new(10),
                cut_frames,
            };
            t.observe(5, &skb);
            let got: Vec<_> = t
                .buf
                .records()
                .iter()
                .map(|r| (r.pkt.seq, r.pkt.end_seq))
                .collect();
            assert_eq!(got, want, "cut_frames {cut_frames}");
            assert!(t.buf.records().iter().all(|r| r.t_ns == 5));
        }
    }

    #[test]
    fn merge_orders_by_time_received_first_at_ties_and_truncates() {
        let cfg = CaptureConfig {
            flow: 0,
            at: CaptureAt::Sender,
            max_packets: 3,
        };
        let (mut out, mut inc) = (CaptureBuf::new(3), CaptureBuf::new(3));
        out.record(1_010, &pkt(100, 1));
        out.record(1_020, &pkt(200, 1));
        inc.record(1_020, &pkt(300, 0));
        inc.record(1_030, &pkt(400, 0));
        let c = merge(&cfg, 0, 0, out, inc, 1_000);
        assert_eq!(c.t_ns, [10, 20, 20]);
        assert_eq!(c.dir, [DIR_OUT, DIR_IN, DIR_OUT]);
        assert_eq!(c.seq, [100, 300, 200]);
        assert_eq!(c.truncated, 1);
        // Bookkeeping flags are not reported.
        assert!(c.flags.iter().all(|&f| f as u16 == flags::RETRANS));
    }
}
