"""Plain-numpy reference of render.draw3d.streaks (docs/optics.md): each bird's two streaks
and their ink computed over all birds at once, array by array, where the kernel walks bird
by bird. Nothing is imported from `render` but the two value types it returns and takes.

A bird covers the projection of its silhouette: its body plus each wing times how much of
it faces the viewer (its normal the banked up vector turned about the bird's forward axis
by the wing beat's angle). The body's ink is spread along a streak of its body length
plus the distance flown while the shutter is open, as wide as the body on screen; the
wings' over the bar from wingtip to wingtip (the tips' reach across the body, their
height over it left out; halfway through the shutter, cut at the near plane) swept along
that flight: a streak along the longer of the bar and the sweep on screen, as wide as the
other reaches across it (a bird cut by the near plane: along its body's streak, as wide
as the wings reach across that). Each is widened until its ink fits at full opacity and
never drawn under the pixel-width floor; alpha makes alpha × area its ink.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.spatial.transform import Rotation

from render.draw3d.types import Pose, Streaks

HAZE_BASE = 0.05


def streaks(pose: Pose, positions: np.ndarray, velocities: np.ndarray,
            bank: np.ndarray | None, accent: np.ndarray, look,
            shutter_s: float, wings: np.ndarray | None = None) -> Streaks:
    """Same contract as render.draw3d.streaks.streaks: the birds the camera sees, far to
    near (equal depths by bird), each bird's body then its wings, the body's streak cut at
    the near plane, both cut to the frame."""
    forward, normal, span_axis = bird_axes(velocities, bank)
    rel = positions - pose.position
    distance = np.sqrt(np.einsum("ij,ij->i", rel, rel))
    ray = rel / np.maximum(distance, 1e-12)[:, None]
    raised = np.zeros(len(positions)) if wings is None else np.asarray(wings, np.float64)
    # Each wing turned about the forward axis: the right one up by −θ about it, the left
    # one by +θ (a right-handed turn about forward takes the right wingtip down).
    right_wing = Rotation.from_rotvec(-raised[:, None] * forward)
    left_wing = Rotation.from_rotvec(raised[:, None] * forward)
    facing = 0.5 * (np.abs(np.einsum("ij,ij->i", right_wing.apply(normal), ray))
                    + np.abs(np.einsum("ij,ij->i", left_wing.apply(normal), ray)))
    tip = right_wing.apply(0.5 * look.wingspan * span_axis)
    tip_reach = tip - np.einsum("ij,ij->i", tip, normal)[:, None] * normal
    half = 0.5 * look.body_length * forward
    flown = velocities * shutter_s
    tail = camera_coords(pose, positions - half)
    head = camera_coords(pose, positions + half + flown)
    centre = rel @ pose.forward
    front = np.maximum(tail[:, 2], head[:, 2]) > pose.near
    cut = np.minimum(tail[:, 2], head[:, 2]) <= pose.near
    tail, head = clip_near(tail, head, pose.near)
    depth = np.maximum(centre, pose.near)
    f = pose.focal
    # A small patch of area A (as seen along its ray) at depth z and distance d covers
    # f²·A·d/z³ px² of the image plane: its solid angle A/d², at f²/cos³θ px² a
    # steradian θ off the axis (cos θ = z/d).
    px2_per_m2 = f * f * np.maximum(distance, depth) / depth ** 3
    body = np.column_stack([*project(pose, tail), *project(pose, head)])
    body_width = f * look.body_area / look.body_length / depth

    # The wingtips halfway through the shutter, the bar cut at the near plane.
    tips = [camera_coords(pose, positions + 0.5 * flown + sign * tip_reach)
            for sign in (-1.0, 1.0)]
    wings_front = front & (np.maximum(tips[0][:, 2], tips[1][:, 2]) > pose.near)
    tips = [np.column_stack(project(pose, t)) for t in clip_near(*tips, pose.near)]
    bar = tips[1] - tips[0]
    start = np.column_stack(project(pose, camera_coords(pose, positions)))
    end = np.column_stack(project(pose, camera_coords(pose, positions + flown)))
    sweep = end - start
    bar_len, sweep_len = np.hypot(*bar.T), np.hypot(*sweep.T)
    along_bar = bar_len >= sweep_len
    wings = np.where(along_bar[:, None], np.column_stack([tips[0], tips[1]]),
                     np.column_stack([start, end]))
    wings_width = np.where(along_bar, reach_across(sweep, bar), reach_across(bar, sweep))
    body_dir = body[:, 2:] - body[:, :2]
    wings = np.where(cut[:, None], body, wings)
    wings_width = np.where(cut, reach_across(bar, body_dir), wings_width)
    wings_front = np.where(cut, front, wings_front)

    parts = [drawn(pose, body, body_width, look.body_area * px2_per_m2, look, front),
             drawn(pose, wings, wings_width, look.wing_area * facing * px2_per_m2, look,
                   wings_front)]
    seen = np.column_stack([p[-1] for p in parts])
    birds = np.flatnonzero(seen.any(axis=1))
    birds = birds[np.argsort(-depth[birds], kind="stable")]  # far to near; ties by bird
    shown = seen[birds]  # (birds, 2): row-major order is body, then wings
    which = np.column_stack([birds, birds])[shown]
    fields = [np.column_stack([body_k, wings_k])[birds][shown]
              for body_k, wings_k in zip(parts[0][:6], parts[1][:6])]
    contrast = HAZE_BASE ** (distance[which] / look.visibility)
    return Streaks(*fields, contrast, depth[which], np.asarray(accent, bool)[which],
                   which.astype(np.int64))


def reach_across(other: np.ndarray, along: np.ndarray) -> np.ndarray:
    """How far the on-screen vectors `other` (n, 2) px reach across the direction of
    `along` (n, 2): their part perpendicular to it (all of it where `along` is none)."""
    length = np.hypot(*along.T)
    moving = length > 0.0
    cross = np.abs(other[:, 0] * along[:, 1] - other[:, 1] * along[:, 0])
    return np.where(moving, cross / np.where(moving, length, 1.0), np.hypot(*other.T))


def drawn(pose: Pose, ends: np.ndarray, across: np.ndarray, ink_px2: np.ndarray, look,
          front: np.ndarray):
    """Streaks from (x0, y0) to (x1, y1) (`ends` (n, 4) px), at least `across` wide:
    (x0, y0, x1, y1 cut to the frame, width, alpha, whether the frame shows each). The
    width holds the ink at full opacity at least (L·w + πw²/4 = ink), the floor at
    least; alpha makes alpha × area the ink."""
    x0, y0, x1, y1 = ends.T
    length = np.hypot(x1 - x0, y1 - y0)
    full = (np.sqrt(length * length + math.pi * ink_px2) - length) / (0.5 * math.pi)
    width = np.maximum.reduce([across, full, np.full(len(x0), look.min_width_px)])
    area = length * width + 0.25 * math.pi * width * width
    alpha = np.minimum(ink_px2 / area, 1.0)  # ≤ 1 by construction; rounding aside
    x0, y0, x1, y1, meets = clip_to_frame(pose, x0, y0, x1, y1)
    seen = front & meets & in_frame(pose, x0, y0, x1, y1, 0.5 * width)
    return x0, y0, x1, y1, width, alpha, seen


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
            pose.cy - pose.focal * points[:, 1] / z)


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
