"""Plain-numpy reference of render.draw3d.streaks (SPEC §10): each bird's streak and ink
computed over all birds at once, array by array, where the kernel walks bird by bird.
Nothing is imported from `render` but the two value types it returns and takes.

A bird covers the projection of its silhouette, its body plus its wings times how much of
the wing faces the viewer (the wings' normal is the banked up vector), spread along a
streak of its body length plus the distance flown while the shutter is open, as wide as
its wings reach across the streak on screen (never narrower than the body or the
pixel-width floor, and widened until the whole silhouette fits at full opacity); alpha
makes alpha × area the silhouette.
"""

from __future__ import annotations

import math

import numpy as np

from render.draw3d.types import Pose, Streaks

HAZE_BASE = 0.05


def streaks(pose: Pose, positions: np.ndarray, velocities: np.ndarray,
            bank: np.ndarray | None, accent: np.ndarray, look,
            shutter_s: float) -> Streaks:
    """Same contract as render.draw3d.streaks.streaks: the birds the camera sees, far to
    near (equal depths by bird), streaks cut at the near plane and to the frame."""
    forward, normal, span = bird_axes(velocities, bank)
    rel = positions - pose.position
    distance = np.sqrt(np.einsum("ij,ij->i", rel, rel))
    ray = rel / np.maximum(distance, 1e-12)[:, None]
    facing = np.abs(np.einsum("ij,ij->i", normal, ray))
    silhouette_m2 = look.body_area + look.wing_area * facing
    half = 0.5 * look.body_length * forward
    tail = camera_coords(pose, positions - half)
    head = camera_coords(pose, positions + half + velocities * shutter_s)
    centre = rel @ pose.forward
    front = np.maximum(tail[:, 2], head[:, 2]) > pose.near
    tail, head = clip_near(tail, head, pose.near)
    depth = np.maximum(centre, pose.near)
    x0, y0 = project(pose, tail)
    x1, y1 = project(pose, head)
    f = pose.focal
    # A small patch of area A (as seen along its ray) at depth z and distance d covers
    # f²·A·d/z³ px² of the image plane: its solid angle A/d², at f²/cos³θ px² a
    # steradian θ off the axis (cos θ = z/d).
    ink_px2 = f * f * silhouette_m2 * np.maximum(distance, depth) / depth ** 3
    length = np.hypot(x1 - x0, y1 - y0)
    # Wings seen along the streak reach little across it: the streak is then widened
    # until it holds the whole silhouette at full opacity (L·w + πw²/4 = ink).
    full = (np.sqrt(length * length + math.pi * ink_px2) - length) / (0.5 * math.pi)
    width = np.maximum.reduce([
        across(pose, positions, 0.5 * look.wingspan * span, x1 - x0, y1 - y0),
        f * look.body_area / look.body_length / depth, full,
        np.full(len(depth), look.min_width_px)])
    area = length * width + 0.25 * math.pi * width * width
    alpha = np.minimum(ink_px2 / area, 1.0)  # ≤ 1 by construction; rounding aside
    x0, y0, x1, y1, meets = clip_to_frame(pose, x0, y0, x1, y1)
    seen = front & meets & in_frame(pose, x0, y0, x1, y1, 0.5 * width)
    ids = np.flatnonzero(seen)
    order = ids[np.argsort(-depth[ids], kind="stable")]  # far to near; ties by bird
    contrast = HAZE_BASE ** (distance[order] / look.visibility)
    return Streaks(x0[order], y0[order], x1[order], y1[order], width[order], alpha[order],
                   contrast, depth[order], np.asarray(accent, bool)[order],
                   order.astype(np.int64))


def bird_axes(velocities: np.ndarray, bank: np.ndarray | None):
    """Each bird's forward unit vector, its wings' normal (the banked up vector
    cos β·u + sin β·r, r = f × z horizontal, u = r × f, as flight.py) and the axis from
    wingtip to wingtip (cos β·r − sin β·u): (n, 3) unit vectors each. A bird at rest
    faces +x; one flying straight up has r = +x."""
    speed = np.sqrt(np.einsum("ij,ij->i", velocities, velocities))
    moving = speed > 0.0
    forward = np.where(moving[:, None], velocities / np.where(moving, speed, 1.0)[:, None],
                       np.array([1.0, 0.0, 0.0]))
    right = np.cross(forward, np.array([0.0, 0.0, 1.0]))
    side = np.sqrt(np.einsum("ij,ij->i", right, right))
    level = side > 1e-9
    right = np.where(level[:, None], right / np.where(level, side, 1.0)[:, None],
                     np.array([1.0, 0.0, 0.0]))
    up = np.cross(right, forward)
    if bank is None:
        return forward, up, right
    c, s = np.cos(bank)[:, None], np.sin(bank)[:, None]
    return forward, c * up + s * right, c * right - s * up


def across(pose: Pose, positions: np.ndarray, half_span: np.ndarray, dx, dy) -> np.ndarray:
    """How far each bird's wings reach across its streak on screen, px: the wingtips
    positions ± half_span ((n, 3) m) projected, their separation's part perpendicular
    to the streak's direction (dx, dy) px (all of it for a streak of no length)."""
    tip_u0, tip_v0 = project(pose, camera_coords(pose, positions - half_span))
    tip_u1, tip_v1 = project(pose, camera_coords(pose, positions + half_span))
    wu, wv = tip_u1 - tip_u0, tip_v1 - tip_v0
    length = np.hypot(dx, dy)
    moving = length > 0.0
    safe = np.where(moving, length, 1.0)
    return np.where(moving, np.abs(wu * dy - wv * dx) / safe, np.hypot(wu, wv))


def camera_coords(pose: Pose, points: np.ndarray) -> np.ndarray:
    """(n, 3) world points as (right, up, forward) coordinates from the pinhole, m."""
    rel = points - pose.position
    return rel @ np.column_stack([pose.right, pose.up, pose.forward])


def clip_near(tail: np.ndarray, head: np.ndarray, near: float):
    """Both ends (camera coordinates, (n, 3)) moved onto the near plane where they lie
    behind it, along their own segment: never projected through the pinhole (which would
    flip them). Rows wholly behind the plane come back unchanged (they are culled)."""
    tz, hz = tail[:, 2:], head[:, 2:]
    span = hz - tz
    safe = np.where(span == 0.0, 1.0, span)
    t = (near - tz) / safe  # where the segment meets the plane, 0 at the tail
    cut_tail = (tz < near) & (hz > near)
    cut_head = (hz < near) & (tz > near)
    meet = tail + t * (head - tail)
    return np.where(cut_tail, meet, tail), np.where(cut_head, meet, head)


def project(pose: Pose, points: np.ndarray):
    """(u, v) px of camera-coordinate points in front of the pinhole (as `Pose`)."""
    z = np.maximum(points[:, 2], pose.near)
    return (0.5 * pose.width + pose.focal * points[:, 0] / z,
            0.5 * pose.height - pose.focal * points[:, 1] / z)


def clip_to_frame(pose: Pose, x0, y0, x1, y1):
    """Segments cut to the frame grown by a frame's size on every side (Liang–Barsky):
    only a bird just past the near plane reaches that far, and there cairo's fixed-point
    coordinates would wrap. Inside, the ends are unchanged. Returns the new ends and
    whether each segment meets that grown frame at all."""
    lo = np.array([-pose.width, -pose.height], np.float64)
    hi = np.array([2.0 * pose.width, 2.0 * pose.height], np.float64)
    start, d = np.column_stack([x0, y0]), np.column_stack([x1 - x0, y1 - y0])
    enter, leave = np.zeros(len(x0)), np.ones(len(x0))
    meets = np.ones(len(x0), bool)
    for axis in (0, 1):
        p, q0, q1 = d[:, axis], start[:, axis] - lo[axis], hi[axis] - start[:, axis]
        flat = p == 0.0
        meets &= ~flat | ((q0 >= 0.0) & (q1 >= 0.0))
        safe = np.where(flat, 1.0, p)
        a, b = -q0 / safe, q1 / safe  # parameters where the line meets lo and hi
        enter = np.where(flat, enter, np.maximum(enter, np.minimum(a, b)))
        leave = np.where(flat, leave, np.minimum(leave, np.maximum(a, b)))
    meets &= enter <= leave
    a_pt, b_pt = start + enter[:, None] * d, start + leave[:, None] * d
    return a_pt[:, 0], a_pt[:, 1], b_pt[:, 0], b_pt[:, 1], meets


def in_frame(pose: Pose, x0, y0, x1, y1, reach) -> np.ndarray:
    """Whether each streak (its ends grown by `reach` px) reaches the frame."""
    return ((np.maximum(x0, x1) + reach >= 0.0) & (np.minimum(x0, x1) - reach <= pose.width)
            & (np.maximum(y0, y1) + reach >= 0.0)
            & (np.minimum(y0, y1) - reach <= pose.height))
