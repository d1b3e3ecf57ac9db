"""Frames into ffmpeg's pipe: lent by vmsplice, yet never changed under ffmpeg's feet."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from fractions import Fraction

import imageio_ffmpeg
import numpy as np
import pytest

from render.encode import pipe
from render.encode.video import VideoWriter

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="vmsplice is Linux's")


def _page_aligned(nbytes: int, value: int) -> np.ndarray:
    """A byte array filled with `value` that starts on a page, so lent pages are whole."""
    page = os.sysconf("SC_PAGE_SIZE")
    raw = np.empty(nbytes + page, np.uint8)
    start = -raw.ctypes.data % page
    out = raw[start:start + nbytes]
    out[:] = value
    return out


@linux_only
def test_a_frame_changed_after_hand_over_reaches_the_reader_as_it_was():
    assert pipe._vmsplice() is not None
    read_end, write_end = os.pipe()
    import fcntl

    capacity = fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ)
    frame = _page_aligned(16 * capacity, 1)
    received = bytearray()
    changed = threading.Event()

    def reader():
        # Read all but the pipe's worth, then wait until the frame has been changed: a
        # page still lent to the pipe would now carry 2s.
        while len(received) < frame.nbytes - capacity:
            received.extend(os.read(read_end, frame.nbytes - capacity - len(received)))
        changed.wait(10)
        while len(received) < frame.nbytes:
            received.extend(os.read(read_end, frame.nbytes - len(received)))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        pipe.hand_over(write_end, frame, capacity)
        frame[:] = 2
    finally:
        changed.set()
        thread.join(10)
        os.close(write_end)
        os.close(read_end)
    assert len(received) == frame.nbytes
    assert set(received) == {1}


def test_hand_over_copies_everything_when_the_capacity_is_unknown():
    read_end, write_end = os.pipe()
    frame = np.arange(1000, dtype=np.uint8)
    pipe.hand_over(write_end, frame, 0)
    os.close(write_end)
    assert os.read(read_end, 2000) == frame.tobytes()
    os.close(read_end)


def test_hand_over_reports_a_reader_that_has_gone():
    read_end, write_end = os.pipe()
    os.close(read_end)
    with pytest.raises(BrokenPipeError):
        pipe.hand_over(write_end, _page_aligned(1 << 20, 7), 65536)
    os.close(write_end)


def test_frames_larger_than_the_pipe_come_back_as_drawn(tmp_path):
    # 1280x720 BGRA is 3.5 MiB, so most of each frame is lent; one buffer is redrawn for
    # every frame, as a canvas is. Each frame is a grid of grey blocks shifted by its index:
    # a lost, doubled or late-changed byte would shift or recolour them.
    width, height, frames = 1280, 720, 6
    levels = np.array([40, 90, 140, 190])
    cols, rows = np.arange(width) // 160, np.arange(height) // 90

    def grey(k):
        return levels[(cols[None, :] + rows[:, None] + k) % 4].astype(np.uint8)

    buffer = np.empty((height, width, 4), np.uint8)
    with VideoWriter(tmp_path / "c.mp4", size=(width, height), fps=Fraction(25), crf=18,
                     frames=frames) as writer:
        for k in range(frames):
            buffer[:, :, :3] = grey(k)[:, :, None]
            buffer[:, :, 3] = 255
            writer.write(k, buffer)
    proc = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", "-i",
                           str(tmp_path / "c.mp4"), "-f", "rawvideo", "-pix_fmt", "gray",
                           "-"], capture_output=True, check=True)
    decoded = np.frombuffer(proc.stdout, np.uint8).reshape(frames, height, width)
    centres = np.ix_(np.arange(45, height, 90), np.arange(80, width, 160))
    for k in range(frames):
        error = np.abs(decoded[k][centres].astype(int) - grey(k)[centres]).max()
        assert error <= 4, f"frame {k} off by {error} levels"


@linux_only
def test_a_clip_is_byte_identical_whether_frames_are_lent_or_copied(cli, small_scene, tmp_path,
                                                                     monkeypatch):
    # 1280x720 frames (3.5 MiB) are mostly lent; x264 encodes the same frames to the same
    # bytes, so any frame changed under ffmpeg's feet would show here.
    args = ("--size", "1280x720", "--frames", "24", "--quiet")
    assert cli(small_scene, "-o", tmp_path / "lent.mp4", *args).code == 0
    monkeypatch.setattr(pipe, "_vmsplice", lambda: None)
    assert cli(small_scene, "-o", tmp_path / "copied.mp4", *args).code == 0
    assert (tmp_path / "lent.mp4").read_bytes() == (tmp_path / "copied.mp4").read_bytes()
