"""Seeded initial state. Every random draw of a scene comes from here (numpy PCG64)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..scene import Scene

# Independent streams spawned from the seed: changing how many accent birds a scene draws
# must not move a single bird, and later draws (field phases) must not move the flock.
STREAM_FLOCK, STREAM_ACCENT, STREAM_FIELD = range(3)


def streams(seed: int) -> list[np.random.Generator]:
    children = np.random.SeedSequence(seed).spawn(3)
    return [np.random.Generator(np.random.PCG64(c)) for c in children]


@dataclass(frozen=True)
class InitialState:
    """positions, velocities: (n, 2) float64 in world units and world units/s;
    accent: (n,) bool, the tracer birds, indexed by bird identity."""

    positions: np.ndarray
    velocities: np.ndarray
    accent: np.ndarray


def seed_flock(scene: Scene) -> InitialState:
    rng_flock, rng_accent, _ = streams(scene.scene.seed)
    n = scene.count
    w, h = scene.world.width, scene.world.height
    flock = scene.flock
    if flock.init == "ellipse":
        # Uniform over the ellipse's area: radius ∝ sqrt(u).
        radius = np.sqrt(rng_flock.random(n))
        angle = rng_flock.uniform(0.0, 2 * np.pi, n)
        pos = np.column_stack([
            0.5 * w + flock.init_ellipse * w * radius * np.cos(angle),
            0.5 * h + flock.init_ellipse * h * radius * np.sin(angle),
        ])
    else:
        pos = rng_flock.random((n, 2)) * np.array([w, h])
    heading = rng_flock.uniform(0.0, 2 * np.pi, n)
    speed = rng_flock.uniform(flock.min_speed, flock.max_speed, n)
    vel = np.column_stack([speed * np.cos(heading), speed * np.sin(heading)])

    accent = np.zeros(n, bool)
    every = scene.render.accent_every
    if every > 0:
        accent[rng_accent.choice(n, size=n // every, replace=False)] = True
    return InitialState(pos, vel, accent)
