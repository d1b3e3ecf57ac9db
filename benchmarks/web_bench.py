"""The web preset (`--quality web`) against plain x264: size and VMAF of each of its two
clips and of x264 crf 23 preset slow, all encoding the same frames of the plate at
the preset's size and rate, each scored against those frames losslessly (the PNG
sequence) with ffmpeg's libvmaf, model vmaf_v0.6.1.

The preset's promise: each clip at least 10% smaller than plain x264 at a VMAF no more
than 0.5 below it.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

from export_bench import CLI, ROOT, SCENE
from figures import result

# The preset's size and rate (render.options.QUALITY["web"]); 6 s as measured for the docs.
SIZE, FPS, SECONDS = "1280x720", 30, 6
# x264 as it is usually run: the reference the preset must beat.
PLAIN_X264 = ["-c:v", "libx264", "-preset", "slow", "-crf", "23", "-pix_fmt", "yuv420p"]


def vmaf(distorted: Path, reference: str, fps: int) -> float:
    """Mean VMAF (vmaf_v0.6.1) of the clip `distorted` against the PNG frames `reference`
    (a %05d pattern), both as BT.709 limited-range 10-bit 4:2:0 so neither is rounded."""
    from render.encode.video import ffmpeg_exe
    from render.encode.web import BT709_SCALE

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "vmaf.json"
        graph = (f"[0:v]format=yuv420p10le,setpts=PTS-STARTPTS[d];"
                 f"[1:v]{BT709_SCALE},format=yuv420p10le,setpts=PTS-STARTPTS[r];"
                 f"[d][r]libvmaf=model=version=vmaf_v0.6.1:n_threads=2:log_fmt=json:"
                 f"log_path={log}")
        subprocess.run([ffmpeg_exe(), "-loglevel", "error", "-i", str(distorted),
                        "-framerate", str(fps), "-i", reference, "-lavfi", graph,
                        "-f", "null", "-"], check=True)
        return json.loads(log.read_text())["pooled_metrics"]["vmaf"]["mean"]


def _plain_x264(reference: str, out: Path, fps: int) -> None:
    """The PNG frames `reference` as plain x264 would make them (BT.709, +faststart)."""
    from render.encode.video import ffmpeg_exe
    from render.encode.web import BT709_SCALE

    subprocess.run([ffmpeg_exe(), "-y", "-loglevel", "error", "-framerate", str(fps),
                    "-i", reference, "-vf", BT709_SCALE, *PLAIN_X264, "-movflags",
                    "+faststart", str(out)], check=True)


def web_vs_x264(quick: bool = False) -> list[dict]:
    """Size (MB) and VMAF of the preset's NAME.mp4 and NAME.av1.mp4 and of plain x264, on
    the same frames; the preset's wall time for its four files."""
    size, seconds = ("320x180", 1) if quick else (SIZE, SECONDS)
    common = [str(SCENE), "--size", size, "--fps", str(FPS), "--duration", str(seconds), "-q"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # The preset's frames exactly: it draws without motion blur.
        subprocess.run([*CLI, *common, "--set", "render.motion_blur=1", "-o",
                        f"{tmp / 'frames'}/"], check=True, cwd=ROOT)
        reference = str(tmp / "frames" / "frame_%05d.png")
        start = time.perf_counter()
        subprocess.run([*CLI, *common, "--quality", "web", "-o", str(tmp / "hero.mp4")],
                       check=True, cwd=ROOT)
        wall = time.perf_counter() - start
        _plain_x264(reference, tmp / "x264.mp4", FPS)
        clips = {"plain x264 crf 23 preset slow": tmp / "x264.mp4",
                 "--quality web, H.264 (NAME.mp4)": tmp / "hero.mp4",
                 "--quality web, AV1 (NAME.av1.mp4)": tmp / "hero.av1.mp4"}
        scores = {name: (path.stat().st_size / 1e6, vmaf(path, reference, FPS))
                  for name, path in clips.items()}
    label = f"{seconds} s of the plate, {size} at {FPS} fps"
    (plain_mb, plain_vmaf), *_ = scores.values()
    rows = [result(f"plain x264 crf 23 preset slow, {label}: size", plain_mb, "MB"),
            result(f"plain x264 crf 23 preset slow, {label}: VMAF", plain_vmaf, "")]
    for name, (mb, score) in list(scores.items())[1:]:
        rows += [result(f"{name}, {label}: size", mb, "MB", reference=plain_mb,
                        target="≤ 0.9× plain x264's"),
                 result(f"{name}, {label}: VMAF", score, "", reference=plain_vmaf,
                        ratio=score - plain_vmaf, compared=" points (difference)",
                        target="≥ −0.5 points")]
    rows.append(result(f"--quality web render of the four files, {label}, wall", wall, "s"))
    return rows
