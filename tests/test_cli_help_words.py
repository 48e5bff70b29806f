"""`tcplab --help` (and each group's) lists every command with a description that fits on
its line at 80 columns, never cut at "..." (issue 21 item 17), and names the index where
`make reproduce` writes it."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

_CLI = "import sys; from tcplab.cli import main; sys.argv = ['tcplab', *sys.argv[1:]]; main()"


def _help(*group: str) -> str:
    env = dict(os.environ, COLUMNS="80", TERM="dumb")
    p = subprocess.run(
        [sys.executable, "-c", _CLI, *group, "--help"], capture_output=True, text=True, env=env, timeout=60
    )
    assert p.returncode == 0, p.stderr
    return p.stdout


def _commands(text: str) -> list[str]:
    """The lines of the Commands section."""
    section = text.split("Commands:", 1)[1]
    lines = []
    for line in section.splitlines()[1:]:
        if not line.strip():
            break
        lines.append(line)
    return lines


@pytest.mark.parametrize("group", [(), ("kernel",), ("export",)])
def test_every_command_description_is_whole_on_one_line(group):
    lines = _commands(_help(*group))
    assert lines
    for line in lines:
        assert len(line) <= 80, line
        assert not line.rstrip().endswith("..."), line
        # one line per command: "  NAME  description"
        assert re.match(r"^  [a-z0-9-]+ {2,}\S", line), line


def test_help_names_the_index_make_reproduce_writes():
    text = " ".join(_help().split())
    assert "out/reproduce/index.html" in text
    assert "reproduce-quick/index.html" not in text
