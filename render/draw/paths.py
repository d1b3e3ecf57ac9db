"""Many polygons appended to a cairo path at once, from one numpy array.

pycairo builds a path one `move_to`/`line_to` call at a time (~0.2 µs each): the outlines
of 3,600 streaks, eight or more vertices each, would cost more in Python calls than cairo spends
drawing them. cairo's C API takes a whole path in one call (`cairo_append_path`, over an
array of 16-byte `cairo_path_data_t` records), and numpy builds that array in bulk. Where
that call cannot be reached, the same records are appended point by point instead: the
path, and so the picture, is the same either way.
"""

from __future__ import annotations

import ctypes

import cairo
import numpy as np

# cairo_path_data_type_t, and each record's length in 16-byte units (header + one point).
_MOVE_TO, _LINE_TO, _POINT_RECORD = 0, 1, 2


class _CairoPath(ctypes.Structure):
    """cairo_path_t."""

    _fields_ = [("status", ctypes.c_int), ("data", ctypes.c_void_p),
                ("num_data", ctypes.c_int)]


def _context_pointer(ctx: cairo.Context) -> int:
    """The cairo_t* inside a pycairo Context: pycairo's C API (pycairo.h) declares
    PycairoContext as {PyObject_HEAD; cairo_t *ctx; ...}."""
    return ctypes.c_void_p.from_address(id(ctx) + object.__basicsize__).value


def _find_append_path():
    """cairo_append_path from the libcairo that pycairo itself is linked with (looked up
    through pycairo's extension module, so it is the same library), or None if it is not
    reachable or the Context layout is not what `_context_pointer` expects."""
    try:
        lib = ctypes.CDLL(cairo._cairo.__file__)
        append, get_tolerance = lib.cairo_append_path, lib.cairo_get_tolerance
    except (OSError, AttributeError):
        return None
    append.argtypes = [ctypes.c_void_p, ctypes.POINTER(_CairoPath)]
    append.restype = None
    get_tolerance.argtypes = [ctypes.c_void_p]
    get_tolerance.restype = ctypes.c_double
    # PycairoContext is a PyObject followed by two pointers (the cairo_t*, its base):
    # anything else and reading the pointer would not be safe.
    pointer = ctypes.sizeof(ctypes.c_void_p)
    if cairo.Context.__basicsize__ != object.__basicsize__ + 2 * pointer:
        return None
    probe = cairo.Context(cairo.ImageSurface(cairo.FORMAT_A8, 1, 1))
    probe.set_tolerance(0.3125)
    if get_tolerance(_context_pointer(probe)) != 0.3125:
        return None
    return append


_append_path = _find_append_path()


def polygon_records(count: int, vertices: int) -> tuple[np.ndarray, np.ndarray]:
    """Path records for `count` polygons of `vertices` points each.

    Returns (records, points): records (count, 2·vertices, 2) float64, the cairo path data
    with every header filled in (a move_to, then line_tos: a fill or clip closes each
    polygon); points, the (count, vertices, 2) view of it where the caller writes the
    vertices.
    Any contiguous slice records[i:j] is itself a valid path of polygons i..j−1.
    """
    records = np.zeros((count, vertices, 2, 2))
    headers = records.view(np.int32).reshape(count, vertices, 2, 4)[:, :, 0]
    headers[:, 0, 0] = _MOVE_TO
    headers[:, 1:, 0] = _LINE_TO
    headers[:, :, 1] = _POINT_RECORD
    return records.reshape(count, 2 * vertices, 2), records[:, :, 1, :]


def append_polygons(ctx: cairo.Context, records: np.ndarray) -> None:
    """Append polygons built by `polygon_records` (any contiguous slice) to ctx's path."""
    records = np.ascontiguousarray(records)
    if len(records) == 0:
        return
    if _append_path is None:
        append_polygons_slowly(ctx, records)
        return
    path = _CairoPath(0, records.ctypes.data, records.size // 2)
    _append_path(_context_pointer(ctx), ctypes.byref(path))
    ctx.has_current_point()  # raises cairo.Error here if cairo rejected the records


def append_polygons_slowly(ctx: cairo.Context, records: np.ndarray) -> None:
    """The same path as `append_polygons`, one pycairo call per vertex."""
    count = len(records)
    points = records.reshape(count, -1, 2, 2)[:, :, 1, :]
    for polygon in points.tolist():
        ctx.move_to(*polygon[0])
        for x, y in polygon[1:]:
            ctx.line_to(x, y)
