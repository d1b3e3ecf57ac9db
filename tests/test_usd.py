"""Trajectories as USD (`-o FILE.usd|.usda|.usdc`), read back with pxr: a Points prim
whose samples equal the .npz export's within float32 precision, the stage's metadata, a
2D scene at z = 0, the format each suffix names, the missing extra, atomicity and the
.usda budget."""

from __future__ import annotations

import builtins
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import render.budget as budget
from render.scene import load_scene

pxr = pytest.importorskip("pxr", reason="usd-core is in the [test] extra")
from pxr import Gf, Sdf, Usd, UsdGeom  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_numba_thread")
ARGS = ("--frames", "3:15", "--fps", "24000/1001", "-q")


@pytest.fixture(scope="module")
def exported(tmp_path_factory, small_scene_text):
    """The small scene's frames 3..14 at 24000/1001 fps as .npz and as each USD suffix."""
    from render.cli import main

    folder = tmp_path_factory.mktemp("usd")
    scene = folder / "small.toml"
    scene.write_text(small_scene_text)
    for name in ("f.npz", "f.usd", "f.usda", "f.usdc"):
        assert main([str(scene), "-o", str(folder / name), *ARGS]) == 0
    return folder


def birds(stage):
    return UsdGeom.Points(stage.GetPrimAtPath("/flock/birds"))


@pytest.mark.parametrize("name", ["f.usd", "f.usda", "f.usdc"])
def test_points_equal_the_npz_within_float32_at_every_time_code(exported, name):
    flock = np.load(exported / "f.npz")
    stage = Usd.Stage.Open(str(exported / name))
    points = birds(stage)
    assert points, "no Points prim at /flock/birds"
    assert stage.GetDefaultPrim().GetPath() == Sdf.Path("/flock")
    assert points.GetPointsAttr().GetTimeSamples() == list(range(3, 15))
    for k, code in enumerate((3, 4, 9, 14)):
        row = code - 3
        pos = np.asarray(points.GetPointsAttr().Get(code))
        vel = np.asarray(points.GetVelocitiesAttr().Get(code))
        assert pos.dtype == np.float32 and pos.shape == (200, 3)
        np.testing.assert_allclose(pos[:, :2], flock["positions"][row], rtol=1e-6,
                                   atol=1e-5)
        np.testing.assert_allclose(vel[:, :2], flock["velocities"][row], rtol=1e-6,
                                   atol=1e-5)
        assert (pos[:, 2] == 0).all() and (vel[:, 2] == 0).all()  # a 2D scene at z = 0
        low, high = np.asarray(points.GetExtentAttr().Get(code))
        assert (low[:2] <= pos[:, :2].min(axis=0)).all()
        assert (high[:2] >= pos[:, :2].max(axis=0)).all()
    assert (np.asarray(points.GetIdsAttr().Get(7)) == flock["ids"]).all()
    widths = np.asarray(points.GetWidthsAttr().Get(7))
    assert widths == pytest.approx(np.full(200, 0.13))
    accent = UsdGeom.PrimvarsAPI(points).GetPrimvar("accent").Get()
    assert (np.asarray(accent) == flock["accent"]).all()


@pytest.mark.parametrize("name", ["f.usd", "f.usda", "f.usdc"])
def test_stage_has_z_up_metres_and_the_frame_rate(exported, name):
    stage = Usd.Stage.Open(str(exported / name))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetTimeCodesPerSecond() == pytest.approx(24000 / 1001, rel=1e-12)
    assert stage.GetFramesPerSecond() == pytest.approx(24000 / 1001, rel=1e-12)
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (3, 14)
    # Time code k is frame k: its time in seconds is the .npz's.
    times = np.load(exported / "f.npz")["time"]
    assert times[0] == pytest.approx(3 / stage.GetTimeCodesPerSecond(), rel=1e-12)


@pytest.mark.parametrize("name, magic", [("f.usd", b"PXR-USDC"), ("f.usdc", b"PXR-USDC"),
                                         ("f.usda", b"#usda 1.0")])
def test_each_suffix_writes_its_format(exported, name, magic):
    assert (exported / name).read_bytes()[:len(magic)] == magic
    assert not list(exported.glob(".*partial*"))


@pytest.mark.slow
def test_usd_defaults_to_crate_whatever_the_environment_says(small_scene, tmp_path):
    # USD_DEFAULT_FILE_FORMAT is read when USD loads: run a fresh interpreter.
    out = tmp_path / "f.usd"
    env = {**os.environ, "USD_DEFAULT_FILE_FORMAT": "usda"}
    proc = subprocess.run([sys.executable, "-m", "render", str(small_scene), "-o", str(out),
                           "--frames", "2", "-q"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"PXR-USDC"


def test_missing_usd_core_names_the_extra(cli, small_scene, tmp_path, monkeypatch):
    real = builtins.__import__

    def without_pxr(name, *args, **kwargs):
        if name == "pxr" or name.startswith("pxr."):
            raise ModuleNotFoundError("No module named 'pxr'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_pxr)
    r = cli(small_scene, "-o", tmp_path / "f.usd", "-q")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert "needs the usd-core package: pip install 'boids-render[usd]'" in r.err
    assert list(tmp_path.iterdir()) == [small_scene]


def test_usda_is_refused_above_2_gb_suggesting_usdc(cli, small_scene, tmp_path):
    argv = ("--set", "flock.count=20000", "--frames", "3600", "-q")
    r = cli(small_scene, "-o", tmp_path / "f.usda", *argv)
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert "(.usda is refused above 2 GB): write binary USD" in r.err
    assert str(tmp_path / "f.usdc") in r.err
    scene = load_scene(small_scene, [("flock.count", "20000", "--set"),
                                     ("output.frames", "3600", "--frames")])
    usdc = budget.estimate(scene, "f.usdc")
    assert usdc.disk < budget.USDA_MAX_BYTES < budget.estimate(scene, "f.usda").disk
    # The layer is built in memory: the estimate counts it.
    assert usdc.bytes > budget.estimate(scene, "f.npz").bytes + 3e9


# The portrait's view: 40° up at 16:9 kept across, 2·atan(96 / f) up with
# f = 54 / (16/9 · tan 20°).
PORTRAIT_FOV = 2 * math.degrees(math.atan(96 * 16 / 9 * math.tan(math.radians(20)) / 54))


@pytest.mark.parametrize("size, fov, follow", [("192x108", 40.0, "centroid"),
                                               ("108x192", PORTRAIT_FOV, "none")])
def test_a_3d_scenes_camera_is_in_the_usd_and_sees_the_birds_where_the_frames_do(
        cli, write_scene, tmp_path, size, fov, follow):
    """Each frame's points, projected through /flock/camera by pxr's own camera maths,
    land on the birds the PNG frame of the same time draws: the camera follows the flock,
    so a wrong pose or lens would miss them. In the portrait a fixed camera looks 25° up
    at the roost, its view raised off the axis to keep the horizon (an aperture offset):
    a centred lens would miss."""
    from PIL import Image

    from test_outputs3d import SMALL_3D

    scene = write_scene(SMALL_3D)
    for out in ("f.usda", "frames/"):  # transparent frames: their alpha is the birds'
        transparent = ("--transparent",) if out == "frames/" else ()
        r = cli(scene, "-o", f"{tmp_path}/{out}", "--frames", "5:8", *transparent, "-q",
                "--size", size, "--set", f"camera.follow={follow}")
        assert r.code == 0, r.err
    stage = Usd.Stage.Open(str(tmp_path / "f.usda"))
    camera = UsdGeom.Camera(stage.GetPrimAtPath("/flock/camera"))
    assert camera and camera.GetProjectionAttr().Get() == UsdGeom.Tokens.perspective
    seen = []
    for k in (5, 6, 7):
        lens = camera.GetCamera(k)
        assert lens.GetFieldOfView(lens.FOVVertical) == pytest.approx(fov, abs=1e-4)
        frustum = lens.frustum
        view, project = frustum.ComputeViewMatrix(), frustum.ComputeProjectionMatrix()
        with Image.open(tmp_path / "frames" / f"frame_{k:05d}.png") as im:
            alpha = np.asarray(im.convert("RGBA"))[..., 3]
        h, w = alpha.shape
        for point in birds(stage).GetPointsAttr().Get(k):
            ndc = project.Transform(view.Transform(Gf.Vec3d(point)))
            u, v = (ndc[0] + 1) / 2 * w, (1 - ndc[1]) / 2 * h
            if 1 <= u < w - 1 and 1 <= v < h - 1:
                x, y = int(u), int(v)
                seen.append(alpha[y - 1:y + 2, x - 1:x + 2].max() > 0)
    assert len(seen) > 300 and np.mean(seen) > 0.99, np.mean(seen)
    assert camera.GetHorizontalApertureAttr().Get() == pytest.approx(0.36)  # 36 mm
    # Each bird's bank, and its banked up vector: unit, across its velocity.
    api = UsdGeom.PrimvarsAPI(birds(stage).GetPrim())
    up = np.array(api.GetPrimvar("up").Get(6))
    v = np.array(birds(stage).GetVelocitiesAttr().Get(6))
    assert len(api.GetPrimvar("bank").Get(6)) == len(up) == len(v)
    assert np.allclose(np.linalg.norm(up, axis=1), 1, atol=1e-6)
    assert np.abs(np.einsum("ij,ij->i", up, v)).max() < 1e-4 * np.abs(v).max()
    assert not api.HasPrimvar("wings")  # wings held level: nothing to flap
    moved = [camera.GetCamera(k).transform.ExtractTranslation() for k in (5, 7)]
    assert moved[0] == moved[1]  # the camera stands; it turns to follow
    turned = [camera.GetCamera(k).transform.TransformDir(Gf.Vec3d(0, 0, -1)) for k in (5, 7)]
    assert (turned[0] != turned[1]) == (follow == "centroid")
    offsets = [camera.GetVerticalApertureOffsetAttr().Get(k) for k in (5, 7)]
    # The fixed camera's horizon is under its 16:9 view (60.75 px of the portrait's 192):
    # the extra height all above it, the frame's centre (192 − 60.75) / 2 px above the
    # axis, 0.36 · 65.625 / 108 = 0.219 in aperture units; a followed flock is centred.
    want = 0.36 * (192 - 108 / (16 / 9)) / 2 / 108 if follow == "none" else 0.0
    assert offsets == pytest.approx([want, want], abs=1e-6)
    # authored only where the frame is shifted (a 16:9 frame is not): USD's fallback is 0
    assert camera.GetVerticalApertureOffsetAttr().HasAuthoredValue() == (want != 0)


def test_a_banked_birds_up_vector_is_worked_by_hand():
    from render.encode.usd import banked_up

    beta = np.array([0.0, 0.5, -0.3, 0.2])
    v = np.array([[10.0, 0, 0], [10.0, 0, 0], [0, 5.0, 0], [0, 0, 3.0]])
    up = banked_up(v, beta)
    # Flying +x its right is −y: banked by β, up is (0, −sin β, cos β); flying +y its
    # right is +x; straight up, its right is +x and its up −y (r × f).
    assert np.allclose(up[0], [0, 0, 1]) and np.allclose(up[1], [0, -np.sin(0.5), np.cos(0.5)])
    assert np.allclose(up[2], [np.sin(-0.3), 0, np.cos(-0.3)])
    assert np.allclose(up[3], [np.sin(0.2), -np.cos(0.2), 0])


def test_a_wing_beat_is_in_the_usd_as_each_wings_angle(cli, write_scene, tmp_path):
    """primvars:wings at time code k: half the stroke times sin 2π(i·φ + f·k/fps), bird i
    starting φ = (√5 − 1)/2 of a beat after bird i − 1 (worked here, not imported)."""
    from test_outputs3d import SMALL_3D

    scene = write_scene(SMALL_3D)
    r = cli(scene, "-o", f"{tmp_path}/f.usda", "--frames", "5:8", "-q",
            "--set", "bird.wingbeat=13", "--set", "bird.stroke=90")
    assert r.code == 0, r.err
    stage = Usd.Stage.Open(str(tmp_path / "f.usda"))
    api = UsdGeom.PrimvarsAPI(birds(stage).GetPrim())
    golden = (math.sqrt(5) - 1) / 2
    i = np.arange(300)
    for k in (5, 7):
        want = math.radians(45) * np.sin(2 * math.pi * (i * golden + 13 * k / 20))
        np.testing.assert_allclose(api.GetPrimvar("wings").Get(k), want, atol=1e-5)


def test_a_hunting_hawk_is_its_own_prim_where_the_npz_has_it(cli, tmp_path):
    """/flock/hawk: one point at the frames the .npz has the hawk out (at its position,
    float32), none where it is NaN; banked and up as the birds' primvars."""
    scene = tmp_path / "hunt.toml"
    scene.write_text(HUNT)
    r = cli(scene, "-o", f"{tmp_path}/f.usda", "-o", f"{tmp_path}/f.npz", "-q")
    assert r.code == 0, r.err
    hawk = np.load(tmp_path / "f.npz")["hawk"]
    stage = Usd.Stage.Open(str(tmp_path / "f.usda"))
    prim = UsdGeom.Points(stage.GetPrimAtPath("/flock/hawk"))
    out = ~np.isnan(hawk[:, 0])
    assert out.any() and not out.all(), "the hawk comes out during the clip"
    for k in range(len(hawk)):
        points = np.array(prim.GetPointsAttr().Get(k))
        if out[k]:
            np.testing.assert_allclose(points[0], hawk[k], rtol=1e-6, atol=1e-3)
            assert prim.GetWidthsAttr().Get(k)[0] == pytest.approx(1.0)
            up = np.array(UsdGeom.PrimvarsAPI(prim).GetPrimvar("up").Get(k))
            assert np.linalg.norm(up[0]) == pytest.approx(1.0, abs=1e-6)
        else:
            assert len(points) == 0


HUNT = """\
[scene]
duration = 3.0
settle_steps = 100

[world]
dimensions = 3

[flock]
count = 200

[rules]
neighbours = "topological"

[flight]

[roost]

[hawk]
mode = "hunt"
start = 1.0
speed = 20.0

[output]
size = "160x90"
fps = 10
"""
