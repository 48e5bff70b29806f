"""The names kernel mode creates (tcplab.kernel.names): the prefix every command checks the
same way, and namespaces, devices and work files no scenario name can meet.

No namespaces are created here: the plan is pure, and the CLI tests stop before anything
would run (a bad prefix is refused first).
"""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

import tcplab
from tcplab.cli import app
from tcplab.kernel.errors import KernelError
from tcplab.kernel.options import KernelOptions
from tcplab.kernel.plan import make_plan
from test_kernel_plan import env

BAD_PREFIXES = ["../x", "a" * 40, "", "Tcplab", "a/b", "-x", "a-b"]


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


# -- item 3: one prefix check for validate, kernel run and kernel cleanup -------------------


@pytest.mark.parametrize("prefix", ["../x", "a" * 40])
def test_validate_kernel_run_and_cleanup_refuse_a_bad_prefix_alike(prefix, monkeypatch, patched_core, tmp_path):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    import tcplab.kernel.testbed as testbed

    def nothing_runs(*a, **k):
        raise AssertionError("a namespace command ran")

    monkeypatch.setattr(testbed, "list_netns", nothing_runs)
    lines = {}
    for name, args in {
        "validate": ["validate", "builtin:cubic-vs-bbr-lossy", "-o", str(tmp_path / "v"), "--prefix", prefix],
        "kernel run": ["kernel", "run", "builtin:cubic-vs-bbr-lossy", "-o", str(tmp_path / "r"), "--prefix", prefix],
        "kernel cleanup": ["kernel", "cleanup", "--prefix", prefix],
    }.items():
        r = invoke(*args)
        assert r.exit_code == 2, (name, r.output)
        assert "Traceback" not in r.output, name
        assert len(r.stderr.strip().splitlines()) == 1, (name, r.stderr)
        lines[name] = r.stderr.strip()
    assert len(set(lines.values())) == 1, lines
    assert lines["validate"] == f"error: --prefix: {prefix!r}: expected 1 to 16 of a-z and 0-9 (the namespaces are P-NODE)"
    assert patched_core.calls == []  # validate refused before simulating
    assert not (tmp_path / "v").exists() and not (tmp_path / "r").exists()


@pytest.mark.parametrize("prefix", BAD_PREFIXES)
def test_the_api_refuses_what_the_cli_refuses(prefix):
    from tcplab.kernel.names import check_prefix
    from tcplab.kernel.testbed import cleanup, cleanup_workdirs

    sc = tcplab.load_scenario("builtin:cubic-vs-bbr-lossy")
    for call in (
        lambda: check_prefix(prefix),
        lambda: make_plan(sc.to_core(), env(), KernelOptions(prefix=prefix)),
        lambda: cleanup(prefix),
        lambda: cleanup_workdirs(prefix),
    ):
        with pytest.raises(KernelError, match=r"prefix: .*: expected 1 to 16 of a-z and 0-9"):
            call()


@pytest.mark.parametrize("prefix", ["tcplab", "tlh5", "a", "x" * 16, "0a9"])
def test_good_prefixes_pass(prefix):
    from tcplab.kernel.names import check_prefix

    assert check_prefix(prefix) == prefix
