"""What one simulated step hands on (`Snapshot`), in 2D and 3D alike, and the camera's
followed point, stepped with the simulation (`follow_start`, `follow_step`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..scene import Scene


@dataclass(frozen=True)
class Snapshot:
    """One simulated state and what its neighbourhoods measured, indexed by bird identity.

    step: steps after settling (0 is frame 0's state). positions, velocities: (n, d).
    neighbours, candidates: (n,) int64; nearest: (n,) nearest-neighbour distance (inf
    when none within the perception radius). inside: (n,) bool, inside the containment ellipse
    (None without containment). hawk: the hawk's (x, y) while it is out, else None.
    followed: the flock's centroid (d floats) smoothed by the camera's critically damped
    follow (None unless the camera follows it). bank: (n,) radians, None in 2D.
    3D hunt and landing (render.sim.hunt3d): attack, whether an attack is on; landed: (n,)
    bool (None without a landing); last_attack: the last finished attack's (number, wave
    speed m/s, share startled by the hawk, share that zigged), None before the first;
    hawk_bank: the hunting hawk's bank, radians.
    """

    step: int
    positions: np.ndarray
    velocities: np.ndarray
    neighbours: np.ndarray
    candidates: np.ndarray
    nearest: np.ndarray
    inside: np.ndarray | None = None
    hawk: tuple[float, float] | None = None
    followed: tuple[float, ...] | None = None
    bank: np.ndarray | None = None
    attack: bool = False
    landed: np.ndarray | None = None
    last_attack: tuple[int, float, float, float] | None = None
    hawk_bank: float = 0.0


def follow_start(scene: Scene, pos: np.ndarray):
    """The follow spring's state at the seeded flock (positions (n, d); its centroid's d
    coordinates), or None unless the camera follows it. The spring runs at the simulation's
    step, not the frame rate, so every fps and every still sees the same camera path."""
    cam = scene.camera
    if cam is None or cam.follow == "none":
        return None
    centroid = pos.mean(axis=0)
    return (centroid, np.zeros_like(centroid), 1.0 / cam.follow_time)


def follow_step(state, pos: np.ndarray, dt: float, centroid: np.ndarray | None = None):
    """(next state, the followed point now): one semi-implicit step of a critically damped
    spring toward the centroid of pos (n, d), x'' = ω²(c − x) − 2ω x'. centroid: pos's
    mean(axis=0) when the caller has it already (numpy's walk over an (n, d) array is
    slow: 2 ms at 100,000 birds)."""
    if state is None:
        return None, None
    x, v, omega = state
    if centroid is None:
        centroid = pos.mean(axis=0)
    v = v + (omega * omega * (centroid - x) - 2.0 * omega * v) * dt
    return (x + v * dt, v, omega), tuple(float(c) for c in x)
