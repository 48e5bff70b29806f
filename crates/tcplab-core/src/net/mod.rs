//! The network: nodes, one-way links and static routes.
//!
//! Imports: the leaves, and `host` for one thing: `net::link` applies the EDT shaper of
//! Cilium's Bandwidth Manager (`host::shaper`) at a node's device before its qdisc. Nothing
//! else above the leaves (the packet capture's taps are `net::tap`; `crate::capture`
//! assembles what they record).
pub mod link;
pub mod loss;
pub mod qdisc;
pub mod routing;
pub mod tap;

use serde::Serialize;

use std::collections::VecDeque;

use crate::event::EventQueue;
use crate::packet::Packet;
use link::{Link, TxCompletion};
use routing::{Routes, NO_ROUTE};

/// Where data packets went, for the end-of-run conservation check (reported as the
/// invariant's `data_packets_sent`, `data_packets_received` and `dropped`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct DataAccounting {
    #[serde(rename = "data_packets_sent")]
    pub sent: u64,
    #[serde(rename = "data_packets_received")]
    pub received: u64,
    pub dropped: DataDrops,
}

/// Data packets dropped, by reason.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DataDrops {
    /// By a qdisc (at enqueue, or later from its queue).
    pub queue: u64,
    /// By a link's random loss model.
    pub loss: u64,
    /// By a link's explicit drop list.
    pub drop_list: u64,
    /// For want of a route.
    pub no_route: u64,
    /// At a receiving host's NIC: its ingress allowance or a full receive ring (`host::nic`).
    pub nic: u64,
}

pub struct Network {
    pub links: Vec<Link>,
    pub routes: Routes,
    /// Data packets sent and received by hosts, and dropped for want of a route; the
    /// links count their own drops ([`Network::data_accounting`]).
    pub data: DataAccounting,
    /// Packets hosts sent into the network (data and ACKs, each counted once; a GSO skb
    /// counts its frames).
    pub host_packets: u64,
    /// The capture's received packets (`TcpSocket::captured` says whose).
    pub capture_in: Option<Box<tap::CaptureBuf>>,
    /// Per node: its sent packets take CPU time first (a `tx_skb_ns` cost, `host::cpu`):
    /// `send_from_host` leaves them in `cpu_tx` for the simulator to queue on the host's
    /// CPU (empty when no host has a cost).
    pub cpu_tx_node: Vec<bool>,
    /// Packets sent by such hosts during the current event (reused, never shrinks).
    pub cpu_tx: Vec<(u32, Packet)>,
    /// Per such node: skbs sent and not yet through its CPU's transmit work, and the
    /// endpoints waiting for it to be free (`cpu_throttle`), in order.
    pub cpu_tx_queued: Vec<u32>,
    pub cpu_waiters: Vec<VecDeque<u32>>,
}

impl Network {
    /// A host hands a packet to its egress link. Returns false if it was dropped at once
    /// (local qdisc full, or no route).
    #[inline]
    pub fn send_from_host(
        &mut self,
        node: u32,
        pkt: Packet,
        now_ns: u64,
        ev: &mut EventQueue,
    ) -> bool {
        self.host_packets += pkt.segs() as u64; // a GSO skb: its frames on the wire
        if pkt.is_data() {
            self.data.sent += pkt.segs() as u64;
        }
        if !self.cpu_tx_node.is_empty() && self.cpu_tx_node[node as usize] {
            // The transmit path takes CPU time first; a qdisc refusing the skb when that
            // is done frees it (its TSQ budget comes back, `sim.rs`), as a kfree_skb()
            // in the driver would, rather than reporting NET_XMIT_DROP to TCP.
            self.cpu_tx.push((node, pkt));
            self.cpu_tx_queued[node as usize] += 1;
            return true;
        }
        self.forward(node, pkt, now_ns, ev)
    }

    /// Endpoint `ep` on `node` would send a new skb: true (and `ep` waits, in order, unless
    /// it is `waiting` already) if the node's CPU is still on an earlier skb's transmit
    /// work (`host::cpu`).
    #[inline]
    pub fn cpu_throttle(&mut self, node: u32, ep: u32, waiting: bool) -> bool {
        if self.cpu_tx_node.is_empty() || self.cpu_tx_queued[node as usize] == 0 {
            return false;
        }
        if !waiting {
            self.cpu_waiters[node as usize].push_back(ep);
        }
        true
    }

    /// The capture endpoint received `pkt` at `now_ns` (tcpdump's receive tap, Linux v6.12
    /// net/core/dev.c: __netif_receive_skb_core(), after the host's NIC ring).
    #[cold]
    #[inline(never)]
    pub fn capture_received(&mut self, now_ns: u64, pkt: &Packet) {
        if let Some(b) = &mut self.capture_in {
            b.record(now_ns, pkt);
        }
    }

    /// Route `pkt` out of `node`: enqueue on the next-hop link.
    #[inline]
    pub fn forward(&mut self, node: u32, pkt: Packet, now_ns: u64, ev: &mut EventQueue) -> bool {
        let l = self.routes.next_hop(node, pkt.dst_node);
        if l == NO_ROUTE {
            if pkt.is_data() {
                self.data.dropped.no_route += 1;
            }
            return false;
        }
        self.links[l as usize].enqueue(pkt, now_ns, l, ev)
    }

    /// A transmit completion is due on `link`.
    #[inline]
    pub fn on_tx_done(
        &mut self,
        link: u32,
        now_ns: u64,
        ev: &mut EventQueue,
    ) -> Option<TxCompletion> {
        self.links[link as usize].on_tx_done(now_ns, link, ev)
    }

    /// Data packets currently inside links (queued, serializing or propagating).
    pub fn data_in_flight(&self) -> u64 {
        self.links.iter().map(|l| l.data_packets_held()).sum()
    }

    /// Packets that started serialization on any link (each hop counts).
    pub fn packets_transmitted(&self) -> u64 {
        self.links.iter().map(|l| l.acct.transmitted).sum()
    }

    /// Where the data packets went: the hosts' counts plus every link's.
    pub fn data_accounting(&self) -> DataAccounting {
        let mut d = self.data.clone();
        for l in &self.links {
            d.dropped.queue += l.acct.data_dropped_queue;
            d.dropped.loss += l.acct.data_dropped_loss;
            d.dropped.drop_list += l.acct.data_dropped_list;
        }
        d
    }
}
