"""Output suffix → writer. Backends are imported only when chosen."""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError
from ..scene import Scene

VIDEO_SUFFIXES = (".mp4", ".webm", ".mov", ".gif")


def open_writer(output: str, scene: Scene, *, resume: bool = False, overwrite: bool = True,
                first: int = 0):
    """A writer for `output`: a PNG sequence (a %0Nd pattern or a trailing "/") or a video
    chosen by suffix. Each is a context manager with `wants(index)` (False: a frame on disk
    to keep, do not draw it) and `write(index, pixels)`.

    resume: keep the complete frames of a PNG sequence. overwrite=False: keep whatever
    exists (PNG frames are skipped; a clip is refused before any work is done).
    """
    from .images import SequenceWriter, is_sequence

    if is_sequence(output):
        return SequenceWriter(output, size=scene.output.size, resume=resume,
                              overwrite=overwrite)
    suffix = Path(output).suffix.lower()
    if suffix in VIDEO_SUFFIXES:
        if resume:
            raise UsageError(f"{output}: --resume applies to PNG sequences; a clip is "
                             f"always rendered whole")
        from .video import VideoWriter

        return VideoWriter(output, size=scene.output.size, fps=scene.output.fps,
                           crf=scene.output.crf, frames=scene.frame_count - first,
                           first=first, transparent=scene.output.transparent,
                           overwrite=overwrite)
    raise UsageError(f"{output}: unsupported output; use .mp4, .webm, .mov, .gif, a folder "
                     f"ending in '/' or a pattern such as out/frame_%05d.png")
