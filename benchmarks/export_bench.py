"""Whole-program figures: a full export (2D and 3D) against ffmpeg alone, peak memory, a
poster drawn in tiles, start-up.

Each function returns a list of result dicts {figure, value, unit, reference, ratio,
target}; `quick` shrinks every figure to a few seconds.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from environment import setenv
from figures import result

ROOT = Path(__file__).resolve().parents[1]
SCENE = ROOT / "scenes" / "plate.toml"
SCENE3D = ROOT / "scenes" / "flock3d.toml"
CLI = [sys.executable, "-m", "render"]


def _timed(cmd: list[str], **kw) -> float:
    return _timed_cpu(cmd, **kw)[0]


def _children_seconds() -> float:
    """CPU seconds of the children this process has waited for, and of theirs (the
    export's ffmpeg)."""
    t = os.times()
    return t.children_user + t.children_system


def _timed_cpu(cmd: list[str], **kw) -> tuple[float, float]:
    """Wall and CPU seconds of `cmd`, the CPU counting the children it waits for."""
    cpu, start = _children_seconds(), time.perf_counter()
    # From the checkout's root, `-m render` runs this checkout, not an installed one.
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   cwd=ROOT, **kw)
    return time.perf_counter() - start, _children_seconds() - cpu


def _raw_frames(path: Path, scene, frames: int) -> dict:
    """The scene's first `frames` frames as raw BGRA, drawn by boids-render (not timed
    against ffmpeg). Returns what that took: "simulating" and "drawing", CPU ms per frame
    (all threads) of the simulation and of the drawing; "first", frame 0's state."""
    from render.draw.surface import Canvas
    from render.states import simulated

    states = iter(simulated(scene, 0, frames))
    took = {"simulating": 0.0, "drawing": 0.0}
    canvas = Canvas(scene.output.size)
    with open(path, "wb") as fh:
        for _ in range(frames):
            begun = time.process_time()
            state = next(states)
            simulated_at = time.process_time()
            pixels = state.draw(canvas, scene)
            took["simulating"] += simulated_at - begun
            took["drawing"] += time.process_time() - simulated_at
            fh.write(pixels.tobytes())
            took.setdefault("first", state)
    for key in ("simulating", "drawing"):
        took[key] *= 1e3 / frames
    return took


def _turns(raw: Path, scene, export: list[str], repeats: int, env=None) -> list[tuple]:
    """((wall, CPU) of ffmpeg alone encoding `raw` with the export's settings (crf 18,
    preset medium, yuv420p, BT.709), (wall, CPU) of the `export` command) in turns, after
    one untimed export that warms the JIT cache and the page cache."""
    from render.encode.video import _H264, ffmpeg_exe

    size = "x".join(map(str, scene.output.size))
    encode = [ffmpeg_exe(), "-y", "-loglevel", "error", "-f", "rawvideo", "-pix_fmt", "bgra",
              "-s", size, "-framerate", str(scene.output.fps), "-i", str(raw), "-an", *_H264,
              "-crf", "18", str(raw.with_name("ffmpeg.mp4"))]
    _timed(export, env=env)
    # In turns, and the ratio from each turn's pair: a busy spell of the host then
    # slows both sides of a pair, instead of all of one side.
    return [(_timed_cpu(encode), _timed_cpu(export, env=env)) for _ in range(repeats)]


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)


def export_vs_ffmpeg(quick: bool = False, repeats: int = 3) -> list[dict]:
    """Full export of the plate against ffmpeg alone encoding the same frames from raw
    with the same settings, in turns; see `export_rows` for what is reported."""
    from render.scene import load_scene

    size, frames = ("480x270", 60) if quick else ("1920x1080", 600)
    repeats = 1 if quick else repeats
    scene = load_scene(SCENE, [("output.size", f'"{size}"', "bench")])
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "frames.bgra"
        _raw_frames(raw, scene, frames)
        export = [*CLI, str(SCENE), "-o", str(Path(tmp) / "export.mp4"), "--size", size,
                  "--frames", str(frames), "--quiet"]
        pairs = _turns(raw, scene, export, repeats)
    return export_rows(pairs, frames, size, _cores())


def export3d_vs_ffmpeg(quick: bool = False, repeats: int = 3) -> list[dict]:
    """Full export of a 20,000-bird scenes/flock3d.toml (its follow camera, dusk sky,
    optics) against ffmpeg alone on the same frames, as `export_vs_ffmpeg`. The flock
    settles once, into an empty cache of settled states: every timed export reads it back
    (settling excluded), and its time is reported beside. A flock that spans less than
    MIN_SPAN of the frame at frame 0 (far, or end-on: every bird cheap) is filmed with the
    field of view narrowed until it spans SPAN."""
    from render.scene import load_scene
    from render.states import simulated

    size, frames, count, settle = (("480x270", 30, 2_000, 300) if quick
                                   else ("1920x1080", 300, 20_000, None))
    repeats = 1 if quick else repeats
    sets = [("flock.count", str(count))] + \
        ([] if settle is None else [("scene.settle_steps", str(settle))])

    def loaded():
        return load_scene(SCENE3D, [("output.size", f'"{size}"', "bench"),
                                    *((k, v, "bench") for k, v in sets)])

    scene = loaded()
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "frames.bgra"
        with setenv(XDG_CACHE_HOME=tmp) as env:  # the settled states' cache, empty
            start = time.perf_counter()
            span = flock_span(next(iter(simulated(scene, 0, 1))))
            settling = time.perf_counter() - start
            if span < MIN_SPAN:
                sets.append(("camera.fov", f"{narrowed(scene.camera.fov, span):.2f}"))
                scene = loaded()
            took = _raw_frames(raw, scene, frames)
        span = flock_span(took["first"])
        export = [*CLI, str(SCENE3D), "-o", str(Path(tmp) / "export.mp4"), "--size", size,
                  "--frames", str(frames), "--quiet",
                  *(a for k, v in sets for a in ("--set", f"{k}={v}"))]
        pairs = _turns(raw, scene, export, repeats, env)
    steps = scene.scene.settle_steps
    name = f"flock3d, {count:,} birds (spanning {span:.0%} of the width, " \
           f"{scene.camera.fov:g}° field of view)"
    return [*export_rows(pairs, frames, size, _cores(), name=name, prefix="3D ",
                         target="≤ 1.6× ffmpeg alone"),
            result(f"3D settling before frame 0, {count:,} birds, {steps:,} steps "
                   f"(excluded above: read back from its cache)", settling, "s"),
            result("3D of the export's own CPU per frame: the simulation's, in process",
                   took["simulating"], "ms"),
            result("3D of the export's own CPU per frame: the drawing's (sky, streaks, "
                   "optics), in process", took["drawing"], "ms")]


# The share of the frame's width a benchmark's flock must span (issue 19: a third; a far
# camera that makes every bird cheap does not count), and what a narrowed view gives it.
MIN_SPAN, SPAN = 1 / 3, 0.45


def narrowed(fov_deg: float, span: float) -> float:
    """The field of view (degrees) in which what spans `span` of the frame at `fov_deg`
    spans SPAN: the picture scales with 1/tan(fov/2)."""
    return math.degrees(2 * math.atan(math.tan(math.radians(fov_deg) / 2) * span / SPAN))


def flock_span(state) -> float:
    """The share of the frame's width the middle 95% of a 3D state's birds span."""
    import numpy as np

    pose = state.pose
    rel = state.positions - pose.position
    ahead = rel @ pose.forward > pose.near
    u = pose.focal * (rel[ahead] @ pose.right) / (rel[ahead] @ pose.forward)
    lo, hi = np.percentile(u, [2.5, 97.5])
    return float(hi - lo) / pose.width


def export_rows(pairs, frames: int, size: str, cores: int, *, name: str = "plate",
                prefix: str = "", target: str = "≤ 1.15× ffmpeg alone") -> list[dict]:
    """The export's figures from turns of ((wall, CPU) of ffmpeg alone, (wall, CPU) of the
    export), seconds: medians of each side, and the median of each turn's export ÷ ffmpeg
    alone as the ratio; figures named after the scene `name`, each after `prefix`.

    And what bounds that ratio on this machine: no run finishes before its CPU time spread
    over all `cores`, so the export's CPU ÷ cores, against ffmpeg alone's wall time, is the
    lowest ratio its work allows (its floor, never above the ratio itself); the CPU the
    export adds to encoding alone, per frame, is what drawing, simulating and handing
    frames over cost beside x264."""
    alone = statistics.median(a for (a, _), _ in pairs)
    alone_cpu = statistics.median(c for (_, c), _ in pairs)
    full = statistics.median(f for _, (f, _) in pairs)
    full_cpu = statistics.median(c for _, (_, c) in pairs)
    ratio = statistics.median(f / a for (a, _), (f, _) in pairs)
    floor = statistics.median(c / cores / a for (a, _), (_, c) in pairs)
    added = statistics.median(1e3 * (c - ac) / frames for (_, ac), (_, c) in pairs)
    label = f"{prefix}full export, {name}, {frames} frames, {size}, crf 18 medium"
    return [result(f"{prefix}ffmpeg alone, same {frames} frames from raw", alone, "s"),
            result(label, full, "s", reference=alone, target=target, ratio=ratio),
            result(f"{prefix}ffmpeg alone, CPU ({alone_cpu / alone:.2f} of {cores} cores "
                   f"busy)", alone_cpu, "s"),
            result(f"{prefix}full export, CPU of boids-render and its ffmpeg", full_cpu, "s",
                   reference=alone_cpu),
            result(f"{prefix}CPU the export adds to encoding alone, per frame", added, "ms"),
            result(f"{prefix}full export's floor: its CPU ÷ {cores} cores, against ffmpeg "
                   f"alone", full_cpu / cores, "s", reference=alone, ratio=floor,
                   target="the lowest ratio its work allows here")]


def pipe_hand_off(quick: bool = False) -> list[dict]:
    """CPU time per frame handed to ffmpeg through its stdin pipe (ffmpeg reads raw BGRA and
    discards it), the writing thread's and ffmpeg's, in alternating rounds: as
    `VideoWriter` hands frames over (pages lent by vmsplice, the last pipe's worth copied,
    through the enlarged pipe), copied whole through the enlarged pipe, and copied whole
    through the kernel's default 64 KiB pipe."""
    import numpy as np

    from render.encode.pipe import PIPE_BYTES, grow_pipe, hand_over
    from render.encode.video import ffmpeg_exe

    (width, height), frames, rounds = (((480, 270), 20, 3) if quick
                                       else ((1920, 1080), 150, 7))
    pixels = np.random.default_rng(0).integers(0, 256, (height, width, 4), np.uint8)
    cmd = [ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-f", "rawvideo",
           "-pix_fmt", "bgra", "-s", f"{width}x{height}", "-i", "pipe:0", "-f", "null", "-"]

    def hand_off(way: str) -> tuple[float, float]:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
        capacity = grow_pipe(proc.stdin) if way != "default" else 0
        fd = proc.stdin.fileno()
        start = time.thread_time()
        for _ in range(frames):
            hand_over(fd, pixels, capacity if way == "lent" else 0)
        proc.stdin.close()
        spent = time.thread_time() - start
        before = _children_seconds()
        if proc.wait() != 0:
            raise RuntimeError(f"{cmd} failed with {proc.returncode}")
        reader = _children_seconds() - before
        return spent * 1e3 / frames, reader * 1e3 / frames

    ways = {"lent": [], "copied": [], "default": []}
    for _ in range(rounds):
        for way, times in ways.items():
            times.append(hand_off(way))
    writer = {way: statistics.median(w for w, _ in t) for way, t in ways.items()}
    reader = {way: statistics.median(r for _, r in t) for way, t in ways.items()}
    label = f"frame hand-off into ffmpeg's pipe, {width}x{height}"
    kib = PIPE_BYTES >> 10
    return [result(f"{label}, writer's CPU, lent and copied as VideoWriter does, {kib} KiB "
                   f"pipe", writer["lent"], "ms", reference=writer["default"]),
            result(f"{label}, writer's CPU, copied whole, {kib} KiB pipe", writer["copied"],
                   "ms", reference=writer["default"]),
            result(f"{label}, writer's CPU, copied whole, the default 64 KiB pipe",
                   writer["default"], "ms"),
            result(f"{label}, ffmpeg's CPU reading it, lent and copied", reader["lent"], "ms",
                   reference=reader["default"]),
            result(f"{label}, ffmpeg's CPU reading it, copied whole, {kib} KiB pipe",
                   reader["copied"], "ms", reference=reader["default"]),
            result(f"{label}, ffmpeg's CPU reading it, the default 64 KiB pipe",
                   reader["default"], "ms")]


def _peak_rss(cmd: list[str]) -> tuple[float, float]:
    """Run `cmd`; return the peak resident memory (MiB) of its own process and of its
    largest child (the encoder), read from /proc while it runs."""
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peaks = {"self": 0.0, "child": 0.0}

    def hwm(pid: int) -> float:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def children(pid: int) -> list[int]:
        out = []
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                out += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
        return out

    def watch():
        while proc.poll() is None:
            peaks["self"] = max(peaks["self"], hwm(proc.pid))
            for child in children(proc.pid):
                peaks["child"] = max(peaks["child"], hwm(child))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    proc.wait()
    watcher.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed with {proc.returncode}")
    return peaks["self"], peaks["child"]


def peak_memory(quick: bool = False) -> list[dict]:
    """Peak memory of a 3840x2160 export, and whether it grows with the clip's length
    (600 against 3,000 frames at 1920x1080, which shows the same thing in a quarter of the
    time)."""
    big, small = ("960x540", "480x270") if quick else ("3840x2160", "1920x1080")
    short, long = (10, 50) if quick else (600, 3000)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        base = [*CLI, str(SCENE), "-o", str(Path(tmp) / "m.mp4"), "--quiet"]
        own_big, enc_big = _peak_rss([*base, "--size", big, "--frames", str(short)])
        own_short, _ = _peak_rss([*base, "--size", small, "--frames", str(short)])
        own_long, _ = _peak_rss([*base, "--size", small, "--frames", str(long)])
    results.append(result(f"peak memory, boids-render, {big}, {short} frames", own_big,
                          "MiB", target="≤ 1024 MiB"))
    results.append(result(f"peak memory, encoder (ffmpeg), {big}, {short} frames", enc_big,
                          "MiB"))
    results.append(result(f"peak memory, boids-render, {small}, {short} frames", own_short,
                          "MiB"))
    results.append(result(f"peak memory, boids-render, {small}, {long} frames", own_long,
                          "MiB", reference=own_short, target="within 10% of the short one"))
    return results


def poster(quick: bool = False) -> list[dict]:
    """A PNG still beyond cairo's 32767 px a side, drawn in tiles and streamed into the file:
    its time, and its peak memory against the same picture at a quarter of the pixels drawn
    whole (memory holds a band of tiles, not the poster)."""
    big, quarter, tile = ("4000x2800", "2000x1400", "512") if quick else \
        ("40000x28000", "20000x14000", "2048")
    with tempfile.TemporaryDirectory() as tmp:
        base = [*CLI, str(SCENE), "--still", "5", "-o", str(Path(tmp) / "poster.png")]
        start = time.perf_counter()
        tiled, _ = _peak_rss([*base, "--size", big, "--tile-size", tile])
        seconds = time.perf_counter() - start
        whole, _ = _peak_rss([*base, "--size", quarter])
    return [result(f"poster {big} in {tile}-px tiles, plate", seconds, "s"),
            result(f"peak memory, poster {big} in {tile}-px tiles", tiled, "MiB",
                   reference=whole, target=f"below {quarter} drawn whole")]


def startup(quick: bool = False, repeats: int = 5) -> list[dict]:
    """`boids-render --help`, and a 1-frame render once the JIT cache is warm."""
    repeats = 3 if quick else repeats
    help_s = statistics.median(_timed([*CLI, "--help"]) for _ in range(repeats))
    with tempfile.TemporaryDirectory() as tmp:
        one = [*CLI, str(SCENE), "-o", os.path.join(tmp, "f_%03d.png"), "--frames", "1",
               "--quiet"]
        _timed(one)
        one_s = statistics.median(_timed(one) for _ in range(repeats))
    return [result("start-up: boids-render --help", help_s, "s", target="≤ 0.5 s"),
            result("start-up: 1-frame render, warm cache", one_s, "s", target="≤ 2 s")]
