"""The first run: compiling the kernels is announced once, and kept out of the progress
bar's rate and ETA."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import render.pipeline
import render.states
from render.progress import progress_bar
from render.states import COMPILING, kernels_cached

ROOT = Path(__file__).resolve().parents[1]


def test_the_bar_starts_once_the_flock_is_settled_and_the_first_frame_simulated(
        cli, small_scene, tmp_path, monkeypatch):
    events = []

    class Recorded(render.states.Simulation):
        def __init__(self, scene):
            super().__init__(scene)
            events.append("settled")

        def advance(self):
            if self.step_index >= 0:
                events.append("step")
            return super().advance()

    def bar(**kwargs):
        events.append("bar")
        return progress_bar(**kwargs)

    monkeypatch.setattr(render.states, "Simulation", Recorded)
    monkeypatch.setattr(render.pipeline, "progress_bar", bar)
    assert cli(small_scene, "-o", tmp_path / "f.npz", "--frames", "3", "-q").code == 0
    assert events.index("settled") < events.index("step") < events.index("bar")


def test_the_kernels_folder_follows_every_source_the_settled_states_the_simulators(
        tmp_path, monkeypatch):
    # A drawing kernel bakes in constants from other files (the haze's from sky.py), so
    # an edit anywhere in the package starts a fresh kernels folder; settled states
    # depend on the simulator alone.
    from render.sim import cache
    from render.sim.cache import sources_digest

    copy = tmp_path / "render"
    shutil.copytree(ROOT / "render", copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = sources_digest(copy), sources_digest(copy / "sim")
    sky = copy / "draw3d" / "sky.py"
    sky.write_text(sky.read_text() + "\n# edited\n")
    after = sources_digest(copy), sources_digest(copy / "sim")
    assert after[0] != before[0] and after[1] == before[1]
    assert before[1] == sources_digest()
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(cache, "portable_target", lambda: None)
    monkeypatch.delitem(sys.modules, "numba")  # as a fresh process, before numba's import
    cache.use_numba_cache()
    assert os.environ["NUMBA_CACHE_DIR"].endswith(f"numba-{cache.kernels_digest()}")
    # Another checkout of the same sources gets a folder of its own (numba files kernels
    # by their source's path: the first's would not serve it, yet made it look warm).
    same = tmp_path / "other" / "render"
    shutil.copytree(ROOT / "render", same, ignore=shutil.ignore_patterns("__pycache__"))
    assert sources_digest(same) == sources_digest(ROOT / "render")
    assert cache.kernels_digest(same) != cache.kernels_digest(ROOT / "render")


def test_a_cache_folder_that_cannot_be_written_falls_back_to_the_temporary_folder(
        tmp_path, monkeypatch):
    """A read-only home (a container's): numba, pointed at a folder it cannot write,
    refused every kernel ("no locator available") and every command failed. The kernels
    go to a folder of this user's under the temporary folder instead; a cache that can
    be written stays where it is."""
    import tempfile

    from render.sim import cache

    (tmp_path / "file").write_text("")
    monkeypatch.setattr(cache, "portable_target", lambda: None)
    monkeypatch.delitem(sys.modules, "numba")  # as a fresh process, before numba's import
    name = f"numba-{cache.kernels_digest()}"
    for home, where in ((tmp_path / "file" / "cache",
                         Path(tempfile.gettempdir()) / f"boids-render-{os.getuid()}" / name),
                        (tmp_path / "home", tmp_path / "home" / "boids-render" / name)):
        monkeypatch.setenv("XDG_CACHE_HOME", str(home))
        monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
        cache.use_numba_cache()
        assert Path(os.environ["NUMBA_CACHE_DIR"]) == where
        assert cache.writable(where)


@pytest.mark.parametrize("mode, owner, kept", [(0o700, None, True), (0o777, None, False),
                                              (0o755, None, True), (0o700, 65534, False)])
def test_the_temporary_kernel_folder_is_used_only_if_private(tmp_path, monkeypatch, mode,
                                                             owner, kept):
    """The fallback under a shared temporary folder: one another user could write in was
    used as it was found, and numba's cache index is a pickle (a planted kernel runs)."""
    import stat
    import tempfile

    from render.sim import cache

    (tmp_path / "file").write_text("")
    shared = tmp_path / "tmp"
    shared.mkdir()
    found = shared / f"boids-render-{os.getuid()}"
    found.mkdir()
    found.chmod(mode)
    if owner is not None:  # another user's (nobody's)
        if os.geteuid() != 0:
            pytest.skip("giving a folder to another user needs root")
        os.chown(found, owner, owner)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    monkeypatch.setattr(cache, "portable_target", lambda: None)
    monkeypatch.delitem(sys.modules, "numba")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file" / "cache"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    cache.use_numba_cache()
    where = Path(os.environ["NUMBA_CACHE_DIR"]).parent
    assert (where == found) == kept, where
    assert where.parent == shared and not stat.S_IMODE(where.stat().st_mode) & 0o022
    assert cache.writable(Path(os.environ["NUMBA_CACHE_DIR"]))


def test_an_empty_or_missing_cache_folder_is_cold(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "missing"))
    assert not kernels_cached()
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "empty"))
    assert not kernels_cached()
    (tmp_path / "empty" / "sim_0123").mkdir()
    (tmp_path / "empty" / "sim_0123" / "step.advance_flock-42.py311.nbi").write_bytes(b"")
    assert kernels_cached(2)
    # The 2D kernels leave a 3D scene's to compile (about a minute), and the other way.
    assert not kernels_cached(3)
    (tmp_path / "empty" / "sim_0123" / "step.advance_flock-42.py311.nbi").unlink()
    (tmp_path / "empty" / "sim_0123" / "step3d.topological_step-209.py311.nbi").write_bytes(b"")
    assert kernels_cached(3) and not kernels_cached(2)


def test_settling_starts_its_bar_after_the_first_step(write_scene, monkeypatch):
    """On a first run the first step compiles the kernels: inside the bar, the bar would
    read a minute a step and promise hours."""
    from render.scene import load_scene
    from render.sim import simulate3d

    events = []
    real_advance = simulate3d.Simulation3D.advance

    def advance(self):
        events.append("step")
        return real_advance(self)

    def bar(**kwargs):
        events.append(("bar", kwargs["total"], kwargs["initial"]))
        return progress_bar(**kwargs)

    monkeypatch.setattr(simulate3d.Simulation3D, "advance", advance)
    monkeypatch.setattr(simulate3d, "progress_bar", bar)
    scene = load_scene(write_scene("""
        [scene]
        settle_steps = 5
        [world]
        dimensions = 3
        [flock]
        count = 30
    """))
    simulate3d.Simulation3D(scene, progress=True, cache=False)
    assert events == ["step", ("bar", 5, 1)] + ["step"] * 4


def run_cold(cache: Path, scene: Path, out: Path, *flags: str) -> tuple[str, float]:
    """A 2-frame render in a process whose numba cache is `cache`: (stderr, seconds)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "render", str(scene), "-o", str(out),
                           "--frames", "2", *flags], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stderr, time.monotonic() - start


@pytest.mark.slow
def test_a_cold_cache_is_announced_once_before_the_bar(small_scene, tmp_path):
    cache = tmp_path / "cache"
    err, seconds = run_cold(cache, small_scene, tmp_path / "a.npz")
    assert err.count(COMPILING) == 1, err
    assert err.index(f"boids-render: {COMPILING}\n") < err.index("0/2")
    # The bar's elapsed time is the two frames', not the compilation's.
    minutes, secs = map(int, re.findall(r"2/2 \[(\d+):(\d+)<", err)[-1])
    assert 60 * minutes + secs < seconds / 2, (err, seconds)
    assert any(cache.rglob("*.nbi"))
    err, _ = run_cold(cache, small_scene, tmp_path / "b.npz")
    assert COMPILING not in err, err
    assert "2/2" in err  # the bar is there: only the note is gone


@pytest.mark.slow
def test_quiet_compiles_without_a_word(small_scene, tmp_path):
    cache = tmp_path / "cache"
    err, _ = run_cold(cache, small_scene, tmp_path / "a.npz", "--quiet")
    assert err == ""
    assert any(cache.rglob("*.nbi"))  # it was cold, and compiled


@pytest.mark.slow
def test_a_loop_on_a_cold_cache_is_announced_before_its_search(small_scene, tmp_path):
    """A --loop render compiles the kernels in the search for its start, before any
    frame: the note comes first, once."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "render", str(small_scene), "-o",
                           str(tmp_path / "a.mp4"), "--loop", "--duration", "1",
                           "--crossfade", "0.3"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert err.count(COMPILING) == 1, err
    assert err.index(f"boids-render: {COMPILING}\n") < err.index("searching the loop's start")


def test_kernels_of_other_sources_unused_for_a_month_go_at_a_new_version(tmp_path,
                                                                        monkeypatch):
    from render.sim import cache

    root = tmp_path / "boids-render"
    month = time.time() - 31 * 86400
    for name, when in (("numba-old", month), ("numba-recent", time.time() - 86400),
                       ("numba-mixed", month)):
        (root / name / "sim").mkdir(parents=True)
        for leaf in ("a.nbi", "a.nbc"):
            (root / name / "sim" / leaf).write_bytes(b"")
            os.utime(root / name / "sim" / leaf, (when, when))
    os.utime(root / "numba-mixed" / "sim" / "a.nbc")  # read today
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(cache, "portable_target", lambda: None)
    monkeypatch.delitem(sys.modules, "numba")  # as a fresh process, before numba's import
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "elsewhere"))
    cache.use_numba_cache()  # a folder of its own: the user's cache is not touched
    assert sorted(p.name for p in root.iterdir()) == ["numba-mixed", "numba-old",
                                                      "numba-recent"]
    monkeypatch.delenv("NUMBA_CACHE_DIR")
    cache.use_numba_cache()  # this version's first run: its folder made, ready to write
    assert sorted(p.name for p in root.iterdir()) == sorted(
        ["numba-mixed", "numba-recent", f"numba-{cache.kernels_digest()}"])


def test_the_settled_states_used_last_are_kept_up_to_a_size(tmp_path):
    from render.sim import settled

    now = time.time()
    for age, name in enumerate("abcde"):  # a is the newest
        (tmp_path / f"{name}.npz").write_bytes(b"x" * 100)
        os.utime(tmp_path / f"{name}.npz", (now - age, now - age))
    settled.prune(tmp_path, keep_bytes=250)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.npz", "b.npz"]
    settled.prune(tmp_path, keep_bytes=10)  # the newest stays, whatever its size
    assert [p.name for p in tmp_path.iterdir()] == ["a.npz"]


def test_a_damaged_kernel_cache_is_named_with_what_to_do(cli, small_scene, tmp_path):
    """Kernel files cut short (a full disk, a copy interrupted): numba's unpickling error
    read "internal error … this is a bug" on every run. The render names the folder and
    says to delete it."""
    assert cli(small_scene, "-o", tmp_path / "warm.mp4", "--frames", "1", "-q").code == 0
    damaged = tmp_path / "cache"
    shutil.copytree(os.environ["NUMBA_CACHE_DIR"], damaged)
    cut = [p for p in damaged.rglob("*.nbc")]
    assert cut  # the 2D kernels are there, compiled
    for p in cut:
        p.write_bytes(p.read_bytes()[:10])
    proc = subprocess.run([sys.executable, "-m", "render", str(small_scene), "-o",
                           str(tmp_path / "x.mp4"), "--frames", "1", "-q"],
                          env={**os.environ, "NUMBA_CACHE_DIR": str(damaged)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"boids-render: the compiled kernels' cache in {damaged} "
                                  f"is damaged ("), proc.stderr
    assert proc.stderr.rstrip().endswith("delete that folder, and the kernels are compiled "
                                         "again") and len(proc.stderr.splitlines()) == 1
