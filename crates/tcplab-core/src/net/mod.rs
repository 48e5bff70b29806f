//! The network: nodes, one-way links and static routes.
pub mod link;
pub mod loss;
pub mod qdisc;
pub mod routing;

use crate::event::EventQueue;
use crate::packet::Packet;
use link::{Enqueued, Link, TxCompletion};
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
    pub data: DataAccounting,
    /// Packets that completed serialization on any link (each hop counts).
    pub packets_transmitted: u64,
    /// Packets hosts sent into the network (data and ACKs, each counted once).
    pub host_packets: u64,
}

impl Network {
    /// A host hands a packet to its egress link. Returns false if it was dropped at once
    /// (local qdisc full, or no route).
    #[inline]
    pub fn send_from_host(&mut self, node: u32, pkt: Packet, now_ns: u64, ev: &mut EventQueue) -> bool {
        self.host_packets += 1;
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
        let is_data = pkt.is_data();
        match self.links[l as usize].enqueue(pkt, now_ns, l, ev) {
            Enqueued::Accepted => {
                self.packets_transmitted += 1;
                true
            }
            Enqueued::Lost(v) => {
                // Serialized, then lost on the wire: to the sender it was sent.
                self.packets_transmitted += 1;
                if is_data {
                    match v {
                        LossVerdict::Listed => self.data.dropped_drop_list += 1,
                        _ => self.data.dropped_loss += 1,
                    }
                }
                true
            }
            Enqueued::Dropped(_) => {
                if is_data {
                    self.data.dropped_queue += 1;
                }
                false
            }
        }
    }

    /// A transmit completion is due on `link`.
    #[inline]
    pub fn on_tx_done(&mut self, link: u32, now_ns: u64, ev: &mut EventQueue) -> Option<TxCompletion> {
        self.links[link as usize].on_tx_done(now_ns, link, ev)
    }

    /// Data packets currently inside links (queued, serializing or propagating).
    pub fn data_in_flight(&self) -> u64 {
        self.links.iter().map(|l| l.packets_held().filter(|p| p.is_data()).count() as u64).sum()
    }
}
