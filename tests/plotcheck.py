"""A check that a written plot is a real picture, not just a PNG header."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def assert_plot(path: Path, *, min_width: int = 400, min_height: int = 250) -> None:
    """``path`` decodes as an image of at least the given size, with drawn content.

    matplotlib's own decoder reads it (a truncated or corrupt file raises); the figure must
    not be blank: its pixels vary (std > 0.05 on a 0..1 scale), more than 1 % of them are
    not background white, and some are coloured (the data lines), not only grey axes.
    """
    import matplotlib.image

    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[2] in (3, 4), f"{path.name}: not an RGB(A) image: {image.shape}"
    height, width = image.shape[:2]
    assert width >= min_width and height >= min_height, f"{path.name}: {width}x{height} px"
    rgb = image[..., :3].astype(np.float64)
    assert rgb.std() > 0.05, f"{path.name}: nearly uniform (std {rgb.std():.3f})"
    not_white = (rgb < 0.95).any(axis=2)
    assert not_white.mean() > 0.01, f"{path.name}: {100 * not_white.mean():.2f} % drawn"
    coloured = (rgb.max(axis=2) - rgb.min(axis=2)) > 0.25
    assert coloured.sum() > 100, f"{path.name}: only {int(coloured.sum())} coloured pixels (no data drawn?)"
