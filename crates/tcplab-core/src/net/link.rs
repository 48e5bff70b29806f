//! A one-way link: egress qdisc -> serializer -> loss -> propagation.
//!
//! A packet handed to the link waits in the FIFO until the serializer is free, takes
//! `(ip_bytes + overhead_bytes) * 8 / rate_bps` to serialize, is judged by the loss model
//! (a loss on the wire: the bandwidth was spent), and arrives at the far node `delay_ns`
//! after its last bit left (plus `reorder.delay_ns` for the packets picked for reordering,
//! netem style). With a FIFO the departure time is known at enqueue (see `qdisc`), so a
//! packet goes straight into the propagation pipe, ordered by arrival time, and the link
//! keeps one arrival event scheduled, for the head. The only other event is the transmit
//! completion of a sender's own data packets, which TSQ needs (`tcp_wfree`).

use std::collections::VecDeque;

use crate::config::LinkConfig;
use crate::event::{EventKind, EventQueue};
use crate::net::loss::{Loss, LossVerdict};
use crate::net::qdisc::Fifo;
use crate::packet::{flags, Packet};
use crate::rng::Rng;
use crate::time::{time_add, tx_time_ns, NEVER};

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

/// A transmit completion owed to the sending socket (TSQ).
#[derive(Clone, Copy, Debug)]
pub struct TxCompletion {
    pub done_ns: u64,
    /// The endpoint that sent the packet.
    pub ep: u32,
    pub seq: u64,
    pub payload_bytes: u32,
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
    /// When the serializer finishes the last accepted packet.
    busy_until_ns: u64,
    pipe: VecDeque<(u64, Packet)>,
    pending_arrive_ns: u64,
    completions: VecDeque<TxCompletion>,
    tx_cache: [(u32, u64); 2],
    loss: Loss,
    reorder: Option<Reorder>,
}

/// What the link did with an offered packet.
pub enum Enqueued {
    /// Queued or transmitting; it will arrive.
    Accepted,
    /// Accepted and serialized, but lost on the wire.
    Lost(LossVerdict),
    /// Tail-dropped by the qdisc.
    Dropped(Packet),
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
            busy_until_ns: 0,
            pipe: VecDeque::with_capacity(256),
            pending_arrive_ns: NEVER,
            completions: VecDeque::with_capacity(64),
            tx_cache: [(u32::MAX, 0); 2],
            loss: Loss::new(&cfg.loss, cfg.loss_filter, loss_rng),
            reorder,
        }
    }

    /// Serialization time of a `len`-byte frame, remembering the last two sizes (almost
    /// every packet is a full data segment or a pure ACK) to skip the division.
    #[inline]
    fn tx_time(&mut self, len: u32) -> u64 {
        for (l, t) in self.tx_cache {
            if l == len {
                return t;
            }
        }
        let t = tx_time_ns(len as u64, self.rate_bps);
        self.tx_cache = [(len, t), self.tx_cache[0]];
        t
    }

    /// Hand `pkt` to the link at `now_ns`.
    #[inline]
    pub fn enqueue(&mut self, pkt: Packet, now_ns: u64, id: u32, ev: &mut EventQueue) -> Enqueued {
        let len = pkt.ip_bytes + self.overhead_bytes;
        let start = now_ns.max(self.busy_until_ns);
        if !self.qdisc.offer(now_ns, start, len) {
            return Enqueued::Dropped(pkt);
        }
        // Saturating: a slow link with a long queue may finish beyond the engine's clock
        // range; such a packet simply never arrives within the run.
        let finish = time_add(start, self.tx_time(len));
        self.busy_until_ns = finish;
        if pkt.flags & flags::TSQ != 0 && pkt.src_node == self.from {
            // TX completion for the sender's TSQ accounting, in finish order.
            if self.completions.is_empty() {
                ev.push(finish, EventKind::LinkTxDone, id);
            }
            self.completions.push_back(TxCompletion {
                done_ns: finish,
                ep: pkt.dst_ep ^ 1,
                seq: pkt.seq,
                payload_bytes: pkt.payload_bytes(),
            });
        }
        match self.loss.judge(&pkt) {
            LossVerdict::Pass => {}
            v => {
                match v {
                    LossVerdict::Listed => self.wire.drop_list_drops += 1,
                    _ => self.wire.loss_drops += 1,
                }
                return Enqueued::Lost(v);
            }
        }
        let mut arrive = time_add(finish, self.delay_ns);
        if let Some(r) = &mut self.reorder {
            if r.rng.chance(r.p) {
                arrive = time_add(arrive, r.delay_ns);
                self.wire.reorder_events += 1;
            }
        }
        // Insert keeping arrival order (stable for equal times); without reordering this
        // is always a push at the back.
        let pos = if self.pipe.back().is_none_or(|(t, _)| *t <= arrive) {
            self.pipe.push_back((arrive, pkt));
            self.pipe.len() - 1
        } else {
            let pos = self.pipe.partition_point(|(t, _)| *t <= arrive);
            self.pipe.insert(pos, (arrive, pkt));
            pos
        };
        if pos == 0 && arrive < self.pending_arrive_ns {
            self.pending_arrive_ns = arrive;
            ev.push(arrive, EventKind::LinkArrive, id);
        }
        Enqueued::Accepted
    }

    /// A transmit-completion event fired: the completion now due.
    pub fn on_tx_done(&mut self, now_ns: u64, id: u32, ev: &mut EventQueue) -> Option<TxCompletion> {
        let c = self.completions.pop_front()?;
        debug_assert!(c.done_ns <= now_ns);
        if let Some(next) = self.completions.front() {
            ev.push(next.done_ns, EventKind::LinkTxDone, id);
        }
        Some(c)
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

    /// Bring queue statistics up to `now_ns`.
    pub fn advance(&mut self, now_ns: u64) {
        self.qdisc.advance(now_ns);
    }

    /// Every packet the link will still deliver (waiting, serializing or propagating).
    pub fn packets_held(&self) -> impl Iterator<Item = &Packet> {
        self.pipe.iter().map(|(_, p)| p)
    }
}
