"""A minimal two-namespace testbed for the agent's own tests: ``{prefix}-a`` and
``{prefix}-b`` joined by one veth pair, node addresses 10.0.0.1 / 10.0.0.2 (/32 on ``lo``, as
tcplab.results.ss.node_address numbers nodes 0 and 1), offloads off, and an optional tbf
on a's egress. Not the product's Testbed (tcplab.kernel.testbed): a fixture that needs
nothing but ip/tc/ethtool, removed by :meth:`Pair.down` whatever happened."""

from __future__ import annotations

import subprocess


def sh(*args: str) -> str:
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=20, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}")
    return done.stdout


NFT_LOSS = """table inet tcplab {{
  chain input {{
    type filter hook input priority 0; policy accept;
    iifname "eth0" ip length >= 81 counter comment "link=0 seen"
    iifname "eth0" ip length >= 81 numgen random mod 1000000 < {ppm} counter drop comment "link=0 loss"
  }}
}}
"""


class Pair:
    def __init__(self, prefix: str, rate: str | None = "50mbit", loss_ppm: int = 0):
        self.prefix = prefix
        self.a, self.b = f"{prefix}-a", f"{prefix}-b"
        self.rate = rate
        self.loss_ppm = loss_ppm

    def up(self) -> Pair:
        existing = sh("ip", "netns", "list")
        for ns in (self.a, self.b):
            if any(line.split()[0] == ns for line in existing.splitlines() if line.strip()):
                raise RuntimeError(f"network namespace {ns} exists already")
        try:
            sh("ip", "netns", "add", self.a)
            sh("ip", "netns", "add", self.b)
            sh("ip", "-n", self.a, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", self.b)
            for ns, lo_addr, link_addr, peer_link, peer_lo in (
                (self.a, "10.0.0.1", "10.254.0.1", "10.254.0.2", "10.0.0.2"),
                (self.b, "10.0.0.2", "10.254.0.2", "10.254.0.1", "10.0.0.1"),
            ):
                sh("ip", "-n", ns, "link", "set", "lo", "up")
                sh("ip", "-n", ns, "addr", "add", f"{lo_addr}/32", "dev", "lo")
                sh("ip", "-n", ns, "addr", "add", f"{link_addr}/30", "dev", "eth0")
                sh("ip", "netns", "exec", ns, "ethtool", "-K", "eth0", "tso", "off", "gso", "off", "gro", "off")
                sh("ip", "-n", ns, "link", "set", "eth0", "up")
                sh("ip", "-n", ns, "route", "add", f"{peer_lo}/32", "via", peer_link, "src", lo_addr)
            if self.rate:
                sh(
                    "tc",
                    "-n",
                    self.a,
                    "qdisc",
                    "replace",
                    "dev",
                    "eth0",
                    "root",
                    "handle",
                    "1:",
                    "tbf",
                    "rate",
                    self.rate,
                    "burst",
                    "30000",
                    "limit",
                    "300000",
                )
            if self.loss_ppm:
                # random loss of a's data segments as b receives them (after a's queue; a drop
                # on a's own output would be a local send error, not a loss), counted as
                # tcplab.kernel.plan's wire rules count (comments "link=0 seen" / "link=0 loss")
                sh("ip", "netns", "exec", self.b, "nft", NFT_LOSS.format(ppm=self.loss_ppm))
        except Exception:
            self.down()
            raise
        return self

    def down(self) -> None:
        for ns in (self.a, self.b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=20, check=False)


class _Node:
    def __init__(self, node: str, index: int, ns: str):
        self.node, self.index, self.kind, self.ns = node, index, "host", ns


class _Flow:
    def __init__(self, **kw: object):
        self.__dict__.update(kw)


class PairPlan:
    """The few Plan attributes the agent and the measurements read (tcplab.kernel.plan.Plan's
    names), for a two-host config on a :class:`Pair`."""

    def __init__(self, config: dict, prefix: str):
        from tcplab.results.ss import CLIENT_PORT_BASE, node_address, server_port

        self.prefix = prefix
        names = [n["name"] for n in config["nodes"]]
        self.nodes = [_Node(n, i, f"{prefix}-{n}") for i, n in enumerate(names)]
        # the nft loss table of Pair(loss_ppm=...) is in b (tcplab.kernel.plan's wires hold it)
        self.wires = [_Flow(ns=f"{prefix}-b", nft="table inet tcplab")]
        self.duration_ns = int(config["duration_ns"])
        self.sample_interval_ns = int(config["sample_interval_ns"])
        apps = {i: a["spec"] for a in config.get("apps", []) for i in a["flows"]}
        self.flows = []
        for i, f in enumerate(config["flows"]):
            app = apps.get(i, f["app"])
            src, dst = int(f["src"]), int(f["dst"])
            self.flows.append(
                _Flow(
                    index=i,
                    name=f["name"],
                    client_node=names[src],
                    client_addr=node_address(src),
                    client_port=CLIENT_PORT_BASE + i,
                    server_node=names[dst],
                    server_addr=node_address(dst),
                    server_port=server_port(app["kind"]),
                    cc=f["cc"],
                    app=app,
                    start_ns=int(f["start_ns"]),
                    stop_ns=f["stop_ns"],
                    data_side=f.get("data_side", "client"),
                )
            )
        self.queue_devices = {f"{prefix}-{n}": [] for n in names}
        from tcplab.results.tc import link_devices

        for k, (node, dev) in enumerate(link_devices(config)):
            self.queue_devices[f"{prefix}-{node}"].append((dev, k))

    def ns_of(self, node: str) -> str:
        return f"{self.prefix}-{node}"
