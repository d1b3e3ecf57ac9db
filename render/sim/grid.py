"""Uniform grid with cell side ≥ r, built by a serial counting sort.

Birds are sorted into cell order (row-major), so birds that are neighbours in space sit
near each other in memory. The sort is stable and serial, so the order never depends on
the thread count.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .jit import serial

# An open world lets birds stray arbitrarily far; cells beyond this many world-spans are
# clamped into the outermost row/column (still correct, only slower for those few birds).
_MAX_SPAN_WORLDS = 4.0


def max_cells(birds: int) -> int:
    """Cells a grid of `birds` stops at (about). Each cell costs two int64 and a turn of the
    serial prefix sum every step, and a perception radius tiny next to the world would ask
    for more cells than memory holds; beyond a few per bird they are nearly all empty.
    Larger cells stay correct (side ≥ r), they only hold more candidates."""
    return 4 * birds + 4096


class GridShape(NamedTuple):
    """Cell layout for one step: origin (x0, y0), cell sides (cw, ch), counts (nx, ny).
    (A NamedTuple: the numba step reads it as it is.)"""

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
    limit = max_cells(len(positions))
    if wrap:
        side = _cell_side(radius, width, height, limit)
        nx = max(1, int(width // side))
        ny = max(1, int(height // side))
        return GridShape(0.0, 0.0, width / nx, height / ny, nx, ny)
    lo, hi = bounds(positions)
    span_x = min(float(hi[0] - lo[0]), _MAX_SPAN_WORLDS * width)
    span_y = min(float(hi[1] - lo[1]), _MAX_SPAN_WORLDS * height)
    side = _cell_side(radius, span_x, span_y, limit)
    nx = int(span_x // side) + 1
    ny = int(span_y // side) + 1
    return GridShape(float(lo[0]), float(lo[1]), side, side, nx, ny)


def _cell_side(radius: float, span_x: float, span_y: float, limit: int) -> float:
    """`radius`, or larger where cells of side `radius` over the span would number more
    than `limit` (their count may even overflow to inf): then about `limit` cells, or up
    to 3x that for an open world, whose cells over the span are whole."""
    if (span_x / radius + 1) * (span_y / radius + 1) <= limit:
        return radius
    return max(radius, math.sqrt(span_x * span_y / limit), max(span_x, span_y) / limit)


@serial
def bounds(positions):
    """(min, max) over the birds of each coordinate, two (2,) arrays. (numpy's min(axis=0)
    on an (n, 2) array walks it two elements at a time: 25x slower. The running extremes
    are scalars, not array elements, so they stay in registers.)"""
    lo_x = hi_x = positions[0, 0]
    lo_y = hi_y = positions[0, 1]
    for i in range(1, positions.shape[0]):
        x = positions[i, 0]
        y = positions[i, 1]
        lo_x = min(lo_x, x)
        hi_x = max(hi_x, x)
        lo_y = min(lo_y, y)
        hi_y = max(hi_y, y)
    return np.array([lo_x, lo_y]), np.array([hi_x, hi_y])


@serial
def counting_sort(positions, x0, y0, cw, ch, nx, ny):
    """Sort birds by cell, stably (birds of a cell stay in identity order).

    Returns (order, cell_start, slot): sorted slot k holds bird order[k], and bird i sits
    in slot[i]; birds of cell c = cy·nx + cx occupy slots cell_start[c] .. cell_start[c+1]
    (nx·ny + 1,).
    """
    n = positions.shape[0]
    cell = np.empty(n, np.int64)
    counts = np.zeros(nx * ny + 1, np.int64)
    for i in range(n):
        x = int(math.floor((positions[i, 0] - x0) / cw))
        y = int(math.floor((positions[i, 1] - y0) / ch))
        cell[i] = min(max(y, 0), ny - 1) * nx + min(max(x, 0), nx - 1)
        counts[cell[i] + 1] += 1
    for c in range(nx * ny):
        counts[c + 1] += counts[c]
    cell_start = counts.copy()
    order = np.empty(n, np.int64)
    slot = np.empty(n, np.int64)
    for i in range(n):
        slot[i] = counts[cell[i]]
        order[slot[i]] = i
        counts[cell[i]] += 1
    return order, cell_start, slot
