"""Seamless loops: a clip of `count` frames starting at frame t₀ of the simulation, whose
first `crossfade` frames carry the flock from where it is just after the clip's end
(frames t₀+count …, the tail) into where it is at the start (frames t₀ …, the head), so
the last frame flows into the first and every frame reads as uninterrupted flight.

Three choices make that so (docs/loops.md has the measures):
- t₀ is searched: the start, within the clip's length, at which the fewest pairs would
  be too far apart to meet, compared half-way through the morph (`loop_start`);
- each tail bird is paired with a head bird near it heading the same way (`pairing.pair`),
  the accent birds among themselves, so no bird crosses the frame;
- the tail flies on under the flocking rules with each bird pulled toward its partner's
  state in the head (`Guided`: the velocity toward the partner's velocity plus a capped
  drift along the gap, the position along that drift), the pull growing from nothing at
  the morph's start; the rules still act, so neighbours turn together and the streaks keep
  their lanes. Over the morph's last `SNAP` the small residual closes with w = 3s² − 2s³
  (position pₜ + w·(pₕ − pₜ), velocity vₜ + w·(vₕ − vₜ)), so frame C is the clip's. A
  pair whose drawn path would outrun the speed limit switches instead, at its own moment.

Earlier ways failed visibly: a pixel cross-dissolve ghosts a double flock; a bird-by-bird
dissolve scrambles the local headings mid-way; gliding bird i to bird i drags birds across
the frame; gliding each pair along the Hermite blend of its two free trajectories mixes two
unrelated layouts mid-way (dust). Works on (n, d) states, any d.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator
from fractions import Fraction

import numpy as np

from .pairing import pair
from .simulate import Frame, Simulation, frames

# The loop's start is searched within this share of the clip (simulated once more: cheap
# next to drawing), a candidate every third of the morph.
SEARCH, STRIDE = 1.0, 3
# Child of the scene's seed for the jumping pairs' switching moments (0–2 are flock,
# accent, field).
STREAM_LOOP = 3
# A pair glides while its speed stays under this share of the measures' limit (1.5× the
# scene's maximum speed); a pair further apart switches (fades out and in).
GLIDE = 0.95 * 1.5
# The pull (`Guided`), as shares of the morph's length: the time constant of its drift
# along the gap; the drift's cap, in maximum speeds (flight plus drift stays under the
# measures' 1.5×); the last share, where the residual closes; the first share, over which
# the pull grows to its full weight; the time constant of the velocity's turn toward the
# partner's.
PULL_TIME, DRIFT, SNAP, RAMP, TURN_TIME = 0.15, 0.45, 0.3, 0.4, 0.03


@functools.lru_cache(maxsize=4)
def loop_start(scene, count: int, crossfade: int) -> int:
    """t₀: the frame, within the clip's first `SEARCH` share (a candidate every
    crossfade/`STRIDE` frames), at which the fewest pairs of the morph would have to
    switch rather than glide (`gliding`), compared at the morph's middle. Ties go to the
    earlier start."""
    fps, middle = scene.output.fps, crossfade // 2
    step = max(1, crossfade // STRIDE)
    candidates = set(range(0, int(count * SEARCH) + 1, step))
    sim = Simulation(scene)
    accent = np.asarray(sim.accent, bool)
    starts: dict[int, tuple] = {}
    best, best_score = 0, np.inf
    for frame in frames(sim, fps, max(candidates) + count + 1, first=middle):
        k = frame.index - middle
        if k in candidates:
            starts[k] = (frame.positions.copy(), frame.velocities.copy())
        if k - count in candidates:
            head = starts.pop(k - count)
            partner = partners(scene, (frame.positions, frame.velocities), head, accent,
                               crossfade)
            score = float((~gliding(scene, (frame.positions, frame.velocities), head,
                                    partner, crossfade)).mean())
            if score < best_score:
                best, best_score = k - count, score
    return best


def partners(scene, tail: tuple, head: tuple, accent: np.ndarray, crossfade: int):
    """Tail bird i becomes head bird partner[i] ((n,) int64; accent birds among
    themselves); `tail`, `head`: (positions, velocities) at the morph's middle."""
    partner = np.empty(accent.size, np.int64)
    span = crossfade / float(scene.output.fps)
    for group in (np.flatnonzero(accent), np.flatnonzero(~accent)):
        found = pair(tail[0][group], tail[1][group], head[0][group], head[1][group],
                     horizon=span / 2, extent=wrapping(scene, tail[0]))
        partner[group] = group[found]
    return partner


def gliding(scene, tail: tuple, head: tuple, partner: np.ndarray, crossfade: int):
    """Which pairs glide ((n,) bool): at the morph's middle, where the glide is fastest
    (w′ = 1.5 / span), flight plus glide stays under `GLIDE` × the maximum speed."""
    span = crossfade / float(scene.output.fps)
    gap = head[0][partner] - tail[0]
    extent = wrapping(scene, tail[0])
    if extent is not None:
        gap -= extent * np.round(gap / extent)
    flight = 0.5 * (tail[1] + head[1][partner]) + 1.5 * gap / span
    return np.sqrt((flight * flight).sum(axis=1)) <= GLIDE * scene.flock.max_speed


def wrapping(scene, positions: np.ndarray) -> np.ndarray | None:
    """The world's (d,) size where it wraps (distances cross the edge), else None."""
    return world_size(scene)[:positions.shape[1]] if scene.world.boundary == "wrap" else None


def switch_moments(seed: int, count: int) -> np.ndarray:
    """When each switching pair switches, in [0, 1) of the morph, spread evenly so the
    pixels change at a steady rate. (n,)."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed).spawn(
        STREAM_LOOP + 1)[STREAM_LOOP]))
    return rng.random(count)


def world_size(scene) -> np.ndarray:
    """The world's size along each axis (x, y; z where the world has a depth), float64."""
    world = scene.world
    return np.array([world.width, world.height, getattr(world, "depth", 0.0)], float)


def looped(scene, head: Iterator[Frame], start: int, count: int, crossfade: int,
           accent: np.ndarray) -> Iterator[Frame]:
    """The loop's frames 0..count−1 from `head` (the simulation's frames start ..
    start+count−1), re-indexed from 0 (time index / fps); the first `crossfade` morph from
    the guided tail (`guided_tail`)."""
    fps = scene.output.fps
    buffered = []
    for frame in head:
        k = frame.index - start
        frame = dataclasses.replace(frame, index=k, time=Fraction(k) / fps)
        if k >= crossfade:
            yield frame
            continue
        buffered.append(frame)
        if len(buffered) < crossfade:
            continue
        yield from morph(scene, buffered, start, count, accent)


def morph(scene, head: list[Frame], start: int, count: int,
          accent: np.ndarray) -> Iterator[Frame]:
    """The morph's frames: the tail (frames start+count … of the simulation) flown on by
    the flocking rules with each bird pulled toward its head partner (`Guided`), then, over
    the last `SNAP` of the morph, the residual closed exactly; a pair too far apart to
    meet switches instead, at its own moment. Rows in the tail's order (frame 0 is then
    exactly the frame after the last); the frame after the morph is the clip's."""
    c, fps = len(head), scene.output.fps
    middle = c // 2
    extent = wrapping(scene, head[0].positions)
    mid = next(frames(Simulation(scene), fps, 1, first=start + count + middle))
    mid_tail, mid_head = (mid.positions, mid.velocities), (head[middle].positions,
                                                           head[middle].velocities)
    partner = partners(scene, mid_tail, mid_head, accent, c)
    guided = list(frames(Guided(scene, partner, start, count, c), fps, c, first=start + count))
    paths = []
    for i, (frame, t) in enumerate(zip(head, guided)):
        snap = np.clip((i / c - (1 - SNAP)) / SNAP, 0.0, 1.0)
        delta = frame.positions[partner] - t.positions
        if extent is not None:
            delta -= extent * np.round(delta / extent)
        paths.append((snap * snap * (3 - 2 * snap), delta))
    glides = flies(scene, guided, paths)
    moment = switch_moments(scene.scene.seed, accent.size)
    for i, (frame, t, (snap, delta)) in enumerate(zip(head, guided, paths)):
        w = np.where(glides, snap, (moment < i / c).astype(float))[:, None]
        pos = t.positions + w * delta
        if extent is not None:
            pos = np.mod(pos, extent)
        vel = t.velocities + w * (frame.velocities[partner] - t.velocities)
        nb = np.where(w[:, 0] < 0.5, t.snapshot.neighbours, frame.snapshot.neighbours[partner])
        yield dataclasses.replace(frame, positions=pos, velocities=vel, exposure=(),
                                  snapshot=dataclasses.replace(frame.snapshot, neighbours=nb))


def flies(scene, guided: list[Frame], paths: list[tuple]) -> np.ndarray:
    """Which birds ((n,) bool) stay under `GLIDE` × the maximum speed from frame to frame
    along guided + snap·delta (`paths`: (snap, delta) per frame), the step into the frame
    after the morph (delta 0, snap 1) included."""
    fps, extent = float(scene.output.fps), wrapping(scene, guided[0].positions)
    fastest = np.zeros(len(guided[0].positions))
    drawn = [t.positions + w * delta for t, (w, delta) in zip(guided, paths)]
    drawn.append(guided[-1].positions + paths[-1][1])  # where the head's next frame is
    for a, b in zip(drawn, drawn[1:]):
        step = b - a
        if extent is not None:
            step -= extent * np.round(step / extent)
        fastest = np.maximum(fastest, np.sqrt((step * step).sum(axis=1)) * fps)
    return fastest <= GLIDE * scene.flock.max_speed


class Guided:
    """The tail's simulation (frames start+count … of the scene) with each bird pulled, as
    the morph goes on, toward its partner's state in the head (frames start …, a second
    simulation run in step): after each step of the flocking rules, a drift along the gap
    (the gap over `PULL_TIME`, at most `DRIFT` × the maximum speed) moves the position,
    and the velocity turns (time constant `TURN_TIME`) toward the partner's velocity plus
    that drift, both weighted by a smoothstep from 0 at the morph's start to 1 at `RAMP`
    of it. The rules still act on every
    bird, so neighbours turn together and the streaks keep their lanes. Exposes what
    `frames` samples: scene, dt, world, step_index, advance()."""

    def __init__(self, scene, partner: np.ndarray, start: int, count: int, crossfade: int):
        fps = float(scene.output.fps)
        self.scene, self.partner = scene, partner
        self.tail, self.head = Simulation(scene), Simulation(scene)
        self.dt, self.world = self.tail.dt, self.tail.world
        self.begin = int((start + count) / fps / self.dt)  # the step of the morph's frame 0
        self.offset = int(round(count / fps / self.dt))  # tail step − head step
        self.steps = crossfade / fps / self.dt
        self.span = crossfade / fps
        self.extent = wrapping(scene, self.tail.positions)

    @property
    def step_index(self) -> int:
        return self.tail.step_index

    def advance(self):
        snap = self.tail.advance()
        k = self.tail.step_index
        if k <= self.begin:
            return snap
        while self.head.step_index < k - self.offset:
            self.head.advance()
        s = min(1.0, (k - self.begin) / (RAMP * self.steps))
        self.tail.positions, self.tail.velocities = self.pulled(s * s * (3 - 2 * s))
        return snap

    def pulled(self, g: float) -> tuple[np.ndarray, np.ndarray]:
        """The tail's state after one step's pull of weight `g` (0–1)."""
        pos, vel, dt = self.tail.positions, self.tail.velocities, self.dt
        gap = self.head.positions[self.partner] - pos
        if self.extent is not None:
            gap -= self.extent * np.round(gap / self.extent)
        tau = PULL_TIME * self.span
        drift = gap / tau
        cap = DRIFT * self.scene.flock.max_speed
        size = np.sqrt((drift * drift).sum(axis=1, keepdims=True))
        drift *= np.minimum(1.0, cap / np.maximum(size, 1e-12))
        want = self.head.velocities[self.partner] + drift
        vel = vel + min(1.0, g * dt / (TURN_TIME * self.span)) * (want - vel)
        pos = pos + dt * g * drift
        if self.extent is not None:
            pos = np.mod(pos, self.extent)
        return pos, vel
