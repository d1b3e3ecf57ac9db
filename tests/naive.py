"""Slow, plainly correct numpy references of one simulation step (docs/model.md).

Everything here is all pairs on (n, n) arrays, written from the model as docs/model.md gives
it and not from the numba kernels: nothing is imported from `render`, so a shared mistake
cannot hide.
Conventions (the same ones the kernels promise):

- neighbours of bird i: every other bird j with distance d < radius (strict); on a torus
  (boundary "wrap") d is the minimum-image distance;
- separation: Σ (p_i − p_j)/d · f(d) over neighbours with 0 < d < sep_radius, where
  f = 1, 1/d, 1/d² for falloff unit / inverse / inverse_square; coincident birds
  (d = 0) push nothing;
- alignment: mean neighbour velocity ("mean"), or that minus the bird's own ("difference");
- cohesion: mean of the offsets p_j − p_i (minimum-image on a torus);
- each weighted rule vector is clamped to length max_force on its own (inf: no clamp);
  a bird with no neighbours gets no flocking acceleration;
- integration: v' = v + a·dt, speed clamped to [min_speed, max_speed] (a bird left with
  exactly zero speed takes velocity (min_speed, 0)), p' = p + v'·dt, wrapped into
  [0, W) × [0, H) on a torus;
- the extra forces (walls, attractor, steering field, containment, hawk) as docs/model.md and
  the scene's documentation state them, one function each.

Shapes: positions and velocities (n, 2) float64; counts (n,) int64.
"""

from __future__ import annotations

import numpy as np

# A wall push stops growing once a bird is within this fraction of the margin of the edge
# (the scene's documented formula strength·(margin/d − 1) is capped there).
WALL_NEAREST_FRACTION = 0.01

FALLOFF_EXPONENT = {"unit": 0.0, "inverse": 1.0, "inverse_square": 2.0}


def pair_offsets(pos, width, height, boundary):
    """offsets[i, j] = p_j − p_i, (n, n, 2); the shortest way round on a torus."""
    offsets = pos[None, :, :] - pos[:, None, :]
    if boundary == "wrap":
        extent = np.array([width, height], dtype=np.float64)
        offsets = offsets - extent * np.round(offsets / extent)
    return offsets


def neighbour_matrix(distance, radius):
    """(n, n) bool: j is a neighbour of i (j ≠ i, distance < radius)."""
    nbr = distance < radius
    np.fill_diagonal(nbr, False)
    return nbr


def clamp_length(vectors, limit):
    """Scale each row of (n, 2) `vectors` down to length `limit` when longer."""
    length = np.sqrt(vectors[:, 0] ** 2 + vectors[:, 1] ** 2)
    scale = np.ones_like(length)
    over = length > limit
    scale[over] = limit / length[over]
    return vectors * scale[:, None]


def naive_rules(pos, vel, *, width, height, boundary, radius, sep_radius, falloff,
                alignment, mask=None):
    """The three unweighted rule vectors and the neighbour counts, all pairs; `mask`
    (n, n) bool, when given, is the neighbour matrix in place of "within radius"
    (topological neighbours, a blind cone).

    Returns dict with sep, ali, coh (n, 2) (zero for birds without neighbours) and
    count (n,) int64, nearest (n,) (inf when no neighbour).
    """
    pos = np.asarray(pos, dtype=np.float64)
    vel = np.asarray(vel, dtype=np.float64)
    offsets = pair_offsets(pos, width, height, boundary)
    distance = np.sqrt(offsets[..., 0] ** 2 + offsets[..., 1] ** 2)
    nbr = neighbour_matrix(distance, radius) if mask is None else mask
    count = nbr.sum(axis=1).astype(np.int64)
    has = count > 0

    # Separation: unit vector away from j, times f(d), for 0 < d < sep_radius.
    pushes = nbr & (distance < sep_radius) & (distance > 0)
    safe_d = np.where(pushes, distance, 1.0)
    weight = np.where(pushes, safe_d ** -(1.0 + FALLOFF_EXPONENT[falloff]), 0.0)
    sep = -(offsets * weight[..., None]).sum(axis=1)

    # Means over neighbours; birds without neighbours keep zero.
    k = np.where(has, count, 1).astype(np.float64)[:, None]
    mean_vel = (nbr[..., None] * vel[None, :, :]).sum(axis=1) / k
    mean_offset = (nbr[..., None] * offsets).sum(axis=1) / k
    if alignment == "mean":
        ali = mean_vel
    elif alignment == "difference":
        ali = mean_vel - vel
    else:
        raise ValueError(f"unknown alignment {alignment!r}")
    ali = np.where(has[:, None], ali, 0.0)
    coh = np.where(has[:, None], mean_offset, 0.0)

    nearest = np.where(nbr, distance, np.inf).min(axis=1) if len(pos) else np.zeros(0)
    return dict(sep=sep, ali=ali, coh=coh, count=count, nearest=nearest)


def naive_local_headings(pos, vel, *, width, height, boundary, radius):
    """(n, 2) mean of the unit headings u_j over each bird's neighbours and itself, birds at
    rest skipped (the diagnostics' local polarisation is its length); zero where all are at
    rest."""
    pos = np.asarray(pos, dtype=np.float64)
    vel = np.asarray(vel, dtype=np.float64)
    speed = np.sqrt(vel[:, 0] ** 2 + vel[:, 1] ** 2)
    unit = np.where(speed[:, None] > 0, vel / np.where(speed > 0, speed, 1.0)[:, None], 0.0)
    offsets = pair_offsets(pos, width, height, boundary)
    distance = np.sqrt(offsets[..., 0] ** 2 + offsets[..., 1] ** 2)
    group = neighbour_matrix(distance, radius) | np.eye(len(pos), dtype=bool)
    group &= (speed > 0)[None, :]
    members = np.maximum(group.sum(axis=1), 1)
    return (group[..., None] * unit[None, :, :]).sum(axis=1) / members[:, None]


def naive_accel(pos, vel, *, width, height, boundary, radius, sep_radius, falloff,
                alignment, w_sep, w_ali, w_coh, max_force=np.inf, mask=None):
    """Flocking acceleration (n, 2) and neighbour counts (n,): Σ clamp(w·rule)."""
    rules = naive_rules(pos, vel, width=width, height=height, boundary=boundary,
                        radius=radius, sep_radius=sep_radius, falloff=falloff,
                        alignment=alignment, mask=mask)
    limit = np.inf if max_force is None else max_force
    acc = (clamp_length(w_sep * rules["sep"], limit)
           + clamp_length(w_ali * rules["ali"], limit)
           + clamp_length(w_coh * rules["coh"], limit))
    acc[rules["count"] == 0] = 0.0
    return acc, rules["count"]


def naive_walls(pos, *, width, height, margin, strength):
    """Hyperbolic wall avoidance: for each edge at distance d (floored at 1% of the margin),
    strength·max(margin/d − 1, 0) pointing away from that edge."""
    pos = np.asarray(pos, dtype=np.float64)
    floor = WALL_NEAREST_FRACTION * margin
    acc = np.zeros_like(pos)
    for axis, extent in enumerate((width, height)):
        to_low = np.maximum(pos[:, axis], floor)
        to_high = np.maximum(extent - pos[:, axis], floor)
        acc[:, axis] = (strength * np.clip(margin / to_low - 1.0, 0.0, None)
                        - strength * np.clip(margin / to_high - 1.0, 0.0, None))
    return acc


def naive_attractor(pos, *, point, strength, radius):
    """Pull toward `point` of length strength·d/(d + radius) (d: distance to the point)."""
    pos = np.asarray(pos, dtype=np.float64)
    toward = np.asarray(point, dtype=np.float64)[None, :] - pos
    d = np.sqrt(toward[:, 0] ** 2 + toward[:, 1] ** 2)
    length = strength * d / (d + radius)
    out = np.zeros_like(pos)
    moving = d > 0
    out[moving] = toward[moving] / d[moving, None] * length[moving, None]
    return out


def naive_integrate(pos, vel, acc, *, dt, min_speed, max_speed, width, height, boundary,
                    turn=None):
    """Semi-implicit Euler with the speed clamp; returns (new_pos, new_vel).

    turn: optional (n,) radians (the steering field) by which each bird's new, clamped
    velocity is rotated counter-clockwise before it moves.
    """
    new_vel = np.asarray(vel, dtype=np.float64) + np.asarray(acc, dtype=np.float64) * dt
    speed = np.sqrt(new_vel[:, 0] ** 2 + new_vel[:, 1] ** 2)
    stopped = speed == 0
    too_fast = speed > max_speed
    too_slow = (speed < min_speed) & ~stopped
    new_vel[too_fast] *= (max_speed / speed[too_fast])[:, None]
    new_vel[too_slow] *= (min_speed / speed[too_slow])[:, None]
    new_vel[stopped] = (min_speed, 0.0)
    if turn is not None:
        c, s = np.cos(turn), np.sin(turn)
        new_vel = np.column_stack([c * new_vel[:, 0] - s * new_vel[:, 1],
                                   s * new_vel[:, 0] + c * new_vel[:, 1]])
    new_pos = np.asarray(pos, dtype=np.float64) + new_vel * dt
    if boundary == "wrap":
        extent = np.array([width, height], dtype=np.float64)
        new_pos = np.mod(new_pos, extent)
        new_pos[new_pos >= extent] = 0.0  # np.mod(-tiny, W) rounds to W
    return new_pos, new_vel


def naive_total_accel(pos, vel, *, width, height, boundary, radius, sep_radius, falloff,
                      alignment, w_sep, w_ali, w_coh, max_force=np.inf, wall_margin=None,
                      wall_strength=None, attractor=None, extra_acc=None, mask=None):
    """Flocking acceleration plus the extra forces, (n, 2), and the neighbour counts (n,).

    Walls act when boundary == "walls" (wall_margin and wall_strength required then).
    attractor: None or dict(point=(x, y), strength=..., radius=...).
    extra_acc: optional (n, 2) acceleration added on top (e.g. a force under test).
    """
    acc, count = naive_accel(pos, vel, width=width, height=height, boundary=boundary,
                             radius=radius, sep_radius=sep_radius, falloff=falloff,
                             alignment=alignment, w_sep=w_sep, w_ali=w_ali, w_coh=w_coh,
                             max_force=max_force, mask=mask)
    if boundary == "walls":
        acc = acc + naive_walls(pos, width=width, height=height, margin=wall_margin,
                                strength=wall_strength)
    if attractor is not None:
        acc = acc + naive_attractor(pos, **attractor)
    if extra_acc is not None:
        acc = acc + extra_acc
    return acc, count


def naive_step(pos, vel, *, dt, min_speed, max_speed, **model):
    """One synchronous step of the whole flock; returns (new_pos, new_vel).

    `model`: the keyword arguments of `naive_total_accel` (width, height, boundary, radius,
    sep_radius, falloff, alignment, w_sep, w_ali, w_coh, max_force, wall_margin,
    wall_strength, attractor, extra_acc).
    """
    acc, _ = naive_total_accel(pos, vel, **model)
    return naive_integrate(pos, vel, acc, dt=dt, min_speed=min_speed, max_speed=max_speed,
                           width=model["width"], height=model["height"],
                           boundary=model["boundary"])


def naive_field(pos, *, time_s, wavelengths, drifts, phases):
    """φ (n,) of the steering field: the mean of three sinusoids drifting along x,
    y and the diagonal (x + y)/√2, each sin(2π·(coordinate − drift·t)/wavelength + phase).
    wavelengths, drifts, phases: 3 values each, in that order (x, y, diagonal)."""
    pos = np.asarray(pos, dtype=np.float64)
    along = (pos[:, 0], pos[:, 1], (pos[:, 0] + pos[:, 1]) / np.sqrt(2.0))
    waves = [np.sin(2 * np.pi * (c - d * time_s) / w + p)
             for c, w, d, p in zip(along, wavelengths, drifts, phases)]
    return sum(waves) / 3.0


def naive_containment(pos, *, centre, semi_axes, strength):
    """The elliptical containment: (acceleration (n, 2), inside (n,) bool).

    Inside the ellipse (on the rim included) the force is exactly zero. Outside, the ray
    from the centre through the bird crosses the rim at q; the bird is pulled toward the
    centre with strength times its distance |p − q| past the rim."""
    pos = np.asarray(pos, dtype=np.float64)
    offset = pos - np.asarray(centre, dtype=np.float64)
    rho = np.sqrt((offset[:, 0] / semi_axes[0]) ** 2 + (offset[:, 1] / semi_axes[1]) ** 2)
    inside = rho <= 1.0
    acc = np.zeros_like(pos)
    out = ~inside
    rim = offset[out] / rho[out, None]  # q − centre
    past = np.sqrt(((offset[out] - rim) ** 2).sum(axis=1))
    toward_centre = -offset[out] / np.sqrt((offset[out] ** 2).sum(axis=1))[:, None]
    acc[out] = strength * past[:, None] * toward_centre
    return acc, inside


def naive_hawk(pos, *, where, radius, strength):
    """The hawk's repulsion (n, 2): length strength·(1 − d/radius)² straight away from the
    hawk for a bird at distance 0 < d < radius; zero elsewhere (and on the hawk itself,
    where there is no direction away)."""
    pos = np.asarray(pos, dtype=np.float64)
    away = pos - np.asarray(where, dtype=np.float64)
    d = np.sqrt(away[:, 0] ** 2 + away[:, 1] ** 2)
    acc = np.zeros_like(pos)
    near = (d > 0) & (d < radius)
    length = strength * (1.0 - d[near] / radius) ** 2
    acc[near] = away[near] / d[near, None] * length[:, None]
    return acc


def naive_hawk_position(time_s, *, start, period, duration, bearing, speed, centre):
    """Where the hawk is at time_s, or None while it is away (docs/model.md): pass k flies from
    start + k·period for `duration` seconds along a chord through `centre` at `speed`,
    centred on it mid-pass, its bearing (degrees for pass 0) turning by the golden angle
    π(3 − √5) each pass."""
    if time_s < start:
        return None
    k = np.floor((time_s - start) / period)
    into_pass = time_s - start - k * period
    if into_pass >= duration:
        return None
    heading = np.deg2rad(bearing) + k * np.pi * (3.0 - np.sqrt(5.0))
    travelled = speed * (into_pass - duration / 2)
    return (centre[0] + travelled * np.cos(heading), centre[1] + travelled * np.sin(heading))
