//! SNMP/MIB counters, named exactly as `nstat` prints them.
//!
//! Linux keeps these per network namespace (`/proc/net/snmp`, `/proc/net/netstat`);
//! tcplab keeps one array per socket and sums them per host, so both per-flow and
//! per-host views exist. The order here is tcplab's own; names are the kernel's
//! (`snmp4_tcp_list[]` and `snmp4_net_list[]` in net/ipv4/proc.c, prefixed as nstat does).
//!
//! Only counters the engine actually counts are declared: a counter printed as 0 reads as
//! "measured, none", so one that is not modelled must not be printed at all (a unit test
//! checks that each one is incremented somewhere). Not modelled today, so absent:
//! `TCPRcvQDrop` (the receiver never drops for lack of memory).
//!
//! A leaf. Imports: nothing of the crate.

macro_rules! mib_counters {
    ($($variant:ident => $name:literal,)*) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum Mib { $($variant,)* }

        impl Mib {
            pub const COUNT: usize = [$($name,)*].len();
            pub const ALL: [Mib; Mib::COUNT] = [$(Mib::$variant,)*];
            /// The name `nstat` prints.
            pub const fn nstat_name(self) -> &'static str {
                match self { $(Mib::$variant => $name,)* }
            }
        }
    };
}

mib_counters! {
    TcpActiveOpens => "TcpActiveOpens",
    TcpPassiveOpens => "TcpPassiveOpens",
    TcpCurrEstab => "TcpCurrEstab",
    TcpInSegs => "TcpInSegs",
    TcpOutSegs => "TcpOutSegs",
    TcpRetransSegs => "TcpRetransSegs",
    DelayedACKs => "TcpExtDelayedACKs",
    TCPTimeouts => "TcpExtTCPTimeouts",
    TCPLossProbes => "TcpExtTCPLossProbes",
    TCPLossProbeRecovery => "TcpExtTCPLossProbeRecovery",
    TCPSackRecovery => "TcpExtTCPSackRecovery",
    TCPFastRetrans => "TcpExtTCPFastRetrans",
    TCPSlowStartRetrans => "TcpExtTCPSlowStartRetrans",
    TCPLostRetransmit => "TcpExtTCPLostRetransmit",
    TCPSackFailures => "TcpExtTCPSackFailures",
    TCPLossFailures => "TcpExtTCPLossFailures",
    TCPSackRecoveryFail => "TcpExtTCPSackRecoveryFail",
    TCPFullUndo => "TcpExtTCPFullUndo",
    TCPPartialUndo => "TcpExtTCPPartialUndo",
    TCPDSACKUndo => "TcpExtTCPDSACKUndo",
    TCPLossUndo => "TcpExtTCPLossUndo",
    TCPSpuriousRTOs => "TcpExtTCPSpuriousRTOs",
    TCPDSACKRecv => "TcpExtTCPDSACKRecv",
    TCPDSACKOldSent => "TcpExtTCPDSACKOldSent",
    TCPSACKReorder => "TcpExtTCPSACKReorder",
    TCPTSReorder => "TcpExtTCPTSReorder",
    TCPOFOQueue => "TcpExtTCPOFOQueue",
    TCPHystartTrainDetect => "TcpExtTCPHystartTrainDetect",
    TCPHystartTrainCwnd => "TcpExtTCPHystartTrainCwnd",
    TCPHystartDelayDetect => "TcpExtTCPHystartDelayDetect",
    TCPHystartDelayCwnd => "TcpExtTCPHystartDelayCwnd",
    TCPSpuriousRtxHostQueues => "TcpExtTCPSpuriousRtxHostQueues",
    TCPWinProbe => "TcpExtTCPWinProbe",
    TCPToZeroWindowAdv => "TcpExtTCPToZeroWindowAdv",
    TCPFromZeroWindowAdv => "TcpExtTCPFromZeroWindowAdv",
    TCPDeliveredCE => "TcpExtTCPDeliveredCE",
    InNoECTPkts => "IpExtInNoECTPkts",
    InECT1Pkts => "IpExtInECT1Pkts",
    InECT0Pkts => "IpExtInECT0Pkts",
    InCEPkts => "IpExtInCEPkts",
}

/// One set of counters (a socket's or a host's).
#[derive(Clone, Debug)]
pub struct MibCounters {
    pub v: [u64; Mib::COUNT],
}

impl Default for MibCounters {
    fn default() -> Self {
        MibCounters { v: [0; Mib::COUNT] }
    }
}

/// Serialized as a mapping from the name nstat prints to the count, in [`Mib::ALL`] order.
impl serde::Serialize for MibCounters {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(Mib::COUNT))?;
        for c in Mib::ALL {
            m.serialize_entry(c.nstat_name(), &self.get(c))?;
        }
        m.end()
    }
}

impl MibCounters {
    #[inline]
    pub fn inc(&mut self, m: Mib) {
        self.v[m as usize] += 1;
    }
    #[inline]
    pub fn add(&mut self, m: Mib, n: u64) {
        self.v[m as usize] += n;
    }
    #[inline]
    pub fn get(&self, m: Mib) -> u64 {
        self.v[m as usize]
    }
    pub fn merge(&mut self, other: &MibCounters) {
        for (a, b) in self.v.iter_mut().zip(other.v.iter()) {
            *a += *b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_nstat_names() {
        assert_eq!(Mib::TCPTimeouts.nstat_name(), "TcpExtTCPTimeouts");
        assert_eq!(Mib::TcpRetransSegs.nstat_name(), "TcpRetransSegs");
        let mut names: Vec<_> = Mib::ALL.iter().map(|m| m.nstat_name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), Mib::COUNT);
    }

    /// Every declared counter is counted somewhere in the engine (outside this file and
    /// outside tests): an uncounted one would print as a misleading 0.
    #[test]
    fn every_counter_is_counted() {
        fn sources(dir: &std::path::Path, out: &mut String) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    sources(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs")
                    && p.file_name()
                        .is_some_and(|n| n != "mib.rs" && n != "tests.rs")
                {
                    let text = std::fs::read_to_string(&p).unwrap();
                    // drop in-file unit tests: a counter asserted there is not counted
                    let code = text.split("#[cfg(test)]").next().unwrap();
                    out.push_str(code);
                }
            }
        }
        let mut code = String::new();
        sources(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut code,
        );
        for m in Mib::ALL {
            let variant = format!("{m:?}");
            let used = code
                .match_indices(&format!("Mib::{variant}"))
                .any(|(i, pat)| {
                    let next = code[i + pat.len()..].chars().next().unwrap_or(' ');
                    !next.is_alphanumeric() && next != '_'
                });
            assert!(
                used,
                "Mib::{variant} ({}) is declared but never counted",
                m.nstat_name()
            );
        }
    }
}
