//! CUBIC: placeholder until the port of net/ipv4/tcp_cubic.c lands.
use super::CongestionOps;
use crate::config::CcParams;
use crate::tcp::sock::TcpSock;

#[derive(Clone, Debug)]
pub struct Cubic {
    reno: super::reno::Reno,
}

impl Cubic {
    pub fn new(_p: &CcParams) -> Self {
        Cubic { reno: super::reno::Reno }
    }
}

impl CongestionOps for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }
    fn ssthresh(&mut self, tp: &mut TcpSock) -> u32 {
        self.reno.ssthresh(tp)
    }
    fn cong_avoid(&mut self, tp: &mut TcpSock, ack: u64, acked: u32) {
        self.reno.cong_avoid(tp, ack, acked)
    }
    fn undo_cwnd(&mut self, tp: &mut TcpSock) -> u32 {
        self.reno.undo_cwnd(tp)
    }
}
