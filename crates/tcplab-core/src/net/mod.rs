//! The network: nodes, one-way links and static routes.
pub mod link;
pub mod loss;
pub mod qdisc;
pub mod routing;

use crate::config::NodeKind;
use crate::event::EventQueue;
use crate::packet::Packet;
use link::{Link, TxOutcome};
use loss::LossVerdict;
use routing::{Routes, NO_ROUTE};

/// Where data packets went, for the end-of-run conservation check.
#[derive(Clone, Debug, Default)]
pub struct DataAccounting {
    pub sent: u64,
    pub received: u64,
    pub dropped_queue: u64,
    pub dropped_loss: u64,
    pub dropped_drop_list: u64,
    pub dropped_no_route: u64,
}

pub struct Network {
    pub links: Vec<Link>,
    pub routes: Routes,
    pub kinds: Vec<NodeKind>,
    pub data: DataAccounting,
    /// Packets that completed serialization on any link.
    pub packets_transmitted: u64,
}

impl Network {
    /// A host hands a packet to its egress link. Returns false if it was dropped at once
    /// (local qdisc full, or no route).
    #[inline]
    pub fn send_from_host(&mut self, node: u32, pkt: Packet, now_ns: u64, ev: &mut EventQueue) -> bool {
        if pkt.is_data() {
            self.data.sent += 1;
        }
        self.forward(node, pkt, now_ns, ev)
    }

    /// Route `pkt` out of `node`: enqueue on the next-hop link.
    #[inline]
    pub fn forward(&mut self, node: u32, pkt: Packet, now_ns: u64, ev: &mut EventQueue) -> bool {
        let l = self.routes.next_hop(node, pkt.dst_node);
        if l == NO_ROUTE {
            if pkt.is_data() {
                self.data.dropped_no_route += 1;
            }
            return false;
        }
        match self.links[l as usize].enqueue(pkt, now_ns, l, ev) {
            Ok(()) => true,
            Err(p) => {
                if p.is_data() {
                    self.data.dropped_queue += 1;
                }
                false
            }
        }
    }

    /// A link finished serializing; returns the packet (for TX completion) and whether it
    /// survived the wire.
    #[inline]
    pub fn on_tx_done(&mut self, link: u32, now_ns: u64, ev: &mut EventQueue) -> (Packet, bool) {
        self.packets_transmitted += 1;
        match self.links[link as usize].on_tx_done(now_ns, link, ev) {
            TxOutcome::Sent(p) => (p, true),
            TxOutcome::Lost(p, v) => {
                if p.is_data() {
                    match v {
                        LossVerdict::Listed => self.data.dropped_drop_list += 1,
                        _ => self.data.dropped_loss += 1,
                    }
                }
                (p, false)
            }
        }
    }

    /// Data packets currently inside links (queued, serializing or propagating).
    pub fn data_in_flight(&self) -> u64 {
        self.links.iter().map(|l| l.packets_held().filter(|p| p.is_data()).count() as u64).sum()
    }
}
