"""Run one packetdrill script against tcplab's TCP: :func:`run_script`.

The script is walked event by event as packetdrill's ``run.c`` walks it, in the engine's
simulated time instead of the wall clock (:mod:`tcplab.packetdrill.timing` has the rules:
relative times, anchoring, tolerances). The engine is one scripted host
(:mod:`tcplab.packetdrill.host`); the script plays the other end.

What each event does
--------------------
* ``< packet``: the engine is run to the event's time, the packet is translated to the
  engine's numbers (:mod:`tcplab.packetdrill.wire`) and injected, with its ECE/CWR flags
  and IP ECN mark (a ``[ce]`` data segment makes the socket echo ECE). Before the peer's SYN
  (passive open) or SYN-ACK (active open), the engine is told what the peer offered
  (``negotiate``).
* ``> packet``: the earliest packet the engine sent that no earlier line matched is taken
  (the engine is run, a step at a time, until one is sent: packetdrill sniffs from the
  moment the previous event is done, and waits until two seconds after the script gap);
  while its payload is shorter than the line's, the following ones are added to it, as
  packetdrill aggregates TSO segments (not with ``--strict_segments``). Then it is compared
  as run_packet.c does (``wire.Connection.verify``) and its time checked. A packet the
  script did not expect is not reported by itself (packetdrill does not either): it is
  the one the next ``>`` line is compared with, and that comparison fails. Nothing is
  checked after the last event, as in packetdrill.
* system calls: see :data:`SYSCALLS`. A call written ``start...end`` is a blocking call
  packetdrill runs in its system call thread: the following events go on while it is
  blocked, and its return time is checked against ``end``. A call written with a single
  time that blocks in the kernel blocks packetdrill's main thread; here the engine is run
  up to :data:`MAIN_THREAD_BLOCK_US` for it to return, and it fails if it does not.
* shell commands: sysctls and the like (:mod:`tcplab.packetdrill.environment`); a change of
  ``tcp_ecn`` or ``tcp_ecn_fallback`` after ``socket()`` is handed to the host, which reads
  them when it uses them, as Linux does.
* ``%{ }%``: ``TCP_INFO`` is read at the event's time (``host.tcp_info()``: ``tcpi_*`` in
  Linux's units) and the Python runs after the last event, as packetdrill runs it, with
  the constants packetdrill's code.c defines (:data:`CODE_CONSTANTS`).

Results: ``pass``; ``fail`` with packetdrill's message for the first mismatch
(``PATH:LINE: error handling packet: live packet field tcp_seq: expected: ...``, followed
in :attr:`ScriptResult.details` by the script's and the actual packet, as packetdrill
prints them); ``skip`` naming the feature tcplab does not model (decided before running
where the script says it, else when it is reached).
"""

from __future__ import annotations

import ast
import builtins
import errno as errno_mod
import os
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tcplab.packetdrill.environment import ENGINE_CC, EngineSettings, Unmodelled, parse_commands
from tcplab.packetdrill.host import Host, LivePacket, RawHost, engine_host
from tcplab.packetdrill.script import (
    Array,
    BinaryOp,
    Code,
    Command,
    Ellipsis,
    Event,
    Field,
    IcmpPacket,
    Int,
    Script,
    ScriptError,
    String,
    Struct,
    Symbol,
    Syscall,
    TcpPacket,
    UdpPacket,
    parse_file,
)
from tcplab.packetdrill.timing import ResolvedTime, resolve, tolerance_us, verify_time
from tcplab.packetdrill.wire import (
    OUR_MSS,
    Connection,
    ScriptError_,
    WirePacket,
    check_field,
    format_packet,
    initial_wscale,
)

__all__ = [
    "ScriptResult",
    "run_script",
    "SYSCALLS",
    "SOCKOPTS",
    "CODE_CONSTANTS",
    "DEFAULT_DEFINES",
    "MAIN_THREAD_BLOCK_US",
]

#: The system calls tcplab runs.
SYSCALLS = frozenset(
    {"socket", "bind", "listen", "accept", "connect", "setsockopt", "getsockopt", "fcntl"}
    | {"write", "send", "sendto", "read", "recv", "recvfrom", "ioctl", "close", "shutdown"}
    | {"sendmsg", "recvmsg", "epoll_create", "epoll_ctl", "epoll_wait"}
)
#: The socket options tcplab runs (setsockopt and getsockopt).
SOCKOPTS = frozenset(
    {"SO_REUSEADDR", "SO_SNDBUF", "SO_RCVBUF", "TCP_NODELAY", "TCP_CONGESTION", "TCP_MAXSEG", "TCP_CORK"}
    | {"IP_MTU_DISCOVER", "IP_TOS", "TCP_INQ", "TCP_USER_TIMEOUT"}
)
#: send() flags tcplab runs.
_SEND_FLAGS = ("MSG_EOR", "MSG_MORE")
#: IP-level options tcplab accepts and ignores: it models no IP header fields or path MTU
#: discovery (DF is always set, as Linux sets it by default; the TOS byte is not carried).
_IP_NOOP_OPTS = frozenset({"IP_MTU_DISCOVER", "IP_TOS"})
#: Options only read (getsockopt): SO_ERROR (the pending socket error) and TCP_MAXSEG.
GETSOCKOPTS = SOCKOPTS | {"SO_ERROR", "TCP_MAXSEG"}
_IOCTLS = {"SIOCINQ": "inq", "FIONREAD": "inq", "SIOCOUTQ": "outq", "TIOCOUTQ": "outq"}
#: shutdown()'s `how` as bits: 1 the sending side (FIN), 2 the receiving side.
_SHUT_HOW = {"SHUT_WR": 1, "SHUT_RD": 2, "SHUT_RDWR": 3}

#: What code.c's write_symbols() defines for ``%{ }%`` code (Linux's values).
CODE_CONSTANTS: dict[str, int] = {
    "TCP_ESTABLISHED": 1,
    "TCP_SYN_SENT": 2,
    "TCP_SYN_RECV": 3,
    "TCP_FIN_WAIT1": 4,
    "TCP_FIN_WAIT2": 5,
    "TCP_TIME_WAIT": 6,
    "TCP_CLOSE": 7,
    "TCP_CLOSE_WAIT": 8,
    "TCP_LAST_ACK": 9,
    "TCP_LISTEN": 10,
    "TCP_CLOSING": 11,
    "TCP_CA_Open": 0,
    "TCP_CA_Disorder": 1,
    "TCP_CA_CWR": 2,
    "TCP_CA_Recovery": 3,
    "TCP_CA_Loss": 4,
    "TCPI_OPT_TIMESTAMPS": 1,
    "TCPI_OPT_SACK": 2,
    "TCPI_OPT_WSCALE": 4,
    "TCPI_OPT_ECN": 8,
    "TCPI_OPT_ECN_SEEN": 16,
    "TCPI_OPT_SYN_DATA": 32,
    "TCPI_OPT_USEC_TS": 64,
    "TCPI_OPT_TFO_CHILD": 128,
}

#: Linux's values of the symbols the modelled calls take.
_SYMBOLS: dict[str, int] = {
    "AF_INET": 2,
    "SOCK_STREAM": 1,
    "SOCK_NONBLOCK": 0o4000,
    "IPPROTO_TCP": 6,
    "SOL_TCP": 6,
    "SOL_SOCKET": 1,
    "SO_REUSEADDR": 2,
    "SO_SNDBUF": 7,
    "SO_RCVBUF": 8,
    "TCP_NODELAY": 1,
    "TCP_CONGESTION": 13,
    "F_GETFL": 3,
    "F_SETFL": 4,
    "O_RDONLY": 0,
    "O_WRONLY": 1,
    "O_RDWR": 2,
    "O_NONBLOCK": 0o4000,
    "SIOCINQ": 0x541B,
    "FIONREAD": 0x541B,
    "SIOCOUTQ": 0x5411,
    "TIOCOUTQ": 0x5411,
    "MSG_DONTWAIT": 0x40,
    "MSG_EOR": 0x80,
    "EPOLLIN": 0x1,
    "EPOLLOUT": 0x4,
    "EPOLLERR": 0x8,
    "EPOLLHUP": 0x10,
    "EPOLLRDHUP": 0x2000,
    "EPOLLET": 1 << 31,
    "EPOLL_CTL_ADD": 1,
    "EPOLL_CTL_DEL": 2,
    "EPOLL_CTL_MOD": 3,
    "IP_PMTUDISC_DONT": 0,
    "IP_PMTUDISC_WANT": 1,
    "IP_PMTUDISC_DO": 2,
    "MSG_MORE": 0x8000,
    "SHUT_RD": 0,
    "SHUT_WR": 1,
    "SHUT_RDWR": 2,
}

#: How long (simulated) a call that blocks packetdrill's main thread may take.
MAIN_THREAD_BLOCK_US = 1_000_000
#: packetdrill's wait for a blocking call to finish before the next one or the end (1 s).
AWAIT_IDLE_US = 1_000_000
#: A ``*`` outbound line waits forever in packetdrill; here this long.
ANY_TIME_WAIT_US = 60_000_000
#: SOCK_MIN_SNDBUF / SOCK_MIN_RCVBUF (include/net/sock.h), sysctl_wmem_max/rmem_max.
_SOCK_MIN_SNDBUF = 4608
_SOCK_MIN_RCVBUF = 2304
_MEM_MAX = 212992


def _default_defines() -> dict[str, str]:
    """run_all.py's IPv4 ``-D`` definitions (the same as the kernel runs use)."""
    from tcplab.packetdrill.kernel import IPV4_ARGS

    out = {}
    args = list(IPV4_ARGS)
    for flag, value in zip(args, args[1:], strict=False):
        if flag == "-D":
            name, _, val = value.partition("=")
            out[name] = val
    return out


DEFAULT_DEFINES = _default_defines()


@dataclass
class ScriptResult:
    """One script run against tcplab."""

    path: str
    #: 'pass' | 'fail' | 'skip'
    status: str
    #: the first mismatch (fail) or the feature not modelled (skip); '' when it passed
    message: str = ""
    seconds: float = 0.0
    #: more lines for a failure: the script's and the actual packet
    details: str = ""


class _Skip(Exception):
    pass


class _Fail(Exception):
    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


# --- expressions ------------------------------------------------------------------------


def _value(expr: Any) -> int | str | None:
    """An argument's value: an int, a string, None for ``...``."""
    if isinstance(expr, Int):
        return expr.value
    if isinstance(expr, Symbol):
        if expr.name in _SYMBOLS:
            return _SYMBOLS[expr.name]
        raise _Skip(f"symbol {expr.name} not modelled")
    if isinstance(expr, BinaryOp):
        left, right = _value(expr.left), _value(expr.right)
        if not isinstance(left, int) or not isinstance(right, int):
            raise _Skip("an expression not modelled")
        return left | right
    if isinstance(expr, Array) and len(expr.items) == 1:
        return _value(expr.items[0])
    if isinstance(expr, String):
        return expr.text
    if isinstance(expr, Ellipsis):
        return None
    raise _Skip(f"argument {type(expr).__name__} not modelled")


def _int_arg(args: tuple, i: int) -> int:
    v = _value(args[i]) if i < len(args) else None
    if not isinstance(v, int):
        raise _Skip("a system call argument not modelled")
    return v


def _msghdr(c: Syscall) -> tuple[int, int | None]:
    """sendmsg()/recvmsg()'s msghdr as tcplab runs it: (the iovecs' total length, the
    expected ``TCP_CM_INQ`` cmsg_data or None); anything else is not modelled."""
    m = c.args[1] if len(c.args) > 1 else None
    if not isinstance(m, Struct) or m.kind != "msghdr":
        raise _Skip(f"{c.name} without a msghdr not modelled")
    total, inq = 0, None
    for f in m.items:
        if not isinstance(f, Field):
            raise _Skip(f"{c.name} msghdr not modelled")
        if f.name == "msg_iov":
            for iov in f.value.items if isinstance(f.value, Array) else ():
                if not (isinstance(iov, Struct) and len(iov.items) == 2 and isinstance(iov.items[0], Ellipsis)):
                    raise _Skip(f"{c.name} iovec not modelled")
                total += int(_value(iov.items[1]) or 0)
        elif f.name == "msg_control":
            cmsgs = f.value.items if isinstance(f.value, Array) else ()
            if c.name != "recvmsg" or len(cmsgs) != 1:
                raise _Skip(f"{c.name} control messages not modelled")
            d = {g.name: g.value for g in cmsgs[0].items if isinstance(g, Field)}
            if _symbol_name(d.get("cmsg_type")) != "TCP_CM_INQ":
                raise _Skip(f"cmsg {_symbol_name(d.get('cmsg_type'))} not modelled")
            inq = int(_value(d["cmsg_data"]) or 0)
        elif f.name == "msg_flags":
            if _value(f.value) != 0:
                raise _Skip(f"{c.name} msg_flags not modelled")
        elif f.name != "msg_name":
            raise _Skip(f"{c.name} field {f.name} not modelled")
    return total, inq


def _epoll_event(expr: Any) -> tuple[int, int | None]:
    """An ``{events=..., fd=...}`` (or ``ptr=``) struct: (events, fd or None)."""
    if not isinstance(expr, Struct):
        raise _Skip("an epoll_event other than {events=..., fd=...} not modelled")
    d = {f.name: f.value for f in expr.items if isinstance(f, Field)}
    events = int(_value(d.get("events", Int(0, False))) or 0) & 0xFFFFFFFF
    fd = d.get("fd")
    return events, (int(_value(fd) or 0) if fd is not None else None)


def _is_null(expr: Any) -> bool:
    """The script's ``NULL`` buffer (a bad address: the call fails with EFAULT)."""
    return isinstance(expr, Symbol) and expr.name == "NULL"


def _symbol_name(expr: Any) -> str:
    return expr.name if isinstance(expr, Symbol) else str(_value(expr))


def _optlen(w: WirePacket) -> int:
    return sum(o.length_bytes or 0 for o in w.options)


def _errno_number(name: str | None) -> int:
    if name is None:
        return 0
    return getattr(errno_mod, name, -1)


def _strerror(n: int) -> str:
    return os.strerror(n) if n >= 0 else "Unknown error"


# --- the result of a call ---------------------------------------------------------------


@dataclass
class _Done:
    result: int
    errno: str | None = None
    #: checks after the result (ioctl and getsockopt values): the message of a mismatch
    after: Callable[[], str | None] | None = None


@dataclass
class _Wait:
    """The call blocks until ``ready()``; ``finish()`` then gives its outcome."""

    ready: Callable[[], bool]
    finish: Callable[[], _Done]


@dataclass
class _Pending:
    """A blocking call (``start...end``) in packetdrill's system call thread."""

    event: Event
    resolved: ResolvedTime
    call: Syscall
    wait: _Wait


# --- code blocks ------------------------------------------------------------------------


def _python_text(code: str) -> str:
    """A block as code.c's write_text() hands it to Python: followed by two newlines (a
    block ending in a backslash continuation is then still whole)."""
    return code + "\n\n"


def _code_names(code: str) -> tuple[set[str], set[str]]:
    """(names read, names assigned) by a block of Python."""
    tree = ast.parse(_python_text(code))
    read, assigned = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else assigned).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            assigned.add(node.name)
        elif isinstance(node, ast.arg):
            assigned.add(node.arg)
        elif isinstance(node, ast.alias):
            assigned.add((node.asname or node.name).split(".")[0])
    return read, assigned


# --- the runner -------------------------------------------------------------------------


@dataclass
class _Socket:
    kind: str  # "socket" | "listener" | "conn"
    nonblocking: bool = False
    #: shutdown(SHUT_RD) / shutdown(SHUT_WR) (or SHUT_RDWR) done
    rd_shutdown: bool = False
    wr_shutdown: bool = False


@dataclass
class _Runner:
    script: Script
    tolerance_usecs: int
    host_factory: Callable[[dict[str, Any]], RawHost]
    tolerance_percent: float = 12.5
    strict_segments: bool = False
    settings: EngineSettings = field(default_factory=EngineSettings)
    conn: Connection = field(default_factory=Connection)
    host: Host | None = None
    fds: dict[int, _Socket] = field(default_factory=dict)
    passive: bool | None = None
    sndbuf: int | None = None
    rcvbuf: int | None = None
    nodelay: bool = False
    #: setsockopt(TCP_MAXSEG) (0: not set)
    user_mss: int = 0
    cork: bool = False
    #: setsockopt(TCP_INQ): recvmsg() reports what is left to read
    inq: bool = False
    user_timeout: int = 0
    #: epoll: (epfd, fd) -> events registered; those with a wakeup not yet reported; the
    #: bytes received (and FIN) when the last wakeup was counted
    epoll: dict[tuple[int, int], int] = field(default_factory=dict)
    epoll_pending: set[tuple[int, int]] = field(default_factory=set)
    epoll_seen: int = 0
    cc: str = "cubic"
    prev: ResolvedTime | None = None
    prev_inbound: bool = False
    #: the live time the previous event was done (packetdrill's "now" for the next one)
    mark_us: int = 0
    pending: _Pending | None = None
    code: list[tuple[int, str, dict[str, int]]] = field(default_factory=list)
    event: Event | None = None

    @property
    def path(self) -> str:
        return self.script.path

    # before running

    def prescan(self) -> None:
        """Raise :class:`_Skip` naming what the script uses that tcplab does not model."""
        s = self.script
        if s.unsupported:
            raise _Skip(f"{s.unsupported[0]} not modelled")
        if Path(s.path).name.endswith("v6.pkt"):
            raise _Skip("IPv6 script (*v6.pkt) not modelled")
        opts = s.options
        if opts.get("ip_version", "ipv4") != "ipv4":
            raise _Skip(f"--ip_version={opts['ip_version']} not modelled")
        if opts.get("mtu", "1500") != "1500":
            raise _Skip(f"--mtu={opts['mtu']} not modelled")
        for name in ("so_filename", "non_fatal", "wire_client", "wire_server"):
            if name in opts:
                raise _Skip(f"--{name} not modelled")
        scratch = EngineSettings()
        assigned_code: set[str] = set()
        read_code: list[tuple[int, set[str]]] = []
        try:
            if s.init_command:
                scratch.apply(parse_commands(s.init_command))
            for ev in s.events:
                a = ev.action
                if isinstance(a, UdpPacket | IcmpPacket):
                    raise _Skip(f"{'UDP' if isinstance(a, UdpPacket) else 'ICMP'} packet (line {ev.line}) not modelled")
                if isinstance(a, TcpPacket):
                    self._prescan_packet(ev, a)
                elif isinstance(a, Syscall):
                    self._prescan_syscall(ev, a)
                elif isinstance(a, Command):
                    scratch.apply(parse_commands(a.shell))
                elif isinstance(a, Code):
                    try:
                        read, assigned = _code_names(a.python)
                    except SyntaxError:
                        raise _Skip(f"%{{ }}% code that is not Python 3 (line {ev.line})") from None
                    assigned_code |= assigned
                    read_code.append((ev.line, read))
        except Unmodelled as e:
            raise _Skip(str(e)) from None
        known = set(CODE_CONSTANTS) | set(dir(builtins)) | assigned_code
        for line, read in read_code:
            for name in sorted(read):
                if name not in known and not name.startswith("tcpi_"):
                    raise _Skip(f"%{{ }}% code reading {name} (line {line}) not modelled")

    def _prescan_packet(self, ev: Event, p: TcpPacket) -> None:
        if p.ports is not None:
            raise _Skip(f"packets with ports (line {ev.line}) not modelled")
        if p.direction == "<" and "R" in p.flags:
            raise _Skip(f"inbound RST (line {ev.line}) not modelled")

    def _prescan_syscall(self, ev: Event, c: Syscall) -> None:
        if c.name not in SYSCALLS:
            raise _Skip(f"system call {c.name} not modelled")
        if c.name == "shutdown" and len(c.args) > 1 and _symbol_name(c.args[1]) not in _SHUT_HOW:
            raise _Skip(f"shutdown {_symbol_name(c.args[1])} not modelled")
        if c.name in ("setsockopt", "getsockopt"):
            opt = _symbol_name(c.args[2]) if len(c.args) > 2 else "?"
            if opt not in (SOCKOPTS if c.name == "setsockopt" else GETSOCKOPTS):
                raise _Skip(f"{c.name} {opt} not modelled")
        if c.name == "ioctl":
            cmd = _symbol_name(c.args[1]) if len(c.args) > 1 else "?"
            if cmd not in _IOCTLS:
                raise _Skip(f"ioctl {cmd} not modelled")
        if c.name == "fcntl":
            cmd = _symbol_name(c.args[1]) if len(c.args) > 1 else "?"
            if cmd not in ("F_GETFL", "F_SETFL"):
                raise _Skip(f"fcntl {cmd} not modelled")
        buffered = c.name in ("write", "send", "sendto", "read", "recv", "recvfrom")
        if buffered and len(c.args) > 1 and not isinstance(c.args[1], Ellipsis) and not _is_null(c.args[1]):
            raise _Skip(f"{c.name} with a buffer other than ... (line {ev.line}) not modelled")
        if c.name == "epoll_wait" and (len(c.args) < 4 or _value(c.args[3]) != 0):
            raise _Skip("epoll_wait() that waits (timeout other than 0) not modelled")
        if c.name == "epoll_ctl" and len(c.args) > 1 and _symbol_name(c.args[1]) != "EPOLL_CTL_ADD":
            raise _Skip(f"epoll_ctl {_symbol_name(c.args[1])} not modelled")
        if c.name in ("sendmsg", "recvmsg"):
            _msghdr(c)
            flags = c.args[2] if len(c.args) > 2 else None
            known = c.name == "sendmsg" and _symbol_name(flags) in _SEND_FLAGS
            if flags is not None and not (isinstance(flags, Int) and flags.value == 0) and not known:
                raise _Skip(f"{c.name} flags {_symbol_name(flags)} not modelled")
        if c.name in ("send", "sendto", "recv", "recvfrom") and len(c.args) > 3:
            flags = c.args[3]
            known = c.name in ("send", "sendto") and _symbol_name(flags) in _SEND_FLAGS
            if not (isinstance(flags, Int) and flags.value == 0) and not known:
                raise _Skip(f"{c.name} flags {_symbol_name(flags)} not modelled")

    # the walk

    def run(self) -> None:
        s = self.script
        self.conn.tcp_ts_tick_usecs = int(s.options.get("tcp_ts_tick_usecs", "0") or 0)
        self.conn.tcp_ts_ecr_scaled = "tcp_ts_ecr_scaled" in s.options
        self.strict_segments = "strict_segments" in s.options
        if s.init_command:
            self.settings.apply(parse_commands(s.init_command))
        for ev in s.events:
            self.event = ev
            a = ev.action
            inbound = isinstance(a, TcpPacket) and a.direction == "<"
            r = resolve(
                ev.time,
                inbound_packet=inbound,
                previous=self.prev,
                previous_inbound_packet=self.prev_inbound,
                now_us=self.mark_us,
            )
            if isinstance(a, TcpPacket) and a.direction == ">":
                self.outbound(ev, r, a)
            elif isinstance(a, TcpPacket):
                self.inbound(ev, r, a)
            elif isinstance(a, Syscall):
                self.syscall(ev, r, a)
            elif isinstance(a, Command):
                self.wait_for_event(ev, r, "command")
                ecn = self.settings.ecn
                try:
                    self.settings.apply(parse_commands(a.shell))
                except Unmodelled as e:
                    raise _Skip(str(e)) from None
                if self.host is not None and self.settings.ecn != ecn:
                    # read live by Linux (environment.LIVE_SYSCTLS)
                    self.host.set_ecn(*self.settings.ecn)
                if self.settings.tun_qdisc is not None and self.host is not None:
                    _, limit = self.settings.tun_qdisc
                    self.host.raw.set_tun_pfifo_limit(limit)
                    self.settings.tun_qdisc = None
                self.mark_now()
            elif isinstance(a, Code):
                self.wait_for_event(ev, r, "data collection for code")
                if self.host is None:
                    raise _Fail(f"{self.path}:{ev.line}: no socket to read TCP_INFO from")
                self.code.append((ev.line, a.python, self.host.tcp_info()))
                self.mark_now()
            self.prev, self.prev_inbound = r, inbound
        self.run_code()
        if self.pending is not None:
            self.await_idle()
            if self.pending is not None:
                line = self.pending.event.line
                raise _Fail(f"{self.path}:{line}: runtime error: exiting while a blocking system call is in progress")

    # time

    def now_us(self) -> int:
        return self.host.now_us if self.host is not None else self.mark_us

    def mark_now(self) -> None:
        self.mark_us = self.now_us()

    def fail_at(self, ev: Event, message: str, details: str = "") -> _Fail:
        return _Fail(f"{self.path}:{ev.line}: {message}", details)

    def check_time(self, ev: Event, r: ResolvedTime, live_us: int, description: str) -> None:
        last = self.prev.time_us if self.prev is not None else None
        msg = verify_time(r, live_us, last, description, self.tolerance_usecs, self.tolerance_percent)
        if msg:
            raise self.fail_at(ev, msg)

    def advance(self, t_us: int) -> None:
        """Run the engine to ``t_us``, returning a blocked call the moment it may."""
        if self.host is None:
            self.mark_us = max(self.mark_us, t_us)
            return
        while self.pending is not None and self.host.advance(t_us, stop=self.pending.wait.ready):
            self.finish_pending()
        self.host.advance(t_us)

    def wait_for_event(self, ev: Event, r: ResolvedTime, description: str) -> None:
        """run.c wait_for_event(): run to the event's time, then check it (late is late)."""
        self.advance(r.time_us)
        self.check_time(ev, r, max(self.now_us(), r.time_us), description)

    # packets

    def inbound(self, ev: Event, r: ResolvedTime, p: TcpPacket) -> None:
        self.wait_for_event(ev, r, "inbound packet")
        if self.host is None:
            raise self.fail_at(ev, "error handling packet: no matching socket for script packet")
        flags = set(p.flags)
        if "S" in flags:
            self.negotiate(p)
        try:
            pkt = self.conn.inbound(p)
        except ScriptError_ as e:
            raise self.fail_at(ev, f"error handling packet: {e}") from None
        self.host.inject(pkt)
        self.poll_pending()
        self.mark_now()

    def negotiate(self, p: TcpPacket) -> None:
        assert self.host is not None
        mss, wscale, ts, sack = Connection.peer_syn_options(p)
        ts_ok = ts and self.settings.timestamps
        if "." not in p.flags:  # the peer's SYN: the syn-ack offers what the peer did
            self.conn.syn_wscale = self.our_wscale()
        self.conn.peer_wscale = wscale
        self.conn.ts_ok, self.conn.sack_ok = ts_ok, sack
        self.conn.our_wscale = self.conn.syn_wscale if wscale is not None else 0
        self.host.negotiate(mss, wscale, ts_ok, sack)

    def our_wscale(self) -> int:
        assert self.host is not None
        engine = self.host.rcv_wscale
        if engine is not None:
            return engine
        return initial_wscale(self.settings.rmem_max, self.rcvbuf)

    def sniff(self, ev: Event, deadline_us: int) -> LivePacket:
        """The earliest unmatched packet the engine sent, running it until ``deadline_us``."""
        host = self.host
        assert host is not None
        while not host.queue:
            stop = lambda: bool(host.queue) or (self.pending is not None and self.pending.wait.ready())  # noqa: E731
            if not host.advance(deadline_us, stop=stop):
                raise self.fail_at(ev, "error handling packet: Timed out waiting for packet")
            if self.pending is not None and self.pending.wait.ready():
                self.finish_pending()
        return host.queue.pop(0)

    def outbound(self, ev: Event, r: ResolvedTime, p: TcpPacket) -> None:
        if self.host is None:
            raise self.fail_at(ev, "error handling packet: no matching socket for script packet")
        flags = set(p.flags)
        if "S" in flags:
            self.conn.local_isn = p.seq_start
        last = self.prev.time_us if self.prev is not None else 0
        if r.kind == "any":
            deadline = self.mark_us + ANY_TIME_WAIT_US
        else:
            gap = max(r.time_us, r.end_us if r.end_us is not None else r.time_us) - last
            deadline = self.mark_us + (int(gap / 1e6) + 2) * 1_000_000
        frags = [self.sniff(ev, deadline)]
        got = frags[0].payload
        while got < p.payload_bytes and not self.strict_segments:
            nxt = self.sniff(ev, deadline)
            self.check_fragment(ev, p, frags, nxt, got)
            frags.append(nxt)
            got += nxt.payload
        live = frags[-1]
        actual = self.conn.to_script(live, first=frags[0])
        details = self.dumps(p, r.time_us, actual)
        if got != p.payload_bytes:
            raise self.fail_at(
                ev,
                f"error handling packet: live packet payload: expected {p.payload_bytes} bytes vs actual {got} bytes",
                details,
            )
        ts_tol = tolerance_us(r.time_us, 0, self.tolerance_usecs, self.tolerance_percent)
        if msg := self.conn.verify(p, actual, ts_tol):
            raise self.fail_at(ev, f"error handling packet: {msg}", self.dumps(p, r.time_us, actual))
        last_event = self.prev.time_us if self.prev is not None else None
        msg = verify_time(r, live.t_us, last_event, "outbound packet", self.tolerance_usecs, self.tolerance_percent)
        if msg:
            raise self.fail_at(ev, f"error handling packet: {msg}", details)
        self.mark_us = live.t_us
        self.poll_pending()

    def check_fragment(self, ev: Event, p: TcpPacket, frags: list[LivePacket], cur: LivePacket, sniffed: int) -> None:
        """run_packet.c verify_packet_fragments(): a segment continuing the previous one."""
        prev = frags[-1]
        a, b = self.conn.to_script(prev), self.conn.to_script(cur)
        checks = [
            ("tcp_data_offset", 5 + _optlen(a) // 4, 5 + _optlen(b) // 4),
            ("tcp_syn", int("S" in a.flags), int("S" in b.flags)),
            ("tcp_rst", int("R" in a.flags), int("R" in b.flags)),
            ("tcp_ack", int("." in a.flags), int("." in b.flags)),
            ("tcp_ece", int("E" in a.flags), int("E" in b.flags)),
            ("tcp_seq", a.seq + a.payload, b.seq),
            ("tcp_ack_seq", a.ack, b.ack),
            ("tcp_window", a.win, b.win),
        ]
        for name, expected, actual in checks:
            if msg := check_field(name, expected, actual):
                raise self.fail_at(ev, f"error handling packet: {msg}", self.fragment_dumps(p, frags + [cur]))
        if cur.payload < p.payload_bytes - sniffed and cur.payload != prev.payload:
            raise self.fail_at(
                ev,
                "error handling packet: fragment payload: "
                f"expected {prev.payload} bytes vs actual {cur.payload} bytes; "
                f"total payload: expected {p.payload_bytes} bytes vs actual {cur.payload + sniffed} bytes",
                self.fragment_dumps(p, frags + [cur]),
            )

    def dumps(self, p: TcpPacket, script_us: int, actual: WirePacket) -> str:
        script_line = format_packet(p.flags, p.seq_start, p.payload_bytes, p.ack, p.win, p.options)
        actual_line = format_packet(
            actual.flags,
            actual.seq,
            actual.payload,
            actual.ack if "." in actual.flags else None,
            actual.win,
            actual.options,
        )
        return (
            f"script packet: {script_us / 1e6:9.6f} {script_line}\n"
            f"actual packet: {actual.t_us / 1e6:9.6f} {actual_line}"
        )

    def fragment_dumps(self, p: TcpPacket, frags: list[LivePacket]) -> str:
        lines = [f"   script packet: {format_packet(p.flags, p.seq_start, p.payload_bytes, p.ack, p.win, p.options)}"]
        for i, f in enumerate(frags):
            w = self.conn.to_script(f)
            shown = format_packet(w.flags, w.seq, w.payload, w.ack if "." in w.flags else None, w.win, w.options)
            lines.append(f"actual #{i} packet: {w.t_us / 1e6:9.6f} {shown}")
        return "\n".join(lines)

    # system calls

    def syscall(self, ev: Event, r: ResolvedTime, c: Syscall) -> None:
        blocking = ev.time.blocking_end_us is not None
        if self.pending is not None:
            self.await_idle()
            if self.pending is not None and blocking:
                raise self.fail_at(
                    ev,
                    f"runtime error in {c.name} call: blocking system call while another blocking "
                    "system call is already in progress",
                )
        self.wait_for_event(ev, r, "system call start")
        outcome = self.invoke(ev, c)
        if isinstance(outcome, _Done):
            self.check_result(ev, c, outcome)
        elif blocking:
            self.pending = _Pending(ev, r, c, outcome)
            self.poll_pending()
        else:
            host = self.host
            assert host is not None
            if not host.advance(self.now_us() + MAIN_THREAD_BLOCK_US, stop=outcome.ready):
                raise self.fail_at(
                    ev,
                    f"runtime error in {c.name} call: the call blocked packetdrill's main thread "
                    f"for {MAIN_THREAD_BLOCK_US / 1e6:g} s (only a later event of the script could "
                    "unblock it; write it as a blocking call, start...end)",
                )
            self.check_result(ev, c, outcome.finish())
        self.mark_now()

    def poll_pending(self) -> None:
        if self.pending is not None and self.pending.wait.ready():
            self.finish_pending()

    def finish_pending(self) -> None:
        p = self.pending
        assert p is not None
        self.pending = None
        self.check_result(p.event, p.call, p.wait.finish())
        end = p.resolved.blocking_end_us
        if end is not None:
            when = ResolvedTime("absolute", end, None, 0, None)
            msg = verify_time(
                when,
                self.now_us(),
                p.resolved.time_us,
                "system call return",
                self.tolerance_usecs,
                self.tolerance_percent,
            )
            if msg:
                raise self.fail_at(p.event, msg)

    def await_idle(self) -> None:
        """Give a blocking call up to a second to return (run_system_call.c await_idle_thread())."""
        assert self.pending is not None and self.host is not None
        if self.host.advance(self.now_us() + AWAIT_IDLE_US, stop=self.pending.wait.ready):
            self.finish_pending()

    def check_result(self, ev: Event, c: Syscall, done: _Done) -> None:
        """run_system_call.c end_syscall()'s checks."""
        expected = _value(c.result)
        actual_errno = _errno_number(done.errno)
        if not isinstance(expected, int):
            raise _Skip(f"the result of {c.name} (line {ev.line}) not modelled")
        fd_mode = c.name in ("socket", "accept")
        if fd_mode and expected >= 0:
            if done.result < 0:
                raise self.fail_at(
                    ev,
                    f"runtime error in {c.name} call: Expected non-negative result but got {done.result} "
                    f"with errno {actual_errno} ({_strerror(actual_errno)})",
                )
        elif done.result != expected:
            raise self.fail_at(
                ev,
                f"runtime error in {c.name} call: Expected result {expected} but got {done.result} "
                f"with errno {actual_errno} ({_strerror(actual_errno)})",
            )
        if c.errno is not None:
            want = _errno_number(c.errno)
            if want != actual_errno:
                raise self.fail_at(
                    ev,
                    f"runtime error in {c.name} call: Expected errno {want} ({_strerror(want)}) but got "
                    f"{actual_errno} ({_strerror(actual_errno)})",
                )
        if done.after is not None and (msg := done.after()):
            raise self.fail_at(ev, f"runtime error in {c.name} call: {msg}")

    def sock(self, ev: Event, c: Syscall) -> tuple[int, _Socket]:
        fd = _int_arg(c.args, 0)
        if fd not in self.fds:
            raise self.fail_at(ev, f"runtime error in {c.name} call: unable to find fd with script fd {fd}")
        return fd, self.fds[fd]

    def invoke(self, ev: Event, c: Syscall) -> _Done | _Wait:
        name = c.name
        if name == "socket":
            return self.sys_socket(ev, c)
        if name == "epoll_create":
            epfd = _value(c.result)
            epfd = epfd if isinstance(epfd, int) and epfd >= 0 else max(self.fds, default=3) + 1
            self.fds[epfd] = _Socket("epoll")
            return _Done(epfd)
        fd, sock = self.sock(ev, c)
        host = self.host
        assert host is not None
        if name == "bind":
            return _Done(0)
        if name == "listen":
            host.listen()
            self.passive = True
            sock.kind = "listener"
            return _Done(0)
        if name == "accept":
            expected = _value(c.result)

            def accepted() -> _Done:
                if isinstance(expected, int) and expected >= 0:
                    self.fds[expected] = _Socket("conn")
                return _Done(expected if isinstance(expected, int) else 4)

            ready = lambda: host.state == "ESTABLISHED"  # noqa: E731
            if sock.nonblocking and not ready():
                return _Done(-1, "EAGAIN")
            return _Wait(ready, accepted)
        if name == "connect":
            if not self.settings.timestamps:
                raise _Skip("sysctl net.ipv4.tcp_timestamps=0 with connect() not modelled")
            self.passive = False
            self.conn.syn_wscale = self.our_wscale()
            host.connect()
            if sock.nonblocking:
                return _Done(-1, "EINPROGRESS")
            return _Wait(lambda: host.state == "ESTABLISHED", lambda: _Done(0))
        if name in ("write", "send", "sendto", "read", "recv", "recvfrom") and _is_null(c.args[1]):
            # copy_from_user()/copy_to_user() on NULL: EFAULT before TCP sees the call.
            return _Done(-1, "EFAULT")
        if name == "epoll_ctl":
            # EPOLL_CTL_ADD: ep_insert() polls once; a ready socket is reported at once.
            events, _ = _epoll_event(c.args[3])
            target = _int_arg(c.args, 2)
            self.epoll[(fd, target)] = events
            self.epoll_pending.add((fd, target))
            return _Done(0)
        if name == "epoll_wait":
            return self.sys_epoll_wait(fd, c, host)
        if name == "sendmsg":
            n, _ = _msghdr(c)
            flag = _symbol_name(c.args[2]) if len(c.args) > 2 else ""
            if sock.wr_shutdown:
                return _Done(-1, "EPIPE")
            if sock.nonblocking:
                raise _Skip("a non-blocking sendmsg() not modelled")
            host.write(n, eor=flag == "MSG_EOR", more=flag == "MSG_MORE")
            return _Wait(lambda: host.pending_write_bytes() == 0, lambda: _Done(n))
        if name == "recvmsg":
            n, want_inq = _msghdr(c)

            def received() -> _Done:
                got = host.read(n)
                # tcp_inq_hint(): what is left to read; 1 once the peer's FIN came and
                # nothing is left, so the reader goes on to read the end.
                inq = host.unread_bytes()
                if inq == 0 and host.peer_closed():
                    inq = 1
                if want_inq is not None and not self.inq:
                    return _Done(got, None, lambda: "received only 0 cmsgs")
                return _Done(got, None, lambda: None if want_inq is None or inq == want_inq else "cmsgs do not match")

            ready = lambda: host.unread_bytes() > 0 or host.peer_closed() or sock.rd_shutdown  # noqa: E731
            if sock.nonblocking and not ready():
                return _Done(-1, "EAGAIN")
            return _Wait(ready, received)
        if name in ("write", "send", "sendto", "sendmsg") and getattr(host.raw, "error", None):
            # tcp_sendmsg_locked(): sk_err (a timed-out connection: ETIMEDOUT).
            return _Done(-1, str(host.raw.error))
        if name in ("write", "send", "sendto"):
            n = _int_arg(c.args, 2)
            if sock.wr_shutdown:
                # tcp_sendmsg_locked(): SEND_SHUTDOWN -> -EPIPE.
                return _Done(-1, "EPIPE")
            # send(..., MSG_EOR): the record's last skb is not merged with later data;
            # send(..., MSG_MORE): more follows (no PSH, a part-MSS tail is held).
            flag = _symbol_name(c.args[3]) if name != "write" and len(c.args) > 3 else ""
            eor, more = flag == "MSG_EOR", flag == "MSG_MORE"
            if sock.nonblocking:
                if eor or more:
                    raise _Skip(f"a non-blocking send({flag}) not modelled")
                return self.write_nonblocking(host, n)
            host.write(n, eor=eor, more=more)
            return _Wait(lambda: host.pending_write_bytes() == 0, lambda: _Done(n))
        if name in ("read", "recv", "recvfrom"):
            n = _int_arg(c.args, 2)
            # tcp_recvmsg_locked(): queued data first; then 0 once the peer's FIN came or
            # the receiving side was shut down (RCV_SHUTDOWN), else it blocks.
            ready = lambda: host.unread_bytes() > 0 or host.peer_closed() or sock.rd_shutdown  # noqa: E731
            if sock.nonblocking and not ready():
                return _Done(-1, "EAGAIN")
            return _Wait(ready, lambda: _Done(host.read(n)))
        if name == "ioctl":
            return self.sys_ioctl(c, host)
        if name == "close":
            del self.fds[fd]
            if sock.kind == "conn" or not any(s.kind == "conn" for s in self.fds.values()):
                host.close()
            return _Done(0)
        if name == "shutdown":
            # inet_shutdown() -> tcp_shutdown(): SHUT_WR (and SHUT_RDWR) sends the FIN once;
            # SHUT_RD only marks the receiving side (reads return 0 after the queued data).
            how = _SHUT_HOW[_symbol_name(c.args[1])] if len(c.args) > 1 else 1
            if how & 1 and not sock.wr_shutdown:
                sock.wr_shutdown = True
                host.shutdown_wr()
            if how & 2:
                sock.rd_shutdown = True
            return _Done(0)
        if name == "fcntl":
            cmd = _symbol_name(c.args[1])
            if cmd == "F_GETFL":
                return _Done(_SYMBOLS["O_RDWR"] | (_SYMBOLS["O_NONBLOCK"] if sock.nonblocking else 0))
            sock.nonblocking = bool(_int_arg(c.args, 2) & _SYMBOLS["O_NONBLOCK"])
            return _Done(0)
        if name == "setsockopt":
            return self.sys_setsockopt(c, host)
        if name == "getsockopt":
            return self.sys_getsockopt(c)
        raise _Skip(f"system call {name} not modelled")

    def sys_socket(self, ev: Event, c: Syscall) -> _Done:
        if self.host is not None:
            raise _Skip("a second socket not modelled")
        domain = _value(c.args[0]) if c.args else None
        if domain is not None and domain != _SYMBOLS["AF_INET"]:
            raise _Skip(f"socket domain {_symbol_name(c.args[0])} not modelled")
        sock_type = _int_arg(c.args, 1)
        if sock_type & ~_SYMBOLS["SOCK_NONBLOCK"] != _SYMBOLS["SOCK_STREAM"]:
            raise _Skip(f"socket type {_symbol_name(c.args[1])} not modelled")
        self.settings.freeze()
        config = self.settings.engine_config(mss_bytes=OUR_MSS)
        self.host = Host(self.host_factory(config))
        expected = _value(c.result)
        fd = expected if isinstance(expected, int) and expected >= 0 else 3
        self.fds[fd] = _Socket("socket", bool(sock_type & _SYMBOLS["SOCK_NONBLOCK"]))
        self.mark_us = max(self.mark_us, 0)
        return _Done(fd)

    def write_nonblocking(self, host: Host, n: int) -> _Done:
        try_write = getattr(host.raw, "write_nonblocking", None)
        if try_write is not None:
            taken = int(try_write(n))
            host.settle()
            return _Done(taken) if taken > 0 else _Done(-1, "EAGAIN")
        host.write(n)
        if host.pending_write_bytes() == 0:
            return _Done(n)
        raise _Skip("a non-blocking write() larger than the send buffer's room not modelled")

    def sys_epoll_wait(self, epfd: int, c: Syscall, host: Host) -> _Done:
        """epoll_wait(timeout 0) on the one socket, edge- or level-triggered.

        A wakeup (sk_data_ready on new data or the peer's FIN) makes an edge-triggered
        registration report again; each report is the socket's whole tcp_poll() mask then.
        Simplified: EPOLLOUT is the socket not blocked on its send buffer (tcp_poll()'s
        sk_stream_is_writeable() half-free rule is not applied), and write-space wakeups are
        not tracked.
        """
        received = int(host.tcp_info().get("tcpi_bytes_received", 0)) + int(host.peer_closed())
        if received != self.epoll_seen:
            self.epoll_seen = received
            self.epoll_pending |= {k for k in self.epoll if k[0] == epfd}
        want_events, want_fd = _epoll_event(c.args[1])
        mask = (_SYMBOLS["EPOLLIN"] if host.unread_bytes() > 0 or host.peer_closed() else 0) | (
            _SYMBOLS["EPOLLOUT"] if host.pending_write_bytes() == 0 else 0
        )
        for (ep, target), events in sorted(self.epoll.items()):
            if ep != epfd:
                continue
            et = events & _SYMBOLS["EPOLLET"]
            got = mask & events & ~_SYMBOLS["EPOLLET"]
            if got and (not et or (ep, target) in self.epoll_pending):
                self.epoll_pending.discard((ep, target))

                def check(got: int = got, target: int = target) -> str | None:
                    if got != want_events:
                        return (
                            f"epoll_event->events does not match script: expected: 0x{want_events:x} actual: 0x{got:x}"
                        )
                    if want_fd is not None and want_fd != target:
                        return f"epoll_event->data does not match script: expected: {want_fd} actual: {target}"
                    return None

                return _Done(1, None, check)
        return _Done(0)

    def sys_ioctl(self, c: Syscall, host: Host) -> _Done:
        what = _IOCTLS[_symbol_name(c.args[1])]
        if len(c.args) < 3:
            return _Done(0)
        want = _int_arg(c.args, 2)
        got = host.unread_bytes() if what == "inq" else host.outq_bytes()
        return _Done(0, None, lambda: None if got == want else f"Bad ioctl optval: expected: {want} actual: {got}")

    def sys_setsockopt(self, c: Syscall, host: Host) -> _Done:
        opt = _symbol_name(c.args[2])
        val = _value(c.args[3])
        if opt == "SO_REUSEADDR" or opt in _IP_NOOP_OPTS:
            return _Done(0)
        if opt == "TCP_CONGESTION":
            if val not in ENGINE_CC:
                return _Done(-1, "ENOENT")
            host.set_cc(str(val))
            self.cc = str(val)
            return _Done(0)
        if not isinstance(val, int):
            raise _Skip(f"setsockopt {opt} value not modelled")
        if opt == "SO_SNDBUF":
            host.set_sndbuf(val)
            self.sndbuf = val
        elif opt == "SO_RCVBUF":
            host.set_rcvbuf(val)
            self.rcvbuf = val
        elif opt == "TCP_NODELAY":
            host.set_nodelay(bool(val))
            self.nodelay = bool(val)
        elif opt == "TCP_CORK":
            host.set_cork(bool(val))
            self.cork = bool(val)
        elif opt == "TCP_INQ":
            self.inq = bool(val)
        elif opt == "TCP_USER_TIMEOUT":
            if val < 0:
                return _Done(-1, "EINVAL")
            host.set_user_timeout(val)
            self.user_timeout = val
        elif opt == "TCP_MAXSEG":
            # do_tcp_setsockopt(): 0, or TCP_MIN_MSS (88) .. MAX_TCP_WINDOW, else EINVAL;
            # it shapes the handshake only (our MSS option and the MSS clamp).
            if val != 0 and not 88 <= val <= 32767:
                return _Done(-1, "EINVAL")
            if host.state != "CLOSED":
                raise _Skip("setsockopt TCP_MAXSEG after the handshake not modelled")
            if val:
                host.set_user_mss(val)
            self.user_mss = val
            self.conn.our_mss = min(OUR_MSS, val) if val else OUR_MSS
        return _Done(0)

    def sys_getsockopt(self, c: Syscall) -> _Done:
        opt = _symbol_name(c.args[2])
        want = _value(c.args[3])
        got: int | str
        if opt == "TCP_CONGESTION":
            # icsk_ca_ops->name: DCTCP without ECN has become dctcp-reno (dctcp_init())
            got = (self.host.cc_name if self.host is not None else None) or self.cc
            return _Done(
                0, None, lambda: None if got == want else f"Bad getsockopt optval: expected: '{want}' actual: '{got}'"
            )
        if opt == "SO_SNDBUF":
            if self.sndbuf is None:
                raise _Skip("getsockopt SO_SNDBUF before setsockopt SO_SNDBUF not modelled")
            got = max(min(self.sndbuf, _MEM_MAX) * 2, _SOCK_MIN_SNDBUF)
        elif opt == "SO_RCVBUF":
            if self.rcvbuf is None:
                raise _Skip("getsockopt SO_RCVBUF before setsockopt SO_RCVBUF not modelled")
            got = max(min(self.rcvbuf, _MEM_MAX) * 2, _SOCK_MIN_RCVBUF)
        elif opt == "TCP_NODELAY":
            got = int(self.nodelay)
        elif opt == "TCP_CORK":
            got = int(self.cork)
        elif opt == "TCP_USER_TIMEOUT":
            got = self.user_timeout
        elif opt == "SO_ERROR":
            # sock_error(): no error is pending unless the connection was reset.
            got = 0
        elif opt == "TCP_MAXSEG":
            # do_tcp_getsockopt(): tp->mss_cache once connected (user_mss before; tcplab
            # has no TCP_MAXSEG setter, so the default MSS, 536, before the handshake).
            # do_tcp_getsockopt(): tp->mss_cache, or the user's value before a connection.
            assert self.host is not None
            if self.host.state == "CLOSED":
                got = self.user_mss or 536
            else:
                got = int(self.host.tcp_info().get("tcpi_snd_mss", 0))
        else:
            got = 0  # SO_REUSEADDR: packetdrill scripts set it to 1 first
        return _Done(0, None, lambda: None if got == want else f"Bad getsockopt optval: expected: {want} actual: {got}")

    # code

    def run_code(self) -> None:
        """code.c: every block, in order, with the TCP_INFO of its time (module doc)."""
        env: dict[str, Any] = dict(CODE_CONSTANTS)
        for line, text, info in self.code:
            env.update(info)
            try:
                exec(compile(_python_text(text), self.path, "exec"), env)  # noqa: S102 - the script's own assertions
            except NameError as e:
                name = getattr(e, "name", None) or str(e)
                if str(name).startswith("tcpi_"):
                    raise _Skip(f"tcp_info has no {name} (line {line})") from None
                raise _Fail(f"{self.path}:{line}: error in Python code: NameError: {e}") from None
            except AssertionError as e:
                shown = f"AssertionError: {e}" if str(e) else "AssertionError"
                raise _Fail(f"{self.path}:{line}: error in Python code: {shown}") from None
            except Exception as e:  # noqa: BLE001 - the script's code: any error fails it
                raise _Fail(f"{self.path}:{line}: error in Python code: {type(e).__name__}: {e}") from None


def run_script(
    path: str | os.PathLike[str],
    *,
    tolerance_usecs: int | None = None,
    defines: Mapping[str, str] | None = None,
    host_factory: Callable[[dict[str, Any]], RawHost] | None = None,
) -> ScriptResult:
    """Run one script against tcplab's TCP (module doc). ``tolerance_usecs`` is
    packetdrill's command-line ``--tolerance_usecs`` (the script's own option wins, as in
    packetdrill); ``defines`` its ``-D`` (run_all.py's are the default); ``host_factory``
    builds the engine's host from its configuration (the real engine by default; tests
    pass a fake). A path that cannot be read raises OSError."""
    start = time.monotonic()
    shown = str(path)
    try:
        script = parse_file(path, {**DEFAULT_DEFINES, **(defines or {})})
    except ScriptError as e:
        return ScriptResult(shown, "fail", f"cannot parse: {e}", round(time.monotonic() - start, 3))
    tol = int(script.options["tolerance_usecs"]) if "tolerance_usecs" in script.options else tolerance_usecs
    runner = _Runner(
        script,
        tol if tol is not None else script.tolerance_usecs,
        host_factory or engine_host,
        tolerance_percent=script.tolerance_percent,
    )
    status, message, details = "pass", "", ""
    try:
        runner.prescan()
        runner.run()
    except _Skip as e:
        status, message = "skip", str(e)
    except Unmodelled as e:
        status, message = "skip", str(e)
    except _Fail as e:
        status, message, details = "fail", str(e), e.details
    except ImportError:
        raise  # no engine: the caller says so once, not once per script
    except Exception as e:  # noqa: BLE001 - one script's engine or runner error must not stop a corpus run
        line = runner.event.line if runner.event is not None else 0
        status = "fail"
        message = f"{shown}:{line}: tcplab error: {type(e).__name__}: {e}"
        details = traceback.format_exc()
    return ScriptResult(shown, status, message, round(time.monotonic() - start, 3), details)
