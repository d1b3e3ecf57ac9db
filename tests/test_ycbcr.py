"""Frames handed to an 8-bit 4:2:0 clip's encoder as BT.709 limited-range Y′CbCr
(render/encode/ycbcr.py): against the standard's formulas (tests/naive_ycbcr.py), hand-worked
colours, ffmpeg's own scaler, and a lossless clip's decoded planes."""

from __future__ import annotations

import math
import subprocess
from fractions import Fraction

import imageio_ffmpeg
import numpy as np
import pytest
from PIL import Image

from conftest import SCENES, SMALLER
from naive_ycbcr import exact_ycbcr420, naive_ycbcr420, thresholds
from render.draw3d.colour import DITHER
from render.encode.video import VideoWriter, codec_args, converted_here, keeps_dither
from render.encode.web import BT709_SCALE, H264_ARGS
from render.encode.ycbcr import to_ycbcr420


def planes(flat: np.ndarray, w: int, h: int):
    q = (h // 2) * (w // 2)
    return (flat[:h * w].reshape(h, w), flat[h * w:h * w + q].reshape(h // 2, w // 2),
            flat[h * w + q:].reshape(h // 2, w // 2))


def bgra_of(rgb: np.ndarray) -> np.ndarray:
    return np.dstack([rgb[..., ::-1], np.full(rgb.shape[:2], 255, np.uint8)])


@pytest.mark.parametrize("rgb, want", [
    ((0, 0, 0), (16, 128, 128)),
    ((255, 255, 255), (235, 128, 128)),
    ((128, 128, 128), (126, 128, 128)),  # 16 + 219·128/255 = 125.93; a grey has no chroma
    ((255, 0, 0), (63, 102, 240)),  # 16 + 219·0.2126 = 62.56; 128 − 112·0.2126/0.9278
    ((0, 255, 0), (173, 42, 26)),  # 16 + 219·0.7152; 128 − 112·0.7152/0.9278 = 41.66
    ((0, 0, 255), (32, 240, 118)),  # 16 + 219·0.0722 = 31.81; 128 − 112·0.0722/0.7874
])
def test_hand_worked_colours(rgb, want):
    frame = np.broadcast_to(np.array(rgb, np.uint8), (4, 6, 3))
    y, cb, cr = planes(to_ycbcr420(bgra_of(frame)), 6, 4)
    assert (y == want[0]).all() and (cb == want[1]).all() and (cr == want[2]).all(), \
        (y[0, 0], cb[0, 0], cr[0, 0])


@pytest.mark.parametrize("rgb, exact", [
    ((0, 0, 0), (16, 128, 128)),
    ((255, 255, 255), (235, 128, 128)),
    ((128, 128, 128), (16 + 219 * 128 / 255, 128, 128)),  # 125.93; a grey has no chroma
    ((255, 0, 0), (16 + 219 * 0.2126, 128 - 112 * 0.2126 / 0.9278, 240)),  # 62.56, 102.34
    ((0, 255, 0), (16 + 219 * 0.7152, 128 - 112 * 0.7152 / 0.9278,         # 172.63, 41.66,
                   128 - 112 * 0.7152 / 0.7874)),                           # 26.27
    ((0, 0, 255), (16 + 219 * 0.0722, 240, 128 - 112 * 0.0722 / 0.7874)),  # 31.81, 117.73
])
def test_hand_worked_colours_dithered(rgb, exact):
    """A flat colour over a whole tile of the thresholds (16 x 16 px, 8 x 8 chroma): each
    sample is the exact value floored or raised, and each plane's mean is the exact value
    within a 64th: half of one from the 64 thresholds, the rest the fixed point's weights
    (2⁻¹⁶ each, times up to 255 a channel). A code exact in 8 bits is every sample."""
    frame = np.broadcast_to(np.array(rgb, np.uint8), (16, 16, 3))
    for plane, value in zip(planes(to_ycbcr420(bgra_of(frame), dither=True), 16, 16), exact):
        assert set(np.unique(plane)) <= {math.floor(value), math.ceil(value)}, (rgb, value)
        assert abs(plane.mean() - value) <= 1 / 64, (rgb, plane.mean(), value)


@pytest.mark.parametrize("dither", [False, True])
def test_every_sample_matches_the_standards_formulas(dither):
    """Random pixels, and flat 2x2 blocks of every grey: fixed point against float64 may
    round or floor a sample the other way only where value + threshold (a half, rounded)
    falls within the fixed point's error of a whole code (its weights are 2⁻¹⁶ apart;
    times 255 a channel, three channels: under 0.006), never more than one code."""
    rng = np.random.default_rng(5)
    rgb = rng.integers(0, 256, (64, 96, 3), dtype=np.uint8)
    greys = np.repeat(np.repeat(np.arange(256, dtype=np.uint8).reshape(16, 16), 2, 0), 2, 1)
    t = thresholds() if dither else np.full((8, 8), 0.5)
    for frame in (rgb, np.dstack([greys] * 3)):
        h, w = frame.shape[:2]
        got = planes(to_ycbcr420(bgra_of(frame), dither=dither), w, h)
        for mine, theirs, exact in zip(got, naive_ycbcr420(frame, dither),
                                       exact_ycbcr420(frame)):
            diff = np.abs(mine.astype(int) - theirs.astype(int))
            rows, cols = np.indices(exact.shape)
            crossing = exact + t[rows % 8, cols % 8]
            near = np.abs(crossing - np.round(crossing)) < 0.006
            assert diff.max() <= 1 and not (diff.astype(bool) & ~near).any(), \
                (diff.max(), (diff.astype(bool) & ~near).sum())


def test_odd_sizes_are_refused():
    with pytest.raises(ValueError, match="even"):
        to_ycbcr420(np.zeros((3, 4, 4), np.uint8))


def test_ffmpegs_scaler_gives_the_same_picture(cli, small_scene, tmp_path):
    """The conversion ffmpeg did before, of a drawn frame: rounded, the same luma within a
    level and nearly everywhere, chroma within a few at the birds' edges (its scaler
    filters chroma over more rows); dithered, the same within a level and chroma's few,
    and each plane's mean the exact one's (the rounded one's is off by up to half a level
    over a flat background)."""
    assert cli(small_scene, "-o", f"{tmp_path}/f/", "--frames", "1", "-q").code == 0
    rgb = np.asarray(Image.open(next((tmp_path / "f").iterdir())).convert("RGB"))
    h, w = rgb.shape[:2]
    theirs = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-f", "rawvideo", "-pix_fmt",
         "rgb24", "-s", f"{w}x{h}", "-i", "-", "-vf", "scale=out_color_matrix=bt709:"
         "out_range=tv", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"],
        input=rgb.tobytes(), capture_output=True, check=True).stdout
    theirs = planes(np.frombuffer(theirs, np.uint8), w, h)
    for a, b in zip(planes(to_ycbcr420(bgra_of(rgb)), w, h), theirs):
        diff = np.abs(a.astype(int) - b.astype(int))
        assert diff.mean() < 0.2 and diff.max() <= (1 if a.shape == (h, w) else 8), \
            (a.shape, diff.mean(), diff.max())
    dithered = planes(to_ycbcr420(bgra_of(rgb), dither=True), w, h)
    for a, b, exact in zip(dithered, theirs, exact_ycbcr420(rgb)):
        assert np.abs(a.astype(int) - b.astype(int)).max() <= (1 if a.shape == (h, w) else 8)
        assert abs(a.mean() - exact.mean()) < 1 / 64, (a.shape, a.mean(), exact.mean())


@pytest.mark.parametrize("scene, dither", [("small", False), ("murmuration", True)])
def test_a_lossless_clip_holds_the_samples_handed_over(cli, small_scene, tmp_path, scene,
                                                       dither):
    """An MP4 at crf 0 (lossless H.264) decodes to exactly the planes converted from the
    frames the same render draws as PNG: the frames reach x264 as converted here, with no
    second conversion on the way; rounded from a 2D scene's flat colours, dithered from a
    3D sky (the film, shrunk)."""
    path, extra = (small_scene, ()) if scene == "small" else \
        (SCENES / "murmuration.toml", SMALLER["murmuration"])
    common = ["--frames", "3", "--size", "320x180", "-q", *extra]
    assert cli(path, "-o", f"{tmp_path}/f/", *common).code == 0
    assert cli(path, "-o", tmp_path / "c.mp4", "--crf", "0", *common).code == 0
    decoded = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(tmp_path / "c.mp4"),
         "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"], capture_output=True, check=True).stdout
    size = 320 * 180 * 3 // 2
    pngs = sorted((tmp_path / "f").iterdir())
    assert len(decoded) == size * len(pngs) == size * 3
    for k, png in enumerate(pngs):
        rgb = np.asarray(Image.open(png).convert("RGB"))
        assert np.array_equal(to_ycbcr420(bgra_of(rgb), dither=dither),
                              np.frombuffer(decoded[k * size:(k + 1) * size], np.uint8)), k


def test_only_8_bit_bt709_420_is_converted_here():
    """The rest keep ffmpeg's conversion from BGRA: alpha, 4:4:4 10-bit ProRes, a
    palette, the web's 10-bit AV1."""
    mp4 = codec_args(".mp4", 18)[0]
    fed = converted_here(mp4)
    assert fed is not None and "scale=" not in " ".join(fed) and "setparams=" in " ".join(fed)
    assert converted_here(codec_args(".webm", 18)[0]) is not None
    assert converted_here(codec_args(".webm", 18, transparent=True)[0]) is None
    assert converted_here(codec_args(".mov", 18)[0]) is None
    assert converted_here(["-vf", BT709_SCALE, *H264_ARGS]) is not None
    assert converted_here(["-vf", BT709_SCALE, "-pix_fmt", "yuv420p10le"]) is None


def test_only_x264_is_handed_a_dithered_frame():
    """x264 keeps the pattern; VP9 (a WebM) flattens it into its blocks, slower."""
    assert keeps_dither(codec_args(".mp4", 18)[0])
    assert not keeps_dither(codec_args(".webm", 18)[0])


def test_a_slow_gradient_reaches_the_clip_without_bands(tmp_path):
    """A sky's ramp (grey codes 60 to 84 over 512 rows, one code in 21 rows, dithered in
    RGB by the 3D sky's own pattern) through a lossless H.264 clip: the decoded luma's
    mean over each band of 8 rows stays within 0.15 of the exact 16 + 219/255·value.
    Rounded to the nearest code, one code pair in seven merged and the bands stepped by
    up to half a level (0.5 here): the contours a dusk sky showed in every clip."""
    w, h, frames = 256, 512, 2
    value = 60.0 + 24.0 * (np.arange(h) + 0.5) / h
    rows, cols = np.indices((h, w))
    grey = np.floor(value[:, None] + DITHER[rows % 8, cols % 8]).astype(np.uint8)
    with VideoWriter(tmp_path / "sky.mp4", size=(w, h), fps=Fraction(25), crf=0,
                     frames=frames, dither=True) as clip:
        for k in range(frames):
            clip.write(k, bgra_of(np.dstack([grey] * 3)))
    decoded = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(tmp_path / "sky.mp4"),
         "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"], capture_output=True, check=True).stdout
    size = w * h * 3 // 2
    assert len(decoded) == size * frames
    exact = 16 + 219 / 255 * grey.reshape(h // 8, 8 * w).mean(axis=1)
    for k in range(frames):
        luma = np.frombuffer(decoded[k * size:k * size + w * h], np.uint8)
        error = np.abs(luma.reshape(h // 8, 8 * w).mean(axis=1) - exact)
        assert error.max() < 0.15, (k, error.max(), int(error.argmax()))
