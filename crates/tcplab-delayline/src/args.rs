//! Command line of `tcplab-delayline` (the contract in ARCH11.md, "Processes and files").
#![forbid(unsafe_code)]

use std::path::PathBuf;

/// The usage text printed by `--help`.
pub const USAGE: &str = "\
usage: tcplab-delayline --tun NAME:DELAY_NS[:RATE_BPS:OVERHEAD] [--tun ...] [--cpu N]
                        [--stats PATH] [--queue-limit PACKETS] [--rt-priority N]
                        [--ce-threshold NAME:NS ...]

Creates one TUN device per --tun (layer 3, no packet information, gone when the
process exits), prints `ready` once they all exist, then holds every packet read
from a TUN for DELAY_NS nanoseconds and writes it back into the same TUN. With
RATE_BPS, a TUN is also a link that serialises one packet at a time at that rate:
a packet of L bytes (IP) starts when it arrives or when the one before it is done,
takes (L + OVERHEAD) * 8 / RATE_BPS seconds, and then its delay.

  --tun NAME:DELAY_NS[:RATE_BPS:OVERHEAD]
                          a TUN device, its one-way delay in ns and optionally
                          its rate in bit/s and framing bytes per packet
                          (repeatable)
  --cpu N                 pin the process to CPU N
  --stats PATH            write the stats JSON to PATH every second and on exit
                          (SIGTERM/SIGINT), and to PATH.snapshot on SIGUSR1 (the
                          counters of that moment); without it, print it on
                          stdout at exit (SIGUSR1 is then ignored)
  --queue-limit PACKETS   packets held per TUN at most; beyond it a packet is
                          dropped and counted (default 100000)
  --ce-threshold NAME:NS  on TUN NAME (one with a RATE_BPS), set CE in the IPv4
                          header of every ECN-capable packet that waited more
                          than NS nanoseconds for the wire, as fq_codel's
                          ce_threshold does (CoDel's 1024-ns ticks), and count
                          it (stats: ce_marks) (repeatable, once per TUN)
  --rt-priority N         run under SCHED_FIFO at priority N (1-99), so no normal
                          task on the CPU delays a packet; 0 keeps normal
                          scheduling. Default: 1 where allowed, else a warning on
                          stderr and normal scheduling
  --help                  this text
";

/// Default per-TUN queue limit in packets (1.2 s of 1500-byte packets at 1 Gbit/s).
pub const DEFAULT_QUEUE_LIMIT_PACKETS: usize = 100_000;

/// Default SCHED_FIFO priority (the lowest real-time one: above every normal task).
pub const DEFAULT_RT_PRIORITY: i32 = 1;

/// The longest interface name Linux accepts (IFNAMSIZ 16, minus the NUL).
pub const MAX_IFNAME_BYTES: usize = 15;

/// One direction of a wire: a TUN device, its one-way delay and, optionally, the rate at
/// which it serialises packets (0: none) with the framing bytes each adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunSpec {
    pub name: String,
    pub delay_ns: u64,
    pub rate_bps: u64,
    pub overhead_bytes: u32,
    /// `--ce-threshold NAME:NS`: the step marker's sojourn threshold (None: no marking).
    pub ce_threshold_ns: Option<u64>,
}

/// The parsed options of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub tuns: Vec<TunSpec>,
    pub cpu: Option<usize>,
    pub stats_path: Option<PathBuf>,
    pub queue_limit_packets: usize,
    /// SCHED_FIFO priority (0 = normal scheduling); None = DEFAULT_RT_PRIORITY where the
    /// system allows it (no --rt-priority given).
    pub rt_priority: Option<i32>,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Run(Options),
    Help,
}

/// Parses the arguments after the program name. The error is one line naming the option,
/// the value and what was expected.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Command, String> {
    let mut tuns: Vec<TunSpec> = Vec::new();
    let mut cpu = None;
    let mut stats_path = None;
    let mut queue_limit_packets = DEFAULT_QUEUE_LIMIT_PACKETS;
    let mut rt_priority = None;
    let mut ce_thresholds: Vec<(String, String, u64)> = Vec::new();
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if flag == "--help" || flag == "-h" {
            return Ok(Command::Help);
        }
        if !matches!(
            flag.as_str(),
            "--tun" | "--cpu" | "--stats" | "--queue-limit" | "--rt-priority" | "--ce-threshold"
        ) {
            return Err(format!(
                "unknown argument {arg:?}; expected --tun, --cpu, --stats, --queue-limit, --rt-priority, \
                 --ce-threshold or --help"
            ));
        }
        let value = match inline {
            Some(v) => v,
            None => it.next().ok_or_else(|| format!("{flag} needs a value"))?,
        };
        match flag.as_str() {
            "--tun" => {
                let spec = parse_tun(&value)?;
                if tuns.iter().any(|t| t.name == spec.name) {
                    return Err(format!(
                        "--tun {value:?}: the TUN name {:?} is given twice",
                        spec.name
                    ));
                }
                tuns.push(spec);
            }
            "--cpu" => {
                cpu = Some(value.parse::<usize>().map_err(|_| {
                    format!("--cpu {value:?}: not a CPU number; expected an integer >= 0")
                })?);
            }
            "--stats" => {
                if value.is_empty() {
                    return Err("--stats \"\": expected a file path".to_string());
                }
                stats_path = Some(PathBuf::from(value));
            }
            "--queue-limit" => {
                queue_limit_packets = match value.parse::<usize>() {
                    Ok(n) if n >= 1 => n,
                    _ => {
                        return Err(format!(
                            "--queue-limit {value:?}: expected a packet count >= 1"
                        ))
                    }
                };
            }
            "--ce-threshold" => {
                let (name, ns) = parse_ce_threshold(&value)?;
                if ce_thresholds.iter().any(|(n, _, _)| *n == name) {
                    return Err(format!(
                        "--ce-threshold {value:?}: TUN {name:?} has a threshold already"
                    ));
                }
                ce_thresholds.push((name, value, ns));
            }
            "--rt-priority" => {
                rt_priority = match value.parse::<i32>() {
                    Ok(n) if (0..=99).contains(&n) => Some(n),
                    _ => {
                        return Err(format!(
                            "--rt-priority {value:?}: expected 0 (normal scheduling) or 1 to 99"
                        ))
                    }
                };
            }
            _ => unreachable!(),
        }
    }
    if tuns.is_empty() {
        return Err("no --tun given; expected at least one --tun NAME:DELAY_NS".to_string());
    }
    for (name, value, ns) in ce_thresholds {
        let Some(tun) = tuns.iter_mut().find(|t| t.name == name) else {
            return Err(format!(
                "--ce-threshold {value:?}: no --tun is named {name:?}"
            ));
        };
        if tun.rate_bps == 0 {
            return Err(format!(
                "--ce-threshold {value:?}: TUN {name:?} has no rate; a packet waits for the wire \
                 only on a TUN that serialises (--tun NAME:DELAY_NS:RATE_BPS:OVERHEAD)"
            ));
        }
        tun.ce_threshold_ns = Some(ns);
    }
    Ok(Command::Run(Options {
        tuns,
        cpu,
        stats_path,
        queue_limit_packets,
        rt_priority,
    }))
}

/// The largest threshold: fq_codel's, a u32 of microseconds (tc's `ce_threshold`).
pub const MAX_CE_THRESHOLD_NS: u64 = u32::MAX as u64 * 1000;

/// `NAME:NS`, e.g. `tab:3000000`: a TUN's CE marking threshold in ns (1 to
/// [`MAX_CE_THRESHOLD_NS`]).
fn parse_ce_threshold(value: &str) -> Result<(String, u64), String> {
    let Some((name, ns)) = value.split_once(':') else {
        return Err(format!(
            "--ce-threshold {value:?}: expected NAME:NS, e.g. tab:3000000"
        ));
    };
    match ns.parse::<u64>() {
        Ok(n) if (1..=MAX_CE_THRESHOLD_NS).contains(&n) => Ok((name.to_string(), n)),
        _ => Err(format!(
            "--ce-threshold {value:?}: {ns:?} is not a threshold; expected an integer number of \
             nanoseconds from 1 to {MAX_CE_THRESHOLD_NS}"
        )),
    }
}

/// `NAME:DELAY_NS[:RATE_BPS:OVERHEAD]`, e.g. `tab:50000000` or `tab:50000000:5000000:14`.
fn parse_tun(value: &str) -> Result<TunSpec, String> {
    let parts: Vec<&str> = value.split(':').collect();
    let (name, delay, rate) = match parts[..] {
        [name, delay] => (name, delay, None),
        [name, delay, rate, overhead] => (name, delay, Some((rate, overhead))),
        _ => {
            return Err(format!(
                "--tun {value:?}: expected NAME:DELAY_NS or NAME:DELAY_NS:RATE_BPS:OVERHEAD, \
                 e.g. tab:50000000 or tab:50000000:5000000:14"
            ))
        }
    };
    let name_ok = !name.is_empty()
        && name.len() <= MAX_IFNAME_BYTES
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'/' && b != b':' && b != b'%');
    if !name_ok {
        return Err(format!(
            "--tun {value:?}: {name:?} is not a usable interface name; expected 1 to {MAX_IFNAME_BYTES} \
             printable characters without '/', ':' or '%'"
        ));
    }
    let delay_ns = delay.parse::<u64>().map_err(|_| {
        format!(
            "--tun {value:?}: {delay:?} is not a delay; expected an integer number of nanoseconds"
        )
    })?;
    let (rate_bps, overhead_bytes) = match rate {
        None => (0, 0),
        Some((r, o)) => {
            let rate_bps = match r.parse::<u64>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    return Err(format!(
                        "--tun {value:?}: {r:?} is not a rate; expected an integer number of \
                         bits per second >= 1"
                    ))
                }
            };
            let overhead_bytes = o.parse::<u32>().ok().filter(|&n| n <= 1000).ok_or_else(|| {
                format!("--tun {value:?}: {o:?} is not a framing overhead; expected 0 to 1000 bytes")
            })?;
            (rate_bps, overhead_bytes)
        }
    };
    Ok(TunSpec {
        name: name.to_string(),
        delay_ns,
        rate_bps,
        overhead_bytes,
        ce_threshold_ns: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn full_command_line() {
        let cmd = parse(args(&[
            "--tun",
            "tab:10000000",
            "--tun=tba:20:5000000:14",
            "--cpu",
            "1",
            "--stats",
            "/tmp/s.json",
            "--queue-limit",
            "64",
            "--rt-priority",
            "0",
        ]))
        .unwrap();
        assert_eq!(
            cmd,
            Command::Run(Options {
                tuns: vec![
                    TunSpec {
                        name: "tab".into(),
                        delay_ns: 10_000_000,
                        rate_bps: 0,
                        overhead_bytes: 0,
                        ce_threshold_ns: None,
                    },
                    TunSpec {
                        name: "tba".into(),
                        delay_ns: 20,
                        rate_bps: 5_000_000,
                        overhead_bytes: 14,
                        ce_threshold_ns: None,
                    },
                ],
                cpu: Some(1),
                stats_path: Some(PathBuf::from("/tmp/s.json")),
                queue_limit_packets: 64,
                rt_priority: Some(0),
            })
        );
    }

    #[test]
    fn defaults() {
        let Command::Run(o) = parse(args(&["--tun", "t:0"])).unwrap() else {
            panic!()
        };
        assert_eq!(o.queue_limit_packets, DEFAULT_QUEUE_LIMIT_PACKETS);
        assert_eq!(o.cpu, None);
        assert_eq!(o.stats_path, None);
        assert_eq!(o.rt_priority, None);
    }

    #[test]
    fn help_wins() {
        assert_eq!(parse(args(&["--tun", "t:1", "--help"])), Ok(Command::Help));
        assert_eq!(parse(args(&["-h"])), Ok(Command::Help));
    }

    #[test]
    fn errors_name_the_option_and_value() {
        let e = |a: &[&str]| parse(args(a)).unwrap_err();
        assert!(e(&[]).contains("no --tun"));
        assert!(e(&["--tun", "t:1ms"]).contains("\"1ms\" is not a delay"));
        assert!(e(&["--tun", "t:-1"]).contains("is not a delay"));
        assert!(e(&["--tun", "a-very-long-name-x:1"]).contains("not a usable interface name"));
        assert!(e(&["--tun", ":1"]).contains("not a usable interface name"));
        assert!(e(&["--tun", "a/b:1"]).contains("not a usable interface name"));
        assert!(e(&["--tun", "t:1", "--tun", "t:2"]).contains("given twice"));
        assert!(e(&["--tun", "t:1:5"]).contains("expected NAME:DELAY_NS or"));
        assert!(e(&["--tun", "t:1:0:14"]).contains("\"0\" is not a rate"));
        assert!(e(&["--tun", "t:1:5Mbit:14"]).contains("is not a rate"));
        assert!(e(&["--tun", "t:1:5000000:x"]).contains("is not a framing overhead"));
        assert!(e(&["--tun", "t:1", "--cpu", "x"]).starts_with("--cpu \"x\""));
        assert!(e(&["--tun", "t:1", "--queue-limit", "0"]).contains(">= 1"));
        assert!(e(&["--tun", "t:1", "--cpu"]).contains("needs a value"));
        assert!(e(&["--tun", "t:1", "--rt-priority", "100"]).contains("1 to 99"));
        assert!(e(&["--tun", "t:1", "--bogus"]).contains("unknown argument \"--bogus\""));
    }

    #[test]
    fn ce_threshold_on_a_serialising_tun() {
        let Command::Run(o) = parse(args(&[
            "--tun",
            "tab:50000000:5000000:14",
            "--tun",
            "tba:50000000",
            "--ce-threshold",
            "tab:3000000",
        ]))
        .unwrap() else {
            panic!()
        };
        assert_eq!(o.tuns[0].ce_threshold_ns, Some(3_000_000));
        assert_eq!(o.tuns[1].ce_threshold_ns, None);
        let e = |a: &[&str]| parse(args(a)).unwrap_err();
        let tun = ["--tun", "tab:1:5000000:14", "--tun", "tba:1"];
        let with = |extra: &[&'static str]| {
            let mut v: Vec<&str> = tun.to_vec();
            v.extend_from_slice(extra);
            v
        };
        assert!(e(&with(&["--ce-threshold", "tba:1000"])).contains("TUN \"tba\" has no rate"));
        assert!(e(&with(&["--ce-threshold", "tx:1000"])).contains("no --tun is named \"tx\""));
        assert!(e(&with(&["--ce-threshold", "tab:0"])).contains("is not a threshold"));
        assert!(e(&with(&["--ce-threshold", "tab:3ms"])).contains("is not a threshold"));
        assert!(e(&with(&["--ce-threshold", "tab"])).contains("expected NAME:NS"));
        assert!(e(&with(&[
            "--ce-threshold",
            "tab:1",
            "--ce-threshold",
            "tab:2"
        ]))
        .contains("has a threshold already"));
    }

    #[test]
    fn fifteen_byte_names_are_the_limit() {
        assert!(parse(args(&["--tun", "abcdefghijklmno:1"])).is_ok());
        assert!(parse(args(&["--tun", "abcdefghijklmnop:1"])).is_err());
    }
}
