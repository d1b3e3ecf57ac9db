"""The 3D sky (render/draw3d/sky.py), the vector stills (render/draw3d/vector.py) and the
3D [palette] / [atmosphere] settings."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import cairo
import numpy as np
import pytest

from naive_optics import srgb_decode
from render.draw3d.optics import compose
from render.draw3d.camera import on_screen, pose as posed
from render.draw3d.sky import (COARSE_DEG, COARSE_PX, GRID_PX, TREELINE_DISTANCE_M,
                               TREELINE_HEIGHT_M, _shoulder, elevation_table, glow_table,
                               grid_px, sky_for, sky_pixels, treeline_polygon)
from render.draw3d.types import Pose
from render.draw3d.types import Streaks
from render.draw3d.vector import (BINS, LAYERS, STOP_TOLERANCE, line_stops, paint_vector,
                                  ray_sine, sky_strips, write_vector)
from render.errors import SceneError
from render.scene import build_scene
from test_optics import birds_at, synthetic_flock

STOPS = [[0.0, "#FF8000"], [30.0, "#8040C0"], [90.0, "#001040"]]


def scene3d(palette=None, atmosphere=None, seed=0):
    raw = {"scene": {"seed": seed}, "world": {"dimensions": 3}, "flock": {"count": 10},
           "palette": palette or {}}
    if atmosphere is not None:
        raw["atmosphere"] = atmosphere
    return build_scene(raw)


def looking(size, pitch_deg, fov_deg=30.0, height=1.7, roll_deg=0.0) -> Pose:
    """A camera at (0, 0, height) looking along +y, pitched up by pitch_deg, rolled."""
    w, h = size
    a, r = math.radians(pitch_deg), math.radians(roll_deg)
    forward = np.array([0.0, math.cos(a), math.sin(a)])
    right0 = np.array([1.0, 0.0, 0.0])
    up0 = np.cross(right0, forward)
    right = math.cos(r) * right0 + math.sin(r) * up0
    up = np.cross(right, forward)
    return Pose(np.array([0.0, 0.0, height]), right, up, forward,
                (h / 2) / math.tan(math.radians(fov_deg) / 2), w, h, 0.1)


def rgb(frame, y, x):
    return tuple(int(c) for c in frame[y, x, 2::-1])


def elevation_of_row(pose, v):
    y = (v + 0.5 - pose.cy) / pose.focal
    d = pose.forward - y * pose.up
    return math.degrees(math.asin(d[2] / np.linalg.norm(d)))


def test_the_gradient_follows_elevation_and_hits_its_stops():
    size = (64, 400)
    pose = looking(size, 45.0, fov_deg=90.0)
    frame = sky_pixels(sky_for(scene3d({"sky": STOPS, "sun_glow": 0.0}), pose), (0, 0, *size))
    rows = [v for v in range(size[1]) if abs(elevation_of_row(pose, v) - 30.0) < 0.15]
    # (within a code: the sky is interpolated between grid points 4 px apart)
    assert rows and np.abs(np.subtract(rgb(frame, rows[0], 32), (0x80, 0x40, 0xC0))).max() <= 1
    assert np.abs(np.subtract(rgb(frame, 0, 32), (0, 0x10, 0x40))).max() <= 1  # 90° up
    # Between stops the blend is in linear light, on a monotone cubic. By hand, red at 15°
    # (linear 1, 0.2159 and 0 at 0°, 30° and 90°: slopes δ = −0.026137 and −0.0035983 a
    # degree): at 30° the harmonic mean 270 / (150/δ₀ + 120/δ₁) = −0.0069074, at 0°
    # ((2·30 + 60)·δ₀ − 30·δ₁) / 90 = −0.033650, so halfway the cubic reads
    # (1 + 0.2159)/2 + 30·(−0.033650 + 0.0069074)/8 = 0.5077, where a straight line
    # read 0.6080.
    mid = [v for v in range(size[1]) if abs(elevation_of_row(pose, v) - 15.0) < 0.15][0]
    red = srgb_decode(list(rgb(frame, mid, 32)))[0]
    assert red == pytest.approx(0.5077, abs=0.005)
    want = monotone_cubic(15.0, [0.0, 30.0, 90.0], np.array(
        [srgb_decode([0xFF, 0x80, 0]), srgb_decode([0x80, 0x40, 0xC0]),
         srgb_decode([0, 0x10, 0x40])]))
    assert np.allclose(srgb_decode(list(rgb(frame, mid, 32))), want, atol=0.01)


def monotone_cubic(x, xs, ys):
    """Fritsch and Carlson's monotone cubic through (xs, ys) (ys (k, c): c channels) at x
    (any shape), held beyond the ends: slopes at the inner points the weighted harmonic
    mean of the two secants (0 where they differ in sign), at the ends the one-sided
    three-point estimate kept within the secant's sign and three times it (plain numpy)."""
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    h = np.diff(xs)
    delta = np.diff(ys, axis=0) / h[:, None]
    d = np.zeros_like(ys)
    if len(xs) == 2:
        d[:] = delta[0]
    else:
        for k in range(1, len(xs) - 1):
            w1, w2 = 2 * h[k] + h[k - 1], h[k] + 2 * h[k - 1]
            a, b = delta[k - 1], delta[k]
            with np.errstate(divide="ignore", invalid="ignore"):
                d[k] = np.where(a * b > 0, (w1 + w2) / (w1 / a + w2 / b), 0.0)
        for end, (h0, h1, a, b) in ((0, (h[0], h[1], delta[0], delta[1])),
                                    (-1, (h[-1], h[-2], delta[-1], delta[-2]))):
            e = ((2 * h0 + h1) * a - h0 * b) / (h0 + h1)
            e = np.where(np.sign(e) != np.sign(a), 0.0, e)
            d[end] = np.where((np.sign(a) != np.sign(b)) & (np.abs(e) > 3 * np.abs(a)),
                              3 * a, e)
    x = np.clip(np.asarray(x, float), xs[0], xs[-1])
    k = np.clip(np.searchsorted(xs, x, side="right") - 1, 0, len(xs) - 2)
    t = ((x - xs[k]) / h[k])[..., None]
    hk = h[k][..., None]
    return ((2 * t ** 3 - 3 * t ** 2 + 1) * ys[k] + (t ** 3 - 2 * t ** 2 + t) * hk * d[k]
            + (-2 * t ** 3 + 3 * t ** 2) * ys[k + 1] + (t ** 3 - t ** 2) * hk * d[k + 1])


@pytest.mark.parametrize("theme", ["dusk", "light", "dark"])
def test_the_gradient_turns_smoothly_through_its_stops(theme):
    """Each theme's sky against the monotone cubic through its stops (plain numpy) across
    the whole lookup table; and at each inner stop the table's slope just either side
    (over its own samples, a tenth of a degree apart) agrees within 15% of the steeper,
    where straight lines turned it by 35–86% there (at the dusk sky's 50° stop, red's
    slope fell to a seventh)."""
    from render.draw3d.sky import SKY_LUT, THEMES_3D, gradient_lut

    stops = THEMES_3D[theme]["sky"]
    lut = gradient_lut(stops)
    colours = np.array([srgb_decode([int(c[i:i + 2], 16) for i in (1, 3, 5)])
                        for _, c in stops])
    angles = [a for a, _ in stops]
    elevation = np.degrees(np.arcsin(np.linspace(0.0, 1.0, SKY_LUT)))
    assert np.abs(lut - monotone_cubic(elevation, angles, colours)).max() < 1e-12
    for at in angles[1:-1]:
        i = int(np.searchsorted(elevation, at))  # the first sample at or past the stop
        before = (lut[i - 1] - lut[i - 3]) / (elevation[i - 1] - elevation[i - 3])
        after = (lut[i + 2] - lut[i]) / (elevation[i + 2] - elevation[i])
        turn = np.abs(after - before).max() / np.maximum(np.abs(after), np.abs(before)).max()
        assert turn < 0.15, (at, before, after)


def exact_srgb(pose, stops):
    """(h, w, 3) sRGB values 0…255 (R, G, B) of each pixel's ray, blended in linear light
    through `stops` by elevation (`monotone_cubic`): the sky without rounding."""
    x, y = np.meshgrid(np.arange(pose.width) + 0.5, np.arange(pose.height) + 0.5)
    u, v = (x - pose.width / 2) / pose.focal, (y - pose.cy) / pose.focal
    d = pose.forward + u[..., None] * pose.right - v[..., None] * pose.up
    elevation = np.degrees(np.arcsin(d[..., 2] / np.linalg.norm(d, axis=-1)))
    colours = np.array([srgb_decode([int(c[i:i + 2], 16) for i in (1, 3, 5)])
                        for _, c in stops])
    lin = monotone_cubic(elevation, [a for a, _ in stops], colours)
    return 255 * np.where(lin <= 0.0031308, 12.92 * lin, 1.055 * lin ** (1 / 2.4) - 0.055)


def test_a_tall_frames_sky_is_drawn_about_its_shifted_axis():
    """A 180x320 portrait of a camera 9° up, composed at 16:9, has its axis 224.65 px
    down (tests/test_camera3d.py): its sky is its own rays' colours (through that axis),
    0.33 codes off on average (the grid's interpolation, the horizon's cells the most),
    and the ground begins at the row where the horizon projects. Drawn about the frame's
    middle row, 64.65 rows off its rays, the sky read 38.8 codes off on average."""
    up = 1.7 + 300 * math.tan(math.radians(9.0))
    cam = posed((0, 0, 1.7), (0, 300, up), (0, 0, 1), 30.0, 180, 320, 0.1)
    assert cam.cy == pytest.approx(224.65, abs=0.01)
    sky = sky_for(scene3d({"sky": STOPS, "sun_glow": 0.0, "treeline": "none"}), cam)
    frame = sky_pixels(sky, (0, 0, 180, 320))[..., 2::-1].astype(float)
    horizon = on_screen(cam, np.array([(0.0, 1e9, 0.0)]))[1][0]  # 254.6 px down
    above = int(horizon) - 2
    off = np.abs(frame[:above] - exact_srgb(cam, STOPS)[:above])
    assert off.mean() < 0.5 and np.percentile(off, 99) < 1.5, (off.mean(), off.max())
    ground = np.abs(frame - frame[-1]).max(axis=(1, 2)) < 8  # rows as dark as the bottom
    assert int(np.argmax(ground)) == pytest.approx(horizon, abs=2)


def test_the_sky_grid_is_coarser_only_where_its_points_stay_close_in_angle():
    assert grid_px(540 / math.tan(math.radians(15))) == COARSE_PX  # 1080p at 30°: 0.23°
    assert grid_px(45 / math.tan(math.radians(30))) == GRID_PX  # 96x90 at 60°: 5.9°
    size = (320, 240)

    def error(deg, pitch):
        """The most any pixel and any 8 x 8 block of the sky, codes, is off its rays'
        exact sRGB (the kink between two stops in view), the frame's focal length making
        COARSE_PX span `deg`."""
        focal = COARSE_PX / math.radians(deg)
        pose = looking(size, pitch, fov_deg=2 * math.degrees(math.atan(120 / focal)))
        frame = sky_pixels(sky_for(scene3d({"sky": STOPS, "sun_glow": 0.0}), pose),
                           (0, 0, *size))[..., 2::-1].astype(float)
        off = frame - exact_srgb(pose, STOPS)
        return grid_px(pose.focal), np.abs(off).max(), \
            np.abs(off.reshape(30, 8, 40, 8, 3).mean(axis=(1, 3))).max()

    # at COARSE_DEG a coarse grid errs as the fine one at twice the angle (a code and a
    # half at a pixel: the dither's floor and the interpolation); any wider, it is fine
    (grid, pixel, block), (_, fine_pixel, fine_block) = error(COARSE_DEG, 35.0), \
        error(2 * COARSE_DEG, 35.0)
    assert grid == COARSE_PX and pixel < 1.5 and block < 0.5
    assert pixel < fine_pixel + 0.1 and error(1.01 * COARSE_DEG, 35.0)[0] == GRID_PX


def test_a_slow_gradient_is_dithered_not_banded():
    size = (256, 192)
    pose = looking(size, 20.0, fov_deg=40.0)
    stops = [[0.0, "#54406A"], [90.0, "#48406A"]]  # red: a code every ~40 rows
    frame = sky_pixels(sky_for(scene3d({"sky": stops, "sun_glow": 0.0}), pose),
                       (0, 0, *size))[..., 2::-1].astype(float)
    exact = exact_srgb(pose, stops)
    assert np.ptp(exact[..., 0]) > 3  # a few codes over the frame: bands when rounded
    rounded = np.floor(exact + 0.5)
    # 8 x 8 blocks average to the exact value, far closer than rounding's bands do
    blocks = (size[1] // 8, 8, size[0] // 8, 8, 3)

    def means(codes):
        return codes.reshape(blocks).mean(axis=(1, 3))

    assert np.abs(means(frame) - means(exact)).max() < 0.1 < 0.3 < \
        np.abs(means(rounded) - means(exact)).max()
    assert np.abs(frame - exact).max() < 1.05  # each pixel within a code
    # no band: down the frame, red (a code every ~40 rows) changes from each 8 px block to
    # the next, where rounded it holds for 5 blocks at a time
    steps = np.diff(means(frame)[..., 0], axis=0)
    assert (steps > 0).all() and (np.diff(means(rounded)[..., 0], axis=0) == 0).mean() > 0.5


def test_ground_below_the_horizon_fades_into_the_horizon_with_distance():
    size = (64, 200)
    pose = looking(size, 0.0, fov_deg=60.0, height=30.0)
    palette = {"sky": STOPS, "ground": "#204010", "sun_glow": 0.0}
    hazy = sky_pixels(sky_for(scene3d(palette, {"visibility": 2000.0}), pose), (0, 0, *size))
    near = srgb_decode(list(rgb(hazy, 199, 32)))  # 30 m up, the bottom row is ~52 m away
    distance = 30.0 / math.sin(math.radians(-elevation_of_row(pose, 199)))
    keep = 0.05 ** (distance / 2000.0)
    want = keep * srgb_decode([0x20, 0x40, 0x10]) + (1 - keep) * srgb_decode([0xFF, 0x80, 0])
    assert np.allclose(near, want, atol=0.01)
    just_below = srgb_decode(list(rgb(hazy, 101, 32)))  # ~1.7 km away: mostly horizon
    assert np.abs(just_below - srgb_decode([0xFF, 0x80, 0])).max() < 0.2
    clear = sky_pixels(sky_for(scene3d(palette), pose), (0, 0, *size))
    assert rgb(clear, 101, 32) == (0x20, 0x40, 0x10)  # no [atmosphere]: no haze


def test_the_ground_just_below_the_horizon_is_hazed_row_by_row_not_interpolated():
    # At dusk the haze over the ground is the earth's shadow, far darker than the
    # horizon's glow, and 1.7 m up in 10 km of it the ground turns from that airlight to
    # its own colour within 0.6° below the horizon: less than a row here, where the sky's
    # grid of 4 px spans 2.7°. Interpolated, the rows under the horizon read tens of codes
    # off the colour of their own rays.
    size = (96, 90)
    # pitched so that the grid's row of points at y = 44 looks 0.1° below the horizon
    pose = looking(size, -0.47, fov_deg=60.0, height=1.7)
    assert -0.15 < elevation_of_row(pose, 44) < -0.05
    sky = sky_for(scene3d({"theme": "dusk", "treeline": "none"}, {"visibility": 10_000.0}),
                  pose)
    frame = sky_pixels(sky, (0, 0, *size))
    table, glow = elevation_table(sky, 1.7), glow_table(sky)
    for v in range(40, 60):
        u = (np.arange(size[0]) + 0.5 - size[0] / 2) / pose.focal
        ray = pose.forward + u[:, None] * pose.right - \
            ((v + 0.5 - size[1] / 2) / pose.focal) * pose.up
        ray /= np.linalg.norm(ray, axis=1)[:, None]
        column = [np.interp(ray[:, 2], np.linspace(-1, 1, len(table)), table[:, c])
                  for c in range(4)]
        shine = np.interp(ray @ sky.sun, np.linspace(-1, 1, len(glow)), glow) * column[3]
        lin = np.clip(rolled_off(np.stack(column[:3], axis=1),
                                 shine[:, None] * sky.sun_colour), 0, 1)
        exact = 255 * np.where(lin <= 0.0031308, 12.92 * lin, 1.055 * lin ** (1 / 2.4) - 0.055)
        codes = frame[v, :, 2::-1].astype(float)
        assert np.abs(codes.mean(axis=0) - exact.mean(axis=0)).max() < 1.0, v


def rolled_off(base, light, knee=0.8):
    """base + light, with what passes max(base, knee) bent toward 1 on an exponential
    shoulder (plain numpy)."""
    start = np.maximum(base, knee)
    total = base + light
    over, room = total - start, 1.0 - start
    with np.errstate(divide="ignore", invalid="ignore"):
        bent = start + room * -np.expm1(-over / room)
    return np.where((over > 0) & (room > 0), bent, total)


def test_the_glow_rolls_off_by_hand():
    """0.5 + 0.2 is under the knee: 0.7. 0.5 + 0.5 passes it by 0.2, a whole headroom of
    0.2: 0.8 + 0.2·(1 − e⁻¹) = 0.92642. Over a base of 0.9 the knee is the base: 0.9 +
    0.1 → 0.9 + 0.1·(1 − e⁻¹) = 0.96321. Just past the knee the slope is still 1."""
    assert _shoulder(0.5, 0.2) == pytest.approx(0.7, abs=1e-15)
    assert _shoulder(0.5, 0.5) == pytest.approx(0.92642, abs=1e-5)
    assert _shoulder(0.9, 0.1) == pytest.approx(0.96321, abs=1e-5)
    assert _shoulder(0.5, 0.300001) - _shoulder(0.5, 0.3) == pytest.approx(1e-6, rel=1e-4)
    assert _shoulder(0.5, 2.0) < 1.0
    base, light = np.linspace(0, 0.99, 12)[:, None], np.linspace(0, 3, 13)[None, :]
    assert np.allclose([[_shoulder(b, g) for g in light[0]] for b in base[:, 0]],
                       rolled_off(base, light), atol=1e-12)


def test_the_glow_meets_full_scale_without_an_edge():
    """A row through the dusk glow, near the horizon where its red reaches full scale:
    the slope of the red across 32 px either side of any point changes by under 0.09
    codes a pixel. Clipped, it read up to 0.17 where it met 255: an arc round the sun."""
    sky0 = sky_for(scene3d({"theme": "dusk", "treeline": "none"}), looking((64, 64), 0.0))
    azimuth = math.atan2(sky0.sun[1], sky0.sun[0])
    w, h = 1600, 400
    cam = posed((0, 0, 1.7), (math.cos(azimuth), math.sin(azimuth),
                              1.7 + math.tan(math.radians(8))), (0, 0, 1), 20.0, w, h, 0.1,
                w / h)
    frame = sky_pixels(sky0._replace(pose=cam), (0, 0, w, h)).astype(float)
    k = 32
    jumps = []
    for row in range(20, 390, 10):
        red = frame[row - 4:row + 4, :, 2].mean(axis=0)  # dithered: a few rows' mean
        slope = (red[k:] - red[:-k]) / k
        jumps.append(np.abs(slope[k:] - slope[:-k]).max())
    assert max(jumps) < 0.09, np.round(jumps, 3)
    assert frame[350, w // 2, 2] == 255  # it does reach full scale there


def test_the_sun_glows_around_its_direction():
    size = (200, 120)
    pose = looking(size, 10.0)
    sky = sky_for(scene3d({"theme": "dusk", "sun": [90.0, 10.0], "sun_glow": 5.0}), pose)
    frame = sky_pixels(sky, (0, 0, *size)).astype(int)
    assert frame[60, 100, :3].sum() > frame[60, 10, :3].sum() + 60
    off = sky_pixels(sky_for(scene3d({"theme": "dusk", "sun_glow": 0.0}), pose),
                     (0, 0, *size)).astype(int)
    assert abs(off[60, 100, :3].sum() - off[60, 10, :3].sum()) < 6


def test_treeline_is_seeded_and_stands_on_the_horizon():
    size = (320, 180)
    pose = looking(size, 0.0)
    palette = {"theme": "dusk", "treeline": "trees", "sun_glow": 0.0}
    one = sky_pixels(sky_for(scene3d(palette, seed=1), pose), (0, 0, *size)).copy()
    again = sky_pixels(sky_for(scene3d(palette, seed=1), pose), (0, 0, *size))
    other = sky_pixels(sky_for(scene3d(palette, seed=2), pose), (0, 0, *size))
    bare = sky_pixels(sky_for(scene3d(dict(palette, treeline="none"), seed=1), pose),
                      (0, 0, *size))
    assert (one == again).all() and (one != other).any()
    changed = np.flatnonzero((one != bare).any(axis=(1, 2)))
    # from its foot on the ground (just below the horizon, row 90) up to its height
    focal = 90 / math.tan(math.radians(15))
    top = 90 - focal * (TREELINE_HEIGHT_M - 1.7) / TREELINE_DISTANCE_M
    foot = 90 + focal * 1.7 / TREELINE_DISTANCE_M
    assert top - 1 <= changed.min() <= top + 3 and changed.max() <= foot + 1
    polygon = treeline_polygon(sky_for(scene3d(dict(palette, treeline="reeds")), pose),
                               (0, 0, *size))
    seen = polygon[(polygon[:, 0] >= 0) & (polygon[:, 0] <= size[0])]
    # at the frame's edge the reeds are nearer along the view, 1/cos(25.5°) taller on it
    edge = math.cos(math.atan(size[0] / 2 / focal))
    assert 90 - (90 - top) / edge - 0.5 <= seen[:, 1].min()
    assert seen[:, 1].max() <= 90 + (foot - 90) / edge + 0.5


def test_a_windows_treeline_is_the_frames_moved_not_cut_to_the_window():
    """A tile of a poster fills the same silhouette as the whole frame, shifted: the
    polygon cut to each window's own reach filled the reeds' tips a shade differently
    (up to 12 levels in an 8000x4500 still in 1000-px tiles)."""
    size = (8000, 4500)
    pose = looking(size, 2.0)
    sky = sky_for(scene3d({"treeline": "reeds"}), pose)
    whole = treeline_polygon(sky, (0, 0, *size))
    for window in ((3000, 2500, 1000, 1000), (0, 2500, 64, 64), (7936, 2000, 64, 1300)):
        part = treeline_polygon(sky, window)
        assert part is not None and part.shape == whole.shape, window
        assert np.allclose(part + window[:2], whole, rtol=0, atol=1e-9), window


def test_a_tiles_treeline_is_filled_as_in_the_whole_frame():
    """cairo fills the pixels by a surface's border a shade differently: the film's
    treeline met the ground 1-2 levels off along a 4K poster's tile seam (row 2738, x
    4093-4095 of 6000x3375 in 1024- or 2048-px tiles)."""
    from render.draw3d.camera import pose_at
    from render.scene import load_scene

    size = (6000, 3375)
    scene = load_scene("scenes/murmuration.toml")
    sky = sky_for(scene, pose_at(scene, 12.5, None, *size))
    whole = sky_pixels(sky, (0, 0, *size))
    for x, y, w, h in ((3072, 2048, 1024, 1024), (2048, 2048, 2048, 1327),
                       (4096, 2048, 1904, 1327)):
        assert (sky_pixels(sky, (x, y, w, h)) == whole[y:y + h, x:x + w]).all(), (x, y)


@pytest.mark.parametrize("pitch, fov, seed", [(7.5, 22.0, 0), (2.0, 10.0, 2)])
def test_a_posters_tiles_fill_the_trees_as_the_whole_frame(pitch, fov, seed):
    """cairo sweeps a row of pixels whole, or samples it in sub-rows where any edge of
    the path ends within it, anywhere along it: a tile that left out a tree far to its
    side filled a crown's edge up to 13 levels off the whole frame's (100- and 333-px
    tiles of a 1920x1080 treeline; flock3d.toml's still at 2 s in 333-px tiles)."""
    size = (1920, 1080)
    sky = sky_for(scene3d({"theme": "dusk", "treeline": "trees"}, {"visibility": 8000.0},
                          seed=seed), looking(size, pitch, fov_deg=fov))
    tiles_are_the_whole(sky, (100, 333))


def tiles_are_the_whole(sky, sides):
    """Every tile of each side in `sides` is the whole frame's sky to the bit."""
    size = (sky.pose.width, sky.pose.height)
    whole = sky_pixels(sky, (0, 0, *size))
    for side in sides:
        for y in range(0, size[1], side):
            for x in range(0, size[0], side):
                window = (x, y, min(side, size[0] - x), min(side, size[1] - y))
                tile = sky_pixels(sky, window)
                assert (tile == whole[y:y + window[3], x:x + window[2]]).all(), window
    return whole


def test_a_frame_wider_than_a_cairo_surface_fills_its_treeline_in_pieces():
    # A poster 40000 px wide (drawn in tiles) made a band cairo refused: "invalid value
    # (typically too big)". Its pieces are each tile's, whatever the tile.
    size = (40000, 120)
    pose = looking(size, 0.0, fov_deg=8.0)
    sky = sky_for(scene3d({"theme": "dusk", "treeline": "reeds"}), pose)
    wide = sky_pixels(sky, (8000, 0, 16000, 120))  # across the pieces' seam at 16384
    for x in range(8000, 24000, 1000):
        assert (sky_pixels(sky, (x, 0, 1000, 120)) == wide[:, x - 8000:x - 7000]).all(), x
    # the reeds are drawn on both sides of the seam, where the bare sky has none
    bare = sky_pixels(sky_for(scene3d({"theme": "dusk", "treeline": "none"}), pose),
                      (8000, 0, 16000, 120))
    reeds = (np.abs(wide.astype(int) - bare).max(axis=2) > 20).any(axis=0)
    seam = 16384 - 8000
    assert reeds[seam - 200:seam].mean() > 0.9 and reeds[seam:seam + 200].mean() > 0.9


def test_a_camera_rolled_a_quarter_turn_sees_the_treeline_turned():
    # Seen close (half a degree across 400 px, the reeds some 1,600 px from foot to top)
    # and rolled a quarter turn, the reeds run down the frame: the same silhouette as the
    # level camera's turned, sky to the right. Judged along the rows alone, its points
    # lost the reeds' tops and filled a sliver off the frame (18% of it instead of 82%).
    size = (400, 400)

    def reeds(roll):
        drawn = [sky_pixels(sky_for(scene3d({"theme": "dusk", "treeline": kind}),
                                    looking(size, 0.0, fov_deg=0.5, roll_deg=roll)),
                            (0, 0, *size)) for kind in ("reeds", "none")]
        return (drawn[0] != drawn[1]).any(axis=2)

    level, rolled = reeds(0.0), reeds(90.0)
    assert 0.5 < level.mean() < 0.95
    assert (np.rot90(level, k=-1) == rolled).mean() > 0.999


@pytest.mark.parametrize("kind", ["reeds", "trees"])
def test_a_rolled_frames_treeline_is_filled_in_blocks_as_a_whole(kind):
    # Rolled, the treeline crosses the frame corner to corner: its band of rows is most of
    # the frame, filled in blocks of BAND_ROWS rows, each the whole fill's to the bit.
    from render.draw3d.sky import BAND_ROWS

    size = (900, 2400)
    sky = sky_for(scene3d({"theme": "dusk", "treeline": kind}),
                  looking(size, 0.0, fov_deg=30, roll_deg=70.0))
    whole = tiles_are_the_whole(sky, (300, 512, 777))
    bare = sky_pixels(sky_for(scene3d({"theme": "dusk", "treeline": "none"}),
                              looking(size, 0.0, fov_deg=30, roll_deg=70.0)), (0, 0, *size))
    drawn = np.flatnonzero((whole != bare).any(axis=(1, 2)))
    assert np.ptp(drawn) > 3 * BAND_ROWS  # the band spans several blocks


def test_a_tall_rolled_posters_treeline_is_kept_in_bounded_blocks():
    # 40000 px tall, its camera rolled a quarter turn: the treeline runs down the frame,
    # a band of rows taller than a cairo surface (which refused it whole: "invalid value
    # (typically too big)"), kept a few blocks at a time, not the whole band.
    from render.draw3d import sky as sky_module

    size = (200, 40000)
    sky = sky_for(scene3d({"theme": "dusk", "treeline": "reeds"}),
                  looking(size, 0.0, fov_deg=30, roll_deg=90.0))
    outline = sky_module.treeline_outline(sky)
    assert outline.bottom - outline.top > 32767
    tall = sky_pixels(sky, (0, 19000, 200, 2000))
    for y in range(19000, 21000, 250):
        assert (sky_pixels(sky, (0, y, 200, 250)) == tall[y - 19000:y - 18750]).all(), y
    bare = sky_pixels(sky_for(scene3d({"theme": "dusk", "treeline": "none"}),
                              looking(size, 0.0, fov_deg=30, roll_deg=90.0)),
                      (0, 19000, 200, 2000))
    assert (tall != bare).any(axis=(1, 2)).all()  # the reeds cross every row
    for y in range(0, size[1], 2000):
        sky_pixels(sky, (0, y, 200, 2000))
    assert sky_module._kept_bytes[0] <= sky_module.BAND_KEPT_BYTES
    # a moving camera's frames, each its own view, keep the last few views' alone
    for pitch in np.linspace(0.0, 3.0, 12):
        sky_pixels(sky_for(scene3d({"theme": "dusk", "treeline": "reeds"}),
                           looking((640, 360), pitch)), (0, 0, 640, 360))
    assert len(sky_module._kept_views) == sky_module.VIEWS_KEPT
    assert sky_module._kept_bytes[0] == sum(held for entries in sky_module._kept_views.values()
                                            for _, held in entries.values())


def test_the_sky_shows_under_the_trees_crowns():
    # Crowns on trunks, not columns standing on the ground: seen close enough to resolve
    # them (10° field of view, the trees 70 px tall), many columns of pixels cross the
    # treeline, then sky again under a crown's side, then the hedge. A height profile
    # filled down to the ground can never do that.
    size = (480, 270)
    pose = looking(size, 0.0, fov_deg=10.0)
    palette = {"theme": "dusk", "treeline": "trees", "sun_glow": 0.0}
    trees = sky_pixels(sky_for(scene3d(palette, seed=1), pose), (0, 0, *size))
    bare = sky_pixels(sky_for(scene3d(dict(palette, treeline="none"), seed=1), pose),
                      (0, 0, *size))
    dark = (np.abs(trees.astype(int) - bare).max(axis=2) > 40).T  # columns, top down
    runs = [np.count_nonzero(np.diff(column.astype(int)) == 1) for column in dark]
    assert np.mean(np.array(runs) >= 2) > 0.3


def test_crowns_stay_round_on_a_poster():
    # A frame's crowns are polygons of 32 points; one as wide as a poster's (a field of
    # view of half a degree: crowns some 1,000 px across) takes every point of the outline.
    from render.draw3d.sky import FINE, tree_polygons

    size = (1280, 720)
    palette = {"theme": "dusk", "treeline": "trees"}
    frame = tree_polygons(sky_for(scene3d(palette), looking(size, 2.0)), (0, 0, *size))
    poster = tree_polygons(sky_for(scene3d(palette), looking(size, 0.5, fov_deg=0.5)),
                           (0, 0, *size))
    assert frame.shape[1] == FINE // 4 and poster.shape[1] == FINE
    # the crowns' sides stay short against their size (the trunks: four corners)
    steps = np.hypot(*np.diff(poster, axis=1).transpose(2, 0, 1))
    crowns = (steps > 0).all(axis=1)
    widths = np.ptp(poster[crowns, :, 0], axis=1)
    assert widths.max() > 800 and (steps[crowns].max(axis=1) < widths / 10).all()


def test_trees_have_crowns_of_varied_height_and_width_and_reeds_are_a_bed():
    from scipy.ndimage import median_filter

    from render.draw3d.sky import horizon_profile, tree_row

    trees, reeds = horizon_profile("trees", 3), horizon_profile("reeds", 3)
    assert trees.max() == reeds.max() == 1.0 and (horizon_profile("trees", 3) == trees).all()
    # trees round the ring, crowns of varied height and width on trunks
    hedge, _, trunks, outlines = tree_row(3)
    tops, bottoms = outlines[:, :, 1].max(axis=1), outlines[:, :, 1].min(axis=1)
    widths = np.ptp(outlines[:, :, 0], axis=1)
    assert len(trunks) > 300 and np.ptp(tops) > 0.4 and widths.max() > 2 * widths.min()
    assert (trunks[:, 1] > bottoms).all()  # each trunk reaches into its crown
    # a crown is lobed, not one dome: its outline's reach from its middle has several tops
    reach = np.hypot(outlines[:, :, 0], outlines[:, :, 1] - trunks[:, 1:2])
    tops_each = ((reach > np.roll(reach, 1, axis=1)) & (reach >= np.roll(reach, -1, axis=1)))
    assert np.median(tops_each.sum(axis=1)) >= 3
    # reeds: a bed standing most of the way up, leaves a sample wide poking out of it
    spikes = (reeds[1:-1] > reeds[:-2] + 0.05) & (reeds[1:-1] > reeds[2:] + 0.05)
    assert spikes.sum() > 500 and np.median(reeds) > 0.6
    # nothing towers over the bed around it (a row of spires read as a town, not reeds)
    bed = median_filter(reeds, 201, mode="wrap")
    assert (reeds - bed).max() < 0.3
    # and plumes: the tallest nod, a head tapering beside the stem, not a lone spike
    tall = np.flatnonzero(reeds[1:-1] > 0.9) + 1
    headed = np.maximum(reeds[tall - 1], reeds[tall + 1]) > reeds[tall] - 0.1
    assert len(tall) > 20 and headed.mean() > 0.8


def test_a_window_of_the_sky_is_that_part_of_the_frame():
    size = (203, 117)
    pose = looking(size, 2.0, roll_deg=7.0)
    sky = sky_for(scene3d({"theme": "dusk", "sun": [90.0, 3.0]}, {"visibility": 6000.0}),
                  pose)
    full = sky_pixels(sky, (0, 0, *size))
    assert (sky_pixels(sky, (0, 0, *size)) == full).all()
    for x, y, w, h in ((0, 0, 101, 117), (101, 0, 102, 117), (37, 51, 66, 29)):
        assert (sky_pixels(sky, (x, y, w, h)) == full[y:y + h, x:x + w]).all(), (x, y)
    # the horizon stays sharp: interpolation stops where it crosses a grid cell
    hard = sky_pixels(sky_for(scene3d({"sky": STOPS, "ground": "#000000"}), pose),
                      (0, 0, *size))
    column = hard[:, 101, 2].astype(int)
    assert np.abs(np.diff(column)).max() > 200  # #FF8000 to black from one row to the next


def test_themes_light_dark_and_dusk_draw_in_3d():
    size = (64, 36)
    pose = looking(size, 5.0)
    frames = [sky_pixels(sky_for(scene3d({"theme": t}), pose), (0, 0, *size)).copy()
              for t in ("light", "dark", "dusk")]
    assert frames[0][..., :3].mean() > 180 and frames[1][..., :3].mean() < 40
    assert (frames[2][..., 2].astype(int) - frames[2][..., 0]).mean() > 20  # warm sunset
    sky = sky_for(scene3d({"theme": "dusk"}), pose)
    assert np.all(sky.bird < 0.01)  # near-black birds: linear < 1%


def test_transparent_drops_the_sky():
    size = (96, 54)
    pose = looking(size, 5.0)
    frame = compose(birds_at(pose, *synthetic_flock(np.random.default_rng(0), 50)),
                    sky_for(scene3d({"theme": "dusk"}), pose), (0, 0, *size), True)
    assert (frame[..., 3] == 0).mean() > 0.9 and frame[..., 3].max() > 0


def test_a_vector_still_is_sky_treeline_and_a_bounded_number_of_bird_paths(tmp_path):
    size = (320, 180)
    pose = looking(size, 3.0)
    sky = sky_for(scene3d({"theme": "dusk"}, {"visibility": 8000.0}), pose)
    tails, heads = synthetic_flock(np.random.default_rng(4), 3000)
    lift = np.array([0.0, 0.0, 25.0])  # in the sky, above the treeline
    birds = birds_at(pose, tails + lift, heads + lift)
    write_vector(tmp_path / "a.svg", birds, sky, 96.0)
    write_vector(tmp_path / "a.pdf", birds, sky, 96.0, title="dusk")
    assert (tmp_path / "a.pdf").read_bytes().startswith(b"%PDF")
    paths = [e for e in ET.parse(tmp_path / "a.svg").iter() if e.tag.endswith("path")]
    strips = len(sky_strips(sky))
    assert strips + 2 <= len(paths) <= strips + 1 + LAYERS * BINS  # treeline, bird paths
    # Close to the raster frame: the sky within a code or two (its strips; the raster
    # is dithered), the birds' ink within 25% (sRGB blending, unions within a path).
    vector, raster = {}, {}
    for name, streaks in (("birds", birds), ("none", type(birds)(*(f[:0] for f in birds)))):
        image = cairo.ImageSurface(cairo.FORMAT_ARGB32, *size)
        paint_vector(cairo.Context(image), streaks, sky, False)
        image.flush()
        vector[name] = np.ndarray((size[1], size[0], 4), np.uint8,
                                  image.get_data())[..., :3].astype(int)
        raster[name] = compose(streaks, sky, (0, 0, *size), False)[..., :3].astype(int)
    assert np.abs(vector["none"] - raster["none"]).mean() < 1
    ink_vector = (vector["none"] - vector["birds"]).sum()
    ink_raster = (raster["none"] - raster["birds"]).sum()
    assert ink_raster > 0 and abs(ink_vector / ink_raster - 1) < 0.25, (ink_vector, ink_raster)


NO_BIRDS = Streaks(*(np.zeros(0) for _ in Streaks._fields))


def vector_pixels(sky):
    """The vector still's sky and ground, drawn by cairo onto pixels: (h, w, 3) BGR."""
    w, h = sky.pose.width, sky.pose.height
    image = cairo.ImageSurface(cairo.FORMAT_ARGB32, w, h)
    paint_vector(cairo.Context(image), NO_BIRDS, sky, False)
    image.flush()
    return np.ndarray((h, w, 4), np.uint8, image.get_data())[..., :3].astype(int)


@pytest.mark.parametrize("pose", [
    looking((480, 270), 8.0), looking((480, 270), 8.0, roll_deg=20.0),
    looking((480, 270), 30.0, fov_deg=90.0), looking((270, 480), 8.0),
    # the horizon far above the frame (its strips' shapes were cut short of the bottom),
    # rolled past 90° (read as no horizon: smeared), its line 10⁷ px off (past cairo's
    # fixed point), rolled a quarter turn (its horizon upright, read as no horizon)
    looking((480, 270), -60.0), looking((480, 270), 8.0, roll_deg=100.0),
    looking((480, 270), 89.999), looking((480, 270), 8.0, roll_deg=90.0)],
    ids=["level", "rolled", "wide", "tall", "down", "upside-down", "zenith", "quarter-turn"])
def test_a_vector_sky_is_the_raster_sky_glow_and_haze_included(pose):
    # The sun's glow added in linear light and rolled off, over a sky whose lines of
    # equal elevation curve in a wide view, and hazed ground whose glow shows only just
    # below the horizon: what a gradient across the frame with a glow in one colour
    # painted OVER it missed by 17-61 codes on average. Strips along the horizon hold
    # every pixel within a code or two of the raster's (dithered) sky.
    sky = sky_for(scene3d({"theme": "dusk", "treeline": "none"}, {"visibility": 5000.0}),
                  pose)
    w, h = pose.width, pose.height
    u, v = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
    sine = ray_sine(sky, u.ravel(), v.ravel()).reshape(h, w)
    off = np.abs(vector_pixels(sky) - sky_pixels(sky, (0, 0, w, h))[..., :3]).max(axis=2)
    near = 2.0 / pose.focal  # two pixels of the horizon: antialiased, or the haze's
    sides = [side for side in (sine > near, sine < -near) if side.any()]  # change within
    assert sides  # one pixel point-sampled
    for side in sides:
        assert off[side].mean() < 1 and np.percentile(off[side], 99) <= 2, \
            (off[side].mean(), np.percentile(off[side], 99))


def test_the_sky_s_strips_meet_at_the_horizon():
    pose = looking((320, 180), 5.0, roll_deg=10.0)
    sky = sky_for(scene3d({"theme": "dusk"}, {"visibility": 5000.0}), pose)
    tops = np.array([top for top, _, _ in sky_strips(sky)])
    assert np.all(np.diff(tops) > 0) and tops[0] < 0 < tops[-1]
    assert 0.0 in tops  # a strip starts at the horizon: no strip spans it


def test_a_strip_keeps_only_the_stops_a_line_cannot_stand_in_for():
    t = np.linspace(0.0, 1.0, 11)[:, None]
    straight = 0.2 + 0.5 * t * np.array([1.0, 0.5, 0.0])
    assert list(line_stops(straight)) == [0, 10]
    kinked = np.minimum(t, 0.6) * np.ones(3)  # bends at the 7th sample
    assert list(line_stops(kinked)) == [0, 6, 10]
    wiggle = straight.copy()
    wiggle[4] += 2 * STOP_TOLERANCE  # one colour off the line by more than the tolerance
    keep = line_stops(wiggle)
    assert 4 in keep or {3, 5} <= set(keep)
    for colours in (straight, kinked, wiggle):  # every colour within the tolerance
        keep = line_stops(colours)
        line = np.column_stack([np.interp(np.arange(11), keep, colours[keep, c])
                                for c in range(3)])
        assert np.abs(line - colours).max() <= STOP_TOLERANCE + 1e-12


def test_3d_palette_keys_and_atmosphere_are_refused_in_a_2d_scene():
    with pytest.raises(SceneError) as err:
        build_scene({"palette": {"sky": STOPS, "treeline": "reeds"},
                     "atmosphere": {"visibility": 5000.0}})
    text = str(err.value)
    assert "palette.sky: a 3D-only key" in text and "palette.treeline: a 3D-only key" in text
    assert "[atmosphere] is 3D-only" in text
    assert build_scene({"palette": {"theme": "dusk"}}).colours()["ink"][0] < 0.1


@pytest.mark.parametrize("palette, message", [
    ({"sky": [[10.0, "#FFFFFF"], [5.0, "#000000"]]}, "elevations in increasing order"),
    ({"sky": [[100.0, "#FFFFFF"]]}, "≤ 90"),
    ({"sky": "blue"}, "expected colour stops"),
    ({"sky": [[0.0, "white"]]}, "expected a colour"),
    ({"sun": [90.0, 95.0]}, "elevation in [-90, 90]"),
    ({"sun": 3}, "expected [azimuth, elevation]"),
    ({"treeline": "bush"}, "expected one of none | trees | reeds"),
    ({"treeline_distance": 0.0}, "> 0"),
    ({"sun_glow": -1.0}, "≥ 0"),
])
def test_bad_3d_palette_values_are_named(palette, message):
    with pytest.raises(SceneError) as err:
        scene3d(palette)
    key = next(iter(palette))
    assert f"palette.{key}" in str(err.value) and message in str(err.value), str(err.value)


def test_visibility_must_be_positive():
    with pytest.raises(SceneError, match="atmosphere.visibility: expected a value > 0"):
        scene3d(atmosphere={"visibility": 0.0})


REEDS = {"treeline": "reeds", "treeline_distance": 300.0, "treeline_height": 4.0}


def test_what_lies_behind_the_treeline_by_hand():
    """The eye 1.7 m up; the reed bed's outline due ahead (+y, azimuth 90°, one of its
    samples) `top` m high, 300 m off. A point 600 m off is seen over the ring at
    1.7 + (z − 1.7)·300/600 m: hidden below z = 1.7 + 2·(top − 1.7), seen above it; one
    400 m off at 0.6 m is seen at 0.875 m; one 299 m off, in front of the reeds, is seen
    however low."""
    from render.draw3d.sky import PROFILE_SAMPLES, _ring, behind_treeline

    sky = sky_for(scene3d(REEDS), looking((64, 36), 0.0))
    _, _, top = _ring("reeds", 0, 300.0, 4.0)
    ahead = top[PROFILE_SAMPLES // 4]
    assert 0.875 < ahead <= 4.0
    edge = 1.7 + 2 * (ahead - 1.7)
    points = np.array([(0, 600, edge - 0.01), (0, 600, edge + 0.01), (0, 400, 0.6),
                       (0, 299, 0.1), (0, 600, 30.0)])
    assert behind_treeline(sky, points).tolist() == [True, False, True, False, False]
    # Between two samples the outline is the straight edge the silhouette draws.
    step = 2 * math.pi / PROFILE_SAMPLES
    mid = 0.5 * (top[PROFILE_SAMPLES // 4] + top[PROFILE_SAMPLES // 4 + 1])
    at = math.pi / 2 + 0.5 * step
    edge = 1.7 + 2 * (mid - 1.7)
    pair = np.array([(600 * math.cos(at), 600 * math.sin(at), z)
                     for z in (edge - 1e-6, edge + 1e-6)])
    assert behind_treeline(sky, pair).tolist() == [True, False]
    assert not behind_treeline(sky_for(scene3d({"treeline": "none"}), sky.pose),
                               points).any()


def test_birds_behind_the_treeline_are_not_drawn_unless_it_is_left_out():
    """A landing bird goes into the reeds before it is down: the frame drops it (rows kept
    in bird order), as it drops a landed one; a transparent plate, without the reeds,
    keeps it."""
    from render.states import FrameState

    pose = looking((64, 36), 0.0)
    positions = np.array([(0.0, 400.0, 0.6), (0.0, 400.0, 50.0), (5.0, 400.0, 40.0)])
    state = FrameState(0, positions, np.tile((10.0, 0.0, 0.0), (3, 1)), np.full(3, 7.0),
                       np.zeros(3, bool), pose=pose, landed=np.array([False, False, True]))
    for roost, kept in (({"landed": "hidden"}, [[0, 400, 50]]),
                        ({"landed": "ground"}, [[0, 400, 50], [5, 400, 40]])):
        raw = {"world": {"dimensions": 3}, "flock": {"count": 10}, "palette": REEDS,
               "roost": roost}
        scene = build_scene(raw)
        assert state.visible(scene).positions.tolist() == kept
        raw["output"] = {"transparent": True}
        assert len(state.visible(build_scene(raw)).positions) == len(kept) + 1
