"""One whole simulation step in a single numba call.

At a few thousand birds the numpy around the kernels (a dozen whole-flock operations and
reorderings per step, each a pass over memory plus Python overhead) cost as much as
the neighbourhood search itself. `advance_flock` does the counting sort, the gather into
grid order, the neighbourhood, the flocking rules, the pushes, the steering field and the
integration in one call, per bird, with the pieces from neighbours.py, forces/ and
motion.py.

It computes exactly what `Simulation.measure` plus each force's `accel` plus
`motion.integrate` compute, bit for bit (tests/test_step.py holds it to that composition).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import forces as _forces
from .forces import field, flocking
from .grid import counting_sort
from .jit import parallel, prange
from .motion import integrate_bird
from .neighbours import (CANDIDATES, COUNT, N_COLUMNS, N_SUMS, NEAREST, OFF_X, OFF_Y,
                         SEP_X, SEP_Y, VSUM_X, VSUM_Y, neighbourhood, sort_birds)


class Workspace(NamedTuple):
    """Scratch arrays for one flock size, reused from step to step. (Arrays this large come
    fresh from the OS on every allocation, and first touching their pages each step costs
    as much as filling them.)"""

    birds: np.ndarray  # (n, N_COLUMNS): the birds in grid order, see neighbours.sort_birds
    sums: np.ndarray  # (n, N_SUMS): their neighbourhood sums, grid order
    mine: np.ndarray  # (n, N_SUMS): the same rows by bird identity


def workspace(n: int) -> Workspace:
    return Workspace(np.empty((n, N_COLUMNS)), np.empty((n, N_SUMS)), np.empty((n, N_SUMS)))


@parallel
def advance_flock(pos, vel, grid, world, motion, forces, work):
    """Advance the flock one step.

    pos, vel: (n, 2) float64 by bird identity; grid: the `GridShape` of pos; world,
    motion: see motion.py; forces: this step's `forces.Forces`; work: a `Workspace` for n
    birds. Returns, all by bird identity: new pos, new vel (n, 2); and what the
    neighbourhood of the state that was read measured: neighbours, candidates (n,) int64,
    nearest (n,), inside (n,) bool (all True without containment).
    """
    n = pos.shape[0]
    rules = forces.flocking
    order, cell_start, slot = counting_sort(pos, grid.x0, grid.y0, grid.cw, grid.ch,
                                            grid.nx, grid.ny)
    sort_birds(pos, vel, order, work.birds)
    neighbourhood(work.birds, cell_start, grid.nx, grid.ny, world.wrap, world.width,
                  world.height, rules.radius, rules.sep_radius, rules.sep_power, work.sums)
    # Back to identity order in a loop of its own: the CPU keeps many scattered reads in
    # flight here, and only one or two inside the long per-bird loop below.
    sums = work.mine
    for b in prange(n):
        k = slot[b]
        for c in range(N_SUMS):
            sums[b, c] = work.sums[k, c]
    turns = field.turns(pos, forces.field)
    return _move(pos, vel, sums, turns, world, motion, forces.flocking, forces.walls,
                 forces.attractor, forces.containment, forces.hawk)


def advance_listed(pos, vel, sums, world, motion, forces):
    """`advance_flock` from neighbour sums found otherwise (listed.py: topological, or
    through a blind cone), sums (n, N_SUMS) by bird identity: the same rules, pushes and
    integration."""
    turns = field.turns(pos, forces.field)
    return _move(pos, vel, sums, turns, world, motion, forces.flocking, forces.walls,
                 forces.attractor, forces.containment, forces.hawk)


@parallel
def _move(pos, vel, sums, turns, world, motion, rules, w, a, c, h):
    """The rest of `advance_flock`, per bird: the flocking rules from the neighbour sums
    (n, N_SUMS) by bird, the pushes, the integration with the field's turns (n,).
    (Each force's parameters are an argument of their own: a parallel loop can only be
    handed tuples the function was given.)"""
    n = pos.shape[0]
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
        ax, ay = flocking.accel(rules, count, sums[b, SEP_X], sums[b, SEP_Y],
                                sums[b, VSUM_X], sums[b, VSUM_Y], sums[b, OFF_X],
                                sums[b, OFF_Y], vx, vy)
        ex, ey, inside[b] = _forces.pushes(x, y, w, a, c, h)
        new_pos[b, 0], new_pos[b, 1], new_vel[b, 0], new_vel[b, 1] = integrate_bird(
            world, motion, x, y, vx, vy, ax + ex, ay + ey, turns[b])
        neighbours[b] = np.int64(count)
        candidates[b] = np.int64(sums[b, CANDIDATES])
        nearest[b] = sums[b, NEAREST]
    return new_pos, new_vel, neighbours, candidates, nearest, inside
