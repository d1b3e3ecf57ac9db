"""Command line: argv → options (options.py) → scene → a still, a contact sheet, a check or
the pipeline. Errors become one line and an exit code here and nowhere else: 0 done, 2 bad
input, 130 interrupted (Ctrl-C, SIGTERM and the other `progress.stop_signals`), 1 anything
else."""

from __future__ import annotations

import argparse
import atexit
import contextlib
import math
import os
import signal
import sys
import threading
import traceback
from pathlib import Path

from .errors import BoidsError, SceneError, UsageError, caused_by_interrupt, cli_names
from .options import (PAPER_MM, frame_range, loop_range_error, overrides_from, paper_size,
                      parse_time, parser, seconds)
from .scene.values import MAX_SIDE

def main(argv: list[str] | None = None) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version, malformed options
        return exc.code if isinstance(exc.code, int) else 2
    try:
        with _interrupts(), cli_names():
            return run(args)
    except SceneError as exc:
        for line in exc.problems:
            print(f"boids-render: {line}", file=sys.stderr)
        return exc.exit_code
    except BoidsError as exc:
        print(f"boids-render: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("boids-render: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("boids-render: out of memory: try a smaller --size or fewer birds",
              file=sys.stderr)
        return 1
    except BrokenPipeError if args.check or args.info else ():
        # Whoever read what --check or --info prints has stopped (`--info f.png | head`):
        # nothing is lost. Python would report the pipe again as it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a file we read or write: permissions, a missing folder, …
        from .encode.files import final_name

        if _in_kernel_cache(exc):
            print(f"boids-render: cannot write the compiled kernels' cache in "
                  f"{os.environ.get('NUMBA_CACHE_DIR')}: {exc.strerror or exc} "
                  f"(XDG_CACHE_HOME moves it)", file=sys.stderr)
            return 1
        # A rename names both files: the second is the output's own.
        named = exc.filename2 or exc.filename
        where = f"{final_name(named)}: " if named else ""
        print(f"boids-render: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        from .progress import was_interrupted

        if caused_by_interrupt(exc) or was_interrupted():
            print("boids-render: interrupted", file=sys.stderr)
            return 130
        if os.environ.get("BOIDS_RENDER_DEBUG", "0").strip().lower() not in ("", "0", "false",
                                                                           "no", "off"):
            traceback.print_exc()
        first = str(exc).strip().splitlines()
        if _in_kernel_cache(exc):
            print(f"boids-render: the compiled kernels' cache in "
                  f"{os.environ.get('NUMBA_CACHE_DIR')} is damaged ({type(exc).__name__}"
                  f"{': ' + first[0] if first else ''}): delete that folder, and the kernels "
                  f"are compiled again", file=sys.stderr)
            return 1
        print(f"boids-render: internal error: {type(exc).__name__}"
              f"{': ' + first[0] if first else ''}", file=sys.stderr)
        print("boids-render: this is a bug; please report it with the scene and command "
              "line (BOIDS_RENDER_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 1


def run(args: argparse.Namespace) -> int:
    """Parsed options → scene → pipeline. Raises the errors `main` reports."""
    if args.info:
        others = _given(args) - {"--info", "--quiet"}
        if others:
            raise UsageError(f"--info prints what a still records and does nothing else: "
                             f"drop {', '.join(sorted(others))}")
        return _info(args.info)
    _refuse_dropped(args)
    scene, recorded = _scene(args)
    if args.crossfade is not None and not scene.output.loop:
        raise UsageError("--crossfade sets a loop's morph: add --loop (or output.loop = "
                         "true), or drop --crossfade")
    if args.scheduler is not None and (args.still is not None or args.from_png
                                       or args.contact_sheet):
        raise UsageError("--scheduler splits a clip's frames across a cluster; stills and "
                         "contact sheets are drawn on this machine: drop --scheduler")
    if args.contact_sheet:
        others = [flag for flag, given in (("-o", args.output), ("--still", args.still),
                                           ("--stats", args.stats), ("--plot", args.plot),
                                           ("--loop", args.loop)) if given]
        if others:
            raise UsageError(f"--contact-sheet draws a sheet of the clip's frames on its "
                             f"own: drop {', '.join(others)} (or run it separately)")
    if args.still is not None or (args.from_png and (args.output or not args.check)):
        return _still(args, scene, recorded)
    if args.tile_size is not None or args.bit_depth is not None:
        flag = "--tile-size" if args.tile_size is not None else "--bit-depth"
        raise UsageError(f"{flag} applies to PNG stills: add --still TIME")
    if args.contact_sheet:  # drawn at the preset's size, --quality web's too
        return _contact_sheet(args, scene)
    if args.quality == "web":
        from .encode.web import check_web_output

        if args.output is not None or not args.check:  # --check alone: the flight's cost
            check_web_output(() if args.output is None else (args.output,))
        if args.crf is not None:
            raise UsageError("--crf sets x264's quality; --quality web encodes with "
                             "settings of its own (docs/loops.md): drop --crf")
        if scene.output.transparent:
            raise UsageError("--quality web writes MP4 clips and a JPEG poster, which have "
                             "no alpha channel: drop --transparent (output.transparent); a "
                             "page's transparent clip is -o NAME.webm --transparent")
    return _clip(args, scene)


def _given(args: argparse.Namespace) -> set[str]:
    """The options given in `args` (those not at their default), as the user typed them:
    "-o", "--stats", …, and "the scene file"."""
    defaults = vars(parser().parse_args([]))
    return {_FLAGS.get(dest, "--" + dest.replace("_", "-"))
            for dest, value in vars(args).items()
            if dest in defaults and value != defaults[dest]}


# The options whose flag is not their parsed name with dashes.
_FLAGS = {"scene": "the scene file", "output": "-o", "overrides": "--set",
          "from_png": "--from", "overwrite": "--no-overwrite"}


def _refuse_dropped(args: argparse.Namespace) -> None:
    """UsageError for options that the request would leave unused (a user who gives one
    expects it to act), and for several -o where one file is written. Leaves the first -o
    in args.output and all of them in args.outputs."""
    outputs = args.output or []
    args.outputs, args.output = outputs, outputs[0] if outputs else None
    still = args.still is not None or args.from_png is not None
    if len(outputs) > 1 and (still or args.quality == "web"):
        what = "a still" if still else "--quality web"
        raise UsageError(f"{what} writes one -o; several -o apply to clips, sequences and "
                         f"trajectories: give one")
    for flag, given in (("--landscape", args.landscape), ("--portrait", args.portrait)):
        if given and not args.paper:
            raise UsageError(f"{flag} turns a --paper sheet: add --paper (e.g. --paper A3 "
                             f"{flag}), or give the size with --size WxH")
    if args.paper and args.size:
        raise UsageError(f"--paper {args.paper} sets the size (at --dpi): drop --size "
                         f"{args.size}")
    if args.from_png and args.scene is not None:
        raise UsageError(f"--from draws the scene {args.from_png} records: drop the scene "
                         f"file {args.scene} (--set changes the recorded one)")
    if still and args.frames is not None and ":" in args.frames:
        raise UsageError(f"--frames {args.frames} renders part of a clip; a still is one "
                         f"frame: drop it (--frames N sets a loop's length)")
    if args.loop and args.frames is not None and frame_range(args.frames)[0]:
        raise loop_range_error()  # before the scene's loop checks the range's length
    if not still and args.dpi is not None and not args.paper:
        raise UsageError("--dpi is the resolution a still records (and with --paper, its "
                         "size): add --still TIME, or drop --dpi")
    dropped = [flag for flag, given in (("--stats", args.stats), ("--plot", args.plot),
                                        ("--resume", args.resume), ("--workers", args.workers),
                                        ("--crf", args.crf)) if given and still]
    if dropped:
        verb = "applies" if len(dropped) == 1 else "apply"
        raise UsageError(f"{', '.join(dropped)} {verb} to a clip's frames; a still is one: "
                         f"drop {', '.join(dropped)}")


def _scene(args: argparse.Namespace):
    """The scene the options describe, and what a --from still records (else None)."""
    from .api import load_scene

    overrides = overrides_from(args)

    def sheet(scene) -> list:
        """The overrides with --paper's size, the sheet turned as --landscape or
        --portrait say, else as `scene`'s frame is (a portrait sheet of a landscape 3D
        scene shows its whole width of view, the flock smaller in more sky)."""
        width, height = scene.output.size
        landscape = args.landscape or (not args.portrait and width > height)
        dpi = args.dpi or 300
        size = paper_size(args.paper, dpi, landscape)
        if max(size) > MAX_SIDE:
            most = math.floor(MAX_SIDE * 25.4 / max(PAPER_MM[args.paper]))
            raise UsageError(f"--paper {args.paper} --dpi {dpi:g}: expected each side in "
                             f"1..{MAX_SIDE} px, got {size[0]}x{size[1]}: on this sheet the "
                             f"most is --dpi {most} (a transparent, 16-bit, JPEG or "
                             f"OpenEXR still less)")
        if min(size) < 1:
            # A side rounds to a pixel from half a pixel up.
            least = math.ceil(0.5 * 25.4 / min(PAPER_MM[args.paper]) * 1000) / 1000
            raise UsageError(f"--paper {args.paper} --dpi {dpi:g}: the sheet would be "
                             f"{size[0]}x{size[1]} px: the least is --dpi {least:g}")
        return overrides + [("output.size", f'"{size[0]}x{size[1]}"', f"--paper {args.paper}")]

    if args.from_png:
        scene, recorded = _embedded_scene(args.from_png, overrides)
        if recorded.edited and not args.quiet:
            from .progress import note

            note(f"{args.from_png}: its recorded scene no longer matches the digest beside "
                 f"it (edited since the file was written): drawing the scene as it reads now")
        if not args.paper:
            return scene, recorded
        return _embedded_scene(args.from_png, sheet(scene))
    if args.scene is None:
        raise UsageError("give a scene file (or --from FILE.png, or --info FILE.png)")
    try:
        scene = load_scene(args.scene, overrides)
    except SceneError:
        # A loop's scene checks its length against the crossfade, which a range's end
        # is not: a loop given a range is told what it is refused for.
        if frame_range(args.frames)[0] and _loops(args.scene, overrides):
            raise loop_range_error() from None
        raise
    if frame_range(args.frames)[0] and scene.output.loop:
        raise loop_range_error()  # output.loop in the file, with a range it can hold
    if args.paper:
        scene = load_scene(args.scene, sheet(scene))
    if not args.quiet and not _sets_a_key(args.scene):
        # An empty file (saved blank, or every line commented out) would otherwise
        # render the 2D defaults as if they were what it asked for.
        from .progress import note

        note(f"{args.scene}: the file sets no key; every setting not given on the command "
             f"line is its default (docs/scenes.md)")
    return scene, None


def _sets_a_key(path: str) -> bool:
    """Whether the scene file at `path` (read and valid already) gives any setting."""
    import tomllib

    raw = tomllib.loads(Path(path).read_text(encoding="utf-8-sig"))
    return any(not isinstance(body, dict) or body for body in raw.values())


def _contact_sheet(args: argparse.Namespace, scene) -> int:
    """--contact-sheet: the sheet of the clip's frames (from --frames A:B's A), or its
    cost with --check."""
    from .contact_sheet import render_contact_sheet, sheet_cost
    from .scene import describe

    first = frame_range(args.frames)[0]
    cost = sheet_cost(scene, args.contact_sheet, first, overwrite=args.overwrite)
    if args.check:
        print(describe(scene))
        print(f"# estimate to {args.contact_sheet}: {cost}")
        return 0
    render_contact_sheet(scene, args.contact_sheet, first=first, quiet=args.quiet,
                         overwrite=args.overwrite)
    return 0


def _still(args: argparse.Namespace, scene, recorded) -> int:
    """--still (or --from, whose still's time, dpi and bit depth are the defaults: its
    `recorded` Provenance): one frame as a PNG, JPEG, OpenEXR, PDF or SVG, or its cost
    with --check."""
    from .budget import still_cost
    from .scene import describe
    from .stills import require_still_output, still_path

    if not args.output:
        raise UsageError("a still needs -o: FILE.png (print), FILE.jpg, FILE.exr, FILE.pdf "
                         "or FILE.svg")
    length = [flag for flag, given in (("--frames", args.frames), ("--duration", args.duration))
              if given is not None]
    if length and not scene.output.loop:
        raise UsageError(f"{length[0]} sets a clip's length (with --loop, a loop's); a "
                         f"still is one frame, the same whatever the length: drop {length[0]}")
    png = args.output.lower().endswith(".png")
    bit_depth = args.bit_depth or (recorded.bit_depth if recorded and png else 8)
    dpi = args.dpi or (300 if args.paper else recorded.dpi if recorded and recorded.dpi
                       else 72)
    time = parse_time(args.still, scene.output.fps) if args.still is not None \
        else recorded.time
    output = still_path(args.output, scene, time)
    require_still_output(output, transparent=scene.output.transparent,
                         bit_depth=bit_depth, tile_size=args.tile_size, dpi=args.dpi,
                         overwrite=args.overwrite, redrawn=args.still is None)
    options = dict(dpi=dpi, bit_depth=bit_depth, tile_size=args.tile_size)
    if args.check:
        print(describe(scene, f"a still at {seconds(time)} s"))
        cost = still_cost(scene, output, time, **options)
        tiles = ""
        if cost.tile:  # a --tile-size past the still's sides draws it in one tile
            count = math.prod(-(-side // cost.tile) for side in scene.output.size)
            tiles = " in one tile" if count == 1 else f" in {count} tiles of {cost.tile} px"
        print(f"# estimate to {output}: {cost}{tiles}")
        return 0
    from .api import render

    render(scene, output, still=time, overwrite=args.overwrite, quiet=args.quiet,
           **options)
    return 0


def _clip(args: argparse.Namespace, scene) -> int:
    """A clip or PNG sequence (-o), diagnostics (--stats, --plot), or both; or, with
    --check, what they would cost."""
    if args.scheduler is not None and args.output is None:
        raise UsageError("--scheduler draws on a cluster: give -o OUT (without it the flock "
                         "is only simulated, here)")
    if args.scheduler not in (None, "local") and args.workers is not None:
        raise UsageError("--workers sizes this machine's pipeline or --scheduler local; a "
                         "cluster's workers are set where they start (dask worker "
                         "--nworkers N)")
    if args.cache_dir is not None and args.scheduler is None:
        raise UsageError("--cache-dir hands states to cluster workers: add --scheduler")
    _refuse_unused_by_outputs(args, scene.dimensions)
    first = frame_range(args.frames)[0]
    if first and args.scene is not None and not args.quiet:
        own = _own_length(args.scene, overrides_from(args))
        if own is not None and scene.frame_count > own:
            from .progress import note

            note(f"--frames {args.frames} runs past the scene's own {own} frames: these are "
                 f"frames of a clip {scene.frame_count} frames long, the flock flown on past "
                 f"its scene.duration")
    options = dict(frames=(first, scene.frame_count) if first else None,
                   workers=args.workers, scheduler=args.scheduler, cache_dir=args.cache_dir,
                   stats=args.stats, plot=args.plot, resume=args.resume,
                   overwrite=args.overwrite, web=args.quality == "web")
    if args.check:
        return _check(args, scene, first, options)
    if args.output is None and args.stats is None and args.plot is None:
        print("boids-render: nothing to do: give -o OUT (with --still TIME for a still), "
              "--stats FILE, --plot FILE, --contact-sheet FILE or --check", file=sys.stderr)
        return 2
    from .api import render

    render(scene, args.outputs or None, quiet=args.quiet, **options)
    return 0


def _refuse_unused_by_outputs(args: argparse.Namespace, dimensions: int) -> None:
    """UsageError for a flag that none of a clip's outputs (of a scene of `dimensions`)
    would act on (a user who gives one expects it to act)."""
    from .encode import CRF_SUFFIXES, is_state_output

    outputs = args.outputs
    # .npz holds the states alone; a 3D USD's camera takes the frame's shape from --size
    # (a 2D one has no camera)
    unframed = bool(outputs) and all(
        Path(out).suffix.lower() == ".npz" or (dimensions == 2 and is_state_output(out))
        for out in outputs)
    if args.paper:
        instead = "" if unframed else ", or give a clip's size with --size WxH"
        raise UsageError(f"--paper {args.paper} sizes a still's sheet: add --still "
                         f"TIME{instead}")
    if args.size and unframed:
        raise UsageError(f"--size sets the frames' size; {', '.join(outputs)} "
                         f"hold{'s' if len(outputs) == 1 else ''} the flock's states, in "
                         f"world units, whatever the frame: drop --size")
    if args.resume and args.quality == "web":
        raise UsageError("--resume applies to PNG sequences (and EXR or JPEG ones); "
                         "--quality web renders its clips whole: drop --resume")
    if not outputs:
        unused = [flag for flag, given in (("--crf", args.crf), ("--motion-blur",
                                                                  args.motion_blur),
                                           ("--transparent", args.transparent),
                                           ("--resume", args.resume)) if given]
        if unused and (args.stats or args.plot):
            only = " and ".join(f for f, given in (("--stats", args.stats),
                                                   ("--plot", args.plot)) if given)
            raise UsageError(f"{', '.join(unused)} act{'s' * (len(unused) == 1)} on the "
                             f"frames written to -o; {only} draw{'s' * (' ' not in only)} "
                             f"none: add -o OUT, or drop {', '.join(unused)}")
        return
    if args.crf is not None and args.quality != "web" and \
            not any(Path(out).suffix.lower() in CRF_SUFFIXES for out in outputs):
        raise UsageError(f"--crf sets the quality of .mp4 (H.264) and .webm (VP9) clips; "
                         f"{', '.join(outputs)} take{'s' if len(outputs) == 1 else ''} "
                         f"none: drop --crf")
    drawn = [flag for flag, given in (("--motion-blur", args.motion_blur),
                                      ("--transparent", args.transparent)) if given]
    if drawn and all(is_state_output(out) for out in outputs):
        raise UsageError(f"{', '.join(drawn)} act{'s' if len(drawn) == 1 else ''} on drawn "
                         f"frames; {', '.join(outputs)} "
                         f"hold{'s' if len(outputs) == 1 else ''} the flock's states: drop "
                         f"{', '.join(drawn)}")


def _check(args: argparse.Namespace, scene, first: int, options: dict) -> int:
    """--check: the resolved settings and what rendering them would cost; then what the
    render would refuse, as it would."""
    from . import budget
    from .encode import Target
    from .scene import describe

    print(describe(scene))
    stats = args.stats is not None or args.plot is not None
    target = Target(tuple(args.outputs), first, scene.frame_count, args.resume,
                    args.overwrite)
    for output in args.outputs or [None]:
        scope = f"to {output}" if output else "(simulation only; -o adds drawing)"
        cost = budget.estimate(scene, output, first, stats=stats,
                               web=args.quality == "web",
                               on_disk=target.on_disk(output) if output else 0,
                               threads=1 if args.scheduler else args.workers)
        print(f"# estimate {scope}: {cost}")
    if args.output is None and not stats:
        budget.check(scene, None, first=first)
        return 0
    from .api import _refuse

    _refuse(scene, args.outputs or None, **options)
    return 0


def _info(path: str) -> int:
    from .encode.still import read_provenance

    recorded = read_provenance(path)
    for key, value in recorded.fields.items():
        edited = " (the scene below no longer matches it: edited since the file was " \
            "written)" if key == "scene-sha256" and recorded.edited else ""
        print(f"{key}: {seconds(recorded.time) if key == 'time' else value}{edited}")
    if recorded.time is None:  # trajectories: the scene they fly, no picture
        print(recorded.scene_toml)
        return 0
    if recorded.dpi is not None:
        print(f"dpi: {recorded.dpi:g}")
    depth = "16 (half float, linear light)" if recorded.exr else recorded.bit_depth
    print(f"bit-depth: {depth}")
    print(recorded.scene_toml)
    return 0


def _as_filed(path: str, overrides):
    """The scene at `path` with `overrides` but its length as the file has it (None when
    that does not load)."""
    from .api import load_scene

    try:
        return load_scene(path, [o for o in overrides if o[2] != "--frames"])
    except SceneError:
        return None


def _loops(path: str, overrides) -> bool:
    """Whether the scene at `path`, its length as the file has it, is a loop."""
    scene = _as_filed(path, overrides)
    return scene is not None and scene.output.loop


def _own_length(path: str, overrides) -> int | None:
    """The frame count of the scene at `path`, its length as the file has it."""
    scene = _as_filed(path, overrides)
    return None if scene is None else scene.frame_count


def _embedded_scene(path: str, overrides):
    """The scene a still records (overrides apply on top as usual), and its record."""
    import tomllib

    from .encode.still import read_provenance
    from .scene import RECORDED_SCENE, build_scene
    from .scene.schema import unread_keys

    recorded = read_provenance(path)
    if recorded.time is None:
        raise UsageError(f"{path}: trajectories record the scene they fly, not a picture: "
                         f"--from draws a still again (--info {path} prints the scene, "
                         f"from its [scene] line on)")
    try:
        raw = tomllib.loads(recorded.scene_toml)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: its recorded scene is damaged (TOML syntax: {exc}); "
                         f"render the still again from its scene file") from None
    # A record written before a scene left out the keys its dimension does not read holds
    # them at their values then: they were never read, so they are not refused now.
    three = raw.get("world", {}).get("dimensions") == 3
    for section, keys in unread_keys(three).items():
        for key in keys:
            raw.get(section, {}).pop(key, None)
    # The record puts every setting at one rank, but the still may be of an excerpt: a
    # clip whose length, given over the file's landing, ends before it (scene.checks3d).
    # Its length is given again as it was, over the rest.
    duration = raw.get("scene", {}).get("duration")
    again = [] if duration is None else [("scene.duration", duration, f"--from {path}")]
    scene = build_scene(raw, f"{path} ({RECORDED_SCENE})", again + list(overrides))
    return scene, recorded


@contextlib.contextmanager
def _interrupts():
    """SIGTERM and the other `stop_signals` stop a render the way Ctrl-C does: the
    KeyboardInterrupt unwinds through the writers, which kill ffmpeg and remove their
    temporaries, and the exit status is the same 130. Each is remembered, so one that
    lands where Python drops the exception still stops the render (`progress.interrupt`);
    the temporaries of files being written are removed whatever happened."""
    from .encode.files import remove_temporaries
    from .progress import forget_interrupt, interrupt, stop_signals

    forget_interrupt()
    # Signal handlers can only be set from the main thread.
    main = threading.current_thread() is threading.main_thread()
    signals = stop_signals() if main else ()
    previous = [signal.signal(signum, interrupt) for signum in signals]
    unraisable = sys.unraisablehook

    def dropped(report) -> None:
        # An interrupt raised where Python cannot raise it (a garbage collector's
        # callback, a __del__) is printed with its traceback and dropped: it is
        # remembered, and the render stops at its next step with one line.
        if not isinstance(report.exc_value, KeyboardInterrupt):
            unraisable(report)

    sys.unraisablehook = dropped
    try:
        yield
    finally:
        sys.unraisablehook = unraisable
        for signum, handler in zip(signals, previous):
            signal.signal(signum, handler)
        remove_temporaries()


def tune_process() -> None:
    """Process-wide settings that make a render faster, applied by the console script
    (`entry`) before anything else loads; optional, and left out of `main` so that a
    program importing boids-render (a notebook, a Dask worker, the tests) keeps its own.

    GNU OpenMP busy-waits between parallel regions: as soon as anything else wants the
    cores (ffmpeg encoding, a second render) every kernel launch costs tens of ms. So its
    waiting policy is passive, set before libgomp loads (numba loads it at the first
    parallel launch), unless the environment says otherwise.

    numba's compiled kernels are cached in a folder named after the simulator's sources
    (see `sim.cache`), so an edit to any of them compiles afresh.

    glibc keeps freed heap memory for the next step instead of handing it back to the OS.
    Every step allocates its results afresh (a Snapshot's arrays are never overwritten),
    megabytes for a large flock. glibc returns such blocks to the OS on free, so the next
    step takes a page fault per 4 KiB to get them back: measured at 100,000 birds, 1,240
    faults and 1.9 ms of system time per step (of about 30), none with this setting.
    Blocks up to 32 MiB come from the heap (larger ones, such as 4K frames, are still
    mapped and unmapped), and up to 256 MiB of free heap is kept.
    """
    import ctypes
    import platform

    from . import sim  # noqa: F401  # before numba loads: its cache folder and target

    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if platform.libc_ver()[0] != "glibc":
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - depends on the C library
        return
    m_trim_threshold, m_mmap_threshold = -1, -3
    mallopt(m_mmap_threshold, 32 << 20)
    mallopt(m_trim_threshold, 256 << 20)


def _in_kernel_cache(exc: BaseException) -> bool:
    """Whether `exc` was raised where numba reads or writes its cache of compiled kernels
    (a file cut short, overwritten, or a disk that is full)."""
    where = os.path.join("numba", "core", "caching.py")
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.endswith(where):
            return True
        tb = tb.tb_next
    return False


def hold_standard_streams() -> None:
    """Standard streams the shell closed (`>&-`, `2>&-`) opened on the null device: the
    next file opened would take the number, and what a library writes to stdout would
    land in it; and Python's sys.stdout or sys.stderr, None, failed the first write."""
    for fd, name, mode in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY),
                           (2, "stderr", os.O_WRONLY)):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, mode)
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))


class _OutlivingItsReader:
    """sys.stderr, whose reader may go mid-render (a pipe into `head`, a log collector
    restarted): a write then failed the render (exit 1, nothing written) for want of a
    progress line. A write or flush that finds the pipe closed points the stream at the
    null device instead, and the render goes on without its messages."""

    def __init__(self, stream):
        self._stream = stream

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._silence()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._silence()

    def _silence(self) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self._stream.fileno())
        os.close(null)


def entry() -> None:
    """The console script: `main` on this process's argv, in a tuned process."""
    hold_standard_streams()
    sys.stderr = _OutlivingItsReader(sys.stderr)
    tune_process()
    code = main(sys.argv[1:])
    # The work is done and its files placed (or not): a Ctrl-C or SIGTERM while the
    # interpreter shuts down ends it at once with the status the work earned, rather
    # than the 130 or 143 of a render it did not interrupt.
    with contextlib.suppress(OSError):  # what was printed is out before any such exit
        sys.stdout.flush()
        sys.stderr.flush()
    from .progress import stop_signals

    stops = stop_signals()
    for signum in stops:
        signal.signal(signum, lambda *_: os._exit(code))
    # Past the exit handlers the interpreter puts a handler it was given back to the
    # default action, and its modules' teardown takes a while: a signal then ended a
    # render whose file was placed with 143 or 129. Ignored, which it leaves as is.
    atexit.register(lambda: [signal.signal(signum, signal.SIG_IGN) for signum in stops])
    sys.exit(code)
