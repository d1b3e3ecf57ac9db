"""The three flocking rules (docs/model.md): from the sums the neighbour search adds up over a
bird's neighbours (render.sim.neighbours), the acceleration a = w_s·sep + w_a·ali +
w_c·coh, each weighted rule clamped to max_force on its own."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...scene import Scene
from ..jit import parallel, prange, serial
from ..neighbours import FALLOFF_POWER


class Flocking(NamedTuple):
    """Perception and separation radii (world units); sep_power from
    neighbours.FALLOFF_POWER; the weights; align_difference: alignment is the mean
    neighbour velocity minus the bird's own; max_force inf: no clamp."""

    radius: float
    sep_radius: float
    sep_power: int
    w_sep: float
    w_ali: float
    w_coh: float
    align_difference: bool
    max_force: float


def flocking(scene: Scene) -> Flocking:
    rules = scene.rules
    return Flocking(rules.perception_radius, rules.separation_radius,
                    FALLOFF_POWER[rules.falloff], rules.separation_weight,
                    rules.alignment_weight, rules.cohesion_weight,
                    rules.alignment == "difference",
                    rules.max_force if rules.max_force is not None else math.inf)


@serial
def _clamp(x, y, limit):
    """(x, y) scaled down to length `limit` when longer. A select, not a branch (which
    half the birds would mispredict); ×1.0 leaves the others' bits as they were."""
    length = math.sqrt(x * x + y * y)
    shrink = limit / length
    s = shrink if length > limit else 1.0
    return x * s, y * s


@serial
def accel(p, k, sep_x, sep_y, vsum_x, vsum_y, off_x, off_y, vx, vy):
    """One bird's flocking acceleration from its `k` neighbours' sums (see `steer`)."""
    if k == 0:
        return 0.0, 0.0
    ax, ay = _clamp(p.w_sep * sep_x, p.w_sep * sep_y, p.max_force)
    mvx = vsum_x / k
    mvy = vsum_y / k
    if p.align_difference:
        mvx -= vx
        mvy -= vy
    bx, by = _clamp(p.w_ali * mvx, p.w_ali * mvy, p.max_force)
    cx, cy = _clamp(p.w_coh * off_x / k, p.w_coh * off_y / k, p.max_force)
    return ax + bx + cx, ay + by + cy


@parallel
def steer(count, sep, vsum, offsum, vel, p):
    """Flocking acceleration (n, 2) from the neighbour sums (by bird: count (n,), sep,
    vsum, offsum and the birds' own velocities vel (n, 2)). Birds without neighbours get
    zero."""
    n = vel.shape[0]
    acc = np.zeros((n, 2))
    for i in prange(n):
        acc[i, 0], acc[i, 1] = accel(p, count[i], sep[i, 0], sep[i, 1], vsum[i, 0],
                                     vsum[i, 1], offsum[i, 0], offsum[i, 1], vel[i, 0],
                                     vel[i, 1])
    return acc
