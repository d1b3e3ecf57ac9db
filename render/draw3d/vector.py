"""3D vector stills (PDF, SVG): the sky as a vector gradient, the treeline as a path, the
birds as depth-sorted translucent fills, drawn by cairo's own vector surfaces.

A vector file cannot hold the raster drawing's optics: a viewer blends each fill in sRGB,
and one path's overlapping streaks fill as their union. So the birds go in `LAYERS` depth
layers, far to near, each split into `BINS` bins of opacity: every (layer, bin) is one
path, one colour, one alpha, composited OVER what is behind it. Overlaps between paths
multiply as Beer–Lambert says; overlaps inside one path (birds of the same depth and
opacity over the same point) count once, and the viewer blends in sRGB, not linear light
(each path's alpha is corrected for that over the sky behind its birds, `srgb_alpha`):
an approximation of the raster frame, closest where the flock is sparse.
"""

from __future__ import annotations

import math
from pathlib import Path

import cairo
import numpy as np

from ..draw.paths import append_polygons, polygon_records
from ..draw.streaks import FINE_CAP_TOLERANCE_PX, cap_sides, outline_polygons
from .colour import to_srgb
from .sky import Sky, elevation_table, hazed_treeline, treeline_path
from .types import Streaks

LAYERS = 8
BINS = 6
GRADIENT_STOPS = 128
SURFACES = {".pdf": cairo.PDFSurface, ".svg": cairo.SVGSurface}


def ray_sine(sky: Sky, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """sin(elevation) of the rays through full-frame pixels (u, v)."""
    p = sky.pose
    x = (u - 0.5 * p.width) / p.focal
    y = (v - p.cy) / p.focal
    d = p.forward + x[:, None] * p.right - y[:, None] * p.up
    return d[:, 2] / np.linalg.norm(d, axis=1)


def sky_gradient(sky: Sky) -> cairo.LinearGradient:
    """The sky and ground as one linear gradient across the frame, along the direction in
    which elevation climbs at its centre; colours sampled from the raster's table."""
    p = sky.pose
    cx, cy = 0.5 * p.width, p.cy
    s = ray_sine(sky, np.array([cx, cx + 1, cx]), np.array([cy, cy, cy - 1]))
    g = np.array([s[1] - s[0], s[0] - s[2]])  # d sin / d(u, −v)
    g = np.array([0.0, 1.0]) if not np.any(g) else g / np.hypot(*g)
    corners = np.array([[0, 0], [p.width, 0], [0, p.height], [p.width, p.height]]) - [cx, cy]
    along = corners @ np.array([g[0], -g[1]])
    t = np.linspace(along.min(), along.max(), GRADIENT_STOPS)
    u, v = cx + t * g[0], cy - t * g[1]
    table = elevation_table(sky, max(float(p.position[2]), 0.0))
    index = (ray_sine(sky, u, v) + 1.0) * 0.5 * (len(table) - 1)
    colours = np.column_stack([np.interp(index, np.arange(len(table)), table[:, c])
                               for c in range(3)])
    gradient = cairo.LinearGradient(u[0], v[0], u[-1], v[-1])
    for k, colour in enumerate(to_srgb(colours)):
        gradient.add_color_stop_rgb(k / (GRADIENT_STOPS - 1), *colour)
    return gradient


def sun_glow(sky: Sky) -> cairo.RadialGradient | None:
    """The sun's glow as a radial gradient of sun_colour fading out around the sun's
    projection (painted OVER the sky: the raster adds it), or None when there is none or
    the sun is behind the camera."""
    p = sky.pose
    ahead = float(sky.sun @ p.forward)
    if sky.glow <= 0 or ahead <= 0.05:
        return None
    u = 0.5 * p.width + p.focal * float(sky.sun @ p.right) / ahead
    v = p.cy - p.focal * float(sky.sun @ p.up) / ahead
    reach = 3.0 * np.sqrt(2 * sky.glow)  # radians: the glow is exp(−θ²/2r²), 1 − cos r ≈ r²/2
    gradient = cairo.RadialGradient(u, v, 0, u, v, p.focal * math.tan(min(reach, 1.5)))
    colour = to_srgb(sky.sun_colour / sky.sun_colour.max())
    for k in range(9):
        theta = reach * k / 8
        gradient.add_color_stop_rgba(k / 8, *colour,
                                     float(sky.sun_colour.max() * np.exp(-theta ** 2 /
                                                                         (2 * sky.glow))))
    return gradient


def clip_to_sky(ctx: cairo.Context, sky: Sky) -> None:
    """Clip to the frame above the horizon (where the rays' elevation is positive)."""
    p = sky.pose
    if p.up[2] <= 1e-9:
        return  # looking straight up or down: no horizon across the frame
    x = (np.array([0.0, p.width]) - 0.5 * p.width) / p.focal
    v = p.cy + p.focal * (p.forward[2] + x * p.right[2]) / p.up[2]
    ctx.move_to(0, 0)
    ctx.line_to(p.width, 0)
    ctx.line_to(p.width, v[1])
    ctx.line_to(0, v[0])
    ctx.close_path()
    ctx.clip()


def groups(streaks: Streaks, transparent: bool) -> np.ndarray:
    """Each streak's path, layer·BINS + bin: layers of equal count in the given (far to
    near) order, bins by the opacity the bird shows (alpha, × contrast when transparent)
    on a log scale across the frame's range."""
    m = len(streaks.alpha)
    layer = np.arange(m) * LAYERS // max(m, 1)
    shown = np.asarray(streaks.alpha) * (np.asarray(streaks.contrast) if transparent else 1)
    log = np.log(np.maximum(shown, 1e-6))
    span = max(log.max() - log.min(), 1e-9) if m else 1.0
    bin_ = np.minimum(((log - log.min()) / span * BINS).astype(np.int64), BINS - 1) \
        if m else np.zeros(0, np.int64)
    return layer * BINS + bin_


def srgb_alpha(behind: np.ndarray, colour: np.ndarray, alpha: float) -> float:
    """The alpha that, blended in sRGB over `behind` (linear RGB), gives what `alpha`
    gives in linear light: a viewer blends a PDF or SVG in sRGB, where the same alpha
    darkens a bright sky about twice as much."""
    want = to_srgb(behind * (1 - alpha) + alpha * colour)
    s, c = to_srgb(behind), to_srgb(colour)
    span = s - c
    ok = np.abs(span) > 1e-3
    if not ok.any():
        return alpha
    return float(np.clip(np.mean((s - want)[ok] / span[ok]), 0.0, 1.0))


def paint_birds(ctx: cairo.Context, streaks: Streaks, sky: Sky, transparent: bool) -> None:
    """Every (layer, bin) as one translucent fill, far layers first: the bin's mean alpha,
    the bird colour hazed by the bin's mean contrast toward the sky at its birds (under
    `transparent`, the contrast thins the alpha instead)."""
    if len(streaks.x0) == 0:
        return
    group = groups(streaks, transparent)
    radius = 0.5 * np.asarray(streaks.width, np.float64)
    sides = cap_sides(radius.max(), FINE_CAP_TOLERANCE_PX)
    records, points = polygon_records(len(group), 2 * (sides + 1))
    order = np.argsort(group, kind="stable")
    tails = np.column_stack([streaks.x0, streaks.y0])[order]
    heads = np.column_stack([streaks.x1, streaks.y1])[order]
    outline_polygons(np.ascontiguousarray(tails), np.ascontiguousarray(heads),
                     radius[order], sides, out=points)
    bounds = np.searchsorted(group[order], np.arange(LAYERS * BINS + 1))
    table = elevation_table(sky, max(float(sky.pose.position[2]), 0.0))
    ctx.set_fill_rule(cairo.FILL_RULE_WINDING)
    for k in range(LAYERS * BINS):
        lo, hi = bounds[k], bounds[k + 1]
        if hi == lo:
            continue
        pick = order[lo:hi]
        alpha = float(np.mean(streaks.alpha[pick]))
        contrast = float(np.mean(streaks.contrast[pick]))
        if transparent:
            colour, alpha = sky.bird, alpha * contrast
        else:
            u = 0.5 * (streaks.x0[pick] + streaks.x1[pick])
            v = 0.5 * (streaks.y0[pick] + streaks.y1[pick])
            index = (ray_sine(sky, u, v) + 1.0) * 0.5 * (len(table) - 1)
            behind = table[np.clip(np.round(index).astype(np.int64), 0, len(table) - 1), :3]
            behind = behind.mean(axis=0)
            colour = contrast * sky.bird + (1 - contrast) * behind
            alpha = srgb_alpha(behind, colour, alpha)
        append_polygons(ctx, records[lo:hi])
        ctx.set_source_rgba(*to_srgb(colour), min(alpha, 1.0))
        ctx.fill()


def paint_vector(ctx: cairo.Context, streaks: Streaks, sky: Sky, transparent: bool) -> None:
    """Sky, treeline and birds on any cairo context whose user space is the full frame's
    pixels (transparent: the birds alone)."""
    p = sky.pose
    if not transparent:
        ctx.rectangle(0, 0, p.width, p.height)
        ctx.set_source(sky_gradient(sky))
        ctx.fill()
        glow = sun_glow(sky)
        if glow is not None:
            ctx.save()
            clip_to_sky(ctx, sky)
            ctx.set_source(glow)
            ctx.paint()
            ctx.restore()
        if sky.treeline != "none" and treeline_path(ctx, sky, (0, 0, p.width, p.height)):
            ctx.set_source_rgb(*to_srgb(hazed_treeline(sky)))
            ctx.fill()
    paint_birds(ctx, streaks, sky, transparent)


def write_vector(path: str | Path, streaks: Streaks, sky: Sky, dpi: float, *,
                 transparent: bool = False, title: str = "") -> None:
    """The full frame (sky.pose's width × height px) as a PDF or SVG page of
    size·72/dpi points."""
    path = Path(path)
    points = 72.0 / dpi
    p = sky.pose
    surface = SURFACES[path.suffix.lower()](str(path), p.width * points, p.height * points)
    if isinstance(surface, cairo.PDFSurface) and title:
        surface.set_metadata(cairo.PDF_METADATA_TITLE, title)
        surface.set_metadata(cairo.PDF_METADATA_CREATOR, "boids-render")
    ctx = cairo.Context(surface)
    ctx.scale(points, points)
    paint_vector(ctx, streaks, sky, transparent)
    surface.finish()
