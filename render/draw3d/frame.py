"""A 3D frame drawn through the camera: pose → streaks → compose (docs/optics.md), whole
or as a window of the full frame (a tile), sharp or motion-blurred over sub-frame exposures."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..scene import Scene
from .camera import resized
from .colour import ENCODE, ENCODE_STEPS
from .optics import compose
from .sky import sky_for
from .streaks import dihedral, hawk_look, joined, look_of, shutter_of, streaks
from .types import Pose, Streaks
from .vector import write_vector

# The hunting hawk appears STANDOFF behind the flock (sim/forces/hunt.py): it comes into
# view over its first second out rather than blink into the sky.
HAWK_FADE_S = 1.0


class Hawk(NamedTuple):
    """The hunting hawk as a frame draws it: position (3,) m and velocity (3,) m/s when
    the shutter opens, how much of its ink shows (fading in) and its bank (radians)."""

    position: np.ndarray
    velocity: np.ndarray
    shown: float
    bank: float = 0.0


def hawk_drawn(scene: Scene, state) -> Hawk | None:
    """The hawk `state` (a `states.FrameState`) shows, None when there is none to draw (no
    hunting hawk, `[hawk] wingspan = 0`, not out, or out for less than a step)."""
    if state.hawk is None or state.hawk_velocity is None or hawk_look(scene) is None:
        return None
    shown = min(1.0, (float(state.time) - scene.hawk.start) / HAWK_FADE_S)
    return Hawk(np.array(state.hawk, np.float64), np.array(state.hawk_velocity, np.float64),
                shown, float(state.hawk_bank)) if shown > 0.0 else None


def exposures(scene: Scene, pose: Pose, exposure, bank: np.ndarray | None,
              accent: np.ndarray, hawk: Hawk | None = None,
              flap: np.ndarray | None = None, poses=()) -> list[Streaks]:
    """The streaks of each exposure: `exposure` holds (positions (n, 3), velocities (n, 3))
    pairs, one for a sharp frame (its state when the shutter opens) or motion blur's
    sub-frames, each sampled at the middle of its equal slice of the shutter's opening,
    as `sim.simulate.frames` samples them. Each streak covers its own slice, its wings
    where the beat has them halfway through it (`flap`: each bird's place in its beat
    when the shutter opens, see `streaks.wing_phases`; None: level). The `hawk`, if any,
    among the birds in depth order, flown on along its velocity to each sub-frame. `poses`:
    the camera at each sub-frame (it moves while the shutter is open), else `pose` for
    all."""
    look, shutter = look_of(scene), shutter_of(scene)
    hawk_sizes = None if hawk is None else hawk_look(scene)
    count = len(exposure)
    slice_s = shutter / count
    layers = []
    for k, (positions, velocities) in enumerate(exposure):
        pose = poses[k] if poses else pose
        wings = dihedral(look, flap, (k + 0.5) * slice_s)
        if count == 1:
            layer = streaks(pose, positions, velocities, bank, accent, look, shutter, wings)
        else:
            layer = streaks(pose, positions - 0.5 * slice_s * velocities, velocities, bank,
                            accent, look, slice_s, wings)
        if hawk is not None:
            at = hawk.position + k * slice_s * hawk.velocity  # where its slice begins
            drawn = streaks(pose, at[None], hawk.velocity[None], np.array([hawk.bank]),
                            np.zeros(1, bool), hawk_sizes, slice_s)
            layer = joined(layer, drawn._replace(alpha=drawn.alpha * hawk.shown,
                                                 ids=np.full(len(drawn.ids), -1)))
        layers.append(layer)
    return layers


def composed(scene: Scene, pose: Pose, layers: list[Streaks], window,
             out: np.ndarray | None = None, linear: np.ndarray | None = None,
             straight: np.ndarray | None = None, poses=()) -> np.ndarray:
    """The exposures `layers` in `window` (x, y, w, h px of the pose's frame) over the
    scene's sky: (h, w, 4) uint8 BGRA premultiplied, into `out` if given, else a new
    array; with `linear`, the float image too, with `straight` the straight colours (see
    `optics.compose`). Several exposures are averaged in integers before quantising, as
    the 2D motion blur, exactly and the same every run (the float images in floats, the
    straight colours un-premultiplied from their mean). `poses`: each exposure's camera
    (see `exposures`), its sky drawn through it: a pan blurs the treeline as it blurs the
    birds."""
    sky = sky_for(scene, pose)
    transparent = scene.output.transparent
    if len(layers) == 1:
        return compose(layers[0], sky, window, transparent, out, linear, straight)
    total = np.zeros((int(window[3]), int(window[2]), 4), np.uint32)
    # The straight colours come from the exposures' float images mixed, as an OpenEXR
    # frame holds them: mixed by the 8-bit alphas of the exposures, a faint bird whose
    # ink changes from one to the next (its wings beating) read codes off the float image.
    floats = linear if linear is not None or straight is None else \
        np.empty((int(window[3]), int(window[2]), 4), np.float32)
    each = None if floats is None else np.empty_like(floats)
    if floats is not None:
        floats.fill(0.0)
    for k, layer in enumerate(layers):
        seen = sky_for(scene, poses[k]) if poses else sky
        total += compose(layer, seen, window, transparent, linear=each)
        if floats is not None:
            floats += each
    n = len(layers)
    if floats is not None:
        floats /= n
    if straight is not None:
        alpha = floats[:, :, 3:]
        colour = np.divide(floats[:, :, :3], alpha, out=np.zeros_like(floats[:, :, :3]),
                           where=alpha > 0)
        codes = np.floor(np.minimum(colour, 1.0) * ENCODE_STEPS + 0.5).astype(np.int32)
        straight[...] = ENCODE[codes[:, :, ::-1]]  # RGB → the plane's B, G, R
    averaged = ((total + n // 2) // n).astype(np.uint8)
    if out is None:
        return averaged
    out[...] = averaged
    return out


class Pixels(np.ndarray):
    """A 3D frame's (h, w, 4) BGRA uint8 pixels, as every writer takes them, carrying the
    float image they encode when the canvas keeps one: `linear`, (h, w, 4) float32 RGBA in
    linear light, premultiplied (what an OpenEXR frame holds; 8 bits round a bird of
    alpha under 1/255 away)."""

    linear: np.ndarray | None = None
    straight: np.ndarray | None = None  # (h, w, 3) B, G, R before alpha: `Canvas.straight`

    def __array_wrap__(self, array, context=None, return_scalar=False):
        # What is computed from the pixels (a sum, a difference) is a plain array or
        # number: the float image belongs to the frame, not to what is made of it.
        plain = array.view(np.ndarray)
        return plain[()] if return_scalar else plain


def draw3d(canvas, scene: Scene, pose: Pose, exposure, bank: np.ndarray | None,
           accent: np.ndarray, hawk: Hawk | None = None,
           flap: np.ndarray | None = None, poses=()) -> np.ndarray:
    """The frame drawn onto `canvas` (any size: the same picture, see `camera.resized`);
    returns its pixels (h, w, 4) BGRA uint8, as the 2D drawing does, as `Pixels` with
    the float image when the canvas keeps one (`canvas.linear`). `poses`: the camera at
    each exposure of motion blur (see `exposures`)."""
    width, height = canvas.size
    pose = resized(pose, width, height)
    poses = tuple(resized(p, width, height) for p in poses)
    layers = exposures(scene, pose, exposure, bank, accent, hawk, flap, poses)
    composed(scene, pose, layers, (0, 0, width, height), canvas.pixels, canvas.linear,
             canvas.straight, poses)
    canvas.surface.mark_dirty()
    pixels = canvas.flush()
    if canvas.linear is None and canvas.straight is None:
        return pixels
    pixels = pixels.view(Pixels)
    pixels.linear, pixels.straight = canvas.linear, canvas.straight
    return pixels


def write_vector3d(path, scene: Scene, pose: Pose, positions: np.ndarray,
                   velocities: np.ndarray, bank: np.ndarray | None, accent: np.ndarray,
                   hawk: Hawk | None = None, flap: np.ndarray | None = None, *,
                   dpi: float, title: str = "", paper: str | None = None) -> None:
    """The frame as a PDF or SVG page (see `vector.write_vector`): the birds' streaks (and
    the hawk's) over the whole shutter (a vector page has no sub-frames to average),
    depth-sorted."""
    [layer] = exposures(scene, pose, ((positions, velocities),), bank, accent, hawk, flap)
    write_vector(path, layer, sky_for(scene, pose), dpi,
                 transparent=scene.output.transparent, title=title, paper=paper)
