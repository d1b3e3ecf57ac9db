"""The 3D camera at one instant (`pose_at`): a pinhole at a position, looking at a point
(keyframed, eased as the 2D camera, or the flock's followed centroid), with the scene's up
and vertical field of view, that of a frame of the camera's aspect: a frame of another shape
shows at least that frame's view, a taller one with the horizon where that frame has it
(docs/model.md, "The 3D camera")."""

from __future__ import annotations

import math

import numpy as np

from ..scene import Scene
from ..scene.easing import keyed
from ..scene.schema3d import Camera3DSettings, keyframes
from .types import Pose


def pose_at(scene: Scene, time_s: float, followed: tuple[float, ...] | None,
            width: int, height: int) -> Pose:
    """The camera at `time_s` for a frame of width × height px. `followed`: the flock's
    centroid (x, y, z) as the camera's critically damped follow tracks it (None unless the
    camera follows; where it makes the view degenerate, see `followed_pose`). Raises
    ValueError if a keyframed camera looks at its own position or along its up vector
    (the loader refuses both for fixed points)."""
    camera = scene.camera or Camera3DSettings()
    keys = keyframes(camera, scene.world, scene.roost)
    key = key_at(keys, time_s, camera.easing)
    position, look_at, fov = key[1:4], key[4:7], key[7]
    frame = (fov, width, height, camera.near, camera.aspect)
    if followed is not None and camera.follow != "track":
        return followed_pose(position, look_at, followed, camera.up, *frame)
    # A shift lens is set once for the shot: by the first key's horizon, so a keyframed
    # tilt moves a tall frame's picture as it moves the aspect's, the shift staying put.
    first = keys[0]
    shift = pose(first[1:4], first[4:7], camera.up, first[7], width, height, camera.near,
                 camera.aspect).lift
    if followed is not None:
        return pose(*tracked(position, look_at, followed), camera.up, *frame, shift=shift)
    return pose(position, look_at, camera.up, *frame, shift=shift)


def tracked(position, look_at, followed) -> tuple[np.ndarray, np.ndarray]:
    """(position, look_at) of a tracking camera: both moved level by the followed point's
    (x, y) offset from look_at, so the view keeps its direction and its eye height."""
    shift = np.array([followed[0] - look_at[0], followed[1] - look_at[1], 0.0])
    return np.asarray(position, np.float64) + shift, np.asarray(look_at, np.float64) + shift


def followed_pose(position, keyed, followed, up, fov_deg: float, width: int, height: int,
                  near: float, aspect: float) -> Pose:
    """The camera at `position` looking at the `followed` centroid, with screen-up nearest
    `up`, the centroid at the centre of a frame of any shape (a followed flock is the
    composition, where the horizon is a fixed camera's). A flock can fly where that
    cannot be: onto the camera (then it looks at its
    keyframed `keyed` point instead) or straight along `up` (overhead with up = z: then
    screen-up is what it tends to as the view tilts toward the keyframed point, or failing
    that the world axis least along the view). Each frame decides from its own numbers alone, so a
    frame drawn by itself (a still, a range of frames) is the same as in the clip."""
    position = np.asarray(position, np.float64)
    view = np.asarray(followed, np.float64) - position
    length = float(np.linalg.norm(view))
    if length < MIN_VIEW_M:
        return pose(position, keyed, up, fov_deg, width, height, near, aspect,
                    shift=0.5)
    forward = view / length
    if not parallel(forward, np.asarray(up, np.float64)):
        return pose(position, followed, up, fov_deg, width, height, near, aspect,
                    shift=0.5)
    # Tilted a hair from this view toward the keyframed point, screen-up would be
    # −(up·forward) times that point's direction across the view: the limit, so a flock
    # passing overhead does not flip the frame.
    up = np.asarray(up, np.float64)
    toward_key = -float(up @ forward) * (np.asarray(keyed, np.float64) - position)
    across = (toward_key, *np.eye(3)[np.argsort(np.abs(forward))])
    for candidate in across:
        side = candidate - (candidate @ forward) * forward
        if float(np.linalg.norm(side)) > 1e-3 * float(np.linalg.norm(candidate)):
            return pose(position, followed, side, fov_deg, width, height, near, aspect,
                        shift=0.5)
    raise AssertionError("a world axis lies across any view")  # unreachable


MIN_VIEW_M = 1e-6  # a view shorter than this has no direction


def parallel(forward: np.ndarray, up: np.ndarray) -> bool:
    """Whether `up` gives no screen-up across the unit view direction `forward`."""
    side = float(np.linalg.norm(np.cross(forward, up)))
    return side < 1e-9 * float(np.linalg.norm(up)) or side == 0.0


def key_at(keys: tuple[tuple[float, ...], ...], time_s: float, easing: str) -> np.ndarray:
    """The keyframe row (t, x, y, z, look_x, look_y, look_z, fov) at `time_s`: eased
    between its neighbours, held before the first and after the last. (8,) float64."""
    return keyed(np.asarray(keys, np.float64), time_s, easing)


def pose(position, look_at, up, fov_deg: float, width: int, height: int,
         near: float, aspect: float = 16 / 9, shift: float | None = None) -> Pose:
    """The pinhole at `position` (m) looking at `look_at` with screen-up nearest `up`, for
    a frame of width × height px that shows at least the view of a frame of shape `aspect`
    (width / height) with vertical field of view `fov_deg` (see `focal_length`): in a
    taller frame that view placed at `shift` (Pose.lift; 0.5: look_at at the frame's
    centre), by default by this view's own horizon (`lift`)."""
    position = np.asarray(position, np.float64)
    view = np.asarray(look_at, np.float64) - position
    length = float(np.linalg.norm(view))
    if length < MIN_VIEW_M:
        raise ValueError(f"the camera looks at its own position {position.tolist()}")
    forward = view / length
    up = np.asarray(up, np.float64)
    if parallel(forward, up):
        raise ValueError(f"the camera's up {up.tolist()} is parallel to its view direction "
                         f"{forward.round(6).tolist()}")
    right = np.cross(forward, up)
    right /= float(np.linalg.norm(right))
    half = math.tan(math.radians(0.5 * fov_deg))
    screen_up = np.cross(right, forward)
    return Pose(position, right, screen_up, forward, focal_length(half, aspect, width, height),
                int(width), int(height), float(near), float(aspect),
                lift(forward, screen_up, half) if shift is None else float(shift))


def focal_length(half: float, aspect: float, width: int, height: int) -> float:
    """px: the focal length at which a width × height frame shows at least the view of a
    frame of shape `aspect` whose half height of view is `half` (tan of half its vertical
    field of view): that height of view in a frame as wide or wider, so a wider one sees
    more across; that width of view, aspect · half, in a narrower one (square, portrait,
    an A sheet), which sees more above and below (how much of each: `lift`) rather than
    cutting the sides off."""
    if width >= aspect * height:
        return 0.5 * height / half
    return 0.5 * width / (aspect * half)


def lift(forward: np.ndarray, screen_up: np.ndarray, half: float) -> float:
    """Where a frame taller than the camera's aspect puts the view composed at that
    aspect (0 at its top, 1 at its bottom): as high as the horizon sits in that view, so
    the horizon keeps its height in the frame, and the extra height goes mostly to the
    sky of a camera looking up, all of it once the horizon is below the view. The
    horizon crosses the middle column at forward_z / (screen_up_z · half) half-heights
    below the centre (a rolled camera's, tilted, is measured there); a camera upside
    down keeps the view centred."""
    if screen_up[2] <= 0.0:
        return 0.5
    return min(max(0.5 + 0.5 * float(forward[2]) / (float(screen_up[2]) * half), 0.0), 1.0)


def resized(pose_: Pose, width: int, height: int) -> Pose:
    """The same camera for a frame of another size (the same picture at the same shape;
    another shape shows at least the view of the camera's aspect, as `focal_length`)."""
    if (width, height) == (pose_.width, pose_.height):
        return pose_
    fits_height = pose_.width >= pose_.aspect * pose_.height
    half = 0.5 * (pose_.height if fits_height else pose_.width / pose_.aspect) / pose_.focal
    return pose_._replace(focal=focal_length(half, pose_.aspect, width, height),
                          width=int(width), height=int(height))


def on_screen(pose_: Pose, rel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(u, v, depth) of points `rel` (..., 3) m from the eye: pixels from the frame's
    top-left corner (u right, v down), and the distance along the view; u and v mean
    something only where depth > 0."""
    depth = rel @ pose_.forward
    with np.errstate(divide="ignore", invalid="ignore"):
        u = 0.5 * pose_.width + pose_.focal * (rel @ pose_.right) / depth
        v = pose_.cy - pose_.focal * (rel @ pose_.up) / depth
    return u, v, depth


def in_frame(pose_: Pose, points: np.ndarray) -> np.ndarray:
    """(m,) bool: whether each of the (m, 3) points lies ahead of the near plane and
    projects inside the frame."""
    u, v, depth = on_screen(pose_, np.asarray(points, np.float64) - pose_.position)
    return (depth > pose_.near) & (u >= 0) & (u < pose_.width) & (v >= 0) & \
        (v < pose_.height)


def across_deg(pose_: Pose) -> float:
    """The frame's horizontal field of view, degrees."""
    return math.degrees(2.0 * math.atan(0.5 * pose_.width / pose_.focal))
