"""All-pairs numpy reference of the 3D step (docs/model.md, the 3D flock), written from the model's
description in docs/model.md, not from the kernels: nothing is imported from `render`.

`naive_step3(state, model)` advances a `State3` one step: the distance matrix, the blind
cone, the neighbours (all visible birds within the radius, or the k nearest visible by
argsort, tests/naive_neighbours.py), the rules, the roost, the noise (splitmix64 of
(seed, bird, step) in numpy's uint64), banked flight and the ground;
`naive_landing_step3` the same step of a flock that is landing (docs/model.md, the hunt).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from naive_neighbours import k_nearest_visible, squared_distances, visible


@dataclass(frozen=True)
class State3:
    pos: np.ndarray
    vel: np.ndarray
    bank: np.ndarray
    step: int
    homing: bool = False
    side: float = 1.0
    pull: float = 0.0
    part: np.ndarray | None = None  # the largest part while the flock is split (the rejoin)


def _mix(z):
    z = z + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def naive_noise(seed: int, n: int, step: int) -> np.ndarray:
    """(n, 3) standard normals of (seed, bird, step): Box–Muller over four uniforms."""
    with np.errstate(over="ignore"):
        birds = np.arange(n, dtype=np.uint64)
        k = _mix(_mix(_mix(np.uint64(seed)) ^ birds) ^ np.uint64(step % 2**64))
        u = [((_mix(k + np.uint64(c)) >> np.uint64(11)).astype(np.float64) + 0.5) / 2.0**53
             for c in range(4)]
    r1, r2 = np.sqrt(-2 * np.log(u[0])), np.sqrt(-2 * np.log(u[2]))
    return np.column_stack([r1 * np.cos(2 * np.pi * u[1]), r1 * np.sin(2 * np.pi * u[1]),
                            r2 * np.cos(2 * np.pi * u[3])])


def unit_rows(v):
    s = np.linalg.norm(v, axis=1)
    out = np.tile([1.0, 0.0, 0.0], (len(v), 1))
    out[s > 0] = v[s > 0] / s[s > 0, None]
    return out, s


def neighbour_mask(pos, fwd, m) -> np.ndarray:
    """(n, n) bool: j is a neighbour of i."""
    n = len(pos)
    if m["topological"]:
        idx, _, count = k_nearest_visible(pos, fwd, m["k"], blind_angle=m["blind_angle"],
                                          max_range=m["max_range"])
        mask = np.zeros((n, n), bool)
        for i in range(n):
            mask[i, idx[i, :count[i]]] = True
        return mask
    return visible(pos, fwd, m["blind_angle"]) & (squared_distances(pos) < m["radius"] ** 2)


def naive_rules3(pos, fwd, m) -> np.ndarray:
    """(n, 3) flocking acceleration: separation in the head frame, alignment, cohesion."""
    mask = neighbour_mask(pos, fwd, m)
    off = pos[None, :, :] - pos[:, None, :]
    d = np.sqrt(squared_distances(pos))
    with np.errstate(invalid="ignore", divide="ignore"):
        u = np.where(d[..., None] > 0, off / d[..., None], 0.0)
    g = np.where(d <= m["core"], 1.0, np.exp(-((d - m["core"]) / m["sigma"]) ** 2))
    w = mask.astype(float)
    n = w.sum(axis=1)
    safe = np.maximum(n, 1)[:, None]
    sep = -m["w_sep"] * np.einsum("ij,ijd->id", w * g, u) / safe
    sep = sep + np.einsum("id,id->i", sep, fwd)[:, None] * fwd
    ali = m["w_ali"] * (w @ fwd / safe - fwd)
    centre = np.einsum("ij,ijd->id", w, u) / safe
    coh = m["w_coh"] * (centre ** 2).sum(axis=1)[:, None] * \
        np.einsum("ij,ijd->id", w * (1 - g), u) / safe
    return np.where(n[:, None] > 0, sep + ali + coh, 0.0)


def naive_roost(state: State3, fwd, m, members=None):
    """(n, 3) roost acceleration and the return's new (homing, side, pull); the return
    switched by the centroid and heading of `members` ((n,) bool; None: every bird)."""
    if not m["roost"]:
        return np.zeros_like(state.pos), False, state.side, 0.0
    pos = state.pos
    members = np.ones(len(pos), bool) if members is None else members
    acc = np.zeros_like(pos)
    acc[:, 2] = -m["k_vertical"] * (pos[:, 2] - m["altitude"])
    to = np.array(m["roost_xy"]) - pos[members].mean(axis=0)[:2]
    d = np.hypot(*to)
    homing = d > m["roost_radius"] or (state.homing and d > m["inner"])
    side = state.side
    if homing and not state.homing:
        heading = fwd[members].mean(axis=0)
        side = 1.0 if heading[0] * to[1] - heading[1] * to[0] >= 0 else -1.0
    goal = min(m["k_return"] * (d - m["inner"]), m["cap"]) if homing else 0.0
    most = m["cap"] * m["dt"] / m["ramp"]  # the strength changes by at most this a step
    pull = state.pull + np.clip(goal - state.pull, -most, most)
    if pull <= 0:
        return acc, homing, side, pull
    h = fwd[:, :2] / np.linalg.norm(fwd[:, :2], axis=1, keepdims=True)
    own = np.array(m["roost_xy"]) - pos[:, :2]  # each bird aims from where it is
    own = own / np.linalg.norm(own, axis=1, keepdims=True)
    toward = np.sum(h * own, axis=1)
    cross = h[:, 0] * own[:, 1] - h[:, 1] * own[:, 0]
    s = np.where(toward < 0, side, np.where(cross >= 0, 1.0, -1.0))
    push = pull * 0.5 * (1 - toward) * s
    acc[:, 0] += -h[:, 1] * push
    acc[:, 1] += h[:, 0] * push
    return acc, homing, side, pull


def naive_gather(pos, fwd, m, members=None):
    """(n, 3): each bird farther than gather_radius from the centroid of `members` (None:
    every bird) turns toward it, horizontally, square to its heading, by
    min(gather·(e − radius), cap)·(1 − cos θ)/2, the shorter way."""
    members = np.ones(len(pos), bool) if members is None else members
    acc = np.zeros_like(pos)
    if m["gather"] == 0:
        return acc
    to = pos[members].mean(axis=0)[:2] - pos[:, :2]
    e = np.linalg.norm(to, axis=1)
    pull = np.minimum(m["gather"] * (e - m["gather_radius"]), m["gather_cap"])
    on = pull > 0
    h = fwd[:, :2] / np.linalg.norm(fwd[:, :2], axis=1, keepdims=True)
    u = to / np.where(e > 0, e, 1.0)[:, None]
    cos = np.sum(h * u, axis=1)
    left = np.where(h[:, 0] * u[:, 1] - h[:, 1] * u[:, 0] >= 0, 1.0, -1.0)
    push = np.where(on, pull * (1 - cos) / 2 * left, 0.0)
    acc[:, 0], acc[:, 1] = -h[:, 1] * push, h[:, 0] * push
    return acc


def naive_fly(vel, bank, acc, m, roll=None):
    """New (vel, bank) under steering acc: banked flight, or v + a·dt without it. roll:
    (n,) rates (1/s) that replace both of a bird's where above 0 (a zig's)."""
    fwd, speed = unit_rows(vel)
    dt = m["dt"]
    if m["flight"]:
        right = np.column_stack([fwd[:, 1], -fwd[:, 0], np.zeros(len(vel))])
        flat = np.linalg.norm(right, axis=1) < 1e-12
        right[flat] = [0.0, -1.0, 0.0]
        right /= np.linalg.norm(right, axis=1, keepdims=True)
        up = np.cross(right, fwd)
        along = (acc * fwd).sum(1) + (m["cruise"] - speed) / m["tau"]
        target = np.arctan((acc * right).sum(1) / m["g"])
        into = (target * bank < 0) | (np.abs(target) > np.abs(bank))
        rate = np.where(into, m["roll_in"], m["roll_out"])
        if roll is not None:
            rate = np.where(roll > 0, roll, rate)
        bank = bank + (target - bank) * np.minimum(1.0, rate * dt)
        lift = np.cos(bank)[:, None] * up + np.sin(bank)[:, None] * right
        # lift across the path: g times the up vector's vertical part (the pitch's cosine),
        # times what the bank pulls: 1/cos β, up to the load factor
        pull = np.minimum(1.0 / np.cos(bank), m.get("load_factor", 1.0))
        acc = along[:, None] * fwd + (acc * up).sum(1)[:, None] * up + \
            (m["g"] * up[:, 2] * pull)[:, None] * lift
        acc[:, 2] -= m["g"]
    vel = vel + acc * dt
    s = np.linalg.norm(vel, axis=1)
    k = np.where(s > m["max_speed"], m["max_speed"] / np.where(s > 0, s, 1),
                 np.where(s < m["min_speed"], m["min_speed"] / np.where(s > 0, s, 1), 1.0))
    return vel * k[:, None], bank


def naive_part(state: State3, m, flying=None):
    """The rejoin's part ((n,) bool; None: the flock is not split), found again every
    half second: the largest set of the birds `flying` (None: all) linked at under 5 m
    while it holds under 90% of them (a tie: the set of the lowest-numbered bird)."""
    from scipy.sparse.csgraph import connected_components

    if m["rejoin"] == 0:
        return None
    if state.step % m["rejoin_every"]:
        return state.part
    idx = np.arange(len(state.pos)) if flying is None else np.flatnonzero(flying)
    _, labels = connected_components(squared_distances(state.pos[idx]) < 25.0,
                                     directed=False)
    sizes = np.bincount(labels)
    if sizes.max() >= 0.9 * len(idx):
        return None
    part = np.zeros(len(state.pos), bool)
    part[idx[labels == np.argmax(sizes)]] = True
    return part


def naive_pulls(state: State3, fwd, m, members, part):
    """The roost's and the gather's steering and the return's state: while the flock is
    split the return reads its largest part and the gather pulls toward it at `rejoin`."""
    if part is not None:
        members, m = part, dict(m, gather=m["rejoin"])
    push, homing, side, pull = naive_roost(state, fwd, m, members)
    return push + naive_gather(state.pos, fwd, m, members), homing, side, pull


def naive_step3(state: State3, m, extra=None, roll=None) -> State3:
    """One step; extra: (n, 3) steering added to every bird's, roll: as naive_fly's."""
    fwd, _ = unit_rows(state.vel)
    acc = naive_rules3(state.pos, fwd, m)
    part = naive_part(state, m)
    push, homing, side, pull = naive_pulls(state, fwd, m, None, part)
    acc = acc + push + m["noise"] * naive_noise(m["seed"], len(state.pos), state.step)
    if extra is not None:
        acc = acc + extra
    vel, bank = naive_fly(state.vel, state.bank, acc, m, roll)
    pos = state.pos + vel * m["dt"]
    below = pos[:, 2] < 0
    pos[below, 2] = 0.0
    vel[below, 2] = np.maximum(vel[below, 2], 0.0)
    return replace(state, pos=pos, vel=vel, bank=bank, step=state.step + 1, homing=homing,
                   side=side, pull=pull, part=part)


def naive_landing_step3(state: State3, m, land, peel):
    """One step of a landing flock: (State3, the landing states (n,) 0 flying, 1 landing,
    2 landed, the peel steps). The birds peel and change state first (naive_peel,
    naive_landing); the return is switched by the birds that were flying before this
    step's peel (every bird, when all or none were); a landed bird stays at rest and is
    nobody's neighbour; the others fly by the rules among the birds in the air, a
    flying bird with the roost's steering, a landing one with the funnel's instead."""
    L = m["landing"]
    n = len(state.pos)
    fwd, _ = unit_rows(state.vel)
    flying = land == 0
    members = flying if 0 < flying.sum() < n else None
    part = naive_part(state, m, flying)
    push, homing, side, pull = naive_pulls(state, fwd, m, members, part)
    peel = naive_peel(state.step, L["first"], L["spread"], 10, state.pos, land, peel,
                      L["roost"])
    land, funnel = naive_landing(state.step, state.pos, fwd, peel, land, L["roost"],
                                 L["radius"], L["slope"], L["strength"])
    air = land != 2
    acc = np.zeros_like(state.pos)
    acc[air] = naive_rules3(state.pos[air], fwd[air], m)
    acc += np.where((land == 0)[:, None], push, 0.0) + \
        np.where((land == 1)[:, None], funnel, 0.0)
    acc += m["noise"] * naive_noise(m["seed"], n, state.step)
    vel, bank = naive_fly(state.vel, state.bank, acc, m)
    pos = state.pos + vel * m["dt"]
    below = pos[:, 2] < 0
    pos[below, 2] = 0.0
    vel[below, 2] = np.maximum(vel[below, 2], 0.0)
    pos[~air], vel[~air], bank[~air] = state.pos[~air], 0.0, 0.0
    return replace(state, pos=pos, vel=vel, bank=bank, step=state.step + 1, homing=homing,
                   side=side, pull=pull, part=part), land, peel


def model_of(scene) -> dict:
    """The reference's parameters, read from a scene's settings (plain numbers)."""
    r, f, ro, w = scene.rules, scene.flight, scene.roost, scene.world
    m = dict(topological=r.neighbours == "topological", k=r.topological_count,
             blind_angle=r.blind_angle, radius=r.perception_radius,
             max_range=r.max_range if r.max_range is not None else math.inf,
             core=r.hard_core, sigma=r.separation_sigma, w_sep=r.separation_weight,
             w_ali=r.alignment_weight, w_coh=r.cohesion_weight, dt=scene.scene.dt,
             min_speed=scene.flock.min_speed, max_speed=scene.flock.max_speed,
             seed=scene.scene.seed, flight=f is not None, roost=ro is not None,
             noise=f.noise if f is not None else 0.0, gather=r.gather,
             gather_radius=r.gather_radius, gather_cap=r.gather_cap, rejoin=r.rejoin,
             rejoin_every=max(1, round(0.5 / scene.scene.dt)))
    if f is not None:
        m.update(cruise=f.cruise_speed, tau=f.speed_time, roll_in=f.roll_in,
                 roll_out=f.roll_out, g=f.gravity, load_factor=f.load_factor)
    if ro is not None:
        m.update(roost_xy=ro.position or (w.width / 2, w.height / 2), altitude=ro.altitude,
                 k_vertical=ro.vertical_strength, roost_radius=ro.radius,
                 inner=ro.radius * (1 - ro.hysteresis), k_return=ro.return_strength,
                 cap=ro.return_cap, ramp=2.0)  # the return reaches its cap over 2 s
        if ro.landing_at is not None:
            dt = scene.scene.dt
            m["landing"] = dict(first=round(ro.landing_at / dt),
                                spread=max(ro.landing_spread / dt, 1.0),
                                roost=m["roost_xy"], radius=ro.landing_radius,
                                slope=ro.landing_slope, strength=ro.landing_strength)
    return m


# --- The hunt's waves and the landing (docs/model.md), from docs/model.md's description. ---

def naive_zig_begin(step, pos, fwd, knn, start, side, origin, hawk, range2, reaction,
                    refractory):
    """(start, side, origin) after `step`: refractory birds keep theirs; birds within the
    startle range of hawk (3,) or None begin, turning away, of origin `step`; else a bird
    copies the side and origin of its nearest listed neighbour that began exactly
    `reaction` steps ago. knn: list of index arrays (nearest first)."""
    new_start, new_side, new_origin = start.copy(), side.copy(), origin.copy()
    free = step - start >= refractory
    startled = np.zeros(len(pos), bool)
    if hawk is not None:
        off = pos - np.asarray(hawk)
        startled = free & ((off ** 2).sum(axis=1) < range2)
        left = np.column_stack([-fwd[:, 1], fwd[:, 0]])
        away = np.where((left * off[:, :2]).sum(axis=1) >= 0.0, 1.0, -1.0)
        new_start[startled], new_side[startled] = step, away[startled]
        new_origin[startled] = step
    for i in np.flatnonzero(free & ~startled):
        hits = [j for j in knn[i] if step - start[j] == reaction]
        if hits:
            new_start[i], new_side[i], new_origin[i] = step, side[hits[0]], origin[hits[0]]
    return new_start, new_side, new_origin


def naive_zig_accel(step, start, side, fwd, zig, zig_steps, turn=0.0):
    """(n, 3): zig·side·((1 − turn)·sin(2π e/zig_steps) + turn·sin(π e/zig_steps)) along
    the horizontal left for 0 ≤ e < zig_steps."""
    e = step - start
    on = (e >= 0) & (e < zig_steps)
    h = np.hypot(fwd[:, 0], fwd[:, 1])
    shape = (1 - turn) * np.sin(2 * np.pi * e / zig_steps) + turn * np.sin(np.pi * e / zig_steps)
    a = np.where(on & (h > 0), zig * side * shape / np.where(h > 0, h, 1.0), 0.0)
    return np.column_stack([-fwd[:, 1] * a, fwd[:, 0] * a, np.zeros(len(e))])


def naive_landing(step, pos, fwd, peel, state, roost, radius, slope, strength, low=0.5,
                  scale=10.0, steepest=1.5):
    """(new state, landing steering (n, 3)): flying → landing at the peel step, landing →
    landed below `low` m within radius of roost (x, y); the steering strength·(d − fwd),
    d the unit vector toward the roost descending at slope (beyond the radius) plus the
    height over the funnel slope·max(h − radius, 0) over `scale`, within [0, steepest]
    (level, never up, under the funnel); straight down over the roost itself."""
    state = state.copy()
    state[(state == 0) & (step >= peel)] = 1
    dx, dy = roost[0] - pos[:, 0], roost[1] - pos[:, 1]
    h = np.hypot(dx, dy)
    state[(state == 1) & (pos[:, 2] < low) & (h < radius)] = 2
    funnel = slope * np.maximum(h - radius, 0.0)
    down = np.clip(np.where(h > radius, slope, 0.0) + (pos[:, 2] - funnel) / scale,
                   0.0, steepest)
    safe = np.where(h > 0, h, 1.0)
    d = np.where((h > 0)[:, None], np.column_stack([dx / safe, dy / safe, -down]),
                 (0.0, 0.0, -1.0))
    d /= np.linalg.norm(d, axis=1)[:, None]
    return state, strength * (d - fwd)


def naive_peel(step, first, spread, every, pos, state, peel, roost):
    """The peel steps after `step` (a copy of peel): from `first`, every `every` steps,
    the birds flying (state 0) without a peel step (> step), ranked by (horizontal
    distance to roost (x, y), index), the first of them given `step`, until
    ceil(n·min(1, (step − first + every)/spread)) birds have begun (state ≠ 0 or a peel
    step ≤ step)."""
    peel = peel.copy()
    if step < first or (step - first) % every:
        return peel
    n = len(pos)
    quota = math.ceil(n * min(1.0, (step - first + every) / spread))
    waiting = [i for i in range(n) if state[i] == 0 and peel[i] > step]
    need = quota - (n - len(waiting))
    ranked = sorted(waiting, key=lambda i: (math.hypot(pos[i, 0] - roost[0],
                                                       pos[i, 1] - roost[1]), i))
    for i in ranked[:max(need, 0)]:
        peel[i] = step
    return peel


def naive_border_ratio(points, nn_median, inside, depth, ball):
    """The issue's estimator with a given hull (inside(x) → bool (m,), depth (n,)):
    outer 10% by depth against inner 50%; density = others within R = 3·nn_median over
    the ball's volume inside the hull (Monte Carlo over `ball`, unit-ball points)."""
    order = np.argsort(depth, kind="stable")
    n = len(points)
    r = 3.0 * nn_median
    groups = order[:max(1, n // 10)], order[n // 2:]
    dens = []
    for g in groups:
        d2 = ((points[g, None] - points[None]) ** 2).sum(axis=2)
        count = (d2 <= r * r).sum(axis=1) - 1
        vol = np.array([inside(points[i] + r * ball).mean() for i in g]) \
            * 4 / 3 * np.pi * r ** 3
        dens.append(np.median(count / vol))
    return dens[0] / dens[1]
