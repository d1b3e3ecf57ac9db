"""Rendering on a Dask cluster (`--scheduler`).

The simulation is sequential and cheap; drawing and encoding are the expensive, parallel
part. The driver simulates once and ships each task the states of one segment of frames;
the task runs the local pipeline's `drawing.draw_range` on them and returns what it
encoded: the segment as a clip in the output's own format (`render_clip_segment`), or the
segment's frames as files of the sequence's format (`render_frames_segment`). The driver
writes the frames as they arrive and joins clip segments without re-encoding. A task carries all it
needs (its states, or their path in a shared --cache-dir), so when a worker dies the
scheduler runs the task again elsewhere and the result is the same.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import logging
import os
import pickle
import shutil
import signal
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .budget import file_bytes_per_px
from .drawing import draw_range
from .encode import Target
from .encode.files import fitting, require_folder
from .encode.images import Kept, SequenceWriter, is_sequence
from .errors import BoidsError, UsageError, option
from .executor import Cluster, default_workers
from .progress import note, stop_signals
from .scene import Scene
from .segments import (INSTALL, TOPIC, OtherVersion, Shipment, render_clip_segment,
                       render_frames_segment, version)
from .states import FrameState

# States shipped inside one task: above this a segment is cut shorter, unless they travel
# through --cache-dir (the scheduler holds every waiting task's arguments).
TASK_BYTES = 64 * 2**20
# An encoded segment travels back whole: this bounds it (and the worker's memory), by
# bytes per pixel of a frame (budget.file_bytes_per_px).
RESULT_BYTES = 256 * 2**20
# Segments per worker: enough that a slow or restarted worker does not hold up the end.
SEGMENTS_PER_WORKER = 3


def draw_on_cluster(scene: Scene, states: Iterable[FrameState], target: Target,
                    cluster: Cluster, bar, client=None) -> Kept | None:
    """Draw and encode `states` (`target`'s frames) on `cluster` into `target`'s one path,
    advancing the tqdm `bar` as frames are drawn across all workers (`refuse` has passed
    them); returns what a sequence kept of the frames on disk, if anything. `client`: a
    client `connect` gave already (None: connect now)."""
    session = contextlib.nullcontext(client) if client else connect(cluster,
                                                                     quiet=bar.disable)
    with session as client, \
            _Destination(scene, target) as destination, \
            _Shipping(cluster.cache_dir) as shipping:
        run = _Run(client, scene, destination, shipping, cluster.address, bar)
        client.subscribe_topic(TOPIC, run.progress)
        try:
            length = lambda sample: _segment_length(  # noqa: E731
                target.count, _slots(client, cluster.address), sample, destination.kind,
                scene.output.size, shipping.shared, transparent=scene.output.transparent,
                dimensions=scene.dimensions, quiet=bar.disable)
            for segment, chunk in enumerate(_chunks(states, length)):
                run.submit(segment, chunk)
            while run.pending:
                run.collect(block=True)
            bar.update(target.count - bar.n)  # the frames kept after the last segment
        finally:
            # Before the cache is removed: tasks still queued would find their states gone.
            client.cancel(list(run.pending), force=True)
            client.unsubscribe_topic(TOPIC)
    return destination.sequence.kept_account() if destination.sequence else None


def _chunks(states: Iterable[FrameState], length) -> Iterator[list[FrameState]]:
    """`states` in consecutive lists of `length(the first state)` (the last shorter)."""
    states = iter(states)
    head = list(itertools.islice(states, 1))
    if not head:
        return
    per = length(head[0])
    yield head + list(itertools.islice(states, per - 1))
    yield from iter(lambda: list(itertools.islice(states, per)), [])


class _Run:
    """One render's segments in flight: submitted with a bounded look-ahead, collected
    into the destination as they finish, the workers' progress events summed into the
    bar."""

    def __init__(self, client, scene: Scene, destination: _Destination,
                 shipping: _Shipping, scheduler: str, bar):
        self.client, self.scene, self.bar = client, scene, bar
        self.destination, self.shipping, self.scheduler = destination, shipping, scheduler
        self.token = uuid.uuid4().hex[:12]
        self.drawn: dict[int, int] = {}  # segment → frames drawn, from the workers' events
        self.lock = threading.Lock()  # events arrive on the client's own thread
        self.pending: dict = {}  # future → (segment, shipment)
        self.kept = 0  # frames a resumed sequence keeps from disk
        self.tries = 0  # tasks sent: each its own key (a segment sent again, a new one)
        # Workers running other code are left out (a stray worker on a shared cluster
        # would otherwise end the render): those there now, and any that refuses a task.
        self.left_out: set[str] = set()
        for worker, theirs in _other_versions(client).items():
            self._leave_out(worker, theirs)

    def progress(self, event) -> None:
        _, (sender, segment, done) = event
        if sender == self.token:
            with self.lock:
                self.drawn[segment] = max(self.drawn.get(segment, 0), done)

    def submit(self, segment: int, chunk: list[FrameState]) -> None:
        """Send the states of `chunk` the destination wants as task `segment`."""
        wanted = [s for s in chunk if self.destination.wants(s.index)]
        self.kept += len(chunk) - len(wanted)
        if wanted:
            self.destination.frames[segment] = len(wanted)
            self._send(segment, self.shipping.ship(segment, wanted))
        # Bounded look-ahead: the driver holds a few segments' states per worker (workers
        # that join later count too).
        while len(self.pending) >= 2 * _slots(self.client, self.scheduler):
            self.collect(block=True)
        self.collect(block=False)

    def _send(self, segment: int, shipment: Shipment) -> None:
        """Submit task `segment`, to the workers not left out."""
        task = (render_frames_segment if self.destination.sequence else render_clip_segment,
                self.destination.kind)
        where = {}
        if self.left_out:
            where = dict(workers=[w for w in self.client.scheduler_info()["workers"]
                                  if w not in self.left_out], allow_other_workers=False)
            if not where["workers"]:
                raise UsageError(f"{option('--scheduler', self.scheduler)}: no worker runs "
                                 f"boids-render {version()} (left out: "
                                 f"{', '.join(sorted(self.left_out))}); install the same "
                                 f"version, from the same sources, on every worker "
                                 f"({INSTALL})")
        self.tries += 1
        future = self.client.submit(
            *task, self.scene, shipment, self.token, segment, version(),
            key=f"boids-render-{self.token}-{segment:05d}-{self.tries}", pure=False, **where)
        self.pending[future] = (segment, shipment)

    def _leave_out(self, worker: str, theirs: str) -> None:
        """Send no more tasks to `worker`, which runs boids-render `theirs`."""
        if worker not in self.left_out:
            self.left_out.add(worker)
            note(f"{option('--scheduler', self.scheduler)}: {worker} has boids-render "
                 f"{theirs}, this machine {version()}: left out of this render")

    def collect(self, block: bool) -> None:
        """Take in the finished segments (with `block`, wait for one) and move the bar; a
        segment a worker on other code refused is sent again, to the others."""
        while self.pending:
            finished = [f for f in self.pending if f.done()]
            for future in finished:
                segment, shipment = self.pending.pop(future)
                try:
                    result = _result(future, self.scheduler)
                except OtherVersion as exc:
                    if exc.worker is None:
                        raise
                    self._leave_out(exc.worker, exc.theirs)
                    future.release()
                    self._send(segment, shipment)
                    continue
                self.destination.add(segment, result)
                with self.lock:
                    self.drawn[segment] = self.destination.frames[segment]
                self.shipping.done(segment)
                future.release()
            with self.lock:
                done = self.kept + sum(self.drawn.values())
            self.bar.update(max(0, done - self.bar.n))
            if finished or not block:
                return
            time.sleep(0.1)


def _slots(client, scheduler: str) -> int:
    """Tasks the cluster runs at once now (at least 1: workers may come and go); a lost
    scheduler as one line (the question can be the first to find it gone: the connection
    closed under it, or, closed before, not made again)."""
    try:
        return max(1, sum(client.nthreads().values()))
    except OSError:  # what the client raises for both (CommClosedError is one)
        raise BoidsError(_abandoned(scheduler, "the connection to the scheduler was lost")) \
            from None


def _abandoned(scheduler: str, why: str) -> str:
    return (f"{option('--scheduler', scheduler)}: {why}; the render was abandoned (a clip "
            f"is not written; a sequence keeps the frames it finished, and "
            f"{option('--resume')} goes on from them)")


def _result(future, scheduler: str):
    """The task's result; a lost cluster as one line, not a traceback."""
    from distributed.comm import CommClosedError
    from distributed.scheduler import KilledWorker

    try:
        return future.result()
    except (asyncio.CancelledError, concurrent.futures.CancelledError, CommClosedError):
        raise BoidsError(_abandoned(scheduler, "the connection to the scheduler was lost")) \
            from None
    except KilledWorker:
        raise BoidsError(_abandoned(scheduler, "a segment's worker died three times (out of "
                                               "memory?)")) from None


_SILENT = logging.CRITICAL + 1  # above every level Dask logs at


@contextlib.contextmanager
def connect(cluster: Cluster, *, quiet: bool = False) -> Iterator:
    """A Dask client of `cluster`: a LocalCluster of its `workers` single-threaded
    processes for "local", else the scheduler at its address, once a worker has joined
    (unless `quiet`, a line says when it waits for one) and every worker runs this
    version of boids-render."""
    import dask

    # Dask logs its own account of a lost connection or a failed task, tracebacks and
    # all (at CRITICAL, a worker's progress event sent after Ctrl-C closed the client);
    # the render reports these itself, in one line.
    logs = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
            if name.split(".")[0] == "distributed"] + [logging.getLogger("distributed")]
    levels = [log.level for log in logs]
    for log in logs:
        log.setLevel(_SILENT)
    try:
        # A task carries its states (up to TASK_BYTES) on purpose: no warning about it.
        with dask.config.set({"distributed.admin.large-graph-warning-threshold":
                              f"{2 * TASK_BYTES}B"}):
            yield from _clients(cluster.address, cluster.workers or default_workers(), quiet)
    finally:
        for log, level in zip(logs, levels):
            log.setLevel(level)


def _clients(scheduler: str, workers: int, quiet: bool) -> Iterator:
    from distributed import Client, LocalCluster

    if scheduler == "local":
        with contextlib.ExitStack() as stack:
            # Port 0: any free port for the scheduler's HTTP server; two renders at once
            # would both want 8787. On the loopback only, as the scheduler itself: ":0"
            # would open the dashboard to the whole network. A terminal's Ctrl-C (and a
            # hangup, a batch system's SIGUSR1) signals its whole process group: the
            # workers are started with every stop signal blocked but SIGTERM (how their
            # nannies end them), which they keep, so this process alone handles them (a
            # worker interrupted while starting printed dozens of lines of tracebacks).
            # Once they and the client are up, one sent meanwhile reaches this process.
            with _blocked(*(s for s in stop_signals() if s != signal.SIGTERM)):
                _start_resource_tracker()
                cluster = stack.enter_context(LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True,
                    dashboard_address="127.0.0.1:0", silence_logs=_SILENT,
                    preload=["render.local_worker"]))
                client = stack.enter_context(Client(cluster))
            yield client
        return
    _probe(scheduler)
    try:
        client = Client(scheduler, timeout=30)
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"{option('--scheduler', scheduler)}: cannot connect to the Dask "
                         f"scheduler: {exc}") from None
    with client:
        if not quiet and not client.scheduler_info()["workers"]:
            note(f"{option('--scheduler', scheduler)}: no worker has joined yet; waiting up "
                 f"to {WORKER_WAIT_S:g} s for one (`dask worker {scheduler}`)")
        try:
            client.wait_for_workers(1, timeout=WORKER_WAIT_S)
        except TimeoutError:
            raise UsageError(f"{option('--scheduler', scheduler)}: no worker joined within "
                             f"{WORKER_WAIT_S:g} s; start one with `dask worker {scheduler}`") \
                from None
        _check_versions(client, scheduler)
        yield client


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker, if it is not running, from this thread,
    its signals held back as they are (the tracker keeps a hang-up held back too), and
    hold them back again after: the thread that starts it unblocks SIGINT and SIGTERM
    behind it. Left to the cluster's event loop, which spawns the workers, it did that
    there, and the workers spawned after took a Ctrl-C while they started. A semaphore of
    the spawn context needs the tracker."""
    import multiprocessing

    held = signal.pthread_sigmask(signal.SIG_BLOCK, []) \
        if hasattr(signal, "pthread_sigmask") else None
    multiprocessing.get_context("spawn").Lock()
    if held is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


@contextlib.contextmanager
def _blocked(*signals) -> Iterator[None]:
    """Inside, `signals` are held back from this thread and from the threads and
    processes it starts (they inherit the mask, through exec too); delivered on leaving.
    Where threads' masks do not exist (Windows), nothing is held."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def reach(address: str) -> None:
    """UsageError unless a scheduler answers at `address` ("local": one is started): a
    render asks before its flock settles or flies for minutes to its first frame."""
    if address != "local":
        _probe(address)


def _probe(address: str) -> None:
    """Fail in seconds, with a reason, when no Dask scheduler answers there: nothing
    listens, or something else does (its dashboard, a web server, sshd), which would
    keep the client waiting forever or have it read a banner as a message's length."""
    given = option("--scheduler", address)
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if parts.scheme != "tcp":
        raise UsageError(f"{given}: expected 'local' or a tcp:// address (a "
                         f"{parts.scheme}:// scheduler needs security or transport "
                         f"settings that boids-render does not pass)")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if not host or not port:
        raise UsageError(f"{given}: expected 'local' or a scheduler's address such as "
                         f"tcp://10.0.0.5:8786")
    try:
        socket.create_connection((host, port), timeout=10).close()
    except OSError as exc:
        raise UsageError(f"{given}: cannot reach a Dask scheduler there: "
                         f"{exc.strerror or exc}; start one with `dask scheduler`") from None
    if not _answers(f"tcp://{host}:{port}"):
        raise UsageError(f"{given}: something listens there, but no Dask scheduler answered "
                         f"within {ANSWER_S:g} s: give the scheduler's own port (8786 "
                         f"unless it was started with another; 8787 is its dashboard)")


ANSWER_S = 10.0  # s a scheduler has to complete the handshake
WORKER_WAIT_S = 120.0  # s the first worker has to join


def _answers(address: str) -> bool:
    """Whether a Dask scheduler completes distributed's handshake at `address` within
    ANSWER_S (the client's own timeout does not bound the handshake)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from distributed.comm import connect

    async def handshake():
        comm = await asyncio.wait_for(connect(address, timeout=ANSWER_S), ANSWER_S)
        await comm.close()

    # A thread of its own runs the event loop: a notebook's thread already has one.
    with ThreadPoolExecutor(1) as pool:
        try:
            pool.submit(asyncio.run, handshake()).result()
        except Exception:  # a timeout, a closed connection, a banner read as a length
            return False
    return True


def _other_versions(client) -> dict[str, str]:
    """The workers that would not draw with the code a local render would: {address:
    the boids-render they run, or why none}."""
    found = client.run(version, on_error="return")
    return {worker: (theirs if isinstance(theirs, str) else "none: not installed")
            for worker, theirs in found.items() if theirs != version()}


def _check_versions(client, scheduler: str) -> None:
    """UsageError unless some worker draws with the same code as a local render would
    (the others are left out of the render, see `_Run`)."""
    other = _other_versions(client)
    if other and len(other) == len(client.scheduler_info()["workers"]):
        worker, theirs = next(iter(other.items()))
        raise UsageError(f"{option('--scheduler', scheduler)}: {worker} has boids-render "
                         f"{theirs}, this machine {version()}; install the same version, "
                         f"from the same sources, on every worker ({INSTALL})")


# Animated images are not split into segments: why not, for each.
_WHOLE = {
    ".gif": "a GIF's palette comes from the whole clip",
    ".webp": "libwebp assembles an animated WebP whole, each frame against the last",
    ".apng": "an APNG's frames are each encoded against the last, and ffmpeg cannot join "
             "APNG segments without re-encoding",
}


def refuse(target: Target, cache_dir: str | Path | None = None) -> None:
    """UsageError for what a cluster cannot render of `target`, before any work is done:
    more than one output, an animated image (GIF, WebP, APNG), a `cache_dir` this machine
    cannot write the states into, or a machine without Dask's distributed scheduler.
    (What a local render refuses, pipeline.refuse checks.)"""
    if cache_dir is not None:
        require_folder(Path(cache_dir) / "states", option("--cache-dir", cache_dir))
    if len(target.paths) != 1:
        raise UsageError(f"{option('--scheduler')} writes one output at a time: give one "
                         f"{option('-o')} (got {len(target.paths)})")
    output = target.paths[0]
    if "\n" in str(output) and not is_sequence(output):
        raise UsageError(f"{output!r}: its segments are joined by ffmpeg's concat "
                         f"demuxer, whose list cannot hold a name with a line break: "
                         f"rename it")
    why = _WHOLE.get(Path(output).suffix.lower())
    if why and not is_sequence(output):
        raise UsageError(f"{output}: {why}, so it is not split across a cluster; render it "
                         f"without {option('--scheduler')}, or render .mov or PNG frames on "
                         f"the cluster")
    try:
        import distributed  # noqa: F401  (the optional extra)
    except ImportError:
        raise UsageError(f"--scheduler needs Dask's distributed scheduler: {INSTALL}") \
            from None


def _segment_length(total: int, slots: int, sample: FrameState, kind: str,
                    size: tuple[int, int], shared: bool, *, transparent: bool = False,
                    dimensions: int = 2, quiet: bool = False) -> int:
    """Frames per task: a few segments per worker, within what one message should carry
    both ways: the task's states (TASK_BYTES, unless they travel through the shared
    cache) and its encoded result (RESULT_BYTES, frames of `kind` at `size` of a scene of
    `dimensions`, with alpha when `transparent`); unless `quiet`, a note when the states
    shorten them."""
    per = -(-total // (SEGMENTS_PER_WORKER * slots))
    result_per_frame = size[0] * size[1] * (file_bytes_per_px(
        kind, size, dimensions=dimensions, transparent=transparent) or 0.1)
    per = min(per, max(1, int(RESULT_BYTES // result_per_frame)))
    if not shared:
        states = sum(a.nbytes for a in (sample.positions, sample.velocities,
                                        sample.neighbours)) + \
            sum(p.nbytes + v.nbytes for p, v in sample.exposure)
        fit = max(1, TASK_BYTES // max(states, 1))
        if fit < per and not quiet:
            note(f"segments of {fit} frames keep each task's states within "
                 f"{TASK_BYTES // 2**20} MiB; --cache-dir DIR on storage every worker reads "
                 f"allows longer ones ({per} frames)")
        per = min(per, fit)
    return max(1, per)


class _Destination:
    """Where the segments' results go: PNG files into the sequence as they arrive, or clip
    segments into a hidden folder beside the output, joined in order at the end (nothing
    under the output's name until the joined clip is complete)."""

    def __init__(self, scene: Scene, target: Target):
        self.output = output = target.paths[0]
        self.total = target.count
        self.first = target.first
        self.fps = scene.output.fps
        self.overwrite = target.overwrite
        self.sequence = SequenceWriter(
            output, scene, resume=target.resume,
            overwrite=target.overwrite) if is_sequence(output) else None
        # The suffix of the files each task returns: the frames' or the clip's.
        self.kind = self.sequence.suffix if self.sequence else Path(output).suffix.lower()
        self.frames: dict[int, int] = {}  # segment → frames

    def __enter__(self) -> _Destination:
        if self.sequence:
            self.sequence.__enter__()
        else:
            path = Path(self.output)
            path.parent.mkdir(parents=True, exist_ok=True)
            # mkdtemp adds 8 characters to the prefix.
            stem = fitting(path.stem, ".segments-12345678.")
            self.folder = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{stem}.segments-"))
        return self

    def wants(self, index: int) -> bool:
        return self.sequence.wants(index) if self.sequence else True

    def add(self, segment: int, result) -> None:
        if self.sequence:
            for index, data in result:
                self.sequence.write_encoded(index, data)
        else:
            (self.folder / f"{segment:05d}{self.kind}").write_bytes(result)

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.sequence:
            return
        try:
            if exc_type is None:
                from .encode.video import join_clips

                order = sorted(self.frames)
                join_clips([self.folder / f"{segment:05d}{self.kind}" for segment in order],
                           [self.frames[segment] for segment in order], self.output,
                           fps=self.fps, frames=self.total, first=self.first,
                           overwrite=self.overwrite)
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


class _Shipping:
    """How a segment's states reach its task: inside the task itself, or pickled into
    `cache_dir` (storage every worker shares) with the task carrying only the path."""

    def __init__(self, cache_dir: str | Path | None):
        self.shared = cache_dir is not None
        self.folder = None
        if cache_dir is not None:
            Path(cache_dir).mkdir(parents=True, exist_ok=True)
            self.folder = Path(tempfile.mkdtemp(dir=cache_dir, prefix="boids-render-"))
            self.folder.chmod(0o755)  # workers may run as another user

    def __enter__(self) -> _Shipping:
        return self

    def ship(self, segment: int, states: list[FrameState]) -> Shipment:
        if self.folder is None:
            return Shipment(tuple(states))
        path = self.folder / f"{segment:05d}.states"
        with open(path, "wb") as f:
            pickle.dump(states, f, protocol=pickle.HIGHEST_PROTOCOL)
        return Shipment(path=os.fspath(path.resolve()))

    def done(self, segment: int) -> None:
        if self.folder is not None:
            (self.folder / f"{segment:05d}.states").unlink(missing_ok=True)

    def __exit__(self, *exc) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
