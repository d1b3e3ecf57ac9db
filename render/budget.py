"""What a render will cost, estimated before anything is allocated, and refused when it
cannot work (a 10⁹-bird flock or a giant frame is refused, not left to crash or swap).

The model is deliberately rough: a few per-bird and per-pixel constants measured on a
2-core machine (numba on both cores, libx264 preset medium, 1080p and 4K, 10⁴–2·10⁶
birds), rounded up. It has to tell "fits" from "cannot work" and say what would, and its
time is what `--check` prints: the simulation, the drawing and the encoding added up
(they overlap, so a render takes up to about half of it less; `benchmarks/run --only
budget` measures renders against it).
Like the scene package, this module imports no numpy, numba or cairo.
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path

from .encode import (VIDEO_SUFFIXES, WEB_MIN_SIDE, encoder_max_side, is_state_output,
                     keeps_straight)
from .encode.files import require_folder
from .executor import drawing_threads
from .draw import IMAGE_MAX_SIDE
from .errors import UsageError, option
from .scene import Scene
from .scene.schema3d import camera_placed

BASE_BYTES = 250e6           # Python, numpy, numba, cairo and their compiled code
BASE_SECONDS = 1.0           # starting them, the kernels read from numba's cache
SIM_BYTES_PER_BIRD = 500     # arrays, their grid-sorted copies, neighbourhood sums, snapshots
DRAW_BYTES_PER_BIRD = 800    # streak end points and the Python lists cairo's path is fed from
CANVAS_BYTES_PER_PX = 8      # the BGRA canvas, and a PNG being compressed
VIDEO_BYTES_PER_PX = 140     # ffmpeg: BGRA→YUV, x264's lookahead and reference frames
SIM_S_PER_BIRD_STEP = 2e-7     # the plate: 0.17 µs at 3,600 birds, 0.09 at 100,000
# 3D: positions, velocities, forward vectors, bank and their next values; k neighbour
# indices and squared distances; the rules' 14 sums; the folded grid (two buckets a bird,
# the birds' cells and sorted copies); the two snapshots frames interpolate between; the
# candidate lists (32 int32 slots, the reach, the place they were drawn at, their grid and
# its blocks' boxes of drifts, a quarter of a bird's worth each).
SIM3_BYTES_PER_BIRD = 900
SIM3_BYTES_PER_NEIGHBOUR = 16
SIM3_S_PER_BIRD_STEP = 4.5e-7  # k = 7: 0.33–0.41 µs at 10,000–100,000 birds (the film's
# hunt on a slow hour: a still at 20 s took 42 s against 41 estimated at 0.4), 0.55 at 10⁶
DRAW_S_PER_BIRD = 4e-6       # a 2D streak stroked by cairo (the plate: 2.7 µs)
DRAW3_S_PER_BIRD = 3e-7      # a 3D bird splatted (0.2 µs at 1080p, 0.34 at 4K)
# --stats (and --plot), per bird and frame measured: the plate's measures (0.36–0.69 µs
# at 3,600–100,000 birds), the 3D flock's shape and percentiles; and per bird on each
# sampled 3D frame (one every STATS3_EVERY_S, render.sim.diagnostics3d's SHAPE_EVERY),
# the largest cluster, the border ratio and, every fourth, the correlation length
# (0.22 s at 5,000 birds, 0.65 s at 20,000).
STATS_S_PER_BIRD = 1e-6
STATS3_S_PER_BIRD = 4e-5
STATS3_EVERY_S = 0.5
# ... and what a sampled 3D state's measures hold while they run: 17.6 kB a bird measured
# (the film's 150 frames with --stats: 598 MB at 20,000 birds, 334 MB at 5,000).
STATS3_BYTES_PER_BIRD = 18e3
DRAW_S_PER_PX = 2.5e-8       # painting and PNG compression, per frame (1080p: ~54 ms)
VIDEO_S_PER_PX = 2.5e-8      # painting and H.264 encoding, per frame (x264, 1080p: 42 ms)
MOV_S_PER_PX = 7e-8          # ProRes 4444 instead (flock3d at 1080p: 0.145 s a frame)
PNG3_S_PER_PX = 1.7e-7       # a 3D frame's PNG: zlib on a dithered sky (1080p: 0.36 s)
# Each motion-blur sub-frame after a 3D frame's first: its sky drawn through the camera
# where it is then (a moving camera's: 7.3 ms at 1080p) and its birds composited over it.
SUBFRAME3_S_PER_PX = 4e-9
# A --loop costs about this many clips' flight (render.sim.loop): its search for the start
# flies about two clips and the morph and pairs the birds at every candidate, the morph
# flies its head beside the guided tail, and a clip too large to keep its frames is flown
# again (measured: the film's 6 s loop at 20,000 birds, 1.9× the plain clip's time; 3.5×
# before the clip came from the search's frames).
LOOP_FLIGHTS = 4
SUPERSAMPLE_BYTES_PER_PX = 100  # 16-bit stills: float64 averages, their rounding, the rows
EXR_BYTES_PER_PX = 24        # an EXR frame: the look-up indices, half-float channels, ZIP
EXR_S_PER_PX = 7e-8          # its linearising and compression, per frame
STRAIGHT_BYTES_PER_PX = 3    # a transparent 3D frame's straight colours
FLOAT_BYTES_PER_PX = 16      # a 3D frame's float image, kept for its OpenEXR frame
# A frame's file, bytes per pixel, by suffix: the plate at 480x270 (animated images)
# and 1080p to 4K (the rest), rounded up. ProRes 4444 about 0.42, PNG 0.09 to 0.17, JPEG
# 0.16, EXR 0.39, GIF 0.25, WebP 0.2, APNG 0.5, H.264 and VP9 far less. cluster.py bounds
# a segment's result by them.
FILE_BYTES_PER_PX = {".mov": 0.6, ".png": 0.2, ".mp4": 0.1, ".webm": 0.1, ".exr": 0.5,
                     ".jpg": 0.2, ".jpeg": 0.2, ".gif": 0.3, ".webp": 0.25, ".apng": 0.6}
# 3D frames: a dithered sky in every PNG (0.34 measured at 1080p), and sub-pixel birds over
# a smooth sky, which every inter-frame codec holds in far less than the plate's streaks.
# Measured at 720p (3 s of the film and of flock3d.toml, the web loop's 6 s), rounded up
# from the largest: H.264 0.0025-0.0052, VP9 0.0013-0.0023, GIF 0.018-0.079, WebP
# 0.006-0.021 (APNG 0.09-0.41, under the 2D bound).
FILE_BYTES_PER_PX_3D = {**FILE_BYTES_PER_PX, ".png": 0.4, ".mp4": 0.006, ".webm": 0.003,
                        ".gif": 0.08, ".webp": 0.025}
# A frame's bytes follow its birds' edges more than its area: in a frame smaller than
# the rate's was measured at they fall as the side, not the area, so the rates above grow
# by sqrt(measured / pixels) (the plate, every pixel a streak's at 320x180: PNG 0.16,
# 0.43 and 0.91 bytes a pixel at 1080p, 640x360 and 320x180). Alpha adds to them (the
# plate, 2D: ProRes 2.5 times, EXR 1.7, PNG 1.2).
FILE_REF_PX = 1920 * 1080
FILE_REF_PX_ANIMATED = 480 * 270  # GIF, WebP and APNG: what their rates were measured at
FILE_ALPHA = {".mov": 2.5, ".exr": 1.7, ".png": 1.2, ".apng": 1.2, ".webp": 1.2}


def file_bytes_per_px(suffix: str, size: tuple[int, int], *, dimensions: int = 2,
                      transparent: bool = False) -> float:
    """Bytes a pixel of one frame at `size` px in the file `suffix` names: a bound for
    lossless and intra-only files (FILE_BYTES_PER_PX), a guess for the others."""
    rates = FILE_BYTES_PER_PX_3D if dimensions == 3 else FILE_BYTES_PER_PX
    measured = FILE_REF_PX_ANIMATED if suffix in (".gif", ".webp", ".apng") else FILE_REF_PX
    small = max(1.0, math.sqrt(measured / (size[0] * size[1])))
    return rates.get(suffix, 0) * small * (FILE_ALPHA.get(suffix, 1.0) if transparent else 1.0)


# What an inter-frame codec makes of a clip turns on what moves in it: its estimate is a
# guide, not a bound, and refusing a clip by it turned away clips 4-50x smaller than it.
# These outputs' sizes follow from their frames (lossless, intra-only or exact).
DISK_CHECKED = (".mov", ".png", ".exr", ".jpg", ".jpeg", ".apng")
# A GIF's palette is the whole clip's: ffmpeg holds every frame until the last is read
# (3.2 bytes a pixel a frame, measured at 1080p).
GIF_BYTES_PER_PX_FRAME = 3.5
# --quality web's second encoder, SVT-AV1 at preset 6 (10-bit, beside x264 at veryslow):
# about 0.7 GB more at 720p, 3.5 GB at 4K; and their time, 1.0-1.5e-7 s a pixel a frame.
WEB_BYTES = 300e6
WEB_BYTES_PER_PX = 450
WEB_S_PER_PX = 1.5e-7
# Longer than this is a typo (a dt or a duration in the wrong unit), not a render anyone
# waits for; split real work into shorter runs into a shared PNG folder (--no-overwrite).
MAX_SECONDS = 30 * 24 * 3600
# Pixels drawn around each tile of a still and cropped (see stills.render_still).
TILE_APRON = 32
# Tiles of a PNG still too large to draw whole, when --tile-size does not say: few enough
# that the per-tile work is negligible, small enough that a band of them is cheap.
DEFAULT_TILE = 2048
# 16-bit stills are drawn this many times larger a side, then averaged down.
SUPERSAMPLE = 4
# Trajectories (.npz, .usd): bytes per bird and frame. An .npz holds positions, velocities
# (d float64 each) and the bank angle (float64), streamed to disk; USD holds points and
# velocities (3 float32 each; in 3D the banked up vector too, and the bank, a third of a
# vector) in memory until the file is written (about twice that, in the layer and while
# it is written), then on disk as crate, or as text in .usda (about 38 characters a
# vector, measured). Bytes a vector:
USD_BYTES_PER_VECTOR = 24
USDC_BYTES_PER_VECTOR = 12
USDA_BYTES_PER_VECTOR = 40
# A trajectory record's digest, seed, version and their names, characters (a bound).
RECORD_CHARACTERS = 256
# .usda is for reading by eye: past this its text is slow to write and to load anywhere.
USDA_MAX_BYTES = 2e9
# cairo's PDF and SVG surfaces hold coordinates as 24.8 fixed point, which wraps around
# past 2²³ pt; half of that leaves room for the streaks that run past the page's edge.
VECTOR_MAX_PT = 2 ** 22


@dataclass(frozen=True)
class Estimate:
    """Peak memory (bytes) and wall time (s) of one render, both rough, and what its
    output takes on disk where that can be known before it is written (trajectories)."""

    bytes: float
    seconds: float
    birds: int
    pixels: int  # held in memory at once: a frame, or a tiled still's band; 0: none drawn
    per_pixel: float  # bytes per pixel held (what the frame size costs)
    per_bird: float
    tile: int | None = None  # a still drawn in tiles of this many px a side
    disk: float = 0.0  # bytes written (0: not estimated)
    settled: bool = False  # the settling left out: its state is on disk already
    disk_checked: bool = True  # `disk` follows from the frames: refused past the free space
    frames_held: bool = False  # the encoder holds every frame (a GIF's palette)
    on_disk: int = 0  # frames of a sequence already there, kept (or replaced), not added
    still: bool = False  # one frame: fewer frames would not make it smaller

    def __str__(self) -> str:
        disk = "" if not self.disk else f", {_bytes(self.disk)} on disk" \
            if self.disk_checked else f", of the order of {_bytes(self.disk)} on disk"
        kept = " (the settled flock read from its cache)" if self.settled else ""
        there = f" ({self.on_disk} frame{'s' * (self.on_disk != 1)} already there left " \
                f"out)" if self.on_disk else ""
        return f"about {_bytes(self.bytes)} of memory{disk} and " \
               f"{_duration(self.seconds)}{kept}{there}"


def simulation_costs(scene: Scene) -> tuple[float, float]:
    """(bytes per bird, seconds per bird-step) of simulating this scene's flock."""
    if scene.dimensions == 3:
        k = scene.rules.topological_count if scene.rules.neighbours == "topological" else 0
        return SIM3_BYTES_PER_BIRD + k * SIM3_BYTES_PER_NEIGHBOUR, SIM3_S_PER_BIRD_STEP
    return SIM_BYTES_PER_BIRD, SIM_S_PER_BIRD_STEP


def settling(scene: Scene) -> tuple[int, bool]:
    """(the steps flown before frame 0 that a render pays for, whether the settled state
    is on disk): a 3D flock's settled state, once kept (render.sim.settled), is read back,
    not flown again."""
    if scene.dimensions == 3 and scene.scene.settle_steps > 0:
        from .sim import settled

        if settled.path(scene).is_file():
            return 0, True
    return scene.scene.settle_steps, False


def draw_seconds(scene: Scene) -> float:
    """Seconds per bird to draw a frame of this scene: each of its motion blur's
    sub-frames draws every bird."""
    per = DRAW3_S_PER_BIRD if scene.dimensions == 3 else DRAW_S_PER_BIRD
    return per * scene.render.motion_blur


def sampled_frames(scene: Scene, first: int = 0) -> int:
    """How many of frames first .. the last the 3D diagnostics sample: each the first at
    or after a multiple of STATS3_EVERY_S (render.sim.diagnostics3d.sampled), so as many
    as the multiples after the time of the frame before `first`, up to the last's."""
    last = scene.frame_count - 1
    if last < first:
        return 0
    per_frame = 1 / (Fraction(scene.output.fps) * Fraction(STATS3_EVERY_S))
    return math.floor(last * per_frame) - math.floor((first - 1) * per_frame)


def pool_bytes_per_px(scene: Scene, exr: bool, threads: int | None = None) -> float:
    """What the drawing threads' canvases hold a pixel beyond the one CANVAS_BYTES_PER_PX
    counts: 2·threads + 1 canvases (the frames in flight, `drawing.DrawingPool`), each
    its BGRA bytes, a 3D OpenEXR frame's float image and a transparent 3D frame's
    straight colours (`threads`: the drawing threads, by default as many as a render
    takes)."""
    threads = drawing_threads() if threads is None else threads
    each = 4 + (FLOAT_BYTES_PER_PX if exr and scene.dimensions == 3 else 0) + \
        (STRAIGHT_BYTES_PER_PX if keeps_straight(scene) else 0)
    return (2 * threads + 1) * each - 4


def estimate(scene: Scene, output: str | None, first: int = 0, *,
             stats: bool = False, web: bool = False, on_disk: int = 0,
             threads: int | None = None) -> Estimate:
    """Cost of rendering frames first .. the last of `scene` to `output` (None: simulate
    only, as for --stats): the flock is simulated from the start, only those frames are
    drawn and written; `stats`: each frame's diagnostics measured too (--stats, --plot);
    `web`: `output` names a web page's files (--quality web: two encoders); `on_disk`:
    frames of a sequence already there that the render keeps (--resume, --no-overwrite),
    neither drawn nor adding to the disk; `threads`: the drawing threads (see
    `pool_bytes_per_px`)."""
    birds = scene.count
    # Steps: the settling, then up to the last frame's time (float: may be astronomical).
    flown = float(scene.frame_count / scene.output.fps) / scene.scene.dt + 1
    if scene.output.loop:
        flown *= LOOP_FLIGHTS
    settle, kept = settling(scene)
    steps = settle + flown
    frames = max(0, scene.frame_count - first)
    per_bird, per_step = simulation_costs(scene)
    per_pixel = 0.0
    seconds = BASE_SECONDS + steps * birds * per_step
    if stats:
        seconds += frames * birds * STATS_S_PER_BIRD
        if scene.dimensions == 3:
            seconds += sampled_frames(scene, first) * birds * STATS3_S_PER_BIRD
            per_bird += STATS3_BYTES_PER_BIRD
    pixels = disk = held = 0  # held: what an encoder keeps whatever the frame size
    frames_held = disk_checked = False
    if output is not None and is_state_output(output):
        return replace(trajectory_estimate(scene, output, seconds, frames), settled=kept)
    if output is not None:
        suffix = _suffix(output)
        video = suffix in VIDEO_SUFFIXES
        exr = suffix == ".exr"
        width, height = scene.output.size
        pixels = width * height
        per_bird += DRAW_BYTES_PER_BIRD
        per_pixel = CANVAS_BYTES_PER_PX + (VIDEO_BYTES_PER_PX if video else 0) + \
            (EXR_BYTES_PER_PX if exr else 0) + pool_bytes_per_px(scene, exr, threads)
        encoding = MOV_S_PER_PX if suffix == ".mov" else VIDEO_S_PER_PX if video else \
            PNG3_S_PER_PX if suffix == ".png" and scene.dimensions == 3 else DRAW_S_PER_PX
        drawn = frames - on_disk
        subframes = scene.render.motion_blur - 1 if scene.dimensions == 3 else 0
        seconds += drawn * (birds * draw_seconds(scene)
                             + pixels * encoding
                             + pixels * subframes * SUBFRAME3_S_PER_PX
                             + pixels * (EXR_S_PER_PX if exr else 0)
                             + pixels * (WEB_S_PER_PX if web else 0))
        disk = drawn * pixels * file_bytes_per_px(suffix, scene.output.size,
                                                  dimensions=scene.dimensions,
                                                  transparent=scene.output.transparent)
        disk_checked = suffix in DISK_CHECKED
        frames_held = suffix == ".gif"
        if frames_held:
            per_pixel += frames * GIF_BYTES_PER_PX_FRAME
        if web:
            per_pixel += WEB_BYTES_PER_PX
            held = WEB_BYTES
    return Estimate(BASE_BYTES + held + birds * per_bird + pixels * per_pixel, seconds,
                    birds, pixels, per_pixel, per_bird, disk=disk, settled=kept,
                    frames_held=frames_held, disk_checked=disk_checked, on_disk=on_disk)


def sheet_estimate(scene: Scene, thumbs: int, thumb_pixels: int,
                   sheet_pixels: int) -> Estimate:
    """Cost of a contact sheet: the whole clip simulated (its last frame is the last
    thumbnail), `thumbs` thumbnails of `thumb_pixels` drawn, the sheet of `sheet_pixels`
    written as a PNG."""
    sim = estimate(scene, None)
    per_bird = sim.per_bird + DRAW_BYTES_PER_BIRD
    pixels = thumb_pixels + sheet_pixels
    seconds = sim.seconds + thumbs * (scene.count * draw_seconds(scene)
                                      + thumb_pixels * DRAW_S_PER_PX) \
        + sheet_pixels * DRAW_S_PER_PX
    return Estimate(BASE_BYTES + scene.count * per_bird + pixels * CANVAS_BYTES_PER_PX,
                    seconds, scene.count, pixels, CANVAS_BYTES_PER_PX, per_bird,
                    settled=sim.settled)


def _suffix(output: str) -> str:
    """The format an output names: its suffix, or ".png" for a folder ending in "/"."""
    return ".png" if output.endswith(("/", os.sep)) else Path(output).suffix.lower()


def trajectory_estimate(scene: Scene, output: str, seconds: float,
                        frames: int) -> Estimate:
    """Cost of writing `frames` frames of `scene`'s trajectories to `output` (.npz, .usd,
    .usda, .usdc) on top of simulating it (`seconds`): nothing is drawn."""
    birds = scene.count
    per_bird = simulation_costs(scene)[0]
    d = scene.dimensions
    suffix = Path(output).suffix.lower()
    # The record of the scene (numpy's text: 4 bytes a character), its digest, seed and
    # version (`encode.still.trajectory_record`).
    record = len(camera_placed(scene).to_toml()) + RECORD_CHARACTERS
    if suffix == ".npz":
        landing = scene.roost is not None and scene.roost.landing_at is not None
        disk = frames * (birds * (2 * d + 1) * 8 + 8 + ((2 * d + 1) * 8 if scene.hawk else 0)
                         + (1 if scene.hawk and scene.hawk.mode == "hunt" else 0)
                         + (birds if landing else 0)) + birds * 9 + 4 * record
    else:
        # 3D: points, velocities, up (three floats each) and bank; a wing beat's angle
        beating = d == 3 and scene.bird.wingbeat > 0 and scene.bird.stroke > 0
        vectors = 2 if d == 2 else (11 if beating else 10) / 3
        per_bird += frames * vectors * USD_BYTES_PER_VECTOR
        per = USDA_BYTES_PER_VECTOR if suffix == ".usda" else USDC_BYTES_PER_VECTOR
        disk = frames * birds * vectors * per + record
    return Estimate(BASE_BYTES + birds * per_bird, seconds, birds, 0, 0.0, per_bird,
                    disk=float(disk))


def still_estimate(scene: Scene, time: float, *, tile: int | None = None,
                   supersample: int = 1, vector: bool = False, exr: bool = False,
                   suffix: str = ".png") -> Estimate:
    """Cost of one still at `time` s: drawn whole (`supersample` times larger a side, then
    averaged down, 16 bits a channel; `exr`: then linearised and compressed), in tiles of
    `tile` px streamed into the PNG a band of rows at a time (so memory holds one band and
    one tile, whatever the still's size), or as vectors; its file's size on disk by its
    `suffix` (a vector page's is not estimated)."""
    birds = scene.count
    settle, kept = settling(scene)
    steps = settle + time / scene.scene.dt + 1
    width, height = scene.output.size
    drawn = width * height * supersample ** 2
    per_pixel = CANVAS_BYTES_PER_PX + (SUPERSAMPLE_BYTES_PER_PX / supersample ** 2
                                       if supersample > 1 else 0) + \
        (EXR_BYTES_PER_PX + (FLOAT_BYTES_PER_PX if scene.dimensions == 3 else 0)
         if exr else 0) + \
        (STRAIGHT_BYTES_PER_PX if keeps_straight(scene) and not vector else 0)
    if vector:
        pixels, per_pixel = 0, 0.0
    elif tile:
        pixels = min(tile, height) * (width + min(tile, width))
    else:
        pixels = drawn
    sim_bytes, per_step = simulation_costs(scene)
    seconds = BASE_SECONDS + steps * birds * per_step + birds * draw_seconds(scene) + \
        (0 if vector else drawn * DRAW_S_PER_PX) + (drawn * EXR_S_PER_PX if exr else 0)
    per_bird = sim_bytes + DRAW_BYTES_PER_BIRD
    disk = 0.0 if vector else width * height * (2 if supersample > 1 else 1) * \
        file_bytes_per_px(suffix, scene.output.size, dimensions=scene.dimensions,
                          transparent=scene.output.transparent)
    return Estimate(BASE_BYTES + birds * per_bird + pixels * per_pixel, seconds, birds,
                    pixels, per_pixel, per_bird, tile, disk=disk, settled=kept, still=True)


def still_cost(scene: Scene, output: str | Path, time: Fraction | float, *, dpi: float,
               bit_depth: int = 8, tile_size: int | None = None) -> Estimate:
    """What `stills.render_still` will spend on this still, and how it will draw it: in
    tiles of `.tile` px, or whole when that is None. UsageError when the still cannot be
    drawn or does not fit the budget. Without `tile_size`, a PNG still too large for one
    cairo surface, or for memory whole, is drawn in DEFAULT_TILE tiles (the same pixels)."""
    where, time = str(output), float(time)
    if Path(output).suffix.lower() in (".pdf", ".svg"):
        require_size(scene, where, VECTOR_MAX_PT * dpi / 72,
                     f"a PDF or SVG page at {dpi:g} dpi (cairo's vector coordinates reach "
                     f"{VECTOR_MAX_PT} pt)", "a higher --dpi makes the page smaller; a PNG "
                     "still has no such limit")
        return check(scene, where, still_estimate(scene, time, vector=True))
    whole = []  # why the still is drawn whole: (largest side, what, what to do instead)
    suffix = Path(output).suffix.lower()
    if suffix in (".jpg", ".jpeg", ".exr"):
        whole.append((IMAGE_MAX_SIDE, f"a {'JPEG' if suffix != '.exr' else 'OpenEXR'} "
                      f"still (drawn whole)", "a PNG still is drawn in tiles at any size"))
    if bit_depth == 16:
        whole.append((IMAGE_MAX_SIDE // 2, "a 16-bit still (drawn 2 to 4 times larger a "
                      "side, whole)", "an 8-bit still is drawn in tiles at any size"))
    if scene.output.transparent:
        whole.append((IMAGE_MAX_SIDE, "a transparent still (output.transparent: drawn "
                      "whole)", "an opaque still is drawn in tiles at any size"))
    if scene.render.motion_blur > 1:
        whole.append((IMAGE_MAX_SIDE, "a still with motion blur (render.motion_blur > 1: "
                      "drawn whole)", "without it a still is drawn in tiles at any size"))
    if whole:
        if tile_size is not None:
            raise UsageError(f"{option('--tile-size')} draws opaque 8-bit stills without "
                             f"motion blur, and this is {whole[0][1]}: drop "
                             f"{option('--tile-size')}")
        for limit, what, instead in whole:
            require_size(scene, where, limit, what, instead, dpi=dpi)
        k = supersample_factor(scene.output.size) if bit_depth == 16 else 1
        return check(scene, where, still_estimate(scene, time, supersample=k,
                                                  exr=suffix == ".exr", suffix=suffix))
    if tile_size is None:
        cost = still_estimate(scene, time, suffix=suffix)
        if max(scene.output.size) <= IMAGE_MAX_SIDE and fits(cost):
            return check(scene, where, cost)  # the time budget
        tile_size = DEFAULT_TILE
    largest = IMAGE_MAX_SIDE - 2 * TILE_APRON
    if min(tile_size, max(scene.output.size)) > largest:
        raise UsageError(f"{option('--tile-size', tile_size)}: expected at most {largest} "
                         f"(each tile and its {TILE_APRON}-px apron are one cairo surface, at "
                         f"most {IMAGE_MAX_SIDE} px a side)")
    return check(scene, where, still_estimate(scene, time, tile=tile_size, suffix=suffix))


def supersample_factor(size: tuple[int, int]) -> int:
    """How many times larger a side a 16-bit still of `size` px is drawn: SUPERSAMPLE, or
    less where that would pass cairo's limit (1: not even twice)."""
    k = SUPERSAMPLE
    while k > 1 and max(size) * k > IMAGE_MAX_SIDE:
        k -= 1
    return k


def fits(cost: Estimate) -> bool:
    """Whether `cost` fits in the memory available now."""
    memory = available_memory()
    return memory is None or cost.bytes <= memory


def require_size(scene: Scene, where: str, limit: float, what: str, instead: str, *,
                 even: bool = False, least: int = 1, dpi: float | None = None) -> None:
    """UsageError unless both sides of the frame are at most `limit` px, for `what`; the
    message gives the largest frame at the same aspect (`even`: sides a clip's 4:2:0 video
    takes; `least`: the shortest side the output takes), or, for a sheet sized by --paper
    at `dpi`, the largest --dpi, and what to do `instead`."""
    width, height = scene.output.size
    if max(width, height) <= limit:
        return
    scale = limit / max(width, height)
    step = 2 if even else 1
    most = int(limit) // step * step
    # The short side rounded, not floored: 16386x16 fits as 16384x16, not 16384x14.
    fit = "x".join(str(min(most, max(least, step, round(side * scale / step) * step)))
                   for side in (width, height))
    largest = f"at this aspect the largest is {fit}"
    if dpi is not None and dict(scene.sources).get("output.size", "").startswith("--paper"):
        largest = f"on this sheet the most is {option('--dpi', math.floor(dpi * scale))}"
    raise UsageError(f"{where}: output.size: expected each side ≤ {int(limit)} px for "
                     f"{what}, got {width}x{height}: {largest}; {instead}")


def check(scene: Scene, output: str | None, cost: Estimate | None = None, *,
          first: int = 0, web: bool = False, on_disk: int = 0,
          threads: int | None = None) -> Estimate:
    """`cost` (by default the estimate of rendering frames first .. the last of `scene` to
    `output`, a clip or PNG sequence, whose frames must also be small enough for cairo), or
    UsageError (exit 2) saying what would fit when it does not."""
    if cost is None:
        if output is not None and not is_state_output(output):
            # An encoder's limit is the lower: checked alone, so the largest frame the
            # message offers is one this output takes.
            encoder = encoder_max_side(output, web)
            if encoder is None:
                require_size(scene, output, IMAGE_MAX_SIDE,
                             "a clip or PNG sequence (cairo draws each frame whole)",
                             f"{option('a PNG still (--still TIME -o FILE.png)')} has no "
                             f"such limit: it is drawn in tiles", even=True)
            else:
                larger = f"without {option('--quality web')}, " if web else ""
                require_size(scene, output, encoder[0], encoder[1],
                             f"{larger}.webm, .mov, .gif, .apng and frame sequences take "
                             f"up to {IMAGE_MAX_SIDE} px a side",
                             even=web or output.lower().endswith(".mp4"),
                             least=WEB_MIN_SIDE if web else 1)
        cost = estimate(scene, output, first, web=web, on_disk=on_disk, threads=threads)
    where = output or scene.path
    memory = available_memory()
    if memory is not None and cost.bytes > memory:
        raise UsageError(f"{where}: needs {cost}, but only {_bytes(memory)} of memory is "
                         f"available; {_what_fits(scene, cost, memory)}")
    if cost.seconds > MAX_SECONDS:
        raise UsageError(f"{where}: would take {_duration(cost.seconds)} (rough estimate; "
                         f"the limit is {_duration(MAX_SECONDS)}): use fewer frames "
                         f"{option('(--frames, --duration)')}, fewer birds, a larger scene.dt "
                         f"or fewer scene.settle_steps")
    if cost.disk and cost.disk_checked:
        require_disk(where, cost.disk, trajectories=is_state_output(where), still=cost.still)
    return cost


def on_local_workers(scene: Scene, cost: Estimate, workers: int) -> Estimate:
    """`cost` with the drawing and encoding done by `workers` processes of this machine
    (`--scheduler local`): each its own interpreter, frame and encoder; this process
    simulates."""
    if cost.pixels == 0:
        return cost
    worker = BASE_BYTES + scene.count * DRAW_BYTES_PER_BIRD + cost.pixels * cost.per_pixel
    # The disk was checked already; the frame's bytes are held once a worker.
    return replace(cost, bytes=cost.bytes + (workers - 1) * worker + BASE_BYTES, disk=0.0,
                   per_pixel=cost.per_pixel * workers)


def check_local_workers(scene: Scene, output: str, cost: Estimate, workers: int) -> None:
    """`check` of `cost` drawn by `workers` local worker processes (`on_local_workers`);
    when they do not fit in memory and fewer would, UsageError saying how many (a smaller
    frame or flock is the advice for one render, not for too many workers)."""
    where = f"{output} on {workers} local workers"
    total = on_local_workers(scene, cost, workers)
    memory = available_memory()
    if memory is not None and total.bytes > memory:
        fits = [w for w in range(workers - 1, 0, -1)
                if on_local_workers(scene, cost, w).bytes <= memory]
        if fits:
            raise UsageError(f"{where}: needs {total}, but only {_bytes(memory)} of memory "
                             f"is available (each worker draws and encodes in a process of "
                             f"its own); it would fit with {option('--workers', fits[0])}")
    check(scene, where, total)


def check_together(scene: Scene, outputs: list[str], costs: list[Estimate]) -> None:
    """UsageError when outputs each of which fits (`check`) do not fit together: written
    at once by one render, their encoders' memory adds up over one simulation, and their
    files over the free space of each file system they share."""
    shared = BASE_BYTES + scene.count * simulation_costs(scene)[0]
    memory = available_memory()
    total = shared + sum(cost.bytes - shared for cost in costs)
    names = ", ".join(outputs)
    if memory is not None and total > memory:
        raise UsageError(f"{names}: need about {_bytes(total)} of memory together, but only "
                         f"{_bytes(memory)} is available: render them one at a time")
    by_disk: dict[int, list[tuple[str, float]]] = {}
    for output, cost in zip(outputs, costs):
        if cost.disk and cost.disk_checked:
            by_disk.setdefault(_device(Path(output).parent), []).append((output, cost.disk))
    for files in by_disk.values():
        free = available_disk(Path(files[0][0]).parent)
        size = sum(disk for _, disk in files)
        if len(files) > 1 and free is not None and size > free:
            raise UsageError(f"{', '.join(o for o, _ in files)}: need about {_bytes(size)} "
                             f"on disk together, but only {_bytes(free)} is free there: "
                             f"write them to different disks, or one at a time")


def _device(folder: Path) -> int:
    """The file system `folder` is (or will be) on (see `_existing`)."""
    try:
        return _existing(folder).stat().st_dev
    except OSError:
        return -1


def _existing(folder: Path) -> Path:
    """`folder`, or its nearest existing ancestor: where a folder still to be made lives."""
    folder = folder.absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def require_disk(output: str, size: float, *, trajectories: bool = True,
                 still: bool = False) -> None:
    """UsageError when an output of `size` bytes cannot be written: a .usda past
    USDA_MAX_BYTES, or more than the free space where it goes (`trajectories`: the
    output's size follows the birds, else the frames' size; `still`: one frame's)."""
    if Path(output).suffix.lower() == ".usda" and size > USDA_MAX_BYTES:
        raise UsageError(f"{output}: would be about {_bytes(size)} of text (.usda is "
                         f"refused above {_bytes(USDA_MAX_BYTES)}): write binary USD, "
                         f"{Path(output).with_suffix('.usdc')}, or fewer frames or birds")
    free = available_disk(Path(output).parent)
    if free is not None and size > free:
        # A place no file can be made in (/proc reads 0 bytes free) is named as such.
        require_folder(Path(output))
        fewer = "fewer birds" if trajectories else f"a smaller frame {option('(--size)')}"
        frames = "" if still else f"fewer frames {option('(--frames, --duration)')} or "
        raise UsageError(f"{output}: needs about {_bytes(size)} on disk, but only "
                         f"{_bytes(free)} is free there: use {frames}{fewer}, or write it "
                         f"elsewhere")


def available_disk(folder: Path) -> float | None:
    """Bytes free on the file system `folder` is (or will be) on: that of its nearest
    existing ancestor. None where it cannot be read."""
    try:
        return float(shutil.disk_usage(_existing(folder)).free)
    except OSError:
        return None


def _what_fits(scene: Scene, cost: Estimate, memory: float) -> str:
    spare = memory - BASE_BYTES
    ideas = []
    if cost.tile:  # memory holds a band of tile-high rows across the still
        rows = int((spare - cost.birds * cost.per_bird) / cost.per_pixel
                   / (scene.output.size[0] + cost.tile)) // 16 * 16
        if 16 <= rows < cost.tile:
            ideas.append(option("--tile-size", rows))
    elif cost.pixels:
        room = (spare - cost.birds * cost.per_bird) / cost.per_pixel
        width, height = scene.output.size
        scale = math.sqrt(max(room, 0.0) / cost.pixels)
        if scale >= 0.01:
            ideas.append(f"a frame up to {int(width * scale) // 2 * 2}x"
                         f"{int(height * scale) // 2 * 2} {option('(--size)')}")
    birds = int((spare - cost.pixels * cost.per_pixel) / cost.per_bird)
    if birds >= 1:
        ideas.append(f"up to {birds:,} birds (flock.count, or a larger flock.spacing)")
    if cost.frames_held:
        ideas.append("fewer frames (a GIF's encoder holds every frame)")
    return "it would fit with " + " or ".join(ideas) if ideas else \
        "use a smaller frame and fewer birds"


def available_memory() -> float | None:
    """Bytes this process may still use: the smaller of the memory the kernel calls
    available and a container's limit. None where neither can be read (no check)."""
    limits = []
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    limits.append(int(line.split()[1]) * 1024)
    except OSError:
        pass
    try:  # cgroup v2: a container or a scheduler's job limit
        with open("/sys/fs/cgroup/memory.max") as fh:
            text = fh.read().strip()
        if text.isdigit():
            limits.append(int(text))
    except OSError:
        pass
    if not limits:
        try:
            limits.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return None
    return float(min(limits))


def _bytes(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.3g} bytes"


def _duration(seconds: float) -> str:
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("h", 3600),
                       ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.2g} s"
