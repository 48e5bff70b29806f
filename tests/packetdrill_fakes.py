"""A fake of ``tcplab._core.ScriptedHost`` for the packetdrill runner's tests.

Not a TCP: a small, predictable peer with the engine's interface. It answers a SYN with a
SYN-ACK, completes the handshake on the ACK, sends what is written in one burst of up to
``cwnd`` segments (one packet, as a TSO burst, PSH on the last byte written), grows cwnd by
the segments each ACK covers (slow start), and ACKs data at once. Knobs make it misbehave
on purpose: ``seq_skew`` (bytes added to the sequence of data packets), ``delay_ns``
(every reply that much later), ``extra_packet`` (a pure ACK sent after the SYN-ACK).

ECN, as RFC 3168 in its simplest form: a SYN with ECE and CWR is accepted (ECE on the
SYN-ACK) unless ``tcp_ecn`` is 0; ``tcp_ecn`` 1 asks on its own SYN; with ECN its data is
ECT(0); a CE-marked segment makes every packet carry ECE until a segment with CWR comes.
``set_ecn`` (a sysctl after ``socket()``) is recorded in ``calls``.
"""

from __future__ import annotations

import json
from typing import Any


class FakeHost:
    def __init__(self, config_json: str, **knobs: Any) -> None:
        self.config = json.loads(config_json)
        self.now_ns = 0
        self.state = "CLOSED"
        self.out: list[dict[str, Any]] = []
        self.timers: list[tuple[int, dict[str, Any]]] = []
        self.peer_mss = 1460
        self.ts_ok = self.sack_ok = True
        self.peer_wscale: int | None = None
        self.cwnd = int(self.config["tcp"].get("initial_cwnd", 10))
        self.snd_una = self.snd_nxt = self.write_seq = 0
        self.rcv_nxt = 0
        self.unread = 0
        self.last_tsval: int | None = None
        self.seq_skew = knobs.get("seq_skew", 0)
        self.delay_ns = knobs.get("delay_ns", 0)
        self.extra_packet = knobs.get("extra_packet", False)
        self.win_bytes = knobs.get("win_bytes", 65535 << 8)
        self.sndbuf = None
        self.cc = self.config.get("cc", "cubic")
        self.tcp_ecn = self.config["tcp"].get("tcp_ecn", [2, 2])[0]
        self.ecn_ok = self.demand_cwr = False
        self.calls: list[tuple] = []

    # clock

    def run_until(self, t_ns: int) -> None:
        self.timers.sort(key=lambda x: x[0])
        while self.timers and self.timers[0][0] <= t_ns:
            t, pkt = self.timers.pop(0)
            self.now_ns = max(self.now_ns, t)
            pkt["t_ns"] = self.now_ns
            self.out.append(pkt)
        self.now_ns = max(self.now_ns, t_ns)

    def next_event_ns(self) -> int | None:
        return min((t for t, _ in self.timers), default=None)

    def take_outbound(self) -> list[dict[str, Any]]:
        out, self.out = self.out, []
        return out

    # packets

    def _send(self, **fields: Any) -> None:
        pkt = {"syn": False, "fin": False, "rst": False, "psh": False, "seq": self.snd_nxt, "end_seq": self.snd_nxt}
        pkt.update(ack_seq=self.rcv_nxt, win_bytes=self.win_bytes, sack=[])
        pkt.update(ece=self.demand_cwr, cwr=False, ecn=2 if self.ecn_ok and fields.get("psh") else 0)
        pkt["tsval"] = (self.now_ns // 1_000_000 + 1000) if self.ts_ok else None
        pkt["tsecr"] = self.last_tsval if self.ts_ok else None
        pkt.update(fields)
        self.timers.append((self.now_ns + self.delay_ns, pkt))
        self.run_until(self.now_ns)

    def negotiate(self, peer_mss: int, peer_wscale: int | None, ts_ok: bool, sack_ok: bool) -> None:
        self.calls.append(("negotiate", peer_mss, peer_wscale, ts_ok, sack_ok))
        self.peer_mss, self.peer_wscale, self.ts_ok, self.sack_ok = peer_mss, peer_wscale, ts_ok, sack_ok

    def inject(self, pkt: dict[str, Any]) -> None:
        self.calls.append(("inject", dict(pkt)))
        self.last_tsval = pkt.get("tsval")
        if pkt.get("cwr"):
            self.demand_cwr = False
        if self.ecn_ok and pkt.get("ecn") == 3:
            self.demand_cwr = True
        if pkt["syn"] and not pkt["ack"] and self.state == "LISTEN":
            self.state = "SYN_RECV"
            self.ecn_ok = bool(pkt.get("ece") and pkt.get("cwr") and self.tcp_ecn)
            self._send(syn=True, seq=0, end_seq=0, win_bytes=65535, ece=self.ecn_ok)
            if self.extra_packet:
                self._send()
            return
        if pkt["syn"] and pkt["ack"] and self.state == "SYN_SENT":
            self.state = "ESTABLISHED"
            self.ecn_ok = self.ecn_ok and bool(pkt.get("ece")) and not pkt.get("cwr")
            self._send()
            return
        if self.state == "SYN_RECV" and pkt["ack"]:
            self.state = "ESTABLISHED"
        if pkt["ack"] and pkt["ack_seq"] > self.snd_una:
            acked = pkt["ack_seq"] - self.snd_una
            self.snd_una = pkt["ack_seq"]
            self.cwnd += acked // self.peer_mss
            self._push()
        if pkt["end_seq"] > pkt["seq"]:
            self.rcv_nxt = pkt["end_seq"]
            self.unread += pkt["end_seq"] - pkt["seq"]
            self._send()

    def _push(self) -> None:
        room = self.snd_una + self.cwnd * self.peer_mss - self.snd_nxt
        n = min(room, self.write_seq - self.snd_nxt)
        if n <= 0:
            return
        start = self.snd_nxt
        self.snd_nxt += n
        self._send(seq=start + self.seq_skew, end_seq=start + n + self.seq_skew, psh=True)

    # the socket

    def listen(self) -> None:
        self.state = "LISTEN"

    def connect(self) -> None:
        self.state = "SYN_SENT"
        self.ecn_ok = self.tcp_ecn == 1
        ecn = {"ece": True, "cwr": True} if self.ecn_ok else {}
        self._send(syn=True, seq=0, end_seq=0, ack_seq=0, tsecr=0, win_bytes=65535, **ecn)

    def write(self, n: int) -> int:
        self.write_seq += n
        self._push()
        return n

    def close(self) -> None:
        self._send(fin=True, seq=self.snd_nxt, end_seq=self.snd_nxt)

    def shutdown_wr(self) -> None:
        self.close()

    def pending_write_bytes(self) -> int:
        return 0

    def read(self, n: int) -> int:
        got = min(n, self.unread)
        self.unread -= got
        return got

    def unread_bytes(self) -> int:
        return self.unread

    def outq_bytes(self) -> int:
        return self.write_seq - self.snd_una

    def set_sndbuf(self, val: int) -> None:
        self.sndbuf = val

    def set_rcvbuf(self, val: int) -> None:
        pass

    def set_nodelay(self, on: bool) -> None:
        pass

    def set_cc(self, name: str) -> None:
        self.cc = name

    def set_ecn(self, tcp_ecn: int, fallback: bool) -> None:
        self.calls.append(("set_ecn", tcp_ecn, fallback))
        self.tcp_ecn = tcp_ecn

    def tcp_info(self) -> dict[str, int]:
        return {"tcpi_snd_cwnd": self.cwnd, "tcpi_state": 1 if self.state == "ESTABLISHED" else 10}


def factory(**knobs: Any):
    """A host_factory for run_script that keeps the hosts it made in ``factory.hosts``."""
    hosts: list[FakeHost] = []

    def make(config: dict[str, Any]) -> FakeHost:
        host = FakeHost(json.dumps(config), **knobs)
        hosts.append(host)
        return host

    make.hosts = hosts  # type: ignore[attr-defined]
    return make
