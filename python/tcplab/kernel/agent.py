"""The traffic agent of a kernel run: one per host network namespace.

``ip netns exec NS python -m tcplab.kernel.agent SPEC.json`` runs the node's flow endpoints
on the running kernel's TCP and samples its sockets with ``ss``. The model, per flow (one
TCP connection, as in the simulator):

* the *client* socket (``connect`` entries) is on the flow's ``from`` node, bound to the
  node's address and the port ``32768 + flow index`` (what :mod:`tcplab.results.ss` prints for
  a simulated client), and connects at ``t0 + start_ns`` to the *server* socket, accepted by a
  listener (``listen`` entries) on the server's address and application port;
* both sockets get the flow's congestion control with ``setsockopt(IPPROTO_TCP,
  TCP_CONGESTION)`` (the listener too, so the accepted socket inherits it, as in Linux
  v6.12 net/ipv4/tcp_cong.c: tcp_assign_congestion_control() for a child of a listener with
  ``icsk_ca_setsockopt``), never through the namespace's default;
* the data side (``data_side``: ``client`` for bulk, ``server`` for maerts) writes 1 MiB
  chunks as fast as the socket takes them (netperf TCP_STREAM: the sender always has data) or
  ``bytes`` in all and then shuts its side down (FIN); the other side reads everything as it
  arrives into a 1 MiB buffer (netperf's receiver); writing stops at ``stop_ns``;
* ``rr`` (netperf TCP_RR, as the simulator's rr app, crates/tcplab-core/src/app/rr.rs): the
  client writes ``request_bytes``, the server reads a whole request and writes
  ``response_bytes``; when the client has read the whole response the transaction is done
  (latency: the request's write to the read of the response's last byte) and the next
  request goes out after ``think_ns``. Each flow is one instance; ``parallel`` instances are
  parallel flows in the configuration already.

Threads do the socket work (the GIL is released in send/recv/poll); the process is pinned to
the SPEC's CPU (``os.sched_setaffinity``) so the traffic stays away from the delay line's.

Sampling: an ``ss`` thread takes what ``ss -tinH state connected src ADDR`` would print
(every TCP socket of the node's address but the listeners) at ``t0 + k * sample_interval_ns``
for k = 0, 1, ... up to the duration, on an absolute schedule (a late sample does not delay
the next one; a sample more than one interval late is skipped and counted as missed),
appending ``# t_ns=N`` (the sample's start, ns since t0) and the sockets' lines to
``ss-samples-NODE.txt``. It reads them in-process, with getsockopt and ioctl, and prints
them as ss does (:mod:`tcplab.kernel.ss_line`): running ``ss`` itself every 100 ms made the
traffic's ACKs stall at every sample on a 2-CPU machine. Each sample also keeps every
endpoint socket's ``tcpi_ca_state`` (ss does not print the CA state) in the JSON per
endpoint (``ca_state``: ``t_ns``, ``state``). How late each
sample started is summarised in the agent's JSON (``ss.late_ns``: p50/p99/max, the count
later than half an interval, missed).

At ``t0 + duration_ns`` (or on SIGTERM/SIGINT) the agent reads TCP_INFO of every endpoint
socket (:mod:`tcplab.kernel.tcpinfo`) before closing any, and writes ``agent-NODE.json``
atomically (``version``, ``node``, ``endpoints`` with bytes written/read as at that moment,
times in ns since t0, the final ``tcp_info``, rr transactions; ``errors``; ``ss``). It prints
``ready`` on stdout once its listeners listen, and exits by ``t0 + duration_ns + 1 s``.

Times: CLOCK_MONOTONIC (``time.monotonic_ns``), shared by every network namespace, so the
parent's t0 is the agents' t0.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcplab.kernel.names import agent_file, agent_stderr_file, node_ns, spec_file, ss_samples_file
from tcplab.kernel.ss_line import format_socket, read_socket
from tcplab.kernel.tcpinfo import TCP_INFO_SIZE, parse_tcp_info

__all__ = [
    "main",
    "Agent",
    "AGENT_VERSION",
    "CHUNK_BYTES",
    "percentile",
    "agent_app",
    "agent_specs",
    "start_agents",
    "stop_agents",
]

AGENT_VERSION = 1
#: Bytes per write of a bulk sender and per read of a receiver.
CHUNK_BYTES = 1 << 20
#: Socket timeout: how often a blocked worker looks whether the run is over.
_POLL_S = 0.1
#: How long after its start time a client keeps retrying a refused connect (the peer's
#: listener comes up when its agent prints ready, before t0; this covers a slow start).
_CONNECT_RETRY_NS = 3_000_000_000
#: The agent exits at most this long after the end of the run.
_EXIT_GRACE_NS = 1_000_000_000
_ZEROS = bytes(CHUNK_BYTES)


def percentile(sorted_values: list[int], q: float) -> int | None:
    """Nearest rank, as the simulator's apps report percentiles (crates/tcplab-core/src/app/
    stats.rs: percentile_sorted): the value at rank ceil(q * n), clamped to [1, n]."""
    if not sorted_values:
        return None
    n = len(sorted_values)
    rank = int(-(-q * n // 1))
    return sorted_values[min(max(rank, 1), n) - 1]


@dataclass
class Endpoint:
    """One socket of one flow on this node and what its worker counted."""

    flow: int
    role: str  # "client" | "server"
    app: dict[str, Any]
    cc: str
    sends: bool  # writes the flow's data (bulk/maerts); rr: both write
    local: str = ""
    peer: str = ""
    sock: socket.socket | None = None
    start_ns: int | None = None  # connect() called / accepted (ns since t0)
    established_ns: int | None = None
    done_ns: int | None = None  # bytes-limited sender: all written; receiver: EOF read
    acked_ns: int | None = None  # bytes-limited sender: all of it acknowledged
    end_ns: int | None = None  # TCP_INFO read (ns since t0)
    bytes_written: int = 0
    bytes_read: int = 0
    cc_set: str | None = None  # TCP_CONGESTION read back from the socket
    tcp_info: dict[str, int] | None = None
    error: str | None = None
    rr_start_ns: list[int] = field(default_factory=list)
    rr_latency_ns: list[int] = field(default_factory=list)
    #: (bytes written, bytes read, transactions) when TCP_INFO was read
    at_end: tuple[int, int, int] | None = None
    #: tcpi_ca_state at each ss sample's start (ns since t0)
    ca_t_ns: list[int] = field(default_factory=list)
    ca_state: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        written, read, done = self.at_end or (self.bytes_written, self.bytes_read, len(self.rr_latency_ns))
        out = {
            "flow": self.flow,
            "role": self.role,
            "app": self.app.get("kind", "bulk"),
            "sends": self.sends,
            "cc": self.cc,
            "cc_set": self.cc_set,
            "local": self.local,
            "peer": self.peer,
            "start_ns": self.start_ns,
            "established_ns": self.established_ns,
            "done_ns": self.done_ns,
            "acked_ns": self.acked_ns,
            "end_ns": self.end_ns,
            "bytes_written": written,
            "bytes_read": read,
            "error": self.error,
            "tcp_info": self.tcp_info,
            "ca_state": {"t_ns": list(self.ca_t_ns), "state": list(self.ca_state)},
        }
        if self.app.get("kind") == "rr" and self.role == "client":
            out["rr"] = {"start_ns": self.rr_start_ns[:done], "latency_ns": self.rr_latency_ns[:done]}
        return out


def _set_cc(sock: socket.socket, cc: str) -> str | None:
    """Set and read back TCP_CONGESTION (Linux v6.12 net/ipv4/tcp.c: do_tcp_setsockopt())."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16)
    return raw.split(b"\0", 1)[0].decode() or None


def _curr_estab(path: str = "/proc/self/net/snmp") -> int | None:
    """Tcp CurrEstab of this network namespace: /proc/net/snmp's ``Tcp:`` header and value
    lines (Linux v6.12 net/ipv4/proc.c: snmp_seq_show_tcp_udp())."""
    try:
        lines = [line.split() for line in open(path, encoding="ascii") if line.startswith("Tcp:")]  # noqa: SIM115
    except OSError:
        return None
    if len(lines) < 2 or "CurrEstab" not in lines[0]:
        return None
    return int(lines[1][lines[0].index("CurrEstab")])


def _addr(host: str, port: int) -> str:
    return f"{host}:{port}"


class Agent:
    """The agent of one node: its SPEC, endpoints, threads and output (module doc)."""

    def __init__(self, spec: dict[str, Any]):
        self.spec = spec
        self.node = str(spec["node"])
        self.t0 = int(spec["t0_monotonic_ns"])
        self.duration_ns = int(spec["duration_ns"])
        self.interval_ns = int(spec["sample_interval_ns"])
        self.out = Path(spec["out"])
        self.addr = str(spec.get("addr") or self._node_addr())
        self.stopping = threading.Event()
        #: set by SIGTERM/SIGINT: end the run now
        self.signalled = threading.Event()
        self.stopped_by = "deadline"
        self.errors: list[str] = []
        self.endpoints: list[Endpoint] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._listeners: list[socket.socket] = []
        # listen entries by (peer addr, peer port): which flow an accepted connection is
        self._expected: dict[tuple[str, int], dict[str, Any]] = {}
        self.ss_late_ns: list[int] = []
        self.ss_missed = 0
        self.ss_samples = 0
        self.curr_estab: int | None = None

    def _node_addr(self) -> str:
        for e in self.spec.get("connect", []):
            return str(e["local_addr"])
        for e in self.spec.get("listen", []):
            return str(e["addr"])
        return ""

    def now(self) -> int:
        """ns since t0 (negative before it)."""
        return time.monotonic_ns() - self.t0

    def error(self, text: str) -> None:
        with self._lock:
            self.errors.append(text)

    # -- set-up -------------------------------------------------------------------

    def pin(self) -> None:
        cpu = self.spec.get("cpu")
        if cpu is None:
            return
        try:
            os.sched_setaffinity(0, {int(cpu)})
        except (OSError, ValueError) as e:  # a machine with fewer CPUs: run unpinned, say so
            self.error(f"could not pin to CPU {cpu}: {e}")

    def listen(self) -> None:
        """One listening socket per (address, port); the accepted connections are matched to
        their flow by the peer's address and port."""
        by_port: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for entry in self.spec.get("listen", []):
            by_port.setdefault((str(entry["addr"]), int(entry["port"])), []).append(entry)
            self._expected[(str(entry["peer_addr"]), int(entry["peer_port"]))] = entry
        for (addr, port), entries in by_port.items():
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            # the listener's cc is inherited by the accepted sockets; set again per flow below
            _set_cc(ls, str(entries[0]["cc"]))
            ls.bind((addr, port))
            ls.listen(max(128, len(entries)))
            ls.settimeout(_POLL_S)
            self._listeners.append(ls)
            self._spawn(self._accept_loop, ls, name=f"accept-{port}")

    def _spawn(self, target: Any, *args: Any, name: str) -> None:
        t = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    # -- servers ------------------------------------------------------------------

    def _accept_loop(self, ls: socket.socket) -> None:
        while not self.stopping.is_set():
            try:
                sock, (peer_addr, peer_port) = ls.accept()
            except TimeoutError:
                continue
            except OSError as e:
                if not self.stopping.is_set():
                    self.error(f"accept on {ls.getsockname()}: {e}")
                return
            entry = self._expected.get((peer_addr, peer_port))
            if entry is None:
                self.error(f"unexpected connection from {peer_addr}:{peer_port}")
                sock.close()
                continue
            ep = Endpoint(
                flow=int(entry["flow"]),
                role="server",
                app=dict(entry.get("app") or {"kind": "bulk"}),
                cc=str(entry["cc"]),
                sends=str(entry.get("data_side", "client")) == "server",
                sock=sock,
                start_ns=self.now(),
                established_ns=self.now(),
            )
            local = sock.getsockname()
            ep.local, ep.peer = _addr(local[0], local[1]), _addr(peer_addr, peer_port)
            try:
                ep.cc_set = _set_cc(sock, ep.cc)
                if entry.get("nodelay"):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError as e:
                ep.error = f"TCP_CONGESTION {ep.cc}: {e}"
            sock.settimeout(_POLL_S)
            with self._lock:
                self.endpoints.append(ep)
            self._spawn(self._work, ep, name=f"flow-{ep.flow}-server")

    # -- clients ------------------------------------------------------------------

    def start_clients(self) -> None:
        for entry in self.spec.get("connect", []):
            ep = Endpoint(
                flow=int(entry["flow"]),
                role="client",
                app=dict(entry.get("app") or {"kind": "bulk"}),
                cc=str(entry["cc"]),
                sends=str(entry.get("data_side", "client")) == "client",
            )
            with self._lock:
                self.endpoints.append(ep)
            self._spawn(self._client, ep, entry, name=f"flow-{ep.flow}-client")

    def _client(self, ep: Endpoint, entry: dict[str, Any]) -> None:
        start = int(entry.get("start_ns") or 0)
        if self.stopping.wait(max(0, start - self.now()) / 1e9):
            return
        local = (str(entry["local_addr"]), int(entry["local_port"]))
        peer = (str(entry["addr"]), int(entry["port"]))
        ep.local, ep.peer = _addr(*local), _addr(*peer)
        ep.start_ns = self.now()
        deadline = self.now() + _CONNECT_RETRY_NS
        while True:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                ep.cc_set = _set_cc(sock, ep.cc)
                if entry.get("nodelay"):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.bind(local)
                sock.settimeout(max(1.0, (self.duration_ns - self.now()) / 1e9))
                sock.connect(peer)
                break
            except ConnectionRefusedError:
                sock.close()
                if self.now() > deadline or self.stopping.wait(0.05):
                    ep.error = f"connect {ep.local} -> {ep.peer}: refused"
                    self.error(f"flow {ep.flow}: {ep.error}")
                    return
            except OSError as e:
                sock.close()
                ep.error = f"connect {ep.local} -> {ep.peer}: {e}"
                if not self.stopping.is_set():
                    self.error(f"flow {ep.flow}: {ep.error}")
                return
        ep.established_ns = self.now()
        sock.settimeout(_POLL_S)
        ep.sock = sock
        stop = entry.get("stop_ns")
        self._work(ep, None if stop is None else int(stop))

    # -- the applications ---------------------------------------------------------

    def _work(self, ep: Endpoint, stop_ns: int | None = None) -> None:
        kind = str(ep.app.get("kind", "bulk"))
        try:
            if kind == "rr":
                if ep.role == "client":
                    self._rr_client(ep, stop_ns)
                else:
                    self._rr_server(ep)
            elif ep.sends:
                self._bulk_send(ep, stop_ns)
            else:
                self._bulk_receive(ep)
        except OSError as e:
            if not self.stopping.is_set():
                ep.error = f"{kind} {ep.role}: {e}"
                self.error(f"flow {ep.flow}: {ep.error}")

    def _stop_at(self, stop_ns: int | None) -> int:
        return self.duration_ns if stop_ns is None else min(stop_ns, self.duration_ns)

    def _bulk_send(self, ep: Endpoint, stop_ns: int | None) -> None:
        assert ep.sock is not None
        sock = ep.sock
        limit = ep.app.get("bytes")
        limit = None if limit is None else int(limit)
        stop = self._stop_at(stop_ns)
        view = memoryview(_ZEROS)
        while not self.stopping.is_set() and self.now() < stop:
            want = CHUNK_BYTES if limit is None else min(CHUNK_BYTES, limit - ep.bytes_written)
            if want <= 0:
                break
            try:
                n = sock.send(view[:want])
            except TimeoutError:
                continue
            ep.bytes_written += n
        if limit is not None and ep.bytes_written >= limit:
            ep.done_ns = self.now()
            sock.shutdown(socket.SHUT_WR)
            self._wait_acked(ep, limit)

    def _wait_acked(self, ep: Endpoint, limit: int) -> None:
        """When every byte written was acknowledged: what the simulator calls the flow's end
        (crates/tcplab-core/src/tcp/input.rs: check_app_done(), snd_una past the data). Polled
        every millisecond from TCP_INFO: tcpi_bytes_acked counts the SYN too (Linux v6.12
        net/ipv4/tcp_input.c: tcp_snd_una_update() from the ISN), so all data is acked at
        limit + 1."""
        assert ep.sock is not None
        while not self.stopping.is_set() and self.now() < self.duration_ns:
            info = parse_tcp_info(ep.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_SIZE + 64))
            if info.get("bytes_acked", 0) >= limit + 1:
                ep.acked_ns = self.now()
                return
            time.sleep(0.001)

    def _bulk_receive(self, ep: Endpoint) -> None:
        assert ep.sock is not None
        reader = ep.app.get("reader") or {}
        if reader.get("kind") == "rate":
            return self._rate_receive(ep, int(reader["rate_bps"]))
        if reader.get("kind") == "bursts":
            return self._bursts_receive(ep, int(reader["interval_ns"]), int(reader["bytes"]))
        self._read_loop(ep, CHUNK_BYTES, rate_bps=None)

    def _read_loop(self, ep: Endpoint, chunk_bytes: int, rate_bps: int | None) -> None:
        """Read until EOF or stop; after each read of n bytes pause n * 8 / rate_bps s when a
        rate is given (the slow reader), else read on at once."""
        assert ep.sock is not None
        sock = ep.sock
        buf = bytearray(chunk_bytes)
        while not self.stopping.is_set():
            try:
                n = sock.recv_into(buf)
            except TimeoutError:
                continue
            if n == 0:
                ep.done_ns = self.now()
                return
            ep.bytes_read += n
            if rate_bps is not None:
                self.stopping.wait(n * 8 / max(1, rate_bps))

    def _rate_receive(self, ep: Endpoint, rate_bps: int) -> None:
        """A slow reader at ``rate_bps``, as the engine's (crates/tcplab-core/src/tcp/reader.rs,
        ``Rate``): ``n = read(fd, buf, 64 KiB)``, then "process" the n bytes for
        ``n * 8 / rate_bps`` seconds without reading, then read again; what is not read stays
        in the receive queue and shrinks the window (Linux v6.12 net/ipv4/tcp.c:
        tcp_recvmsg() -> tcp_cleanup_rbuf())."""
        self._read_loop(ep, READ_CHUNK_BYTES, rate_bps)

    def _bursts_receive(self, ep: Endpoint, interval_ns: int, burst_bytes: int) -> None:
        """A reader that wakes every ``interval_ns`` from the connection's establishment and
        reads up to ``burst_bytes`` of what is queued (non-blocking), as the engine's ``Bursts``
        reader (crates/tcplab-core/src/tcp/reader.rs)."""
        assert ep.sock is not None
        sock = ep.sock
        buf = bytearray(READ_CHUNK_BYTES)
        phase_ns = ep.established_ns or self.now()
        interval = max(1, interval_ns)
        sock.settimeout(0)  # non-blocking: a wake-up takes what is queued, never waits for more
        while not self.stopping.is_set():
            now = self.now()
            wake_ns = phase_ns + ((now - phase_ns) // interval + 1) * interval
            if self.stopping.wait((wake_ns - now) / 1e9):
                return
            got = 0
            while got < burst_bytes:
                try:
                    n = sock.recv_into(buf, min(len(buf), burst_bytes - got), socket.MSG_DONTWAIT)
                except (BlockingIOError, TimeoutError):
                    break
                if n == 0:
                    ep.done_ns = self.now()
                    return
                got += n
                ep.bytes_read += n
        return

    def _read_exactly(self, ep: Endpoint, want: int, buf: bytearray) -> bool:
        """Read ``want`` bytes; False on EOF or when the run ends first."""
        assert ep.sock is not None
        got = 0
        view = memoryview(buf)
        while got < want:
            if self.stopping.is_set():
                return False
            try:
                n = ep.sock.recv_into(view[: min(len(buf), want - got)])
            except TimeoutError:
                continue
            if n == 0:
                ep.done_ns = self.now()
                return False
            got += n
            ep.bytes_read += n
        return True

    def _write_all(self, ep: Endpoint, count: int) -> bool:
        assert ep.sock is not None
        view = memoryview(_ZEROS)
        left = count
        while left > 0:
            if self.stopping.is_set():
                return False
            try:
                n = ep.sock.send(view[: min(left, CHUNK_BYTES)])
            except TimeoutError:
                continue
            left -= n
            ep.bytes_written += n
        return True

    def _rr_client(self, ep: Endpoint, stop_ns: int | None) -> None:
        req, resp = int(ep.app.get("request_bytes", 1)), int(ep.app.get("response_bytes", 1))
        think_s = int(ep.app.get("think_ns", 0)) / 1e9
        stop = self._stop_at(stop_ns)
        buf = bytearray(min(max(resp, 1), CHUNK_BYTES))
        while not self.stopping.is_set() and self.now() < stop:
            start = time.monotonic_ns()
            if not self._write_all(ep, req) or not self._read_exactly(ep, resp, buf):
                return
            end = time.monotonic_ns()
            ep.rr_start_ns.append(start - self.t0)
            ep.rr_latency_ns.append(end - start)
            if think_s > 0 and self.stopping.wait(think_s):
                return

    def _rr_server(self, ep: Endpoint) -> None:
        req, resp = int(ep.app.get("request_bytes", 1)), int(ep.app.get("response_bytes", 1))
        buf = bytearray(min(max(req, 1), CHUNK_BYTES))
        while not self.stopping.is_set():
            if not self._read_exactly(ep, req, buf) or not self._write_all(ep, resp):
                return

    # -- ss sampling --------------------------------------------------------------

    def _ss_loop(self, path: Path) -> None:
        k = 0
        with open(path, "a", encoding="utf-8") as f:
            while k * self.interval_ns <= self.duration_ns:
                due = k * self.interval_ns
                if self.stopping.wait(max(0, due - self.now()) / 1e9) and self.now() < due:
                    return  # stopped by a signal before this sample was due
                late = self.now() - due
                if late > self.interval_ns:  # the next one is due already: skip this one
                    self.ss_missed += 1
                    k += 1
                    continue
                t = self.now()
                f.write(f"# t_ns={t}\n{self._ss_text(t)}")
                f.flush()
                self.ss_late_ns.append(max(0, late))
                self.ss_samples += 1
                k += 1

    def _ss_text(self, t_ns: int) -> str:
        """What ``ss -tinH state connected src ADDR`` prints of this node's endpoint sockets,
        read in-process (:mod:`tcplab.kernel.ss_line`: no process spawned on the traffic's
        CPU), and each socket's tcpi_ca_state, which ss does not print (Linux v6.12
        net/ipv4/tcp.c: tcp_get_info() copies icsk_ca_state; iproute2 misc/ss.c:
        tcp_show_info() skips it)."""
        with self._lock:
            endpoints = [ep for ep in self.endpoints if ep.sock is not None]
        lines = []
        for ep in endpoints:
            sample = read_socket(ep.sock, ep.local, ep.peer)  # type: ignore[arg-type]
            if sample is None:
                continue
            ep.ca_t_ns.append(t_ns)
            ep.ca_state.append(int(sample["info"].get("ca_state", 0)))
            lines.append(format_socket(sample) + "\n")
        return "".join(lines)

    def ss_summary(self) -> dict[str, Any]:
        late = sorted(self.ss_late_ns)
        half = self.interval_ns // 2
        return {
            "interval_ns": self.interval_ns,
            "samples": self.ss_samples,
            "missed": self.ss_missed,
            "late_over_half_interval": sum(1 for x in late if x > half) + self.ss_missed,
            "late_ns": {
                "p50": percentile(late, 0.5),
                "p99": percentile(late, 0.99),
                "max": late[-1] if late else None,
            },
        }

    # -- the run ------------------------------------------------------------------

    def capture(self) -> None:
        """TCP_INFO of every endpoint socket, before any is closed, and the namespace's
        Tcp CurrEstab gauge (nstat leaves it out: iproute2 misc/nstat.c useless_numbers)."""
        self.curr_estab = _curr_estab()
        with self._lock:
            endpoints = list(self.endpoints)
        for ep in endpoints:
            if ep.sock is None:
                continue
            # the application's counts just before TCP_INFO (so bytes read <= tcpi_bytes_received):
            # the workers go on until they see that the run is over
            ep.at_end = (ep.bytes_written, ep.bytes_read, len(ep.rr_latency_ns))
            try:
                raw = ep.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_SIZE + 64)
                ep.tcp_info = parse_tcp_info(raw)
            except OSError as e:
                ep.error = ep.error or f"TCP_INFO: {e}"
            ep.end_ns = self.now()

    def result(self) -> dict[str, Any]:
        with self._lock:
            endpoints = sorted(self.endpoints, key=lambda e: (e.flow, e.role))
            errors = list(self.errors)
        return {
            "version": AGENT_VERSION,
            "node": self.node,
            "addr": self.addr,
            "pid": os.getpid(),
            "cpu": self.spec.get("cpu"),
            "t0_monotonic_ns": self.t0,
            "duration_ns": self.duration_ns,
            "stopped_by": self.stopped_by,
            "ended_ns": self.now(),
            "curr_estab": self.curr_estab,
            "endpoints": [e.as_dict() for e in endpoints],
            "errors": errors,
            "ss": self.ss_summary(),
        }

    def write(self) -> Path:
        path = self.out / agent_file(self.node)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.result(), indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return path

    def run(self) -> int:
        """Listen, say ready, run to the end (or a signal), capture, write. Exit status 0
        when the agent ran (its errors are in the JSON), 1 when it could not set up."""
        self.pin()
        try:
            self.listen()
        except OSError as e:
            self.error(f"listen: {e}")
            self.write()
            print(f"error: listen: {e}", file=sys.stderr, flush=True)
            return 1
        print("ready", flush=True)
        ss_path = self.out / ss_samples_file(self.node)
        sampler = threading.Thread(target=self._ss_loop, args=(ss_path,), name="ss", daemon=True)
        sampler.start()
        self.start_clients()
        remaining = self.duration_ns - self.now()
        if self.signalled.wait(max(0, remaining) / 1e9):
            self.stopped_by = "signal"
        self.capture()
        # the last ss sample is due at the deadline too: let it run, then stop everything
        sampler.join(timeout=0.5)
        self.stopping.set()
        for ls in self._listeners:
            ls.close()
        limit = time.monotonic_ns() + _EXIT_GRACE_NS // 2
        for t in self._threads:
            t.join(timeout=max(0.0, (limit - time.monotonic_ns()) / 1e9))
        sampler.join(timeout=max(0.0, (limit - time.monotonic_ns()) / 1e9))
        self.write()
        with self._lock:
            for ep in self.endpoints:
                if ep.sock is not None:
                    ep.sock.close()
        return 0


# -- the parent's side: SPECs and processes ---------------------------------------


#: Bytes one read() of a rate-limited slow reader asks for (the engine's READ_CHUNK_BYTES,
#: crates/tcplab-core/src/tcp/reader.rs).
READ_CHUNK_BYTES = 64 * 1024


def agent_app(app: dict[str, Any]) -> dict[str, Any]:
    """A flow's application as the agent runs it: ``{"kind": "bulk"[, "bytes": N]}`` (bulk,
    bulk_bytes, maerts: the engine's bulk app, data_side says who writes) or ``{"kind": "rr",
    "request_bytes", "response_bytes", "think_ns"}``; ValueError for anything else (the plan
    refuses those first)."""
    kind = str(app.get("kind", "bulk"))
    if kind in ("bulk", "bulk_bytes", "maerts"):
        out: dict[str, Any] = {"kind": "bulk"}
        if app.get("bytes") is not None:
            out["bytes"] = int(app["bytes"])
        reader = app.get("reader") or {}
        if reader.get("kind") == "rate":
            out["reader"] = {"kind": "rate", "rate_bps": int(reader["rate_bps"])}
        elif reader.get("kind") == "bursts":
            out["reader"] = {"kind": "bursts", "interval_ns": int(reader["interval_ns"]), "bytes": int(reader["bytes"])}
        return out
    if kind == "rr":
        return {
            "kind": "rr",
            "request_bytes": int(app.get("request_bytes", 1)),
            "response_bytes": int(app.get("response_bytes", 1)),
            "think_ns": int(app.get("think_ns", 0)),
        }
    raise ValueError(f"the traffic agent runs bulk, maerts and rr applications, not {kind}")


def agent_specs(plan: Any, workdir: str | os.PathLike[str], t0_ns: int, cpu: int | None = 0) -> dict[str, dict]:
    """``{node: SPEC}`` for every host with a flow endpoint, from the plan's flows (each with
    client/server node, address, port, cc, app, start_ns, stop_ns, data_side: the attributes of
    :class:`tcplab.kernel.plan.FlowPlan`)."""
    specs: dict[str, dict] = {}

    def spec(node: str, addr: str) -> dict:
        if node not in specs:
            specs[node] = {
                "node": node,
                "addr": addr,
                "t0_monotonic_ns": int(t0_ns),
                "duration_ns": int(plan.duration_ns),
                "sample_interval_ns": int(plan.sample_interval_ns),
                "cpu": cpu,
                "listen": [],
                "connect": [],
                "out": str(workdir),
            }
        return specs[node]

    for f in plan.flows:
        app = agent_app(dict(f.app))
        stop = None if f.stop_ns is None or int(f.stop_ns) >= int(plan.duration_ns) else int(f.stop_ns)
        spec(f.server_node, f.server_addr)["listen"].append(
            {
                "flow": int(f.index),
                "role": "server",
                "addr": f.server_addr,
                "port": int(f.server_port),
                "peer_addr": f.client_addr,
                "peer_port": int(f.client_port),
                "cc": _cc_of(f, "server"),
                "nodelay": bool(getattr(f, "nodelay", False)),
                "app": app,
                "data_side": f.data_side,
            }
        )
        spec(f.client_node, f.client_addr)["connect"].append(
            {
                "flow": int(f.index),
                "addr": f.server_addr,
                "port": int(f.server_port),
                "local_addr": f.client_addr,
                "local_port": int(f.client_port),
                "cc": _cc_of(f, "client"),
                "nodelay": bool(getattr(f, "nodelay", False)),
                "app": app,
                "start_ns": int(f.start_ns),
                "stop_ns": stop,
                "data_side": f.data_side,
            }
        )
    return specs


def _cc_of(flow: Any, role: str) -> str:
    """The cc of the flow's ``role`` socket (FlowPlan.cc_of; a plan without it: ``cc``)."""
    cc_of = getattr(flow, "cc_of", None)
    return str(cc_of(role)) if callable(cc_of) else str(flow.cc)


def _ns_of(plan: Any, node: str) -> str:
    ns_of = getattr(plan, "ns_of", None)
    return ns_of(node) if callable(ns_of) else node_ns(plan.prefix, node)


#: How long an agent may take to print ``ready``.
READY_TIMEOUT_S = 20.0


def start_agents(
    plan: Any, config: dict[str, Any], workdir: str | os.PathLike[str], t0_ns: int, *, cpu: int | None = 0
) -> list[subprocess.Popen]:
    """Start one agent per host with flow endpoints (``ip netns exec NS python -m
    tcplab.kernel.agent SPEC.json``, ``spec-NODE.json`` written into ``workdir``) and wait until
    each has printed ``ready`` (its listeners listen). Agents whose flows' servers they hold
    start first. On a failure the agents already started are killed (by PID) and
    :class:`~tcplab.kernel.errors.KernelError` names the node. ``config`` is the resolved
    engine config (kept for the signature k2's run passes; the plan carries the flows)."""
    import select

    from tcplab.kernel.errors import KernelError
    from tcplab.kernel.processes import pdeathsig_preexec

    del config  # the plan has everything the agents need
    work = Path(workdir)
    specs = agent_specs(plan, work, t0_ns, cpu)
    # servers first: a client's connect must find the listener
    order = sorted(specs, key=lambda n: (not specs[n]["listen"], n))
    procs: list[subprocess.Popen] = []
    try:
        for node in order:
            path = work / spec_file(node)
            path.write_text(json.dumps(specs[node], indent=1) + "\n", encoding="utf-8")
            err = open(work / agent_stderr_file(node), "w", encoding="utf-8")  # noqa: SIM115
            try:
                proc = subprocess.Popen(
                    ["ip", "netns", "exec", _ns_of(plan, node), sys.executable, "-m", "tcplab.kernel.agent", str(path)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                    start_new_session=True,  # the run's Ctrl-C reaches it through the run, by PID
                    preexec_fn=pdeathsig_preexec(),  # noqa: PLW1509 - SIGTERMed if the run is SIGKILLed
                )
            finally:
                err.close()
            procs.append(proc)
            assert proc.stdout is not None
            ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT_S)
            line = proc.stdout.readline() if ready else ""
            if line.strip() != "ready":
                text = (work / agent_stderr_file(node)).read_text(encoding="utf-8", errors="replace").strip()
                why = text.splitlines()[-1] if text else ("no answer" if not ready else f"said {line.strip()!r}")
                raise KernelError(f"kernel: the traffic agent of {node} did not start: {why}")
    except BaseException:
        stop_agents(procs, timeout_s=0)
        raise
    return procs


def stop_agents(procs: list[subprocess.Popen], timeout_s: float) -> list[int | None]:
    """Wait up to ``timeout_s`` for the agents to exit by themselves, then SIGTERM them (they
    write their JSON and exit), then SIGKILL what is left; returns the exit codes."""
    deadline = time.monotonic() + max(0.0, timeout_s)
    for p in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5.0)
    for p in procs:
        if p.stdout is not None:
            p.stdout.close()
    return [p.returncode for p in procs]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m tcplab.kernel.agent SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(args[0]).read_text(encoding="utf-8"))
    agent = Agent(spec)

    def on_signal(signum: int, frame: Any) -> None:  # noqa: ARG001
        agent.signalled.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return agent.run()


if __name__ == "__main__":
    sys.exit(main())
