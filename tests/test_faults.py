"""When things go wrong: interruptions, encoder failures, full disks, existing outputs,
resumed PNG sequences, requests too large to work, and the exit codes of each.

Signal and file-size-limit tests run the real command in a subprocess (a signal or an
rlimit must reach the process and its ffmpeg child); the rest call `main` in-process.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import imageio_ffmpeg
import numpy as np
import pytest

import render.budget as budget
import render.encode.video as video
import render.contact_sheet as contact_sheet
import render.drawing as drawing
import render.states as states
import render.stills as stills
from render.cli import main

from conftest import children, default_sigint, wait_until_writing

PROC = Path("/proc")
DRAW = states.draw_frame
pytestmark = pytest.mark.usefixtures("one_numba_thread")


def leftovers(folder: Path) -> list[str]:
    """Temporary files (hidden or partial) in `folder`."""
    return sorted(p.name for p in folder.iterdir()
                  if p.name.startswith(".") or "partial" in p.name)


def command_line(pid: int) -> str:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def count_draws(monkeypatch, fail_at: int | None = None,
                exc: BaseException = KeyboardInterrupt()) -> list[int]:
    """Record the frame counts drawn so far; raise `exc` at draw number `fail_at`."""
    real = DRAW
    drawn: list[int] = []

    def draw(*args, **kwargs):
        if fail_at is not None and len(drawn) == fail_at:
            raise exc
        drawn.append(len(drawn))
        return real(*args, **kwargs)

    monkeypatch.setattr(states, "draw_frame", draw)
    return drawn


def frame_names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def render_subprocess(argv, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "render", *map(str, argv)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            **kwargs)


# ---------------------------------------------------------------------------------------
# Ctrl-C and SIGTERM


@pytest.mark.slow
@pytest.mark.skipif(not PROC.is_dir(), reason="needs /proc to find ffmpeg")
# SIGXCPU, SIGUSR1 and SIGUSR2 (a batch system's warnings before it kills a job) ended the
# process at once, its temporary clip left beside the target.
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP,
                                    signal.SIGXCPU, signal.SIGUSR1, signal.SIGUSR2],
                         ids=["SIGINT", "SIGTERM", "SIGHUP", "SIGXCPU", "SIGUSR1", "SIGUSR2"])
def test_signal_stops_a_render_fast_kills_ffmpeg_and_leaves_nothing(
        small_scene, tmp_path, signum):
    out = tmp_path / "out"
    out.mkdir()
    target = out / "clip.mp4"
    # Minutes of work if left alone.
    proc = render_subprocess([small_scene, "-o", target, "--frames", "20000",
                              "--size", "640x360", "-q"], preexec_fn=default_sigint)
    try:
        wait_until_writing(proc, out)
        encoders = children(proc.pid)
        assert encoders, "ffmpeg should be running"
        sent = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
        elapsed = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert elapsed < 2.0, f"took {elapsed:.2f} s to stop"
    assert proc.returncode == 130, err
    assert err.strip() == "boids-render: interrupted"
    assert list(out.iterdir()) == []  # no clip, no temporary
    for pid in encoders:
        assert not (PROC / str(pid)).exists(), f"ffmpeg {pid} outlived the render"


@pytest.mark.slow
def test_a_hang_up_under_nohup_leaves_the_render_going(small_scene, tmp_path):
    out = tmp_path / "out"
    out.mkdir()

    def nohup():
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    proc = render_subprocess([small_scene, "-o", out / "clip.mp4", "--frames", "20000",
                              "--size", "640x360", "-q"], preexec_fn=nohup)
    try:
        wait_until_writing(proc, out)
        proc.send_signal(signal.SIGHUP)
        time.sleep(1.0)
        assert proc.poll() is None, proc.communicate()[1]
    finally:
        proc.kill()
        proc.wait()


def test_interrupt_landing_inside_a_numba_kernel_still_exits_130(
        cli, small_scene, tmp_path, monkeypatch):
    # CPython reports a KeyboardInterrupt raised while compiled code runs as a SystemError
    # ("returned a result with an exception set") caused by it.
    def kernel_interrupted():
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise SystemError("CPUDispatcher(<function step>) returned a result with an "
                              "exception set") from exc

    monkeypatch.setattr(states, "draw_frame", lambda *a, **k: kernel_interrupted())
    out = tmp_path / "out"
    r = cli(small_scene, "-o", out / "clip.mp4", "--frames", "3", "-q")
    assert r.code == 130
    assert r.err_lines == ["boids-render: interrupted"]
    assert not out.exists()  # no clip, no temporary, nor the folder made for them


def test_an_interrupt_python_cannot_raise_still_stops_in_one_line(
        cli, small_scene, tmp_path, monkeypatch):
    """Ctrl-C landing in a garbage collector's callback (Dask's, in a cluster render) or a
    __del__: Python prints the exception with its traceback and drops it; the render
    stops all the same, saying only that it was interrupted."""
    from render import progress

    class Collected:
        def __del__(self):
            progress.interrupt()

    real = states.draw_frame

    def drawn(*args, **kwargs):
        Collected()  # dropped at once: its __del__ runs here
        return real(*args, **kwargs)

    monkeypatch.setattr(states, "draw_frame", drawn)
    # Python's own hook, which prints to stderr (pytest's would keep it from the output).
    monkeypatch.setattr(sys, "unraisablehook", sys.__unraisablehook__)
    out = tmp_path / "out"
    r = cli(small_scene, "-o", out / "clip.mp4", "--frames", "3", "-q")
    assert r.code == 130
    assert r.err_lines == ["boids-render: interrupted"], r.err
    assert sys.unraisablehook is sys.__unraisablehook__  # put back


def test_an_error_after_a_dropped_interrupt_is_the_interrupt(cli, small_scene, tmp_path,
                                                             monkeypatch):
    """Ctrl-C while numba compiles lands in llvmlite's callback from C, which drops it;
    the compilation then fails ("RuntimeError: no compiled object yet ..."), which read
    as a damaged kernel cache to delete. It is the interrupt."""
    from render import progress

    def compiling(*args, **kwargs):
        try:
            progress.interrupt()
        except KeyboardInterrupt:
            pass  # dropped, as a callback from C drops it
        raise RuntimeError("no compiled object yet for <Library '_convert'>")

    monkeypatch.setattr(states, "draw_frame", compiling)
    out = tmp_path / "out"
    r = cli(small_scene, "-o", out / "clip.mp4", "--frames", "3", "-q")
    assert r.code == 130 and r.err_lines == ["boids-render: interrupted"], r.err
    assert not out.exists()
    # the next run starts uninterrupted: the same error is an internal one there
    monkeypatch.setattr(states, "draw_frame", lambda *a, **k: (_ for _ in ()).throw(
        RuntimeError("no compiled object yet")))
    r = cli(small_scene, "-o", out / "clip.mp4", "--frames", "3", "-q")
    assert r.code == 1 and "interrupted" not in r.err, r.err


def test_sigterm_handler_is_restored_after_main(small_scene, tmp_path):
    before = signal.getsignal(signal.SIGTERM)
    assert main([str(small_scene), "--check"]) == 0
    assert signal.getsignal(signal.SIGTERM) is before


def test_ffmpeg_runs_in_its_own_session_so_a_terminal_ctrl_c_reaches_only_us(
        small_scene, tmp_path, monkeypatch):
    # A terminal's Ctrl-C signals the whole foreground process group; ffmpeg would then
    # finish the file on its own and race the kill.
    seen = []
    real = states.draw_frame

    def draw(*args, **kwargs):
        if not seen:
            # Only the encoder: other tests may have left helpers (multiprocessing's
            # resource tracker) among this process's children.
            seen.extend(os.getsid(pid) for pid in children(os.getpid())
                        if "ffmpeg" in command_line(pid))
        return real(*args, **kwargs)

    monkeypatch.setattr(states, "draw_frame", draw)
    assert main([str(small_scene), "-o", str(tmp_path / "c.mp4"), "--frames", "2", "-q"]) == 0
    assert seen and os.getsid(0) not in seen


# ---------------------------------------------------------------------------------------
# PNG sequences: --resume and --no-overwrite


@pytest.fixture
def uninterrupted(cli, small_scene, tmp_path) -> Path:
    """Six frames rendered in one go, to compare against."""
    r = cli(small_scene, "-o", f"{tmp_path}/whole/", "--frames", "6", "-q")
    assert r.code == 0, r.err
    return tmp_path / "whole"


def test_resume_keeps_complete_frames_and_renders_the_rest_identically(
        cli, small_scene, tmp_path, monkeypatch, uninterrupted):
    seq = tmp_path / "seq"
    count_draws(monkeypatch, fail_at=4)
    r = cli(small_scene, "-o", f"{seq}/", "--frames", "6", "-q")
    assert r.code == 130
    assert frame_names(seq) == [f"frame_0000{i}.png" for i in range(4)]
    # A truncated frame, as a copy or another tool might leave one: drawn again.
    (seq / "frame_00001.png").write_bytes((seq / "frame_00001.png").read_bytes()[:100])
    kept = {name: (seq / name).stat().st_ino for name in ("frame_00000.png",
                                                          "frame_00002.png")}
    drawn = count_draws(monkeypatch)
    r = cli(small_scene, "-o", f"{seq}/", "--frames", "6", "--resume")
    assert r.code == 0, r.err
    assert len(drawn) == 3  # frames 1 (truncated), 4 and 5
    assert "kept 3 frames already there (--resume), wrote 3; 1 frame there was drawn " \
           "again" in r.err, r.err
    assert {name: (seq / name).stat().st_ino for name in kept} == kept
    assert frame_names(seq) == frame_names(uninterrupted)
    for name in frame_names(seq):
        assert (seq / name).read_bytes() == (uninterrupted / name).read_bytes(), name


@pytest.mark.parametrize("args", [("-o", "new/deeper/clip.mp4"), ("-o", "new/seq/"),
                                  ("-o", "new/clip.webm", "--stats", "new/too/s.csv"),
                                  ("--still", "0", "-o", "new/still.png"),
                                  ("--contact-sheet", "new/deeper/sheet.png")])
def test_an_interrupted_render_leaves_no_folder_it_made(cli, small_scene, tmp_path,
                                                       monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    count_draws(monkeypatch, fail_at=0)
    r = cli(small_scene, *args, *(() if "-o" not in args or "--still" in args
                                  else ("--frames", "3")), "-q")
    assert r.code == 130, r.err
    assert frame_names(tmp_path) == ["small.toml"]


def test_an_interrupted_sequence_keeps_its_folder_and_frames(cli, small_scene, tmp_path,
                                                              monkeypatch):
    count_draws(monkeypatch, fail_at=2)
    r = cli(small_scene, "-o", f"{tmp_path}/new/seq/", "--frames", "4", "-q")
    assert r.code == 130, r.err
    assert frame_names(tmp_path / "new" / "seq") == ["frame_00000.png", "frame_00001.png"]


def test_resume_redraws_a_frame_of_the_wrong_size(cli, small_scene, tmp_path, monkeypatch):
    seq = tmp_path / "seq"
    assert cli(small_scene, "-o", f"{seq}/", "--frames", "2", "--size", "80x44",
               "-q").code == 0
    drawn = count_draws(monkeypatch)
    r = cli(small_scene, "-o", f"{seq}/", "--frames", "2", "--size", "160x90", "--resume")
    assert r.code == 0, r.err
    assert len(drawn) == 2
    # Said, though none was kept: the frames there are gone.
    assert "kept 0 frames already there (--resume), wrote 2; 2 frames there were drawn " \
           "again: cut short, or not this render's" in r.err, r.err


@pytest.mark.parametrize("change, drawn_again", [
    (("--frames", "4"), 2),  # a longer clip: the same first frames, kept
    (("--frames", "2", "--transparent"), 2),  # another picture: RGBA beside RGB frames
    (("--frames", "2", "--seed", "9"), 2),
    (("--frames", "2", "--set", "output.crf=30"), 0),  # a clip's quality draws no frame
])
def test_resume_keeps_only_frames_of_the_same_picture(cli, small_scene, tmp_path,
                                                      monkeypatch, change, drawn_again):
    seq = tmp_path / "seq"
    assert cli(small_scene, "-o", f"{seq}/", "--frames", "2", "-q").code == 0
    drawn = count_draws(monkeypatch)
    r = cli(small_scene, "-o", f"{seq}/", "--resume", "-q", *change)
    assert r.code == 0, r.err
    assert len(drawn) == drawn_again


def test_resume_draws_again_a_frame_copied_under_another_frames_name(cli, small_scene,
                                                                      tmp_path, monkeypatch):
    """Frame 0 copied over frame 2 (a mis-renamed or mis-split sequence) is a frame of the
    same render, but not frame 2: drawn again, and the sequence equals an uninterrupted
    one."""
    seq = tmp_path / "seq"
    assert cli(small_scene, "-o", f"{seq}/", "--frames", "3", "-q").code == 0
    whole = (seq / "frame_00002.png").read_bytes()
    (seq / "frame_00002.png").write_bytes((seq / "frame_00000.png").read_bytes())
    drawn = count_draws(monkeypatch)
    r = cli(small_scene, "-o", f"{seq}/", "--frames", "3", "--resume", "-q")
    assert r.code == 0, r.err
    assert len(drawn) == 1
    assert (seq / "frame_00002.png").read_bytes() == whole


def test_without_resume_every_frame_is_drawn_again(cli, small_scene, tmp_path, monkeypatch,
                                                   uninterrupted):
    drawn = count_draws(monkeypatch)
    assert cli(small_scene, "-o", f"{uninterrupted}/", "--frames", "6", "-q").code == 0
    assert len(drawn) == 6


def test_no_overwrite_skips_existing_frames_whatever_they_hold(
        cli, small_scene, tmp_path, monkeypatch):
    seq = tmp_path / "seq"
    seq.mkdir()
    (seq / "frame_00001.png").write_bytes(b"another machine's")
    drawn = count_draws(monkeypatch)
    r = cli(small_scene, "-o", f"{seq}/", "--frames", "3", "--no-overwrite")
    assert r.code == 0, r.err
    assert len(drawn) == 2
    assert (seq / "frame_00001.png").read_bytes() == b"another machine's"
    assert "kept 1 frame already there (--no-overwrite), wrote 2; 1 of them was not " \
        "drawn by this render" in r.err, r.err
    assert frame_names(seq) == ["frame_00000.png", "frame_00001.png", "frame_00002.png"]


def test_frames_another_render_left_are_said_under_quiet(cli, small_scene, tmp_path):
    """--quiet said nothing of them (exit 0, the folder mixing two renders unnoticed); of
    frames this render drew before, it still says nothing."""
    seq = tmp_path / "seq"
    assert cli(small_scene, "-o", f"{seq}/", "--frames", "3", "-q").code == 0
    r = cli(small_scene, "-o", f"{seq}/", "--frames", "4", "--no-overwrite", "-q")
    assert r.code == 0 and r.err == "", r.err
    (seq / "frame_00004.png").write_bytes(b"")
    r = cli(small_scene, "-o", f"{seq}/", "--frames", "6", "--no-overwrite", "-q")
    assert r.code == 0, r.err
    assert "kept 5 frames already there (--no-overwrite), wrote 1; 1 of them was not " \
        "drawn by this render" in r.err, r.err


def test_no_overwrite_keeps_a_frame_another_machine_finished_meanwhile(
        cli, small_scene, tmp_path, monkeypatch):
    # Two machines render into one folder; both start frame 1, the other finishes first.
    seq = tmp_path / "seq"
    real = states.draw_frame
    calls = []

    def draw(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            (seq / "frame_00001.png").write_bytes(b"the other machine's frame 1")
        return real(*args, **kwargs)

    monkeypatch.setattr(states, "draw_frame", draw)
    r = cli(small_scene, "-o", f"{seq}/", "--frames", "3", "--no-overwrite", "-q")
    assert r.code == 0, r.err
    assert (seq / "frame_00001.png").read_bytes() == b"the other machine's frame 1"
    assert leftovers(seq) == []


# ---------------------------------------------------------------------------------------
# Clips: replacing and refusing


def test_finished_clip_replaces_an_existing_file_only_at_the_end(
        cli, small_scene, tmp_path, monkeypatch):
    target = tmp_path / "clip.mp4"
    target.write_bytes(b"an earlier render")
    before = target.stat().st_ino
    during = []
    real = states.draw_frame

    def draw(*args, **kwargs):
        during.append(target.read_bytes())
        return real(*args, **kwargs)

    monkeypatch.setattr(states, "draw_frame", draw)
    r = cli(small_scene, "-o", target, "--frames", "4", "-q")
    assert r.code == 0, r.err
    assert during == [b"an earlier render"] * 4  # untouched while rendering
    assert target.stat().st_ino != before  # a new file renamed over it, not rewritten
    assert imageio_ffmpeg.count_frames_and_secs(str(target))[0] == 4
    assert frame_names(tmp_path) == ["clip.mp4", "small.toml"]


def test_no_overwrite_refuses_an_existing_clip_before_any_work(
        cli, small_scene, tmp_path, monkeypatch):
    target = tmp_path / "clip.mp4"
    target.write_bytes(b"keep me")

    def no_work(*args, **kwargs):
        raise AssertionError("nothing may be simulated, drawn or encoded")

    monkeypatch.setattr(states, "Simulation", no_work)
    monkeypatch.setattr(video, "ffmpeg_exe", no_work)
    r = cli(small_scene, "-o", target, "--frames", "4", "--no-overwrite", "-q")
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    assert "exists" in r.err and "--no-overwrite" in r.err
    assert target.read_bytes() == b"keep me"


def test_a_folder_at_a_clips_name_is_refused_before_any_work(cli, small_scene, tmp_path,
                                                              monkeypatch):
    (tmp_path / "clip.mp4").mkdir()

    def no_work(*args, **kwargs):
        raise AssertionError("nothing may be simulated, drawn or encoded")

    monkeypatch.setattr(states, "Simulation", no_work)
    r = cli(small_scene, "-o", tmp_path / "clip.mp4", "--frames", "4", "-q")
    assert r.code == 2 and "clip.mp4: is a folder" in r.err, r.err


def test_a_folder_at_a_frames_name_is_refused_before_any_work(cli, small_scene, tmp_path,
                                                               monkeypatch):
    # Found when frame 2 was written, frames 0 and 1 drawn for nothing (exit 1).
    (tmp_path / "f" / "frame_00002.png").mkdir(parents=True)
    (tmp_path / "f" / "frame_00009.png").mkdir()  # past the frames rendered: no matter

    def no_work(*args, **kwargs):
        raise AssertionError("nothing may be simulated, drawn or encoded")

    monkeypatch.setattr(states, "Simulation", no_work)
    for extra in ((), ("--check",), ("--resume",)):
        r = cli(small_scene, "-o", f"{tmp_path}/f/", "--frames", "4", "-q", *extra)
        assert r.code == 2 and r.err_lines[-1] == (
            f"boids-render: {tmp_path}/f/: {tmp_path}/f/frame_00002.png is a folder, where "
            f"frame 2 goes: move it, or write the frames elsewhere"), r.err
    assert sorted(p.name for p in (tmp_path / "f").iterdir()) == ["frame_00002.png",
                                                                  "frame_00009.png"]


def test_no_overwrite_writes_a_clip_that_does_not_exist_yet(cli, small_scene, tmp_path):
    r = cli(small_scene, "-o", tmp_path / "new.mp4", "--frames", "2", "--no-overwrite", "-q")
    assert r.code == 0, r.err
    assert (tmp_path / "new.mp4").is_file()


def test_resume_of_a_clip_is_bad_input(cli, small_scene, tmp_path):
    r = cli(small_scene, "-o", tmp_path / "clip.mp4", "--resume", "-q")
    assert r.code == 2
    assert "PNG sequences" in r.err
    assert not (tmp_path / "clip.mp4").exists()


def test_resume_runs_again_the_command_that_wrote_a_sequence_beside_a_clip(cli, small_scene,
                                                                          tmp_path):
    """The sequence keeps its finished frames when one of several outputs failed; the
    same command line with --resume completes it (it was refused for the clip and the
    trajectories beside it, which are written whole again)."""
    outputs = ["-o", f"{tmp_path}/f/", "-o", tmp_path / "c.mp4", "-o", tmp_path / "t.npz"]
    assert cli(small_scene, *outputs, "--frames", "6", "-q").code == 0
    whole = {p.name: p.read_bytes() for p in (tmp_path / "f").iterdir()}
    clip, states = (tmp_path / "c.mp4").read_bytes(), (tmp_path / "t.npz").read_bytes()
    for name in ("frame_00003.png", "frame_00004.png", "frame_00005.png"):
        (tmp_path / "f" / name).unlink()
    (tmp_path / "c.mp4").unlink()
    kept = tmp_path / "f" / "frame_00000.png"
    os.utime(kept, ns=(10**18, 10**18))  # a finished frame is kept, not written again
    r = cli(small_scene, *outputs, "--frames", "6", "--resume", "-q")
    assert r.code == 0, r.err
    assert kept.stat().st_mtime_ns == 10**18
    assert {p.name: p.read_bytes() for p in (tmp_path / "f").iterdir()} == whole
    assert (tmp_path / "c.mp4").read_bytes() == clip
    assert (tmp_path / "t.npz").read_bytes() == states
    # Without a sequence to complete, it is still refused.
    r = cli(small_scene, "-o", tmp_path / "c.mp4", "-o", tmp_path / "t.npz", "--resume")
    assert r.code == 2 and "--resume applies to PNG sequences (and EXR or JPEG ones)" in r.err


# ---------------------------------------------------------------------------------------
# Encoder failures: one line naming the cause, non-zero status, nothing left behind


def test_unsupported_codec_names_ffmpegs_reason(cli, small_scene, tmp_path, monkeypatch):
    monkeypatch.setattr(video, "_H264", ["-c:v", "no_such_codec"])
    out = tmp_path / "out"
    r = cli(small_scene, "-o", out / "clip.mp4", "--frames", "3", "-q")
    assert r.code == 1
    assert len(r.err_lines) == 1, r.err
    assert "Unknown encoder 'no_such_codec'" in r.err
    assert not out.exists()  # no clip, no temporary, nor the folder made for them


def limit_file_size(size_bytes: int):
    def preexec():  # runs in the child: it and its ffmpeg inherit the limit
        resource.setrlimit(resource.RLIMIT_FSIZE, (size_bytes, size_bytes))
    return preexec


@pytest.mark.parametrize("output, limit", [("clip.mp4", 20_000), ("seq/", 2_000)],
                         ids=["mp4", "png"])
def test_full_disk_is_one_line_naming_the_cause_and_leaves_nothing(
        small_scene, tmp_path, output, limit):
    out = tmp_path / "out"
    out.mkdir()
    target = out / "clip.mp4"
    target.write_bytes(b"an earlier render")
    proc = render_subprocess([small_scene, "-o", f"{out}/{output}", "--frames", "60",
                              "--size", "320x180", "-q"], preexec_fn=limit_file_size(limit))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "File too large" in lines[0]  # EFBIG, as ENOSPC says "No space left on device"
    assert target.read_bytes() == b"an earlier render"
    assert leftovers(out) == []
    if output == "seq/":  # no frame was finished: the folder made for them is gone too
        assert not (out / "seq").exists()


@pytest.mark.parametrize("args", [("--contact-sheet", "new/deeper/sheet.png"),
                                  ("--still", "0", "-o", "new/deeper/still.png")])
def test_a_still_or_sheet_the_disk_cannot_hold_leaves_no_folder_it_made(small_scene,
                                                                        tmp_path, args):
    proc = render_subprocess([small_scene, *args, "--size", "320x180", "-q"],
                             preexec_fn=limit_file_size(2_000), cwd=tmp_path)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1 and "File too large" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]


def test_ffmpeg_killed_by_a_signal_is_named(cli, small_scene, tmp_path, monkeypatch):
    fake = tmp_path / "fake-ffmpeg"
    fake.write_text("#!/bin/sh\nkill -KILL $$\n")
    fake.chmod(0o755)
    monkeypatch.setattr(video, "ffmpeg_exe", lambda: str(fake))
    r = cli(small_scene, "-o", tmp_path / "out" / "clip.mp4", "--frames", "3", "-q")
    assert r.code == 1
    assert len(r.err_lines) == 1, r.err
    assert "SIGKILL" in r.err


# ---------------------------------------------------------------------------------------
# Exit codes: 0 done, 2 bad input, 130 interrupted, 1 anything else


@pytest.mark.parametrize("debug", [None, "0", "", "false"])  # "0" showed the traceback
def test_unexpected_error_is_one_line_and_a_hint_without_traceback(
        cli, small_scene, tmp_path, monkeypatch, debug):
    count_draws(monkeypatch, fail_at=1, exc=RuntimeError("drawing broke"))
    if debug is None:
        monkeypatch.delenv("BOIDS_RENDER_DEBUG", raising=False)
    else:
        monkeypatch.setenv("BOIDS_RENDER_DEBUG", debug)
    r = cli(small_scene, "-o", f"{tmp_path}/seq/", "--frames", "3", "-q")
    assert r.code == 1
    assert "Traceback" not in r.err
    assert r.err_lines[0] == "boids-render: internal error: RuntimeError: drawing broke"
    assert len(r.err_lines) == 2 and "BOIDS_RENDER_DEBUG=1" in r.err_lines[1]


def test_debug_variable_shows_the_traceback(cli, small_scene, tmp_path, monkeypatch):
    count_draws(monkeypatch, fail_at=1, exc=RuntimeError("drawing broke"))
    monkeypatch.setenv("BOIDS_RENDER_DEBUG", "1")
    r = cli(small_scene, "-o", f"{tmp_path}/seq/", "--frames", "3", "-q")
    assert r.code == 1
    assert "Traceback" in r.err and "drawing broke" in r.err


@pytest.mark.parametrize("args", [("-o", "{file}/clip.mp4"), ("-o", "{file}/deeper/f.npz"),
                                  ("-o", "{file}/f_%03d.png"), ("--stats", "{file}/s.csv"),
                                  ("--plot", "{file}/p.png"),
                                  ("--contact-sheet", "{file}/sheet.png"),
                                  ("--still", "0", "-o", "{file}/still.png")])
def test_an_output_under_a_file_is_bad_input_refused_before_any_work(cli, small_scene,
                                                                      tmp_path, args):
    (tmp_path / "file").write_text("not a folder")
    args = [a.format(file=tmp_path / "file") for a in args]
    short = () if "--still" in args else ("--frames", "2")  # a still's is the clip's frame
    r = cli(small_scene, *args, *short, "-q")
    assert r.code == 2
    assert r.err_lines == [f"boids-render: {args[-1]}: {tmp_path / 'file'} is a file, not a "
                           f"folder"]
    assert (tmp_path / "file").read_text() == "not a folder"


def test_nan_from_the_simulation_stops_before_drawing(cli, small_scene, tmp_path,
                                                      monkeypatch):
    real = states.frames

    def poisoned(*args, **kwargs):
        for frame in real(*args, **kwargs):
            frame.positions[0, 0] = np.nan
            yield frame

    monkeypatch.setattr(states, "frames", poisoned)
    drawn = count_draws(monkeypatch)
    r = cli(small_scene, "-o", f"{tmp_path}/seq/", "--frames", "2", "-q")
    assert r.code == 1
    assert "non-finite" in r.err_lines[0]
    assert drawn == []


# ---------------------------------------------------------------------------------------
# Requests too large to work are refused before anything is allocated


@pytest.fixture
def no_allocation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("allocated before refusing")

    # Clips, stills and contact sheets all seed their flock through states.simulation.
    monkeypatch.setattr(states, "Simulation", refuse)
    for module in (drawing, stills, contact_sheet):
        monkeypatch.setattr(module, "Canvas", refuse)
    monkeypatch.setattr(video, "ffmpeg_exe", refuse)


@pytest.mark.parametrize("argv, expected", [
    (("--set", "flock.count=1000000000"), "expected at most 5,000,000 birds"),
    (("--set", "flock.spacing=0.0001"), "expected a spacing ≥"),
    (("--size", "2000000x1000"), "expected each side in 1..1000000 px"),
], ids=["1e9 birds", "tiny spacing", "2000000x1000"])
def test_impossible_request_is_refused_saying_what_would_work(
        cli, small_scene, tmp_path, no_allocation, argv, expected):
    r = cli(small_scene, "-o", tmp_path / "clip.mp4", *argv, "-q")
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    assert expected in r.err
    assert frame_names(tmp_path) == ["small.toml"]


@pytest.mark.parametrize("output", ["clip.webm", "clip.gif", "seq/"])
def test_clip_or_sequence_larger_than_cairo_draws_is_refused_pointing_to_stills(
        cli, small_scene, tmp_path, no_allocation, output):
    r = cli(small_scene, "-o", f"{tmp_path}/{output}", "--size", "100000x100000", "-q")
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    assert f"{output}: output.size: expected each side ≤ 32767 px" in r.err
    assert "got 100000x100000" in r.err and "the largest is 32766x32766" in r.err
    assert "PNG still (--still" in r.err
    assert frame_names(tmp_path) == ["small.toml"]


def test_a_frame_past_both_limits_is_offered_the_size_its_encoder_takes(
        cli, small_scene, tmp_path, no_allocation):
    # Past cairo's 32767 px and H.264's 16384: offered 32766x32766 first, which the
    # encoder then refused in turn.
    r = cli(small_scene, "-o", f"{tmp_path}/clip.mp4", "--size", "100000x100000", "-q")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert "≤ 16384 px for H.264 (x264)" in r.err and "the largest is 16384x16384" in r.err
    r = cli(small_scene, "-o", f"{tmp_path}/clip.mp4", "--size", "16384x16384", "--check")
    assert "output.size" not in r.err, r.err


@pytest.mark.parametrize("argv, expected", [
    (("--bit-depth", "16"), "≤ 16383 px for a 16-bit still"),
    (("--transparent",), "≤ 32767 px for a transparent still"),
    (("--motion-blur", "4"), "≤ 32767 px for a still with motion blur"),
    (("-o", "{tmp}/poster.pdf", "--dpi", "1"), "≤ 58254 px for a PDF or SVG page at 1 dpi"),
    (("--tile-size", "40000"), "--tile-size 40000: expected at most 32703"),
], ids=["16 bit", "transparent", "motion blur", "pdf at 1 dpi", "huge tiles"])
def test_still_that_cannot_be_drawn_in_tiles_is_refused_beyond_cairos_limit(
        cli, small_scene, tmp_path, no_allocation, argv, expected):
    argv = [a.format(tmp=tmp_path) for a in argv]
    output = () if "-o" in argv else ("-o", tmp_path / "poster.png")
    r = cli(small_scene, "--still", "0.5", "--size", "60000x100", *output, *argv)
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    assert expected in r.err
    assert frame_names(tmp_path) == ["small.toml"]


def test_a_still_too_large_is_told_the_largest_at_its_aspect_odd_sides_and_all(
        cli, small_scene, tmp_path, no_allocation):
    r = cli(small_scene, "--still", "0.5", "--size", "20000x20000", "--bit-depth", "16",
            "-o", tmp_path / "poster.png")
    assert r.code == 2 and "the largest is 16383x16383;" in r.err, r.err


def test_contact_sheet_of_a_frame_too_tall_for_its_sheet_is_refused(
        cli, small_scene, tmp_path, no_allocation):
    r = cli(small_scene, "--contact-sheet", tmp_path / "sheet.png", "--size", "100x5000")
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    assert "output.size: expected a frame at most 22.7 times as tall as wide" in r.err
    assert r.err.strip().endswith("got 100x5000")


def test_still_too_large_for_memory_whole_is_drawn_in_tiles(small_scene, monkeypatch):
    from render.scene import load_scene

    def tiles(size, memory):
        monkeypatch.setattr(budget, "available_memory", lambda: memory)
        scene = load_scene(small_scene, [("output.size", f'"{size}"', "--size")])
        return budget.still_cost(scene, "poster.png", 0.5, dpi=72).tile

    assert tiles("20000x14000", 64e9) is None
    assert tiles("20000x14000", 2e9) == budget.DEFAULT_TILE  # whole: about 2.5 GB
    assert tiles("33000x40", 64e9) == budget.DEFAULT_TILE  # wider than cairo draws


def test_tiled_still_too_large_for_memory_suggests_tiles_that_fit(
        cli, small_scene, tmp_path, monkeypatch, no_allocation):
    from render.scene import load_scene

    monkeypatch.setattr(budget, "available_memory", lambda: 300e6)
    r = cli(small_scene, "--still", "0.5", "--size", "100000x3000", "-o",
            tmp_path / "poster.png")
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    assert "poster.png: needs about" in r.err
    rows = int(r.err.split("--tile-size ")[1].split()[0])
    scene = load_scene(small_scene, [("output.size", '"100000x3000"', "--size")])
    assert budget.still_estimate(scene, 0.5, tile=rows).bytes <= 300e6
    assert 16 <= rows < budget.DEFAULT_TILE


def test_frame_too_large_for_memory_is_refused_with_a_size_that_fits(
        cli, small_scene, tmp_path, monkeypatch, no_allocation):
    monkeypatch.setattr(budget, "available_memory", lambda: 8e9)
    r = cli(small_scene, "-o", tmp_path / "clip.webm", "--size", "32000x18000", "-q")
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    assert "8 GB of memory is available" in r.err
    width, height = map(int, r.err.split("frame up to ")[1].split()[0].split("x"))
    assert width * height * budget.VIDEO_BYTES_PER_PX < 8e9 and width / height == \
        pytest.approx(32000 / 18000, rel=0.01)


def test_flock_too_large_for_memory_is_refused_with_a_count_that_fits(
        cli, small_scene, tmp_path, monkeypatch, no_allocation):
    monkeypatch.setattr(budget, "available_memory", lambda: 1e9)
    r = cli(small_scene, "--stats", tmp_path / "s.csv", "--set", "flock.count=4000000", "-q")
    assert r.code == 2
    assert "up to 1,500,000 birds" in r.err


def test_render_that_would_take_months_is_refused(cli, small_scene, tmp_path, no_allocation):
    r = cli(small_scene, "-o", f"{tmp_path}/seq/", "--set", "scene.dt=1e-6",
            "--duration", "1000000", "-q")
    assert r.code == 2
    assert "would take" in r.err and "scene.dt" in r.err


def test_contact_sheet_too_large_for_memory_is_refused_before_anything_is_drawn(
        cli, small_scene, tmp_path, monkeypatch, no_allocation):
    monkeypatch.setattr(budget, "available_memory", lambda: 1e9)
    r = cli(small_scene, "--contact-sheet", tmp_path / "sheet.png", "--set",
            "flock.count=4000000", "-q")
    assert r.code == 2
    assert "sheet.png: needs about" in r.err and "birds" in r.err
    assert not (tmp_path / "sheet.png").exists()


@pytest.mark.parametrize("other", [("-o", "clip.mp4"), ("--still", "0.5"),
                                   ("--stats", "s.csv"), ("--loop", "--crossfade", "0.3")])
def test_contact_sheet_with_another_output_is_refused(cli, small_scene, tmp_path, other,
                                                      no_allocation):
    r = cli(small_scene, "--contact-sheet", tmp_path / "sheet.png", *other)
    assert r.code == 2
    assert len(r.err_lines) == 1, r.err
    assert f"--contact-sheet draws a sheet of the clip's frames on its own: drop " \
           f"{other[0]}" in r.err
    assert frame_names(tmp_path) == ["small.toml"]


def test_check_of_a_contact_sheet_prints_its_estimate_and_draws_nothing(
        cli, small_scene, tmp_path, no_allocation):
    r = cli(small_scene, "--contact-sheet", tmp_path / "sheet.png", "--check")
    assert r.code == 0, r.err
    assert "# estimate to " in r.out and "sheet.png: about" in r.out
    assert not (tmp_path / "sheet.png").exists()


def test_check_prints_the_estimate(cli, small_scene, tmp_path):
    r = cli(small_scene, "--check", "-o", tmp_path / "clip.mp4")
    assert r.code == 0, r.err
    assert any(line.startswith("# estimate to ") and "of memory" in line
               for line in r.out.splitlines())


def test_a_contact_sheet_of_a_range_spreads_its_thumbnails_over_that_range(small_scene):
    """--frames 10:30 --contact-sheet: twelve thumbnails from frame 10 to frame 29, as
    even as whole frames allow (the clip is flown from its start all the same)."""
    from render.api import load_scene

    scene = load_scene(small_scene, [("output.frames", "30", "--frames")])
    picks = contact_sheet.layout(scene, "sheet.png", first=10)[0]
    assert picks[0] == 10 and picks[-1] == 29 and len(picks) == 12
    assert contact_sheet.layout(scene, "sheet.png")[0][:2] == [0, 3]


@pytest.mark.parametrize("count, grid", [(3, (3, 1)), (5, (3, 2)), (6, (3, 2)), (7, (4, 2)),
                                         (9, (3, 3)), (12, (4, 3)), (40, (4, 3))])
def test_a_contact_sheet_of_few_frames_has_its_fewest_rows_filled_evenly(cli, small_scene, tmp_path, count,
                                                          grid):
    from PIL import Image

    from render.api import load_scene

    scene = load_scene(small_scene, [("output.frames", str(count), "--frames")])
    picks, thumb, size = contact_sheet.layout(scene, "sheet.png")
    columns, rows = grid
    gap, label = contact_sheet.GAP_PX, contact_sheet.LABEL_PX
    assert len(picks) == min(count, 12)
    assert size == (columns * (thumb[0] + gap) + gap, rows * (thumb[1] + gap + label) + gap)
    if count == 3:  # drawn so
        r = cli(small_scene, "--contact-sheet", tmp_path / "s.png", "--frames", "3", "-q")
        assert r.code == 0, r.err
        assert Image.open(tmp_path / "s.png").size == size


def test_a_transparent_contact_sheet_keeps_its_frames_alpha(cli, small_scene, tmp_path):
    from PIL import Image

    r = cli(small_scene, "--contact-sheet", tmp_path / "s.png", "--frames", "3",
            "--transparent", "-q")
    assert r.code == 0, r.err
    alpha = np.asarray(Image.open(tmp_path / "s.png").convert("RGBA"))[..., 3]
    gap = contact_sheet.GAP_PX
    assert (alpha[:gap] == 255).all() and (alpha[:, :gap] == 255).all()  # painted margins
    cell = alpha[gap:gap + 20, gap:gap + 20]
    assert (alpha == 0).mean() > 0.3 and (cell < 255).any()  # the frames' sky is clear


def test_an_output_in_a_folder_it_may_not_write_in_is_refused_naming_the_output(
        cli, small_scene, tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    if os.geteuid() == 0:  # root writes anywhere: the permission check is what is tested
        real = os.access
        monkeypatch.setattr(os, "access", lambda p, mode: real(p, mode) and
                            Path(p) != locked)
    for args in (("-o", locked / "clip.mp4"), ("-o", locked / "f_%03d.png"),
                 ("--stats", locked / "s.csv"), ("--still", "0", "-o", locked / "a.png"),
                 ("--quality", "web", "-o", locked / "hero.mp4")):  # not its hero.jpg
        short = () if "--still" in args else ("--frames", "2")
        r = cli(small_scene, *args, *short, "-q")
        assert r.code == 2, r.err
        assert r.err_lines == [f"boids-render: {args[-1]}: cannot write in {locked} "
                               f"(permission denied)"]
    assert list(locked.iterdir()) == []
    # The same folder on a file system mounted read-only (mounting one needs privileges
    # a test does not have: its flag is what is read).
    real_statvfs = os.statvfs

    class ReadOnly:
        def __init__(self, path):
            self.f_flag = real_statvfs(path).f_flag | os.ST_RDONLY

    monkeypatch.setattr(os, "statvfs", lambda p: ReadOnly(p) if Path(p) == locked
                        else real_statvfs(p))
    r = cli(small_scene, "-o", locked / "clip.mp4", "--frames", "2", "-q")
    assert r.err_lines == [f"boids-render: {locked / 'clip.mp4'}: cannot write in {locked} "
                           f"(a read-only file system)"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_folder_that_takes_no_file_whatever_its_permissions_is_refused_before_any_work(
        cli, small_scene, tmp_path, monkeypatch):
    """/proc lets root through the permission check and takes no file: the refusal comes
    at the start (a file made there and gone), not after the render."""
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: Path(p) == Path("/proc") or
                        real(p, mode))
    r = cli(small_scene, "-o", tmp_path / "f.npz", "--stats", "/proc/s.csv", "--frames", "2",
            "-q")
    assert r.code == 2, r.err
    assert len(r.err_lines) == 1 and r.err_lines[0].startswith(
        "boids-render: /proc/s.csv: cannot write in /proc ("), r.err
    assert not list(tmp_path.glob("*.npz")) and not list(tmp_path.glob(".*"))


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
@pytest.mark.parametrize("output", ["/proc/nope/", "/proc/nope/f_%03d.png"])
def test_frames_to_a_place_that_takes_no_file_are_refused_for_it_not_for_the_disk(
        cli, small_scene, output):
    # /proc reads 0 bytes free: the sequence was told to use fewer frames.
    r = cli(small_scene, "-o", output, "--frames", "2", "-q")
    assert r.code == 2, r.err
    assert len(r.err_lines) == 1 and "cannot write in /proc (" in r.err_lines[0], r.err


# Diagnostics, plots and contact sheets: refused before any work, written whole


@pytest.mark.parametrize("args, says", [
    (("--stats", "{tmp}/s.txt"), "--stats writes .csv or .json, as the suffix says; got .txt"),
    (("--plot", "{tmp}/p.txt"), "--plot draws .png, .pdf or .svg, as the suffix says; got .txt"),
    (("--contact-sheet", "{tmp}/c.jpg"), "a contact sheet is a PNG: expected FILE.png"),
    (("-o", "{tmp}/f_%04d_%02d.png"), "a frame pattern holds one %0Nd"),
    (("-o", "{tmp}/f_%04d_%s.png"), "a frame pattern holds one %0Nd"),
])
def test_a_side_output_in_a_format_it_is_not_written_in_is_refused_before_any_work(
        cli, small_scene, tmp_path, no_allocation, args, says):
    r = cli(small_scene, *[a.format(tmp=tmp_path) for a in args], "--frames", "2", "-q")
    assert r.code == 2 and len(r.err_lines) == 1 and says in r.err, r.err
    assert list(tmp_path.iterdir()) == [small_scene]


@pytest.mark.parametrize("args", [("--stats", "{out}.csv"), ("--stats", "{out}.json"),
                                  ("--plot", "{out}.png"), ("-o", "{out}.npz"),
                                  ("-o", "{out}.usda"), ("--contact-sheet", "{out}.png")])
def test_no_overwrite_keeps_every_kind_of_output_refused_before_any_work(
        cli, small_scene, tmp_path, no_allocation, args):
    flag, name = args[0], args[1].format(out=tmp_path / "kept")
    Path(name).write_bytes(b"kept")
    r = cli(small_scene, flag, name, "--frames", "2", "--no-overwrite", "-q")
    assert r.code == 2 and "already exists and --no-overwrite keeps it" in r.err, r.err
    assert Path(name).read_bytes() == b"kept"


def test_no_overwrite_refuses_a_3d_trajectory_before_the_flock_is_settled(
        cli, tmp_path, no_allocation):
    out = tmp_path / "f.npz"
    out.write_bytes(b"kept")
    r = cli("scenes/flock3d.toml", "-o", out, "--frames", "2", "--no-overwrite", "-q")
    assert r.code == 2 and "already exists" in r.err, r.err
    assert out.read_bytes() == b"kept"


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".pdf", b"%PDF"),
                                           (".svg", b"<?xml")])
def test_a_plot_is_written_in_its_suffix_s_format_replacing_what_was_there(
        cli, small_scene, tmp_path, suffix, magic):
    pytest.importorskip("matplotlib")
    out = tmp_path / f"p{suffix}"
    out.write_bytes(b"an earlier plot")
    r = cli(small_scene, "--plot", out, "--frames", "3", "-q")
    assert r.code == 0, r.err
    assert out.read_bytes().startswith(magic)
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name, "small.toml"]


@pytest.mark.parametrize("flag, name", [("--stats", "s.csv"), ("--stats", "s.json"),
                                        ("--plot", "p.png")])
def test_diagnostics_that_cannot_be_written_leave_the_old_file_and_no_temporary(
        small_scene, tmp_path, flag, name):
    if flag == "--plot":
        pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_text("the earlier file\n")
    proc = render_subprocess([small_scene, flag, out / name, "--frames", "30", "-q"],
                             preexec_fn=limit_file_size(1_000))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert len(err.strip().splitlines()) == 1 and "File too large" in err, err
    assert (out / name).read_text() == "the earlier file\n"
    assert leftovers(out) == []


# Interrupts that land where Python drops them, or between two steps of a write


def test_an_interrupt_python_dropped_still_stops_the_render(cli, small_scene, tmp_path,
                                                             monkeypatch):
    """numba loads its cached kernels through callbacks from C, where a KeyboardInterrupt
    is printed and dropped: the render went on and replaced the file. The handler
    remembers it, and the next step of any bar raises it again."""
    from render import progress, states

    real = states.simulation

    def simulation(*args, **kwargs):
        sim = real(*args, **kwargs)
        try:  # as ctypes does with an exception raised in a callback
            progress.interrupt()
        except KeyboardInterrupt:
            pass
        return sim

    monkeypatch.setattr(states, "simulation", simulation)
    out = tmp_path / "a.mp4"
    out.write_bytes(b"old")
    r = cli(small_scene, "-o", out, "--frames", "5")
    assert r.code == 130 and r.err.strip().endswith("boids-render: interrupted"), r.err
    assert out.read_bytes() == b"old" and sorted(tmp_path.iterdir()) == sorted(
        [out, small_scene])
    # The next run in the same process starts uninterrupted.
    monkeypatch.undo()
    assert cli(small_scene, "-o", out, "--frames", "2", "--quiet").code == 0


def test_an_interrupt_just_after_a_temporary_is_made_leaves_nothing(cli, small_scene,
                                                                     tmp_path, monkeypatch):
    from render.encode import files

    real = files.temp_beside

    def temp_beside(path, suffix):
        real(path, suffix)
        raise KeyboardInterrupt  # made, and not yet in the hands of what removes it

    monkeypatch.setattr(files, "temp_beside", temp_beside)
    r = cli(small_scene, "-o", f"{tmp_path}/seq/", "--frames", "3", "--quiet")
    assert r.code == 130
    assert list((tmp_path / "seq").iterdir()) == []


def test_an_interrupt_while_files_are_placed_together_waits_for_the_last(tmp_path,
                                                                         monkeypatch):
    import signal

    from test_web import staged_over_old

    from render.encode import files

    staged = staged_over_old(tmp_path, ("a.mp4", "a.webm", "a.jpg"))
    real = files.place
    awake = threading.Event()
    # A thread that does not block the signal: the kernel may hand it a process's Ctrl-C,
    # and Python then runs the handler in the main thread at once.
    other = threading.Thread(target=awake.wait, daemon=True)
    other.start()

    def place(tmp, path, **kwargs):
        done = real(tmp, path, **kwargs)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C right after each rename
        time.sleep(0.05)
        return done

    monkeypatch.setattr(files, "place", place)
    # Ctrl-C as an interactive Python has it: a suite started in the background by a
    # shell inherits SIGINT ignored, and the signal placed back at the end would be lost.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            files.place_together(staged)
    finally:
        awake.set()
        signal.signal(signal.SIGINT, before)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {
        name: f"new {name}" for name in ("a.mp4", "a.webm", "a.jpg")}


def test_a_signal_after_the_work_is_done_keeps_its_exit_status(small_scene):
    """SIGTERM while the interpreter shuts down, the files already placed: the status is
    the work's (0 here), not 143 for a render it did not stop."""
    script = ("import os, signal, sys\n"
              "from render import cli\n"
              "done = sys.exit\n"
              "def exit(code):\n"
              "    os.kill(os.getpid(), signal.SIGTERM)\n"
              "    done(code)\n"
              "sys.exit = exit\n"
              f"sys.argv = ['boids-render', {str(small_scene)!r}, '--check']\n"
              "cli.entry()\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).parents[1],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "[flock]" in done.stdout  # printed before the signal: not lost


def test_a_failed_rename_names_the_output_not_its_hidden_temporary(cli, small_scene,
                                                                   tmp_path, monkeypatch):
    """An immutable file at the output's name: the rename fails. The message named the
    temporary (`.a.1f2e3d4c.partial.mp4`), and with a trajectory beside the clip blamed
    the trajectory."""
    from render.encode import files

    def replace(src, dst):
        raise PermissionError(1, "Operation not permitted", str(src), None, str(dst))

    monkeypatch.setattr(files.os, "replace", replace)
    r = cli(small_scene, "-o", tmp_path / "a.mp4", "-o", tmp_path / "t.npz", "--frames", "3",
            "--quiet")
    assert r.code == 1, r.err
    assert r.err == f"boids-render: {tmp_path / 'a.mp4'}: Operation not permitted\n", r.err
    assert files.final_name(tmp_path / ".a.1f2e3d4c.partial.mp4") == str(tmp_path / "a.mp4")


def test_an_encoder_that_says_nothing_is_named(cli, small_scene, tmp_path, monkeypatch):
    from render.encode import video

    monkeypatch.setattr(video, "ffmpeg_exe", lambda: "/bin/true")
    r = cli(small_scene, "-o", tmp_path / "a.mp4", "--frames", "40", "--size", "320x180",
            "--quiet")
    assert r.code == 1 and "is /bin/true ffmpeg?" in r.err and len(r.err_lines) == 1, r.err


def test_a_plot_named_as_a_frame_of_the_sequence_is_refused(cli, small_scene, tmp_path):
    """It overwrote frame 0 with the plot, and the render said nothing."""
    r = cli(small_scene, "-o", f"{tmp_path}/seq/", "--plot", f"{tmp_path}/seq/frame_00000.png",
            "--frames", "3")
    assert r.code == 2 and "also frame 0 of" in r.err and len(r.err_lines) == 1, r.err
    assert not (tmp_path / "seq").exists()
    r = cli(small_scene, "-o", f"{tmp_path}/f_%02d.png", "--plot", f"{tmp_path}/f_7.png",
            "--frames", "3", "--quiet")  # not a name of the pattern's: fine
    assert r.code == 0, r.err


def test_a_still_named_as_a_folder_says_so(cli, small_scene, tmp_path):
    (tmp_path / "d.png").mkdir()
    r = cli(small_scene, "--still", "0", "-o", tmp_path / "d.png")
    assert r.code == 2 and "d.png: is a folder" in r.err and len(r.err_lines) == 1, r.err


def test_a_vector_still_on_a_full_disk_says_the_disk_is_full(cli, small_scene, tmp_path,
                                                              monkeypatch):
    import shutil

    import cairo

    from render.draw import vector

    class WriteError(cairo.Error, OSError):  # pycairo's error for CAIRO_STATUS_WRITE_ERROR
        pass

    class Full:  # a surface whose stream cannot be written
        def __init__(self, *args):
            raise WriteError("error while writing to output stream")

    monkeypatch.setitem(vector.SURFACES, ".svg", Full)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(10, 10, 0))
    r = cli(small_scene, "--still", "0", "-o", tmp_path / "s.svg")
    assert r.code == 1 and r.err_lines == [
        f"boids-render: cannot write {tmp_path / 's.svg'}: error while writing to output "
        f"stream: the disk is full"], r.err


@pytest.mark.parametrize("closed", [(1,), (2,), (0, 1, 2)])
def test_a_render_with_its_standard_streams_closed_by_the_shell_works(small_scene, tmp_path,
                                                                      closed):
    """`>&-`, `2>&-`: Python's sys.stdout or sys.stderr is None, and a render placed its
    clip and then failed in a traceback (or failed at its first line on stderr). The
    closed streams go to the null device: exit 0, the clip whole."""
    out = tmp_path / "clip.mp4"

    def close():
        for fd in closed:
            os.close(fd)

    proc = subprocess.run([sys.executable, "-m", "render", str(small_scene), "-o", str(out),
                           "--frames", "3"], preexec_fn=close, capture_output=False,
                          timeout=300)
    assert proc.returncode == 0
    assert imageio_ffmpeg.count_frames_and_secs(str(out))[0] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["clip.mp4", small_scene.name])


@pytest.mark.parametrize("name", ["take:1.mp4", "a:b/c.webm", "x:y.webp"])
def test_a_relative_name_with_a_colon_is_a_file_not_a_protocol(cli, small_scene, tmp_path,
                                                               monkeypatch, name):
    """ffmpeg reads `take:1.mp4` (a colon in the name's first part) as a URL of the
    protocol `take` and refused it; the render failed after drawing every frame."""
    monkeypatch.chdir(tmp_path)
    r = cli(small_scene, "-o", name, "--frames", "3", "-q")
    assert r.code == 0, r.err
    assert imageio_ffmpeg.count_frames_and_secs(str(tmp_path / name))[0] == 3


def test_a_sequences_folder_removed_while_rendering_fails_the_render(cli, small_scene,
                                                                     tmp_path, monkeypatch):
    """The frames' folder removed mid-render (by another shell, a cleanup job): the next
    frame made it again and the render ended 0 with the frames before it gone. It fails
    instead (exit 1), naming the folder."""
    import shutil

    seq = tmp_path / "seq"
    real = states.draw_frame
    drawn: list[int] = []

    def draw(*args, **kwargs):
        drawn.append(len(drawn))
        if len(drawn) == 4:  # mid-render: the folder made, frames under way
            # Moved away first: a frame written meanwhile would make rmtree's last rmdir
            # fail (the folder not empty), as `rm -r` would.
            gone = seq.rename(tmp_path / "gone")
            shutil.rmtree(gone)
        return real(*args, **kwargs)

    monkeypatch.setattr(states, "draw_frame", draw)
    r = cli(small_scene, "-o", f"{seq}/", "--frames", "8", "-q")
    assert r.code == 1, r.err
    assert f"{seq}: the sequence's folder was removed while rendering" in r.err, r.err
    assert not seq.exists()


def test_a_sequences_folder_removed_while_a_frame_is_written_is_named(cli, small_scene,
                                                                      tmp_path, monkeypatch):
    """Removed after the frame's check that the folder is there, before its file was
    placed: the render failed on a missing temporary's name, not on the folder."""
    import shutil

    import render.encode.images as images

    seq = tmp_path / "seq"
    real = images.write_atomically
    calls: list[Path] = []

    def write(path, *args, **kwargs):
        calls.append(path)
        if len(calls) == 3:
            shutil.rmtree(seq.rename(tmp_path / "gone"))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(images, "write_atomically", write)
    r = cli(small_scene, "-o", f"{seq}/", "--frames", "8", "-q")
    assert r.code == 1, r.err
    assert f"{seq}: the sequence's folder was removed while rendering" in r.err, r.err


@pytest.mark.parametrize("suffix", [".mp4", ".npz", "_%04d.png"])
def test_an_output_named_as_long_as_a_name_can_be_is_written(cli, small_scene, tmp_path,
                                                             suffix):
    """A name of 255 bytes (in é, two bytes each) is legal, but its temporary's took 18
    bytes more: every such output failed "File name too long" before any work."""
    stem = "é" * ((255 - len(suffix.replace("%04d", "0000"))) // 2)
    r = cli(small_scene, "-o", tmp_path / f"{stem}{suffix}", "--frames", "2", "-q")
    assert r.code == 0, r.err
    written = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("é"))
    expected = [f"{stem}{suffix}"] if "%" not in suffix else \
        [f"{stem}{suffix % k}" for k in range(2)]
    assert written == expected
    assert not leftovers(tmp_path)


@pytest.mark.parametrize("sent, name", [(signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")])
def test_a_signal_while_the_interpreter_tears_down_keeps_the_renders_status(small_scene,
                                                                            tmp_path,
                                                                            sent, name):
    """The clip is placed and main() has returned; the interpreter then puts the handlers
    it was given back to the default action and tears its modules down (numba's, dask's:
    a while). A signal then ended the finished render with 143 or 129. A module of this
    process that is slow to go stands for that teardown: the signal lands in it."""
    wrapper, torn = tmp_path / "slow_exit.py", tmp_path / "tearing-down"
    # The module's names may be gone when __del__ runs: what it needs is bound as defaults.
    wrapper.write_text("import pathlib\nimport sys\nimport time\n\n\nclass Slow:\n"
                       f"    def __del__(self, torn=pathlib.Path({str(torn)!r}), "
                       "sleep=time.sleep):\n"
                       "        torn.touch()\n        sleep(5)\n\n\nslow = Slow()\n"
                       "sys.argv = ['boids-render', *sys.argv[1:]]\n"
                       "from render.cli import entry\n\nentry()\n")
    out = tmp_path / "clip.mp4"
    proc = subprocess.Popen([sys.executable, str(wrapper), str(small_scene), "-o", str(out),
                             "--frames", "3", "-q"], stderr=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 120
        while not torn.exists():  # main() has returned: the teardown sleeps
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert out.exists()
        assert proc.poll() is None, "gone before the signal: the test proves nothing"
        proc.send_signal(sent)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, (name, proc.returncode, err)
    assert imageio_ffmpeg.count_frames_and_secs(str(out))[0] == 3


@pytest.mark.parametrize("name, args", [
    ("latest.mp4", ("--frames", "3")),
    ("latest.png", ("--still", "0.5")),
    ("latest.mp4", ("--frames", "3", "--quality", "web", "--size", "160x90")),
], ids=["clip", "still", "web files placed together"])
def test_an_output_at_a_symbolic_link_replaces_what_it_points_to(cli, small_scene, tmp_path,
                                                                 name, args):
    """The link was replaced by a regular file, and the file it pointed to (a render on
    another disk, say) left as it was."""
    real, out = tmp_path / "real", tmp_path / "out"
    real.mkdir()
    out.mkdir()
    target = real / f"v12{Path(name).suffix}"
    target.write_bytes(b"the render before")
    (out / name).symlink_to(Path("..") / "real" / target.name)
    r = cli(small_scene, "-o", out / name, "-q", *args)
    assert r.code == 0, r.err
    assert (out / name).is_symlink() and (out / name).resolve() == target
    assert target.read_bytes() != b"the render before" and target.stat().st_size > 1000
    assert not leftovers(real) and not leftovers(out)


@pytest.mark.parametrize("read", [0, 1], ids=["closed at once", "after its first line"])
def test_a_render_outlives_the_reader_of_its_messages(small_scene, tmp_path, read):
    """stderr piped into `head`, or a log collector restarted: the next progress line
    failed the render (exit 1, nothing written). It goes on without its messages."""
    out = tmp_path / "clip.mp4"
    proc = render_subprocess([small_scene, "-o", out, "--frames", "30"])
    try:
        for _ in range(read):
            assert proc.stderr.readline()
        proc.stderr.close()
        assert proc.wait(timeout=300) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert imageio_ffmpeg.count_frames_and_secs(str(out))[0] == 30
