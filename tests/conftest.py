"""Shared helpers for the command-line tests: run the CLI as a function, write small scenes."""

from __future__ import annotations

import render.sim  # noqa: F401  # before numba is first imported: its cache folder and target

import re  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import imageio_ffmpeg  # noqa: E402
import numba  # noqa: E402
import pytest  # noqa: E402

from render.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCENES = ROOT / "scenes"
# Shipped scenes too big to settle in a test run, with the --set options that shrink
# them: the murmuration's 20,000 birds as 1,000 settled for 3 s, the landing brought into
# the first seconds (the hunt starts at 2 s).
SMALLER = {"murmuration": ("--set", "flock.count=1000", "--set", "scene.settle_steps=300",
                             "--set", "roost.landing_at=3.0", "--set",
                             "roost.landing_spread=2.0")}
# The web loop's film under its own camera, its stretches of frames drawn as plain clips (a
# loop is drawn whole; tests/test_loop3d.py and test_scene.py cover it as a loop).
SMALLER["web-loop"] = (*SMALLER["murmuration"], "--set", "output.loop=false")

# A small, fast scene: 200 birds on an 80 x 45 torus, few settling steps, tiny frames.
SMALL_SCENE = """\
[scene]
name = "small"
seed = 3
duration = 1.0
settle_steps = 10

[world]
width = 80.0
height = 45.0
boundary = "wrap"

[flock]
count = 200
init = "uniform"

[output]
size = "160x90"
fps = 30
"""


class CliResult:
    """Exit code and captured output of one `main(argv)` call."""

    def __init__(self, code: int, out: str, err: str):
        self.code, self.out, self.err = code, out, err

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]

    def __repr__(self) -> str:
        return f"CliResult(code={self.code!r}, out={self.out!r}, err={self.err!r})"


@pytest.fixture
def cli(capsys):
    """`cli(*argv)` runs the command line in-process and returns a CliResult.

    argparse exits through SystemExit for --help, --version and malformed options; that
    exit status is returned like any other.
    """

    def run(*argv) -> CliResult:
        capsys.readouterr()
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def write_scene(tmp_path):
    """`write_scene(text, name=...)` writes a TOML scene into tmp_path and returns its path."""

    def write(text: str, name: str = "scene.toml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write


@pytest.fixture(scope="session")
def small_scene_text() -> str:
    """The TOML of the small scene, for fixtures wider than one test."""
    return SMALL_SCENE


@pytest.fixture
def small_scene(write_scene) -> Path:
    return write_scene(SMALL_SCENE, "small.toml")


@pytest.fixture(scope="module")
def one_numba_thread():
    """Run tiny flocks on one thread (`pytestmark = pytest.mark.usefixtures(...)`): numba's
    OpenMP hand-offs cost more than a 200-bird step. Results do not depend on threads."""
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)


def timecode(path) -> str | None:
    """The timecode ffmpeg reads in a clip's streams, if any."""
    proc = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", str(path)],
                          capture_output=True, text=True)
    found = re.search(r"timecode\s*:\s*(\S+)", proc.stderr)
    return found.group(1) if found else None


def chroma_location(path) -> str:
    """Where ffmpeg's decoder says the first frame's 4:2:0 chroma samples sit."""
    proc = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", str(path),
                           "-frames:v", "1", "-vf", "showinfo", "-f", "null", "-"],
                          capture_output=True, text=True)
    return re.search(r" cl:(\w+)", proc.stderr).group(1)


def default_sigint() -> None:
    """For a child's preexec_fn: Ctrl-C's and a hang-up's default actions back. A job a
    shell starts in the background inherits SIGINT ignored (and nohup, SIGHUP), and the
    render then leaves them so: a test that interrupts a render would fail only because
    of how the suite was run."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def children(pid: int) -> list[int]:
    """Pids of the processes whose parent is `pid` (read from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        if int(text[text.rindex(")") + 2:].split()[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def wait_until_writing(proc: subprocess.Popen, folder: Path, timeout_s: float = 60) -> None:
    """Return once the render `proc` has written bytes into a temporary in `folder`."""
    deadline = time.monotonic() + timeout_s
    while not any(p.stat().st_size > 0 for p in folder.iterdir() if "partial" in p.name):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the render never started writing"
        time.sleep(0.02)
