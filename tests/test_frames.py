"""Sequences of frames: every suffix writes its own format (read back by magic number and
a real reader) or is refused; OpenEXR frames hold the PNG frames' picture in linear light,
premultiplied; --resume and --no-overwrite keep EXR and JPEG frames as they keep PNG ones."""

from __future__ import annotations

import sys
from fractions import Fraction

import numpy as np
import pytest
from PIL import Image

from render import states
from render.cli import main
from render.encode import FRAME_SUFFIXES, VIDEO_SUFFIXES
from render.encode.images import FRAME_FORMATS

MAGIC = {".png": b"\x89PNG\r\n\x1a\n", ".exr": b"\x76\x2f\x31\x01", ".jpg": b"\xff\xd8\xff",
         ".jpeg": b"\xff\xd8\xff"}


def read_exr(path) -> tuple[dict, np.ndarray]:
    """The header and the (h, w, 4) float RGBA pixels of an EXR file, by OpenEXR."""
    import OpenEXR

    with OpenEXR.File(str(path)) as exr:
        return dict(exr.header()), exr.channels()["RGBA"].pixels.copy()


def read_any(path, suffix) -> tuple[int, int]:
    """The size (w, h) of a frame, read by the format's own reader."""
    if suffix == ".exr":
        return read_exr(path)[1].shape[1::-1]
    with Image.open(path) as im:
        im.load()
        assert im.format == {".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG"}[suffix]
        return im.size


def test_every_frame_suffix_has_a_format():
    assert tuple(FRAME_FORMATS) == FRAME_SUFFIXES == tuple(MAGIC)


@pytest.mark.parametrize("suffix", FRAME_SUFFIXES)
def test_a_frame_pattern_writes_the_format_its_suffix_names(cli, small_scene, tmp_path,
                                                            suffix):
    r = cli(small_scene, "-o", f"{tmp_path}/seq/f_%03d{suffix}", "--frames", "2", "--quiet")
    assert r.code == 0, r.err
    names = sorted(p.name for p in (tmp_path / "seq").iterdir())
    assert names == [f"f_000{suffix}", f"f_001{suffix}"]
    for name in names:
        assert (tmp_path / "seq" / name).read_bytes().startswith(MAGIC[suffix])
        assert read_any(tmp_path / "seq" / name, suffix) == (160, 90)


def test_a_folder_means_png(cli, small_scene, tmp_path):
    assert cli(small_scene, "-o", f"{tmp_path}/seq/", "--frames", "1", "--quiet").code == 0
    assert (tmp_path / "seq" / "frame_00000.png").read_bytes().startswith(MAGIC[".png"])


@pytest.mark.parametrize("name", ["100%", "take%d", "v%03d"])
def test_a_folder_named_with_a_percent_sign_is_a_folder_not_a_pattern(cli, small_scene,
                                                                     tmp_path, name):
    """`-o "grades/100%/"`: the folder's name is its own (a % in a pattern is written %%,
    but this is no pattern), even where it reads as one (`take%d/` was refused as a
    pattern without a suffix); resumed, and the account names it as given."""
    folder = tmp_path / name
    assert cli(small_scene, "-o", f"{folder}/", "--frames", "2", "--quiet").code == 0
    r = cli(small_scene, "-o", f"{folder}/", "--frames", "3", "--resume")
    assert r.code == 0, r.err
    assert sorted(p.name for p in folder.iterdir()) == [f"frame_0000{k}.png" for k in range(3)]
    assert f"{folder}/: kept 2 frames already there (--resume), wrote 1" in r.err, r.err


@pytest.mark.parametrize("pattern", ["f_%04d.tif", "f_%04d.gif", "f_%04d.mp4", "f_%04d",
                                     "f_%04d.PNG.bak"])
def test_a_frame_pattern_of_another_suffix_is_refused_with_those_it_can_write(
        cli, small_scene, tmp_path, pattern):
    r = cli(small_scene, "-o", f"{tmp_path}/{pattern}", "--frames", "1")
    assert r.code == 2
    assert "expected one of .png, .exr, .jpg" in r.err and len(r.err_lines) == 1
    assert list(tmp_path.iterdir()) == [tmp_path / "small.toml"]


@pytest.mark.parametrize("pattern, message", [
    ("f_%4d.exr", "f_%4d.exr: %4d pads the frame number with spaces; expected %04d"),
    ("f_####.exr", "f_####.exr: frames are numbered by a %0Nd pattern, not #: write "),
    ("f_##.png", "write "),
])
def test_a_compositors_padding_is_refused_with_the_pattern_to_write(cli, small_scene,
                                                                   tmp_path, pattern, message):
    r = cli(small_scene, "-o", f"{tmp_path}/{pattern}", "--frames", "1")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert message in r.err
    if "#" in pattern:
        assert r.err.strip().endswith(f"{tmp_path}/f_%0{pattern.count('#')}d{pattern[-4:]}")
    assert list(tmp_path.iterdir()) == [tmp_path / "small.toml"]


@pytest.mark.parametrize("pattern, said, meant", [
    ("f_%03x.png", "%03x is not a frame number", "f_%03d.png"),
    ("f_%3i.exr", "%3i is not a frame number", "f_%03d.exr"),
    ("f_%s.jpg", "%s is not a frame number", "f_%05d.jpg"),
    ("100%.png", "a % alone is not a frame number", "100%%_%05d.png"),
])
def test_a_conversion_other_than_a_frame_number_is_refused_with_the_pattern_to_write(
        cli, small_scene, tmp_path, pattern, said, meant):
    # These read as an unknown suffix ("unsupported output .png; expected one of ...,
    # a pattern such as out/frame_%05d.png"), the .png they had among those listed.
    r = cli(small_scene, "-o", f"{tmp_path}/{pattern}", "--frames", "1")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert said in r.err and r.err.strip().endswith(f"write {tmp_path}/{meant}"), r.err
    r = cli(small_scene, "-o", f"{tmp_path}/{meant}", "--frames", "1", "-q")
    assert r.code == 0, r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["small.toml", meant % 0])


@pytest.mark.parametrize("name", ["clip.tif", "clip.avi", "clip", "clip.png.part"])
def test_a_clip_of_an_unknown_suffix_is_refused_with_those_it_can_write(
        cli, small_scene, tmp_path, name):
    r = cli(small_scene, "-o", tmp_path / name, "--frames", "1")
    assert r.code == 2
    assert f"expected one of {', '.join(VIDEO_SUFFIXES)}" in r.err
    assert len(r.err_lines) == 1


def test_jpeg_frames_refuse_transparency(cli, small_scene, tmp_path):
    r = cli(small_scene, "-o", f"{tmp_path}/f_%02d.jpg", "--frames", "1", "--transparent")
    assert r.code == 2 and "alpha" in r.err and ".exr" in r.err


def test_jpeg_frames_are_previews_of_the_png_frames(cli, small_scene, tmp_path):
    for suffix in (".png", ".jpg"):
        assert cli(small_scene, "-o", f"{tmp_path}/f_%d{suffix}", "--frames", "1",
                   "--quiet").code == 0
    with Image.open(tmp_path / "f_0.png") as png, Image.open(tmp_path / "f_0.jpg") as jpg:
        diff = np.abs(np.asarray(png.convert("RGB"), int) - np.asarray(jpg, int))
    assert diff.mean() < 3


def test_sequence_frames_say_their_colours_and_rate(cli, small_scene, tmp_path):
    """A compositor's reader takes a PNG frame as sRGB (its sRGB chunk, as a still's) and
    an OpenEXR frame or still at its frame rate and in sRGB's primaries (the standard
    framesPerSecond and chromaticities attributes)."""
    for suffix in (".png", ".exr"):
        r = cli(small_scene, "-o", f"{tmp_path}/f_%d{suffix}", "--frames", "2", "--quiet",
                "--size", "64x36", "--fps", "24000/1001")
        assert r.code == 0, r.err
    with Image.open(tmp_path / "f_1.png") as im:
        assert im.info.get("srgb") == 0  # the perceptual rendering intent
    r = cli(small_scene, "--still", "frame:1", "-o", tmp_path / "still.exr", "--size",
            "64x36", "--fps", "24000/1001")
    assert r.code == 0, r.err
    srgb = (0.64, 0.33, 0.30, 0.60, 0.15, 0.06, 0.3127, 0.3290)  # IEC 61966-2-1's primaries
    for name in ("f_1.exr", "still.exr"):
        header, _ = read_exr(tmp_path / name)
        assert header["framesPerSecond"] == Fraction(24000, 1001)
        assert header["chromaticities"] == pytest.approx(srgb, abs=1e-6)


def srgb_to_linear(encoded: np.ndarray) -> np.ndarray:
    """IEC 61966-2-1, written out again here so the test does not trust the code's."""
    c = encoded / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


@pytest.mark.parametrize("transparent", [False, True])
def test_exr_frames_are_the_png_frames_in_linear_light_premultiplied(
        cli, small_scene, tmp_path, transparent):
    extra = ["--transparent"] if transparent else []
    for suffix in (".png", ".exr"):
        r = cli(small_scene, "-o", f"{tmp_path}/f_%d{suffix}", "--frames", "2", "--quiet",
                "--size", "320x180", "--set", "palette.theme=light", *extra)
        assert r.code == 0, r.err
    header, rgba = read_exr(tmp_path / "f_1.exr")
    assert rgba.dtype == np.float16 and rgba.shape == (180, 320, 4)
    assert {c.name for c in header["channels"]} == set("RGBA")
    with Image.open(tmp_path / "f_1.png") as im:
        png = np.asarray(im.convert("RGBA")).astype(np.float64)
    alpha = png[..., 3] / 255
    assert np.array_equal(rgba[..., 3].astype(np.float64), alpha.astype(np.float16))
    if transparent:
        assert (alpha == 0).mean() > 0.5 and (alpha > 0.5).any()
    else:
        assert (alpha == 1).all()
    want = srgb_to_linear(png[..., :3]) * alpha[..., None]
    # Within half-float rounding (11 significant bits) of the decoded PNG.
    assert np.allclose(rgba[..., :3].astype(np.float64), want, rtol=2 ** -10, atol=2 ** -24)
    # Linear, not encoded: a mid-grey level decodes far below its code value.
    assert np.nanmax(rgba[..., :3].astype(np.float64) - png[..., :3] / 255) <= 1e-3


def test_exr_frames_without_openexr_name_the_install_command(cli, small_scene, tmp_path,
                                                             monkeypatch):
    monkeypatch.setitem(sys.modules, "OpenEXR", None)  # import OpenEXR raises ImportError
    r = cli(small_scene, "-o", f"{tmp_path}/f_%02d.exr", "--frames", "1")
    assert r.code == 2
    assert "pip install 'boids-render[exr]'" in r.err and len(r.err_lines) == 1
    assert list(tmp_path.iterdir()) == [tmp_path / "small.toml"]


def count_draws(monkeypatch) -> list[int]:
    real = states.draw_frame
    drawn: list[int] = []

    def draw(*args, **kwargs):
        drawn.append(len(drawn))
        return real(*args, **kwargs)

    monkeypatch.setattr(states, "draw_frame", draw)
    return drawn


@pytest.mark.parametrize("suffix", [".exr", ".jpg"])
def test_resume_keeps_complete_frames_of_any_format(cli, small_scene, tmp_path, monkeypatch,
                                                    suffix):
    pattern = f"{tmp_path}/seq/f_%02d{suffix}"
    assert cli(small_scene, "-o", pattern, "--frames", "4", "--quiet").code == 0
    whole = {k: (tmp_path / "seq" / f"f_{k:02d}{suffix}").read_bytes() for k in range(4)}
    (tmp_path / "seq" / f"f_01{suffix}").write_bytes(whole[1][:len(whole[1]) // 2])
    (tmp_path / "seq" / f"f_03{suffix}").unlink()
    kept = (tmp_path / "seq" / f"f_02{suffix}").stat().st_ino
    drawn = count_draws(monkeypatch)
    r = cli(small_scene, "-o", pattern, "--frames", "4", "--resume", "--quiet")
    assert r.code == 0, r.err
    assert len(drawn) == 2  # the truncated frame and the missing one
    assert r.err == ""  # no reader complained aloud
    assert (tmp_path / "seq" / f"f_02{suffix}").stat().st_ino == kept
    for k in range(4):
        assert (tmp_path / "seq" / f"f_{k:02d}{suffix}").read_bytes() == whole[k], k


def test_resume_draws_damaged_exr_frames_again_quietly(small_scene, tmp_path, monkeypatch,
                                                       capfd):
    """A frame cut short anywhere, even by its last byte (which OpenEXR's own isComplete
    passes), is drawn again; and the library's reports of the damage, written by its C
    code straight to the process's stderr, do not reach the user."""
    pattern = f"{tmp_path}/f_%02d.exr"
    argv = [str(small_scene), "-o", pattern, "--frames", "5", "--quiet"]
    assert main(argv) == 0
    files = [tmp_path / f"f_{k:02d}.exr" for k in range(5)]
    whole = [f.read_bytes() for f in files]
    files[1].write_bytes(whole[1][:-1])
    files[2].write_bytes(whole[2][:len(whole[2]) // 3])
    files[3].write_bytes(whole[3][:400])  # inside the table of blocks
    files[4].unlink()
    capfd.readouterr()
    drawn = count_draws(monkeypatch)
    assert main(argv + ["--resume"]) == 0
    assert len(drawn) == 4
    assert [f.read_bytes() for f in files] == whole
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("suffix", [".exr", ".jpg"])
def test_no_overwrite_skips_existing_frames_of_any_format(cli, small_scene, tmp_path,
                                                          monkeypatch, suffix):
    seq = tmp_path / "seq"
    seq.mkdir()
    (seq / f"f_1{suffix}").write_bytes(b"another machine's")
    drawn = count_draws(monkeypatch)
    r = cli(small_scene, "-o", f"{seq}/f_%d{suffix}", "--frames", "3", "--no-overwrite",
            "--quiet")
    assert r.code == 0, r.err
    assert len(drawn) == 2
    assert (seq / f"f_1{suffix}").read_bytes() == b"another machine's"


def test_the_estimate_knows_each_format_on_disk(cli, small_scene, tmp_path):
    from render import budget
    from render.scene import load_scene

    scene = load_scene(small_scene, [("output.size", '"1920x1080"', "test"),
                                     ("output.frames", "100", "test")])
    sizes = {out: budget.estimate(scene, out).disk
             for out in ("f_%04d.exr", "f_%04d.jpg", "frames/", "a.gif", "a.webp", "a.apng")}
    assert all(size > 0 for size in sizes.values())
    assert sizes["frames/"] == 100 * 1920 * 1080 * budget.FILE_BYTES_PER_PX[".png"]
    assert sizes["f_%04d.exr"] > sizes["frames/"] > sizes["a.webp"] * 0.5
    assert budget.estimate(scene, "f_%04d.exr").bytes > budget.estimate(scene, "frames/").bytes
    # --frames 60:100 draws and writes 40 frames (the flock is still simulated from 0).
    part = budget.estimate(scene, "frames/", 60)
    assert part.disk == 40 * 1920 * 1080 * budget.FILE_BYTES_PER_PX[".png"]
    assert budget.estimate(scene, None, 60).seconds == budget.estimate(scene, None).seconds
    whole_npz, part_npz = budget.estimate(scene, "f.npz"), budget.estimate(scene, "f.npz", 60)
    assert part_npz.disk < 0.5 * whole_npz.disk
    r = cli(small_scene, "--check", "-o", f"{tmp_path}/f_%04d.exr")
    assert r.code == 0 and " on disk and " in r.out
