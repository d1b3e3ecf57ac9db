"""Stills: one frame as a PNG for print (drawn whole, supersampled to 16 bits, or in tiles
streamed into the file), a PDF/SVG page, or the frame a JPEG or OpenEXR sequence holds at
that time; the raster ones record the scene they were drawn from."""

from __future__ import annotations

import itertools
import math
import os
from fractions import Fraction
from pathlib import Path

import numpy as np

from . import budget
from .draw.surface import Canvas
from .encode import STILL_SUFFIXES, keeps_straight
from .encode.files import place_or_refuse, refuse_existing
from .encode.images import FRAME_FORMATS, encode_jpeg, encode_png, usable
from .encode.still import provenance
from .errors import UsageError, option
from .options import seconds
from .scene import Scene
from .scene.schema3d import camera_placed
from .sim.simulate import frames
from .states import FrameState, exposure, require_finite, simulated, simulation


STILLS = STILL_SUFFIXES
VECTOR = (".pdf", ".svg")
# A JPEG records its resolution as a 16-bit whole number of dpi.
JPEG_DPI = (1, 65535)


def require_still_output(output: str | Path, *, transparent: bool, bit_depth: int = 8,
                         tile_size: int | None = None, dpi: float | None = None,
                         overwrite: bool = True, redrawn: bool = False) -> None:
    """UsageError unless `output` names a still these options apply to, that can be
    written there (`refuse_existing`). `redrawn`: a still --from draws again."""
    suffix = Path(output).suffix.lower()
    if Path(output).is_dir():
        raise UsageError(f"{output}: is a folder; a still is one file: give its name, "
                         f"e.g. {Path(output) / 'still.png'}")
    if suffix not in STILLS or str(output).endswith(("/", os.sep)):
        from .encode import VIDEO_SUFFIXES

        instead = "--from draws a still again" if redrawn else f"drop {option('--still')}"
        clip = f" ({suffix} is a clip's: {instead})" if suffix in VIDEO_SUFFIXES else ""
        raise UsageError(f"{output}: a still is one file written as PNG, JPEG, OpenEXR, PDF "
                         f"or SVG: expected a name ending in {', '.join(STILLS)}{clip}")
    if suffix in (".jpg", ".jpeg") and dpi is not None and \
            (dpi != round(dpi) or not JPEG_DPI[0] <= dpi <= JPEG_DPI[1]):
        lo, hi = (min(max(f(dpi), JPEG_DPI[0]), JPEG_DPI[1]) for f in (math.floor, math.ceil))
        nearest = f": {option('--dpi', lo)}" + (f" or {hi}" if hi != lo else "")
        raise UsageError(f"{output}: {option('--dpi', f'{dpi:g}')}: a JPEG records its "
                         f"resolution as a whole number of dpi from {JPEG_DPI[0]} to "
                         f"{JPEG_DPI[1]}{nearest}")
    if suffix == ".png" and dpi is not None and round(dpi / 0.0254) < 1:
        raise UsageError(f"{output}: {option('--dpi', f'{dpi:g}')}: a PNG records its "
                         f"resolution in whole pixels a metre: expected at least 0.0127 dpi "
                         f"(1 px a metre)")
    if bit_depth == 16 and suffix != ".png":
        raise UsageError(f"{option('--bit-depth', 16)} applies to PNG stills")
    if tile_size is not None and suffix != ".png":
        raise UsageError(f"{option('--tile-size')} applies to PNG stills; the others are "
                         f"drawn whole")
    if suffix in FRAME_FORMATS:
        usable(FRAME_FORMATS[suffix], output, transparent,
               "a transparent still needs .png, .exr, .pdf or .svg")
    refuse_existing(Path(output), overwrite)


def still_path(output: str | Path, scene: Scene, time: Fraction) -> str | Path:
    """`output`, a %0Nd pattern in its name filled with the number of the frame shown at
    `time` (so a still lands in a sequence's folder under its frame's name, not as
    "f_%04d.png"); UsageError for a time between two frames."""
    from .encode.images import is_sequence, numbered

    if not is_sequence(Path(output).name):  # "50%.png" is a name, not a pattern
        return output
    index = Fraction(time) * scene.output.fps
    if index.denominator != 1:
        below = index.numerator // index.denominator
        raise UsageError(f"{output}: names a frame of a sequence, but {float(time):g} s "
                         f"falls between frames {below} and {below + 1} at "
                         f"{scene.output.fps} fps: expected a frame's time, e.g. "
                         f"{option('--still', f'frame:{below}')}")
    return numbered(str(output), int(index))


def render_still(scene: Scene, output: str | Path, time: Fraction, *, dpi: float,
                 overwrite: bool = True, bit_depth: int = 8,
                 tile_size: int | None = None, quiet: bool = True) -> None:
    """One frame at `time` (seconds, exact) as a PNG, JPEG or OpenEXR still that records
    the resolved scene, or as a vector PDF/SVG page of the same picture.

    It is the frame a sequence of the same scene, size and format shows at that time,
    pixel for pixel: the same sampling of the simulation and the same drawing. A PNG still
    larger than cairo can draw at once, or than memory holds, is drawn in tiles (the same
    pixels).
    Unless `quiet`, a first run's kernel compilation is announced (see `states.simulation`).
    """
    from . import __version__

    output = Path(output)
    # Everything that can refuse the still does so before the flock is simulated.
    require_still_output(output, transparent=scene.output.transparent, bit_depth=bit_depth,
                         tile_size=tile_size, dpi=dpi, overwrite=overwrite)
    tile_size = budget.still_cost(scene, output, time, dpi=dpi, bit_depth=bit_depth,
                                  tile_size=tile_size).tile
    # Only the birds drawn, for every way of drawing the still below.
    still = state_at(scene, time, quiet=quiet).visible(scene)
    text = provenance(camera_placed(scene).to_toml(), scene.scene.seed, time, __version__)
    suffix = output.suffix.lower()
    if suffix in VECTOR:
        title = f"{scene.scene.name}, seed {scene.scene.seed}, t = {seconds(time)} s"
        place_or_refuse(output, lambda tmp: _vector_still(scene, still, tmp, dpi=dpi,
                                                          title=title), overwrite=overwrite)
        return
    if tile_size is not None:
        place_or_refuse(output, lambda tmp: _tiled_still(scene, still, tile_size, tmp,
                                                         dpi=dpi, text=text, quiet=quiet,
                                                         label=output.name),
                        overwrite=overwrite)
        return
    if suffix == ".png":
        pixels = _supersampled(scene, still) if bit_depth == 16 else \
            still.draw(Canvas(scene.output.size, straight=keeps_straight(scene)), scene)
        data = encode_png(pixels, dpi=dpi, text=text)
    elif suffix == ".exr":
        from .encode.exr import encode_exr

        data = encode_exr(still.draw(Canvas(scene.output.size, linear=scene.dimensions == 3),
                                     scene), text, fps=scene.output.fps, dpi=dpi)
    else:
        data = encode_jpeg(still.draw(Canvas(scene.output.size), scene), dpi, text)
    place_or_refuse(output, lambda tmp: tmp.write_bytes(data), overwrite=overwrite)


def state_at(scene: Scene, time: Fraction, *, quiet: bool = True) -> FrameState:
    """The flock at `time` s, sampled as a clip's frame at that time would be (a loop's:
    its frame at that time, which starts at t₀ and morphs, `states.simulated`)."""
    if scene.output.loop:
        return _loop_state(scene, time, quiet=quiet)
    sim = simulation(scene, quiet=quiet)
    # Frame 1 at 1/time frames per second is sampled at exactly `time`.
    fps, index = (1 / time, 1) if time > 0 else (Fraction(1), 0)
    # The shutter opens at `time` for the same span of the scene's frame interval.
    blur = exposure(scene)
    blur["shutter"] *= fps / scene.output.fps
    frame = next(frames(sim, fps, 1, first=index, **blur, progress=not quiet))
    require_finite(frame)
    return FrameState.of(frame, sim.accent, scene)


def _loop_state(scene: Scene, time: Fraction, *, quiet: bool) -> FrameState:
    """The loop's frame at `time`: a frame time of the clip (the morph exists only there)."""
    index = time * scene.output.fps
    if index.denominator != 1 or not 0 <= index < scene.frame_count:
        fps, last = scene.output.fps, scene.frame_count - 1
        near = min(max(round(index), 0), last)
        raise UsageError(f"{option('--still', f'{float(time):g}')}: a loop's still is one "
                         f"of its frames, at a multiple of 1/{fps} s from 0 to "
                         f"{float(last / fps):g} s (frames 0 to {last}); the nearest is "
                         f"frame {near}: {_nearest(near, fps)}")
    states = simulated(scene, 0, scene.frame_count, quiet=quiet)
    return next(itertools.islice(states, int(index), None))


def _nearest(frame: int, fps) -> str:
    """The still of `frame` as its caller asks for one: --still frame:N on the command
    line, t=seconds from the API (whose t takes no frame:N)."""
    cli = option("--still") == "--still"
    return option("--still", f"frame:{frame}" if cli else frame / fps)


def _vector_still(scene: Scene, still: FrameState, path: Path, *, dpi: float,
                  title: str) -> None:
    """The still as a PDF/SVG page: 2D streak outlines, or 3D depth-sorted streaks over
    a vector sky."""
    sized = dict(scene.sources).get("output.size", "")
    paper = sized.split()[1] if sized.startswith("--paper ") else None  # the sheet's own
    if still.pose is not None:
        from .draw3d.frame import hawk_drawn, write_vector3d

        write_vector3d(path, scene, still.pose, still.positions, still.velocities,
                       still.bank, still.accent, hawk_drawn(scene, still), still.flap,
                       dpi=dpi, title=title, paper=paper)
        return
    from .draw.vector import write_vector

    write_vector(path, scene, scene.output.size, dpi, *still.drawn(), view=still.view,
                 title=title, paper=paper)


def _tiled_still(scene: Scene, still: FrameState, tile: int, path: Path, *, dpi: float,
                 text: dict[str, str], quiet: bool = True, label: str = "still") -> None:
    """Draw the still tile by tile and stream it into the PNG at `path` a band of rows at a
    time: memory holds one band, whatever the poster's size. Tiles are whole-pixel windows
    onto the same streaks, so the result equals the untiled drawing (tested); each tile
    gets only the streaks that reach it, so a tile costs what it shows. A bar counts the
    tiles unless `quiet` (a poster takes tens of seconds)."""
    from .encode.still import PngStream
    from .progress import progress_bar

    width, height = scene.output.size
    window = _windows3d(scene, still) if still.pose is not None else _windows2d(scene, still)
    png = PngStream(path, width, height, dpi=dpi, text=text)
    tiles = -(-width // tile) * -(-height // tile)
    with progress_bar(total=tiles, unit="tile", disable=quiet, desc=label) as bar:
        for y0 in range(0, height, tile):
            rows = min(tile, height - y0)
            band = np.empty((rows, width, 3), np.uint8)
            for x0 in range(0, width, tile):
                cols = min(tile, width - x0)
                band[:, x0:x0 + cols] = window(x0, y0, cols, rows)[:, :, 2::-1]
                bar.update()
            png.write_rows(band)
    png.close()


def _windows2d(scene: Scene, still: FrameState):
    """(x, y, w, h) → that window of the 2D still, (h, w, 4) BGRA."""
    from .draw.streaks import crop_paths, fill_frame, frame_paths

    width, height = scene.output.size
    paths = frame_paths(scene, scene.output.size, *still.drawn(), view=still.view)
    # cairo rasterises a streak cut by the surface's border a shade differently from one
    # that runs on (a near-level edge moves by a sample row): each tile's surface reaches
    # past the tile to hold whole every streak that colours the tile, and is cropped,
    # except past the frame's own border, where the whole frame's surface cuts them too.
    def window(x0: int, y0: int, cols: int, rows: int) -> np.ndarray:
        in_tile = crop_paths(crop_paths(paths, y=(y0, y0 + rows)), x=(x0, x0 + cols))
        left, top, right, bottom = _aprons(in_tile.boxes, x0, y0, cols, rows,
                                           width, height)
        pixels = fill_frame(Canvas((left + cols + right, top + rows + bottom)), in_tile,
                            origin=(x0 - left, y0 - top))
        return pixels[top:top + rows, left:left + cols]

    return window


def _aprons(boxes: np.ndarray, x0: int, y0: int, cols: int, rows: int, width: int,
            height: int) -> tuple[int, int, int, int]:
    """How far (left, top, right, bottom, px) a tile's surface reaches past the tile: at
    least budget.TILE_APRON, out to the streaks' `boxes` and a pixel of antialiasing, no
    farther than the frame's border, and within cairo's largest surface."""
    most = (budget.IMAGE_MAX_SIDE - max(cols, rows)) // 2
    reach = np.full(4, budget.TILE_APRON, np.int64)
    if len(boxes):
        low, high = boxes[:, :2].min(axis=0), boxes[:, 2:].max(axis=0)
        past = (x0 - low[0], y0 - low[1], high[0] - (x0 + cols), high[1] - (y0 + rows))
        reach = np.maximum(reach, np.ceil(np.asarray(past)).astype(np.int64) + 1)
    reach = np.minimum(reach, most)
    return (min(int(reach[0]), x0), min(int(reach[1]), y0),
            min(int(reach[2]), width - x0 - cols), min(int(reach[3]), height - y0 - rows))


def _windows3d(scene: Scene, still: FrameState):
    """(x, y, w, h) → that window of the 3D still, (h, w, 4) BGRA: the streaks projected
    once for the whole frame, each window composited on its own (no apron needed: the
    compositor's pixels do not depend on the window)."""
    from .draw3d.frame import composed, exposures, hawk_drawn

    layers = exposures(scene, still.pose, still.exposure or ((still.positions,
                                                              still.velocities),),
                       still.bank, still.accent, hawk_drawn(scene, still), still.flap,
                       still.poses)
    return lambda x0, y0, cols, rows: composed(scene, still.pose, layers,
                                               (x0, y0, cols, rows), poses=still.poses)


def _supersampled(scene: Scene, still: FrameState) -> np.ndarray:
    """The still drawn `budget.supersample_factor` times larger (the same picture: widths
    are in world units) and averaged down in floating point: (h, w, 3) uint16 RGB, or RGBA
    with straight alpha for a transparent still, with levels between the 256 of one 8-bit
    drawing."""
    width, height = scene.output.size
    k = budget.supersample_factor(scene.output.size)  # ≥ 2: still_cost checked the size
    big = Canvas((width * k, height * k), straight=keeps_straight(scene))
    pixels = still.draw(big, scene)
    # cairo's colour is premultiplied by alpha: average it as it is, then divide.
    bgra = pixels.reshape(height, k, width, k, 4).mean(axis=(1, 3), dtype=np.float64)
    rgb = bgra[:, :, 2::-1]
    if big.straight is not None:  # the straight colours, weighted by their alpha
        alpha = pixels[:, :, 3:].astype(np.float64)
        tinted = (big.straight * alpha).reshape(height, k, width, k, 3).sum(axis=(1, 3))
        weight = alpha.reshape(height, k, width, k, 1).sum(axis=(1, 3))
        colour = np.divide(tinted, weight, out=np.zeros_like(tinted), where=weight > 0)
        rgb = np.concatenate([colour[:, :, ::-1], bgra[:, :, 3:]], axis=2)
    elif scene.output.transparent:
        alpha = bgra[:, :, 3:]
        rgb = np.divide(rgb * 255.0, alpha, out=np.zeros_like(rgb), where=alpha > 0)
        rgb = np.concatenate([np.minimum(rgb, 255.0), alpha], axis=2)
    return np.rint(rgb * 257.0).astype(np.uint16)
