"""What the shipped scenes draw and measure, pinned: the decoded pixels of frames and stills
and the `--stats` values (to nine significant figures: a flock's axes and polarisation go
through numpy's linear algebra, whose OpenBLAS kernels differ by processor in the last
bits), hashed and compared with tests/golden/baseline.json.

A change that alters an output on purpose says so and rewrites the baseline in the same
commit: `BOIDS_GOLDEN_RECORD=1 pytest tests/test_golden.py` (then review the diff of the
JSON: only the cases meant to change may differ). File bytes are not compared where they
carry metadata (a still embeds the resolved scene and the version); pixels and figures are.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import imageio_ffmpeg
import pytest
from PIL import Image

from conftest import SCENES, SMALLER

pytestmark = pytest.mark.slow

BASELINE = Path(__file__).resolve().parent / "golden" / "baseline.json"
RECORD = os.environ.get("BOIDS_GOLDEN_RECORD") == "1"
SHIPPED = sorted(p.stem for p in SCENES.glob("*.toml"))


def decoded(pngs: list[Path]) -> list[str]:
    """sha256 of each PNG's pixels, decoded by ffmpeg to 16-bit RGBA (exact for 8- and
    16-bit files alike), with the size in the hash so a resize cannot pass."""
    hashes = []
    for png in pngs:
        out = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(png),
                              "-f", "rawvideo", "-pix_fmt", "rgba64le", "-"],
                             capture_output=True, check=True).stdout
        with Image.open(png) as image:
            size = "x".join(map(str, image.size))
        hashes.append(f"{size}:{hashlib.sha256(out).hexdigest()[:24]}")
    return hashes


def frames_in(folder: Path) -> list[Path]:
    found = sorted(folder.glob("*.png"))
    assert found, f"no frames in {folder}"
    return found


def compare(case: str, value) -> None:
    baseline = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    if RECORD:
        baseline[case] = value
        BASELINE.parent.mkdir(exist_ok=True)
        BASELINE.write_text(json.dumps(baseline, indent=1, sort_keys=True) + "\n")
        return
    assert case in baseline, f"{case}: not in {BASELINE.name} (record it)"
    assert value == baseline[case], f"{case}: differs from the golden baseline"


# Two sizes a scene, over a stretch of the clip that is not its start (the hawk, the
# camera and the steering field have moved by then): the same picture at two resolutions.
@pytest.mark.parametrize("size,frames", [("320x180", "0:3"), ("854x480", "150:153")])
@pytest.mark.parametrize("name", SHIPPED)
def test_png_frames_of_every_shipped_scene(cli, tmp_path, name, size, frames):
    out = tmp_path / "frames"
    r = cli(SCENES / f"{name}.toml", "-o", f"{out}/", "--size", size, "--frames", frames,
            "--quiet", *SMALLER.get(name, ()))
    assert r.code == 0, r.err
    compare(f"frames/{name}/{size}/{frames}", decoded(frames_in(out)))


@pytest.mark.parametrize("extra", [(), ("--transparent",), ("--motion-blur", "4"),
                                   ("--set", "palette.theme=dark")])
def test_plate_frames_in_each_drawing_mode(cli, tmp_path, extra):
    out = tmp_path / "frames"
    r = cli(SCENES / "plate.toml", "-o", f"{out}/", "--size", "480x270", "--frames",
            "60:62", "--quiet", *extra)
    assert r.code == 0, r.err
    compare(f"modes/{' '.join(extra) or 'plain'}", decoded(frames_in(out)))


@pytest.mark.parametrize("extra", [(), ("--bit-depth", "16"), ("--tile-size", "256"),
                                   ("--transparent",)])
def test_stills(cli, tmp_path, extra):
    out = tmp_path / "still.png"
    r = cli(SCENES / "plate.toml", "--still", "2.5", "-o", out, "--size", "960x540",
            *extra)
    assert r.code == 0, r.err
    compare(f"still/{' '.join(extra) or 'plain'}", decoded([out]))


def test_loop_frames(cli, tmp_path):
    out = tmp_path / "loop"
    r = cli(SCENES / "plate.toml", "-o", f"{out}/", "--size", "320x180", "--duration",
            "1.5", "--loop", "--crossfade", "0.5", "--quiet")
    assert r.code == 0, r.err
    compare("loop/plate", decoded(frames_in(out)))


def test_render_on_a_local_cluster(cli, tmp_path):
    out = tmp_path / "cluster"
    r = cli(SCENES / "classic.toml", "-o", f"{out}/", "--size", "320x180", "--frames", "12",
            "--scheduler", "local", "--workers", "2", "--quiet")
    assert r.code == 0, r.err
    compare("cluster/classic", decoded(frames_in(out)))


@pytest.mark.parametrize("name", SHIPPED)
def test_stats(cli, tmp_path, name):
    out = tmp_path / "stats.csv"
    r = cli(SCENES / f"{name}.toml", "--stats", out, "--frames", "200", "--quiet",
            *SMALLER.get(name, ()))
    assert r.code == 0, r.err
    rows = out.read_text().splitlines()
    figures = "\n".join(",".join(_figure(cell) for cell in row.split(",")) for row in rows)
    compare(f"stats/{name}", [len(rows), hashlib.sha256(figures.encode()).hexdigest()])


def _figure(cell: str) -> str:
    """A number to nine significant figures (a text cell as it is)."""
    try:
        return f"{float(cell):.9g}"
    except ValueError:
        return cell


def test_frame_counts(cli, tmp_path):
    counts = {}
    for name in SHIPPED:
        r = cli(SCENES / f"{name}.toml", "--check")
        assert r.code == 0, r.err
        counts[name] = r.out.splitlines()[0].split(": ", 1)[1]  # "N birds, M frames"
    compare("frame-counts", counts)


def test_an_mp4_clip(cli, tmp_path):
    out = tmp_path / "clip.mp4"
    r = cli(SCENES / "plate.toml", "-o", out, "--size", "320x180", "--frames", "12",
            "--quiet")
    assert r.code == 0, r.err
    pixels = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(out),
                             "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                            capture_output=True, check=True).stdout
    compare("clip/plate.mp4", [len(pixels) // (320 * 180 * 3),
                               hashlib.sha256(pixels).hexdigest()[:24]])
