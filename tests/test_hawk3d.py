"""The hunting hawk drawn through the camera: a peregrine's silhouette among the birds in
depth order, faded in over its first second out, left out of a loop."""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from render.draw.surface import Canvas
from render.draw3d.frame import HAWK_FADE_S, Hawk, exposures, hawk_drawn
from render.draw3d.streaks import HAWK_BODY_AREA, HAWK_WING_AREA
from render.scene import build_scene
from render.states import FrameState

from test_optics import pinhole, project

SIZE = (320, 180)


def hunting(wingspan: float = 1.0, start: float = 1.0):
    raw = {"world": {"dimensions": 3}, "flock": {"count": 30},
           "rules": {"neighbours": "topological"}, "flight": {}, "roost": {},
           "hawk": {"mode": "hunt", "speed": 20.0, "start": start, "wingspan": wingspan},
           "output": {"size": f"{SIZE[0]}x{SIZE[1]}"}, "scene": {"duration": 5.0}}
    return build_scene(raw, "hunt.toml")


# Birds 200 m and 50 m ahead of the camera, the hawk between them, flying across the view.
BIRDS = np.array([[-5.0, 200.0, 30.0], [5.0, 50.0, 10.0], [0.0, 150.0, 20.0]])
HAWK_AT = np.array([0.0, 100.0, 21.7])
ACROSS = np.array([20.0, 0.0, 0.0])


def frame_state(scene, time: float, hawk=True) -> FrameState:
    pose = pinhole(SIZE)
    vel = np.tile((10.0, 0.0, 0.0), (3, 1))
    return FrameState(0, BIRDS.copy(), vel, np.full(3, 7.0), np.zeros(3, bool),
                      time=Fraction(time), pose=pose, bank=np.zeros(3),
                      hawk=tuple(HAWK_AT) if hawk else None,
                      hawk_velocity=tuple(ACROSS) if hawk else None)


@pytest.mark.parametrize("side", [1.0, -1.0])
def test_the_hawk_banks_into_its_turn_as_a_bird_does(side):
    """Turning at its 90°/s at 20 m/s it rolls to atan(v·ω/g), 72.7°, into the turn
    (positive to its right, flight.py's sign), within a second; flying on straight, or
    pulling up, it levels again."""
    from render.sim.forces.hunt import HawkFlight

    hawk, dt = HawkFlight(vel=np.array([20.0, 0.0, 0.0])), 0.01
    most = math.radians(90.0) * dt
    for _ in range(200):  # aimed square to its right (or left): turning at its most
        u = hawk.vel / np.linalg.norm(hawk.vel)
        right = np.array([u[1], -u[0], 0.0])
        hawk._fly(side * right, 20.0, most, dt)
    # sideways, v·sin(ω·dt) a step: ω·v to within 4e-5
    sideways = 20.0 * math.sin(most) / dt
    assert hawk.bank == pytest.approx(side * math.atan(sideways / 9.81), abs=1e-4)
    assert abs(math.degrees(hawk.bank)) == pytest.approx(72.7, abs=0.05)
    for _ in range(200):
        hawk._fly(hawk.vel + (0.0, 0.0, 10.0), 20.0, most, dt)  # straight on and up
    assert abs(hawk.bank) < 1e-3


def test_a_banked_hawk_shows_the_camera_beside_it_its_wings():
    scene = hunting()
    pose = pinhole(SIZE)
    inks = []
    for bank in (0.0, 1.2):
        [layer] = exposures(scene, pose, ((BIRDS[:0], np.zeros((0, 3))),), np.zeros(0),
                            np.zeros(0, bool), Hawk(HAWK_AT, ACROSS, 1.0, bank))
        length = np.hypot(layer.x1 - layer.x0, layer.y1 - layer.y0)
        inks.append(np.sum(layer.alpha * (length * layer.width + math.pi * layer.width ** 2
                                          / 4)))
    # Flying across the view, rolled 69° right, toward the camera: its wings' face.
    assert inks[1] > 2.0 * inks[0]


def test_the_hawks_ink_is_a_peregrines_silhouette_among_the_birds_in_depth_order():
    scene = hunting()
    pose = pinhole(SIZE)
    hawk = Hawk(HAWK_AT, ACROSS, 0.25)
    [layer] = exposures(scene, pose, ((BIRDS, np.tile((10.0, 0, 0), (3, 1))),), np.zeros(3),
                        np.zeros(3, bool), hawk)
    assert np.all(np.diff(layer.depth) <= 0)  # far to near
    assert list(layer.ids) == [0, 0, 2, 2, -1, -1, 1, 1]  # the hawk between 150 and 50 m
    mine = layer.ids == -1
    length = np.hypot(layer.x1 - layer.x0, layer.y1 - layer.y0)[mine]
    width = layer.width[mine]
    ink = np.sum(layer.alpha[mine] * (length * width + math.pi * width ** 2 / 4))
    # Level wings (normal +z) seen along the ray to the hawk: their share facing it.
    ray = HAWK_AT - pose.position
    distance, depth = np.linalg.norm(ray), ray @ pose.forward
    facing = ray[2] / distance
    silhouette = HAWK_BODY_AREA + HAWK_WING_AREA * facing  # m², at a wingspan of 1 m
    px2 = pose.focal ** 2 * distance / depth ** 3
    assert ink == pytest.approx(0.25 * silhouette * px2, rel=1e-9)
    u, v, _ = project(pose, HAWK_AT[None])
    centre_u = 0.5 * (layer.x0[mine] + layer.x1[mine])
    assert abs(centre_u[0] - u[0]) < 1.0 and abs(layer.y0[mine][0] - v[0]) < 2.0


def test_the_hawk_draws_where_it_is_and_nowhere_else():
    scene = hunting()
    canvas = Canvas(SIZE)
    alone = frame_state(scene, 3.0, hawk=False).draw(canvas, scene).copy()
    seen = frame_state(scene, 3.0).draw(canvas, scene).copy()
    changed = np.argwhere(np.any(seen != alone, axis=2))
    assert len(changed) > 0
    u, v, _ = project(pinhole(SIZE), HAWK_AT[None])
    assert np.abs(changed[:, 1] + 0.5 - u[0]).max() < 4.0  # within its wingspan's reach
    assert np.abs(changed[:, 0] + 0.5 - v[0]).max() < 3.0
    assert (seen[changed[:, 0], changed[:, 1], :3] <= alone[changed[:, 0], changed[:, 1],
                                                            :3]).all()  # darker


@pytest.mark.parametrize("wingspan, time, drawn", [(1.0, 3.0, True), (0.0, 3.0, False),
                                                   (1.0, 1.0, False)])
def test_the_hawk_is_left_out_at_wingspan_0_and_before_it_is_out(wingspan, time, drawn):
    scene = hunting(wingspan)
    canvas = Canvas(SIZE)
    alone = frame_state(scene, time, hawk=False).draw(canvas, scene).copy()
    seen = frame_state(scene, time).draw(canvas, scene).copy()
    assert (hawk_drawn(scene, frame_state(scene, time)) is not None) == drawn
    assert (not np.array_equal(seen, alone)) == drawn


def test_the_hawk_fades_in_over_its_first_second_out():
    scene = hunting(start=1.0)
    shown = [hawk_drawn(scene, frame_state(scene, 1.0 + f * HAWK_FADE_S)).shown
             for f in (0.25, 0.5, 1.0, 2.0)]
    assert shown == pytest.approx([0.25, 0.5, 1.0, 1.0])


def test_motion_blur_carries_the_hawk_along_its_flight():
    scene = hunting()
    pose = pinhole(SIZE)
    vel = np.tile((10.0, 0, 0), (3, 1))
    sub = [(BIRDS, vel)] * 4
    layers = exposures(scene, pose, sub, np.zeros(3), np.zeros(3, bool),
                       Hawk(HAWK_AT, ACROSS, 1.0))
    starts = [layer.x0[layer.ids == -1].min() for layer in layers]
    assert np.all(np.diff(starts) > 0)  # each sub-frame's hawk further along +x
    whole = exposures(scene, pose, [(BIRDS, vel)], np.zeros(3), np.zeros(3, bool),
                      Hawk(HAWK_AT, ACROSS, 1.0))[0]
    assert starts[0] == pytest.approx(whole.x0[whole.ids == -1].min(), abs=0.5)


def test_a_frames_hawk_velocity_is_its_flight_over_the_step_and_a_loop_leaves_it_out():
    from render.scene import load_scene
    from render.states import simulated

    from conftest import SCENES

    sets = [("flock.count", "300"), ("scene.settle_steps", "0"), ("hawk.start", "0.0"),
            ("scene.duration", "2.0"), ("output.size", '"160x90"')]
    scene = load_scene(SCENES / "murmuration.toml", [(k, v, "test") for k, v in sets])
    states = list(simulated(scene, 0, 20))
    out = [s for s in states if s.hawk_velocity is not None]
    assert len(out) >= 18
    for s in out:
        assert np.linalg.norm(s.hawk_velocity) == pytest.approx(scene.hawk.speed, rel=1e-9)
    fps = float(scene.output.fps)
    for a, b in zip(out, out[1:]):
        flown = (np.array(b.hawk) - np.array(a.hawk)) * fps
        assert np.linalg.norm(flown - a.hawk_velocity) < 0.05 * scene.hawk.speed
    looped = load_scene(SCENES / "murmuration.toml",
                        [(k, v, "test") for k, v in sets + [("output.loop", "true"),
                                                           ("output.crossfade", "0.5")]])
    assert all(s.hawk is None and s.hawk_velocity is None
               for s in simulated(looped, 0, looped.frame_count))


@pytest.mark.parametrize("value, needle", [("-1.0", "hawk.wingspan"),
                                           ("1.0", "hawk.wingspan")])
def test_a_bad_or_2d_hawk_wingspan_exits_2_naming_it(tmp_path, value, needle):
    from conftest import SCENES

    scene = SCENES / ("murmuration.toml" if value.startswith("-") else "plate.toml")
    done = subprocess.run([sys.executable, "-m", "render", str(scene), "--check",
                           "--set", f"hawk.wingspan={value}"], capture_output=True, text=True)
    assert done.returncode == 2 and needle in done.stderr, done.stderr
