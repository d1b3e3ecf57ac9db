"""The 3D optics (render/draw3d/optics.py) against the laws it promises and against the
supersampled numpy reference (tests/naive_optics.py): linear light, Beer–Lambert, ink
independent of resolution, depth order, haze, exact alpha, determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest

from naive_optics import composite, srgb_decode
from render.draw3d.optics import compose, edge_scale
from render.draw3d.sky import sky_for
from render.draw3d.types import Pose, Streaks
from render.scene import build_scene

SKY_HEX = "#B4B4B4"
SKY_Y = float(srgb_decode(0xB4))


def flat_sky(pose, bird="#000000", visibility=None):
    """A uniform sky (and ground) of SKY_HEX behind black birds, seen from `pose`."""
    raw = {"world": {"dimensions": 3}, "flock": {"count": 10},
           "palette": {"sky": [[0.0, SKY_HEX]], "ground": SKY_HEX, "bird": bird}}
    if visibility is not None:
        raw["atmosphere"] = {"visibility": visibility}
    return sky_for(build_scene(raw), pose)


def pinhole(size, fov_deg=30.0, height=1.7) -> Pose:
    """A camera at (0, 0, height) looking along +y, level."""
    w, h = size
    focal = (h / 2) / math.tan(math.radians(fov_deg) / 2)
    return Pose(np.array([0.0, 0.0, height]), np.array([1.0, 0, 0]), np.array([0, 0, 1.0]),
                np.array([0, 1.0, 0]), focal, w, h, 0.1)


def project(pose: Pose, points: np.ndarray):
    """(n, 3) world points → u, v px and depth m, as types.Pose defines it."""
    p = points - pose.position
    depth = p @ pose.forward
    u = pose.width / 2 + pose.focal * (p @ pose.right) / depth
    v = pose.cy - pose.focal * (p @ pose.up) / depth
    return u, v, depth


def make(x0, y0, x1, y1, width, alpha, contrast=1.0, depth=None, accent=None) -> Streaks:
    x0 = np.atleast_1d(np.asarray(x0, np.float64))
    m = len(x0)

    def full(v):
        return np.broadcast_to(np.asarray(v, np.float64), (m,)).copy()

    depth = full(np.arange(m, 0, -1) if depth is None else depth)
    return Streaks(x0, full(y0), full(x1), full(y1), full(width), full(alpha),
                   full(contrast), depth,
                   np.zeros(m, bool) if accent is None else np.asarray(accent, bool),
                   np.arange(m))


def linear(frame: np.ndarray) -> np.ndarray:
    """(h, w, 4) BGRA → (h, w, 3) linear RGB."""
    return srgb_decode(frame[..., 2::-1])


def dots(pose, points, silhouette_m2, width_px=1.5):
    """Birds at `points` as round dots `width_px` wide whose alpha × area is their
    silhouette's projection, far to near."""
    u, v, depth = project(pose, points)
    order = np.argsort(-depth, kind="stable")
    u, v, depth = u[order], v[order], depth[order]
    area = math.pi * width_px ** 2 / 4
    alpha = silhouette_m2 * pose.focal ** 2 / depth ** 2 / area
    assert alpha.max() <= 1
    return make(u, v, u, v, width_px, alpha, depth=depth)


@pytest.mark.parametrize("alpha", [0.3, 0.05])
def test_beer_lambert_n_birds_on_one_line_of_sight(alpha):
    size = (160, 90)
    pose = pinhole(size)
    sky = flat_sky(pose)
    for n in range(1, 9):
        depth = 100.0 + 2.0 * np.arange(n)[::-1]  # far to near, 2 m apart
        points = np.column_stack([np.zeros(n), depth, np.full(n, 1.7)])
        u, v, _ = project(pose, points)
        birds = make(u - 10, v, u + 10, v, 12.0, alpha, depth=depth)
        expect = 1 - (1 - alpha) ** n
        opaque = compose(birds, sky, (0, 0, *size), False)
        read = 1 - linear(opaque)[45, 80] / SKY_Y
        assert np.abs(read - expect).max() <= 3 / 255, (n, read, expect)
        clear = compose(birds, sky, (0, 0, *size), True)
        assert abs(clear[45, 80, 3] / 255 - expect) <= 3 / 255, (n, clear[45, 80, 3], expect)


@pytest.mark.parametrize("edge_on", [False, True])
def test_a_sheet_reads_the_opacity_of_its_column_density(edge_on):
    """Birds uniform in a slab 10 m thick: seen face-on the line of sight crosses 10 m of
    it, edge-on 60 m; either way opacity = 1 − exp(−density × silhouette × path)."""
    size = (480, 270)
    pose = pinhole(size)
    rng = np.random.default_rng(5)
    density, silhouette = 2.0, 0.02  # birds/m³, m²
    if edge_on:  # 10 m tall, 60 m deep along the view
        lo, hi = np.array([-30.0, 70.0, -3.3]), np.array([30.0, 130.0, 6.7])
        path, rows, cols = 60.0, slice(125, 146), slice(180, 301)
    else:  # 10 m deep, a wall across the view
        lo, hi = np.array([-30.0, 95.0, -15.0]), np.array([30.0, 105.0, 15.0])
        path, rows, cols = 10.0, slice(95, 176), slice(140, 341)
    count = int(density * np.prod(hi - lo))
    points = lo + (hi - lo) * rng.uniform(size=(count, 3))
    frame = compose(dots(pose, points, silhouette), flat_sky(pose), (0, 0, *size), True)
    read = frame[rows, cols, 3].mean() / 255
    expect = 1 - math.exp(-density * silhouette * path)
    assert abs(read - expect) <= 0.1 * expect, (read, expect)


def test_half_coverage_of_black_reads_half_the_sky_in_linear_light():
    size = (64, 32)
    pose = pinhole(size)
    frame = compose(make(10, 16, 54, 16, 20.0, 0.5), flat_sky(pose), (0, 0, *size), False)
    read = linear(frame)[16, 32]
    assert np.abs(read / SKY_Y - 0.5).max() <= 0.02 * 0.5
    # not half the code value: that would read 0.5 in sRGB, about 0.21 in linear light
    assert abs(frame[16, 32, 0] - 0xB4 / 2) > 20


def synthetic_flock(rng, count):
    """A flock-like cloud, σ 30 m across, 12 m deep, 8 m tall, 250 m ahead at eye height
    (in a pinhole's frame), its birds' motions (0.4 m streaks) in random directions."""
    centre = np.array([0.0, 250.0, 1.7])
    points = centre + rng.normal(size=(count, 3)) * np.array([30.0, 12.0, 8.0])
    heading = rng.normal(size=(count, 3))
    heading /= np.linalg.norm(heading, axis=1)[:, None]
    return points, points + 0.4 * heading


def birds_at(pose, tails, heads, silhouette=0.015, wingspan=0.4, floor_px=1.0):
    """Streaks as docs/optics.md makes them: wingspan wide (≥ the floor), alpha × area = the
    silhouette's projection, far to near."""
    u0, v0, d0 = project(pose, tails)
    u1, v1, d1 = project(pose, heads)
    depth = 0.5 * (d0 + d1)
    order = np.argsort(-depth, kind="stable")
    width = np.maximum(wingspan * pose.focal / depth, floor_px)
    length = np.hypot(u1 - u0, v1 - v0)
    alpha = silhouette * (pose.focal / depth) ** 2 / (width * length + np.pi * width ** 2 / 4)
    assert alpha.max() <= 1
    return Streaks(u0[order], v0[order], u1[order], v1[order], width[order], alpha[order],
                   np.ones(len(order)), depth[order], np.zeros(len(order), bool), order)


@pytest.mark.slow
def test_ink_is_the_same_at_854x480_and_3840x2160():
    tails, heads = synthetic_flock(np.random.default_rng(2), 4000)
    ink = []
    for size in ((854, 480), (3840, 2160)):
        pose = pinhole(size)
        frame = compose(birds_at(pose, tails, heads), flat_sky(pose), (0, 0, *size), False)
        darkening = 1 - linear(frame)[..., 1] / SKY_Y
        ink.append(darkening.sum() / (size[0] * size[1]))  # share of the frame
    assert abs(ink[0] / ink[1] - 1) <= 0.05, ink


def test_a_near_bird_covers_a_far_one():
    size = (64, 32)
    pose = pinhole(size)
    sky = flat_sky(pose, bird="#000000", visibility=1000.0)
    # far: 20…44 px, 14 wide, hazed to 40%; near: 26…38 px, 10 wide (it ends at 21, 43)
    both = make([20, 26], 16, [44, 38], 16, [14.0, 10.0], 1.0,
                contrast=[0.4, 1.0], depth=[500.0, 100.0])
    frame = compose(both, sky, (0, 0, *size), False)
    assert (frame[16, 32, :3] == 0).all()  # the near black bird, not the hazed far one
    assert frame[16, 17, 0] > 60  # the far bird beside it, grey with haze
    swapped = Streaks(*(np.ascontiguousarray(np.asarray(f)[::-1]) for f in both))
    assert compose(swapped, sky, (0, 0, *size), False)[16, 32, 0] > 60  # order matters


def test_haze_tints_toward_the_sky_or_thins_alpha_when_transparent():
    size = (64, 32)
    pose = pinhole(size)
    sky = flat_sky(pose)
    for contrast in (1.0, 0.6, 0.2):
        bird = make(10, 16, 54, 16, 20.0, 1.0, contrast=contrast)
        read = linear(compose(bird, sky, (0, 0, *size), False))[16, 32]
        assert np.allclose(read, (1 - contrast) * SKY_Y, atol=0.004), (contrast, read)
        alpha = compose(bird, sky, (0, 0, *size), True)[16, 32, 3]
        assert alpha == round(255 * contrast)


def test_transparent_alpha_is_exact_where_birds_overlap():
    """Pixels fully inside some of three wide streaks, far to near: each hides αᵢ of the
    alpha behind it and adds αᵢ·contrastᵢ (the rest of it is haze, the sky's), rounded
    once, and the premultiplied colour never exceeds it."""
    size = (80, 40)
    pose = pinhole(size)
    alphas, contrasts = np.array([0.37, 0.61, 0.23]), np.array([0.9, 0.55, 1.0])
    birds = make([5, 25, 45], 20, [35, 55, 75], 20, 24.0, alphas, contrast=contrasts,
                 accent=[False, True, False])
    frame = compose(birds, flat_sky(pose, bird="#FFFFFF"), (0, 0, *size), True)
    for x, inside in ((10, [0]), (30, [0, 1]), (50, [1, 2]), (70, [2])):
        expect = 0.0
        for i in inside:
            expect = expect * (1 - alphas[i]) + alphas[i] * contrasts[i]
        assert frame[20, x, 3] == round(255 * expect), (x, frame[20, x, 3], expect)
    assert (frame[..., :3] <= frame[..., 3:]).all()
    assert (frame[0, :, 3] == 0).all()  # no sky under transparent


def test_a_transparent_plate_over_its_sky_is_the_opaque_frame():
    """Hazed birds overlapping over a sky with a gradient, in linear light before 8 bits:
    the plate merged over the sky (premultiplied: C + (1 − A)·sky) is the opaque frame."""
    size = (96, 64)
    pose = pinhole(size)
    rng = np.random.default_rng(5)
    m = 60
    x0, y0 = rng.uniform(20, 76, m), rng.uniform(15, 50, m)
    ang = rng.uniform(0, 2 * np.pi, m)
    birds = make(x0, y0, x0 + 9 * np.cos(ang), y0 + 9 * np.sin(ang), rng.uniform(2, 7, m),
                 rng.uniform(0.2, 0.9, m), contrast=rng.uniform(0.2, 1.0, m),
                 accent=rng.random(m) < 0.2)
    sky = sky_for(build_scene({"world": {"dimensions": 3}, "flock": {"count": 10},
                               "palette": {"theme": "dusk", "accent": "#2060FF"}}), pose)
    opaque, plate = (np.zeros((size[1], size[0], 4), np.float32) for _ in range(2))
    compose(birds, sky, (0, 0, *size), False, linear=opaque)
    compose(birds, sky, (0, 0, *size), True, linear=plate)
    behind = np.zeros_like(opaque)
    compose(make([], [], [], [], [], []), sky, (0, 0, *size), False, linear=behind)
    merged = plate[..., :3] + (1 - plate[..., 3:]) * behind[..., :3]
    assert plate[..., 3].max() > 0.7 and (plate[..., 3] > 0).mean() > 0.2
    assert np.abs(merged - opaque[..., :3]).max() < 1e-5


def test_compose_matches_the_supersampled_reference():
    size = (96, 64)
    pose = pinhole(size)
    rng = np.random.default_rng(11)
    m = 40
    x0, y0 = rng.uniform(5, 90, m), rng.uniform(5, 58, m)
    ang, length = rng.uniform(0, 2 * np.pi, m), rng.uniform(0, 12, m)
    width, alpha = rng.uniform(1, 6, m), rng.uniform(0.05, 0.9, m)
    contrast = rng.uniform(0.3, 1, m)
    x1, y1 = x0 + length * np.cos(ang), y0 + length * np.sin(ang)
    birds = make(x0, y0, x1, y1, width, alpha, contrast=contrast)
    rows = list(zip(x0, y0, x1, y1, width, alpha, contrast))
    sky = flat_sky(pose, bird="#301020")
    got = linear(compose(birds, sky, (0, 0, *size), False))
    want = composite(size, rows, np.full(3, SKY_Y), srgb_decode([0x30, 0x10, 0x20]))
    assert np.abs(got - want).mean() < 0.004
    assert np.abs(got - want).max() < 0.2  # edges: a distance ramp, not exact area
    ink_got, ink_want = (SKY_Y - got).sum(), (SKY_Y - want).sum()
    assert abs(ink_got / ink_want - 1) < 0.02
    clear = compose(birds, sky, (0, 0, *size), True)[..., 3] / 255
    ref = composite(size, rows, None, None, transparent=True)
    assert abs(clear.sum() / ref.sum() - 1) < 0.02


@pytest.mark.parametrize("width, spread", [(1.0, 0.1), (1.7, 0.07), (3.0, 0.03), (8.0, 0.01)])
def test_a_streaks_coverage_sums_to_its_area(width, spread):
    """Over random lengths, angles and sub-pixel positions, a lone streak leaves alpha ×
    (length·width + π·width²/4) of coverage on average within 1%; a single one strays by
    less than `spread` (thin streaks alias on the pixel grid, as cairo's do)."""
    size = (64, 48)
    pose = pinhole(size)
    rng = np.random.default_rng(int(width * 10))
    ratios = []
    for _ in range(40):
        x0, y0 = rng.uniform(20, 28, 2)
        length, ang = rng.uniform(0, 15), rng.uniform(0, np.pi)
        x1, y1 = x0 + length * math.cos(ang), y0 + length * math.sin(ang)
        frame = compose(make(x0, y0, x1, y1, width, 1.0), flat_sky(pose), (0, 0, *size), True)
        ratios.append(frame[..., 3].sum() / 255 / (length * width + math.pi * width ** 2 / 4))
    ratios = np.array(ratios)
    assert abs(ratios.mean() - 1) < 0.01 and np.abs(ratios - 1).max() < spread, ratios


def test_edge_scale_is_one_for_a_long_wide_streak_and_exact_for_a_dot():
    assert abs(edge_scale(20.0, 1e6) - 1) < 1e-6
    # a dot of radius ½: its kernel integral πb³/3 with b = 1, the disk π/4
    assert abs(edge_scale(0.5, 0.0) - (math.pi / 4) / (math.pi / 3)) < 1e-12
    # below r = ½ the whole kernel is edge: the streak's area over its integral
    r, length = 0.3, 5.0
    want = (2 * r * length + math.pi * r * r) / (0.8 ** 2 * length + math.pi * 0.8 ** 3 / 3)
    assert abs(edge_scale(r, length) - want) < 1e-12


def test_compose_is_deterministic_and_a_window_is_that_part_of_the_frame():
    size = (120, 80)
    pose = pinhole(size)
    tails, heads = synthetic_flock(np.random.default_rng(3), 3000)
    birds = birds_at(pinhole(size, fov_deg=60.0), tails, heads)
    sky = flat_sky(pose)
    full = compose(birds, sky, (0, 0, *size), False)
    assert (compose(birds, sky, (0, 0, *size), False) == full).all()
    assert full[..., 0].min() < 0xB4  # the birds are there
    for window in ((0, 0, 60, 80), (60, 0, 60, 80), (17, 23, 41, 30)):
        x, y, w, h = window
        part = compose(birds, sky, window, False)
        assert (part == full[y:y + h, x:x + w]).all(), window
