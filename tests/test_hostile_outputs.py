"""Hostile output paths (issue 21, items 2, 5 and 6): what is at ``-o`` is never destroyed
unless tcplab may replace it; a path Linux would refuse is a usage error before anything
runs; a full disk is one line naming the path; files get the user's umask.

The rule is tcplab's own for run directories (tcplab.results.rundir), applied to every file
a command writes at a user's path (``export flent|iperf3|pcap -o``, ``collect -o``,
``diagnose --scenario-dir``): an existing path is refused (one line naming it, exit 2)
unless ``--force``, and a path that is not a regular file (a device, a FIFO, a socket, a
directory where a file is written, a symbolic link) is never replaced, even with
``--force``. Linux's limits are PATH_MAX 4096 bytes (a path of 4096 bytes or more is
ENAMETOOLONG) and NAME_MAX 255 bytes per name. A file's mode is ``0666 & ~umask``, as
``open(2)`` with O_CREAT gives every tool's new file.

Before: ``tcplab export pcap RUN --flow 0 -o notes.txt`` replaced the user's notes.txt (exit
0); a symlink to /dev/null, a FIFO and a device node were renamed over; an ``-o`` of 4200
bytes exited 1 (``File name too long``) after the run; a full disk said ``error: No space
left on device`` (no path) and ``collect`` left ``FILE.part`` behind; ``sweep.parquet``,
``sweep.json``, ``rows/*`` and exported pcaps were mode 0600.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tcplab.cli import app
from test_hostile_sweep import SCENARIO, assert_one_line_error

ROOT = os.geteuid() == 0
FLOW_FILE = "iperf3-server-client-0.json"


def _cli(*args: object):
    return CliRunner().invoke(app, [str(a) for a in args])


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """One 1 s run of the real engine (one flow, server-client-0)."""
    pytest.importorskip("tcplab._core")
    base = tmp_path_factory.mktemp("run")
    (base / "s.yaml").write_text(SCENARIO, encoding="utf-8")
    r = _cli("run", base / "s.yaml", "-o", base / "run", "-q", "--no-plots")
    assert r.exit_code == 0, r.output
    return base / "run"


@pytest.fixture
def no_capture(monkeypatch):
    """collect and export pcap must refuse before they capture or rerun anything."""
    import tcplab.collect
    import tcplab.exports.capture

    def must_not_run(*_a, **_k):
        raise AssertionError("ran before the output path was checked")

    monkeypatch.setattr(tcplab.collect, "physical_interfaces", must_not_run)
    monkeypatch.setattr(tcplab.exports.capture, "capture_run", must_not_run)


def _file_command(kind: str, run: Path, target: object) -> list[object]:
    return {
        "flent": ["export", "flent", run, "-o", target],
        "iperf3": ["export", "iperf3", run, "--flow", "0", "-o", target],
        "iperf3-all": ["export", "iperf3", run, "-o", target],  # target: the directory
        "pcap": ["export", "pcap", run, "--flow", "0", "-o", target],
        "collect": ["collect", "--count", "1", "--interval", "0s", "--timeout", "5s", "-q", "-o", target],
    }[kind]


FILE_KINDS = ["flent", "iperf3", "pcap", "collect"]


def _target(tmp_path: Path, kind: str, name: str) -> tuple[Path, Path]:
    """(what -o names, the file written there): iperf3-all writes FLOW_FILE in -o DIR."""
    if kind == "iperf3-all":
        (tmp_path / "dir").mkdir(exist_ok=True)
        return tmp_path / "dir", tmp_path / "dir" / FLOW_FILE
    return tmp_path / name, tmp_path / name


def _no_temporaries(directory: Path) -> None:
    left = [p.name for p in directory.rglob(".*") if p.name.endswith((".tmp", ".part")) or ".part" in p.name]
    left += [p.name for p in directory.rglob("*.part")]
    assert not left, left


# -- item 2: an existing path --------------------------------------------------------------


@pytest.mark.parametrize("kind", [*FILE_KINDS, "iperf3-all"])
def test_a_users_file_is_refused_without_force(tmp_path, run_dir, no_capture, kind):
    """Before: notes.txt replaced, exit 0."""
    given, written = _target(tmp_path, kind, "notes.txt")
    written.write_text("keep\n")
    r = _cli(*_file_command(kind, run_dir, given))
    assert_one_line_error(r, "error: --output: ", f"'{written}' exists", "--force")
    assert written.read_text() == "keep\n"
    _no_temporaries(tmp_path)


@pytest.mark.parametrize("kind", [*FILE_KINDS, "iperf3-all"])
def test_force_replaces_a_regular_file(tmp_path, run_dir, kind):
    given, written = _target(tmp_path, kind, "notes.txt")
    written.write_text("keep\n")
    written.chmod(0o600)
    r = _cli(*_file_command(kind, run_dir, given), "--force")
    assert r.exit_code == 0, r.output
    assert written.read_bytes() != b"keep\n" and written.stat().st_size > 0
    assert stat.S_IMODE(written.stat().st_mode) == 0o666 & ~_umask()  # a new file's mode
    _no_temporaries(tmp_path)


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _socket(path: Path) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    cwd = os.getcwd()
    os.chdir(path.parent)  # sun_path holds 108 bytes; tmp_path may be longer
    try:
        s.bind(path.name)
    finally:
        os.chdir(cwd)
    return s


def _char_device(path: Path) -> None:
    if not ROOT:
        pytest.skip("mknod needs root")
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # as /dev/null
    except PermissionError as e:
        pytest.skip(f"mknod refused here: {e}")


def _devnull_link(path: Path) -> None:
    path.symlink_to("/dev/null")


def _file_link(path: Path) -> None:
    (path.parent / "real.txt").write_text("keep\n")
    path.symlink_to(path.parent / "real.txt")


def _directory(path: Path) -> None:
    path.mkdir()
    (path / "inside.txt").write_text("keep\n")


NOT_REGULAR = {
    "char-device": (_char_device, "is a character device", stat.S_ISCHR),
    "devnull-symlink": (_devnull_link, "is a symbolic link", stat.S_ISLNK),
    "file-symlink": (_file_link, "is a symbolic link", stat.S_ISLNK),
    "fifo": (_fifo, "is a FIFO", stat.S_ISFIFO),
    "socket": (_socket, "is a socket", stat.S_ISSOCK),
}


@pytest.mark.parametrize("force", [False, True], ids=["", "force"])
@pytest.mark.parametrize("what", sorted(NOT_REGULAR))
@pytest.mark.parametrize("kind", [*FILE_KINDS, "iperf3-all"])
def test_what_is_not_a_regular_file_is_never_replaced(tmp_path, run_dir, no_capture, kind, what, force):
    """Before: a symlink to /dev/null, a FIFO, a socket, a device node were renamed over (exit 0)."""
    given, written = _target(tmp_path, kind, "out")
    make, needle, is_kind = NOT_REGULAR[what]
    keep = make(written)
    before = os.lstat(written)
    r = _cli(*_file_command(kind, run_dir, given), *(["--force"] if force else []))
    assert_one_line_error(r, "error: --output: ", f"'{written}' {needle}", "never replaces")
    after = os.lstat(written)
    assert is_kind(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)
    if what == "file-symlink":
        assert (written.parent / "real.txt").read_text() == "keep\n"
    _no_temporaries(tmp_path)
    if keep is not None:
        keep.close()


@pytest.mark.parametrize("force", [False, True], ids=["", "force"])
@pytest.mark.parametrize("kind", ["flent", "iperf3", "pcap", "iperf3-all"])
def test_a_directory_where_the_file_goes_is_never_replaced(tmp_path, run_dir, no_capture, kind, force):
    """-o DIR writes NAME in DIR (as cp does); a directory named NAME there is not replaced."""
    name = {"flent": "run.flent.gz", "pcap": "server-client-0.pcap"}.get(kind, FLOW_FILE)
    out = tmp_path / "dir"
    out.mkdir()
    _directory(out / name)
    args = _file_command(kind, run_dir, out)
    r = _cli(*args, *(["--force"] if force else []))
    assert_one_line_error(r, "error: --output: ", f"'{out / name}' is a directory", "never replaces")
    assert (out / name / "inside.txt").read_text() == "keep\n"
    _no_temporaries(tmp_path)


def test_collect_into_a_directory_writes_the_archive_in_it(tmp_path):
    """As export -o DIR: the archive (its default name) goes in the directory, which stays."""
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "mine.txt").write_text("keep\n")
    r = _cli(*_file_command("collect", Path("-"), tmp_path / "dir"))
    assert r.exit_code == 0, r.output
    archives = list((tmp_path / "dir").glob("tcplab-collect-*.tar.gz"))
    assert len(archives) == 1 and (tmp_path / "dir" / "mine.txt").read_text() == "keep\n"


def test_stdout_stays_as_it_is(tmp_path, run_dir):
    r = _cli("export", "iperf3", run_dir, "--flow", "0", "-o", "-")
    assert r.exit_code == 0 and r.output == (run_dir / FLOW_FILE).read_text()
    assert not (Path.cwd() / "-").exists()


def test_default_paths_follow_the_rule_too(tmp_path, run_dir):
    """No -o: RUN/run.flent.gz, RUN/FLOW.json exist (tcplab run wrote them): --force replaces them."""
    import shutil

    d = tmp_path / "run"
    shutil.copytree(run_dir, d)
    before = (d / "run.flent.gz").read_bytes()
    assert_one_line_error(_cli("export", "flent", d), f"'{d / 'run.flent.gz'}' exists", "--force")
    r = _cli("export", "flent", d, "--force")
    assert r.exit_code == 0, r.output
    assert (d / "run.flent.gz").read_bytes() == before  # deterministic: the same file again


def _scenario_findings() -> Path:
    return Path(__file__).parent / "diagnose" / "fixtures" / "ss_seed000_collapse.txt"


def test_diagnose_scenario_dir_follows_the_rule(tmp_path):
    """Before: --scenario-dir wrote over NAME.yaml files it found there."""
    out = tmp_path / "sc"
    r = _cli("diagnose", _scenario_findings(), "--scenario-dir", out, "--json")
    assert r.exit_code == 0, r.output
    files = sorted(out.glob("*.yaml"))
    assert len(files) == 2
    for f in files:
        f.write_text("mine\n")
    r = _cli("diagnose", _scenario_findings(), "--scenario-dir", out, "--json")
    assert_one_line_error(r, f"error: --scenario-dir: '{out}/", ".yaml' exists", "--force")
    assert [f.read_text() for f in files] == ["mine\n"] * 2
    r = _cli("diagnose", _scenario_findings(), "--scenario-dir", out, "--json", "--force")
    assert r.exit_code == 0 and all(f.read_text() != "mine\n" for f in files)
    files[0].unlink()
    files[0].symlink_to("/dev/null")
    r = _cli("diagnose", _scenario_findings(), "--scenario-dir", out, "--json", "--force")
    assert_one_line_error(r, f"'{files[0]}' is a symbolic link")
    assert files[0].is_symlink()


def test_write_file_atomically_does_not_replace_a_file_that_appears_meanwhile(tmp_path, monkeypatch):
    """The check before the run is repeated at the rename: link(2) does not replace."""
    from tcplab.errors import ScenarioError
    from tcplab.output_files import check_output_file, write_file_atomically

    target = tmp_path / "x.pcap"
    check_output_file(target)  # nothing there yet
    target.write_text("appeared\n")  # while the run ran
    with pytest.raises(ScenarioError, match="exists"):
        write_file_atomically(target, b"data")
    assert target.read_text() == "appeared\n"
    target.unlink()

    def write_while_another_creates_it(tmp: str) -> None:  # between the last check and the rename
        Path(tmp).write_bytes(b"data")
        target.write_text("appeared\n")

    with pytest.raises(ScenarioError, match="exists"):
        write_file_atomically(target, write_while_another_creates_it)
    assert target.read_text() == "appeared\n"
    _no_temporaries(tmp_path)


# -- item 5: paths Linux refuses -------------------------------------------------------------

#: Every command that takes -o (and diagnose's --scenario-dir), as a function of the path.
O_COMMANDS = {
    "run": lambda run, o: ["run", "builtin:cubic-vs-bbr-lossy", "--set", "duration=1s", "-q", "--no-plots", "-o", o],
    "compare": lambda run, o: [
        *("compare", "builtin:cubic-vs-bbr-lossy", "--set", "flows.0.cc=cubic,bbr", "--set", "duration=1s"),
        *("-q", "--no-plots", "-j", "1", "-o", o),
    ],
    "sweep": lambda run, o: ["sweep", "builtin:cubic-vs-bbr-lossy", "--grid", "duration=1s", "-q", "-o", o],
    "recommend": lambda run, o: [
        *("recommend", "builtin:cubic-vs-bbr-lossy", "--choose", "flows.0.cc=cubic,bbr", "--maximize", "goodput"),
        *("--set", "duration=1s", "-q", "-o", o),
    ],
    "reproduce": lambda run, o: ["reproduce", "microburst-ring", "--quick", "-q", "-o", o],
    "kernel-run": lambda run, o: ["kernel", "run", "builtin:cubic-vs-bbr-lossy", "-q", "-o", o],
    "validate": lambda run, o: ["validate", "builtin:cubic-vs-bbr-lossy", "-q", "-o", o],
    "collect": lambda run, o: _file_command("collect", run, o),
    "export-flent": lambda run, o: _file_command("flent", run, o),
    "export-iperf3": lambda run, o: _file_command("iperf3", run, o),
    "export-iperf3-all": lambda run, o: _file_command("iperf3-all", run, o),
    "export-pcap": lambda run, o: _file_command("pcap", run, o),
    "diagnose": lambda run, o: ["diagnose", _scenario_findings(), "--json", "--scenario-dir", o],
}

LONG_PATHS = {
    "PATH_MAX": ("a/" * 2100 + "x", "PATH_MAX"),  # 4201 bytes, every name short
    "NAME_MAX": ("b" * 256, "NAME_MAX"),
    "NAME_MAX-parent": ("b" * 256 + "/x", "NAME_MAX"),
}


@pytest.fixture
def nothing_runs(monkeypatch, patched_core, no_capture):
    """Whatever would run is refused: a command must refuse its -o before it starts."""
    import tcplab.kernel.run
    import tcplab.kernel.validate

    def must_not_run(*_a, **_k):
        raise AssertionError("ran before the output path was checked")

    monkeypatch.setattr(tcplab.kernel.run, "kernel_run", must_not_run)
    monkeypatch.setattr(tcplab.kernel.validate, "preflight", must_not_run)
    monkeypatch.setattr(tcplab.kernel.validate, "validate", must_not_run)
    return patched_core


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("length", sorted(LONG_PATHS))
@pytest.mark.parametrize("command", sorted(O_COMMANDS))
def test_a_path_linux_refuses_is_a_usage_error_up_front(tmp_path, monkeypatch, run_dir, nothing_runs, command, length):
    """Before: exit 1 "File name too long" (after the run), or a traceback-free but
    path-less message; the README promises exit 2, one line, nothing run, nothing written."""
    if command in ("kernel-run", "validate") and not ROOT:
        pytest.skip("kernel mode refuses non-root users before looking at -o")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    path, needle = LONG_PATHS[length]
    r = _cli(*O_COMMANDS[command](run_dir, path))
    assert_one_line_error(r, needle)
    assert len(r.output) < 600  # the path is shortened in the message
    assert _tree(work) == []
    assert nothing_runs.calls == []


@pytest.mark.parametrize("extra", [0, 1])
def test_the_longest_file_path(tmp_path, run_dir, extra):
    """A file's path may be as long as Linux takes, less what its temporary sibling
    ``.NAME.XXXXXXXX.tmp`` adds (14 bytes): 4095 - 14 bytes is written, one more byte is
    refused up front, naming the limit. A 255-byte name (NAME_MAX) is written."""
    limit = 4095 - 14
    base = str(tmp_path) + "/"
    deep = "/".join(["d" * 99] * ((limit - len(os.fsencode(base)) - 200) // 100)) + "/"
    name = "n" * (limit + extra - len(os.fsencode(base + deep)))
    target = Path(base + deep + name)
    assert len(os.fsencode(str(target))) == limit + extra and len(name) <= 241
    r = _cli("export", "flent", run_dir, "-o", target)
    if extra:
        assert_one_line_error(r, "is 4082 bytes long", "at most 4081 bytes", "PATH_MAX is 4096")
        assert not (tmp_path / ("d" * 99)).exists()
    else:
        assert r.exit_code == 0, r.output
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            assert os.stat(name, dir_fd=dir_fd).st_size > 0
        finally:
            os.close(dir_fd)
    r = _cli("export", "flent", run_dir, "-o", tmp_path / ("m" * 255))
    assert r.exit_code == 0, r.output
    assert (tmp_path / ("m" * 255)).stat().st_size > 0


# -- item 5: a full disk ---------------------------------------------------------------------


@pytest.fixture
def full_disk(tmp_path):
    """A 256 KiB tmpfs, filled to the last byte (needs root; unmounted afterwards)."""
    if not ROOT:
        pytest.skip("mounting a tmpfs needs root")
    mnt = tmp_path / "full"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        with open(mnt / "filler", "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
        if os.path.ismount(mnt):
            subprocess.run(["umount", "-l", str(mnt)], check=False)


def _only_the_filler(mnt: Path) -> None:
    assert [p.name for p in mnt.iterdir()] == ["filler"]


@pytest.mark.parametrize("kind", ["flent", "iperf3", "pcap", "collect"])
def test_disk_full_while_exporting_or_collecting(full_disk, run_dir, kind):
    """Before: "error: No space left on device" (no path), exit 1; collect left FILE.part."""
    target = full_disk / "out.file"
    r = _cli(*_file_command(kind, run_dir, target))
    assert_one_line_error(r, f"error: {target}: ", "No space left on device", code=1)
    _only_the_filler(full_disk)


@pytest.mark.parametrize("command", ["run", "compare"])
def test_disk_full_while_writing_a_run_directory(full_disk, command):
    target = full_disk / "out"
    r = _cli(*O_COMMANDS[command](None, target))
    assert_one_line_error(r, f"error: {target}", "No space left on device", code=1)
    _only_the_filler(full_disk)


def test_disk_full_while_writing_a_sweep_leaves_nothing_that_looks_complete(full_disk):
    """A sweep is filled in place (resumable); on a full disk nothing in it may look like a
    finished sweep, and the same command finishes it once there is room."""
    from tcplab.sweep import SweepError, load_sweep

    target = full_disk / "sw"
    args = ["sweep", "builtin:cubic-vs-bbr-lossy", "--grid", "flows.0.cc=cubic,bbr", "--seeds", "1"]
    args += ["--set", "duration=1s", "-q", "--no-plots", "-j", "1", "-o", target]
    r = _cli(*args)
    assert_one_line_error(r, f"error: {target}", "No space left on device", code=1)
    _no_temporaries(full_disk)
    if target.exists():
        with pytest.raises(SweepError):
            load_sweep(target)
    (full_disk / "filler").unlink()
    r = _cli(*args)
    assert r.exit_code == 0, r.output
    assert len(load_sweep(target).table) == 2


def test_disk_full_at_the_sweeps_table_leaves_no_table(tmp_path, monkeypatch):
    """Runs written, then the disk fills at the table: no sweep.parquet, not "complete"."""
    import pyarrow.parquet as pq

    from tcplab.sweep import SweepError, load_sweep

    pytest.importorskip("tcplab._core")
    real_write_table = pq.write_table

    def full_at_the_table(table, where, **kwargs):  # as pyarrow reports ENOSPC
        if Path(where).name.startswith(".sweep.parquet."):
            raise OSError("[Errno 28] Error writing bytes to file. Detail: [errno 28] No space left on device")
        return real_write_table(table, where, **kwargs)

    monkeypatch.setattr(pq, "write_table", full_at_the_table)
    target = tmp_path / "sw"
    args = ["sweep", "builtin:cubic-vs-bbr-lossy", "--grid", "flows.0.cc=cubic,bbr", "--seeds", "1"]
    args += ["--set", "duration=1s", "-q", "--no-plots", "-j", "1", "-o", target]
    assert_one_line_error(_cli(*args), f"error: {target}", "No space left on device", code=1)
    assert not (target / "sweep.parquet").exists() and not (target / "report.html").exists()
    with pytest.raises(SweepError, match="not complete"):
        load_sweep(target)
    assert len(list((target / "rows").glob("*.parquet"))) == 2  # kept: the same command resumes


# -- item 6: the user's umask ------------------------------------------------------------------

_DRIVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from typer.testing import CliRunner
    from tcplab.cli import app

    out = Path(sys.argv[1])
    scenario = out / "s.yaml"
    scenario.write_text(sys.argv[2])

    def cli(*args):
        r = CliRunner().invoke(app, [str(a) for a in args])
        assert r.exit_code == 0, (args, r.output)

    cli("run", scenario, "-o", out / "run", "-q", "--pcap", "0")
    cli("export", "pcap", out / "run", "--flow", "0", "-o", out / "x.pcap")
    cli("export", "flent", out / "run", "-o", out / "x.flent.gz")
    cli("export", "iperf3", out / "run", "--flow", "0", "-o", out / "x.json")
    cli("export", "iperf3", out / "run", "-o", out / "iperf3")
    cli("sweep", scenario, "--grid", "flows.0.cc=cubic,bbr", "--seeds", "1", "-j", "1", "-q", "-o", out / "sw")
    cli("recommend", out / "sw", "--choose", "flows.0.cc", "--maximize", "goodput", "-q", "-o", out / "rec")
    cli("collect", "--count", "1", "--interval", "0s", "-q", "-o", out / "c.tar.gz")
    cli("diagnose", sys.argv[3], "--json", "--scenario-dir", out / "sc")
    """
)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_files_get_the_users_umask(tmp_path, umask):
    """Before: sweep.parquet, sweep.json, rows/*, exported pcaps were 0600 whatever the umask."""
    pytest.importorskip("tcplab._core")
    out = tmp_path / "out"
    out.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(out), SCENARIO, str(_scenario_findings())],
        umask=umask,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    files = [p for p in out.rglob("*") if not p.is_symlink() and p != out / "s.yaml"]
    expected = {p.name for p in files}
    for must in ("sweep.parquet", "sweep.json", "report.html", "x.pcap", "0.pcap", "c.tar.gz", "recommend.json"):
        assert any(name.endswith(must) for name in expected), must
    assert any(p.parent.name == "rows" for p in files)
    wrong = {
        str(p.relative_to(out)): oct(stat.S_IMODE(p.stat().st_mode))
        for p in files
        if stat.S_IMODE(p.stat().st_mode) != (0o777 if p.is_dir() else 0o666) & ~umask
    }
    assert not wrong, (oct(umask), wrong)
