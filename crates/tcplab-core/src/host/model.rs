//! One host's CPU and NIC models together, as the simulator drives them.
//!
//! A host gets a [`HostModel`] only if it has a CPU model (a share below 100 %), a CPU
//! cost (`cpu_cost`) or a `nic`; every other host takes the engine's fast path untouched
//! (`sim.rs` checks one flag per event). A host with a CPU model but no `nic` gets an
//! ideal NIC ([`Nic::ideal`]): packets that arrive while it is off wait, unbounded, for
//! its next slice (at the account's `rx_packet_ns` each, 0 without a cost); while it is on
//! and has no cost they go straight to TCP as without a model.
//!
//! The host's stack work is one CPU account ([`CpuAccount`], `host::cpu`): the NIC's
//! polls, and with a `tx_skb_ns` cost every skb the host sends, which waits in
//! [`HostModel::tx_backlog`] (in order, the work being serialized) until its work is done
//! (a `HostTx` event each, `sim.rs`).
//!
//! Receive path of a packet the host gets from a wire, addressed to it or forwarded by
//! it: allowance (if any) -> ring -> NAPI poll -> TCP (or forwarding, `sim.rs`). Data packets dropped on the way are counted here (`data_dropped`) for
//! the conservation check, and the ones waiting count as in flight (`data_held`).

use crate::config::NodeConfig;
use crate::event::{EventKind, EventQueue};
use crate::host::allowance::{Admit, Allowance};
use std::collections::VecDeque;

use crate::host::cpu::{CpuAccount, CpuModel};
use crate::host::nic::Nic;
use crate::packet::Packet;

#[derive(Debug)]
pub struct HostModel {
    pub node: u32,
    pub cpu: Option<CpuModel>,
    pub nic: Nic,
    /// The host has a configured NIC (not the ideal one of a CPU-only host).
    pub has_nic: bool,
    pub allowance: Option<Allowance>,
    /// Data packets dropped by the allowance or a full ring.
    pub data_dropped: u64,
    /// The stack's CPU time (`host::cpu`, "The CPU cost of packets").
    pub acct: CpuAccount,
    /// The host has a `cpu_cost` (costs beyond the NIC's `rx_cost_ns`).
    pub has_cost: bool,
    /// GRO on with an `rx_skb_ns`: each skb GRO hands to TCP is charged then.
    pub rx_skb_at_delivery: bool,
    /// Skbs the host sent whose transmit work is not done yet, in order.
    pub tx_backlog: VecDeque<Packet>,
}

impl HostModel {
    /// The model of node `node`, or `None` if it needs none (no CPU model, no NIC).
    pub fn new(cfg: &NodeConfig, node: u32, origin_ns: u64) -> Option<HostModel> {
        let cpu = cfg.cpu.as_ref().and_then(|c| CpuModel::new(c, origin_ns));
        if cpu.is_none() && cfg.nic.is_none() && cfg.cpu_cost.is_none() {
            return None;
        }
        let (mut nic, allowance) = match &cfg.nic {
            Some(n) => (Nic::new(n), n.allowance.as_ref().map(Allowance::new)),
            None => (Nic::ideal(), None),
        };
        nic.set_host(node, cfg.gro);
        let acct = CpuAccount::new(
            cfg.cpu_cost.as_ref(),
            cfg.nic.as_ref().map_or(0, |n| n.rx_cost_ns),
            cfg.tso,
        );
        Some(HostModel {
            node,
            cpu,
            nic,
            has_nic: cfg.nic.is_some(),
            allowance,
            data_dropped: 0,
            rx_skb_at_delivery: cfg.gro && acct.rx_skb_ns > 0,
            has_cost: cfg.cpu_cost.is_some(),
            acct,
            tx_backlog: VecDeque::with_capacity(if cfg.cpu_cost.is_some() { 256 } else { 0 }),
        })
    }

    /// If the host is off its CPU at `now_ns`: the start of its next slice.
    #[inline]
    pub fn off_until(&self, now_ns: u64) -> Option<u64> {
        let c = self.cpu.as_ref()?;
        let next = c.next_on(now_ns);
        (next != now_ns).then_some(next)
    }

    #[inline]
    pub fn is_on(&self, now_ns: u64) -> bool {
        self.cpu.as_ref().is_none_or(|c| c.is_on(now_ns))
    }

    /// A packet for this host, or for it to forward, arrived (`len_bytes`: its frame on
    /// the arriving link). Returns it if the host takes it at once (an always-on host with an ideal NIC, idle).
    pub fn receive(
        &mut self,
        pkt: Packet,
        len_bytes: u32,
        now_ns: u64,
        id: u32,
        ev: &mut EventQueue,
    ) -> Option<Packet> {
        // Straight to TCP: no NIC model and no receive work to queue behind the CPU's.
        let free = !self.has_cost
            || (self.acct.rx_packet_ns == 0
                && self.acct.rx_skb_ns == 0
                && self.acct.free_at_ns <= now_ns);
        if !self.has_nic && free && self.nic.idle() && self.is_on(now_ns) {
            return Some(pkt);
        }
        let pkt = match &mut self.allowance {
            None => pkt,
            Some(a) => match a.offer(pkt, len_bytes, now_ns) {
                Admit::Pass(p) => p,
                Admit::Held => {
                    self.arm_allowance(id, ev);
                    return None;
                }
                Admit::Dropped(p) => {
                    self.data_dropped += p.is_data() as u64;
                    return None;
                }
            },
        };
        self.put_on_ring(pkt, now_ns, id, ev);
        None
    }

    fn put_on_ring(&mut self, pkt: Packet, now_ns: u64, id: u32, ev: &mut EventQueue) {
        if let Err(p) = self
            .nic
            .enqueue(pkt, now_ns, self.cpu.as_ref(), &mut self.acct, id, ev)
        {
            self.data_dropped += p.is_data() as u64;
        }
    }

    fn arm_allowance(&mut self, id: u32, ev: &mut EventQueue) {
        let Some(a) = &mut self.allowance else { return };
        if let Some(at) = a.wake_at() {
            if at != a.pending_ns {
                a.pending_ns = at;
                ev.push(at, EventKind::NicAllowance, id);
            }
        }
    }

    /// The allowance's release event: the packets whose tokens are there go to the ring.
    pub fn on_allowance(&mut self, now_ns: u64, id: u32, ev: &mut EventQueue) {
        let Some(a) = &mut self.allowance else { return };
        if now_ns != a.pending_ns {
            return;
        }
        a.pending_ns = crate::time::NEVER;
        while let Some(p) = self.allowance.as_mut().and_then(|a| a.release(now_ns)) {
            self.put_on_ring(p, now_ns, id, ev);
        }
        self.arm_allowance(id, ev);
    }

    /// A NAPI poll event: the packet handed to TCP now, if any. The caller hands it on,
    /// then calls [`HostModel::after_poll`].
    #[inline]
    pub fn on_poll(&mut self, now_ns: u64) -> Option<Packet> {
        self.nic.on_poll(now_ns)
    }

    /// The next poll, if the last one left work, queued on the CPU behind what handing
    /// the packet on asked of it.
    #[inline]
    pub fn after_poll(&mut self, now_ns: u64, id: u32, ev: &mut EventQueue) {
        self.nic
            .schedule_next(now_ns, self.cpu.as_ref(), &mut self.acct, id, ev);
    }

    /// Stack work of `work_ns` asked for at `now_ns` (an skb GRO hands to TCP): charged to
    /// the account, delaying what the CPU does next.
    #[inline]
    pub fn charge(&mut self, now_ns: u64, work_ns: u64) {
        self.acct.run(self.cpu.as_ref(), now_ns, work_ns);
    }

    /// The host sent `pkt` at `now_ns`: its transmit work is queued on the CPU; returns
    /// when it is done (the caller's `HostTx` event takes it from the backlog then).
    #[inline]
    pub fn transmit(&mut self, pkt: Packet, now_ns: u64) -> u64 {
        // Software GSO (tso off) cuts the skb before the driver: every frame after the
        // first is one more pass through skb_segment() and ndo_start_xmit().
        let frames_after_first = pkt.segs().saturating_sub(1) as u64;
        let work_ns = self.acct.tx_skb_ns + frames_after_first * self.acct.tx_gso_frame_ns;
        let done = self.acct.run(self.cpu.as_ref(), now_ns, work_ns);
        self.tx_backlog.push_back(pkt);
        done
    }

    /// Data packets waiting in the allowance queue, the rings or the transmit backlog
    /// (segments).
    pub fn data_held(&self) -> u64 {
        self.nic.data_held()
            + self.allowance.as_ref().map_or(0, |a| a.data_held())
            + self
                .tx_backlog
                .iter()
                .filter(|p| p.is_data())
                .map(|p| p.segs() as u64)
                .sum::<u64>()
    }

    pub fn allowance_queued(&self) -> u32 {
        self.allowance.as_ref().map_or(0, |a| a.queued() as u32)
    }
}
