//! Every unsafe system call of the delay line, each behind a small safe function.
//!
//! std wraps `read`/`write`/`open` (used as they are, through `File`), but not the TUN
//! ioctl, `sched_setaffinity`, `prctl(PR_SET_TIMERSLACK)`, `signalfd`, `ppoll` or a raw
//! `clock_gettime`. Each unsafe block below says why it is sound; nothing else in the crate
//! uses `unsafe`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

/// CLOCK_MONOTONIC in nanoseconds (the clock every tcplab kernel-mode process shares; it is
/// the same in every network namespace).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call;
    // CLOCK_MONOTONIC always exists on Linux, so the call cannot fail.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    debug_assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Creates the TUN device `name` (layer 3, no packet-information header: every read
/// returns one IP packet, every write injects one) and returns its non-blocking fd.
/// Not persistent: the device disappears when the fd is closed (the process exits).
pub fn open_tun(name: &str) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open("/dev/net/tun")
        .map_err(|e| io::Error::new(e.kind(), format!("cannot open /dev/net/tun: {e}")))?;
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("bad interface name {name:?}"),
        ));
    }
    // SAFETY: ifreq is plain old data (a name array and a union of integers/sockaddrs);
    // the all-zero bit pattern is a valid value of it.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
    // SAFETY: the fd is an open /dev/net/tun owned by `file` (alive for the call);
    // TUNSETIFF reads and writes a `struct ifreq`, and `req` is one, valid and
    // NUL-terminated (name shorter than IFNAMSIZ, rest zero).
    let rc = unsafe {
        libc::ioctl(
            file.as_raw_fd(),
            libc::TUNSETIFF,
            &mut req as *mut libc::ifreq,
        )
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("cannot create TUN device {name}: {e}"),
        ));
    }
    Ok(file)
}

/// Pins the calling thread to CPU `cpu` (threads created later inherit it).
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    pin_to_cpus(&[cpu])
}

/// Restricts the calling thread to the CPUs in `cpus` (each < CPU_SETSIZE).
pub fn pin_to_cpus(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        // CPU_SETSIZE is 1024; CPU_SET on a larger index would write out of bounds.
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: `cpu` < CPU_SETSIZE (checked above), so CPU_SET stays inside `set`.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: pid 0 = the calling thread; `set` is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The number of CPUs online (sysconf _SC_NPROCESSORS_ONLN), at least 1.
pub fn online_cpu_count() -> usize {
    // SAFETY: sysconf takes a constant name and touches no memory.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n < 1 {
        1
    } else {
        n as usize
    }
}

/// Runs the calling process under SCHED_FIFO at `priority` (1..=99): it then preempts
/// every normal (CFS) task on its CPU as soon as it is runnable; the kernel's RT throttling
/// (sched_rt_runtime_us, 95 % of each second by default) still leaves the others a share.
pub fn set_fifo_priority(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 = the calling thread; `param` is a valid sched_param for the call.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Puts the calling thread back under normal scheduling (SCHED_OTHER).
pub fn set_normal_scheduling() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 = the calling thread; `param` is a valid sched_param for the call.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// sched_yield(2): under SCHED_FIFO, lets another runnable task of the same priority run
/// (another delay line pinned to the same CPU); returns at once when there is none.
pub fn yield_cpu() {
    // SAFETY: sched_yield takes no arguments, touches no memory and cannot fail on Linux.
    unsafe { libc::sched_yield() };
}

/// Sets this thread's timer slack (how late the kernel may fire its timers to batch
/// wake-ups; 50 us by default) to `slack_ns`.
pub fn set_timer_slack_ns(slack_ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long by value and touches no memory.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, slack_ns as libc::c_ulong, 0, 0, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Names the calling thread (`comm` in /proc, what `ps` and `top` show; the kernel keeps 15
/// bytes).
pub fn set_thread_name(name: &str) -> io::Result<()> {
    let mut buf = [0u8; 16];
    for (dst, &src) in buf.iter_mut().zip(name.as_bytes().iter().take(15)) {
        *dst = if src == 0 { b'?' } else { src };
    }
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes from the
    // pointer; `buf` is 16 bytes, its last byte always 0, alive for the call.
    let rc = unsafe { libc::prctl(libc::PR_SET_NAME, buf.as_ptr() as libc::c_ulong, 0, 0, 0) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Turns SIGTERM and SIGINT (stop) and SIGUSR1 (write a snapshot of the stats) into
/// readable events on a non-blocking signalfd: they are reset to their default action (so
/// an ignored disposition inherited from the parent cannot discard them), blocked for the
/// process, and delivered through the returned fd.
pub fn termination_signalfd() -> io::Result<OwnedFd> {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it fully before use.
    let mut mask: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `mask` is a valid sigset_t; SIGTERM/SIGINT/SIGUSR1 are valid signal numbers.
    unsafe {
        libc::sigemptyset(&mut mask);
        libc::sigaddset(&mut mask, libc::SIGTERM);
        libc::sigaddset(&mut mask, libc::SIGINT);
        libc::sigaddset(&mut mask, libc::SIGUSR1);
    }
    for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGUSR1] {
        // SAFETY: SIG_DFL is a valid disposition for these signals; no handler code runs.
        if unsafe { libc::signal(sig, libc::SIG_DFL) } == libc::SIG_ERR {
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: `mask` is initialised; a null old-set pointer is allowed. Called before any
    // other thread exists, so every later thread inherits the mask.
    if unsafe { libc::sigprocmask(libc::SIG_BLOCK, &mask, std::ptr::null_mut()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: -1 asks for a new signalfd; `mask` is initialised; flags are valid.
    let fd = unsafe { libc::signalfd(-1, &mask, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by signalfd, is open, and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One `struct pollfd` asking for readability of `fd`.
pub fn poll_in(fd: RawFd) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

/// ppoll(2) on `fds` for at most `timeout_ns` (None: until an fd is ready). Returns the
/// number of ready fds (0 on timeout or EINTR); `revents` of each entry is filled in.
pub fn ppoll(fds: &mut [libc::pollfd], timeout_ns: Option<u64>) -> io::Result<usize> {
    let ts = timeout_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `fds` is a valid, writable array of `fds.len()` pollfds for the call;
    // `ts_ptr` is null or points at `ts`, alive until the call returns; a null sigmask
    // keeps the current mask (SIGTERM/SIGINT stay blocked: they arrive via the signalfd).
    let rc = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            ts_ptr,
            std::ptr::null(),
        )
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(rc as usize)
}
