//! A one-way link: egress qdisc -> serializer -> loss -> propagation.
//!
//! A packet handed to the link waits in the qdisc until the serializer is free, takes
//! `(ip_bytes + overhead_bytes) * 8 / rate_bps` to serialize, is judged by the loss model
//! (a loss on the wire: the bandwidth was spent), and arrives at the far node `delay_ns`
//! after its last bit left (plus `reorder.delay_ns` for the packets picked for reordering,
//! netem style). With a FIFO the departure time is known at enqueue (see `qdisc`), so a
//! packet goes straight into the propagation pipe, ordered by arrival time, and the link
//! keeps one arrival event scheduled, for the head. The other events are the transmit
//! completion of a sender's own data packets, which TSQ needs (`tcp_wfree`), and, with a
//! timed qdisc (tbf, fq, fq_codel), one dequeue event: when the serializer frees up or the
//! qdisc's watchdog expires, the link asks the qdisc for its next packet (`qdisc_run()`).
//!
//! What the link did with each packet is counted here ([`LinkAccounting`]); the network
//! adds the links up for the end-of-run conservation check.

use std::collections::VecDeque;

use crate::config::LinkConfig;
use crate::event::{EventKind, EventQueue};
use crate::host::shaper::EdtShaper;
use crate::net::loss::{Loss, LossVerdict};
use crate::net::qdisc::{Dequeue, Qdisc};
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

/// Where the packets handed to this link went (each hop counts on its own link).
#[derive(Clone, Debug, Default)]
pub struct LinkAccounting {
    /// Packets that started serialization (lost ones included: the bandwidth was spent).
    pub transmitted: u64,
    /// Data packets dropped by the qdisc (at enqueue, or later from its queue).
    pub data_dropped_queue: u64,
    /// Data packets lost on the wire by the random loss model.
    pub data_dropped_loss: u64,
    /// Data packets dropped by the explicit drop list.
    pub data_dropped_list: u64,
}

/// A transmit completion owed to the sending socket (TSQ).
#[derive(Clone, Copy, Debug)]
pub struct TxCompletion {
    pub done_ns: u64,
    /// The endpoint that sent the packet.
    pub ep: u32,
    pub seq: u64,
    pub payload_bytes: u32,
    /// What the sender's `sk_wmem_alloc` gets back (`Packet::wmem_charge`).
    pub wmem_bytes: u32,
}

#[derive(Debug)]
pub struct Link {
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub overhead_bytes: u32,
    /// A veth into another namespace: a local sender's TSQ completion happens at enqueue
    /// (see `LinkConfig::orphan`).
    pub orphan: bool,
    /// With `orphan`: the crossing keeps the socket (`LinkConfig::keeps_sk`).
    pub keeps_sk: bool,
    /// With `orphan`: the socket is kept through this link's own qdisc and released as the
    /// packet leaves it (`LinkConfig::orphan_after_queue`, the CNI plugin's IFB tbf).
    pub orphan_after_queue: bool,
    /// A TSO/GSO skb leaves this link whole (a veth: `LinkConfig::passes_gso`); otherwise
    /// it is cut into MSS frames as it goes on the wire (`put_on_wire_gso`).
    pub passes_gso: bool,
    /// Clears the IP ECN field of every packet (`LinkConfig::bleach_ecn`).
    pub bleach_ecn: bool,
    pub qdisc: Qdisc,
    /// Cilium EDT aggregates applied before the qdisc (`LinkConfig.edt`), if any.
    pub shaper: Option<EdtShaper>,
    /// The far end is another machine (a router): a packet arrives there without its
    /// departure time (`skb->tstamp` is a host-local delivery time; a forwarded skb
    /// from the wire carries none), set by the simulator. Between a pod and its node
    /// (a veth, same kernel) the stamp survives, as since Linux 5.18.
    pub clears_tstamp: bool,
    /// A FIFO qdisc, no shaper, no orphaning: the fast path of `enqueue`.
    fifo_only: bool,
    pub wire: WireStats,
    pub acct: LinkAccounting,
    /// When the serializer finishes the last accepted packet.
    busy_until_ns: u64,
    pipe: VecDeque<(u64, Packet)>,
    pending_arrive_ns: u64,
    completions: VecDeque<TxCompletion>,
    /// The time of the scheduled transmit-completion event (NEVER: none).
    pending_tx_done_ns: u64,
    /// The time of the scheduled dequeue event of a timed qdisc (NEVER: none).
    pending_dequeue_ns: u64,
    /// Packets a timed qdisc dropped from its queue during the last call (reused).
    drop_buf: Vec<Packet>,
    tx_cache: [(u32, u64); 2],
    loss: Loss,
    reorder: Option<Reorder>,
    /// The packet capture's egress tap (`crate::net::tap`) on the capture host's link toward
    /// its peer, when that link's qdisc is a FIFO (`enqueue_tapped` records into it; a
    /// timed qdisc carries the tap itself, `tap::TappedQdisc`); `None` everywhere else
    /// and whenever the capture is off. Set with [`Link::set_tap`].
    tap: Option<Box<crate::net::tap::EgressTap>>,
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
            orphan: cfg.orphan,
            keeps_sk: cfg.orphan && cfg.keeps_sk,
            orphan_after_queue: cfg.orphan && !cfg.keeps_sk && cfg.orphan_after_queue,
            passes_gso: cfg.passes_gso.unwrap_or(cfg.orphan),
            bleach_ecn: cfg.bleach_ecn,
            qdisc: Qdisc::new(&cfg.queue),
            shaper: EdtShaper::new(&cfg.edt),
            clears_tstamp: false,
            fifo_only: cfg.queue.is_fifo() && cfg.edt.is_empty() && !cfg.orphan && !cfg.bleach_ecn,
            wire: WireStats::default(),
            acct: LinkAccounting::default(),
            busy_until_ns: 0,
            pipe: VecDeque::with_capacity(256),
            pending_arrive_ns: NEVER,
            completions: VecDeque::with_capacity(64),
            pending_tx_done_ns: NEVER,
            pending_dequeue_ns: NEVER,
            drop_buf: Vec::new(),
            tx_cache: [(u32::MAX, 0); 2],
            loss: Loss::new(&cfg.loss, cfg.loss_filter, loss_rng).with_window(cfg.loss_window),
            reorder,
            tap: None,
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

    /// Hand `pkt` to the link at `now_ns`. Returns false if the qdisc dropped it at once
    /// (`NET_XMIT_DROP` to a local sender).
    #[inline]
    pub fn enqueue(&mut self, pkt: Packet, now_ns: u64, id: u32, ev: &mut EventQueue) -> bool {
        if self.fifo_only {
            // The fast path of every link without issue 8's components: a FIFO, no EDT
            // shaper, no namespace crossing (kept apart so it stays small and inlined).
            let len = pkt.qdisc_len(self.overhead_bytes);
            return self.enqueue_fifo(pkt, len, now_ns, id, ev);
        }
        self.enqueue_components(pkt, now_ns, id, ev)
    }

    /// `enqueue` through a veth crossing, an EDT shaper, a timed qdisc, or the capture's tap.
    #[inline(never)]
    fn enqueue_components(
        &mut self,
        mut pkt: Packet,
        now_ns: u64,
        id: u32,
        ev: &mut EventQueue,
    ) -> bool {
        if self.bleach_ecn {
            pkt.ecn = crate::packet::ecn::NOT_ECT;
        }
        if self.tap.is_some() {
            return self.enqueue_tapped(pkt, now_ns, id, ev);
        }
        self.enqueue_untapped(pkt, now_ns, id, ev)
    }

    /// `enqueue` on the capture host's FIFO egress toward its peer (`crate::net::tap`): the
    /// packet goes on the wire at once (or is dropped), starting at the later of now and
    /// the end of what the link holds; the tap records it with that start, as tcpdump does
    /// when the driver takes it (Linux v6.12 net/core/dev.c: dev_hard_start_xmit() ->
    /// dev_queue_xmit_nit()). A timed qdisc carries the tap itself (`tap::TappedQdisc`).
    #[cold]
    #[inline(never)]
    fn enqueue_tapped(&mut self, pkt: Packet, now_ns: u64, id: u32, ev: &mut EventQueue) -> bool {
        let (start, sent_before) = (now_ns.max(self.busy_until_ns), self.acct.transmitted);
        let ok = self.enqueue_untapped(pkt, now_ns, id, ev);
        // On the wire iff the link transmitted it (a veth reports success even for a packet
        // its FIFO dropped).
        if self.acct.transmitted > sent_before {
            if let Some(tap) = &mut self.tap {
                tap.observe(start, &pkt);
            }
        }
        ok
    }

    /// `enqueue_components` without the tap.
    #[inline]
    fn enqueue_untapped(
        &mut self,
        mut pkt: Packet,
        now_ns: u64,
        id: u32,
        ev: &mut EventQueue,
    ) -> bool {
        if self.orphan && pkt.src_node == self.from && self.keeps_sk {
            // A veth that keeps skb->sk (Cilium's BPF host routing): the packet stays on
            // its sender's TSQ budget until it leaves the node's device (`put_on_wire` /
            // a drop there owe the completion).
            pkt.flags |= flags::SK_KEPT;
            return self.enqueue_local(pkt, now_ns, id, ev);
        }
        if self.orphan_after_queue && pkt.src_node == self.from {
            // The CNI plugin's egress (a tbf on an IFB behind the veth): the skb keeps its
            // socket through the tbf, so the sender's TSQ budget comes back as it leaves
            // this link (`put_on_wire` owes the completion: the sender's own packet on
            // the link it was sent on) or when the tbf drops it (the skb is freed,
            // tcp_wfree()); the drop is not reported: veth_xmit() already succeeded.
            self.enqueue_local(pkt, now_ns, id, ev);
            return true;
        }
        if self.orphan && pkt.src_node == self.from {
            // A veth into another namespace: the skb is orphaned as it crosses, so its
            // sender is done with it now (TSQ budget back at once), and what happens to it
            // beyond (a queue in the node dropping it) is not reported back: veth_xmit()
            // has returned NET_XMIT_SUCCESS.
            self.owe_completion(&pkt, now_ns, id, ev);
            pkt.flags &= !flags::TSQ;
            self.enqueue_local(pkt, now_ns, id, ev);
            return true;
        }
        self.enqueue_local(pkt, now_ns, id, ev)
    }

    /// A FIFO: the departure is known now (Lindley's recursion), so the packet goes
    /// straight on the wire.
    #[inline(always)]
    fn enqueue_fifo(
        &mut self,
        pkt: Packet,
        len: u32,
        now_ns: u64,
        id: u32,
        ev: &mut EventQueue,
    ) -> bool {
        let Qdisc::Fifo(q) = &mut self.qdisc else {
            unreachable!("enqueue_fifo on a timed qdisc")
        };
        let start = now_ns.max(self.busy_until_ns);
        if !q.offer(now_ns, start, len, pkt.gso_segs.max(1)) {
            if pkt.is_data() {
                self.acct.data_dropped_queue += pkt.segs() as u64;
            }
            if self.freed_on_refusal(&pkt) {
                self.owe_completion(&pkt, now_ns, id, ev); // freed: TSQ budget back
            }
            return false;
        }
        // Saturating: a slow link with a long queue may finish beyond the engine's clock
        // range; such a packet simply never arrives within the run.
        if pkt.is_gso() && !self.passes_gso {
            self.busy_until_ns = self.put_on_wire_gso(pkt, start, id, ev);
            return true;
        }
        let finish = time_add(start, self.tx_time(len));
        self.busy_until_ns = finish;
        self.put_on_wire(pkt, finish, id, ev);
        true
    }

    /// A sender's TSO/GSO skb starts serialization at `start`: the NIC (TSO) or the stack
    /// before the driver (GSO, Linux v6.12 net/core/dev.c: validate_xmit_skb() ->
    /// skb_gso_segment()) cuts it into MSS frames, which leave back to back at the link's
    /// rate; returns when the last one is done. The skb's TX completion (TSQ, `tcp_wfree()`
    /// once the driver frees it) comes after its last frame, for all its bytes. Beyond
    /// this hop every frame is a packet of its own.
    #[cold]
    #[inline(never)]
    fn put_on_wire_gso(&mut self, pkt: Packet, start: u64, id: u32, ev: &mut EventQueue) -> u64 {
        let owes = self.owes_tsq(&pkt);
        let mut finish = start;
        for k in 0..pkt.gso_segs as u32 {
            let mut frame = pkt.gso_frame(k);
            if owes {
                frame.flags &= !(flags::TSQ | flags::SK_KEPT);
            }
            finish = time_add(finish, self.tx_time(frame.ip_bytes + self.overhead_bytes));
            self.put_on_wire(frame, finish, id, ev);
        }
        self.owe_completion(&pkt, finish, id, ev);
        finish
    }

    #[inline]
    fn enqueue_local(
        &mut self,
        mut pkt: Packet,
        now_ns: u64,
        id: u32,
        ev: &mut EventQueue,
    ) -> bool {
        let len = pkt.qdisc_len(self.overhead_bytes);
        if let Some(sh) = &mut self.shaper {
            // Cilium's EDT program at the device's tc egress, before the qdisc.
            if !sh.apply(&mut pkt, len, now_ns) {
                self.drop_in_qdisc(&pkt, now_ns, id, ev);
                return false;
            }
        }
        let freed_on_refusal = self.freed_on_refusal(&pkt);
        match &mut self.qdisc {
            Qdisc::Fifo(_) => self.enqueue_fifo(pkt, len, now_ns, id, ev),
            Qdisc::Timed(q) => {
                let data_segs = if pkt.is_data() { pkt.segs() as u64 } else { 0 };
                // A packet whose socket was kept across a veth: if the qdisc refuses it, the
                // skb is freed here and its socket's TSQ budget comes back (tcp_wfree()); a
                // local sender instead hears NET_XMIT_DROP through the return value.
                let kept = freed_on_refusal.then_some(pkt);
                let ok = q.enqueue(pkt, len, now_ns, &mut self.drop_buf);
                if !ok {
                    self.acct.data_dropped_queue += data_segs;
                }
                if let (false, Some(p)) = (ok, kept) {
                    self.owe_completion(&p, now_ns, id, ev);
                }
                self.flush_drops(now_ns, id, ev);
                // __dev_xmit_skb() -> qdisc_run(): try to send at once if the device is free.
                if self.busy_until_ns <= now_ns {
                    self.pull(now_ns, id, ev);
                }
                ok
            }
        }
    }

    /// The dequeue event of a timed qdisc fired.
    pub fn on_dequeue(&mut self, now_ns: u64, id: u32, ev: &mut EventQueue) {
        if now_ns != self.pending_dequeue_ns {
            return; // superseded
        }
        self.pending_dequeue_ns = NEVER;
        if self.busy_until_ns > now_ns {
            self.schedule_dequeue(self.busy_until_ns, id, ev);
            return;
        }
        self.pull(now_ns, id, ev);
    }

    /// Put the capture's tap on this (FIFO) link: its packets then take the slow path
    /// (`enqueue_components`), so the fast path of every other link stays as it was.
    pub fn set_tap(&mut self, tap: crate::net::tap::EgressTap) {
        self.tap = Some(Box::new(tap));
        self.fifo_only = false;
    }

    /// The tap's packets, taken once at the end of the run.
    pub fn take_tap(&mut self) -> Option<crate::net::tap::EgressTap> {
        self.tap.take().map(|t| *t)
    }

    /// The time of the scheduled transmit-completion event (`NEVER`: none).
    #[inline]
    pub fn pending_tx_done_ns(&self) -> u64 {
        self.pending_tx_done_ns
    }

    /// The time of the scheduled dequeue event of a timed qdisc (`NEVER`: none).
    #[inline]
    pub fn pending_dequeue_ns(&self) -> u64 {
        self.pending_dequeue_ns
    }

    /// Move the pending dequeue to `at_ns` (the host was off its CPU: see `host::cpu`).
    pub fn defer_dequeue(&mut self, at_ns: u64, id: u32, ev: &mut EventQueue) {
        self.pending_dequeue_ns = NEVER;
        self.schedule_dequeue(at_ns, id, ev);
    }

    /// Move the pending transmit completion to `at_ns` (the host was off its CPU).
    pub fn defer_tx_done(&mut self, at_ns: u64, id: u32, ev: &mut EventQueue) {
        self.pending_tx_done_ns = at_ns;
        ev.push(at_ns, EventKind::LinkTxDone, id);
    }

    #[inline]
    fn schedule_dequeue(&mut self, at_ns: u64, id: u32, ev: &mut EventQueue) {
        if at_ns != self.pending_dequeue_ns {
            self.pending_dequeue_ns = at_ns;
            ev.push(at_ns, EventKind::LinkDequeue, id);
        }
    }

    /// The serializer is free at `now_ns`: take the timed qdisc's next packet, or arm the
    /// dequeue event for when it will have one.
    fn pull(&mut self, now_ns: u64, id: u32, ev: &mut EventQueue) {
        let Qdisc::Timed(q) = &mut self.qdisc else {
            return;
        };
        let d = q.dequeue(now_ns, &mut self.drop_buf);
        self.flush_drops(now_ns, id, ev);
        match d {
            Dequeue::Packet(pkt, len) => {
                if pkt.is_gso() && !self.passes_gso {
                    let finish = self.put_on_wire_gso(pkt, now_ns, id, ev);
                    self.busy_until_ns = finish;
                    self.schedule_dequeue(finish, id, ev);
                    return;
                }
                let finish = time_add(now_ns, self.tx_time(len));
                self.busy_until_ns = finish;
                self.schedule_dequeue(finish, id, ev);
                self.put_on_wire(pkt, finish, id, ev);
            }
            Dequeue::Wait(t) => {
                debug_assert!(
                    t > now_ns,
                    "{}: qdisc asked to wait until {t} at {now_ns}",
                    self.name
                );
                self.schedule_dequeue(t.max(now_ns + 1), id, ev);
            }
            Dequeue::Empty => self.pending_dequeue_ns = NEVER,
        }
    }

    /// A packet dropped before or inside the qdisc (EDT horizon, CoDel, overlimit): a
    /// queue drop for conservation, and a local sender's TSQ budget back at once (the skb
    /// is freed: `tcp_wfree()`).
    #[cold]
    fn drop_in_qdisc(&mut self, pkt: &Packet, now_ns: u64, id: u32, ev: &mut EventQueue) {
        if pkt.is_data() {
            self.acct.data_dropped_queue += pkt.segs() as u64;
        }
        self.owe_completion(pkt, now_ns, id, ev);
    }

    /// Account for the packets a timed qdisc dropped from its queue.
    fn flush_drops(&mut self, now_ns: u64, id: u32, ev: &mut EventQueue) {
        if self.drop_buf.is_empty() {
            return;
        }
        let mut buf = std::mem::take(&mut self.drop_buf);
        for pkt in buf.drain(..) {
            self.drop_in_qdisc(&pkt, now_ns, id, ev);
        }
        self.drop_buf = buf;
    }

    /// A local sender's packet (counted against its TSQ budget) is done with at `at_ns`:
    /// the sending socket hears of it then.
    #[inline]
    fn owe_completion(&mut self, pkt: &Packet, at_ns: u64, id: u32, ev: &mut EventQueue) {
        if self.owes_tsq(pkt) {
            let c = TxCompletion {
                done_ns: at_ns,
                ep: pkt.dst_ep ^ 1,
                seq: pkt.seq,
                payload_bytes: pkt.payload_bytes(),
                wmem_bytes: pkt.wmem_charge(),
            };
            self.add_completion(c, id, ev);
        }
    }

    /// Whether a packet this link's qdisc refuses is freed here with its socket's TSQ
    /// budget coming back (tcp_wfree()) rather than reported to a local sender as
    /// NET_XMIT_DROP: one whose socket was kept across a veth (`SK_KEPT`), or a local
    /// sender's packet on an `orphan_after_queue` veth (the CNI plugin's IFB tbf).
    #[inline(always)]
    fn freed_on_refusal(&self, pkt: &Packet) -> bool {
        pkt.flags & flags::SK_KEPT != 0 || (self.orphan_after_queue && pkt.src_node == self.from)
    }

    /// Whether this link owes the packet's TSQ completion: the sender's own device, or,
    /// for a packet that crossed a veth keeping its socket (`SK_KEPT`), the next device
    /// it leaves (the veth itself, where it was sent from, does not).
    #[inline(always)]
    fn owes_tsq(&self, pkt: &Packet) -> bool {
        pkt.flags & flags::TSQ != 0
            && ((pkt.src_node == self.from) != (pkt.flags & flags::SK_KEPT != 0))
    }

    #[inline]
    fn add_completion(&mut self, c: TxCompletion, id: u32, ev: &mut EventQueue) {
        let at = c.done_ns;
        if self.completions.back().is_none_or(|b| b.done_ns <= at) {
            self.completions.push_back(c);
        } else {
            let pos = self.completions.partition_point(|b| b.done_ns <= at);
            self.completions.insert(pos, c);
        }
        if self.completions.front().is_some_and(|f| f.done_ns == at) && at < self.pending_tx_done_ns
        {
            self.pending_tx_done_ns = at;
            ev.push(at, EventKind::LinkTxDone, id);
        }
    }

    /// The packet starts serialization now and finishes at `finish_ns`: TSQ completion,
    /// the loss model, then the propagation pipe.
    #[inline]
    fn put_on_wire(&mut self, mut pkt: Packet, finish: u64, id: u32, ev: &mut EventQueue) {
        self.acct.transmitted += 1;
        // Segmented by the NIC: beyond this hop every segment is a packet of its own.
        pkt.flags &= !flags::GSO_TAIL;
        if self.owes_tsq(&pkt) {
            // TX completion for the sender's TSQ accounting, in finish order (written out
            // here rather than through `owe_completion`: this is the per-packet path, and
            // the call measurably changes its inlining).
            let c = TxCompletion {
                done_ns: finish,
                ep: pkt.dst_ep ^ 1,
                seq: pkt.seq,
                payload_bytes: pkt.payload_bytes(),
                wmem_bytes: pkt.wmem_charge(),
            };
            self.add_completion(c, id, ev);
            if pkt.flags & flags::SK_KEPT != 0 {
                // A kept socket is released here (the skb left the node): no later hop owes it.
                pkt.flags &= !(flags::SK_KEPT | flags::TSQ);
            }
        }
        match self.loss.judge(&pkt, finish) {
            LossVerdict::Pass => {}
            v => {
                let is_data = pkt.is_data();
                match v {
                    LossVerdict::Listed => {
                        self.wire.drop_list_drops += 1;
                        if is_data {
                            self.acct.data_dropped_list += pkt.segs() as u64;
                        }
                    }
                    _ => {
                        self.wire.loss_drops += 1;
                        if is_data {
                            self.acct.data_dropped_loss += pkt.segs() as u64;
                        }
                    }
                }
                return;
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
    }

    /// A transmit-completion event fired: the completion now due, if the event is current.
    pub fn on_tx_done(
        &mut self,
        now_ns: u64,
        id: u32,
        ev: &mut EventQueue,
    ) -> Option<TxCompletion> {
        if now_ns != self.pending_tx_done_ns {
            return None; // superseded by an earlier completion (a qdisc drop) or deferred
        }
        self.pending_tx_done_ns = NEVER;
        let c = self.completions.pop_front()?;
        debug_assert!(c.done_ns <= now_ns);
        if let Some(next) = self.completions.front() {
            let at = next.done_ns.max(now_ns);
            self.pending_tx_done_ns = at;
            ev.push(at, EventKind::LinkTxDone, id);
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
        let (t, mut pkt) = self.pipe.pop_front()?;
        debug_assert!(t <= now_ns);
        if self.clears_tstamp && pkt.tstamp_ns != 0 {
            pkt.tstamp_ns = 0;
        }
        if let Some((next, _)) = self.pipe.front() {
            self.pending_arrive_ns = *next;
            ev.push(*next, EventKind::LinkArrive, id);
        }
        self.wire.delivered_packets += 1;
        Some(pkt)
    }

    /// Bring queue statistics up to `now_ns` (a FIFO learns of departures lazily).
    pub fn advance(&mut self, now_ns: u64) {
        if let Qdisc::Fifo(q) = &mut self.qdisc {
            q.advance(now_ns);
        }
    }

    /// Data packets the link will still deliver (in a timed qdisc, serializing or
    /// propagating; a FIFO's waiting packets are already in the pipe).
    pub fn data_packets_held(&self) -> u64 {
        // In segments: a GSO skb that passed a veth whole counts all of them.
        let mut n: u64 = self
            .pipe
            .iter()
            .filter(|(_, p)| p.is_data())
            .map(|(_, p)| p.segs() as u64)
            .sum();
        if let Qdisc::Timed(q) = &self.qdisc {
            q.for_each_packet(&mut |p| n += if p.is_data() { p.segs() as u64 } else { 0 });
        }
        n
    }
}
