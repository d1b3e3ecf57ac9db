"""GIF, animated WebP and APNG read back with Pillow: frame count, each frame's delay and
the total, against the exact times k / fps rounded to each format's unit."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from PIL import Image

# suffix: the unit of its delays, in ticks a second (None: APNG's exact fractions)
UNITS = {".gif": 100, ".webp": 1000, ".apng": None}


def read_back(path) -> tuple[str, list[float], dict, list[np.ndarray]]:
    """Format, each frame's duration (ms, as Pillow reports it), the file's info and the
    frames as RGBA arrays."""
    with Image.open(path) as im:
        durations, frames = [], []
        for k in range(im.n_frames):
            im.seek(k)
            im.load()
            durations.append(im.info["duration"])
            frames.append(np.asarray(im.convert("RGBA")))
        return im.format, durations, dict(im.info), frames


def expected_ms(count: int, fps: Fraction, unit: int | None) -> list[Fraction]:
    """Frame k starts at k / fps s, rounded to the nearest tick: the delays, in ms."""
    if unit is None:
        return [Fraction(1000) / fps] * count
    starts = [math.floor(k * unit / fps + Fraction(1, 2)) for k in range(count + 1)]
    return [Fraction(1000 * (b - a), unit) for a, b in zip(starts, starts[1:])]


@pytest.mark.slow
@pytest.mark.parametrize("suffix", list(UNITS))
@pytest.mark.parametrize("fps, frames", [("24", 31), ("30000/1001", 20), ("50", 7)])
def test_animations_keep_every_frame_for_its_exact_time(cli, small_scene, tmp_path, suffix,
                                                       fps, frames):
    out = tmp_path / f"a{suffix}"
    r = cli(small_scene, "-o", out, "--fps", fps, "--frames", frames, "--quiet")
    assert r.code == 0, r.err
    assert r.err == ""
    fmt, durations, info, _ = read_back(out)
    assert fmt == {".gif": "GIF", ".webp": "WEBP", ".apng": "PNG"}[suffix]
    assert info["loop"] == 0  # forever
    want = expected_ms(frames, Fraction(fps), UNITS[suffix])
    assert len(durations) == frames
    assert durations == pytest.approx([float(d) for d in want], abs=1e-9)
    exact = Fraction(frames * 1000) / Fraction(fps)
    tick = Fraction(1000, UNITS[suffix] or 10**9)
    assert abs(sum(want) - exact) <= tick / 2  # the clip's length, to the unit
    assert not list(tmp_path.glob(".*partial*"))


def test_an_animation_that_is_not_a_loop_says_its_wrap_jumps(cli, small_scene, tmp_path):
    out = tmp_path / "a.webp"
    r = cli(small_scene, "-o", out, "--frames", "12", "--size", "160x90")
    assert r.code == 0 and f"{out} plays in a loop" in r.err and "add --loop" in r.err, r.err
    r = cli(small_scene, "-o", out, "--frames", "12", "--size", "160x90", "--loop",
            "--crossfade", "0.1")
    assert r.code == 0 and "plays in a loop" not in r.err, r.err
    r = cli(small_scene, "-o", tmp_path / "a.mp4", "--frames", "12", "--size", "160x90")
    assert r.code == 0 and "plays in a loop" not in r.err, r.err


def test_a_24_fps_gif_alternates_four_and_five_hundredths(cli, small_scene, tmp_path):
    out = tmp_path / "a.gif"
    assert cli(small_scene, "-o", out, "--fps", "24", "--frames", "24", "--quiet").code == 0
    _, durations, _, _ = read_back(out)
    assert durations[:6] == [40, 40, 50, 40, 40, 40]
    assert sum(durations) == 1000


def test_a_gif_faster_than_50_fps_that_drops_no_frame_says_nothing(cli, small_scene,
                                                                    tmp_path):
    # One frame at 60 fps was told "it shows 1 of the 1 frames".
    r = cli(small_scene, "-o", tmp_path / "one.gif", "--fps", "60", "--frames", "1", "-q")
    assert r.code == 0 and r.err_lines == [], r.err


@pytest.mark.slow
@pytest.mark.parametrize("fps, frames, shown, last_cs", [("60", 10, 8, 3), ("60", 60, 50, 2),
                                                         ("120", 13, 5, 3)])
def test_a_gif_faster_than_50_fps_keeps_the_frames_of_a_50_fps_clock(
        cli, small_scene, tmp_path, fps, frames, shown, last_cs):
    out = tmp_path / "fast.gif"
    r = cli(small_scene, "-o", out, "--fps", fps, "--frames", frames, "--quiet")
    assert r.code == 0, r.err
    assert len(r.err_lines) == 1 and "50 fps" in r.err and f"{shown} of the {frames}" in r.err
    assert "--fps 50 or 25 keeps every frame" in r.err
    _, durations, _, gif = read_back(out)
    assert durations == [20] * (shown - 1) + [last_cs * 10]
    total = Fraction(frames * 1000) / Fraction(fps)
    assert abs(sum(durations) - total) <= 5
    # Each shown frame is the one on screen at its time: frame floor(j · fps / 50).
    full = tmp_path / "all.apng"
    assert cli(small_scene, "-o", full, "--fps", fps, "--frames", frames, "--quiet").code == 0
    _, _, _, every = read_back(full)
    for j, frame in enumerate(gif):
        source = every[math.floor(j * Fraction(fps) / 50)]
        assert np.abs(frame[..., :3].astype(int) - source[..., :3]).mean() < 8


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".webp", ".apng"])
def test_transparent_animations_keep_alpha(cli, small_scene, tmp_path, suffix):
    out = tmp_path / f"t{suffix}"
    r = cli(small_scene, "-o", out, "--frames", "3", "--transparent", "--quiet")
    assert r.code == 0, r.err
    _, durations, _, frames = read_back(out)
    assert len(frames) == 3
    alpha = frames[1][..., 3]
    assert (alpha == 0).mean() > 0.5, "the background is transparent"
    assert (alpha > 200).any(), "the streaks are opaque"
    # Straight alpha, as both formats define it: the same pixels as the PNG frame.
    assert cli(small_scene, "-o", f"{tmp_path}/png/", "--frames", "3", "--transparent",
               "--quiet").code == 0
    with Image.open(tmp_path / "png" / "frame_00001.png") as im:
        png = np.asarray(im).astype(int)
    if suffix == ".apng":  # lossless
        assert (frames[1] == png).all()
    else:  # lossy colour (4:2:0, thin streaks), lossless alpha: compared as composited
        assert (frames[1][..., 3] == png[..., 3]).all()
        covered = png[..., 3] > 0
        seen = frames[1][..., :3] * png[..., 3:] / 255
        assert np.abs(seen - png[..., :3] * png[..., 3:] / 255)[covered].mean() < 8


def test_opaque_animations_are_opaque(cli, small_scene, tmp_path):
    for suffix in (".webp", ".apng"):
        out = tmp_path / f"o{suffix}"
        assert cli(small_scene, "-o", out, "--frames", "2", "--quiet").code == 0
        with Image.open(out) as im:
            assert im.convert("RGBA").getextrema()[3] == (255, 255)


@pytest.mark.slow
def test_a_2d_gif_keeps_its_flat_background_flat(cli, small_scene, tmp_path):
    # The palette holds the background's colour exactly; an ordered dither would still
    # hatch it with the nearest other entry (it did, over a third of the background).
    for suffix in (".gif", ".apng"):
        r = cli(small_scene, "-o", tmp_path / f"a{suffix}", "--frames", "6", "--quiet")
        assert r.code == 0, r.err
    gif, png = (read_back(tmp_path / f"a{suffix}")[3] for suffix in (".gif", ".apng"))
    for seen, lossless in zip(gif, png):
        colours, counts = np.unique(lossless.reshape(-1, 4), axis=0, return_counts=True)
        background = colours[counts.argmax()]
        flat = (lossless == background).all(axis=-1)
        assert flat.mean() > 0.5
        assert (seen[flat] == background).all()
        assert np.abs(seen.astype(int) - lossless).mean() < 1  # the streaks, near enough


def test_a_gif_refuses_transparency(cli, small_scene, tmp_path):
    r = cli(small_scene, "-o", tmp_path / "t.gif", "--transparent", "--frames", "2")
    assert r.code == 2 and "alpha" in r.err and ".webp" in r.err
    assert "only on-or-off transparency" in r.err  # a GIF has that much, said so
    assert not (tmp_path / "t.gif").exists()


def test_a_range_of_frames_starts_its_own_animation(cli, small_scene, tmp_path):
    out = tmp_path / "part.webp"
    r = cli(small_scene, "-o", out, "--fps", "24", "--frames", "5:12", "--quiet")
    assert r.code == 0, r.err
    _, durations, _, _ = read_back(out)
    assert durations == [float(d) for d in expected_ms(7, Fraction(24), 1000)]


def test_timing_rounds_each_start_to_the_nearest_tick():
    from render.encode.animated import Timing

    timing = Timing.of(7, Fraction(24), 100)
    assert timing.starts == (0, 4, 8, 13, 17, 21, 25) and timing.total == 29
    assert timing.delays == [4, 4, 5, 4, 4, 4, 4]
    fast = Timing.of(10, Fraction(60), 100, max_fps=50)
    assert fast.kept == (0, 1, 2, 3, 4, 6, 7, 8) and fast.rate == 50
    assert fast.delays == [2] * 7 + [3]
    assert Timing.of(1, Fraction(120), 100, max_fps=50).delays == [1]  # one frame: as is


@pytest.mark.parametrize("still", [[0, 0, 0, 0, 0], [0, 1, 1, 1, 1], [0, 1, 1, 0, 0],
                                   [0, 1, 0, 1, 0]])
def test_a_webp_keeps_the_clip_s_timing_through_still_stretches(tmp_path, still):
    """libwebp stores a frame identical to the one before as a longer duration of that
    one: the file then has fewer frames, each shown from its own time for as long as the
    clip shows it, and the whole lasts as long as the clip."""
    from render.encode.animated import AnimatedWriter

    pictures = [np.full((48, 64, 4), 200, np.uint8) for _ in range(2)]
    pictures[1][10:20, 10:30] = (40, 60, 80, 255)
    out = tmp_path / "still.webp"
    with AnimatedWriter(out, size=(64, 48), fps=Fraction(24), crf=18, frames=5) as writer:
        for k, which in enumerate(still):
            writer.write(k, pictures[which])
    _, durations, _, frames = read_back(out)
    want = expected_ms(5, Fraction(24), 1000)
    runs = [k for k in range(5) if k == 0 or still[k] != still[k - 1]]  # each new picture
    if len(runs) == 1:
        assert len(frames) == 1  # one picture: a still image, no timing
    else:
        assert durations == [float(sum(want[a:b])) for a, b in zip(runs, runs[1:] + [5])]
    for frame, k in zip(frames, runs):
        rgba = pictures[still[k]][..., [2, 1, 0, 3]]
        assert np.abs(frame.astype(int) - rgba).mean() < 3
    assert not list(tmp_path.glob(".*partial*"))


@pytest.mark.parametrize("transparent", [False, True])
def test_an_apng_is_tagged_srgb_as_a_png_still_is(cli, small_scene, tmp_path, transparent):
    """ffmpeg wrote no colour chunk: a viewer that manages colour guessed."""
    out = tmp_path / "a.apng"
    r = cli(small_scene, "-o", out, "--frames", "3", "-q", "--fps", "25",
            *(["--transparent"] if transparent else []))
    assert r.code == 0, r.err
    data = out.read_bytes()
    chunks, at = [], 8
    while at < len(data):
        length = int.from_bytes(data[at:at + 4], "big")
        chunks.append(data[at + 4:at + 8])
        at += 12 + length
    first = chunks.index(b"IDAT") if b"IDAT" in chunks else chunks.index(b"fdAT")
    assert {b"sRGB", b"cHRM", b"gAMA"} <= set(chunks[:first]), chunks[:first]
    with Image.open(out) as im:
        assert im.n_frames == 3
