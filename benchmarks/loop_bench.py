"""A loop's cost: 6 s of the plate at 1280x720, 30 fps, as a WebM with `--loop`
against the same clip without it (the start search, the pairing, the measures on every
frame at full resolution). The promise (docs/loops.md): at most 1.5× the plain clip."""

from __future__ import annotations

import subprocess
import tempfile
import time

from export_bench import CLI, SCENE
from figures import result

SIZE, FPS, SECONDS, SETTLE = "1280x720", 30, 6, 300


def _seconds(extra: list[str], out: str, size: str, seconds: float) -> float:
    start = time.perf_counter()
    subprocess.run([*CLI, str(SCENE), "-o", out, "--size", size, "--fps", str(FPS),
                    "--duration", str(seconds), "--set", f"scene.settle_steps={SETTLE}", "-q",
                    *extra], check=True, capture_output=True)
    return time.perf_counter() - start


def loop_vs_plain(quick: bool = False) -> list[dict]:
    """Wall time of the loop and of the plain clip, each the median of 3 (1 when quick),
    run alternately so both see the same load."""
    size, seconds, runs = ("320x180", 2, 1) if quick else (SIZE, SECONDS, 3)
    loops, plains = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(runs):
            plains.append(_seconds([], f"{tmp}/plain.webm", size, seconds))
            loops.append(_seconds(["--loop"], f"{tmp}/loop.webm", size, seconds))
    loops.sort()
    plains.sort()
    loop, plain = loops[len(loops) // 2], plains[len(plains) // 2]
    return [result(f"a {seconds} s {size} loop (WebM, --loop) against the plain clip", loop,
                   "s", reference=plain, target="≤ 1.5×")]
