"""Every clip format read back: codec, pixel format, size, frame count, frame rate."""

from __future__ import annotations

import re
import subprocess

import imageio_ffmpeg
import pytest

FORMATS = {  # suffix: (codec, pixel format as ffmpeg reports it, colour tags)
    ".mp4": ("h264", "yuv420p", "bt709"),
    ".webm": ("vp9", "yuv420p", "bt709"),
    ".mov": ("prores", "yuv444p12le", "bt709"),  # ProRes 4444 decodes as 12-bit
    ".gif": ("gif", "bgra", None),
}


def stream(path) -> str:
    proc = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", str(path)],
                          capture_output=True, text=True)
    return next(line for line in proc.stderr.splitlines() if "Video:" in line)


@pytest.mark.parametrize("suffix", list(FORMATS))
def test_clip_format_reads_back_as_asked(cli, small_scene, tmp_path, suffix):
    out = tmp_path / f"clip{suffix}"
    r = cli(small_scene, "-o", out, "--size", "160x90", "--fps", "25", "--frames", "10",
            "--quiet")
    assert r.code == 0, r.err
    codec, pix_fmt, tags = FORMATS[suffix]
    info = stream(out)
    assert f"Video: {codec}" in info
    assert re.search(rf"\b{pix_fmt}\b", info), info
    assert "160x90" in info and re.search(r"\b25 fps", info), info
    if tags:
        assert f"(tv, {tags}, progressive)" in info or f"(tv, {tags})" in info, info
    assert imageio_ffmpeg.count_frames_and_secs(str(out))[0] == 10
    assert not list(tmp_path.glob(".*partial*"))


def test_gif_refuses_rates_its_delays_cannot_play(cli, small_scene, tmp_path):
    for fps in ("30", "60"):
        r = cli(small_scene, "-o", tmp_path / "x.gif", "--fps", fps, "--frames", "3")
        assert r.code == 2 and "hundredths" in r.err
    assert not (tmp_path / "x.gif").exists()


def test_gif_takes_odd_sizes_and_webm_does_not(cli, small_scene, tmp_path):
    assert cli(small_scene, "-o", tmp_path / "x.gif", "--size", "161x91", "--fps", "25",
               "--frames", "3", "--quiet").code == 0
    r = cli(small_scene, "-o", tmp_path / "x.webm", "--size", "161x91", "--frames", "3")
    assert r.code == 2 and "even" in r.err


def test_a_frame_range_renders_the_same_frames_as_the_full_clip(cli, small_scene, tmp_path):
    assert cli(small_scene, "-o", f"{tmp_path}/all/", "--frames", "9", "--quiet").code == 0
    r = cli(small_scene, "-o", f"{tmp_path}/part/", "--frames", "6:9", "--quiet")
    assert r.code == 0, r.err
    part = sorted(p.name for p in (tmp_path / "part").glob("*.png"))
    assert part == ["frame_00006.png", "frame_00007.png", "frame_00008.png"]
    for name in part:
        assert (tmp_path / "part" / name).read_bytes() == (tmp_path / "all" / name).read_bytes()
    clip = tmp_path / "part.mp4"
    assert cli(small_scene, "-o", clip, "--frames", "6:9", "--quiet").code == 0
    assert imageio_ffmpeg.count_frames_and_secs(str(clip))[0] == 3


@pytest.mark.parametrize("bad", ["9:6", "3:3", "a:5", "-1:4"])
def test_a_frame_range_must_run_forwards(cli, small_scene, tmp_path, bad):
    r = cli(small_scene, "-o", f"{tmp_path}/x/", f"--frames={bad}")
    assert r.code == 2 and "--frames" in r.err
