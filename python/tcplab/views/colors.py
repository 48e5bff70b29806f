"""One colour per variant, the same in every view that draws it.

The model: a *variant* is what a view draws as one line: a value of a swept parameter
(``flows.0.cc=bbr``), a setting of ``recommend`` (one value per ``--choose`` parameter), a
variant of ``compare``. Its colour is matplotlib's default cycle (``C0`` ... ``C9``, the
tab10 palette) at the variant's position in the *plan's* order (the order the values were
given in, as the sweep enumerates them), never in a view's own order (a ranking, the order
rows happen to come in). So the sweep's figures and ``recommend``'s draw ``bbr`` in the same
colour, whichever ranks first.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

__all__ = ["variant_colors", "PALETTE"]

#: matplotlib's default colour cycle (tab10), by name.
PALETTE = tuple(f"C{i}" for i in range(10))


def variant_colors(variants_in_plan_order: Iterable[Hashable]) -> dict[Hashable, str]:
    """``{variant: colour}``: the k-th distinct variant in plan order gets ``C{k mod 10}``."""
    return {v: PALETTE[i % len(PALETTE)] for i, v in enumerate(dict.fromkeys(variants_in_plan_order))}
