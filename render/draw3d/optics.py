"""The birds composited over the sky as a camera records them (docs/optics.md).

Three laws decide the drawing:
- linear light: each bird blends in linear (sRGB-decoded) light and the frame is encoded
  once at the end, so 50% coverage of black over a sky of luminance Y reads Y/2;
- Beer–Lambert: a line of sight through n birds of coverage α keeps (1 − α)ⁿ of the light
  behind them, however the birds are grouped; one cairo path would draw their overlap as a
  union (α, not 1 − (1 − α)ⁿ), and 8-bit accumulation of thousands of α ≈ 0.02 birds
  rounds each to a few codes;
- depth order: far to near, each bird over what is behind it, hazed by its `contrast`
  toward the sky at its pixel (under `transparent` that share of the bird is left clear,
  for the sky the plate goes over to fill).

So the streaks are rasterised by one small kernel (`_splat`) straight into float planes,
one bird at a time in the order given, with no cairo path and no state change per bird.
Because every bird's colour is the bird colour, the accent colour or the sky behind it,
a pixel is always sky·A + bird·B + accent·C: three float32 planes over the box the birds
cover carry the whole frame, and `_finish` encodes them (or copies the sky where no bird
is). docs/optics.md has the measurements.
"""

from __future__ import annotations

import math

import numpy as np

from ..sim.jit import inline, serial
from .colour import DECODE, ENCODE, ENCODE_STEPS
from .sky import Sky, paint_sky
from .types import Streaks


@inline
def edge_scale(radius, length):
    """The factor on a streak's partly covered pixels that makes its ink exact.

    The kernel covers a pixel by clamp(r + ½ − d, 0, 1), d the distance from the pixel's
    centre to the segment (`length` px, round caps of radius `r` px). Its integral over
    the plane is 2r per unit length along the segment, but πr² + π/12 over the two caps
    (πb³/3, b = r + ½, below r = ½). Pixels it covers fully are the capsule of radius
    r − ½ and stay exact; the edge pixels carry the rest, so the whole streak leaves
    exactly its area, length·2r + πr², of coverage."""
    b = radius + 0.5
    area = 2.0 * radius * length + math.pi * radius * radius
    if radius < 0.5:
        return area / (b * b * length + math.pi * b * b * b / 3.0)
    core = radius - 0.5
    inside = 2.0 * core * length + math.pi * core * core
    kernel = 2.0 * radius * length + math.pi * radius * radius + math.pi / 12.0
    return (area - inside) / (kernel - inside)


@serial
def _splat(x0, y0, x1, y1, radius, alpha, keep, accent, ox, oy, planes):
    """Composite each streak in turn (rows far to near) over `planes` (3, h, w) float32:
    sky, bird and accent weights of the pixels (ox + x, oy + y) of the full frame.

    Coverage of a pixel is clamp(r + ½ − d, 0, 1), d the distance from its centre to the
    segment, times `edge_scale` where it is below 1 (alpha × coverage then sums
    to alpha × area). A streak of opacity a·coverage = q keeps (1 − q) of each weight
    and adds q·keep of its colour and q·(1 − keep) of the sky (the haze). A row of the
    streak's box is covered first, then composited: neither loop branches (a pixel out
    of reach composites q = 0, which leaves its weights as they were to the bit), and
    the two took 0.8 of the time of one loop that skipped such pixels (their share is
    about 60% in a small streak's box, taken at random)."""
    h, w = planes.shape[1], planes.shape[2]
    cover_row = np.empty(w)
    for i in range(x0.shape[0]):
        r = radius[i]
        reach = r + 0.5
        ax, ay = x0[i] - ox, y0[i] - oy
        dx, dy = x1[i] - x0[i], y1[i] - y0[i]
        ll = dx * dx + dy * dy
        lo_x = max(int(math.floor(min(ax, ax + dx) - reach)), 0)
        hi_x = min(int(math.ceil(max(ax, ax + dx) + reach)), w)
        lo_y = max(int(math.floor(min(ay, ay + dy) - reach)), 0)
        hi_y = min(int(math.ceil(max(ay, ay + dy) + reach)), h)
        a_full, a_edge = alpha[i], alpha[i] * edge_scale(r, math.sqrt(ll))
        colour = 2 if accent[i] else 1
        k = keep[i]
        haze = 1.0 - k
        along = 1.0 / ll if ll > 0.0 else 0.0  # a dot's t is 0
        for y in range(lo_y, hi_y):
            py = y + 0.5 - ay
            for x in range(lo_x, hi_x):
                px = x + 0.5 - ax
                t = min(max((px * dx + py * dy) * along, 0.0), 1.0)
                ex, ey = px - t * dx, py - t * dy
                cover = reach - math.sqrt(ex * ex + ey * ey)
                q = a_full if cover >= 1.0 else min(a_edge * cover, 1.0)
                cover_row[x] = q if cover > 0.0 else 0.0
            sky, bird, extra, own = planes[0, y], planes[1, y], planes[2, y], planes[colour, y]
            for x in range(lo_x, hi_x):
                q = cover_row[x]
                rest = 1.0 - q
                sky[x] = sky[x] * rest + q * haze
                bird[x] *= rest
                extra[x] *= rest
                own[x] += q * k


@serial
def _finish(planes, lo_x, lo_y, bird, accent, transparent, decode, encode, out, straight):
    """Encode the planes (covering out[lo_y:, lo_x:]) into `out` (h, w, 4) BGRA uint8,
    premultiplied; `out` holds the sky (zeros when transparent), which is read back.
    bird, accent: (3,) linear BGR. Transparent, a `straight` of out's height and width
    (zeros) takes each pixel's colour before alpha multiplies it (B, G, R codes)."""
    keep = straight.shape[0] == out.shape[0]
    for y in range(planes.shape[1]):
        for x in range(planes.shape[2]):
            a, b, c = planes[0, y, x], planes[1, y, x], planes[2, y, x]
            if b == 0.0 and c == 0.0 and a == 1.0:
                continue
            oy, ox = lo_y + y, lo_x + x
            if transparent:
                opacity = 1.0 - a
                if opacity <= 0.0:
                    continue
                alpha8 = int(opacity * 255.0 + 0.5)
                for ch in range(3):
                    lin = min((b * bird[ch] + c * accent[ch]) / opacity, 1.0)
                    code = encode[int(lin * ENCODE_STEPS + 0.5)]
                    out[oy, ox, ch] = min(int(code * opacity + 0.5), alpha8)
                    if keep:
                        straight[oy, ox, ch] = code
                out[oy, ox, 3] = alpha8
            else:
                for ch in range(3):
                    lin = a * decode[out[oy, ox, ch]] + b * bird[ch] + c * accent[ch]
                    lin = min(max(lin, 0.0), 1.0)
                    out[oy, ox, ch] = encode[int(lin * ENCODE_STEPS + 0.5)]
                out[oy, ox, 3] = 255


def _linear_birds(planes, sky: Sky, transparent: bool, linear: np.ndarray) -> None:
    """The planes' pixels as `_finish` encodes them, unrounded, into `linear` (the box's
    (h, w, 4) RGBA, holding the sky): what 8 bits would lose of the faintest birds (an
    alpha under 1/255 is 0 there) and of the sheet's gradations."""
    behind, bird, accent = planes
    ink = bird[..., None] * sky.bird.astype(np.float32) + \
        accent[..., None] * sky.accent.astype(np.float32)
    if transparent:
        opacity = 1.0 - behind
        linear[..., :3] = np.minimum(ink, opacity[..., None])
        linear[..., 3] = opacity
    else:
        linear[..., :3] = np.clip(behind[..., None] * linear[..., :3] + ink, 0.0, 1.0)


def _box(x0, y0, x1, y1, radius, window) -> tuple[int, int, int, int] | None:
    """The part of the window (window px, x0, y0, x1, y1 exclusive) any streak (ends
    (x0, y0), (x1, y1), radius px; (m,) float64 each) reaches."""
    x, y, w, h = window
    lo_x, lo_y, hi_x, hi_y = _reach(x0, y0, x1, y1, radius)
    box = (max(math.floor(lo_x) - x, 0), max(math.floor(lo_y) - y, 0),
           min(math.ceil(hi_x) - x, w), min(math.ceil(hi_y) - y, h))
    return box if box[0] < box[2] and box[1] < box[3] else None


@serial
def _reach(x0, y0, x1, y1, radius):
    """The least x and y, then the largest, that any streak's ends ± (radius + 1) reach."""
    lo_x = lo_y = math.inf
    hi_x = hi_y = -math.inf
    for i in range(x0.shape[0]):
        reach = radius[i] + 1.0
        lo_x = min(lo_x, min(x0[i], x1[i]) - reach)
        hi_x = max(hi_x, max(x0[i], x1[i]) + reach)
        lo_y = min(lo_y, min(y0[i], y1[i]) - reach)
        hi_y = max(hi_y, max(y0[i], y1[i]) + reach)
    return lo_x, lo_y, hi_x, hi_y


_NO_STRAIGHT = np.zeros((0, 0, 3), np.uint8)


def compose(streaks: Streaks, sky: Sky, window, transparent: bool,
            out: np.ndarray | None = None, linear: np.ndarray | None = None,
            straight: np.ndarray | None = None) -> np.ndarray:
    """The birds of `streaks` over `sky` in `window` (x, y, w, h px of the full frame):
    (h, w, 4) uint8 cairo ARGB32 bytes (B, G, R, A, premultiplied), into `out` if given
    (a canvas's pixels: the frame is not copied again), else a new array. With `linear`
    ((h, w, 4) float32), the same frame there before it is encoded: R, G, B, A in linear
    light, premultiplied, the sky as its codes decode. With `straight` ((h, w, 3) uint8,
    transparent only), each pixel's colour before alpha multiplies it, B, G, R: exact
    where 8 bits of premultiplied colour under an alpha of a few codes are not.

    `transparent`: no sky or ground; the same weights, the sky's left clear: alpha is
    1 − the sky's weight (each bird, qᵢ its coverage × alpha, hides qᵢ of what is behind
    it and adds qᵢ·contrastᵢ of its colour), the colours premultiplied, so the plate
    over its sky is the opaque frame. A lone bird's alpha is qᵢ·contrastᵢ."""
    x, y, w, h = (int(v) for v in window)
    out = np.empty((h, w, 4), np.uint8) if out is None else out
    if transparent:
        out.fill(0)
    else:
        paint_sky(sky, (x, y, w, h), out)
    if straight is not None:
        straight.fill(0)
    if linear is not None:
        linear[..., :3] = 0.0 if transparent else DECODE[out[..., 2::-1]]  # BGRA → RGB
        linear[..., 3] = 0.0 if transparent else 1.0
    if len(streaks.x0) == 0:
        return out
    radius = 0.5 * np.asarray(streaks.width, np.float64)
    x0, y0 = np.asarray(streaks.x0, np.float64), np.asarray(streaks.y0, np.float64)
    x1, y1 = np.asarray(streaks.x1, np.float64), np.asarray(streaks.y1, np.float64)
    box = _box(x0, y0, x1, y1, radius, (x, y, w, h))
    if box is None:
        return out
    lo_x, lo_y, hi_x, hi_y = box
    planes = np.zeros((3, hi_y - lo_y, hi_x - lo_x), np.float32)
    planes[0] = 1.0
    # Transparent or not, the same weights: the haze's share of a bird goes to the sky's
    # weight, which a transparent plate leaves clear. Thinning the bird's alpha instead
    # let a hazed bird hide only qᵢ·contrastᵢ of a bird behind it, not qᵢ: merged over its
    # sky, such a plate was up to 6 codes off the opaque frame where birds overlap.
    _splat(x0, y0, x1, y1, radius, np.asarray(streaks.alpha, np.float64),
           np.asarray(streaks.contrast, np.float64), np.asarray(streaks.accent, np.bool_),
           float(x + lo_x), float(y + lo_y), planes)
    if linear is not None:
        _linear_birds(planes, sky, transparent, linear[lo_y:hi_y, lo_x:hi_x])
    _finish(planes, lo_x, lo_y, sky.bird[::-1].copy(), sky.accent[::-1].copy(),
            transparent, DECODE, ENCODE, out, _NO_STRAIGHT if straight is None else straight)
    return out
