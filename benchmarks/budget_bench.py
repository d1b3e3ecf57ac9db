"""The estimate `--check` prints against the render it estimates: the film (20 s clip,
the same with --stats, a still at 20 s, a 6 s loop), flock3d.toml's clip and the plate's
clip and PNG frames, each rendered by the console script with its flock settled from
nothing (a settled-state cache of its own, the kernels already compiled), and the
estimate read from `--check` with the same options. The estimate adds up simulation,
drawing and encoding, which overlap, so a render should take less than it says, but not
much less: render.budget rounds up."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time

import render.sim  # noqa: F401  # sets NUMBA_CACHE_DIR: the renders share its kernels
from export_bench import CLI, ROOT, SCENE, SCENE3D
from figures import result

FILM = ROOT / "scenes" / "murmuration.toml"
UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0, "days": 86400.0}


def cases(quick: bool) -> list[tuple[str, object, list[str], str]]:
    """(what, scene, options, output name) of each render measured."""
    if quick:
        toy3d = ["--set", "flock.count=500", "--set", "scene.settle_steps=100",
                 "--size", "320x180"]
        return [("the film, 500 birds, 0.5 s", FILM, toy3d + ["--duration", "0.5"],
                 "clip.mp4"),
                ("the plate, 0.5 s at 320x180", SCENE, ["--duration", "0.5", "--size",
                                                        "320x180"], "clip.mp4")]
    return [("the film, a 20 s clip (20,000 birds, 1280x720)", FILM, ["--duration", "20"],
             "clip.mp4"),
            ("the film, the same with --stats", FILM,
             ["--duration", "20", "--stats", "{dir}/stats.csv"], "clip.mp4"),
            ("the film, a still at 20 s", FILM, ["--still", "20"], "still.png"),
            ("the film, a 6 s --loop (tracking camera)", FILM,
             ["--duration", "6", "--loop", "--set", "camera.follow=track"], "loop.webm"),
            ("flock3d.toml, its 30 s clip (5,000 birds)", SCENE3D, [], "clip.mp4"),
            ("the plate, its 10 s clip (1920x1080, 60 fps)", SCENE, [], "clip.mp4"),
            ("the plate, 2 s as PNG frames", SCENE, ["--duration", "2"], "frames/")]


def estimated(scene, options: list[str], out: str, env: dict[str, str]) -> float:
    """The seconds `--check` says the render will take, under `env` (its cache of settled
    states decides whether the settling is counted)."""
    text = subprocess.run([*CLI, str(scene), "--check", "-o", out, *options], check=True,
                          capture_output=True, text=True, env=env).stdout
    found = re.search(r"# estimate to .*? and ([\d.e+]+) (s|min|h|days)( \(.*\))?$", text,
                      re.M)
    assert found, text
    return float(found.group(1)) * UNITS[found.group(2)]


def budget_vs_render(quick: bool = False) -> list[dict]:
    """Each case's measured wall time against its estimate (one run each: a render of
    tens of seconds, settled from nothing, is what the estimate is for)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n, (what, scene, options, name) in enumerate(cases(quick)):
            # Settled from nothing, as on a first render: a settled-state cache of its own
            # (the user cache folder moved), the kernels compiled where they already are.
            env = {**os.environ, "XDG_CACHE_HOME": f"{tmp}/cache{n}",
                   "NUMBA_CACHE_DIR": os.environ["NUMBA_CACHE_DIR"]}
            out = f"{tmp}/{n}/{name}"
            options = [o.replace("{dir}", f"{tmp}/{n}") for o in options]
            guess = estimated(scene, options, out, env)
            start = time.perf_counter()
            subprocess.run([*CLI, str(scene), "-o", out, "-q", *options], check=True,
                           capture_output=True, env=env)
            took = time.perf_counter() - start
            rows.append(result(f"--check's estimate against the render: {what}", guess, "s",
                               reference=took, target="≥ 1× and ≤ 2×: rounded up, not far"))
    return rows
