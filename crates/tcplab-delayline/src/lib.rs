//! `tcplab-delayline`: tcplab's one-way delay for kernel-mode runs on kernels without
//! sch_netem (this project's machines have none).
//!
//! A library with one entry point, [`main_with_args`]: the standalone binary (`main.rs`)
//! calls it, and so does the Python extension (`tcplab._core.delayline_main`, run as
//! `python -m tcplab.kernel.delayline_main`), so a `pip install` of tcplab carries the delay
//! line inside its one compiled module (no separate executable to ship).
//!
//! Each `--tun NAME:DELAY_NS` creates a TUN device (one direction of an emulated wire) in
//! the namespace the program runs in; the line holds every packet read from it for
//! DELAY_NS and writes it back into the same TUN; `--tun NAME:DELAY_NS:RATE_BPS:OVERHEAD`
//! also serialises its packets at that rate first (`serializer.rs`), and `--ce-threshold
//! NAME:NS` marks CE on such a TUN where a packet waited more than NS for the wire
//! (`marker.rs`, fq_codel's `ce_threshold`). The wire namespace's
//! policy routing
//! (set up by the caller once `ready` is printed) steers the traffic through the TUNs. See
//! `line.rs` for the loop and `stats.rs` for what is measured.
//!
//! Unsafe code: the workspace forbids it, this crate cannot: creating a TUN device needs
//! the TUNSETIFF ioctl, and pinning, timer slack, ppoll and signalfd have no std wrapper.
//! All of it is in `sys.rs`, each call with a SAFETY comment; every other module is
//! `#![forbid(unsafe_code)]`.

mod args;
mod forward;
mod histogram;
mod line;
mod marker;
mod ring;
mod serializer;
mod stats;
mod sys;

use std::io::Write;

use args::Command;

/// The program's name in its messages (and its thread name, cut to 15 bytes).
pub const PROGRAM: &str = "tcplab-delayline";

/// Exit status of a run that ended on SIGTERM/SIGINT, and of `--help`.
pub const EXIT_OK: i32 = 0;
/// Exit status of a bad command line or a failure (the message is on stderr).
pub const EXIT_FAILURE: i32 = 1;

fn fail(message: impl std::fmt::Display) -> i32 {
    eprintln!("{PROGRAM}: {message}");
    EXIT_FAILURE
}

/// The online CPUs as the kernel lists them (e.g. "0-1"), for error messages.
fn online_cpus() -> String {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Runs the delay line with the command line `args` (without the program name) until
/// SIGTERM/SIGINT, in the calling thread, and returns the process's exit status
/// ([`EXIT_OK`], or [`EXIT_FAILURE`] with the reason on stderr). It changes the calling
/// thread (CPU affinity, SCHED_FIFO, timer slack, name) and blocks SIGTERM/SIGINT for the
/// process (they arrive through a signalfd): call it in a process of its own, before any
/// other thread is started.
pub fn main_with_args<I: IntoIterator<Item = String>>(args: I) -> i32 {
    let options = match args::parse(args) {
        Ok(Command::Help) => {
            print!("{}", args::USAGE);
            let _ = std::io::stdout().flush();
            return EXIT_OK;
        }
        Ok(Command::Run(o)) => o,
        Err(e) => return fail(format_args!("{e} (see --help)")),
    };
    if let Some(cpu) = options.cpu {
        if let Err(e) = sys::pin_to_cpu(cpu) {
            return fail(format_args!(
                "cannot pin to CPU {cpu}: {e} (online CPUs: {})",
                online_cpus()
            ));
        }
    }
    match options.rt_priority {
        Some(0) => {}
        Some(priority) => {
            if let Err(e) = sys::set_fifo_priority(priority) {
                return fail(format_args!(
                    "cannot run under SCHED_FIFO priority {priority} (--rt-priority 0 keeps normal scheduling): {e}"
                ));
            }
        }
        None => {
            // The default is best effort: a cgroup without a real-time budget (RT group
            // scheduling) refuses it, and the line still works, only less precisely.
            if let Err(e) = sys::set_fifo_priority(args::DEFAULT_RT_PRIORITY) {
                eprintln!(
                    "{PROGRAM}: warning: cannot run under SCHED_FIFO priority {} ({e}); normal scheduling",
                    args::DEFAULT_RT_PRIORITY
                );
            }
        }
    }
    // In `ps`/`top` the line is named for what it is, also when a Python interpreter runs it.
    let _ = sys::set_thread_name(PROGRAM);
    if let Err(e) = sys::set_timer_slack_ns(1) {
        return fail(format_args!(
            "cannot set the timer slack (prctl PR_SET_TIMERSLACK): {e}"
        ));
    }
    let signals = match sys::termination_signalfd() {
        Ok(fd) => fd,
        Err(e) => {
            return fail(format_args!(
                "cannot set up SIGTERM/SIGINT handling (signalfd): {e}"
            ))
        }
    };
    let mut line = match line::Line::new(&options, signals) {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    // A stats file exists from the start, so even a line killed at once leaves one.
    if let Err(e) = line.write_stats_file() {
        return fail(e);
    }
    {
        let mut out = std::io::stdout().lock();
        if writeln!(out, "ready").and_then(|_| out.flush()).is_err() {
            // Nobody reads stdout: keep going, the caller sees the TUNs and the stats.
        }
    }
    match line.run() {
        Ok(()) => EXIT_OK,
        Err(e) => fail(e),
    }
}
