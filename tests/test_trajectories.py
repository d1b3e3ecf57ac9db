"""Trajectories out (`-o FILE.npz`): the layout np.load sees, the frames a video of the
same scene shows (times, ranges, loops), the states the simulation produced, streaming
(memory far below the file), memory-mapping, atomicity and the budget."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import resource
import signal
import subprocess
import sys
import tracemalloc
import zipfile
from fractions import Fraction
from pathlib import Path

import imageio_ffmpeg
import numpy as np
import pytest

import render.budget as budget
from conftest import default_sigint, wait_until_writing
from render.encode import Target
from render.encode.npz import NpzWriter, memmap
from render.scene import load_scene
from render.states import simulated

pytestmark = pytest.mark.usefixtures("one_numba_thread")
DOCS = Path(__file__).resolve().parents[1] / "docs"
NEEDS_USD = pytest.mark.skipif(importlib.util.find_spec("pxr") is None,
                               reason="usd-core (the [usd] extra) is not installed")
HAWK = ("--set", "hawk.start=0.2", "--set", "hawk.duration=0.3", "--set", "hawk.period=5.0")


def states_of(scene_path, argv=(), first=0):
    """The FrameState stream a render of `scene_path` with `argv`'s overrides draws."""
    from render.cli import _scene
    from render.options import parser

    scene, _ = _scene(parser().parse_args([str(scene_path), *argv]))
    return scene, list(simulated(scene, first, scene.frame_count - first))


def test_npz_layout_dtypes_and_shapes(cli, small_scene, tmp_path):
    out = tmp_path / "flock.npz"
    r = cli(small_scene, "-o", out, "--frames", "12", "--fps", "24000/1001", *HAWK, "-q")
    assert r.code == 0, r.err
    flock = np.load(out)
    record = ["scene", "scene-sha256", "seed", "version"]
    assert sorted(flock.files) == sorted(["positions", "velocities", "bank", "ids", "accent",
                                          "time", "fps", "hawk", "hawk_velocity",
                                          "hawk_bank", *record])
    layout = {k: (flock[k].dtype, flock[k].shape) for k in flock.files if k not in record}
    assert all(flock[k].dtype.kind == "U" and flock[k].shape == () for k in record)
    assert layout == {
        "positions": (np.float64, (12, 200, 2)), "velocities": (np.float64, (12, 200, 2)),
        "bank": (np.float64, (12, 200)), "ids": (np.int64, (200,)),
        "accent": (np.bool_, (200,)), "time": (np.float64, (12,)),
        "fps": (np.dtype("<U10"), ()), "hawk": (np.float64, (12, 2)),
        "hawk_velocity": (np.float64, (12, 2)), "hawk_bank": (np.float64, (12,))}
    assert str(flock["fps"]) == "24000/1001"
    assert (flock["ids"] == np.arange(200)).all()
    assert (flock["bank"] == 0).all()
    with zipfile.ZipFile(out) as archive:  # uncompressed, and intact
        assert {i.compress_type for i in archive.infolist()} == {zipfile.ZIP_STORED}
        assert archive.testzip() is None
    assert not list(tmp_path.glob(".*partial*"))


@pytest.mark.parametrize("name", ["f.npz", pytest.param("f.usda", marks=NEEDS_USD),
                                  pytest.param("f.usd", marks=NEEDS_USD)])
def test_trajectories_record_the_scene_they_fly(cli, small_scene, tmp_path, name):
    """Nothing tied an .npz or a USD file to the scene and the version that made it."""
    import hashlib

    from render import __version__
    from render.scene.schema3d import camera_placed

    out = tmp_path / name
    assert cli(small_scene, "-o", out, "--frames", "3", *HAWK, "-q").code == 0
    from render.cli import _scene
    from render.options import parser

    scene, _ = _scene(parser().parse_args([str(small_scene), "--frames", "3", *HAWK]))
    toml = camera_placed(scene).to_toml()
    info = cli("--info", out)
    assert info.code == 0, info.err
    assert info.out == f"version: {__version__}\nseed: 3\nscene-sha256: " \
                       f"{hashlib.sha256(toml.encode()).hexdigest()}\n{toml}\n"
    r = cli("--from", out, "-o", tmp_path / "x.png")
    assert r.code == 2 and "trajectories record the scene they fly, not a picture" in r.err


def test_hawk_is_nan_while_it_is_not_out_and_absent_without_one(cli, small_scene, tmp_path):
    r = cli(small_scene, "-o", tmp_path / "h.npz", "--frames", "20", *HAWK, "-q")
    assert r.code == 0, r.err
    hawk, t = np.load(tmp_path / "h.npz")["hawk"], np.load(tmp_path / "h.npz")["time"]
    out = ~np.isnan(hawk[:, 0])
    assert (np.isnan(hawk[:, 1]) == ~out).all()
    assert out.any() and not out.all()
    assert (t[out] >= 0.2 - 1 / 60).all() and (t[out] < 0.5 + 1 / 60).all()
    flock = np.load(tmp_path / "h.npz")
    assert (np.isnan(flock["hawk_bank"]) == ~out).all() and (flock["hawk_bank"][out] == 0).all()
    assert np.isnan(flock["hawk_velocity"][~out]).all()
    assert cli(small_scene, "-o", tmp_path / "n.npz", "--frames", "3", "-q").code == 0
    assert not {"hawk", "hawk_velocity", "hawk_bank"} & set(np.load(tmp_path / "n.npz").files)


def test_positions_are_the_simulations_at_every_frame(cli, small_scene, tmp_path):
    argv = ("--frames", "15", "--fps", "24000/1001", *HAWK)
    r = cli(small_scene, "-o", tmp_path / "f.npz", *argv, "-q")
    assert r.code == 0, r.err
    flock = np.load(tmp_path / "f.npz")
    _, states = states_of(small_scene, argv)
    assert len(states) == 15
    for k, state in enumerate(states):
        assert (flock["positions"][k] == state.positions).all()
        assert (flock["velocities"][k] == state.velocities).all()
        assert flock["time"][k] == float(state.time)
        expected = np.full(2, np.nan) if state.hawk is None else state.hawk
        np.testing.assert_array_equal(flock["hawk"][k], expected)
        expected = np.full(2, np.nan) if state.hawk is None or state.hawk_velocity is None \
            else state.hawk_velocity
        np.testing.assert_array_equal(flock["hawk_velocity"][k], expected)
    assert (flock["accent"] == states[0].accent).all() and flock["accent"].any()


def test_a_hunting_hawks_velocity_and_bank_are_its_flight(cli, tmp_path):
    """3D, a hunting hawk out from the start: its velocity in the .npz is how far it flies
    between frames (a pursuit turns, so to within the turn over a frame), and its bank
    is the turn's, the birds' sign: tan β = the sideways acceleration (speed × turn rate)
    over g, a turn to the right (its heading's angle falling) a positive bank. Its bank
    follows its turn a fifth of a second behind, and only a steady stretch is compared."""
    path = tmp_path / "s.toml"
    path.write_text("[scene]\nduration = 6.0\ndt = 0.01\nsettle_steps = 0\n"
                    "[world]\ndimensions = 3\n[flock]\ncount = 300\n"
                    "[rules]\nneighbours = \"topological\"\n[flight]\n[roost]\n"
                    "[hawk]\nmode = \"hunt\"\nspeed = 20.0\nstart = 0.0\n[output]\nfps = 30\n")
    r = cli(path, "-o", tmp_path / "f.npz", "-q")
    assert r.code == 0, r.err
    flock = np.load(tmp_path / "f.npz")
    hawk, vel, bank = flock["hawk"], flock["hawk_velocity"], flock["hawk_bank"]
    flown = ~np.isnan(vel[:, 0])
    assert flown.mean() > 0.9 and (np.isnan(bank) == np.isnan(hawk[:, 0])).all()
    both = flown[:-1] & flown[1:]
    moved = (hawk[1:] - hawk[:-1])[both] * 30
    mean = 0.5 * (vel[:-1] + vel[1:])[both]
    speed = np.linalg.norm(mean, axis=1)
    assert np.median(speed) > 15
    np.testing.assert_allclose(moved, mean, atol=0.01 * speed.max())
    heading = np.unwrap(np.arctan2(vel[flown, 1], vel[flown, 0]))
    turn = np.gradient(heading) * 30  # rad/s, positive: to the left
    lean = np.arctan(-np.linalg.norm(vel[flown, :2], axis=1) * turn / 9.81)
    lean = np.roll(lean, 6)  # what it banks toward, as it was a roll's 0.2 s (6 frames) ago
    steady = (np.abs(np.gradient(turn) * 30) < 0.02) & (np.abs(lean) > 0.01)
    steady[:30] = False  # the first second: its bank rolls in from level
    assert steady.sum() >= 20
    ratio = bank[flown][steady] / lean[steady]
    assert (ratio > 0).all() and 0.8 < np.median(ratio) < 1.25, ratio
    _, states = states_of(path)
    assert [s.hawk_bank for s in states if s.hawk is not None] == list(bank[~np.isnan(bank)])


def video_times(path) -> list[float]:
    """Each frame's presentation time in a clip, as ffmpeg's showinfo reports it."""
    proc = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", str(path),
                           "-vf", "showinfo", "-f", "null", "-"], capture_output=True,
                          text=True, check=True)
    return [float(t) for t in re.findall(r"pts_time:([0-9.]+)", proc.stderr)]


def test_times_are_the_video_frames_times(cli, small_scene, tmp_path):
    argv = ("--frames", "14", "--fps", "24000/1001", "-q")
    assert cli(small_scene, "-o", tmp_path / "clip.mov", *argv).code == 0
    assert cli(small_scene, "-o", tmp_path / "clip.npz", *argv).code == 0
    times = np.load(tmp_path / "clip.npz")["time"]
    shown = video_times(tmp_path / "clip.mov")
    assert len(shown) == len(times) == 14
    np.testing.assert_allclose(times, shown, atol=1e-5)
    assert (times == [float(Fraction(k * 1001, 24000)) for k in range(14)]).all()


def test_a_frame_range_holds_the_same_frames_as_the_full_clip(cli, small_scene, tmp_path):
    assert cli(small_scene, "-o", tmp_path / "all.npz", "--frames", "20", "-q").code == 0
    assert cli(small_scene, "-o", tmp_path / "part.npz", "--frames", "7:20", "-q").code == 0
    full, part = np.load(tmp_path / "all.npz"), np.load(tmp_path / "part.npz")
    for key in ("positions", "velocities", "bank", "time"):
        assert (part[key] == full[key][7:]).all(), key
    assert part["time"][0] == 7 / 30


def test_a_loop_holds_the_frames_the_loop_video_shows(cli, small_scene, tmp_path):
    argv = ("--frames", "30", "--loop", "--crossfade", "0.3")
    assert cli(small_scene, "-o", tmp_path / "loop.npz", *argv, "-q").code == 0
    from render.sim.loop import loop_start

    # The loop is frames t₀ … of the simulation (t₀ within the clip's length).
    assert cli(small_scene, "-o", tmp_path / "plain.npz", "--frames", "60", "-q").code == 0
    loop, plain = np.load(tmp_path / "loop.npz"), np.load(tmp_path / "plain.npz")
    scene, states = states_of(small_scene, argv)
    assert (loop["positions"] == np.stack([s.positions for s in states])).all()
    t0 = loop_start(scene, 30, 9)
    # The morph's frames differ from the plain clip's; after it, they are the same.
    assert not (loop["positions"][:9] == plain["positions"][t0:t0 + 9]).all()
    assert (loop["positions"][9:] == plain["positions"][t0 + 9:t0 + 30]).all()


def test_stats_beside_an_npz(cli, small_scene, tmp_path):
    r = cli(small_scene, "-o", tmp_path / "f.npz", "--stats", tmp_path / "s.csv",
            "--frames", "6", "-q")
    assert r.code == 0, r.err
    assert len((tmp_path / "s.csv").read_text().splitlines()) == 7
    assert np.load(tmp_path / "f.npz")["positions"].shape[0] == 6


def test_nothing_is_drawn_for_trajectories(cli, small_scene, tmp_path, monkeypatch):
    import render.drawing as drawing
    import render.states as states

    def refuse(*args, **kwargs):
        raise AssertionError("drew a frame for a trajectory output")

    monkeypatch.setattr(states, "draw_frame", refuse)
    monkeypatch.setattr(drawing, "Canvas", refuse)
    assert cli(small_scene, "-o", tmp_path / "f.npz", "--frames", "4", "-q").code == 0


def test_npz_beside_a_video_in_one_render(small_scene, tmp_path):
    from render.encode import Target
    from render.encode.video import count_frames
    from render.pipeline import render

    scene = load_scene(small_scene, [("output.frames", "8", "--frames")])
    paths = (str(tmp_path / "f.mp4"), str(tmp_path / "f.npz"))
    render(scene, Target(paths, 0, scene.frame_count), quiet=True)
    assert count_frames(paths[0]) == 8
    assert np.load(paths[1])["positions"].shape == (8, 200, 2)


def test_memmap_maps_positions_without_reading_them(cli, small_scene, tmp_path):
    out = tmp_path / "f.npz"
    assert cli(small_scene, "-o", out, "--frames", "9", "-q").code == 0
    mapped = memmap(out, "positions")
    assert isinstance(mapped, np.memmap) and mapped.ctypes.data % 64 == 0
    assert (mapped == np.load(out)["positions"]).all()
    # A write under the map's offset would show in the array: it is the file itself.
    offset = mapped.offset
    with open(out, "r+b") as fh:
        fh.seek(offset)
        fh.write(np.float64(-7.0).tobytes())
    assert memmap(out, "positions")[0, 0, 0] == -7.0


def test_the_docs_recipes_run(cli, small_scene, tmp_path, monkeypatch, capsys):
    text = (DOCS / "outputs.md").read_text()
    section = text[text.index("### Trajectories (.npz)"):text.index("### USD")]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2 and len(blocks[0].strip().splitlines()) == 5
    (tmp_path / "out").mkdir()
    assert cli(small_scene, "-o", tmp_path / "out/flock.npz", "--frames", "5", "-q").code == 0
    monkeypatch.chdir(tmp_path)
    found: dict = {}
    for block in blocks:
        exec(block, found)
    assert capsys.readouterr().out.startswith("30 0.1333")
    assert (found["positions"] == np.load("out/flock.npz")["positions"]).all()


def test_streaming_keeps_memory_far_below_the_file(write_scene, small_scene_text, tmp_path):
    """The npz writer holds a frame at a time, never the clip: 1,000 birds × 300 frames
    (12 MB of positions, velocities and bank on disk), each frame's arrays fresh, with the
    writer's peak memory under a twentieth of the file. The frames are one simulated
    state moved along: traced around a simulation as well, the peak read 0.36–0.70 MB
    with the same writer, by what had run before in the process (numba's arrays of each
    step are traced too), the bound's own size."""
    scene = load_scene(write_scene(small_scene_text), [
        ("flock.count", "1000", "--set"), ("output.frames", "300", "--frames")])
    first = next(simulated(scene, 0, 1))
    fps = scene.output.fps
    out = tmp_path / "big.npz"
    tracemalloc.start()
    try:
        with NpzWriter(out, fps=fps, frames=300) as writer:
            for k in range(300):
                writer.write_state(dataclasses.replace(
                    first, index=k, time=Fraction(k) / fps, positions=first.positions + k,
                    velocities=first.velocities * 1.0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    size = out.stat().st_size
    assert size > 12e6
    assert peak < size / 20, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.1f} MB file"
    positions = memmap(out, "positions")
    assert positions.shape == (300, 1000, 2)
    assert (positions[299] == first.positions + 299).all()


@pytest.mark.parametrize("name", ["f.npz", pytest.param("f.usdc", marks=NEEDS_USD)])
def test_interrupted_trajectories_leave_nothing_and_keep_an_existing_file(
        cli, small_scene, tmp_path, monkeypatch, name):
    from render.encode import open_state_writer

    out = tmp_path / "out" / name
    out.parent.mkdir()
    out.write_bytes(b"the previous render")
    scene = load_scene(small_scene)
    kind = type(open_state_writer(Target.of(str(out), scene), scene))
    real = kind.write_state
    calls = []

    def write_state(self, state):
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(state.index)
        real(self, state)

    monkeypatch.setattr(kind, "write_state", write_state)
    r = cli(small_scene, "-o", out, "--frames", "10", "-q")
    assert r.code == 130 and r.err_lines == ["boids-render: interrupted"]
    assert calls == [0, 1, 2]
    assert sorted(p.name for p in out.parent.iterdir()) == [name]
    assert out.read_bytes() == b"the previous render"


@pytest.mark.slow
def test_sigint_stops_an_npz_render_and_leaves_nothing(small_scene, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "render", str(small_scene), "-o",
                             str(out / "f.npz"), "--frames", "200000", "-q"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    try:
        wait_until_writing(proc, out)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert list(out.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ["f.npz", pytest.param("f.usd", marks=NEEDS_USD),
                                  pytest.param("f.usda", marks=NEEDS_USD)])
def test_full_disk_is_one_line_and_leaves_nothing(small_scene, tmp_path, name):
    def limit():  # in the child: files past 20 kB fail to grow (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_bytes(b"an earlier render")
    proc = subprocess.run([sys.executable, "-m", "render", str(small_scene), "-o",
                           str(out / name), "-q"], preexec_fn=limit, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith(f"boids-render: cannot write {out / name}: ")
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == [name]
    assert (out / name).read_bytes() == b"an earlier render"


def test_budget_counts_the_npz_on_disk_and_refuses_what_does_not_fit(
        cli, small_scene, tmp_path, monkeypatch):
    scene = load_scene(small_scene, [("flock.count", "20000", "--set"),
                                     ("output.frames", "3600", "--frames")])
    cost = budget.estimate(scene, "f.npz")
    assert cost.disk == pytest.approx(3600 * 20000 * 5 * 8, rel=0.01)  # 2D: 2 + 2 + 1
    assert cost.pixels == 0 and "on disk" in str(cost)
    r = cli(small_scene, "--check", "-o", tmp_path / "f.npz")
    assert r.code == 0 and "kB on disk" in r.out
    monkeypatch.setattr(budget, "available_disk", lambda folder: 1e5)
    r = cli(small_scene, "-o", tmp_path / "f.npz", "-q")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    # 242 kB: 200 birds × 30 frames × (2 + 2 + 1) × 8 bytes, and the scene it records
    small = budget.estimate(load_scene(small_scene), "f.npz")
    assert 242e3 < small.disk < 250e3
    assert f"needs about {budget._bytes(small.disk)} on disk, but only 100 kB is free " \
        f"there" in r.err
    assert list(tmp_path.iterdir()) == [small_scene]
    monkeypatch.undo()
    assert cli(small_scene, "-o", tmp_path / "f.npz", "-q").code == 0
    assert (tmp_path / "f.npz").stat().st_size == pytest.approx(small.disk, rel=0.02)


def test_trajectories_refuse_a_cluster_and_resume(cli, small_scene, tmp_path):
    r = cli(small_scene, "-o", tmp_path / "f.npz", "--scheduler", "local", "-q")
    assert r.code == 2 and "drop --scheduler" in r.err, r.err
    r = cli(small_scene, "-o", tmp_path / "f.npz", "--resume", "-q")
    assert r.code == 2 and "--resume applies to PNG sequences" in r.err, r.err
    assert list(tmp_path.iterdir()) == [small_scene]


def test_no_overwrite_refuses_an_existing_npz(cli, small_scene, tmp_path):
    out = tmp_path / "f.npz"
    out.write_bytes(b"kept")
    r = cli(small_scene, "-o", out, "--no-overwrite", "-q")
    assert r.code == 2 and "already exists" in r.err
    assert out.read_bytes() == b"kept"


def test_a_frame_between_two_steps_has_the_bank_and_the_hawk_between_theirs(tmp_path):
    """A frame's banks and hawk, like its positions, are interpolated to its time: a
    frame a third of the way from one step to the next is a third of the way between
    their banks and their hawks (3D, a hunting hawk out from the start)."""
    from math import floor

    from render.sim.simulate import Simulation, frames

    path = tmp_path / "s.toml"
    path.write_text("[scene]\nduration = 2.0\ndt = 0.01\nsettle_steps = 0\n"
                    "[world]\ndimensions = 3\n[flock]\ncount = 300\n"
                    "[rules]\nneighbours = \"topological\"\n[flight]\n[roost]\n"
                    "[hawk]\nmode = \"hunt\"\nspeed = 20.0\nstart = 0.0\n[output]\nfps = 30\n")
    scene = load_scene(path)
    sim = Simulation(scene, cache=False)
    steps = [sim.advance() for _ in range(40)]
    between = 0
    for frame in frames(Simulation(scene, cache=False), scene.output.fps, 10):
        where = frame.time / Fraction(scene.scene.dt).limit_denominator(1_000_000)
        a, b = steps[floor(where)], steps[floor(where) + 1]
        frac = float(where - floor(where))
        np.testing.assert_array_equal(frame.bank, a.bank + frac * (b.bank - a.bank))
        if a.hawk is None or b.hawk is None:
            assert frame.hawk == a.hawk
            continue
        np.testing.assert_allclose(frame.hawk, np.add(a.hawk, frac * np.subtract(b.hawk,
                                                                               a.hawk)))
        between += frac > 0 and not np.array_equal(a.bank, b.bank) and a.hawk != b.hawk
    assert between >= 6
