"""Every output of a 3D scene goes through the camera (docs/optics.md): a still is the clip's
frame at that time and the same picture at any size; posters in tiles; motion blur from
sub-frame exposures; transparency; contact sheets; every clip and image format."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from PIL import Image

from render.encode.video import count_frames

# 300 starlings 60 m from a camera on the ground that follows them, at dusk.
SMALL_3D = """\
[scene]
name = "small3d"
seed = 4
duration = 1.0
dt = 0.01
settle_steps = 100

[world]
dimensions = 3
width = 100.0
height = 100.0

[flock]
count = 300
min_speed = 5.0
max_speed = 18.0

[rules]
neighbours = "topological"
blind_angle = 90.0
separation_weight = 15.0
alignment_weight = 6.25
cohesion_weight = 25.0

[flight]

[roost]
altitude = 30.0
radius = 40.0

[camera]
position = [50.0, -10.0, 1.7]
follow = "centroid"
fov = 40.0

[palette]
theme = "dusk"

[atmosphere]
visibility = 2000.0

[output]
size = "192x108"
fps = 20
"""


@pytest.fixture
def scene3d(write_scene):
    return write_scene(SMALL_3D, "small3d.toml")


def test_a_clip_whose_camera_loses_the_flock_says_so(cli, scene3d, tmp_path):
    """A fixed camera turned away from the flock: most frames show none of it, and the
    render says so with the frame's view across and what to do; following it, nothing."""
    away = ("--set", "camera.follow=none", "--set", "camera.look_at=[400.0, -10.0, 30.0]")
    r = cli(scene3d, "-o", tmp_path / "away.mp4", *away, "--size", "108x192")
    assert r.code == 0, r.err
    line = [s for s in r.err_lines if "out of the frame" in s]
    assert len(line) == 1 and "20 of its 20 frames" in line[0], r.err
    assert "108x192 px see" in line[0] and "camera.follow=centroid" in line[0]
    r = cli(scene3d, "-o", tmp_path / "seen.mp4", "--size", "108x192")
    assert r.code == 0 and "out of the frame" not in r.err, r.err
    assert "out of the frame" not in cli(scene3d, "-o", tmp_path / "q.mp4", *away,
                                         "--quiet").err


def rgba(path) -> np.ndarray:
    with Image.open(path) as im:
        return np.asarray(im.convert("RGBA"), np.float64)


def still(cli, scene, path, time="0.5", *args):
    r = cli(scene, "--still", time, "-o", path, "--quiet", *args)
    assert r.code == 0, r.err
    return rgba(path)


def test_a_3d_still_is_its_frame_of_a_png_sequence(cli, scene3d, tmp_path):
    r = cli(scene3d, "-o", f"{tmp_path}/frames/", "--frames", "8:12", "--quiet")
    assert r.code == 0, r.err
    frame = rgba(tmp_path / "frames" / "frame_00010.png")
    picture = still(cli, scene3d, tmp_path / "still.png")
    assert np.array_equal(picture, frame)
    sky = np.median(picture.reshape(-1, 4), axis=0)
    assert (np.abs(picture - sky).sum(axis=2) > 30).sum() > 20, "no birds to be seen"


def test_a_transparent_3d_exr_still_is_its_frame_of_an_exr_sequence(cli, scene3d, tmp_path):
    from test_frames import read_exr

    r = cli(scene3d, "-o", f"{tmp_path}/f_%03d.exr", "--frames", "10:11", "--transparent",
            "--quiet")
    assert r.code == 0, r.err
    r = cli(scene3d, "--still", "0.5", "-o", tmp_path / "still.exr", "--transparent",
            "--quiet")
    assert r.code == 0, r.err
    frame, picture = (read_exr(tmp_path / name)[1] for name in ("f_010.exr", "still.exr"))
    assert np.array_equal(picture, frame)
    alpha = picture[..., 3]
    assert (alpha == 0).mean() > 0.5 and 20 < (alpha > 0).sum(), "sky clear, birds inked"


def srgb_codes(linear: np.ndarray) -> np.ndarray:
    """Linear light → sRGB codes 0…255, unrounded (IEC 61966-2-1, written out again)."""
    c = np.clip(linear, 0.0, 1.0)
    return 255 * np.where(c <= 0.0031308, 12.92 * c, 1.055 * c ** (1 / 2.4) - 0.055)


@pytest.mark.parametrize("transparent", [False, True])
@pytest.mark.parametrize("blur", ["1", "3"])
def test_a_3d_exr_frame_holds_the_float_image_its_png_frame_rounds(cli, scene3d, tmp_path,
                                                                    transparent, blur):
    """The optics composite in float: the EXR keeps that, the PNG is it encoded to 8
    bits. So they agree to the PNG's rounding, and the EXR keeps the pixels of birds too
    faint for a code of alpha (a few percent of the covered ones here)."""
    from test_frames import read_exr

    from test_frames import srgb_to_linear

    extra = ["--transparent"] if transparent else []
    r = cli(scene3d, "-o", f"{tmp_path}/f_%02d.exr", "-o", f"{tmp_path}/f_%02d.png",
            "--frames", "10:12", "--motion-blur", blur, "--quiet", *extra)
    assert r.code == 0, r.err
    for k in (10, 11):
        exr = read_exr(tmp_path / f"f_{k:02d}.exr")[1].astype(np.float64)
        with Image.open(tmp_path / f"f_{k:02d}.png") as im:
            png = np.asarray(im.convert("RGBA")).astype(np.float64)
        alpha = exr[..., 3]
        # Each exposure is rounded to 8 bits before a blurred PNG averages them.
        slack = 0.6 if blur == "1" else 1.1
        assert np.abs(255 * alpha - png[..., 3]).max() <= slack
        if not transparent:
            assert (alpha == 1).all()
            assert np.abs(srgb_codes(exr[..., :3]) - png[..., :3]).max() <= slack
            continue
        faint = (alpha > 0) & (png[..., 3] == 0)
        assert faint.sum() >= 5, "the faintest birds are kept (8 bits: none)"
        # The PNG's straight colour is the float image's, un-premultiplied, even where its
        # alpha is a few codes (8-bit codes divided by such an alpha read 0 or 255); with
        # motion blur, that of the exposures' float images averaged (the EXR's own).
        shown = png[..., 3] > 0
        assert ((png[..., 3] <= 4) & shown).sum() >= 5
        colour = np.divide(exr[..., :3], alpha[..., None], where=alpha[..., None] > 0,
                           out=np.zeros_like(exr[..., :3]))
        off = np.abs(srgb_codes(colour) - png[..., :3])[shown].max()
        assert off <= 1.5, off
        # Premultiplied: under the alpha a mix of the dusk theme's bird (#151318) and
        # accent (#6B2A1A) colours, to half-float precision (8 bits cannot say which at an
        # alpha of a few codes).
        colours = srgb_to_linear(np.array([[0x15, 0x13, 0x18], [0x6B, 0x2A, 0x1A]]))
        assert (exr[..., :3] <= alpha[..., None] * colours.max(0) * (1 + 4e-3) + 1e-7).all()
        inked = alpha > 0.02  # premultiplied colours in half floats' normal range
        assert inked.sum() >= 20
        straight = exr[..., :3][inked] / alpha[inked][:, None]
        assert (straight >= colours.min(0) * (1 - 4e-3)).all()
        assert (straight <= colours.max(0) * (1 + 4e-3)).all()


TELEPHOTO = ("--set", "camera.fov=15")


def sky_alone(scene_path, time: str, size: tuple[int, int]) -> np.ndarray:
    """The still's sky and ground at `time` without its birds, (h, w, 4) RGBA float,
    through the TELEPHOTO lens."""
    from render.draw3d.camera import resized
    from render.draw3d.frame import composed, exposures
    from render.scene import load_scene
    from render.stills import state_at

    scene = load_scene(scene_path, [("camera.fov", "15", "--set")])
    state = state_at(scene, Fraction(time))
    pose = resized(state.pose, *size)
    [s] = exposures(scene, pose, ((state.positions[:0], state.velocities[:0]),), None,
                    state.accent[:0])
    bgra = composed(scene, pose, [s], (0, 0, *size))
    return bgra[..., [2, 1, 0, 3]].astype(np.float64)


def test_a_3d_still_is_the_same_picture_at_twice_the_size(cli, scene3d, tmp_path):
    # Compared as ink, the birds' darkening of the sky (a 2x average of a smooth sky is
    # not whole codes), through a long lens that fills the frame with the flock.
    ink = {}
    for name, time, size in [("small", "0.5", (192, 108)), ("big", "0.5", (384, 216)),
                             ("later", "1.0", (192, 108))]:
        picture = still(cli, scene3d, tmp_path / f"{name}.png", time, "--size",
                        "%dx%d" % size, *TELEPHOTO)
        ink[name] = (sky_alone(scene3d, time, size) - picture)[..., :3].sum(axis=2)
    down = ink["big"].reshape(108, 2, 192, 2).mean(axis=(1, 3))
    assert ink["small"].sum() > 1000  # birds to compare
    same = np.abs(down - ink["small"]).mean()
    moved = np.abs(ink["later"] - ink["small"]).mean()
    assert same < 0.2 * moved, (same, moved)
    # Not an upscale: the 2x still has detail the 1x one blown up 2x has not.
    upscale = ink["small"].repeat(2, axis=0).repeat(2, axis=1)
    assert np.abs(ink["big"] - upscale).mean() > 1.5 * same


@pytest.mark.slow
def test_a_3d_poster_in_tiles_equals_the_whole_still(cli, scene3d, tmp_path):
    whole = still(cli, scene3d, tmp_path / "whole.png", "0.5", "--size", "333x187")
    tiled = still(cli, scene3d, tmp_path / "tiled.png", "0.5", "--size", "333x187",
                  "--tile-size", "64")
    assert np.array_equal(tiled, whole), "seams at tile borders"


def test_3d_motion_blur_spreads_the_same_ink_over_the_shutter(cli, scene3d, tmp_path):
    sky = still(cli, scene3d, tmp_path / "sky.png", "0.5", "--set", "flock.count=8",
                "--set", "camera.follow=none", "--set", "camera.look_at=[50, 90, 60]")
    sharp = still(cli, scene3d, tmp_path / "sharp.png")
    blurred = still(cli, scene3d, tmp_path / "blur.png", "0.5", "--motion-blur", "8",
                    "--set", "render.shutter_angle=360")
    assert not np.array_equal(sharp, blurred)
    ink = [np.abs(p - sky)[..., :3].sum() for p in (sharp, blurred)]
    assert ink[1] == pytest.approx(ink[0], rel=0.15)
    r = cli(scene3d, "-o", f"{tmp_path}/frames/", "--frames", "10:11", "--motion-blur", "8",
            "--set", "render.shutter_angle=360", "--quiet")
    assert r.code == 0, r.err
    assert np.array_equal(rgba(tmp_path / "frames" / "frame_00010.png"), blurred)


# A camera on the ground panning right at a constant rate across a treeline (trees, 600 m
# off), 50 birds far above the band it is read in.
PANNING = """\
[scene]
duration = 2.0
settle_steps = 0
[world]
dimensions = 3
[flock]
count = 50
[rules]
neighbours = "topological"
[flight]
[roost]
[camera]
easing = "linear"
path = [[0.0, 200.0, -187.5, 1.7, 0.0, 112.5, 10.0, 30.0],
        [2.0, 200.0, -187.5, 1.7, 400.0, 112.5, 10.0, 30.0]]
[palette]
theme = "dusk"
[output]
size = "320x180"
fps = 30
"""


def test_a_camera_that_moves_while_the_shutter_is_open_blurs_what_stands_still(
        cli, write_scene, tmp_path):
    """At 1 s the view turns at 200 m/s over the 300 m to its look_at, 2/3 rad/s: over a
    180° shutter at 30 fps (1/60 s) the treeline slides (2/3)/60 · f px left, f =
    90/tan 15° px. Motion blur's eight exposures are the sharp band slid by the eighths
    of that, averaged (hand-worked; the perspective across 30° bends it a little); a
    still camera leaves the band as the sharp still has it, to the bit."""
    from scipy.ndimage import shift

    scene = write_scene(PANNING, "pan.toml")
    sharp = still(cli, scene, tmp_path / "sharp.png", "1.0")
    blurred = still(cli, scene, tmp_path / "blur.png", "1.0", "--motion-blur", "8")
    step = np.abs(np.diff(sharp[..., :3].mean(axis=2), axis=1)).max(axis=1)
    band = slice(int(np.argmax(step)) - 6, int(np.argmax(step)) + 6)  # the crowns' edges
    slide = (2 / 3) / 60 * 90 / np.tan(np.radians(15))
    model = np.mean([shift(sharp[band, :, :3], (0, -(k + 0.5) / 8 * slide, 0), order=1,
                           mode="nearest") for k in range(8)], axis=0)
    inner = (slice(None), slice(8, -8))  # clear of the shifts' edges
    off_model = np.abs(blurred[band, :, :3] - model)[inner].mean()
    off_sharp = np.abs(blurred[band, :, :3] - sharp[band, :, :3])[inner].mean()
    assert off_sharp > 3 and off_model < 0.3 * off_sharp, (off_model, off_sharp)
    keys = PANNING[PANNING.index("easing"):PANNING.index("[palette]")]
    scene = write_scene(PANNING.replace(keys, "position = [200.0, -187.5, 1.7]\n"
                                        "look_at = [200.0, 112.5, 10.0]\nfov = 30.0\n"),
                        "still.toml")
    sharp = still(cli, scene, tmp_path / "sharp2.png", "1.0")
    blurred = still(cli, scene, tmp_path / "blur2.png", "1.0", "--motion-blur", "8")
    assert np.array_equal(blurred[band], sharp[band])


def test_beating_wings_draw_alike_in_a_still_its_frame_and_a_poster(cli, scene3d, tmp_path):
    beat = ("--set", "bird.wingbeat=13")
    r = cli(scene3d, "-o", f"{tmp_path}/frames/", "--frames", "10:11", "--quiet", *beat)
    assert r.code == 0, r.err
    picture = still(cli, scene3d, tmp_path / "beat.png", "0.5", *beat)
    assert np.array_equal(rgba(tmp_path / "frames" / "frame_00010.png"), picture)
    level = still(cli, scene3d, tmp_path / "level.png", "0.5")
    assert not np.array_equal(picture, level)
    tiled = still(cli, scene3d, tmp_path / "tiled.png", "0.5", "--tile-size", "64", *beat)
    assert np.array_equal(tiled, picture)


def test_a_transparent_3d_still_keeps_only_the_birds(cli, scene3d, tmp_path):
    picture = still(cli, scene3d, tmp_path / "t.png", "0.5", "--transparent")
    alpha = picture[..., 3]
    assert (alpha == 0).mean() > 0.9  # no sky, no ground, no treeline
    assert (alpha > 0).sum() > 20 and alpha.max() < 255 * 0.99  # translucent birds
    # The same straight pixels in a frame of the sequence, a 16-bit still (to its
    # rounding) and the API's frame.
    import render

    r = cli(scene3d, "-o", f"{tmp_path}/frames/", "--frames", "10:11", "--transparent",
            "--quiet")
    assert r.code == 0, r.err
    assert np.array_equal(rgba(tmp_path / "frames" / "frame_00010.png"), picture)
    scene = render.load_scene(scene3d, {"output.transparent": True})
    assert np.array_equal(render.frame(scene, 0.5, quiet=True), picture)
    from test_still import read_png16

    r = cli(scene3d, "--still", "0.5", "-o", tmp_path / "t16.png", "--transparent",
            "--bit-depth", "16", "--quiet")
    assert r.code == 0, r.err
    deep = read_png16(tmp_path / "t16.png", channels=4).astype(np.float64) / 257
    # Every colour shown is a mix of the dusk theme's bird (#151318) and accent (#6B2A1A),
    # the faintest pixels' too: not noise out of dividing codes by a tiny alpha.
    palette = np.array([[0x15, 0x13, 0x18], [0x6B, 0x2A, 0x1A]], np.float64)
    for image in (picture, deep):
        shown = image[..., 3] > 0
        assert (image[..., 3][shown] < 4).sum() >= 5
        colour = image[..., :3][shown]
        assert (colour >= palette.min(0) - 1.5).all() and (colour <= palette.max(0) + 1.5).all()


@pytest.mark.parametrize("output, frames", [
    ("clip.mp4", 20), ("clip.webm", 20), ("clip.mov", 20), ("clip.gif", 20),
    ("clip.webp", 20), ("clip.apng", 20), ("frames/", 20), ("f_%03d.jpg", 20),
    ("f_%03d.exr", 20)])
def test_every_format_draws_3d_through_the_camera(cli, scene3d, tmp_path, output, frames):
    path = f"{tmp_path}/{output}"
    r = cli(scene3d, "-o", path, "--quiet")
    assert r.code == 0, r.err
    if output.endswith("/"):
        assert len(list((tmp_path / "frames").glob("frame_*.png"))) == frames
    elif "%" in output:
        assert len(list(tmp_path.glob(f"f_*{output[-4:]}"))) == frames
    elif output.endswith((".mp4", ".webm", ".mov")):
        assert count_frames(path) == frames
    else:
        with Image.open(path) as im:
            assert im.n_frames == frames and im.size == (192, 108)


@pytest.mark.parametrize("output", ["clip.webm", "clip.mov"])
def test_transparent_3d_clips_carry_alpha(cli, scene3d, tmp_path, output):
    r = cli(scene3d, "-o", f"{tmp_path}/{output}", "--transparent", "--frames", "4",
            "--quiet")
    assert r.code == 0, r.err
    assert count_frames(f"{tmp_path}/{output}") == 4


def test_a_3d_contact_sheet_shows_the_clip(cli, scene3d, tmp_path):
    sheet = tmp_path / "sheet.png"
    r = cli(scene3d, "--contact-sheet", sheet, "--quiet")
    assert r.code == 0, r.err
    picture = rgba(sheet)
    assert picture.shape[1] == 4 * (480 + 8) + 8
    assert picture[..., :3].std() > 10  # sky gradients and birds, not a blank page


def test_a_3d_16_bit_still_is_the_8_bit_one_in_finer_levels(cli, scene3d, tmp_path):
    eight = still(cli, scene3d, tmp_path / "8.png")
    r = cli(scene3d, "--still", "0.5", "-o", tmp_path / "16.png", "--bit-depth", "16",
            "--quiet")
    assert r.code == 0, r.err
    with Image.open(tmp_path / "16.png") as im:
        assert im.size == (192, 108)


def files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.slow
@pytest.mark.parametrize("frames", ["", "f_%02d.exr"])  # PNG, and EXR's float image
def test_a_3d_render_on_a_scheduler_is_the_local_render(cli, scene3d, tmp_path, frames):
    common = ("--frames", "6", "--motion-blur", "2", "--quiet")
    assert cli(scene3d, "-o", f"{tmp_path}/here/{frames}", "--workers", "1",
               *common).code == 0
    r = cli(scene3d, "-o", f"{tmp_path}/there/{frames}", "--scheduler", "local",
            "--workers", "2", *common)
    assert r.code == 0, r.err
    assert files(tmp_path / "there") == files(tmp_path / "here")


@pytest.mark.parametrize("suffix", [".pdf", ".svg"])
def test_a_3d_vector_still_is_the_raster_picture_in_paths(cli, scene3d, tmp_path, suffix):
    import cairo

    from render.draw3d.frame import exposures
    from render.draw3d.optics import compose
    from render.draw3d.sky import sky_for
    from render.draw3d.vector import paint_vector
    from render.draw.surface import Canvas
    from render.scene import load_scene
    from render.stills import state_at

    r = cli(scene3d, "--still", "0.5", "-o", tmp_path / f"still{suffix}", "--quiet")
    assert r.code == 0, r.err
    data = (tmp_path / f"still{suffix}").read_bytes()
    assert data.startswith(b"%PDF") if suffix == ".pdf" else b"<svg" in data[:400]
    assert b"<image" not in data  # no raster fallback
    # The same page drawn onto pixels carries the raster still's birds: the same ink
    # where the raster has it (approximately: sRGB OVER per path, a vector sky gradient).
    scene = load_scene(scene3d)
    state = state_at(scene, Fraction(1, 2))
    [layer] = exposures(scene, state.pose, ((state.positions, state.velocities),),
                        state.bank, state.accent)
    sky = sky_for(scene, state.pose)
    window = (0, 0, *scene.output.size)

    def painted(streaks):
        canvas = Canvas(scene.output.size)
        ctx = canvas.context()
        ctx.set_antialias(cairo.ANTIALIAS_DEFAULT)
        paint_vector(ctx, streaks, sky, False)
        return canvas.rgb().astype(float)

    def composed_rgb(streaks):
        return compose(streaks, sky, window, False)[..., 2::-1].astype(float)

    empty = layer._replace(**{k: v[:0] for k, v in layer._asdict().items()})
    vector_ink = (painted(empty) - painted(layer)).sum(axis=2)
    raster_ink = (composed_rgb(empty) - composed_rgb(layer)).sum(axis=2)
    assert raster_ink.sum() > 0
    assert vector_ink.sum() == pytest.approx(raster_ink.sum(), rel=0.3)
    assert np.corrcoef(vector_ink.ravel(), raster_ink.ravel())[0, 1] > 0.8
