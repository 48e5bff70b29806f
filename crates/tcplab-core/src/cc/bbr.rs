//! BBR: placeholder until the port of net/ipv4/tcp_bbr.c lands.
use super::CongestionOps;
use crate::config::CcParams;
use crate::rng::Rng;
use crate::tcp::sock::TcpSock;

#[derive(Clone, Debug)]
pub struct Bbr {
    reno: super::reno::Reno,
}

impl Bbr {
    pub fn new(_p: &CcParams, _rng: Rng) -> Self {
        Bbr { reno: super::reno::Reno }
    }
}

impl CongestionOps for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
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
