"""Sequences of frames, one file per frame, each written whole or not at all: PNG, OpenEXR
(exr.py) or JPEG, as the pattern's suffix says."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import NamedTuple

import cairo
import numpy as np

from ..errors import EncodeError, UsageError, option
from ..scene import Scene
from .files import require_folder, resolved, write_atomically
from .still import add_chunks, png16

_PATTERN = re.compile(r"%0?(\d*)d")
# JPEG frames are previews: quality 90 keeps thin streaks without ringing around them.
JPEG_QUALITY = 90


def is_sequence(output: str) -> bool:
    """An output that contains a %0Nd pattern or ends in "/" is a sequence of frames."""
    return bool(_PATTERN.search(output)) or output.endswith(("/", os.sep))


def sequence_pattern(output: str) -> str:
    """The frames' %0Nd pattern (% signs as printf and ffmpeg read them): `output` itself,
    or a folder's frame_%05d.png, the folder's name taken as it is (a % in it, literal,
    even one that reads as a pattern: `takes%d/`)."""
    if _PATTERN.search(output) and not output.endswith(("/", os.sep)):
        return output
    return os.path.join(output.replace("%", "%%"), "frame_%05d.png")


def frames_there(output: str, first: int, end: int) -> int:
    """How many of frames first .. end - 1 of the sequence `output` have a file at their
    name."""
    pattern = sequence_pattern(output)
    _require_pattern(output, pattern)
    return sum(os.path.exists(pattern % k) for k in range(first, end))


def frame_of(output: str, path: str | Path) -> int | None:
    """The frame number whose file in the sequence `output` is `path`, else None."""
    pattern, path = resolved(sequence_pattern(output)), resolved(path)
    found = re.fullmatch(_PATTERN.sub(r"(\\d+)", re.escape(pattern), 1), path)
    if found is None or pattern % int(found[1]) != path:  # "f_12.png" is no frame of %03d
        return None
    return int(found[1])


def write_png(pixels: np.ndarray, path: str | Path, *, overwrite: bool = True,
              dpi: float | None = None, text: dict[str, str] | None = None) -> bool:
    """Write (h, w, 4) BGRA uint8 pixels (or (h, w, 3|4) uint16 RGB[A], a 16-bit still)
    as a PNG, via a temporary file renamed into place, tagged sRGB, recording `text` (see
    `still.add_chunks`) and, with `dpi`, its resolution (a print still). Returns False
    when `overwrite` is off and `path` exists (nothing written)."""
    data = encode_png(pixels, dpi=dpi, text=text)
    return write_atomically(Path(path), lambda tmp: tmp.write_bytes(data),
                            overwrite=overwrite)


def encode_png(pixels: np.ndarray, *, dpi: float | None = None,
               text: dict[str, str] | None = None) -> bytes:
    """The PNG file `write_png` writes, in memory."""
    if pixels.dtype == np.uint16:
        data = png16(pixels)
    elif getattr(pixels, "straight", None) is not None:
        # A transparent 3D frame: its straight colours as the compositor knew them, where
        # cairo would divide 8-bit premultiplied codes (a faint bird's colour is noise).
        from PIL import Image

        from .video import straight_alpha

        png = io.BytesIO()
        Image.fromarray(straight_alpha(pixels)[:, :, [2, 1, 0, 3]], "RGBA").save(png, "PNG")
        data = png.getvalue()
    else:
        height, width, _ = pixels.shape
        buffer = np.ascontiguousarray(pixels)
        surface = cairo.ImageSurface.create_for_data(memoryview(buffer), cairo.FORMAT_ARGB32,
                                                     width, height, width * 4)
        # Encode in memory, then write with Python: a full disk then raises an OSError that
        # says so, where cairo would only report "error while writing to output stream".
        png = io.BytesIO()
        surface.write_to_png(png)
        data = png.getvalue()
    return add_chunks(data, text or {}, dpi)


def is_complete_png(path: str | Path, size: tuple[int, int]) -> bool:
    """Whether `path` holds a PNG that decodes whole at `size` (w, h) px."""
    try:
        surface = cairo.ImageSurface.create_from_png(str(path))
    except (cairo.Error, OSError, MemoryError):  # missing, truncated or corrupt
        return False
    return (surface.get_width(), surface.get_height()) == tuple(size)


def encode_jpeg(pixels: np.ndarray, dpi: float | None = None,
                text: dict[str, str] | None = None) -> bytes:
    """An opaque frame, (h, w, 4) BGRA uint8, as a JPEG file (quality JPEG_QUALITY); a
    still's resolution (`dpi`, in the JFIF header) and record (`text`, in comments: see
    `still.jpeg_comments`) when given."""
    from PIL import Image

    height, width, _ = pixels.shape
    image = Image.frombuffer("RGB", (width, height), np.ascontiguousarray(pixels), "raw",
                             "BGRX", 0, 1)
    extra = {"icc_profile": srgb_profile()}
    if dpi is not None:
        extra["dpi"] = (dpi, dpi)
    out = io.BytesIO()
    image.save(out, "JPEG", quality=JPEG_QUALITY, **extra)
    if not text:
        return out.getvalue()
    from .still import add_comments

    return add_comments(out.getvalue(), text)


@functools.lru_cache(maxsize=1)
def srgb_profile() -> bytes:
    """An sRGB ICC profile for a JPEG, which has no other way to say its colours are
    sRGB (an untagged one takes a program's working space, Adobe RGB in some): littleCMS's
    built-in one, its creation date (header bytes 24-35) fixed, so the same still is the
    same bytes."""
    from PIL import ImageCms

    data = bytearray(ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes())
    data[24:36] = struct.pack(">6H", 2026, 1, 1, 0, 0, 0)
    return bytes(data)


def is_complete_jpeg(path: str | Path, size: tuple[int, int]) -> bool:
    """Whether `path` holds a JPEG that decodes whole at `size` (w, h) px."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            image.load()  # a truncated file raises here
            return image.format == "JPEG" and image.size == tuple(size)
    except (OSError, SyntaxError, ValueError):
        return False


@dataclass(frozen=True)
class FrameFormat:
    """How a sequence writes a frame: `encode(pixels, text=…)` takes (h, w, 4) BGRA uint8
    pixels as cairo draws them (premultiplied) and returns the file's bytes, `text`
    recorded in them; `is_complete(path, size)` says whether a file on disk decodes whole
    at `size` (w, h) px (a frame --resume keeps)."""

    name: str
    encode: Callable[..., bytes]
    is_complete: Callable[[str | Path, tuple[int, int]], bool]
    alpha: bool


# exr.py imports OpenEXR, an optional extra: only when an EXR frame is written or read.
def _encode_exr(pixels: np.ndarray, text: dict[str, str] | None = None,
                fps: Fraction | None = None) -> bytes:
    from .exr import encode_exr

    return encode_exr(pixels, text, fps)


def _is_complete_exr(path: str | Path, size: tuple[int, int]) -> bool:
    from .exr import is_complete_exr

    return is_complete_exr(path, size)


_PNG = FrameFormat("PNG", encode_png, is_complete_png, alpha=True)
_JPEG = FrameFormat("JPEG", encode_jpeg, is_complete_jpeg, alpha=False)
FRAME_FORMATS = {".png": _PNG,
                 ".exr": FrameFormat("OpenEXR", _encode_exr, _is_complete_exr, alpha=True),
                 ".jpg": _JPEG, ".jpeg": _JPEG}


def frames_record(scene: Scene) -> Callable[[int], dict[str, str]]:
    """What frame k of a sequence records of the render that drew it, for each k: a digest
    of its scene, all but the clip's length (frame k is the same in a longer clip, a
    loop's excepted) and the encoder's quality, and the frame's number, so --resume keeps
    only frames of the same picture, each under its own name (a frame copied to another's
    name was kept as that one)."""
    body = scene.to_dict()
    if not scene.output.loop:
        body["output"].pop("frames", None)
        body["scene"].pop("duration", None)
    body["output"].pop("crf", None)
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    return lambda k: {"boids-render:frames-of": digest, "boids-render:frame": str(k)}


def frame_encoder(suffix: str, scene: Scene) -> Callable[[np.ndarray, int], bytes]:
    """((h, w, 4) BGRA uint8 pixels, the frame's number) → the file of a sequence's frame
    in the format of `suffix`, recording what drew it (`frames_record`) and, in
    OpenEXR, the frame rate."""
    extra = {"fps": scene.output.fps} if suffix == ".exr" else {}
    encode, record = FRAME_FORMATS[suffix].encode, frames_record(scene)
    return lambda pixels, k: encode(pixels, text=record(k), **extra)


def numbered(output: str, index: int) -> str:
    """The name the pattern `output` (one %0Nd) gives frame `index`; UsageError for a
    pattern that is not one."""
    _require_pattern(output, sequence_pattern(output))
    return sequence_pattern(output) % index


def _require_pattern(output: str, pattern: str) -> None:
    """UsageError unless `pattern` holds one frame number padded with zeros (if at all)."""
    try:
        pattern % 0
    except (TypeError, ValueError):  # two conversions, or a stray % ("%%" is a % sign)
        raise UsageError(f"{output}: a frame pattern holds one %0Nd for the frame number "
                         f"(e.g. out/frame_%05d.png; a literal % is written %%)") from None
    spaced = re.search(r"%([1-9]\d*)d", pattern)
    if spaced:  # "f_   1.exr": no compositor reads that as a sequence
        raise UsageError(f"{output}: %{spaced[1]}d pads the frame number with spaces; "
                         f"expected %0{spaced[1]}d, which pads it with zeros")


def frame_format(output: str, transparent: bool = False) -> FrameFormat:
    """The format of a sequence's frames: its pattern's suffix, PNG for a folder. UsageError
    for a suffix no frame format has, or alpha the format cannot hold."""
    pattern = sequence_pattern(output)
    _require_pattern(output, pattern)
    suffix = Path(pattern).suffix.lower()
    found = FRAME_FORMATS.get(suffix)
    if found is None:
        raise UsageError(f"{output}: a sequence of frames in {suffix or 'no format'}: "
                         f"expected one of {', '.join(FRAME_FORMATS)}")
    return usable(found, output, transparent, "transparent frames need .png or .exr")


def usable(found: FrameFormat, output, transparent: bool, instead: str) -> FrameFormat:
    """`found`, for a frame or a still at `output`; UsageError when a transparent render
    needs alpha it cannot hold (`instead`: what can), or its library is not installed."""
    if transparent and not found.alpha:
        raise UsageError(f"{output}: {found.name} has no alpha channel; {instead}; for an "
                         f"opaque one, drop --transparent (or --set output.transparent=false "
                         f"where the scene, or the still drawn again, sets it)")
    if found.name == "OpenEXR":
        from .exr import require_openexr

        require_openexr()
    return found


class Kept(NamedTuple):
    """A sequence's account of the frames it kept (`SequenceWriter.kept_account`): `text`
    for the user, and whether some of them are not this render's (`mixed`), which is
    said even under --quiet: a folder mixing two renders must not pass unnoticed."""

    text: str
    mixed: bool


class SequenceWriter:
    """Writes frame k to `pattern % k`, in the format of the pattern's suffix
    (`frame_format`). A context manager, like the video writer.

    Each frame records what drew it (`frames_record`; an OpenEXR frame its frame rate too:
    `frame_encoder`). Frames already on disk are kept instead of drawn again: with
    `resume`, those that read back whole at the scene's size and record the same (an
    interrupted run's of this render); without `overwrite`, any file at a frame's name (so
    several machines can render into one folder, each skipping the frames another has
    finished).
    """

    def __init__(self, output: str, scene: Scene, *, resume: bool = False,
                 overwrite: bool = True):
        self.format = frame_format(output, scene.output.transparent)
        self.record = frames_record(scene)
        self.suffix = Path(sequence_pattern(output)).suffix.lower()
        self.encode = frame_encoder(self.suffix, scene)
        self.linear = self.suffix == ".exr"  # a 3D frame's float image, for EXR's half floats
        self.output, self.pattern = output, sequence_pattern(output)
        require_folder(Path(self.pattern % 0), output)
        self.size = scene.output.size
        self.resume = resume
        self.overwrite = overwrite
        self.written = 0
        self.kept = self.foreign = 0  # frames on disk kept; of them, another render's
        self.redrawn = 0  # frames on disk --resume drew again (not this render's whole)

    def refuse_folders(self, first: int, count: int) -> None:
        """UsageError for a folder standing at the name of one of frames first… (found
        when its frame was written, the frames before it drawn for nothing)."""
        folder = Path(self.pattern % 0).parent
        try:
            names = {entry.name for entry in os.scandir(folder) if entry.is_dir()}
        except OSError:  # no folder yet (or unreadable: writing says so)
            return
        for index in range(first, first + count) if names else ():
            if os.path.basename(self.pattern % index) in names:
                raise UsageError(f"{self.output}: {self.pattern % index} is a folder, where "
                                 f"frame {index} goes: move it, or write the frames "
                                 f"elsewhere")

    def __enter__(self) -> SequenceWriter:
        Path(self.pattern % 0).parent.mkdir(parents=True, exist_ok=True)
        return self

    def wants(self, index: int) -> bool:
        """Whether frame `index` needs drawing; False for a frame on disk to keep."""
        path = self.pattern % index
        if not self.overwrite and os.path.exists(path):
            self.kept += 1
            self.foreign += self._foreign(path, index)
            return False
        keep = self.resume and self.format.is_complete(path, self.size) \
            and self._records(path, index)
        self.kept += keep
        self.redrawn += self.resume and not keep and os.path.exists(path)
        return not keep

    def _foreign(self, path: str, index: int) -> bool:
        """Whether the file at `path` is not frame `index` of this render (another's, or
        not a frame at all)."""
        try:
            return not self._records(path, index)
        except (UsageError, OSError):
            return True

    def _records(self, path: str, index: int) -> bool:
        """Whether the frame at `path` records what this render's frame `index` does
        (another render's frame, another frame of this one, or one written before
        frames recorded anything, does not)."""
        from .still import read_record

        text, want = read_record(path)[1], self.record(index)
        return {key: text.get(key) for key in want} == want

    def write(self, index: int, pixels: np.ndarray) -> None:
        self.write_encoded(index, self.encode(pixels, index))

    def write_encoded(self, index: int, data: bytes) -> None:
        """Frame `index` as its file's bytes (drawn and encoded elsewhere, by
        `frame_encoder`)."""
        path = Path(self.pattern % index)
        removed = EncodeError(f"{path.parent}: the sequence's folder was removed while "
                              f"rendering, and the frames written into it with it")
        if not path.parent.is_dir():  # made on entering: the frames before went with it
            raise removed
        try:
            # Not written (False) when, without overwrite, another machine sharing the
            # folder finished this frame meanwhile: theirs is kept.
            self.written += write_atomically(path, lambda tmp: tmp.write_bytes(data),
                                             overwrite=self.overwrite, make_folder=False)
        except (EncodeError, OSError):
            if not path.parent.is_dir():  # removed while this frame was being written
                raise removed from None
            raise

    def kept_account(self) -> Kept | None:
        """What the render kept of the frames on disk, for the user, and what --resume
        drew again of them; None if nothing was there."""
        if not self.kept and not self.redrawn:
            return None
        how = option("--no-overwrite" if not self.overwrite else "--resume")
        why = "another scene, seed, size or quality, or not a frame"
        other = (f"; {self.foreign} of them {'was' if self.foreign == 1 else 'were'} not "
                 f"drawn by this render ({why})" if self.foreign else "")
        if self.redrawn:
            one = self.redrawn == 1
            other += (f"; {self.redrawn} frame{'s' * (not one)} there "
                      f"{'was' if one else 'were'} drawn again: cut short, or not this "
                      f"render's ({why})")
        return Kept(f"{self.output}: kept {self.kept} frame{'s' * (self.kept != 1)} "
                    f"already there ({how}), wrote {self.written}{other}", self.foreign > 0)

    def __exit__(self, exc_type, exc, tb) -> None:
        return None
