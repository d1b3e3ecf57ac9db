"""The hunt, the agitation waves and the landing, stepped beside the 3D flock (`Finale`):
the hawk's flight, each bird's zig start and landing state, the steering they add to the
rules (`extra_accel`), and each attack's record (`Attack`: its wave-front speed).

Per bird everything reads the previous step and writes its own row (bit-identical for
any thread count); the hawk and the attack records are fixed-order reductions in numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..scene import Scene
from .forces import hunt, landing, waves
from .jit import prange, sized


@sized("pos")
def extra_accel(step, pos, fwd, startle, wv, zig_start, zig_side, land, state, roll):
    """(n, 3) m/s²: each bird's turn away from the hawk, its zig and, while landing, the
    funnel (which then replaces the roost's steering, see step3d._fly); and each bird's
    roll rate into roll (n,) (waves.rolling)."""
    n = pos.shape[0]
    out = np.zeros((n, 3))
    for i in prange(n):
        roll[i] = 0.0
        if state[i] == landing.LANDED:
            continue
        roll[i] = waves.rolling(wv, step, zig_start[i])
        a0, a1, a2 = hunt.accel(startle, pos[i, 0], pos[i, 1], pos[i, 2])
        z0, z1, z2 = waves.accel(wv, step, zig_start[i], zig_side[i], fwd[i, 0], fwd[i, 1])
        a0, a1, a2 = a0 + z0, a1 + z1, a2 + z2
        if state[i] == landing.LANDING:
            l0, l1, l2 = landing.accel(land, pos[i, 0], pos[i, 1], pos[i, 2], fwd[i, 0],
                                       fwd[i, 1], fwd[i, 2])
            a0, a1, a2 = a0 + l0, a1 + l1, a2 + l2
        out[i, 0], out[i, 1], out[i, 2] = a0, a1, a2
    return out


WAVE_CHUNK = 32      # copied birds a time against every source: bounded memory
WAVE_SAMPLE = 2000   # copied birds the front speed reads at most (evenly by index)


@dataclass
class Attack:
    """One attack: its start and end (s); for each bird its first zig in it (time s, NaN:
    none; place m, in the flock's frame: relative to the centroid; whether the hawk itself
    began it; its origin, the time the hawk began the zig it copies, s), and whether the
    bird came within the hawk's startle range at any step (startled: it turned away);
    every zig the hawk began in it (`source_t` s, `source_at` m in the flock's frame), its
    waves' sources."""

    start: float
    end: float
    first: np.ndarray
    where: np.ndarray
    direct: np.ndarray
    reached: np.ndarray
    origin: np.ndarray
    source_t: list = field(default_factory=list)
    source_at: list = field(default_factory=list)
    _speed: float | None = field(default=None, repr=False)

    @classmethod
    def open(cls, start: float, n: int) -> "Attack":
        nan = np.full(n, math.nan)
        return cls(start, math.inf, nan, np.zeros((n, 3)), np.zeros(n, bool),
                   np.zeros(n, bool), nan.copy())

    def note(self, t: float, pos: np.ndarray, startle: hunt.Startle, began: np.ndarray,
             origin: np.ndarray) -> None:
        """Record a step at t (s): the birds at pos (n, 3) the hawk's `startle` reaches
        (none while it is not out: in the attack's last seconds it pursues again), and
        those of `began` (n,) bool that begin a zig, the hawk's own where it reaches
        them and begins it (its origin is now: past hawk.zig_window a bird within its
        reach may copy a neighbour's); origin (n,): each zig's origin (s)."""
        hawk = np.array([startle.x, startle.y, startle.z])
        near = startle.out & (((pos - hawk) ** 2).sum(axis=1) < startle.radius ** 2)
        self.reached |= near
        if not began.any():
            return
        centre = pos.mean(axis=0)
        hawks = near & (origin == t)
        own = np.flatnonzero(began & hawks)
        if len(own):
            self.source_t.append(np.full(len(own), t))
            self.source_at.append(pos[own] - centre)
        first = np.flatnonzero(began & np.isnan(self.first))
        self.first[first] = t
        self.where[first] = pos[first] - centre
        self.direct[first] = hawks[first]
        self.origin[first] = origin[first]

    def wave_speed(self) -> float:
        """The finished attack's wave-front speed (m/s), worked out once (`front_speed`):
        every step's diagnostics report the last one."""
        if self._speed is None:
            self._speed = self.front_speed()
        return self._speed

    def front_speed(self) -> float:
        """The wave front's speed (m/s) in the flock's frame over the birds beyond the
        startle range that copied a zig the hawk began in this attack (a wave its pursuit
        began earlier is another front): for each, the least distance over time elapsed
        from any zig the hawk began before it; the median of those. A front that spreads
        at c from wherever the hawk began zigs reaches each bird first from one of them,
        at exactly c, and from any other no sooner, so the least ratio is c whatever the
        number of sources (a hawk that startles birds along its pass starts several
        fronts; one fitted slope from the first startle read them as slow, or negative).
        At most WAVE_SAMPLE copied birds, evenly by index; NaN under 10 of them."""
        copied = np.flatnonzero(np.isfinite(self.first) & ~self.direct
                                & (self.origin >= self.start))
        if len(copied) < 10 or not self.source_t:
            return math.nan
        copied = copied[np.linspace(0, len(copied) - 1, min(len(copied), WAVE_SAMPLE))
                        .round().astype(np.int64)]
        t_s, x_s = np.concatenate(self.source_t), np.concatenate(self.source_at)
        least = np.empty(len(copied))
        for lo in range(0, len(copied), WAVE_CHUNK):
            rows = copied[lo:lo + WAVE_CHUNK]
            elapsed = self.first[rows, None] - t_s[None, :]
            gap = np.linalg.norm(self.where[rows, None, :] - x_s[None, :, :], axis=2)
            ratio = np.divide(gap, elapsed, out=np.full_like(gap, np.inf), where=elapsed > 0)
            least[lo:lo + WAVE_CHUNK] = ratio.min(axis=1)
        least = least[np.isfinite(least)]
        return float(np.median(least)) if len(least) >= 10 else math.nan

    def startled_share(self) -> float:
        """Share of the birds the hawk startled in this attack: those that came within its
        startle range. Not only those whose zig it began: a bird already zigging with a
        wave when the hawk reaches it turns away all the same, and counting only the
        hawk's own zigs read an attack as weaker the faster its wave ran ahead of it."""
        return float(self.reached.mean())

    def source_share(self) -> float:
        """Share of the birds whose zig the hawk itself began (the waves' sources)."""
        return float(self.direct.mean())

    def zigged_share(self) -> float:
        return float(np.isfinite(self.first).mean())


@dataclass(frozen=True)
class Told:
    """What a step tells of the finale: the attack flag, the hawk's position (None while
    it waits), the landed birds (n,) bool, the last finished attack's (number, wave
    speed m/s, share startled by the hawk, share that zigged) or None, and the hawk's
    bank (radians)."""

    attack: bool
    hawk: tuple[float, float, float] | None
    landed: np.ndarray
    last_attack: tuple[int, float, float, float] | None
    hawk_bank: float = 0.0


class Finale:
    """The hunt, the waves and the landing of one 3D scene, stepped with its flock."""

    def __init__(self, scene: Scene, n: int, roost_xy: tuple[float, float]):
        self.settings = scene.hawk if hunt.hunting(scene) else None
        self.dt = scene.scene.dt
        self.hawk = hunt.HawkFlight(
            gravity=scene.flight.gravity if scene.flight is not None else 9.81)
        self.waves = waves.waves(scene)
        self.zig_start, self.zig_side, self.zig_origin = waves.fresh(n)
        self.land = landing.landing(scene, roost_xy)
        self.peel = np.full(n, np.iinfo(np.int64).max, np.int64)  # given as they peel
        self.first_peel, self.spread = landing.peel_schedule(scene)
        self.state = np.zeros(n, np.int8)
        r = scene.roost
        self.open_until = r.landing_at if r is not None and r.landing_at is not None \
            else math.inf
        self.current: Attack | None = None
        self.done: list[Attack] = []
        # The steps after the current attack's first zig in which the hawk still begins
        # zigs (hawk.zig_window), and that first zig's step (None: none yet).
        window = None if self.settings is None else self.settings.zig_window
        self.window = None if window is None else round(window / self.dt)
        self.first_zig: int | None = None

    @property
    def active(self) -> bool:
        return self.settings is not None or self.land.active

    def step(self, step: int, pos, vel, fwd, idx, count,
             kth_d2) -> tuple[np.ndarray, np.ndarray]:
        """Advance the hawk, the zigs and the landing states for `step` (the state pos,
        vel, fwd (n, 3), its k nearest idx, count and their k-th squared distances);
        returns the extra steering (n, 3) and the birds' roll rates (n,) for
        step3d.step3 (with `self.state`)."""
        t = step * self.dt
        startle = hunt.Startle(False, 0.0, 0.0, 0.0, 1.0, 0.0)
        if self.settings is not None:
            self.hawk.step(self.settings, t, self.dt, pos, vel, kth_d2, self.open_until)
            startle = self.hawk.startle(self.settings)
            pulsing = self.window is None or self.first_zig is None or \
                step - self.first_zig <= self.window
            wv = self.waves._replace(out=startle.out and pulsing, x=startle.x, y=startle.y,
                                     z=startle.z)
            start, side = np.empty_like(self.zig_start), np.empty_like(self.zig_side)
            origin = np.empty_like(self.zig_origin)
            waves.begin(wv, step, pos, fwd, idx, count, self.zig_start, self.zig_side,
                        self.zig_origin, start, side, origin)
            self._record(t, step, pos, startle, start, origin)
            self.zig_start, self.zig_side, self.zig_origin = start, side, origin
        if self.land.active:
            landing.peel_nearest(self.land, self.first_peel, self.spread, step, pos,
                                 self.state, self.peel)
            state = np.empty_like(self.state)
            landing.advance_state(self.land, step, pos, self.peel, self.state, state)
            self.state = state
        roll = np.empty(len(pos))
        extra = extra_accel(step, pos, fwd, startle, self.waves, self.zig_start,
                            self.zig_side, self.land, self.state, roll)
        return extra, roll

    def _record(self, t: float, step: int, pos: np.ndarray, startle: hunt.Startle,
                start: np.ndarray, origin: np.ndarray) -> None:
        """Note this step's new zigs in the current attack; close it when it ends."""
        h = self.hawk
        if self.current is None and h.attacking(t):
            self.current = Attack.open(h.attack_from, len(pos))
        a = self.current
        if a is None:
            return
        a.note(t, pos, startle, start == step, origin * self.dt)
        if self.first_zig is None and (origin == step).any():
            self.first_zig = step
        if not h.attacking(t) and t >= h.attack_until:
            a.end = h.attack_until
            self.done.append(a)
            self.current, self.first_zig = None, None

    def told(self, t: float) -> Told:
        h = self.hawk
        hawk_at = None if h.phase == "wait" else tuple(float(c) for c in h.pos)
        last = None
        if self.done:
            a = self.done[-1]
            last = (len(self.done), a.wave_speed(), a.startled_share(), a.zigged_share())
        return Told(self.settings is not None and h.attacking(t), hawk_at,
                    self.state == landing.LANDED, last, h.bank)
