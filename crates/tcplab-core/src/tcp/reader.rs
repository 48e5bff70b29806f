//! The application reading a receiving endpoint: when it calls `read()`, and how much it
//! takes (`FlowConfig.reader`).
//!
//! Model. An immediate reader (netperf, iperf3) drains the receive queue as data arrives;
//! [`crate::tcp::receiver::Receiver`] handles it without this module. The two slow readers
//! leave bytes in the receive queue, where they occupy the buffer and shrink the window
//! (`tcp_space()`), until they read them:
//!
//! - **`Rate { rate_bps }`**: a consumer that processes what it reads at `rate_bps`: the
//!   loop `n = read(fd, buf, READ_CHUNK_BYTES); process(n)`, where processing `n` bytes
//!   takes `n * 8 / rate_bps` seconds. While processing it does not read; once done it reads
//!   again at once if data is queued, else it blocks in `read()` and takes the next data as
//!   it arrives (what a blocking read returns: whatever is queued, up to the buffer size).
//!   Its long-run rate is at most `rate_bps`, exactly `rate_bps` while data is always
//!   queued. A read costs one timer event at most, and reads are as coarse as the data
//!   allows: a reader slower than the network reads whole chunks (64 KiB, a common
//!   `read()` buffer: iperf3's default is 128 KiB, netperf's the socket buffer), one per
//!   `READ_CHUNK_BYTES * 8 / rate_bps`; a reader faster than the network reads at packet
//!   arrivals, which costs no event of its own.
//! - **`Bursts { interval_ns, bytes }`**: a consumer that wakes on a periodic timer (every
//!   `interval_ns` from the connection's establishment) and reads up to `bytes` of what is
//!   queued, then sleeps again. Wake-ups that would find nothing queued are skipped (they
//!   read nothing), so an idle connection costs no events.
//!
//! What a read does in the kernel (`tcp_recvmsg` -> `tcp_rcv_space_adjust()`,
//! `tcp_cleanup_rbuf()`) is in `tcp::receiver` and `TcpSocket::app_read`.

use crate::config::ReaderConfig;
use crate::time::{NEVER, NSEC_PER_SEC};

/// Bytes one `read()` of a rate-limited reader asks for.
pub const READ_CHUNK_BYTES: u64 = 64 * 1024;

/// The reading application's state.
#[derive(Clone, Copy, Debug)]
pub struct Reader {
    pub cfg: ReaderConfig,
    /// The application reads only when it calls `read()` itself (a scripted peer's
    /// system calls, `sim::scripted`): the reader never takes anything on its own.
    pub by_syscall: bool,
    /// Rate: the reader is processing what it read until then (ns).
    busy_until_ns: u64,
    /// Bursts: the first periodic wake-up (the connection's establishment).
    phase_ns: u64,
}

impl Reader {
    pub fn new(cfg: ReaderConfig) -> Reader {
        Reader {
            cfg,
            by_syscall: false,
            busy_until_ns: 0,
            phase_ns: 0,
        }
    }

    /// The connection is established at `now_ns`: the periodic reader's clock starts.
    pub fn established(&mut self, now_ns: u64) {
        self.phase_ns = now_ns;
    }

    /// Bytes the application reads at `now_ns` with `unread` bytes queued; `from_timer`:
    /// the reader's own timer fired (its wake-up), rather than data arriving.
    pub fn take(&mut self, now_ns: u64, unread: u64, from_timer: bool) -> u64 {
        if unread == 0 || self.by_syscall {
            return 0;
        }
        match self.cfg {
            ReaderConfig::Immediate => unread,
            ReaderConfig::Rate { rate_bps } => {
                if now_ns < self.busy_until_ns {
                    return 0;
                }
                let n = unread.min(READ_CHUNK_BYTES);
                // Processing time of n bytes, rounded up (at least 1 ns, so that the
                // reader always moves forward).
                let bits_ns = n as u128 * 8 * NSEC_PER_SEC as u128;
                let busy_ns = bits_ns.div_ceil(rate_bps.max(1) as u128).max(1);
                self.busy_until_ns = now_ns.saturating_add(busy_ns.min(u64::MAX as u128) as u64);
                n
            }
            ReaderConfig::Bursts { bytes, .. } => {
                if from_timer {
                    unread.min(bytes)
                } else {
                    0
                }
            }
        }
    }

    /// When the reader next reads, given `unread` bytes queued after its read at `now_ns`
    /// (NEVER: it waits for data to arrive).
    pub fn next_read_ns(&self, now_ns: u64, unread: u64) -> u64 {
        if unread == 0 || self.by_syscall {
            return NEVER;
        }
        match self.cfg {
            ReaderConfig::Immediate => NEVER,
            ReaderConfig::Rate { .. } => {
                if self.busy_until_ns > now_ns {
                    self.busy_until_ns
                } else {
                    now_ns
                }
            }
            ReaderConfig::Bursts { interval_ns, .. } => {
                // The next periodic wake-up strictly after now.
                let interval = interval_ns.max(1);
                let k = now_ns.saturating_sub(self.phase_ns) / interval + 1;
                self.phase_ns.saturating_add(k.saturating_mul(interval))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_reader_reads_chunks_and_sleeps_for_their_processing_time() {
        // 8 Mbit/s = 1 byte/us: a 64 KiB chunk takes 65536 us to process.
        let mut r = Reader::new(ReaderConfig::Rate {
            rate_bps: 8_000_000,
        });
        assert_eq!(r.take(0, 1 << 20, false), READ_CHUNK_BYTES);
        assert_eq!(r.next_read_ns(0, (1 << 20) - READ_CHUNK_BYTES), 65_536_000);
        // Busy: data arriving meanwhile is not read.
        assert_eq!(r.take(1_000, 1 << 20, false), 0);
        assert_eq!(r.take(65_536_000, 1 << 20, true), READ_CHUNK_BYTES);
        // Less queued than a chunk: the read takes what is there.
        assert_eq!(r.take(200_000_000, 1448, false), 1448);
        assert_eq!(r.next_read_ns(200_000_000, 0), NEVER);
    }

    #[test]
    fn bursts_reader_reads_only_at_its_wakeups() {
        let mut r = Reader::new(ReaderConfig::Bursts {
            interval_ns: 100,
            bytes: 10,
        });
        r.established(1_000);
        assert_eq!(r.take(1_050, 50, false), 0);
        assert_eq!(r.next_read_ns(1_050, 50), 1_100);
        assert_eq!(r.take(1_100, 50, true), 10);
        assert_eq!(r.next_read_ns(1_100, 40), 1_200);
        assert_eq!(r.next_read_ns(1_100, 0), NEVER);
    }
}
