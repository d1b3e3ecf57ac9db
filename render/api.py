"""The Python API, for notebooks and scripts: load a scene, simulate it, draw a frame,
render files. The command line goes through these same functions (cli.py); docs/api.md
shows them at work.

Nothing heavy loads with `import render`: numpy, numba and cairo are imported by the
function that first needs them. Errors are the command line's: `SceneError` for a scene
or an override (its `problems`, one line each), `UsageError` for a request that cannot be
honoured, both `render.errors.BoidsError`s; a keyword that does not exist is a TypeError.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import SceneError, UsageError, api_names, caused_by_interrupt

if TYPE_CHECKING:
    import numpy as np

    from .scene import Scene
    from .states import FrameState

__all__ = ["State", "frame", "load_scene", "render", "simulate"]


def _keywords(**renamed: str):
    """The function's errors name the options it took as its keywords (dpi=0.1, not
    --dpi 0.1; `renamed`: its own names, see `errors.api_names`), unless the command line
    called it; Ctrl-C is a KeyboardInterrupt (`_interruptible`)."""
    def wrap(fn):
        @functools.wraps(fn)
        def named(*args, **kwargs):
            with api_names(**renamed), _interruptible():
                return fn(*args, **kwargs)
        return named
    return wrap


@contextlib.contextmanager
def _interruptible():
    """Ctrl-C that lands while a numba kernel runs surfaces as a SystemError whose cause
    is the KeyboardInterrupt (`errors.caused_by_interrupt`): raised as what it is, so a
    notebook's `except KeyboardInterrupt` catches it."""
    try:
        yield
    except Exception as exc:
        if caused_by_interrupt(exc):
            raise KeyboardInterrupt from exc
        raise


def load_scene(path: str | Path, overrides: Mapping[str, Any] | None = None) -> Scene:
    """The scene in the TOML file at `path`, with `overrides` applied, validated at once.

    overrides: {"section.key": value}, each value a Python value (2000, True, "dark",
    (1280, 720), Fraction(24000, 1001) for a frame rate) or a TOML string as `--set` takes
    it ("2000", '"1280x720"'; a bare word, and any scene.name, is a string). They win over
    the file, as the command line's options do. The command line passes (key, raw value,
    source) triples, the source naming the option in errors.
    Raises SceneError listing every problem found.
    """
    from .scene import load_scene as load

    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path: expected the path of a scene file (str or Path), got "
                        f"{path!r}")
    return load(path, _labelled(overrides))


def _labelled(overrides) -> list[tuple[str, Any, str]]:
    """Overrides as the (key, value, source) triples scene.load_scene takes."""
    if overrides is None:
        return []
    if not isinstance(overrides, Mapping):
        try:
            triples = list(overrides)  # the command line's
        except TypeError:
            triples = [None]
        if not all(isinstance(t, tuple) and len(t) == 3 for t in triples):
            raise TypeError(f"overrides: expected a mapping {{\"section.key\": value}}, "
                            f"got {type(overrides).__name__}")
        return triples
    out = []
    for key, value in overrides.items():
        if not isinstance(key, str) or "." not in key:
            raise SceneError([f"overrides: {key!r}: expected a key section.key, e.g. "
                              f"\"flock.count\""])
        if isinstance(value, Fraction) and key == "output.fps":  # exact: "24000/1001"
            value = f'"{value}"'
        elif isinstance(value, (Fraction, Decimal)):  # any other number as TOML holds it
            number = float(value)
            value = int(number) if number.is_integer() else number
        out.append((key, _plain(value), "overrides"))
    return out


def _plain(value):
    """A Python value as TOML would hold it: tuples (a size (w, h), keyframes) and numpy
    arrays as lists, numpy numbers as Python's."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if type(value).__module__ == "numpy":  # without importing numpy for plain values
        if value.ndim:
            return [_plain(v) for v in value]
        if value.dtype.kind == "f" and value.dtype.itemsize < 8:
            # The decimal a float32 stands for: np.float32(2.1) means 2.1, where its
            # float64 value, 2.0999999046325684, would show in --check and the metadata.
            return float(str(value))
        return value.item()
    return value


def _require_scene(scene) -> None:
    """TypeError unless `scene` is a Scene (a path is the usual slip)."""
    from .scene import Scene

    if not isinstance(scene, Scene):
        hint = f": load it first, render.load_scene({str(scene)!r})" \
            if isinstance(scene, (str, Path)) else ""
        raise TypeError(f"scene: expected a Scene, got {type(scene).__name__}{hint}")


def _rebuilt(scene: Scene, overrides: list[tuple[str, Any, str]]) -> Scene:
    """`scene` with more overrides, validated as a scene file's would be. What the
    scene's own overrides set is given again as theirs, so it keeps its precedence (an
    excerpt's duration over the file's landing, scene.checks3d)."""
    import tomllib

    from .scene import build_scene

    body = scene.to_dict()
    again = []
    for key, label in scene.sources:
        section, _, name = key.partition(".")
        if label not in ("default", "scene file") and name in body.get(section, {}):
            value = body[section][name]
            # A string goes in quoted: unquoted, "123" or "true" would be read as TOML's.
            again.append((key, json.dumps(value) if isinstance(value, str) else value, label))
    return build_scene(tomllib.loads(scene.to_toml()), scene.path, again + overrides)


@dataclass(frozen=True)
class State:
    """The flock at one frame, its fields named like the members of an .npz export
    (docs/outputs.md). Arrays are the frame's own (not reused by the next frame).

    index: the frame. time: its time, s (index / fps). positions, velocities: (n, d)
    float64, world units and units per second, d = 2 or 3; row i is always bird i.
    bank: (n,) float64 radians (0 in level flight: the 2D model). accent: (n,) bool, the
    accent birds. hawk: (d,) float64 where the hawk is, None while it is not out;
    hawk_velocity: (d,) float64, its flight over the step the frame falls in, None unless it
    is out over the whole step; hawk_bank: its bank, radians (0 in 2D), None while it is
    not out.
    neighbours: (n,) int64, each bird's neighbours: those within the perception radius
    (metric), or the k nearest it sees, fewer only within a max_range (topological).
    attack: whether a hunting hawk's attack is on (False without one). landed: (n,) bool,
    the birds down in the roost, None in a scene without a landing.
    """

    index: int
    time: float
    positions: np.ndarray
    velocities: np.ndarray
    bank: np.ndarray
    accent: np.ndarray
    hawk: np.ndarray | None
    neighbours: np.ndarray
    attack: bool
    landed: np.ndarray | None
    hawk_velocity: np.ndarray | None = None
    hawk_bank: float | None = None

    @property
    def ids(self) -> np.ndarray:
        """(n,) int64: the bird of each row, 0 .. n−1 (as the .npz's `ids`)."""
        import numpy as np

        return np.arange(len(self.positions), dtype=np.int64)

    @classmethod
    def of(cls, state: FrameState) -> State:
        """The API's view of the renderer's `states.FrameState`."""
        import numpy as np

        n = len(state.positions)
        out = state.hawk is not None
        flown = out and state.hawk_velocity is not None
        # The accent mask is the flock's, shared by every frame: each state gets its own.
        return cls(state.index, float(state.time), state.positions, state.velocities,
                   np.zeros(n) if state.bank is None else state.bank,
                   np.array(state.accent, dtype=bool),
                   np.asarray(state.hawk, dtype=np.float64) if out else None,
                   state.neighbours, bool(state.attack), state.landed,
                   np.asarray(state.hawk_velocity, dtype=np.float64) if flown else None,
                   float(state.hawk_bank) if out else None)


@_keywords()
def simulate(scene: Scene, frames: int | tuple[int, int] | None = None, *,
             quiet: bool = False) -> Iterator[State]:
    """The flock's `State` at each frame of the clip, in order, as a render draws them.

    frames: None, the scene's whole clip; n, frames 0 .. n−1; (a, b), frames a .. b−1 of a
    clip of b frames (the same states a whole render has there: the flock is simulated
    from the start). A loop scene's clip is the loop: n frames are a loop of n frames.
    The flock is seeded and settled when this is called; each state is simulated as it is
    asked for. quiet: no progress bars (settling, a loop's search) and no first-run note.
    """
    from .states import simulated

    _require_scene(scene)
    scene, first = _clip(scene, frames)
    states = simulated(scene, first, scene.frame_count - first,
                       quiet=_switch("quiet", quiet))
    return _states(states)


def _states(states) -> Iterator[State]:
    with _interruptible():
        for state in states:
            yield State.of(state)


def _clip(scene: Scene, frames) -> tuple[Scene, int]:
    """(the scene of a clip `frames` describe, its first frame); see `simulate`."""
    if frames is None:
        return scene, 0
    frames = _plain(frames)  # numpy numbers too
    if isinstance(frames, int) and not isinstance(frames, bool):
        first, end = 0, frames
        if end < 1:
            raise UsageError(f"frames={frames}: expected a count n ≥ 1, or a range (a, b) "
                             f"with 0 ≤ a < b")
    elif isinstance(frames, (tuple, list)) and len(frames) == 2 \
            and all(isinstance(f, int) and not isinstance(f, bool) for f in frames):
        first, end = frames
        if not 0 <= first < end:
            raise UsageError(f"frames={tuple(frames)}: expected (a, b) with 0 ≤ a < b, "
                             f"e.g. (600, 1200)")
    else:
        raise TypeError(f"frames: expected a count n or a range (a, b) of ints, got "
                        f"{frames!r}")
    if end != scene.frame_count:
        scene = _rebuilt(scene, [("output.frames", end, "frames=")])
    return scene, first


@_keywords(**{"--still": "t"})
def frame(scene: Scene, t: float | Fraction | str,
          size: tuple[int, int] | None = None, *, quiet: bool = False) -> np.ndarray:
    """The frame at time `t` drawn at `size` (w, h) px (None: the scene's output.size):
    an (h, w, 4) uint8 array of RGBA with straight (not premultiplied) alpha, 255
    everywhere unless the scene is transparent.

    t: seconds (1.5, Fraction(3, 2), "1.5") or "frame:N"; a float is read as its decimal
    digits, as `--still 1.5` is. The pixels are those of `--still t` at that size.
    quiet: no progress bar while the flock flies to `t`, and no first-run note.
    """
    import numpy as np

    from . import budget
    from .draw.surface import Canvas
    from .encode import keeps_straight
    from .encode.video import straight_alpha
    from .stills import state_at

    _require_scene(scene)
    if size is not None:  # (w, h), or "WxH" as a scene file writes it
        size = size if isinstance(size, str) else _plain(size)
        scene = _rebuilt(scene, [("output.size", size, "size=")])
    time = _seconds(t, scene.output.fps)
    if budget.still_cost(scene, "frame.png", time, dpi=72).tile is not None:
        raise UsageError(f"size={scene.output.size}: too large to draw at once; "
                         f"render(scene, 'still.png', still={t!r}) draws it in tiles")
    state = state_at(scene, time, quiet=_switch("quiet", quiet))
    canvas = Canvas(scene.output.size, straight=keeps_straight(scene))
    bgra = state.draw(canvas, scene)
    rgba = np.empty(bgra.shape, np.uint8)
    # A band of rows at a time: un-premultiplying works in uint32, 12 bytes a pixel.
    for y in range(0, len(bgra), _BAND_ROWS):
        rows = slice(y, y + _BAND_ROWS)
        straight = None if canvas.straight is None else canvas.straight[rows]
        band = straight_alpha(bgra[rows], straight=straight) if scene.output.transparent \
            else bgra[rows]
        rgba[rows] = band[:, :, [2, 1, 0, 3]]
    return rgba


_BAND_ROWS = 256


def _seconds(t, fps: Fraction, name: str = "t") -> Fraction:
    """A time as exact seconds (see `frame`); `name`: the argument's, for errors."""
    from .options import parse_time

    given = f"{name}={t!r}"
    value = _plain(t)  # a numpy number as Python's
    if isinstance(value, (Fraction, Decimal)):
        return parse_time(str(value), fps, given)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return parse_time(repr(value), fps, given)  # 0.1 is 1/10, not its binary value
    if isinstance(value, str):
        return parse_time(value, fps, given)
    raise TypeError(f"{name}: expected seconds (a number, a Fraction, a Decimal or a "
                    f"string) or "
                    f"\"frame:N\", got {t!r}")


_CLIP_OPTIONS = ("frames", "workers", "scheduler", "cache_dir", "stats", "plot", "quiet",
                 "resume", "overwrite", "web")
_STILL_OPTIONS = ("still", "dpi", "bit_depth", "tile_size", "overwrite", "quiet")


@_keywords()
def render(scene: Scene, path: str | Path | list | tuple | None = None,
           **options) -> list[Path]:
    """Render `scene` into `path` and return every file written: each output in the order
    given — a clip (.mp4 .webm .mov .gif .webp .apng), each frame of a sequence (a folder:
    a string ending in "/" or the Path of an existing folder; or a pattern such as
    "out/f_%04d.png" .exr .jpg), trajectories (.npz .usd .usda .usdc) — then the
    diagnostics. `path` may be several outputs (a list), or None with `stats` or
    `plot` (the flock simulated, nothing drawn). The suffix decides the format, as `-o`'s.

    Options (the command line's, with the same defaults):
      frames: n or (a, b), see `simulate` (default: the scene's clip).
      workers: drawing threads (default: the cores this process may use less one, at
        least one), or with scheduler="local" the local cluster's processes (default:
        the cores).
      scheduler: a Dask scheduler's address, or "local"; cache_dir: storage every worker
        reads, through which states travel.
      stats: a .csv or .json of per-frame diagnostics; plot: a .png, .pdf or .svg of
        them over time.
      quiet: no progress bar and no first-run note. resume: keep a PNG sequence's
        complete frames. overwrite=False: keep what exists.
      web: a path NAME.mp4 becomes a web page's four files, as `--quality web` writes
        them (NAME.mp4, NAME.av1.mp4, NAME.jpg, NAME.html; the preset's size and rate are
        scene settings: pass them as overrides).
    A still instead: still=t (as `frame` takes it) with path a .png, .jpg, .exr, .pdf or
    .svg, and dpi (72), bit_depth (8 or 16), tile_size (px), overwrite, quiet.
    """
    _require_scene(scene)
    known = set(_CLIP_OPTIONS) | set(_STILL_OPTIONS)
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"render() got unexpected keyword argument(s) "
                        f"{', '.join(unknown)}; valid: {', '.join(sorted(known))}")
    for name in _SWITCHES:
        if name in options:
            options[name] = _switch(name, options[name])
    if "still" in options:
        return [_still(scene, path, **options)]
    return _clip_render(scene, path, **options)


# The options that are on or off: a string such as "False" would read as on.
_SWITCHES = ("quiet", "resume", "overwrite", "web")


def _switch(name: str, value) -> bool:
    """`value` of the on/off option `name` as a bool (numpy's included), or UsageError."""
    plain = _plain(value)
    if not isinstance(plain, bool):
        raise UsageError(f"{name}: expected True or False, got {value!r}")
    return plain


def _still(scene: Scene, path, *, still, dpi: float = 72, bit_depth: int = 8,
           tile_size: int | None = None, overwrite: bool = True,
           quiet: bool = False, **clip_only) -> Path:
    """render(..., still=t): one frame as a PNG, JPEG, OpenEXR, PDF or SVG."""
    from .encode.files import folders_made_for
    from .options import MAX_DPI
    from .stills import render_still, still_path

    if clip_only:
        raise TypeError(f"render(still=...) writes one frame: "
                        f"{', '.join(sorted(clip_only))} "
                        f"appl{'ies' if len(clip_only) == 1 else 'y'} to clips; valid with "
                        f"still: {', '.join(_STILL_OPTIONS)}")
    if not isinstance(path, (str, Path)):
        raise UsageError(f"render(still=...) writes one file: expected a path such as "
                         f"FILE.png, got {path!r}")
    bit_depth, tile_size, dpi = _plain(bit_depth), _plain(tile_size), _plain(dpi)
    if bit_depth not in (8, 16):
        raise UsageError(f"bit_depth: expected 8 or 16, got {bit_depth!r}")
    if tile_size is not None and (isinstance(tile_size, bool) or
                                  not isinstance(tile_size, int) or tile_size < 1):
        raise UsageError(f"tile_size: expected a whole number of px ≥ 1, got {tile_size!r}")
    if isinstance(dpi, bool) or not isinstance(dpi, (int, float)) or not 0 < dpi <= MAX_DPI:
        raise UsageError(f"dpi: expected a number in (0, {MAX_DPI}], got {dpi!r}")
    time = _seconds(still, scene.output.fps, "still")
    path = still_path(path, scene, time)
    with folders_made_for([path]):
        render_still(scene, path, time, dpi=dpi, bit_depth=bit_depth, tile_size=tile_size,
                     overwrite=overwrite, quiet=quiet)
    return Path(path)


def _clip_render(scene: Scene, path, *, quiet: bool = False, **options) -> list[Path]:
    """render(...) of a clip, a sequence, trajectories or diagnostics."""
    from .encode.files import folders_made_for
    from .encode.images import is_sequence, sequence_pattern
    from .pipeline import render as run

    scene, paths, target, executor, diagnostics = _planned(scene, path, **options)
    extra = [p for p in (diagnostics.stats, diagnostics.plot) if p is not None]
    # A sequence's pattern stands for its frames' files (one folder), checked by `run`.
    with folders_made_for([sequence_pattern(p) if is_sequence(p) else p for p in paths]
                          + extra):
        run(scene, target, executor, diagnostics, quiet=quiet)
    written = []
    if target.web:
        from .encode.web import web_paths

        paths = ()
        written += list(web_paths(target.paths[0]))
    for p in paths:
        if is_sequence(p):
            pattern = sequence_pattern(p)
            written += [Path(pattern % k) for k in range(target.first, target.end)]
        else:
            written.append(Path(p))
    return written + [Path(p) for p in extra]


def _refuse(scene: Scene, path, **options) -> None:
    """UsageError for what render(scene, path, **options) of a clip would refuse, found
    without rendering (--check)."""
    from .pipeline import refuse

    scene, _, target, executor, diagnostics = _planned(scene, path, **options)
    refuse(scene, target, executor, diagnostics)


def _planned(scene: Scene, path, *, frames=None, workers: int | None = None,
             scheduler: str | None = None, cache_dir: str | Path | None = None,
             stats: str | Path | None = None, plot: str | Path | None = None,
             resume: bool = False, overwrite: bool = True, web: bool = False,
             **still_only):
    """(the scene of the clip, its outputs' paths, the pipeline's Target, executor and
    Diagnostics) of a render(...) of a clip."""
    from .encode import Target
    from .pipeline import Diagnostics

    if still_only:
        raise TypeError(f"{', '.join(sorted(still_only))} "
                        f"appl{'ies' if len(still_only) == 1 else 'y'} to stills: add still=t")
    paths = () if path is None else \
        tuple(_output(p) for p in (path if isinstance(path, (list, tuple)) else [path]))
    if not paths and stats is None and plot is None:
        raise UsageError("nothing to do: give a path, stats or plot")
    scene, first = _clip(scene, frames)
    target = Target(paths, first, scene.frame_count, resume, overwrite, web)
    return (scene, paths, target, _executor(workers, scheduler, cache_dir),
            Diagnostics(stats, plot))


def _output(path: str | Path) -> str:
    """`path` as `-o` takes it: a Path cannot end in "/", so one naming an existing
    folder means a PNG sequence in it."""
    if isinstance(path, Path) and path.is_dir():
        return f"{path}{os.sep}"
    return str(path)


def _executor(workers: int | None, scheduler: str | None, cache_dir):
    """Where frames are drawn: this process's threads, or a Dask cluster."""
    from .executor import Cluster, Threads

    workers = _plain(workers)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise UsageError(f"workers: expected a whole number ≥ 1, got {workers!r}")
    if scheduler is None:
        if cache_dir is not None:
            raise UsageError("cache_dir hands states to cluster workers: give a scheduler")
        return Threads(workers) if workers else Threads()
    return Cluster(scheduler, workers, cache_dir)
