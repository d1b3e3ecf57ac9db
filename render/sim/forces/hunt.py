"""The hunting hawk (`[hawk] mode = "hunt"`, docs/model.md): one predator flown in Python each
step (`HawkFlight.step`), and the turn-away of the birds within its startle range
(`accel`, per bird).

The hawk has its own speeds and turn-rate limit: it pursues a point `dive_height` above
its target (the densest bird, or a bird on the flock's flank facing it, or each in turn;
an edge target is chosen again every RETARGET seconds of the pursuit),
dives on it at `dive_speed` once it is over it and at least `period` has passed since the
last dive, misses (it is past the target's altitude, or 4 s have gone), climbs away for
`climb_time` (levelling off CEILING dive heights above its target), and pursues again.
An attack runs from a dive's start to 5 s after the climb-out; the birds startle at the
hawk only while it dives and climbs away (`HawkFlight.startle`). All it reads of the flock
are fixed-order reductions (a mean, an argmin), so its path does not depend on the
thread count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ...scene import Scene
from ..jit import inline

ATTACK_TAIL = 5.0     # s after the climb-out that an attack lasts (issue 20)
DIVE_LIMIT = 4.0      # s: a dive that has not passed its target by then has missed
STANDOFF = 150.0      # m behind the flock where the hawk appears
CEILING = 2.0         # dive heights over its target that a climb stops at
ROLL_TIME = 0.2       # s: the hawk's bank follows its turn about this fast
RETARGET = 1.0        # s between choices of an edge target while the hawk pursues


class Startle(NamedTuple):
    """The hawk as the birds feel it this step: out (flying), its position (m), the
    startle range (m) and the turn-away acceleration at its centre (m/s²)."""

    out: bool
    x: float
    y: float
    z: float
    radius: float
    strength: float


@inline
def accel(h, x, y, z):
    """A bird's turn away (m/s², 3 floats) at (x, y, z): strength·(1 − d/radius) away from
    the hawk within the startle range, zero beyond."""
    if not h.out:
        return 0.0, 0.0, 0.0
    ox, oy, oz = x - h.x, y - h.y, z - h.z
    d2 = ox * ox + oy * oy + oz * oz
    if d2 >= h.radius * h.radius or d2 == 0.0:
        return 0.0, 0.0, 0.0
    d = math.sqrt(d2)
    push = h.strength * (1.0 - d / h.radius) / d
    return ox * push, oy * push, oz * push


def turned(u: np.ndarray, w: np.ndarray, most: float) -> np.ndarray:
    """Unit vector u turned toward unit vector w by at most `most` radians (in their
    plane); w itself when it is within reach."""
    cos = float(np.clip(u @ w, -1.0, 1.0))
    angle = math.acos(cos)
    if angle <= most:
        return w.copy()
    side = w - cos * u
    norm = float(np.linalg.norm(side))
    if norm < 1e-12:  # straight behind: turn about the vertical
        side = np.array([-u[1], u[0], 0.0])
        norm = float(np.linalg.norm(side)) or 1.0
    return math.cos(most) * u + math.sin(most) * side / norm


@dataclass
class HawkFlight:
    """The hawk's state: phase ("wait", "pursue", "dive", "climb"), position and velocity
    (3,) m and m/s, the phase's start (s), the last dive's start (s), the target bird and
    when it was chosen (s), the attacks begun so far and when the current one ends (inf
    while diving); its bank (radians, positive rolled right, as flight.py's birds) and the
    gravity it banks against (m/s²)."""

    phase: str = "wait"
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    vel: np.ndarray = field(default_factory=lambda: np.zeros(3))
    since: float = 0.0
    last_dive: float = -math.inf
    target: int = 0
    chosen: float = -math.inf
    attacks: int = 0
    attack_from: float = math.inf
    attack_until: float = -math.inf
    bank: float = 0.0
    gravity: float = 9.81

    def attacking(self, t: float) -> bool:
        return self.attack_from <= t < self.attack_until

    def startle(self, settings) -> Startle:
        """The startle, out while the hawk dives and climbs away. A pursuit flies
        dive_height over its target, within range of a large flock's upper birds: they
        zigged at it for seconds on end and were all still refractory when it dived (an
        attack at 20,000 birds startled 4.3%, and began no wave of its own)."""
        x, y, z = (float(c) for c in self.pos)
        return Startle(self.phase in ("dive", "climb"), x, y, z, settings.radius,
                       settings.strength)

    def step(self, s, t: float, dt: float, pos: np.ndarray, vel: np.ndarray,
             kth_d2: np.ndarray, open_until: float) -> None:
        """Fly one step of dt at time t (s, after settling) over the flock (pos, vel
        (n, 3)); kth_d2: each bird's squared k-th neighbour distance (the densest bird has
        the least). No new attack begins at or after `open_until` (the landing)."""
        if self.phase == "wait":
            if t >= s.start and t < open_until:
                self._appear(s, t, pos, vel, kth_d2)
            return
        if self.phase == "pursue" and t - self.chosen >= RETARGET and \
                aims_at_edge(s.target, self.attacks):
            # The flank it chose turns and stretches over a pursuit of ten seconds or so:
            # held, the bird was at the sheet's tip when the hawk dived (6.8% startled).
            self._choose(s, t, pos, kth_d2)
        target = pos[self.target]
        off = target - self.pos
        flat = np.array([self.vel[0], self.vel[1], 0.0])
        flat /= max(float(np.linalg.norm(flat)), 1e-12)
        if self.phase == "pursue":
            aim, speed = off + (0.0, 0.0, s.dive_height), s.speed
            over = math.hypot(off[0], off[1]) < s.dive_height
            if over and off[2] < 0.0 and t - self.last_dive >= s.period and \
                    t < open_until:
                self.phase, self.since, self.last_dive = "dive", t, t
                self.attack_from, self.attack_until = t, math.inf
                self.attacks += 1
            elif over or t >= open_until:
                # Not diving yet (or no more, once the landing began): fly on through at
                # the pursuit's height rather than loop over the target (a loop at a
                # limited turn rate corkscrews upward).
                hold = (off[2] + s.dive_height) / s.dive_height
                aim = flat + (0.0, 0.0, max(-0.5, min(0.5, hold)))
        elif self.phase == "dive":
            aim, speed = off + vel[self.target] * (np.linalg.norm(off) / s.dive_speed), \
                s.dive_speed
            if off[2] > 0.0 or t - self.since >= DIVE_LIMIT:  # below its target: missed
                self.phase, self.since = "climb", t
                self.attack_until = t + ATTACK_TAIL
        else:  # climb away: the level heading, nose up until CEILING dive heights up
            up = 0.6 if off[2] > -CEILING * s.dive_height else 0.0
            aim, speed = flat + (0.0, 0.0, up), s.speed
            if t - self.since >= s.climb_time:
                self.phase, self.since = "pursue", t
                self._choose(s, t, pos, kth_d2)
        self._fly(aim, speed, math.radians(s.turn_rate) * dt, dt)

    def _appear(self, s, t, pos, vel, kth_d2) -> None:
        centre, heading = pos.mean(axis=0), vel.mean(axis=0)
        flat = np.array([heading[0], heading[1], 0.0])
        flat /= max(float(np.linalg.norm(flat)), 1e-12)
        self.pos = centre - STANDOFF * flat + (0.0, 0.0, s.dive_height)
        self.vel = s.speed * flat
        self.phase, self.since = "pursue", t
        self._choose(s, t, pos, kth_d2)

    def _choose(self, s, t, pos, kth_d2) -> None:
        self.target = choose_target(s.target, self.attacks, pos, kth_d2, self.pos)
        self.chosen = t

    def _fly(self, aim: np.ndarray, speed: float, most: float, dt: float) -> None:
        u = self.vel / max(float(np.linalg.norm(self.vel)), 1e-12)
        w = aim / max(float(np.linalg.norm(aim)), 1e-12)
        new = turned(u, w, most)
        # Banked as a bird banks into a turn (tan β = the turn's sideways acceleration
        # over g, flight.py): drawn level it showed the camera a wing's edge through
        # its hardest turns.
        level = math.hypot(u[0], u[1])
        across = 0.0 if level < 1e-9 else float(new[0] * u[1] - new[1] * u[0]) / level
        lean = math.atan2(speed * across / dt, self.gravity)
        self.bank += (lean - self.bank) * min(1.0, dt / ROLL_TIME)
        self.vel = speed * new
        self.pos = self.pos + self.vel * dt
        self.pos[2] = max(self.pos[2], 0.0)


EDGE_SHARE = 0.1  # the flank facing the hawk: this share of the middle third's birds


def aims_at_edge(mode: str, attacks: int) -> bool:
    """Whether the next attack (after `attacks` begun) aims at the edge: "alternate"
    starts dense."""
    return mode == "edge" or (mode == "alternate" and attacks % 2 == 1)


def choose_target(mode: str, attacks: int, pos: np.ndarray, kth_d2: np.ndarray,
                  hawk: np.ndarray) -> int:
    """The next target: the densest bird (least k-th neighbour distance), or a bird at
    the edge: the densest of the EDGE_SHARE of the middle third of the flock's length
    (along its longest horizontal axis) farthest out on the flank facing the hawk. Not the
    birds farthest toward the hawk: it comes from behind, and those were the sheet's tip,
    which a 15 m startle range reaches a few percent of. Ties go to the lowest index
    (argmin)."""
    if not aims_at_edge(mode, attacks) or len(pos) < 2:
        return int(np.argmin(kth_d2))
    centre = pos.mean(axis=0)
    rel = pos - centre
    _, axes = np.linalg.eigh(np.cov(rel[:, :2].T))
    length = np.array([axes[0, 1], axes[1, 1], 0.0])  # the larger eigenvalue's axis
    across = np.array([-length[1], length[0], 0.0])
    along = np.abs(rel @ length)
    middle = np.flatnonzero(along <= np.sort(along)[len(along) // 3])
    side = 1.0 if (hawk - centre) @ across >= 0 else -1.0
    out = side * (rel[middle] @ across)
    edge = middle[out >= np.sort(out)[-max(1, round(EDGE_SHARE * len(middle)))]]
    return int(edge[np.argmin(kth_d2[edge])])


def hunting(scene: Scene) -> bool:
    h = scene.hawk
    return scene.dimensions == 3 and h is not None and h.mode == "hunt"
