//! PSH: where a Linux sender sets it, and what the receiver does with it (Linux v6.12).
//!
//! Model:
//! - **Forced PSH on every multi-segment skb** (net/ipv4/tcp_output.c:
//!   `__tcp_transmit_skb()`: "Force a PSH flag on all (GSO) packets to expedite GRO flush
//!   at receiver", `tcp_skb_pcount(skb) > 1`). Set on the copy that leaves, not on the skb
//!   kept for retransmission. `tcp_gso_segment()` keeps it on the skb's last frame only
//!   (`Packet::gso_frame`). A capture of the kernel (CUBIC at 5 Mbit/s, 100 ms) shows one
//!   segment in 2-3 with PSH: its skbs are of 2-3 segments.
//! - **`tcp_mark_push()`**: the skb holding the end of an application's write
//!   (`tcp_push()` at the end of `tcp_sendmsg_locked()`, and before the writer sleeps on a
//!   full send buffer, `wait_for_space`) is marked PSH and keeps it when it is split
//!   (`tcp_fragment()`/`tso_fragment()` give PSH to the second part). tcplab cuts skbs at
//!   send time, not write time, so it remembers where writes ended ([`PushMarks`]) and
//!   sends PSH on the skb that covers such a point, which is the skb Linux marked: the
//!   write's tail skb, grown by later writes or cut by the cwnd at a point before the
//!   write's end, still covers it. The retransmit queue keeps the mark on the entry that
//!   ends that skb (`rtx_queue::Skb::psh`), so a retransmission of it alone carries PSH.
//! - **The receiver** (net/ipv4/tcp_input.c: `tcp_measure_rcv_mss()`): an in-order skb
//!   of at least `rcv_mss` with PSH, or any shorter one (unless two equal short
//!   segments show a smaller MSS), sets `ICSK_ACK_PUSHED`; a second short one while
//!   pushed sets `ICSK_ACK_PUSHED2`. When the reader then drains the receive queue
//!   (nothing queued, in or out of order: `sk_rmem_alloc` is 0), `__tcp_cleanup_rbuf()`
//!   (net/ipv4/tcp.c) sends the owed ACK at once, with PUSHED2, or with PUSHED outside
//!   the ping-pong mode of interactive flows, instead of leaving it to the delayed-ACK
//!   timer. Sending any ACK clears both (`inet_csk_clear_xmit_timer(ICSK_TIME_DACK)`).
//! - **GRO** (net/ipv4/tcp_offload.c: `tcp_gro_receive()`): a PSH segment joins its
//!   flow's aggregate and ends it; alone, it is handed on at once (`host::gro`).
//!
//! Simplified: Linux also marks every `max_window / 2` bytes copied within one write
//! (`forced_push()`), and an application writing in chunks (iperf3's 128 KB) marks each
//! chunk's end; tcplab's bulk writer fills the buffer in one step and marks only where it
//! stops. Both only matter to skbs of one segment, since every larger skb carries PSH.
//!
//! No allocation: the marks are a fixed ring.

/// `ICSK_ACK_PUSHED`: a pushed or short segment arrived since the last ACK.
pub const ICSK_ACK_PUSHED: u8 = 1 << 0;
/// `ICSK_ACK_PUSHED2`: a second short segment while `ICSK_ACK_PUSHED` was set.
pub const ICSK_ACK_PUSHED2: u8 = 1 << 1;

/// `sysctl_tcp_pingpong_thresh` (default 1 since Linux v6.5, 1 on v6.12): the count of
/// replies sent within `ato` of receiving that makes a socket interactive
/// (`inet_csk_in_pingpong_mode()`).
pub const TCP_PINGPONG_THRESH: u8 = 1;

/// Marks the ring holds; more writes end before their data is sent only when an
/// application writes many short messages into a full pipe, and then the newest mark
/// replaces the one before it (those messages' skbs would be merged up to the size goal
/// anyway).
const MAX_MARKS: usize = 16;

/// Where the application's writes ended (`tcp_mark_push()`), not yet covered by a sent skb,
/// in sequence order.
#[derive(Clone, Debug)]
pub struct PushMarks {
    seq: [u64; MAX_MARKS],
    head: usize,
    len: usize,
    /// The oldest mark (`seq[head]`), or `u64::MAX` when there is none: the test every
    /// skb makes, without the ring.
    next: u64,
}

impl Default for PushMarks {
    fn default() -> Self {
        PushMarks {
            seq: [0; MAX_MARKS],
            head: 0,
            len: 0,
            next: u64::MAX,
        }
    }
}

impl PushMarks {
    /// A write ended at `seq` (`tcp_mark_push()` on the skb holding byte `seq - 1`).
    pub fn mark(&mut self, seq: u64) {
        if self.len > 0 {
            let newest = (self.head + self.len - 1) % MAX_MARKS;
            if seq <= self.seq[newest] {
                return;
            }
            if self.len == MAX_MARKS {
                self.seq[newest] = seq;
                return;
            }
        }
        let slot = (self.head + self.len) % MAX_MARKS;
        self.seq[slot] = seq;
        self.len += 1;
        if self.len == 1 {
            self.next = seq;
        }
    }

    /// Whether a new-data skb `[seq, end_seq)` holds the end of a write (a mark in
    /// `(seq, end_seq]`): it carries PSH.
    #[inline]
    pub fn covers(&self, seq: u64, end_seq: u64) -> bool {
        if self.next > end_seq {
            return false;
        }
        let mut k = 0;
        while k < self.len {
            let m = self.seq[(self.head + k) % MAX_MARKS];
            if m > end_seq {
                return false;
            }
            if m > seq {
                return true;
            }
            k += 1;
        }
        false
    }

    /// The first mark above `seq`, or `u64::MAX` if none.
    #[inline]
    pub fn next_after(&self, seq: u64) -> u64 {
        if self.next > seq {
            return self.next;
        }
        (0..self.len)
            .map(|k| self.seq[(self.head + k) % MAX_MARKS])
            .find(|&m| m > seq)
            .unwrap_or(u64::MAX)
    }

    /// New data up to `end_seq` was sent: its marks are spent.
    #[inline]
    pub fn sent_through(&mut self, end_seq: u64) {
        if self.next > end_seq {
            return;
        }
        while self.len > 0 && self.seq[self.head] <= end_seq {
            self.head = (self.head + 1) % MAX_MARKS;
            self.len -= 1;
        }
        self.next = if self.len > 0 {
            self.seq[self.head]
        } else {
            u64::MAX
        };
    }

    /// Marks held.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skb_covering_a_write_end_carries_psh_once() {
        let mut m = PushMarks::default();
        m.mark(3000);
        // An skb ending before the write's end (cut by the cwnd): no PSH.
        assert!(!m.covers(0, 2896));
        m.sent_through(2896);
        // The rest, ending exactly at the write's end, carries it.
        assert!(m.covers(2896, 3000));
        m.sent_through(3000);
        assert!(m.is_empty());
        // A later skb covers no mark.
        assert!(!m.covers(3000, 4448));
    }

    #[test]
    fn an_skb_grown_past_a_write_end_still_carries_it() {
        // tcp_sendmsg_locked() appends the next write to a marked tail skb below the size
        // goal; the skb keeps PSH, and covers the first write's end.
        let mut m = PushMarks::default();
        m.mark(1000);
        m.mark(2000);
        assert!(m.covers(0, 2896));
        m.sent_through(2896);
        assert!(m.is_empty());
    }

    #[test]
    fn marks_are_kept_in_order_and_a_full_ring_keeps_the_newest() {
        let mut m = PushMarks::default();
        for k in 1..=(MAX_MARKS as u64 + 4) {
            m.mark(k * 100);
        }
        assert_eq!(m.len(), MAX_MARKS);
        // A mark at or before the newest is no new write end.
        m.mark(50);
        assert_eq!(m.len(), MAX_MARKS);
        // The oldest survive; the last slot holds the newest write end.
        assert!(m.covers(0, 100));
        assert!(m.covers((MAX_MARKS as u64 + 3) * 100, (MAX_MARKS as u64 + 4) * 100));
        assert!(!m.covers(
            (MAX_MARKS as u64 - 1) * 100,
            (MAX_MARKS as u64 + 4) * 100 - 1
        ));
    }
}
