"""Stills for print: the same picture as the clip's frame, any size, with its scene inside."""

from __future__ import annotations

import io
import json
import shutil
import struct
from fractions import Fraction

import cairo
import numpy as np
import pytest
from PIL import Image

from conftest import SCENES
from render.encode.still import add_chunks, read_chunks


def pixels(path) -> np.ndarray:
    surface = cairo.ImageSurface.create_from_png(str(path))
    h, w = surface.get_height(), surface.get_width()
    return np.frombuffer(bytes(surface.get_data()), np.uint8).reshape(h, -1, 4)[:, :w, :3] \
        .astype(float)


@pytest.fixture
def still(cli, small_scene, tmp_path):
    def make(time, size="320x180", *extra):
        out = tmp_path / f"still_{time.replace(':', '_')}_{size}_{len(extra)}.png"
        r = cli(small_scene, "--still", time, "--size", size, "-o", out, *extra)
        assert r.code == 0, r.err
        return out
    return make


def test_still_is_the_png_sequence_frame_at_that_time(cli, small_scene, still, tmp_path):
    r = cli(small_scene, "-o", f"{tmp_path}/seq/", "--size", "320x180", "--fps", "4",
            "--frames", "4", "--quiet")
    assert r.code == 0, r.err
    frame3 = tmp_path / "seq" / "frame_00003.png"
    assert np.array_equal(pixels(still("0.75")), pixels(frame3))


def test_a_still_named_by_a_frame_pattern_takes_its_frames_name(cli, small_scene, tmp_path):
    r = cli(small_scene, "-o", f"{tmp_path}/seq/", "--size", "320x180", "--fps", "4",
            "--frames", "4", "--quiet")
    assert r.code == 0, r.err
    r = cli(small_scene, "--still", "0.75", "-o", f"{tmp_path}/one/f_%03d.png", "--size",
            "320x180", "--fps", "4", "--quiet")
    assert r.code == 0, r.err
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["f_003.png"]
    assert np.array_equal(pixels(tmp_path / "one" / "f_003.png"),
                          pixels(tmp_path / "seq" / "frame_00003.png"))
    r = cli(small_scene, "--still", "0.8", "-o", f"{tmp_path}/one/g_%03d.png", "--fps", "4")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert "0.8 s falls between frames 3 and 4 at 4 fps" in r.err
    assert "--still frame:3" in r.err
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["f_003.png"]
    # A % that is no frame number is part of the name, filled or not.
    for name, written in (("50%.png", "50%.png"), ("f_%03d_100%%.png", "f_003_100%.png")):
        r = cli(small_scene, "--still", "0.75", "-o", f"{tmp_path}/two/{name}", "--fps", "4",
                "--size", "64x36", "--quiet")
        assert r.code == 0, r.err
        assert (tmp_path / "two" / written).is_file()


@pytest.mark.parametrize("suffix", [".jpg", ".exr"])
def test_a_jpeg_or_exr_still_is_that_sequences_frame_at_that_time(cli, small_scene, tmp_path,
                                                                  suffix):
    from test_frames import read_exr

    r = cli(small_scene, "-o", f"{tmp_path}/seq/f_%02d{suffix}", "--size", "320x180", "--fps",
            "4", "--frames", "4", "--quiet")
    assert r.code == 0, r.err
    out = tmp_path / f"still{suffix}"
    r = cli(small_scene, "--still", "0.75", "--size", "320x180", "-o", out, "--dpi", "150")
    assert r.code == 0, r.err
    frame = tmp_path / "seq" / f"f_03{suffix}"
    if suffix == ".exr":
        assert np.array_equal(read_exr(out)[1], read_exr(frame)[1])
        return
    with Image.open(out) as still_image, Image.open(frame) as frame_image:
        assert still_image.format == "JPEG" and still_image.info["dpi"] == (150, 150)
        assert np.array_equal(np.asarray(still_image), np.asarray(frame_image))


@pytest.mark.parametrize("suffix", [".jpg", ".exr"])
def test_a_jpeg_or_exr_still_records_its_scene_for_info_and_from(cli, still, tmp_path,
                                                                 suffix):
    from test_frames import read_exr

    first = tmp_path / f"first{suffix}"
    png = still("0.5", "320x180", "--set", "scene.seed=11")
    assert cli("--from", png, "-o", first, "--quiet").code == 0
    info = cli("--info", first)
    assert info.code == 0, info.err
    assert "seed: 11" in info.out and "time: 0.5" in info.out and "[flock]" in info.out
    assert "dpi: 72" in info.out  # an EXR's in its standard xDensity
    again = tmp_path / f"again{suffix}"
    assert cli("--from", first, "-o", again, "--quiet").code == 0
    if suffix == ".exr":
        assert np.array_equal(read_exr(again)[1], read_exr(first)[1])
    else:
        assert again.read_bytes() == first.read_bytes()
    # A still at another dpi keeps it through the file and back to a PNG.
    dense = tmp_path / f"dense{suffix}"
    assert cli("--from", png, "-o", dense, "--dpi", "150", "--quiet").code == 0
    assert cli("--from", dense, "-o", tmp_path / "back.png", "--quiet").code == 0
    with Image.open(tmp_path / "back.png") as back:
        assert back.info["dpi"] == pytest.approx((150, 150), abs=0.1)  # pHYs: per metre


def test_a_scene_too_long_for_a_jpeg_comment_is_recorded_in_pieces(tmp_path):
    # One comment segment holds 65,533 bytes: a longer scene (a camera path of a thousand
    # keyframes) was left out, and --from said the still recorded none.
    from render.encode.images import encode_jpeg
    from render.encode.still import jpeg_comments, provenance, read_record
    from render.errors import UsageError

    pixels = np.zeros((8, 8, 4), np.uint8)
    for scene in ("x = 1\n", "x = 1\n" * 20_000, "é = \"ü\"\n" * 30_000):
        record = provenance(scene, 3, Fraction(1, 2), "1.0")
        assert all(len(c) <= 65533 for c in jpeg_comments(record))
        path = tmp_path / "a.jpg"
        path.write_bytes(encode_jpeg(pixels, 300.0, record))
        dpi, back = read_record(path)
        assert back == record and dpi == pytest.approx(300.0)
        with Image.open(path) as image:
            image.load()  # the pixels decode past the comments
    assert len(jpeg_comments(record)) == 6  # 300,000 bytes of scene: the record, 5 pieces
    # a piece lost (an editor that kept one comment) is said, not read as no scene
    data = path.read_bytes()
    cut = data.rfind(b"boids-render:scene\n") - 4
    size = int.from_bytes(data[cut + 2:cut + 4], "big")
    (tmp_path / "cut.jpg").write_bytes(data[:cut] + data[cut + 2 + size:])
    with pytest.raises(UsageError, match="recorded scene is cut short .4 of the 5 "):
        read_record(tmp_path / "cut.jpg")


def test_a_jpeg_still_has_no_alpha_to_keep(cli, small_scene, tmp_path):
    r = cli(small_scene, "--still", "0.5", "-o", tmp_path / "x.jpg", "--transparent")
    assert r.code == 2 and "JPEG has no alpha channel" in r.err and ".exr" in r.err
    # Drawn again from a transparent still, the way out is to say it opaque.
    alpha = tmp_path / "alpha"
    assert cli(small_scene, "--still", "0.5", "-o", alpha / "a.png", "--transparent",
               "-q").code == 0
    r = cli("--from", alpha / "a.png", "-o", alpha / "a.jpg")
    assert r.code == 2 and r.err.strip().endswith(
        "for an opaque one, drop --transparent (or --set output.transparent=false where the "
        "scene, or the still drawn again, sets it)"), r.err
    assert cli("--from", alpha / "a.png", "-o", alpha / "a.jpg", "--set",
               "output.transparent=false", "-q").code == 0
    shutil.rmtree(alpha)
    r = cli(small_scene, "--still", "0.5", "-o", tmp_path / "x.tif")
    assert r.code == 2 and "x.tif: a still is one file written as" in r.err and ".jpg" in r.err
    assert "clip" not in r.err
    r = cli(small_scene, "--still", "0.5", "-o", tmp_path / "x.gif")
    assert r.code == 2 and r.err.strip().endswith("(.gif is a clip's: drop --still)"), r.err
    assert cli(small_scene, "--still", "0.5", "-o", tmp_path / "x.png", "-q").code == 0
    r = cli("--from", tmp_path / "x.png", "-o", tmp_path / "x.mp4")
    assert r.code == 2 and r.err.strip().endswith("(.mp4 is a clip's: --from draws a still "
                                                  "again)"), r.err
    (tmp_path / "x.png").unlink()
    assert [p for p in tmp_path.iterdir() if p != small_scene] == []


@pytest.mark.parametrize("args, message", [
    (("-o", "{tmp}/x.jpg", "--dpi", "70000"), "whole number of dpi from 1 to 65535: "
                                              "--dpi 65535"),
    (("-o", "{tmp}/x.jpg", "--dpi", "72.5"), "from 1 to 65535: --dpi 72 or 73"),
    (("-o", "{tmp}/x.jpg", "--dpi", "72.5"), "--dpi 72.5: a JPEG records its resolution as a "
                                             "whole number of dpi"),
    (("-o", "{tmp}/x.png", "--dpi", "0.001"),  # it recorded 0 px a metre, read back as 72
     "--dpi 0.001: a PNG records its resolution in whole pixels a metre: expected at least"),
    (("-o", "{tmp}/x.png/",), "a still is one file"),
    (("-o", "{tmp}/x.png", "--tile-size", "64", "--bit-depth", "16"),
     "--tile-size draws opaque 8-bit stills without motion blur, and this is a 16-bit still"),
    (("-o", "{tmp}/x.png", "--paper", "A0", "--dpi", "600", "--bit-depth", "16"),
     "got 28087x19866: on this sheet the most is --dpi 349"),  # 16383/28087 of 600
    (("-o", "{tmp}/x.png", "--paper", "A0", "--dpi", "100000"),
     "--paper A0 --dpi 100000: expected each side in 1..1000000 px, got 4681102x3311024: on "
     "this sheet the most is --dpi 21362 ("),  # 1189 mm at 21,362 dpi: 999,981 px
    (("-o", "{tmp}/x.png", "--tile-size", "64", "--transparent"),
     "and this is a transparent still (output.transparent: drawn whole): drop --tile-size"),
    (("-o", "{tmp}/folder.jpg",), "a still is one file"),
])
def test_a_still_refuses_what_its_file_cannot_hold(cli, small_scene, tmp_path, args, message):
    (tmp_path / "folder.jpg").mkdir()
    r = cli(small_scene, "--still", "0.5", *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert r.code == 2 and message in r.err, r.err
    assert sorted(p.name for p in tmp_path.iterdir() if p != small_scene) == ["folder.jpg"]


def test_info_on_a_damaged_jpeg_or_exr_says_so(cli, still, tmp_path):
    png = still("0.5")
    for suffix in (".jpg", ".exr"):
        whole = tmp_path / f"whole{suffix}"
        assert cli("--from", png, "-o", whole, "-q").code == 0
        cut = tmp_path / f"cut{suffix}"
        cut.write_bytes(whole.read_bytes()[:12])
        r = cli("--info", cut)
        assert r.code == 2 and "not a readable" in r.err, r.err


def test_a_jpeg_record_survives_a_comment_another_program_adds(cli, still, tmp_path):
    first = tmp_path / "first.jpg"
    assert cli("--from", still("0.5"), "-o", first, "-q").code == 0
    data = first.read_bytes()
    for note in (b"edited elsewhere", b'{"a": "b"}'):  # text, or JSON of its own
        segment = b"\xff\xfe" + (len(note) + 2).to_bytes(2, "big") + note
        (tmp_path / "noted.jpg").write_bytes(data[:2] + segment + data[2:])
        r = cli("--info", tmp_path / "noted.jpg")
        assert r.code == 0 and "time: 0.5" in r.out, (note, r.err)


def test_a_jpeg_still_past_cairos_side_is_refused_not_tiled(cli, small_scene, tmp_path):
    r = cli(small_scene, "--still", "0.5", "-o", tmp_path / "x.jpg", "--size", "40000x100")
    assert r.code == 2, r.err
    assert "a JPEG still (drawn whole)" in r.err and "a PNG still is drawn in tiles" in r.err
    assert [p for p in tmp_path.iterdir() if p != small_scene] == []


def test_frame_n_is_n_over_the_scenes_fps(still):
    # The small scene runs at 30 fps: frame 15 is 0.5 s.
    assert np.array_equal(pixels(still("frame:15")), pixels(still("0.5")))


def test_a_still_twice_the_size_is_the_same_picture_with_more_detail(still):
    # Widths in world units only: the pixel floor would (rightly) thicken the small one.
    world_widths = ("--set", "render.min_width_px=0", "--set", "render.width_min=0.3",
                    "--set", "render.width_max=0.5")
    one = pixels(still("0.5", "320x180", *world_widths))
    two = pixels(still("0.5", "640x360", *world_widths))
    later = pixels(still("1.0", "320x180", *world_widths))
    down = two.reshape(180, 2, 320, 2, 3).mean(axis=(1, 3))
    same_picture = np.abs(down - one).mean()
    half_second = np.abs(later - one).mean()
    assert same_picture < 0.3 * half_second
    # Not an upscale: the 2x still differs from the 1x still blown up 2x by more than the
    # 1x still differs from the 2x one averaged down.
    upscale = one.repeat(2, axis=0).repeat(2, axis=1)
    assert np.abs(two - upscale).mean() > 1.5 * same_picture


def test_still_records_dpi_srgb_and_the_scene(cli, small_scene, tmp_path):
    out = tmp_path / "a6.png"
    r = cli(small_scene, "--still", "0.5", "--paper", "A4", "--dpi", "40", "--landscape",
            "-o", out)
    assert r.code == 0, r.err
    with Image.open(out) as im:
        im.load()  # text chunks after the pixels are read with them
        assert im.size == (468, 331)  # 297 x 210 mm at 40 dpi
        assert im.info["dpi"] == pytest.approx((40, 40), abs=0.01)
        assert "srgb" in im.info
        assert "[flock]" in im.info["boids-render:scene"]
        assert im.info["boids-render:time"] == "1/2"
    dpi, text = read_chunks(out)
    assert dpi == pytest.approx(40, abs=0.01)
    assert text["boids-render:seed"] == "3"
    # Redrawn on another sheet (A4 at 30 dpi: 210 x 297 mm, 248 x 351 px) it is turned as
    # it was: a portrait sheet would show another part of the world. A scene's sheet is
    # turned as its frame is (160x90: landscape) unless told.
    turned = {}
    for name, source, flags in (("again", out, ()), ("scene", None, ()),
                                ("portrait", None, ("--portrait",)),
                                ("portrait-again", "portrait", ()),
                                ("turned", "portrait", ("--landscape",))):
        if source is None:
            r = cli(small_scene, "--still", "0.5", "--paper", "A4", "--dpi", "30", *flags,
                    "-o", tmp_path / f"{name}.png")
        else:
            r = cli("--from", tmp_path / f"{source}.png" if source != out else out,
                    "--paper", "A4", "--dpi", "30", *flags, "-o", tmp_path / f"{name}.png")
        assert r.code == 0, r.err
        with Image.open(tmp_path / f"{name}.png") as im:
            turned[name] = im.size
    assert turned == {"again": (351, 248), "scene": (351, 248), "portrait": (248, 351),
                      "portrait-again": (248, 351), "turned": (351, 248)}


def test_info_prints_what_a_still_records(cli, still):
    r = cli("--info", still("0.5"))
    assert r.code == 0, r.err
    for needle in ("version: ", "seed: 3", "time: 0.5", "scene-sha256: ", "bit-depth: 8\n",
                   "[scene]"):
        assert needle in r.out
    deep = still("0.5", "320x180", "--bit-depth", "16")
    assert "bit-depth: 16\n" in cli("--info", deep).out


def test_a_still_whose_recorded_scene_was_edited_says_so(cli, small_scene, tmp_path):
    # The scene's digest is recorded beside it: a scene changed since (here in a JPEG's
    # comment, the same length) was read as if the still had been drawn from it.
    out = tmp_path / "s.jpg"
    assert cli(small_scene, "--still", "0.5", "-o", out, "-q").code == 0
    assert "edited" not in cli("--info", out).out
    data = out.read_bytes()
    assert data.count(b"count = 200") == 1
    out.write_bytes(data.replace(b"count = 200", b"count = 201"))
    r = cli("--info", out)
    assert r.code == 0 and "(the scene below no longer matches it: edited since the file " \
        "was written)" in r.out and "count = 201" in r.out, r.out
    r = cli("--from", out, "-o", tmp_path / "again.png")
    assert r.code == 0 and "its recorded scene no longer matches the digest beside it " \
        "(edited since the file was written)" in r.err, r.err


def test_an_openexr_still_reports_its_half_floats(cli, small_scene, tmp_path):
    out = tmp_path / "s.exr"
    assert cli(small_scene, "--still", "0.5", "-o", out, "-q").code == 0
    assert "bit-depth: 16 (half float, linear light)\n" in cli("--info", out).out


def test_info_into_a_reader_that_stops_early_says_nothing_more(still):
    # `boids-render --info still.png | head -1`: the reader leaves before the scene's TOML.
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)
    proc = subprocess.run([sys.executable, "-m", "render", "--info", str(still("0.5"))],
                          stdout=write, stderr=subprocess.PIPE, text=True)
    os.close(write)
    assert (proc.returncode, proc.stderr) == (0, "")


@pytest.mark.parametrize("dpi", ["72.5", "150", "299.7"])
def test_a_stills_dpi_reads_back_as_it_was_given(cli, small_scene, tmp_path, dpi):
    # pHYs holds whole pixels a metre: 150 dpi came back as 150.0124, and a PDF drawn
    # --from the PNG had another page size.
    out = tmp_path / "s.png"
    assert cli(small_scene, "--still", "0.5", "--size", "32x18", "--dpi", dpi, "-o",
               out).code == 0
    assert read_chunks(out)[0] == float(dpi)


def test_from_rerenders_the_same_picture_from_the_file_alone(cli, still, tmp_path):
    first = still("0.5")
    again = tmp_path / "again.png"
    r = cli("--from", first, "-o", again)
    assert r.code == 0, r.err
    assert np.array_equal(pixels(first), pixels(again))
    # Overrides still apply on top of the recorded scene.
    other = tmp_path / "other.png"
    assert cli("--from", first, "--seed", "4", "-o", other).code == 0
    assert not np.array_equal(pixels(first), pixels(other))


@pytest.mark.parametrize("suffix, extra", [(".png", ("--bit-depth", "16")), (".jpg", ())])
def test_from_keeps_the_still_s_dpi_and_bit_depth_unless_told_otherwise(
        cli, small_scene, tmp_path, suffix, extra):
    first = tmp_path / f"first{suffix}"
    r = cli(small_scene, "--still", "0.5", "--size", "160x90", "--dpi", "150", *extra,
            "-o", first, "-q")
    assert r.code == 0, r.err
    again, other = tmp_path / f"again{suffix}", tmp_path / f"other{suffix}"
    assert cli("--from", first, "-o", again, "-q").code == 0
    assert first.read_bytes() == again.read_bytes()  # the same file: pixels, dpi, record
    with Image.open(again) as image:
        assert round(image.info["dpi"][0]) == 150
    if suffix == ".png":
        assert again.read_bytes()[24] == 16  # IHDR's bit depth
        assert cli("--from", first, "--bit-depth", "8", "--dpi", "300", "-o", other,
                   "-q").code == 0
        assert other.read_bytes()[24] == 8
        with Image.open(other) as image:
            assert round(image.info["dpi"][0]) == 300


def test_from_re_renders_a_still_of_a_clip_that_ends_before_its_landing(cli, tmp_path):
    """A duration over the file's landing_at is an excerpt; the still's record holds both
    at one rank, and --from still reads it as the excerpt it was."""
    first = tmp_path / "excerpt.png"
    r = cli(SCENES / "murmuration.toml", "--set", "flock.count=200", "--set",
            "scene.settle_steps=20", "--size", "96x54", "--set", "scene.duration=1",
            "--still", "0.5", "-o", first, "-q")
    assert r.code == 0, r.err
    again = tmp_path / "again.png"
    r = cli("--from", first, "-o", again, "-q")
    assert r.code == 0, r.err
    assert first.read_bytes() == again.read_bytes()


@pytest.mark.parametrize("fov", [None, "20.0"])
def test_a_3d_still_records_where_its_default_camera_stood(cli, tmp_path, fov):
    """The film leaves its camera to the default, 300 m on the roost's −y side at eye
    height looking at the roost's altitude: the still names that place (with another
    fov too), so --from draws the same picture whatever the default becomes."""
    first = tmp_path / "still.png"
    more = () if fov is None else ("--set", f"camera.fov={fov}")
    r = cli(SCENES / "murmuration.toml", "--set", "flock.count=200", "--set",
            "scene.settle_steps=20", "--size", "96x54", "--still", "0.5", "-o", first, "-q",
            *more)
    assert r.code == 0, r.err
    info = cli("--info", first).out
    camera = info[info.index("[camera]"):].split("\n[")[0]
    assert "position = [300.0, -131.25, 1.7]\n" in camera, camera
    assert "look_at = [300.0, 168.75, 50.0]\n" in camera, camera
    assert f"fov = {fov or '30.0'}\n" in camera, camera
    again = tmp_path / "again.png"
    assert cli("--from", first, "-o", again, "-q").code == 0
    assert first.read_bytes() == again.read_bytes()


def test_from_a_png_without_a_scene_is_bad_input(cli, tmp_path):
    plain = tmp_path / "plain.png"
    cairo.ImageSurface(cairo.FORMAT_RGB24, 4, 4).write_to_png(str(plain))
    r = cli("--from", plain, "-o", tmp_path / "x.png")
    assert r.code == 2 and "no boids-render scene" in r.err


def test_info_on_a_file_that_is_no_still_says_what_it_reads(cli, tmp_path):
    notes = tmp_path / "notes.png"
    notes.write_text("not a picture")
    r = cli("--info", notes)
    assert r.code == 2 and "not a PNG, JPEG or OpenEXR file" in r.err
    for missing in (tmp_path / "nothing.png", tmp_path):
        r = cli("--info", missing)
        assert r.code == 2 and "cannot read it" in r.err, r.err


def test_info_on_a_vector_still_or_a_sequence_frame_says_what_records_a_scene(
        cli, small_scene, tmp_path):
    assert cli(small_scene, "--still", "0", "-o", tmp_path / "s.svg", "-q").code == 0
    assert cli(small_scene, "--frames", "1", "-o", f"{tmp_path}/f_%d.png", "-q").code == 0
    for path, needle in ((tmp_path / "s.svg", "a PDF or SVG still records no scene"),
                         (tmp_path / "f_0.png", "a sequence's frame records only a digest")):
        r = cli("--info", path)
        assert r.code == 2 and needle in r.err and "--still" in r.err, r.err
        assert len(r.err_lines) == 1


def test_a_still_needs_a_still_format(cli, small_scene, tmp_path):
    r = cli(small_scene, "--still", "1", "-o", tmp_path / "x.mp4")
    assert r.code == 2 and ".png" in r.err
    assert cli(small_scene, "--still", "soon", "-o", tmp_path / "x.png").code == 2


def test_stills_may_have_odd_sizes(still):
    with Image.open(still("0.5", "321x181")) as im:
        assert im.size == (321, 181)


def test_chunks_survive_a_round_trip(tmp_path):
    buf = io.BytesIO()
    cairo.ImageSurface(cairo.FORMAT_RGB24, 3, 2).write_to_png(buf)
    path = tmp_path / "c.png"
    path.write_bytes(add_chunks(buf.getvalue(), {"k": "välue\nline"}, 300))
    dpi, text = read_chunks(path)
    assert dpi == pytest.approx(300, abs=0.01) and text == {"k": "välue\nline"}
    with Image.open(path) as im:  # and a third-party reader still takes the file
        im.load()
        assert im.info["k"] == "välue\nline"


def test_vector_stills_are_vectors_of_the_same_picture(cli, small_scene, tmp_path):
    for suffix in (".pdf", ".svg"):
        out = tmp_path / f"v{suffix}"
        r = cli(small_scene, "--still", "0.5", "--size", "320x180", "--dpi", "144", "-o", out)
        assert r.code == 0, r.err
        data = out.read_bytes()
        assert data.startswith(b"%PDF" if suffix == ".pdf" else b"<?xml")
        # Drawn as paths, with no rasterised fallback image embedded.
        assert b"/Subtype /Image" not in data and b"<image" not in data
    svg = (tmp_path / "v.svg").read_text()
    assert 'width="160pt" height="90pt"' in svg  # 320x180 px at 144 dpi
    assert svg.count("<path") >= 2


def test_vector_drawing_matches_the_raster_drawing():
    from render.draw.streaks import draw_frame, frame_paths
    from render.draw.surface import Canvas
    from render.draw.vector import paint_vector
    from render.scene import load_scene
    from render.sim.simulate import Simulation, frames
    from conftest import SCENES

    scene = load_scene(SCENES / "plate.toml", [("output.size", '"480x270"', "test")])
    sim = Simulation(scene)
    frame = next(frames(sim, scene.output.fps, 1))
    state = (frame.positions, frame.velocities, frame.snapshot.neighbours, sim.accent)
    raster = draw_frame(Canvas((480, 270)), scene, *state,
                        antialias=cairo.ANTIALIAS_DEFAULT)[:, :, :3].astype(float)
    canvas = Canvas((480, 270))
    paint_vector(canvas.context(), frame_paths(scene, (480, 270), *state,
                                               antialias=cairo.ANTIALIAS_DEFAULT))
    vector = canvas.flush()[:, :, :3].astype(float)
    assert np.abs(vector - raster).mean() < 0.5  # of 255: the same colour arithmetic


def test_motion_blur_still_is_the_sequence_frame_too(cli, small_scene, tmp_path):
    blur = ("--motion-blur", "4", "--set", "render.shutter_angle=270", "--size", "320x180")
    assert cli(small_scene, "-o", f"{tmp_path}/seq/", "--frames", "15:16", "--quiet",
               *blur).code == 0
    r = cli(small_scene, "--still", "frame:15", "-o", tmp_path / "s.png", *blur)
    assert r.code == 0, r.err
    assert np.array_equal(pixels(tmp_path / "s.png"),
                          pixels(tmp_path / "seq" / "frame_00015.png"))


def test_motion_blur_spreads_a_moving_bird_along_its_path(cli, write_scene, tmp_path):
    scene = write_scene("""
[scene]
settle_steps = 0
[world]
boundary = "wrap"
[flock]
count = 1
min_speed = 120.0
max_speed = 120.0
[render]
min_width_px = 0.0
width_min = 0.4
width_max = 0.4
opacity_min = 1.0
accent_every = 0
[output]
size = "640x360"
""")

    def ink(*extra):
        out = tmp_path / f"b{len(extra)}.png"
        assert cli(scene, "--still", "0.5", "-o", out, *extra).code == 0
        return np.abs(pixels(out) - pixels(out)[0, 0]).sum(axis=2)

    sharp = ink()
    blurred = ink("--motion-blur", "8", "--set", "render.shutter_angle=360")
    # 120 units/s for 1/60 s: the streak sweeps 2 world units (16 px) more ground, its
    # ink spread over more pixels, fainter at the ends, about as much of it in all.
    assert (blurred > 8).sum() > 1.1 * (sharp > 8).sum()
    assert blurred.sum() == pytest.approx(sharp.sum(), rel=0.1)
    assert blurred.max() <= sharp.max()


@pytest.mark.slow
def test_contact_sheet_holds_the_clips_own_frames(cli, small_scene, tmp_path):
    sheet_path = tmp_path / "sheet.png"
    r = cli(small_scene, "--contact-sheet", sheet_path, "--size", "320x180")
    assert r.code == 0, r.err
    sheet = pixels(sheet_path)
    # 4 x 3 thumbnails 480 px wide (at the frame's aspect), 8 px gaps, 22 px labels.
    assert sheet.shape[:2] == (3 * (270 + 8 + 22) + 8, 4 * (480 + 8) + 8)
    # The last thumbnail is the clip's last frame (the small scene: 30 frames), drawn at
    # the thumbnail's size.
    last = tmp_path / "last.png"
    assert cli(small_scene, "--still", "frame:29", "--size", "480x270", "-o", last).code == 0
    y, x = 8 + 2 * (270 + 8 + 22), 8 + 3 * (480 + 8)
    assert np.array_equal(sheet[y:y + 270, x:x + 480], pixels(last))


def read_png16(path, channels: int = 3) -> np.ndarray:
    """A 16-bit RGB (or RGBA) PNG as written by png16 (unfiltered rows): (h, w, channels)
    uint16."""
    import struct
    import zlib

    data = path.read_bytes()
    pos, idat, size = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert (depth, colour) == (16, {3: 2, 4: 6}[channels])
            size = (height, width)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(size[0], -1)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].copy().view(">u2").reshape(size[0], size[1], channels) \
        .astype(np.uint16)


@pytest.mark.slow
def test_a_16_bit_still_holds_more_than_256_levels_of_the_same_picture(cli, small_scene,
                                                                          tmp_path):
    deep, flat = tmp_path / "deep.png", tmp_path / "flat.png"
    fat = ("--set", "render.width_min=0.4", "--set", "render.width_max=0.8",
           "--set", "render.min_width_px=0", "--size", "320x180")
    assert cli(small_scene, "--still", "0.5", "-o", deep, "--bit-depth", "16", *fat).code == 0
    assert cli(small_scene, "--still", "0.5", "-o", flat, *fat).code == 0
    rgb16 = read_png16(deep)
    assert max(len(np.unique(rgb16[..., c])) for c in range(3)) > 256
    # Not 8-bit values scaled up: many levels fall between two multiples of 257.
    assert (rgb16 % 257 != 0).mean() > 0.01
    assert np.abs(rgb16 / 257.0 - pixels(flat)[..., ::-1]).mean() < 1.5  # same picture
    dpi, text = read_chunks(deep)
    assert dpi == pytest.approx(72, abs=0.01) and "boids-render:scene" in text


@pytest.mark.slow
def test_a_transparent_16_bit_still_keeps_its_alpha(cli, small_scene, tmp_path):
    deep, flat = tmp_path / "deep.png", tmp_path / "flat.png"
    fat = ("--set", "render.width_min=0.4", "--set", "render.width_max=0.8",
           "--set", "render.min_width_px=0", "--size", "320x180", "--transparent")
    assert cli(small_scene, "--still", "0.5", "-o", deep, "--bit-depth", "16", *fat).code == 0
    assert cli(small_scene, "--still", "0.5", "-o", flat, *fat).code == 0
    rgba16 = read_png16(deep, channels=4) / 257.0
    rgba8 = np.asarray(Image.open(flat).convert("RGBA"), float)
    alpha16, alpha8 = rgba16[..., 3], rgba8[..., 3]
    assert (alpha16 == 0).mean() > 0.5  # the sky stays clear
    assert np.abs(alpha16 - alpha8).mean() < 1.5  # the same coverage
    # Straight colour, not premultiplied (which would darken it by its alpha, at most
    # 0.95 here): where both are well covered, the same ink.
    both = (alpha16 > 50) & (alpha8 > 50)
    assert both.sum() > 100
    assert np.abs(rgba16[..., :3][both] - rgba8[..., :3][both]).mean() < 3


@pytest.mark.parametrize("args", [
    ("--still", "0.5", "-o", "{tmp}/x.pdf", "--bit-depth", "16"),
    ("--still", "0.5", "-o", "{tmp}/x.svg", "--tile-size", "64"),
    ("--still", "0.5", "-o", "{tmp}/x.jpg", "--bit-depth", "16"),
    ("--still", "0.5", "-o", "{tmp}/x.exr", "--tile-size", "64"),
    ("-o", "{tmp}/x.mp4", "--bit-depth", "16"),
    ("-o", "{tmp}/x.mp4", "--bit-depth", "8"),  # the default, but given: a still was meant
    ("-o", "{tmp}/frames/", "--tile-size", "64"),
])
def test_16_bit_and_tiles_apply_to_png_stills_only(cli, small_scene, tmp_path, args):
    r = cli(small_scene, *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert r.code == 2 and "PNG stills" in r.err
    assert [p for p in tmp_path.iterdir() if p != small_scene] == []


@pytest.mark.slow
@pytest.mark.parametrize("tile", ["64", "100", "1000"])
def test_a_tiled_still_equals_the_untiled_one(cli, small_scene, tmp_path, tile):
    whole, tiled = tmp_path / "whole.png", tmp_path / f"tiled{tile}.png"
    assert cli(small_scene, "--still", "0.5", "--size", "333x187", "-o", whole).code == 0
    r = cli(small_scene, "--still", "0.5", "--size", "333x187", "-o", tiled,
            "--tile-size", tile)
    assert r.code == 0, r.err
    assert np.array_equal(pixels(tiled), pixels(whole)), "seams at tile borders"
    tiles = -(-333 // int(tile)) * -(-187 // int(tile))
    assert f"{tiles}/{tiles} [" in r.err and "tile/s" in r.err, r.err  # a bar of tiles
    dpi, text = read_chunks(tiled)
    assert dpi == pytest.approx(72, abs=0.01) and text["boids-render:time"] == "1/2"
    with Image.open(tiled) as im:  # a third-party reader takes the streamed file
        im.load()
        assert im.size == (333, 187)


@pytest.mark.slow
def test_a_tiled_still_equals_the_untiled_one_along_the_frames_border(cli, tmp_path):
    # Streaks run past the frame's edge here: a tile whose apron reached past it drew them
    # uncut where the whole frame's surface cuts them, a shade different (2 pixels).
    whole, tiled = tmp_path / "whole.png", tmp_path / "tiled.png"
    args = (SCENES / "classic.toml", "--still", "0.5", "--size", "800x560", "-q")
    assert cli(*args, "-o", whole).code == 0
    assert cli(*args, "-o", tiled, "--tile-size", "256").code == 0
    assert np.array_equal(pixels(tiled), pixels(whole))


@pytest.mark.slow
def test_a_tiled_still_equals_the_untiled_one_zoomed_in(cli, tmp_path):
    # Zoomed in, streaks 38 px wide run past a 32-px apron: cut by the tile's surface, a
    # near-level edge moved by a sample row (15 pixels differed, by up to 17 levels).
    whole, tiled = tmp_path / "whole.png", tmp_path / "tiled.png"
    args = (SCENES / "plate.toml", "--still", "2", "--size", "4000x2250", "-q",
            "--set", "camera.width=8", "--set", "camera.centre=[40, 22.5]")
    assert cli(*args, "-o", whole).code == 0
    assert cli(*args, "-o", tiled, "--tile-size", "256").code == 0
    assert np.array_equal(pixels(tiled), pixels(whole))


# 3300 x 8 world units at 10 px a unit: a strip wider than one cairo surface, cheap to draw.
WIDE_SCENE = """\
[scene]
seed = 5
settle_steps = 10

[world]
width = 3300.0
height = 8.0

[flock]
count = 3000

[render]
width_min = 0.3
width_max = 0.5

[output]
size = "33000x80"
"""


@pytest.mark.slow
def test_a_still_wider_than_cairo_draws_is_tiled_into_the_same_picture_as_its_halves(
        cli, write_scene, tmp_path):
    scene = write_scene(WIDE_SCENE)
    poster = tmp_path / "poster.png"
    r = cli(scene, "--still", "0.5", "-o", poster)
    assert r.code == 0, r.err
    head = poster.read_bytes()[:24]
    assert head[12:16] == b"IHDR" and struct.unpack(">II", head[16:]) == (33000, 80)
    with Image.open(poster) as im:
        whole = np.asarray(im.convert("RGB"), dtype=float)
    ink = np.abs(whole - whole[0, 0]).max(axis=2) > 0
    # Birds across the poster, and streaks cut by the borders of its 2048-px tiles.
    assert ink.mean() > 0.02 and ink[:, 2047::2048].any(axis=0).sum() >= 4
    # Each half is within cairo's limit, drawn whole through a camera on its half of the
    # world at the poster's 10 px a world unit.
    for i, centre in enumerate((825, 2475)):
        half = tmp_path / f"half{i}.png"
        r = cli(scene, "--still", "0.5", "--size", "16500x80", "-o", half,
                "--set", f"camera.centre=[{centre}, 4]", "--set", "camera.width=1650")
        assert r.code == 0, r.err
        rgb = pixels(half)[..., ::-1]
        assert np.array_equal(rgb, whole[:, 16500 * i:16500 * (i + 1)]), f"half {i} differs"


def test_check_with_a_still_prints_its_estimate_and_draws_nothing(cli, small_scene, tmp_path):
    out = tmp_path / "poster.png"
    r = cli(small_scene, "--still", "0.5", "--size", "33000x100", "-o", out, "--check")
    assert r.code == 0, r.err
    assert "[output]" in r.out
    assert f"# estimate to {out}: about " in r.out and " in 17 tiles of 2048 px" in r.out
    assert not out.exists()
    # A tile larger than the still: it is drawn in one, and --check says so.
    r = cli(small_scene, "--still", "0.5", "--size", "300x100", "-o", out, "--check",
            "--tile-size", "40000")
    assert r.code == 0, r.err
    assert r.out.rstrip().endswith(" in one tile"), r.out


def test_check_of_a_still_refuses_what_its_render_refuses(cli, small_scene, tmp_path):
    (tmp_path / "kept.png").write_bytes(b"kept")
    (tmp_path / "file").write_text("not a folder")
    for out, extra in ((tmp_path / "kept.png", ("--no-overwrite",)),
                       (tmp_path / "file" / "a.png", ())):
        rendered = cli(small_scene, "--still", "0", "-o", out, *extra, "-q")
        checked = cli(small_scene, "--still", "0", "-o", out, *extra, "--check")
        assert rendered.code == checked.code == 2, (rendered.err, checked.err)
        assert rendered.err_lines == checked.err_lines and len(checked.err_lines) == 1
    assert (tmp_path / "kept.png").read_bytes() == b"kept"


def test_check_of_from_checks_the_still_it_would_render(cli, still, tmp_path):
    source = still("0.5")
    again = cli("--from", source, "-o", tmp_path / "again.png", "--check")
    assert again.code == 0, again.err
    assert f"# estimate to {tmp_path / 'again.png'}: about " in again.out
    # Its settings come from the still's record, and say so (not "scene file").
    labels = {line.rpartition("# ")[2] for line in again.out.splitlines()[1:] if " = " in line}
    assert "recorded scene" in labels and "scene file" not in labels, labels
    clip = cli("--from", source, "-o", tmp_path / "again.mp4", "--check")
    rendered = cli("--from", source, "-o", tmp_path / "again.mp4", "-q")
    assert clip.code == rendered.code == 2 and clip.err_lines == rendered.err_lines
    assert "a still is one file" in clip.err
    assert not (tmp_path / "again.png").exists() and not (tmp_path / "again.mp4").exists()


def test_a_damaged_or_cut_still_is_refused_not_redrawn_wrong(cli, still, tmp_path):
    """A copy cut short lost the record's last chunks (its time: it drew t = 0); a flipped
    byte in the scene's text made an internal error. Both are one line, exit 2."""
    data = still("1").read_bytes()
    cut = tmp_path / "cut.png"
    cut.write_bytes(data[:-100])
    start = data.index(b"boids-render:scene") + 40
    flipped = tmp_path / "flipped.png"
    flipped.write_bytes(data[:start] + bytes([data[start] ^ 0x20]) + data[start + 1:])
    for path, needle in ((cut, "cut short"), (flipped, "fails its checksum")):
        for args in (("--info", path), ("--from", path, "-o", tmp_path / "x.png")):
            r = cli(*args)
            assert r.code == 2 and needle in r.err and len(r.err_lines) == 1, r.err
    assert not (tmp_path / "x.png").exists()


def test_a_jpeg_still_whose_record_is_damaged_is_refused(cli, small_scene, tmp_path):
    # A JPEG's record has no checksum: what it holds is checked as it is read.
    from render.encode.images import encode_jpeg
    from render.encode.still import read_record

    out = tmp_path / "s.jpg"
    assert cli(small_scene, "--still", "1", "-o", out, "--size", "64x36").code == 0
    pixels = np.zeros((36, 64, 4), np.uint8)
    for key, bad, needle in (("boids-render:time", "x", "recorded time is damaged"),
                             ("boids-render:scene", "[scene", "recorded scene is damaged")):
        text = {**read_record(out)[1], key: bad}
        (tmp_path / "bad.jpg").write_bytes(encode_jpeg(pixels, text=text))
        r = cli("--from", tmp_path / "bad.jpg", "-o", tmp_path / "y.png")
        assert r.code == 2 and needle in r.err and len(r.err_lines) == 1, r.err


@pytest.mark.parametrize("suffix", [".png", ".jpg"])
def test_info_prints_a_scenes_name_as_written(cli, small_scene, tmp_path, suffix):
    # It read "\u00c9tourneaux": TOML's escapes, where a basic string holds any Unicode.
    out = tmp_path / f"u{suffix}"
    r = cli(small_scene, "--set", 'scene.name="Étourneaux 🐦"', "--still", "0.1", "-o", out,
            "-q")
    assert r.code == 0, r.err
    info = cli("--info", out)
    assert 'name = "Étourneaux 🐦"' in info.out, info.out
    assert cli("--from", out, "-o", tmp_path / f"again{suffix}", "-q").code == 0
    assert (tmp_path / f"again{suffix}").read_bytes() == out.read_bytes()


def test_a_scenes_text_is_toml_whatever_its_strings_hold():
    import tomllib

    from render.scene.schema import _toml

    for text in ("Étourneaux 🐦", "a\x7fb", "tab\there", 'q"uote', "back\\slash", "\u2028"):
        assert tomllib.loads(f"k = {_toml(text)}")["k"] == text


@pytest.mark.parametrize("paper, expected", [
    (("--paper", "A4"), (841.889764, 595.275591)),
    (("--paper", "A4", "--dpi", "72.5"), (841.889764, 595.275591)),
    (("--paper", "LETTER", "--portrait", "--dpi", "100"), (612.0, 792.0)),
    (("--paper", "LETTER", "--dpi", "0.5"), (792.0, 612.0)),  # 4x6 px: A4's pixels too
    (("--size", "1280x720", "--dpi", "150"), (614.4, 345.6)),
    (("--size", "1x1", "--dpi", "0.1"), (720.0, 720.0))])  # near A4, but no sheet asked
def test_a_vector_sheet_is_the_papers_own_size(cli, small_scene, tmp_path, paper, expected):
    # Its pixels are the paper's millimetres rounded: the page was 841.92 x 595.2 pt at
    # 300 dpi, 842.15 x 594.87 at 72.5, not A4 (841.89 x 595.28).
    import re

    for suffix in (".pdf", ".svg"):
        out = tmp_path / f"sheet{suffix}"
        r = cli(small_scene, "--still", "0.1", "-o", out, *paper, "-q")
        assert r.code == 0, r.err
        data = out.read_bytes()
        found = re.search(rb"MediaBox \[ ?0 0 ([\d.]+) ([\d.]+) ?\]", data) if suffix == ".pdf" \
            else re.search(rb'width="([\d.]+)pt" height="([\d.]+)pt"', data)
        assert tuple(map(float, found.groups())) == pytest.approx(expected, abs=1e-5), found


def test_a_jpeg_says_its_colours_are_srgb(cli, small_scene, tmp_path):
    # A JPEG has no sRGB chunk as a PNG has: untagged, a program takes its own working
    # space. Its ICC profile is sRGB, read back by littleCMS, dated so the bytes repeat.
    import io

    from PIL import ImageCms

    for out in (tmp_path / "a.jpg", tmp_path / "b.jpg"):
        assert cli(small_scene, "--still", "0.5", "-o", out, "-q").code == 0
    with Image.open(tmp_path / "a.jpg") as im:
        icc = im.info["icc_profile"]
    profile = ImageCms.ImageCmsProfile(io.BytesIO(icc))
    assert ImageCms.getProfileDescription(profile).strip() == "sRGB built-in"
    assert profile.profile.xcolor_space.strip() == "RGB"
    # dated, not stamped with the clock (two stills in one second would not tell)
    assert icc[24:36] == struct.pack(">6H", 2026, 1, 1, 0, 0, 0)
    assert (tmp_path / "a.jpg").read_bytes() == (tmp_path / "b.jpg").read_bytes()
