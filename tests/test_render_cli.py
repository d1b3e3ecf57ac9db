"""End-to-end renders through the command line: real ffmpeg, real cairo, real files.

Encoder tests read the file back (codec, pixel format, size, rate, frame count), never
compare video bytes. Renders are tiny so the whole module runs in seconds.
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import json
import math
import os
import re
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import imageio.v3 as iio
import imageio_ffmpeg
import numba
import numpy as np
import pytest

from conftest import SMALLER

import render
import render.drawing as drawing
import render.states as states
from render.cli import main, parser
from render.options import EXAMPLES

ROOT = Path(__file__).resolve().parents[1]
SCENES = ROOT / "scenes"
FFMPEG = imageio_ffmpeg.get_ffmpeg_exe()
LIGHT_BACKGROUND = (0xE7, 0xE2, 0xD5)
# The diagnostics (docs/model.md), a row a frame ("share inside" only with a containment).
STATS_COLUMNS = {"frame", "time_s", "global_polarisation", "local_polarisation",
                 "neighbours_p10", "neighbours_p50", "neighbours_p90",
                 "nearest_median_spacings", "candidates_mean"}


# ---------------------------------------------------------------------------------------
# Helpers


@pytest.fixture(scope="module", autouse=True)
def one_numba_thread():
    """Run these tiny flocks on one thread: numba's OpenMP workers spin-wait, and on a busy
    machine a 200-bird step then costs milliseconds of scheduling instead of microseconds.
    (Results do not depend on the thread count; the determinism test checks that.)"""
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)


def probe(path: Path) -> dict:
    """The video stream as ffmpeg describes it (imageio-ffmpeg ships no ffprobe)."""
    proc = subprocess.run([FFMPEG, "-hide_banner", "-i", str(path)],
                          capture_output=True, text=True)
    lines = [line for line in proc.stderr.splitlines() if "Video:" in line]
    assert lines, proc.stderr
    line = lines[0]
    pix = re.search(r"Video: [^,]+, (\w+)(?:\(([^)]*)\))?", line)
    size = re.search(r", (\d+)x(\d+)[ ,]", line)
    fps = re.search(r"([\d.]+) fps", line)
    return {
        "line": line,
        "codec": re.search(r"Video: (\w+)", line).group(1),
        "pix_fmt": pix.group(1),
        "colour": [part.strip() for part in (pix.group(2) or "").split(",")],
        "size": (int(size.group(1)), int(size.group(2))),
        "fps": fps.group(1),
        "frames": imageio_ffmpeg.count_frames_and_secs(str(path))[0],
    }


def first_frame_rgb(path: Path) -> np.ndarray:
    gen = imageio_ffmpeg.read_frames(str(path))
    try:
        meta = next(gen)
        width, height = meta["size"]
        return np.frombuffer(next(gen), np.uint8).reshape(height, width, 3)
    finally:
        gen.close()


def commonest_colour(rgb: np.ndarray) -> tuple[int, ...]:
    flat = rgb.reshape(-1, rgb.shape[-1])
    values, counts = np.unique(flat, axis=0, return_counts=True)
    return tuple(int(v) for v in values[counts.argmax()])


def ffmpeg_children() -> list[tuple[int, str]]:
    """(pid, state) of every ffmpeg process whose parent is this test process."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        return [(p.pid, p.status()) for p in psutil.Process().children(recursive=True)
                if "ffmpeg" in p.name()]
    proc = Path("/proc")
    if not proc.is_dir():
        pytest.skip("needs psutil or /proc to list child processes")
    me, found = os.getpid(), []
    for stat in proc.glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # the process ended while we looked
        name = text[text.index("(") + 1:text.rindex(")")]
        state, ppid = text[text.rindex(")") + 2:].split()[:2]
        if int(ppid) == me and "ffmpeg" in name:
            found.append((int(stat.parent.name), state))
    return found


def leftovers(folder: Path) -> list[str]:
    """Temporary or partial files (hidden ones included) left in `folder`."""
    return sorted(p.name for p in folder.iterdir()
                  if "partial" in p.name or p.name.startswith("."))


def default_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def fail_draw_after(monkeypatch, frames: int, exc: BaseException) -> dict:
    """Make the pipeline's drawing raise `exc` once `frames` frames have been drawn; the
    returned dict records the ffmpeg children alive at that moment."""
    real = states.draw_frame
    seen = {"drawn": 0, "ffmpeg_at_failure": None}

    def draw(*args, **kwargs):
        if seen["drawn"] == frames:
            seen["ffmpeg_at_failure"] = ffmpeg_children()
            raise exc
        seen["drawn"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(states, "draw_frame", draw)
    return seen


# ---------------------------------------------------------------------------------------
# MP4


@pytest.fixture(scope="module")
def clip(tmp_path_factory, small_scene_text) -> Path:
    """One second at 30 fps, 320x180, of a 200-bird flock, rendered through the CLI."""
    folder = tmp_path_factory.mktemp("clip")
    scene = folder / "small.toml"
    scene.write_text(small_scene_text)
    target = folder / "out" / "clip.mp4"
    code = main([str(scene), "-o", str(target), "--size", "320x180", "--fps", "30",
                 "--duration", "1", "-q"])
    assert code == 0
    return target


def test_mp4_has_requested_codec_pixel_format_size_rate_and_frame_count(clip):
    assert clip.is_file()
    info = probe(clip)
    assert info["codec"] == "h264"
    assert info["pix_fmt"] == "yuv420p"
    assert info["size"] == (320, 180)
    assert info["fps"] == "30"
    assert info["frames"] == 30


def test_mp4_stream_is_tagged_bt709(clip):
    assert "bt709" in probe(clip)["line"]


def test_mp4_tags_bt709_primaries_transfer_and_matrix(clip):
    # ffmpeg prints one "bt709" when matrix, primaries and transfer all agree, and
    # "bt709/unknown/unknown" when only the matrix is tagged (players then guess).
    colour = probe(clip)["colour"]
    assert colour[:2] == ["tv", "bt709"], probe(clip)["line"]


def test_mp4_background_decodes_to_the_palette_colour(clip):
    # Catches swapped channels (cairo's BGRA fed as RGBA) and a wrong colour matrix.
    background = commonest_colour(first_frame_rgb(clip))
    assert all(abs(a - b) <= 4 for a, b in zip(background, LIGHT_BACKGROUND)), background


def test_mp4_leaves_only_the_clip_in_its_folder(clip):
    assert sorted(p.name for p in clip.parent.iterdir()) == ["clip.mp4"]


def test_mp4_gets_the_permissions_of_an_ordinary_new_file(clip):
    # mkstemp creates 0600 files; renamed into place they stay unreadable to others.
    assert clip.stat().st_mode & 0o777 == default_file_mode()


def test_rational_fps_gives_exact_frame_count_and_23_98_fps(cli, small_scene, tmp_path):
    target = tmp_path / "out" / "ntsc.mp4"
    r = cli(small_scene, "-o", target, "--fps", "24000/1001", "--frames", "12", "-q")
    assert r.code == 0, r.err
    info = probe(target)
    assert info["frames"] == 12
    assert info["fps"] == "23.98"
    meta = next(imageio_ffmpeg.read_frames(str(target)))
    assert meta["fps"] == pytest.approx(float(Fraction(24000, 1001)), abs=0.01)


def test_29_97_writes_the_ntsc_rate_not_the_decimal(cli, small_scene, tmp_path):
    """An editor's 29.97 is 30000/1001: the clip's time base is 1/30000 ("30k tbn"), as
    24000/1001's is 1/24000; 2997/100 would make it 1/11988."""
    target = tmp_path / "ntsc.mp4"
    r = cli(small_scene, "-o", target, "--fps", "29.97", "--frames", "6", "-q")
    assert r.code == 0, r.err
    assert "29.97 fps" in probe(target)["line"] and "30k tbn" in probe(target)["line"]


def test_odd_size_for_mp4_is_bad_input(cli, small_scene, tmp_path):
    r = cli(small_scene, "-o", tmp_path / "out" / "odd.mp4", "--size", "321x180", "-q")
    assert "even" in r.err and "321x180" in r.err
    assert r.err.rstrip().endswith("try 320x180 or 322x180"), r.err  # either way
    assert len(r.err_lines) == 1, r.err
    assert r.code == 2  # bad input (scene or options), as the CLI's exit-status table says


def test_odd_size_for_mp4_leaves_no_file_and_no_partial(cli, small_scene, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = cli(small_scene, "-o", out / "odd.mp4", "--size", "320x181", "-q")
    assert r.code != 0
    assert list(out.iterdir()) == []


def test_unsupported_output_suffix_is_bad_input(cli, small_scene, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = cli(small_scene, "-o", out / "clip.xyz", "-q")
    assert r.code == 2
    assert "unsupported" in r.err
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("suffix", [".png", ".jpg", ".exr", ".pdf", ".svg"])
def test_one_frame_s_format_as_a_clip_points_to_still(cli, small_scene, tmp_path, suffix):
    r = cli(small_scene, "-o", tmp_path / f"x{suffix}", "--frames", "2", "-q")
    assert r.code == 2 and r.err.rstrip().endswith("one frame is a still: add --still TIME")
    assert list(tmp_path.iterdir()) == [small_scene]


def test_no_output_and_no_stats_is_bad_input(cli, small_scene):
    r = cli(small_scene, "-q")
    assert r.code == 2
    assert "nothing to do" in r.err
    for way in ("-o OUT", "--still TIME", "--stats", "--plot", "--contact-sheet", "--check"):
        assert way in r.err, way


def test_a_folder_named_without_its_slash_is_told_to_add_it(cli, small_scene, tmp_path):
    (tmp_path / "frames").mkdir()
    r = cli(small_scene, "-o", tmp_path / "frames", "--frames", "1")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert r.err.rstrip().endswith(f"{tmp_path / 'frames'} is a folder: write "
                                   f"{tmp_path / 'frames'}/ for PNG frames in it")


def test_a_suffix_alone_is_told_it_is_a_name(cli, small_scene, tmp_path):
    # ".mp4" is a hidden file's name, with no suffix: "unsupported output (no suffix)"
    # alone left the user looking at the suffix they typed.
    r = cli(small_scene, "-o", tmp_path / ".mp4", "--frames", "1")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert r.err.rstrip().endswith(f".mp4 is a name alone: write {tmp_path / 'out.mp4'}")
    assert not (tmp_path / ".mp4").exists()


def test_a_still_given_as_the_scene_points_to_from(cli, small_scene, tmp_path):
    png = tmp_path / "still.png"
    assert cli(small_scene, "--still", "0", "-o", png, "-q").code == 0
    r = cli(png, "-o", tmp_path / "x.mp4")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert r.err.rstrip().endswith(f"a PNG still: --from {png} draws the scene it records")


def test_a_paper_size_may_be_given_in_lower_case(cli, small_scene, tmp_path):
    r = cli(small_scene, "--still", "0", "-o", tmp_path / "a.png", "--paper", "a4", "--dpi",
            "10", "-q")
    assert r.code == 0, r.err
    from PIL import Image

    assert Image.open(tmp_path / "a.png").size == (117, 83)  # A4 landscape at 10 dpi


@pytest.mark.parametrize("paper, size", [("letter", (110, 85)), ("Tabloid", (170, 110)),
                                         ("LEGAL", (140, 85)), ("a6", (58, 41))])
def test_north_american_and_small_sheets_are_papers_too(cli, small_scene, tmp_path, paper,
                                                        size):
    # By hand at 10 dpi, landscape: 11 x 8.5, 17 x 11 and 14 x 8.5 inches; A6 148 x 105 mm
    # is 5.83 x 4.13 inches.
    from PIL import Image

    r = cli(small_scene, "--still", "0", "-o", tmp_path / "a.png", "--paper", paper,
            "--dpi", "10", "-q")
    assert r.code == 0, r.err
    assert Image.open(tmp_path / "a.png").size == size


def test_a_sheet_too_small_for_a_pixel_names_the_dpi(cli, small_scene, tmp_path):
    r = cli(small_scene, "--still", "0", "-o", tmp_path / "a.png", "--paper", "A4", "--dpi",
            "0.01")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    # half a pixel on A4's 210 mm: 0.5 · 25.4 / 210 = 0.0605 dpi
    assert r.err.rstrip().endswith("--paper A4 --dpi 0.01: the sheet would be 0x0 px: the "
                                   "least is --dpi 0.061")
    assert list(tmp_path.iterdir()) == [small_scene]
    least = cli(small_scene, "--still", "0", "-o", tmp_path / "a.png", "--paper", "A4",
                "--dpi", "0.061", "-q")
    assert least.code == 0, least.err


@pytest.mark.parametrize("args", [
    ("-o", "{tmp}/x.tif"), ("-o", "{tmp}/x.mp4", "--transparent"),
    ("-o", "{tmp}/x.mp4", "--resume"), ("-o", "{tmp}/x.npz", "--resume"),
    ("--stats", "{tmp}/s.txt"), ("--plot", "{tmp}/p.txt"), ("-o", "{tmp}/f_%d_%d.png"),
    ("-o", "{tmp}/x.mp4", "-o", "{tmp}/x.gif", "--transparent")])
def test_check_refuses_what_the_render_refuses_with_the_same_line(cli, small_scene,
                                                                   tmp_path, args):
    args = [a.format(tmp=tmp_path) for a in args]
    rendered = cli(small_scene, *args, "--frames", "2", "-q")
    checked = cli(small_scene, *args, "--frames", "2", "--check")
    assert rendered.code == checked.code == 2, (rendered.err, checked.err)
    assert checked.err_lines == rendered.err_lines and len(rendered.err_lines) == 1
    assert list(tmp_path.iterdir()) == [small_scene]


@pytest.mark.parametrize("args, says", [
    (("--still", "0", "-o", "a.png", "--stats", "s.csv"), "--stats applies to a clip's"),
    (("--still", "0", "-o", "a.png", "--plot", "p.png", "--resume"),
     "--plot, --resume apply to a clip's"),
    (("--still", "0", "-o", "a.png", "--landscape"), "--landscape turns a --paper sheet"),
    (("--still", "0", "-o", "a.png", "--portrait"), "--portrait turns a --paper sheet"),
    (("--still", "0", "-o", "a.png", "--paper", "A4", "--size", "640x480"),
     "--paper A4 sets the size (at --dpi): drop --size 640x480"),
    (("--still", "0", "-o", "a.png", "-o", "b.png"), "a still writes one -o"),
    (("--from", "a.png", "-o", "b.png", "-o", "c.png"), "a still writes one -o"),
    (("--still", "0", "-o", "a.png", "--workers", "2", "--crf", "20"),
     "--workers, --crf apply to a clip's frames; a still is one"),
    (("-o", "a.mp4", "--dpi", "300"), "--dpi is the resolution a still records"),
    (("--contact-sheet", "c.png", "-o", "a.mp4", "-o", "b.mp4"), "drop -o"),
    (("-o", "a.mp4", "-o", "a.mp4"), "a.mp4: given twice as an output"),
    (("-o", "a.mp4", "-o", "./a.mp4"), "./a.mp4: given twice as an output (as a.mp4)"),
    (("-o", "sq/", "-o", "sq/frame_%05d.png"), "given twice as an output (as sq/)"),
    (("--quality", "web", "-o", "a.mp4", "-o", "b.npz"), "--quality web writes one -o"),
    (("-o", "a.webm", "--crossfade", "0.5"), "--crossfade sets a loop's morph: add --loop"),
    (("-o", "a.webm", "--loop", "--crossfade", "0.01"),
     "--crossfade (output.crossfade): expected a crossfade of at least 2 frames"),
    (("-o", "a.webm", "--loop"),  # the test's --frames 2 under the default 1 s crossfade
     "--frames (output.frames): expected a clip longer than the loop's crossfade"),
    (("-o", "a.webp", "--crf", "45"), "--crf sets the quality of .mp4 (H.264) and .webm "
                                      "(VP9) clips; a.webp takes none: drop --crf"),
    (("-o", "a.mov", "-o", "sq/", "--crf", "5"), "a.mov, sq/ take none: drop --crf"),
    (("-o", "a.npz", "--motion-blur", "4", "--transparent"),
     "--motion-blur, --transparent act on drawn frames; a.npz holds the flock's states"),
    (("--stats", "s.csv", "--crf", "20", "--motion-blur", "4", "--transparent"),
     "--crf, --motion-blur, --transparent act on the frames written to -o; --stats draws "
     "none: add -o OUT, or drop --crf, --motion-blur, --transparent"),
    (("--stats", "s.csv", "--plot", "p.png", "--resume"),
     "--resume acts on the frames written to -o; --stats and --plot draw none"),
    (("-o", "a.mp4", "--paper", "A4"), "--paper A4 sizes a still's sheet: add --still"),
    (("-o", "a.npz", "--size", "320x180"), "--size sets the frames' size; a.npz holds the "
                                           "flock's states, in world units, whatever the "
                                           "frame: drop --size"),
    # a 2D USD has no camera to shape (a 3D one's takes the frame's)
    (("-o", "a.usda", "--size", "320x180"), "--size sets the frames' size; a.usda holds "
                                            "the flock's states"),
    # the test's --frames 2: a still of a clip, not a loop, is the same at any length
    (("--still", "0", "-o", "a.png"), "--frames sets a clip's length (with --loop, a "
                                      "loop's); a still is one frame, the same whatever "
                                      "the length: drop --frames"),
    (("-o", "a.npz", "--paper", "A4"), "sizes a still's sheet: add --still TIME\n"),
    (("--quality", "web", "-o", "a.mp4", "--resume"),
     "--quality web renders its clips whole: drop --resume"),
    (("--from", "a.png", "-o", "b.png"), "--from draws the scene a.png records: drop the "
                                         "scene file"),
    (("--info", "a.png", "-o", "b.png"), "--info prints what a still records and does "
                                         "nothing else: drop --frames, -o, the scene file"),
])
def test_an_option_the_request_would_leave_unused_is_bad_input(cli, small_scene, tmp_path,
                                                               monkeypatch, args, says):
    monkeypatch.chdir(tmp_path)
    r = cli(small_scene, *args, "--frames", "2", "-q")
    assert r.code == 2 and len(r.err_lines) == 1 and says in r.err, r.err
    assert list(tmp_path.iterdir()) == [small_scene]


@pytest.mark.parametrize("frames", ["30:31", "30:90"])
def test_a_loop_of_a_frame_range_is_told_it_is_rendered_whole(cli, small_scene, tmp_path,
                                                              frames):
    # 30:31 was told its 31 frames were shorter than the morph, and 30:200 then this.
    r = cli(small_scene, "-o", tmp_path / "sq/", "--loop", "--frames", frames, "-q")
    assert r.code == 2 and "a loop is rendered whole" in r.err, r.err


def test_a_frame_range_with_a_still_is_bad_input(cli, small_scene, tmp_path):
    r = cli(small_scene, "--still", "0", "-o", tmp_path / "a.png", "--frames", "3:6")
    assert r.code == 2 and r.err_lines == [
        "boids-render: --frames 3:6 renders part of a clip; a still is one frame: drop it "
        "(--frames N sets a loop's length)"], r.err


def test_several_outputs_are_written_from_one_simulation(cli, small_scene, tmp_path,
                                                          monkeypatch):
    seeded = []
    real = states.Simulation
    monkeypatch.setattr(states, "Simulation",
                        lambda *a, **k: seeded.append(1) or real(*a, **k))
    r = cli(small_scene, "-o", tmp_path / "a.mp4", "-o", tmp_path / "f_%02d.png",
            "-o", tmp_path / "a.npz", "--stats", tmp_path / "s.csv", "--frames", "3", "-q")
    assert r.code == 0, r.err
    assert len(seeded) == 1
    assert imageio_ffmpeg.count_frames_and_secs(str(tmp_path / "a.mp4"))[0] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "a.mp4", "a.npz", "f_00.png", "f_01.png", "f_02.png", "s.csv", "small.toml"]
    with np.load(tmp_path / "a.npz") as npz:
        assert npz["positions"].shape[0] == 3
    alone = tmp_path / "alone"
    assert cli(small_scene, "-o", alone / "f_%02d.png", "--frames", "3", "-q").code == 0
    for k in range(3):  # the frames a render of the sequence alone has
        assert (alone / f"f_{k:02d}.png").read_bytes() == \
            (tmp_path / f"f_{k:02d}.png").read_bytes()
    shutil.rmtree(alone)
    checked = cli(small_scene, "-o", tmp_path / "b.mp4", "-o", tmp_path / "b.npz",
                  "--frames", "3", "--check")
    assert checked.code == 0, checked.err
    assert "# estimate to " + str(tmp_path / "b.mp4") in checked.out
    assert "# estimate to " + str(tmp_path / "b.npz") in checked.out


# ---------------------------------------------------------------------------------------
# PNG sequences


@pytest.mark.parametrize("target, names", [
    ("seq/", ["frame_00000.png", "frame_00001.png", "frame_00002.png"]),
    ("seq/f_%03d.png", ["f_000.png", "f_001.png", "f_002.png"]),
], ids=["folder", "pattern"])
def test_png_sequence_has_one_file_per_frame_at_the_requested_size(
        cli, small_scene, tmp_path, target, names):
    r = cli(small_scene, "-o", f"{tmp_path}/{target}", "--frames", "3", "--size", "160x90",
            "-q")
    assert r.code == 0, r.err
    folder = tmp_path / "seq"
    assert sorted(p.name for p in folder.iterdir()) == names
    for name in names:
        pixels = iio.imread(folder / name)
        assert pixels.shape[:2] == (90, 160)


def test_png_frames_show_the_palette_background_and_birds(cli, small_scene, tmp_path):
    r = cli(small_scene, "-o", f"{tmp_path}/seq/", "--frames", "1", "-q")
    assert r.code == 0, r.err
    rgb = iio.imread(tmp_path / "seq" / "frame_00000.png")[:, :, :3]
    assert commonest_colour(rgb) == LIGHT_BACKGROUND
    assert len(np.unique(rgb.reshape(-1, 3), axis=0)) > 10  # streaks were drawn


def test_png_frames_get_the_permissions_of_ordinary_new_files(cli, small_scene, tmp_path):
    r = cli(small_scene, "-o", f"{tmp_path}/seq/", "--frames", "1", "-q")
    assert r.code == 0, r.err
    assert (tmp_path / "seq" / "frame_00000.png").stat().st_mode & 0o777 \
        == default_file_mode()


def test_shipped_scene_renders_a_small_png_sequence(cli, tmp_path):
    r = cli(SCENES / "plate.toml", "-o", f"{tmp_path}/m/", "--frames", "2",
            "--size", "160x90", "--set", "flock.spacing=4", "-q")
    assert r.code == 0, r.err
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [
        "frame_00000.png", "frame_00001.png"]


# ---------------------------------------------------------------------------------------
# Determinism and diagnostics


def test_same_scene_renders_byte_identical_png_frames_whatever_the_thread_count(
        cli, small_scene, tmp_path):
    for run, threads in (("a", 1), ("b", numba.config.NUMBA_NUM_THREADS)):
        numba.set_num_threads(threads)
        try:
            r = cli(small_scene, "-o", f"{tmp_path}/{run}/", "--frames", "4", "-q")
        finally:
            numba.set_num_threads(1)
        assert r.code == 0, r.err
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert len(names) == 4
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_same_scene_writes_identical_stats_csv(cli, small_scene, tmp_path):
    for run in ("a", "b"):
        r = cli(small_scene, "--stats", tmp_path / f"{run}.csv", "--frames", "15", "-q")
        assert r.code == 0, r.err
    first = (tmp_path / "a.csv").read_bytes()
    assert first == (tmp_path / "b.csv").read_bytes()
    rows = list(csv.DictReader(first.decode().splitlines()))
    assert len(rows) == 15
    assert STATS_COLUMNS <= set(rows[0])


def test_stats_json_without_output_has_spec_columns_and_draws_nothing(
        cli, small_scene, tmp_path, monkeypatch):
    def no_drawing(*args, **kwargs):
        raise AssertionError("--stats without -o must not draw")

    monkeypatch.setattr(states, "draw_frame", no_drawing)
    monkeypatch.setattr(drawing, "Canvas", no_drawing)
    target = tmp_path / "stats.json"
    r = cli(small_scene, "--stats", target, "--frames", "6", "--fps", "30", "-q")
    assert r.code == 0, r.err
    rows = json.loads(target.read_text())
    assert len(rows) == 6
    for index, row in enumerate(rows):
        assert STATS_COLUMNS <= set(row), set(row) ^ STATS_COLUMNS
        assert row["frame"] == index
        assert row["time_s"] == pytest.approx(index / 30)
        assert 0.0 <= row["global_polarisation"] <= 1.0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml", "stats.json"]


def test_stats_json_is_strict_json(cli, small_scene, tmp_path):
    # NaN / Infinity are not JSON (RFC 8259): JavaScript, jq and most parsers reject them.
    # This scene has no containment and no hawk, so those diagnostics have no value.
    target = tmp_path / "stats.json"
    r = cli(small_scene, "--stats", target, "--frames", "2", "-q")
    assert r.code == 0, r.err

    def reject(constant):
        raise ValueError(f"{constant} is not valid JSON")

    json.loads(target.read_text(), parse_constant=reject)


def test_stats_into_a_folder_that_does_not_exist_yet(cli, small_scene, tmp_path):
    # -o creates its folder; --stats (whose help example is out/stats.csv) should too,
    # and must never end a finished simulation with a traceback.
    target = tmp_path / "new" / "stats.csv"
    r = cli(small_scene, "--stats", target, "--frames", "2", "-q")
    assert r.code == 0, r.err
    assert target.is_file()


# ---------------------------------------------------------------------------------------
# Failures leave nothing behind, and no ffmpeg outlives a render


@pytest.mark.parametrize("exc, code", [
    (KeyboardInterrupt(), 130),
    (RuntimeError("drawing broke"), None),
], ids=["interrupted", "crashed"])
@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
def test_render_failing_midway_leaves_no_file_no_temp_and_no_ffmpeg(
        small_scene, tmp_path, monkeypatch, exc, code, existing):
    out = tmp_path / "out"
    out.mkdir()
    target = out / "clip.mp4"
    if existing:
        target.write_bytes(b"an earlier render")
    seen = fail_draw_after(monkeypatch, 3, exc)
    try:
        result = main([str(small_scene), "-o", str(target), "--frames", "10", "-q"])
    except RuntimeError:
        result = None  # an unexpected error may propagate (traceback) or exit 1
    assert result == code or (code is None and result == 1)
    assert seen["drawn"] == 3
    assert seen["ffmpeg_at_failure"], "ffmpeg should have been running when drawing failed"
    if existing:
        assert target.read_bytes() == b"an earlier render"
        assert sorted(p.name for p in out.iterdir()) == ["clip.mp4"]
    else:
        assert list(out.iterdir()) == []
    assert ffmpeg_children() == []


def test_png_sequence_failing_midway_leaves_no_partial_files(
        small_scene, tmp_path, monkeypatch):
    fail_draw_after(monkeypatch, 2, KeyboardInterrupt())
    assert main([str(small_scene), "-o", f"{tmp_path}/seq/", "--frames", "5", "-q"]) == 130
    assert leftovers(tmp_path / "seq") == []
    assert sorted(p.name for p in (tmp_path / "seq").iterdir()) == [
        "frame_00000.png", "frame_00001.png"]


def test_ffmpeg_failure_is_one_line_with_its_message_and_leaves_nothing(
        cli, small_scene, tmp_path, monkeypatch):
    fake = tmp_path / "fake-ffmpeg"
    fake.write_text("#!/bin/sh\necho 'fake encoder: out of cheese' >&2\nexit 1\n")
    fake.chmod(0o755)
    import render.encode.video as video

    monkeypatch.setattr(video, "ffmpeg_exe", lambda: str(fake))
    out = tmp_path / "out"
    out.mkdir()
    r = cli(small_scene, "-o", out / "clip.mp4", "--frames", "5", "-q")
    assert r.code == 1
    assert len(r.err_lines) == 1, r.err
    assert "out of cheese" in r.err
    assert list(out.iterdir()) == []


def test_ffmpeg_that_cannot_start_is_one_line_and_leaves_no_partial(
        cli, small_scene, tmp_path, monkeypatch):
    # imageio-ffmpeg returns $IMAGEIO_FFMPEG_EXE unchecked, so a stale setting is how
    # users meet this.
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", str(tmp_path / "no-such-ffmpeg"))
    out = tmp_path / "out"
    out.mkdir()
    try:
        r, crash = cli(small_scene, "-o", out / "clip.mp4", "--frames", "2", "-q"), None
    except OSError as exc:
        r, crash = None, exc
    assert leftovers(out) == []
    assert crash is None, f"a traceback instead of a one-line message: {crash!r}"
    assert r.code == 1
    assert len(r.err_lines) == 1, r.err
    assert "no-such-ffmpeg" in r.err


def test_no_ffmpeg_outlives_a_finished_render(small_scene, tmp_path, monkeypatch):
    real = states.draw_frame
    during = []

    def draw(*args, **kwargs):
        during.append(ffmpeg_children())
        return real(*args, **kwargs)

    monkeypatch.setattr(states, "draw_frame", draw)
    assert main([str(small_scene), "-o", str(tmp_path / "clip.mp4"), "--frames", "3",
                 "-q"]) == 0
    assert all(during), "the check must see ffmpeg while it runs"
    assert ffmpeg_children() == []


# ---------------------------------------------------------------------------------------
# --help, --version, shipped scenes


def test_help_lists_every_option_with_an_example(cli):
    r = cli("--help")
    assert r.code == 0
    assert "examples:" in r.out
    example_lines = [line for line in EXAMPLES.splitlines()
                     if line.strip().startswith("boids-render")]
    for action in parser()._actions:
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        for name in action.option_strings or [action.dest]:
            assert name in r.out, name
        if action.nargs == 0:
            continue  # a switch: its name is its usage
        own = "e.g." in (action.help or "")
        in_examples = any(f"{name} " in line for name in action.option_strings
                          for line in example_lines)
        assert own or in_examples, f"{action.option_strings or action.dest}: no example"


def test_version_prints_the_package_version(cli):
    r = cli("--version")
    assert r.code == 0
    assert r.out.strip() == f"boids-render {render.__version__}"
    assert render.__version__ == importlib.metadata.version("boids-render")


@pytest.mark.parametrize("scene", sorted(SCENES.glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_scene_passes_check(cli, scene):
    r = cli(scene, "--check")
    assert r.code == 0, r.err
    assert r.err == ""
    assert "[scene]" in r.out


def test_shipped_scenes_are_found():
    assert (SCENES / "murmuration.toml").is_file()
    assert (SCENES / "plate.toml").is_file()


@pytest.mark.parametrize("scene", sorted(SCENES.glob("*.toml")), ids=lambda p: p.name)
def test_every_shipped_scene_renders(cli, scene, tmp_path):
    out = tmp_path / "clip.mp4"
    r = cli(scene, "-o", out, "--size", "320x180", "--frames", "6", "--quiet",
            *SMALLER.get(scene.stem, ()))
    assert r.code == 0, r.err
    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(out))
    assert frames == 6


@pytest.mark.parametrize("three", [False, True])
def test_frames_are_identical_whatever_the_number_of_drawing_workers(cli, tmp_path, small_scene,
                                                                     three):
    # In 3D the drawing threads' kernels run at once, beside the simulation's (nogil)
    from conftest import SCENES

    scene, extra = (SCENES / "flock3d.toml", ("--size", "320x180", "--set", "flock.count=500",
                                              "--set", "scene.settle_steps=100")) \
        if three else (small_scene, ())
    outputs = {}
    for workers in (1, 3):
        folder = tmp_path / f"w{workers}"
        r = cli(scene, "-o", f"{folder}/", "--frames", "8", "--workers", str(workers),
                "--quiet", *extra)
        assert r.code == 0, r.err
        outputs[workers] = [p.read_bytes() for p in sorted(folder.glob("*.png"))]
    assert len(outputs[1]) == 8
    assert outputs[1] == outputs[3]


@pytest.fixture
def every_numba_thread():
    """This module's tiny flocks step on one thread; these tests need the pacing to have
    a choice: numba's every thread, for the test's length."""
    import numba

    most = numba.config.NUMBA_NUM_THREADS
    if most < 2:
        pytest.skip("numba has a single thread on this machine")
    before = numba.get_num_threads()
    numba.set_num_threads(most)
    yield most
    numba.set_num_threads(before)


def test_the_simulation_steps_on_one_thread_while_the_main_thread_waits_downstream(
        every_numba_thread):
    # Frames 6–13 find the drawing or the encoder behind (the consumer sleeps, as a
    # blocked write does); before and after, it keeps up.
    import time

    import numba

    from render import pipeline

    most = every_numba_thread
    seen = []

    def states():
        for index in range(24):
            seen.append(numba.get_num_threads())
            time.sleep(0.008)  # simulating
            yield index

    for index, _ in enumerate(pipeline._paced(states())):
        if 6 <= index < 14:
            time.sleep(0.024)
    assert seen[:7] == [most] * 7
    assert seen[9:15] == [1] * 6
    assert seen[-4:] == [most] * 4
    assert numba.get_num_threads() == most


@pytest.mark.parametrize("waited", [-1.0, math.inf])
def test_a_3d_clip_is_the_same_bits_whichever_threads_the_pacing_gives_its_steps(
        cli, tmp_path, monkeypatch, every_numba_thread, waited):
    # −1: every frame after the first on one thread; inf: on all of them.
    from conftest import SCENES

    from render import pipeline

    outputs = []
    for run, threshold in enumerate((pipeline.WAITED, waited)):
        monkeypatch.setattr(pipeline, "WAITED", threshold)
        folder = tmp_path / f"r{run}"
        r = cli(SCENES / "flock3d.toml", "-o", f"{folder}/", "--frames", "6", "--quiet",
                "--size", "160x90", "--set", "flock.count=3000",
                "--set", "scene.settle_steps=50")
        assert r.code == 0, r.err
        outputs.append([p.read_bytes() for p in sorted(folder.glob("*.png"))])
    assert len(outputs[0]) == 6 and outputs[0] == outputs[1]


def test_by_default_a_core_is_left_to_the_main_thread(monkeypatch):
    from render import executor

    monkeypatch.setattr(executor.os, "sched_getaffinity", lambda pid: set(range(4)), raising=False)
    assert executor.Threads().workers == 3 and executor.default_workers() == 4
    monkeypatch.setattr(executor.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert executor.Threads().workers == 1


def test_workers_must_be_a_positive_whole_number(cli, small_scene, tmp_path):
    r = cli(small_scene, "-o", f"{tmp_path}/", "--workers", "0")
    assert r.code == 2 and "--workers" in r.err


@pytest.mark.parametrize("three", [False, True])
def test_plot_draws_the_diagnostics_in_2d_and_3d(cli, small_scene, tmp_path, three):
    """--plot writes a PNG whose panels are the scene's own (a 3D flock's altitudes,
    proportions and attacks, not the 2D containment)."""
    from PIL import Image

    from conftest import SCENES

    target = tmp_path / "plot.png"
    scene = (SCENES / "murmuration.toml", *SMALLER["murmuration"]) if three else (small_scene,)
    r = cli(*scene, "--plot", target, "--frames", "6", "-q")
    assert r.code == 0, r.err
    with Image.open(target) as image:
        assert image.format == "PNG" and image.size[0] > 500
        assert np.asarray(image.convert("L")).std() > 10  # drawn, not blank


@pytest.mark.parametrize("attack", [0.0, 1.0])
def test_a_3d_plot_says_attacks_are_shaded_only_when_there_are_some(tmp_path, monkeypatch,
                                                                       attack):
    from matplotlib.figure import Figure

    from render.plot import plot3d

    titles = []
    monkeypatch.setattr(Figure, "suptitle", lambda self, text, **kw: titles.append(text))
    rows = [dict(time_s=t / 10, attack=attack if 3 <= t < 6 else 0.0) for t in range(10)]
    plot3d(rows, tmp_path / "plot.png", title="flock")
    assert titles == (["flock (attacks shaded)"] if attack else ["flock"])


@pytest.mark.parametrize("args, line", [
    (["--frmes", "3"], "unrecognized arguments: --frmes 3 (did you mean --frames?)"),
    # Told "did you mean --size?" of --size itself.
    (["--", "--size", "320x180"], "unrecognized arguments: --size 320x180 (--size after "
                                  "`--` is read as a name: put options before it)"),
    (["--workers", "0"], "argument --workers: expected a whole number ≥ 1, got '0'"),
    (["--paper", "A7"], "argument --paper: invalid choice: 'A7'"),
    (["--paper", "letr"], "(did you mean LETTER?)"),
    (["--quality", "webb"], "(did you mean web?)"),
])
def test_a_bad_option_is_one_line_naming_the_closest(cli, small_scene, args, line):
    r = cli(small_scene, *args)
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert r.err_lines[0].startswith(f"boids-render: {line}") or \
        (line.startswith("(") and f"{line}; see" in r.err_lines[0]), r.err
    assert r.err_lines[0].endswith("; see boids-render --help")


def test_a_clip_shorter_than_half_a_frame_is_refused(cli, small_scene, tmp_path):
    # 0.001 s at 30 fps rounds to no frame at all: it was drawn as one, unasked.
    for flag in (("--duration", "0.001"), ("--set", "scene.duration=0.001")):
        r = cli(small_scene, "-o", tmp_path / "a.mp4", *flag)
        label = "--duration (scene.duration)" if flag[0] == "--duration" else \
            "--set scene.duration"
        assert r.code == 2 and len(r.err_lines) == 1, r.err
        assert f"{label}: expected a clip of at least one frame" in r.err, r.err
        assert "≥ 0.0167 s at 30 fps" in r.err and "got 0.001 s" in r.err
    assert list(tmp_path.iterdir()) == [small_scene]
    assert cli(small_scene, "-o", tmp_path / "a.mp4", "--duration", "0.02", "-q").code == 0


def test_a_range_past_the_scenes_end_is_noted_and_a_loops_range_refused(
        cli, small_scene, write_scene, tmp_path):
    # --frames A:B renders frames A .. B-1 of a clip of B frames: past the scene's own
    # length that is a longer clip, which a farm's script rarely means.
    from conftest import SMALL_SCENE

    r = cli(small_scene, "-o", f"{tmp_path}/past/", "--frames", "35:37")
    assert r.code == 0, r.err
    assert "--frames 35:37 runs past the scene's own 30 frames: these are frames of a " \
           "clip 37 frames long" in r.err, r.err
    r = cli(small_scene, "-o", f"{tmp_path}/within/", "--frames", "5:7")
    assert r.code == 0 and "runs past" not in r.err, r.err
    # A loop's scene (output.loop in the file, not --loop) given a range shorter than
    # its crossfade was told to lengthen the clip: it is refused for being a range.
    loop = write_scene(SMALL_SCENE.replace("[output]\n", "[output]\nloop = true\n")
                       .replace("duration = 1.0", "duration = 3.0"), "loop.toml")
    # One long enough for the crossfade was noted and estimated before it was refused.
    for frames in ("10:12", "10:200"):
        r = cli(loop, "-o", f"{tmp_path}/l/", "--frames", frames, "--check")
        assert r.code == 2 and r.out == "" and r.err_lines == [
            "boids-render: --frames A:B: a loop is rendered whole (its first frames depend "
            "on its last): expected --frames N or --duration S"], (frames, r.out, r.err)


@pytest.mark.parametrize("text, time", [
    ("12.5", Fraction(25, 2)), (".5", Fraction(1, 2)), ("7.", Fraction(7)),
    ("1e1", Fraction(10)), (" 3 ", Fraction(3)), ("31/60", Fraction(31, 60)),
    ("+31/60", Fraction(31, 60)), ("1e-3", Fraction(1, 1000)), ("+5", Fraction(5)),
    ("frame:45", Fraction(3, 2)), ("frame: 45", Fraction(3, 2))])
def test_a_still_time_reads_as_written(text, time):
    from render.errors import UsageError
    from render.options import parse_time, seconds

    assert parse_time(text, Fraction(30)) == time
    assert parse_time(seconds(time), Fraction(30)) == time  # as a still records it
    with pytest.raises(UsageError, match=r"expected a time ≥ 0"):  # not "seconds or frame"
        parse_time(seconds(-time), Fraction(30))


@pytest.mark.parametrize("time, says", [
    ("frame:15.5", "--still frame:15.5: expected seconds (12.5) or frame:N (frame:750): "
                   "frame:15 or frame:16"),
    ("frame:15.0", "--still frame:15.0: expected seconds (12.5) or frame:N (frame:750): "
                   "frame:15"),
    ("-1", "--still -1: expected a time ≥ 0 (0 is the clip's first frame)"),
    # Python reads these as 10, 12 and frame 10: typos of a time here.
    *((time, f"--still {time}: expected seconds (12.5) or frame:N (frame:750)")
      for time in ("1_0", "١٢", "frame:1_0", "frame:+3", "12s")),
])
def test_a_still_time_it_cannot_take_is_offered_the_nearest(cli, small_scene, tmp_path,
                                                            time, says):
    r = cli(small_scene, "--still", time, "-o", tmp_path / "x.png")
    assert r.code == 2 and r.err_lines == [f"boids-render: {says}"], r.err
