"""Print stills: the PNG chunks that record a still's resolution (pHYs), sRGB, and the
fully resolved scene it was drawn from, so the picture can be re-rendered from the file
alone (`images.write_png` writes them). The keys of that record are written
(`provenance`) and read (`read_provenance`) here and nowhere else; a JPEG still carries
them in a comment, an OpenEXR still as its header's string attributes. Trajectories
(.npz, USD) record the scene they fly and the version too (`trajectory_record`), with
no time: --info reads them, --from does not.

cairo writes the pixels; the few extra chunks are spliced in here (a PNG chunk is length,
type, data, CRC-32).
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..errors import UsageError

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_SRGB_PERCEPTUAL = b"\x00"


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + \
        struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _itxt(key: str, value: str) -> bytes:
    # Uncompressed international text: keyword, flags, language, translated keyword, UTF-8.
    return _chunk(b"iTXt", key.encode("latin-1") + b"\x00\x00\x00\x00\x00" +
                  value.encode("utf-8"))


def add_chunks(png: bytes, text: dict[str, str], dpi: float | None = None) -> bytes:
    """`png` with sRGB (its colours are sRGB-encoded, as cairo draws them: a reader that
    manages colour reads them so, not as an unknown space) and, with `dpi`, pHYs (as
    pixels per metre) after IHDR, and one iTXt chunk per text entry before IEND."""
    if not png.startswith(_SIGNATURE):
        raise ValueError("not a PNG")
    ihdr_end = len(_SIGNATURE) + 8 + struct.unpack(">I", png[8:12])[0] + 4
    head = _chunk(b"sRGB", _SRGB_PERCEPTUAL)
    if dpi is not None:
        per_metre = round(dpi / 0.0254)
        head = _chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)) + head
    png = png[:ihdr_end] + head + png[ihdr_end:]
    iend = png.rindex(b"IEND") - 4
    return png[:iend] + b"".join(_itxt(k, v) for k, v in text.items()) + png[iend:]


def dpi_of(per_metre: int) -> float:
    """The dpi a pHYs of `per_metre` pixels a metre was written for: the shortest decimal
    that rounds to it, as `--dpi` is typed (150 is stored as 5906 px/m, 150.0124 dpi; read
    back as that, a PDF redrawn from the PNG had another page size)."""
    exact = per_metre * 0.0254
    for digits in range(4):
        dpi = round(exact, digits)
        if dpi > 0 and round(dpi / 0.0254) == per_metre:
            return dpi
    return exact


def read_chunks(path: str | Path) -> tuple[float | None, dict[str, str]]:
    """(dpi or None, text entries) of a PNG file."""
    data = Path(path).read_bytes()
    if not data.startswith(_SIGNATURE):
        raise UsageError(f"{path}: not a PNG file")
    pos, dpi, text = len(_SIGNATURE), None, {}
    while True:
        if pos + 12 > len(data):
            raise UsageError(f"{path}: the PNG is cut short (no IEND chunk): its record "
                             f"cannot be trusted; render the still again")
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = data[pos + 8 + length:pos + 12 + length]
        # The record's chunks are checked; the pixels (a poster's gigabytes) only for
        # being whole, which the IEND after them says.
        if len(crc) < 4 or kind != b"IDAT" and \
                struct.unpack(">I", crc)[0] != zlib.crc32(kind + body):
            raise UsageError(f"{path}: the PNG is damaged (a {kind.decode('latin-1')} chunk "
                             f"fails its checksum) or cut short: its record cannot be "
                             f"trusted; render the still again")
        if kind == b"IEND":
            break
        if kind == b"pHYs" and body[8:9] == b"\x01":
            dpi = dpi_of(struct.unpack(">I", body[:4])[0])
        elif kind == b"iTXt":
            key, _, rest = body.partition(b"\x00")
            value = rest[2:].split(b"\x00", 2)[-1]  # skip flags, language, translated key
            text[key.decode("latin-1")] = value.decode("utf-8", "replace")
        elif kind == b"tEXt":
            key, _, value = body.partition(b"\x00")
            text[key.decode("latin-1")] = value.decode("latin-1")
        pos += 12 + length
    return dpi, text


_JPEG, _EXR = b"\xff\xd8\xff", b"\x76\x2f\x31\x01"
# Trajectories: an .npz (a zip), a USD layer (crate or text).
_NPZ, _USD = b"PK\x03\x04", (b"PXR-USDC", b"#usda")
# A JPEG comment segment holds at most this many bytes. A longer record (a scene of
# thousands of keyframes) takes several: the record without its scene, saying how many
# pieces of it follow (`scene-pieces`), then the scene's UTF-8 in pieces, each after
# _SCENE_PIECE.
_COMMENT_MAX = 65533
_SCENE_PIECE = b"boids-render:scene\n"


def add_comments(jpeg: bytes, text: dict[str, str]) -> bytes:
    """The JPEG file `jpeg` with a still's record as comment segments (`jpeg_comments`)
    after its header's (its APPn and comments), before its tables."""
    at = 2  # past the start of image
    while jpeg[at] == 0xFF and (0xE0 <= jpeg[at + 1] <= 0xEF or jpeg[at + 1] == 0xFE):
        at += 2 + int.from_bytes(jpeg[at + 2:at + 4], "big")
    segments = b"".join(b"\xff\xfe" + (len(c) + 2).to_bytes(2, "big") + c
                        for c in jpeg_comments(text))
    return jpeg[:at] + segments + jpeg[at:]


def jpeg_comments(text: dict[str, str]) -> list[bytes]:
    """A still's record as JPEG comments: the entries as one JSON object; too long for one
    comment segment, that object without the scene, then the scene in pieces."""
    data = json.dumps(text, ensure_ascii=False).encode("utf-8")
    if len(data) <= _COMMENT_MAX:
        return [data]
    scene = text[f"{_PREFIX}scene"].encode("utf-8")
    room = _COMMENT_MAX - len(_SCENE_PIECE)
    pieces = [_SCENE_PIECE + scene[at:at + room] for at in range(0, len(scene), room)]
    rest = {k: v for k, v in text.items() if k != f"{_PREFIX}scene"}
    rest[f"{_PREFIX}scene-pieces"] = str(len(pieces))
    return [json.dumps(rest, ensure_ascii=False).encode("utf-8"), *pieces]


def _jpeg_record(path: str | Path) -> tuple[float | None, dict[str, str]]:
    """Its JFIF dpi and the first comment that is a JSON object holding a boids-render
    record (another program may have added comments of its own, JSON ones too), with its
    scene put together again from its pieces when it has them."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            dpi = image.info.get("dpi")
            comments = [data for marker, data in image.applist if marker == "COM"]
    except (OSError, SyntaxError, ValueError) as e:
        raise UsageError(f"{path}: not a readable JPEG file ({e})") from None
    dpi = float(dpi[0]) if dpi else None
    for comment in comments:
        try:
            text = json.loads(comment)
        except (ValueError, RecursionError):
            continue
        if isinstance(text, dict) and any(str(k).startswith(_PREFIX) for k in text):
            record = {k: v for k, v in text.items() if isinstance(v, str)}
            count = record.pop(f"{_PREFIX}scene-pieces", None)
            if count is not None:
                record[f"{_PREFIX}scene"] = _scene_from_pieces(path, comments, count)
            return dpi, record
    return dpi, {}


def _scene_from_pieces(path, comments: list[bytes], count: str) -> str:
    pieces = [c[len(_SCENE_PIECE):] for c in comments if c.startswith(_SCENE_PIECE)]
    try:
        if len(pieces) == int(count):
            return b"".join(pieces).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        pass
    raise UsageError(f"{path}: its recorded scene is cut short ({len(pieces)} of the "
                     f"{count} comment segments it was written in are left)")


def _exr_record(path: str | Path) -> tuple[float | None, dict[str, str]]:
    """Its standard xDensity (dpi) and its header's string attributes (the pixels are not
    read)."""
    from .exr import require_openexr

    require_openexr()
    import OpenEXR

    try:
        with OpenEXR.File(str(path), header_only=True) as exr:  # closing empties the header
            header = exr.header()
            density = header.get("xDensity")
            return (float(density) if density else None), \
                {k: v for k, v in header.items() if isinstance(v, str)}
    except (RuntimeError, ValueError, OSError) as e:
        raise UsageError(f"{path}: not a readable OpenEXR file ({e})") from None


def read_record(path: str | Path) -> tuple[float | None, dict[str, str]]:
    """(dpi or None, text entries) of a PNG, JPEG or OpenEXR still."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError as e:
        raise UsageError(f"{path}: cannot read it: {e.strerror or e}") from None
    if head.startswith(_JPEG):
        return _jpeg_record(path)
    if head.startswith(_EXR):
        return _exr_record(path)
    if head.startswith(_SIGNATURE):
        return read_chunks(path)
    if head.startswith((_NPZ, *_USD)):
        return None, _trajectory_text(path, npz=head.startswith(_NPZ))
    vector = Path(path).suffix.lower() in (".pdf", ".svg")
    raise UsageError(f"{path}: " + ("a PDF or SVG still records no scene: --info and --from "
                                    "read the PNG, JPEG or OpenEXR stills of --still" if vector
                                    else "not a PNG, JPEG or OpenEXR file (nor "
                                    ".npz or USD trajectories)"))


# The text keys of a still's record, after "boids-render:" (besides "Software").
_PREFIX = "boids-render:"
RECORDED = ("version", "seed", "time", "scene-sha256")


def trajectory_record(scene_toml: str, seed: int, version: str) -> dict[str, str]:
    """What trajectories record of the scene they fly (a still's record without a time),
    by key: .npz members, a USD layer's customLayerData."""
    return {key.removeprefix(_PREFIX): value
            for key, value in provenance(scene_toml, seed, Fraction(0), version).items()
            if key.startswith(_PREFIX) and key != f"{_PREFIX}time"}


def _trajectory_text(path: str | Path, *, npz: bool) -> dict[str, str]:
    """The record of an .npz's (`npz`) or a USD layer's trajectories as a still's text
    entries ({} when it has none: written before they recorded one)."""
    try:
        if npz:
            with np.load(path) as members:
                found = {key: str(members[key]) for key in members.files
                         if key == "scene" or key in RECORDED}
        else:
            from pxr import Sdf

            layer = Sdf.Layer.FindOrOpen(str(path))
            found = dict(layer.customLayerData.get("boids-render", {})) if layer else {}
    except ImportError:
        raise UsageError(f"{path}: reading USD needs the usd-core package: "
                         f"pip install 'boids-render[usd]'") from None
    except Exception:  # numpy's and USD's errors for a damaged file (numpy's misleading)
        raise UsageError(f"{path}: not a readable {'.npz' if npz else 'USD'} file") from None
    return {f"{_PREFIX}{key}": str(value) for key, value in found.items()}


def provenance(scene_toml: str, seed: int, time: Fraction, version: str) -> dict[str, str]:
    """The text chunks recording a still: the resolved scene (`scene_toml`, its own TOML),
    its seed, the time (exact seconds) and the boids-render version that drew it."""
    return {
        "Software": f"boids-render {version}",
        f"{_PREFIX}scene": scene_toml,
        f"{_PREFIX}scene-sha256": hashlib.sha256(scene_toml.encode()).hexdigest(),
        f"{_PREFIX}seed": str(seed),
        f"{_PREFIX}time": str(time),
        f"{_PREFIX}version": version,
    }


@dataclass(frozen=True)
class Provenance:
    """What a still records: its scene's TOML, its time (exact seconds, 0 when not
    recorded; None for trajectories, which have no one time), its dpi (None: none), each
    of RECORDED as text ("?" when missing), its bits a channel (16: a 16-bit PNG; else 8,
    what --from draws again) and whether it is an OpenEXR file (half floats, whatever
    `bit_depth` says)."""

    scene_toml: str
    time: Fraction | None
    dpi: float | None
    fields: dict[str, str]
    bit_depth: int = 8
    exr: bool = False

    @property
    def edited(self) -> bool:
        """Whether the scene no longer matches the digest recorded beside it (its text
        changed since the still was drawn)."""
        digest = self.fields.get("scene-sha256", "?")
        return digest != "?" and digest != hashlib.sha256(self.scene_toml.encode()).hexdigest()


def read_provenance(path: str | Path) -> Provenance:
    """The record of the still at `path`; UsageError when it records no scene."""
    dpi, text = read_record(path)
    if f"{_PREFIX}scene" not in text:
        frame = f"{_PREFIX}frames-of" in text
        raise UsageError(f"{path}: no boids-render scene recorded in this file" +
                         ("; a sequence's frame records only a digest of it (for --resume): "
                          "a still (--still T -o FILE.png) records its scene" if frame else
                          ""))
    with open(path, "rb") as f:
        head = f.read(25)  # a PNG's IHDR holds its bit depth at byte 24
    depth = head[24] if head.startswith(_SIGNATURE) and len(head) == 25 else 8
    if head.startswith((_NPZ, *_USD)):
        return Provenance(text[f"{_PREFIX}scene"], None, None,
                          {key: text.get(_PREFIX + key, "?") for key in RECORDED
                           if key != "time"})
    try:
        time = Fraction(text.get(f"{_PREFIX}time", "0"))
    except ValueError:
        raise UsageError(f"{path}: its recorded time is damaged "
                         f"({text[f'{_PREFIX}time'][:40]!r}): give it with --still T") from None
    return Provenance(text[f"{_PREFIX}scene"], time,
                      dpi, {key: text.get(_PREFIX + key, "?") for key in RECORDED},
                      16 if depth == 16 else 8, head.startswith(_EXR))


def png16(rgb: np.ndarray) -> bytes:
    """(h, w, 3) uint16 RGB, or (h, w, 4) RGBA with straight alpha, as a 16-bit PNG (cairo
    writes only 8 bits a channel). Each row is stored unfiltered: a supersampled print
    compresses poorly whatever the filter."""
    height, width, channels = rgb.shape
    rows = np.empty((height, 1 + width * 2 * channels), np.uint8)
    rows[:, 0] = 0  # filter type: none
    rows[:, 1:] = rgb.astype(">u2").view(np.uint8).reshape(height, -1)
    colour_type = {3: 2, 4: 6}[channels]  # truecolour, truecolour with alpha
    header = struct.pack(">IIBBBBB", width, height, 16, colour_type, 0, 0, 0)
    return (_SIGNATURE + _chunk(b"IHDR", header) +
            _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + _chunk(b"IEND", b""))


class PngStream:
    """An 8-bit RGB PNG written band by band straight to `path` (a poster never needs to be
    whole in memory), with resolution, sRGB and text chunks like `add_chunks`."""

    def __init__(self, path: Path, width: int, height: int, *, dpi: float,
                 text: dict[str, str]):
        self.file = open(path, "wb")
        self.zlib = zlib.compressobj(6)
        per_metre = round(dpi / 0.0254)
        self.text = text
        self.file.write(_SIGNATURE + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height,
                                                                 8, 2, 0, 0, 0)) +
                        _chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)) +
                        _chunk(b"sRGB", _SRGB_PERCEPTUAL))

    def write_rows(self, rgb: np.ndarray) -> None:
        """(rows, width, 3) uint8, C-contiguous."""
        # Row by row, straight from the array: a poster's band is not copied.
        out = []
        for row in rgb:
            out += [self.zlib.compress(b"\x00"), self.zlib.compress(row)]  # filter: none
        self._idat(b"".join(out))

    def _idat(self, data: bytes) -> None:
        if data:
            self.file.write(_chunk(b"IDAT", data))

    def close(self) -> None:
        self._idat(self.zlib.flush())
        self.file.write(b"".join(_itxt(k, v) for k, v in self.text.items()) +
                        _chunk(b"IEND", b""))
        self.file.close()
