"""``python -m tcplab.kernel.delayline_main --tun NAME:DELAY_NS ...``: the delay line of
kernel mode, run from the compiled module that ``pip install`` ships.

The delay line (crates/tcplab-delayline; model and loop in :mod:`tcplab.kernel.delayline`)
is linked into ``tcplab._core`` as ``delayline_main(argv)``, so an installed tcplab needs
no separate executable: :class:`~tcplab.kernel.delayline.DelayLine` starts this module as
a process of its own. It imports nothing but the compiled module (no pandas: the line
starts in tens of ms and stays small), hands it the command line, and exits with its
status. The options, ``ready`` on stdout, the stats file and SIGTERM behave as the
standalone ``tcplab-delayline`` binary's (``--help``): the compiled code pins, schedules
and names the thread, and takes SIGTERM/SIGINT through a signalfd, with the GIL released.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Runs the delay line with ``argv`` (default: this process's arguments) and returns
    its exit status; 1 with one line on stderr when the compiled module lacks it."""
    try:
        from tcplab._core import delayline_main  # type: ignore[attr-defined]
    except ImportError as e:
        print(f"tcplab-delayline: the compiled module tcplab._core has no delay line ({e})", file=sys.stderr)
        return 1
    return int(delayline_main(list(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    sys.exit(main())
