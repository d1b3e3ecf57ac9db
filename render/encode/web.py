"""A clip for a web page (`--quality web -o NAME.mp4`): NAME.mp4 (H.264), NAME.av1.mp4
(AV1, SVT-AV1), NAME.jpg (the poster: the first frame) and NAME.html (a `<video>` element
offering both, AV1 first), written together: all four or none.

The encoder settings were chosen by measuring size and VMAF on the plate
(benchmarks/web_bench.py, docs/loops.md): each clip is at least 10% smaller than plain
x264 crf 23 preset slow at a VMAF no more than 0.5 below it.
"""

from __future__ import annotations

import html
import struct
from fractions import Fraction
from pathlib import Path
from urllib.parse import quote

import numpy as np

from ..errors import EncodeError, UsageError, option
from ..scene import Scene
from .files import refuse_existing, temp_beside
from .images import encode_jpeg
from .together import Together
from .video import _BT709_TAGS, CENTRED_CHROMA, TO_BT709, VideoWriter

# RGB → BT.709 limited-range YUV, tagged, as every clip here is (video._H264).
BT709_SCALE = (f"{TO_BT709}"
               "setparams=color_primaries=bt709:color_trc=bt709:colorspace=bt709:range=tv")
# Measured on 6 s of the plate at 1280x720, 30 fps (docs/loops.md has the search):
# x264 at preset veryslow finds 12% to save at the same VMAF; crf 23.25 spends a little of
# it on quality. 8-bit: browsers decode no High 10.
H264_ARGS = ["-c:v", "libx264", "-preset", "veryslow", "-crf", "23.25", "-pix_fmt", "yuv420p",
             *CENTRED_CHROMA]
# H.264 levels (ITU-T H.264 table A-1): frame size and rate in 16x16 macroblocks. Left to
# itself, veryslow's 16 reference frames make x264 declare 720p30 level 5.0, which some
# hardware decoders refuse; the lowest level that fits caps the references instead
# (measured at 720p30, level 3.1: 4.36 MB rather than 4.29, VMAF 86.85 rather than 86.87).
H264_LEVELS = (("3.1", 3600, 108_000), ("4.0", 8192, 245_760), ("4.2", 8704, 522_240),
               ("5.1", 36_864, 983_040), ("5.2", 36_864, 2_073_600))


def h264_args(size: tuple[int, int], fps: Fraction) -> list[str]:
    """x264's options for a clip of `size` (w, h) px at `fps`."""
    across, down = -(-size[0] // 16), -(-size[1] // 16)
    # A level also bounds each side, to √(8 × its frame size) macroblocks (A.3.1): a
    # 2880x240 banner fits 3.1's frame size but not its width.
    level = next((name for name, frame, rate in H264_LEVELS
                  if across * down <= frame and across * down * fps <= rate
                  and max(across, down) ** 2 <= 8 * frame), None)
    return H264_ARGS + (["-level", level] if level else [])
# SVT-AV1 at preset 6 (a 6 s clip encodes in about 20 s on 2 cores). Each setting earned
# its place: 10-bit (+0.6 VMAF for +1% size), quantisation matrices (qm-min 0: -6% size
# for -0.3 VMAF), no temporal filtering (it smears thin streaks), one key frame per 10 s
# rather than per 161 frames; crf in quarter steps, which only svtav1-params takes.
AV1_PARAMS = "crf=36.75:enable-qm=1:qm-min=0:enable-tf=0"
AV1_KEYFRAME_S = 10


def av1_args(fps: Fraction) -> list[str]:
    """SVT-AV1's options for a clip at `fps`."""
    keyint = max(1, round(AV1_KEYFRAME_S * fps))
    return ["-c:v", "libsvtav1", "-preset", "6", "-svtav1-params",
            f"{AV1_PARAMS}:keyint={keyint}", "-pix_fmt", "yuv420p10le"]


def web_paths(output: str | Path) -> tuple[Path, Path, Path, Path]:
    """The four files of `--quality web -o NAME.mp4`: NAME.mp4, NAME.av1.mp4, NAME.jpg,
    NAME.html."""
    path = Path(output)
    return (path, path.with_suffix(".av1.mp4"), path.with_suffix(".jpg"),
            path.with_suffix(".html"))


def check_web_output(paths: tuple[str, ...]) -> None:
    """UsageError unless `paths` is the one NAME.mp4 a web page's files are named after."""
    web, named = option("--quality web"), option("-o NAME.mp4")
    hint = f"e.g. {web} {option('-o', 'out/hero.mp4')} (writes hero.mp4, hero.av1.mp4, " \
           f"hero.jpg, hero.html)"
    if len(paths) != 1:
        raise UsageError(f"{web} writes a page's four files from one {named}, {hint}")
    name = paths[0].lower()
    if not name.endswith(".mp4") or name.endswith(".av1.mp4"):
        raise UsageError(f"{paths[0]}: {web} needs {named} (not .av1.mp4), "
                         f"{hint}")


class _WebClip(VideoWriter):
    """A VideoWriter with the web's settings for one codec (`args`)."""

    def __init__(self, path: Path, args: list[str], **options):
        super().__init__(path, **options)
        self.args = args

    def _output_args(self) -> tuple[list[str], str]:
        return ["-vf", BT709_SCALE, *self.args, *_BT709_TAGS, "-color_range", "tv",
                "-movflags", "+faststart"], "mp4"


# The poster's resolution: a JPEG still's when no --dpi is given.
POSTER_DPI = 72


class PosterWriter:
    """The clip's first frame (index `first`) as a JPEG, held (see `together.Together`):
    a clean exit leaves it in a temporary listed in `staged`. It records `text` (the
    scene and time, `still.provenance`) as a JPEG still does, so `--from` draws it again."""

    hold = True

    def __init__(self, path: Path, *, first: int = 0, text: dict[str, str] | None = None):
        self.path = path
        self.first = first
        self.text = text
        self.staged: list[tuple[Path, Path]] = []

    def __enter__(self) -> PosterWriter:
        return self

    def wants(self, index: int) -> bool:
        return index == self.first

    def write(self, index: int, pixels: np.ndarray) -> None:
        """Frame `index`, (h, w, 4) uint8 BGRA, opaque."""
        data = encode_jpeg(pixels, POSTER_DPI, text=self.text)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_beside(self.path, ".jpg")
        self.staged = [(tmp, self.path)]
        try:
            tmp.write_bytes(data)
        except OSError as exc:  # a full disk: a write names no file of its own
            raise EncodeError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None or not self.staged:
            for tmp, _ in self.staged:
                tmp.unlink(missing_ok=True)
            self.staged = []
            if exc_type is None:
                raise EncodeError(f"{self.path}: frame {self.first}, the poster, was never "
                                  f"drawn")


class WebWriter(Together):
    """The four files of a web page from one NAME.mp4 (see the module docstring): the two
    clips and the poster fed the same frames, the page written from what the clips hold
    (their codecs strings), all placed in one step."""

    def __init__(self, output: str | Path, scene: Scene, *, frames: int, first: int = 0,
                 overwrite: bool = True):
        check_web_output((str(output),))
        self.paths = web_paths(output)
        h264, av1, poster, page = self.paths
        # The clips refuse theirs themselves: NAME.mp4 is checked first all the same, so a
        # refusal names the file the user typed.
        for path in (h264, poster, page):
            refuse_existing(path, overwrite)
        clip = dict(size=scene.output.size, fps=scene.output.fps, crf=scene.output.crf,
                    frames=frames, first=first, overwrite=overwrite,
                    transparent=scene.output.transparent, dither=scene.dimensions == 3)
        size, fps = scene.output.size, scene.output.fps
        from .. import __version__
        from ..scene.schema3d import camera_placed
        from .still import provenance

        text = provenance(camera_placed(scene).to_toml(), scene.scene.seed,
                          first / Fraction(fps), __version__)
        super().__init__([_WebClip(h264, h264_args(size, fps), **clip),
                          _WebClip(av1, av1_args(fps), **clip),
                          PosterWriter(poster, first=first, text=text)],
                         overwrite=overwrite)
        self.size = scene.output.size

    def _commit(self) -> None:
        h264, av1, poster, page = self.paths
        clips = {final: tmp for tmp, final in self.staged}
        text = page_html(self.size, poster=poster.name,
                         sources=[(av1.name, codecs_of(clips[av1])),
                                  (h264.name, codecs_of(clips[h264]))])
        tmp = temp_beside(page, ".html")
        self.own.append((tmp, page))  # placed with the others, or removed
        try:
            tmp.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise EncodeError(f"cannot write {page}: {exc.strerror or exc}") from None
        super()._commit()


def page_html(size: tuple[int, int], *, poster: str, sources: list[tuple[str, str]]) -> str:
    """A page holding one `<video autoplay muted loop playsinline>` of `size` (w, h) px
    with its `poster` and `sources` ((relative URL, codecs string), the preferred first)."""
    width, height = size
    lines = [f'  <source src="{html.escape(quote(src))}" '
             f"type='video/mp4; codecs=\"{html.escape(codecs)}\"'>" for src, codecs in sources]
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(Path(sources[-1][0]).stem)}</title>",
        "<style>video { max-width: 100%; height: auto; }</style>",
        f'<video autoplay muted loop playsinline width="{width}" height="{height}" '
        f'poster="{html.escape(quote(poster))}">', *lines, "</video>", ""])


def mp4_boxes(data: bytes, start: int = 0, end: int | None = None):
    """The ISO BMFF boxes in `data[start:end]`, each as (type, payload start, payload end)."""
    end = len(data) if end is None else end
    while start + 8 <= end:
        size, kind = struct.unpack_from(">I4s", data, start)
        header = 8
        if size == 1:  # a 64-bit size follows
            size, header = struct.unpack_from(">Q", data, start + 8)[0], 16
        elif size == 0:  # to the end
            size = end - start
        if size < header:
            return
        yield kind.decode("latin-1"), start + header, min(start + size, end)
        start += size


def _find(data: bytes, kinds: list[str], start: int = 0, end: int | None = None):
    """The payload (start, end) of the first box along the path `kinds`, else None."""
    for kind, a, b in mp4_boxes(data, start, end):
        if kind == kinds[0]:
            return (a, b) if len(kinds) == 1 else _find(data, kinds[1:], a, b)
    return None


def codecs_of(path: Path) -> str:
    """The RFC 6381 codecs string of an MP4's first video track, from its decoder
    configuration: "avc1.PPCCLL" (avcC: profile, constraints, level) or "av01.P.LLT.DD"
    (av1C: profile, level, tier, bit depth; the AV1 codec ISO BMFF binding)."""
    data = path.read_bytes()
    found = _find(data, ["moov", "trak", "mdia", "minf", "stbl", "stsd"])
    if found is None:
        raise EncodeError(f"{path}: no sample description (stsd) to read the codec from")
    a, b = found
    # stsd: version and flags, an entry count, then sample entries; a visual sample entry
    # has 78 bytes of fixed fields before its boxes.
    for kind, entry, entry_end in mp4_boxes(data, a + 8, b):
        config = _find(data, ["avcC" if kind == "avc1" else "av1C"], entry + 78, entry_end)
        if kind == "avc1" and config:
            return "avc1." + data[config[0] + 1:config[0] + 4].hex()
        if kind == "av01" and config:
            level_byte, flags = data[config[0] + 1], data[config[0] + 2]
            tier = "H" if flags & 0x80 else "M"
            depth = 12 if flags & 0x20 else 10 if flags & 0x40 else 8
            return f"av01.{level_byte >> 5}.{level_byte & 0x1F:02d}{tier}.{depth:02d}"
    raise EncodeError(f"{path}: no avc1 or av01 sample entry")
