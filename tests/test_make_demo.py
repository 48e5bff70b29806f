"""`make demo` is the one-comparison tour: running it a second time must replace its own
output, as `make reproduce` does (issue 21 item 15), not stop at "exists".

The test runs the Makefile's own `demo` recipe with GNU make, in a scratch directory that
stands in for the clone: an up-to-date set-up stamp (so make installs nothing) and a
`.venv/bin/tcplab` that runs this checkout's tcplab with a short duration and no plots (the
recipe's command line is the Makefile's, unchanged). The first `make demo` writes
out/demo; the second must succeed and leave a complete comparison there.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import compiled_engine

REPO = Path(__file__).resolve().parents[1]


def _stand_in_clone(tmp: Path) -> None:
    """pyproject.toml and Cargo.toml (prerequisites of the stamp), and a .venv whose stamp is
    newer than them and whose bin/tcplab is this checkout's CLI."""
    earlier = time.time() - 3600
    for name in ("pyproject.toml", "Cargo.toml"):
        (tmp / name).write_text("", encoding="utf-8")
        os.utime(tmp / name, (earlier, earlier))
    for name in ("crates", "python"):  # the stamp's other prerequisites are found in these
        (tmp / name).mkdir()
    bin_dir = tmp / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    python_dir = REPO / "python"
    wrapper = bin_dir / "tcplab"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="{python_dir}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" '
        '-c "from tcplab.cli import main; main()" "$@" --set duration=2s --no-plots --quiet\n',
        encoding="utf-8",
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    stamp = tmp / ".venv" / ".installed"
    stamp.touch()


@pytest.mark.skipif(shutil.which("make") is None, reason="GNU make is not installed")
def test_make_demo_twice_replaces_its_own_output(tmp_path: Path) -> None:
    compiled_engine()
    _stand_in_clone(tmp_path)
    make = ["make", "--no-print-directory", "-f", str(REPO / "Makefile"), "demo"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    first = subprocess.run(make, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr
    report = tmp_path / "out" / "demo" / "report.html"
    assert report.is_file()
    (tmp_path / "out" / "demo" / "compare.json").write_text("{}", encoding="utf-8")  # mark the old output
    second = subprocess.run(make, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert second.returncode == 0, second.stderr
    assert "exists" not in second.stderr
    # the second run's comparison replaced the first's (not a half-written mix)
    data = json.loads((tmp_path / "out" / "demo" / "compare.json").read_text(encoding="utf-8"))
    assert [v["label"] for v in data["variants"]] == ["cubic", "bbr"]
    assert report.is_file()
