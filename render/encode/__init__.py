"""What a render writes (`Target`), the protocols writers follow (`FrameWriter` for drawn
frames, `StateWriter` for the flock's states), and the output suffix → writer tables
(`open_writer`, `open_state_writer`). Backends are imported only when chosen."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import UsageError, option
from ..scene import Scene

if TYPE_CHECKING:  # budget.py reads the suffixes and imports no numpy
    import numpy as np

ANIMATED_SUFFIXES = (".gif", ".webp", ".apng")  # animated.py
VIDEO_SUFFIXES = (".mp4", ".webm", ".mov", *ANIMATED_SUFFIXES)
# A frame pattern's suffix (the keys of images.FRAME_FORMATS, which imports no numpy
# here); a folder ending in "/" means PNG.
FRAME_SUFFIXES = (".png", ".exr", ".jpg", ".jpeg")
# What a still can be (stills.py), not a clip's output: a PNG (tiles, 16 bits), one frame
# of a JPEG (the web's poster) or OpenEXR sequence (a compositor's plate), a vector page.
STILL_SUFFIXES = (".png", ".jpg", ".jpeg", ".exr", ".pdf", ".svg")
# Trajectories: the states themselves, nothing drawn (npz.py, usd.py).
STATE_SUFFIXES = (".npz", ".usd", ".usda", ".usdc")


# The clips whose quality output.crf (--crf) sets; ProRes, the animated images and frame
# sequences have settings of their own, and trajectories draw nothing.
CRF_SUFFIXES = (".mp4", ".webm")
# The longest side each encoder takes, measured: ffmpeg fails past it, once the frames are
# drawn. A web page's clips are also SVT-AV1's, which takes frames at most 8704 px tall.
ENCODER_MAX_SIDE = {".mp4": (16384, "H.264 (x264)"), ".webp": (16383, "WebP (libwebp)")}
WEB_MAX_SIDE = (8704, "a web page's clips (SVT-AV1)")
# SVT-AV1 fails on frames whose sides are both under 10 px (8x8 and 6x8 measured), after
# the whole clip is drawn; a page's video one macroblock or more a side is no loss.
WEB_MIN_SIDE = 16


def encoder_max_side(path: str | Path, web: bool = False) -> tuple[int, str] | None:
    """(the longest side in px, the encoder) that the clip at `path` can take, or None
    where only cairo limits it."""
    return WEB_MAX_SIDE if web else ENCODER_MAX_SIDE.get(Path(path).suffix.lower())


def is_state_output(path: str | Path) -> bool:
    """Whether `path` takes the flock's states (trajectories) rather than drawn frames."""
    return Path(path).suffix.lower() in STATE_SUFFIXES


def keeps_straight(scene) -> bool:
    """Whether a canvas for `scene` (`draw.surface.Canvas`) keeps its frame's straight
    colours too: a transparent 3D scene's, which the compositor knows exactly (an 8-bit
    premultiplied code divided by an alpha of a few codes is noise, not the bird's
    colour)."""
    return scene.dimensions == 3 and scene.output.transparent


@dataclass(frozen=True)
class Target:
    """What to write: frames first .. end−1 of the clip (the same frames a full render
    has) into every path of `paths` (none: simulate only, as for --stats), which are
    opened and closed together.

    resume: keep the complete frames of a PNG sequence. overwrite=False: keep whatever
    exists (PNG frames are skipped; a clip is refused before any work is done).
    web: the one path NAME.mp4 names a web page's four files (`web.WebWriter`): NAME.mp4
    (H.264), NAME.av1.mp4 (AV1), NAME.jpg (the poster) and NAME.html.
    """

    paths: tuple[str, ...]
    first: int
    end: int
    resume: bool = False
    overwrite: bool = True
    web: bool = False

    def __post_init__(self):
        if self.web:
            from .web import check_web_output

            check_web_output(self.paths)
        if len(self.paths) > 1:
            from .files import resolved
            from .images import sequence_pattern

            seen: dict[str, str] = {}
            for path in self.paths:  # two names of one file (a/b.mp4, ./a/b.mp4)
                same = resolved(sequence_pattern(path))
                if same in seen:
                    also = "" if seen[same] == path else f" (as {seen[same]})"
                    raise UsageError(f"{path}: given twice as an output{also}")
                seen[same] = path

    @classmethod
    def of(cls, output: str | None, scene: Scene, *, first: int = 0, resume: bool = False,
           overwrite: bool = True, web: bool = False) -> Target:
        """One output (None: none) of frames first .. the scene's last."""
        return cls(() if output is None else (str(output),), first, scene.frame_count,
                   resume, overwrite, web)

    @property
    def count(self) -> int:
        """Frames in the range."""
        return self.end - self.first

    @property
    def frame_paths(self) -> tuple[str, ...]:
        """The paths that take drawn frames (see `open_writer`)."""
        return tuple(p for p in self.paths if not is_state_output(p))

    def on_disk(self, path: str) -> int:
        """Frames of the sequence `path` in the range already at their names, when the
        render keeps what it finds (resume, or overwrite=False); else 0 (a clip, or every
        frame written anew)."""
        from .images import frames_there, is_sequence

        if (self.overwrite and not self.resume) or not is_sequence(path):
            return 0
        return frames_there(path, self.first, self.end)

    @property
    def state_paths(self) -> tuple[str, ...]:
        """The paths that take states, nothing drawn (see `open_state_writer`)."""
        return tuple(p for p in self.paths if is_state_output(p))


class FrameWriter(Protocol):
    """A context manager taking the frames of a range in order: the block's end commits
    the output (an exception inside it leaves any earlier file as it was)."""

    def __enter__(self) -> FrameWriter: ...

    def __exit__(self, exc_type, exc, tb) -> None: ...

    def wants(self, index: int) -> bool:
        """False: frame `index` is on disk to keep, do not draw it."""

    def write(self, index: int, pixels: np.ndarray) -> None:
        """Frame `index`, (h, w, 4) uint8 BGRA as cairo draws it."""


class StateWriter(Protocol):
    """A context manager taking the states of a range in order, as FrameWriter takes
    frames: the block's end commits the output."""

    def __enter__(self) -> StateWriter: ...

    def __exit__(self, exc_type, exc, tb) -> None: ...

    def write_state(self, state) -> None:
        """The next frame's `states.FrameState`."""


def check_web_size(size: tuple[int, int]) -> None:
    """UsageError for a web clip too small for its encoders."""
    if min(size) < WEB_MIN_SIDE:
        raise UsageError(f"{option('--quality web')} needs a size of at least "
                         f"{WEB_MIN_SIDE}x{WEB_MIN_SIDE} px, got {size[0]}x{size[1]}")


def open_writer(target: Target, scene: Scene) -> FrameWriter:
    """The writer for `target`'s frame paths: a sequence of frames (a %0Nd pattern, in the
    format its suffix names, or PNG in a folder ending in "/") or a clip chosen by suffix
    for each; several are written as one. Refuses (UsageError) what cannot be written
    before anything is opened."""
    if target.web:
        from .web import WebWriter

        check_web_size(scene.output.size)
        return WebWriter(target.paths[0], scene, frames=target.count, first=target.first,
                         overwrite=target.overwrite)
    writers = [_writer(path, target, scene) for path in target.frame_paths]
    return writers[0] if len(writers) == 1 else _together(writers, target)


def open_state_writer(target: Target, scene: Scene) -> StateWriter:
    """The writer for `target`'s state paths (.npz; .usd, .usda, .usdc), several written
    as one."""
    writers = [_state_writer(path, target, scene) for path in target.state_paths]
    return writers[0] if len(writers) == 1 else _together(writers, target)


def _together(writers: list, target: Target):
    from .together import Together

    return Together(writers, overwrite=target.overwrite)


def _state_writer(output: str, target: Target, scene: Scene) -> StateWriter:
    if target.resume and not _resumes_a_sequence(target):
        raise UsageError(f"{output}: {option('--resume')} applies to PNG sequences (and "
                         f"EXR or JPEG ones); trajectories are always written whole: drop "
                         f"{option('--resume')}")
    from .. import __version__
    from ..scene.schema3d import camera_placed
    from .still import trajectory_record

    record = trajectory_record(camera_placed(scene).to_toml(), scene.scene.seed, __version__)
    options = dict(fps=scene.output.fps, frames=target.count, first=target.first,
                   overwrite=target.overwrite, record=record)
    if Path(output).suffix.lower() == ".npz":
        from .npz import NpzWriter

        landing = scene.roost is not None and scene.roost.landing_at is not None
        hunt = scene.hawk is not None and scene.hawk.mode == "hunt"
        return NpzWriter(output, hawk=scene.hawk is not None, attack=hunt, landed=landing,
                         **options)
    from .usd import UsdWriter

    # A point's width: a 3D bird's wingspan (m); a 2D streak's widest (world units).
    width = scene.bird.wingspan if scene.dimensions == 3 else scene.render.width_max
    look = hawk = None
    if scene.dimensions == 3:
        from ..draw3d.streaks import look_of

        look = look_of(scene)
        if scene.hawk is not None and scene.hawk.mode == "hunt":
            hawk = scene.hawk.wingspan
    return UsdWriter(output, width=width, look=look, hawk_span=hawk, **options)


def _resumes_a_sequence(target: Target) -> bool:
    """Whether `target` holds a sequence for --resume to complete: the command that wrote
    it beside a clip or trajectories runs again as it was, and those are written whole."""
    from .images import is_sequence

    return any(is_sequence(path) for path in target.frame_paths)


def _writer(output: str, target: Target, scene: Scene) -> FrameWriter:
    from .images import SequenceWriter, is_sequence

    if is_sequence(output):
        writer = SequenceWriter(output, scene, resume=target.resume,
                                overwrite=target.overwrite)
        writer.refuse_folders(target.first, target.count)
        return writer
    suffix = Path(output).suffix.lower()
    if suffix in VIDEO_SUFFIXES:
        if target.resume and not _resumes_a_sequence(target):
            raise UsageError(f"{output}: {option('--resume')} applies to PNG sequences (and "
                             f"EXR or JPEG ones); a clip is always rendered whole: drop "
                             f"{option('--resume')}")
        if suffix in ANIMATED_SUFFIXES:
            from .animated import AnimatedWriter as Writer
        else:
            from .video import VideoWriter as Writer

        return Writer(output, size=scene.output.size, fps=scene.output.fps,
                      crf=scene.output.crf, frames=target.count, first=target.first,
                      transparent=scene.output.transparent, overwrite=target.overwrite,
                      dither=scene.dimensions == 3)
    name = Path(output).name
    hashes = re.search(r"#+", name)
    if hashes and suffix in FRAME_SUFFIXES:  # a compositor's padding, not ours
        numbered = name[:hashes.start()] + f"%0{len(hashes[0])}d" + name[hashes.end():]
        raise UsageError(f"{output}: frames are numbered by a %0Nd pattern, not #: write "
                         f"{Path(output).with_name(numbered)}")
    if "%" in name and suffix in FRAME_SUFFIXES:  # meant as a pattern, or a literal %
        other = re.search(r"%[-+ #0]*(\d*)(?:\.\d+)?[iouxXeEfFgGcrsa]", name)
        if other:
            what = f"{other[0]} is not a frame number"
            meant = name.replace(other[0], f"%0{other[1].lstrip('0') or 5}d", 1)
        else:
            what = "a % alone is not a frame number"
            meant = Path(name).stem.replace("%", "%%") + "_%05d" + suffix
        raise UsageError(f"{output}: {what}: frames are numbered by one %0Nd (a literal % is "
                         f"written %%): write {Path(output).with_name(meant)}")
    hint = "; one frame is a still: add --still TIME" if suffix in STILL_SUFFIXES else ""
    if not suffix and os.path.isdir(output):
        hint = f"; {output} is a folder: write {output}/ for PNG frames in it"
    elif not suffix and name.startswith(".") and name.count(".") == 1:
        # ".mp4" is a name (a hidden file's), without a suffix
        hint = f"; {name} is a name alone: write {Path(output).with_name('out' + name)}"
    raise UsageError(f"{output}: unsupported output {suffix or '(no suffix)'}; expected one "
                     f"of {', '.join(VIDEO_SUFFIXES)}, a folder ending in '/', a pattern "
                     f"such as out/frame_%05d.png (or {', '.join(FRAME_SUFFIXES[1:])}), or "
                     f"{', '.join(STATE_SUFFIXES)} (trajectories){hint}")
