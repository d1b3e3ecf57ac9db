"""The Python API (render/api.py, docs/api.md): what each function returns is what the
command line writes, and the documented examples run."""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import sys
import zipfile
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import render
from render.errors import SceneError, UsageError

pytestmark = pytest.mark.usefixtures("one_numba_thread")
ROOT = Path(__file__).resolve().parents[1]
HAWK = {"hawk.start": 0.2, "hawk.duration": 0.3, "hawk.period": 5.0}


def loads_nothing_heavy(code: str) -> None:
    """`code` runs in a fresh interpreter without importing numpy, numba or cairo."""
    code += "\nimport sys\nheavy = {'numpy', 'numba', 'cairo'} & set(sys.modules)\n" \
            "assert not heavy, heavy\n"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr


def test_import_render_loads_nothing_heavy():
    loads_nothing_heavy(
        "import render\n"
        "scene = render.load_scene('scenes/classic.toml', {'flock.count': 50})\n"
        "assert callable(render.simulate) and callable(render.frame)\n"
        "assert {'load_scene', 'simulate', 'frame', 'render'} <= set(dir(render))")


def test_estimating_a_3d_render_loads_nothing_heavy():
    # --check answers before the simulator loads: whether the settling is on disk is read
    # from its key alone.
    loads_nothing_heavy("import render\nfrom render import budget\n"
                        "print(budget.estimate(render.load_scene('scenes/flock3d.toml'), "
                        "'x.mp4'))")


def test_a_missing_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        render.nothing  # noqa: B018


def test_overrides_take_python_values_or_toml_strings(small_scene):
    typed = render.load_scene(small_scene, {"flock.count": 50, "output.size": (64, 36),
                                            "output.transparent": True,
                                            "output.fps": Fraction(24000, 1001)})
    toml = render.load_scene(small_scene, {"flock.count": "50", "output.size": '"64x36"',
                                           "output.transparent": "true",
                                           "output.fps": '"24000/1001"'})
    assert typed.to_toml() == toml.to_toml()
    assert (typed.flock.count, typed.output.size, typed.output.transparent) == \
        (50, (64, 36), True)


def test_a_python_string_names_the_scene_as_written(small_scene):
    scene = render.load_scene(small_scene, {"scene.name": "123", "flock.count": "50"})
    assert (scene.scene.name, scene.flock.count) == ("123", 50)
    with pytest.raises(SceneError, match="scene.name"):
        render.load_scene(small_scene, {"scene.name": 123})  # a number is no name


def test_a_bad_override_is_the_clis_scene_error(cli, small_scene):
    with pytest.raises(SceneError) as raised:
        render.load_scene(small_scene, {"flock.count": -5, "flock.colour": 1})
    assert raised.value.problems == [
        line.removeprefix("boids-render: ").replace("--set ", "overrides ")
        for line in cli(small_scene, "--set", "flock.count=-5", "--set",
                        "flock.colour=1").err_lines]
    with pytest.raises(SceneError, match="expected a key section.key"):
        render.load_scene(small_scene, {"count": 5})
    with pytest.raises(SceneError, match="no such scene file"):
        render.load_scene(small_scene.parent / "missing.toml")


def test_simulate_yields_the_npz_exports_states(cli, small_scene, tmp_path):
    out = tmp_path / "f.npz"
    argv = [f"--set={k}={v}" for k, v in HAWK.items()]
    assert cli(small_scene, "-o", out, "--frames", "5:12", "-q", *argv).code == 0
    flock = np.load(out)
    scene = render.load_scene(small_scene, HAWK)
    states = list(render.simulate(scene, frames=(5, 12)))
    assert [s.index for s in states] == list(range(5, 12))
    assert [s.time for s in states] == flock["time"].tolist()
    for k, state in enumerate(states):
        for key in ("positions", "velocities", "bank"):
            np.testing.assert_array_equal(getattr(state, key), flock[key][k], key)
        hawk = np.full(2, np.nan) if state.hawk is None else state.hawk
        np.testing.assert_array_equal(hawk, flock["hawk"][k])
        flown = np.full(2, np.nan) if state.hawk_velocity is None else state.hawk_velocity
        np.testing.assert_array_equal(flown, flock["hawk_velocity"][k])
        bank = np.nan if state.hawk_bank is None else state.hawk_bank
        np.testing.assert_array_equal(bank, flock["hawk_bank"][k])
        assert state.positions.dtype == np.float64 and state.bank.shape == (200,)
        assert state.neighbours.shape == (200,)
    assert any(s.hawk is None for s in states) and any(s.hawk is not None for s in states)
    np.testing.assert_array_equal(states[0].accent, flock["accent"])
    np.testing.assert_array_equal(states[0].ids, flock["ids"])
    assert states[0].hawk is None or states[0].hawk.shape == (2,)


def test_simulate_counts_frames_like_the_cli(small_scene):
    scene = render.load_scene(small_scene)
    assert len(list(render.simulate(scene))) == scene.frame_count == 30
    assert [s.index for s in render.simulate(scene, frames=3)] == [0, 1, 2]
    with pytest.raises(UsageError, match="0 ≤ a < b"):
        render.simulate(scene, frames=(4, 4))
    with pytest.raises(TypeError, match="frames"):
        render.simulate(scene, frames="4")


def test_simulate_quiet_draws_no_bar_even_for_a_loop(small_scene, capfd):
    scene = render.load_scene(small_scene, {"output.loop": True, "output.crossfade": 0.2})
    assert [s.index for s in render.simulate(scene, quiet=True)][-1] == 29
    assert capfd.readouterr().err == ""
    next(render.simulate(scene))  # the search is kept; flying to its start shows
    assert "0%|" in capfd.readouterr().err


def decoded_png(path: Path) -> np.ndarray:
    with Image.open(path) as image:
        return np.asarray(image.convert("RGBA"))


@pytest.mark.parametrize("transparent", [False, True], ids=["opaque", "transparent"])
def test_frame_is_the_clis_still(cli, small_scene, tmp_path, transparent):
    flags = ["--transparent"] if transparent else []
    still = tmp_path / "still.png"
    r = cli(small_scene, "--still", "0.4", "-o", still, "--size", "96x54", *flags)
    assert r.code == 0, r.err
    scene = render.load_scene(small_scene, {"output.transparent": transparent})
    picture = render.frame(scene, 0.4, size=(96, 54))
    assert picture.shape == (54, 96, 4) and picture.dtype == np.uint8
    np.testing.assert_array_equal(picture, decoded_png(still))
    alpha = picture[:, :, 3]
    if transparent:  # straight alpha: a premultiplied colour never exceeds its alpha
        edge = (alpha > 0) & (alpha < 255)
        assert (picture[edge, :3].max(axis=1) > alpha[edge]).any()
    else:
        assert (alpha == 255).all()
    assert (render.frame(scene, "frame:12", size=(96, 54)) == picture).all()  # 12/30 s


def test_frame_flies_to_its_time_quietly_when_asked(capfd):
    from conftest import SCENES

    scene = render.load_scene(SCENES / "flock3d.toml", overrides={
        "flock.count": 200, "scene.settle_steps": 20, "output.size": (96, 54)})
    capfd.readouterr()
    loud = render.frame(scene, 0.5)
    assert "flying to 0.5 s" in capfd.readouterr().err
    assert (render.frame(scene, 0.5, quiet=True) == loud).all()
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("t", [0.5, np.float32(0.5), Fraction(1, 2), Decimal("0.50"), "0.5",
                               "frame:30"])
def test_a_time_is_the_same_seconds_whatever_its_type(t):
    from render.api import _seconds

    assert _seconds(t, Fraction(60)) == Fraction(1, 2)


@pytest.mark.parametrize("options, says", [
    (dict(still=0.5, tile_size=0), "tile_size: expected a whole number of px ≥ 1"),
    (dict(still=0.5, bit_depth=12), "bit_depth: expected 8 or 16, got 12"),
    (dict(frames=2, workers=0), "workers: expected a whole number ≥ 1, got 0"),
    # On/off options: overwrite="False" replaced the file, web="no" wrote a page.
    (dict(still=0.5, overwrite="False"), "overwrite: expected True or False, got 'False'"),
    (dict(frames=2, web="no"), "web: expected True or False, got 'no'"),
    (dict(frames=2, resume=1), "resume: expected True or False, got 1"),
])
def test_render_refuses_what_the_cli_refuses(small_scene, tmp_path, options, says):
    scene = render.load_scene(small_scene)
    with pytest.raises(UsageError, match=says):
        render.render(scene, tmp_path / ("a.png" if "still" in options else "a.mp4"),
                      quiet=True, **options)
    assert list(tmp_path.iterdir()) == [small_scene]


def test_load_scene_names_a_path_or_overrides_of_the_wrong_kind():
    # They read "None: no such scene file" and "'int' object is not iterable".
    with pytest.raises(TypeError, match="path: expected the path of a scene file"):
        render.load_scene(None)
    from conftest import SCENES

    with pytest.raises(TypeError, match="overrides: expected a mapping .* got int"):
        render.load_scene(SCENES / "plate.toml", 5)


def test_fractions_and_decimals_are_numbers_in_overrides():
    # Fraction(2000) read "expected an integer, got '2000'", Decimal("1.5") "expected a
    # number, got 1.5"; a frame rate stays exact.
    from conftest import SCENES

    scene = render.load_scene(SCENES / "plate.toml", {
        "flock.count": Fraction(2000), "scene.duration": Decimal("1.5"),
        "scene.dt": Fraction(1, 100), "output.fps": Fraction(24000, 1001)})
    assert (scene.count, scene.scene.duration, scene.scene.dt) == (2000, 1.5, 0.01)
    assert scene.output.fps == Fraction(24000, 1001)


def test_quiet_is_on_or_off_in_every_function(small_scene, tmp_path):
    import numpy as np

    scene = render.load_scene(small_scene)
    for call in (lambda q: render.render(scene, tmp_path / "a.mp4", frames=2, quiet=q),
                 lambda q: render.simulate(scene, 2, quiet=q),
                 lambda q: render.frame(scene, 0, quiet=q)):
        with pytest.raises(UsageError, match="quiet: expected True or False, got 'no'"):
            call("no")
    assert len(list(render.simulate(scene, 2, quiet=np.bool_(True)))) == 2
    assert list(tmp_path.iterdir()) == [small_scene]


def test_render_of_a_web_page_returns_its_four_files(small_scene, tmp_path):
    scene = render.load_scene(small_scene, {"output.size": (160, 90)})
    written = render.render(scene, tmp_path / "hero.mp4", web=True, frames=3, quiet=True)
    assert [p.name for p in written] == ["hero.mp4", "hero.av1.mp4", "hero.jpg", "hero.html"]
    assert all(p.is_file() for p in written)


def test_render_writes_what_the_cli_writes(cli, small_scene, tmp_path):
    assert cli(small_scene, "-o", f"{tmp_path}/cli/", "--frames", "3:6", "-q").code == 0
    scene = render.load_scene(small_scene)
    written = render.render(scene, f"{tmp_path}/api/", frames=(3, 6), quiet=True,
                            stats=tmp_path / "stats.csv")
    names = [f"frame_{k:05d}.png" for k in (3, 4, 5)]
    assert written == [tmp_path / "api" / n for n in names] + [tmp_path / "stats.csv"]
    for name in names:
        assert (tmp_path / "api" / name).read_bytes() == \
            (tmp_path / "cli" / name).read_bytes()
    assert len((tmp_path / "stats.csv").read_text().splitlines()) == 4  # header + 3
    # A Path loses a trailing "/": one naming an existing folder means frames in it.
    assert render.render(scene, tmp_path / "api", frames=1, quiet=True, overwrite=False) \
        == [tmp_path / "api" / "frame_00000.png"]
    [clip] = render.render(scene, str(tmp_path / "c.mp4"), frames=2, quiet=True)
    assert clip == tmp_path / "c.mp4" and clip.stat().st_size > 0


def test_renders_on_threads_at_once_draw_what_they_draw_alone(small_scene, tmp_path):
    # A 2D clip, a 3D clip through its camera and a 2D loop, rendered alone and then all
    # at once on threads of one process: the same frames, byte for byte.
    import threading

    from conftest import SCENES

    scenes = {
        "flat": render.load_scene(small_scene),
        "deep": render.load_scene(SCENES / "flock3d.toml", overrides={
            "flock.count": 300, "scene.settle_steps": 100, "output.size": (160, 90)}),
        "loop": render.load_scene(SCENES / "plate.toml", overrides={
            "flock.count": 400, "scene.settle_steps": 60, "output.size": (160, 90),
            "output.fps": 30, "output.loop": True, "output.crossfade": 0.2}),
    }
    frames = {"flat": 3, "deep": 3, "loop": 15}
    for name, scene in scenes.items():
        render.render(scene, f"{tmp_path}/alone/{name}/", frames=frames[name], quiet=True)
    together, failed = threading.Barrier(len(scenes)), []

    def draw(name):
        together.wait()
        try:
            render.render(scenes[name], f"{tmp_path}/together/{name}/", frames=frames[name],
                          quiet=True)
        except BaseException as error:  # reported below, not lost in the thread
            failed.append(error)

    threads = [threading.Thread(target=draw, args=(name,)) for name in scenes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failed
    for name in scenes:
        alone = sorted((tmp_path / "alone" / name).iterdir())
        assert len(alone) == frames[name]
        for path in alone:
            assert path.read_bytes() == (tmp_path / "together" / name / path.name).read_bytes()


def test_render_still_writes_the_clis_still(cli, small_scene, tmp_path):
    assert cli(small_scene, "--still", "0.5", "-o", tmp_path / "cli.png").code == 0
    scene = render.load_scene(small_scene)
    assert render.render(scene, tmp_path / "api.png", still=0.5) == [tmp_path / "api.png"]
    assert (tmp_path / "api.png").read_bytes() == (tmp_path / "cli.png").read_bytes()
    with pytest.raises(UsageError, match="exists"):
        render.render(scene, tmp_path / "api.png", still=0.5, overwrite=False)


def test_render_refuses_keywords_it_does_not_take(small_scene, tmp_path):
    scene = render.load_scene(small_scene)
    with pytest.raises(TypeError, match=r"fram\b.*valid: .*frames.*workers"):
        render.render(scene, tmp_path / "x.mp4", fram=3)
    with pytest.raises(TypeError, match="workers applies to clips"):
        render.render(scene, tmp_path / "x.png", still=1, workers=2)
    with pytest.raises(TypeError, match="dpi applies to stills"):
        render.render(scene, tmp_path / "x.mp4", dpi=300)
    with pytest.raises(TypeError, match="bit_depth, dpi apply to stills"):
        render.render(scene, tmp_path / "x.mp4", dpi=300, bit_depth=16)
    with pytest.raises(UsageError, match="give a scheduler"):
        render.render(scene, tmp_path / "x.mp4", cache_dir=tmp_path)
    with pytest.raises(UsageError, match="nothing to do"):
        render.render(scene)
    with pytest.raises(UsageError, match="a still is one file written as PNG, JPEG, OpenEXR, PDF"):
        render.render(scene, tmp_path / "x.mp4", still=1)
    assert not list(tmp_path.glob("x*"))


def test_the_docs_examples_run(tmp_path, monkeypatch, capsys):
    """docs/api.md's examples, in order, in a scratch folder with the shipped scenes; the
    printed values they show in comments are the ones printed."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs/api.md").read_text(), re.S)
    assert len(blocks) >= 5
    shutil.copytree(ROOT / "scenes", tmp_path / "scenes")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), namespace)
    out = capsys.readouterr().out
    for block in blocks:
        for shown in re.findall(r"print\(.*#\s*(.+)$", block, re.M):
            literal = shown.split(" (")[0].split("…")[0].strip()
            assert literal in out, (literal, out)
    assert Image.open(tmp_path / "frame.png").size == (640, 360)
    assert zipfile.is_zipfile(tmp_path / "out/flock.npz")
    png = io.BytesIO((tmp_path / "out/still.png").read_bytes())
    assert Image.open(png).info["dpi"][0] == pytest.approx(300, abs=0.1)


def test_numpy_values_are_taken_as_python_ones(small_scene):
    scene = render.load_scene(small_scene, {"flock.count": np.int64(40),
                                            "output.size": np.array([96, 54]),
                                            "render.tail": np.float32(2.1),
                                            "render.head": np.array(1.3, np.float16)})
    assert (scene.count, scene.output.size, scene.render.tail, scene.render.head) == \
        (40, (96, 54), 2.1, 1.3)
    assert isinstance(scene.count, int) and "tail = 2.1\n" in scene.to_toml()
    assert render.frame(scene, np.float64(0.1), size="64x36", quiet=True).shape == (36, 64, 4)


def test_numpy_numbers_are_taken_for_frames_dpi_tile_size_and_workers(small_scene, tmp_path):
    scene = render.load_scene(small_scene, {"output.size": "64x36"})
    assert len(list(render.simulate(scene, frames=np.int64(3), quiet=True))) == 3
    assert [s.index for s in render.simulate(scene, frames=(np.int64(1), np.int64(3)),
                                             quiet=True)] == [1, 2]
    still = render.render(scene, tmp_path / "s.png", still=0.1, dpi=np.int64(300),
                          tile_size=np.int64(16), bit_depth=np.int64(8), quiet=True)
    assert [Path(p).exists() for p in still] == [True]
    assert render.render(scene, tmp_path / "f.npz", frames=2, workers=np.int64(1),
                         quiet=True)


@pytest.mark.parametrize("frames", [0, -3])
def test_a_count_of_no_frames_is_refused_in_the_apis_terms(small_scene, frames):
    with pytest.raises(UsageError, match=rf"frames={frames}: expected a count n ≥ 1"):
        render.simulate(render.load_scene(small_scene), frames=frames)


@pytest.mark.parametrize("call, error, says", [
    (lambda path, scene: render.simulate(str(path)), TypeError,
     "scene: expected a Scene, got str: load it first, render.load_scene("),
    (lambda path, scene: render.frame(path, 0), TypeError, "expected a Scene, got PosixPath"),
    (lambda path, scene: render.load_scene(path, [("flock.count", 3)]), TypeError,
     'overrides: expected a mapping {"section.key": value}, got list'),
    (lambda path, scene: render.frame(scene, "abc"), UsageError,
     "t='abc': expected seconds (12.5) or frame:N"),
    (lambda path, scene: render.render(scene, path.parent / "x.png", still=0.5, dpi="high"),
     UsageError, "dpi: expected a number in (0, 100000], got 'high'"),
    (lambda path, scene: render.render(scene, path.parent / "x.png", still=0.5, dpi=1e9),
     UsageError, "dpi: expected a number in (0, 100000], got 1000000000.0"),
    (lambda path, scene: render.frame(scene, 0, size=(320.0, 180.0)), SceneError,
     "size (output.size): expected whole numbers of px such as [1920, 1080], got [320.0"),
])
def test_a_slip_in_python_is_named_in_python_terms(small_scene, call, error, says):
    scene = render.load_scene(small_scene)
    with pytest.raises(error) as err:
        call(small_scene, scene)
    assert says in str(err.value)
    assert "--" not in str(err.value)


def test_an_excerpt_of_a_3d_film_is_simulated_and_drawn_at_another_size():
    # Its duration, given over the file's landing, keeps its precedence when the API
    # rebuilds the scene for frames= or size=.
    scene = render.load_scene(ROOT / "scenes" / "murmuration.toml",
                              {"flock.count": 300, "scene.duration": 2, "scene.settle_steps": 5,
                               "output.size": "64x36", "palette.theme": "dark"})
    assert [s.index for s in render.simulate(scene, 2, quiet=True)] == [0, 1]
    assert render.frame(scene, 0.5, size=(32, 18), quiet=True).shape == (18, 32, 4)


def test_a_3d_state_carries_the_attack_and_the_landed_birds_as_the_npz_does(cli, tmp_path):
    sets = {"flock.count": "300", "scene.settle_steps": "0", "scene.duration": "3.0",
            "roost.landing_at": "0.5", "roost.landing_spread": "0.5", "roost.altitude": "6.0",
            "hawk.start": "0.0", "output.size": '"160x90"', "output.fps": "20"}
    scene_path = ROOT / "scenes" / "murmuration.toml"
    out = tmp_path / "f.npz"
    argv = [f"--set={k}={v}" for k, v in sets.items()]
    assert cli(scene_path, "-o", out, "-q", *argv).code == 0
    flock = np.load(out)
    states = list(render.simulate(render.load_scene(scene_path, sets)))
    np.testing.assert_array_equal([s.attack for s in states], flock["attack"])
    np.testing.assert_array_equal([s.landed for s in states], flock["landed"])
    assert states[-1].landed.any() and states[0].landed.dtype == bool


def test_each_state_has_its_own_accent_mask(small_scene):
    states = render.simulate(render.load_scene(small_scene), frames=3)
    first = next(states)
    before = first.accent.copy()
    first.accent[:] = ~first.accent
    later = list(states)
    assert all(s.accent is not first.accent for s in later)
    np.testing.assert_array_equal(later[-1].accent, before)


@pytest.mark.parametrize("options, says", [
    (dict(still=0.5, dpi=0.1), "e.jpg: dpi=0.1: a JPEG records its resolution"),
    (dict(still=0.5, bit_depth=16), "bit_depth=16 applies to PNG stills"),
    (dict(still=0.5, tile_size=64), "tile_size applies to PNG stills"),
    (dict(resume=True), "resume=True applies to PNG sequences"),
    (dict(scheduler="nowhere"), "scheduler=nowhere: expected 'local'"),
    (dict(stats="x.txt"), "x.txt: stats writes .csv or .json"),
])
def test_the_apis_errors_name_its_keywords_not_the_command_lines_flags(small_scene, tmp_path,
                                                                      options, says):
    scene = render.load_scene(small_scene)
    suffix = ".jpg" if "still" in options else ".mp4"
    if "stats" in options:
        options = {**options, "stats": tmp_path / options["stats"]}
    with pytest.raises(UsageError) as caught:
        render.render(scene, tmp_path / f"e{suffix}", quiet=True, **options)
    assert says in str(caught.value) and " --" not in str(caught.value), caught.value


def test_the_apis_overwrite_loop_and_web_errors_speak_its_terms(small_scene, tmp_path):
    scene = render.load_scene(small_scene)
    (tmp_path / "k.mp4").touch()
    with pytest.raises(UsageError, match="already exists and overwrite=False keeps it; "
                                         "remove it or drop overwrite=False"):
        render.render(scene, tmp_path / "k.mp4", overwrite=False)
    with pytest.raises(UsageError, match=r"web=True needs a path NAME\.mp4"):
        render.render(scene, tmp_path / "k.webm", web=True)
    loop = render.load_scene(small_scene, {"output.loop": True, "output.crossfade": 0.2})
    with pytest.raises(UsageError, match=r"frames=\(a, b\): a loop is rendered whole .* "
                                         r"expected frames=n$"):
        render.simulate(loop, frames=(5, 20))
    with pytest.raises(UsageError, match=r"^t=0\.51: a loop's still .*: t=1/2$"):
        render.frame(loop, 0.51, quiet=True)


INTERRUPTED = """
import os, signal, sys, threading
import render
signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job ignores it
scene = render.load_scene("scenes/plate.toml", {"scene.duration": 600.0,
                          "flock.count": 100000, "world.width": 400.0, "world.height": 225.0})
threading.Timer(float(sys.argv[1]), lambda: os.kill(os.getpid(), signal.SIGINT)).start()
try:
    for _ in render.simulate(scene, quiet=True):
        pass
except KeyboardInterrupt:
    print("KeyboardInterrupt")
except BaseException as exc:
    print(type(exc).__name__)
"""


def test_ctrl_c_in_python_is_a_keyboard_interrupt():
    # Ctrl-C that lands while a numba kernel runs (100,000 birds: most of the time)
    # surfaced as a SystemError, "... returned a result with an exception set", which a
    # notebook's `except KeyboardInterrupt` does not catch.
    for delay in ("2.5", "3.5"):
        done = subprocess.run([sys.executable, "-c", INTERRUPTED, delay], cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
        assert done.stdout.strip() == "KeyboardInterrupt", (done.stdout, done.stderr[-2000:])
