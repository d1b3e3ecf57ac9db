"""The loop morph this project used to ship, kept to show what the loop measures catch: a
bird-by-bird dissolve, each bird drawn from the tail's state until its own moment in the
crossfade (eased toward the middle), then from the head's. Local headings scramble
mid-way (measure 2 fails), though ink and frame differences stay as they are."""

from __future__ import annotations

import dataclasses

import numpy as np

from render.sim.simulate import Simulation, frames

STREAM = 3


def dissolved(scene, head, count: int, crossfade: int):
    """`head` (frames 0..count−1), its first `crossfade` dissolving from the tail."""
    tail = [(f.positions.copy(), f.velocities.copy(), f.snapshot.neighbours.copy())
            for f in frames(Simulation(scene), scene.output.fps, crossfade, first=count)]
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(
        scene.scene.seed).spawn(STREAM + 1)[STREAM]))
    moment = 0.5 - np.sin(np.arcsin(1.0 - 2.0 * rng.random(scene.count)) / 3.0)
    for frame in head:
        i = frame.index
        if i >= crossfade:
            yield frame
            continue
        t_pos, t_vel, t_nb = tail[i]
        old = (moment >= i / crossfade)[:, None]
        snap = dataclasses.replace(frame.snapshot,
                                   neighbours=np.where(old[:, 0], t_nb, frame.snapshot.neighbours))
        yield dataclasses.replace(frame, positions=np.where(old, t_pos, frame.positions),
                                  velocities=np.where(old, t_vel, frame.velocities),
                                  snapshot=snap, exposure=())
