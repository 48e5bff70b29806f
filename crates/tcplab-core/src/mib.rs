//! SNMP/MIB counters, named exactly as `nstat` prints them.
//!
//! Linux keeps these per network namespace (`/proc/net/snmp`, `/proc/net/netstat`);
//! tcplab keeps one array per socket and sums them per host, so both per-flow and
//! per-host views exist. The order here is tcplab's own; names are the kernel's
//! (`snmp4_tcp_list[]` and `snmp4_net_list[]` in net/ipv4/proc.c, prefixed as nstat does).

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
    TCPRcvQDrop => "TcpExtTCPRcvQDrop",
    TCPWinProbe => "TcpExtTCPWinProbe",
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
}
