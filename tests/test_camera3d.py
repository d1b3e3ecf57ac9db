"""The 3D camera (docs/optics.md): the pinhole's numbers, culling and near-plane clipping, each
bird's ink (its projected silhouette, whatever the resolution), the follow and the
keyframes, and the scene checks that refuse a camera that cannot see."""

from __future__ import annotations

import math

import numpy as np
import pytest

import naive_streaks3d
from render import cli
from render.draw3d.camera import (across_deg, in_frame, key_at, on_screen, pose, pose_at,
                                  resized)
from render.draw3d.streaks import Look, far_to_near, streaks
from render.errors import SceneError
from render.scene.load import build_scene
from render.sim.snapshot import follow_start, follow_step

STARLING = Look(wingspan=0.4, body_length=0.2, wing_area=0.019, body_area=0.01,
                visibility=math.inf, min_width_px=1.0)
BASE = {"world": {"dimensions": 3}, "flock": {"count": 100},
        "rules": {"neighbours": "topological"}, "flight": {}, "roost": {}}


def north(width=1920, height=1080, fov=30.0, near=0.1, aspect=16 / 9):
    """A camera at the origin looking along +y, level, z up."""
    return pose((0, 0, 0), (0, 1, 0), (0, 0, 1), fov, width, height, near, aspect)


def one(cam, position, velocity=(10.0, 0.0, 0.0), bank=0.0, shutter=0.0, look=STARLING):
    return streaks(cam, np.array([position], float), np.array([velocity], float),
                   np.array([bank]), np.zeros(1, bool), look, shutter)


@pytest.mark.parametrize("size", [(1920, 1080), (3840, 2160)])
def test_a_starling_at_100_m_is_8_px_wide_at_30_degrees_and_1080_rows(size):
    cam = north(*size)
    scale = size[1] / 1080
    assert cam.focal == pytest.approx(2015 * scale, rel=1e-3)
    # flying at the camera, its wings level: its second streak, the wings', runs from
    # wingtip to wingtip
    toward = dict(velocity=(0.0, -10.0, 0.0))
    near_bird, far_bird = one(cam, (0, 100, 0), **toward), one(cam, (0, 300, 0), **toward)
    assert list(near_bird.ids) == list(far_bird.ids) == [0, 0]  # body, wings
    assert abs(near_bird.x1[1] - near_bird.x0[1]) == pytest.approx(8.1 * scale, rel=0.02)
    assert abs(far_bird.x1[1] - far_bird.x0[1]) == pytest.approx(2.7 * scale, rel=0.02)
    # on the optical axis: at the frame's centre, the body a dot in the wings' middle
    assert near_bird.y0[1] == near_bird.y1[1] == size[1] / 2
    assert (near_bird.x0[1] + near_bird.x1[1]) / 2 == pytest.approx(size[0] / 2)
    assert near_bird.x0[0] == near_bird.x1[0] == pytest.approx(size[0] / 2)
    # a thin bar, not a disc as wide as the wings
    assert near_bird.width[1] < 0.2 * abs(near_bird.x1[1] - near_bird.x0[1])


def test_what_a_frame_sees_across_and_which_points_are_in_it():
    """320x180 at 30° (vertical, at 16:9) sees 2·atan(160/f) = 50.9° across, f = 90/tan 15°.
    A point 25° right of the axis is inside, 26° not."""
    wide = north(320, 180)
    assert across_deg(wide) == pytest.approx(50.94, abs=0.01)
    right = [(100 * math.tan(math.radians(a)), 100, 0) for a in (25, 26)]
    points = np.array([(0, 100, 0), (0, -100, 0), (0, 0.05, 0), *right, (0, 100, 27)])
    assert in_frame(wide, points).tolist() == [True, False, False, True, False, False]
    # 27 m up at 100 m is 15.1°, just above the top edge; 26 m (14.6°) is inside
    assert in_frame(wide, np.array([(0, 100, 26)])).tolist() == [True]


def test_a_frame_of_another_shape_shows_at_least_the_view_of_the_cameras_aspect():
    """By hand, 30° at 16:9 (tan 15° = 0.2679 up, 16/9 of it = 0.4763 across: 50.9°):
    - 180x320, portrait: the same 50.9° across, f = 90/0.4763 = 188.9 px, and
      2·atan(160/f) = 80.5° up (the height's view alone would see 17.1° across);
    - 3200x1000, wider than 16:9: 30° up, f = 500/0.2679 = 1866 px, more across;
    - 180x320 at aspect 9:16: 30° up again, the portrait frame composed for itself."""
    tall, wider = north(180, 320), north(3200, 1000)
    assert tall.focal == pytest.approx(90 / (16 / 9 * math.tan(math.radians(15))))
    assert across_deg(tall) == pytest.approx(50.94, abs=0.01)
    assert math.degrees(2 * math.atan(160 / tall.focal)) == pytest.approx(80.5, abs=0.05)
    assert wider.focal == pytest.approx(500 / math.tan(math.radians(15)))
    assert north(180, 320, aspect=9 / 16).focal == pytest.approx(160 / math.tan(
        math.radians(15)))
    # At its own shape, and a hair either side of it, the two rules agree.
    for width in (319.99, 320, 320.01):
        assert north(width, 180).focal == pytest.approx(90 / math.tan(math.radians(15)),
                                                        rel=1e-4)
    # A point 25° right, seen by the wide frame, stays in the tall one.
    point = np.array([(100 * math.tan(math.radians(25)), 100, 0)])
    assert in_frame(tall, point).tolist() == [True]


def raised(elevation_deg, width, height, up=(0, 0, 1)):
    """A camera at the origin looking north, `elevation_deg` up, 30° at 16:9."""
    a = math.radians(elevation_deg)
    return pose((0, 0, 0), (0, math.cos(a), math.sin(a)), up, 30.0, width, height, 0.1)


def row_elevation_deg(cam, v):
    """The elevation of the ray through row `v` (px) of the middle column."""
    ray = cam.forward - (v - cam.cy) / cam.focal * cam.up
    return math.degrees(math.asin(ray[2] / np.linalg.norm(ray)))


def test_a_taller_frame_keeps_the_horizon_where_the_cameras_aspect_has_it():
    """By hand, 30° at 16:9 looking 9° up: the horizon is tan 9° / tan 15° = 0.591
    half-heights below the centre, at 0.5 + 0.591/2 = 79.55% of the way down a 320x180
    frame. A 180x320 portrait composes that 16:9 view 101.25 px tall and puts its extra
    218.75 px 79.55% above it, 20.45% below: the axis at 0.7955·218.75 + 50.625 = 224.65
    px, the horizon again 79.55% down. Looking 20° up the horizon is below the 16:9 view
    and all the extra height goes to the sky: the frames' bottom rows see the same
    elevation, 5°; looking 20° down, all of it goes below: their top rows see −5°. Level,
    or upside down, the view stays centred."""
    wide, tall = raised(9.0, 320, 180), raised(9.0, 180, 320)
    assert wide.cy == 90 and tall.cy == pytest.approx(224.65, abs=0.01)
    horizon = np.array([(0.0, 1e9, 0.0)])
    for cam in (wide, tall):
        assert on_screen(cam, horizon)[1][0] / cam.height == pytest.approx(0.79555, abs=1e-5)
    assert on_screen(tall, horizon)[1][0] == pytest.approx(254.6, abs=0.1)
    for elevation, row in [(20.0, lambda c: c.height), (-20.0, lambda c: 0)]:
        edges = [row_elevation_deg(c, row(c)) for c in (raised(elevation, 320, 180),
                                                        raised(elevation, 180, 320))]
        assert edges == pytest.approx([math.copysign(5.0, elevation)] * 2, abs=1e-9)
    assert raised(0.0, 180, 320).cy == 160
    assert raised(9.0, 180, 320, up=(0, 0, -1)).cy == 160
    # A frame as wide as 16:9 or wider has no extra height: the axis at its middle.
    assert raised(9.0, 640, 180).cy == 90


@pytest.mark.parametrize("follow", ["centroid", "none"])
def test_a_followed_flock_stays_at_a_tall_frames_centre(follow):
    """Followed, the flock is the composition: its centroid is the centre of a portrait
    frame, as of a 16:9 one, however far up the camera tilts to it. A fixed camera
    looking at the same point keeps the horizon instead, the point below the centre."""
    scene = build_scene({**BASE, "camera": {"position": [0.0, 0.0, 1.7],
                                            "look_at": [0.0, 300.0, 50.0],
                                            "follow": follow}})
    flocks = [(0.0, 300.0, 50.0), (40.0, 200.0, 120.0)]
    for flock in flocks if follow == "centroid" else flocks[:1]:
        followed = flock if follow == "centroid" else None
        for size in ((320, 180), (180, 320)):
            cam = pose_at(scene, 0.0, followed, *size)
            u, v, _ = on_screen(cam, np.array([flock]) - cam.position)
            if follow == "centroid" or size == (320, 180):
                assert (u[0], v[0]) == pytest.approx((size[0] / 2, size[1] / 2), abs=1e-6)
            else:
                assert v[0] > 0.6 * size[1]


def test_a_tilting_shot_keeps_its_shift_from_its_first_key():
    """A crane tilting from 9° to 20° up over 4 s: in a 180x320 portrait the shift is the
    first key's all through (the axis 224.65 px down, as `raised(9.0, ...)`), so the
    horizon moves as in the 16:9 frame, by the same share of the height, and ends 20° up
    below the frame (tan 20° / tan 15° = 1.358 half-heights under the 16:9 view's
    centre: 0.5 + 1.358 / 2 = 117.9% of its height)."""
    up9, up20 = (300 * math.tan(math.radians(a)) for a in (9.0, 20.0))
    scene = build_scene({**BASE, "camera": {"path": [[0, 0, 0, 0, 0, 300, up9, 30],
                                                     [4, 0, 0, 0, 0, 300, up20, 30]]}})
    horizon = np.array([(0.0, 1e9, 0.0)])
    for size in ((320, 180), (180, 320)):
        cams = [pose_at(scene, t, None, *size) for t in (0.0, 4.0)]
        assert cams[0].lift == cams[1].lift == pytest.approx(0.79555, abs=1e-5)
        rows = [on_screen(c, horizon)[1][0] / c.height for c in cams]
        assert rows[0] == pytest.approx(0.79555, abs=1e-5)
        if size == (320, 180):
            assert rows[1] == pytest.approx(1.1792, abs=1e-4)
        composed = 180 * 9 / 16  # the portrait's 16:9 view, px tall
        share = (rows[1] - rows[0]) * (1 if size == (320, 180) else size[1] / composed)
        assert share == pytest.approx(1.1792 - 0.79555, abs=1e-4)


@pytest.mark.parametrize("value, ratio", [("9:16", 9 / 16), ("2.39:1", 2.39), (1.5, 1.5),
                                          (4, 4.0)])
def test_the_cameras_aspect_is_a_shape_or_a_ratio(value, ratio):
    scene = build_scene({**BASE, "camera": {"aspect": value}})
    assert scene.camera.aspect == ratio
    assert pose_at(scene, 0.0, None, 90, 160).focal == pytest.approx(
        80 / math.tan(math.radians(15)) if ratio < 1 else 45 / (ratio * math.tan(
            math.radians(15))))


@pytest.mark.parametrize("value, written", [("16:9", '"16:9"'), ("2.39:1", '"2.39:1"'),
                                            (0.7071067811865476, "0.7071067811865476")])
def test_the_aspect_is_written_as_given_and_reads_back_the_same(value, written):
    import tomllib

    scene = build_scene({**BASE, "camera": {"aspect": value}})
    assert f"aspect = {written}\n" in scene.to_toml()
    again = build_scene(tomllib.loads(scene.to_toml()))
    assert again.camera.aspect == scene.camera.aspect


@pytest.mark.parametrize("value", ["16x9", "16:0", "-16:9", "16:", 0, 1000, "nan:1", True])
def test_an_aspect_that_is_no_frame_shape_is_refused(value):
    with pytest.raises(SceneError, match=r"camera.aspect: expected a frame shape \"W:H\" "
                                         r"such as \"16:9\", or W/H as a number in "
                                         r"\[0.01, 100\], got "):
        build_scene({**BASE, "camera": {"aspect": value}})


@pytest.mark.parametrize("shape", [(180, 320), (320, 320), (640, 180), (500, 354)])
def test_a_camera_resized_to_another_shape_is_the_camera_posed_at_it(shape):
    # A still, a thumbnail or a loop's sky drawn at another size sees what a pose made at
    # that size sees.
    for made in [(320, 180), (180, 320), (333, 333)]:
        moved = resized(north(*made), *shape)
        posed = north(*shape)
        assert (moved.width, moved.height) == shape
        assert moved.focal == pytest.approx(posed.focal, rel=1e-12), made
        assert moved.cy == pytest.approx(posed.cy, rel=1e-12), made
    for made in [(320, 180), (180, 320)]:  # looking up: the view not centred in a tall one
        moved, posed = resized(raised(9.0, *made), *shape), raised(9.0, *shape)
        assert moved.cy == pytest.approx(posed.cy, rel=1e-12), made


def test_a_bird_behind_the_camera_draws_nothing():
    assert len(one(north(), (0, -50, 0)).ids) == 0
    assert len(one(north(near=1.0), (0, 0.5, 0), velocity=(0, -1, 0)).ids) == 0  # nearer
    assert len(one(north(), (500, 100, 0)).ids) == 0  # outside the frustum


def test_a_streak_through_the_near_plane_is_cut_at_it_never_flipped():
    cam = north(near=1.0)
    # From 0.8 m to 2 m ahead, 0.3 m to the right: the tail lies behind the near plane.
    s = one(cam, (0.3, 0.9, 0.0), velocity=(0.0, 10.0, 0.0), shutter=0.1)
    assert list(s.ids) == [0, 0]  # the body's streak, then the wings' along it
    assert (s.x0[1], s.y0[1], s.x1[1], s.y1[1]) == (s.x0[0], s.y0[0], s.x1[0], s.y1[0])
    tail_y, head_y = 0.9 - 0.1, 0.9 + 0.1 + 1.0  # body ±0.1 m, then 1 m flown
    assert tail_y < cam.near < head_y
    # the cut end is the segment's crossing of the near plane: x 0.3 m at z = near
    assert s.x0[0] == pytest.approx(960 + cam.focal * 0.3 / cam.near)
    assert s.x1[0] == pytest.approx(960 + cam.focal * 0.3 / head_y)
    assert s.x0[0] > s.x1[0] > 960  # both right of centre: not wrapped through the pinhole
    both_behind = one(cam, (0.3, 0.5, 0.0), velocity=(0.0, 1.0, 0.0), shutter=0.1)
    assert len(both_behind.ids) == 0


def test_a_bird_beside_the_camera_throws_no_band_across_the_frame():
    """12 m to the right and 0.24 m ahead (87° off the axis), flying right: its wingtips
    0.04 m (behind the 0.1 m near plane) and 0.44 m ahead. It is far outside the frame;
    the wing bar, its tips clipped at the near plane, stays there with it (projected
    through a depth clamped to the plane and centred on the body, it crossed the frame)."""
    cam = north(width=640, height=360, fov=60.0)
    s = one(cam, (12.0, 0.24, 0.0), velocity=(10.0, 0.0, 0.0))
    assert len(s.ids) == 0
    # The same bird 3 m ahead is seen, both streaks inside the frame's right part.
    seen = one(cam, (1.0, 3.0, 0.0), velocity=(10.0, 0.0, 0.0))
    assert list(seen.ids) == [0, 0] and min(seen.x0.min(), seen.x1.min()) > 320
    # A wing bar whose tips straddle the plane (0.27 m ahead, banked 0.5 rad: tips at
    # 0.27 ∓ 0.2·cos 0.5 = 0.095 and 0.445 m) is cut there, not flipped through the
    # pinhole: both its ends right of the centre, the cut one on the plane.
    cut = one(cam, (0.05, 0.27, 0.0), velocity=(10.0, 0.0, 0.0), bank=0.5)
    assert list(cut.ids) == [0, 0]
    wing = 1  # body, then wings
    assert cut.x0[wing] > 320 and cut.x1[wing] > 320
    assert max(cut.x0[wing], cut.x1[wing]) == pytest.approx(320 + cam.focal * 0.05 / 0.1)


def naive_ink(cam, position, velocity, bank, look) -> float:
    """A bird's projected silhouette in px², from first principles (wings level): the
    bird's own axes by rotating the level frame about its heading, the wing's share
    facing the viewer,
    then the solid angle it subtends and the image-plane px² per steradian off axis."""
    v = np.asarray(velocity, float)
    f_ = v / np.linalg.norm(v)
    r = np.array([f_[1], -f_[0], 0.0]) / math.hypot(f_[0], f_[1])  # f × z
    u = np.cross(r, f_)
    normal = math.cos(bank) * u + math.sin(bank) * r
    ray = np.asarray(position, float) - cam.position
    d = np.linalg.norm(ray)
    area = look.body_area + look.wing_area * abs(normal @ ray) / d
    solid_angle = area / d ** 2
    cos_theta = (ray @ cam.forward) / d
    return cam.focal ** 2 * solid_angle / cos_theta ** 3


def random_flock(n=400, seed=3):
    rng = np.random.default_rng(seed)
    pos = np.column_stack([rng.uniform(-60, 60, n), rng.uniform(80, 400, n),
                           rng.uniform(-30, 30, n)])
    vel = rng.normal(0, 1, (n, 3)) * [10, 10, 3]
    return pos, vel, rng.uniform(-1.2, 1.2, n)


@pytest.mark.parametrize("shutter", [0.0, 1 / 50])
def test_each_streak_carries_its_birds_projected_silhouette(shutter):
    cam = north(1280, 720)
    pos, vel, bank = random_flock()
    s = streaks(cam, pos, vel, bank, np.zeros(len(pos), bool), STARLING, shutter)
    assert len(s.ids) > 100
    area = np.hypot(s.x1 - s.x0, s.y1 - s.y0) * s.width + math.pi * s.width ** 2 / 4
    birds, parts = np.unique(s.ids, return_counts=True)
    whole = parts == 2  # body and wings both in the frame
    assert whole.mean() > 0.9
    ink = np.bincount(s.ids, weights=s.alpha * area)[birds[whole]]
    want = [naive_ink(cam, pos[i], vel[i], bank[i], STARLING) for i in birds[whole]]
    np.testing.assert_allclose(ink, want, rtol=1e-9)
    assert (np.diff(s.depth) <= 0).all()  # far to near
    assert (s.width >= 1.0).all() and (s.alpha <= 1.0).all()


def test_streaks_go_far_to_near_and_equal_depths_by_bird():
    rng = np.random.default_rng(5)
    depth = rng.uniform(10, 500, 5000)
    np.testing.assert_array_equal(far_to_near(depth), np.argsort(-depth, kind="stable"))
    depth[rng.integers(0, 5000, 2000)] = depth[:2000]  # many equal depths
    depth[100:200] = 42.0
    order = far_to_near(depth)
    np.testing.assert_array_equal(order, np.argsort(-depth, kind="stable"))
    assert (np.diff(order[depth[order] == 42.0]) > 0).all()


@pytest.mark.parametrize("seed", range(6))
def test_the_streaks_kernel_matches_the_numpy_reference(seed):
    """render.draw3d.streaks walks bird by bird; tests/naive_streaks3d computes the same
    streaks array by array. Birds at rest, flying straight up, behind the camera,
    through the near plane and off the frame, level (bank None) and banked, wings level
    (None) and beating."""
    rng = np.random.default_rng(seed)
    n = 2000
    pos = np.column_stack([rng.uniform(-80, 80, n), rng.uniform(-5, 400, n),
                           rng.uniform(-40, 40, n)])
    vel = rng.normal(0, 1, (n, 3)) * [10, 10, 3]
    vel[:20] = 0.0  # at rest
    vel[20:40, :2] = 0.0  # straight up or down
    pos[40:80] = rng.uniform([-0.5, -0.5, -0.3], [0.5, 3.0, 0.3], (40, 3))  # at the near plane
    vel[40:60], vel[60:80] = [0.0, 10.0, 0.0], [0.0, -10.0, 0.0]  # away, toward
    bank = rng.uniform(-1.4, 1.4, n) if seed % 2 else None
    look = STARLING._replace(visibility=rng.choice([math.inf, 2000.0]))
    cam = pose((0, 0, 0), (rng.normal(0, 0.3), 1, rng.normal(0, 0.3)), (0, 0, 1),
               rng.uniform(25, 120), 1280, 720, rng.choice([0.1, 1.0]))
    accent = rng.uniform(size=n) < 0.1
    shutter = rng.choice([0.0, 1 / 50, 0.2])
    wings = rng.uniform(-1.2, 1.2, n) if seed % 3 else None
    got = streaks(cam, pos, vel, bank, accent, look, shutter, wings)
    want = naive_streaks3d.streaks(cam, pos, vel, bank, accent, look, shutter, wings)
    assert len(got.ids) > 300
    np.testing.assert_array_equal(got.ids, want.ids)  # the same birds, far to near
    np.testing.assert_array_equal(got.accent, want.accent)
    for field in ("x0", "y0", "x1", "y1", "width", "alpha", "contrast", "depth"):
        np.testing.assert_allclose(getattr(got, field), getattr(want, field), rtol=1e-9,
                                   atol=1e-9, err_msg=field)


def test_the_ink_per_bird_does_not_depend_on_the_resolution():
    pos, vel, bank = random_flock()
    ink, floored = {}, {}  # floored: the share of streaks drawn at the width floor
    for size in [(854, 480), (3840, 2160)]:
        cam = north(*size)
        s = streaks(cam, pos, vel, bank, np.zeros(len(pos), bool), STARLING, 1 / 50)
        area = np.hypot(s.x1 - s.x0, s.y1 - s.y0) * s.width + math.pi * s.width ** 2 / 4
        # px² per the focal length's scale (854x480 is a shade wider than 16:9)
        ink[size] = (s.alpha * area).sum() / size[1] ** 2, set(s.ids)
        floored[size] = (s.width == 1.0).mean()
    # Most streaks at the floor when small, far fewer at 4K (the thin wings keep some)
    assert floored[(854, 480)] > 0.8 and floored[(3840, 2160)] < floored[(854, 480)] - 0.3
    (small, seen_small), (big, seen_big) = ink.values()
    assert seen_small == seen_big
    assert small == pytest.approx(big, rel=1e-9)


def test_a_bird_seen_edge_on_shows_its_body_face_on_its_wings_too():
    level_east = dict(velocity=(10.0, 0.0, 0.0), bank=0.0)
    from_side = one(north(), (0, 100, 0), **level_east)  # wings' plane contains the ray
    below = pose((0, 100, -100), (0, 100, 0), (0, 1, 0), 30, 1920, 1080, 0.1)
    from_below = one(below, (0, 100, 0), **level_east)
    banked = one(north(), (0, 100, 0), velocity=(10.0, 0.0, 0.0), bank=math.pi / 2)
    px2_per_m2 = (north().focal / 100) ** 2

    def ink(s):
        length = np.hypot(s.x1 - s.x0, s.y1 - s.y0)
        return (s.alpha * (length * s.width + math.pi * s.width ** 2 / 4)).sum()

    focal = north().focal
    assert from_side.width[0] == pytest.approx(focal * 0.05 / 100)  # the body's 0.05 m
    # from below the wings are a bar across the body, a wingspan long
    assert abs(from_below.y1[1] - from_below.y0[1]) == pytest.approx(focal * 0.4 / 100)
    assert ink(from_side) == pytest.approx(0.01 * px2_per_m2)
    assert ink(from_below) == pytest.approx(0.029 * px2_per_m2)
    assert ink(banked) == pytest.approx(0.029 * px2_per_m2)  # rolled 90°: wings face us


@pytest.mark.parametrize("raised", [0.0, 0.3, math.radians(50), -0.6])
def test_a_beating_wing_turns_its_face_to_a_viewer_beside_and_away_from_one_below(raised):
    """Flying east past a camera looking north, each wing raised by θ shows sin θ of its
    face (the right one tilts its underside, the left one its back toward the camera);
    seen from straight below, cos θ of it, and its tips reach cos θ of the half span."""
    east = np.array([[0.0, 100.0, 0.0]]), np.array([[10.0, 0.0, 0.0]])
    px2_per_m2 = (north().focal / 100) ** 2
    below = pose((0, 100, -100), (0, 100, 0), (0, 1, 0), 30, 1920, 1080, 0.1)

    def wing_ink(cam):
        s = streaks(cam, *east, None, np.zeros(1, bool), STARLING, 0.0, np.array([raised]))
        length = np.hypot(s.x1 - s.x0, s.y1 - s.y0)
        return s, (s.alpha * (length * s.width + math.pi * s.width ** 2 / 4))[1]

    _, beside = wing_ink(north())
    assert beside == pytest.approx(0.019 * abs(math.sin(raised)) * px2_per_m2, abs=1e-9)
    s, from_below = wing_ink(below)
    assert from_below == pytest.approx(0.019 * math.cos(raised) * px2_per_m2)
    assert abs(s.y1[1] - s.y0[1]) == pytest.approx(north().focal * 0.4 * math.cos(raised)
                                                   / 100)


def test_each_bird_beats_its_wings_at_its_own_place_in_the_beat():
    from render.draw3d.streaks import dihedral, wing_phases

    look = STARLING._replace(wingbeat=13.0, stroke=math.radians(100))
    landed = np.zeros(1000, bool)
    landed[::7] = True
    phases = wing_phases(look, 2.5, landed, 1000)
    assert np.isnan(phases[landed]).all() and (phases[~landed] >= 0).all() \
        and (phases[~landed] < 1).all()
    # spread over the beat: no tenth of it holds more than 12% of the birds in the air
    assert np.histogram(phases[~landed], bins=10, range=(0, 1))[0].max() < 0.12 * 857
    # one beat later every bird is where it was; a landed bird's wings stay level
    later = wing_phases(look, 2.5 + 1 / 13.0, landed, 1000)
    assert np.allclose(np.sin(2 * np.pi * later[~landed]), np.sin(2 * np.pi * phases[~landed]))
    angles = dihedral(look, phases, 0.0)
    assert (angles[landed] == 0).all() and np.abs(angles).max() <= math.radians(50)
    assert np.abs(angles).max() > math.radians(49.9)
    assert dihedral(look, phases, 0.25 / 13.0) == pytest.approx(
        math.radians(50) * np.nan_to_num(np.cos(2 * np.pi * phases)))  # a quarter beat on
    assert wing_phases(look._replace(wingbeat=0.0), 2.5, None, 10) is None
    assert wing_phases(look._replace(stroke=0.0), 2.5, None, 10) is None


def test_each_motion_blur_exposure_sees_the_wings_where_its_slice_has_them():
    from render.draw3d.frame import exposures

    pos, vel, bank = random_flock()
    n = len(pos)
    beating = build_scene({**BASE, "bird": {"wingbeat": 13.0}})
    level = build_scene(BASE)
    pose_ = north(1280, 720)
    flap = np.modf(np.arange(n) * 0.37)[0]
    sub = [(pos, vel)] * 3  # the birds held still: only the wings move between slices
    alphas = [[layer.alpha for layer in exposures(scene, pose_, sub, bank,
                                                  np.zeros(n, bool), None, flap)]
              for scene in (beating, level)]
    assert not np.array_equal(alphas[0][0], alphas[0][1])
    assert not np.array_equal(alphas[0][1], alphas[0][2])
    assert np.array_equal(alphas[1][0], alphas[1][1])  # level wings: the phases unused


def test_the_follow_glides_to_the_flock_critically_damped():
    scene = build_scene({**BASE, "camera": {"follow": "centroid", "follow_time": 1.0}})
    flock = np.zeros((10, 3)) + [0, 0, 50]
    state = follow_start(scene, flock)
    jumped = flock + [30.0, 0.0, 0.0]
    xs = []
    for _ in range(1000):  # 10 s at 10 ms
        state, point = follow_step(state, jumped, 0.01)
        xs.append(point)
    xs = np.array(xs)
    assert (np.diff(xs[:, 0]) >= 0).all() and xs[:, 0].max() <= 30.0  # no overshoot
    t63 = np.argmax(xs[:, 0] >= 30 * (1 - 2 * math.exp(-1))) * 0.01  # (1 + t)e^−t at t = 1
    assert t63 == pytest.approx(1.0, abs=0.03)
    assert xs[-1] == pytest.approx([30, 0, 50], abs=0.02)
    cam = pose_at(scene, 3.0, tuple(xs[299]), 640, 360)
    towards = np.asarray(xs[299]) - cam.position
    assert cam.forward == pytest.approx(towards / np.linalg.norm(towards))


def test_a_tracking_camera_moves_level_with_the_flock_and_never_turns():
    from render.draw3d.sky import sky_for, sky_pixels

    def filmed(follow):
        return build_scene({**BASE, "camera": {"position": [0, -300, 2], "look_at": [0, 0, 50],
                                               "follow": follow},
                            "palette": {"theme": "dusk", "treeline": "reeds"}})

    scene = filmed("track")
    here = pose_at(scene, 1.0, (10.0, 5.0, 50.0), 320, 180)
    there = pose_at(scene, 1.0, (-40.0, 75.0, 62.0), 320, 180)  # 50 m west, 70 m north, up
    assert here.position == pytest.approx([10, -295, 2])
    assert there.position - here.position == pytest.approx([-50, 70, 0])  # level: eyes stay
    assert all(np.array_equal(a, b) for a, b in zip(here[1:], there[1:]))  # the same view
    # the sky, the ground and the reeds (a ring round the camera) to the bit
    assert np.array_equal(sky_pixels(sky_for(scene, here), (0, 0, 320, 180)),
                          sky_pixels(sky_for(scene, there), (0, 0, 320, 180)))
    # the follow that looks at the flock turns instead, and its sky turns with it
    looking = filmed("centroid")
    turned = pose_at(looking, 1.0, (-40.0, 75.0, 62.0), 320, 180)
    assert math.degrees(math.acos(turned.forward @ there.forward)) > 5.0
    assert not np.array_equal(sky_pixels(sky_for(looking, turned), (0, 0, 320, 180)),
                              sky_pixels(sky_for(scene, there), (0, 0, 320, 180)))


def test_a_tracking_camera_is_3d_only():
    # a 2D view that follows the flock already moves with it: its choices stay two
    with pytest.raises(SceneError, match=r"camera.follow: expected one of none \| centroid, "
                                         r"got 'track'"):
        build_scene({"camera": {"follow": "track"}})


def orthonormal(cam):
    axes = np.array([cam.right, cam.up, cam.forward])
    return np.allclose(axes @ axes.T, np.eye(3), atol=1e-12)


def test_a_flock_straight_overhead_keeps_a_screen_up_across_the_view():
    scene = build_scene({**BASE, "camera": {"position": [0, 0, 2], "look_at": [0, 300, 50],
                                            "follow": "centroid"}})
    overhead = (0.0, 0.0, 80.0)  # up = z is parallel to this view
    cam = pose_at(scene, 1.0, overhead, 640, 360)
    assert orthonormal(cam) and cam.forward == pytest.approx([0, 0, 1])
    # screen-up: as the view tilted up from the keyframed one (north) leaves it, pointing
    # back south, so a flock passing overhead does not flip the frame
    assert cam.up == pytest.approx([0, -1, 0])
    again = pose_at(scene, 1.0, overhead, 640, 360)
    assert all((a == b).all() for a, b in zip(cam[:4], again[:4]))  # decided the same way
    # a hair off overhead, the plain pose with up = z: turning the same way
    near = pose_at(scene, 1.0, (0.0, 1e-3, 80.0), 640, 360)
    assert near.up @ cam.up > 0.99
    # the keyframed view itself along the flock's: a world axis across it
    above = build_scene({**BASE, "camera": {"position": [0, 0, 2], "look_at": [0, 1, 90],
                                            "follow": "centroid"}})
    cam = pose_at(above, 1.0, overhead, 640, 360)
    assert orthonormal(cam) and abs(cam.up @ [0, 0, 1]) < 1e-12


def test_a_flock_on_the_camera_leaves_it_looking_at_its_keyframed_point():
    scene = build_scene({**BASE, "camera": {"position": [0, 0, 2], "look_at": [0, 300, 50],
                                            "follow": "centroid"}})
    cam = pose_at(scene, 1.0, (0.0, 0.0, 2.0), 640, 360)
    fixed = pose((0, 0, 2), (0, 300, 50), (0, 0, 1), scene.camera.fov, 640, 360,
                 scene.camera.near, shift=0.5)  # still following: centred
    assert all(np.array_equal(a, b) for a, b in zip(cam, fixed))


def test_keyframes_are_eased_and_held():
    keys = [[0.0, 0, -300, 2, 0, 0, 50, 30], [4.0, 100, -300, 2, 0, 0, 50, 60]]
    scene = build_scene({**BASE, "camera": {"path": keys}})
    start, mid, quarter = (pose_at(scene, t, None, 1920, 1080) for t in (0.0, 2.0, 1.0))
    assert mid.position == pytest.approx([50, -300, 2])
    assert mid.focal == pytest.approx(540 / math.tan(math.radians(22.5)))
    assert quarter.position[0] == pytest.approx(100 * 0.15625)  # smoothstep(1/4)
    assert pose_at(scene, -1.0, None, 1920, 1080).position == pytest.approx(start.position)
    assert pose_at(scene, 9.0, None, 1920, 1080).position == pytest.approx([100, -300, 2])
    linear = build_scene({**BASE, "camera": {"path": keys, "easing": "linear"}})
    assert pose_at(linear, 1.0, None, 1920, 1080).position[0] == pytest.approx(25.0)


def test_a_smooth_path_flies_through_its_middle_keys_without_stopping_or_overshooting():
    """`smooth`: each value a cubic Hermite through the keys, its velocity at a middle key
    the interior slope of scipy's PCHIP (0 where the value turns), 0 at the first and last
    (an independent reference: scipy's CubicHermiteSpline with those slopes). A dolly
    keyed at 0, 10, 20 and 30 s flies through 10 and 20 s at speed (ease-in-out stops
    there), and its height, keyed 2 → 20 → 2 → 10 m, never leaves [2, 20]."""
    from scipy.interpolate import CubicHermiteSpline, PchipInterpolator

    keys = [[0.0, 0, -300, 2, 0, 0, 50, 30], [10.0, 300, -300, 20, 0, 0, 50, 40],
            [20.0, 600, -280, 2, 0, 0, 60, 40], [30.0, 900, -300, 10, 0, 0, 50, 20]]
    scene = build_scene({**BASE, "camera": {"path": keys, "easing": "smooth"}})
    eased = build_scene({**BASE, "camera": {"path": keys}})
    rows = np.array(keys)
    times = np.linspace(0.0, 30.0, 601)
    for col in range(1, 8):
        slopes = PchipInterpolator(rows[:, 0], rows[:, col]).derivative()(rows[:, 0])
        slopes[[0, -1]] = 0.0
        ref = CubicHermiteSpline(rows[:, 0], rows[:, col], slopes)(times)
        got = [key_at(scene.camera.path, t, "smooth")[col] for t in times]
        np.testing.assert_allclose(got, ref, atol=1e-9, err_msg=f"column {col}")
    x = lambda s, t: pose_at(s, t, None, 320, 180).position[0]  # noqa: E731
    for t in (10.0, 20.0):
        speed = (x(scene, t + 0.01) - x(scene, t - 0.01)) / 0.02
        assert speed == pytest.approx(30.0, rel=0.05)  # on through the key at 30 m/s
        assert abs(x(eased, t + 0.01) - x(eased, t - 0.01)) / 0.02 < 0.2  # stopped
        assert x(scene, t) == pytest.approx(rows[int(t // 10), 1])  # through the key
    assert abs(x(scene, 0.01) - x(scene, 0.0)) / 0.01 < 0.5  # eased out of the first
    heights = [pose_at(scene, t, None, 320, 180).position[2] for t in times]
    assert 2.0 - 1e-9 <= min(heights) and max(heights) <= 20.0 + 1e-9
    fovs = [key_at(scene.camera.path, t, "smooth")[7] for t in times]
    assert 20.0 - 1e-9 <= min(fovs) and max(fovs) <= 40.0 + 1e-9


def test_a_2d_camera_takes_a_smooth_path_too():
    from render.draw.camera import view_at

    keys = [[0.0, 0.0, 0.0, 10.0, 0.0], [1.0, 10.0, 0.0, 20.0, 0.0], [2.0, 20.0, 5.0, 10.0, 0.0]]
    scene = build_scene({"camera": {"path": keys, "easing": "smooth"}})
    assert view_at(scene, 1.0, None) == pytest.approx((10.0, 0.0, 20.0, 0.0))
    ahead = (view_at(scene, 1.01, None)[0] - view_at(scene, 0.99, None)[0]) / 0.02
    assert ahead == pytest.approx(10.0, rel=0.05)


def test_the_default_camera_stands_on_the_ground_looking_up_at_the_flock():
    scene = build_scene(BASE)
    cam = pose_at(scene, 0.0, None, 1920, 1080)
    roost = (0.5 * scene.world.width, 0.5 * scene.world.height)
    assert 1.0 < cam.position[2] < 2.0
    assert 200 < math.dist(cam.position[:2], roost) < 1000
    assert cam.forward[2] > 0.05  # looking up
    target = cam.position + cam.forward * (scene.roost.altitude - cam.position[2]) / cam.forward[2]
    assert target[:2] == pytest.approx(roost)
    assert cam.up[2] > 0 and abs(cam.right[2]) < 1e-12  # level horizon


def test_a_resized_pose_is_the_same_picture():
    cam = north(1920, 1080)
    half = resized(cam, 960, 540)
    a, b = one(cam, (3, 100, 2)), one(half, (3, 100, 2))
    assert b.x0[0] == pytest.approx(a.x0[0] / 2) and b.y1[0] == pytest.approx(a.y1[0] / 2)


BAD = [
    ({"position": [0, 0, 10], "look_at": [0, 0, 10]}, "looks at its own position"),
    ({"position": [0, 0, 10], "look_at": [0, 0, 60]}, "not parallel to the view"),
    ({"up": [0, 0, 0]}, "camera.up: expected a direction, got a zero vector"),
    ({"up": [0, 0, 0], "follow": "centroid"}, "camera.up: expected a direction"),
    ({"fov": 180.0}, "expected a value < 180 degrees, got 180"),
    ({"fov": 0.0}, "camera.fov: expected a value > 0"),
    ({"fov": 200.0}, "camera.fov: expected a value < 180"),
    ({"position": [0, -300, -1]}, "below the ground"),
    ({"path": [[0, 0, -300, 2, 0, 0, 50, 30], [0, 1, -300, 2, 0, 0, 50, 30]]},
     "increasing order"),
    ({"path": [[0, 0, -300, -2, 0, 0, 50, 30]]}, "below the ground (keyframe t = 0.0)"),
    ({"path": [[0, 0, -300, 2, 0, 0, 50, 190]]}, "fov in (0, 180)"),
    ({"path": [[0, 0, -300, 2, 0, 0, 50, 30], [1, 0, -300, 2, 0, 0, 50, 30],
               [2, 0, -300, 2, 0, 0, 50, 0]]},
     "camera.path: keyframe 3 of 3 (t = 2.0): expected its fov in (0, 180) degrees, got 0.0"),
    ({"path": [[0, 0, -300, 2, 0, 0, 50, 30], [1, 0, -300, 2, 0, 0, 50, "wide"]]},
     "camera.path: keyframe 2 of 2, its fov: expected a number, got 'wide'"),
    ({"path": [[0, 0, -300, 2, 0, 0, 50, 30], [5, 0, -300, 2, 0, 0, 50, 30],
               [3, 0, -300, 2, 0, 0, 50, 30]]},
     "keyframe 3 of 3 at t = 3.0 does not come after 5.0; got 0.0, 5.0, 3.0"),
    ({"path": [[0, 0, -300, 2, 0, 0, 50, 30], [1, 0, -300, 2, 0, 0, 50]]},
     "8 numbers each: keyframe 2 of 2 has 7, got [1, 0, -300, 2, 0, 0, 50]"),
    ({"centre": [1, 2]}, "camera.centre: a 2D-only key"),
    # A near plane past the roost clips the flock flying about it: an empty sky (the
    # roost at the world's centre, (40, 22.5) at 50 m: √(40² + 322.5² + 48²) m off).
    ({"position": [0, -300, 2], "look_at": [0, 0, 50], "near": 400.0},
     "camera.near: expected a near plane closer than the roost the flock flies about, "
     "328.5 m away, got camera.near = 400.0"),
    ({"near": 1e6, "follow": "centroid"}, "camera.near: expected a near plane closer"),
    # Pans whose eased view passes through the lens, or along up, between two keyframes.
    ({"path": [[0, 300, 0, 50, 310, 0, 60, 30], [2, 300, 0, 50, 290, 0, 40, 30]]},
     "the camera would look at its own position between keyframes t = 0.0 and t = 2.0"),
    ({"path": [[0, 300, 0, 1, 300, 100, 50, 30], [2, 300, 0, 5, 300, -100, 50, 30]]},
     "expected an up vector not parallel to the view between keyframes t = 0.0 and t = 2.0"),
    # A look_at that passes 1 m from the lens swings the view round faster than any pan
    # (about 800°/s); and the near-180° pan that jumped 32° between two frames at 30 fps.
    ({"path": [[0, 300, 0, 50, 310, 1, 60, 30], [2, 300, 0, 50, 290, 1, 40, 30]]},
     "the view would turn "),
    ({"easing": "linear",
      "path": [[0, 200, 20, 1.7, 200, 112, 1.7, 40], [4, 200, 20, 1.7, 210, -112, 1.7, 40]]},
     "between keyframes t = 0.0 and t = 4.0 (its look_at passes close by the camera): "
     "expected at most 600°/s"),
    # A smooth path's view read along it: the same pan through the lens, and one whose
    # middle key flies it through the lens where the eased one stops short.
    ({"easing": "smooth",
      "path": [[0, 300, 0, 50, 310, 0, 60, 30], [2, 300, 0, 50, 290, 0, 40, 30]]},
     "the camera would look at its own position between keyframes t = 0.0 and t = 2.0"),
]


def test_a_pan_beside_the_lens_or_up_is_flown_not_refused():
    """Passing 10 m beside the vertical, or 10 m beside the lens, keeps a direction: every
    frame of the pan has a pose (1 m beside the lens, it whips round: refused, BAD)."""
    for path in ([[0, 300, 0, 1, 300, 100, 50, 30], [2, 300, 0, 5, 310, -100, 50, 30]],
                 [[0, 300, 0, 50, 310, 10, 60, 30], [2, 300, 0, 50, 290, 10, 40, 30]]):
        scene = build_scene({**BASE, "camera": {"path": path}}, "s.toml")
        for t in np.linspace(0.0, 2.0, 201):
            pose_at(scene, float(t), None, 320, 180)


def test_a_look_at_passing_the_lens_turns_the_view_at_its_speed_over_its_distance():
    # Hand-worked: the look_at flies (310, d, 60) → (290, d, 40) in 2 s past the camera at
    # (300, 0, 50), at √800/2 = 14.14 m/s, d m off at its nearest (t = 1 s): the view
    # turns at 14.14/d rad/s there, 810°/s at d = 1 m (refused), 81°/s at 10 m (flown).
    import re

    path = [[0, 300, 0, 50, 310, 1, 60, 30], [2, 300, 0, 50, 290, 1, 40, 30]]
    with pytest.raises(SceneError) as err:
        build_scene({**BASE, "camera": {"path": path, "easing": "linear"}}, "s.toml")
    rate, at = map(float, re.search(r"turn (\d+)°/s at t = ([\d.]+) s", str(err.value)).groups())
    assert rate == pytest.approx(math.degrees(math.sqrt(800) / 2), rel=0.02)
    assert at == pytest.approx(1.0, abs=0.01)


@pytest.mark.parametrize("camera, message", BAD, ids=[m for _, m in BAD])
def test_a_camera_that_cannot_see_is_refused_with_exit_2(tmp_path, capsys, camera, message):
    with pytest.raises(SceneError) as err:
        build_scene({**BASE, "camera": camera}, "s.toml")
    assert message in str(err.value)
    lines = [f"[{k}]\n" + "".join(f"{key} = {value!r}\n".replace("'", '"')
                                   for key, value in body.items())
             for k, body in {**BASE, "camera": camera}.items()]
    path = tmp_path / "s.toml"
    path.write_text("\n".join(lines))
    assert cli.main([str(path), "--check"]) == 2
    err_text = capsys.readouterr().err
    assert message in err_text and "camera." in err_text


@pytest.mark.parametrize("camera, overrides, line", [
    # The view made vertical on the command line: its position is to blame, not up.
    ({"position": [0, 0, 2], "look_at": [0, 300, 40]},
     [("camera.look_at", "[0, 0, 50]", "--set")],
     "--set camera.look_at: expected an up vector not parallel to the view direction "
     "[0.0, 0.0, 48.0], got [0.0, 0.0, 1.0]"),
    ({"position": [0, 0, 2], "look_at": [0, 300, 40]}, [("camera.up", "[0, 1, 0]", "--set")],
     None),
    ({"path": [[0, 0, -300, 2, 0, 0, 50, 30]]},
     [("camera.path", "[[0, 0, 0, 2, 0, 0, 2, 22]]", "--set")],
     "--set camera.path: the camera looks at its own position (keyframe t = 0.0): expected "
     "look_at ≠ position, got [0.0, 0.0, 2.0] for both"),
    ({"position": [0, -300, 2], "look_at": [0, 0, 50]},
     [("camera.near", "500", "--set")],
     "--set camera.near: expected a near plane closer than the roost the flock flies "
     "about, 328.5 m away, got camera.near = 500.0"),
    # A look_at half a metre off only aims the camera: a near plane of 1 m past it is
    # fine, as is a camera in the roost's circle.
    ({"position": [0, -300, 2], "look_at": [0, -299.5, 2.08], "near": 1.0}, [], None),
    ({"position": [10, 0, 50], "look_at": [0, 300, 50], "near": 20.0}, [], None),
])
def test_a_camera_problem_is_blamed_on_the_setting_given_last(camera, overrides, line):
    raw = {**BASE, "camera": camera}
    if line is None:
        build_scene(raw, "s.toml", overrides)
        return
    with pytest.raises(SceneError) as err:
        build_scene(raw, "s.toml", overrides)
    assert err.value.problems == [line]


def test_the_bird_body_and_3d_camera_keys_are_3d_only():
    with pytest.raises(SceneError, match=r"\[bird\] is 3D-only"):
        build_scene({"bird": {"wingspan": 0.3}})
    with pytest.raises(SceneError, match=r"camera.fov: a 3D-only key: expected "
                       r"world.dimensions = 3, got 2; in 2D: camera.width$"):
        build_scene({"camera": {"fov": 30.0}})
    with pytest.raises(SceneError, match=r"camera.rotation: a 2D-only key: expected "
                       r"world.dimensions = 2, got 3; in 3D: camera.up$"):
        build_scene({**BASE, "camera": {"rotation": 10.0}})
    with pytest.raises(SceneError, match=r"camera.rotatio: unknown key \(did you mean "
                       r"'position'\?\)"):  # a key of neither: the nearest of this one's
        build_scene({**BASE, "camera": {"rotatio": 10.0}})
    assert build_scene({"flock": {"count": 5}}).bird is None


def test_the_width_floor_is_half_a_pixel_in_3d_unless_set():
    assert build_scene(BASE).render.min_width_px == 0.5
    assert build_scene({**BASE, "render": {"min_width_px": 2.0}}).render.min_width_px == 2.0
    assert build_scene({"flock": {"count": 100}}).render.min_width_px == 1.0  # 2D


@pytest.mark.parametrize("three", [True, False])
def test_each_key_named_in_the_other_dimensions_place_exists(three):
    # "a 2D-only key …; in 3D: camera.fov": the key is the other dimension's, and what
    # the error names instead is this one's.
    import dataclasses
    import re

    from render.scene.load import SECTIONS_3D_CLASSES
    from render.scene.schema import INSTEAD_IN_2D, INSTEAD_IN_3D, SECTIONS, unread_keys

    def keys(three):  # the keys a scene of this dimension reads
        sections = {**SECTIONS, **SECTIONS_3D_CLASSES} if three else SECTIONS
        unread = {f"{name}.{key}" for name, names in unread_keys(three).items()
                  for key in names}
        return {f"{name}.{f.name}" for name, cls in sections.items()
                for f in dataclasses.fields(cls)} - unread

    here, there = keys(three), keys(not three)
    for key, named in (INSTEAD_IN_3D if three else INSTEAD_IN_2D).items():
        assert key in there and key not in here, key
        for other in re.findall(r"\b[a-z]+\.[a-z_]+\b", named):
            assert other in here, (key, other)



def test_check_shows_the_default_camera_where_it_stands(cli, write_scene):
    """Without [camera] a 3D scene is filmed from 300 m on the roost's −y side, eyes 1.7 m
    up, looking at its altitude over it: here the roost at the world's centre (200, 150),
    altitude 40 m. --check lists that camera, its settings named as the default camera's,
    and loads back to the same view."""
    import tomllib

    path = write_scene('[world]\ndimensions = 3\nwidth = 400.0\nheight = 300.0\n'
                       '[flock]\ncount = 100\n[roost]\naltitude = 40.0\n')
    r = cli(path, "--check")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    camera = lines[lines.index("[camera]") + 1:]
    camera = camera[:next(i for i, line in enumerate(camera) if line.startswith("["))]
    assert camera[1] == "position = [200.0, -150.0, 1.7] # default camera"
    assert camera[2] == "look_at = [200.0, 150.0, 40.0] # default camera"
    assert all(line.endswith("# default camera") for line in camera)
    shown, given = (pose_at(scene, 0.0, None, 64, 36) for scene in (
        build_scene(tomllib.loads(r.out)), build_scene(tomllib.loads(path.read_text()))))
    assert all(np.array_equal(a, b) for a, b in zip(shown, given))
    # A [camera] that leaves its place to the default: that place is the default camera's,
    # the rest the file's or the defaults'.
    path.write_text(path.read_text() + "[camera]\nfov = 20.0\n")
    r = cli(path, "--check")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert "position = [200.0, -150.0, 1.7] # default camera" in lines
    assert "look_at = [200.0, 150.0, 40.0] # default camera" in lines
    assert "fov = 20.0                     # scene file" in lines
    assert "near = 0.1                     # default" in lines
