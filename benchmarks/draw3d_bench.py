"""The 3D drawing figures of issue 19: compositing a flock through the optics
(render/draw3d/optics.py) against cairo rasterising the same streaks alone, the sky, and
how 8-bit accumulation fails the Beer–Lambert law the optics keep."""

from __future__ import annotations

import math

import numpy as np

from draw_bench import interleaved
from figures import result

FOV_DEG = 30.0
DISTANCE_M = 800.0  # at 4K, f ≈ 4,030 px: a 0.4 m bird is 2 px wide here


def pose_for(size):
    """A viewer on the ground looking 4° up, level (render.draw3d.types.Pose)."""
    from render.draw3d.types import Pose

    w, h = size
    pitch = math.radians(4.0)
    forward = np.array([0.0, math.cos(pitch), math.sin(pitch)])
    right = np.array([1.0, 0.0, 0.0])
    return Pose(np.array([0.0, 0.0, 1.7]), right, np.cross(right, forward), forward,
                (h / 2) / math.tan(math.radians(FOV_DEG) / 2), w, h, 0.1)


def flock_streaks(size, count: int, seed: int = 0, visibility_m: float = 10_000.0,
                  distance_m: float = DISTANCE_M, scale: float = 1.0):
    """Streaks of a synthetic flock `distance_m` away: a flattened, lumpy cloud (σ 80 m
    across, 30 m deep, 18 m tall, a few dense knots, all × `scale`), each bird's 0.4 m
    streak along a shared heading with scatter, wingspan 0.4 m floored at 1 px, alpha × area = its
    silhouette (0.01–0.019 m² by how it faces the camera), hazed 0.05^(d/V), far to near.
    Returns (Streaks, the share of the frame's width the middle 95% of birds span)."""
    from render.draw3d.types import Streaks

    rng = np.random.default_rng(seed)
    pose = pose_for(size)
    centre = np.array([0.0, distance_m, 60.0 * distance_m / DISTANCE_M])
    knots = centre + rng.normal(size=(6, 3)) * np.array([60.0, 20.0, 10.0]) * scale
    which = rng.integers(0, 7, count)
    spread = np.where(which[:, None] == 6, [80.0, 30.0, 18.0], [20.0, 10.0, 6.0]) * scale
    base = np.where(which[:, None] == 6, centre, knots[np.minimum(which, 5)])
    points = base + rng.normal(size=(count, 3)) * spread
    heading = np.array([1.0, 0.2, 0.1]) + 0.3 * rng.normal(size=(count, 3))
    heading /= np.linalg.norm(heading, axis=1)[:, None]
    ends = [points - 0.2 * heading, points + 0.2 * heading]
    uv = []
    for p in ends:
        rel = p - pose.position
        depth = rel @ pose.forward
        uv.append((pose.width / 2 + pose.focal * (rel @ pose.right) / depth,
                   pose.cy - pose.focal * (rel @ pose.up) / depth, depth))
    (u0, v0, d0), (u1, v1, d1) = uv
    depth = 0.5 * (d0 + d1)
    width = np.maximum(0.4 * pose.focal / depth, 1.0)
    silhouette = (0.01 + 0.009 * rng.uniform(size=count)) * (pose.focal / depth) ** 2
    area = np.hypot(u1 - u0, v1 - v0) * width + math.pi * width ** 2 / 4
    contrast = 0.05 ** (np.linalg.norm(points - pose.position, axis=1) / visibility_m)
    order = np.argsort(-depth, kind="stable")
    streaks = Streaks(u0[order], v0[order], u1[order], v1[order], width[order],
                      np.minimum(silhouette / area, 1.0)[order], contrast[order],
                      depth[order], np.zeros(count, bool), order.astype(np.int64))
    lo, hi = np.percentile(u0, [2.5, 97.5])
    return streaks, (hi - lo) / size[0]


def cairo_alone(streaks, size):
    """cairo rasterising the same streak outlines as one translucent fill (ANTIALIAS_FAST,
    as the 2D drawing does) onto an ARGB32 canvas: no sky, no depth, no linear light."""
    import cairo

    from render.draw.paths import append_polygons, polygon_records
    from render.draw.streaks import CAP_TOLERANCE_PX, cap_sides, outline_polygons
    from render.draw.surface import Canvas

    canvas = Canvas(size)
    radius = 0.5 * streaks.width
    sides = cap_sides(radius.max(), CAP_TOLERANCE_PX[cairo.ANTIALIAS_FAST])
    records, points = polygon_records(len(radius), 2 * (sides + 1))
    outline_polygons(np.column_stack([streaks.x0, streaks.y0]),
                     np.column_stack([streaks.x1, streaks.y1]), radius, sides, out=points)

    def draw():
        ctx = canvas.context()
        ctx.set_antialias(cairo.ANTIALIAS_FAST)
        ctx.set_source_rgb(0.9, 0.6, 0.4)
        ctx.paint()
        append_polygons(ctx, records)
        ctx.set_source_rgba(0.05, 0.05, 0.06, 0.3)
        ctx.fill()
        return canvas.flush()

    return draw


def eight_bit_opacity(count: int, alpha: float) -> float:
    """The opacity `count` black birds of opacity `alpha` reach over white when cairo
    blends each into 8-bit pixels in turn (ARGB32, OVER): every blend rounds, and once
    the pixel is dark enough that alpha × code < ½ it stops darkening."""
    import cairo

    surface = cairo.ImageSurface(cairo.FORMAT_ARGB32, 1, 1)
    ctx = cairo.Context(surface)
    ctx.set_source_rgb(1, 1, 1)
    ctx.paint()
    ctx.set_source_rgb(0, 0, 0)
    for _ in range(count):
        ctx.paint_with_alpha(alpha)
    surface.flush()
    return 1 - surface.get_data()[1] / 255


def run(quick: bool = False) -> list[dict]:
    from render.draw3d.optics import compose
    from render.draw3d.sky import sky_for, sky_pixels
    from render.scene import build_scene

    if quick:
        cases, rounds = [((480, 270), 2_000, ""), ((960, 540), 5_000, "")], 3
    else:
        cases = [((3840, 2160), 100_000, "≤ 250 ms"), ((1920, 1080), 20_000, "≤ 40 ms")]
        rounds = 7
    scene = build_scene({"world": {"dimensions": 3}, "flock": {"count": 10},
                         "palette": {"theme": "dusk"}, "atmosphere": {}})
    rows = []
    for size, count, target in cases:
        label = f"{count:,} birds at {size[0]}x{size[1]}"
        streaks, span = flock_streaks(size, count)
        sky = sky_for(scene, pose_for(size))
        window = (0, 0, *size)
        for _ in range(2):  # a still camera: its sky is kept once drawn twice running
            sky_pixels(sky, window)
        t = interleaved({"ours": lambda: compose(streaks, sky, window, False),
                         "cairo": cairo_alone(streaks, size)}, rounds)
        widths = np.percentile(streaks.width, [5, 95])
        rows += [
            result(f"3D drawing, {label} (haze, depth order, silhouettes, linear light; "
                   f"flock spans {span:.0%} of the width, streaks {widths[0]:.1f}–"
                   f"{widths[1]:.1f} px), 1 core", t["ours"], "ms", t["cairo"],
                   target=target),
            result(f"cairo rasterising the same streaks alone, {label}", t["cairo"], "ms"),
        ]
        steps = iter(range(10 ** 6))

        def moved():  # the camera rises a millimetre: a new sky, the same streaks
            return sky._replace(pose=sky.pose._replace(
                position=sky.pose.position + [0, 0, 1e-3 * next(steps)]))

        t_moving = interleaved({"sky": lambda: sky_pixels(moved(), window),
                                "frame": lambda: compose(streaks, moved(), window, False)},
                               rounds)
        rows += [
            result(f"3D drawing, {label}, the camera moving (its sky redrawn every frame)",
                   t_moving["frame"], "ms", t["cairo"], target=target),
            result(f"of which the sky, {size[0]}x{size[1]}", t_moving["sky"], "ms")]
    for n in (100, 1000):
        exact = 1 - (1 - 0.02) ** n
        rows.append(result(f"opacity of {n:,} birds of α = 0.02 on one line of sight, "
                           f"blended in 8-bit one by one (exact: {exact:.3f})",
                           eight_bit_opacity(n, 0.02), "", exact))
    return rows
