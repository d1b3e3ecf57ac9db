"""What a cluster's worker runs: one task draws one segment of frames from the states
the driver shipped (`Shipment`) and returns them encoded, as a clip
(`render_clip_segment`) or as image files (`render_frames_segment`). The driver is cluster.py.
"""

from __future__ import annotations

import functools
import pickle
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .drawing import draw_range
from .encode.images import frame_encoder
from .errors import EncodeError, UsageError
from .scene import Scene
from .states import FrameState

# Progress events: (render token, segment, frames drawn so far in that segment).
TOPIC = "boids-render-progress"
INSTALL = "pip install 'boids-render[distributed]'"


@dataclass(frozen=True)
class Shipment:
    """A segment's states as its task receives them: inside the task (`states`), or the
    path of their pickle in the shared cache (`path`)."""

    states: tuple[FrameState, ...] = ()
    path: str | None = None

    def load(self) -> list[FrameState]:
        if self.path is None:
            return list(self.states)
        with open(self.path, "rb") as f:
            return pickle.load(f)


def render_frames_segment(suffix: str, scene: Scene, shipment: Shipment, token: str,
                          segment: int, driver_version: str) -> list[tuple[int, bytes]]:
    """A cluster task: draw the shipped states and return each frame's (index, file bytes)
    in the frame format of `suffix` (.png, .exr, .jpg: images.FRAME_FORMATS).
    `driver_version`: the driver's boids-render, which this worker must run (one may join
    mid-render)."""
    states = _unpacked(shipment, driver_version)
    report = _reporter(token, segment)
    sink = _EncodedFrames(frame_encoder(suffix, scene), linear=suffix == ".exr")
    for done, _ in enumerate(draw_range(scene, states, sink, workers=1), 1):
        report(done)
    return sink.files


def render_clip_segment(suffix: str, scene: Scene, shipment: Shipment, token: str,
                        segment: int, driver_version: str) -> bytes:
    """A cluster task: draw the shipped states and return them as one clip of `suffix`
    (.mp4, .webm, .mov: the file's bytes), joinable with the other segments.
    `driver_version`: as for `render_frames_segment`."""
    from .encode.video import VideoWriter

    states = _unpacked(shipment, driver_version)
    report = _reporter(token, segment)
    # In the worker's own scratch space, which Dask clears when a killed worker restarts.
    with tempfile.TemporaryDirectory(prefix="boids-render-segment-",
                                     dir=_scratch()) as folder:
        path = Path(folder) / f"segment{suffix}"
        out = scene.output
        try:
            with VideoWriter(path, size=out.size, fps=out.fps, crf=out.crf,
                             frames=len(states), first=states[0].index,
                             transparent=out.transparent,
                             dither=scene.dimensions == 3) as writer:
                for done, _ in enumerate(draw_range(scene, states, writer, workers=1), 1):
                    report(done)
        except EncodeError as exc:  # its scratch file's name means nothing to the driver
            frames = f"frames {states[0].index}–{states[-1].index}"
            raise EncodeError(f"{_named()}: {str(exc).replace(str(path), frames)}") \
                from None
        return path.read_bytes()


class OtherVersion(UsageError):
    """A task refused by a worker that runs other code than the driver: `worker` its
    address (None: not on a worker), so the driver can leave it out, and `theirs` the
    boids-render it runs."""

    def __init__(self, message: str, worker: str | None, theirs: str):
        super().__init__(message)
        self.worker, self.theirs = worker, theirs

    def __reduce__(self):  # back to the driver with its worker
        return OtherVersion, (str(self), self.worker, self.theirs)


def _unpacked(shipment: Shipment, driver_version: str) -> list[FrameState]:
    if driver_version != version():
        worker = _worker()
        raise OtherVersion(f"{_named()} has boids-render {version()}, the driver "
                           f"{driver_version}; install the same version, from the same "
                           f"sources, on every worker ({INSTALL})",
                           None if worker is None else worker.address, version())
    return shipment.load()


def _named() -> str:
    """The worker this task runs on, as a message names it."""
    worker = _worker()
    return "a worker" if worker is None else f"the worker at {worker.address}"


def version() -> str:
    """The boids-render this process runs: its version and the digest of its sources, so
    a worker with a modified copy of the same version does not draw other frames."""
    from . import __version__

    return f"{__version__} (sources {_sources()})"


@functools.cache
def _sources() -> str:
    from .sim.cache import sources_digest

    return sources_digest(Path(__file__).resolve().parent)


def _worker():
    """The Dask worker running this task; None outside one."""
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


def _scratch() -> str | None:
    worker = _worker()
    return worker.local_directory if worker else None


def _reporter(token: str, segment: int):
    worker = _worker()
    if worker is None:
        return lambda done: None
    return lambda done: worker.log_event(TOPIC, (token, segment, done))


class _EncodedFrames:
    """A FrameWriter that keeps each frame as its file's bytes, by `encode(pixels, index)`
    (`linear`: of a 3D frame's float image, as a local sequence's, see `draw_range`)."""

    def __init__(self, encode, *, linear: bool = False):
        self.encode = encode
        self.linear = linear
        self.files: list[tuple[int, bytes]] = []

    def __enter__(self) -> _EncodedFrames:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def wants(self, index: int) -> bool:
        return True

    def write(self, index: int, pixels) -> None:
        self.files.append((index, self.encode(pixels, index)))
