"""The machine a packetdrill script sets up, as tcplab's engine configuration.

A script's init command (```../common/defaults.sh ...```) and its timed shell commands set
sysctls, qdiscs and module parameters on the machine packetdrill runs on. tcplab does not
run them: it reads them, and either applies each to the engine's configuration, accepts it
because the engine already behaves that way, or names it as the reason to skip the script.

* ``defaults.sh`` (``gtests/net/common/defaults.sh`` in the corpus) is :data:`DEFAULTS_SH`:
  its sysctl values restated as data (the file itself is not read or copied).
* ``sysctl [-q] [-e] [-w] net.ipv4.X=V ...`` (also ``net/ipv4/X=V``), ``echo V >
  /proc/sys/net/ipv4/X``, ``../common/set_sysctls.py /proc/sys/net/ipv4/X=V ...`` and a bare
  ``/proc/sys/net/ipv4/X=V`` continuation line are sysctls; ``echo V >
  /sys/module/tcp_cubic/parameters/P`` is a CUBIC parameter (``cc_params``).
* A sysctl the engine takes (:data:`ENGINE_SYSCTLS`) goes into its ``tcp`` config (or
  ``tso_win_divisor`` / ``cc``). One it has no knob for is accepted when its value is what
  the engine does anyway (:data:`ENGINE_BEHAVIOUR`), or does not matter to what tcplab runs
  (:data:`IRRELEVANT_SYSCTLS`: Fast Open keys when scripts using Fast Open are skipped, the
  removed ``tcp_fack``); any other value is a skip, ``sysctl net.ipv4.tcp_mtu_probing=1 not
  modelled``.
* Commands that leave the engine as it is are accepted: ``ip tcp_metrics flush``, ``tc qdisc
  add dev tun0 root pfifo`` (the engine's host has no qdisc in front of the socket beyond a
  plain FIFO), comments, ``true``/``:``. Any other command is a skip naming it.

Sysctls are collected in order; the engine host is built at ``socket()`` with what was set
before it. A sysctl the engine takes that changes after that is a skip (the engine's TCP
configuration is fixed when the host is built; Linux reads most of these live), except the
ones in :data:`LIVE_SYSCTLS`, which the runner hands to the host when they change.

ECN: ``tcp_ecn`` (0, 1 or 2; AccECN's 3 to 5 are a skip) and ``tcp_ecn_fallback`` go into the
engine's ``tcp.tcp_ecn`` (both entries: the one socket under test is the engine's client
endpoint whatever its role, and the other endpoint, the script's, never acts) and
``tcp.tcp_ecn_fallback``. Linux reads both when it uses them (``tcp_ecn_send_syn()`` at
``connect()``, ``tcp_ecn_create_request()`` when a SYN arrives, ``tcp_ecn_clear_syn()`` when
a SYN is retransmitted), so they stay live after ``socket()``.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULTS_SH",
    "LINUX_DEFAULTS",
    "ENGINE_SYSCTLS",
    "LIVE_SYSCTLS",
    "ENGINE_CC",
    "ENGINE_BEHAVIOUR",
    "IRRELEVANT_SYSCTLS",
    "CUBIC_PARAMS",
    "EngineSettings",
    "Unmodelled",
    "parse_commands",
    "Setting",
]

#: gtests/net/common/defaults.sh: the sysctls it sets (names without ``net.ipv4.``), as text.
DEFAULTS_SH: dict[str, str] = {
    "tcp_rmem": f"4096 540000 {15 * 1024 * 1024}",
    "tcp_wmem": f"4096 {256 * 1024} 4194304",
    "tcp_timestamps": "1",
    "tcp_syn_retries": "5",
    "tcp_synack_retries": "5",
    "tcp_frto": "2",
    "tcp_sack": "1",
    "tcp_dsack": "1",
    "tcp_fack": "0",
    "tcp_reordering": "3",
    "tcp_congestion_control": "cubic",
    "tcp_slow_start_after_idle": "0",
    "tcp_early_retrans": "4",
    "tcp_recovery": "1",
    "tcp_tso_win_divisor": "3",
    "tcp_ecn": "0",
    "tcp_ecn_option": "2",
    "tcp_pacing_ss_ratio": "200",
    "tcp_pacing_ca_ratio": "120",
    "tcp_notsent_lowat": "4294967295",
    "tcp_fastopen": "0x70403",
    "tcp_fastopen_key": "a1a1a1a1-b2b2b2b2-c3c3c3c3-d4d4d4d4",
    "tcp_syncookies": "1",
}

#: Linux v6.12's own defaults for the sysctls below (a script without defaults.sh runs with
#: these): net/ipv4/tcp_ipv4.c tcp_sk_init(), net/ipv4/sysctl_net_ipv4.c.
LINUX_DEFAULTS: dict[str, str] = {
    "tcp_rmem": "4096 131072 6291456",
    "tcp_wmem": "4096 16384 4194304",
    "tcp_timestamps": "1",
    "tcp_sack": "1",
    "tcp_dsack": "1",
    "tcp_fack": "0",
    "tcp_syn_retries": "6",
    "tcp_synack_retries": "5",
    "tcp_frto": "2",
    "tcp_reordering": "3",
    "tcp_congestion_control": "cubic",
    "tcp_slow_start_after_idle": "1",
    "tcp_early_retrans": "3",
    "tcp_recovery": "1",
    "tcp_tso_win_divisor": "3",
    "tcp_ecn": "2",
    "tcp_ecn_fallback": "1",
    "tcp_pacing_ss_ratio": "200",
    "tcp_pacing_ca_ratio": "120",
    "tcp_notsent_lowat": "4294967295",
    "tcp_min_tso_segs": "2",
    "tcp_moderate_rcvbuf": "1",
    "tcp_min_rtt_wlen": "300",
    "tcp_mtu_probing": "0",
    "tcp_syncookies": "1",
}


def _ints(text: str) -> list[int]:
    return [int(x, 0) for x in text.split()]


def _int(text: str) -> int:
    return int(text.strip(), 0)


def _bool(text: str) -> bool:
    return _int(text) != 0


def _ecn_mode(text: str) -> list[int]:
    """``tcp_ecn`` as the engine's per-side array (module doc); 0, 1 or 2 (v6.12's range)."""
    mode = _int(text)
    if mode not in (0, 1, 2):
        raise ValueError(text)
    return [mode, mode]


#: sysctl -> (engine config key, converter). ``tcp.*`` keys go in the ``tcp`` section.
ENGINE_SYSCTLS: dict[str, tuple[str, Any]] = {
    "tcp_rmem": ("tcp.tcp_rmem", _ints),
    "tcp_wmem": ("tcp.tcp_wmem", _ints),
    "tcp_slow_start_after_idle": ("tcp.tcp_slow_start_after_idle", _bool),
    "tcp_early_retrans": ("tcp.tcp_early_retrans", _int),
    "tcp_recovery": ("tcp.tcp_recovery", _int),
    "tcp_frto": ("tcp.tcp_frto", _int),
    "tcp_reordering": ("tcp.tcp_reordering", _int),
    "tcp_min_tso_segs": ("tcp.tcp_min_tso_segs", _int),
    "tcp_pacing_ss_ratio": ("tcp.tcp_pacing_ss_ratio", _int),
    "tcp_pacing_ca_ratio": ("tcp.tcp_pacing_ca_ratio", _int),
    "tcp_moderate_rcvbuf": ("tcp.tcp_moderate_rcvbuf", _bool),
    "tcp_min_rtt_wlen": ("tcp.tcp_min_rtt_wlen_s", _int),
    "tcp_tso_win_divisor": ("tso_win_divisor", _int),
    "tcp_congestion_control": ("cc", str.strip),
    "tcp_ecn": ("tcp.tcp_ecn", _ecn_mode),
    "tcp_ecn_fallback": ("tcp.tcp_ecn_fallback", _bool),
}

#: Sysctls of :data:`ENGINE_SYSCTLS` that Linux reads when it uses them, not when the socket
#: is made: a change after ``socket()`` reaches the host (module doc).
LIVE_SYSCTLS = frozenset({"tcp_ecn", "tcp_ecn_fallback"})

#: Congestion controls the engine has (``tcp_congestion_control``, ``TCP_CONGESTION``).
ENGINE_CC = ("cubic", "reno", "bbr", "dctcp")

#: Sysctls the engine has no knob for, and the values at which it behaves as Linux does:
#: timestamps, SACK and DSACK on (timestamps off is modelled for a passive open, by not
#: negotiating them; see run.py); no notsent_lowat limit; no MTU probing; SYN retries only
#: matter when a handshake packet is lost.
ENGINE_BEHAVIOUR: dict[str, tuple[str, ...]] = {
    "tcp_timestamps": ("1", "0"),
    "tcp_sack": ("1",),
    "tcp_dsack": ("1",),
    "tcp_notsent_lowat": ("4294967295", "-1"),
    "tcp_mtu_probing": ("0",),
    "tcp_syn_retries": ("5", "6"),
    "tcp_synack_retries": ("5",),
    "tcp_window_scaling": ("1",),
    "tcp_adv_win_scale": ("1",),
    "tcp_autocorking": ("1",),
}

#: Sysctls whose value does not change what tcplab runs: Fast Open (scripts using it are
#: skipped), AccECN's option (likewise), SYN cookies (only under a SYN flood), tcp_fack
#: (removed from Linux in 4.15; the sysctl is ignored).
IRRELEVANT_SYSCTLS = frozenset({"tcp_fastopen", "tcp_fastopen_key", "tcp_ecn_option", "tcp_syncookies", "tcp_fack"})

#: tcp_cubic.c module parameters and their defaults (v6.12).
CUBIC_PARAMS: dict[str, int] = {
    "fast_convergence": 1,
    "beta": 717,
    "initial_ssthresh": 0,
    "bic_scale": 41,
    "tcp_friendliness": 1,
    "hystart": 1,
    "hystart_detect": 3,
    "hystart_low_window": 16,
    "hystart_ack_delta_us": 2000,
}


class Unmodelled(Exception):
    """A command or setting tcplab cannot apply; the message names it (``sysctl ... not modelled``)."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One thing a command sets: a sysctl (``net.ipv4.`` name) or a CUBIC parameter."""

    kind: str  # "sysctl" | "cubic" | "qdisc" (the TUN's pfifo: name "pfifo_limit", or "default")
    name: str
    value: str


_SYSCTL_ARG = re.compile(r"^(?:net[./]ipv4[./])(?P<name>[A-Za-z0-9_]+)=(?P<value>.*)$", re.DOTALL)
_PROC_ARG = re.compile(r"^/proc/sys/net/ipv4/(?P<name>[A-Za-z0-9_]+)=(?P<value>.*)$", re.DOTALL)
_CUBIC_FILE = re.compile(r"^/sys/module/tcp_cubic/parameters/(?P<name>[A-Za-z0-9_]+)$")
_PROC_FILE = re.compile(r"^/proc/sys/net/ipv4/(?P<name>[A-Za-z0-9_]+)$")
_COMMENT = re.compile(r"(?:^|(?<=\s))#.*$")
_REDIRECT_NULL = re.compile(r"\s*(?:[12]?>\s*/dev/null|2>&1)\s*")


def _accepted_command(words: list[str]) -> bool:
    """Commands that leave the engine as it is."""
    if not words or words[0] in ("true", ":"):
        return True
    if words[:3] == ["ip", "tcp_metrics", "flush"]:
        return True
    # the default FIFO in front of tun0 (defaults.sh's "tc qdisc add dev tun0 root pfifo")
    if (
        words[:2] == ["tc", "qdisc"]
        and words[2:3] in (["add"], ["replace"])
        and words[3:]
        == [
            "dev",
            "tun0",
            "root",
            "pfifo",
        ]
    ):
        return True
    return words[:2] == ["tc", "qdisc"] and words[2:3] == ["delete"] and words[3:5] == ["dev", "tun0"]


def _shell_lines(text: str) -> list[str]:
    """The command lines of a shell text: continuations joined, comments dropped (a ``#``
    that starts a word, to the end of the line), ``;``/``&&`` separated."""
    joined = re.sub(r"\\\n", " ", text)
    out: list[str] = []
    for line in joined.splitlines():
        line = _COMMENT.sub("", line).strip()
        if not line:
            continue
        out.extend(part.strip() for part in re.split(r";|&&", line) if part.strip())
    return out


def parse_commands(text: str) -> list[Setting]:
    """What a shell command text sets, in order; raises :class:`Unmodelled` naming the first
    command tcplab cannot apply."""
    settings: list[Setting] = []
    for line in _shell_lines(text):
        bare = _REDIRECT_NULL.sub(" ", line).strip()
        try:
            words = shlex.split(bare)
        except ValueError:
            raise Unmodelled(f"command `{line}` not modelled") from None
        if not words:
            continue
        prog = words[0].rsplit("/", 1)[-1]
        if prog == "defaults.sh":
            settings.extend(Setting("sysctl", k, v) for k, v in DEFAULTS_SH.items())
        elif prog == "sysctl":
            args = [w for w in words[1:] if not w.startswith("-")]
            for arg in args:
                m = _SYSCTL_ARG.match(arg)
                if not m:
                    raise Unmodelled(f"sysctl {arg} not modelled")
                settings.append(Setting("sysctl", m["name"], m["value"]))
        elif prog == "set_sysctls.py" or _PROC_ARG.match(words[0]):
            for arg in words[1:] if prog == "set_sysctls.py" else words:
                m = _PROC_ARG.match(arg)
                if not m:
                    raise Unmodelled(f"command `{line}` not modelled")
                settings.append(Setting("sysctl", m["name"], m["value"]))
        elif prog == "echo" and ">" in words:
            at = words.index(">")
            value, target = " ".join(words[1:at]), " ".join(words[at + 1 :])
            if m := _CUBIC_FILE.match(target):
                settings.append(Setting("cubic", m["name"], value))
            elif m := _PROC_FILE.match(target):
                settings.append(Setting("sysctl", m["name"], value))
            else:
                raise Unmodelled(f"command `{line}` not modelled")
        elif (
            words[:2] == ["tc", "qdisc"]
            and words[2:3] in (["add"], ["replace"])
            and words[3:7] == ["dev", "tun0", "root", "pfifo"]
            and len(words) == 9
            and words[7] == "limit"
            and words[8].isdigit()
        ):
            # a FIFO of N packets in front of the TUN (0: every packet refused, a local drop)
            settings.append(Setting("qdisc", "pfifo_limit", words[8]))
        elif words[:5] == ["tc", "qdisc", "delete", "dev", "tun0"]:
            settings.append(Setting("qdisc", "default", ""))
        elif not _accepted_command(words):
            raise Unmodelled(f"command `{line}` not modelled")
    return settings


def _same(a: str, b: str) -> bool:
    """Sysctl values equal as the kernel reads them (numbers in any base, white space)."""
    try:
        return [int(x, 0) for x in a.split()] == [int(x, 0) for x in b.split()]
    except ValueError:
        return a.split() == b.split()


@dataclass
class EngineSettings:
    """The sysctls and module parameters in force, and what the engine is built with."""

    sysctls: dict[str, str] = field(default_factory=lambda: dict(LINUX_DEFAULTS))
    cubic: dict[str, int] = field(default_factory=dict)
    #: sysctls the engine takes, as set before the host was built (frozen after)
    frozen: dict[str, str] | None = None
    #: the TUN's FIFO limit a command set and the host has not taken yet: ("pfifo_limit",
    #: N) or ("default", None); None when nothing is pending
    tun_qdisc: tuple[str, int | None] | None = None

    def apply(self, settings: list[Setting]) -> None:
        """Set each; raises :class:`Unmodelled` for a value the engine does not do."""
        for s in settings:
            if s.kind == "qdisc":
                self.tun_qdisc = (s.name, int(s.value) if s.value else None)
                continue
            if s.kind == "cubic":
                if s.name not in CUBIC_PARAMS:
                    raise Unmodelled(f"tcp_cubic parameter {s.name}={s.value} not modelled")
                try:
                    value = _int(s.value)
                except ValueError:
                    raise Unmodelled(f"tcp_cubic parameter {s.name}={s.value} not modelled") from None
                if self.frozen is not None and value != self.cubic.get(s.name, CUBIC_PARAMS[s.name]):
                    raise Unmodelled(f"tcp_cubic parameter {s.name}={s.value} after socket() not modelled")
                self.cubic[s.name] = value
                continue
            name, value = s.name, s.value.strip().strip('"')
            if name in ENGINE_SYSCTLS:
                try:
                    ENGINE_SYSCTLS[name][1](value)
                except ValueError:
                    raise Unmodelled(f"sysctl net.ipv4.{name}={value} not modelled") from None
                if name == "tcp_congestion_control" and value not in ENGINE_CC:
                    raise Unmodelled(f"sysctl net.ipv4.{name}={value} not modelled")
                if name not in LIVE_SYSCTLS and self.frozen is not None and not _same(value, self.frozen.get(name, "")):
                    raise Unmodelled(f"sysctl net.ipv4.{name}={value} after socket() not modelled")
            elif name in IRRELEVANT_SYSCTLS:
                pass
            elif name in ENGINE_BEHAVIOUR:
                if not any(_same(value, ok) for ok in ENGINE_BEHAVIOUR[name]):
                    raise Unmodelled(f"sysctl net.ipv4.{name}={value} not modelled")
            else:
                current = LINUX_DEFAULTS.get(name)
                if current is None or not _same(value, current):
                    raise Unmodelled(f"sysctl net.ipv4.{name}={value} not modelled")
            self.sysctls[name] = value

    def freeze(self) -> None:
        """The host is built: the engine's sysctls cannot change any more."""
        self.frozen = {k: v for k, v in self.sysctls.items() if k in ENGINE_SYSCTLS and k not in LIVE_SYSCTLS}

    @property
    def timestamps(self) -> bool:
        return _same(self.sysctls.get("tcp_timestamps", "1"), "1")

    @property
    def ecn(self) -> tuple[int, bool]:
        """``(tcp_ecn, tcp_ecn_fallback)`` in force."""
        return _int(self.sysctls.get("tcp_ecn", "2")), _bool(self.sysctls.get("tcp_ecn_fallback", "1"))

    @property
    def rmem_max(self) -> int:
        return _ints(self.sysctls["tcp_rmem"])[2]

    def engine_config(self, *, mss_bytes: int, hz: int = 1000, seed: int = 1) -> dict[str, Any]:
        """The engine host's configuration (module doc)."""
        config: dict[str, Any] = {"tcp": {"mss_bytes": mss_bytes}, "hz": hz, "seed": seed}
        for name, (key, convert) in ENGINE_SYSCTLS.items():
            if name not in self.sysctls:
                continue
            value = convert(self.sysctls[name].strip().strip('"'))
            if key.startswith("tcp."):
                config["tcp"][key[4:]] = value
            else:
                config[key] = value
        config["cc_params"] = dict(self.cubic)
        return config
