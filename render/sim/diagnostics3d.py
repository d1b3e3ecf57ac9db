"""Per-frame diagnostics of a 3D flock (docs/model.md), beside the 2D ones of diagnostics.py.

Semi-extents are those of the uniform ellipsoid with the flock's covariance: along each
principal axis sqrt(5·λ), λ the variance along it (a uniform ellipsoid of semi-axis a has
variance a²/5), largest first; the thinnest axis's angle to the vertical is in degrees
(0: a horizontal sheet).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .nearest import k_nearest_visible

COLUMNS3 = ("frame", "time_s", "global_polarisation", "nearest_median_m",
            "extent_major_m", "extent_middle_m", "extent_minor_m", "minor_axis_vertical_deg",
            "speed_p10", "speed_p50", "speed_p90", "bank_p10_deg", "bank_p50_deg",
            "bank_p90_deg", "altitude_p10", "altitude_p50", "altitude_p90",
            "neighbours_mean", "candidates_mean", "proportion_middle", "proportion_longest",
            "border_ratio", "cluster_share", "correlation_length_m", "largest_distance_m",
            "attack", "attacks_done", "last_wave_speed_mps", "last_startled_share",
            "landed_share")

# The costly measures are taken on the first frame at or after each multiple of
# SHAPE_EVERY s (the correlation length: of CORRELATION_EVERY s), NaN (JSON null) in
# between.
SHAPE_EVERY = 0.5
CORRELATION_EVERY = 2.0


def nearest_distances(pos: np.ndarray) -> np.ndarray:
    """(n,) distance to each bird's nearest other bird (no blind cone), m."""
    fwd = np.zeros_like(pos)
    radius = max(1e-3, (np.ptp(pos, axis=0).prod() / max(len(pos), 1)) ** (1 / 3))
    _, d2, _ = k_nearest_visible(pos, fwd, 1, radius=radius)
    return np.sqrt(d2[:, 0])


def shape(pos: np.ndarray) -> tuple[float, float, float, float]:
    """(major, middle, minor semi-extents in m, the minor axis's angle to vertical in
    degrees)."""
    centred = pos - pos.mean(axis=0)
    lam, vec = np.linalg.eigh(centred.T @ centred / max(len(pos), 1))
    semi = np.sqrt(5.0 * np.maximum(lam, 0.0))
    angle = math.degrees(math.acos(min(1.0, abs(float(vec[2, 0])))))
    return float(semi[2]), float(semi[1]), float(semi[0]), angle


def measure3(snap, scene, time: Fraction) -> dict[str, float]:
    """Diagnostics of one 3D state (a Snapshot with its bank) of `scene`, the frame at
    `time` s (which sets the costly measures taken, see SHAPE_EVERY): of the birds in the
    air, landed ones left out (counted in landed_share); NaN once none is."""
    air = np.ones(len(snap.positions), bool) if snap.landed is None else ~snap.landed
    pos, vel = snap.positions[air], snap.velocities[air]
    out = dict.fromkeys(COLUMNS3[2:], math.nan)
    if len(pos):
        speed = np.linalg.norm(vel, axis=1)
        unit = vel[speed > 0] / speed[speed > 0, None]
        major, middle, minor, angle = shape(pos)
        out.update(global_polarisation=float(np.linalg.norm(unit.mean(axis=0)))
                   if len(unit) else 0.0,
                   nearest_median_m=float(np.median(nearest_distances(pos))) if len(pos) > 1
                   else math.nan,
                   extent_major_m=major, extent_middle_m=middle, extent_minor_m=minor,
                   minor_axis_vertical_deg=angle)
        bank = np.degrees(snap.bank[air]) if snap.bank is not None else np.zeros(len(pos))
        for name, values in (("speed", speed), ("bank", bank), ("altitude", pos[:, 2])):
            p = np.percentile(values, [10, 50, 90])
            suffix = "_deg" if name == "bank" else ""
            for q, v in zip((10, 50, 90), p):
                out[f"{name}_p{q}{suffix}"] = float(v)
        out["neighbours_mean"] = float(snap.neighbours[air].mean())
        out["candidates_mean"] = float(snap.candidates[air].mean())
    fps = scene.output.fps
    out.update(flock_measures(snap, pos, vel, out, sampled(time, fps, SHAPE_EVERY),
                              sampled(time, fps, CORRELATION_EVERY)))
    return out


def sampled(time: Fraction, fps: Fraction, period: float) -> bool:
    """Whether the frame at `time` s is the first at or after a multiple of `period` s:
    one a period at any frame rate (a frame's step had to be a multiple of the period's
    steps, and at 23.976 fps up to 32 s went unmeasured)."""
    p = Fraction(period)
    return math.floor(time / p) > math.floor((time - 1 / Fraction(fps)) / p)


def flock_measures(snap, flying, vel, out, shaped: bool,
                   correlated: bool) -> dict[str, float]:
    """The proportions (middle and longest semi-extent over the thinnest), the attack and
    landing columns, and on the sampled frames the border ratio, the largest cluster's
    share, the correlation length and the largest pairwise distance (flockstats3d) of the
    birds in the air (flying, vel; their median nearest-neighbour distance in out)."""
    from . import flockstats3d as fs

    minor = out["extent_minor_m"]
    res = {"proportion_middle": out["extent_middle_m"] / minor if minor > 0 else math.nan,
           "proportion_longest": out["extent_major_m"] / minor if minor > 0 else math.nan}
    nan = math.nan
    res.update(border_ratio=nan, cluster_share=nan, correlation_length_m=nan,
               largest_distance_m=nan)
    if len(flying) > 20 and shaped:
        res["border_ratio"] = fs.border_ratio(flying, out["nearest_median_m"])
        res["cluster_share"] = fs.largest_cluster(flying)
    if len(flying) > 20 and correlated:
        res["correlation_length_m"], res["largest_distance_m"] = \
            fs.correlation_length(flying, vel)
    last = snap.last_attack
    res.update(attack=float(snap.attack), attacks_done=float(last[0]) if last else 0.0,
               last_wave_speed_mps=last[1] if last else nan,
               last_startled_share=last[2] if last else nan,
               landed_share=float(snap.landed.mean()) if snap.landed is not None else 0.0)
    return res
