"""The ground truth: packetdrill's own TCP tests run on this machine's Linux kernel.

Why. ``tcplab packetdrill`` runs the kernel's TCP tests (google/packetdrill's scripts under
``gtests/net/tcp``) against tcplab's TCP. What a script expects was written for some Linux
kernel, not necessarily this one, so before reading a tcplab failure as a tcplab bug, the
same script is run on the real kernel: a script the kernel fails too is not evidence
against tcplab (tcplab pins the behaviour of one kernel, v6.12; the machine may run a newer
one, whose TCP has moved on, or be too busy for a script's timing tolerances).

What. Three steps, each usable alone:

* :func:`build_packetdrill` builds the packetdrill tool from the corpus's own source
  (``gtests/net/packetdrill``, GPLv2) the way its README says (``./configure`` then
  ``make``), in a copy outside the repository (``~/.cache/tcplab/packetdrill-<hash of the
  source files>``), reused while the source is unchanged. It needs a C compiler, ``make``,
  ``bison`` and ``flex`` (Debian: ``gcc libc6-dev make bison flex``); what is missing is
  named in one line before anything is built. The build's output goes to ``build.log`` in
  the build directory, which a failed build names.
* :func:`run_script` runs one script as the corpus's ``run_all.py`` runs its IPv4 variant
  (the same flags: ``--send_omit_free``, the 192.168.0.1 / 192.0.2.1 addresses, the ``-D``
  definitions), in a fresh network namespace as its ``in_netns.sh`` does (here
  ``unshare --net``, with ``lo`` up, rather than a named ``ip netns``: nothing is left
  behind if the run is killed), from the script's own directory so the relative
  ``../common/defaults.sh`` its first command runs resolves. A script named ``*v6.pkt`` is
  IPv6-only (``run_all.py`` never runs it over IPv4) and runs with the IPv6 variant's flags.
  The other variants (IPv6 and IPv4-mapped-IPv6 of every script) are not run: the IPv4
  run is the one tcplab's TCP is compared with. A timeout kills the whole process group
  (packetdrill and the shell commands it started).
* :func:`run_corpus` runs every ``*.pkt`` under some paths, sorted, one at a time by
  default: many scripts allow a few milliseconds of timing error, and scripts run side by
  side on a loaded machine fail for that alone.

Flattened links. Upstream, ``gtests/net/tcp/common/defaults.sh`` is a symbolic link to
``../../common/defaults.sh``; a copy of the corpus that lost its links (an archive, a
read-only mirror) holds a small file containing only that path instead, and every script
whose first command is ``../common/defaults.sh`` would fail on it. Such a file (one line,
a relative path to an existing file, in a ``common`` directory above the script) is
bind-mounted over by its target inside the run's own mount namespace
(``unshare --mount``): the corpus itself is never written to, nor copied.

Statuses. ``pass``: packetdrill exited 0. ``fail``: packetdrill ran the script and the
kernel did not do what it says (a packet, a system call's result, a timing, an assertion
or a command of the script). ``timeout``: killed after ``timeout_s``. ``error``: the script
could not be run (packetdrill, ``unshare`` or ``ip`` missing or failing, a script packetdrill
cannot parse). :attr:`KernelScriptResult.first_error` is the first line of packetdrill's
output that says what went wrong, e.g.
``slow-start-ack-per-1pkt.pkt:24: error handling packet: live packet field tcp_seq: ...``.

Congestion control. Every script's ``defaults.sh`` makes ``cubic`` its namespace's default
(``sysctl net.ipv4.tcp_congestion_control=cubic``), and outside the initial namespace Linux
allows that only for an algorithm in ``net.ipv4.tcp_allowed_congestion_control``
(net/ipv4/tcp_cong.c: tcp_set_default_congestion_control() -> -EPERM). On a machine whose
default is not cubic (say bbr, allowed "reno bbr") the sysctl fails and every script would
silently run with the machine's default instead. So :func:`allow_congestion_control` adds
``cubic`` to that machine-wide list first (only when it is missing and available). This
is the one change made outside the namespaces, and it is left in place: it only lets
unprivileged sockets choose cubic, it changes no socket's algorithm and no default, and
undoing it could race with a run started alongside.

Root is needed (network namespaces, the TUN device packetdrill makes, sysctls). The
scripts' commands set ``net.ipv4`` sysctls, which are per namespace, but a few write
machine-wide knobs (``/sys/module/tcp_cubic/parameters``), as they do under ``run_all.py``.

``python -m tcplab.packetdrill.kernel [--json FILE] PATH...`` builds packetdrill from the
corpus the paths are in and prints one line per script and the totals.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = [
    "PacketdrillBuildError",
    "KernelScriptResult",
    "IPV4_ARGS",
    "IPV6_ARGS",
    "DEFAULT_ARGS",
    "BUILD_TOOLS",
    "missing_build_tools",
    "source_hash",
    "find_source",
    "build_packetdrill",
    "variant_for",
    "packetdrill_args",
    "flattened_links",
    "netns_command",
    "allow_congestion_control",
    "first_error_line",
    "classify",
    "run_script",
    "find_scripts",
    "run_corpus",
    "format_result",
    "totals",
    "main",
]

#: run_all.py's ``default_args``.
DEFAULT_ARGS = ("--send_omit_free",)
#: run_all.py's CmdTestIPv4 flags.
IPV4_ARGS = (
    "--ip_version=ipv4",
    "--local_ip=192.168.0.1",
    "--gateway_ip=192.168.0.1",
    "--netmask_ip=255.255.0.0",
    "--remote_ip=192.0.2.1",
    "-D",
    "TFO_COOKIE=3021b9d889017eeb",
    "-D",
    "CODE=host_unreachable",
    "-D",
    "CMSG_LEVEL_IP=SOL_IP",
    "-D",
    "CMSG_TYPE_RECVERR=IP_RECVERR",
)
#: run_all.py's CmdTestIPv6 flags (only for the scripts named ``*v6.pkt``).
IPV6_ARGS = (
    "--ip_version=ipv6",
    "--mtu=1520",
    "--local_ip=fd3d:0a0b:17d6::1",
    "--gateway_ip=fd3d:0a0b:17d6:8888::1",
    "--remote_ip=fd3d:fa7b:d17d::1",
    "-D",
    "TFO_COOKIE=c1d1e9742a47a9bc",
    "-D",
    "CMSG_LEVEL_IP=SOL_IPV6",
    "-D",
    "CMSG_TYPE_RECVERR=IPV6_RECVERR",
)

#: What the build runs, each with the Debian package that has it. The compiler is any of
#: ``cc``/``gcc``/``clang``.
BUILD_TOOLS = {"cc": "gcc libc6-dev", "make": "make", "bison": "bison", "flex": "flex"}
_COMPILERS = ("cc", "gcc", "clang")

#: The congestion control the corpus's defaults.sh makes the default (see the module doc).
SCRIPT_CC = ("cubic",)
_CC_ALLOWED = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
_CC_AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")

#: Lines of packetdrill's output kept in :attr:`KernelScriptResult.output_tail`.
TAIL_LINES = 40
TAIL_CHARS = 4000
#: How long packetdrill may take to exit after SIGTERM before the group is killed.
_KILL_GRACE_S = 2.0


class PacketdrillBuildError(RuntimeError):
    """packetdrill could not be built: a tool is missing, or the build failed (see its log)."""


@dataclass
class KernelScriptResult:
    """One script run on the kernel."""

    script: str
    #: 'pass' | 'fail' | 'timeout' | 'error'
    status: str
    seconds: float
    #: the first line of the output saying what went wrong ('' when it passed)
    first_error: str = ""
    #: the last lines of packetdrill's output (stdout and stderr together)
    output_tail: str = ""
    #: 'ipv4', or 'ipv6' for the IPv6-only scripts
    variant: str = "ipv4"
    returncode: int | None = None
    command: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- build


def missing_build_tools() -> list[str]:
    """What the build needs that is not on PATH, as ``tool (Debian package)``."""
    missing = []
    for tool, package in BUILD_TOOLS.items():
        candidates = _COMPILERS if tool == "cc" else (tool,)
        if not any(shutil.which(c) for c in candidates):
            missing.append(f"{'a C compiler' if tool == 'cc' else tool} ({package})")
    return missing


def _source_files(source_dir: Path) -> list[Path]:
    return sorted(p for p in source_dir.rglob("*") if p.is_file() and not p.is_symlink())


def source_hash(source_dir: str | os.PathLike[str], length: int = 12) -> str:
    """A short hash of the source tree's files (their paths and contents)."""
    root = Path(source_dir)
    h = hashlib.sha256()
    for p in _source_files(root):
        h.update(p.relative_to(root).as_posix().encode() + b"\0")
        h.update(p.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:length]


def find_source(path: str | os.PathLike[str]) -> Path | None:
    """The packetdrill source directory of the corpus ``path`` is in (a script, a folder of
    scripts, the clone itself), or None."""
    p = Path(path).resolve()
    for d in (p, *p.parents):
        for cand in (d, d / "packetdrill", d / "gtests" / "net" / "packetdrill"):
            if (cand / "packetdrill.c").is_file() and (cand / "configure").is_file():
                return cand
    return None


def _default_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tcplab"


def build_packetdrill(source_dir: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Build packetdrill from ``source_dir`` (``gtests/net/packetdrill``) and return the binary.

    The tree is copied to ``<cache_dir>/packetdrill-<source hash>`` (``cache_dir`` defaults to
    ``~/.cache/tcplab``), where ``./configure`` and ``make`` run with their output in
    ``build.log``; a binary already built there is reused. Raises
    :class:`PacketdrillBuildError` naming the missing tools, or the log of a failed build.
    """
    src = Path(source_dir).resolve()
    if not (src / "packetdrill.c").is_file():
        raise PacketdrillBuildError(f"{src}: not packetdrill's source (no packetdrill.c)")
    cache = Path(cache_dir) if cache_dir is not None else _default_cache_dir()
    build_dir = cache / f"packetdrill-{source_hash(src)}"
    binary = build_dir / "packetdrill"
    if _is_executable(binary):
        return binary
    missing = missing_build_tools()
    if missing:
        raise PacketdrillBuildError("building packetdrill needs " + ", ".join(missing) + ": none on PATH")
    cache.mkdir(parents=True, exist_ok=True)
    # Build beside the final place, then rename: a half-done build is never taken for done.
    work = Path(tempfile.mkdtemp(prefix=f"{build_dir.name}.", dir=cache))
    log = work / "build.log"
    try:
        shutil.copytree(src, work, dirs_exist_ok=True, copy_function=shutil.copyfile, symlinks=True)
        for d, _, _ in os.walk(work):
            os.chmod(d, 0o755)  # the corpus may be read-only; copytree copies directory modes
        jobs = str(max(1, min(os.cpu_count() or 1, 8)))
        with open(log, "w") as out:
            for cmd in (["sh", "./configure"], ["make", f"-j{jobs}"]):
                out.write(f"$ {' '.join(cmd)}\n")
                out.flush()
                rc = subprocess.run(cmd, cwd=work, stdout=out, stderr=subprocess.STDOUT).returncode
                if rc != 0:
                    raise PacketdrillBuildError(f"packetdrill build failed ({' '.join(cmd)}: exit {rc}); see {log}")
        if not _is_executable(work / "packetdrill"):
            raise PacketdrillBuildError(f"packetdrill build made no binary; see {log}")
        try:
            work.rename(build_dir)
        except OSError:
            if not _is_executable(binary):  # not another build that finished first
                if build_dir.exists():
                    shutil.rmtree(build_dir)
                work.rename(build_dir)
    except PacketdrillBuildError as e:
        failed = cache / f"{build_dir.name}.failed"
        shutil.rmtree(failed, ignore_errors=True)
        work.rename(failed)
        raise PacketdrillBuildError(str(e).replace(str(work), str(failed))) from None
    finally:
        if work.exists():  # not renamed: another build won the race, or something raised
            shutil.rmtree(work, ignore_errors=True)
    return binary


def _is_executable(p: Path) -> bool:
    return p.is_file() and os.access(p, os.X_OK)


# --------------------------------------------------------------------------- one script


def variant_for(script: str | os.PathLike[str]) -> str:
    """'ipv6' for the IPv6-only scripts (``*v6.pkt``, which run_all.py runs over IPv6 alone),
    else 'ipv4'."""
    return "ipv6" if str(script).endswith("v6.pkt") else "ipv4"


def packetdrill_args(
    binary: str | os.PathLike[str],
    script: str | os.PathLike[str],
    variant: str = "ipv4",
    extra_args: Sequence[str] = (),
) -> list[str]:
    """packetdrill's command line as run_all.py builds it (run from the script's directory,
    so the script is named by its base name)."""
    flags = {"ipv4": IPV4_ARGS, "ipv6": IPV6_ARGS}[variant]
    return [str(binary), *DEFAULT_ARGS, *flags, *extra_args, Path(script).name]


def _link_target(p: Path) -> Path | None:
    """The file ``p`` stands for when it is a flattened symbolic link, else None."""
    try:
        if p.is_symlink() or not p.is_file() or p.stat().st_size > 256:
            return None
        text = p.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text or any(c.isspace() for c in text) or text.startswith(("/", "#")):
        return None
    target = (p.parent / text).resolve()
    if target.is_file() and target != p.resolve():
        return target
    return None


def flattened_links(script: str | os.PathLike[str], levels: int = 4) -> list[tuple[Path, Path]]:
    """``(file, target)`` for each flattened symbolic link in a ``common`` directory within
    ``levels`` folders above the script (see the module doc)."""
    found: list[tuple[Path, Path]] = []
    d = Path(script).resolve().parent
    for _ in range(levels):
        common = d / "common"
        if common.is_dir():
            for p in sorted(common.iterdir()):
                target = _link_target(p)
                if target is not None:
                    found.append((p, target))
        if d.parent == d:
            break
        d = d.parent
    return found


def netns_command(argv: Sequence[str], binds: Sequence[tuple[Path, Path]] = ()) -> list[str]:
    """``argv`` run in a fresh network namespace with ``lo`` up (in_netns.sh's setup), and
    in a private mount namespace with each ``(file, target)`` bind-mounted when there are
    flattened links."""
    setup = ["set -e", "ip link set lo up"]
    setup += [f"mount --bind {_q(target)} {_q(p)}" for p, target in binds]
    setup.append('exec "$@"')
    unshare = ["unshare", "--net"] + (["--mount", "--propagation", "private"] if binds else [])
    return [*unshare, "--", "sh", "-c", "; ".join(setup), "tcplab-packetdrill", *argv]


def allow_congestion_control(names: Sequence[str] = SCRIPT_CC) -> list[str]:
    """Add ``names`` to ``net.ipv4.tcp_allowed_congestion_control`` (machine-wide) when they
    are available and not there yet, so a namespace may make them its default; returns what
    was added ([] when nothing was needed or the list cannot be read or written)."""
    try:
        allowed = _CC_ALLOWED.read_text().split()
        available = _CC_AVAILABLE.read_text().split()
    except OSError:
        return []
    add = [n for n in names if n in available and n not in allowed]
    if not add:
        return []
    try:
        _CC_ALLOWED.write_text(" ".join([*allowed, *add]) + "\n")
    except OSError:
        return []
    return add


def _q(p: Path | str) -> str:
    return shlex.quote(str(p))


#: Lines saying what went wrong, most telling first: packetdrill's own (``x.pkt:LINE: ...``,
#: ``x.pkt: ...``), then any that sounds like an error.
_ERROR_RES = (
    re.compile(r"\.pkt(:\d+)?: "),
    re.compile(r"error|assert|fail|mismatch|expected|timed out|not found", re.IGNORECASE),
)
#: The last line of a Python traceback (``AssertionError: 36``).
_PY_EXCEPTION_RE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception)\b")
#: First error lines that mean the script could not be run at all (not the kernel's doing):
#: packetdrill cannot parse it or its options, its init commands (the ``defaults.sh`` setup)
#: or route setup failed, or the namespace wrapper failed.
_SETUP_ERROR_RE = re.compile(
    r"parse error|syntax error|semantic error|option '[^']*' (unknown|forbids|requires)"
    r"|unrecognized option|missing script path"
    r"|error executing (init|route) "
    r"|^(unshare|sh|ip|mount|RTNETLINK answers|packetdrill)[:\s]",
    re.IGNORECASE,
)


def first_error_line(output: str) -> str:
    """The first line of packetdrill's output that says what went wrong ('' if none)."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for rx in _ERROR_RES:
        for i, ln in enumerate(lines):
            if rx.search(ln):
                if ln.endswith("error in Python code"):  # a %{ }% assertion: say which value
                    exc = next((x for x in lines[i + 1 :] if _PY_EXCEPTION_RE.match(x)), None)
                    if exc:
                        return f"{ln}: {exc}"
                return ln
    return lines[-1] if lines else ""


def classify(returncode: int | None, output: str, timed_out: bool = False) -> tuple[str, str]:
    """``(status, first error line)`` of one run."""
    if timed_out:
        return "timeout", first_error_line(output)
    if returncode == 0:
        return "pass", ""
    first = first_error_line(output)
    if returncode is None or returncode < 0 or returncode >= 125 or _SETUP_ERROR_RE.search(first):
        return "error", first or f"exit status {returncode}"
    return "fail", first or f"exit status {returncode}"


def _tail(output: str) -> str:
    lines = output.splitlines()[-TAIL_LINES:]
    return "\n".join(lines)[-TAIL_CHARS:]


def run_script(
    binary: str | os.PathLike[str],
    script_path: str | os.PathLike[str],
    timeout_s: float = 60,
    extra_args: Sequence[str] = (),
    allow_cc: bool = True,
) -> KernelScriptResult:
    """Run one script on the kernel, in a fresh network namespace, as run_all.py does (see
    the module doc); never raises for what the run does. ``allow_cc``: first let namespaces
    make cubic their default (:func:`allow_congestion_control`)."""
    script = Path(script_path).resolve()
    variant = variant_for(script)
    argv = packetdrill_args(Path(binary).resolve(), script, variant, extra_args)
    cmd = netns_command(argv, flattened_links(script))
    start = time.monotonic()
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            return KernelScriptResult(str(script), "error", 0.0, f"{tool} not found on PATH", "", variant, None, cmd)
    if not _is_executable(Path(binary)):
        return KernelScriptResult(str(script), "error", 0.0, f"{binary}: no packetdrill binary", "", variant, None, cmd)
    if allow_cc:
        allow_congestion_control()
    timed_out = False
    with tempfile.TemporaryFile(mode="w+b") as out:
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=script.parent,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as e:
            return KernelScriptResult(str(script), "error", 0.0, f"cannot run unshare: {e}", "", variant, None, cmd)
        try:
            rc: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            rc = proc.returncode
        seconds = time.monotonic() - start
        out.seek(0)
        output = out.read().decode(errors="replace")
    status, first = classify(rc, output, timed_out)
    if timed_out:
        first = f"timed out after {timeout_s:g} s" + (f"; {first}" if first else "")
    return KernelScriptResult(str(script), status, round(seconds, 3), first, _tail(output), variant, rc, cmd)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM then SIGKILL to the run's whole process group (its own session)."""
    for sig, wait_s in ((signal.SIGTERM, _KILL_GRACE_S), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
        # the leader is gone; make sure nothing it started lingers in the group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        return


# --------------------------------------------------------------------------- corpus


def find_scripts(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every ``*.pkt`` under each path (a path may be a script), sorted per path, each once."""
    seen: set[Path] = set()
    scripts: list[Path] = []
    for path in paths:
        p = Path(path).resolve()
        found = [p] if p.is_file() else sorted(q for q in p.rglob("*.pkt") if q.is_file())
        for q in found:
            if q not in seen:
                seen.add(q)
                scripts.append(q)
    return scripts


def run_corpus(
    binary: str | os.PathLike[str],
    paths: Iterable[str | os.PathLike[str]],
    jobs: int = 1,
    timeout_s: float = 60,
    on_result: Callable[[KernelScriptResult], None] | None = None,
) -> list[KernelScriptResult]:
    """Run every script under ``paths`` (:func:`find_scripts`), one at a time unless ``jobs``
    says otherwise (timing-sensitive scripts fail under load); results in script order.
    ``on_result`` is called with each result as it comes (in completion order)."""
    scripts = find_scripts(paths)

    def one(s: Path) -> KernelScriptResult:
        r = run_script(binary, s, timeout_s=timeout_s)
        if on_result is not None:
            on_result(r)
        return r

    if jobs <= 1:
        return [one(s) for s in scripts]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, scripts))


# --------------------------------------------------------------------------- report

STATUSES = ("pass", "fail", "timeout", "error")


def format_result(r: KernelScriptResult, base: Path | None = None) -> str:
    """``status  SECONDS  PATH  first error line``."""
    path = r.script
    if base is not None:
        with contextlib.suppress(ValueError):
            path = str(Path(r.script).relative_to(base))
    return f"{r.status:<7}  {r.seconds:7.2f}  {path}  {r.first_error}".rstrip()


def totals(results: Sequence[KernelScriptResult]) -> dict[str, int]:
    """Results per status."""
    counts = dict.fromkeys(STATUSES, 0)
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    return counts


def _totals_line(label: str, results: Sequence[KernelScriptResult], seconds: float | None = None) -> str:
    t = totals(results)
    parts = "  ".join(f"{k} {t[k]}" for k in STATUSES)
    took = f"  ({seconds:.1f} s)" if seconds is not None else ""
    return f"{label}: {len(results)} scripts  {parts}{took}"


def _common_base(paths: Sequence[Path]) -> Path | None:
    if not paths:
        return None
    base = Path(os.path.commonpath([str(p) for p in paths]))
    return base if base.is_dir() else base.parent


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tcplab.packetdrill.kernel",
        description="Run packetdrill scripts on this machine's kernel (IPv4 variant, one network namespace each).",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="scripts or folders of *.pkt")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    parser.add_argument("--source", metavar="DIR", help="packetdrill's source (default: found from the paths)")
    parser.add_argument("--binary", metavar="FILE", help="a packetdrill binary to use instead of building one")
    parser.add_argument("--timeout", type=float, default=60, metavar="S", help="per script (default 60)")
    parser.add_argument("--jobs", type=int, default=1, help="scripts at once (default 1: timing needs a quiet machine)")
    parser.add_argument("--rerun-failed", action="store_true", help="run the scripts that did not pass once more")
    args = parser.parse_args(argv)

    if args.binary:
        binary = Path(args.binary)
        build_s = 0.0
    else:
        source = Path(args.source) if args.source else find_source(args.paths[0])
        if source is None:
            print(f"error: no packetdrill source found above {args.paths[0]} (give --source)", file=sys.stderr)
            return 0
        t0 = time.monotonic()
        try:
            binary = build_packetdrill(source)
        except PacketdrillBuildError as e:
            print(f"error: {e}", file=sys.stderr)
            return 0
        build_s = time.monotonic() - t0
        print(f"packetdrill: {binary} (ready in {build_s:.1f} s)", flush=True)

    scripts = find_scripts(args.paths)
    base = _common_base(scripts)

    def show(r: KernelScriptResult) -> None:
        print(format_result(r, base), flush=True)

    load_before = os.getloadavg()
    t0 = time.monotonic()
    results = run_corpus(binary, scripts, jobs=args.jobs, timeout_s=args.timeout, on_result=show)
    run_s = time.monotonic() - t0
    load_after = os.getloadavg()
    print(_totals_line("total", results, run_s))
    reruns: list[KernelScriptResult] = []
    rerun_s = 0.0
    again = [Path(r.script) for r in results if r.status != "pass"]
    if args.rerun_failed and again:
        print(f"rerun of the {len(again)} that did not pass:", flush=True)
        t0 = time.monotonic()
        reruns = run_corpus(binary, again, jobs=args.jobs, timeout_s=args.timeout, on_result=show)
        rerun_s = time.monotonic() - t0
        print(_totals_line("rerun", reruns, rerun_s))
    if args.json:
        doc = {
            "kernel": platform.release(),
            "machine": platform.machine(),
            "binary": str(binary),
            "paths": [str(Path(p).resolve()) for p in args.paths],
            "timeout_s": args.timeout,
            "jobs": args.jobs,
            "seconds": round(run_s, 1),
            # how busy the machine was (1, 5, 15 min load averages): timing errors come with load
            "loadavg_before": [round(x, 2) for x in load_before],
            "loadavg_after": [round(x, 2) for x in load_after],
            "totals": totals(results),
            "results": [asdict(r) for r in results],
        }
        if args.rerun_failed:
            doc.update(rerun_seconds=round(rerun_s, 1), rerun_totals=totals(reruns), reruns=[asdict(r) for r in reruns])
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
