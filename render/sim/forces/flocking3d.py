"""The 3D flocking rules (docs/model.md, after StarDisplay), from sums over a bird's neighbours.

The neighbour set is either metric (every visible bird within the perception radius, from
`metric_sums`) or topological (the k nearest visible, from `listed_sums` over the lists of
render.sim.nearest); both add each neighbour into the same sums (`_add`), and the rules
(`accel`) read only the sums: one implementation whatever found the neighbours.

With d the distance to neighbour j, u its unit direction (from the bird toward j), f the
bird's forward vector and g(d) = 1 inside the hard core, exp(−((d − core)/σ)²) beyond:
  separation  −w_s·mean(g·u), then its forward component doubled (the head frame);
  alignment   w_a·(mean f_j − f);
  cohesion    w_c·C²·mean((1 − g)·u), C = |mean u| the bird's centrality (0 in the
              middle of the flock, near 1 at its border).
All accelerations, m/s².
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...scene import Scene
from ..jit import inline, parallel, prange, serial

# Columns of the per-bird sums (n, N_SUMS3): the neighbour count, Σ f_j, Σ g·u, Σ (1−g)·u,
# Σ u, the nearest neighbour's distance (inf: none).
COUNT, FWD, SEP, COH, DIR, NEAREST = 0, 1, 4, 7, 10, 13
N_SUMS3 = 14


class Flocking3(NamedTuple):
    """Perception radius (m, metric only; inf when topological), cos of half the blind
    cone (1: none), the separation's hard core and σ (m), the weights (m/s²)."""

    radius: float
    cos_blind: float
    core: float
    sigma: float
    w_sep: float
    w_ali: float
    w_coh: float


def flocking3(scene: Scene) -> Flocking3:
    from ..nearest import cos_half_blind

    r = scene.rules
    radius = r.perception_radius if r.neighbours == "metric" else math.inf
    return Flocking3(radius, cos_half_blind(r.blind_angle), r.hard_core, r.separation_sigma,
                     r.separation_weight, r.alignment_weight, r.cohesion_weight)


@inline
def g_sep(p, d):
    """Separation's weight at distance d: 1 within the hard core, a Gaussian beyond."""
    if d <= p.core:
        return 1.0
    x = (d - p.core) / p.sigma
    return math.exp(-x * x)


# No neighbour yet: the sums (in the order of the columns above) zero, the nearest inf.
NONE = (0.0,) * (N_SUMS3 - 1) + (math.inf,)


@inline
def _add(p, sums, ox, oy, oz, d2, fx, fy, fz):
    """One bird's sums (a tuple in the columns' order, NONE to begin: kept in registers,
    where a row in memory was read and written back for every neighbour) with neighbour
    j added (offset o from the bird, squared distance d2, forward f_j). A coincident
    neighbour has no direction: it counts and aligns."""
    count, f0, f1, f2, s0, s1, s2, c0, c1, c2, u0, u1, u2, nearest = sums
    count += 1.0
    f0 += fx
    f1 += fy
    f2 += fz
    if d2 > 0.0:
        d = math.sqrt(d2)
        g = g_sep(p, d)
        ux, uy, uz = ox / d, oy / d, oz / d
        s0 += g * ux
        s1 += g * uy
        s2 += g * uz
        c0 += (1.0 - g) * ux
        c1 += (1.0 - g) * uy
        c2 += (1.0 - g) * uz
        u0 += ux
        u1 += uy
        u2 += uz
        if d < nearest:
            nearest = d
    return (count, f0, f1, f2, s0, s1, s2, c0, c1, c2, u0, u1, u2, nearest)


@inline
def _store(sums, row):
    for c in range(N_SUMS3):
        row[c] = sums[c]


@inline
def listed_sums(x, y, z, pos, fwd, listed, count, p, row):
    """The sums into `row` of a bird at (x, y, z) over its listed neighbours: rows
    listed[:count] of pos and fwd (n, 3), nearest first."""
    sums = NONE
    for m in range(count):
        j = listed[m]
        ox = pos[j, 0] - x
        oy = pos[j, 1] - y
        oz = pos[j, 2] - z
        sums = _add(p, sums, ox, oy, oz, ox * ox + oy * oy + oz * oz, fwd[j, 0], fwd[j, 1],
                    fwd[j, 2])
    _store(sums, row)


@serial
def _metric_bird(i, pos, fwd, start, g_order, g_cell, fx, fy, fz, side, p, row):
    """One bird's sums over every visible bird within p.radius: the 27 cells of side
    p.radius around its own (a candidate counts only in its own cell, so a fold shorter
    than three cells visits no bird twice); returns the candidates tested."""
    sums = NONE
    x, y, z = pos[i, 0], pos[i, 1], pos[i, 2]
    cx = np.int64(math.floor(x / side))
    cy = np.int64(math.floor(y / side))
    cz = np.int64(math.floor(z / side))
    r2 = p.radius * p.radius
    tested = 0
    for dz in range(-1, 2):
        for dy in range(-1, 2):
            for dx in range(-1, 2):
                tx, ty, tz = cx + dx, cy + dy, cz + dz
                b = ((tz & (fz - 1)) * fy + (ty & (fy - 1))) * fx + (tx & (fx - 1))
                for slot in range(start[b], start[b + 1]):
                    j = g_order[slot]
                    if j == i or g_cell[slot, 0] != tx or g_cell[slot, 1] != ty \
                            or g_cell[slot, 2] != tz:
                        continue
                    tested += 1
                    ox = pos[j, 0] - x
                    oy = pos[j, 1] - y
                    oz = pos[j, 2] - z
                    d2 = ox * ox + oy * oy + oz * oz
                    if d2 >= r2 or not visible(fwd, i, ox, oy, oz, d2, p.cos_blind):
                        continue
                    sums = _add(p, sums, ox, oy, oz, d2, fwd[j, 0], fwd[j, 1], fwd[j, 2])
    _store(sums, row)
    return tested


@inline
def visible(fwd, i, ox, oy, oz, d2, cos_blind):
    """Whether bird i sees a bird at offset o: outside its rear cone (as nearest.py)."""
    if cos_blind >= 1.0 or d2 <= 0.0:
        return True
    dot = ox * fwd[i, 0] + oy * fwd[i, 1] + oz * fwd[i, 2]
    return not (-dot > cos_blind * math.sqrt(d2))


@parallel
def metric_sums(pos, fwd, start, g_order, g_cell, fx, fy, fz, side, p, sums, tested):
    """Sums over each bird's metric neighbours (see `_metric_bird`) from a grid
    (nearest.build_grid) of cell side p.radius; candidates tested into tested (n,)."""
    for i in prange(pos.shape[0]):
        tested[i] = _metric_bird(i, pos, fwd, start, g_order, g_cell, fx, fy, fz, side, p,
                                 sums[i])


@serial
def accel(p, row, f0, f1, f2):
    """One bird's flocking acceleration (m/s², 3 floats) from its sums `row` and its
    forward vector f; zero without neighbours."""
    n = row[COUNT]
    if n == 0.0:
        return 0.0, 0.0, 0.0
    sx, sy, sz = -p.w_sep * row[SEP] / n, -p.w_sep * row[SEP + 1] / n, -p.w_sep * row[SEP + 2] / n
    along = sx * f0 + sy * f1 + sz * f2  # doubled: the head frame's forward weight is 2
    sx, sy, sz = sx + along * f0, sy + along * f1, sz + along * f2
    ax = p.w_ali * (row[FWD] / n - f0)
    ay = p.w_ali * (row[FWD + 1] / n - f1)
    az = p.w_ali * (row[FWD + 2] / n - f2)
    cx, cy, cz = row[DIR] / n, row[DIR + 1] / n, row[DIR + 2] / n
    c2 = cx * cx + cy * cy + cz * cz
    w = p.w_coh * c2 / n
    return (sx + ax + w * row[COH], sy + ay + w * row[COH + 1], sz + az + w * row[COH + 2])
