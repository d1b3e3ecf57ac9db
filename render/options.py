"""The command line's options: the argparse table (`parser`), its presets and paper sizes,
and the scene overrides the options make (`overrides_from`)."""

from __future__ import annotations

import argparse
import difflib
import math
import re
from fractions import Fraction

from . import __version__
from .errors import UsageError, option

EXAMPLES = """\
examples:
  boids-render scenes/murmuration.toml -o out/murmuration.mp4
  boids-render scenes/classic.toml -o out/classic/ --size 1280x720 --frames 120
  boids-render scenes/murmuration.toml -o out/m.mp4 --fps 24000/1001 --set palette.theme=dark
  boids-render scenes/murmuration.toml --stats out/stats.csv --duration 5   (no drawing)
  boids-render scenes/plate.toml --plot out/diagnostics.png --frames 400
  boids-render scenes/sliders.toml --check --set flock.count=2000
  boids-render scenes/murmuration.toml -o out/frames/ --resume   (after an interruption)
  boids-render scenes/murmuration.toml -o /shared/frames/ --no-overwrite   (one per machine)
  boids-render scenes/murmuration.toml -o out/m.mp4 --scheduler local --workers 2
  boids-render scenes/murmuration.toml -o out/flock.npz   (trajectories; or flock.usd)

exit status: 0 done, 2 bad input (scene or options), 130 interrupted (Ctrl-C, SIGTERM, SIGHUP,
or a batch system's SIGXCPU, SIGUSR1, SIGUSR2), 1 anything else. BOIDS_RENDER_DEBUG=1 shows the
traceback of an internal error.
"""


class _Parser(argparse.ArgumentParser):
    """argparse, its errors one line as every other refusal is (not the usage block
    before it), an unknown option with the closest known one."""

    def error(self, message: str):
        unknown = re.fullmatch(r"unrecognized arguments: (-\S+)( .*)?", message)
        if unknown:
            flags = [s for a in self._actions for s in a.option_strings]
            given = unknown[1].split("=")[0]
            if given in flags:  # after `--`, which makes every argument a file's name
                message += f" ({given} after `--` is read as a name: put options before it)"
            else:
                close = difflib.get_close_matches(given, flags, n=1)
                message += f" (did you mean {close[0]}?)" if close else ""
        choice = re.fullmatch(r"argument \S+: invalid choice: '?(.*?)'? \(choose from (.*)\)",
                              message)
        if choice:  # the choices quoted or not, as Python versions differ
            from .scene.values import closest

            choices = re.findall(r"'([^']*)'", choice[2]) or choice[2].split(", ")
            close = closest(choice[1], choices)
            message += f" (did you mean {close}?)" if close else ""
        self.exit(2, f"{self.prog}: {message}; see {self.prog} --help\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="boids-render",
        description="Render a flock described by a TOML scene file to a video or PNG frames.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scene", nargs="?",
                   help="scene file (TOML), e.g. scenes/murmuration.toml (not needed with "
                        "--from or --info)")
    p.add_argument("-o", "--output", metavar="OUT", action="append",
                   help="output: a clip FILE.mp4|.webm|.mov, an animated image "
                        "FILE.gif|.webp|.apng, a folder ending in '/' (PNG frames), a "
                        "pattern such as out/f_%%05d.png|.exr|.jpg (a file per frame), or "
                        "the trajectories, nothing drawn: FILE.npz (numpy), FILE.usd|.usdc "
                        "(binary USD) or FILE.usda (text USD), e.g. -o out/murmuration.mp4; "
                        "repeat it to write several from one simulation, e.g. -o "
                        "out/f.mp4 -o out/f.npz")
    p.add_argument("--size", metavar="WxH", help="frame size, e.g. --size 1280x720")
    p.add_argument("--fps", metavar="F", help="frame rate, e.g. --fps 30 or --fps 24000/1001; "
                   "29.97, 23.976 and 59.94 mean the NTSC rates N·1000/1001")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--duration", metavar="S", help="clip length in seconds, e.g. 4.5")
    length.add_argument("--frames", metavar="N|A:B",
                        help="number of frames, e.g. --frames 120; or the range A..B−1 of "
                             "the clip, the same frames a full render has, e.g. "
                             "--frames 600:1200 (farm-style splitting)")
    p.add_argument("--seed", metavar="N", help="random seed, e.g. --seed 7")
    p.add_argument("--quality", choices=list(QUALITY),
                   help="a preset of size, fps, crf and motion blur: draft 640x360@30, "
                        "preview 1280x720@30, high 1920x1080@60, film 3840x2160@24 with "
                        "8-sample motion blur; web 1280x720@30 for a page: -o NAME.mp4 "
                        "writes NAME.mp4 (H.264), NAME.av1.mp4 (AV1), NAME.jpg (poster) "
                        "and NAME.html (a <video> element); explicit options still win, "
                        "e.g. --quality preview")
    p.add_argument("--motion-blur", metavar="N",
                   help="average N sub-frames across the shutter (render.motion_blur; "
                        "render.shutter_angle, 180° by default), e.g. --motion-blur 8")
    p.add_argument("--crf", metavar="N",
                   help="quality of .mp4 (x264) and .webm (VP9) clips, 0–51 (18 default), "
                        "e.g. --crf 23")
    p.add_argument("--set", metavar="SECTION.KEY=VALUE", action="append", default=[],
                   dest="overrides",
                   help="override any scene key (TOML syntax; a bare word, and any scene.name, "
                        "is text), e.g. --set rules.falloff=unit; repeatable")
    p.add_argument("--stats", metavar="FILE",
                   help="write per-frame diagnostics to FILE.csv or FILE.json, e.g. --stats "
                        "out/stats.csv; without -o the flock is simulated but not drawn")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw the per-frame diagnostics over time as a PNG (or .pdf, .svg), "
                        "e.g. --plot out/diagnostics.png (needs the [plot] extra)")
    p.add_argument("--check", action="store_true",
                   help="validate the scene, print the resolved settings, where each "
                        "came from and what -o OUT (or --still, --contact-sheet) would "
                        "cost, and exit without rendering")
    p.add_argument("--resume", action="store_true",
                   help="image sequences (PNG, OpenEXR, JPEG): keep the frames already complete "
                        "(readable, right size, drawn from the same scene) and render only "
                        "the rest")
    p.add_argument("--no-overwrite", action="store_false", dest="overwrite",
                   help="never replace an existing file: refuse a clip or still that exists; "
                        "skip sequence frames that exist (several machines can share one "
                        "folder)")
    still = p.add_argument_group("stills for print")
    still.add_argument("--still", metavar="TIME",
                       help="render one frame as a still (PNG, JPEG, OpenEXR, PDF or SVG): "
                            "seconds or frame:N, e.g. --still 12.5 -o print.png, or --still "
                            "frame:750")
    paper = still.add_mutually_exclusive_group()
    paper.add_argument("--paper", choices=sorted(PAPER_MM), type=str.upper,
                       help="size the still for a paper format at --dpi, e.g. --paper A3 "
                            "or --paper letter")
    still.add_argument("--dpi", type=_positive_float, metavar="N",
                       help="print resolution: recorded in a PNG or JPEG still, the page size "
                            "of a PDF or SVG one, and with --paper its size in pixels; "
                            "default 300 with --paper, else the --from still's own, else "
                            "72, e.g. --dpi 300")
    turn = still.add_mutually_exclusive_group()
    turn.add_argument("--landscape", action="store_true",
                      help="with --paper: the long side across, e.g. --paper A2 --landscape "
                           "(default: as the scene's frame is turned, or with --from the "
                           "recorded still)")
    turn.add_argument("--portrait", action="store_true",
                      help="with --paper: the long side up, e.g. --paper A2 --portrait "
                           "(a landscape 3D scene's whole width of view, with more sky)")
    still.add_argument("--bit-depth", type=int, choices=(8, 16),
                       help="PNG stills: 16 draws the still 4x larger and averages it down "
                            "into 16-bit channels (smooth gradients for print); 8 by "
                            "default, or with --from the still's own, e.g. --bit-depth 16")
    still.add_argument("--tile-size", type=_positive_int, metavar="N",
                       help="PNG stills: draw in N x N tiles streamed into the file, so a "
                            "poster never sits whole in memory (2048 without it for a "
                            "still past 32767 px a side or too large for memory whole), "
                            "e.g. --tile-size 1024")
    still.add_argument("--info", metavar="FILE.png",
                       help="print the scene, seed, time and version a still (PNG, JPEG or "
                            "OpenEXR) records, or trajectories (.npz, USD) the scene they "
                            "fly, e.g. --info print.png")
    still.add_argument("--from", dest="from_png", metavar="FILE.png",
                       help="re-render from the scene a still (PNG, JPEG or OpenEXR) "
                            "records (at its time unless --still is given), e.g. --from "
                            "print.png -o again.png")
    p.add_argument("--loop", action="store_const", const="true",
                   help="a seamless loop: the first --crossfade seconds morph from the flock "
                        "just after the end (output.loop), e.g. -o out/loop.webm --loop")
    p.add_argument("--crossfade", metavar="S",
                   help="loop: seconds of the morph (output.crossfade, 1 s by default), "
                        "e.g. --crossfade 1.5")
    p.add_argument("--transparent", action="store_const", const="true",
                   help="no background, alpha for compositing (output.transparent): .webm, "
                        ".mov, .webp, .apng, PNG or OpenEXR sequences and stills, PDF and "
                        "SVG stills, e.g. -o out/flock.mov --transparent")
    p.add_argument("--contact-sheet", metavar="FILE.png",
                   help="a grid of 12 thumbnails across the clip with their times, e.g. "
                        "--contact-sheet out/sheet.png")
    p.add_argument("--workers", metavar="N", type=_positive_int,
                   help="drawing workers: threads here, while the flock is simulated and "
                        "encoded (default: the cores this process may use less one, for "
                        "the main thread; at least one); with --scheduler local, the local "
                        "cluster's single-threaded processes (default: the cores); not "
                        "with a remote --scheduler, e.g. --workers 1")
    cluster = p.add_argument_group("on a Dask cluster (the [distributed] extra)")
    cluster.add_argument("--scheduler", metavar="ADDRESS|local",
                         help="draw and encode on a Dask cluster: a scheduler's address, or "
                              "local for a cluster of --workers processes on this machine; "
                              "the same frames as a local render, e.g. "
                              "--scheduler tcp://10.0.0.5:8786")
    cluster.add_argument("--cache-dir", metavar="DIR",
                         help="with --scheduler: hand the workers the simulated states "
                              "through DIR, storage every worker can read (for large "
                              "flocks), e.g. --cache-dir /shared/boids-cache")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar, and no advice (that a first run compiles the "
                        "simulation kernels, that a clip without --loop jumps back when "
                        "played in a loop); what a render did to its output (a GIF's "
                        "dropped frames, a loop's seam report, frames of another render "
                        "kept in a sequence) is still said")
    p.add_argument("--version", action="version", version=f"boids-render {__version__}")
    return p


# --quality: what each preset sets; defaults < scene file < preset < explicit options.
QUALITY = {
    "draft": {"output.size": '"640x360"', "output.fps": '"30"', "output.crf": "28",
              "render.motion_blur": "1"},
    "preview": {"output.size": '"1280x720"', "output.fps": '"30"', "output.crf": "23",
                "render.motion_blur": "1"},
    "high": {"output.size": '"1920x1080"', "output.fps": '"60"', "output.crf": "18",
             "render.motion_blur": "1"},
    # The encoders' settings are encode.web's h264_args and av1_args (measured), not a crf.
    "web": {"output.size": '"1280x720"', "output.fps": '"30"', "render.motion_blur": "1"},
    "film": {"output.size": '"3840x2160"', "output.fps": '"24"', "output.crf": "16",
             "render.motion_blur": "8", "render.shutter_angle": "180"},
}

# ISO 216 A sizes and the North American ones (8.5 x 11, 8.5 x 14 and 11 x 17 inches),
# portrait (width, height) in millimetres.
PAPER_MM = {"A0": (841, 1189), "A1": (594, 841), "A2": (420, 594), "A3": (297, 420),
            "A4": (210, 297), "A5": (148, 210), "A6": (105, 148), "LETTER": (215.9, 279.4),
            "LEGAL": (215.9, 355.6), "TABLOID": (279.4, 431.8)}


MAX_DPI = 100_000


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 < value <= MAX_DPI):
        raise argparse.ArgumentTypeError(f"expected a number in (0, {MAX_DPI}], got {text!r}")
    return value


def paper_size(paper: str, dpi: float, landscape: bool) -> tuple[int, int]:
    """Pixels for a `PAPER_MM` sheet at `dpi`."""
    w_mm, h_mm = PAPER_MM[paper]
    if landscape:
        w_mm, h_mm = h_mm, w_mm
    return round(w_mm / 25.4 * dpi), round(h_mm / 25.4 * dpi)


def parse_time(text: str, fps, given: str | None = None) -> Fraction:
    """--still TIME: seconds ("12.5") or a frame ("frame:750"), as exact seconds. `given`:
    how errors name the value (default "--still TEXT")."""
    given = f"--still {text}" if given is None else given
    try:
        # As written in ASCII decimals: Python's readers also take "1_0" (10) and other
        # scripts' digits, which are typos here.
        if not TIME_TEXT.fullmatch(text):
            raise ValueError(text)
        if text.startswith("frame:"):
            value = Fraction(int(text[6:])) / fps
        else:
            value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        frame = re.fullmatch(r"frame:\s*(\d+)\.(\d*)\s*", text)
        near = "" if not frame else f": frame:{frame[1]}" if not frame[2].strip("0") else \
            f": frame:{frame[1]} or frame:{int(frame[1]) + 1}"
        raise UsageError(f"{given}: expected seconds (12.5) or frame:N "
                         f"(frame:750){near}") from None
    if value < 0:
        raise UsageError(f"{given}: expected a time ≥ 0 (0 is the clip's first frame)")
    if value > MAX_TIME:  # as a scene's numbers: past it, a typo (and past floats)
        raise UsageError(f"{given}: expected a time ≤ 1e9 s")
    return value


MAX_TIME = 10**9
# Seconds (12.5, 1e3, -2 refused after with its own reason), a fraction as `seconds`
# writes one (31/60), or frame:N.
TIME_TEXT = re.compile(r"\s*(frame:\s*[0-9]+|[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)"
                       r"([eE][-+]?[0-9]+)?|[-+]?[0-9]+/[0-9]+)\s*", re.ASCII)


def seconds(time: Fraction) -> str:
    """An exact time as a person writes it: 12.5 for 25/2, and the fraction itself where no
    short decimal is exact (31/60); either reads back through `parse_time`."""
    for places in range(10):
        scaled = time * 10**places
        if scaled.denominator == 1:
            whole, part = divmod(abs(scaled.numerator), 10**places)
            sign = "-" if time < 0 else ""
            return f"{sign}{whole}.{part:0{places}d}" if places else str(time.numerator)
    return str(time)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1, got {text!r}")
    return value


def overrides_from(args) -> list[tuple[str, str, str]]:
    """Command-line values as scene overrides, in precedence order (later wins)."""
    from .scene import parse_override

    out = [(key, value, f"--quality {args.quality}")
           for key, value in QUALITY.get(args.quality, {}).items()]
    for text in args.overrides:
        key, value = parse_override(text)
        out.append((key, value, "--set"))
    first, frames = frame_range(args.frames)
    flags = [("size", "output.size"), ("fps", "output.fps"), ("duration", "scene.duration"),
             ("frames", "output.frames"), ("seed", "scene.seed"), ("crf", "output.crf"),
             ("motion_blur", "render.motion_blur"), ("transparent", "output.transparent"),
             ("loop", "output.loop"), ("crossfade", "output.crossfade")]
    for flag, key in flags:
        value = frames if flag == "frames" else getattr(args, flag)
        if value is not None:
            # --size 1280x720 and --fps 24000/1001 are strings; numbers stay numbers.
            raw = value if flag in ("duration", "frames", "seed", "crf", "motion_blur",
                                    "transparent", "loop", "crossfade") \
                else f'"{value}"'
            out.append((key, raw, f"--{flag.replace('_', '-')}"))
    return out


def loop_range_error() -> UsageError:
    """What a loop given a frame range (--frames A:B, A > 0) is told."""
    return UsageError(f"{option('--frames A:B')}: a loop is rendered whole (its first frames "
                      f"depend on its last): expected {option('--frames N or --duration S')}")


def _decimal(text: str) -> bool:
    """Whether `text` is a whole number in ASCII digits (str.isdigit takes "²" too)."""
    return text.isascii() and text.isdigit()


def frame_range(text: str | None) -> tuple[int, str | None]:
    """--frames N or A:B as (the first frame, the clip's frame count as given)."""
    if text is None or ":" not in text:
        return 0, text
    first, _, end = text.partition(":")
    if not (_decimal(first) and _decimal(end) and int(first) < int(end)):
        raise UsageError(f"--frames {text}: expected A:B with 0 ≤ A < B, e.g. 600:1200")
    return int(first), end
