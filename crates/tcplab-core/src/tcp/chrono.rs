//! The sender's limited-time chronographs: what `ss -i` prints as `busy:`,
//! `rwnd_limited:` and `sndbuf_limited:` (tcp_info's `tcpi_busy_time`,
//! `tcpi_rwnd_limited`, `tcpi_sndbuf_limited`).
//!
//! Linux v6.12 net/ipv4/tcp_output.c: `tcp_chrono_start()`, `tcp_chrono_stop()`,
//! `tcp_chrono_set()`; net/ipv4/tcp.c: `tcp_get_info_chrono_stats()`. One chronograph
//! runs at a time, the most interesting condition winning (SNDBUF_LIMITED over
//! RWND_LIMITED over BUSY); each accumulates jiffies while it runs. `tcpi_busy_time` is
//! the sum of the three (the socket was busy whichever limit held).
//!
//! Where the kernel starts and stops them (mirrored by the callers in `tcp::output`,
//! `tcp::input` and `TcpSocket::app_fill`):
//! - BUSY starts when data enters an empty write queue (`tcp_add_write_queue_tail()`)
//!   and stops when the retransmit queue empties (`tcp_clean_rtx_queue()`);
//! - RWND_LIMITED starts when `tcp_write_xmit()` stopped on the peer's window
//!   (`tcp_snd_wnd_test()` failed) and stops after any `tcp_write_xmit()` that did not;
//! - SNDBUF_LIMITED starts in `tcp_cwnd_validate()` when the flow is not cwnd-limited,
//!   everything written was sent and the application is blocked on the send buffer
//!   (SOCK_NOSPACE); it stops when the application is woken (`tcp_check_space()`).
//!
//! A stop ends the chronograph only if both queues are empty; otherwise, if the stopped
//! type was the running one, BUSY runs on.

/// `enum tcp_chrono`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum ChronoType {
    Unspec = 0,
    Busy = 1,
    RwndLimited = 2,
    SndbufLimited = 3,
}

/// `tp->chrono_type`, `tp->chrono_start`, `tp->chrono_stat[]` (jiffies).
#[derive(Clone, Copy, Debug)]
pub struct Chrono {
    pub kind: ChronoType,
    start_j: u32,
    stat_j: [u64; 3],
}

impl Default for Chrono {
    fn default() -> Self {
        Chrono {
            kind: ChronoType::Unspec,
            start_j: 0,
            stat_j: [0; 3],
        }
    }
}

/// The three times as tcp_info reports them, us.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ChronoStats {
    pub busy_us: u64,
    pub rwnd_limited_us: u64,
    pub sndbuf_limited_us: u64,
}

impl Chrono {
    /// `tcp_chrono_set()`.
    fn set(&mut self, new: ChronoType, now_j: u32) {
        if self.kind > ChronoType::Unspec {
            self.stat_j[self.kind as usize - 1] += now_j.wrapping_sub(self.start_j) as u64;
        }
        self.start_j = now_j;
        self.kind = new;
    }

    /// `tcp_chrono_start()`: a more interesting condition takes over.
    #[inline]
    pub fn start(&mut self, kind: ChronoType, now_j: u32) {
        if kind > self.kind {
            self.set(kind, now_j);
        }
    }

    /// `tcp_chrono_stop()`; `queues_empty`: `tcp_rtx_and_write_queues_empty()`.
    #[inline]
    pub fn stop(&mut self, kind: ChronoType, now_j: u32, queues_empty: bool) {
        if queues_empty {
            self.set(ChronoType::Unspec, now_j);
        } else if kind == self.kind {
            self.set(ChronoType::Busy, now_j);
        }
    }

    /// `tcp_get_info_chrono_stats()` at `now_j` on a host of `hz`.
    pub fn stats(&self, now_j: u32, hz: u32) -> ChronoStats {
        let mut us = [0u64; 3];
        for (i, u) in us.iter_mut().enumerate() {
            let mut j = self.stat_j[i];
            if self.kind as usize == i + 1 {
                j += now_j.wrapping_sub(self.start_j) as u64;
            }
            *u = j * (1_000_000 / hz as u64);
        }
        ChronoStats {
            busy_us: us.iter().sum(),
            rwnd_limited_us: us[1],
            sndbuf_limited_us: us[2],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn higher_priority_takes_over_and_stop_falls_back_to_busy() {
        let mut c = Chrono::default();
        c.start(ChronoType::Busy, 100);
        c.start(ChronoType::RwndLimited, 150);
        // BUSY does not override RWND_LIMITED.
        c.start(ChronoType::Busy, 160);
        c.stop(ChronoType::RwndLimited, 400, false);
        c.stop(ChronoType::Busy, 500, true);
        let s = c.stats(1000, 1000);
        assert_eq!(s.rwnd_limited_us, 250_000);
        assert_eq!(s.busy_us, 400_000);
        assert_eq!(s.sndbuf_limited_us, 0);
        // Stopping a type that is not running leaves the running one alone.
        c.start(ChronoType::SndbufLimited, 1000);
        c.stop(ChronoType::RwndLimited, 1100, false);
        assert_eq!(c.kind, ChronoType::SndbufLimited);
        // The running one counts up to now.
        assert_eq!(c.stats(1200, 250).sndbuf_limited_us, 200 * 4000);
    }
}
