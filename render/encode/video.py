"""Video through the ffmpeg binary that imageio-ffmpeg ships.

ffmpeg is driven directly (not through `write_frames`) for three reasons: rational frame
rates such as 24000/1001 pass through exactly, its stderr and exit status reach the user,
and frames go in as they are best handed over: an 8-bit BT.709 4:2:0 clip's converted
here (`ycbcr`), any other's in cairo's native BGRA layout, for ffmpeg to convert.
"""

from __future__ import annotations

import io
import itertools
import os
import re
import signal
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..errors import EncodeError, UsageError
from .files import final_name, place_finished, refuse_existing, temp_beside
from .pipe import grow_pipe, hand_over
from .ycbcr import to_ycbcr420

# ffmpeg's scaler taking RGB frames to BT.709 limited range, at the head of a filter chain.
TO_BT709 = "scale=out_color_matrix=bt709:out_range=tv,"
# Each chroma sample of 4:2:0 is the mean of its 2x2 pixels, sited at their centre
# (ycbcr.py, and ffmpeg's scaler): said in the stream, where H.264 and Matroska otherwise
# mean "left", half a pixel off, to a player that follows it.
CENTRED_CHROMA = ["-chroma_sample_location", "center"]
# BT.709 throughout: convert with the 709 matrix into limited range, and say so in the
# stream, so players do not guess (and shift colours) on HD material.
_H264 = [
    "-c:v", "libx264", "-preset", "medium",
    "-vf", f"{TO_BT709}"
           "setparams=color_primaries=bt709:color_trc=bt709:colorspace=bt709:range=tv",
    "-pix_fmt", "yuv420p",
    "-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace", "bt709",
    "-color_range", "tv", *CENTRED_CHROMA, "-movflags", "+faststart",
]


_BT709_TAGS = ["-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace", "bt709"]
# The -color_* options alone are overridden by what the filtered frames carry.
_BT709_FRAMES = "setparams=color_primaries=bt709:color_trc=bt709:colorspace=bt709"
# x264's crf 18 ("visually lossless") is about VP9's 31; the scale keeps the scene's crf the
# one quality knob for both.
_VP9_CRF_OFFSET = 13
# Matroska draws a random segment UID into every file unless asked to be bit-exact: without
# it two renders of one scene held the same frames in different bytes.
_WEBM_SAME_BYTES = ["-fflags", "+bitexact"]
# ffmpeg's progress line: "frame=  600 fps=…"; the last one has the total.
_FRAME_COUNT = re.compile(rb"frame=\s*(\d+)")


def straight_alpha(bgra: np.ndarray, *, fill: bool = False,
                   straight: np.ndarray | None = None) -> np.ndarray:
    """cairo's premultiplied BGRA as the straight alpha ffmpeg's `bgra` means: colour
    divided by alpha (rounded), so edges composite without dark fringes. The colour of a
    fully transparent pixel is black, or with `fill` the birds' mean colour (weighted by
    alpha): a lossy 4:2:0 codec averages colour over 2x2 pixels and gives the clear
    pixels around a bird some alpha, and black there darkens the bird's edge.

    `straight` (default: the frame's own, `draw3d.frame.Pixels`), (h, w, 3) B, G, R: the
    colour as the compositor knew it before alpha multiplied it, taken instead, exact
    where alpha is a few codes (8-bit premultiplied codes divided by an alpha of 1 read
    0 or 255)."""
    if straight is None:
        straight = getattr(bgra, "straight", None)
    out = np.array(bgra, copy=True).view(np.ndarray)
    if straight is not None:
        out[:, :, :3] = np.where(bgra[:, :, 3:] > 0, straight, 0)
    else:
        alpha = bgra[:, :, 3:4].astype(np.uint32)
        colour = bgra[:, :, :3].astype(np.uint32)
        straight = np.where(alpha > 0, (colour * 255 + alpha // 2) // np.maximum(alpha, 1), 0)
        out[:, :, :3] = np.minimum(straight, 255)
    if fill:
        weight = bgra[:, :, 3].astype(np.float64)
        if weight.sum() > 0:
            mean = np.tensordot(weight, out[:, :, :3], axes=([0, 1], [0, 1])) / weight.sum()
            out[bgra[:, :, 3] == 0, :3] = np.round(mean).astype(np.uint8)
    return out


def codec_args(suffix: str, crf: int, transparent: bool = False) -> tuple[list[str], str]:
    """ffmpeg output options and muxer for a clip of this suffix (with alpha when
    `transparent`: VP9 yuva420p, ProRes 4444 yuva444p10le)."""
    if suffix == ".mp4":
        return [*_H264, "-crf", str(crf)], "mp4"
    if suffix == ".webm":
        return ["-c:v", "libvpx-vp9", "-crf", str(min(63, crf + _VP9_CRF_OFFSET)), "-b:v", "0",
                "-deadline", "good", "-cpu-used", "4", "-row-mt", "1",
                "-vf", f"{TO_BT709}{_BT709_FRAMES}:range=tv",
                "-pix_fmt", "yuva420p" if transparent else "yuv420p",
                *_BT709_TAGS, *CENTRED_CHROMA, *_WEBM_SAME_BYTES], "webm"
    if suffix == ".mov":
        # ProRes 4444: 10-bit 4:4:4, the editing and compositing codec.
        return ["-c:v", "prores_ks", "-profile:v", "4", "-vendor", "apl0",
                "-vf", f"scale=out_color_matrix=bt709,{_BT709_FRAMES}",
                "-pix_fmt", "yuva444p10le" if transparent else "yuv444p10le",
                *_BT709_TAGS], "mov"
    raise ValueError(suffix)


def converted_here(args: list[str]) -> list[str] | None:
    """ffmpeg output options `args` without their conversion of RGB frames to 8-bit BT.709
    limited-range 4:2:0, when that is what they ask for: the frames then go in converted
    (`ycbcr.to_ycbcr420`, the same samples within a level of luma). None otherwise (10-bit,
    4:4:4, alpha, a palette, a big-endian machine's words: ffmpeg converts)."""
    if "-vf" not in args or "-pix_fmt" not in args or sys.byteorder != "little":
        return None
    at = args.index("-vf") + 1
    if args[args.index("-pix_fmt") + 1] != "yuv420p" or not args[at].startswith(TO_BT709):
        return None
    return [*args[:at], args[at][len(TO_BT709):], *args[at + 1:]]


def keeps_dither(args: list[str]) -> bool:
    """Whether the encoder of ffmpeg output options `args` keeps an ordered dither at its
    quality: x264 does (the sky's contour arcs fade). VP9 flattens it into its blocks: the
    arcs read as plain either way, and the clip took 1.47 times as long and was 30% larger
    (docs/optics.md, "The sky in a clip")."""
    return "libx264" in args


def timecode_args(muxer: str, first: int, fps: Fraction) -> list[str]:
    """A ProRes clip's timecode track: its first frame's number as timecode, so an edit
    places a range (`--frames 240:480`) where it belongs. Whole frames at the nominal
    rate, ffmpeg's rounding of `fps` (24000/1001 counts 24); at 30000/1001 and
    60000/1001 drop-frame (`drop_frame`), as broadcast counts those rates."""
    nominal = max(1, (fps.numerator + fps.denominator // 2) // fps.denominator)
    if muxer != "mov" or nominal > TIMECODE_MAX_FPS:
        return []
    dropped = fps.denominator == 1001 and nominal in (30, 60)
    count = drop_frame(first, nominal) if dropped else first
    seconds, frame = divmod(count, nominal)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return ["-timecode", f"{hours % 24:02d}:{minutes:02d}:{seconds:02d}"
                         f"{';' if dropped else ':'}{frame:02d}"]


# QuickTime's timecode track counts frames a second in one byte: a ProRes clip faster
# than this has none (ffmpeg refused it, after the whole clip was encoded).
TIMECODE_MAX_FPS = 255


def untimed(path: str | Path, fps: Fraction) -> str | None:
    """What to tell of a ProRes clip at `path` too fast for a timecode track (None: any
    other clip, or one that has it)."""
    if Path(path).suffix.lower() != ".mov" or timecode_args("mov", 0, fps):
        return None
    return f"{path}: {float(fps):g} fps is more frames a second than a QuickTime " \
           f"timecode track counts ({TIMECODE_MAX_FPS}): the clip has none"


def drop_frame(index: int, nominal: int) -> int:
    """The count a drop-frame timecode shows for frame `index` at `nominal` (30 or 60)
    frames a second (SMPTE 12M): the first 2 (or 4) numbers of every minute skipped but
    every tenth, so the timecode keeps to the clock at 30000/1001 (or 60000/1001) fps."""
    drop = nominal // 15
    per_ten = nominal * 600 - 9 * drop  # frames in ten minutes: 17982 at 30
    per_minute = nominal * 60 - drop
    tens, rest = divmod(index, per_ten)
    skipped = 9 * drop * tens + (drop * ((rest - drop) // per_minute) if rest > drop else 0)
    return index + skipped


def check_clip(path: str | Path, size: tuple[int, int], fps: Fraction,
               transparent: bool = False) -> None:
    """What a suffix cannot take, as bad input before any work is done."""
    suffix = Path(path).suffix.lower()
    if transparent and suffix in (".mp4", ".gif"):
        what = "has no alpha channel (only on-or-off transparency, which would cut the " \
            "birds' soft edges)" if suffix == ".gif" else "has no alpha channel"
        raise UsageError(f"{path}: {suffix} {what}; a transparent clip needs "
                         f".webm (VP9), .mov (ProRes 4444), .webp, .apng or a PNG or EXR "
                         f"sequence")
    width, height = size
    if suffix in (".mp4", ".webm") and (width % 2 or height % 2):
        larger = f"{width + width % 2}x{height + height % 2}"
        smaller = f"{width - width % 2}x{height - height % 2}"
        either = larger if min(width, height) < 2 else f"{smaller} or {larger}"
        raise UsageError(f"{path}: 4:2:0 video needs even sizes, got {width}x{height}; try "
                         f"{either}")


# ffmpeg tags its messages with the component that wrote them: "[out#0/mp4 @ 0x55…] ".
_LOG_PREFIX = re.compile(r"^(\[[^]]*@ 0x[0-9a-f]+\] )+")


def file_arg(path: str | Path) -> str:
    """`path` as ffmpeg must be given a file: absolute. ffmpeg reads a name with a colon
    in its first part (`take:1.mp4`, `a:b/c.mp4`) as a protocol's URL, and refused it."""
    return os.path.abspath(path)


def ffmpeg_exe() -> str:
    import imageio_ffmpeg

    try:
        return imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError as exc:
        raise EncodeError(f"ffmpeg not found: {exc}") from None


class VideoWriter:
    """Streams BGRA frames into a clip (H.264 MP4, VP9 WebM or ProRes 4444 MOV by suffix;
    animated.AnimatedWriter adds GIF, WebP and APNG), written to a temporary file beside
    `path` and renamed into place only once ffmpeg succeeded and the frame count read back
    matches.

    Use as a context manager; an exception inside the block (an interruption included)
    kills ffmpeg and removes the temporary file, leaving any existing file at `path`
    untouched. With `overwrite` off an existing `path` is refused before any work.

    `hold` (set before entering; see `encode.together`): a clean exit leaves the finished,
    checked file in its temporary, listed in `staged` as (temporary, final) pairs, for the
    caller to place together with others.

    `dither`: an 8-bit 4:2:0 clip's frames are converted dithered rather than rounded
    (ycbcr.py), for a 3D sky's gradient, where the encoder keeps the pattern
    (`keeps_dither`).
    """

    hold = False

    def __init__(self, path: str | Path, *, size: tuple[int, int], fps: Fraction, crf: int,
                 frames: int, overwrite: bool = True, first: int = 0,
                 transparent: bool = False, dither: bool = False):
        check_clip(path, size, fps, transparent)
        self.transparent = transparent
        self.dither = dither
        self.path = Path(path)
        refuse_existing(self.path, overwrite)
        self.size = size
        self.fps = fps
        self.rate = fps  # the rate ffmpeg reads the frames at
        self.crf = crf
        self.expected = frames
        self.first = first  # index of the clip's first frame (a range of a longer clip)
        self.overwrite = overwrite
        self.written = 0
        self.staged: list[tuple[Path, Path]] = []
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> VideoWriter:
        exe = ffmpeg_exe()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = temp_beside(self.path, self.path.suffix)
        self._log = tempfile.TemporaryFile()
        width, height = self.size
        args, muxer = self._output_args()
        fed = converted_here(args)
        self._ycbcr = None if fed is None else np.empty(width * height * 3 // 2, np.uint8)
        self._dither = self.dither and keeps_dither(args)
        cmd = [exe, "-y", "-hide_banner", "-nostdin", "-loglevel", "error",
               "-f", "rawvideo", "-pix_fmt", "bgra" if fed is None else "yuv420p",
               "-s", f"{width}x{height}",
               "-framerate", f"{self.rate.numerator}/{self.rate.denominator}", "-i", "pipe:0",
               "-an", *(args if fed is None else fed), "-f", muxer, file_arg(self._tmp)]
        try:
            # Own session: Ctrl-C in a terminal signals the whole foreground process group,
            # and ffmpeg would then finish its file by itself, racing our kill. Signals
            # left as Python has them (SIGXFSZ ignored): a file-size limit then fails
            # ffmpeg's write with "File too large" on its stderr, as a full disk does with
            # "No space left on device", instead of killing it without a word.
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                          stdout=subprocess.DEVNULL, stderr=self._log,
                                          start_new_session=True, restore_signals=False)
        except BaseException as exc:
            self._log.close()
            self._tmp.unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise EncodeError(f"cannot run ffmpeg {exe}: {exc.strerror}") from None
            raise
        self._capacity = grow_pipe(self._proc.stdin)
        return self

    def _output_args(self) -> tuple[list[str], str]:
        """ffmpeg's output options and muxer for this clip."""
        args, muxer = codec_args(self.path.suffix.lower(), self.crf, self.transparent)
        return args + timecode_args(muxer, self.first, self.fps), muxer

    def _next(self) -> int:
        """The index of the frame to write next."""
        return self.first + self.written

    def wants(self, index: int) -> bool:
        """Every frame of a clip is drawn."""
        return True

    def write(self, index: int, pixels: np.ndarray) -> None:
        """Frame `index` (the next one), (h, w, 4) uint8 BGRA."""
        if index != self._next():
            raise ValueError(f"frame {index} given, frame {self._next()} expected")
        try:
            if self.transparent:
                pixels = straight_alpha(pixels, fill=self.path.suffix.lower() == ".webm")
            elif self._ycbcr is not None:
                pixels = to_ycbcr420(pixels, self._ycbcr, dither=self._dither)
            hand_over(self._proc.stdin.fileno(), np.ascontiguousarray(pixels),
                      self._capacity)
        except (BrokenPipeError, OSError):
            self._proc.wait()
            raise EncodeError(f"ffmpeg stopped while encoding {self.path}: "
                              f"{self._cause()}") from None
        self.written += 1

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self._finish()
        finally:
            # On failure or interruption kill ffmpeg rather than let it flush a file nobody
            # will keep; remove the temporary before waiting, in case a second Ctrl-C
            # cuts the wait short.
            if self._proc.poll() is None:
                self._proc.kill()
            if not self.staged:
                self._tmp.unlink(missing_ok=True)
            try:
                self._proc.stdin.close()
            except OSError:
                pass  # unflushed bytes to a killed ffmpeg
            self._proc.wait()
            self._log.close()

    def _finish(self) -> None:
        self._proc.stdin.close()
        code = self._proc.wait()
        if code != 0:
            raise EncodeError(f"ffmpeg failed writing {self.path}: {self._cause()}")
        self._seal(self._tmp)
        if self.hold:
            self.staged = [(self._tmp, self.path)]
        else:
            place_finished(self._tmp, self.path, overwrite=self.overwrite)

    def _seal(self, tmp: Path) -> None:
        """Last touches to the finished file `tmp`, and the check that it holds every
        frame, before it is placed."""
        _check_frames(tmp, self.path, self.expected, "ffmpeg wrote")

    def _cause(self) -> str:
        return ffmpeg_account(self._log, self._proc.returncode)


def ffmpeg_account(log, code: int | None) -> str:
    """ffmpeg's own account of a failure, on one line: its stderr in the file `log`, and
    how it ended (`code`: its exit status, negative for a signal)."""
    log.seek(0)
    lines = []
    for line in log.read().decode("utf-8", "replace").splitlines():
        line = _LOG_PREFIX.sub("", line).strip()
        if line and line not in lines:
            lines.append(line)
    if code is not None and code < 0:
        name = signal.Signals(-code).name
        lines.append(f"killed by {name} ({signal.strsignal(-code)})")
    elif code:
        lines.append(f"exit status {code}")
    elif not lines:  # an "ffmpeg" that stops reading, saying nothing (IMAGEIO_FFMPEG_EXE)
        lines.append(f"it said nothing and exited with status {code}: is {ffmpeg_exe()} "
                     f"ffmpeg?")
    text = "; ".join(lines)
    return text if len(text) <= 400 else text[:400] + " …"


def _check_frames(tmp: Path, path: Path, expected: int, found_in: str) -> None:
    """EncodeError unless the finished clip `tmp` (to become `path`) holds `expected`
    frames."""
    found = count_frames(tmp)
    if found != expected:
        raise EncodeError(f"{path}: expected {expected} frames, {found_in} {found}")


def count_frames(path: str | Path) -> int:
    """Frames in a video's first stream, counted by ffmpeg as the packets it copies to no
    output, without decoding: each of these codecs stores a frame a packet (VP9's hidden
    frames ride in superframes). imageio-ffmpeg's count_frames_and_secs decodes every
    frame, which took 3.6 s for ten seconds of 1080p, an eighth of the encode itself."""
    proc = subprocess.run([ffmpeg_exe(), "-hide_banner", "-nostdin", "-i", file_arg(path),
                           "-map", "0:v:0", "-c", "copy", "-f", "null", "-"],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    counts = _FRAME_COUNT.findall(proc.stderr)
    if proc.returncode != 0 or not counts:
        raise EncodeError(f"cannot read back {final_name(path)}: "
                          f"{ffmpeg_account(io.BytesIO(proc.stderr), proc.returncode)}")
    return int(counts[-1])


def _lengths_us(counts: list[int], fps: Fraction) -> list[int]:
    """Each of a run of segments' lengths (counts[i] frames at `fps`) in whole
    microseconds, as the differences of their rounded starts: the starts never drift."""
    ends = itertools.accumulate(counts)
    starts = [0] + [round(Fraction(end) / fps * 1_000_000) for end in ends]
    return [b - a for a, b in zip(starts, starts[1:])]


def join_clips(parts: list[Path], counts: list[int], path: str | Path, *, fps: Fraction,
               frames: int, first: int = 0, overwrite: bool = True) -> None:
    """Concatenate clips encoded with identical settings (the segments of one render, in
    order, counts[i] frames in parts[i]) into `path` without re-encoding, through ffmpeg's
    concat demuxer; written beside `path` and renamed into place once the frame count
    read back is `frames`. `first`: the index of the first frame (a ProRes clip's
    timecode, `timecode_args`).

    Segments in the output's own container join with the timestamps of one whole encode,
    B-frames included: MP4 and MOV keep a timescale that holds the frame rate exactly
    (24000/1001 too, where MPEG-TS's 90 kHz clock would round). Each segment starts where
    its frames put it, given to the demuxer (to the microsecond, each start rounded once):
    read from a segment of a few frames, its last frame's duration came out short, and
    every segment after it started early. The decode times run on from the first's a
    frame apart: x264 leaves the B-frames out of a segment of two frames, which then
    decodes without the others' delay, a gap in the decode times that read as 25 fps
    for a 10-frame clip at 30. WebM counts whole milliseconds, and each segment's start
    rounds once more, so its timestamps are set again from the frame numbers (VP9
    packets are in presentation order).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    muxer = codec_args(suffix, 0)[1]
    tmp = temp_beside(path, suffix)
    listing = temp_beside(path, ".txt")
    with tempfile.TemporaryFile() as log:
        try:
            # The demuxer's own quoting: a name inside '…' with each ' written '\''.
            listing.write_text("".join(
                "file '{}'\nduration {}us\n".format(str(Path(p).resolve())
                                                   .replace("'", "'\\''"), length)
                for p, length in zip(parts, _lengths_us(counts, fps))))
            # Packet N's time from its number, in the stream's time base.
            nth = f"round(N*{fps.denominator}/({fps.numerator}*TB))"
            if muxer == "webm":
                extra = ["-bsf:v", f"setts=ts={nth}", *_WEBM_SAME_BYTES]
            else:
                extra = ["-movflags", "+faststart"] if muxer in ("mp4", "mov") else []
                extra += ["-bsf:v", f"setts=pts=PTS:dts=STARTDTS+{nth}"]
                extra += timecode_args(muxer, first, fps)
            cmd = [ffmpeg_exe(), "-y", "-hide_banner", "-nostdin", "-loglevel", "error",
                   "-f", "concat", "-safe", "0", "-i", file_arg(listing), "-c", "copy",
                   *extra, "-f", muxer, file_arg(tmp)]
            code = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=log).returncode
            if code != 0:
                raise EncodeError(f"ffmpeg failed joining the segments of {path}: "
                                  f"{ffmpeg_account(log, code)}")
            _check_frames(tmp, path, frames, "the joined segments hold")
            place_finished(tmp, path, overwrite=overwrite)
        finally:
            tmp.unlink(missing_ok=True)
            listing.unlink(missing_ok=True)
