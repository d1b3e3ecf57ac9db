"""The sky and ground seen from a `Pose` (docs/optics.md): a vertical gradient by elevation angle,
an optional sun glow, the ground below the horizon hazed toward the horizon's colour, and
an optional treeline or reed bed along the horizon drawn as a vector silhouette.

`sky_for(scene, pose)` resolves the palette into a `Sky`; `paint_sky(sky, window, out)`
draws it as opaque cairo ARGB32 bytes (B, G, R, A), which `optics.compose` composites the
birds over. A still camera's sky is drawn twice, then kept.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from functools import lru_cache
from typing import NamedTuple

import cairo
import numpy as np

from ..sim.jit import inline, serial
from ..draw.paths import append_polygons, polygon_records
from ..draw import IMAGE_MAX_SIDE
from .camera import on_screen
from .colour import DITHER, ENCODE_STEPS, LEVELS, hex_linear, to_srgb
from .types import Pose

SKY_LUT = 1024  # gradient samples over sin(elevation) ∈ [0, 1]
# Haze leaves 5% of the contrast at the visibility distance (the meteorological 5%):
# 0.05^(d/V) = exp(LN_005·d/V).
LN_005 = math.log(0.05)

# Each theme's 3D look: sky stops [(elevation °, colour)], ground, birds, accent, sun
# [(azimuth °, elevation °)] and its glow (colour, radius °), treeline. The birds of dusk
# are starlings against the light: albedo ≈ 0.07 under this sky's light on a level
# surface reads (25, 22, 35) on their backs, their undersides a few per cent of that,
# (2, 1, 3): seen from the ground, from below and the side, between the two, near black.
THEMES_3D = {
    "light": dict(sky=((0.0, "#EDE8DC"), (30.0, "#DCDCDA"), (90.0, "#C6D0DC")),
                  ground="#D6D0C0", bird="#2848CD", accent="#BE441C", sun=None,
                  sun_colour="#FFF4DC", sun_glow=10.0, treeline="none",
                  treeline_colour="#8E8A80"),
    "dark": dict(sky=((0.0, "#1C2130"), (25.0, "#10131B"), (90.0, "#07090D")),
                 ground="#050608", bird="#96B4FF", accent="#FF7854", sun=None,
                 sun_colour="#5A6480", sun_glow=10.0, treeline="none",
                 treeline_colour="#030405"),
    "dusk": dict(sky=((0.0, "#F4A95E"), (3.0, "#EE9365"), (10.0, "#C98285"),
                      (25.0, "#7E79A0"), (50.0, "#3E4E84"), (90.0, "#1D2A57")),
                 ground="#1A1716", bird="#151318", accent="#6B2A1A", sun=(95.0, -1.5),
                 sun_colour="#FFB45A", sun_glow=14.0, treeline="trees",
                 treeline_colour="#141214"),
}
TREELINE_DISTANCE_M = 600.0
TREELINE_HEIGHT_M = 15.0


class Sky(NamedTuple):
    """What the frame shows behind the birds, and the birds' own colours (linear RGB).

    lut: (SKY_LUT, 3) the gradient over sin(elevation) 0…1; ground (3,); visibility m (inf:
    no haze); sun (3,) unit direction toward it, glow 1 − cos(glow radius) (0: none);
    treeline "none" | "trees" | "reeds" at treeline_distance m, treeline_height m tall,
    seeded by `seed`."""

    pose: Pose
    lut: np.ndarray
    ground: np.ndarray
    visibility: float
    sun: np.ndarray
    sun_colour: np.ndarray
    glow: float
    treeline: str
    treeline_colour: np.ndarray
    treeline_distance: float
    treeline_height: float
    seed: int
    bird: np.ndarray
    accent: np.ndarray


@lru_cache(maxsize=8)
def gradient_lut(stops) -> np.ndarray:
    """(SKY_LUT, 3) linear RGB over sin(elevation) from 0 to 1 through `stops` ((elevation
    °, "#RRGGBB"), …, increasing), held beyond the first and last: in linear light, each
    channel a monotone cubic in elevation (PCHIP). Straight lines between the stops would
    turn the gradient's slope at each one, a corner the eye reads as a band across the sky
    (the dusk sky's 50° stop arched across a portrait frame); the cubic passes each stop
    with one slope and never leaves the range of the two stops either side. Kept for
    the stops (a tuple): every frame's sky asks for it, and the cubic takes a quarter of
    a millisecond."""
    from scipy.interpolate import PchipInterpolator

    angles = np.array([s[0] for s in stops], dtype=np.float64)
    colours = np.array([hex_linear(s[1]) for s in stops])
    if len(stops) == 1:
        lut = np.tile(colours[0], (SKY_LUT, 1))
    else:
        elevation = np.degrees(np.arcsin(np.linspace(0.0, 1.0, SKY_LUT)))
        lut = PchipInterpolator(angles, colours)(np.clip(elevation, angles[0], angles[-1]))
    lut.setflags(write=False)  # shared by every frame
    return lut


def sun_direction(azimuth_deg: float, elevation_deg: float) -> np.ndarray:
    """(3,) unit vector toward the sun: azimuth counter-clockwise from +x, z up."""
    a, e = math.radians(azimuth_deg), math.radians(elevation_deg)
    return np.array([math.cos(e) * math.cos(a), math.cos(e) * math.sin(a), math.sin(e)])


def sky_for(scene, pose: Pose) -> Sky:
    """The scene's palette seen from `pose`: the theme's 3D look, then each [palette] key
    the scene sets (`background` alone makes a flat sky, `ink` alone colours the birds),
    hazed by [atmosphere] (none: visibility infinite)."""
    pal = scene.palette
    look = dict(THEMES_3D[pal.theme])
    for key in ("sky", "ground", "bird", "sun", "sun_colour", "sun_glow", "treeline",
                "treeline_colour", "accent"):
        if getattr(pal, key) is not None:
            look[key] = getattr(pal, key)
    if pal.sky is None and pal.background is not None:
        look["sky"] = ((0.0, pal.background),)
    if pal.bird is None and pal.ink is not None:
        look["bird"] = pal.ink
    visibility = math.inf if scene.atmosphere is None else scene.atmosphere.visibility
    sun = look["sun"]
    glow = 0.0 if sun is None or look["sun_glow"] <= 0 else \
        1.0 - math.cos(math.radians(look["sun_glow"]))
    return Sky(pose, gradient_lut(look["sky"]), hex_linear(look["ground"]), visibility,
               np.zeros(3) if sun is None else sun_direction(*sun),
               hex_linear(look["sun_colour"]), glow, look["treeline"],
               hex_linear(look["treeline_colour"]),
               pal.treeline_distance or TREELINE_DISTANCE_M,
               pal.treeline_height or TREELINE_HEIGHT_M, scene.scene.seed,
               hex_linear(look["bird"]), hex_linear(look["accent"]))


def ground_band(sky: Sky, eye_m: float) -> float:
    """How far below the horizon, in sine of elevation, the hazed ground takes to turn
    from the airlight to 95% of its own colour: its distance along a ray, eye/(−sin), is
    the visibility's 5.8% there (0.05^(d/V) = 0.95). Under 0.01 for an eye 1.7 m up in
    10 km of visibility; 0 without haze or with the eye on the ground."""
    if math.isinf(sky.visibility) or eye_m <= 0.0:
        return 0.0
    return min(eye_m * LN_005 / (sky.visibility * math.log(0.95)), 1.0)


GLOW_LUT = 8192  # glow samples over the cosine of the angle off the sun, −1 … 1


def elevation_table(sky: Sky, eye_m: float) -> np.ndarray:
    """(2·SKY_LUT − 1, 4) over sin(elevation) from −1 to 1: linear RGB of the hazed ground
    below the horizon (its distance along the ray is eye/(−sin)) and of the gradient
    above, then how much of the sun's glow shows (all of it in the sky; over the ground,
    only in the haze between it and the eye)."""
    s = np.linspace(-1.0, 0.0, SKY_LUT)[:-1]
    keep = np.ones_like(s)
    if not math.isinf(sky.visibility):
        with np.errstate(divide="ignore"):
            keep = np.exp(LN_005 * (eye_m / -s) / sky.visibility)
    ground = keep[:, None] * sky.ground + (1 - keep[:, None]) * airlight(sky)
    return np.column_stack([np.concatenate([ground, sky.lut]),
                            np.concatenate([1 - keep, np.ones(SKY_LUT)])])


def glow_table(sky: Sky) -> np.ndarray:
    """(GLOW_LUT,) the glow's share of sun_colour over cos(angle off the sun), −1 … 1:
    exp((cos − 1)/(1 − cos radius)) ≈ exp(−θ²/r²)."""
    if sky.glow <= 0:
        return np.zeros(GLOW_LUT)
    return np.exp((np.linspace(-1.0, 1.0, GLOW_LUT) - 1.0) / sky.glow)


# The sky is smooth: it is computed on a grid of points (on the full frame's pixels, so a
# window matches the frame) and interpolated between, except in cells the horizon crosses,
# whose pixels are computed one by one so the horizon stays sharp. The points are GRID_PX
# apart, or COARSE_PX where that spans at most COARSE_DEG of view (1080p at up to 61°):
# the interpolation's error grows with the angle between points, and 8 px at 0.5° err as
# 4 px at 1° do (320x240 at 30°), a pixel within 1.4 codes of its ray at a kink between
# two stops (docs/optics.md).
GRID_PX, COARSE_PX, COARSE_DEG = 4, 8, 0.5


def grid_px(focal: float) -> int:
    """How many pixels apart the sky's grid points are in a frame of focal length `focal`
    px: COARSE_PX when that spans at most COARSE_DEG, else GRID_PX."""
    return COARSE_PX if COARSE_PX <= focal * math.radians(COARSE_DEG) else GRID_PX


@inline
def _ray(X, Y, cx, cy, focal, right, up, forward, sun):
    """The ray through full-frame pixel (X, Y): its sin(elevation), then the cosine of
    its angle off the sun. Branch-free, so a row of them vectorises."""
    u = (X + 0.5 - cx) / focal
    v = (Y + 0.5 - cy) / focal
    dx = forward[0] + u * right[0] - v * up[0]
    dy = forward[1] + u * right[1] - v * up[1]
    dz = forward[2] + u * right[2] - v * up[2]
    inv = 1.0 / math.sqrt(dx * dx + dy * dy + dz * dz)
    return dz * inv, (dx * sun[0] + dy * sun[1] + dz * sun[2]) * inv


@inline
def _colour(sine, sun_cos, table, glow, sun_colour, rgb):
    """Linear RGB (into rgb (3,)) of a ray (see `_ray`): `table` at its sine plus the
    sun's glow at its angle off the sun, rolled off toward full scale (`_shoulder`)."""
    half = (table.shape[0] - 1) / 2.0
    glow_half = (glow.shape[0] - 1) / 2.0
    f = (sine + 1.0) * half
    i = min(int(f), table.shape[0] - 2)
    t = f - i
    f = (sun_cos + 1.0) * glow_half
    j = min(int(f), glow.shape[0] - 2)
    g = glow[j] + (glow[j + 1] - glow[j]) * (f - j)
    g *= table[i, 3] + (table[i + 1, 3] - table[i, 3]) * t
    for c in range(3):
        base = table[i, c] + (table[i + 1, c] - table[i, c]) * t
        rgb[c] = min(max(_shoulder(base, g * sun_colour[c]), 0.0), 1.0)


@inline
def _shoulder(base, light):
    """`light` (≥ 0) added to `base` in linear light, rolled off toward 1 as film's
    shoulder does: the sum as it is up to the knee, max(base, KNEE), and over it
    knee + (1 − knee)·(1 − exp(−(sum − knee)/(1 − knee))), which meets the straight line
    with its slope and never reaches 1. Clipped instead, a channel meeting full scale
    turns the glow's hue along an arc round the sun (its red 13° off it, at dusk)."""
    knee = max(base, KNEE)
    over = base + light - knee
    if over <= 0.0 or knee >= 1.0:
        return base + light
    return knee + (1.0 - knee) * (1.0 - math.exp(-over / (1.0 - knee)))


KNEE = 0.8  # linear (sRGB 231): where the glow's shoulder begins


@serial
def _ray_colours(u, v, cx, cy, focal, right, up, forward, table, glow, sun, sun_colour, out):
    """out (n, 3): `_colour` of the ray through each point (u[n], v[n]) of the frame."""
    rgb = np.empty(3)
    for n in range(u.shape[0]):
        sine, sun_cos = _ray(u[n] - 0.5, v[n] - 0.5, cx, cy, focal, right, up, forward, sun)
        _colour(sine, sun_cos, table, glow, sun_colour, rgb)
        for c in range(3):
            out[n, c] = rgb[c]


def sky_colours(sky: Sky, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n, 3) linear RGB of the sky and ground, glow included, at points (u, v) px of the
    full frame (a pixel's centre at +0.5): what `paint_sky` draws there, before its
    dither and the treeline."""
    p = sky.pose
    u, v = (np.ascontiguousarray(np.ravel(a), np.float64) for a in (u, v))
    out = np.empty((len(u), 3))
    _ray_colours(u, v, 0.5 * p.width, p.cy, float(p.focal), p.right.astype(np.float64),
                 p.up.astype(np.float64), p.forward.astype(np.float64),
                 elevation_table(sky, max(float(p.position[2]), 0.0)), glow_table(sky),
                 sky.sun, sky.sun_colour, out)
    return out


@serial
def _sky_kernel(ox, oy, grid, cx, cy, focal, right, up, forward, table, glow, sun,
                sun_colour, band, levels, dither, out, words):
    """Each pixel of `out` (h, 4·w) BGRA bytes, seen as `words` (h, w) cairo ARGB32 words,
    pixel (x, y) being (ox + x, oy + y) of the full frame: the sRGB values (0…255,
    `levels` over linear light) of each ray's `_colour`, interpolated between grid points
    `grid` px apart, plus `dither` at (Y, X) modulo its size, floored to codes; pixel by
    pixel in the cells that cross the horizon or reach within `band` (a sine of
    elevation) below it, where the hazed ground changes faster than a cell can follow."""
    h, w = out.shape[0], out.shape[1] // 4
    gx0, gy0 = ox // grid, oy // grid
    gw = (ox + w - 1) // grid - gx0 + 2
    gh = (oy + h - 1) // grid - gy0 + 2
    codes = np.empty((gh, gw, 3), np.float32)
    sine = np.empty((gh, gw))
    sun_cos = np.empty(gw)
    rgb = np.empty(3)
    for j in range(gh):
        # The rays of a grid row first, in a loop of their own that the compiler
        # vectorises (square roots and divisions side by side: 2.5 → 1.4 ms at 1080p),
        # then their colours through the tables.
        for i in range(gw):
            sine[j, i], sun_cos[i] = _ray((gx0 + i) * grid, (gy0 + j) * grid, cx, cy,
                                          focal, right, up, forward, sun)
        for i in range(gw):
            _colour(sine[j, i], sun_cos[i], table, glow, sun_colour, rgb)
            for c in range(3):
                codes[j, i, c] = levels[int(rgb[c] * ENCODE_STEPS + 0.5)]
    mixed = np.empty((gh - 1, gw - 1), np.bool_)  # the horizon or its band in the cell
    for j in range(gh - 1):
        for i in range(gw - 1):
            lo = min(min(sine[j, i], sine[j, i + 1]), min(sine[j + 1, i], sine[j + 1, i + 1]))
            hi = max(max(sine[j, i], sine[j, i + 1]), max(sine[j + 1, i], sine[j + 1, i + 1]))
            mixed[j, i] = lo < 0.0 and hi >= -band
    # Between two rows of the grid a pixel's value is top + step·(Y mod grid), both
    # interpolated along the row once per band of `grid` rows; each pixel row is then one
    # plain pass in float32 that writes whole words, which the compiler vectorises.
    mask_y, mask_x = dither.shape[0] - 1, dither.shape[1] - 1  # sizes: powers of two
    noises = np.empty((dither.shape[0], w), np.float32)  # the pattern's rows along out's
    for k in range(dither.shape[0]):
        for x in range(w):
            noises[k, x] = dither[k, (ox + x) & mask_x]
    skip = ox - gx0 * grid  # top's column of out's column 0
    top = np.empty((3, (gw - 1) * grid), np.float32)
    step = np.empty_like(top)
    filled = -1  # the band of rows top and step hold
    row_sine, row_cos = np.empty(w), np.empty(w)
    for y in range(h):
        Y = oy + y
        j = Y // grid - gy0
        if j != filled:
            _band(codes[j], codes[j + 1], grid, top, step)
            filled = j
        # Each channel a row of its own: a slice of one row stays contiguous to the
        # compiler (a slice across rows does not, and the pass did not vectorise).
        _encode_row(top[0, skip:skip + w], top[1, skip:skip + w], top[2, skip:skip + w],
                    step[0, skip:skip + w], step[1, skip:skip + w], step[2, skip:skip + w],
                    np.float32(Y % grid), noises[Y & mask_y], words[y])
        pattern = dither[Y & mask_y]
        i = 0
        while i < gw - 1:  # runs of cells at the horizon: pixel by pixel
            if not mixed[j, i]:
                i += 1
                continue
            k = i + 1
            while k < gw - 1 and mixed[j, k]:
                k += 1
            lo, hi = max((gx0 + i) * grid - ox, 0), min((gx0 + k) * grid - ox, w)
            # The run's rays first, in a loop the compiler vectorises (as the grid's).
            for x in range(lo, hi):
                row_sine[x], row_cos[x] = _ray(ox + x, Y, cx, cy, focal, right, up, forward,
                                               sun)
            for x in range(lo, hi):
                _colour(row_sine[x], row_cos[x], table, glow, sun_colour, rgb)
                d = pattern[(ox + x) & mask_x]
                for c in range(3):
                    out[y, 4 * x + 2 - c] = int(levels[int(rgb[c] * ENCODE_STEPS + 0.5)] + d)
            i = k


@inline
def _band(upper, lower, grid, top, step):
    """top[c, grid·i + k]: the value k/grid of the way from upper[i, c] to
    upper[i + 1, c] (grid values of channel c, float32); step: what it gains a pixel row
    toward the same point between lower's."""
    for c in range(3):
        for i in range(upper.shape[0] - 1):
            a0, a1 = upper[i, c], upper[i + 1, c]
            b0, b1 = lower[i, c], lower[i + 1, c]
            for k in range(grid):
                f = np.float32(k / grid)
                t = a0 + (a1 - a0) * f
                top[c, grid * i + k] = t
                step[c, grid * i + k] = (b0 + (b1 - b0) * f - t) / np.float32(grid)


@inline
def _encode_row(top_r, top_g, top_b, step_r, step_g, step_b, rows, noise, words):
    """words (w,) opaque ARGB32: each channel's value top + step·rows plus its dither,
    floored."""
    for x in range(noise.shape[0]):
        d = noise[x]
        red = np.uint32(np.int32(top_r[x] + step_r[x] * rows + d))
        green = np.uint32(np.int32(top_g[x] + step_g[x] * rows + d))
        blue = np.uint32(np.int32(top_b[x] + step_b[x] * rows + d))
        words[x] = np.uint32(0xFF000000) | (red << 16) | (green << 8) | blue


def _window_key(sky: Sky, window) -> tuple:
    # The eye's height, not its place: the sky, the ground and the treeline (a ring round
    # the camera) are the same from anywhere at one height, so a tracking camera's sky
    # is drawn once.
    p = sky.pose
    arrays = (p.position[2:], p.right, p.up, p.forward, sky.lut, sky.ground, sky.sun,
              sky.sun_colour, sky.treeline_colour)
    return (tuple(a.tobytes() for a in arrays), p.focal, p.width, p.height, p.cy,
            sky.visibility, sky.glow, sky.treeline, sky.treeline_distance,
            sky.treeline_height, sky.seed, tuple(window))


# The last window asked for, and its pixels once asked for twice running: one tuple, read
# and replaced whole, since the drawing threads (and a loop's measures) paint at once.
_kept: tuple | None = None


def paint_sky(sky: Sky, window, out: np.ndarray) -> None:
    """Draw the sky and ground of `window` (x, y, w, h px of the full frame) into `out`
    (h, w, 4) uint8 BGRA, C-contiguous (its rows are drawn as bytes, the treeline by
    cairo), opaque. A window asked for twice running (a still camera) is
    kept and copied from then on; a moving camera's sky is drawn straight into `out`."""
    if not out.flags.c_contiguous:  # its rows are drawn as bytes: a copy would be lost
        raise ValueError("paint_sky draws into a C-contiguous (h, w, 4) array")
    global _kept
    key, kept = _window_key(sky, window), _kept
    if kept is not None and kept[0] == key and kept[1] is not None:
        np.copyto(out, kept[1])
        return
    x, y = int(window[0]), int(window[1])
    p = sky.pose
    eye_m = max(float(p.position[2]), 0.0)
    _sky_kernel(x, y, grid_px(float(p.focal)), 0.5 * p.width, p.cy,
                float(p.focal), p.right.astype(np.float64), p.up.astype(np.float64),
                p.forward.astype(np.float64), elevation_table(sky, eye_m), glow_table(sky),
                sky.sun, sky.sun_colour, ground_band(sky, eye_m), LEVELS, DITHER,
                out.reshape(len(out), -1), out.view(np.uint32).reshape(out.shape[:2]))
    if sky.treeline != "none":
        draw_treeline(out, sky, window)
    _kept = (key, out.copy() if kept is not None and kept[0] == key else None)


def sky_pixels(sky: Sky, window) -> np.ndarray:
    """The sky and ground of `window` (x, y, w, h px of the full frame): a new (h, w, 4)
    uint8 BGRA array, opaque."""
    out = np.empty((int(window[3]), int(window[2]), 4), np.uint8)
    paint_sky(sky, window, out)
    return out


PROFILE_SAMPLES = 8192  # around the full horizon: 0.46 m apart at 600 m


@lru_cache(maxsize=8)
def horizon_profile(kind: str, seed: int) -> np.ndarray:
    """(PROFILE_SAMPLES,) heights, as a share of the treeline's height, at azimuths
    2π·i/PROFILE_SAMPLES: a treeline's outline from above (`tree_row`: its hedge, crowns
    and trunks) or a reed bed (`reed_bed`), the tallest 1. Seeded: the same scene draws
    the same horizon."""
    if kind == "trees":
        hedge, discs, _, _ = tree_row(seed)
        heights = hedge.copy()
        for centre, height, radius in discs:
            _disc(heights, centre, height, radius)
    else:
        heights = reed_bed(np.random.default_rng([seed, 0x7EE5]), PROFILE_SAMPLES)
    profile = heights / heights.max()
    profile.setflags(write=False)  # shared by every frame
    return profile


def smooth_noise(rng, n: int, period: int) -> np.ndarray:
    """(n,) noise in [−1, 1] varying over about `period` samples, periodic over n."""
    knots = rng.uniform(-1.0, 1.0, max(n // period, 2))
    x = np.arange(n) * len(knots) / n
    return np.interp(x, np.arange(len(knots) + 1), np.append(knots, knots[0]))


# Samples per unit of the profile's height at the default treeline (15 m tall, samples
# 0.46 m apart at 600 m): crowns are built round in metres there.
ASPECT = TREELINE_HEIGHT_M / (2 * math.pi * TREELINE_DISTANCE_M / PROFILE_SAMPLES)


def _disc(heights: np.ndarray, centre: float, base: float, radius: float) -> None:
    """Raise `heights` (periodic) to the top of a disc of `radius` (height units, round
    at ASPECT) centred `base` high at sample `centre`."""
    half = radius * ASPECT
    i = np.arange(int(centre - half), int(centre + half) + 2)
    x = np.clip(np.abs(i - centre) / half, 0.0, 1.0)
    np.maximum.at(heights, i % len(heights), base + radius * np.sqrt(1.0 - x * x))


@lru_cache(maxsize=8)
def tree_row(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A treeline round the horizon, its tallest top 1 (shares of its height; positions
    in samples round the ring, PROFILE_SAMPLES of them): the hedge and scrub beneath
    ((PROFILE_SAMPLES,) heights), the crowns' discs ((m, 3): centre, centre height,
    radius; round at ASPECT), each tree's trunk ((t, 3): centre, top, half-width) and
    its crown's outline ((t, FINE, 2): across from the trunk, height; `outline`). Trees
    side by side, crowns touching or overlapping, each a body with lobes along its top
    and smaller lobes on those (clumps of leaves, not a dome), on a trunk: the sky shows
    under a crown's sides where no neighbour fills it. Now and then a tall narrow poplar,
    here and there a gap in the row."""
    rng = np.random.default_rng([seed, 0x7EE5])
    n = PROFILE_SAMPLES
    hedge = 0.14 + 0.05 * smooth_noise(rng, n, 40)
    discs, trunks, outlines = [], [], []
    start = 0.0
    while start < n:
        tall = rng.uniform() < 0.08
        top = rng.uniform(0.8, 1.0) if tall else rng.uniform(0.4, 0.85)
        radius = top * (rng.uniform(0.1, 0.15) if tall else rng.uniform(0.24, 0.38))
        centre = start + radius * ASPECT
        middle = top - radius * rng.uniform(1.0, 1.25)
        crown = [(centre, middle, radius)]
        if tall:  # a poplar: a stack of discs narrowing to its top
            crown += [(centre, middle - radius * (1.6 - 0.8 * k), radius * (0.75 + 0.05 * k))
                      for k in range(3)]
        for _ in range(int(rng.integers(3, 7))):  # lobes along its top and sides
            lobe = radius * rng.uniform(0.3, 0.55)
            angle = rng.uniform(-2.2, 2.2)  # from straight up, either side
            reach = radius - lobe * rng.uniform(0.2, 0.6)
            x, y = centre + math.sin(angle) * reach * ASPECT, middle + math.cos(angle) * reach
            crown.append((x, y, lobe))
            for _ in range(int(rng.integers(0, 3))):  # and clumps on the lobe
                twig = lobe * rng.uniform(0.25, 0.45)
                turn = angle + rng.uniform(-1.2, 1.2)
                crown.append((x + math.sin(turn) * (lobe - 0.3 * twig) * ASPECT,
                              y + math.cos(turn) * (lobe - 0.3 * twig), twig))
        discs += crown
        trunks.append((centre, middle, radius * rng.uniform(0.07, 0.11)))
        outlines.append(outline(np.array(crown), centre, middle))
        start = centre + radius * ASPECT * rng.uniform(0.3, 0.9) + \
            (rng.integers(10, 40) if rng.uniform() < 0.04 else 0)
    discs, trunks, outlines = np.array(discs), np.array(trunks), np.array(outlines)
    tallest = float((discs[:, 1] + discs[:, 2]).max())
    for a in (discs[:, 1:], trunks[:, 1:], outlines, hedge):
        a /= tallest
    for a in (hedge, discs, trunks, outlines):
        a.setflags(write=False)  # shared by every frame
    return hedge, discs, trunks, outlines


def outline(crown: np.ndarray, centre: float, middle: float) -> np.ndarray:
    """The outline of a crown's discs (k, 3: centre, centre height, radius; round at
    ASPECT) as (FINE, 2) points, across from `centre` and height, in height units: the
    farthest point of the union along FINE rays from (centre, middle), clockwise on
    screen (see `_tree_shapes`). A crown's lobes sit round its body, so every ray from
    its middle leaves the union once: one polygon draws what its discs drew, with a
    fraction of the edges."""
    x, y, r = (crown[:, 0] - centre) / ASPECT, crown[:, 1] - middle, crown[:, 2]
    turn = -2 * np.pi * np.arange(FINE) / FINE
    cos, sin = np.cos(turn)[:, None], np.sin(turn)[:, None]
    along = cos * x + sin * y
    room = along ** 2 - (x * x + y * y - r * r)
    reach = np.where(room >= 0.0, along + np.sqrt(np.maximum(room, 0.0)), 0.0).max(axis=1)
    return np.column_stack([reach * cos[:, 0], middle + reach * sin[:, 0]])


def reed_bed(rng, n: int) -> np.ndarray:
    """A reed bed's heights over n samples: a dense mass of stems and leaves whose top
    rises and falls in clumps tens of metres long, leaves a sample wide poking out of it,
    and flowering stems standing a little above it, each plume nodding to one side (most
    with the wind), tapering to its tip. A bed, not a row of spikes: seen from far off its
    top is a ragged, feathery edge."""
    top = 0.78 + 0.06 * smooth_noise(rng, n, 220) + 0.04 * smooth_noise(rng, n, 35)
    heights = top - 0.05 * np.sqrt(rng.uniform(0.0, 1.0, n))
    leaves = rng.uniform(size=n) < 0.4
    heights[leaves] += 0.16 * rng.uniform(0.0, 1.0, leaves.sum()) ** 2
    for stem in np.flatnonzero(rng.uniform(size=n) < 0.06):
        rise = top[stem] + rng.uniform(0.08, 0.22)
        side = 1 if rng.uniform() < 0.75 else -1
        length = int(rng.integers(1, 4))
        droop = 0.1 * (np.arange(length + 1) / length) ** 1.5
        np.maximum.at(heights, (stem + side * np.arange(length + 1)) % n, rise - droop)
    return heights


# A crown's outline (or a trunk) as a polygon of FINE points: every 4th of them while
# the largest crown in view is under COARSE px across (a side of a few px), every 2nd
# under 4 × COARSE, all of them beyond, so a poster's trees keep their outline's detail
# and a frame does not pay for it. The points a frame takes are a poster's, each 4th.
FINE, COARSE = 128, 200


def treeline_path(ctx: cairo.Context, sky: Sky, window) -> bool:
    """Append the silhouette (`treeline_polygon`, and a treeline's `tree_polygons`) to
    ctx's path, in `window`'s pixels; returns whether any of it is in view. Filled with
    the nonzero rule, the overlapping crowns are one shape."""
    return append_treeline(ctx, *treeline_shapes(sky, window))


def treeline_shapes(sky: Sky, window) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The silhouette in `window`'s pixels: `treeline_polygon`, and a treeline's
    `tree_polygons` (None for reeds)."""
    return (treeline_polygon(sky, window),
            tree_polygons(sky, window) if sky.treeline == "trees" else None)


def append_treeline(ctx: cairo.Context, polygon, shapes) -> bool:
    """Append `treeline_shapes` to ctx's path; whether there were any."""
    if polygon is not None:
        records, points = polygon_records(1, len(polygon))
        points[0] = polygon
        append_polygons(ctx, records)
    if shapes is not None:
        records, points = polygon_records(*shapes.shape[:2])
        points[:] = shapes
        append_polygons(ctx, records)
    return polygon is not None or shapes is not None


def tree_polygons(sky: Sky, window) -> np.ndarray | None:
    """A treeline's crowns and trunks (`tree_row`) as (m, k, 2) pixel points of
    `window` (k: FINE, or a half or a quarter of it, by the crowns' size on screen):
    each crown's outline upright across the ring treeline_distance m off, round in
    metres, each trunk from the ground up into its crown; None when none lies ahead of
    the camera and in the window. Only the shapes within the view's half-diagonal of
    its heading are projected (a few hundred of the ring's)."""
    p = sky.pose
    azimuth, widths, shapes = _tree_shapes(sky.seed, sky.treeline_distance,
                                           sky.treeline_height)
    heading = math.atan2(p.forward[1], p.forward[0])
    corner = math.hypot(0.5 * p.width, max(p.cy, p.height - p.cy))  # the farthest, px
    reach = math.atan(corner / p.focal) + 0.05
    near = np.abs((azimuth - heading + np.pi) % (2 * np.pi) - np.pi) <= reach
    if math.hypot(p.forward[0], p.forward[1]) < 0.5:  # looking steeply up or down
        near[:] = True
    across = p.focal * widths[near].max(initial=0.0) / sky.treeline_distance
    step = 4 if across < COARSE else (2 if across < 4 * COARSE else 1)
    rel = shapes[:, ::step][near] - (0.0, 0.0, p.position[2])
    u, v, depth = on_screen(p, rel)
    ahead = (depth > 0.1 * sky.treeline_distance).all(axis=1)
    u, v = u[ahead] - window[0], v[ahead] - window[1]
    seen = (u.max(axis=1) >= 0) & (u.min(axis=1) <= window[2]) & \
        (v.max(axis=1) >= 0) & (v.min(axis=1) <= window[3])
    if not seen.any():
        return None
    return np.stack([u[seen], v[seen]], axis=-1)


@lru_cache(maxsize=8)
def _tree_shapes(seed: int, distance: float, height: float):
    """A treeline's shapes round the camera, each tree's crown then each trunk: their
    azimuths (2t,), widths (2t,, m) and FINE points each (2t, FINE, 3), m, from the
    camera's foot on the ground. Across the ring (along it, the way the azimuth grows:
    leftward on screen) and up, clockwise on screen as the ring's outline runs
    (opposite windings would cut holes where they overlap): crowns by their outlines,
    trunks by their four corners (each repeated)."""
    _, _, trunks, outlines = tree_row(seed)
    corner = 4 * np.arange(FINE) // FINE  # each kept by every 2nd and 4th point
    across = np.concatenate([outlines[:, :, 0] * height,
                             np.outer(trunks[:, 2] * height, [-1.0, -1.0, 1.0, 1.0])[:, corner]])
    up = np.concatenate([outlines[:, :, 1] * height,
                         np.outer(trunks[:, 1] * height, [0.0, 1.0, 1.0, 0.0])[:, corner]])
    azimuth = np.tile(2 * np.pi * trunks[:, 0] / PROFILE_SAMPLES, 2)
    cos, sin = np.cos(azimuth)[:, None], np.sin(azimuth)[:, None]
    shapes = np.stack([distance * cos - across * sin, distance * sin + across * cos, up],
                      axis=-1)
    azimuth = np.arctan2(np.sin(azimuth), np.cos(azimuth))
    widths = np.ptp(across, axis=1)
    for a in (azimuth, widths, shapes):
        a.setflags(write=False)  # shared by every frame
    return azimuth, widths, shapes


def treeline_polygon(sky: Sky, window) -> np.ndarray | None:
    """The silhouette's outline as (k, 2) pixel points of `window`: its top along the
    horizon (a treeline's: its hedge), treeline_distance m from the camera, then back
    along its foot on the ground; None when none of it lies ahead of the camera or in
    the window."""
    p = sky.pose
    azimuth, ring, profile = _ring(sky.treeline, sky.seed, sky.treeline_distance,
                                   sky.treeline_height)
    # Relative to the camera, whose place the ring follows (so its pixels depend on the
    # eye's height alone, to the bit: see _window_key).
    top = np.column_stack([ring, profile - p.position[2]])
    ahead = top @ p.forward > 0.1 * sky.treeline_distance
    if ahead.sum() < 2:
        return None
    # Start the ring behind the camera, so the part ahead is one run in order: the
    # azimuths ascend, so that order is the ring turned to the first one past the back.
    back = math.atan2(-p.forward[1], -p.forward[0]) % (2 * np.pi)
    keep = np.roll(np.arange(PROFILE_SAMPLES), -int(np.searchsorted(azimuth, back)))
    keep = keep[ahead[keep]]
    foot = np.column_stack([ring[keep], np.full(len(keep), -p.position[2])])
    u, v, _ = on_screen(p, np.concatenate([top[keep], foot]))
    m = len(keep)
    # Only the samples whose stretch from foot to top comes within a frame's size of the
    # frame (enough to close the shape off-screen), the same for every window of it:
    # cairo fills a polygon cut to a window's own reach differently at the reeds' tips (up
    # to 12 levels in a tiled still). Both axes: a rolled camera's horizon runs down the
    # frame, its treeline as wide as it is tall (judged along the rows alone, a quarter
    # turn's reeds lost their tops and filled a sliver off the frame).
    near = (np.maximum(u[:m], u[m:]) >= -p.width) & (np.minimum(u[:m], u[m:]) <= 2 * p.width) \
        & (np.maximum(v[:m], v[m:]) >= -p.height) & (np.minimum(v[:m], v[m:]) <= 2 * p.height)
    if near.sum() < 2:
        return None
    points = np.column_stack([u - window[0], v - window[1]])
    points = np.concatenate([points[:m][near], points[m:][near][::-1]])
    # A polygon wholly to one side of the window covers none of it.
    if (points >= window[2:4]).all(axis=0).any() or (points <= 0).all(axis=0).any():
        return None
    return points


@lru_cache(maxsize=8)
def _ring(kind: str, seed: int, distance: float, height: float):
    """The treeline's samples around the camera: their azimuths (PROFILE_SAMPLES,)
    ascending from 0, their (x, y) offsets from it (PROFILE_SAMPLES, 2) m, and the
    heights above the ground, m, of its outline (a treeline's: its hedge)."""
    azimuth = 2 * np.pi * np.arange(PROFILE_SAMPLES) / PROFILE_SAMPLES
    ring = np.column_stack([np.cos(azimuth), np.sin(azimuth)]) * distance
    # Trees: the hedge beneath them (their crowns and trunks are `tree_polygons`)
    profile = tree_row(seed)[0] if kind == "trees" else horizon_profile(kind, seed)
    arrays = azimuth, ring, profile * height
    for a in arrays:
        a.setflags(write=False)  # shared by every frame
    return arrays


def behind_treeline(sky: Sky, points: np.ndarray) -> np.ndarray:
    """(n,) bool: whether each of the (n, 3) points (m) lies behind the treeline the sky
    draws: beyond its ring, below the sight line from the eye over the ring's outline at
    that azimuth (a bird down in the film's reed bed, which stands on the roost, or low
    over the fields beyond a row of trees; a tree's crown hides nothing, its hedge does).
    None drawn, none hidden."""
    hidden = np.zeros(len(points), bool)
    if sky.treeline == "none":
        return hidden
    azimuth, _, top = _ring(sky.treeline, sky.seed, sky.treeline_distance,
                            sky.treeline_height)
    rel = np.asarray(points, np.float64) - sky.pose.position
    reach = np.hypot(rel[:, 0], rel[:, 1])
    with np.errstate(divide="ignore", invalid="ignore"):  # a point over the eye: not beyond
        sight = sky.pose.position[2] + rel[:, 2] * sky.treeline_distance / reach
    # Only a sight line under the outline's tallest can pass under it (a few birds of a
    # flock, so the azimuths are found for those alone).
    low = np.flatnonzero((reach > sky.treeline_distance) & (sight < top.max()))
    if len(low) == 0:
        return hidden
    # The outline between its samples is the straight edge the silhouette draws.
    at = np.arctan2(rel[low, 1], rel[low, 0]) % (2 * np.pi)
    hidden[low] = sight[low] < np.interp(at, azimuth, top, period=2 * np.pi)
    return hidden


def airlight(sky: Sky) -> np.ndarray:
    """(3,) linear RGB the haze between the camera and the ground or the treeline tends
    to. Sunlit, it is the horizon's colour. With the sun below the horizon the air near
    the ground lies in the earth's shadow: it scatters only the light around it, the
    sky above and the ground below, evenly over the sphere (the gradient is sampled
    evenly in sin(elevation), so evenly in solid angle), far darker than the horizon's
    glow, which is lit high up."""
    if sky.sun[2] >= 0:  # also: no sun
        return sky.lut[0]
    return 0.5 * (sky.lut.mean(axis=0) + sky.ground)


def hazed_treeline(sky: Sky) -> np.ndarray:
    """(3,) linear RGB: the treeline's colour hazed by its distance toward the airlight."""
    keep = 1.0 if math.isinf(sky.visibility) else \
        math.exp(LN_005 * sky.treeline_distance / sky.visibility)
    return keep * sky.treeline_colour + (1 - keep) * airlight(sky)


def draw_treeline(out: np.ndarray, sky: Sky, window) -> None:
    """The treeline over `out` (the window's sky, BGRA) in its colour hazed by its
    distance toward the horizon's, through the coverage of `treeline_block`s as cairo's
    mask: every window of a frame (a tile of a still) crops the same blocks, so it is the
    whole frame's to the bit (a frame up to IMAGE_MAX_SIDE px wide)."""
    outline = treeline_outline(sky)
    if outline is None:
        return
    top, bottom = outline.top, outline.bottom
    x, y, w, h = (int(v) for v in window)
    first, last = max(top, y), min(bottom, y + h)
    if first >= last:
        return
    surface = cairo.ImageSurface.create_for_data(memoryview(out), cairo.FORMAT_ARGB32, w, h,
                                                 out.strides[0])
    ctx = cairo.Context(surface)
    ctx.set_source_rgb(*to_srgb(hazed_treeline(sky)))
    piece = block_columns(sky.pose.width)
    for row in range(top + (first - top) // BAND_ROWS * BAND_ROWS, last, BAND_ROWS):
        for column in range(x // piece * piece, x + w, piece):
            cover = treeline_block(sky, outline, row, column)
            # A surface of its own over the kept coverage (one surface shared between the
            # drawing threads as a source is not safe): cairo only reads it. Outside it
            # the mask is clear, so the blocks, which do not overlap, need no clip.
            mask = cairo.ImageSurface.create_for_data(
                memoryview(cover), cairo.FORMAT_A8, min(piece, sky.pose.width - column),
                cover.shape[0], cover.strides[0])
            ctx.mask_surface(mask, column - x, row - y)
    surface.flush()


class Outline(NamedTuple):
    """The treeline of a frame's view: `treeline_shapes` over the whole frame, and the
    rows it spans, top to bottom (exclusive)."""

    key: tuple
    top: int
    bottom: int
    polygon: np.ndarray | None
    shapes: np.ndarray | None


# The treeline's coverage is filled in blocks of BAND_ROWS rows from the outline's top,
# each the frame's width, or BAND_PIECE px of it in a frame wider than a cairo surface.
BAND_ROWS, BAND_PIECE = 512, 16384
# The outlines and blocks of the VIEWS_KEPT views drawn last (drawing threads paint a
# few frames at once; a poster's tiles are one view), the least recently used dropped
# first once they hold more than BAND_KEPT_BYTES: a band of a poster's tiles crosses a
# few blocks at a time.
VIEWS_KEPT, BAND_KEPT_BYTES = 4, 64 << 20
# view key → {None: its Outline (or None: no treeline in view), (row, column): a block's
# coverage}, each with its bytes. Read and changed under the lock.
_kept_views: OrderedDict = OrderedDict()
_kept_bytes = [0]
_kept_lock = threading.Lock()


def block_columns(width: int) -> int:
    """How many columns a treeline block of a frame `width` px wide spans: the frame's
    width, or BAND_PIECE px of a frame wider than a cairo surface holds (never drawn
    whole: a tiled poster)."""
    return width if width <= IMAGE_MAX_SIDE else BAND_PIECE


def treeline_outline(sky: Sky) -> Outline | None:
    """The treeline of the sky's view (kept, see BAND_KEPT_BYTES); None when none of it
    is in view."""
    p = sky.pose
    key = _window_key(sky, (0, 0, p.width, p.height))
    found, outline = _kept_get(key, None)
    if found:
        return outline
    outline = None
    polygon, shapes = treeline_shapes(sky, (0, 0, p.width, p.height))
    heights = [a[..., 1].ravel() for a in (polygon, shapes) if a is not None]
    if heights:
        v = np.concatenate(heights)
        top, bottom = max(0, math.floor(v.min())), min(p.height, math.ceil(v.max()) + 1)
        if top < bottom:
            outline = Outline(key, top, bottom, polygon, shapes)
    size = 0 if outline is None else sum(a.nbytes for a in (polygon, shapes) if a is not None)
    _kept_put(key, None, outline, size)
    return outline


def treeline_block(sky: Sky, outline: Outline, row: int, column: int) -> np.ndarray:
    """The treeline's coverage (`treeline_path` filled) in the block whose first row and
    column of the frame are `row` (the outline's top + a multiple of BAND_ROWS) and
    `column` (a multiple of `block_columns`): (rows, stride) uint8 A8 rows (kept, see
    BAND_KEPT_BYTES). Every block is filled with the whole frame's shapes, never those of
    a window: cairo sweeps a row of pixels whole, or samples it in sub-rows where an edge
    of the path ends anywhere along it, so a tile missing a tree far to its side filled a
    crown's edge up to 13 levels off the whole frame's. Cut into rows the coverage is
    the whole fill's to the bit; cut into columns (a frame over IMAGE_MAX_SIDE px wide)
    it is where the horizon is level, and within a few levels of the edges' pixels near
    the cut where it is not (no margin makes that exact: a cut changes how whole rows
    are swept)."""
    found, cover = _kept_get(outline.key, (row, column))
    if found:
        return cover
    width = sky.pose.width
    rows = min(outline.bottom, row + BAND_ROWS) - row
    columns = min(block_columns(width), width - column)
    stride = cairo.ImageSurface.format_stride_for_width(cairo.FORMAT_A8, columns)
    cover = np.zeros((rows, stride), np.uint8)
    surface = cairo.ImageSurface.create_for_data(memoryview(cover), cairo.FORMAT_A8, columns,
                                                 rows, stride)
    ctx = cairo.Context(surface)
    ctx.translate(-column, -row)  # the frame's shapes, projected once for every block
    append_treeline(ctx, outline.polygon, outline.shapes)
    ctx.fill()
    surface.flush()
    _kept_put(outline.key, (row, column), cover, cover.nbytes)
    return cover


def _kept_get(view: tuple, item) -> tuple[bool, object]:
    with _kept_lock:
        entries = _kept_views.get(view)
        if entries is None or item not in entries:
            return False, None
        _kept_views.move_to_end(view)
        entries.move_to_end(item)
        return True, entries[item][0]


def _kept_put(view: tuple, item, value, size: int) -> None:
    with _kept_lock:
        entries = _kept_views.setdefault(view, OrderedDict())
        _kept_views.move_to_end(view)
        if item in entries:  # another thread filled it meanwhile: the same bits
            return
        entries[item] = (value, size)
        _kept_bytes[0] += size
        while len(_kept_views) > VIEWS_KEPT or \
                (_kept_bytes[0] > BAND_KEPT_BYTES and len(_kept_views) > 1):
            _, dropped = _kept_views.popitem(last=False)
            _kept_bytes[0] -= sum(held for _, held in dropped.values())
        while _kept_bytes[0] > BAND_KEPT_BYTES and len(entries) > 1:
            _, (_, held) = entries.popitem(last=False)
            _kept_bytes[0] -= held
