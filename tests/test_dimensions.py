"""The parts between the simulator and the files do not care about the world's dimension:
hand-made (n, 3) states pass the sim→draw boundary, every writer and the Dask path, and
are drawn top-down from their (x, y) columns."""

from __future__ import annotations

from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest

from render.draw.surface import Canvas
from render.drawing import draw_range
from render.encode import Target, open_writer
from render.encode.video import count_frames
from render.scene import build_scene
from render.sim.simulate import Frame
from render.states import FrameState, detached

BIRDS, FRAMES = 40, 5


@pytest.fixture(scope="module")
def scene():
    return build_scene({"scene": {"name": "3d", "seed": 1, "duration": 1.0},
                        "world": {"width": 80.0, "height": 45.0},
                        "flock": {"count": BIRDS},
                        "output": {"size": "64x36", "fps": 25}})


def hand_made(index: int, blur: int = 1):
    """Frame `index` of a flock in 3D, drifting along x, as `frames` would yield it."""
    rng = np.random.default_rng(index)
    positions = rng.uniform([0, 0, -10], [80, 45, 10], (BIRDS, 3)) + [index, 0, 0]
    velocities = np.tile([1.0, 0.5, 2.0], (BIRDS, 1))
    exposure = tuple((positions + k * velocities * 0.01, velocities)
                     for k in range(blur)) if blur > 1 else ()
    return Frame(index, Fraction(index, 25), positions, velocities,
                 SimpleNamespace(neighbours=np.full(BIRDS, 7.0)), exposure)


def states(scene, blur: int = 1) -> list[FrameState]:
    accent = np.zeros(BIRDS, bool)
    return list(detached(scene, (hand_made(i, blur) for i in range(FRAMES)), accent))


def flat(state: FrameState) -> FrameState:
    """The same state in 2D: its (x, y) columns."""
    return FrameState(state.index, state.positions[:, :2].copy(),
                      state.velocities[:, :2].copy(), state.neighbours, state.accent,
                      tuple((p[:, :2].copy(), v[:, :2].copy()) for p, v in state.exposure),
                      state.view)


@pytest.mark.parametrize("blur", [1, 3], ids=["sharp", "motion blur"])
def test_a_3d_state_keeps_its_dimension_and_is_drawn_from_above(scene, blur):
    for state in states(scene, blur):
        assert state.positions.shape == state.velocities.shape == (BIRDS, 3)
        assert all(p.shape == (BIRDS, 3) for p, _ in state.exposure)
        pixels = state.draw(Canvas(scene.output.size), scene).copy()
        assert pixels.any()
        assert (pixels == flat(state).draw(Canvas(scene.output.size), scene)).all()


@pytest.mark.parametrize("output", ["clip.mp4", "clip.webm", "clip.mov", "clip.gif",
                                    "frames/"])
def test_every_writer_takes_3d_states(scene, tmp_path, output):
    path = f"{tmp_path}/{output}"
    with open_writer(Target((path,), 0, FRAMES), scene) as writer:
        drawn = [index for index, _ in draw_range(scene, states(scene), writer, workers=2)]
    assert drawn == list(range(FRAMES))
    if output.endswith("/"):
        assert len(list((tmp_path / "frames").glob("frame_*.png"))) == FRAMES
    else:
        assert count_frames(path) == FRAMES


def test_a_target_of_several_paths_writes_each_from_one_drawing(scene, tmp_path):
    paths = (f"{tmp_path}/clip.webm", f"{tmp_path}/frames/")
    with open_writer(Target(paths, 0, FRAMES), scene) as writer:
        drawn = [index for index, _ in draw_range(scene, states(scene), writer, workers=1)]
    assert drawn == list(range(FRAMES))
    assert count_frames(paths[0]) == FRAMES
    assert len(list((tmp_path / "frames").glob("frame_*.png"))) == FRAMES


@pytest.mark.slow
def test_the_dask_path_takes_3d_states(scene, tmp_path):
    pytest.importorskip("distributed")
    from render.cluster import draw_on_cluster
    from render.executor import Cluster

    for output in ("clip.mp4", "frames/"):
        path = f"{tmp_path}/{output}"
        bar = SimpleNamespace(n=0, disable=True)  # as a --quiet render's
        bar.update = lambda k, bar=bar: setattr(bar, "n", bar.n + k)
        draw_on_cluster(scene, states(scene), Target((path,), 0, FRAMES),
                        Cluster("local", workers=1), bar)
        if output.endswith("/"):
            assert len(list((tmp_path / "frames").glob("frame_*.png"))) == FRAMES
        else:
            assert count_frames(path) == FRAMES
        assert bar.n == FRAMES
