//! PLACEHOLDER (integration skeleton): `fq_codel` behaves as an unlimited FIFO until its
//! model lands (issue 8). Replaced wholesale by the real qdisc.

use crate::config::{FqCodelConfig, QueueConfig};
use crate::net::qdisc::fifo::HeldFifo;
use crate::net::qdisc::{Dequeue, QdiscStats, TimedQdisc};
use crate::packet::Packet;

pub fn validate(_cfg: &FqCodelConfig, _at: &str) -> Result<(), String> {
    Ok(())
}

#[derive(Debug)]
pub struct FqCodel {
    q: HeldFifo,
}

impl FqCodel {
    pub fn new(_cfg: &FqCodelConfig) -> FqCodel {
        FqCodel { q: HeldFifo::new(&QueueConfig::Pfifo { limit_packets: u32::MAX }) }
    }
}

impl TimedQdisc for FqCodel {
    fn kind(&self) -> &'static str {
        "fq_codel"
    }
    fn enqueue(&mut self, pkt: Packet, len_bytes: u32, now_ns: u64, dropped: &mut Vec<Packet>) -> bool {
        self.q.enqueue(pkt, len_bytes, now_ns, dropped)
    }
    fn dequeue(&mut self, now_ns: u64, dropped: &mut Vec<Packet>) -> Dequeue {
        self.q.dequeue(now_ns, dropped)
    }
    fn stats(&self) -> &QdiscStats {
        self.q.stats()
    }
    fn for_each_packet(&self, f: &mut dyn FnMut(&Packet)) {
        self.q.for_each_packet(f)
    }
}
