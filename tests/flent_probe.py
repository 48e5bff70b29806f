"""Run flent's own CLI (``flent.run_flent``, what ``flent ARGS`` runs) and record what its
plotters draw, for tests of run.flent.gz: ``python flent_probe.py RECORD.jsonl ARGS...``.

Two observations are appended to RECORD.jsonl, one JSON object a line (a plot drawn in a
forked worker appends its own lines):

* ``{"series": NAME, "label": LABEL, "cutoff": [START, END] | null, "points": N}`` for every
  series a plotter takes from the data file (``Plotter.get_series``, after flent's
  ``--delay`` cutoff): N is the number of finite values it plots (a CDF's samples, a box's);
* ``{"legend": [TEXT, ...]}`` for every figure flent saves: the texts of its legends.

Nothing else of flent changes: its defaults (``--delay 5``, the test's own plot configs) apply.
"""

from __future__ import annotations

import json
import sys


def _record(path: str, obj: dict) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(obj) + "\n")


def main() -> int:
    record, args = sys.argv[1], sys.argv[2:]
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from flent import plotters, run_flent
    from matplotlib.figure import Figure

    get_series = plotters.Plotter.get_series

    def observed_get_series(self, series, results, config, *a, **k):
        data = get_series(self, series, results, config, *a, **k)
        values = np.asarray(data[1], dtype=float) if len(data) else np.zeros(0)
        _record(
            record,
            {
                "series": series.get("data"),
                "label": series.get("label"),
                "cutoff": list(self.data_cutoff or config.get("cutoff") or ()) or None,
                "points": int(np.isfinite(values).sum()),
            },
        )
        return data

    savefig = Figure.savefig

    def observed_savefig(self, *a, **k):
        legends = [*self.legends, *(ax.get_legend() for ax in self.axes)]
        texts = [t.get_text() for leg in legends if leg is not None for t in leg.get_texts()]
        _record(record, {"legend": texts})
        return savefig(self, *a, **k)

    plotters.Plotter.get_series = observed_get_series
    Figure.savefig = observed_savefig
    sys.argv = ["flent", *args]
    return run_flent() or 0


if __name__ == "__main__":
    sys.exit(main())
