//! The retransmit queue and SACK scoreboard (Linux `tcp_rtx_queue` + `tsorted_sent_queue`).
//!
//! Every sent-but-not-cumulatively-acked segment is an [`Skb`] in sequence order. Linux
//! additionally keeps the unacked, un-SACKed skbs on a list sorted by (re)transmission
//! time, which RACK walks to find losses; a retransmitted skb moves to its tail and a
//! SACKed one leaves it. Here the skbs live in a `VecDeque` indexed by a monotonically
//! increasing id (the front's id is `base_id`), and the time-sorted list is intrusive,
//! linked by ids, so no operation allocates.
//!
//! tcplab departs from Linux in one place: an skb always holds exactly one segment
//! (`tcp_skb_pcount() == 1`). Linux's TSO skbs are split on the wire anyway, and SACK
//! and RACK act per segment once a loss splits them; the pacing of TSO bursts is modelled
//! separately in `tcp::output`.

use std::collections::VecDeque;

/// `TCPCB_SACKED_ACKED`: SKB ACK'd by a SACK block.
pub const TCPCB_SACKED_ACKED: u8 = 0x01;
/// `TCPCB_SACKED_RETRANS`: SKB retransmitted (and the retransmission not yet lost/acked).
pub const TCPCB_SACKED_RETRANS: u8 = 0x02;
/// `TCPCB_LOST`: SKB is lost.
pub const TCPCB_LOST: u8 = 0x04;
/// `TCPCB_EVER_RETRANS`: ever retransmitted frame.
pub const TCPCB_EVER_RETRANS: u8 = 0x80;
/// `TCPCB_RETRANS`.
pub const TCPCB_RETRANS: u8 = TCPCB_SACKED_RETRANS | TCPCB_EVER_RETRANS;

pub const NIL: u64 = u64::MAX;

/// Delivery-rate state captured at transmission (`tcp_skb_cb->tx`).
#[derive(Clone, Copy, Debug, Default)]
pub struct TxState {
    /// us
    pub first_tx_mstamp: u64,
    /// us; 0 once the skb's delivery has been counted (see `tcp_rate_skb_delivered`).
    pub delivered_mstamp: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub is_app_limited: bool,
}

#[derive(Clone, Copy, Debug)]
pub struct Skb {
    pub seq: u64,
    pub end_seq: u64,
    /// Time of the latest (re)transmission, ns (`skb->skb_mstamp_ns`, the EDT).
    pub skb_mstamp_ns: u64,
    pub tx: TxState,
    pub sacked: u8,
    /// Copies of this skb still in the sending host's qdisc/NIC (`skb_still_in_host_queue`).
    pub in_host_queue: u8,
    /// This entry began an skb as it was sent (`offload: {tso: on}`, `mark_skb_head`):
    /// entries up to the next head were one TSO/GSO skb.
    pub skb_head: bool,
    /// This entry ends an skb that `tcp_mark_push()` marked (`tcp::push`): sent alone
    /// again, it carries PSH.
    pub psh: bool,
    ts_prev: u64,
    ts_next: u64,
    ts_linked: bool,
}

impl Skb {
    #[inline]
    pub fn len(&self) -> u32 {
        (self.end_seq - self.seq) as u32
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.end_seq == self.seq
    }
    /// `tcp_skb_timestamp_us()`
    #[inline]
    pub fn mstamp_us(&self) -> u64 {
        self.skb_mstamp_ns / 1000
    }
}

#[derive(Debug, Default)]
pub struct RtxQueue {
    q: VecDeque<Skb>,
    base_id: u64,
    ts_head: u64,
    ts_tail: u64,
    /// The latest entry that began an skb (`mark_skb_head`; NIL: none marked).
    last_skb_head: u64,
}

impl RtxQueue {
    pub fn new() -> Self {
        // No allocation until the first segment is sent: flows that have not started cost
        // nothing (memory follows active flows).
        RtxQueue {
            q: VecDeque::new(),
            base_id: 0,
            ts_head: NIL,
            ts_tail: NIL,
            last_skb_head: NIL,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.q.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    #[inline]
    pub fn front_id(&self) -> u64 {
        self.base_id
    }
    /// One past the last id.
    #[inline]
    pub fn end_id(&self) -> u64 {
        self.base_id + self.q.len() as u64
    }
    #[inline]
    pub fn get(&self, id: u64) -> &Skb {
        &self.q[(id - self.base_id) as usize]
    }
    #[inline]
    pub fn get_mut(&mut self, id: u64) -> &mut Skb {
        &mut self.q[(id - self.base_id) as usize]
    }
    #[inline]
    pub fn front(&self) -> Option<&Skb> {
        self.q.front()
    }

    /// Id of the skb whose `[seq, end_seq)` contains `seq`, if any.
    pub fn find(&self, seq: u64) -> Option<u64> {
        // Fast path: skbs are full-sized segments, so the index is usually
        // (seq - front.seq) / len(front); verify, else binary search.
        if let Some(f) = self.q.front() {
            let len = f.end_seq - f.seq;
            if seq >= f.seq && len > 0 {
                let i = ((seq - f.seq) / len) as usize;
                if let Some(s) = self.q.get(i) {
                    if s.seq <= seq && seq < s.end_seq {
                        return Some(self.base_id + i as u64);
                    }
                }
            }
        }
        let i = self.q.partition_point(|s| s.end_seq <= seq);
        if i < self.q.len() && self.q[i].seq <= seq {
            Some(self.base_id + i as u64)
        } else {
            None
        }
    }

    /// `find(seq)`, trying `hint` first (a caller that visits skbs mostly in order, such
    /// as TX completions, passes the id after the last one it found: no division, and
    /// only the one skb is read).
    #[inline]
    pub fn find_from(&self, hint: u64, seq: u64) -> Option<u64> {
        if hint >= self.base_id {
            if let Some(s) = self.q.get((hint - self.base_id) as usize) {
                if s.seq <= seq && seq < s.end_seq {
                    return Some(hint);
                }
            }
        }
        self.find(seq)
    }

    /// First id whose `end_seq > seq` (the first skb not entirely below `seq`).
    #[inline]
    pub fn lower_bound_end(&self, seq: u64) -> u64 {
        // Fast path as in `find`: with full-sized segments the skb holding `seq` is at
        // (seq - front.seq) / len(front). Skbs are sorted and disjoint, so the skb whose
        // `[seq, end_seq)` holds `seq` is the first one ending above it; one past the
        // back when `seq` is at or beyond the back's end.
        if let Some(f) = self.q.front() {
            let len = f.end_seq - f.seq;
            if seq >= f.seq && len > 0 {
                let i = ((seq - f.seq) / len) as usize;
                match self.q.get(i) {
                    Some(s) if s.seq <= seq && seq < s.end_seq => return self.base_id + i as u64,
                    None if self.q.back().is_some_and(|b| b.end_seq <= seq) => {
                        return self.end_id()
                    }
                    _ => {}
                }
            } else if seq < f.seq {
                return self.base_id;
            }
        }
        self.base_id + self.q.partition_point(|s| s.end_seq <= seq) as u64
    }

    /// The entry `id` begins an skb as it was sent (a TSO/GSO skb's first segment, with
    /// `offload: {tso: on}`): the queue remembers the latest such entry, so it can tell
    /// whether it holds more than one skb.
    #[inline]
    pub fn mark_skb_head(&mut self, id: u64) {
        self.last_skb_head = id;
        self.get_mut(id).skb_head = true;
    }

    /// `tcp_fragment()` in the retransmit queue: the skb holding entry `id` is cut before
    /// it, so `id` begins an skb of its own (no-op if it already does, or is the front).
    #[inline]
    pub fn split_before(&mut self, id: u64) {
        if id <= self.base_id || id >= self.end_id() || self.get(id).skb_head {
            return;
        }
        self.get_mut(id).skb_head = true;
        if self.last_skb_head == NIL || id > self.last_skb_head {
            self.last_skb_head = id;
        }
    }

    /// The skb holding entry `id`, as `[first id, end id)`: back to the entry that began it
    /// (or the front, for a partly acknowledged skb), on to the next that begins one.
    pub fn skb_of(&self, id: u64) -> (u64, u64) {
        let mut a = id;
        while a > self.base_id && !self.get(a).skb_head {
            a -= 1;
        }
        let mut b = id + 1;
        while b < self.end_id() && !self.get(b).skb_head {
            b += 1;
        }
        (a, b)
    }

    /// `tcp_rtx_queue_empty_or_single_skb()` for a socket that marks its skbs' heads: no skb
    /// begins after the front entry (a partly acknowledged skb is still one skb: Linux trims
    /// its head, `tcp_trim_head()`).
    #[inline]
    pub fn empty_or_single_skb(&self) -> bool {
        self.q.len() <= 1 || self.last_skb_head == NIL || self.last_skb_head <= self.base_id
    }

    /// Append a newly sent skb; it joins the tail of the time-sorted list.
    pub fn push_sent(&mut self, seq: u64, end_seq: u64, now_ns: u64, tx: TxState) -> u64 {
        let id = self.end_id();
        self.q.push_back(Skb {
            seq,
            end_seq,
            skb_mstamp_ns: now_ns,
            tx,
            sacked: 0,
            in_host_queue: 1,
            skb_head: false,
            psh: false,
            ts_prev: NIL,
            ts_next: NIL,
            ts_linked: false,
        });
        self.ts_link_tail(id);
        id
    }

    /// Give back the queue's buffer when it is empty (a finished flow).
    pub fn release_memory(&mut self) {
        if self.q.is_empty() {
            self.q = VecDeque::new();
        }
    }

    /// Remove the front skb (cumulatively acked).
    pub fn pop_front(&mut self) -> Option<Skb> {
        if self.q.is_empty() {
            return None;
        }
        let id = self.base_id;
        self.ts_unlink(id);
        self.base_id += 1;
        self.q.pop_front()
    }

    fn ts_link_tail(&mut self, id: u64) {
        let tail = self.ts_tail;
        {
            let s = self.get_mut(id);
            s.ts_prev = tail;
            s.ts_next = NIL;
            s.ts_linked = true;
        }
        if tail == NIL {
            self.ts_head = id;
        } else {
            self.get_mut(tail).ts_next = id;
        }
        self.ts_tail = id;
    }

    /// Take `id` off the time-sorted list (no-op if not on it).
    pub fn ts_unlink(&mut self, id: u64) {
        let (prev, next, linked) = {
            let s = self.get(id);
            (s.ts_prev, s.ts_next, s.ts_linked)
        };
        if !linked {
            return;
        }
        if prev == NIL {
            self.ts_head = next;
        } else {
            self.get_mut(prev).ts_next = next;
        }
        if next == NIL {
            self.ts_tail = prev;
        } else {
            self.get_mut(next).ts_prev = prev;
        }
        let s = self.get_mut(id);
        s.ts_prev = NIL;
        s.ts_next = NIL;
        s.ts_linked = false;
    }

    /// `list_move_tail(&skb->tcp_tsorted_anchor, &tp->tsorted_sent_queue)` after a retransmit.
    pub fn ts_move_tail(&mut self, id: u64) {
        self.ts_unlink(id);
        self.ts_link_tail(id);
    }

    #[inline]
    pub fn ts_head(&self) -> u64 {
        self.ts_head
    }
    #[inline]
    pub fn ts_next(&self, id: u64) -> u64 {
        self.get(id).ts_next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tcp_rtx_queue_empty_or_single_skb(): one skb of three segments is a single skb, also
    /// once its head is acknowledged (tcp_trim_head() keeps the skb); a second skb is not.
    #[test]
    fn empty_or_single_skb_counts_skbs_not_segments() {
        let mut q = RtxQueue::new();
        assert!(q.empty_or_single_skb());
        let tx = TxState::default();
        let head = q.push_sent(0, 1448, 0, tx);
        q.push_sent(1448, 2896, 0, tx);
        q.push_sent(2896, 4344, 0, tx);
        q.mark_skb_head(head);
        assert!(q.empty_or_single_skb());
        let second = q.push_sent(4344, 5792, 0, tx);
        q.mark_skb_head(second);
        assert!(!q.empty_or_single_skb());
        q.pop_front();
        q.pop_front();
        q.pop_front();
        assert!(q.empty_or_single_skb());
    }

    fn ts_order(q: &RtxQueue) -> Vec<u64> {
        let mut v = Vec::new();
        let mut id = q.ts_head();
        while id != NIL {
            v.push(q.get(id).seq);
            id = q.ts_next(id);
        }
        v
    }

    #[test]
    fn tsorted_list_follows_transmissions() {
        let mut q = RtxQueue::new();
        for i in 0..5u64 {
            q.push_sent(i * 100, i * 100 + 100, i, TxState::default());
        }
        assert_eq!(ts_order(&q), vec![0, 100, 200, 300, 400]);
        let id1 = q.find(150).unwrap();
        q.ts_move_tail(id1);
        let id3 = q.find(300).unwrap();
        q.ts_unlink(id3);
        assert_eq!(ts_order(&q), vec![0, 200, 400, 100]);
        q.pop_front();
        q.pop_front();
        assert_eq!(ts_order(&q), vec![200, 400]);
        assert_eq!(q.find(250), Some(q.front_id()));
        assert_eq!(q.find(99), None);
        // A hint that holds `seq` is taken; any other falls back to the search.
        let f = q.front_id();
        assert_eq!(q.find_from(f + 2, 450), Some(f + 2));
        assert_eq!(q.find_from(f, 450), Some(f + 2));
        assert_eq!(q.find_from(f + 7, 450), Some(f + 2));
        assert_eq!(q.find_from(0, 199), None);
        assert_eq!(q.lower_bound_end(300), q.front_id() + 1);
    }

    #[test]
    fn lower_bound_end_matches_a_binary_search() {
        // Full segments, a short one in the middle (a write boundary), and the ends.
        let mut q = RtxQueue::new();
        let mut seq = 1000;
        for len in [100, 100, 100, 40, 100, 100, 100] {
            q.push_sent(seq, seq + len, 0, TxState::default());
            seq += len;
        }
        q.pop_front();
        for probe in 0..seq + 300 {
            let want = q.front_id() + q.q.partition_point(|s| s.end_seq <= probe) as u64;
            assert_eq!(q.lower_bound_end(probe), want, "seq {probe}");
        }
    }
}
