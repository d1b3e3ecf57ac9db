"""The camera: which part of the world a frame shows, as one world→pixel matrix.

A view is (centre x, centre y, width in world units across the frame, rotation in degrees).
With no [camera] section the whole world fits the frame, as `surface.world_to_pixels`.
The same view at any output size gives the same picture.
"""

from __future__ import annotations

import math

import cairo
import numpy as np

from ..scene import Scene
from ..scene.easing import keyed
from .surface import world_to_pixels

View = tuple[float, float, float, float]


def view_at(scene: Scene, time_s: float, followed: tuple[float, float] | None) -> View | None:
    """The camera's view at `time_s`; `followed` is the smoothed flock centroid the
    simulation tracks when the camera follows it. None: fit the whole world."""
    cam = scene.camera
    if cam is None:
        return None
    world = scene.world
    x, y = cam.centre or (0.5 * world.width, 0.5 * world.height)
    width, rotation = cam.width, cam.rotation
    if cam.path is not None:
        _, x, y, width, rotation = keyed(np.array(cam.path, np.float64), time_s, cam.easing)
    if width is None:  # the whole world fits, as without a camera
        aspect_w = scene.output.size[0] / scene.output.size[1]
        width = max(world.width, world.height * aspect_w)
    if followed is not None:
        x, y = followed
    return float(x), float(y), float(width), float(rotation)


def view_matrix(scene: Scene, size: tuple[int, int], view: View | None) -> cairo.Matrix:
    """World units → pixels for a frame of `size` px showing `view`."""
    if view is None:
        return world_to_pixels(scene.world.width, scene.world.height, size)
    x, y, width, rotation = view
    scale = size[0] / width
    m = cairo.Matrix()
    m.translate(0.5 * size[0], 0.5 * size[1])
    m.scale(scale, -scale)  # world y points up
    m.rotate(-math.radians(rotation))
    m.translate(-x, -y)
    return m
