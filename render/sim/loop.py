"""Seamless loops: over the clip's first frames the flock dissolves, bird by bird, from the
state just after the clip's end into the state at its start, so the last frame flows into
the first.

A pixel cross-dissolve of two flocks shows both at once: a ghosted double flock with twice
the ink. Gliding paired birds between the two states fares no better: the mean of two
unrelated positions contracts the flock and thins the ink mid-way. Here each bird is drawn
once, from the tail's state until its own moment in the crossfade (drawn once from the
seed, eased so few birds switch at either end), then from the clip's: the ink stays as it
is, and every frame differs from the one before by a few dozen birds.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from .simulate import Frame, Simulation, frames

# Child of the scene's seed for the loop's switching moments (0–2 are flock, accent, field).
STREAM_LOOP = 3


def switch_moments(seed: int, count: int) -> np.ndarray:
    """When each bird switches, in [0, 1) of the crossfade, eased (smoothstep's inverse
    spreads switches toward the middle). (n,)."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed).spawn(
        STREAM_LOOP + 1)[STREAM_LOOP]))
    u = rng.random(count)
    return 0.5 - np.sin(np.arcsin(1.0 - 2.0 * u) / 3.0)


def looped(scene, head: Iterator[Frame], count: int, crossfade: int) -> Iterator[Frame]:
    """The frames of `head` (frames 0..count−1), the first `crossfade` of them taking each
    bird from the tail (frames count..count+crossfade−1 of a second run of the same scene)
    until that bird's switching moment."""
    tail_sim = Simulation(scene)
    tail = [(f.positions.copy(), f.velocities.copy(), f.snapshot.neighbours.copy())
            for f in frames(tail_sim, scene.output.fps, crossfade, first=count)]
    moment = switch_moments(scene.scene.seed, scene.count)
    for frame in head:
        i = frame.index
        if i >= crossfade:
            yield frame
            continue
        t_pos, t_vel, t_nb = tail[i]
        old = (moment >= i / crossfade)[:, None]
        pos = np.where(old, t_pos, frame.positions)
        vel = np.where(old, t_vel, frame.velocities)
        nb = np.where(old[:, 0], t_nb, frame.snapshot.neighbours)
        snap = dataclasses.replace(frame.snapshot, neighbours=nb)
        yield dataclasses.replace(frame, positions=pos, velocities=vel, snapshot=snap,
                                  exposure=())
