"""3D vector stills (PDF, SVG): the sky and ground as strips of gradients, the treeline as a
path, the birds as depth-sorted translucent fills, drawn by cairo's own vector surfaces.

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
from ..draw.vector import vector_page
from .colour import to_srgb
from .sky import Sky, hazed_treeline, sky_colours, treeline_path
from .types import Streaks

LAYERS = 8
BINS = 6


def ray_sine(sky: Sky, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """sin(elevation) of the rays through full-frame pixels (u, v)."""
    p = sky.pose
    x = (u - 0.5 * p.width) / p.focal
    y = (v - p.cy) / p.focal
    d = p.forward + x[:, None] * p.right - y[:, None] * p.up
    return d[:, 2] / np.linalg.norm(d, axis=1)


def horizon(sky: Sky) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The frame's axes for the sky's strips: the foot of the frame's centre on the
    horizon's line, the line's unit direction (rightward, or down the frame where it runs
    upright) and the unit normal toward the ground (px). Looking straight up or down no
    horizon crosses the frame: then the frame's own rows, through its centre."""
    p = sky.pose
    centre = np.array([0.5 * p.width, 0.5 * p.height])
    # The level rays, d·z = 0 for d = forward + x·right − y·up (x, y the pixel's offset
    # from the principal point over the focal length), are the line n·(q − c) = −f·f_z,
    # n = (right_z, −up_z): the normal vanishes only when the view is vertical (a camera
    # rolled a quarter turn has up_z = 0 and an upright horizon).
    normal = np.array([p.right[2], -p.up[2]])
    length = float(np.hypot(*normal))
    if length <= 1e-9:
        return centre, np.array([1.0, 0.0]), np.array([0.0, 1.0])
    normal /= length
    on_line = np.array([0.5 * p.width, p.cy]) - (p.focal * p.forward[2] / length) * normal
    along = np.array([-normal[1], normal[0]])
    if along[0] < 0 or (along[0] == 0 and along[1] < 0):
        along = -along
    down = np.array([-along[1], along[0]])
    foot = on_line + ((centre - on_line) @ along) * along
    probe = foot + down
    if ray_sine(sky, probe[:1], probe[1:])[0] > 0:
        down = -down
    return foot, along, down


# Rows of the sky half a pixel apart join a strip while they stay within STRIP_TOLERANCE
# (a code) of its first; along a strip, its colours every STRIP_DEG of view at most,
# then only the stops a straight line between neighbours cannot stand in for within
# STOP_TOLERANCE. The rows are read ROW_CHUNK at a time (an A0 sheet at 1200 dpi has
# 112,000 of them).
STRIP_TOLERANCE, STRIP_DEG, STOP_TOLERANCE, ROW_CHUNK = 1.0 / 255, 0.5, 0.5 / 255, 1024


def sky_strips(sky: Sky) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """The sky and ground as strips along the horizon (`horizon`'s axes): each strip's
    top edge (its distance below the horizon, px, negative above), then its stops along
    the horizon's direction (px from `horizon`'s foot) and their sRGB colours, sampled
    from the raster's colours on the strip's middle line. A strip runs down to the
    frame's far edge, so each is painted over the one above it and no seam opens
    between two antialiased edges; the horizon is a strip's edge, so the ground's
    haze does not bleed into the sky."""
    p = sky.pose
    foot, along, down = horizon(sky)
    corners = np.array([[0, 0], [p.width, 0], [0, p.height], [p.width, p.height]]) - foot
    depth, span = corners @ down, corners @ along
    rows = np.arange(math.floor(2 * depth.min()) / 2 + 0.25, depth.max() + 0.5, 0.5)
    count = max(64, math.ceil(np.ptp(span) / (p.focal * math.tan(math.radians(STRIP_DEG)))))
    across = np.linspace(span.min(), span.max(), count)

    def colours_at(picked: np.ndarray) -> np.ndarray:
        points = foot + across[None, :, None] * along + picked[:, None, None] * down
        found = to_srgb(sky_colours(sky, points[..., 0], points[..., 1]))
        return found.reshape(len(picked), count, 3)

    bounds, first, head = [], 0, None
    for at in range(0, len(rows), ROW_CHUNK):
        chunk = colours_at(rows[at:at + ROW_CHUNK])
        for k, colours in enumerate(chunk, at):
            if head is None:
                head = colours
            elif (rows[k] > 0) != (rows[first] > 0) or \
                    np.abs(colours - head).max() > STRIP_TOLERANCE:
                bounds.append((first, k))
                first, head = k, colours
    bounds.append((first, len(rows)))
    middles = colours_at(np.array([rows[(a + b - 1) // 2] for a, b in bounds]))
    strips = []
    for (a, _), middle in zip(bounds, middles):
        keep = line_stops(middle)
        strips.append((rows[a] - 0.25, across[keep], middle[keep]))
    return strips


def line_stops(colours: np.ndarray) -> np.ndarray:
    """Indices of the stops of `colours` (n, 3) to keep: from each kept stop, the
    farthest next one whose straight line stays within STOP_TOLERANCE of every colour
    between (the ends always kept)."""
    keep, i, n = [0], 0, len(colours)
    while i < n - 1:
        j = i + 1
        while j + 1 < n:
            t = np.linspace(0.0, 1.0, j + 2 - i)[:, None]
            line = colours[i] + t * (colours[j + 1] - colours[i])
            if np.abs(line - colours[i:j + 2]).max() > STOP_TOLERANCE:
                break
            j += 1
        keep.append(j)
        i = j
    return np.array(keep)


def below(box: np.ndarray, foot: np.ndarray, down: np.ndarray, top: float) -> np.ndarray:
    """The polygon (k, 2) of `box`'s corners (4, 2, in order round it) that lies at least
    `top` px along `down` from the line through `foot`: the box cut by that line."""
    reach = (box - foot) @ down - top
    out = []
    for i in range(len(box)):
        a, b = box[i], box[(i + 1) % len(box)]
        ra, rb = reach[i], reach[(i + 1) % len(box)]
        if ra >= 0:
            out.append(a)
        if (ra >= 0) != (rb >= 0):
            out.append(a + (b - a) * (ra / (ra - rb)))
    return np.array(out).reshape(-1, 2)


def paint_strips(ctx: cairo.Context, sky: Sky) -> None:
    """`sky_strips`, top to bottom, each a gradient along the horizon filling the frame
    (and a margin) below its top edge. The shapes and the gradients' ends are put near
    the frame whatever the horizon's distance: a view near the vertical puts its horizon
    millions of px off, past cairo's fixed-point coordinates."""
    p = sky.pose
    foot, along, down = horizon(sky)
    box = np.array([[-2.0, -2.0], [p.width + 2.0, -2.0], [p.width + 2.0, p.height + 2.0],
                    [-2.0, p.height + 2.0]])
    centre = np.array([0.5 * p.width, 0.5 * p.height])
    for top, stops, colours in sky_strips(sky):
        shape = below(box, foot, down, top)
        if len(shape) < 3:
            continue
        for point in shape:
            ctx.line_to(*point)
        ctx.close_path()
        # along the gradient the colours change; across it they do not, so its ends
        # move across it to the frame's centre
        a, b = centre + stops[0] * along, centre + stops[-1] * along
        gradient = cairo.LinearGradient(*a, *b)
        for offset, colour in zip((stops - stops[0]) / (stops[-1] - stops[0]), colours):
            gradient.add_color_stop_rgb(offset, *colour)
        ctx.set_source(gradient)
        ctx.fill()


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
            behind = sky_colours(sky, u, v).mean(axis=0)
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
        paint_strips(ctx, sky)
        if sky.treeline != "none" and treeline_path(ctx, sky, (0, 0, p.width, p.height)):
            ctx.set_source_rgb(*to_srgb(hazed_treeline(sky)))
            ctx.fill()
    paint_birds(ctx, streaks, sky, transparent)


def write_vector(path: str | Path, streaks: Streaks, sky: Sky, dpi: float, *,
                 transparent: bool = False, title: str = "", paper: str | None = None) -> None:
    """The full frame (sky.pose's width × height px) as a PDF or SVG page
    (`draw.vector.page_points`)."""
    surface, ctx = vector_page(path, (sky.pose.width, sky.pose.height), dpi, title, paper)
    paint_vector(ctx, streaks, sky, transparent)
    surface.finish()
