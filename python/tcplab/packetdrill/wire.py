"""Packets between a script's numbers and the engine's, and the outbound check.

Sequence spaces
---------------
A script writes sequence numbers relative to each side's initial sequence number (ISN) as
it writes them: ours is the ``seq`` of the script's outbound SYN or SYN-ACK line
(``local_isn``, usually 0), the peer's the ``seq`` of its inbound SYN or SYN-ACK
(``remote_isn``). packetdrill maps these to the live ISNs the same way
(``run_packet.c``). The engine numbers each direction's bytes from 0, the SYN taking no
number. So, with ``L = local_isn + 1`` and ``R = remote_isn + 1``:

==========================  =================================================
script (one direction)      engine
==========================  =================================================
our SYN / SYN-ACK, seq L-1  engine packet with ``syn``, ``seq`` 0
our data byte at seq S      offset S - L
peer's ack A of our bytes   ``ack_seq`` A - L
peer's SACK block a:b       (a - L, b - L)
peer's SYN, seq R-1         injected with ``syn``, ``seq`` 0
peer's data at seq S        offset S - R
our ack A                   ``ack_seq`` A - R
==========================  =================================================

A FIN takes one sequence number on the wire after the data. The engine's ``seq``/``end_seq``
cover the data only and a FIN is the ``fin`` flag, so a packet ``F. 1001:1001(0)`` is the
engine's ``seq`` = ``end_seq`` = 1000 with ``fin``; an ACK of that FIN is ``ack_seq`` 1001
(one past the data: an engine ack counts the FIN as one more offset, as TCP does), i.e. the
same shift as any other ack. Script end = engine end + L (+1 on the wire for the FIN).

Windows
-------
``win N`` is the raw 16-bit field. Inbound, the engine gets bytes: ``N << peer_wscale``,
except on a SYN or SYN-ACK (never scaled). Outbound, the engine gives bytes; the field is
``win_bytes >> our_wscale``, except on a SYN or SYN-ACK (``min(win_bytes, 65535)``). Our
scale is Linux's tcp_select_initial_window(): ``ilog2(max(tcp_rmem[2], rmem_max)) - 15``
clamped to [0, 14] (``rmem_max`` = 212992; an SO_RCVBUF set before the handshake caps the
space at the window it allows, half the doubled buffer), and 0 when the peer sent no
window scale option (then neither side scales).

Options
-------
The engine reports fields, not option bytes; :meth:`Connection.outbound_options` writes
them in the order Linux v6.12's tcp_options_write() does: ``mss``; ``TS`` (preceded by
``sackOK`` on a SYN when SACK is advertised, else by ``nop,nop``); ``nop,nop,sackOK`` on a
SYN advertising SACK without timestamps; ``nop,wscale N``; ``nop,nop,sack ...``. Our MSS
option is 1460 (tun MTU 1500 - 40). They are compared with the script's list as packetdrill's
verify_outbound_live_tcp_options() does: the same kinds in the same order, equal values
except TS; a TS val is checked only with ``--tcp_ts_tick_usecs`` (default 0: not checked),
and an outbound TS ecr never. packetdrill remembers script TS val -> live TS val for each
outbound packet matched (``ts_val_map``) and rewrites an inbound TS ecr through it
(an unknown one is an error, or with ``--tcp_ts_ecr_scaled`` it is interpolated from the
first pair seen); the live val is shown in script space as first script val + (live val -
first live val).

ECN
---
The TCP flags ``E`` (ECE) and ``W`` (CWR) cross in both directions: an inbound packet's are
injected as the engine's ``ece``/``cwr``, an outbound packet's come back from the engine
and are written after ``.`` as packetdrill prints them (``FSRP.UEWA``). The IP header's ECN
field is the engine's ``ecn`` (:data:`IP_ECN`: ``[noecn]`` 0, ``[ect1]`` 1, ``[ect0]`` 2,
``[ce]`` 3, as RFC 3168 and packetdrill's ip.h number them). An inbound packet carries the
mark its line writes, not-ECT without one (packetdrill writes a TOS byte of 0). An outbound
packet's field is checked only when its line writes a mark; ``[ect01]`` takes either ECT.
AccECN (the ``A`` flag, ACE digits, the AccECN option) is not run: the parser names it.

The check
---------
:meth:`Connection.verify` follows run_packet.c verify_outbound_live_packet(): the IPv4 total
length (which differs when the option lengths do) and the ECN field (verify_ipv4() ->
verify_outbound_live_tos()), then verify_tcp()'s fields in its order (data offset, fin,
syn, rst, psh, ack, urg, ece, cwr, ae, seq, ack_seq, window when the script gives ``win``),
then the options; the messages are packetdrill's (``live packet field tcp_seq: expected:
1001 (0x3e9) vs actual: 2001 (0x7d1)``). When TSO segments are aggregated for one line, the
result has the last segment's headers with the first one's seq and CWR (packet.c,
aggregate_packets()).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tcplab.packetdrill.host import LivePacket
from tcplab.packetdrill.script import TcpOption, TcpPacket

__all__ = [
    "OUR_MSS",
    "IP_ECN",
    "RMEM_MAX",
    "ScriptError_",
    "WirePacket",
    "Connection",
    "initial_wscale",
    "format_options",
    "format_packet",
    "check_field",
    "verify_ecn",
]

#: Our MSS option: tun0's MTU 1500 less the IPv4 and TCP headers.
OUR_MSS = 1460
#: net.core.rmem_max's default (sysctl_rmem_max, SK_RMEM_MAX).
RMEM_MAX = 212992
#: TCP_MAX_WSCALE
MAX_WSCALE = 14
#: Linux's default MSS when the peer's SYN has no MSS option (TCP_MSS_DEFAULT).
DEFAULT_PEER_MSS = 536
#: The IP ECN marks as the field's value (packetdrill ip.h IP_ECN_*; the engine's
#: ``packet::ecn``); ``ect01`` (either ECT, outbound only) has none.
IP_ECN = {"noecn": 0, "ect1": 1, "ect0": 2, "ce": 3}

_OPTION_KIND = {"eol": 0, "nop": 1, "mss": 2, "wscale": 3, "sackOK": 4, "sack": 5, "TS": 8, "md5": 19, "FO": 34}
_OPTION_KIND.update({"FOEXP": 254, "ECN": 172})


class ScriptError_(Exception):  # noqa: N801 - distinct from script.ScriptError
    """A packet the runner cannot translate (packetdrill's own error, e.g. an unknown TS ecr)."""


def initial_wscale(rmem_max_sysctl: int, rcvbuf: int | None = None) -> int:
    """Our window scale (module doc: Linux tcp_select_initial_window())."""
    space = max(rmem_max_sysctl, RMEM_MAX)
    if rcvbuf is not None:
        # SO_RCVBUF locks sk_rcvbuf at twice the value; the window it allows is half that.
        space = min(space, max(rcvbuf, 1))
    return max(0, min(space.bit_length() - 1 - 15, MAX_WSCALE))


@dataclass(frozen=True, slots=True)
class WirePacket:
    """A live packet in script space: what the script line would be."""

    t_us: int
    flags: str  # letters in packetdrill's order: S F R P . E W (never U or A)
    seq: int
    payload: int
    ack: int  # 0 when the ACK flag is off
    win: int
    options: tuple[TcpOption, ...]
    #: the IP header's ECN field (:data:`IP_ECN`)
    ecn: int = 0


def _flag_set(flags: str) -> set[str]:
    return set() if flags == "-" else set(flags)


def _options_length(options: tuple[TcpOption, ...]) -> int:
    return sum(o.length_bytes or 0 for o in options)


def format_options(options: tuple[TcpOption, ...] | None) -> str:
    """``mss 1460,nop,wscale 8`` as packetdrill prints options."""
    if options is None:
        return "..."
    return ",".join(_format_option(o) for o in options)


def _format_option(o: TcpOption) -> str:
    if o.kind == "mss":
        return f"mss {o.values[0]}"
    if o.kind == "wscale":
        return f"wscale {o.values[0]}"
    if o.kind == "TS":
        return f"TS val {o.values[0]} ecr {o.values[1]}"
    if o.kind == "sack":
        return "sack " + " ".join(f"{a}:{b}" for a, b in o.values)
    if o.kind in ("FO", "FOEXP", "md5"):
        return f"{o.kind} {o.hex_blob or ''}".rstrip()
    return o.kind


def format_packet(flags: str, seq: int, payload: int, ack: int | None, win: int | None, options) -> str:
    """A packet as a script line writes it (``P. 1:1001(1000) ack 1 win 257 <...>``)."""
    text = f"{flags} {seq}:{seq + payload}({payload})"
    if ack is not None:
        text += f" ack {ack}"
    if win is not None:
        text += f" win {win}"
    if options is None or options:
        text += f" <{format_options(options)}>"
    return text


def check_field(name: str, expected: int, actual: int) -> str | None:
    """run_packet.c check_field()'s message."""
    if expected == actual:
        return None
    return f"live packet field {name}: expected: {expected} (0x{expected:x}) vs actual: {actual} (0x{actual:x})"


@dataclass
class Connection:
    """The connection's script <-> engine mapping state (module doc)."""

    local_isn: int = 0
    remote_isn: int = 0
    peer_syn_seen: bool = False
    #: our window scale as the engine uses it once the handshake is done (0: none)
    our_wscale: int = 0
    #: what our SYN or SYN-ACK offers
    syn_wscale: int = 0
    peer_wscale: int | None = None
    ts_ok: bool = True
    sack_ok: bool = True
    #: our MSS option (the tun's 1460, or less after setsockopt(TCP_MAXSEG))
    our_mss: int = OUR_MSS
    tcp_ts_tick_usecs: int = 0
    tcp_ts_ecr_scaled: bool = False
    ts_val_map: dict[int, int] = field(default_factory=dict)
    first_ts: tuple[int, int] | None = None  # (script val, live val) of the first match

    # inbound

    def inbound(self, pkt: TcpPacket) -> dict:
        """The engine's ``inject()`` dict for an inbound script packet (module doc)."""
        flags = _flag_set(pkt.flags)
        syn = "S" in flags
        if syn:
            self.remote_isn = pkt.seq_start
            self.peer_syn_seen = True
        r = self.remote_isn + 1
        lcl = self.local_isn + 1
        seq = 0 if syn else pkt.seq_start - r
        end_seq = seq + pkt.payload_bytes
        ack = "." in flags
        win = pkt.win or 0
        if not syn and self.peer_wscale is not None:
            win <<= self.peer_wscale
        tsval = tsecr = None
        sack: list[tuple[int, int]] = []
        for o in pkt.options or ():
            if o.kind == "TS":
                tsval, tsecr = o.values
                if ack:
                    tsecr = self._live_ecr(tsecr)
            elif o.kind == "sack":
                sack.extend((a - lcl, b - lcl) for a, b in o.values)
        ecn = pkt.ip.ecn if pkt.ip is not None else None
        return {
            "syn": syn,
            "fin": "F" in flags,
            "rst": "R" in flags,
            "psh": "P" in flags,
            "ece": "E" in flags,
            "cwr": "W" in flags,
            "ecn": IP_ECN[ecn] if ecn is not None else 0,
            "ack": ack,
            "seq": seq,
            "end_seq": end_seq,
            "ack_seq": (pkt.ack - lcl) if ack and pkt.ack is not None else 0,
            "win_bytes": win,
            "tsval": tsval,
            "tsecr": tsecr,
            "sack": sack,
        }

    def _live_ecr(self, script_ecr: int) -> int:
        """run_packet.c map_inbound_packet(): a script TS ecr as the live value it echoes."""
        if script_ecr in self.ts_val_map:
            return self.ts_val_map[script_ecr]
        if self.tcp_ts_ecr_scaled and self.first_ts is not None:
            return (script_ecr - self.first_ts[0] + self.first_ts[1]) & 0xFFFFFFFF
        raise ScriptError_(
            f"unable to infer live TS ecr for script TS ecr {script_ecr};  no matching or preceding outbound TS val"
        )

    @staticmethod
    def peer_syn_options(pkt: TcpPacket) -> tuple[int, int | None, bool, bool]:
        """(peer MSS, peer window scale or None, TS offered, SACK offered) of a SYN."""
        mss, wscale, ts, sack = DEFAULT_PEER_MSS, None, False, False
        for o in pkt.options or ():
            if o.kind == "mss":
                mss = o.values[0]
            elif o.kind == "wscale":
                wscale = o.values[0]
            elif o.kind == "TS":
                ts = True
            elif o.kind == "sackOK":
                sack = True
        return mss, wscale, ts, sack

    # outbound

    def outbound_options(self, p: LivePacket) -> tuple[TcpOption, ...]:
        """The option list Linux would write for this packet (module doc)."""
        opts: list[TcpOption] = []
        if p.syn:
            # our SYN (active open) offers everything; our SYN-ACK what was negotiated
            active = not self.peer_syn_seen
            sack_adv = True if active else self.sack_ok
            wscale = self.syn_wscale if (active or self.peer_wscale is not None) else None
            opts.append(TcpOption("mss", (self.our_mss,)))
            if p.tsval is not None:
                opts += [TcpOption("sackOK")] if sack_adv else [TcpOption("nop"), TcpOption("nop")]
                opts.append(TcpOption("TS", (p.tsval, p.tsecr or 0)))
            elif sack_adv:
                opts += [TcpOption("nop"), TcpOption("nop"), TcpOption("sackOK")]
            if wscale is not None:
                opts += [TcpOption("nop"), TcpOption("wscale", (wscale,))]
            return tuple(opts)
        if p.tsval is not None:
            opts += [TcpOption("nop"), TcpOption("nop"), TcpOption("TS", (p.tsval, p.tsecr or 0))]
        if p.sack:
            r = self.remote_isn + 1
            blocks = tuple((a + r, b + r) for a, b in p.sack)
            opts += [TcpOption("nop"), TcpOption("nop"), TcpOption("sack", blocks)]
        return tuple(opts)

    def to_script(self, p: LivePacket, first: LivePacket | None = None) -> WirePacket:
        """The live packet in script space (its TS val not yet mapped); with ``first``, the
        aggregate of the segments from ``first`` to ``p`` (module doc: ``p``'s headers, the
        seq and CWR of ``first``)."""
        cwr = first.cwr if first is not None else p.cwr
        flags = ("S" if p.syn else "") + ("F" if p.fin else "") + ("R" if p.rst else "")
        flags += ("P" if p.psh else "") + ("." if p.ack else "")
        flags += ("E" if p.ece else "") + ("W" if cwr else "")
        seq = first.seq if first is not None else p.seq
        script_seq = self.local_isn if p.syn else seq + self.local_isn + 1
        ack = p.ack_seq + self.remote_isn + 1 if p.ack else 0
        win = min(p.win_bytes if p.syn else p.win_bytes >> self.our_wscale, 0xFFFF)
        return WirePacket(p.t_us, flags or "-", script_seq, p.end_seq - seq, ack, win, self.outbound_options(p), p.ecn)

    def verify(self, script: TcpPacket, actual: WirePacket, ts_tolerance_us: int = 0) -> str | None:
        """packetdrill's first complaint about ``actual`` for the line ``script`` (module
        doc), or None; records the TS val mapping as packetdrill does. ``ts_tolerance_us``:
        the TS val tolerance with ``--tcp_ts_tick_usecs`` (run_packet.c: the larger of
        ``--tolerance_usecs`` and the percentage of the time since the script's start)."""
        actual = self._map_ts(script, actual)
        options_nocheck = script.options is None
        script_opts = () if script.options is None else script.options
        script_optlen = _options_length(actual.options) if options_nocheck else _options_length(script_opts)
        actual_optlen = _options_length(actual.options)
        if msg := check_field(
            "ipv4_total_length", 40 + script_optlen + script.payload_bytes, 40 + actual_optlen + actual.payload
        ):
            return msg
        if msg := verify_ecn(script, actual.ecn):
            return msg
        if msg := check_field("tcp_data_offset", 5 + script_optlen // 4, 5 + actual_optlen // 4):
            return msg
        s, a = _flag_set(script.flags), _flag_set(actual.flags)
        letters = (("fin", "F"), ("syn", "S"), ("rst", "R"), ("psh", "P"), ("ack", "."), ("urg", "U"))
        letters += (("ece", "E"), ("cwr", "W"), ("ae", "A"))
        for name, letter in letters:
            if msg := check_field(f"tcp_{name}", int(letter in s), int(letter in a)):
                return msg
        if msg := check_field("tcp_seq", script.seq_start, actual.seq):
            return msg
        if msg := check_field("tcp_ack_seq", script.ack or 0, actual.ack):
            return msg
        if script.win is not None and (msg := check_field("tcp_window", script.win, actual.win)):
            return msg
        if options_nocheck:
            return None
        return self._verify_options(script_opts, actual.options, ts_tolerance_us)

    def _map_ts(self, script: TcpPacket, actual: WirePacket) -> WirePacket:
        s_ts = next((o for o in script.options or () if o.kind == "TS"), None)
        a_ts = next((o for o in actual.options if o.kind == "TS"), None)
        if s_ts is None or a_ts is None:
            return actual
        script_val, live_val = s_ts.values[0], a_ts.values[0]
        self.ts_val_map[script_val] = live_val
        if self.first_ts is None:
            self.first_ts = (script_val, live_val)
        shown = (self.first_ts[0] + (live_val - self.first_ts[1])) & 0xFFFFFFFF
        options = tuple(TcpOption("TS", (shown, o.values[1])) if o.kind == "TS" else o for o in actual.options)
        return WirePacket(
            actual.t_us, actual.flags, actual.seq, actual.payload, actual.ack, actual.win, options, actual.ecn
        )

    def _verify_options(
        self, script: tuple[TcpOption, ...], actual: tuple[TcpOption, ...], ts_tolerance_us: int
    ) -> str | None:
        """run_packet.c verify_outbound_live_tcp_options() and verify_outbound_tcp_option()."""
        for i in range(max(len(script), len(actual))):
            if i >= len(script) or i >= len(actual) or script[i].kind != actual[i].kind:
                return "bad outbound TCP options"
            s, a = script[i], actual[i]
            if s.kind in ("nop", "eol"):
                continue
            if s.kind == "TS":
                tick = self.tcp_ts_tick_usecs
                if tick and abs(_s32(a.values[0] - s.values[0])) * tick > ts_tolerance_us:
                    return f"bad outbound TCP timestamp value, tolerance {ts_tolerance_us}"
                continue
            err = None
            if s.length_bytes != a.length_bytes:
                err = "bad length"
            if (s.length_bytes or 0) > 2 and _option_data(s) != _option_data(a):
                err = "bad value"
            if err:
                return (
                    f"{err} in outbound TCP option (kind={_OPTION_KIND[s.kind]}): "
                    f"expected: {_format_option(s)} actual: {_format_option(a)}"
                )
        return None


def verify_ecn(script: TcpPacket, actual_ecn: int) -> str | None:
    """run_packet.c verify_outbound_live_tos() for an ECN mark: nothing without one."""
    mark = script.ip.ecn if script.ip is not None else None
    if mark is None:
        return None
    if mark == "ect01":
        if actual_ecn in (IP_ECN["ect0"], IP_ECN["ect1"]):
            return None
        return f"live packet field ip_ecn: expected: 0x1 or 0x2 vs actual: 0x{actual_ecn:x}"
    return check_field("ip_ecn", IP_ECN[mark], actual_ecn)


def _option_data(o: TcpOption) -> tuple:
    """The option's value bytes, as a comparable tuple (sack: the flat block edges)."""
    if o.kind == "sack":
        return tuple(x for block in o.values for x in block)
    return tuple(o.values)


def _s32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x
