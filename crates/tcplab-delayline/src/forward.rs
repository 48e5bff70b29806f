//! The packet path of the line: arrivals into the queues, due packets out, and what each
//! costs in lateness, behind two small traits (the clock, a TUN's read and write) so the
//! order of events is checked with a fake clock and fake TUNs (tests below); `line.rs`
//! runs it on the real ones between its sleeps.
//!
//! Model: a packet read from TUN i at time t (the clock read right after the read) is due
//! at t + delay_i, or, on a TUN with a rate, its delay after its serialisation ends
//! (`serializer`). One wake-up of the line is a batch:
//! - [`Forwarder::write_due`] writes the due packets, always the earliest due across the
//!   TUNs first (one FIFO per TUN: a constant delay keeps each TUN's order), recording
//!   each one's lateness = the clock after the write's start minus its due time; it
//!   stops after WRITE_BATCH packets even if more are due, so that
//! - [`Forwarder::read_batch`] reads every TUN (up to READ_BATCH per TUN per call) before
//!   the next writes. A TUN write runs the packet's way on in the writer's system call
//!   (tun_get_user() -> netif_receive_skb()), so a long catch-up of writes without reads
//!   would leave arrivals waiting in the TUN's own queue (500 packets: its txqueuelen),
//!   where their wait is invisible (their timestamp is taken at the read) and, once it is
//!   full, the kernel drops them (the device's tx_dropped).
//!
//! No allocation per packet: a packet is read straight into its ring slot; over the queue
//! limit it is read into a scratch buffer and counted as a drop of the line. On a TUN with
//! a step marker (`marker.rs`) a packet whose wait for the wire is above the threshold is
//! marked CE in its slot as it is queued (its wait is known then: the wire is a FIFO).
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{self, Read, Write};

use crate::marker::StepMarker;
use crate::ring::{Ring, SLOT_BYTES};
use crate::serializer::Serializer;
use crate::stats::TunStats;

/// Most packets read from one TUN per [`Forwarder::read_batch`] (a burst on one direction
/// does not hold back the other's due packets for long). As large as WRITE_BATCH: a read
/// costs less than a write (which carries the packet on), so everything that arrives
/// during a batch of writes is read before the next one.
pub const READ_BATCH: usize = 64;
/// Most packets written per [`Forwarder::write_due`] before the TUNs are read again.
pub const WRITE_BATCH: usize = 64;

/// CLOCK_MONOTONIC in ns (a fake one in tests).
pub trait Clock {
    fn now_ns(&mut self) -> u64;
}

/// One TUN's file: a read returns one IP packet (WouldBlock when none is waiting), a write
/// injects one.
pub trait PacketIo {
    fn read_packet(&mut self, buf: &mut [u8]) -> io::Result<usize>;
    fn write_packet(&mut self, packet: &[u8]) -> io::Result<usize>;
}

impl PacketIo for File {
    fn read_packet(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read(buf)
    }

    fn write_packet(&mut self, packet: &[u8]) -> io::Result<usize> {
        self.write(packet)
    }
}

/// One direction of a wire: its TUN, its queue and its counters.
pub struct Direction<T> {
    pub io: T,
    pub ring: Ring,
    pub stats: TunStats,
    pub serializer: Serializer,
    /// CE marking above a sojourn (`--ce-threshold`; only on a TUN with a rate).
    pub marker: Option<StepMarker>,
}

/// The TUNs of one line and their queues.
pub struct Forwarder<T> {
    pub dirs: Vec<Direction<T>>,
    scratch: Box<[u8; SLOT_BYTES]>,
}

impl<T: PacketIo> Forwarder<T> {
    pub fn new(dirs: Vec<Direction<T>>) -> Forwarder<T> {
        Forwarder {
            dirs,
            scratch: Box::new([0; SLOT_BYTES]),
        }
    }

    /// The earliest due time over all queues.
    pub fn next_due_ns(&self) -> Option<u64> {
        self.dirs.iter().filter_map(|d| d.ring.head_due_ns()).min()
    }

    /// Writes the due packets, earliest due first across the TUNs, at most WRITE_BATCH;
    /// true when it stopped at that bound with a packet still due.
    pub fn write_due(&mut self, clock: &mut impl Clock) -> bool {
        for _ in 0..WRITE_BATCH {
            let now = clock.now_ns();
            let mut pick: Option<(usize, u64)> = None;
            for (i, d) in self.dirs.iter().enumerate() {
                if let Some(due) = d.ring.head_due_ns() {
                    if due <= now && pick.is_none_or(|(_, p)| due < p) {
                        pick = Some((i, due));
                    }
                }
            }
            let Some((i, due)) = pick else {
                return false;
            };
            let dir = &mut self.dirs[i];
            let packet = dir.ring.head_packet().expect("a due packet");
            match dir.io.write_packet(packet) {
                Ok(_) => dir.stats.record_write(packet.len(), now - due),
                // A TUN refuses a write when it is down or the packet is malformed: the
                // packet is lost, counted as a drop of the line.
                Err(_) => dir.stats.line_drops += 1,
            }
            dir.ring.pop();
        }
        let now = clock.now_ns();
        self.next_due_ns().is_some_and(|due| due <= now)
    }

    /// Reads up to READ_BATCH packets from every TUN, each due its delay after the clock
    /// read right after it; true when some TUN may hold more.
    pub fn read_batch(&mut self, clock: &mut impl Clock) -> io::Result<bool> {
        let mut more = false;
        for dir in &mut self.dirs {
            let mut n = 0;
            while n < READ_BATCH {
                let (result, queued) = match dir.ring.tail_slot() {
                    Some(slot) => (dir.io.read_packet(slot), true),
                    None => (dir.io.read_packet(&mut self.scratch[..]), false),
                };
                match result {
                    Ok(len) => {
                        let t = clock.now_ns();
                        n += 1;
                        if queued {
                            let (start, sent) = dir.serializer.schedule(t, len);
                            if let (Some(marker), Some(slot)) = (dir.marker, dir.ring.tail_slot()) {
                                if marker.apply(&mut slot[..len], t, start) {
                                    dir.stats.ce_marks += 1;
                                }
                            }
                            dir.ring.commit(len, sent + dir.stats.delay_ns);
                            dir.stats.record_depth(dir.ring.len(), dir.ring.bytes());
                        } else {
                            dir.stats.line_drops += 1; // over the queue limit
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        return Err(io::Error::new(
                            e.kind(),
                            format!("cannot read TUN {}: {e}", dir.stats.name),
                        ))
                    }
                }
            }
            more |= n == READ_BATCH;
        }
        Ok(more)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};
    use std::collections::VecDeque;
    use std::rc::Rc;

    /// The fake clock: time moves only when a fake system call costs some.
    #[derive(Clone, Default)]
    struct FakeClock(Rc<Cell<u64>>);

    impl FakeClock {
        fn advance(&self, ns: u64) {
            self.0.set(self.0.get() + ns);
        }
        fn set(&self, ns: u64) {
            self.0.set(ns);
        }
    }

    impl Clock for FakeClock {
        fn now_ns(&mut self) -> u64 {
            self.0.get()
        }
    }

    /// What happened, in order: (time, TUN, "r"/"w", the packet's first byte).
    type Log = Rc<RefCell<Vec<(u64, usize, char, u8)>>>;

    /// Packets arriving at a fake TUN: (time, bytes).
    type Arrivals = Vec<(u64, Vec<u8>)>;

    /// A fake TUN: packets waiting to be read (each with the time it arrives), a cost per
    /// read and per write, and a shared log.
    struct FakeTun {
        id: usize,
        clock: FakeClock,
        arrivals: VecDeque<(u64, Vec<u8>)>,
        read_cost_ns: u64,
        write_cost_ns: u64,
        log: Log,
    }

    impl PacketIo for FakeTun {
        fn read_packet(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let now = self.clock.0.get();
            match self.arrivals.front() {
                Some((at, _)) if *at <= now => {
                    let (_, p) = self.arrivals.pop_front().unwrap();
                    buf[..p.len()].copy_from_slice(&p);
                    self.clock.advance(self.read_cost_ns);
                    self.log.borrow_mut().push((now, self.id, 'r', p[0]));
                    Ok(p.len())
                }
                _ => Err(io::ErrorKind::WouldBlock.into()),
            }
        }

        fn write_packet(&mut self, packet: &[u8]) -> io::Result<usize> {
            let now = self.clock.0.get();
            self.log.borrow_mut().push((now, self.id, 'w', packet[0]));
            self.clock.advance(self.write_cost_ns);
            Ok(packet.len())
        }
    }

    fn forwarder(
        clock: &FakeClock,
        log: &Log,
        tuns: &[(u64, Arrivals)],
        read_cost_ns: u64,
        write_cost_ns: u64,
    ) -> Forwarder<FakeTun> {
        Forwarder::new(
            tuns.iter()
                .enumerate()
                .map(|(id, (delay_ns, arrivals))| Direction {
                    io: FakeTun {
                        id,
                        clock: clock.clone(),
                        arrivals: arrivals.iter().cloned().collect(),
                        read_cost_ns,
                        write_cost_ns,
                        log: log.clone(),
                    },
                    ring: Ring::new(100_000),
                    stats: TunStats::new(&format!("t{id}"), *delay_ns),
                    serializer: Serializer::default(),
                    marker: None,
                })
                .collect(),
        )
    }

    /// The line's loop without its sleeps: write, read; when nothing is due and nothing
    /// waits, the clock jumps to the next due time or arrival (a perfect timer).
    fn run(fw: &mut Forwarder<FakeTun>, clock: &mut FakeClock, until_ns: u64) {
        while clock.now_ns() < until_ns {
            let behind = fw.write_due(clock);
            let more = fw.read_batch(clock).unwrap();
            if behind || more {
                continue;
            }
            let now = clock.now_ns();
            let next_arrival = fw
                .dirs
                .iter()
                .filter_map(|d| d.io.arrivals.front().map(|(t, _)| *t))
                .min();
            match [fw.next_due_ns(), next_arrival].into_iter().flatten().min() {
                Some(t) => clock.set(t.max(now)),
                None => return,
            }
        }
    }

    #[test]
    fn each_packet_leaves_its_delay_after_its_read_earliest_first_across_tuns() {
        // TUN 0 delays 1000 ns, TUN 1 300 ns; arrivals interleave so that TUN 1's later
        // packet falls due before TUN 0's earlier one. Reads and writes cost nothing here.
        let mut clock = FakeClock::default();
        let log: Log = Rc::default();
        let mut fw = forwarder(
            &clock,
            &log,
            &[
                (1000, vec![(0, vec![1; 1500]), (400, vec![2; 1500])]),
                (300, vec![(100, vec![10; 60]), (900, vec![11; 60])]),
            ],
            0,
            0,
        );
        run(&mut fw, &mut clock, 1_000_000);
        let writes: Vec<(u64, usize, u8)> = log
            .borrow()
            .iter()
            .filter(|e| e.2 == 'w')
            .map(|e| (e.0, e.1, e.3))
            .collect();
        // due: TUN 0's at 0 + 1000 and 400 + 1000, TUN 1's at 100 + 300 and 900 + 300: the
        // writes in due order (TUN 1's second before TUN 0's second), each on time.
        assert_eq!(
            writes,
            vec![(400, 1, 10), (1000, 0, 1), (1200, 1, 11), (1400, 0, 2)]
        );
        for d in &fw.dirs {
            assert_eq!(d.stats.packets, 2);
            assert_eq!(d.stats.lateness_ns.max(), 0);
            assert_eq!(d.stats.late_over_1ms, 0);
        }
        assert_eq!(fw.dirs[0].stats.bytes, 3000);
        // TUN 0 held both its packets at once (400 < 1000): 2 packets, 3000 bytes
        assert_eq!(
            (
                fw.dirs[0].stats.queue_max_packets,
                fw.dirs[0].stats.queue_max_bytes
            ),
            (2, 3000)
        );
    }

    #[test]
    fn lateness_is_the_write_time_minus_the_due_time() {
        // 1000 packets wait at once on one TUN (delay 1 ms); a read costs 100 ns, a write
        // 2 us. Packet k's read ends at (k + 1) x 100 ns: it is due at 1 ms + (k + 1) x 100.
        // The first write starts when it is due; each write then starts 2 us after the
        // previous one: packet k at 1 ms + 100 + 2_000 k, i.e. 1_900 k late.
        let mut clock = FakeClock::default();
        let log: Log = Rc::default();
        let arrivals: Arrivals = (0..1000).map(|k| (0, vec![k as u8; 100])).collect();
        let mut fw = forwarder(&clock, &log, &[(1_000_000, arrivals)], 100, 2_000);
        run(&mut fw, &mut clock, 100_000_000);
        let s = &fw.dirs[0].stats;
        assert_eq!(s.packets, 1000);
        assert_eq!(s.lateness_ns.max(), 1_900 * 999);
        let over_1ms = (0..1000u64).filter(|k| 1_900 * k > 1_000_000).count() as u64;
        assert_eq!(s.late_over_1ms, over_1ms);
        assert_eq!(s.queue_max_packets, 1000);
        assert_eq!(s.queue_max_bytes, 100_000);
    }

    #[test]
    fn a_long_catch_up_reads_between_write_batches() {
        // 500 packets due at once on TUN 0 while TUN 1 keeps receiving (one packet every
        // 5 us): the line never writes more than WRITE_BATCH packets without reading.
        let mut clock = FakeClock::default();
        let log: Log = Rc::default();
        let burst: Arrivals = (0..500).map(|_| (0, vec![7; 1500])).collect();
        let stream: Arrivals = (0..2000).map(|k| (k * 5_000, vec![9; 60])).collect();
        let mut fw = forwarder(
            &clock,
            &log,
            &[(10_000, burst), (50_000_000, stream)],
            100,
            3_000,
        );
        run(&mut fw, &mut clock, 20_000_000);
        let log = log.borrow();
        let mut run_of_writes = 0;
        let mut longest = 0;
        for e in log.iter() {
            if e.2 == 'w' {
                run_of_writes += 1;
                longest = longest.max(run_of_writes);
            } else {
                run_of_writes = 0;
            }
        }
        assert_eq!(fw.dirs[0].stats.packets, 500);
        assert!(
            longest <= WRITE_BATCH,
            "{longest} writes in a row (bound {WRITE_BATCH})"
        );
        // and the bound was reached: the catch-up (500 x 3 us) outlasts the stream's gaps
        assert_eq!(longest, WRITE_BATCH);
        // every stream packet was read within one write batch (and the reads before it) of
        // its arrival: the 38 arrivals of a batch's 192 us are fewer than READ_BATCH
        assert!(WRITE_BATCH as u64 * 3_000 / 5_000 < READ_BATCH as u64);
        let reads: Vec<u64> = log
            .iter()
            .filter(|e| e.1 == 1 && e.2 == 'r')
            .map(|e| e.0)
            .collect();
        for (k, t) in reads.iter().enumerate() {
            let arrived = k as u64 * 5_000;
            assert!(
                *t - arrived <= WRITE_BATCH as u64 * 3_000 + READ_BATCH as u64 * 100 + 5_000,
                "packet {k} read {} ns after it arrived",
                *t - arrived
            );
        }
    }

    #[test]
    fn a_step_marker_marks_the_ect_packets_that_waited_for_the_wire_past_it() {
        // 5 Mbit/s: a 1500-byte packet (+14) takes 2.4224 ms. Five packets arrive at once:
        // their waits for the wire are 0, 2.42, 4.84, 7.27 and 9.69 ms; with a 3 ms
        // threshold the last three are over it. The fourth is not-ECT (a retransmission):
        // not marked, not counted.
        let mut clock = FakeClock::default();
        let log: Log = Rc::default();
        let ip = |tos: u8| {
            let mut p = vec![0u8; 1500];
            p[0] = 0x45;
            p[1] = tos;
            p
        };
        let arrivals: Arrivals = [2u8, 2, 2, 0, 2].iter().map(|&t| (0, ip(t))).collect();
        let mut fw = forwarder(&clock, &log, &[(1_000_000, arrivals)], 0, 0);
        fw.dirs[0].serializer = Serializer::new(5_000_000, 14);
        fw.dirs[0].marker = Some(StepMarker::new(3_000_000));
        fw.read_batch(&mut clock).unwrap();
        let mut ecn = Vec::new();
        while let Some(p) = fw.dirs[0].ring.head_packet() {
            ecn.push(p[1] & 3);
            fw.dirs[0].ring.pop();
        }
        assert_eq!(ecn, vec![2, 2, 3, 0, 3]);
        assert_eq!(fw.dirs[0].stats.ce_marks, 2);
    }

    #[test]
    fn over_the_queue_limit_a_packet_is_read_and_dropped() {
        let mut clock = FakeClock::default();
        let log: Log = Rc::default();
        let arrivals: Arrivals = (0..10).map(|k| (0, vec![k as u8; 100])).collect();
        let mut fw = forwarder(&clock, &log, &[(1_000, arrivals)], 100, 0);
        fw.dirs[0].ring = Ring::new(4);
        run(&mut fw, &mut clock, 1_000_000);
        let s = &fw.dirs[0].stats;
        assert_eq!((s.packets, s.line_drops, s.queue_max_packets), (4, 6, 4));
    }
}
