//! A one-way link: egress qdisc -> serializer -> loss -> propagation pipe.
//!
//! A packet handed to the link waits in the qdisc until the serializer is free, takes
//! `(ip_bytes + overhead_bytes) * 8 / rate_bps` to serialize, is judged by the loss model
//! as it leaves the serializer (a loss on the wire: the bandwidth was spent), and arrives
//! at the far node `delay_ns` later (plus `reorder.delay_ns` for the packets picked for
//! reordering, netem style). Packets in propagation sit in a FIFO ordered by arrival time;
//! the link keeps exactly one arrival event scheduled, for the head.

use std::collections::VecDeque;

use crate::config::LinkConfig;
use crate::event::{EventKind, EventQueue};
use crate::net::loss::{LossModel, LossVerdict};
use crate::net::qdisc::Fifo;
use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::{tx_time_ns, NEVER};

#[derive(Debug)]
struct Reorder {
    p: f64,
    delay_ns: u64,
    rng: Rng,
}

/// Counters of what happened on the wire.
#[derive(Clone, Debug, Default)]
pub struct WireStats {
    pub loss_drops: u64,
    pub drop_list_drops: u64,
    pub reorder_events: u64,
    pub delivered_packets: u64,
}

#[derive(Debug)]
pub struct Link {
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub overhead_bytes: u32,
    pub qdisc: Fifo,
    pub wire: WireStats,
    /// The packet being serialized, if any.
    tx: Option<Packet>,
    pipe: VecDeque<(u64, Packet)>,
    pending_arrive_ns: u64,
    loss: LossModel,
    reorder: Option<Reorder>,
}

/// What leaving the serializer did to a packet.
pub enum TxOutcome {
    /// On its way to the far end. The copy is returned for transmit-completion handling.
    Sent(Packet),
    /// Lost on the wire.
    Lost(Packet, LossVerdict),
}

impl Link {
    pub fn new(cfg: &LinkConfig, seed: u64) -> Link {
        let loss_rng = Rng::for_component(seed, &format!("link:{}:loss", cfg.name));
        let reorder = cfg.reorder.as_ref().filter(|r| r.p > 0.0).map(|r| Reorder {
            p: r.p,
            delay_ns: r.delay_ns,
            rng: Rng::for_component(seed, &format!("link:{}:reorder", cfg.name)),
        });
        Link {
            name: cfg.name.clone(),
            from: cfg.from,
            to: cfg.to,
            rate_bps: cfg.rate_bps,
            delay_ns: cfg.delay_ns,
            overhead_bytes: cfg.overhead_bytes,
            qdisc: Fifo::new(&cfg.queue),
            wire: WireStats::default(),
            tx: None,
            pipe: VecDeque::with_capacity(256),
            pending_arrive_ns: NEVER,
            loss: LossModel::new(&cfg.loss, loss_rng),
            reorder,
        }
    }

    #[inline]
    fn dev_len(&self, pkt: &Packet) -> u32 {
        pkt.ip_bytes + self.overhead_bytes
    }

    /// Hand `pkt` to the link at `now_ns`. Returns the packet if the qdisc dropped it.
    #[inline]
    pub fn enqueue(&mut self, pkt: Packet, now_ns: u64, id: u32, ev: &mut EventQueue) -> Result<(), Packet> {
        let len = self.dev_len(&pkt);
        self.qdisc.enqueue(pkt, len)?;
        if self.tx.is_none() {
            self.start_tx(now_ns, id, ev);
        }
        Ok(())
    }

    fn start_tx(&mut self, now_ns: u64, id: u32, ev: &mut EventQueue) {
        if let Some((pkt, len)) = self.qdisc.dequeue() {
            ev.push(now_ns + tx_time_ns(len as u64, self.rate_bps), EventKind::LinkTxDone, id);
            self.tx = Some(pkt);
        }
    }

    /// The serializer finished its packet.
    pub fn on_tx_done(&mut self, now_ns: u64, id: u32, ev: &mut EventQueue) -> TxOutcome {
        let pkt = self.tx.take().expect("LinkTxDone without a packet in the serializer");
        self.start_tx(now_ns, id, ev);
        match self.loss.judge(&pkt) {
            LossVerdict::Pass => {}
            v => {
                match v {
                    LossVerdict::Listed => self.wire.drop_list_drops += 1,
                    _ => self.wire.loss_drops += 1,
                }
                return TxOutcome::Lost(pkt, v);
            }
        }
        let mut arrive = now_ns + self.delay_ns;
        if let Some(r) = &mut self.reorder {
            if r.rng.chance(r.p) {
                arrive += r.delay_ns;
                self.wire.reorder_events += 1;
            }
        }
        // Insert keeping arrival order (stable for equal times); without reordering this
        // is always a push at the back.
        let pos = if self.pipe.back().is_none_or(|(t, _)| *t <= arrive) {
            self.pipe.len()
        } else {
            self.pipe.partition_point(|(t, _)| *t <= arrive)
        };
        self.pipe.insert(pos, (arrive, pkt));
        if pos == 0 && arrive < self.pending_arrive_ns {
            self.pending_arrive_ns = arrive;
            ev.push(arrive, EventKind::LinkArrive, id);
        }
        TxOutcome::Sent(pkt)
    }

    /// An arrival event fired; returns the packet that reached the far end, if the event
    /// is current.
    pub fn on_arrive(&mut self, now_ns: u64, id: u32, ev: &mut EventQueue) -> Option<Packet> {
        if now_ns != self.pending_arrive_ns {
            return None; // superseded by an earlier arrival scheduled after a reordering
        }
        self.pending_arrive_ns = NEVER;
        let (t, pkt) = self.pipe.pop_front()?;
        debug_assert!(t <= now_ns);
        if let Some((next, _)) = self.pipe.front() {
            self.pending_arrive_ns = *next;
            ev.push(*next, EventKind::LinkArrive, id);
        }
        self.wire.delivered_packets += 1;
        Some(pkt)
    }

    /// Every packet currently held by the link (queued, serializing, propagating).
    pub fn packets_held(&self) -> impl Iterator<Item = &Packet> {
        self.qdisc.iter().chain(self.tx.iter()).chain(self.pipe.iter().map(|(_, p)| p))
    }
}
