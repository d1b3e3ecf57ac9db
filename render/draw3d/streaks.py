"""Birds through the camera (docs/optics.md): each bird as two streaks on screen, its body and
its wings, their ink the projection of its silhouette (`streaks`).

A bird covers the projection of its silhouette: its body plus its wings times how much of
each wing faces the viewer (the wings' normal is the bird's banked up vector, as flight.py
flies it, raised and lowered by the wing beat if it beats them). Its motion spreads that
ink over what it sweeps while the shutter is open: the body along a streak of its body
length plus the distance flown, the wings as a bar from wingtip to wingtip swept along
the same motion. Drawn apart, a bird resolved on screen
reads as a body and a pair of wings, not as a disc as wide as its wings; below the
pixel-width floor both shrink to the floor and overlap. Each streak's alpha is what makes
alpha × area its part of the silhouette: a longer or wider streak never means more ink,
so the ink a bird leaves does not depend on the resolution.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..ranking import stable_order
from ..scene import Scene
from ..sim.jit import inline, serial
from ..sim.simulate import own_beats
from .sky import LN_005
from .types import Pose, Streaks



class Look(NamedTuple):
    """What the scene says about how a bird looks: wingspan, body length (m), wing and
    body silhouette areas (m²), the atmosphere's visibility V (m, inf: no haze), the
    streak's pixel-width floor (px), wing beats a second (Hz, 0: wings held level) and
    the stroke's sweep from its top to its bottom (radians)."""

    wingspan: float
    body_length: float
    wing_area: float
    body_area: float
    visibility: float
    min_width_px: float
    wingbeat: float = 0.0
    stroke: float = 0.0


def look_of(scene: Scene) -> Look:
    """The scene's bird body ([bird]), visibility ([atmosphere], if any) and width floor."""
    bird = scene.bird
    visibility = math.inf if scene.atmosphere is None else scene.atmosphere.visibility
    return Look(bird.wingspan, bird.body_length, bird.wing_area, bird.body_area,
                float(visibility), scene.render.min_width_px, bird.wingbeat,
                math.radians(bird.stroke))


# A peregrine's proportions per metre of wingspan: its body's length (m), its wings' and
# its body's silhouettes (m² per m² of wingspan squared), so the hawk draws as a hawk,
# not as a starling scaled up.
HAWK_BODY_LENGTH, HAWK_WING_AREA, HAWK_BODY_AREA = 0.42, 0.12, 0.04


def hawk_look(scene: Scene) -> Look | None:
    """The hunting hawk as the camera sees it (`[hawk] wingspan`, in a peregrine's
    proportions), None when there is none to draw."""
    hawk = scene.hawk
    if hawk is None or hawk.mode != "hunt" or hawk.wingspan == 0.0:
        return None
    span = hawk.wingspan
    return look_of(scene)._replace(wingspan=span, body_length=HAWK_BODY_LENGTH * span,
                                   wing_area=HAWK_WING_AREA * span * span,
                                   body_area=HAWK_BODY_AREA * span * span, wingbeat=0.0)


def joined(birds: Streaks, more: Streaks) -> Streaks:
    """`birds` with the streaks of `more` (far to near too) each put in depth order among
    them, after the birds as far away as it is."""
    if len(more.depth) == 0:  # the hawk off the frame: no copy of every field
        return birds
    at = np.searchsorted(-birds.depth, -more.depth, side="right")
    return Streaks(*(np.insert(a, at, b) for a, b in zip(birds, more)))


def shutter_of(scene: Scene) -> float:
    """How long the shutter is open, s: the shutter angle's share of a frame interval."""
    return scene.render.shutter_angle / 360.0 / float(scene.output.fps)


def wing_phases(look: Look, time_s: float, landed: np.ndarray | None,
                count: int, beats: np.ndarray | None = None) -> np.ndarray | None:
    """Where each of `count` birds is in its wing beat at `time_s` (cycles, in [0, 1));
    NaN for a landed bird (its wings folded level); None when the look's birds do not beat
    their wings (`wingbeat` or `stroke` 0). `beats`: each row's place in the beat at time
    0 (cycles; default each bird's own, `sim.simulate.own_beats`; a loop's morph
    carries a row's toward its partner's)."""
    if look.wingbeat == 0.0 or look.stroke == 0.0:
        return None
    start = own_beats(count) if beats is None else beats
    phases = np.modf(start + look.wingbeat * time_s)[0]
    phases += phases < 0.0  # the fraction of a negative place, from 0 up
    if landed is not None:
        phases[landed] = np.nan
    return phases


def loop_wingbeat(wingbeat: float, seconds: float) -> float:
    """The wing beat a loop of `seconds` flies: `wingbeat` (Hz) rounded to a whole number
    of beats in the loop, at least one, so each bird's wings are where they were when the
    clip comes round."""
    return max(1, round(wingbeat * seconds)) / seconds if wingbeat > 0.0 else 0.0


def dihedral(look: Look, phases: np.ndarray | None, after_s: float) -> np.ndarray | None:
    """Each wing's angle above the level (radians, negative below) `after_s` seconds past
    `phases` (see `wing_phases`): half the stroke times the sine of the beat, 0 where the
    phase is NaN; None for level wings."""
    if phases is None:
        return None
    beat = np.sin(2.0 * math.pi * (phases + look.wingbeat * after_s))
    return np.nan_to_num(0.5 * look.stroke * beat, nan=0.0)


def streaks(pose: Pose, positions: np.ndarray, velocities: np.ndarray,
            bank: np.ndarray | None, accent: np.ndarray, look: Look,
            shutter_s: float, wings: np.ndarray | None = None) -> Streaks:
    """The birds the camera sees, as streaks on its full frame, far to near: each bird's
    body, then its wings (see `_birds`), `ids` naming the bird of each.

    positions (n, 3) m and velocities (n, 3) m/s at the moment the shutter opens; bank
    (n,) radians (None: level); wings (n,) each wing's angle above the level halfway
    through the shutter, radians (None: level, see `dihedral`); accent (n,) bool;
    `shutter_s` how long the shutter stays open (motion blur's sub-frames each pass
    their share). A streak wholly behind the near
    plane or outside the frame is left out; a body's streak crossing the near plane is cut
    at it."""
    n = len(positions)
    out = np.empty((2 * n, N_OUT))  # a streak's values side by side: gathered at once
    seen = np.empty(2 * n, np.bool_)
    camera = np.stack([pose.position, pose.right, pose.up, pose.forward]).astype(np.float64)
    _birds(np.ascontiguousarray(positions, np.float64),
           np.ascontiguousarray(velocities, np.float64),
           np.zeros(n) if bank is None else np.ascontiguousarray(bank, np.float64),
           np.zeros(n) if wings is None else np.ascontiguousarray(wings, np.float64), camera,
           float(pose.focal), float(pose.width), float(pose.height), pose.cy,
           float(pose.near),
           np.array([look.wingspan, look.body_length, look.wing_area, look.body_area]),
           float(look.min_width_px), float(shutter_s), out, seen)
    # Birds far to near (a bird's two streaks share its depth), then each bird's streaks
    # the frame shows, body first.
    birds = np.flatnonzero(seen[0::2] | seen[1::2])
    birds = birds[far_to_near(out[2 * birds, 6])]
    return Streaks(*_gathered(out, seen, birds, float(look.visibility),
                              np.ascontiguousarray(accent, np.bool_)))


def far_to_near(depth: np.ndarray) -> np.ndarray:
    """The order of `depth` (m,) from the largest down, equal depths by index."""
    return stable_order(-depth)


N_OUT = 8  # _birds' columns: x0, y0, x1, y1, width, alpha, depth, distance


@serial
def _gathered(out, seen, birds, visibility, accent):
    """The `Streaks` fields, in order, of the streaks `seen` shows of `birds` (in the
    order given, each bird's body then its wings) from `_birds`' rows `out`, each
    hazed to contrast 0.05^(d/V) (V = `visibility`, inf: none; a bird's streaks share
    its distance d)."""
    m = 0
    for b in birds:
        m += seen[2 * b] + seen[2 * b + 1]
    x0, y0, x1, y1 = np.empty(m), np.empty(m), np.empty(m), np.empty(m)
    width, alpha, contrast, depth = np.empty(m), np.empty(m), np.empty(m), np.empty(m)
    shown, ids = np.empty(m, np.bool_), np.empty(m, np.int64)
    j = 0
    for b in birds:
        hazed = math.exp(LN_005 * out[2 * b, 7] / visibility)
        for col in range(2 * b, 2 * b + 2):
            if not seen[col]:
                continue
            x0[j], y0[j], x1[j], y1[j] = out[col, 0], out[col, 1], out[col, 2], out[col, 3]
            width[j], alpha[j], depth[j] = out[col, 4], out[col, 5], out[col, 6]
            contrast[j], shown[j], ids[j] = hazed, accent[b], b
            j += 1
    return x0, y0, x1, y1, width, alpha, contrast, depth, shown, ids


@serial
def _birds(positions, velocities, bank, wings, camera, focal, width_px, height_px, cy, near,
           body, min_width, shutter, out, seen):
    """Each bird's two streaks into rows 2i (its body) and 2i + 1 (its wings) of `out`
    (N_OUT columns), and whether the frame shows each into seen[2i], seen[2i + 1].
    camera: (4, 3) the pinhole's position, right, up and forward; body: wingspan, body
    length, wing and body areas.

    The bird's axes are those flight.py flies: forward f, r = f × z made unit, u = r × f
    (a bird at rest faces +x; one flying straight up has r = +x, where flight.py takes
    −y: a bird with no heading has no side of its own); banked by β its wings' normal is
    n = cos β·u + sin β·r and its wingtip axis s = cos β·r − sin β·u. Each wing raised by
    θ (`wings`) turns its normal to cos θ·n ∓ sin θ·s and its tip to a·(cos θ·s + sin θ·n)
    either side (a the half span). A small patch of area A (as seen along its ray) at
    depth z and distance d covers f²·A·d/z³ px² of the image plane (its solid angle A/d²,
    at f²/cos³ψ px² a steradian ψ off the axis, cos ψ = z/d).

    The body runs from its tail when the shutter opens to its head when it closes, as
    wide as the body on screen. The wings are a bar across the tips' reach, a·cos θ
    either side of the shoulders (one bar stands for both arms of the V; the raised tips'
    height is left out, so the bar never leaves the body), halfway through the shutter,
    cut at the near plane, swept from where the body's centre is when the shutter opens
    to where it is when it closes: a streak along the longer of the two on screen, as
    wide as the other reaches across it.
    Each is widened until its ink fits at full opacity (L·w + πw²/4 = ink), never under
    min_width, and alpha makes alpha × area its silhouette: the body's area, and the
    wings' times how much of them faces the viewer. A bird cut by the near plane keeps its
    wings' ink along its body's streak, as wide as they reach across it."""
    wingspan, body_length, wing_area, body_area = body[0], body[1], body[2], body[3]
    cx = 0.5 * width_px
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
        lx, ly, lz = ex / reach, ey / reach, ez / reach  # the line of sight
        # Each wing's normal raised by θ, seen along the line of sight; the two averaged.
        cw, sw = math.cos(wings[i]), math.sin(wings[i])
        n_seen = nx * lx + ny * ly + nz * lz
        s_seen = sx * lx + sy * ly + sz * lz
        facing = 0.5 * (abs(cw * n_seen - sw * s_seen) + abs(cw * n_seen + sw * s_seen))
        h = 0.5 * body_length
        mx, my, mz = vx * shutter, vy * shutter, vz * shutter  # flown while it is open
        tail = _view(camera, px - h * fx, py - h * fy, pz - h * fz)
        head = _view(camera, px + h * fx + mx, py + h * fy + my, pz + h * fz + mz)
        centre = ex * camera[3, 0] + ey * camera[3, 1] + ez * camera[3, 2]
        front = max(tail[2], head[2]) > near
        cut = min(tail[2], head[2]) <= near
        tail, head = _clip_near(tail, head, near)
        depth = max(centre, near)
        scale = focal * focal * max(distance, depth) / (depth * depth * depth)  # px² per m²
        x0, y0 = _project(tail, focal, cx, cy, near)
        x1, y1 = _project(head, focal, cx, cy, near)
        dx, dy = x1 - x0, y1 - y0
        length = _norm(dx, dy)
        # The wingtips halfway through the shutter, the bar cut where it passes behind
        # the near plane: a tip projected through a depth clamped to the plane, or the bar
        # centred on the body's projection, threw a bird beside the camera across the
        # whole frame as a band.
        a = 0.5 * wingspan * cw
        tip0, tip1 = _clip_near(
            _view(camera, px - a * sx + 0.5 * mx, py - a * sy + 0.5 * my,
                  pz - a * sz + 0.5 * mz),
            _view(camera, px + a * sx + 0.5 * mx, py + a * sy + 0.5 * my,
                  pz + a * sz + 0.5 * mz), near)
        wings_front = front and max(tip0[2], tip1[2]) > near
        tu0, tv0 = _project(tip0, focal, cx, cy, near)
        tu1, tv1 = _project(tip1, focal, cx, cy, near)
        wu, wv = tu1 - tu0, tv1 - tv0
        span = _norm(wu, wv)
        _put(out, seen, 2 * i, front, x0, y0, x1, y1, focal * body_area / body_length / depth,
             body_area * scale, min_width, width_px, height_px, depth, distance)
        if cut:  # the wings' ink along the body's cut streak
            across = abs(wu * dy - wv * dx) / length if length > 0.0 else span
            wings_front = front
        else:
            c0u, c0v = _project(_view(camera, px, py, pz), focal, cx, cy, near)
            c1u, c1v = _project(_view(camera, px + mx, py + my, pz + mz), focal, cx, cy,
                                near)
            du, dv = c1u - c0u, c1v - c0v
            swept = _norm(du, dv)
            if span >= swept:  # the bar itself, halfway through its sweep
                across = abs(du * wv - dv * wu) / span if span > 0.0 else 0.0
                x0, y0, x1, y1 = tu0, tv0, tu1, tv1
            else:  # its sweep
                across = abs(wu * dv - wv * du) / swept
                x0, y0, x1, y1 = c0u, c0v, c1u, c1v
        _put(out, seen, 2 * i + 1, wings_front, x0, y0, x1, y1, across,
             wing_area * facing * scale, min_width, width_px, height_px, depth, distance)


@inline
def _put(out, seen, col, front, x0, y0, x1, y1, across, ink, min_width, width_px,
         height_px, depth, distance):
    """One streak from (x0, y0) to (x1, y1) px into row `col` of out and seen: at
    least `across` and min_width wide, widened until `ink` px² fits at full opacity,
    alpha making alpha × area the ink; cut to the frame (see `_clip_to_frame`)."""
    length = _norm(x1 - x0, y1 - y0)
    full = (math.sqrt(length * length + math.pi * ink) - length) / (0.5 * math.pi)
    width = max(across, max(full, min_width))
    area = length * width + 0.25 * math.pi * width * width
    meets, x0, y0, x1, y1 = _clip_to_frame(x0, y0, x1, y1, width_px, height_px)
    r = 0.5 * width
    seen[col] = front and meets and max(x0, x1) + r >= 0.0 and \
        min(x0, x1) - r <= width_px and max(y0, y1) + r >= 0.0 and \
        min(y0, y1) - r <= height_px
    out[col, 0], out[col, 1], out[col, 2], out[col, 3] = x0, y0, x1, y1
    out[col, 4], out[col, 5] = width, min(ink / area, 1.0)  # ≤ 1 by construction
    out[col, 6], out[col, 7] = depth, distance


@inline
def _norm(a, b):
    """The length of (a, b) px. Not math.hypot, a library call guarding against overflow
    that these lengths (px, cut to a few frames' size) cannot reach: _birds takes five a
    bird, and they were a third of its time (20,000 birds: 1.4 against 2.0 ms)."""
    return math.sqrt(a * a + b * b)


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
