"""packetdrill's script language, parsed into options, commands and timed events.

The reference is packetdrill itself (google/packetdrill, ``gtests/net/packetdrill``): the
grammar in ``parser.y``, the tokens in ``lexer.l``, and the checks its parser actions make
through ``tcp_packet.c`` and ``tcp_options.c``. This module is an independent parser written
from those; it builds plain frozen dataclasses and runs nothing.

The model
---------
A script is, in this order:

* **options**: ``--name=value`` (or ``--name``) lines at the top, the same flags as
  packetdrill's command line (``config.c``); a script's value overrides the command line.
  Values are kept as text in :attr:`Script.options` (a flag without a value maps to ``""``).
  ``--define=NAME=VALUE`` (packetdrill's ``-D``) makes every later word ``NAME`` read as
  ``VALUE``: a number, a ``"string"``, a ```command``` or another word (``lexer.l``,
  ``word()``); :func:`parse_script` takes the command line's defines too.
* an optional **init command**: a backquoted shell command with no time, run before the
  first event (typically ```../common/defaults.sh``` and sysctls); it may span lines.
* **events**, at least one: a time, then an action. The action is a packet the test injects
  (``<``, inbound to the stack under test) or expects the stack to send (``>``, outbound), a
  system call with its expected result, a timed ```shell command```, or a ``%{ python }%``
  block. packetdrill runs those blocks after the test, with the ``tcpi_*`` values of
  ``TCP_INFO`` snapshotted at the block's time (``code.c``); the text keeps its inner
  indentation (spaces and tabs at both ends are stripped, as ``lexer.l`` ``code()`` does).
* an optional **cleanup command**: a backquoted command after the last event, run when the
  script ends, pass or fail, if the init command ran (``run.c``, ``run_cleanup_command``).

Comments are ``// to the end of the line`` and ``/* ... */``; neither is seen inside strings,
backquotes or code blocks (a ``#`` inside a backquoted command is the shell's).

Times (``parser.y``, ``event_time`` and ``time``) are seconds, written as an integer or a
decimal (``0``, ``0.100``, ``.1``), held here in integer microseconds:

* ``0.100``: absolute, from the start of the script;
* ``+.1``: relative to the previous event;
* ``*``: any time (outbound packets only);
* ``0.1~0.2`` and ``+.1~+.2``: a range (outbound packets only); the relative range's ends
  both count from the previous event;
* ``0.1...0.2 read(...)`` and ``+0...0.2 accept(...)``: a blocking system call, starting at
  the first time and returning at the second. The end is written without ``+`` but counts
  from the same anchor as the start: a relative start makes a relative end (``run.c``,
  ``adjust_relative_event_times``).

packetdrill converts a decimal as ``(s64)(seconds * 1.0e6)`` in double precision; here it is
converted exactly and truncated to the microsecond, which gives the same value for every
time with up to six decimals that the corpus writes (a double can only land a microsecond low).

Timing tolerance: an event passes if it happens within ``--tolerance_usecs`` of its script
time (default 4000 us, ``config.c``, ``set_default_config``), widened in newer versions by
``--tolerance_percent`` (default 12.5, after the kernel timer wheel's worst case) of the time
since the previous event when that is larger: ``run.c``, ``verify_time``, and for outbound
TCP timestamps ``run_packet.c``. Ranges add the tolerance at both ends; ``*`` is never
late. :attr:`Script.tolerance_usecs` and :attr:`Script.tolerance_percent` apply the
script's options over those defaults.

Packets (``tcp_packet_spec``): direction, optional IP details (``[ect0]``, ``(tos 0x..)``,
``[flowlabel 0x..]``, ``(ttl N)``), optional ports ``A > B``, flags as written (``S``, ``S.``,
``P.``, ``F.``, ``R``, ``.``; ``-`` for none; ``E``/``W``/``A``/``U`` and the AccECN ACE
digits ``0``-``7``), ``start:end(bytes)``, then optional ``ack N``, ``win N``, ``urg N`` and
``<options>``. What packetdrill does with what is left out (``tcp_packet.c``,
``new_tcp_packet``; ``run_packet.c``, ``verify_tcp``):

* no ``<...>`` list written: the packet has no TCP options, and an outbound packet must
  arrive with none (the header length is compared); ``<...>`` (:attr:`TcpPacket.options` is
  ``None``) accepts any options and is allowed on outbound packets only;
* no ``win``: an outbound packet's window is not checked; an inbound packet must have one;
* no ``ack``: the field is 0, sent and expected as 0 (``None`` here).

TCP options: ``nop``, ``eol``, ``mss N``, ``wscale N``, ``sackOK``, ``sack A:B C:D``,
``TS val N ecr N``, ``FO [cookie]``, ``FOEXP [cookie]`` (the experimental kind 254 form),
``md5 DIGEST``, ``ECN e0b N ceb N e1b N`` (AccECN). Also ``udp (N)`` and ``icmp`` packets,
and outer headers (``ipv4 A > B:``, ``ipv6``, ``gre``, ``mpls``, ``encap psp``).

System calls: ``name(args) = result [ERRNO (text)] [(note)]``. Arguments are expressions:
integers (exact, ``0x`` hex kept as hex), symbols (``SOL_SOCKET``), ``...`` (anything),
strings (``"ab"...`` matches a prefix; escapes are kept as written), arrays ``[1]``,
``a|b``, ``name=value`` fields and brace structs, classified as packetdrill's grammar does:
sockaddr, msghdr, iovec ``{..., N}``, cmsg, pollfd, epoll_event, linger,
sock_extended_err, scm_timestamping, or a plain list.

What the parser refuses, with ``PATH:LINE: found ...; expected ...`` (:class:`ScriptError`):
text packetdrill's grammar does not accept (``parser.y``), and what packetdrill rejects
before it runs anything: an unknown option, or a value given to a flag that takes none or
missing from one that needs it, and a tolerance that is not a positive integer (``config.c``;
the grammar takes no decimal point in an option value); negative or backwards times; ``*``
or a range on anything but an outbound packet; sequence numbers whose end is not start +
length; values out of their field's range; an inbound TCP packet without a window; ``<...>``
or ``[ect01]`` on an inbound packet; invalid or conflicting flag letters; a TCP option list
longer than 40 bytes or not a multiple of 4; ECN marks on UDP; a Fast Open cookie or MD5
digest that is not an even number of hex digits (the corpus writes ``FO TFO_COOKIE``, which
packetdrill's ``run_all.py`` defines with ``-D TFO_COOKIE=...`` as it defines ``CODE`` and
``CMSG_LEVEL_IP``; a caller passes the same ``defines`` to :func:`parse_script`); a brace
struct with packetdrill's member names that is not one of its forms; ``htons()`` outside a
sockaddr.

packetdrill's keywords (``ack``, ``win``, ``fd``, ``mss``, ...) are reserved as its lexer
reserves them: not a symbol, a system call, an errno or a word of a note. The parser is more
lenient in two spots that never change what a valid script means: a ``//`` comment may end
the file without a newline, and a carriage return is white space. Checks packetdrill makes
after parsing, against its configuration (the IP version against the addresses, ICMP type
and code names, the PSP port), are not made here.

What tcplab will not run is parsed all the same and named in :attr:`Script.unsupported`
(``"udp packet (line 12)"``), so that a runner can skip the script and say why; see
:data:`UNSUPPORTED_FEATURES`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Literal

__all__ = [
    "DEFAULT_TOLERANCE_USECS",
    "DEFAULT_TOLERANCE_PERCENT",
    "UNSUPPORTED_FEATURES",
    "ScriptError",
    "Script",
    "Event",
    "EventTime",
    "TcpPacket",
    "TcpOption",
    "UdpPacket",
    "IcmpPacket",
    "IpInfo",
    "Encapsulation",
    "Syscall",
    "Command",
    "Code",
    "Int",
    "Symbol",
    "Ellipsis",
    "String",
    "Array",
    "Struct",
    "Field",
    "Call",
    "BinaryOp",
    "MplsEntry",
    "GreHeader",
    "Expr",
    "Action",
    "parse_script",
    "parse_file",
]

# config.c, set_default_config(): "tolerance_usecs = 4000", "tolerance_percent = 12.5".
DEFAULT_TOLERANCE_USECS = 4000
DEFAULT_TOLERANCE_PERCENT = 12.5

# The features a script can use that tcplab does not model; each is reported in
# Script.unsupported as "<feature> (line N)".
UNSUPPORTED_FEATURES = (
    "udp packet",
    "icmp packet",
    "IPv4 outer header",
    "IPv6 outer header",
    "GRE encapsulation",
    "MPLS label stack",
    "PSP encapsulation",
    "IPv6 addresses",
    "IP TOS",
    "IPv6 flow label",
    "IP TTL",
    "AccECN TCP flags",
    "urgent data",
    "TCP Fast Open option",
    "TCP Fast Open socket API",
    "TCP Fast Open SYN data",
    "TCP MD5 option",
    "TCP MD5 socket option",
    "AccECN option",
    "zerocopy",
    "timestamping",
    "splice/sendfile",
)

# config.c, options[]: packetdrill's flags, and whether each takes a value. A script may set
# any of them; another name, or a value where none is taken (or none where one is), stops it.
_OPTIONS_WITH_VALUE = frozenset(
    str.split(
        """ip_version bind_port code_command code_format code_sockopt connect_port remote_ip local_ip
        gateway_ip netmask_ip speed mss mtu init_scripts tolerance_usecs tolerance_percent
        wire_server_ip wire_server_at wire_server_port wire_client_dev wire_server_dev so_filename
        so_flags tcp_ts_tick_usecs non_fatal psp_udp_port define"""
    )
)
_OPTIONS_WITHOUT_VALUE = frozenset(
    str.split(
        """wire_client wire_server tcp_ts_ecr_scaled strict_segments dry_run is_anyip send_omit_free
        debug verbose"""
    )
)

_MICROS_PER_SECOND = 1_000_000
_MAX_TCP_OPTION_BYTES = 40  # tcp_options.h: MAX_TCP_HEADER_BYTES (60) - sizeof(struct tcp)
_MAX_MD5_DIGEST_BYTES = 16  # tcp.h: TCP_MD5_DIGEST_LEN
_TCP_FLAG_LETTERS = ".FSRPEWAU01234567"  # tcp_packet.c: valid_tcp_flags
_ECN_FLAG_LETTERS = "EWA"
_ACE_FLAG_DIGITS = "01234567"
_IP_ECN_MARKS = ("noecn", "ect0", "ect1", "ce", "ect01")


class ScriptError(ValueError):
    """A script packetdrill would not accept; the message is ``PATH:LINE: found ...; expected ...``."""

    def __init__(self, path: str, line: int, found: str, expected: str) -> None:
        self.path = path
        self.line = line
        super().__init__(f"{path}:{line}: {found}; expected {expected}")


# --- expressions ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Int:
    """An integer, exact; ``hex`` when written ``0x...`` (packetdrill prints it back so)."""

    value: int
    hex: bool = False


@dataclass(frozen=True, slots=True)
class Symbol:
    """A name: a C constant (``SOL_SOCKET``, ``O_NONBLOCK``, ``EPOLLIN``) or an errno."""

    name: str


@dataclass(frozen=True, slots=True)
class Ellipsis:  # packetdrill's name for ``...`` (this module does not use the builtin)
    """``...``: any value (an address, a buffer, a length the test does not check)."""


@dataclass(frozen=True, slots=True)
class String:
    """A C string as written, without its quotes and with escapes (``\\x00``) left as text.

    Adjacent strings are joined, as packetdrill concatenates them. ``prefix`` is set for
    ``"abc"...``: the value starts with the text and the rest is not checked.
    """

    text: str
    prefix: bool = False


@dataclass(frozen=True, slots=True)
class Array:
    """``[a, b]``: an array, or a pointer to one value (``[1]`` for an int sockopt)."""

    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Field:
    """``name=value`` inside braces (or anywhere, as packetdrill allows); ``msg_iov(1)=[...]``
    and ``msg_name(...)=...`` carry their parenthesised count in ``arg``."""

    name: str
    value: Expr
    arg: Expr | None = None


StructKind = Literal[
    "sockaddr",
    "msghdr",
    "iovec",
    "cmsg",
    "pollfd",
    "epoll_event",
    "linger",
    "sock_extended_err",
    "scm_timestamping",
    "mpls_stack",
    "list",
]


@dataclass(frozen=True, slots=True)
class Struct:
    """``{...}``: a C struct of a kind packetdrill's grammar knows, or a plain ``list``.

    ``items`` are :class:`Field` for named members and bare expressions otherwise
    (``{..., 1000}`` is an iovec of any base and length 1000).
    """

    kind: StructKind
    items: tuple[Expr, ...]

    def get(self, name: str) -> Expr | None:
        """The value of the member ``name``, or None."""
        for item in self.items:
            if isinstance(item, Field) and item.name == name:
                return item.value
        return None


@dataclass(frozen=True, slots=True)
class Call:
    """``htons(8080)``, ``inet_addr("192.0.2.1")``, ``inet6_addr("fd::1")``."""

    name: str
    args: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class BinaryOp:
    """``a|b``: bitwise or, the one operator packetdrill's expressions have (``script.c``)."""

    op: Literal["|"]
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class MplsEntry:
    """One MPLS label stack entry, ``(label N, tc N, [S], ttl N)``."""

    label: int
    traffic_class: int
    bottom_of_stack: bool
    ttl: int


@dataclass(frozen=True, slots=True)
class GreHeader:
    """A GRE header, ``flags [checksum present, key present] sum N off N key N seq N``."""

    flags: int
    checksum: int
    offset: int
    key: int
    sequence: int


Expr = Int | Symbol | Ellipsis | String | Array | Field | Struct | Call | BinaryOp | MplsEntry | GreHeader


# --- packets ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IpInfo:
    """IP header details written in ``[...]`` or ``(...)`` after the direction.

    ``ecn`` is ``noecn``, ``ect0``, ``ect1``, ``ce`` or ``ect01`` (either ECT, outbound only);
    ``tos`` a whole TOS byte; ``flow_label`` the IPv6 flow label; ``ttl`` the TTL/hop limit.
    """

    ecn: str | None = None
    tos: int | None = None
    flow_label: int | None = None
    ttl: int | None = None


@dataclass(frozen=True, slots=True)
class Encapsulation:
    """An outer header written before the packet: ``ipv4 A > B:``, ``ipv6 ...``, ``gre ...:``,
    ``mpls (...):`` or ``encap psp spi N``. ``fields`` are its values by name."""

    kind: Literal["ipv4", "ipv6", "gre", "mpls", "psp"]
    fields: tuple[tuple[str, object], ...]


@dataclass(frozen=True, slots=True)
class TcpOption:
    """One TCP option, ``kind`` spelled as the script spells it.

    ``values``: ``mss`` (bytes,), ``wscale`` (shift,), ``TS`` (val, ecr), ``sack``
    ((left, right), ...), ``ECN`` (("e0b", n), ("ceb", n), ...) in written order; empty for
    ``nop``, ``eol``, ``sackOK``. ``hex_blob``: the ``FO``/``FOEXP`` cookie (``""`` for a
    cookie request) or the ``md5`` digest: hex digits as written (or as a ``-D`` define
    such as ``TFO_COOKIE`` gives them).
    """

    kind: Literal["nop", "eol", "mss", "wscale", "sackOK", "sack", "TS", "FO", "FOEXP", "md5", "ECN"]
    values: tuple = ()
    hex_blob: str | None = None

    @property
    def length_bytes(self) -> int | None:
        """Bytes on the wire (``tcp.h``, ``tcp_options.h``); None for a cookie given by name."""
        if self.kind in ("nop", "eol"):
            return 1
        fixed = {"mss": 4, "wscale": 3, "sackOK": 2, "TS": 10}
        if self.kind in fixed:
            return fixed[self.kind]
        if self.kind == "sack":
            return 2 + 8 * len(self.values)
        if self.kind == "ECN":
            return 2 + 3 * len(self.values)
        assert self.hex_blob is not None
        if not _is_hex(self.hex_blob):
            return None
        base = {"FO": 2, "FOEXP": 4, "md5": 2}[self.kind]
        return base + len(self.hex_blob) // 2


@dataclass(frozen=True, slots=True)
class TcpPacket:
    """``< S 0:0(0) win 32792 <mss 1000,sackOK,nop,nop,nop,wscale 7>``.

    ``direction``: ``<`` inbound (packetdrill injects it), ``>`` outbound (the stack must send
    it). ``flags`` exactly as written (``-`` means none). ``seq_end`` is ``seq_start +
    payload_bytes``. ``ack`` and ``win`` are None when not written. ``options``: None for
    ``<...>`` (any), ``()`` when no list is written (no options).
    """

    direction: Literal["<", ">"]
    flags: str
    seq_start: int
    seq_end: int
    payload_bytes: int
    ack: int | None
    win: int | None
    options: tuple[TcpOption, ...] | None
    urg: int | None = None
    ports: tuple[int, int] | None = None
    ip: IpInfo | None = None
    encapsulation: tuple[Encapsulation, ...] = ()


@dataclass(frozen=True, slots=True)
class UdpPacket:
    """``> udp (1000)``: a UDP datagram of ``payload_bytes``."""

    direction: Literal["<", ">"]
    payload_bytes: int
    ports: tuple[int, int] | None = None
    ip: IpInfo | None = None
    encapsulation: tuple[Encapsulation, ...] = ()


@dataclass(frozen=True, slots=True)
class IcmpPacket:
    """``< icmp unreachable frag_needed mtu 1200 [1:1001(1000)]``.

    ``echoed_protocol`` and the echoed ``seq``/``payload_bytes`` describe the packet quoted
    inside the ICMP message (``[1:1001(1000)]``, ``[udp (100)]``, ``[raw (100)]``; by default
    a TCP header at sequence 0).
    """

    direction: Literal["<", ">"]
    icmp_type: str
    code: str | None = None
    mtu: int | None = None
    echo_id: int | None = None
    echoed_protocol: Literal["tcp", "udp", "raw"] = "tcp"
    echoed_seq: int = 0
    echoed_payload_bytes: int = 0
    ip: IpInfo | None = None
    encapsulation: tuple[Encapsulation, ...] = ()


# --- the other actions ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Syscall:
    """``sendto(3, ..., 1000, 0, ..., ...) = -1 EPIPE (Broken pipe)``.

    ``errno`` is the errno name after the result, ``errno_text`` its strace text (the
    parenthesis right after it); ``note`` a further parenthesised strace note, if any.
    """

    name: str
    args: tuple[Expr, ...]
    result: Expr
    errno: str | None = None
    errno_text: str | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Command:
    """A backquoted shell command, run with ``/bin/sh``; it may span lines."""

    shell: str


@dataclass(frozen=True, slots=True)
class Code:
    """A ``%{ }%`` Python block, checked after the test against ``tcpi_*`` snapshots."""

    python: str


Action = TcpPacket | UdpPacket | IcmpPacket | Syscall | Command | Code


@dataclass(frozen=True, slots=True)
class EventTime:
    """When an event happens; see the module doc for the forms.

    ``kind`` is ``absolute``, ``relative`` (to the previous event), ``any`` (``*``,
    ``start_us`` None) or ``range`` (``start_us`` to ``end_us``, both relative when
    ``end_relative``). ``blocking_end_us`` is a blocking system call's return time
    (``start...end``); it counts from the previous event, like the start, when
    ``end_relative``.
    """

    kind: Literal["absolute", "relative", "any", "range"]
    start_us: int | None
    end_us: int | None = None
    end_relative: bool = False
    blocking_end_us: int | None = None

    @property
    def relative(self) -> bool:
        """Is the start counted from the previous event?"""
        return self.kind == "relative" or (self.kind == "range" and self.end_relative)


@dataclass(frozen=True, slots=True)
class Event:
    """An action at a time; ``line`` is the line of its time, as packetdrill reports it."""

    line: int
    time: EventTime
    action: Action


@dataclass(frozen=True, slots=True)
class Script:
    """A parsed packetdrill script (see the module doc)."""

    path: str
    options: dict[str, str]
    init_command: str | None
    events: tuple[Event, ...]
    cleanup_command: str | None
    unsupported: tuple[str, ...] = ()

    @property
    def tolerance_usecs(self) -> int:
        """``--tolerance_usecs`` from the script, else packetdrill's default (4000)."""
        return int(self.options.get("tolerance_usecs", DEFAULT_TOLERANCE_USECS))

    @property
    def tolerance_percent(self) -> float:
        """``--tolerance_percent`` from the script, else packetdrill's default (12.5)."""
        return float(self.options.get("tolerance_percent", DEFAULT_TOLERANCE_PERCENT))


# --- tokens -----------------------------------------------------------------------------

# The lexer's keywords (lexer.l): a --define never replaces them.
_KEYWORDS = frozenset(
    str.split(
        """sa_family sin_port sin_addr msg_name msg_iov msg_flags msg_control cmsg_data cmsg_level
        cmsg_type ee_errno ee_origin ee_type ee_code ee_info ee_data scm_sec scm_nsec fd u32 u64
        ptr events revents onoff linger htons ipv4 ipv6 icmp udp GREv0 gre raw sum off key seq none
        checksum sequence present encap psp spi mpls label tc ttl inet_addr inet6_addr ack eol ecr
        mss mtu nop sack sackOK md5 TS FO FOEXP ECN e0b e1b ceb tos flowlabel flags Flags val win
        urg wscale ect01 ect0 ect1 noecn ce id"""
    )
)

_WORD = re.compile(r"[A-Za-z0-9_]+")
_INT = re.compile(r"-?[0-9]+")
_FLOAT = re.compile(r"-?[0-9]*\.[0-9]+")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_IPV4 = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")
_IPV6_RUN = re.compile(r"[0-9A-Fa-f:.]+")
_OPTION = re.compile(r"--[A-Za-z0-9_]+")

TokenKind = Literal[
    "int", "hex", "float", "word", "string", "backquoted", "code", "option", "ellipsis", "ipv4", "ipv6", "char", "eof"
]


@dataclass(frozen=True, slots=True)
class _Token:
    kind: TokenKind
    text: str  # as written; the inside for strings, commands and code; the char for "char"
    line: int

    def shown(self) -> str:
        if self.kind == "eof":
            return "the end of the script"
        if self.kind == "string":
            return f'the string "{_clip(self.text)}"'
        if self.kind == "backquoted":
            return f"the command `{_clip(self.text)}`"
        if self.kind == "code":
            return "a %{ }% code block"
        if self.kind == "option":
            return f"the option --{self.text}"
        return f"'{self.text}'"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:37] + "..."


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


class _Lexer:
    """Splits a script into tokens as ``lexer.l`` does: the longest match wins, and between
    equally long ones the rule listed first (numbers before words, words before addresses)."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.pos = 0
        self.line = 1
        self.last_token_line = 1  # where an unfinished statement is reported at the end

    def tokens(self) -> list[_Token]:
        out: list[_Token] = []
        while True:
            token = self._next()
            out.append(token)
            if token.kind == "eof":
                return out

    def _error(self, found: str, expected: str) -> ScriptError:
        return ScriptError(self.path, self.line, found, expected)

    def _take(self, kind: TokenKind, length: int, text: str | None = None) -> _Token:
        raw = self.text[self.pos : self.pos + length]
        token = _Token(kind, raw if text is None else text, self.line)
        self.last_token_line = self.line
        self.line += raw.count("\n")
        self.pos += length
        return token

    def _delimited(self, kind: TokenKind, opener: str, closer: str, what: str) -> _Token:
        r"""A token from ``opener`` to ``closer``.

        In a string or a command a backslash escapes the next character (``\.``); in a code
        block a ``}`` not followed by ``%`` takes the next character with it, so ``}}%``
        does not close the block (lexer.l: ``%\{(([^}])|(\}[^\%]))*\}\%``).
        """
        text, start = self.text, self.pos + len(opener)
        i = start
        while i < len(text):
            if text.startswith(closer, i):
                inside = text[start:i]
                return self._take(kind, i + len(closer) - self.pos, inside)
            i += 2 if text[i] == ("}" if closer == "}%" else "\\") else 1
        raise self._error(f"found {what} opened here and never closed", f"a closing {closer}")

    def _next(self) -> _Token:
        text = self.text
        while self.pos < len(text):
            c = text[self.pos]
            if c in " \t\r\n":
                self.line += c == "\n"
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    raise self._error("found a /* comment opened here and never closed", "*/")
                self.line += text.count("\n", self.pos, end)
                self.pos = end + 2
            else:
                break
        if self.pos >= len(text):
            return _Token("eof", "", self.last_token_line)

        c = text[self.pos]
        if text.startswith("%{", self.pos):
            token = self._delimited("code", "%{", "}%", "a %{ code block")
            return _Token("code", token.text.strip(" \t"), token.line)
        if c == "`":
            return self._delimited("backquoted", "`", "`", "a ` command")
        if c == '"':
            return self._delimited("string", '"', '"', 'a " string')
        if text.startswith("...", self.pos):
            return self._take("ellipsis", 3)
        if match := _OPTION.match(text, self.pos):
            return self._take("option", match.end() - self.pos, match.group()[2:])

        # Numbers, words and addresses: the longest match, ties to the earlier rule.
        best: tuple[int, TokenKind] = (0, "char")
        for kind, pattern in (("float", _FLOAT), ("int", _INT), ("hex", _HEX), ("word", _WORD), ("ipv4", _IPV4)):
            match = pattern.match(text, self.pos)
            if match and match.end() - self.pos > best[0]:
                best = (match.end() - self.pos, kind)
        ipv6_length = self._ipv6_length()
        if ipv6_length > best[0]:
            best = (ipv6_length, "ipv6")
        if best[0]:
            return self._take(best[1], best[0])
        return self._take("char", 1)

    def _ipv6_length(self) -> int:
        """Length of the longest IPv6 address here: one with ``::`` or eight groups (the
        lexer's patterns; ``1:1001`` is a sequence range, not an address)."""
        match = _IPV6_RUN.match(self.text, self.pos)
        if not match or (match.group().count("::") == 0 and match.group().count(":") < 7):
            return 0
        run = match.group()
        for end in range(len(run), 1, -1):
            candidate = run[:end]
            if "::" not in candidate and candidate.count(":") != 7:
                continue
            try:
                ipaddress.IPv6Address(candidate)
            except ValueError:
                continue
            return end
        return 0


# --- the parser -------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str, path: str, defines: Mapping[str, str]) -> None:
        self.path = path
        self.tokens = _Lexer(text, path).tokens()
        self.index = 0
        self.defines = dict(defines)
        self.unsupported: list[str] = []

    # token plumbing

    def peek(self, ahead: int = 0) -> _Token:
        return self.tokens[min(self.index + ahead, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        token = self.peek()
        self.index = min(self.index + 1, len(self.tokens) - 1)
        return token

    def at(self, kind: TokenKind, text: str | None = None, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token.kind == kind and (text is None or token.text == text)

    def at_char(self, char: str, ahead: int = 0) -> bool:
        return self.at("char", char, ahead)

    def at_word(self, *words: str) -> bool:
        return self.peek().kind == "word" and self.peek().text in words

    def fail(self, expected: str, token: _Token | None = None) -> ScriptError:
        token = token or self.peek()
        return ScriptError(self.path, token.line, f"found {token.shown()}", expected)

    def semantic(self, line: int, found: str, expected: str) -> ScriptError:
        return ScriptError(self.path, line, found, expected)

    def expect_char(self, char: str, expected: str) -> _Token:
        if not self.at_char(char):
            raise self.fail(expected)
        return self.advance()

    def expect_word(self, word: str, expected: str) -> _Token:
        if not self.at("word", word):
            raise self.fail(expected)
        return self.advance()

    def expect_int(self, expected: str, *, hex_ok: bool = False, hex_only: bool = False) -> int:
        token = self.peek()
        if (token.kind == "int" and not hex_only) or ((hex_ok or hex_only) and token.kind == "hex"):
            self.advance()
            return int(token.text, 0) if token.kind == "hex" else int(token.text)
        raise self.fail(expected)

    def expect_uint(self, what: str, bits: int, expected: str, *, hex_ok: bool = False, hex_only: bool = False) -> int:
        token = self.peek()
        value = self.expect_int(expected, hex_ok=hex_ok, hex_only=hex_only)
        if not 0 <= value < (1 << bits):
            raise self.semantic(
                token.line, f"found {what} {value}, out of range", f"0 to {(1 << bits) - 1} ({bits} bits)"
            )
        return value

    def note_unsupported(self, feature: str, line: int) -> None:
        assert feature in UNSUPPORTED_FEATURES, feature
        entry = f"{feature} (line {line})"
        if entry not in self.unsupported:
            self.unsupported.append(entry)

    # the script

    def script(self) -> Script:
        options = self.options()
        self.apply_defines()
        init_command = None
        if self.at("backquoted"):
            init_command = self.advance().text
        events: list[Event] = []
        cleanup_command = None
        while not self.at("eof"):
            if self.at("backquoted") and events:
                cleanup_command = self.advance().text
                if not self.at("eof"):
                    raise self.fail(
                        "the end of the script after the cleanup command (a command without a time "
                        "is the init command when it comes first, the cleanup command when last)"
                    )
                break
            events.append(self.event())
        if not events:
            raise self.fail("an event: a time (0.100, +.1, *, 0.1~0.2) and an action")
        return Script(self.path, options, init_command, tuple(events), cleanup_command, tuple(self.unsupported))

    def options(self) -> dict[str, str]:
        options: dict[str, str] = {}
        while self.at("option"):
            token = self.advance()
            name, value = token.text, ""
            if self.at_char("="):
                self.advance()
                value = self.option_value(name)
            self.check_option(token, value)
            options[name] = value
            if name == "define":
                symbol, equals, definition = value.partition("=")
                if not symbol or not equals:
                    raise self.semantic(token.line, f"found --define={value}", "--define=NAME=VALUE")
                self.defines[symbol] = definition
            self.check_ip_option(name, value, token.line)
        return options

    def option_value(self, name: str) -> str:
        token = self.peek()
        if token.kind in ("int", "string", "ipv4", "ipv6"):
            return self.advance().text
        if token.kind == "word":
            self.advance()
            if not self.at_char("="):
                return token.text
            self.advance()
            rhs = self.advance()
            if rhs.kind == "word":
                return f"{token.text}={rhs.text}"
            if rhs.kind == "string":
                return f'{token.text}="{rhs.text}"'
            if rhs.kind == "backquoted":
                return f"{token.text}=`{rhs.text}`"
            raise self.fail("a word, a string or a `command` after NAME= in an option value", rhs)
        raise self.fail(
            f"a value for --{name}: an integer, a word, a string or an IP address "
            "(packetdrill's grammar takes no decimal point here)"
        )

    def check_option(self, token: _Token, value: str) -> None:
        """config.c, parse_script_options() and process_option(): known names, values where
        they belong, and a tolerance that makes sense."""
        name, line = token.text, token.line
        if name not in _OPTIONS_WITH_VALUE | _OPTIONS_WITHOUT_VALUE:
            raise self.semantic(line, f"found the unknown option --{name}", "one of packetdrill's options (config.c)")
        takes_value = name in _OPTIONS_WITH_VALUE
        if takes_value != bool(value):
            needs = f"--{name}=VALUE" if takes_value else f"--{name} without a value"
            raise self.semantic(line, f"found --{name}" + (f"={value}" if value else ""), needs)
        if name == "tolerance_usecs" and not (value.isdigit() and int(value) > 0):
            raise self.semantic(line, f"found --tolerance_usecs={value}", "a positive number of microseconds")
        if name == "tolerance_percent" and not (value.isdigit() and int(value) <= 100):
            raise self.semantic(line, f"found --tolerance_percent={value}", "a percentage from 0 to 100")

    def check_ip_option(self, name: str, value: str, line: int) -> None:
        if (name == "ip_version" and value == "ipv6") or (name.endswith("_ip") and ":" in value):
            self.note_unsupported("IPv6 addresses", line)

    def apply_defines(self) -> None:
        """Replace each defined word by its value (lexer.l, word()), from here on."""
        if not self.defines:
            return
        for i in range(self.index, len(self.tokens)):
            token = self.tokens[i]
            if token.kind != "word" or token.text in _KEYWORDS or token.text not in self.defines:
                continue
            value = self.defines[token.text]
            if value.startswith('"') and value.endswith('"') and len(value) >= 2:
                self.tokens[i] = _Token("string", value[1:-1], token.line)
            elif value.startswith("`") and value.endswith("`") and len(value) >= 2:
                self.tokens[i] = _Token("backquoted", value[1:-1], token.line)
            elif (number := _strtol(value)) is not None:
                self.tokens[i] = _Token("int", str(number), token.line)
            else:
                self.tokens[i] = _Token("word", value, token.line)

    # events

    def event(self) -> Event:
        line = self.peek().line
        time = self.event_time()
        token = self.peek()
        action: Action
        if token.kind == "backquoted":
            action = Command(self.advance().text)
        elif token.kind == "code":
            action = Code(self.advance().text)
        elif token.kind == "char" and token.text in "<>":
            action = self.packet()
        elif token.kind == "ellipsis":
            self.advance()
            end_us = self.time_us()
            time = EventTime(time.kind, time.start_us, time.end_us, time.kind == "relative", end_us)
            action = self.syscall()
        elif token.kind == "word":
            action = self.syscall()
        else:
            raise self.fail(
                "an action: a packet (< or >), a system call name(...), a `shell command` or a %{ python }% block"
            )
        outbound_packet = isinstance(action, TcpPacket | UdpPacket | IcmpPacket) and action.direction == ">"
        if time.kind in ("any", "range") and not outbound_packet:
            form = "*" if time.kind == "any" else "a time range"
            raise self.semantic(line, f"found {form} on {_describe(action)}", f"{form} only on an outbound (>) packet")
        return Event(line, time, action)

    def event_time(self) -> EventTime:
        line = self.peek().line
        if self.at_char("*"):
            self.advance()
            return EventTime("any", None)
        if self.at_char("+"):
            self.advance()
            start = self.time_us()
            if not self.at_char("~"):
                return EventTime("relative", start)
            self.advance()
            self.expect_char("+", "'+' and the end of a relative range (+.1~+.2)")
            return self.range(start, self.time_us(), relative=True, line=line)
        if self.peek().kind in ("int", "float"):
            start = self.time_us()
            if not self.at_char("~"):
                return EventTime("absolute", start)
            self.advance()
            return self.range(start, self.time_us(), relative=False, line=line)
        raise self.fail("an event time: 0.100, +.1, *, 0.1~0.2 or +.1~+.2")

    def range(self, start_us: int, end_us: int, *, relative: bool, line: int) -> EventTime:
        if end_us < start_us:
            raise self.semantic(
                line,
                f"found the time range {start_us / 1e6:g}~{end_us / 1e6:g} backwards",
                "an end no earlier than the start",
            )
        return EventTime("range", start_us, end_us, relative)

    def time_us(self) -> int:
        token = self.peek()
        if token.kind not in ("int", "float"):
            raise self.fail("a time in seconds (0, 1.5, .100)")
        self.advance()
        if Decimal(token.text) < 0:
            raise self.semantic(token.line, f"found the negative time {token.text}", "a time of 0 or more seconds")
        # parser.y converts a float with (s64)(secs * 1.0e6); exact here, truncated the same way.
        return int(Decimal(token.text) * _MICROS_PER_SECOND)

    # packets

    def packet(self) -> TcpPacket | UdpPacket | IcmpPacket:
        token = self.advance()
        direction: Literal["<", ">"] = "<" if token.text == "<" else ">"
        line = token.line
        encapsulation = self.outer_headers(line)
        ip = self.ip_info(line)
        if self.at_word("encap"):
            self.advance()
            self.expect_word("psp", "psp after encap")
            self.expect_word("spi", "spi N after encap psp")
            spi = self.expect_uint("PSP SPI", 32, "an SPI number", hex_ok=True)
            encapsulation += (Encapsulation("psp", (("spi", spi),)),)
            self.note_unsupported("PSP encapsulation", line)
            return self.tcp_packet(direction, line, ip, encapsulation)
        if self.at_word("udp"):
            return self.udp_packet(direction, line, ip, encapsulation)
        if self.at_word("icmp"):
            return self.icmp_packet(direction, line, ip, encapsulation)
        return self.tcp_packet(direction, line, ip, encapsulation)

    def outer_headers(self, line: int) -> tuple[Encapsulation, ...]:
        headers: list[Encapsulation] = []
        while True:
            if self.at_word("ipv4", "ipv6"):
                version = self.advance().text
                kind: Literal["ipv4", "ipv6"] = "ipv4" if version == "ipv4" else "ipv6"
                ip = self.ip_info(line)
                if not self.at(kind):
                    raise self.fail(f"an {version} source address")
                source = self.advance().text
                self.expect_char(">", f"'>' between the {version} addresses")
                if not self.at(kind):
                    raise self.fail(f"an {version} destination address")
                destination = self.advance().text
                self.expect_char(":", f"':' after the {version} header")
                headers.append(Encapsulation(kind, (("src", source), ("dst", destination), ("ip", ip))))
                self.note_unsupported("IPv4 outer header" if kind == "ipv4" else "IPv6 outer header", line)
            elif self.at_word("gre", "GREv0"):
                self.advance()
                if self.at_char(","):
                    self.advance()
                header = None if self.at_char(":") else self.gre_header()
                self.expect_char(":", "':' after the GRE header")
                headers.append(Encapsulation("gre", (("header", header),)))
                self.note_unsupported("GRE encapsulation", line)
            elif self.at_word("mpls"):
                self.advance()
                stack = self.mpls_stack()
                self.expect_char(":", "':' after the MPLS label stack")
                headers.append(Encapsulation("mpls", (("stack", stack),)))
                self.note_unsupported("MPLS label stack", line)
            else:
                return tuple(headers)

    def gre_header(self) -> GreHeader:
        if not self.at_word("flags", "Flags"):
            raise self.fail("a GRE header: flags [...] sum N off N key N seq N")
        self.advance()
        flags = 0
        if self.at_char("["):
            self.advance()
            while True:
                if self.at_word("none"):
                    self.advance()
                elif self.at_word("checksum", "key"):
                    flags |= 0x8000 if self.advance().text == "checksum" else 0x2000
                    self.expect_word("present", "present")
                elif self.at_word("sequence") and self.at_char("#", 1):
                    self.advance()
                    self.advance()
                    flags |= 0x1000
                    self.expect_word("present", "present")
                else:
                    raise self.fail("a GRE flag: none, checksum present, key present, sequence# present")
                if not self.at_char(","):
                    break
                self.advance()
            self.expect_char("]", "']' after the GRE flags")
        else:
            flags = self.expect_int("GRE flags: [...] or a number", hex_ok=True)
        values = []
        for name in ("sum", "off", "key", "seq"):
            if self.at_char(","):
                self.advance()
            self.expect_word(name, f"{name} N in the GRE header")
            if name == "key" and self.at_char("="):
                self.advance()
            values.append(self.expect_int(f"a number after {name}", hex_ok=True))
        return GreHeader(flags, *values)

    def mpls_stack(self) -> tuple[MplsEntry, ...]:
        entries = []
        while self.at_char("("):
            self.advance()
            self.expect_word("label", "label N in an MPLS entry (label N, tc N, [S], ttl N)")
            label = self.expect_int("a label number")
            self.expect_char(",", "','")
            self.expect_word("tc", "tc N")
            traffic_class = self.expect_int("a traffic class number")
            self.expect_char(",", "','")
            bottom = False
            if self.at_char("["):
                self.advance()
                self.expect_word("S", "[S] for the bottom of the stack")
                self.expect_char("]", "']'")
                self.expect_char(",", "','")
                bottom = True
            self.expect_word("ttl", "ttl N")
            ttl = self.expect_int("a TTL")
            self.expect_char(")", "')' closing the MPLS entry")
            entries.append(MplsEntry(label, traffic_class, bottom, ttl))
        return tuple(entries)

    def ip_info(self, line: int) -> IpInfo | None:
        if not (self.at_char("[") or self.at_char("(")):
            return None
        closer = "]" if self.advance().text == "[" else ")"
        ecn = tos = flow_label = ttl = None
        if self.at_word(*_IP_ECN_MARKS):
            ecn = self.advance().text
        elif self.at_word("tos"):
            self.advance()
            tos = self.expect_uint("tos", 8, "a TOS byte in hex (tos 0x..)", hex_only=True)
            self.note_unsupported("IP TOS", line)
        elif self.at_word("ttl"):
            self.advance()
            ttl = self.expect_int("a TTL")
            self.note_unsupported("IP TTL", line)
        if (ecn or tos is not None) and self.at_char(","):
            self.advance()
            if not self.at_word("flowlabel"):
                raise self.fail("flowlabel 0x... after the ECN mark or TOS")
        if self.at_word("flowlabel") and ttl is None:
            self.advance()
            flow_label = self.expect_uint("flowlabel", 20, "a flow label in hex (flowlabel 0x..)", hex_only=True)
            self.note_unsupported("IPv6 flow label", line)
        if ecn is None and tos is None and flow_label is None and ttl is None:
            raise self.fail("IP details: noecn, ect0, ect1, ce, ect01, tos 0x.., flowlabel 0x.. or ttl N")
        self.expect_char(closer, f"'{closer}' closing the IP details")
        return IpInfo(ecn, tos, flow_label, ttl)

    def check_ect01(self, direction: str, ip: IpInfo | None, line: int) -> None:
        if direction == "<" and ip is not None and ip.ecn == "ect01":
            raise self.semantic(line, "found [ect01] on an inbound packet", "[ect01] only on an outbound (>) packet")

    def ports(self) -> tuple[int, int] | None:
        if not (self.at("int") and self.at_char(">", 1)):
            return None
        source = self.expect_uint("source port", 16, "a port")
        self.advance()
        destination = self.expect_uint("destination port", 16, "a port")
        return source, destination

    def tcp_packet(
        self, direction: Literal["<", ">"], line: int, ip: IpInfo | None, encapsulation: tuple[Encapsulation, ...]
    ) -> TcpPacket:
        ports = self.ports()
        flags = self.tcp_flags(line)
        seq_start, seq_end, payload = self.sequence(line)
        ack = win = urg = None
        if self.at_word("ack"):
            self.advance()
            ack = self.expect_uint("ack", 32, "an ack number")
        if self.at_word("win"):
            self.advance()
            win = self.expect_uint("window", 16, "a window")
        if self.at_word("urg"):
            self.advance()
            urg = self.expect_uint("urg_ptr", 16, "an urgent pointer")
            self.note_unsupported("urgent data", line)
        options: tuple[TcpOption, ...] | None = ()
        if self.at_char("<"):
            options = self.tcp_options(line)
        if options is None and direction == "<":
            raise self.semantic(line, "found <...> on an inbound packet", "<...> only on an outbound (>) packet")
        if win is None and direction == "<":
            raise self.semantic(line, "found an inbound TCP packet without a window", "win N (packetdrill sends it)")
        self.check_ect01(direction, ip, line)
        if "S" in flags and payload:
            self.note_unsupported("TCP Fast Open SYN data", line)
        return TcpPacket(
            direction, flags, seq_start, seq_end, payload, ack, win, options, urg, ports, ip, encapsulation
        )

    def tcp_flags(self, line: int) -> str:
        token = self.peek()
        if token.kind == "char" and token.text in ".-":
            flags = self.advance().text
        elif token.kind == "word":
            flags = self.advance().text
            if self.at_char(".") or self.at("float"):
                flags += self.advance().text
        elif token.kind == "float":
            flags = self.advance().text
        else:
            raise self.fail("TCP flags (S, S., P., F., R, ., - for none), udp or icmp")
        # tcp_packet.c, is_tcp_flags_spec_valid()
        letters = "" if flags == "-" else flags
        for letter in letters:
            if letter not in _TCP_FLAG_LETTERS:
                raise self.semantic(
                    line, f"found the TCP flag '{letter}' in {flags}", f"flags from {_TCP_FLAG_LETTERS}"
                )
        ace = [c for c in letters if c in _ACE_FLAG_DIGITS]
        if len(ace) > 1 or (ace and any(c in _ECN_FLAG_LETTERS for c in letters)):
            raise self.semantic(line, f"found conflicting TCP flags {flags}", "one ACE digit, or E/W/A flags, not both")
        if ace or "A" in letters:
            # AccECN: the AE flag, or the ACE field written as one digit (E and W alone are
            # RFC 3168's ECE and CWR, which tcplab runs)
            self.note_unsupported("AccECN TCP flags", line)
        if "U" in letters:
            self.note_unsupported("urgent data", line)
        return flags

    def sequence(self, line: int) -> tuple[int, int, int]:
        start = self.expect_uint("start sequence", 32, "START:END(BYTES), e.g. 1:1001(1000)")
        self.expect_char(":", "':' in START:END(BYTES)")
        end = self.expect_uint("end sequence", 32, "END in START:END(BYTES)")
        self.expect_char("(", "'(' and the payload length in START:END(BYTES)")
        payload = self.expect_uint("TCP payload size", 16, "a payload length")
        self.expect_char(")", "')' after the payload length")
        if end != start + payload:
            raise self.semantic(
                line, f"found {start}:{end}({payload}), inconsistent", f"{start}:{start + payload}({payload})"
            )
        return start, end, payload

    def tcp_options(self, line: int) -> tuple[TcpOption, ...] | None:
        self.advance()  # '<'
        if self.at("ellipsis"):
            self.advance()
            self.expect_char(">", "'>' after <...")
            return None
        options = [self.tcp_option(line)]
        while self.at_char(","):
            self.advance()
            options.append(self.tcp_option(line))
        self.expect_char(">", "',' and another TCP option, or '>' closing the list")
        lengths = [option.length_bytes for option in options]
        if None not in lengths:
            total = sum(length for length in lengths if length is not None)
            if total > _MAX_TCP_OPTION_BYTES:
                raise self.semantic(
                    line, f"found {total} bytes of TCP options", "at most 40 (TCP option list too long)"
                )
            if total % 4:
                raise self.semantic(
                    line, f"found {total} bytes of TCP options", "a multiple of 4 (pad with nop or eol)"
                )
        return tuple(options)

    def tcp_option(self, line: int) -> TcpOption:
        token = self.peek()
        name = token.text if token.kind == "word" else ""
        if name in ("nop", "eol", "sackOK"):
            self.advance()
            return TcpOption(name)  # type: ignore[arg-type]
        if name == "mss":
            self.advance()
            return TcpOption("mss", (self.expect_uint("mss", 16, "an MSS in bytes"),))
        if name == "wscale":
            self.advance()
            return TcpOption("wscale", (self.expect_uint("window scale shift count", 8, "a shift count"),))
        if name == "TS":
            self.advance()
            self.expect_word("val", "val N in TS val N ecr N")
            val = self.expect_uint("ts val", 32, "a timestamp value")
            self.expect_word("ecr", "ecr N in TS val N ecr N")
            ecr = self.expect_uint("ecr", 32, "a timestamp echo reply")
            return TcpOption("TS", (val, ecr))
        if name == "sack":
            self.advance()
            blocks = []
            while True:
                left = self.expect_uint("SACK left edge", 32, "a SACK block LEFT:RIGHT")
                self.expect_char(":", "':' in the SACK block LEFT:RIGHT")
                blocks.append((left, self.expect_uint("SACK right edge", 32, "RIGHT in LEFT:RIGHT")))
                if not self.at("int"):
                    return TcpOption("sack", tuple(blocks))
        if name in ("FO", "FOEXP"):
            self.advance()
            cookie = self.advance().text if self.peek().kind in ("word", "int") else ""
            self.check_hex_blob(token.line, "TCP Fast Open cookie", cookie, 38 if name == "FO" else 36)
            self.note_unsupported("TCP Fast Open option", line)
            return TcpOption(name, (), cookie)  # type: ignore[arg-type]
        if name == "md5":
            self.advance()
            if self.peek().kind not in ("word", "int"):
                raise self.fail("an MD5 digest in hex after md5")
            digest = self.advance().text
            self.check_hex_blob(token.line, "TCP MD5 digest", digest, _MAX_MD5_DIGEST_BYTES)
            self.note_unsupported("TCP MD5 option", line)
            return TcpOption("md5", (), digest)
        if name == "ECN":
            self.advance()
            self.note_unsupported("AccECN option", line)
            return TcpOption("ECN", self.accecn_fields())
        raise self.fail(
            "a TCP option: nop, eol, mss N, wscale N, sackOK, sack L:R, TS val N ecr N, "
            "FO [cookie], FOEXP [cookie], md5 DIGEST or ECN e0b N"
        )

    def accecn_fields(self) -> tuple[tuple[str, int], ...]:
        # parser.y, accecn_option: e0b [ceb [e1b]] or e1b [ceb [e0b]], 24-bit counters.
        if not self.at_word("e0b", "e1b"):
            raise self.fail("e0b N or e1b N after ECN")
        first = self.peek().text
        order = (first, "ceb", "e1b" if first == "e0b" else "e0b")
        fields = []
        for name in order:
            if not self.at_word(name):
                break
            self.advance()
            fields.append((name, self.expect_uint(f"AccECN {name}", 24, "a counter")))
        return tuple(fields)

    def check_hex_blob(self, line: int, what: str, blob: str, max_bytes: int) -> None:
        """A Fast Open cookie or an MD5 digest: two hex digits a byte, not too many bytes
        (parser.y, new_tcp_fast_open_option() and new_md5_option()). A name such as
        ``TFO_COOKIE`` must have been given a value by ``--define`` or ``-D``."""
        if not _is_hex(blob):
            raise self.semantic(
                line, f"found the {what} {blob}, not hex", f"hex digits, or a -D {blob}=HEX define for it"
            )
        if len(blob) % 2:
            raise self.semantic(line, f"found the {what} {blob} with an odd number of digits", "2 hex digits a byte")
        if len(blob) // 2 > max_bytes:
            raise self.semantic(line, f"found a {what} of {len(blob) // 2} bytes", f"at most {max_bytes} bytes")

    def udp_packet(
        self, direction: Literal["<", ">"], line: int, ip: IpInfo | None, encapsulation: tuple[Encapsulation, ...]
    ) -> UdpPacket:
        self.advance()  # udp
        if ip is not None and ip.ecn is not None and ip.ecn != "ect01":
            raise self.semantic(line, f"found [{ip.ecn}] on a UDP packet", "ECN marks on TCP packets only")
        ports = self.ports()
        self.expect_char("(", "'(' and the UDP payload length: udp (N)")
        payload = self.expect_uint("UDP payload size", 16, "a payload length")
        self.expect_char(")", "')' after the UDP payload length")
        self.note_unsupported("udp packet", line)
        return UdpPacket(direction, payload, ports, ip, encapsulation)

    def icmp_packet(
        self, direction: Literal["<", ">"], line: int, ip: IpInfo | None, encapsulation: tuple[Encapsulation, ...]
    ) -> IcmpPacket:
        self.advance()  # icmp
        icmp_type = self.name("an ICMP type (unreachable, time_exceeded, packet_too_big, ...)")
        code = mtu = echo_id = None
        if self.at("word") and not self.at_word("mtu", "id"):
            code = self.name("an ICMP code")
        if self.at_word("mtu"):
            self.advance()
            mtu = self.expect_int("an MTU")
        if self.at_word("id"):
            self.advance()
            echo_id = self.expect_int("an echo id")
        protocol: Literal["tcp", "udp", "raw"] = "tcp"
        seq = payload = 0
        if self.at_char("["):
            self.advance()
            if self.at_word("udp", "raw"):
                protocol = "udp" if self.advance().text == "udp" else "raw"
                self.expect_char("(", f"'(' and a length after {protocol}")
                payload = self.expect_int("a payload length")
                self.expect_char(")", "')'")
            else:
                seq, _, payload = self.sequence(line)
            self.expect_char("]", "']' closing the echoed packet")
        self.check_ect01(direction, ip, line)
        self.note_unsupported("icmp packet", line)
        return IcmpPacket(direction, icmp_type, code, mtu, echo_id, protocol, seq, payload, ip, encapsulation)

    # system calls and expressions

    def name(self, what: str) -> str:
        """A word that is not one of packetdrill's keywords (lexer.l reserves those)."""
        token = self.peek()
        if token.kind != "word":
            raise self.fail(what)
        if token.text in _KEYWORDS:
            raise self.fail(f"{what}, which cannot be one of packetdrill's keywords (ack, win, fd, mss, ...)")
        return self.advance().text

    def syscall(self) -> Syscall:
        line = self.peek().line
        name = self.name("a system call name")
        self.expect_char("(", f"'(' and the arguments of {name}")
        args: list[Expr] = []
        if not self.at_char(")"):
            args = self.expression_list(")")
        self.expect_char(")", f"',' and another argument, or ')' closing {name}(...)")
        self.expect_char("=", f"'=' and the expected result of {name}(...)")
        result = self.expression()
        errno = errno_text = note = None
        if self.at("word"):
            errno = self.name("an errno name")
            if not self.at_char("("):
                raise self.fail(f"'(' and the strace text of {errno}, e.g. {errno} (Resource temporarily unavailable)")
            errno_text = self.note()
        if self.at_char("("):
            note = self.note()
        self.check_htons([*args, result], line)
        self.check_field_names([*args, result], line)
        self.syscall_features(name, args, line)
        return Syscall(name, tuple(args), result, errno, errno_text, note)

    def note(self) -> str:
        self.advance()  # '('
        words = [self.advance().text] if self.at_word("flags", "Flags") else []  # parser.y word_list
        while self.at("word"):
            words.append(self.name("words of an strace note"))
        if not words or not self.at_char(")"):
            raise self.fail("words of an strace note and ')'")
        self.advance()
        return " ".join(words)

    def expression_list(self, closer: str) -> list[Expr]:
        items = [self.expression()]
        while self.at_char(","):
            self.advance()
            items.append(self.expression())
        if not self.at_char(closer):
            raise self.fail(f"',' and another expression, or '{closer}'")
        return items

    def expression(self) -> Expr:
        left = self.primary()
        while self.at_char("|"):
            self.advance()
            left = BinaryOp("|", left, self.primary())
        return left

    def primary(self) -> Expr:
        token = self.peek()
        if token.kind == "ellipsis":
            self.advance()
            return Ellipsis()
        if token.kind == "int":
            self.advance()
            return Int(int(token.text))
        if token.kind == "hex":
            self.advance()
            return Int(int(token.text, 16), hex=True)
        if token.kind == "string":
            text = ""
            while self.at("string"):
                text += self.advance().text
            if self.at("ellipsis"):
                self.advance()
                return String(text, prefix=True)
            return String(text)
        if token.kind == "char" and token.text == "[":
            self.advance()
            items = [] if self.at_char("]") else self.expression_list("]")
            self.advance()
            return Array(tuple(items))
        if token.kind == "char" and token.text == "{":
            return self.struct()
        if token.kind == "word":
            return self.word_expression()
        raise self.fail('an expression: a number, a SYMBOL, ..., a "string", [array] or {struct}')

    def word_expression(self) -> Expr:
        token = self.advance()
        name = token.text
        arg: Expr | None = None
        if name in ("htons", "inet_addr", "inet6_addr"):
            self.expect_char("(", f"'(' after {name}")
            call = Call(name, (self.expression(),))
            self.expect_char(")", f"')' closing {name}(...)")
            if name == "inet6_addr":
                self.note_unsupported("IPv6 addresses", token.line)
            return call
        if name in ("msg_name", "msg_iov"):
            self.expect_char("(", f"'(' after {name}: msg_name(...)=... or msg_iov(N)=[...]")
            arg = self.expression()
            self.expect_char(")", f"')' after {name}(")
        if self.at_char("="):
            self.advance()
            return Field(name, self.expression(), arg)
        if arg is not None:
            raise self.fail(f"'=' after {name}(...)")
        if name in _KEYWORDS:
            raise self.fail("a symbol, which cannot be one of packetdrill's keywords (ack, win, fd, mss, ...)", token)
        return Symbol(name)

    def struct(self) -> Struct | GreHeader:
        brace = self.advance()
        if self.at_char("}") or self.at_char("("):
            # parser.y: '{' mpls_stack '}', and the stack may be empty: {} is an empty stack.
            stack = self.mpls_stack()
            self.expect_char("}", "'}' closing the MPLS label stack")
            if stack:
                self.note_unsupported("MPLS label stack", brace.line)
            return Struct("mpls_stack", stack)
        if self.at_word("flags", "Flags"):
            header = self.gre_header()
            self.expect_char("}", "'}' closing the GRE header")
            self.note_unsupported("GRE encapsulation", brace.line)
            return header
        items = tuple(self.expression_list("}"))
        self.advance()
        kind = self.struct_kind(items, brace)
        self.check_members(kind, items, brace.line)
        return Struct(kind, items)

    def struct_kind(self, items: tuple[Expr, ...], brace: _Token) -> StructKind:
        """Which of packetdrill's brace forms this is (parser.y: sockaddr, msghdr, ...)."""
        names = tuple(item.name if isinstance(item, Field) else None for item in items)
        for kind, shapes in _STRUCT_SHAPES:
            if names in shapes:
                return kind
        if len(items) == 2 and isinstance(items[0], Ellipsis):
            return "iovec"
        reserved = [name for name in names if name in _KEYWORDS]
        if reserved:
            shown = "{" + ", ".join(f"{name}=" if name else "..." for name in names) + "}"
            kinds = ", ".join("{" + ", ".join(shapes[0]) + "}" for _, shapes in _STRUCT_SHAPES)
            raise self.semantic(brace.line, f"found the struct {shown}", f"one of {kinds}")
        return "list"

    def check_members(self, kind: StructKind, items: tuple[Expr, ...], line: int) -> None:
        """The member values parser.y's fixed forms require (the others take any expression)."""

        def decimal(expr: Expr | None) -> bool:
            return isinstance(expr, Int) and not expr.hex

        fields = {item.name: item for item in items if isinstance(item, Field)}
        checks: list[tuple[bool, str]] = []
        if kind == "sockaddr":
            port, address = fields["sin_port"].value, fields["sin_addr"].value
            checks = [
                (isinstance(fields["sa_family"].value, Symbol), "sa_family=AF_INET or AF_INET6"),
                (isinstance(port, Call) and port.name == "htons" and decimal(port.args[0]), "sin_port=htons(N)"),
                (
                    isinstance(address, Call) and address.name == "inet_addr" and isinstance(address.args[0], String),
                    'sin_addr=inet_addr("A.B.C.D")',
                ),
            ]
        elif kind == "msghdr":
            name, iov = fields["msg_name"], fields["msg_iov"]
            control = fields.get("msg_control")
            checks = [
                (isinstance(name.arg, Ellipsis) and isinstance(name.value, Ellipsis), "msg_name(...)=..."),
                (decimal(iov.arg) and isinstance(iov.value, Array), "msg_iov(N)=[...]"),
                (control is None or isinstance(control.value, Array), "msg_control=[...]"),
            ]
        elif kind in ("linger", "scm_timestamping"):
            checks = [(all(decimal(item.value) for item in fields.values()), f"integers in a {kind}")]
        elif kind == "iovec":
            checks = [(decimal(items[1]), "{..., LENGTH} with a decimal length")]
        for ok, expected in checks:
            if not ok:
                raise self.semantic(line, f"found a {kind} not written as packetdrill writes it", expected)

    def check_field_names(self, args: list[Expr], line: int) -> None:
        """``name=value`` outside braces takes a plain word (packetdrill's members are keywords)."""
        members = {id(item) for expr in _walk(args) if isinstance(expr, Struct) for item in expr.items}
        for expr in _walk(args):
            if isinstance(expr, Field) and id(expr) not in members and expr.name in _KEYWORDS:
                raise self.semantic(
                    line, f"found {expr.name}=... outside braces", f"{expr.name}= only inside its struct"
                )

    def check_htons(self, args: list[Expr], line: int) -> None:
        """htons() is only the port of a sockaddr (parser.y has no other function calls)."""
        allowed = {
            id(item.value)
            for expr in _walk(args)
            if isinstance(expr, Struct) and expr.kind == "sockaddr"
            for item in expr.items
            if isinstance(item, Field) and item.name == "sin_port"
        }
        for expr in _walk(args):
            if isinstance(expr, Call) and expr.name == "htons" and id(expr) not in allowed:
                raise self.semantic(line, "found htons() outside a sockaddr", "htons(N) only as sin_port=htons(N)")

    def syscall_features(self, name: str, args: list[Expr], line: int) -> None:
        if name in ("splice", "sendfile", "vmsplice", "tee"):
            self.note_unsupported("splice/sendfile", line)
        for expr in _walk(args):
            if isinstance(expr, Symbol):
                symbol = expr.name
                if "ZEROCOPY" in symbol:
                    self.note_unsupported("zerocopy", line)
                if "TIMESTAMPING" in symbol or symbol.startswith("SCM_TSTAMP"):
                    self.note_unsupported("timestamping", line)
                if symbol == "MSG_FASTOPEN" or symbol.startswith("TCP_FASTOPEN"):
                    self.note_unsupported("TCP Fast Open socket API", line)
                if symbol.startswith("TCP_MD5SIG"):
                    self.note_unsupported("TCP MD5 socket option", line)
                if symbol == "AF_INET6":
                    self.note_unsupported("IPv6 addresses", line)
            elif isinstance(expr, Struct) and expr.kind == "scm_timestamping":
                self.note_unsupported("timestamping", line)


# packetdrill's brace forms by member names (parser.y): sockaddr, msghdr (msg_control is
# optional), cmsg, scm_timestamping, sock_extended_err, pollfd (revents optional),
# epoll_event (one of fd, ptr, u32, u64), linger. iovec is {..., N}.
_STRUCT_SHAPES: tuple[tuple[StructKind, tuple[tuple[str | None, ...], ...]], ...] = (
    ("sockaddr", (("sa_family", "sin_port", "sin_addr"),)),
    (
        "msghdr",
        (("msg_name", "msg_iov", "msg_flags"), ("msg_name", "msg_iov", "msg_flags", "msg_control")),
    ),
    ("cmsg", (("cmsg_level", "cmsg_type", "cmsg_data"),)),
    ("scm_timestamping", (("scm_sec", "scm_nsec"),)),
    ("sock_extended_err", (("ee_errno", "ee_origin", "ee_type", "ee_code", "ee_info", "ee_data"),)),
    ("pollfd", (("fd", "events"), ("fd", "events", "revents"))),
    ("epoll_event", (("events", "fd"), ("events", "ptr"), ("events", "u32"), ("events", "u64"))),
    ("linger", (("onoff", "linger"),)),
)


def _walk(exprs: list[Expr] | tuple[Expr, ...]):
    """Every expression in ``exprs``, depth first."""
    for expr in exprs:
        yield expr
        if isinstance(expr, Array | Struct):
            yield from _walk(expr.items)
        elif isinstance(expr, Field):
            yield from _walk((expr.value,) if expr.arg is None else (expr.arg, expr.value))
        elif isinstance(expr, Call):
            yield from _walk(expr.args)
        elif isinstance(expr, BinaryOp):
            yield from _walk((expr.left, expr.right))


def _describe(action: Action) -> str:
    if isinstance(action, TcpPacket | UdpPacket | IcmpPacket):
        return "an inbound (<) packet"
    if isinstance(action, Syscall):
        return f"the system call {action.name}"
    if isinstance(action, Command):
        return "a shell command"
    return "a code block"


def _strtol(text: str) -> int | None:
    """C's strtol(text, &end, 0) when it reads the whole text, as lexer.l word() uses it."""
    match = re.fullmatch(r"\s*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)", text)
    if not match:
        return None
    sign, digits = match.groups()
    if digits[:2].lower() == "0x":
        value = int(digits, 16)
    elif digits.startswith("0"):
        value = int(digits, 8)
    else:
        value = int(digits)
    return -value if sign == "-" else value


def parse_script(text: str, path: str = "<script>", defines: Mapping[str, str] | None = None) -> Script:
    """Parse a packetdrill script's text; ``defines`` are packetdrill's ``-D NAME=VALUE``.

    Raises :class:`ScriptError` naming the line for text packetdrill would not accept.
    """
    return _Parser(text, path, defines or {}).script()


def parse_file(path: str | Path, defines: Mapping[str, str] | None = None) -> Script:
    """Parse the script at ``path`` (UTF-8; a byte that is not is read as U+FFFD)."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    return parse_script(text, str(path), defines)
