"""Output suffix → writer. Backends are imported only when chosen."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..scene import Scene

VIDEO_SUFFIXES = (".mp4",)


def open_writer(output: str, scene: Scene):
    """A writer for `output`: a PNG sequence (a %0Nd pattern or a trailing "/") or a video
    chosen by suffix. Each is a context manager with `write(pixels)`."""
    from .images import SequenceWriter, is_sequence

    if is_sequence(output):
        return SequenceWriter(output)
    suffix = Path(output).suffix.lower()
    if suffix in VIDEO_SUFFIXES:
        from .video import VideoWriter

        return VideoWriter(output, size=scene.output.size, fps=scene.output.fps,
                           crf=scene.output.crf, frames=scene.frame_count)
    raise UsageError(f"{output}: unsupported output; use .mp4, a folder ending in '/' or a "
                     f"pattern such as out/frame_%05d.png")
