"""The drawing pool: frames drawn by threads, handed to a writer in frame order
(`draw_range`). The local pipeline and every cluster task draw through it."""

from __future__ import annotations

import queue
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .draw.surface import Canvas
from .encode import keeps_straight
from .encode import FrameWriter
from .scene import Scene
from .states import FrameState


def draw_range(scene: Scene, states: Iterable[FrameState], writer: FrameWriter, *,
               workers: int) -> Iterator[tuple[int, np.ndarray | None]]:
    """Render this frame range from these states: each state `writer` wants is drawn (by
    `workers` threads) and written, in frame order. Yields (index, pixels) after each write,
    pixels None for a frame the writer keeps from disk; the pixels stay valid until the
    next one is asked for. A writer whose `linear` is true (an OpenEXR sequence) gets a 3D
    frame's float image with its pixels, and the writer of a transparent 3D scene its
    straight colours (`draw3d.frame.Pixels`)."""
    linear = scene.dimensions == 3 and getattr(writer, "linear", False)
    with DrawingPool(scene, workers, linear=linear) as drawing:
        for state in states:
            if writer.wants(state.index):
                drawing.submit(state)
            else:
                drawing.skip(state.index)
            for index, pixels in drawing.ready():
                if pixels is not None:
                    writer.write(index, pixels)
                yield index, pixels
        for index, pixels in drawing.ready(all_=True):
            if pixels is not None:
                writer.write(index, pixels)
            yield index, pixels


class DrawingPool:
    """Frames drawn by a pool of threads (cairo, numpy and the numba kernels release the
    GIL while they work), handed back in frame order. Each thread draws onto a Canvas
    borrowed from a small pool and returned once its pixels have been written, so memory
    stays bounded whatever the clip's length, and the pixels are the same whichever thread
    drew them. `linear`: each canvas keeps a 3D frame's float image too (`Canvas`)."""

    def __init__(self, scene: Scene, workers: int, *, linear: bool = False):
        self.scene = scene
        self.window = 2 * workers  # frames in flight: enough to keep every thread busy
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="draw")
        self.canvases: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(self.window + 1):
            self.canvases.put(Canvas(scene.output.size, linear=linear,
                                     straight=keeps_straight(scene)))
        self.pending: deque = deque()  # (index, future or None for a skipped frame)

    def __enter__(self) -> DrawingPool:
        return self

    def __exit__(self, *exc) -> None:
        for _, future in self.pending:
            if future is not None:
                future.cancel()
        self.pool.shutdown(wait=True, cancel_futures=True)

    def submit(self, state: FrameState) -> None:
        self.pending.append((state.index, self.pool.submit(self._draw, state)))

    def skip(self, index: int) -> None:
        self.pending.append((index, None))

    def _draw(self, state: FrameState):
        canvas = self.canvases.get()
        return canvas, state.draw(canvas, self.scene)

    def ready(self, all_: bool = False) -> Iterator[tuple[int, np.ndarray | None]]:
        """Yield (index, pixels or None) in frame order: the oldest frames once more than a
        window's worth are in flight (all of them with all_). The pixels stay valid until
        the consumer asks for the next frame, when their canvas goes back to the pool."""
        while self.pending and (all_ or len(self.pending) > self.window):
            index, future = self.pending.popleft()
            if future is None:
                yield index, None
                continue
            canvas, pixels = future.result()
            yield index, pixels
            self.canvases.put(canvas)
