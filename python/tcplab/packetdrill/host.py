"""The one place that talks to the engine's scripted host (``tcplab._core.ScriptedHost``).

The runner (:mod:`tcplab.packetdrill.run`) sees a :class:`Host`: times in integer
microseconds as packetdrill keeps them, packets as :class:`LivePacket`, and a
:meth:`Host.advance` that stops as soon as a condition holds (a packet sent, a blocked
call free to return). When the engine's interface changes, only this module changes.

The engine's host is one TCP socket on a machine whose tun device has MTU 1500, the other
end being the script. Its sequence numbers are 64-bit byte offsets, data starting at 0 and
the SYN taking no sequence space (the runner maps them, :mod:`tcplab.packetdrill.wire`).

Stepping. The engine runs "every event due at or before t". To see a packet at the moment
it is sent (packetdrill sniffs it then, and the next relative event counts from then), the
host is run forward in steps: to the engine's next event when it says when that is
(``next_event_ns()``, if it has it), else by :data:`STEP_NS`, so a time read after a
packet is at most one step late.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["LivePacket", "Host", "RawHost", "STEP_NS", "engine_host"]

#: How far the engine is run at a time while waiting for something, when it cannot say
#: when its next event is.
STEP_NS = 50_000


class RawHost(Protocol):
    """``tcplab._core.ScriptedHost``'s interface, as the runner uses it."""

    now_ns: int
    state: str

    def run_until(self, t_ns: int) -> None: ...
    def take_outbound(self) -> list[dict[str, Any]]: ...
    def negotiate(self, peer_mss: int, peer_wscale: int | None, ts_ok: bool, sack_ok: bool) -> None: ...
    def inject(self, pkt: dict[str, Any]) -> None: ...
    def listen(self) -> None: ...
    def connect(self) -> None: ...
    def write(self, n: int, eor: bool = False, more: bool = False) -> int: ...
    def set_cork(self, on: bool) -> None: ...
    def set_user_timeout(self, ms: int) -> None: ...
    def pending_write_bytes(self) -> int: ...
    def read(self, n: int) -> int: ...
    def unread_bytes(self) -> int: ...
    def outq_bytes(self) -> int: ...
    def set_sndbuf(self, val: int) -> None: ...
    def set_rcvbuf(self, val: int) -> None: ...
    def set_nodelay(self, on: bool) -> None: ...
    def set_user_mss(self, n: int) -> None: ...
    def set_cc(self, name: str) -> None: ...
    def set_ecn(self, tcp_ecn: int, fallback: bool) -> None: ...
    def tcp_info(self) -> dict[str, int]: ...


@dataclass(frozen=True, slots=True)
class LivePacket:
    """A packet the engine's socket sent, in the engine's sequence space.

    ``seq``/``end_seq`` cover the data only (a FIN is the ``fin`` flag); ``ack`` is the ACK
    flag (the engine may leave it out: then it is set on every packet after the peer's SYN
    was seen, as TCP does); ``win_bytes`` is the window before scaling. ``ece``/``cwr`` are
    the ECN TCP flags and ``ecn`` the IP header's ECN field (0 not-ECT, 1 ECT(1), 2 ECT(0),
    3 CE); an engine that does not report them sends neither flag, not-ECT.
    """

    t_ns: int
    syn: bool
    fin: bool
    rst: bool
    psh: bool
    ack: bool
    seq: int
    end_seq: int
    ack_seq: int
    win_bytes: int
    tsval: int | None
    tsecr: int | None
    sack: tuple[tuple[int, int], ...]
    ece: bool = False
    cwr: bool = False
    ecn: int = 0

    @property
    def t_us(self) -> int:
        return self.t_ns // 1000

    @property
    def payload(self) -> int:
        return self.end_seq - self.seq


class Host:
    """The engine's scripted host, as the runner drives it (module doc)."""

    def __init__(self, raw: RawHost) -> None:
        self.raw = raw
        self.queue: list[LivePacket] = []  # sent, not yet matched by the script
        self.peer_syn_seen = False

    # time

    @property
    def now_ns(self) -> int:
        return int(self.raw.now_ns)

    @property
    def now_us(self) -> int:
        return self.now_ns // 1000

    def _collect(self) -> None:
        for d in self.raw.take_outbound():
            ack = d.get("ack")
            self.queue.append(
                LivePacket(
                    t_ns=int(d["t_ns"]),
                    syn=bool(d.get("syn")),
                    fin=bool(d.get("fin")),
                    rst=bool(d.get("rst")),
                    psh=bool(d.get("psh")),
                    ack=bool(ack) if ack is not None else self.peer_syn_seen,
                    seq=int(d["seq"]),
                    end_seq=int(d["end_seq"]),
                    ack_seq=int(d.get("ack_seq") or 0),
                    win_bytes=int(d.get("win_bytes") or 0),
                    tsval=d.get("tsval"),
                    tsecr=d.get("tsecr"),
                    sack=tuple((int(a), int(b)) for a, b in d.get("sack") or ()),
                    ece=bool(d.get("ece")),
                    cwr=bool(d.get("cwr")),
                    ecn=int(d.get("ecn") or 0),
                )
            )

    def settle(self) -> None:
        """Process what is due now (a write taken in, an injected packet answered)."""
        self.raw.run_until(self.now_ns)
        self._collect()

    def advance(self, t_us: int, stop: Callable[[], bool] | None = None) -> bool:
        """Run the engine to ``t_us`` (script microseconds); with ``stop``, stop early at the
        first step after which ``stop()`` is true, and return True (else False)."""
        target = t_us * 1000
        if stop is None:
            if target > self.now_ns:
                self.raw.run_until(target)
            self._collect()
            return False
        self.settle()
        if stop():
            return True
        next_event = getattr(self.raw, "next_event_ns", None)
        while self.now_ns < target:
            step = None
            if next_event is not None:
                step = next_event()
            if step is None or step <= self.now_ns:
                step = self.now_ns + STEP_NS
            self.raw.run_until(min(step, target))
            self._collect()
            if stop():
                return True
        return False

    # packets

    def inject(self, pkt: dict[str, Any]) -> None:
        self.raw.inject(pkt)
        if pkt.get("syn"):
            self.peer_syn_seen = True
        self.settle()

    def negotiate(self, peer_mss: int, peer_wscale: int | None, ts_ok: bool, sack_ok: bool) -> None:
        self.raw.negotiate(peer_mss, peer_wscale, ts_ok, sack_ok)

    # the socket

    @property
    def state(self) -> str:
        return str(self.raw.state)

    def listen(self) -> None:
        self.raw.listen()

    def connect(self) -> None:
        self.raw.connect()
        self.settle()

    def write(self, n: int, eor: bool = False, more: bool = False) -> int:
        queued = int(self.raw.write(n, eor=eor, more=more) if eor or more else self.raw.write(n))
        self.settle()
        return queued

    def pending_write_bytes(self) -> int:
        return int(self.raw.pending_write_bytes())

    def read(self, n: int) -> int:
        got = int(self.raw.read(n))
        self.settle()
        return got

    def unread_bytes(self) -> int:
        return int(self.raw.unread_bytes())

    def outq_bytes(self) -> int:
        return int(self.raw.outq_bytes())

    def close(self) -> None:
        self.raw.close()  # type: ignore[attr-defined]
        self.settle()

    def shutdown_wr(self) -> None:
        self.raw.shutdown_wr()  # type: ignore[attr-defined]
        self.settle()

    def peer_closed(self) -> bool:
        """The peer's FIN was taken (False from an engine without FIN)."""
        closed = getattr(self.raw, "peer_closed", None)
        return bool(closed()) if closed is not None else False

    def set_sndbuf(self, val: int) -> None:
        self.raw.set_sndbuf(val)

    def set_rcvbuf(self, val: int) -> None:
        self.raw.set_rcvbuf(val)

    def set_nodelay(self, on: bool) -> None:
        self.raw.set_nodelay(on)
        self.settle()

    def set_cork(self, on: bool) -> None:
        self.raw.set_cork(on)
        self.settle()

    def set_user_timeout(self, ms: int) -> None:
        self.raw.set_user_timeout(ms)

    def set_user_mss(self, n: int) -> None:
        self.raw.set_user_mss(n)

    def set_cc(self, name: str) -> None:
        self.raw.set_cc(name)

    @property
    def cc_name(self) -> str | None:
        """The congestion control's name as getsockopt(TCP_CONGESTION) gives it (DCTCP
        without ECN is ``dctcp-reno``), when the engine reports it."""
        value = getattr(self.raw, "cc_name", None)
        return str(value) if value is not None else None

    def set_ecn(self, tcp_ecn: int, fallback: bool) -> None:
        """``net.ipv4.tcp_ecn`` and ``tcp_ecn_fallback`` changed after ``socket()``."""
        self.raw.set_ecn(tcp_ecn, fallback)

    def tcp_info(self) -> dict[str, int]:
        return dict(self.raw.tcp_info())

    @property
    def rcv_wscale(self) -> int | None:
        """The engine's own receive window scale, when it reports one."""
        value = getattr(self.raw, "rcv_wscale", None)
        return int(value) if value is not None else None


def engine_host(config: dict[str, Any]) -> RawHost:
    """A new ``tcplab._core.ScriptedHost`` built with ``config`` (the engine's JSON)."""
    from tcplab.engine import import_core

    core = import_core()
    scripted = getattr(core, "ScriptedHost", None)
    if scripted is None:
        raise ImportError("tcplab._core has no ScriptedHost: this engine build cannot run packetdrill scripts")
    return scripted(json.dumps(config, separators=(",", ":")))
