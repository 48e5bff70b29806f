//! The simulator: builds the network and the endpoints from a [`SimConfig`], runs the
//! event loop, samples time series, and checks at the end that every data packet is
//! accounted for (delivered, dropped for a counted reason, or still inside a link).
//!
//! Clock: the engine starts at `BOOT_NS` (1 s) rather than 0, because Linux's TCP reads
//! a zero timestamp as "unset" (`tcp_mstamp`, `epoch_start`, `delivered_mstamp`); a real
//! host's clock is never 0. All times reported to callers are relative to the start of
//! the scenario.

use crate::cc::CongestionOps;
use crate::config::{NodeKind, SimConfig};
use crate::event::{EventKind, EventQueue};
use crate::metrics::histogram::LogHistogram;
use crate::metrics::timeseries::{FlowSeries, QueueSeries};
use crate::mib::{Mib, MibCounters};
use crate::net::link::Link;
use crate::net::qdisc::QdiscStats;
use crate::net::link::WireStats;
use crate::net::routing::Routes;
use crate::net::{DataAccounting, Network};
use crate::tcp::rate::delivery_rate_bytes_per_sec;
use crate::tcp::socket::{Ctx, TcpSocket, T_DELACK, T_PACING, T_XMIT};
use crate::time::NEVER;

/// Engine time of the scenario's t = 0.
pub const BOOT_NS: u64 = 1_000_000_000;

#[derive(Clone, Debug)]
pub struct RttSummary {
    pub count: u64,
    pub min_us: u64,
    pub mean_us: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

impl RttSummary {
    fn from_hist(h: &LogHistogram) -> Self {
        RttSummary {
            count: h.count,
            min_us: if h.count == 0 { 0 } else { h.min },
            mean_us: h.mean(),
            p50_us: h.quantile(0.5),
            p90_us: h.quantile(0.9),
            p99_us: h.quantile(0.99),
            max_us: h.max,
        }
    }
}

#[derive(Clone, Debug)]
pub struct FlowSummary {
    pub name: String,
    pub src: u32,
    pub dst: u32,
    pub cc: String,
    pub start_ns: u64,
    pub end_ns: u64,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub data_segs_out: u64,
    pub retrans_segs: u64,
    pub timeouts: u64,
    pub rtt: RttSummary,
    pub counters: MibCounters,
}

#[derive(Clone, Debug)]
pub struct LinkSummary {
    pub name: String,
    pub from: u32,
    pub to: u32,
    pub qdisc: &'static str,
    pub stats: QdiscStats,
    pub wire: WireStats,
}

#[derive(Clone, Debug)]
pub struct HostSummary {
    pub name: String,
    pub counters: MibCounters,
}

#[derive(Clone, Debug)]
pub struct Invariant {
    pub ok: bool,
    pub data: DataAccounting,
    pub in_flight: u64,
    pub message: String,
}

pub struct SimOutput {
    pub flows: Vec<FlowSummary>,
    pub links: Vec<LinkSummary>,
    pub hosts: Vec<HostSummary>,
    pub invariant: Invariant,
    pub series: FlowSeries,
    pub queues: QueueSeries,
    pub events: u64,
    /// Link transmissions (a packet crossing three links counts three times).
    pub packets: u64,
    /// Packets sent by hosts, each counted once however many links it crosses.
    pub host_packets: u64,
}

pub struct Simulator {
    cfg: SimConfig,
    net: Network,
    ev: EventQueue,
    socks: Vec<TcpSocket>,
    now_ns: u64,
    end_ns: u64,
    events: u64,
    series: FlowSeries,
    queues: QueueSeries,
}

impl Simulator {
    pub fn new(cfg: SimConfig) -> Result<Simulator, String> {
        cfg.validate()?;
        let links: Vec<Link> = cfg.links.iter().map(|l| Link::new(l, cfg.seed)).collect();
        let pairs: Vec<(u32, u32)> = cfg.links.iter().map(|l| (l.from, l.to)).collect();
        let forwards: Vec<bool> = cfg.nodes.iter().map(|n| n.kind == NodeKind::Router).collect();
        let routes = Routes::build(cfg.nodes.len(), &pairs, &forwards);
        for (i, f) in cfg.flows.iter().enumerate() {
            if routes.path(f.src, f.dst, &pairs).is_none() || routes.path(f.dst, f.src, &pairs).is_none() {
                return Err(format!(
                    "flows.{i}: no route between {} and {}",
                    cfg.nodes[f.src as usize].name, cfg.nodes[f.dst as usize].name
                ));
            }
        }
        let net = Network {
            links,
            routes,
            data: DataAccounting::default(),
            packets_transmitted: 0,
            host_packets: 0,
        };
        let end_ns = BOOT_NS + cfg.duration_ns;
        let mut socks = Vec::with_capacity(cfg.flows.len() * 2);
        let mut ev = EventQueue::with_capacity(1024 + cfg.flows.len() * 8 + cfg.links.len() * 4);
        for (i, f) in cfg.flows.iter().enumerate() {
            let hz = |node: u32| cfg.nodes[node as usize].hz;
            let (c, s) = TcpSocket::pair(f, i as u32, cfg.seed, BOOT_NS, end_ns, hz(f.src), hz(f.dst));
            socks.push(c);
            socks.push(s);
            if f.start_ns < cfg.duration_ns {
                ev.push(BOOT_NS + f.start_ns, EventKind::App, i as u32);
            }
        }
        let rows = cfg.duration_ns.checked_div(cfg.sample_interval_ns).map_or(0, |n| n as usize + 2);
        if cfg.sample_interval_ns > 0 {
            ev.push(BOOT_NS, EventKind::Sample, 0);
        }
        // Reserve the time series up front (no reallocation while sampling), but not beyond
        // ~1M rows: very large scenarios grow as they go instead.
        let series = FlowSeries::with_capacity((rows * cfg.flows.len()).min(1 << 20));
        let queues = QueueSeries::with_capacity((rows * cfg.links.len()).min(1 << 20));
        Ok(Simulator { cfg, net, ev, socks, now_ns: BOOT_NS, end_ns, events: 0, series, queues })
    }

    /// Simulated time since the scenario start, ns.
    pub fn now_rel_ns(&self) -> u64 {
        self.now_ns - BOOT_NS
    }

    pub fn duration_ns(&self) -> u64 {
        self.cfg.duration_ns
    }

    /// Process every event due at or before scenario time `until_rel_ns`.
    pub fn run_until(&mut self, until_rel_ns: u64) {
        let until = (BOOT_NS + until_rel_ns).min(self.end_ns);
        while let Some(t) = self.ev.peek_time() {
            if t > until {
                break;
            }
            let e = self.ev.pop().unwrap();
            self.now_ns = e.at_ns;
            self.events += 1;
            self.dispatch(e.kind(), e.id());
        }
        if self.now_ns < until {
            self.now_ns = until;
        }
    }

    #[inline]
    fn dispatch(&mut self, kind: EventKind, id: u32) {
        let now = self.now_ns;
        match kind {
            EventKind::LinkTxDone => {
                // TX completion for TSQ: a data packet left its sender's NIC.
                if let Some(c) = self.net.on_tx_done(id, now, &mut self.ev) {
                    let ep = c.ep;
                    let mut ctx = Ctx { now_ns: now, net: &mut self.net, ev: &mut self.ev };
                    self.socks[ep as usize].on_tx_complete(&mut ctx, c.seq, c.payload_bytes);
                    self.sync_timers(ep);
                }
            }
            EventKind::LinkArrive => {
                let Some(pkt) = self.net.links[id as usize].on_arrive(now, id, &mut self.ev) else { return };
                let node = self.net.links[id as usize].to;
                if node == pkt.dst_node {
                    if pkt.is_data() {
                        self.net.data.received += 1;
                    }
                    let ep = pkt.dst_ep;
                    let mut ctx = Ctx { now_ns: now, net: &mut self.net, ev: &mut self.ev };
                    self.socks[ep as usize].on_packet(&mut ctx, &pkt);
                    self.sync_timers(ep);
                } else {
                    self.net.forward(node, pkt, now, &mut self.ev);
                }
            }
            EventKind::XmitTimer | EventKind::DelackTimer | EventKind::PacingTimer => {
                let slot = match kind {
                    EventKind::XmitTimer => T_XMIT,
                    EventKind::DelackTimer => T_DELACK,
                    _ => T_PACING,
                };
                let s = &mut self.socks[id as usize];
                if s.sched_ns[slot] != now {
                    return; // superseded
                }
                s.sched_ns[slot] = NEVER;
                if s.deadlines()[slot] <= now {
                    let mut ctx = Ctx { now_ns: now, net: &mut self.net, ev: &mut self.ev };
                    match slot {
                        T_XMIT => s.on_xmit_timer(&mut ctx),
                        T_DELACK => s.on_delack_timer(&mut ctx),
                        _ => s.on_pacing_timer(&mut ctx),
                    }
                }
                self.sync_timers(id);
            }
            EventKind::App => {
                let ep = 2 * id;
                let mut ctx = Ctx { now_ns: now, net: &mut self.net, ev: &mut self.ev };
                self.socks[ep as usize].connect(&mut ctx);
                self.sync_timers(ep);
            }
            EventKind::Sample => {
                self.sample();
                let next = now + self.cfg.sample_interval_ns;
                if next <= self.end_ns {
                    self.ev.push(next, EventKind::Sample, 0);
                }
            }
        }
    }

    /// Keep one event queued per timer at its earliest deadline.
    #[inline]
    fn sync_timers(&mut self, ep: u32) {
        let s = &mut self.socks[ep as usize];
        let d = s.deadlines();
        for (slot, kind) in [(T_XMIT, EventKind::XmitTimer), (T_DELACK, EventKind::DelackTimer), (T_PACING, EventKind::PacingTimer)] {
            let at = d[slot];
            if at != NEVER && at < s.sched_ns[slot] {
                let at = at.max(self.now_ns);
                s.sched_ns[slot] = at;
                self.ev.push(at, kind, ep);
            }
        }
    }

    fn sample(&mut self) {
        let t = self.now_ns - BOOT_NS;
        for (i, _) in self.cfg.flows.iter().enumerate() {
            let c = &self.socks[2 * i];
            let srv = &self.socks[2 * i + 1];
            let tp = &c.tp;
            let info = c.cc.get_info(tp);
            let s = &mut self.series;
            s.t_ns.push(t);
            s.flow.push(i as u32);
            s.cwnd.push(tp.snd_cwnd);
            s.ssthresh.push(tp.snd_ssthresh);
            s.srtt_us.push(tp.srtt_us >> 3);
            s.rttvar_us.push(tp.rttvar_us);
            s.min_rtt_us.push(if tp.min_rtt_us() == u32::MAX { 0 } else { tp.min_rtt_us() });
            s.pacing_rate_bps.push(tp.sk_pacing_rate.saturating_mul(8));
            s.delivery_rate_bps.push(delivery_rate_bytes_per_sec(tp) * 8);
            s.inflight.push(tp.packets_in_flight());
            s.bytes_acked.push(tp.bytes_acked);
            s.bytes_received.push(srv.rcv.bytes_received);
            s.retrans_segs.push(tp.total_retrans as u64);
            s.lost.push(tp.lost as u64);
            s.ca_state.push(tp.ca_state as u8);
            s.cc_mode.push(info.mode);
            s.bbr_bw_bps.push(info.bw_bps);
            s.pacing_gain.push(info.pacing_gain as f64 / 256.0);
            s.cwnd_gain.push(info.cwnd_gain as f64 / 256.0);
        }
        let now = self.now_ns;
        for (i, l) in self.net.links.iter_mut().enumerate() {
            l.advance(now);
            let q = &mut self.queues;
            q.t_ns.push(t);
            q.link.push(i as u32);
            q.backlog_packets.push(l.qdisc.stats.backlog_packets);
            q.backlog_bytes.push(l.qdisc.stats.backlog_bytes);
            q.drops.push(l.qdisc.stats.drops);
        }
    }

    /// Run to the end and collect the results.
    pub fn run(mut self) -> SimOutput {
        let d = self.cfg.duration_ns;
        self.run_until(d);
        self.finish()
    }

    pub fn finish(mut self) -> SimOutput {
        let now = self.now_ns;
        for l in self.net.links.iter_mut() {
            l.advance(now);
        }
        let in_flight = self.net.data_in_flight();
        let d = &self.net.data;
        let accounted = d.received + d.dropped_queue + d.dropped_loss + d.dropped_drop_list + d.dropped_no_route + in_flight;
        let ok = accounted == d.sent;
        let message = if ok {
            format!("all {} data packets accounted for", d.sent)
        } else {
            format!("data packets: {} sent but {} accounted for (received {}, dropped {}, in flight {})",
                d.sent, accounted, d.received, d.dropped_queue + d.dropped_loss + d.dropped_drop_list + d.dropped_no_route, in_flight)
        };
        let invariant = Invariant { ok, data: d.clone(), in_flight, message };

        let mut hosts: Vec<HostSummary> = self
            .cfg
            .nodes
            .iter()
            .map(|n| HostSummary { name: n.name.clone(), counters: MibCounters::default() })
            .collect();
        for s in &self.socks {
            hosts[s.node as usize].counters.merge(&s.tp.mib);
        }
        let mut flows = Vec::with_capacity(self.cfg.flows.len());
        for (i, f) in self.cfg.flows.iter().enumerate() {
            let c = &self.socks[2 * i];
            let srv = &self.socks[2 * i + 1];
            let start = f.start_ns;
            let end = c.app.done_ns.map(|t| t - BOOT_NS).unwrap_or(self.cfg.duration_ns).max(start);
            let mut counters = c.tp.mib.clone();
            counters.merge(&srv.tp.mib);
            flows.push(FlowSummary {
                name: f.name.clone(),
                src: f.src,
                dst: f.dst,
                cc: c.cc.name().to_string(),
                start_ns: start,
                end_ns: end,
                bytes_sent: c.tp.bytes_sent,
                bytes_retrans: c.tp.bytes_retrans,
                bytes_acked: c.tp.bytes_acked,
                bytes_received: srv.rcv.bytes_received,
                data_segs_out: c.tp.data_segs_out as u64,
                retrans_segs: c.tp.total_retrans as u64,
                timeouts: c.tp.mib.get(Mib::TCPTimeouts),
                rtt: RttSummary::from_hist(&c.stats.rtt_hist),
                counters,
            });
        }
        let links = self
            .net
            .links
            .iter()
            .map(|l| LinkSummary {
                name: l.name.clone(),
                from: l.from,
                to: l.to,
                qdisc: l.qdisc.kind(),
                stats: l.qdisc.stats.clone(),
                wire: l.wire.clone(),
            })
            .collect();
        SimOutput {
            flows,
            links,
            hosts,
            invariant,
            series: self.series,
            queues: self.queues,
            events: self.events,
            packets: self.net.packets_transmitted,
            host_packets: self.net.host_packets,
        }
    }

    /// Endpoint access for tests.
    pub fn socket(&self, ep: usize) -> &TcpSocket {
        &self.socks[ep]
    }
}
