"""Seamless loops on the rendering side: how many frames morph, and how well the rendered
loop closes. The flock's side of the morph is sim/loop.py."""

from __future__ import annotations

import math

import numpy as np

from .errors import UsageError
from .options import loop_range_error
from .scene import Scene
from .sim.jit import serial
from .sim.loop import cruise_speed, flock_motion, landing_at, landing_error


def crossfade_frames(scene: Scene, first: int) -> int:
    """Frames of the loop's morph (0: not a loop)."""
    out = scene.output
    if not out.loop:
        return 0
    if first:
        raise loop_range_error()
    if scene.dimensions == 3:
        refuse_moving_keys(scene)
    crossfade = max(1, round(out.crossfade * out.fps))  # shorter than the clip: checked
    landing, window = landing_at(scene), (scene.frame_count + crossfade) / float(out.fps)
    if landing is not None and window > landing:  # the clip and its morph, s
        raise landing_error(landing, window)
    return crossfade


def refuse_moving_keys(scene: Scene) -> None:
    """A keyframed 3D camera loops only if its pose at the loop's end (the time of the
    frame after the last) is its pose at the start: raises UsageError otherwise (its
    path would jump back at the wrap, and easing it back would be a pan of its own)."""
    from .draw3d.camera import key_at
    from .scene.schema3d import keyframes

    camera = scene.camera
    if camera is None or not camera.enabled or camera.path is None:
        return
    end = scene.frame_count / float(scene.output.fps)
    first, last = (key_at(keyframes(camera, scene.world, scene.roost), t, camera.easing)
                   for t in (0.0, end))
    if not np.allclose(first[1:], last[1:], rtol=0.0, atol=1e-9):
        raise UsageError(f"camera.path: a --loop's camera must end where it starts; at "
                         f"{end:g} s it is at {_key(last)}, at 0 s at {_key(first)} (add a "
                         f"last key at {end:g} s equal to the first, or drop the path)")


def _key(row: np.ndarray) -> str:
    return (f"position {[round(float(v), 3) for v in row[1:4]]}, look_at "
            f"{[round(float(v), 3) for v in row[4:7]]}, fov {float(row[7]):g}")


# The measures' limits (docs/loops.md): a step within 1.5× the median step, ink within
# ±10% of the median, a morph frame's coherence within the 1st–99th percentile of the
# others' (give or take the largest step between two of them), no bird faster than 1.5×
# the scene's maximum speed, at most 5% fading.
STEP_LIMIT, INK_LIMIT, BAND, SPEED_LIMIT, FADE_LIMIT = 1.5, 0.10, (1, 99), 1.5, 0.05
# A 2D pixel is inked when a channel is this many levels off the background.
INK_LEVEL = 24
# A camera step this small (degrees, m) is no motion: a still camera's steps are all 0.
CAMERA_STILL = 1e-9
# Coherence tiles are this many streaks wide (and at least MIN_TILE px).
TILE_STREAKS, MIN_TILE = 4, 8


def coherence(ink: np.ndarray, tile: int) -> float:
    """How aligned the drawn streaks are, locally: the structure tensor of the (h, w)
    uint8 ink image (numpy.gradient's differences) summed over square tiles of `tile` px,
    each tile's coherence √((Jxx − Jyy)² + 4Jxy²) / (Jxx + Jyy) (1: all edges one way,
    0: no preferred way) averaged with the tiles' weight Jxx + Jyy. 0 without ink."""
    sums = np.empty((ink.shape[0] // tile, ink.shape[1] // tile, 3), np.int64)
    tensor_tiles(ink, tile, sums)
    jxx, jyy, jxy = (sums[:, :, c].astype(np.float64) for c in range(3))
    trace = float(jxx.sum() + jyy.sum())
    return float(np.sqrt((jxx - jyy) ** 2 + 4 * jxy * jxy).sum()) / trace if trace else 0.0


# The frame's measures in three passes over its pixels, summed in integers (exact), each
# a plain loop over contiguous rows that the compiler vectorises, on one thread: they run
# beside the simulation and the drawing, and a parallel region there waited on a core
# those held (in a 3D loop at 1280x720 the three took 15 ms a frame on two threads and
# 8 on one; these take 6 there, 3 on an idle machine). The numpy they first replaced
# took 48 ms a frame.
@serial
def step_rows(a, b, rows):
    """rows[y] = Σ over row y and the first three channels of |a − b| ((h, w, 4) uint8
    each, C-contiguous)."""
    w = a.shape[1]
    for y in range(a.shape[0]):
        ra, rb = a[y].reshape(4 * w), b[y].reshape(4 * w)
        total = np.int32(0)  # at most 3 · 255 · w
        for j in range(4 * w):
            d = abs(np.int32(ra[j]) - np.int32(rb[j]))
            total += d if (j & 3) != 3 else 0  # not alpha
        rows[y] = total


@serial
def ink_rows(pixels, ground, ink, sums, over):
    """ink[y, x] = max over the first three channels of |pixels − ground| ((h, w, 4)
    uint8; ground (h, w, 4), or (1, 1, 4): one colour everywhere; both C-contiguous);
    per row y, the sum of its ink into sums[y] and how many of its pixels are inked past
    INK_LEVEL into over[y]."""
    w = pixels.shape[1]
    sy, sx = min(ground.shape[0] - 1, 1), min(ground.shape[1] - 1, 1)
    for y in range(pixels.shape[0]):
        row = pixels[y].reshape(4 * w)
        under = ground[y * sy].reshape(4 * ground.shape[1])
        out = ink[y]
        for x in range(w):
            p, g = 4 * x, 4 * x * sx
            d0 = abs(np.int32(row[p]) - np.int32(under[g]))
            d1 = abs(np.int32(row[p + 1]) - np.int32(under[g + 1]))
            d2 = abs(np.int32(row[p + 2]) - np.int32(under[g + 2]))
            out[x] = max(d0, max(d1, d2))
        total = inked = np.int32(0)
        for x in range(w):
            most = np.int32(out[x])
            total += most
            inked += np.int32(most > INK_LEVEL)
        sums[y] = total
        over[y] = inked


@serial
def tensor_tiles(ink, tile, sums):
    """The structure tensor of the (h, w) uint8 image `ink` summed over each `tile` px
    square into sums[ty, tx] = (Jxx, Jyy, Jxy) (sums (h // tile, w // tile, 3) int64),
    from twice numpy.gradient's differences (central inside, one-sided at the edges;
    doubled so every one is an integer)."""
    h, w = ink.shape
    width = sums.shape[1] * tile
    gx, gy = np.empty(width, np.int32), np.empty(width, np.int32)
    sums[:] = 0
    if width == 0:
        return
    for y in range(sums.shape[0] * tile):
        up, down = max(y - 1, 0), min(y + 1, h - 1)
        for x in range(1, min(width, w - 1)):
            gx[x] = np.int32(ink[y, x + 1]) - np.int32(ink[y, x - 1])
        # The first and the last column: where that is the image's edge, a one-sided
        # difference, counted twice (the last is inside when the tiles stop short of it).
        for x in (0, width - 1):
            left, right = max(x - 1, 0), min(x + 1, w - 1)
            gx[x] = (np.int32(ink[y, right]) - np.int32(ink[y, left])) * (3 - right + left)
        rows = 3 - down + up
        for x in range(width):
            gy[x] = (np.int32(ink[down, x]) - np.int32(ink[up, x])) * rows
        for t in range(sums.shape[1]):
            xx = yy = xy = np.int64(0)
            for x in range(t * tile, (t + 1) * tile):
                a, b = np.int64(gx[x]), np.int64(gy[x])
                xx += a * a
                yy += b * b
                xy += a * b
            sums[y // tile, t, 0] += xx
            sums[y // tile, t, 1] += yy
            sums[y // tile, t, 2] += xy


def tile_px(scene: Scene | None, size: tuple[int, int]) -> int:
    """The coherence tile: `TILE_STREAKS` streaks at the scene's maximum speed, in px."""
    if scene is None:
        return MIN_TILE
    style = scene.render
    streak = (style.tail + style.head) * scene.flock.max_speed / 60.0  # world units
    return max(MIN_TILE, round(TILE_STREAKS * streak * size[0] / scene.world.width))


class SeamMeter:
    """How well a loop closes and whether its morph reads as flight, on the rendered frames
    at full resolution: (1) every consecutive-frame difference (mean absolute, the wrap
    last→first included) against the median; (2) the streaks' local alignment
    (`coherence`) in each morph frame against the 1st–99th percentile of the others'
    (widened by the largest step between two of them);
    (3) the ink coverage in each morph frame against the median; (4) the fastest bird
    during the morph (from the states, consecutive positions) against the scene's maximum
    speed. `crossfade` frames from the first are the morph's. `start`: the loop's t₀ in the
    simulation, s; `turn`: the flock's turn carried across the loop (radians,
    `sim.loop.flock_turn`), and `shape`, its stretch (`sim.loop.flock_shape`; None: none),
    said in the report. `window`: the morph's first frame (0 in a
    loop, whose morph the loop's wrap brackets with ordinary frames on both sides; a clip
    that is not a loop is measured with the frames the morph would take in its middle, so
    that there too the band comes from flight before and after them, not only from what
    follows)."""

    def __init__(self, scene: Scene | None, crossfade: int, start: float = 0.0,
                 window: int = 0, turn: float = 0.0, shape: np.ndarray | None = None):
        self.scene, self.crossfade, self.start, self.turn = scene, crossfade, start, turn
        self.shape = shape
        self.window = window
        self.first = self.last = None
        self.steps: list[float] = []
        self.coverage: list[float] = []
        self.coherence: list[float] = []
        self.fastest = None  # per bird: its fastest step in the morph, in max speeds
        self.previous = None
        self.three = scene is not None and scene.dimensions == 3
        self.poses: list = []  # a 3D clip's camera, per frame
        self.followed: list = []  # and the point it follows (None: it does not)
        self._sky_of = None  # (the pose, its sky) of the last sky drawn
        self.transparent = scene is not None and scene.output.transparent

    def add(self, pixels: np.ndarray) -> None:
        """The next frame's (h, w, 4) uint8 BGRA pixels (premultiplied; a transparent
        frame is measured as it composites over white: its birds are in its alpha)."""
        pixels = np.array(pixels, np.uint8, copy=True)  # the drawing may reuse its buffer
        if self.transparent:
            over_white(pixels)
        h, w = pixels.shape[:2]
        if self.first is None:
            self.first = pixels
        else:
            self.steps.append(_mean_step(pixels, self.last))
        self.last = pixels
        ink = np.empty((h, w), np.uint8)
        sums, over = np.empty(h, np.int64), np.empty(h, np.int64)
        if self.three and self.transparent:
            ink_rows(pixels, _WHITE, ink, sums, over)
            self.coverage.append(float(sums.sum()) / (h * w) / 255)
        elif self.three:
            # Sub-pixel birds over a sky gradient: the ink is the frame's difference from
            # its own sky (drawn alone through the frame's camera), and its amount is the
            # mean difference, not a count of pixels past a threshold few birds reach.
            ink_rows(pixels, self._sky(len(self.coverage), (h, w)), ink, sums, over)
            self.coverage.append(float(sums.sum()) / (h * w) / 255)
        else:
            ink_rows(pixels, np.ascontiguousarray(self.first[:1, :1]), ink, sums, over)
            self.coverage.append(float(over.sum()) / (h * w))
        self.coherence.append(coherence(ink, tile_px(self.scene, (w, h))))

    def _sky(self, index: int, shape) -> np.ndarray:
        """Frame `index`'s sky and ground without birds, (h, w, 4) uint8 BGRA (the last
        one again while the camera stands still)."""
        from .draw3d.camera import resized
        from .draw3d.sky import sky_for, sky_pixels

        pose = resized(self.poses[index], shape[1], shape[0])
        key = tuple(np.concatenate([pose.position, pose.right, pose.up, pose.forward,
                                    [pose.focal, pose.width, pose.height]]))
        if self._sky_of is None or self._sky_of[0] != key:
            self._sky_of = (key, sky_pixels(sky_for(self.scene, pose),
                                            (0, 0, shape[1], shape[0])))
        return self._sky_of[1]

    def add_state(self, state) -> None:
        """The next frame's state (a `FrameState`): the speeds of the morph's birds (in 3D
        relative to their centroid, in cruise speeds) and the camera."""
        if self.three:
            self.poses.append(state.pose)
            self.followed.append(getattr(state, "followed", None))
        if not self.window <= state.index < self.window + self.crossfade:
            return
        if self.previous is not None and self.scene is not None:
            delta = state.positions - self.previous
            if self.scene.world.boundary == "wrap":
                extent = np.array([self.scene.world.width, self.scene.world.height])
                delta -= extent * np.round(delta / extent)
            if self.three:
                delta -= flock_motion(delta)
            speed = np.sqrt((delta * delta).sum(axis=1)) * float(self.scene.output.fps)
            speed /= cruise_speed(self.scene) if self.three else self.scene.flock.max_speed
            self.fastest = speed if self.fastest is None else np.maximum(self.fastest, speed)
        self.previous = state.positions

    def measures(self, wrap: bool = True) -> dict[str, float]:
        """The figures; the coverage ones NaN where the median frame has no ink. `wrap`:
        count the last→first step (False for a clip that is not a loop)."""
        steps = self.steps + ([_mean_step(self.first, self.last)] if wrap else [])
        median = float(np.median(self.steps))
        cover = float(np.median(self.coverage))
        inside = slice(self.window, self.window + self.crossfade)
        blend = self.coverage[inside]
        low, high = (min(blend) / cover - 1, max(blend) / cover - 1) if cover else (np.nan,) * 2
        before, after = self.coherence[:self.window], self.coherence[inside.stop:]
        rest = (before + after) or self.coherence
        # A frame of uninterrupted flight may pass the others' extremes by one step of its
        # own: the band reaches as far as the largest step between two ordinary frames.
        jump = max((float(np.abs(np.diff(run)).max()) for run in (before, after)
                    if len(run) > 1), default=0.0)
        band = np.percentile(rest, BAND) + [-jump, jump]
        morph = self.coherence[inside]
        return {"start_s": self.start, "seam": _mean_step(self.first, self.last),
                "median_step": median, "max_step": max(steps),
                "coverage_low": low, "coverage_high": high,
                "coherence_low": min(morph), "coherence_high": max(morph),
                "band_low": float(band[0]), "band_high": float(band[1]),
                **self._speeds(), **self._camera(wrap)}

    def _camera(self, wrap: bool) -> dict[str, float]:
        """A 3D clip's camera from frame to frame (the wrap included): its largest turn of
        view and step of position against the clip's median ones (degrees, m). A tracking
        camera's position is taken level with the point it follows (its x, y), which is
        where a loop closes it: the flock's place is carried across the morph, and the
        sky, the ground and the treeline look the same from anywhere at one height."""
        if not self.three or len(self.poses) < 2:
            return {}
        track = self.scene.camera is not None and self.scene.camera.follow == "track"
        places = [np.asarray(p.position) - (f[0], f[1], 0.0) if track and f is not None
                  else np.asarray(p.position) for p, f in zip(self.poses, self.followed)]
        poses = list(zip(self.poses, places))
        poses += poses[:1] if wrap else []
        turns, moves = [], []
        for (a, at), (b, bt) in zip(poses, poses[1:]):
            cos = float(np.clip(np.dot(a.forward, b.forward), -1.0, 1.0))
            turns.append(float(np.degrees(np.arccos(cos))))
            moves.append(float(np.linalg.norm(bt - at)))
        return {"camera_turn": max(turns), "camera_turn_median": float(np.median(turns)),
                "camera_move": max(moves), "camera_move_median": float(np.median(moves))}

    def _speeds(self) -> dict[str, float]:
        """The fastest bird that flies (in max speeds) and the share of birds that jump: a
        step faster than `SPEED_LIMIT` does not read as flight but as a bird fading out
        and another in."""
        if self.fastest is None:
            return {"max_speed": np.nan, "fading": 0.0}
        jumped = self.fastest > SPEED_LIMIT
        flying = self.fastest[~jumped]
        return {"max_speed": float(flying.max()) if flying.size else np.nan,
                "fading": float(jumped.mean())}

    def passes(self, wrap: bool = True) -> dict[str, bool]:
        """Each of the four measures (five in 3D, the camera's): whether it holds."""
        m = self.measures(wrap)
        return {"steps": m["max_step"] <= STEP_LIMIT * m["median_step"],
                "alignment": m["band_low"] <= m["coherence_low"] and
                m["coherence_high"] <= m["band_high"],
                "ink": bool(max(-m["coverage_low"], m["coverage_high"]) <= INK_LIMIT),
                "speed": m["fading"] <= FADE_LIMIT,
                **({"camera": all(m[k] <= STEP_LIMIT * m[f"{k}_median"] + CAMERA_STILL
                                  for k in ("camera_turn", "camera_move"))}
                   if "camera_turn" in m else {})}

    def report(self) -> str:
        """One line of the figures ("" before two frames)."""
        if not self.steps:
            return ""
        m = self.measures()
        coverage = ("no ink in the median frame" if np.isnan(m["coverage_low"]) else
                    f"ink coverage during the morph {m['coverage_low']:+.1%} to "
                    f"{m['coverage_high']:+.1%} of the median")
        passes = self.passes()
        failed = [k for k, ok in passes.items() if not ok]
        speed = "× cruise speed relative to the flock's centroid" if self.three else \
            "× max speed"
        camera = ""
        if "camera_turn" in m:
            camera = (f"camera turns at most {m['camera_turn']:.3f}° and moves "
                      f"{m['camera_move']:.3f} m a frame (median {m['camera_turn_median']:.3f}°, "
                      f"{m['camera_move_median']:.3f} m); ")
        held = {4: "all four measures hold", 5: "all five measures hold"}[len(passes)]
        median = max(m["median_step"], 1e-9)
        carried = ([f"turn of {math.degrees(self.turn):+.1f}°"] if self.turn else []) + \
            ([f"stretch ({', '.join(f'×{v:.2f}' for v in np.linalg.eigvalsh(self.shape))} "
              f"along its axes)"] if self.shape is not None else [])
        turn = f", the flock's {' and '.join(carried)} carried across the loop" \
            if carried else ""
        return (f"loop seam (starts at t₀ = {m['start_s']:.3f} s{turn}): last→first "
                f"{m['seam']:.3g} levels of 255 a pixel (×{m['seam'] / median:.2f} the "
                f"median), consecutive frames median {m['median_step']:.3g}, max "
                f"{m['max_step']:.3g} (×{m['max_step'] / median:.2f}); "
                f"{coverage}; streak alignment during the morph {m['coherence_low']:.3f} to "
                f"{m['coherence_high']:.3f} (other frames' 1st–99th percentile ± their "
                f"largest step {m['band_low']:.3f} to {m['band_high']:.3f}); fastest flying bird "
                f"{m['max_speed']:.2f}{speed}, {m['fading']:.1%} of the birds jump "
                f"(fade out and in); {camera}"
                + (f"fails: {', '.join(failed)}{_advice(failed, self.scene)}" if failed
                   else held))

    def rows(self) -> list[dict]:
        """Per frame: the step to the next frame (the last: to the first), its ink coverage
        and streak coherence, for --stats."""
        steps = self.steps + [_mean_step(self.first, self.last)]
        return [{"loop_step": s, "loop_ink": c, "loop_coherence": h}
                for s, c, h in zip(steps, self.coverage, self.coherence)]


_WHITE = np.full((1, 1, 4), 255, np.uint8)


def over_white(pixels: np.ndarray) -> None:
    """Premultiplied (h, w, 4) uint8 BGRA composited over white, in place: each colour
    c + 255 − alpha (at most 255, as c ≤ alpha), alpha 255."""
    rest = 255 - pixels[:, :, 3:].astype(np.int16)
    pixels[:, :, :3] = np.minimum(pixels[:, :, :3] + rest, 255)
    pixels[:, :, 3] = 255


def _advice(failed: list[str], scene: Scene | None) -> str:
    """What may help the measures that `failed` (docs/loops.md measured each)."""
    tips = []
    camera = scene.camera if scene is not None else None
    looking = camera is not None and camera.follow == "centroid"
    tracking = camera is not None and camera.follow == "track"
    if "speed" in failed and "camera" not in failed and not tracking and \
            scene is not None and scene.dimensions == 3:
        # The film's 6 s loop under a camera that looks at the flock: 97% and 99% of its
        # birds jumped with a 1 s and a 4 s morph; under its own fixed camera 97% and 99%
        # too; under a tracking camera under 1%. A longer morph is no help there.
        tips.append("camera.follow = \"track\" carries the flock's turn across the loop, "
                    "so its birds meet their partners")
    elif {"ink", "speed"} & set(failed):
        tips.append("a longer --crossfade gives the birds more time to meet their partners")
    elif "steps" in failed and tracking and scene.dimensions == 3:
        # The web loop's 6 s at 1280x720, seeds 0-4: a 1 s morph stepped 2.5-2.7x the
        # median, every bird turning toward its partner's heading at once; 3 s 1.4-1.5x.
        tips.append("a longer --crossfade (3-4 s) turns the birds toward their partners' "
                    "headings as gently as they turn in flight")
    if "camera" in failed and looking:
        tips.append("camera.follow = \"track\" closes without a pan")
    if "steps" in failed and looking and scene.dimensions == 2:
        tips.append("the camera follows the flock, whose centroid the loop does not bring "
                    "back: it jumps at the wrap; camera.follow = \"none\" does not")
    return f" ({'; '.join(tips)})" if tips else ""


def _mean_step(a: np.ndarray, b: np.ndarray) -> float:
    """The mean absolute difference of two frames' (h, w, 4) uint8 colour channels."""
    rows = np.empty(a.shape[0], np.int64)
    step_rows(np.ascontiguousarray(a), np.ascontiguousarray(b), rows)
    return float(rows.sum()) / (a.shape[0] * a.shape[1] * 3)
