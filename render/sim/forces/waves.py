"""Agitation waves (docs/model.md, the hunt): zigs, and the copying that spreads them.

A zig is a quick roll sideways and back: for `zig_steps` steps a bird is steered along
its horizontal left (side +1) or right (−1) by zig·((1 − turn)·sin(2π e / zig_steps) +
turn·sin(π e / zig_steps)), e the steps since it began; banked flight turns the first
part into a bank one way and then the other, which leaves the heading as it was, and
the second into a bank one way and back, which leaves the bird turned (by about
zig·zig_time·2/π of sideways speed), at the hunt's `zig_roll` rate where it sets one
(`rolling`). A bird
begins a zig when the hawk is within the startle range (turning away from it), or when a
bird among its k nearest began one exactly `reaction` steps ago (copying that bird's
side). For `refractory` steps after it began one it does not begin another, so a wave
moves on and does not echo. Each zig also carries its
origin, the step the hawk began the zig it was copied from, so a wave's speed is measured
from its own start (a wave the hawk's pursuit began is still crossing the flock when a
dive starts the next). Each bird reads the previous step's zig starts and writes only
its own, so the waves are the same for any thread count.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ...scene import Scene
from ..jit import inline, prange, sized

NEVER = -(1 << 62)  # the zig start of a bird that has never zigged


class Waves(NamedTuple):
    """Steps: reaction, zig length, refractory (≥ the zig); the zig's acceleration
    (m/s²); the startle range² (m²); the share of the zig that turns (hunt.zig_turn);
    the hawk (out, x, y, z, m) this step; the
    zigging birds' roll rate (1/s, 0: the flight's own)."""

    active: bool
    reaction: int
    zig_steps: int
    refractory: int
    zig: float
    range2: float
    turn: float = 0.0
    out: bool = False
    x: float = 0.0
    y: float = 0.0
    z: float = 0.0
    roll: float = 0.0


def waves(scene: Scene) -> Waves:
    h, dt = scene.hawk, scene.scene.dt
    if h is None or scene.dimensions != 3 or h.mode != "hunt":
        return Waves(False, 1, 1, 1, 0.0, 0.0)
    zig_steps = max(1, round(h.zig_time / dt))
    return Waves(True, max(1, math.ceil(h.reaction_time / dt - 1e-9)), zig_steps,
                 max(zig_steps, round(h.refractory / dt)), h.zig, h.radius ** 2,
                 h.zig_turn, roll=h.zig_roll)


@sized("pos")
def begin(p, step, pos, fwd, idx, count, start, side, origin, new_start, new_side,
          new_origin):
    """Each bird's zig start (step, int64), side (±1) and origin (the step the hawk began
    the zig it copied, int64) after `step`, from the previous ones (start, side, origin
    (n,)), into new_start, new_side, new_origin: see the module's rule. idx, count: the k
    nearest (nearest first) of render.sim.nearest."""
    for i in prange(pos.shape[0]):
        new_start[i], new_side[i], new_origin[i] = start[i], side[i], origin[i]
        if step - start[i] < p.refractory:
            continue
        if p.out:
            ox, oy, oz = pos[i, 0] - p.x, pos[i, 1] - p.y, pos[i, 2] - p.z
            if ox * ox + oy * oy + oz * oz < p.range2:
                new_start[i], new_origin[i] = step, step
                # Away from the hawk: the side its offset from the hawk lies on.
                new_side[i] = 1.0 if -fwd[i, 1] * ox + fwd[i, 0] * oy >= 0.0 else -1.0
                continue
        for m in range(count[i]):
            j = idx[i, m]
            if step - start[j] == p.reaction:
                new_start[i], new_side[i], new_origin[i] = step, side[j], origin[j]
                break


@inline
def rolling(p, step, start):
    """The roll rate (1/s) of a bird whose zig began at `start`: the hunt's while it
    zigs, else 0 (the flight's own rates)."""
    e = step - start
    return p.roll if 0 <= e < p.zig_steps else 0.0


@inline
def accel(p, step, start, side, f0, f1):
    """A bird's zig steering (m/s², 3 floats) at `step`, from its zig start and side and
    its forward vector's horizontal part (f0, f1)."""
    e = step - start
    if e < 0 or e >= p.zig_steps:
        return 0.0, 0.0, 0.0
    h = math.sqrt(f0 * f0 + f1 * f1)
    if h == 0.0:
        return 0.0, 0.0, 0.0
    phase = math.pi * e / p.zig_steps
    wave = math.sin(2.0 * phase)
    if p.turn > 0.0:  # the turning part's sine only where it has a share
        wave = (1.0 - p.turn) * wave + p.turn * math.sin(phase)
    a = p.zig * side * wave / h
    return -f1 * a, f0 * a, 0.0


def fresh(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start (n,) int64, side (n,) float64, origin (n,) int64) of birds that have never
    zigged."""
    return np.full(n, NEVER, np.int64), np.ones(n), np.full(n, NEVER, np.int64)
