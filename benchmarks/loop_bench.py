"""A loop's cost: 6 s of the plate at 1280x720, 30 fps, as a WebM with `--loop`
against the same clip without it (the start search, the pairing, the measures on every
frame at full resolution); and the same for 6 s of the 3D film at 5,000 birds under a
tracking camera (docs/loops.md's web recipe). The promise (docs/loops.md): at most 1.5×
the plain clip."""

from __future__ import annotations

import subprocess
import tempfile
import time

from export_bench import CLI, ROOT, SCENE
from figures import result

SIZE, FPS, SECONDS, SETTLE = "1280x720", 30, 6, 300
FILM, FILM_BIRDS = ROOT / "scenes" / "murmuration.toml", 5_000


def _seconds(scene, extra: list[str], out: str, size: str, seconds: float) -> float:
    start = time.perf_counter()
    subprocess.run([*CLI, str(scene), "-o", out, "--size", size, "--fps", str(FPS),
                    "--duration", str(seconds), "-q", *extra], check=True,
                   capture_output=True)
    return time.perf_counter() - start


def loop_vs_plain(quick: bool = False) -> list[dict]:
    """Wall time of the loop and of the plain clip, each the median of 3 (1 when quick),
    run alternately so both see the same load: the plate, and the 3D film (its flock
    settled into the cache first, untimed)."""
    size, seconds, runs = ("320x180", 2, 1) if quick else (SIZE, SECONDS, 3)
    plate = ["--set", f"scene.settle_steps={SETTLE}"]
    birds = 1_000 if quick else FILM_BIRDS
    film = ["--set", f"flock.count={birds}", "--set", "camera.follow=track"] + \
        (["--set", "scene.settle_steps=300"] if quick else [])
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        _seconds(FILM, film, f"{tmp}/settle.webm", size, 1 / FPS)
        film_name = f"3D loop of the film ({birds:,} birds, tracking camera)"
        for scene, sets, name in ((SCENE, plate, "loop"), (FILM, film, film_name)):
            loops, plains = [], []
            for _ in range(runs):
                plains.append(_seconds(scene, sets, f"{tmp}/plain.webm", size, seconds))
                loops.append(_seconds(scene, sets + ["--loop"], f"{tmp}/loop.webm", size,
                                      seconds))
            loop, plain = sorted(loops)[len(loops) // 2], sorted(plains)[len(plains) // 2]
            rows.append(result(f"a {seconds} s {size} {name} (WebM, --loop) against the "
                               f"plain clip", loop, "s", reference=plain, target="≤ 1.5×"))
    return rows
