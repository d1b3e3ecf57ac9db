"""One 3D step: neighbours (topological from render.sim.nearest, or metric), the rules
over their sums, the roost, the noise and banked flight, per bird.

Each bird reads the previous state only and writes only its own rows, so every thread
count gives the same bits. `tests/naive3d.py` holds the all-pairs numpy reference.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from . import flight as _flight
from . import noise
from .forces import flocking3d, roost
from .forces.landing import LANDED, LANDING
from .jit import parallel, prange, serial
from .nearest import build_grid, nearest_visible, sample


class Neighbours3(NamedTuple):
    """How neighbours are found: topological (k nearest visible, optionally within
    max_range, m) or metric (the rules' radius)."""

    topological: bool
    k: int
    max_range: float


class Workspace3(NamedTuple):
    """Scratch and carried arrays for n birds: the neighbour lists (n, k), their counts,
    the sums (n, N_SUMS3), the candidates tested (n,), each bird's next search radius
    (n,, m) and the forward vectors (n, 3)."""

    idx: np.ndarray
    d2: np.ndarray
    count: np.ndarray
    sums: np.ndarray
    tested: np.ndarray
    radius: np.ndarray
    fwd: np.ndarray


def workspace3(n: int, k: int, radius: float) -> Workspace3:
    return Workspace3(np.empty((n, k), np.int64), np.empty((n, k)), np.zeros(n, np.int64),
                      np.empty((n, flocking3d.N_SUMS3)), np.zeros(n, np.int64),
                      np.full(n, radius), np.empty((n, 3)))


@serial
def forward(vel, out):
    """Unit forward vectors of vel (n, 3) into out; +x for a bird at rest. (Serial: a
    parallel region costs more to start than this pass over memory.)"""
    for i in range(vel.shape[0]):
        s = math.sqrt(vel[i, 0] ** 2 + vel[i, 1] ** 2 + vel[i, 2] ** 2)
        if s == 0.0:
            out[i, 0], out[i, 1], out[i, 2] = 1.0, 0.0, 0.0
        else:
            out[i, 0], out[i, 1], out[i, 2] = vel[i, 0] / s, vel[i, 1] / s, vel[i, 2] / s


def neighbourhood(pos, vel, how: Neighbours3, rules: flocking3d.Flocking3,
                  work: Workspace3, landed: np.ndarray | None = None) -> None:
    """Find the neighbours of the state (pos, vel), (n, 3): topological, into work.idx,
    d2, count (and the next radius); metric, straight into work.sums. work.fwd: the
    forward vectors. landed: (n,) bool or None; a landed bird is nobody's neighbour and
    has none (topological only: a hunt or a landing needs topological neighbours)."""
    forward(vel, work.fwd)
    if how.topological and landed is not None and landed.any():
        _among_flying(pos, how, rules, work, np.flatnonzero(~landed))
    elif how.topological:
        _topological(pos, how, rules, work)
    else:
        grid = build_grid(pos, rules.radius)
        flocking3d.metric_sums(pos, work.fwd, grid.start, grid.order, grid.cell,
                               *grid.folds, grid.side, rules, work.sums, work.tested)


def _topological(pos, how: Neighbours3, rules: flocking3d.Flocking3,
                 work: Workspace3) -> None:
    """The k nearest visible of every bird of pos into work (and the next radius)."""
    radii = sample(work.radius)
    ok = np.isfinite(radii)
    side = 0.7 * float(np.median(radii[ok])) / 1.05 if ok.any() else 1.0
    grid = build_grid(pos, side)
    max_d2 = how.max_range ** 2 if math.isfinite(how.max_range) else math.inf
    nearest_visible(work.radius, grid.start, *grid.folds, grid.side, 3, grid.order,
                    grid.pos, work.fwd, rules.cos_blind, max_d2, work.idx, work.d2,
                    work.count)
    kth = work.d2[:, -1]
    # Next step's first ball: a little beyond this k-th distance (a bird short of k
    # neighbours keeps a growing guess).
    np.copyto(work.radius, np.where(np.isfinite(kth), np.sqrt(kth) * 1.05,
                                    np.minimum(work.radius * 1.5, 1e6)))
    work.tested[:] = work.count


def _among_flying(pos, how: Neighbours3, rules: flocking3d.Flocking3, work: Workspace3,
                  flying: np.ndarray) -> None:
    """The topological search over the birds `flying` (indices) alone, scattered back into
    work; the other (landed) birds get no neighbours."""
    sub = work._replace(idx=work.idx[flying], d2=work.d2[flying],
                        count=work.count[flying], radius=work.radius[flying],
                        tested=work.tested[flying], fwd=work.fwd[flying])
    _topological(np.ascontiguousarray(pos[flying]), how, rules, sub)
    work.count[:] = 0
    work.d2[:] = np.inf
    work.idx[:] = -1
    work.tested[:] = 0
    work.idx[flying] = np.where(sub.idx >= 0, flying[np.maximum(sub.idx, 0)], -1)
    work.d2[flying], work.count[flying] = sub.d2, sub.count
    work.radius[flying], work.tested[flying] = sub.radius, sub.tested


@parallel
def move3(pos, vel, bank, fwd, lists, idx, count, sums, rules, separating, home, fl,
          noise_sd, seed, step, extra, state):
    """Every bird's step: its sums (from its neighbour lists idx, count when `lists`,
    written into sums; else read from sums), then rules + roost + noise + `extra` (n, 3)
    m/s² (render.sim.hunt3d), then flight. state (n,) int8 (forces.landing): a landing
    bird has the rules `separating` (rules without cohesion and alignment) and no roost
    steering (its extra has the funnel), a landed one stays at rest.
    Returns new (pos (n, 3), vel (n, 3), bank (n,))."""
    n = pos.shape[0]
    new_pos = np.empty((n, 3))
    new_vel = np.empty((n, 3))
    new_bank = np.empty(n)
    for i in prange(n):
        if lists:
            flocking3d.bird_list_sums(i, pos, fwd, idx, count, rules, sums[i])
        if state[i] == LANDED:
            new_pos[i, 0], new_pos[i, 1], new_pos[i, 2] = pos[i, 0], pos[i, 1], pos[i, 2]
            new_vel[i, 0], new_vel[i, 1], new_vel[i, 2] = 0.0, 0.0, 0.0
            new_bank[i] = 0.0
            continue
        f0, f1, f2 = fwd[i, 0], fwd[i, 1], fwd[i, 2]
        a0, a1, a2 = flocking3d.accel(rules if state[i] != LANDING else separating, sums[i],
                                      f0, f1, f2)
        if state[i] != LANDING:
            r0, r1, r2 = roost.accel(home, pos[i, 2], f0, f1)
            a0, a1, a2 = a0 + r0, a1 + r1, a2 + r2
        a0, a1, a2 = a0 + extra[i, 0], a1 + extra[i, 1], a2 + extra[i, 2]
        if noise_sd > 0.0:
            n0, n1, n2 = noise.normal3(seed, i, step)
            a0, a1, a2 = a0 + noise_sd * n0, a1 + noise_sd * n1, a2 + noise_sd * n2
        (new_pos[i, 0], new_pos[i, 1], new_pos[i, 2], new_vel[i, 0], new_vel[i, 1],
         new_vel[i, 2], new_bank[i]) = _flight.fly(fl, pos[i, 0], pos[i, 1], pos[i, 2],
                                                   vel[i, 0], vel[i, 1], vel[i, 2], bank[i],
                                                   a0, a1, a2)
    return new_pos, new_vel, new_bank
