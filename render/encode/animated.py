"""Animated images for web pages: GIF, animated WebP and APNG, looping forever.

Each format stores a delay per frame in its own unit: GIF in hundredths of a second, WebP
in milliseconds, APNG as a fraction of a second (16-bit numerator and denominator). Frame
k of a clip starts at k / fps s, rounded to the format's unit (`Timing`), so the delays of
a 24 fps GIF run 4, 4, 5, 4, 4, 4 cs and any number of frames lasts as long as the clip,
to the unit. ffmpeg is fed the frames with their rate and rescales each frame's time into
the unit itself (rounding to nearest); the last frame's delay, which ffmpeg would guess, is
set from the clip's end. A WebP may store fewer frames than it was given (`seal_webp`).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from ..errors import EncodeError, option
from ..progress import note
from .video import VideoWriter, count_frames

# Browsers play GIF delays under 2 cs as 10 cs: faster clips drop frames to this rate.
GIF_MAX_FPS = 50
SUFFIXES = (".gif", ".webp", ".apng")
# libwebp's quality, 0–100 (its own default is 75; thin streaks blur below about 80).
WEBP_QUALITY = 85


@dataclass(frozen=True)
class Timing:
    """Which frames of a clip of `count` frames at `fps` an animation shows and when, in
    ticks of 1 / `unit` s: frame `kept[j]` (0-based in the clip) starts at `starts[j]`;
    the last ends at `total` ticks, the clip's length rounded to a tick."""

    kept: tuple[int, ...]
    starts: tuple[int, ...]
    total: int
    rate: Fraction  # frames a second of the kept frames as ffmpeg reads them

    @classmethod
    def of(cls, count: int, fps: Fraction, unit: int, max_fps: int | None = None) -> Timing:
        """Every frame at `fps` ≤ `max_fps`; above it, the frame on screen at each tick of
        a `max_fps` clock (which `unit` divides), the last one held to the clip's end."""
        total = _nearest(count * unit / fps)
        if max_fps is None or fps <= max_fps:
            return cls(tuple(range(count)),
                       tuple(_nearest(k * unit / fps) for k in range(count)), total, fps)
        step = unit // max_fps
        shown = max(1, total // step)
        return cls(tuple(math.floor(j * fps / max_fps) for j in range(shown)),
                   tuple(j * step for j in range(shown)), total, Fraction(max_fps))

    @property
    def delays(self) -> list[int]:
        """Each kept frame's delay, in ticks."""
        return [b - a for a, b in zip(self.starts, (*self.starts[1:], self.total))]


def _nearest(x: Fraction) -> int:
    """`x` rounded to the nearest integer, halves up (as ffmpeg's rescaling rounds)."""
    return math.floor(x + Fraction(1, 2))


class AnimatedWriter(VideoWriter):
    """A looping GIF (one palette for the whole clip, an ordered dither where `dither`
    says the frames hold a gradient), animated WebP (lossy colour, lossless alpha) or
    APNG (lossless) by suffix: a VideoWriter whose frames carry the delays described in
    the module's docstring. Above GIF_MAX_FPS a GIF keeps the frames of a 50 fps clock
    and does not want the others drawn."""

    def __init__(self, path: str | Path, *, fps: Fraction, frames: int, first: int = 0,
                 **options):
        super().__init__(path, fps=fps, frames=frames, first=first, **options)
        self.suffix = self.path.suffix.lower()
        # APNG's delay is the exact 1/fps (ffmpeg reduces it to 16-bit terms): no ticks.
        unit = {".gif": 100, ".webp": 1000}.get(self.suffix)
        self.timing = Timing.of(frames, fps, unit or 1, GIF_MAX_FPS if unit == 100 else None)
        self.wanted = frozenset(self.timing.kept)
        self.rate = self.timing.rate
        self.expected = len(self.timing.kept)
        self.clip_frames = frames

    def __enter__(self) -> AnimatedWriter:
        if self.expected < self.clip_frames:
            note(f"{self.path}: {float(self.fps):g} fps is faster than a GIF plays (browsers "
                 f"show delays under 2 cs as 10 cs), so it shows {self.expected} of the "
                 f"{self.clip_frames} frames on a {GIF_MAX_FPS} fps clock and drops the "
                 f"others: {option('--fps 50 or 25')} keeps every frame")
        return super().__enter__()

    def wants(self, index: int) -> bool:
        """Whether frame `index` is shown (a GIF above GIF_MAX_FPS drops some)."""
        return index - self.first in self.wanted

    def _next(self) -> int:
        return self.first + self.timing.kept[self.written]

    def _output_args(self) -> tuple[list[str], str]:
        # passthrough: each frame keeps its own time (no frame duplicated or dropped).
        timing = ["-fps_mode", "passthrough"]
        if self.suffix == ".gif":
            # Two passes in one graph: a palette generated from the whole clip, then
            # applied. A 3D sky's gradient needs an ordered dither (no crawling noise
            # between frames) or it bands; a 2D background is one colour, which the
            # palette holds exactly, and a dither would still hatch it with its neighbour.
            dither = "bayer:bayer_scale=3" if self.dither else "none"
            return [*timing, "-enc_time_base", "1/100",
                    "-vf", "split[a][b];[a]palettegen=stats_mode=diff[p];"
                           f"[b][p]paletteuse=dither={dither}:diff_mode=rectangle",
                    "-loop", "0", "-final_delay", str(self.timing.delays[-1])], "gif"
        if self.suffix == ".webp":
            # bgra in: libwebp converts to YUV itself, and keeps alpha only where used.
            return [*timing, "-enc_time_base", "1/1000", "-c:v", "libwebp_anim",
                    "-quality", str(WEBP_QUALITY), "-pix_fmt", "bgra", "-loop", "0"], "webp"
        # Tagged sRGB (sRGB, cHRM and gAMA chunks), as a PNG still is: the frames carry the
        # tags to the encoder, which writes the chunks from them.
        return [*timing, "-vf", "setparams=color_primaries=bt709:color_trc=iec61966-2-1",
                "-c:v", "apng", "-pix_fmt", "rgba" if self.transparent else "rgb24",
                "-plays", "0"], "apng"

    def _seal(self, tmp: Path) -> None:
        if self.suffix != ".webp":
            return super()._seal(tmp)
        stored = seal_webp(tmp, self.timing)
        if stored is None or count_frames(tmp) != stored:
            raise EncodeError(f"{self.path}: expected {self.expected} frames at the "
                              f"clip's times, ffmpeg wrote others")


def seal_webp(path: Path, timing: Timing) -> int | None:
    """End the animated WebP at `path` at timing.total ms (the last frame's duration, a
    24-bit field of its ANMF chunk after its x, y, width and height, 3 bytes each, per the
    WebP container specification: ffmpeg never tells libwebp when the last frame ends, and
    libwebp guesses), and return how many frames it stores; None unless each starts where
    a frame of `timing` does. libwebp stores a frame identical to the one before it as a
    longer duration of that one: a still stretch of the clip is one frame, so there may be
    fewer than timing.kept."""
    data = bytearray(path.read_bytes())
    offset, frames = 12, []  # after "RIFF", the size and "WEBP"
    while offset + 8 <= len(data):
        fourcc, size = data[offset:offset + 4], struct.unpack_from("<I", data, offset + 4)[0]
        if fourcc == b"ANMF":
            frames.append(offset + 8)
        offset += 8 + size + (size & 1)  # chunks are padded to an even size
    if not frames:
        return 1  # one frame, written as a still: it has no duration
    starts, start = set(timing.starts), 0
    for frame in frames[:-1]:
        if start not in starts:
            return None
        start += int.from_bytes(data[frame + 12:frame + 15], "little")
    if start not in starts or start >= timing.total:
        return None
    data[frames[-1] + 12:frames[-1] + 15] = (timing.total - start).to_bytes(3, "little")
    path.write_bytes(bytes(data))
    return len(frames)
