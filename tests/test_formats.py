"""Every clip format read back: codec, pixel format, size, frame count, frame rate."""

from __future__ import annotations

import re
import subprocess

import imageio_ffmpeg
import pytest

from conftest import SCENES, chroma_location, timecode

FORMATS = {  # suffix: (codec, pixel format as ffmpeg reports it, colour tags)
    ".mp4": ("h264", "yuv420p", "bt709"),
    ".webm": ("vp9", "yuv420p", "bt709"),
    ".mov": ("prores", "yuv444p12le", "bt709"),  # ProRes 4444 decodes as 12-bit
    ".gif": ("gif", "bgra", None),
    ".webp": ("webp_anim", "argb", None),
    ".apng": ("apng", "rgb24", None),
}


def stream(path) -> str:
    proc = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", str(path)],
                          capture_output=True, text=True)
    return next(line for line in proc.stderr.splitlines() if "Video:" in line)


@pytest.mark.slow
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


@pytest.mark.parametrize("three_d", [False, True])
@pytest.mark.parametrize("suffix", [".mp4", ".webm"])
def test_a_clip_says_its_chroma_is_sited_at_the_centre(cli, small_scene, tmp_path, three_d,
                                                         suffix):
    # Each chroma sample is the mean of its 2x2 pixels (ycbcr.py, ffmpeg's scaler); left
    # unsaid, H.264 means "left", half a pixel off, and WebM leaves it to the player.
    out = tmp_path / f"clip{suffix}"
    scene = [SCENES / "flock3d.toml", "--set", "flock.count=200", "--set",
             "scene.settle_steps=10"] if three_d else [small_scene]
    r = cli(*scene, "-o", out, "--size", "160x90", "--frames", "2", "--quiet")
    assert r.code == 0, r.err
    assert chroma_location(out) == "center"


@pytest.mark.slow
@pytest.mark.parametrize("suffix", list(FORMATS))
def test_frames_counted_without_decoding_agree_with_a_decoder(cli, small_scene, tmp_path,
                                                              suffix):
    # The check before a clip takes its name counts packets; imageio-ffmpeg decodes.
    from render.encode.video import count_frames

    out = tmp_path / f"clip{suffix}"
    extra = ["--transparent"] if suffix in (".mov", ".webm") else []
    r = cli(small_scene, "-o", out, "--size", "160x90", "--fps", "25", "--frames", "37",
            "--quiet", *extra)
    assert r.code == 0, r.err
    assert count_frames(out) == imageio_ffmpeg.count_frames_and_secs(str(out))[0] == 37


@pytest.mark.slow
@pytest.mark.parametrize("suffix", list(FORMATS))
def test_the_same_render_twice_is_the_same_file(cli, small_scene, tmp_path, suffix):
    # A WebM once drew a random Matroska segment UID into every file.
    files = [tmp_path / f"{name}{suffix}" for name in "ab"]
    for out in files:
        r = cli(small_scene, "-o", out, "--size", "160x90", "--fps", "25", "--frames", "6",
                "--quiet")
        assert r.code == 0, r.err
    assert files[0].read_bytes() == files[1].read_bytes()


def test_a_file_that_is_no_clip_is_reported_by_name(tmp_path):
    from render.encode.video import count_frames
    from render.errors import EncodeError

    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a clip" * 100)
    with pytest.raises(EncodeError, match=r"cannot read back .*junk\.mp4: .*Invalid data"):
        count_frames(junk)


def test_gif_plays_any_rate_up_to_50_fps(cli, small_scene, tmp_path):
    # Once refused unless 100/fps was whole; tests/test_animated.py reads the delays back.
    for fps in ("24", "30", "50"):
        r = cli(small_scene, "-o", tmp_path / f"x{fps}.gif", "--fps", fps, "--frames", "3",
                "--quiet")
        assert r.code == 0 and r.err == "", r.err
        assert imageio_ffmpeg.count_frames_and_secs(str(tmp_path / f"x{fps}.gif"))[0] == 3


def test_gif_takes_odd_sizes_and_webm_does_not(cli, small_scene, tmp_path):
    assert cli(small_scene, "-o", tmp_path / "x.gif", "--size", "161x91", "--fps", "25",
               "--frames", "3", "--quiet").code == 0
    r = cli(small_scene, "-o", tmp_path / "x.webm", "--size", "161x91", "--frames", "3")
    assert r.code == 2 and "even" in r.err


@pytest.mark.parametrize("args, most", [
    (("-o", "x.webp", "--size", "16384x64"), "≤ 16383 px for WebP (libwebp)"),
    (("-o", "x.mp4", "--size", "16386x64"), "≤ 16384 px for H.264 (x264)"),
    (("-o", "x.mp4", "--size", "64x16386"), "≤ 16384 px for H.264 (x264)"),
    (("--quality", "web", "-o", "x.mp4", "--size", "20000x100"), "≤ 8704 px for a web"),
])
def test_a_size_past_the_encoders_is_refused_before_drawing(cli, small_scene, tmp_path,
                                                            args, most):
    # ffmpeg refused these after the whole clip was drawn (exit 1); --check passed them.
    args = [str(tmp_path / a) if a.startswith("x.") else a for a in args]
    for check in (("--check",), ()):
        r = cli(small_scene, *args, "--frames", "2", *check)
        assert r.code == 2 and most in r.err and "largest is" in r.err, r.err
    assert [p for p in tmp_path.iterdir() if p != small_scene] == []


@pytest.mark.parametrize("args, largest", [
    (("-o", "x.mp4", "--size", "16386x16"), "16384x16"),
    (("-o", "x.mp4", "--size", "64x16386"), "64x16384"),
    (("-o", "x.webp", "--size", "16384x64"), "16383x64"),
    (("--quality", "web", "-o", "x.mp4", "--size", "16384x16"), "8704x16"),
    (("--quality", "web", "-o", "x.mp4", "--size", "20000x100"), "8704x44"),
])
def test_the_largest_size_suggested_is_taken(cli, small_scene, tmp_path, args, largest):
    """16386x16 was told 16384x14 (its short side floored), a web clip of 16384x16 was
    told 8704x8, which the web's 16 px least side then refused."""
    args = [str(tmp_path / a) if a.startswith("x.") else a for a in args]
    r = cli(small_scene, *args, "--frames", "2", "--check")
    assert r.code == 2, r.err
    suggested = re.search(r"the largest is (\d+x\d+)", r.err)[1]
    assert suggested == largest
    args[args.index("--size") + 1] = suggested
    r = cli(small_scene, *args, "--frames", "2", "--check")
    assert r.code == 0, (suggested, r.err)


@pytest.mark.slow
@pytest.mark.parametrize("suffix, size", [(".webp", "16383x32"), (".mp4", "16384x32")])
def test_the_encoders_take_their_largest_side(cli, small_scene, tmp_path, suffix, size):
    r = cli(small_scene, "-o", tmp_path / f"x{suffix}", "--size", size, "--frames", "2", "-q")
    assert r.code == 0, r.err


@pytest.mark.slow
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


@pytest.mark.parametrize("bad", ["9:6", "3:3", "a:5", "-1:4", "²:5", "1:٥"])
def test_a_frame_range_must_run_forwards(cli, small_scene, tmp_path, bad):
    # "²" is a digit to str.isdigit, not to int: it made an internal error.
    r = cli(small_scene, "-o", f"{tmp_path}/x/", f"--frames={bad}")
    assert r.code == 2 and r.err_lines == [
        f"boids-render: --frames {bad}: expected A:B with 0 ≤ A < B, e.g. 600:1200"], r.err


def decode_rgba(path, decoder=()) -> "np.ndarray":
    import numpy as np

    proc = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", *decoder, "-i",
                           str(path), "-f", "rawvideo", "-pix_fmt", "rgba", "-"],
                          capture_output=True, check=True)
    return np.frombuffer(proc.stdout, np.uint8).reshape(-1, 90, 160, 4)


@pytest.mark.slow
@pytest.mark.parametrize("suffix,pix_fmt,decoder", [
    (".webm", "yuva420p", ("-c:v", "libvpx-vp9")),  # ffmpeg's own vp9 decoder drops alpha
    (".mov", "yuva444p", ()),
])
def test_transparent_clips_carry_alpha(cli, small_scene, tmp_path, suffix, pix_fmt, decoder):
    out = tmp_path / f"alpha{suffix}"
    r = cli(small_scene, "-o", out, "--size", "160x90", "--frames", "3", "--transparent",
            "--quiet")
    assert r.code == 0, r.err
    assert pix_fmt in stream(out) or suffix == ".webm"  # VP9 signals alpha in side data
    rgba = decode_rgba(out, decoder)
    assert rgba.shape[0] == 3
    alpha = rgba[..., 3]
    assert (alpha < 8).mean() > 0.5, "the background is transparent"
    assert (alpha > 200).any(), "the streaks are opaque"


def test_transparent_png_frames_have_straight_colour_edges(cli, small_scene, tmp_path):
    import numpy as np
    from PIL import Image

    r = cli(small_scene, "-o", f"{tmp_path}/t/", "--size", "320x180", "--frames", "1",
            "--transparent", "--quiet", "--set", "palette.theme=light")
    assert r.code == 0, r.err
    with Image.open(tmp_path / "t" / "frame_00000.png") as im:
        assert im.mode == "RGBA"
        rgba = np.asarray(im).astype(int)
    alpha = rgba[..., 3]
    assert alpha[0, 0] == 0
    edge = (alpha > 40) & (alpha < 200)
    assert edge.any()
    ink = np.array([0x28, 0x48, 0xCD])  # the light theme's ink: no darker at the edges
    assert np.abs(rgba[edge][:, :3] - ink).mean() < 12


def test_straight_alpha_undoes_premultiplication():
    import numpy as np

    from render.encode.video import straight_alpha

    bgra = np.array([[[25, 50, 100, 128], [0, 0, 0, 0], [10, 20, 30, 255]]], np.uint8)
    out = straight_alpha(bgra)
    assert out[0, 0].tolist() == [50, 100, 199, 128]
    assert out[0, 1].tolist() == [0, 0, 0, 0]
    assert out[0, 2].tolist() == [10, 20, 30, 255]
    # Filled: the clear pixel takes the birds' colour, weighted by alpha (by hand:
    # (50·128 + 10·255) / 383 = 23.4, (100·128 + 20·255) / 383 = 46.7,
    # (199·128 + 30·255) / 383 = 86.5 (86.48)).
    filled = straight_alpha(bgra, fill=True)
    assert filled[0, 1].tolist() == [23, 47, 86, 0]
    assert np.array_equal(np.delete(filled, 1, axis=1), np.delete(out, 1, axis=1))


def test_transparent_webm_edges_composite_as_the_png_frames(cli, small_scene, tmp_path):
    """VP9 codes colour at 4:2:0 and its alpha lossily: black under the clear pixels would
    darken every bird's edge once composited."""
    import numpy as np
    from PIL import Image

    r = cli(small_scene, "-o", tmp_path / "t.webm", "-o", f"{tmp_path}/t/", "--size", "160x90",
            "--frames", "3", "--transparent", "--quiet", "--set", "palette.theme=light")
    assert r.code == 0, r.err
    video = decode_rgba(tmp_path / "t.webm", ("-c:v", "libvpx-vp9")).astype(np.float64)
    sky = np.array([231.0, 226.0, 213.0])
    for k in range(3):
        with Image.open(tmp_path / "t" / f"frame_{k:05d}.png") as im:
            png = np.asarray(im.convert("RGBA")).astype(np.float64)
        over = [f[..., :3] * f[..., 3:] / 255 + sky * (1 - f[..., 3:] / 255)
                for f in (png, video[k])]
        edge = (png[..., 3] > 0) & (png[..., 3] < 128)
        assert edge.sum() > 20
        # Straight colour black under the clear pixels read 4-7 codes darker here.
        assert abs((over[1] - over[0])[edge].mean()) < 1.5, k


def test_mp4_and_gif_refuse_transparency(cli, small_scene, tmp_path):
    for suffix in (".mp4", ".gif"):
        r = cli(small_scene, "-o", tmp_path / f"x{suffix}", "--transparent", "--fps", "25")
        assert r.code == 2 and "alpha" in r.err


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_palette_colours_survive_the_mp4(cli, write_scene, tmp_path, theme):
    import numpy as np

    from render.scene import THEMES

    # A dozen birds, frozen and fat: flat patches of ink and accent on the background.
    scene = write_scene(f"""
[scene]
settle_steps = 0
[world]
boundary = "none"
[flock]
count = 12
min_speed = 0.0
max_speed = 0.0
[rules]
separation_weight = 0.0
alignment_weight = 0.0
cohesion_weight = 0.0
[render]
width_min = 10.0
width_max = 10.0
opacity_min = 1.0
opacity_max = 1.0
accent_every = 2
[palette]
theme = "{theme}"
""")
    out = tmp_path / "c.mp4"
    assert cli(scene, "-o", out, "--size", "320x180", "--frames", "2", "--quiet").code == 0
    proc = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-i", str(out), "-frames:v", "1",
                           "-f", "rawvideo", "-pix_fmt", "rgb24", "-"], capture_output=True,
                          check=True)
    rgb = np.frombuffer(proc.stdout, np.uint8).reshape(180, 320, 3).astype(int)
    for name in ("background", "ink", "accent"):
        want = np.array([int(THEMES[theme][name][i:i + 2], 16) for i in (1, 3, 5)])
        close = np.abs(rgb - want).max(axis=2) <= 3
        # A flat patch of the colour, 10x10 px, comes back whole within ±3 levels.
        patches = np.lib.stride_tricks.sliding_window_view(close, (10, 10)).all(axis=(2, 3))
        assert patches.any(), f"{name} not found within ±3 levels"


def test_frames_reach_ffmpeg_through_an_enlarged_pipe(tmp_path):
    # A 1080p frame is 8 MiB; through the kernel's default 64 KiB pipe its hand-off costs
    # about twice the CPU on each side (benchmarks/export_bench.py, pipe_hand_off).
    fcntl = pytest.importorskip("fcntl")
    from fractions import Fraction
    from pathlib import Path

    import numpy as np

    from render.encode.pipe import PIPE_BYTES
    from render.encode.video import VideoWriter

    with VideoWriter(tmp_path / "c.mp4", size=(64, 36), fps=Fraction(25), crf=18,
                     frames=2) as writer:
        size = fcntl.fcntl(writer._proc.stdin.fileno(), fcntl.F_GETPIPE_SZ)
        for index in range(2):
            writer.write(index, np.full((36, 64, 4), 255, np.uint8))
    assert size == min(PIPE_BYTES, int(Path("/proc/sys/fs/pipe-max-size").read_text()))
    assert imageio_ffmpeg.count_frames_and_secs(str(tmp_path / "c.mp4"))[0] == 2


@pytest.mark.parametrize("frames, fps, expected", [
    ("3", "25", "00:00:00:00"), ("10:13", "25", "00:00:00:10"),
    ("26:28", "24000/1001", "00:00:01:02"),  # 23.976 fps counts 24 frames a second
    # 29.97 and 59.94 count drop-frame: a minute's first two (four) numbers skipped
    ("1800:1802", "29.97", "00:01:00;02"), ("3600:3602", "59.94", "00:01:00;04")])
def test_a_prores_clip_carries_its_first_frame_as_timecode(cli, small_scene, tmp_path,
                                                           frames, fps, expected):
    out = tmp_path / "part.mov"
    r = cli(small_scene, "-o", out, "--size", "64x36", "--fps", fps, "--frames", frames,
            "--quiet")
    assert r.code == 0, r.err
    assert timecode(out) == expected
    mp4 = tmp_path / "part.mp4"
    assert cli(small_scene, "-o", mp4, "--size", "64x36", "--frames", "3", "-q").code == 0
    assert timecode(mp4) is None  # a web or player's clip: no track it has no use for


def test_a_prores_clip_faster_than_a_timecode_counts_has_none(cli, small_scene, tmp_path):
    # QuickTime counts a timecode's frames a second in one byte: at 256 fps ffmpeg
    # refused the track after encoding the whole clip (exit 1).
    for fps, expected in (("255", "00:00:00:003"), ("256", None)):  # 3 digits past 99
        out = tmp_path / f"fast{fps}.mov"
        r = cli(small_scene, "-o", out, "--size", "64x36", "--fps", fps, "--frames", "3:5")
        assert r.code == 0, r.err
        assert timecode(out) == expected
        assert ("more frames a second than a QuickTime timecode track counts (255): the "
                "clip has none" in r.err) == (expected is None), r.err
        assert imageio_ffmpeg.count_frames_and_secs(str(out))[0] == 2
    r = cli(small_scene, "-o", tmp_path / "quiet.mov", "--size", "64x36", "--fps", "256",
            "--frames", "2", "-q")
    assert r.code == 0 and r.err == "", r.err  # -q: said by no one


@pytest.mark.parametrize("nominal", [30, 60])
def test_drop_frame_counts_as_a_clock_that_skips_numbers(nominal):
    # Counted label by label: each minute but every tenth starts at frame 2 (or 4).
    from render.encode.video import drop_frame

    drop = nominal // 15
    count = 0  # the number a label shows, as frames at the nominal rate
    for index in range(nominal * 60 * 21):
        assert drop_frame(index, nominal) == count, index
        count += 1
        seconds, frame = divmod(count, nominal)
        minute = seconds // 60
        if seconds % 60 == 0 and frame == 0 and minute % 10:
            count += drop
    # an hour of frames at N·1000/1001 fps (107,892 at 29.97) is an hour of timecode
    assert drop_frame({30: 107892, 60: 215784}[nominal], nominal) == nominal * 3600
