"""Drawing: streak geometry, density buckets, palette, world→pixel fit, size independence."""

from __future__ import annotations

import numpy as np
import pytest

from render.draw.streaks import BUCKETS, buckets, draw_frame, segments
from render.draw.surface import Canvas, world_to_pixels
from render.scene import THEMES, build_scene


def scene_with(**sections):
    raw = {"world": {"width": 80.0, "height": 45.0, "boundary": "wrap"},
           "flock": {"count": 2}, "render": {"min_width_px": 0.0, "accent_every": 0}}
    for name, body in sections.items():
        raw.setdefault(name, {}).update(body)
    return build_scene(raw)


def rgb_of(hexcode):
    return np.array([int(hexcode[i:i + 2], 16) for i in (1, 3, 5)])


def ink_mask(pixels, background):
    """Pixels that differ from the background colour. pixels: (h, w, 4) BGRA."""
    rgb = pixels[:, :, 2::-1].astype(int)
    return np.abs(rgb - background).sum(axis=2) > 12


def draw(scene, pos, vel, neighbours=None, accent=None, size=(320, 180)):
    n = len(pos)
    canvas = Canvas(size)
    neighbours = np.zeros(n, np.int64) if neighbours is None else neighbours
    accent = np.zeros(n, bool) if accent is None else accent
    return draw_frame(canvas, scene, np.asarray(pos, float), np.asarray(vel, float),
                      neighbours, accent).copy()


def test_streak_runs_from_tail_behind_to_head_ahead_of_the_bird():
    start, end = segments(np.array([[10.0, 5.0]]), np.array([[60.0, 0.0]]), 3.6, 0.8)
    # v·dt_ref = 1 world unit at 60 units/s.
    assert np.allclose(start, [[6.4, 5.0]]) and np.allclose(end, [[10.8, 5.0]])


def test_streak_crossing_a_wrapping_edge_is_drawn_on_both_sides_not_across():
    scene = scene_with(render={"width_min": 0.3, "width_max": 0.3})
    # Heading +x just left of the right edge: the head (0.8 units ahead) pokes over the seam.
    px = draw(scene, [[79.8, 22.5]], [[60.0, 0.0]])
    mask = ink_mask(px, rgb_of(THEMES["light"]["background"]))
    cols = np.flatnonzero(mask.any(axis=0))
    assert cols.min() < 3, "the part over the seam shows at the left edge"
    assert cols.max() > 316, "the bird itself shows at the right edge"
    assert not mask[:, 10:290].any(), "no line drawn across the frame"


def test_open_world_streak_is_not_duplicated():
    scene = scene_with(world={"boundary": "none"}, render={"width_min": 0.5, "width_max": 0.5})
    px = draw(scene, [[79.8, 22.5]], [[60.0, 0.0]])
    mask = ink_mask(px, rgb_of(THEMES["light"]["background"]))
    assert mask[:, 300:].any() and not mask[:, :10].any()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_colours_come_from_the_palette(theme):
    scene = scene_with(palette={"theme": theme},
                       render={"width_min": 1.0, "width_max": 1.0, "opacity_max": 1.0,
                               "opacity_min": 1.0})
    px = draw(scene, [[40.0, 22.5]], [[60.0, 0.0]], neighbours=np.array([100]))
    rgb = px[:, :, 2::-1].astype(int)
    assert np.array_equal(rgb[0, 0], rgb_of(THEMES[theme]["background"]))
    # The streak's centre is fully covered: exactly the ink colour.
    centre = world_to_pixels(80.0, 45.0, (320, 180)).transform_point(40.0, 22.5)
    assert np.abs(rgb[int(centre[1]), int(centre[0])] - rgb_of(THEMES[theme]["ink"])).max() <= 1


def test_explicit_colours_override_the_theme():
    scene = scene_with(palette={"theme": "dark", "background": "#102030"})
    px = draw(scene, [[40.0, 22.5]], [[60.0, 0.0]])
    assert np.array_equal(px[0, 0, 2::-1], [0x10, 0x20, 0x30])


def test_denser_birds_fall_in_heavier_buckets_and_accent_birds_in_their_own():
    neighbours = np.array([0, 14, 35, 69, 70, 500])
    accent = np.array([False, False, False, False, False, True])
    got = buckets(neighbours, accent, density_count=70.0)
    assert list(got) == [0, 1, 2, 4, 4, BUCKETS]


def test_dense_birds_draw_darker_than_sparse_ones():
    scene = scene_with()
    bg = rgb_of(THEMES["light"]["background"])
    sparse = draw(scene, [[40.0, 22.5]], [[60.0, 0.0]], neighbours=np.array([0]))
    dense = draw(scene, [[40.0, 22.5]], [[60.0, 0.0]], neighbours=np.array([70]))
    weight = lambda px: np.abs(px[:, :, 2::-1].astype(int) - bg).sum()  # noqa: E731
    assert weight(dense) > 1.5 * weight(sparse)


def test_world_fits_the_frame_preserving_aspect_and_centred():
    wide = world_to_pixels(80.0, 45.0, (400, 90))  # wider than the world: more world sideways
    assert wide.xx == pytest.approx(2.0) and wide.yy == pytest.approx(-2.0)
    assert wide.transform_point(40.0, 22.5) == pytest.approx((200.0, 45.0))
    tall = world_to_pixels(80.0, 45.0, (160, 400))
    assert tall.xx == pytest.approx(2.0)
    assert tall.transform_point(0.0, 45.0) == pytest.approx((0.0, 155.0))


def test_the_same_scene_at_twice_the_size_is_the_same_picture():
    scene = scene_with(flock={"count": 40}, render={"width_min": 0.4, "width_max": 0.4})
    rng = np.random.default_rng(0)
    pos = rng.random((40, 2)) * [80, 45]
    vel = rng.normal(size=(40, 2)) * 60
    bg = rgb_of(THEMES["light"]["background"])

    def ink(size):
        px = draw(scene, pos, vel, size=size)
        return np.abs(px[:, :, 2::-1].astype(float) - bg).sum(axis=2)

    small, large = ink((320, 180)), ink((640, 360))
    # Widths are in world units: the 2x frame averaged down 2x2 is the 1x frame, up to
    # anti-aliasing at the streaks' edges.
    down = large.reshape(180, 2, 320, 2).mean(axis=(1, 3))
    assert down.sum() == pytest.approx(small.sum(), rel=0.05)
    assert np.abs(down - small).sum() < 0.25 * small.sum()


def test_birds_far_off_the_frame_draw_no_ghosts_on_it():
    """cairo's coordinates wrap around past 2²³ px: a bird 2²⁴ px off the frame would land
    back on it unless streaks off the canvas are left out."""
    scene = scene_with(world={"boundary": "none"})
    size = (320, 180)
    width = 4.0  # world units across the frame: 80 px per unit
    near = [[40.0, 22.5]]
    far = [[40.0 + (2 ** 24 + 100) / (size[0] / width), 22.5]]  # 2²⁴ + 100 px right
    vel = [[1.0, 0.0]]
    view = (40.0, 22.5, width, 0.0)

    def frame(pos):
        n = len(pos)
        return draw_frame(Canvas(size), scene, np.asarray(pos, float),
                          np.asarray(vel * n, float), np.zeros(n, np.int64),
                          np.zeros(n, bool), view=view).copy()

    alone, with_far = frame(near), frame(near + far)
    background = rgb_of(THEMES[scene.palette.theme]["background"])
    assert ink_mask(alone, background).any()  # the near bird's streak is in view
    assert np.array_equal(alone, with_far)
