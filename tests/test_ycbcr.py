"""Frames handed to an 8-bit 4:2:0 clip's encoder as BT.709 limited-range Y′CbCr
(render/encode/ycbcr.py): against the standard's formulas (tests/naive_ycbcr.py), hand-worked
colours, ffmpeg's own scaler, and a lossless clip's decoded planes."""

from __future__ import annotations

import subprocess

import imageio_ffmpeg
import numpy as np
import pytest
from PIL import Image

from naive_ycbcr import naive_ycbcr420
from render.encode.video import codec_args, converted_here
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


def test_every_sample_matches_the_standards_formulas():
    """Random pixels, and flat 2x2 blocks of every grey: fixed point against float64 may
    round a sample that falls within 2⁻¹⁶ of a half the other way, never more."""
    rng = np.random.default_rng(5)
    rgb = rng.integers(0, 256, (64, 96, 3), dtype=np.uint8)
    greys = np.repeat(np.repeat(np.arange(256, dtype=np.uint8).reshape(16, 16), 2, 0), 2, 1)
    for frame in (rgb, np.dstack([greys] * 3)):
        h, w = frame.shape[:2]
        got = planes(to_ycbcr420(bgra_of(frame)), w, h)
        for mine, theirs in zip(got, naive_ycbcr420(frame)):
            diff = np.abs(mine.astype(int) - theirs.astype(int))
            assert diff.max() <= 1 and (diff == 0).mean() > 0.999, (diff.max(), diff.mean())


def test_odd_sizes_are_refused():
    with pytest.raises(ValueError, match="even"):
        to_ycbcr420(np.zeros((3, 4, 4), np.uint8))


def test_ffmpegs_scaler_gives_the_same_picture(cli, small_scene, tmp_path):
    """The conversion ffmpeg did before, of a drawn frame: the same luma within a level,
    chroma within a few at the birds' edges (its scaler filters chroma over more rows)."""
    assert cli(small_scene, "-o", f"{tmp_path}/f/", "--frames", "1", "-q").code == 0
    rgb = np.asarray(Image.open(next((tmp_path / "f").iterdir())).convert("RGB"))
    h, w = rgb.shape[:2]
    theirs = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-f", "rawvideo", "-pix_fmt",
         "rgb24", "-s", f"{w}x{h}", "-i", "-", "-vf", "scale=out_color_matrix=bt709:"
         "out_range=tv", "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"],
        input=rgb.tobytes(), capture_output=True, check=True).stdout
    mine = to_ycbcr420(bgra_of(rgb))
    for a, b in zip(planes(mine, w, h), planes(np.frombuffer(theirs, np.uint8), w, h)):
        diff = np.abs(a.astype(int) - b.astype(int))
        assert diff.mean() < 0.2 and diff.max() <= (1 if a.shape == (h, w) else 8), \
            (a.shape, diff.mean(), diff.max())


def test_a_lossless_clip_holds_the_samples_handed_over(cli, small_scene, tmp_path):
    """An MP4 at crf 0 (lossless H.264) decodes to exactly the planes converted from the
    frames the same render draws as PNG: the frames reach x264 as converted here, with no
    second conversion on the way."""
    common = ["--frames", "3", "--size", "320x180", "-q"]
    assert cli(small_scene, "-o", f"{tmp_path}/f/", *common).code == 0
    assert cli(small_scene, "-o", tmp_path / "c.mp4", "--crf", "0", *common).code == 0
    decoded = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i", str(tmp_path / "c.mp4"),
         "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"], capture_output=True, check=True).stdout
    size = 320 * 180 * 3 // 2
    pngs = sorted((tmp_path / "f").iterdir())
    assert len(decoded) == size * len(pngs) == size * 3
    for k, png in enumerate(pngs):
        rgb = np.asarray(Image.open(png).convert("RGB"))
        assert np.array_equal(to_ycbcr420(bgra_of(rgb)),
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
