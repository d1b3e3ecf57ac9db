"""Print stills: the PNG chunks that record a still's resolution (pHYs), sRGB, and the
fully resolved scene it was drawn from, so the picture can be re-rendered from the file
alone (`images.write_png` writes them).

cairo writes the pixels; the few extra chunks are spliced in here (a PNG chunk is length,
type, data, CRC-32).
"""

from __future__ import annotations

import struct
import zlib
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


def add_chunks(png: bytes, dpi: float, text: dict[str, str]) -> bytes:
    """`png` with pHYs (dpi as pixels per metre) and sRGB after IHDR, and one iTXt chunk per
    text entry before IEND."""
    if not png.startswith(_SIGNATURE):
        raise ValueError("not a PNG")
    ihdr_end = len(_SIGNATURE) + 8 + struct.unpack(">I", png[8:12])[0] + 4
    per_metre = round(dpi / 0.0254)
    head = _chunk(b"pHYs", struct.pack(">IIB", per_metre, per_metre, 1)) + \
        _chunk(b"sRGB", _SRGB_PERCEPTUAL)
    iend = png.rindex(b"IEND") - 4
    tail = b"".join(_itxt(k, v) for k, v in text.items())
    return png[:ihdr_end] + head + png[ihdr_end:iend] + tail + png[iend:]


def read_chunks(path: str | Path) -> tuple[float | None, dict[str, str]]:
    """(dpi or None, text entries) of a PNG file."""
    data = Path(path).read_bytes()
    if not data.startswith(_SIGNATURE):
        raise UsageError(f"{path}: not a PNG file")
    pos, dpi, text = len(_SIGNATURE), None, {}
    while pos + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"pHYs" and body[8:9] == b"\x01":
            dpi = struct.unpack(">I", body[:4])[0] * 0.0254
        elif kind == b"iTXt":
            key, _, rest = body.partition(b"\x00")
            value = rest[2:].split(b"\x00", 2)[-1]  # skip flags, language, translated key
            text[key.decode("latin-1")] = value.decode("utf-8", "replace")
        elif kind == b"tEXt":
            key, _, value = body.partition(b"\x00")
            text[key.decode("latin-1")] = value.decode("latin-1")
        pos += 12 + length
    return dpi, text


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
