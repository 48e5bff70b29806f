"""What `tcplab diagnose` accepts as input: archive manifests, special files, tcplab's own output.

* A collect manifest of the wrong shape is one ``error: ARCHIVE:manifest.json: ...`` line
  naming the field, exit 2 (a manifest that lies about its members cannot place them).
* Only regular files are opened: a FIFO or device named on the command line is refused
  before ``open()`` (which would block on a FIFO forever); one inside a directory is skipped
  with a note. Whatever a file claims its size is, at most ``MAX_INPUT`` bytes are read.
* tcplab's ``counters.txt`` (nstat text with a ``# host NAME`` line per host) is read, one
  host chosen and named; a run directory's binaries (PNG, Parquet) are skipped with notes.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcplab.cli import app
from tcplab.diagnose import netstat, source
from tcplab.results.counters import format_nstat

FIX = Path(__file__).parent / "fixtures"
runner = CliRunner()


def invoke(*args: object):  # noqa: ANN201
    return runner.invoke(app, [str(a) for a in args])


def _archive(path: Path, manifest: bytes | None, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        items = dict(members)
        if manifest is not None:
            items["manifest.json"] = manifest
        for name, data in items.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


SS = (FIX / "ss_seed000_collapse.txt").read_bytes()


def _manifest(**over: object) -> bytes:
    doc: dict = {
        "schema": "tcplab-collect/1",
        "files": {"snap-0/ss.txt": {"snapshot": 0, "time": 1700000000.0, "command": "ss -tinme"}},
        "missing": ["nstat: not installed"],
    }
    doc.update(over)
    return json.dumps(doc).encode()


def test_a_good_manifest_places_members_and_carries_notes(tmp_path: Path) -> None:
    p = _archive(tmp_path / "cap.tar.gz", _manifest(), {"snap-0/ss.txt": SS})
    r = invoke("diagnose", p, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert "nstat: not installed" in doc["notes"] and "cwnd-collapse" in [f["id"] for f in doc["findings"]]


@pytest.mark.parametrize(
    ("manifest", "needle"),
    [
        (b"[1, 2, 3]", "manifest.json: expected a JSON object, got a list"),
        (b'"a string"', "manifest.json: expected a JSON object, got a string"),
        (b"42", "manifest.json: expected a JSON object, got a number"),
        (_manifest(files=["snap-0/ss.txt"]), "files: expected an object of file -> hints, got a list"),
        (_manifest(files={"snap-0/ss.txt": 3}), 'files["snap-0/ss.txt"]: expected an object of hints, got a number'),
        (_manifest(missing=5), "missing: expected a list of notes, got a number"),
        (_manifest(missing="nstat"), "missing: expected a list of notes, got a string"),
        (_manifest(files={"snap-0/ss.txt": {"snapshot": "0"}}), '.snapshot: "0" is not a snapshot index'),
        (_manifest(files={"snap-0/ss.txt": {"snapshot": -1}}), ".snapshot: -1 is not a snapshot index"),
        (_manifest(files={"snap-0/ss.txt": {"snapshot": True}}), ".snapshot: true is not a snapshot index"),
        (_manifest(files={"snap-0/ss.txt": {"time": "noon"}}), '.time: "noon" is not a UNIX time'),
        (_manifest(files={"snap-0/ss.txt": {"device": ["eth0"]}}), ".device: a list is not an interface name"),
        (b"[" * 100000, "manifest.json is not valid JSON"),
    ],
)
def test_a_manifest_of_the_wrong_shape_is_one_line_exit_2(tmp_path: Path, manifest: bytes, needle: str) -> None:
    p = _archive(tmp_path / "cap.tar.gz", manifest, {"snap-0/ss.txt": SS})
    r = invoke("diagnose", p)
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {p}:manifest.json"), r.output
    assert needle in lines[0], lines[0]


def _run_cli(*args: object, timeout: float = 60) -> subprocess.CompletedProcess:
    """The CLI in a child process: a hang fails the test at ``timeout`` (a hang guard, not a speed check)."""
    cmd = [sys.executable, "-c", "from tcplab.cli import main; main()", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def test_a_fifo_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "ss.fifo"
    os.mkfifo(fifo)
    r = _run_cli("diagnose", fifo)  # before the fix: blocks in open() until the timeout
    assert r.returncode == 2
    assert (
        r.stderr.strip()
        == f"error: {fifo}: a FIFO (named pipe), not a regular file; save the tool's output to a file first"
    )


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_is_refused(tmp_path: Path) -> None:
    r = _run_cli("diagnose", "/dev/zero")
    assert r.returncode == 2 and "error: /dev/zero: a character device, not a regular file" in r.stderr


def test_a_fifo_inside_a_directory_is_skipped_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "ss.txt").write_bytes(SS)
    os.mkfifo(tmp_path / "pipe")
    r = _run_cli("diagnose", tmp_path, "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert f"skipped {tmp_path / 'pipe'}: a FIFO (named pipe), not a regular file" in " ".join(doc["notes"])
    assert "cwnd-collapse" in [f["id"] for f in doc["findings"]]


def test_reading_stops_at_max_input_whatever_the_size_claims(monkeypatch: pytest.MonkeyPatch) -> None:
    """/proc files stat as 0 bytes; the bound is on the bytes actually read."""
    from tcplab.diagnose import netstat, source

    monkeypatch.setattr(source, "MAX_INPUT", 10_000)
    line = b"TcpExtTCPTimeouts               115                0.0\n"

    class Endless(io.RawIOBase):
        reads = 0
        offset = 0

        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:  # noqa: ANN001
            Endless.reads += 1
            n = len(b)
            start = Endless.offset % len(line)
            b[:n] = (line * (n // len(line) + 2))[start : start + n]
            Endless.offset += n
            return n

    src = source.Source("endless", lambda: io.BufferedReader(Endless()), 0)
    with pytest.raises(source.ParseError, match=r"endless:\d+: more than 0 MB"):
        netstat.parse_nstat_text(src)
    assert Endless.reads < 100


# ------------------------------------------------------------------ tcplab's own output

COUNTERS = format_nstat(
    {
        "client": {"TcpOutSegs": 318, "TcpRetransSegs": 0, "TcpExtTCPTimeouts": 0, "TcpCurrEstab": 1},
        "server": {"TcpOutSegs": 5260, "TcpRetransSegs": 800, "TcpExtTCPTimeouts": 40, "TcpCurrEstab": 1},
    },
    5.0,
)


def test_counters_txt_is_read_and_the_host_named(tmp_path: Path) -> None:
    p = tmp_path / "counters.txt"
    p.write_text(COUNTERS)
    r = invoke("diagnose", p, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [i["kind"] for i in doc["inputs"]] == ["nstat_text"]
    assert any("diagnosing host 'server'" in n and "client" in n for n in doc["notes"]), doc["notes"]
    # the server's 40 timeouts over 1 connection are read, not the client's zero
    rto = next(f for f in doc["findings"] if f["id"] == "rto-rate")
    assert any(e["text"].startswith("TcpExtTCPTimeouts") and "40" in e["text"] for e in rto["evidence"])
    assert all(e["line"] > COUNTERS.splitlines().index("# host server") for e in rto["evidence"])


def test_a_run_directory_skips_binaries_with_notes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "plots").mkdir(parents=True)
    (run / "plots" / "cwnd.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64))
    (run / "timeseries.parquet").write_bytes(b"PAR1\x15\x04\x00\x00" + bytes(64) + b"PAR1")
    (run / "summary.json").write_text(json.dumps({"flows": [{"kind": "bulk"}], "kernel": "6.12"}))
    (run / "scenario.resolved.json").write_text(json.dumps({"links": [{"queue": {"kind": "pfifo"}}]}))
    (run / "counters.txt").write_text(COUNTERS)
    r = invoke("diagnose", run, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert [i["file"] for i in doc["inputs"]] == [str(run / "counters.txt")]
    notes = " ".join(doc["notes"])
    for name in ("plots/cwnd.png", "timeseries.parquet", "summary.json", "scenario.resolved.json"):
        assert f"skipped {run / name}" in notes, (name, notes)
    assert "binary file" in notes


def test_a_directory_with_nothing_readable_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    r = invoke("diagnose", tmp_path)
    assert r.exit_code == 2 and r.output.startswith(
        f"error: {tmp_path}: no recognised capture (1 file skipped; first note: skipped"
    )


def test_a_real_run_directory(tmp_path: Path, real_core) -> None:  # noqa: ANN001
    """The issue's reproduction: a simulation's own output directory, diagnosed as it is."""
    out = tmp_path / "run"
    r = invoke("run", "builtin:cubic-vs-bbr-lossy", "--set", "duration=5s", "-o", out, "-q")
    assert r.exit_code == 0, r.output
    assert list(out.rglob("*.png")) and list(out.rglob("*.parquet"))
    r = invoke("diagnose", out, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    # a run directory (it has the .tcplab-run marker): its tool texts only, one snapshot --
    # counters.txt, the ss -tin of both hosts of the one flow (the router has no socket) and
    # every node's tc -s qdisc text; plots, Parquet and JSON are not inputs
    nodes = [n["name"] for n in json.loads((out / "scenario.resolved.json").read_text())["nodes"]]
    assert [i["kind"] for i in doc["inputs"]] == ["nstat_text"] + ["ss"] * 2 + ["tc_text"] * len(nodes)
    assert doc["snapshots"] == 1
    assert any("diagnosing host" in n for n in doc["notes"])
    assert not any(".png" in n for n in doc["notes"])


def test_a_fifo_entry_in_an_archive_is_a_note(tmp_path: Path) -> None:
    p = tmp_path / "cap.tar.gz"
    with tarfile.open(p, "w:gz") as tf:
        info = tarfile.TarInfo("snap-0/ss.txt")
        info.size = len(SS)
        tf.addfile(info, io.BytesIO(SS))
        fifo = tarfile.TarInfo("snap-0/pipe")
        fifo.type = tarfile.FIFOTYPE
        tf.addfile(fifo)
    r = invoke("diagnose", p, "--json")
    assert r.exit_code == 0, r.output
    assert f"skipped {p}:snap-0/pipe: not a regular file" in json.loads(r.output)["notes"]


FAN_IN = format_nstat(
    {
        # a fan-in: the receiver sends more segments (ACKs) than any one sender
        "app1": {"TcpInSegs": 400, "TcpOutSegs": 700, "TcpRetransSegs": 30, "TcpExtTCPTimeouts": 2},
        "app2": {"TcpInSegs": 400, "TcpOutSegs": 700, "TcpRetransSegs": 50, "TcpExtTCPTimeouts": 3},
        "nginx": {"TcpInSegs": 1480, "TcpOutSegs": 800, "TcpRetransSegs": 0, "TcpExtTCPTimeouts": 0},
    },
    1.0,
)


def test_a_fan_ins_senders_are_read_together_not_the_receiver(tmp_path: Path) -> None:
    p = tmp_path / "counters.txt"
    p.write_text(FAN_IN)
    c = netstat.parse_nstat_text(source.Source.from_path(p))
    assert c.hosts == ["app1", "app2"]
    assert c.values["TcpRetransSegs"] == 30 + 50 and c.values["TcpExtTCPTimeouts"] == 2 + 3
    assert "nginx" in (c.note or "") and "senders" in (c.note or "")
