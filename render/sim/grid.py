"""Uniform grid with cell side ≥ r, built by a serial counting sort.

Birds are sorted into cell order (row-major), so birds that are neighbours in space sit
near each other in memory. The sort is stable and serial, so the order never depends on
the thread count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .jit import serial

# An open world lets birds stray arbitrarily far; cells beyond this many world-spans are
# clamped into the outermost row/column (still correct, only slower for those few birds).
_MAX_SPAN_WORLDS = 4.0


@dataclass(frozen=True)
class GridShape:
    """Cell layout for one step: origin (x0, y0), cell sides (cw, ch), counts (nx, ny)."""

    x0: float
    y0: float
    cw: float
    ch: float
    nx: int
    ny: int


def grid_shape(positions: np.ndarray, radius: float, width: float, height: float,
               wrap: bool) -> GridShape:
    """Choose cells of side ≥ radius covering the birds.

    positions: (n, 2) float64, world units. On a torus the cells tile the world exactly;
    otherwise they cover the birds' bounding box (the world may be open).
    """
    if wrap:
        nx = max(1, int(width // radius))
        ny = max(1, int(height // radius))
        return GridShape(0.0, 0.0, width / nx, height / ny, nx, ny)
    lo = positions.min(axis=0)
    hi = positions.max(axis=0)
    max_x = max(1, math.ceil(_MAX_SPAN_WORLDS * width / radius))
    max_y = max(1, math.ceil(_MAX_SPAN_WORLDS * height / radius))
    nx = min(max_x, int((hi[0] - lo[0]) // radius) + 1)
    ny = min(max_y, int((hi[1] - lo[1]) // radius) + 1)
    return GridShape(float(lo[0]), float(lo[1]), radius, radius, nx, ny)


@serial
def counting_sort(positions, x0, y0, cw, ch, nx, ny):
    """Sort birds by cell.

    Returns (order, cell_start, cell_x, cell_y): sorted slot k holds bird order[k]; birds
    of cell c = cy·nx + cx occupy slots cell_start[c] .. cell_start[c+1]; cell_x/cell_y
    give each sorted slot's cell coordinates.
    """
    n = positions.shape[0]
    cells = nx * ny
    cx = np.empty(n, np.int64)
    cy = np.empty(n, np.int64)
    cell = np.empty(n, np.int64)
    counts = np.zeros(cells + 1, np.int64)
    for i in range(n):
        x = int(math.floor((positions[i, 0] - x0) / cw))
        y = int(math.floor((positions[i, 1] - y0) / ch))
        x = min(max(x, 0), nx - 1)
        y = min(max(y, 0), ny - 1)
        cx[i] = x
        cy[i] = y
        cell[i] = y * nx + x
        counts[cell[i] + 1] += 1
    for c in range(cells):
        counts[c + 1] += counts[c]
    cell_start = counts.copy()
    order = np.empty(n, np.int64)
    cell_x = np.empty(n, np.int64)
    cell_y = np.empty(n, np.int64)
    for i in range(n):
        k = counts[cell[i]]
        counts[cell[i]] += 1
        order[k] = i
        cell_x[k] = cx[i]
        cell_y[k] = cy[i]
    return order, cell_start, cell_x, cell_y
