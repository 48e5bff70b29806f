//! A NIC's receive side: RSS queues, rings of descriptors, and the NAPI polls that empty
//! them at a per-packet CPU cost.
//!
//! A packet for the host (after the ingress allowance, `host::allowance`) is steered to
//! one of `rx_queues` receive queues by a deterministic hash of its flow (RSS; the real
//! hash is Toeplitz over addresses and ports, tcplab hashes the flow's endpoint) and takes
//! a descriptor of that queue's ring of `rx_ring` descriptors (`ethtool -g` rx). When the
//! ring is full the device drops the packet; the driver counts it under its own name
//! (below). A ring going non-empty raises the interrupt, which schedules NAPI
//! (`napi_schedule()`) `irq_delay_ns` later (interrupt moderation), and only once the host
//! is on its CPU (`host::cpu`).
//!
//! The poll follows Linux v6.12 net/core/dev.c: `net_rx_action()` runs rounds of
//! `netdev_budget` packets or `netdev_budget_usecs`; in a round it takes the NAPI
//! instances of the poll list in turn, each `napi_poll()` processing up to `napi_weight`
//! packets of its queue; a queue it empties completes (`napi_complete_done()`, off the
//! list), one that used its whole weight goes to the tail of the list. After each poll,
//! a round whose budget is spent (`budget <= 0`) or whose time is up ends and counts
//! `time_squeeze` (as /proc/net/softnet_stat's third column); the work left goes on in a
//! new round (the re-raised softirq). tcplab starts the new round at once (on a real host
//! ksoftirqd may let other work run first) and measures the round's time in ns, not in
//! jiffies.
//!
//! Each packet costs CPU time on the host's one account ([`CpuAccount`], "The CPU cost of
//! packets" in `host::cpu`): `rx_cost_ns` (driver, GRO and the TCP receive path) on a
//! host without `cpu.cost`, else the account's `rx_packet_ns`, plus `rx_skb_ns` for a
//! packet TCP takes as its own skb (GRO off, addressed to the host). It is handed to TCP
//! when its processing ends: one event per packet (`rx_bytes` counters count IP bytes).
//! The work queues behind whatever else the CPU does (the host's transmit path), and
//! the next packet's poll is scheduled after the caller has handed this one on (so the
//! ACK it makes TCP send takes the CPU first, as in Linux's softirq). Its descriptor is
//! free from then (the driver's refill is immediate in tcplab; ENA refills in batches).
//! The CPU time pauses while the host is off its CPU ([`CpuModel::after_on`]).
//!
//! Counter names as `ethtool -S` prints them for each driver:
//! - `ena` (drivers/net/ethernet/amazon/ena/ena_ethtool.c): `rx_drops` (the device's
//!   receive drops, reported through the keep-alive event, ena_stats_global_strings),
//!   `bw_in_allowance_exceeded`, `pps_allowance_exceeded` (ena_stats_eni_strings), and per
//!   queue `queue_N_rx_cnt`, `queue_N_rx_bytes`;
//! - `ixgbe` (ixgbe_ethtool.c): `rx_missed_errors` (the MPC registers: no descriptor),
//!   per queue `rx_queue_N_packets`, `rx_queue_N_bytes`;
//! - `mlx5` (en_stats.c): `rx_out_of_buffer` (the vport's out-of-buffer counter), per queue
//!   `rxN_packets`, `rxN_bytes`;
//! - `virtio` (virtio_net.c): per queue `rx_queue_N_packets`, `rx_queue_N_bytes`,
//!   `rx_queue_N_drops` (a virtio guest never sees the host drop for want of buffers:
//!   tcplab counts the ring's drops there).
//!
//! plus `time_squeeze` (from /proc/net/softnet_stat, not `ethtool -S`). The ENA
//! allowance names are used for an allowance whatever the driver.

use std::collections::VecDeque;

use crate::config::NicConfig;
use crate::event::{EventKind, EventQueue};
use crate::host::cpu::{CpuAccount, CpuModel};
use crate::packet::Packet;
use crate::time::NEVER;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    Ena,
    Ixgbe,
    Mlx5,
    Virtio,
}

impl Driver {
    pub fn parse(s: &str) -> Option<Driver> {
        Some(match s {
            "ena" => Driver::Ena,
            "ixgbe" => Driver::Ixgbe,
            "mlx5" | "mlx5_core" => Driver::Mlx5,
            "virtio" | "virtio_net" => Driver::Virtio,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Driver::Ena => "ena",
            Driver::Ixgbe => "ixgbe",
            Driver::Mlx5 => "mlx5",
            Driver::Virtio => "virtio",
        }
    }
}

#[derive(Debug, Default)]
struct RxQueue {
    ring: VecDeque<Packet>,
    packets: u64,
    bytes: u64,
    drops: u64,
    on_poll_list: bool,
}

#[derive(Debug)]
pub struct Nic {
    pub driver: Driver,
    pub rx_ring: u32,
    ring_cap: usize,
    /// The host's node (packets for it, not forwarded ones, may be TCP's skbs).
    node: u32,
    /// GRO is off: each packet for the host is an skb of TCP's (`rx_skb_ns` in its poll).
    rx_skb_per_packet: bool,
    /// A poll ended with work left: [`Nic::schedule_next`] is owed.
    next_owed: bool,
    napi_weight: u32,
    netdev_budget: i64,
    netdev_budget_ns: u64,
    irq_delay_ns: u64,
    queues: Vec<RxQueue>,
    /// Queues whose NAPI instance is scheduled, in poll order.
    poll_list: VecDeque<u32>,
    /// A softirq round is scheduled or running.
    polling: bool,
    /// Packets the current `napi_poll()` processed.
    cur_work: u32,
    round_budget: i64,
    round_start_ns: u64,
    /// The time of the scheduled poll event (NEVER: none).
    pending_poll_ns: u64,
    /// Packets in the rings.
    held: u64,
    pub time_squeeze: u64,
    /// How the last `on_poll` left its `napi_poll()`: still running, or ended having used
    /// its whole weight, or completed (`napi_complete_done()`): the GRO flush points.
    pub poll_end: PollEnd,
}

/// See [`Nic::poll_end`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollEnd {
    Running,
    Weight,
    Complete,
}

impl Nic {
    pub fn new(cfg: &NicConfig) -> Nic {
        Nic::build(cfg, cfg.rx_ring as usize)
    }

    /// The NIC of a host that has a CPU model but no `nic`: an unbounded ring emptied at no
    /// cost, so packets that arrive while the host is off wait for its next slice.
    pub fn ideal() -> Nic {
        let cfg = NicConfig {
            rx_cost_ns: 0,
            napi_weight: u32::MAX,
            netdev_budget: u32::MAX,
            netdev_budget_ns: u64::MAX / 4,
            irq_delay_ns: 0,
            ..NicConfig::default()
        };
        Nic::build(&cfg, usize::MAX)
    }

    fn build(cfg: &NicConfig, ring_cap: usize) -> Nic {
        let queues = (0..cfg.rx_queues.max(1))
            .map(|_| RxQueue {
                ring: VecDeque::with_capacity(ring_cap.min(4096)),
                ..Default::default()
            })
            .collect();
        Nic {
            driver: Driver::parse(&cfg.driver).unwrap_or(Driver::Ena),
            rx_ring: cfg.rx_ring,
            ring_cap,
            node: u32::MAX,
            rx_skb_per_packet: false,
            next_owed: false,
            napi_weight: cfg.napi_weight.max(1),
            netdev_budget: cfg.netdev_budget as i64,
            netdev_budget_ns: cfg.netdev_budget_ns,
            irq_delay_ns: cfg.irq_delay_ns,
            queues,
            poll_list: VecDeque::with_capacity(cfg.rx_queues as usize),
            polling: false,
            cur_work: 0,
            round_budget: 0,
            round_start_ns: 0,
            pending_poll_ns: NEVER,
            held: 0,
            time_squeeze: 0,
            poll_end: PollEnd::Running,
        }
    }

    /// The host's node, and whether its GRO is off (each packet for it is an skb).
    pub fn set_host(&mut self, node: u32, gro: bool) {
        self.node = node;
        self.rx_skb_per_packet = !gro;
    }

    pub fn rx_queues(&self) -> u32 {
        self.queues.len() as u32
    }

    /// Packets waiting in the rings.
    pub fn ring_used(&self) -> u64 {
        self.held
    }

    pub fn ring_drops(&self) -> u64 {
        self.queues.iter().map(|q| q.drops).sum()
    }

    pub fn data_held(&self) -> u64 {
        self.queues
            .iter()
            .map(|q| q.ring.iter().filter(|p| p.is_data()).count() as u64)
            .sum()
    }

    /// Nothing waits and no poll runs: a packet may go straight to TCP.
    #[inline]
    pub fn idle(&self) -> bool {
        !self.polling
    }

    /// RSS: the queue of a packet's flow (a fixed mix of the receiving endpoint and the
    /// sending node, so both directions and every run agree).
    #[inline]
    fn queue_of(&self, pkt: &Packet) -> usize {
        if self.queues.len() == 1 {
            return 0;
        }
        let mut x = (pkt.dst_ep as u64) << 32 | pkt.src_node as u64;
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        (x % self.queues.len() as u64) as usize
    }

    /// Put a packet on its ring at `now_ns`; a full ring gives it back (dropped).
    pub fn enqueue(
        &mut self,
        pkt: Packet,
        now_ns: u64,
        cpu: Option<&CpuModel>,
        acct: &mut CpuAccount,
        id: u32,
        ev: &mut EventQueue,
    ) -> Result<(), Packet> {
        let qi = self.queue_of(&pkt);
        let q = &mut self.queues[qi];
        if q.ring.len() >= self.ring_cap {
            q.drops += 1;
            return Err(pkt);
        }
        q.ring.push_back(pkt);
        self.held += 1;
        if !q.on_poll_list {
            q.on_poll_list = true;
            self.poll_list.push_back(qi as u32);
        }
        if !self.polling {
            // The interrupt schedules NAPI; the softirq runs once the host has its CPU.
            self.polling = true;
            let irq = now_ns.saturating_add(self.irq_delay_ns);
            let start = cpu.map_or(irq, |c| c.next_on(irq));
            self.round_start_ns = start;
            self.round_budget = self.netdev_budget;
            self.cur_work = 0;
            let done = self.cpu_after(cpu, acct, start);
            self.schedule(done, id, ev);
        }
        Ok(())
    }

    /// The next packet's processing, asked for at `t_ns`: when it ends.
    #[inline]
    fn cpu_after(&self, cpu: Option<&CpuModel>, acct: &mut CpuAccount, t_ns: u64) -> u64 {
        let mut cost = acct.rx_packet_ns;
        if self.rx_skb_per_packet && acct.rx_skb_ns > 0 {
            let head = self
                .poll_list
                .front()
                .and_then(|&q| self.queues[q as usize].ring.front());
            if head.is_some_and(|p| p.dst_node == self.node) {
                cost += acct.rx_skb_ns;
            }
        }
        acct.run(cpu, t_ns, cost)
    }

    fn schedule(&mut self, at_ns: u64, id: u32, ev: &mut EventQueue) {
        self.pending_poll_ns = at_ns;
        ev.push(at_ns, EventKind::NicPoll, id);
    }

    /// A poll event fired: the packet whose processing ends now, for TCP. The next poll is
    /// scheduled by [`Nic::schedule_next`] once the caller has handed this packet on.
    pub fn on_poll(&mut self, now_ns: u64) -> Option<Packet> {
        if now_ns != self.pending_poll_ns {
            return None;
        }
        self.pending_poll_ns = NEVER;
        self.poll_end = PollEnd::Running;
        let qi = *self.poll_list.front()? as usize;
        let q = &mut self.queues[qi];
        let pkt = q.ring.pop_front()?;
        self.held -= 1;
        q.packets += 1;
        q.bytes += pkt.ip_bytes as u64;
        self.cur_work += 1;
        self.round_budget -= 1;
        let emptied = q.ring.is_empty();
        if emptied || self.cur_work >= self.napi_weight {
            // End of this napi_poll(): complete, or back to the tail of the poll list.
            self.poll_list.pop_front();
            if emptied {
                q.on_poll_list = false;
                self.poll_end = PollEnd::Complete;
            } else {
                self.poll_end = PollEnd::Weight;
                self.poll_list.push_back(qi as u32);
            }
            self.cur_work = 0;
            // net_rx_action(): the round ends on budget or time, counting a squeeze.
            if self.round_budget <= 0
                || now_ns >= self.round_start_ns.saturating_add(self.netdev_budget_ns)
            {
                self.time_squeeze += 1;
                self.round_budget = self.netdev_budget;
                self.round_start_ns = now_ns;
            }
        }
        if self.poll_list.is_empty() {
            self.polling = false;
        } else {
            self.next_owed = true;
        }
        Some(pkt)
    }

    /// After a poll that left work: the next packet's processing, queued on the CPU behind
    /// what handing the last one on asked of it.
    pub fn schedule_next(
        &mut self,
        now_ns: u64,
        cpu: Option<&CpuModel>,
        acct: &mut CpuAccount,
        id: u32,
        ev: &mut EventQueue,
    ) {
        if std::mem::take(&mut self.next_owed) {
            let done = self.cpu_after(cpu, acct, now_ns);
            self.schedule(done, id, ev);
        }
    }

    /// The driver's counters, named as its `ethtool -S` prints them (module docs).
    pub fn ethtool(&self, allowance: Option<(u64, u64)>) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let drops = self.ring_drops();
        match self.driver {
            Driver::Ena => out.push(("rx_drops".to_string(), drops)),
            Driver::Ixgbe => out.push(("rx_missed_errors".to_string(), drops)),
            Driver::Mlx5 => out.push(("rx_out_of_buffer".to_string(), drops)),
            Driver::Virtio => {}
        }
        if self.driver == Driver::Ena || allowance.is_some() {
            let (bw, pps) = allowance.unwrap_or((0, 0));
            out.push(("bw_in_allowance_exceeded".to_string(), bw));
            out.push(("pps_allowance_exceeded".to_string(), pps));
        }
        for (i, q) in self.queues.iter().enumerate() {
            let names: [String; 2] = match self.driver {
                Driver::Ena => [format!("queue_{i}_rx_cnt"), format!("queue_{i}_rx_bytes")],
                Driver::Ixgbe | Driver::Virtio => [
                    format!("rx_queue_{i}_packets"),
                    format!("rx_queue_{i}_bytes"),
                ],
                Driver::Mlx5 => [format!("rx{i}_packets"), format!("rx{i}_bytes")],
            };
            let [p, b] = names;
            out.push((p, q.packets));
            out.push((b, q.bytes));
            if self.driver == Driver::Virtio {
                out.push((format!("rx_queue_{i}_drops"), q.drops));
            }
        }
        out.push(("time_squeeze".to_string(), self.time_squeeze));
        out
    }
}

/// Checks of a `nic` block, `at` being its path (`nodes.3.nic`).
pub fn validate(cfg: &NicConfig, at: &str) -> Result<(), String> {
    if Driver::parse(&cfg.driver).is_none() {
        return Err(format!(
            "{at}.driver: {:?} is not a known driver (expected ena, ixgbe, mlx5 or virtio)",
            cfg.driver
        ));
    }
    if cfg.rx_ring == 0 || cfg.rx_ring > 1 << 16 {
        return Err(format!(
            "{at}.rx_ring: {} is outside [1, 65536], expected at least 1 descriptor",
            cfg.rx_ring
        ));
    }
    if cfg.rx_queues == 0 || cfg.rx_queues > 1024 {
        return Err(format!(
            "{at}.rx_queues: {} is outside [1, 1024]",
            cfg.rx_queues
        ));
    }
    if cfg.napi_weight == 0 {
        return Err(format!(
            "{at}.napi_weight: 0, expected at least 1 packet per poll"
        ));
    }
    if cfg.netdev_budget == 0 {
        return Err(format!(
            "{at}.netdev_budget: 0, expected at least 1 packet per softirq round"
        ));
    }
    if cfg.netdev_budget_ns == 0 || cfg.netdev_budget_ns > crate::config::MAX_DELAY_NS {
        return Err(format!(
            "{at}.netdev_budget_ns: {} is outside [1, {}] ns",
            cfg.netdev_budget_ns,
            crate::config::MAX_DELAY_NS
        ));
    }
    if cfg.rx_cost_ns > 1_000_000_000 {
        return Err(format!(
            "{at}.rx_cost_ns: {} is outside [0, 1000000000] ns",
            cfg.rx_cost_ns
        ));
    }
    if cfg.irq_delay_ns > crate::config::MAX_DELAY_NS {
        return Err(format!(
            "{at}.irq_delay_ns: {} is outside [0, {}] ns",
            cfg.irq_delay_ns,
            crate::config::MAX_DELAY_NS
        ));
    }
    if let Some(a) = &cfg.allowance {
        crate::host::allowance::validate(a, &format!("{at}.allowance"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(ep: u32) -> Packet {
        Packet {
            dst_ep: ep,
            seq: 0,
            end_seq: 1448,
            ip_bytes: 1500,
            ..Default::default()
        }
    }

    fn acct(cfg: &NicConfig) -> CpuAccount {
        CpuAccount::new(None, cfg.rx_cost_ns, false)
    }

    fn drain(nic: &mut Nic, a: &mut CpuAccount, ev: &mut EventQueue) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        while let Some(e) = ev.pop() {
            if let Some(p) = nic.on_poll(e.at_ns) {
                out.push((e.at_ns, p.dst_ep));
                nic.schedule_next(e.at_ns, None, a, 0, ev);
            }
        }
        out
    }

    #[test]
    fn a_full_ring_drops_and_the_poll_drains_at_the_cost() {
        let cfg = NicConfig {
            rx_ring: 4,
            rx_cost_ns: 1_000,
            irq_delay_ns: 500,
            ..NicConfig::default()
        };
        let mut nic = Nic::new(&cfg);
        let mut a = acct(&cfg);
        let mut ev = EventQueue::default();
        let mut dropped = 0;
        for i in 0..6 {
            dropped += nic.enqueue(pkt(i), 100, None, &mut a, 0, &mut ev).is_err() as u32;
        }
        assert_eq!((dropped, nic.ring_drops(), nic.ring_used()), (2, 2, 4));
        let got = drain(&mut nic, &mut a, &mut ev);
        // IRQ at 600, then one packet per microsecond, in order.
        assert_eq!(got, vec![(1_600, 0), (2_600, 1), (3_600, 2), (4_600, 3)]);
        assert!(nic.idle());
        let names: Vec<String> = nic.ethtool(None).into_iter().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "rx_drops",
                "bw_in_allowance_exceeded",
                "pps_allowance_exceeded",
                "queue_0_rx_cnt",
                "queue_0_rx_bytes",
                "time_squeeze"
            ]
        );
    }

    #[test]
    fn weight_round_robins_queues_and_budget_counts_squeezes() {
        // Two queues, weight 2, budget 3: polls of 2 alternate; every second poll ends a
        // round (budget 3 - 2 - 2 < 0).
        let cfg = NicConfig {
            rx_queues: 2,
            rx_ring: 64,
            napi_weight: 2,
            netdev_budget: 3,
            rx_cost_ns: 10,
            ..NicConfig::default()
        };
        let mut nic = Nic::new(&cfg);
        let mut acc = acct(&cfg);
        let mut ev = EventQueue::default();
        // Find two endpoints that hash to different queues.
        let a = 0;
        let b = (1..100)
            .find(|&e| nic.queue_of(&pkt(e)) != nic.queue_of(&pkt(a)))
            .unwrap();
        for _ in 0..4 {
            nic.enqueue(pkt(a), 0, None, &mut acc, 0, &mut ev).unwrap();
        }
        for _ in 0..4 {
            nic.enqueue(pkt(b), 0, None, &mut acc, 0, &mut ev).unwrap();
        }
        let order: Vec<u32> = drain(&mut nic, &mut acc, &mut ev)
            .into_iter()
            .map(|(_, e)| e)
            .collect();
        assert_eq!(order, vec![a, a, b, b, a, a, b, b]);
        assert_eq!(nic.time_squeeze, 2);
    }

    #[test]
    fn polls_wait_for_the_cpu() {
        use crate::config::CpuConfig;
        let cpu = CpuModel::new(
            &CpuConfig {
                period_ns: 10_000,
                share: 0.5,
                phase_ns: 0,
            },
            0,
        )
        .unwrap(); // on [0, 5) us
        let cfg = NicConfig {
            rx_ring: 8,
            rx_cost_ns: 2_000,
            ..NicConfig::default()
        };
        let mut nic = Nic::new(&cfg);
        let mut a = acct(&cfg);
        let mut ev = EventQueue::default();
        for i in 0..3 {
            nic.enqueue(pkt(i), 6_000, Some(&cpu), &mut a, 0, &mut ev)
                .unwrap();
        }
        let mut got = Vec::new();
        while let Some(e) = ev.pop() {
            if nic.on_poll(e.at_ns).is_some() {
                got.push(e.at_ns);
                nic.schedule_next(e.at_ns, Some(&cpu), &mut a, 0, &mut ev);
            }
        }
        // Arrived off-CPU: processing starts at 10 us; the third packet straddles the end
        // of the slice (1 us before 15 us, 1 us from 20 us).
        assert_eq!(got, vec![12_000, 14_000, 21_000]);
    }

    #[test]
    fn bad_input_names_the_field() {
        let e = validate(
            &NicConfig {
                rx_ring: 0,
                ..NicConfig::default()
            },
            "nodes.2.nic",
        )
        .unwrap_err();
        assert_eq!(
            e,
            "nodes.2.nic.rx_ring: 0 is outside [1, 65536], expected at least 1 descriptor"
        );
        let e = validate(
            &NicConfig {
                rx_queues: 0,
                ..NicConfig::default()
            },
            "n",
        )
        .unwrap_err();
        assert!(e.starts_with("n.rx_queues: 0 is outside"), "{e}");
        let e = validate(
            &NicConfig {
                napi_weight: 0,
                ..NicConfig::default()
            },
            "n",
        )
        .unwrap_err();
        assert!(e.starts_with("n.napi_weight: 0"), "{e}");
        let e = validate(
            &NicConfig {
                driver: "e1000".into(),
                ..NicConfig::default()
            },
            "n",
        )
        .unwrap_err();
        assert!(
            e.starts_with("n.driver: \"e1000\" is not a known driver"),
            "{e}"
        );
        validate(&NicConfig::default(), "n").unwrap();
    }
}
