"""Birds through the camera (SPEC §10): each bird's streak on screen, its ink the
projection of its silhouette (`streaks`).

A bird covers the projection of its silhouette: its body plus its wings times how much of
the wing faces the viewer (the wings' normal is the bird's banked up vector, as flight.py
flies it). Its motion spreads that ink along a streak of its body length plus the distance
flown while the shutter is open, as wide as its wings reach across the streak on screen
(a bird seen with its wings end-on is as wide as its body; never narrower than the
pixel-width floor), and the streak's alpha is what makes alpha × area = the silhouette: a
longer or wider streak never means more ink, so the ink a bird leaves does not depend on
the resolution.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..scene import Scene
from ..sim.jit import inline, serial
from .types import Pose, Streaks

HAZE_BASE = 0.05  # contrast left at the visibility distance (the meteorological 5%)


class Look(NamedTuple):
    """What the scene says about how a bird looks: wingspan, body length (m), wing and
    body silhouette areas (m²), the atmosphere's visibility V (m, inf: no haze), the
    streak's pixel-width floor (px)."""

    wingspan: float
    body_length: float
    wing_area: float
    body_area: float
    visibility: float
    min_width_px: float


def look_of(scene: Scene) -> Look:
    """The scene's bird body ([bird]), visibility ([atmosphere], if any) and width floor."""
    bird = scene.bird
    visibility = math.inf if scene.atmosphere is None else scene.atmosphere.visibility
    return Look(bird.wingspan, bird.body_length, bird.wing_area, bird.body_area,
                float(visibility), scene.render.min_width_px)


def shutter_of(scene: Scene) -> float:
    """How long the shutter is open, s: the shutter angle's share of a frame interval."""
    return scene.render.shutter_angle / 360.0 / float(scene.output.fps)


def streaks(pose: Pose, positions: np.ndarray, velocities: np.ndarray,
            bank: np.ndarray | None, accent: np.ndarray, look: Look,
            shutter_s: float) -> Streaks:
    """The birds the camera sees, as streaks on its full frame, far to near.

    positions (n, 3) m and velocities (n, 3) m/s at the moment the shutter opens; bank
    (n,) radians (None: level); accent (n,) bool; `shutter_s` how long the shutter stays
    open (motion blur's sub-frames each pass their share). A bird whose streak lies
    wholly behind the near plane or outside the frame is left out; a streak crossing the
    near plane is cut at it."""
    n = len(positions)
    out = np.empty((N_OUT, n))
    seen = np.empty(n, np.bool_)
    camera = np.stack([pose.position, pose.right, pose.up, pose.forward]).astype(np.float64)
    _birds(np.ascontiguousarray(positions, np.float64),
           np.ascontiguousarray(velocities, np.float64),
           np.zeros(n) if bank is None else np.ascontiguousarray(bank, np.float64), camera,
           float(pose.focal), float(pose.width), float(pose.height), float(pose.near),
           np.array([look.wingspan, look.body_length, look.wing_area, look.body_area]),
           float(look.min_width_px), float(shutter_s), out, seen)
    ids = np.flatnonzero(seen)
    x0, y0, x1, y1, width, alpha, depth, distance = out[:, ids]
    order = far_to_near(depth)
    contrast = HAZE_BASE ** (distance[order] / look.visibility)
    return Streaks(x0[order], y0[order], x1[order], y1[order], width[order], alpha[order],
                   contrast, depth[order], np.asarray(accent, bool)[ids[order]],
                   ids[order].astype(np.int64))


def far_to_near(depth: np.ndarray) -> np.ndarray:
    """The order of `depth` (m,) from the largest down, equal depths by index: a stable
    sort's. numpy's unstable sort is several times faster; its order is the stable one's
    unless two depths are equal, which it checks."""
    order = np.argsort(-depth)
    ranked = depth[order]
    if (ranked[1:] == ranked[:-1]).any():
        order = np.argsort(-depth, kind="stable")
    return order


N_OUT = 8  # _birds' rows: x0, y0, x1, y1, width, alpha, depth, distance


@serial
def _birds(positions, velocities, bank, camera, focal, width_px, height_px, near, body,
           min_width, shutter, out, seen):
    """Each bird's streak into column i of `out` (N_OUT rows) and whether the frame
    shows it into seen[i]. camera: (4, 3) the pinhole's position, right, up and forward;
    body: wingspan, body length, wing and body areas.

    The bird's axes are those flight.py flies: forward f, r = f × z made unit, u = r × f
    (a bird at rest faces +x; one flying straight up has r = +x, where flight.py takes
    −y: a bird with no heading has no side of its own); banked by β its wings' normal is
    cos β·u + sin β·r and its wingtip axis cos β·r − sin β·u. A small patch of area A (as
    seen along its ray) at depth z and distance d covers f²·A·d/z³ px² of the image plane
    (its solid angle A/d², at f²/cos³θ px² a steradian θ off the axis, cos θ = z/d). The
    streak is as wide as the wings reach across it on screen, the body's width, or what
    holds the whole silhouette at full opacity (L·w + πw²/4 = ink), whichever is widest,
    and never under min_width; alpha makes alpha × area the silhouette."""
    wingspan, body_length, wing_area, body_area = body[0], body[1], body[2], body[3]
    cx, cy = 0.5 * width_px, 0.5 * height_px
    for i in range(positions.shape[0]):
        px, py, pz = positions[i, 0], positions[i, 1], positions[i, 2]
        vx, vy, vz = velocities[i, 0], velocities[i, 1], velocities[i, 2]
        speed = math.sqrt(vx * vx + vy * vy + vz * vz)
        fx, fy, fz = (vx / speed, vy / speed, vz / speed) if speed > 0.0 else (1.0, 0.0, 0.0)
        side = math.sqrt(fy * fy + fx * fx)
        rx, ry = (fy / side, -fx / side) if side > 1e-9 else (1.0, 0.0)
        ux, uy, uz = ry * fz, -rx * fz, rx * fy - ry * fx
        c, s = math.cos(bank[i]), math.sin(bank[i])
        nx, ny, nz = c * ux + s * rx, c * uy + s * ry, c * uz
        sx, sy, sz = c * rx - s * ux, c * ry - s * uy, -s * uz
        ex, ey, ez = px - camera[0, 0], py - camera[0, 1], pz - camera[0, 2]
        distance = math.sqrt(ex * ex + ey * ey + ez * ez)
        reach = max(distance, 1e-12)
        facing = abs(nx * (ex / reach) + ny * (ey / reach) + nz * (ez / reach))
        silhouette = body_area + wing_area * facing
        h = 0.5 * body_length
        tail = _view(camera, px - h * fx, py - h * fy, pz - h * fz)
        head = _view(camera, px + h * fx + vx * shutter, py + h * fy + vy * shutter,
                     pz + h * fz + vz * shutter)
        centre = ex * camera[3, 0] + ey * camera[3, 1] + ez * camera[3, 2]
        front = max(tail[2], head[2]) > near
        tail, head = _clip_near(tail, head, near)
        depth = max(centre, near)
        x0, y0 = _project(tail, focal, cx, cy, near)
        x1, y1 = _project(head, focal, cx, cy, near)
        ink = focal * focal * silhouette * max(distance, depth) / depth ** 3.0
        dx, dy = x1 - x0, y1 - y0
        length = math.hypot(dx, dy)
        full = (math.sqrt(length * length + math.pi * ink) - length) / (0.5 * math.pi)
        a = 0.5 * wingspan
        tu0, tv0 = _project(_view(camera, px - a * sx, py - a * sy, pz - a * sz), focal,
                            cx, cy, near)
        tu1, tv1 = _project(_view(camera, px + a * sx, py + a * sy, pz + a * sz), focal,
                            cx, cy, near)
        wu, wv = tu1 - tu0, tv1 - tv0
        across = abs(wu * dy - wv * dx) / length if length > 0.0 else math.hypot(wu, wv)
        width = max(max(across, focal * body_area / body_length / depth),
                    max(full, min_width))
        area = length * width + 0.25 * math.pi * width * width
        meets, x0, y0, x1, y1 = _clip_to_frame(x0, y0, x1, y1, width_px, height_px)
        r = 0.5 * width
        seen[i] = front and meets and max(x0, x1) + r >= 0.0 and \
            min(x0, x1) - r <= width_px and max(y0, y1) + r >= 0.0 and \
            min(y0, y1) - r <= height_px
        out[0, i], out[1, i], out[2, i], out[3, i] = x0, y0, x1, y1
        out[4, i], out[5, i] = width, min(ink / area, 1.0)  # ≤ 1 by construction
        out[6, i], out[7, i] = depth, distance


@inline
def _view(camera, x, y, z):
    """A world point as (right, up, forward) coordinates from the pinhole, m."""
    ex, ey, ez = x - camera[0, 0], y - camera[0, 1], z - camera[0, 2]
    return (ex * camera[1, 0] + ey * camera[1, 1] + ez * camera[1, 2],
            ex * camera[2, 0] + ey * camera[2, 1] + ez * camera[2, 2],
            ex * camera[3, 0] + ey * camera[3, 1] + ez * camera[3, 2])


@inline
def _clip_near(tail, head, near):
    """Both ends (camera coordinates) moved onto the near plane where they lie behind it,
    along their own segment: never projected through the pinhole (which would flip
    them). A segment wholly behind the plane comes back unchanged (it is culled)."""
    tz, hz = tail[2], head[2]
    if tz < near < hz or hz < near < tz:
        t = (near - tz) / (hz - tz)  # where the segment meets the plane, 0 at the tail
        meet = (tail[0] + t * (head[0] - tail[0]), tail[1] + t * (head[1] - tail[1]),
                tz + t * (hz - tz))
        return (meet, head) if tz < near else (tail, meet)
    return tail, head


@inline
def _project(point, focal, cx, cy, near):
    """(u, v) px of a camera-coordinate point in front of the pinhole (as `Pose`)."""
    z = max(point[2], near)
    return cx + focal * point[0] / z, cy - focal * point[1] / z


@inline
def _clip_to_frame(x0, y0, x1, y1, width_px, height_px):
    """The segment cut to the frame grown by a frame's size on every side (Liang–Barsky):
    only a bird just past the near plane reaches that far, and there cairo's fixed-point
    coordinates would wrap. Inside, the ends are unchanged. Returns whether the segment
    meets that grown frame at all, then its new ends."""
    enter, leave = 0.0, 1.0
    meets = True
    for start, d, lo, hi in ((x0, x1 - x0, -width_px, 2.0 * width_px),
                             (y0, y1 - y0, -height_px, 2.0 * height_px)):
        q0, q1 = start - lo, hi - start
        if d == 0.0:
            meets = meets and q0 >= 0.0 and q1 >= 0.0
            continue
        a, b = -q0 / d, q1 / d  # where the line meets lo and hi
        enter, leave = max(enter, min(a, b)), min(leave, max(a, b))
    dx, dy = x1 - x0, y1 - y0
    return (meets and enter <= leave, x0 + enter * dx, y0 + enter * dy, x0 + leave * dx,
            y0 + leave * dy)
