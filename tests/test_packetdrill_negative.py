"""Negative controls for ``tcplab packetdrill``: a script tcplab passes must fail once broken.

For each script listed in ``tests/packetdrill_expected_passes.txt`` (paths below the
corpus's ``gtests/net/tcp``, one a line, ``#`` comments; the scripts tcplab's engine passes
today), three copies are made in a temporary folder, each with one deliberate mistake, and
each must fail:

* ``seq``: the first outbound data line's sequence numbers moved by 1000;
* ``cwnd``: the first ``tcpi_snd_cwnd == N`` assertion made ``N + 1``;
* ``early``: the first outbound line written ``+0`` after another event, rewritten to an
  absolute time 50 ms before it (its gap is then negative, so the tolerance is 4 ms);
* ``ecn``: the first outbound line with an IP ECN mark or an ECE/CWR flag gets another
  mark (``[ect0]`` becomes ``[ect1]``, any other ``[ect0]``) or loses the flag's letter.

A mutation the script has nothing for (no cwnd assertion, ...) is skipped for it. The corpus
is google/packetdrill at ``../shared/packetdrill`` beside the project, or
``$TCPLAB_PACKETDRILL_DIR``; without it, or with an empty list, the tests skip.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tcplab.packetdrill.run import run_script
from tcplab.packetdrill.script import Code, TcpPacket, parse_file
from tcplab.packetdrill.timing import resolve

CORPUS = Path(os.environ.get("TCPLAB_PACKETDRILL_DIR", Path(__file__).resolve().parents[2] / "shared" / "packetdrill"))
TCP_DIR = CORPUS / "gtests" / "net" / "tcp"
LIST = Path(__file__).with_name("packetdrill_expected_passes.txt")
MUTATIONS = ("seq", "cwnd", "early", "ecn")


def expected_passes() -> list[str]:
    lines = [ln.split("#", 1)[0].strip() for ln in LIST.read_text().splitlines()]
    return [ln for ln in lines if ln]


def _cases() -> list:
    names = expected_passes()
    if not names:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=f"{LIST.name} lists no scripts yet"))]
    return [pytest.param(n, m, id=f"{n}-{m}") for n in names for m in MUTATIONS]


def _script_times(path: Path) -> dict[int, int]:
    """Each event's script time (microseconds), as if every event happened on time."""
    script = parse_file(path)
    times, prev, prev_in = {}, None, False
    for ev in script.events:
        inbound = isinstance(ev.action, TcpPacket) and ev.action.direction == "<"
        r = resolve(
            ev.time,
            inbound_packet=inbound,
            previous=prev,
            previous_inbound_packet=prev_in,
            now_us=prev.time_us if prev else 0,
        )
        times[ev.line] = r.time_us
        prev, prev_in = r, inbound
    return times


def mutate(path: Path, mutation: str) -> str | None:
    """The script's text with one mistake (module doc), or None when it has nothing for it."""
    lines = path.read_text().splitlines(keepends=True)
    script = parse_file(path)
    outbound = [ev for ev in script.events if isinstance(ev.action, TcpPacket) and ev.action.direction == ">"]
    if mutation == "seq":
        for ev in outbound:
            p = ev.action
            if "S" in p.flags or p.payload_bytes == 0:
                continue
            old = f"{p.seq_start}:{p.seq_end}({p.payload_bytes})"
            new = f"{p.seq_start + 1000}:{p.seq_end + 1000}({p.payload_bytes})"
            i = ev.line - 1
            if old in lines[i]:
                lines[i] = lines[i].replace(old, new, 1)
                return "".join(lines)
        return None
    if mutation == "cwnd":
        for ev in script.events:
            if isinstance(ev.action, Code) and re.search(r"tcpi_snd_cwnd\s*==\s*\d+", ev.action.python):
                text = "".join(lines)
                return re.sub(r"(tcpi_snd_cwnd\s*==\s*)(\d+)", lambda m: f"{m[1]}{int(m[2]) + 1}", text, count=1)
        return None
    if mutation == "early":
        times = _script_times(path)
        for ev in outbound:
            if ev.time.kind != "relative" or ev.time.start_us != 0 or "S" in ev.action.flags:
                continue
            t = times[ev.line] - 50_000
            if t <= 0:
                continue
            i = ev.line - 1
            lines[i] = re.sub(r"^\s*\+[0-9.]+", f"{t // 1_000_000}.{t % 1_000_000:06d}", lines[i], count=1)
            return "".join(lines)
        return None
    if mutation == "ecn":
        for ev in outbound:
            p, i = ev.action, ev.line - 1
            mark = p.ip.ecn if p.ip is not None else None
            if mark is not None and mark != "ect01" and f"[{mark}]" in lines[i]:
                lines[i] = lines[i].replace(f"[{mark}]", "[ect1]" if mark == "ect0" else "[ect0]", 1)
                return "".join(lines)
            letters = [c for c in p.flags if c in "EW"]
            if letters and f" {p.flags} " in lines[i]:
                lines[i] = lines[i].replace(f" {p.flags} ", f" {p.flags.replace(letters[-1], '')} ", 1)
                return "".join(lines)
        return None
    raise ValueError(mutation)


@pytest.mark.parametrize(("name", "mutation"), _cases())
def test_mutated_script_fails(tmp_path, name, mutation):
    if not TCP_DIR.is_dir():
        pytest.skip(f"no packetdrill corpus at {CORPUS} (set TCPLAB_PACKETDRILL_DIR)")
    original = TCP_DIR / name
    text = mutate(original, mutation)
    if text is None:
        pytest.skip(f"{name} has nothing for the {mutation} mutation")
    copy = tmp_path / original.parent.name / original.name
    copy.parent.mkdir(parents=True)
    copy.write_text(text)
    assert run_script(original).status == "pass", f"{name} is listed as passing but does not"
    r = run_script(copy)
    assert r.status == "fail", f"{name} with the {mutation} mistake: {r.status} {r.message}"
