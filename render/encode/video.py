"""Video through the ffmpeg binary that imageio-ffmpeg ships.

ffmpeg is driven directly (not through `write_frames`) for three reasons: rational frame
rates such as 24000/1001 pass through exactly, its stderr and exit status reach the user,
and frames go in cairo's native BGRA layout so ffmpeg, not numpy, converts the pixels.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..errors import EncodeError, UsageError
from .files import temp_beside

# BT.709 throughout: convert with the 709 matrix into limited range, and say so in the
# stream, so players do not guess (and shift colours) on HD material.
_H264 = [
    "-c:v", "libx264", "-preset", "medium",
    "-vf", "scale=out_color_matrix=bt709:out_range=tv,"
           "setparams=color_primaries=bt709:color_trc=bt709:colorspace=bt709:range=tv",
    "-pix_fmt", "yuv420p",
    "-color_primaries", "bt709", "-color_trc", "bt709", "-colorspace", "bt709",
    "-color_range", "tv", "-movflags", "+faststart",
]


def ffmpeg_exe() -> str:
    import imageio_ffmpeg

    try:
        return imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError as exc:
        raise EncodeError(f"ffmpeg not found: {exc}") from None


class VideoWriter:
    """Streams BGRA frames into an H.264 MP4, written to a temporary file beside `path` and
    renamed into place only once ffmpeg succeeded and the frame count read back matches.

    Use as a context manager; an exception inside the block kills ffmpeg and removes the
    temporary file, leaving any existing file at `path` untouched.
    """

    def __init__(self, path: str | Path, *, size: tuple[int, int], fps: Fraction, crf: int,
                 frames: int):
        width, height = size
        if width % 2 or height % 2:
            raise UsageError(f"{path}: H.264 in yuv420p needs even sizes, got "
                              f"{width}x{height}; try {width + width % 2}x{height + height % 2}")
        self.path = Path(path)
        self.size = size
        self.fps = fps
        self.crf = crf
        self.expected = frames
        self.written = 0
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> VideoWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = temp_beside(self.path, self.path.suffix)
        self._log = tempfile.TemporaryFile()
        width, height = self.size
        cmd = [ffmpeg_exe(), "-y", "-hide_banner", "-nostdin", "-loglevel", "error",
               "-f", "rawvideo", "-pix_fmt", "bgra", "-s", f"{width}x{height}",
               "-framerate", f"{self.fps.numerator}/{self.fps.denominator}", "-i", "pipe:0",
               "-an", *_H264, "-crf", str(self.crf), "-f", "mp4", str(self._tmp)]
        try:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                          stdout=subprocess.DEVNULL, stderr=self._log)
        except OSError as exc:
            self._log.close()
            self._tmp.unlink(missing_ok=True)
            raise EncodeError(f"cannot run ffmpeg {cmd[0]}: {exc.strerror}") from None
        return self

    def write(self, pixels: np.ndarray) -> None:
        """One frame, (h, w, 4) uint8 BGRA."""
        try:
            self._proc.stdin.write(memoryview(np.ascontiguousarray(pixels)).cast("B"))
        except (BrokenPipeError, OSError):
            self._proc.wait()
            raise EncodeError(f"ffmpeg stopped while encoding {self.path}: "
                              f"{self._stderr()}") from None
        self.written += 1

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is not None:
                self._proc.kill()
                self._proc.wait()
                return
            self._proc.stdin.close()
            code = self._proc.wait()
            if code != 0:
                raise EncodeError(f"ffmpeg failed (exit {code}) writing {self.path}: "
                                  f"{self._stderr()}")
            found = count_frames(self._tmp)
            if found != self.expected:
                raise EncodeError(f"{self.path}: expected {self.expected} frames, "
                                  f"ffmpeg wrote {found}")
            os.replace(self._tmp, self.path)
        finally:
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            self._log.close()
            self._tmp.unlink(missing_ok=True)

    def _stderr(self) -> str:
        self._log.seek(0)
        text = self._log.read().decode("utf-8", "replace").strip()
        return text.splitlines()[-1] if text else "no message"


def count_frames(path: str | Path) -> int:
    """Frames in a video's first stream, counted by ffmpeg without decoding."""
    import imageio_ffmpeg

    frames, _ = imageio_ffmpeg.count_frames_and_secs(str(path))
    return frames
