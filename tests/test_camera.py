"""The camera: one world→pixel transform for every size, keyframes, a damped follow."""

from __future__ import annotations

import numpy as np
import pytest

from render.draw.camera import view_at, view_matrix
from render.draw.streaks import draw_frame
from render.draw.surface import Canvas, world_to_pixels
from render.scene import build_scene
from render.sim.simulate import Simulation, frames


def scene_with(camera=None, **sections):
    raw = {"world": {"width": 80.0, "height": 45.0, "boundary": "none"},
           "flock": {"count": 300}, "scene": {"settle_steps": 10},
           "render": {"min_width_px": 0.0, "width_min": 0.3, "width_max": 0.3}}
    if camera is not None:
        raw["camera"] = camera
    for name, body in sections.items():
        raw.setdefault(name, {}).update(body)
    return build_scene(raw)


def draw(scene, size, time_index=5):
    sim = Simulation(scene)
    frame = list(frames(sim, scene.output.fps, time_index + 1))[-1]
    view = view_at(scene, float(frame.time), frame.followed)
    return draw_frame(Canvas(size), scene, frame.positions, frame.velocities,
                      frame.snapshot.neighbours, sim.accent, view=view)[:, :, :3].astype(float)


def test_a_default_camera_shows_the_whole_world_as_no_camera_does():
    for size in ((320, 180), (300, 300), (400, 120)):
        plain = scene_with(output={"size": f"{size[0]}x{size[1]}"})
        cam = scene_with({}, output={"size": f"{size[0]}x{size[1]}"})
        a = world_to_pixels(80.0, 45.0, size)
        b = view_matrix(cam, size, view_at(cam, 0.0, None))
        assert tuple(b) == pytest.approx(tuple(a))
        assert np.abs(draw(plain, size) - draw(cam, size)).mean() < 0.05


def test_zoom_puts_the_centre_mid_frame_at_the_asked_scale():
    cam = scene_with({"centre": [10.0, 30.0], "width": 20.0})
    m = view_matrix(cam, (400, 200), view_at(cam, 0.0, None))
    assert m.transform_point(10.0, 30.0) == pytest.approx((200.0, 100.0))
    assert m.transform_point(20.0, 30.0) == pytest.approx((400.0, 100.0))  # 20 units = 400 px
    assert m.transform_point(10.0, 35.0) == pytest.approx((200.0, 0.0))  # y up


def test_rotation_turns_the_view():
    cam = scene_with({"centre": [0.0, 0.0], "width": 20.0, "rotation": 90.0})
    m = view_matrix(cam, (400, 400), view_at(cam, 0.0, None))
    x, y = m.transform_point(5.0, 0.0)
    assert x == pytest.approx(200.0) and abs(y - 200.0) == pytest.approx(100.0)


def test_keyframes_ease_in_and_out():
    path = [[0.0, 0.0, 0.0, 10.0, 0.0], [4.0, 40.0, 20.0, 30.0, 90.0]]
    linear = scene_with({"path": path, "easing": "linear"})
    eased = scene_with({"path": path, "easing": "ease-in-out"})
    assert view_at(linear, 1.0, None) == pytest.approx((10.0, 5.0, 15.0, 22.5))
    assert view_at(eased, 2.0, None) == pytest.approx((20.0, 10.0, 20.0, 45.0))
    assert view_at(eased, 1.0, None)[0] == pytest.approx(40.0 * 0.15625)  # smoothstep(¼)
    assert view_at(eased, -1.0, None) == pytest.approx((0.0, 0.0, 10.0, 0.0))
    assert view_at(eased, 9.0, None) == pytest.approx((40.0, 20.0, 30.0, 90.0))


def test_the_same_view_at_twice_the_size_is_the_same_picture():
    cam = {"centre": [40.0, 22.5], "width": 30.0, "rotation": 20.0}
    one = draw(scene_with(cam, output={"size": "320x180"}), (320, 180))
    two = draw(scene_with(cam, output={"size": "640x360"}), (640, 360))
    down = two.reshape(180, 2, 320, 2, 3).mean(axis=(1, 3))
    assert np.abs(down - one).mean() < 0.25 * np.abs(one - one[0, 0]).mean()


def test_follow_glides_after_the_centroid_without_overshoot():
    # An attractor drags the flock across the world; the camera trails it, smoothly.
    scene = scene_with({"follow": "centroid", "follow_time": 0.5, "width": 30.0},
                       attractor={"path": [[0.0, 20.0, 22.5], [3.0, 60.0, 22.5]],
                                  "strength": 40.0, "radius": 2.0})
    sim = Simulation(scene)
    lag, xs = [], []
    for frame in frames(sim, scene.output.fps, 180):
        centroid = frame.positions.mean(axis=0)
        lag.append(np.hypot(*(np.array(frame.followed) - centroid)))
        xs.append(frame.followed[0])
    steps = np.diff(xs)
    assert np.abs(np.diff(steps)).max() < 0.05  # no jerks frame to frame
    assert max(lag[-60:]) < 5.0  # it keeps up


def test_a_still_with_a_following_camera_is_the_sequence_frame(cli, write_scene, tmp_path):
    scene = write_scene("""
[world]
boundary = "none"
[flock]
count = 200
init = "ellipse"
[containment]
[camera]
follow = "centroid"
width = 40.0
[output]
size = "320x180"
""")
    assert cli(scene, "-o", f"{tmp_path}/seq/", "--frames", "40:41", "--quiet").code == 0
    assert cli(scene, "--still", "frame:40", "-o", tmp_path / "s.png").code == 0
    from test_still import pixels

    assert np.array_equal(pixels(tmp_path / "s.png"),
                          pixels(tmp_path / "seq" / "frame_00040.png"))


def test_follow_on_a_torus_is_bad_input(cli, write_scene):
    scene = write_scene("""
[world]
boundary = "wrap"
[camera]
follow = "centroid"
""")
    r = cli(scene, "--check")
    assert r.code == 2 and "camera.follow" in r.err
