//! The delay line's single-threaded event loop.
//!
//! Model: every TUN is one direction of a wire. A packet read from it at time t
//! (CLOCK_MONOTONIC, taken right after the read) is written back into the same TUN at
//! t + delay_ns; the kernel then routes the written packet on (the wire namespace's policy
//! routing sends what arrives from a veth into a TUN, and what comes out of a TUN to the
//! other veth). This is netem's constant `delay` without jitter, reordering or rate
//! (Linux v6.12 net/sched/sch_netem.c: netem_enqueue() stamps time_to_send = now + latency
//! and netem_dequeue() releases a packet when that time is reached); loss is not the
//! line's job (the wire's nft rule does it).
//!
//! One thread, no allocation per packet (the packet path is `forward.rs`):
//! 1. write the due packets, earliest due first across the TUNs, recording their lateness
//!    (write time - due time), at most WRITE_BATCH before the TUNs are read again;
//! 2. read every TUN until EAGAIN (at most READ_BATCH per TUN per round, so a burst on one
//!    direction does not hold back the other's due packets), each into its ring slot;
//!    while packets are due or waiting, back to 1 without sleeping;
//! 3. sleep (one timer per wake-up: every packet due by then is written in that batch) in ppoll(2) on all TUN fds and a signalfd until a spin margin before the next
//!    due packet (timer slack 1 ns makes the hrtimer fire on time), then spin on the clock,
//!    still reading, until it is due. The margin (50 us to 2 ms, starting at 200 us)
//!    follows the timer wake-ups' observed lateness: 1.5 x the latest + 20 us, decaying by
//!    1/64 per wake-up, so the spin absorbs a VM's slow wake-ups from idle. The line runs
//!    under SCHED_FIFO (main.rs) and must leave the CPU now and then, or the kernel's RT
//!    throttling stops it for tens of ms: when it was busy more than 80 % of the last
//!    100 ms (high packet rates), it sleeps until the due time instead of spinning
//!    (lateness = the timer's wake-up latency, tens of us on a VM).
//!
//! Stats are written every second and on SIGTERM/SIGINT; on SIGUSR1 (kernel mode's end of
//! the traffic, when it reads every other counter) the counters of that moment go to
//! `PATH.snapshot` (`SNAPSHOT_SUFFIX`), through the same writer. The periodic write is done by a
//! second, normal-priority thread (a file write can block for tens of ms on a busy disk):
//! the loop hands it a snapshot (a copy of the counters, once a second, when no packet is
//! due in the next millisecond, at the latest a second later). The packet path is the one
//! thread above.
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use crate::args::Options;
use crate::forward::{Clock, Direction, Forwarder};
use crate::ring::Ring;
use crate::stats::{self, TunStats};
use crate::sys;

/// The real clock (CLOCK_MONOTONIC).
struct Monotonic;

impl Clock for Monotonic {
    fn now_ns(&mut self) -> u64 {
        sys::monotonic_ns()
    }
}

/// Bounds of the spin margin: how long before a packet is due the loop stops sleeping and
/// spins on the clock. The margin adapts to how late ppoll's timer wakes the thread: on a
/// VM the halted vCPU's wake-up takes 20 to 150 us (measured on this project's Firecracker
/// VMs, growing with the sleep's length), far beyond the 1 ns timer slack.
const SPIN_MIN_NS: u64 = 50_000;
const SPIN_MAX_NS: u64 = 2_000_000;
const SPIN_START_NS: u64 = 200_000;
/// The line spins only while it was busy (not asleep in ppoll) at most SPIN_MAX_BUSY_PERCENT
/// of the current BUSY_WINDOW_NS window. A SCHED_FIFO task that never sleeps hits the
/// kernel's RT throttling (sched_rt_runtime_us: 950 ms per second) and is then stopped for
/// the rest of the second, tens of ms: far worse than a timer's wake-up latency. Without
/// the spin, the loop sleeps in ppoll until the due time itself.
const BUSY_WINDOW_NS: u64 = 100_000_000;
const SPIN_MAX_BUSY_PERCENT: u64 = 80;
/// Period of the stats file.
const STATS_INTERVAL_NS: u64 = 1_000_000_000;
/// The periodic stats write waits for a gap of this long before the next due packet.
const STATS_GAP_NS: u64 = 1_000_000;
/// How often a loop that never sleeps (steady traffic) still looks at the signalfd.
const SIGNAL_CHECK_NS: u64 = 10_000_000;
/// SIGUSR1 writes the counters of that moment to the stats path with this suffix.
pub const SNAPSHOT_SUFFIX: &str = ".snapshot";

/// What the writer thread is handed: the counters, and whether they are a SIGUSR1 snapshot
/// (written to `PATH.snapshot`) or the periodic stats (`PATH`).
type Snapshot = (Vec<TunStats>, bool);

pub struct Line {
    fw: Forwarder<File>,
    signals: File,
    pollfds: Vec<libc::pollfd>,
    stats_path: Option<PathBuf>,
    cpu: Option<usize>,
    stop: bool,
    /// The current spin margin (SPIN_MIN_NS..=SPIN_MAX_NS).
    spin_ns: u64,
    /// Snapshots for the periodic stats writer (with --stats).
    writer: Option<SyncSender<Snapshot>>,
    writer_thread: Option<JoinHandle<()>>,
    /// Start of the current busy-accounting window and the time slept in ppoll since.
    window_start_ns: u64,
    window_slept_ns: u64,
}

fn err(what: String, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl Line {
    /// Creates the TUN devices and the queues (everything the loop will need).
    pub fn new(options: &Options, signals: OwnedFd) -> io::Result<Line> {
        let mut tuns = Vec::with_capacity(options.tuns.len());
        for spec in &options.tuns {
            tuns.push(Direction {
                io: sys::open_tun(&spec.name)?,
                ring: Ring::new(options.queue_limit_packets),
                stats: TunStats::new(&spec.name, spec.delay_ns),
                serializer: crate::serializer::Serializer::new(spec.rate_bps, spec.overhead_bytes),
                marker: spec.ce_threshold_ns.map(crate::marker::StepMarker::new),
            });
        }
        let mut pollfds: Vec<libc::pollfd> = tuns
            .iter()
            .map(|t| sys::poll_in(t.io.as_raw_fd()))
            .collect();
        pollfds.push(sys::poll_in(signals.as_raw_fd()));
        let (writer, writer_thread) = match &options.stats_path {
            Some(path) => {
                let (tx, handle) = spawn_writer(path.clone(), options.cpu)
                    .map_err(|e| err("cannot start the stats writer thread".into(), e))?;
                (Some(tx), Some(handle))
            }
            None => (None, None),
        };
        Ok(Line {
            fw: Forwarder::new(tuns),
            signals: File::from(signals),
            pollfds,
            stats_path: options.stats_path.clone(),
            cpu: options.cpu,
            stop: false,
            spin_ns: SPIN_START_NS,
            writer,
            writer_thread,
            window_start_ns: 0,
            window_slept_ns: 0,
        })
    }

    /// Runs until SIGTERM/SIGINT, then writes the final stats.
    pub fn run(&mut self) -> io::Result<()> {
        let start = sys::monotonic_ns();
        let mut next_stats = start + STATS_INTERVAL_NS;
        let mut next_signal_check = start + SIGNAL_CHECK_NS;
        while !self.stop {
            let behind = self.fw.write_due(&mut Monotonic);
            let more = self.fw.read_batch(&mut Monotonic)? || behind;
            let now = sys::monotonic_ns();
            let next_due = self.fw.next_due_ns();
            if now >= next_stats
                && (next_due.is_none_or(|d| d > now + STATS_GAP_NS)
                    || now >= next_stats + STATS_INTERVAL_NS)
            {
                self.queue_stats_file();
                next_stats = now + STATS_INTERVAL_NS;
            }
            if now >= next_signal_check {
                self.check_signals();
                next_signal_check = now + SIGNAL_CHECK_NS;
            }
            if more {
                continue;
            }
            // A stats write waiting for a gap must not turn the sleep into a busy loop.
            let stats_wake = next_stats.max(now + STATS_GAP_NS);
            let wake = match next_due {
                Some(due) if due <= now + self.spin_ns => {
                    if self.may_spin(now) {
                        self.spin_until(due)?;
                        continue;
                    }
                    due
                }
                Some(due) => (due - self.spin_ns).min(stats_wake),
                None => stats_wake,
            };
            let ready = sys::ppoll(&mut self.pollfds, Some(wake.saturating_sub(now)))
                .map_err(|e| err("ppoll failed".into(), e))?;
            let woke = sys::monotonic_ns();
            self.window_slept_ns += woke.saturating_sub(now);
            if ready == 0 {
                self.adapt_spin(woke.saturating_sub(wake));
            }
            if self
                .pollfds
                .last()
                .is_some_and(|p| p.revents & libc::POLLIN != 0)
            {
                self.check_signals();
            }
        }
        self.final_stats()
    }

    /// Whether the loop may spin now (see SPIN_MAX_BUSY_PERCENT); starts a new accounting
    /// window every BUSY_WINDOW_NS.
    fn may_spin(&mut self, now: u64) -> bool {
        let elapsed = now.saturating_sub(self.window_start_ns);
        if elapsed >= BUSY_WINDOW_NS {
            self.window_start_ns = now;
            self.window_slept_ns = 0;
            return true;
        }
        let busy = elapsed - self.window_slept_ns.min(elapsed);
        busy * 100 <= elapsed * SPIN_MAX_BUSY_PERCENT
    }

    /// Follows the timer's wake-up lateness `late_ns` (see SPIN_MIN_NS).
    fn adapt_spin(&mut self, late_ns: u64) {
        let wanted = late_ns + late_ns / 2 + 20_000;
        let decayed = self.spin_ns - self.spin_ns / 64;
        self.spin_ns = decayed.max(wanted).clamp(SPIN_MIN_NS, SPIN_MAX_NS);
    }

    /// Spins until `due_ns`, reading arrivals meanwhile (so their timestamps stay exact).
    /// It yields on every round: the lines of a scenario's wires share one CPU at the same
    /// SCHED_FIFO priority, and a spinning line must not hold back another's due packet.
    fn spin_until(&mut self, due_ns: u64) -> io::Result<()> {
        while sys::monotonic_ns() < due_ns {
            self.fw.read_batch(&mut Monotonic)?;
            sys::yield_cpu();
        }
        Ok(())
    }

    /// Drains the signalfd; any SIGTERM/SIGINT asks the loop to stop, a SIGUSR1 writes a
    /// snapshot of the counters (taken now; the write may wait for the writer's previous
    /// one, never for the disk) to `PATH.snapshot`.
    fn check_signals(&mut self) {
        let mut buf = [0u8; 128]; // one struct signalfd_siginfo
        while let Ok(n) = (&self.signals).read(&mut buf) {
            if n == 0 {
                break;
            }
            // ssi_signo is the struct's first field, a u32
            let signo = u32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]) as i32;
            if signo == libc::SIGUSR1 {
                if let Some(writer) = &self.writer {
                    let snapshot: Vec<TunStats> =
                        self.fw.dirs.iter().map(|t| t.stats.clone()).collect();
                    let _ = writer.send((snapshot, true));
                }
                continue;
            }
            self.stop = true;
        }
    }

    /// Writes the stats file now, from this thread (at start; errors are reported).
    pub fn write_stats_file(&mut self) -> io::Result<()> {
        let Some(path) = self.stats_path.clone() else {
            return Ok(());
        };
        let mut snapshot: Vec<TunStats> = self.fw.dirs.iter().map(|t| t.stats.clone()).collect();
        stats::write_file(&path, &mut snapshot, self.cpu)
    }

    /// Hands a snapshot of the stats to the writer thread (the periodic file). A file write
    /// can block for tens of ms on a busy disk; the loop must not. If the writer is still
    /// busy with the previous snapshot, this one is skipped.
    fn queue_stats_file(&mut self) {
        if let Some(writer) = &self.writer {
            let snapshot: Vec<TunStats> = self.fw.dirs.iter().map(|t| t.stats.clone()).collect();
            let _ = writer.try_send((snapshot, false));
        }
    }

    /// The stats at exit: to the file (after the writer thread finished), or to stdout
    /// without --stats.
    fn final_stats(&mut self) -> io::Result<()> {
        if let Some(writer) = self.writer.take() {
            drop(writer); // the thread's recv() ends
            if let Some(handle) = self.writer_thread.take() {
                let _ = handle.join();
            }
        }
        if self.stats_path.is_some() {
            return self.write_stats_file();
        }
        let mut snapshot: Vec<TunStats> = self.fw.dirs.iter().map(|t| t.stats.clone()).collect();
        stats::refresh_kernel_drops(&mut snapshot);
        let all: Vec<&TunStats> = snapshot.iter().collect();
        let mut out = io::stdout().lock();
        out.write_all(stats::to_json(&all, self.cpu).as_bytes())?;
        out.flush()
    }
}

/// The periodic stats writer: a normal-priority thread that writes every snapshot it is
/// handed to `path` (errors are left to the final, synchronous write to report).
fn spawn_writer(
    path: PathBuf,
    cpu: Option<usize>,
) -> io::Result<(SyncSender<Snapshot>, JoinHandle<()>)> {
    let (tx, rx) = sync_channel::<Snapshot>(1);
    let mut snapshot_path = path.clone().into_os_string();
    snapshot_path.push(SNAPSHOT_SUFFIX);
    let snapshot_path = PathBuf::from(snapshot_path);
    let handle = std::thread::Builder::new()
        .name("stats-writer".into())
        .spawn(move || {
            // It inherits the line's SCHED_FIFO and CPU; file writes need neither. On the line's
            // CPU, a write inside the kernel (not preemptible on a PREEMPT_NONE kernel) would
            // delay the line's wake-up: the writer runs on the other CPUs when there are any.
            let _ = sys::set_normal_scheduling();
            if let Some(line_cpu) = cpu {
                let others: Vec<usize> = (0..sys::online_cpu_count())
                    .filter(|&c| c != line_cpu)
                    .collect();
                if !others.is_empty() {
                    let _ = sys::pin_to_cpus(&others);
                }
            }
            while let Ok((mut snapshot, on_signal)) = rx.recv() {
                let to = if on_signal { &snapshot_path } else { &path };
                let _ = stats::write_file(to, &mut snapshot, cpu);
            }
        })?;
    Ok((tx, handle))
}
