"""The 3D simulator (docs/model.md): seeding over the roost, settling (kept on disk, see
settled.py) and the fixed step of step3d.py, behind the interface `frames` samples."""

from __future__ import annotations

import math

import numpy as np

from ..progress import progress_bar
from ..scene import Scene
from . import flight, hunt3d, settled, step3d
from .forces import flocking3d, roost
from .forces.landing import FLYING
from .snapshot import Snapshot, follow_start, follow_step
from .state import streams

# Volume per bird of the seeded blob (docs/model.md: compact, ~2.5 m³ a bird) and the spread
# of the headings around the flock's (degrees, full width).
BLOB_M3 = 2.5
HEADING_SPREAD = 30.0


class World3(tuple):
    """The open sky: no wrap (what `frames` asks of a world)."""

    wrap = False

    @property
    def extent(self):
        return (math.inf, math.inf, math.inf)


def seed_flock3(scene: Scene) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(positions (n, 3) m, velocities (n, 3) m/s, accent (n,) bool): a ball of
    n·BLOB_M3 m³ at the preferred altitude over the roost, headings within HEADING_SPREAD°
    of one seeded bearing, level, at the cruise speed (the flock's mean speed without
    flight)."""
    rng, rng_accent, _ = streams(scene.scene.seed)
    n = scene.count
    home = roost.roost(scene)
    cx, cy = (home.x, home.y) if home.active else (scene.world.width / 2,
                                                    scene.world.height / 2)
    cz = home.altitude if home.active else 50.0
    radius = (3.0 * n * BLOB_M3 / (4.0 * math.pi)) ** (1.0 / 3.0)
    direction = rng.normal(size=(n, 3))
    direction /= np.maximum(np.linalg.norm(direction, axis=1), 1e-300)[:, None]
    pos = direction * (radius * rng.random(n) ** (1.0 / 3.0))[:, None] + (cx, cy, cz)
    pos[:, 2] = np.maximum(pos[:, 2], 0.0)
    bearing = rng.uniform(0.0, 2.0 * math.pi)
    yaw = bearing + np.radians(rng.uniform(-0.5, 0.5, n) * HEADING_SPREAD)
    fl = flight.flight(scene)
    speed = fl.cruise if fl.active else 0.5 * (fl.min_speed + fl.max_speed)
    vel = np.column_stack([speed * np.cos(yaw), speed * np.sin(yaw), np.zeros(n)])
    accent = np.zeros(n, bool)
    every = scene.render.accent_every
    if every > 0:
        accent[rng_accent.choice(n, size=n // every, replace=False)] = True
    return pos, vel, accent


class Simulation3D:
    """The 3D flock of one scene (what simulate.Simulation builds for a 3D scene, with its
    interface): `positions`, `velocities` (n, 3) and
    `bank` (n,) radians, by bird identity. After construction the flock is settled, from
    the disk cache when it was settled before (`progress`: a bar on stderr meanwhile)."""

    def __init__(self, scene: Scene, *, progress: bool = False, cache: bool = True):
        self.scene = scene
        self.positions, self.velocities, self.accent = seed_flock3(scene)
        n = len(self.positions)
        self.bank = np.zeros(n)
        self.dt = scene.scene.dt
        self.world = World3()
        self.flight = flight.flight(scene)
        self.rules = flocking3d.flocking3(scene)
        self.roost = roost.roost(scene)
        # The roost's return: on?, which way, how strong (m/s²).
        self.homing, self.side, self.pull = False, 1.0, 0.0
        self._part = None  # the largest part while split (see _split)
        r = scene.rules
        self.how = step3d.Neighbours3(r.neighbours == "topological", r.topological_count,
                                      r.max_range if r.max_range is not None else math.inf)
        k = r.topological_count if self.how.topological else 1
        self._work = step3d.workspace3(n, self.how.topological,
                                       1.5 * (BLOB_M3 * k) ** (1.0 / 3.0))
        self.noise = scene.flight.noise if scene.flight is not None else 0.0
        self.finale = hunt3d.Finale(scene, n, (self.roost.x, self.roost.y))
        # The neighbours (idx (n, k), kth (n,) m², count (n,)) the last step found, for
        # the finale's waves and hawk (see step3d.Finale3); none before the first step.
        self._lists = (np.full((n, k), -1, np.int64), np.full(n, np.inf),
                       np.zeros(n, np.int64))
        self._follow = follow_start(scene, self.positions)
        self.step_index = -scene.scene.settle_steps
        kept = settled.load(scene) if cache and self.step_index < 0 else None
        if kept is not None and kept["positions"].shape == self.positions.shape and \
                len(kept["follow"]) == (6 if self._follow is not None else 0):
            self._restore(kept)
            return
        steps = -self.step_index
        if steps > 0:
            # Before the bar: on a first run this step compiles the kernels (up to a
            # minute), which the bar's rate and ETA would read as the pace of settling.
            self.advance()
        with progress_bar(total=steps, initial=min(steps, 1), unit="step", desc="settling",
                          leave=False, disable=not progress or steps <= 0) as bar:
            while self.step_index < 0:
                self.advance()
                bar.update()
        if cache and scene.scene.settle_steps > 0:
            settled.save(scene, self._kept())

    def _kept(self) -> dict[str, np.ndarray]:
        follow = np.concatenate(self._follow[:2]) if self._follow is not None else np.zeros(0)
        homing = np.array([float(self.homing), self.side, self.pull])
        return dict(positions=self.positions, velocities=self.velocities, bank=self.bank,
                    radius=self._work.radius, homing=homing, follow=follow,
                    lists_idx=self._lists[0], lists_kth=self._lists[1],
                    lists_count=self._lists[2])

    def _restore(self, kept) -> None:
        """The settled state read back, with the roost's return and the camera's follow
        spring as settling left them."""
        self.positions, self.velocities = kept["positions"], kept["velocities"]
        self.bank = kept["bank"]
        np.copyto(self._work.radius, kept["radius"])
        for mine, name in zip(self._lists, ("lists_idx", "lists_kth", "lists_count")):
            np.copyto(mine, kept[name])
        self.homing, self.side, self.pull = (bool(kept["homing"][0]), float(kept["homing"][1]),
                                             float(kept["homing"][2]))
        if self._follow is not None:
            x, v = np.split(kept["follow"], 2)
            self._follow = (x, v, self._follow[2])
        self.step_index = 0

    @property
    def time_s(self) -> float:
        return self.step_index * self.dt

    def forces_now(self):
        return None

    def hawk_position(self):
        """Where the hunting hawk is (3 floats, m), None while it waits."""
        return self.finale.told(self.time_s).hawk

    def advance(self) -> Snapshot:
        """Advance one step; returns the Snapshot of the state that was read (with its
        bank)."""
        pos = np.ascontiguousarray(self.positions, dtype=np.float64)
        vel = np.ascontiguousarray(self.velocities, dtype=np.float64)
        work = self._work
        finale = self.finale
        centroid, heading = step3d.forward(pos, vel, work.fwd)
        everyone = centroid  # the camera follows every bird, landed or not
        flying = finale.state == FLYING if finale.land.active else None
        if flying is not None and 0 < flying.sum() < len(flying):
            # The means of the birds still flying with the flock once some (not all) have
            # begun to land (numpy's pairwise sum over a fixed set: thread-independent).
            centroid, heading = pos[flying].mean(axis=0), work.fwd[flying].mean(axis=0)
        part = self._split(pos, flying)
        if part is not None:
            # Split: the return and the gather read the largest part as the flock.
            centroid, heading = pos[part].mean(axis=0), work.fwd[part].mean(axis=0)
        home = roost.at_step(self.roost, centroid, heading, self.homing, self.side, self.pull,
                             self.scene.scene.dt)
        self.homing, self.side, self.pull = home.homing, home.side, home.strength
        if part is not None:
            home = home._replace(gather=self.scene.rules.rejoin)
        fin = None
        if finale.active:
            told = finale.told(self.time_s)
            # The waves and the hawk read the neighbours the previous step found (one
            # step earlier than the flight they steer: the fused step finds them in flight).
            idx, kth, count = self._lists
            extra, roll = finale.step(self.step_index, pos, vel, work.fwd, idx, count, kth)
            fin = step3d.Finale3(extra, finale.state, idx, kth, roll)
        # The seed as uint64 whatever its size: a kernel typed for int64 by a first seed
        # refused 2⁶⁴ − 1 later in the same process (OverflowError).
        new = step3d.step3(pos, vel, self.bank, self.how, self.rules, home, self.flight,
                           self.noise, np.uint64(self.scene.scene.seed), self.step_index,
                           work, fin)
        if fin is not None:
            np.copyto(self._lists[2], new.count)
        followed = self._follow_step(pos, everyone)
        snap = Snapshot(self.step_index, pos, vel, new.count, new.tested, new.nearest, None,
                        told.hawk if fin else None, followed, bank=self.bank,
                        attack=told.attack if fin else False,
                        landed=told.landed if fin and finale.land.active else None,
                        last_attack=told.last_attack if fin else None,
                        hawk_bank=told.hawk_bank if fin else 0.0)
        self.positions, self.velocities, self.bank = new.pos, new.vel, new.bank
        self.step_index += 1
        return snap

    def _split(self, pos, flying):
        """The flock's largest part while it is split (roost.largest_part), found again
        every roost.PART_EVERY_S; None when not split or without the rejoin."""
        if self.scene.rules.rejoin == 0.0:
            return None
        if self.step_index % max(1, round(roost.PART_EVERY_S / self.dt)) == 0:
            self._part = roost.largest_part(pos, flying)
        return self._part

    def _follow_step(self, pos: np.ndarray, centroid: np.ndarray) -> tuple[float, ...] | None:
        self._follow, point = follow_step(self._follow, pos, self.dt, centroid)
        return point

    def measure(self):
        raise NotImplementedError("measure() is the 2D kernels' composition")

    def grid(self, pos):
        raise NotImplementedError("the 3D grid is built by step3d._flying")
