"""One whole simulation step in a single numba call.

At a few thousand birds the numpy around the kernels (a dozen whole-flock operations and
reorderings per step, each a pass over memory plus Python overhead) cost as much as
the neighbourhood search itself. `advance_flock` does the counting sort, the gather into
grid order, the neighbourhood, the steering, the extra forces, the steering field and
the integration in one call, per bird, with the pieces from kernels.py and forces.py.

It computes exactly what `Simulation.measure` plus the numpy forces plus `integrate`
compute, bit for bit (tests/test_step.py holds it to that composition).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import forces
from .grid import counting_sort
from .jit import inline, parallel, prange
from .kernels import (CANDIDATES, COUNT, N_COLUMNS, N_SUMS, NEAREST, OFF_X, OFF_Y, SEP_X,
                      SEP_Y, VSUM_X, VSUM_Y, integrate_bird, neighbourhood, sort_birds,
                      steer_bird)


class World(NamedTuple):
    wrap: bool
    width: float
    height: float


class Rules(NamedTuple):
    """The flocking rules; sep_power from kernels.FALLOFF_POWER, max_force inf: no clamp."""

    radius: float
    sep_radius: float
    sep_power: int
    w_sep: float
    w_ali: float
    w_coh: float
    align_difference: bool
    max_force: float


class Motion(NamedTuple):
    dt: float
    min_speed: float
    max_speed: float


class Extras(NamedTuple):
    """The optional forces of this step; a force whose flag is False is skipped.

    The hawk and attractor positions and the field's time are this step's. field_turn is
    the field's turn rate times dt: radians per unit of φ.
    """

    walls: bool
    wall_margin: float
    wall_strength: float
    attractor: bool
    attractor_x: float
    attractor_y: float
    attractor_strength: float
    attractor_radius: float
    containment: bool
    centre_x: float
    centre_y: float
    semi_x: float
    semi_y: float
    containment_strength: float
    hawk: bool
    hawk_x: float
    hawk_y: float
    hawk_radius: float
    hawk_strength: float
    field: bool
    time_s: float
    # Scalars only: numba cannot hand a tuple to a parallel loop.
    wavelength_x: float
    wavelength_y: float
    wavelength_diagonal: float
    drift_x: float
    drift_y: float
    drift_diagonal: float
    phase_x: float
    phase_y: float
    phase_diagonal: float
    field_turn: float


class Workspace(NamedTuple):
    """Scratch arrays for one flock size, reused from step to step. (Arrays this large come
    fresh from the OS on every allocation, and first touching their pages each step costs
    as much as filling them.)"""

    birds: np.ndarray  # (n, N_COLUMNS): the birds in grid order, see kernels.sort_birds
    sums: np.ndarray  # (n, N_SUMS): their neighbourhood sums, grid order
    mine: np.ndarray  # (n, N_SUMS): the same rows by bird identity


def workspace(n: int) -> Workspace:
    return Workspace(np.empty((n, N_COLUMNS)), np.empty((n, N_SUMS)), np.empty((n, N_SUMS)))


@parallel
def advance_flock(pos, vel, x0, y0, cw, ch, nx, ny, world, rules, motion, extras, work):
    """Advance the flock one step.

    pos, vel: (n, 2) float64 by bird identity; the grid (x0, y0, cw, ch, nx, ny) from
    `grid_shape`; work: a `Workspace` for n birds. Returns, all by bird identity: new pos,
    new vel (n, 2); and what the neighbourhood of the state that was read measured:
    neighbours, candidates (n,) int64, nearest (n,), inside (n,) bool (all True without
    containment).
    """
    n = pos.shape[0]
    order, cell_start, slot = counting_sort(pos, x0, y0, cw, ch, nx, ny)
    sort_birds(pos, vel, order, work.birds)
    neighbourhood(work.birds, cell_start, nx, ny, world.wrap, world.width, world.height,
                  rules.radius, rules.sep_radius, rules.sep_power, work.sums)
    # Back to identity order in a loop of its own: the CPU keeps many scattered reads in
    # flight here, and only one or two inside the long per-bird loop below.
    sums = work.mine
    for b in prange(n):
        k = slot[b]
        for c in range(N_SUMS):
            sums[b, c] = work.sums[k, c]

    # The field's turn in a loop of its own, over contiguous coordinates: without branches
    # it vectorises across birds.
    turns = np.zeros(n)
    if extras.field:
        e = extras
        sx, ox, sy, oy, sd, od = forces.field_waves(
            e.time_s, e.wavelength_x, e.wavelength_y, e.wavelength_diagonal, e.drift_x,
            e.drift_y, e.drift_diagonal, e.phase_x, e.phase_y, e.phase_diagonal)
        xs = pos[:, 0].copy()
        ys = pos[:, 1].copy()
        for b in prange(n):
            turns[b] = e.field_turn * forces.field_from_waves(xs[b], ys[b], sx, ox, sy, oy,
                                                              sd, od)

    new_pos = np.empty((n, 2))
    new_vel = np.empty((n, 2))
    neighbours = np.empty(n, np.int64)
    candidates = np.empty(n, np.int64)
    nearest = np.empty(n)
    inside = np.ones(n, np.bool_)
    for b in prange(n):
        count = sums[b, COUNT]
        x, y = pos[b, 0], pos[b, 1]
        vx, vy = vel[b, 0], vel[b, 1]
        ax, ay = steer_bird(count, sums[b, SEP_X], sums[b, SEP_Y], sums[b, VSUM_X],
                            sums[b, VSUM_Y], sums[b, OFF_X], sums[b, OFF_Y], vx, vy,
                            rules.w_sep, rules.w_ali, rules.w_coh, rules.align_difference,
                            rules.max_force)
        ex, ey, inside[b] = _extra_forces(x, y, world, extras)
        new_pos[b, 0], new_pos[b, 1], new_vel[b, 0], new_vel[b, 1] = integrate_bird(
            x, y, vx, vy, ax + ex, ay + ey, turns[b], motion.dt, motion.min_speed,
            motion.max_speed, world.wrap, world.width, world.height)
        neighbours[b] = np.int64(count)
        candidates[b] = np.int64(sums[b, CANDIDATES])
        nearest[b] = sums[b, NEAREST]
    return new_pos, new_vel, neighbours, candidates, nearest, inside


@inline
def _extra_forces(x, y, world, extras):
    """Sum of the optional forces on one bird, added in the order Simulation documents
    (walls, attractor, containment, hawk) onto 0.0; and whether it is inside the ellipse."""
    ex = ey = 0.0
    if extras.walls:
        ex += forces.wall_at(x, world.width, extras.wall_margin, extras.wall_strength)
        ey += forces.wall_at(y, world.height, extras.wall_margin, extras.wall_strength)
    if extras.attractor:
        ax, ay = forces.attractor_at(x, y, extras.attractor_x, extras.attractor_y,
                                     extras.attractor_strength, extras.attractor_radius)
        ex += ax
        ey += ay
    inside = True
    if extras.containment:
        cx, cy, inside = forces.containment_at(x, y, extras.centre_x, extras.centre_y,
                                               extras.semi_x, extras.semi_y,
                                               extras.containment_strength)
        ex += cx
        ey += cy
    if extras.hawk:
        hx, hy = forces.hawk_at(x, y, extras.hawk_x, extras.hawk_y, extras.hawk_radius,
                                extras.hawk_strength)
        ex += hx
        ey += hy
    return ex, ey, inside
