"""2D neighbour sums from neighbour lists: topological neighbours (render.sim.nearest), or
metric neighbours seen through a blind cone (`metric_lists`). The sums have the columns
of the metric grid search (neighbours.py), so the 2D rules (forces/flocking.py), the
pushes and the integration stay one implementation whatever found the neighbours.

Bird i's neighbours are idx[first[i] : first[i] + count[i]]. Open worlds only: neither
search wraps around a torus.
"""

from __future__ import annotations

import math

import numpy as np

from .jit import parallel, prange, serial
from ..scene import Scene
from .nearest import build_grid, cell_side, cos_half_blind, k_nearest_visible
from .neighbours import (CANDIDATES, COUNT, N_SUMS, NEAREST, OFF_X, OFF_Y, SEP_X, SEP_Y,
                         VSUM_X, VSUM_Y)


def unit_rows(vel: np.ndarray) -> np.ndarray:
    """(n, d) unit vectors of the rows of vel, C-contiguous; zero for a zero row."""
    speed = np.sqrt((vel * vel).sum(axis=1))
    out = np.zeros_like(vel)
    moving = speed > 0
    out[moving] = vel[moving] / speed[moving, None]
    return out


@parallel
def list_sums2(pos, vel, idx, first, count, tested, sep_radius, sep_power, sums):
    """Per bird, by identity, into sums (n, N_SUMS): as neighbours.neighbourhood, over
    the listed neighbours (nearest first); CANDIDATES from tested (n,)."""
    for i in prange(pos.shape[0]):
        row = sums[i]
        for c in range(N_SUMS):
            row[c] = 0.0
        row[NEAREST] = math.inf
        s2 = sep_radius * sep_radius
        for m in range(first[i], first[i] + count[i]):
            j = idx[m]
            dx = pos[j, 0] - pos[i, 0]
            dy = pos[j, 1] - pos[i, 1]
            d2 = dx * dx + dy * dy
            row[COUNT] += 1.0
            row[VSUM_X] += vel[j, 0]
            row[VSUM_Y] += vel[j, 1]
            row[OFF_X] += dx
            row[OFF_Y] += dy
            row[NEAREST] = min(row[NEAREST], math.sqrt(d2))
            if 0.0 < d2 < s2:
                d = math.sqrt(d2)
                w = 1.0 / d if sep_power == 0 else (1.0 / d2 if sep_power == 1
                                                     else 1.0 / (d2 * d))
                row[SEP_X] -= dx * w
                row[SEP_Y] -= dy * w
        row[CANDIDATES] = float(tested[i])


@serial
def _visible_in_ball(i, pos, fwd, start, g_order, g_cell, fx, fy, side, r2, cos_blind,
                     out, at):
    """Bird i's visible birds within sqrt(r2), from the 3x3 cells of side sqrt(r2) around
    its own, written from out[at] (when out is long enough); returns (how many, tested)."""
    cx = np.int64(math.floor(pos[i, 0] / side))
    cy = np.int64(math.floor(pos[i, 1] / side))
    found = tested = 0
    for dy in range(-1, 2):
        for dx in range(-1, 2):
            tx, ty = cx + dx, cy + dy
            b = (ty & (fy - 1)) * fx + (tx & (fx - 1))
            for slot in range(start[b], start[b + 1]):
                j = g_order[slot]
                if j == i or g_cell[slot, 0] != tx or g_cell[slot, 1] != ty:
                    continue
                tested += 1
                ox = pos[j, 0] - pos[i, 0]
                oy = pos[j, 1] - pos[i, 1]
                d2 = ox * ox + oy * oy
                if d2 >= r2:
                    continue
                if cos_blind < 1.0 and d2 > 0.0 and \
                        -(ox * fwd[i, 0] + oy * fwd[i, 1]) > cos_blind * math.sqrt(d2):
                    continue
                if at + found < out.shape[0]:
                    out[at + found] = j
                found += 1
    return found, tested


@parallel
def _count_pass(pos, fwd, start, g_order, g_cell, fx, fy, side, r2, cos_blind, count,
                tested):
    none = np.empty(0, np.int64)
    for i in prange(pos.shape[0]):
        count[i], tested[i] = _visible_in_ball(i, pos, fwd, start, g_order, g_cell, fx, fy,
                                               side, r2, cos_blind, none, 0)


@parallel
def _fill_pass(pos, fwd, start, g_order, g_cell, fx, fy, side, r2, cos_blind, first, out):
    for i in prange(pos.shape[0]):
        _visible_in_ball(i, pos, fwd, start, g_order, g_cell, fx, fy, side, r2, cos_blind,
                         out[first[i]:], 0)


def metric_lists(pos: np.ndarray, fwd: np.ndarray, radius: float, cos_blind: float):
    """Every bird's visible birds within `radius` (2D, open world), in grid order:
    (idx, first, count, tested), see the module docstring. Two passes: count, then fill."""
    n = len(pos)
    grid = build_grid(pos, radius)
    fx, fy, _ = grid.folds
    count = np.empty(n, np.int64)
    tested = np.empty(n, np.int64)
    args = (pos, fwd, grid.start, grid.order, grid.cell, fx, fy, grid.side, radius * radius,
            cos_blind)
    _count_pass(*args, count, tested)
    first = np.zeros(n, np.int64)
    np.cumsum(count[:-1], out=first[1:])
    idx = np.empty(int(count.sum()), np.int64)
    _fill_pass(*args, first, idx)
    return idx, first, count, tested


class ListedNeighbours:
    """2D neighbours found as lists (topological, or metric through a blind cone): their
    sums in the metric search's columns, for the same rules. k (0: metric), max_range
    (topological, world units), the blind cone's aperture (degrees)."""

    def __init__(self, k: int, max_range: float, blind_angle: float):
        self.k, self.max_range, self.blind_angle = k, max_range, blind_angle
        self.radius: np.ndarray | None = None  # each bird's next kNN ball, world units

    def sums(self, pos: np.ndarray, vel: np.ndarray, rules) -> np.ndarray:
        n = len(pos)
        fwd = unit_rows(vel)
        if self.k:
            if self.radius is None:
                self.radius = np.full(n, rules.radius)
            side = cell_side(self.radius)
            j, d2, count = k_nearest_visible(pos, fwd, self.k, radius=self.radius,
                                             side=side, max_range=self.max_range,
                                             blind_angle=self.blind_angle)
            kth = d2[:, -1]
            self.radius = np.where(np.isfinite(kth), np.sqrt(kth) * 1.05,
                                   np.minimum(self.radius * 1.5, 1e9))
            idx, first, tested = j.ravel(), self.k * np.arange(n), count
        else:
            idx, first, count, tested = metric_lists(pos, fwd, rules.radius,
                                                     cos_half_blind(self.blind_angle))
        out = np.empty((n, N_SUMS))
        list_sums2(pos, vel, idx, first, count, tested, rules.sep_radius, rules.sep_power,
                   out)
        return out


def listed_neighbours(scene: Scene) -> ListedNeighbours | None:
    """How a 2D scene's neighbours are listed, or None: metric without a blind cone, the
    grid search of neighbours.py."""
    r = scene.rules
    if r.neighbours == "metric" and r.blind_angle == 0.0:
        return None
    return ListedNeighbours(r.topological_count if r.neighbours == "topological" else 0,
                            r.max_range if r.max_range is not None else math.inf,
                            r.blind_angle)
