"""OpenEXR frames for compositing: half-float RGBA, linear light, premultiplied alpha.

A 3D frame is composited in float, in linear light (draw3d.optics): its EXR holds that
image, every bird however faint. cairo 1.16 draws 8 bits a channel (it has no float
surface), so a 2D frame's EXR holds the same 8-bit picture as the PNG frame, decoded from
sRGB to linear light: the precision of 8 bits, in the container compositors expect.
cairo's alpha is premultiplied, as EXR's is, but its colours are sRGB-encoded, and
encoding does not commute with multiplying: each colour is un-premultiplied (as the PNG
writer does), decoded, and multiplied by alpha again.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..errors import UsageError
from .video import straight_alpha

INSTALL = "pip install 'boids-render[exr]'"


# IEC 61966-2-1's primaries and white point (BT.709's): red, green, blue and white x, y.
SRGB_CHROMATICITIES = (0.64, 0.33, 0.30, 0.60, 0.15, 0.06, 0.3127, 0.3290)


def require_openexr() -> None:
    """UsageError naming the install command when the openexr package is missing."""
    try:
        import OpenEXR  # noqa: F401
    except ImportError:
        raise UsageError(f"OpenEXR files need the openexr package: {INSTALL}") from None


def srgb_to_linear(encoded: np.ndarray) -> np.ndarray:
    """The sRGB transfer function undone (IEC 61966-2-1): encoded values in [0, 1] → linear
    light in [0, 1], float64."""
    encoded = np.asarray(encoded, np.float64)
    return np.where(encoded <= 0.04045, encoded / 12.92,
                    ((encoded + 0.055) / 1.055) ** 2.4)


def _premultiplied_linear() -> np.ndarray:
    """(256 · 256,) float32: at alpha · 256 + colour, the linear-light premultiplied value
    of a cairo pixel's colour channel; the colour un-premultiplied exactly as the PNG writer
    rounds it (`straight_alpha`), so EXR and PNG frames hold the same picture."""
    alpha, colour = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    grid = np.stack([colour, colour, colour, alpha], axis=-1).astype(np.uint8)
    straight = straight_alpha(grid)[:, :, 0] / 255
    return (srgb_to_linear(straight) * alpha / 255).astype(np.float32).ravel()


# A frame is decoded by one look-up a channel: about 30 times faster than the arithmetic.
_LINEAR = _premultiplied_linear()
_LINEAR_HALF = _LINEAR.astype(np.float16)


def linear_channels(pixels: np.ndarray, dtype=np.float32) -> dict[str, np.ndarray]:
    """(h, w, 4) BGRA uint8 as cairo draws it → {"R", "G", "B", "A": (h, w) `dtype`
    (float32 or float16)}, linear light, premultiplied (alpha 1 where opaque)."""
    table = _LINEAR_HALF if dtype == np.float16 else _LINEAR
    alpha = pixels[:, :, 3].astype(np.uint16) << 8
    channels = {name: np.take(table, alpha | pixels[:, :, source])
                for name, source in zip("RGB", (2, 1, 0))}  # BGRA
    channels["A"] = (pixels[:, :, 3] / np.float32(255)).astype(dtype)
    return channels


def encode_exr(pixels: np.ndarray, text: dict[str, str] | None = None,
               fps: Fraction | None = None, dpi: float | None = None) -> bytes:
    """A frame, (h, w, 4) BGRA uint8, as an OpenEXR file: half-float R, G, B, A channels
    (`linear_channels`; a 3D frame's float image when it carries one, `draw3d.Pixels`),
    ZIP-compressed (lossless) scan lines, the sRGB primaries as its chromaticities; `text`
    as string attributes of its header (a still's record, see `still.provenance`), `fps`
    as its standard framesPerSecond, so a compositor reads a sequence at its rate; `dpi`
    (a still's) as its standard xDensity, pixels per inch, which --from reads back."""
    import OpenEXR

    linear = getattr(pixels, "linear", None)
    if linear is None:
        channels = linear_channels(pixels, np.float16)
    else:
        channels = {name: linear[..., i].astype(np.float16) for i, name in enumerate("RGBA")}

    header = {"compression": OpenEXR.ZIP_COMPRESSION, "type": OpenEXR.scanlineimage,
              "chromaticities": SRGB_CHROMATICITIES,
              **(text or {})}
    if fps is not None:
        header["framesPerSecond"] = Fraction(fps)
    if dpi is not None:
        header["xDensity"] = float(dpi)
    out = io.BytesIO()
    with OpenEXR.File(header, channels) as exr:
        exr.write(out)
    return out.getvalue()


def is_complete_exr(path: str | Path, size: tuple[int, int]) -> bool:
    """Whether `path` holds an OpenEXR image of R, G, B, A at `size` (w, h) px that decodes
    whole. The library's own test (`isComplete`) reads only the table of blocks and passes
    a file cut short inside its last block, so the alpha channel is decoded: every block
    is read."""
    import OpenEXR

    if not os.path.isfile(path):
        return False
    # The library reports each damage it meets on the process's stderr itself (dozens of
    # lines for one truncated frame); here a damaged frame is only drawn again.
    with _silenced_stderr():
        try:  # the classic InputFile: OpenEXR.File also reports on stdout
            exr = OpenEXR.InputFile(str(path))
        except OSError:  # no EXR at all
            return False
        try:
            header = exr.header()
            window = header["dataWindow"]
            found = (window.max.x - window.min.x + 1, window.max.y - window.min.y + 1)
            if found != tuple(size) or set(header["channels"]) != set("RGBA"):
                return False
            exr.channel("A")
            return True
        except OSError:
            return False
        finally:
            exr.close()


@contextlib.contextmanager
def _silenced_stderr():
    """File descriptor 2 pointed at /dev/null meanwhile (what a C library writes there)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
