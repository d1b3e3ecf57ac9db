"""Trajectories as OpenUSD (`UsdWriter`): one `UsdGeom.Points` prim whose points and
velocities are sampled at every frame, for instancing bird geometry in Houdini, Blender
or Maya. Needs usd-core (the [usd] extra), imported only when a USD output is chosen.

The stage: up axis Z, metersPerUnit 1 (3D worlds are in metres; a 2D world's units are
written as metres too, at z = 0), timeCodesPerSecond = framesPerSecond = the output's
fps, time code k = frame k (start/endTimeCode: the range written). A 3D scene's camera is
`/flock/camera`, a `UsdGeom.Camera` sampled at every frame, so bird geometry instanced
on the points lines up with the rendered plates; a hunting hawk is `/flock/hawk`, a
Points prim of its own. USD builds the whole
layer in memory before it writes it (budget.py counts it); the file is written beside
its target under a temporary name with the same suffix, then renamed into place.
"""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import numpy as np

from ..errors import EncodeError, UsageError
from .files import place_finished, refuse_existing, temp_beside

PRIM = "/flock/birds"  # the Points prim, under the default prim /flock
CAMERA = "/flock/camera"
HAWK = "/flock/hawk"  # a hunting hawk: one point while it is out, none while it is not
# The apertures' width: a full-frame sensor's 36 mm, in USD's lens unit, a tenth of a
# scene unit (0.36 on this metre stage), so the focal length reads as a lens's too.
APERTURE = 0.36
FAR_M = 1e6  # the clipping range's far end: the whole sky
# What each suffix is written as: .usd is always crate (binary), whatever
# USD_DEFAULT_FILE_FORMAT says.
FORMATS = {".usd": "usdc", ".usda": "usda", ".usdc": "usdc"}
INSTALL = "pip install 'boids-render[usd]'"


def _pxr():
    try:
        from pxr import Sdf, Usd, UsdGeom, Vt
    except ImportError:
        return None
    return Sdf, Usd, UsdGeom, Vt


class UsdWriter:
    """A StateWriter: `frames` states (frames first, first+1, … in order) into `path`
    (.usd and .usdc: crate; .usda: text). points and velocities: point3f[] and
    vector3f[] (float32, world units and world units/s) time-sampled; extent sampled
    with them; ids int64[] (the bird's index), widths float[] (`width`, world units) and
    primvars:accent int[] (1: an accent bird) constant over the clip; in 3D,
    primvars:bank float[] (radians) and primvars:up vector3f[] (each bird's banked up
    vector, its wings' normal) sampled with the points, the camera (`_film`), and with
    a wing beat (`look`, a `draw3d.streaks.Look` whose birds beat their wings)
    primvars:wings float[] (each wing's angle above the level, radians); with a hunting
    hawk of `hawk_span` m wingspan, `/flock/hawk`, a Points prim of one point (its
    position, velocity, primvars:bank and up) at the frames it is out, none at the
    others. `record` (`still.trajectory_record`) goes into the layer's customLayerData, as
    the dictionary "boids-render"."""

    def __init__(self, path: str | Path, *, fps: Fraction, frames: int, first: int = 0,
                 width: float, overwrite: bool = True, look=None,
                 hawk_span: float | None = None, record: dict[str, str] | None = None):
        self.modules = _pxr()
        if self.modules is None:
            raise UsageError(f"{path}: writing USD needs the usd-core package: "
                             f"{INSTALL}")
        self.path = Path(path)
        refuse_existing(self.path, overwrite)  # before the flock is settled
        self.format = FORMATS[self.path.suffix.lower()]
        self.fps, self.frames, self.first = fps, frames, first
        self.width, self.overwrite, self.look = width, overwrite, look
        self.hawk_span, self.hawk = hawk_span, None
        self.record = record or {}
        self.written = 0
        self.stage = self.points = self.camera = None

    def __enter__(self) -> UsdWriter:
        refuse_existing(self.path, self.overwrite)  # again: it may have appeared since
        _, Usd, UsdGeom, _ = self.modules
        stage = Usd.Stage.CreateInMemory()
        UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
        UsdGeom.SetStageMetersPerUnit(stage, 1.0)
        stage.SetTimeCodesPerSecond(float(self.fps))
        stage.SetFramesPerSecond(float(self.fps))
        stage.SetStartTimeCode(self.first)
        stage.SetEndTimeCode(self.first + self.frames - 1)
        stage.SetDefaultPrim(UsdGeom.Xform.Define(stage, "/flock").GetPrim())
        if self.record:
            stage.GetRootLayer().customLayerData = {"boids-render": dict(self.record)}
        self.stage, self.points = stage, UsdGeom.Points.Define(stage, PRIM)
        return self

    def write_state(self, state) -> None:
        """The next frame's state (a FrameState), at time code = its index."""
        Sdf, _, UsdGeom, Vt = self.modules
        index = self.first + self.written
        if state.index != index:
            raise ValueError(f"frame {state.index} given, frame {index} expected")
        points, velocities = (Vt.Vec3fArray.FromNumpy(in_3d(v))
                              for v in (state.positions, state.velocities))
        if self.written == 0:
            n = len(state.positions)
            self.widths = Vt.FloatArray.FromNumpy(np.full(n, self.width, np.float32))
            self.points.CreateIdsAttr(Vt.Int64Array.FromNumpy(np.arange(n, dtype=np.int64)))
            self.points.CreateWidthsAttr(self.widths)
            self.points.SetWidthsInterpolation(UsdGeom.Tokens.vertex)
            accent = UsdGeom.PrimvarsAPI(self.points).CreatePrimvar(
                "accent", Sdf.ValueTypeNames.IntArray, UsdGeom.Tokens.vertex)
            accent.Set(Vt.IntArray.FromNumpy(np.asarray(state.accent, dtype=np.int32)))
        self.points.GetPointsAttr().Set(points, index)
        self.points.GetVelocitiesAttr().Set(velocities, index)
        self.points.GetExtentAttr().Set(UsdGeom.Points.ComputeExtent(points, self.widths),
                                        index)
        if state.bank is not None:
            self._bank(state, index)
        if getattr(state, "flap", None) is not None and self.look is not None:
            self._wings(state.flap, index)
        if state.pose is not None:
            self._film(state.pose, index)
        if self.hawk_span is not None:
            self._hawk(state, index)
        self.written += 1

    def _hawk(self, state, index: int) -> None:
        """The hawk at time code `index`: one point where it is, moving at its velocity,
        banked (primvars:bank, up) as the frames draw it; no point while it is not out."""
        Sdf, _, UsdGeom, Vt = self.modules
        if self.hawk is None:
            hawk = UsdGeom.Points.Define(self.stage, HAWK)
            api = UsdGeom.PrimvarsAPI(hawk)
            self.hawk = (hawk, api.CreatePrimvar("bank", Sdf.ValueTypeNames.FloatArray,
                                                 UsdGeom.Tokens.vertex),
                         api.CreatePrimvar("up", Sdf.ValueTypeNames.Vector3fArray,
                                           UsdGeom.Tokens.vertex))
            hawk.SetWidthsInterpolation(UsdGeom.Tokens.vertex)
        hawk, bank_var, up_var = self.hawk
        out = state.hawk is not None and state.hawk_velocity is not None
        n = 1 if out else 0
        position = np.array([state.hawk if out else ()], np.float64).reshape(n, 3)
        velocity = np.array([state.hawk_velocity if out else ()], np.float64).reshape(n, 3)
        bank = np.full(n, float(getattr(state, "hawk_bank", 0.0)))
        points = Vt.Vec3fArray.FromNumpy(position.astype(np.float32))
        widths = Vt.FloatArray.FromNumpy(np.full(n, self.hawk_span, np.float32))
        hawk.GetPointsAttr().Set(points, index)
        hawk.GetVelocitiesAttr().Set(Vt.Vec3fArray.FromNumpy(velocity.astype(np.float32)),
                                     index)
        hawk.GetWidthsAttr().Set(widths, index)
        hawk.GetExtentAttr().Set(UsdGeom.Points.ComputeExtent(points, widths), index)
        bank_var.Set(Vt.FloatArray.FromNumpy(bank.astype(np.float32)), index)
        up_var.Set(Vt.Vec3fArray.FromNumpy(banked_up(velocity, bank).astype(np.float32)),
                   index)

    def _bank(self, state, index: int) -> None:
        """Each bird's bank angle and banked up vector at time code `index`: with the
        velocity, what orients a bird instanced on its point as the frames draw it."""
        Sdf, _, UsdGeom, Vt = self.modules
        if self.written == 0:
            api = UsdGeom.PrimvarsAPI(self.points)
            self.bank_var = api.CreatePrimvar("bank", Sdf.ValueTypeNames.FloatArray,
                                              UsdGeom.Tokens.vertex)
            self.up_var = api.CreatePrimvar("up", Sdf.ValueTypeNames.Vector3fArray,
                                            UsdGeom.Tokens.vertex)
        self.bank_var.Set(Vt.FloatArray.FromNumpy(state.bank.astype(np.float32)), index)
        self.up_var.Set(Vt.Vec3fArray.FromNumpy(
            banked_up(state.velocities, state.bank).astype(np.float32)), index)

    def _wings(self, flap: np.ndarray, index: int) -> None:
        """Each wing's angle above the level (radians, both wings alike; 0 for a landed
        bird) at time code `index`, where the beat has it then: what flaps a bird rig
        instanced on the point in step with the frames."""
        from ..draw3d.streaks import dihedral

        Sdf, _, UsdGeom, Vt = self.modules
        if self.written == 0:
            self.wings_var = UsdGeom.PrimvarsAPI(self.points).CreatePrimvar(
                "wings", Sdf.ValueTypeNames.FloatArray, UsdGeom.Tokens.vertex)
        angles = dihedral(self.look, flap, 0.0).astype(np.float32)
        self.wings_var.Set(Vt.FloatArray.FromNumpy(angles), index)

    def _film(self, pose, index: int) -> None:
        """The camera's pose at time code `index`: USD's camera looks down its −Z with +Y
        up, so its rows are the pose's right, up, −forward and position; the focal length
        follows a zoom (a keyframed fov), the aperture's offset a taller frame's shift."""
        from pxr import Gf

        _, _, UsdGeom, _ = self.modules
        if self.camera is None:
            camera = UsdGeom.Camera.Define(self.stage, CAMERA)
            camera.CreateProjectionAttr(UsdGeom.Tokens.perspective)
            camera.CreateHorizontalApertureAttr(APERTURE)
            camera.CreateVerticalApertureAttr(APERTURE * pose.height / pose.width)
            camera.CreateClippingRangeAttr(Gf.Vec2f(pose.near, FAR_M))
            self.camera = [camera, camera.AddTransformOp(), camera.CreateFocalLengthAttr(),
                           None]
        camera, transform, focal, offset = self.camera
        rows = (*pose.right, 0.0, *pose.up, 0.0, *(-pose.forward), 0.0, *pose.position, 1.0)
        transform.Set(Gf.Matrix4d(*map(float, rows)), index)
        focal.Set(APERTURE * pose.focal / pose.width, index)
        # A frame taller than the camera's aspect is moved off the axis as a shift lens
        # moves it (types.Pose.cy): up, for a camera looking up. A shot's shift is set
        # once, from its first frame: authored in every frame, or (unshifted) in none.
        shift = APERTURE * (pose.cy - 0.5 * pose.height) / pose.width
        if index == self.first and shift != 0.0:
            offset = self.camera[3] = camera.CreateVerticalApertureOffsetAttr()
        if offset is not None:
            offset.Set(shift, index)

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            return  # nothing was written: the stage lives in memory until here
        if self.written != self.frames:
            raise EncodeError(f"{self.path}: {self.written} of {self.frames} frames were "
                              f"given")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = temp_beside(self.path, self.path.suffix)
        try:
            try:
                exported = self.stage.GetRootLayer().Export(str(tmp),
                                                            args={"format": self.format})
            except RuntimeError as err:  # pxr.Tf.ErrorException: a full disk, permissions
                raise EncodeError(f"cannot write {self.path}: {first_error(err)}") from None
            if not exported:
                raise EncodeError(f"cannot write {self.path}: USD could not export it")
            place_finished(tmp, self.path, overwrite=self.overwrite)
        except OSError as err:
            raise EncodeError(f"cannot write {self.path}: {err.strerror or err}") from None
        finally:
            tmp.unlink(missing_ok=True)


def first_error(err: BaseException) -> str:
    """The first message of a pxr error, without the C++ function and source line each
    of its lines starts with ("Error in '…' at line 78 in file … : 'the message'")."""
    for line in str(err).splitlines():
        found = re.search(r" : '(.*)'$", line.strip())
        if found:
            return found.group(1)
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def banked_up(velocities: np.ndarray, bank: np.ndarray) -> np.ndarray:
    """(n, 3) each bird's up vector banked by its angle, as the drawing takes it
    (draw3d.streaks): forward f along the velocity (+x at rest), right r = f × z made
    level and unit (+x for a bird flying straight up or down), up u = r × f, banked
    cos β·u + sin β·r."""
    speed = np.linalg.norm(velocities, axis=1)
    f = np.where(speed[:, None] > 0, velocities / np.maximum(speed, 1e-300)[:, None],
                 [1.0, 0.0, 0.0])
    side = np.hypot(f[:, 0], f[:, 1])
    level = side > 1e-9
    safe = np.where(level, side, 1.0)
    r = np.column_stack([np.where(level, f[:, 1] / safe, 1.0),
                         np.where(level, -f[:, 0] / safe, 0.0), np.zeros(len(f))])
    u = np.cross(r, f)
    return np.cos(bank)[:, None] * u + np.sin(bank)[:, None] * r


def in_3d(vectors: np.ndarray) -> np.ndarray:
    """(n, d) vectors as (n, 3) float32: a 2D world's at z = 0."""
    out = np.zeros((len(vectors), 3), np.float32)
    out[:, :vectors.shape[1]] = vectors
    return out
