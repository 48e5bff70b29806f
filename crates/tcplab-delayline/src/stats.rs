//! The line's own measurements and their JSON (ARCH11.md: `{"version":1,"tuns":[{"name",
//! "delay_ns","packets","bytes","drops","queue_max_packets","lateness_ns":{"p50","p99",
//! "max","count"}}],"cpu":N}`; since issue 23 also `queue_max_bytes` and, in `lateness_ns`,
//! `p90` and `over_1ms`, since issue 28 `ce_marks`: keys added, none changed, so version 1
//! readers still read it),
//! written atomically (temp file + rename).
//!
//! Per TUN:
//! - `packets`, `bytes`: packets written back into the TUN (forwarded) and their IP bytes.
//! - `drops`: packets the line lost: refused at the queue limit, a failed write, or dropped
//!   by the kernel because the line did not read the TUN fast enough (the device's
//!   `tx_dropped`, from /proc/net/dev of the line's own namespace). Packets still held
//!   when the line stops are not counted anywhere.
//! - `queue_max_packets`, `queue_max_bytes`: the deepest the queue got, in packets and in
//!   IP bytes held (each its own peak).
//! - `ce_marks` (issue 28): packets the TUN's step marker counted as CE marks
//!   (`--ce-threshold`, `marker.rs`: an ECT packet it set to CE, or a CE one it found);
//!   0 without a marker.
//! - `lateness_ns`: write time minus due time of every written packet (quantiles from
//!   [`crate::histogram::Histogram`]). This is the delay the line adds beyond `delay_ns`
//!   after it read the packet; `over_1ms` counts the packets later than 1 ms (exactly, not
//!   from the histogram's buckets). The time a packet waits in the TUN's own queue before the
//!   read is not visible from user space (kept small by reading until EAGAIN).
#![forbid(unsafe_code)]

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use crate::histogram::Histogram;

/// Counters of one TUN (one direction of the wire).
#[derive(Clone)]
pub struct TunStats {
    pub name: String,
    pub delay_ns: u64,
    pub packets: u64,
    pub bytes: u64,
    /// Drops the line itself decided (queue limit, write errors).
    pub line_drops: u64,
    /// The kernel's tx_dropped of the device (read at most once a second).
    pub kernel_drops: u64,
    pub queue_max_packets: u64,
    pub queue_max_bytes: u64,
    pub lateness_ns: Histogram,
    /// Packets written more than LATE_NS after they were due.
    pub late_over_1ms: u64,
    /// CE marks of the step marker (`marker.rs`).
    pub ce_marks: u64,
}

/// The lateness `over_1ms` counts beyond (kernel mode's validity limit for the p99).
pub const LATE_NS: u64 = 1_000_000;

impl TunStats {
    pub fn new(name: &str, delay_ns: u64) -> TunStats {
        TunStats {
            name: name.to_string(),
            delay_ns,
            packets: 0,
            bytes: 0,
            line_drops: 0,
            kernel_drops: 0,
            queue_max_packets: 0,
            queue_max_bytes: 0,
            lateness_ns: Histogram::new(),
            late_over_1ms: 0,
            ce_marks: 0,
        }
    }

    /// Records one packet written `late_ns` after it was due, `len_bytes` long.
    pub fn record_write(&mut self, len_bytes: usize, late_ns: u64) {
        self.packets += 1;
        self.bytes += len_bytes as u64;
        self.lateness_ns.record(late_ns);
        if late_ns > LATE_NS {
            self.late_over_1ms += 1;
        }
    }

    /// Records the queue's depth after a packet was queued.
    pub fn record_depth(&mut self, packets: usize, bytes: u64) {
        self.queue_max_packets = self.queue_max_packets.max(packets as u64);
        self.queue_max_bytes = self.queue_max_bytes.max(bytes);
    }

    pub fn drops(&self) -> u64 {
        self.line_drops + self.kernel_drops
    }
}

/// Minimal JSON string escaping (interface names are printable ASCII; paths never appear).
fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The stats JSON (one line, then a newline).
pub fn to_json(tuns: &[&TunStats], cpu: Option<usize>) -> String {
    let mut out = String::with_capacity(256 * tuns.len() + 64);
    out.push_str("{\"version\":1,\"tuns\":[");
    for (i, t) in tuns.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"name\":");
        json_str(&mut out, &t.name);
        let h = &t.lateness_ns;
        let _ = write!(
            out,
            ",\"delay_ns\":{},\"packets\":{},\"bytes\":{},\"drops\":{},\"queue_max_packets\":{},\
             \"queue_max_bytes\":{},\"ce_marks\":{},\"lateness_ns\":{{\"p50\":{},\"p90\":{},\"p99\":{},\
             \"max\":{},\"count\":{},\"over_1ms\":{}}}}}",
            t.delay_ns,
            t.packets,
            t.bytes,
            t.drops(),
            t.queue_max_packets,
            t.queue_max_bytes,
            t.ce_marks,
            h.quantile(0.50),
            h.quantile(0.90),
            h.quantile(0.99),
            h.max(),
            h.count(),
            t.late_over_1ms
        );
    }
    out.push_str("],\"cpu\":");
    match cpu {
        Some(c) => {
            let _ = write!(out, "{c}");
        }
        None => out.push_str("null"),
    }
    out.push_str("}\n");
    out
}

/// Writes `text` to `path` atomically: readers see the old file or the new one, never a
/// half-written one (a line killed with SIGKILL leaves its last complete stats).
pub fn write_atomic(path: &Path, text: &str) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path)
}

/// Fills in `kernel_drops` of every TUN from this namespace's /proc/self/net/dev (the
/// calling process's network namespace, whatever /sys shows); unchanged when unreadable.
pub fn refresh_kernel_drops(tuns: &mut [TunStats]) {
    let Ok(text) = std::fs::read_to_string("/proc/self/net/dev") else {
        return;
    };
    for t in tuns {
        if let Some(d) = tx_dropped_from_proc_net_dev(&text, &t.name) {
            t.kernel_drops = d;
        }
    }
}

/// The stats of `tuns` (kernel drops refreshed) written atomically to `path`.
pub fn write_file(path: &Path, tuns: &mut [TunStats], cpu: Option<usize>) -> io::Result<()> {
    refresh_kernel_drops(tuns);
    let all: Vec<&TunStats> = tuns.iter().collect();
    write_atomic(path, &to_json(&all, cpu)).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot write stats {}: {e}", path.display()),
        )
    })
}

/// The `tx_dropped` counter of every device named in `names`, from the text of
/// /proc/net/dev (`NAME: rx_bytes rx_packets rx_errs rx_drop rx_fifo rx_frame rx_compressed
/// rx_multicast tx_bytes tx_packets tx_errs tx_drop ...`). Missing devices give None.
pub fn tx_dropped_from_proc_net_dev(text: &str, name: &str) -> Option<u64> {
    for line in text.lines() {
        let Some((dev, fields)) = line.split_once(':') else {
            continue;
        };
        if dev.trim() != name {
            continue;
        }
        return fields
            .split_whitespace()
            .nth(11)
            .and_then(|f| f.parse().ok());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_contract_keys() {
        let mut t = TunStats::new("tab", 10_000_000);
        t.line_drops = 1;
        t.kernel_drops = 2;
        t.record_depth(2, 3000);
        t.record_depth(1, 1500); // peaks are kept
        for (len, late) in [(1500usize, 10u64), (1500, 20), (1500, LATE_NS + 1)] {
            t.record_write(len, late);
        }
        t.record_write(0, LATE_NS); // exactly 1 ms is not over it
        t.ce_marks = 5;
        let j = to_json(&[&t, &TunStats::new("t\"b", 5)], Some(1));
        assert_eq!(
            j,
            "{\"version\":1,\"tuns\":[{\"name\":\"tab\",\"delay_ns\":10000000,\"packets\":4,\"bytes\":4500,\
             \"drops\":3,\"queue_max_packets\":2,\"queue_max_bytes\":3000,\"ce_marks\":5,\"lateness_ns\":{\"p50\":20,\
             \"p90\":1000001,\"p99\":1000001,\"max\":1000001,\"count\":4,\"over_1ms\":1}},\
             {\"name\":\"t\\\"b\",\"delay_ns\":5,\"packets\":0,\"bytes\":0,\"drops\":0,\"queue_max_packets\":0,\
             \"queue_max_bytes\":0,\"ce_marks\":0,\"lateness_ns\":{\"p50\":0,\"p90\":0,\"p99\":0,\"max\":0,\"count\":0,\
             \"over_1ms\":0}}],\"cpu\":1}\n"
        );
        assert!(to_json(&[], None).ends_with("\"cpu\":null}\n"));
    }

    #[test]
    fn proc_net_dev_tx_dropped() {
        let text = "Inter-|   Receive                                                |  Transmit\n \
            face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    \
            lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0\n  \
            tab: 1500 1 0 0 0 0 0 0 3000 2 0 17 0 0 0 0\n";
        assert_eq!(tx_dropped_from_proc_net_dev(text, "tab"), Some(17));
        assert_eq!(tx_dropped_from_proc_net_dev(text, "lo"), Some(0));
        assert_eq!(tx_dropped_from_proc_net_dev(text, "ta"), None);
    }

    #[test]
    fn atomic_write_replaces_the_file() {
        let dir =
            std::env::temp_dir().join(format!("tcplab-delayline-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("s.json");
        write_atomic(&p, "one").unwrap();
        write_atomic(&p, "two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert!(!dir.join("s.json.tmp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
