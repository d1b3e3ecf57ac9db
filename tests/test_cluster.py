"""Rendering on a Dask cluster: the same frames as a local render, a killed worker's segment
run again, progress from every worker, and clear errors."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import imageio_ffmpeg
import pytest
from distributed import Client, LocalCluster

from render import cluster, segments, states
from render.budget import FILE_BYTES_PER_PX
from render.encode import Target
from render.executor import Cluster
from render.scene import load_scene

from conftest import SCENES, children, default_sigint, timecode

pytestmark = pytest.mark.slow

PLATE = SCENES / "plate.toml"
# Small frames of the 2D plate, with its camera, hawk and accent birds.
SMALL = ("--size", "160x90", "--quiet")


@pytest.fixture(scope="module")
def scheduler():
    """The address of a LocalCluster of 2 single-threaded worker processes."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address="127.0.0.1:0") as local:
        yield local.scheduler_address


def files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def framemd5(path) -> list[str]:
    """Each decoded frame's timestamp, duration, size and checksum."""
    out = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-i", str(path), "-f", "framemd5",
                          "-"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if not line.startswith("#")]


def packets(path) -> list[str]:
    """Each packet's stream, dts, pts and duration as stored (not decoded)."""
    out = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-i", str(path), "-c", "copy",
                          "-f", "framecrc", "-"], capture_output=True, text=True,
                         check=True).stdout
    return [",".join(line.split(",")[:4]) for line in out.splitlines()
            if not line.startswith("#")]


@pytest.fixture(scope="module")
def local_frames(tmp_path_factory):
    """PNG frames (with motion blur) and stats of a local, single-threaded render."""
    from render.cli import main

    folder = tmp_path_factory.mktemp("local")
    assert main([str(PLATE), "-o", f"{folder}/frames/", *SMALL, "--frames", "14",
                 "--motion-blur", "2", "--workers", "1", "--stats",
                 str(folder / "stats.csv")]) == 0
    return folder


def listening(port: int) -> list[str]:
    """The local addresses (hex, as /proc/net shows them) of the sockets listening on
    `port`, IPv4 and IPv6."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.append(address)
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux's /proc/net")
def test_a_local_cluster_listens_on_the_loopback_only():
    loopback = {"0100007F", "00000000000000000000000001000000"}  # 127.0.0.1, ::1
    with cluster.connect(Cluster("local", workers=1), quiet=True) as client:
        services = client.scheduler_info()["services"]
        found = listening(services["dashboard"])
    assert found and set(found) <= loopback, found


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_png_frames_equal_a_local_render_byte_for_byte(cli, local_frames, tmp_path, workers):
    r = cli(PLATE, "-o", f"{tmp_path}/frames/", *SMALL, "--frames", "14",
            "--motion-blur", "2", "--scheduler", "local", "--workers", str(workers),
            "--stats", tmp_path / "stats.csv")
    assert r.code == 0, r.err
    assert files(tmp_path / "frames") == files(local_frames / "frames")
    assert (tmp_path / "stats.csv").read_text() == (local_frames / "stats.csv").read_text()


@pytest.mark.parametrize("suffix, fps", [(".mp4", "24000/1001"), (".mov", "30"),
                                         (".webm", "30")])
def test_a_clip_joins_its_segments_with_the_local_timing(cli, scheduler, tmp_path, suffix,
                                                         fps):
    # The ProRes clip is a range: its timecode says where it starts, joined or not.
    args = (*SMALL, "--frames", "20:60" if suffix == ".mov" else "40", "--fps", fps,
            *(() if suffix == ".mov" else ("--crf", "0")))  # ProRes takes no --crf
    assert cli(PLATE, "-o", tmp_path / f"local{suffix}", *args).code == 0
    r = cli(PLATE, "-o", tmp_path / f"cluster{suffix}", *args,
            "--scheduler", scheduler)
    assert r.code == 0, r.err
    local, joined = tmp_path / f"local{suffix}", tmp_path / f"cluster{suffix}"
    assert imageio_ffmpeg.count_frames_and_secs(str(joined))[0] == 40
    # Timestamps and durations as stored, packet by packet (B-frames included).
    assert [p.split(",")[1:] for p in packets(joined)] == \
        [p.split(",")[1:] for p in packets(local)]
    if suffix != ".webm":  # lossless H.264 and intra-only ProRes decode exactly
        assert framemd5(joined) == framemd5(local)
    if suffix == ".mov":
        assert timecode(joined) == timecode(local) == "00:00:00:20"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([local.name, joined.name])


def stream_rate(path) -> str:
    """The frame rate ffmpeg reads off a clip's video stream ("30 fps")."""
    err = subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", str(path)],
                         capture_output=True, text=True).stderr
    return re.search(r"([\d.]+ fps)", err).group(1)


@pytest.mark.parametrize("frames, fps", [("16", "30"), ("14", "60")])
def test_a_clip_of_segments_of_a_few_frames_plays_at_the_local_times(cli, scheduler, tmp_path,
                                                                      frames, fps):
    """Segments of one to three frames (16 frames on two workers: five of three, then one
    of one; 14: four of three, then one of two). x264 leaves the B-frames out of a segment of one or
    two frames, which then decodes without the others' delay, and a segment of a few
    frames read its last frame's duration short: the joined clip played at 25 fps and
    its frames late. Joined, every frame shows at the local render's time (the
    presentation times, in order, are the local ones: the frame types differ, each
    segment starting on a key frame), the decode times run a frame apart, every packet
    lasts a frame, and the rate reads as the local render's."""
    args = (*SMALL, "--frames", frames, "--fps", fps)
    assert cli(PLATE, "-o", tmp_path / "local.mp4", *args).code == 0
    r = cli(PLATE, "-o", tmp_path / "cluster.mp4", *args, "--scheduler", scheduler)
    assert r.code == 0, r.err
    local, joined = ([p.split(",") for p in packets(tmp_path / f"{name}.mp4")]
                     for name in ("local", "cluster"))
    assert sorted(int(p[2]) for p in joined) == sorted(int(p[2]) for p in local)
    (frame,) = {int(p[3]) for p in local}
    assert {int(p[3]) for p in joined} == {frame}
    dts = [int(p[1]) for p in joined]
    assert all(b - a == frame for a, b in zip(dts, dts[1:]))
    assert stream_rate(tmp_path / "cluster.mp4") == stream_rate(tmp_path / "local.mp4") == \
        f"{fps} fps"


@pytest.mark.parametrize("suffix", [".exr", ".jpg"])
def test_frames_of_any_format_equal_a_local_render_byte_for_byte(cli, scheduler, tmp_path,
                                                                 suffix):
    args = (*SMALL, "--frames", "6")
    assert cli(PLATE, "-o", f"{tmp_path}/local/f_%02d{suffix}", *args).code == 0
    r = cli(PLATE, "-o", f"{tmp_path}/cluster/f_%02d{suffix}", *args,
            "--scheduler", scheduler)
    assert r.code == 0, r.err
    frames = files(tmp_path / "cluster")
    assert frames == files(tmp_path / "local") and len(frames) == 6


def test_the_segments_are_more_than_one(scheduler):
    """The joins above are real: 40 frames on 2 workers are several segments."""
    with Client(scheduler) as client:
        slots = sum(client.nthreads().values())
    scene = load_scene(PLATE, [("output.size", '"160x90"', "test")])
    from render.states import simulated

    sample = next(simulated(scene, 0, 1))
    assert slots == 2
    assert cluster._segment_length(40, slots, sample, ".mp4", (160, 90), shared=False) < 40


def test_large_states_make_short_segments_unless_a_cache_is_shared(capsys, monkeypatch):
    scene = load_scene(PLATE, [("output.size", '"160x90"', "test")])
    from render.states import simulated

    sample = next(simulated(scene, 0, 1))
    size = sample.positions.nbytes + sample.velocities.nbytes + sample.neighbours.nbytes
    monkeypatch.setattr(cluster, "TASK_BYTES", 5 * size)
    assert cluster._segment_length(600, 2, sample, ".mp4", (160, 90), shared=False) == 5
    assert "--cache-dir" in capsys.readouterr().err
    assert cluster._segment_length(600, 2, sample, ".mp4", (160, 90), shared=True) == 100
    assert capsys.readouterr().err == ""
    # --quiet: the same segments, and no advice
    assert cluster._segment_length(600, 2, sample, ".mp4", (160, 90), shared=False,
                                   quiet=True) == 5
    assert capsys.readouterr().err == ""


def test_an_encoded_segment_stays_within_a_message(capsys):
    """ProRes 4444 at 4K is about 3.5 MB a frame: a 10-minute film on 4 workers would send
    back gigabytes per task without the cap."""
    scene = load_scene(PLATE, [("output.size", '"160x90"', "test")])
    from render.states import simulated

    sample = next(simulated(scene, 0, 1))
    per = cluster._segment_length(14400, 4, sample, ".mov", (3840, 2160), shared=True)
    assert per * 3840 * 2160 * FILE_BYTES_PER_PX[".mov"] <= cluster.RESULT_BYTES
    assert 1 <= per < 14400 // 12


def test_states_through_a_shared_cache_give_the_same_frames(cli, scheduler, local_frames,
                                                            tmp_path):
    cache = tmp_path / "cache"
    r = cli(PLATE, "-o", f"{tmp_path}/frames/", *SMALL, "--frames", "14",
            "--motion-blur", "2", "--scheduler", scheduler, "--cache-dir", cache)
    assert r.code == 0, r.err
    assert files(tmp_path / "frames") == files(local_frames / "frames")
    assert list(cache.iterdir()) == []  # cleaned up


def test_resume_on_a_cluster_draws_only_the_missing_frames(cli, scheduler, local_frames,
                                                           tmp_path):
    out = tmp_path / "frames"
    out.mkdir()
    for name, data in files(local_frames / "frames").items():
        (out / name).write_bytes(data)
    missing = sorted(out.iterdir())[3:9]
    for p in missing:
        p.unlink()
    kept = {p: p.stat().st_mtime_ns for p in out.iterdir()}
    r = cli(PLATE, "-o", f"{out}/", *SMALL, "--frames", "14", "--motion-blur", "2",
            "--scheduler", scheduler, "--resume")
    assert r.code == 0, r.err
    assert files(out) == files(local_frames / "frames")
    assert {p: p.stat().st_mtime_ns for p in kept} == kept


def test_a_resumed_sequence_with_every_frame_kept_ends_its_bar_full(capsys, scheduler,
                                                                    local_frames, tmp_path):
    from render.cli import main

    out = tmp_path / "frames"
    out.mkdir()
    for name, data in files(local_frames / "frames").items():
        (out / name).write_bytes(data)
    assert main([str(PLATE), "-o", f"{out}/", "--size", "160x90", "--frames", "14",
                 "--motion-blur", "2", "--scheduler", scheduler, "--resume"]) == 0
    assert "14/14" in capsys.readouterr().err
    assert files(out) == files(local_frames / "frames")


def test_a_worker_with_another_version_joining_mid_render_is_refused(scheduler):
    scene = load_scene(PLATE, [("output.size", '"160x90"', "test")])
    from render.errors import UsageError
    from render.states import simulated

    states = list(simulated(scene, 0, 1))
    with Client(scheduler) as client, \
            pytest.raises(UsageError, match=r"^the worker at tcp://127\.0\.0\.1:\d+ has "
                                            r"boids-render 0\.1\.0 .*same version"):
        client.submit(segments.render_frames_segment, ".png", scene,
                      segments.Shipment(tuple(states)), "t", 0, "0.0.0-other",
                      pure=False).result()


def test_workers_report_every_frame_they_draw(scheduler):
    scene = load_scene(PLATE, [("output.size", '"160x90"', "test")])
    from render.states import simulated

    states = list(simulated(scene, 0, 5))
    with Client(scheduler) as client:
        result = client.submit(segments.render_frames_segment, ".png", scene,
                               segments.Shipment(tuple(states)), "t0k3n", 7,
                               segments.version(), pure=False).result()
        deadline = time.monotonic() + 10
        while True:
            events = [msg for _, msg in client.get_events(segments.TOPIC)
                      if msg[0] == "t0k3n"]
            if len(events) == 5 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert [index for index, _ in result] == [0, 1, 2, 3, 4]
    assert [list(e) for e in events] == [["t0k3n", 7, k] for k in range(1, 6)]


def test_a_progress_bar_counts_frames_across_workers(capsys, scheduler, tmp_path):
    from render.cli import main

    assert main([str(PLATE), "-o", f"{tmp_path}/f/", "--size", "160x90", "--frames",
                 "12", "--scheduler", scheduler]) == 0
    assert "12/12" in capsys.readouterr().err


@pytest.mark.parametrize("output", ["frames/", "clip.mp4"])
def test_a_killed_worker_has_its_segment_run_again(tmp_path, output):
    """SIGKILL one of two workers once it has drawn part of a segment: the render completes
    and its frames equal the local render's (a lossless clip's decoded frames too)."""
    from render.cli import main

    # 8 sub-frames at 640x360 make each frame slow enough to be caught mid-segment.
    args = ["--size", "640x360", "--frames", "14", "--motion-blur", "8", "--quiet",
            *(["--crf", "0"] if output.endswith(".mp4") else [])]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address="127.0.0.1:0") as local, Client(local) as client:
        pids = client.run(os.getpid)
        drawn = []
        client.subscribe_topic(segments.TOPIC, drawn.append)
        codes = []
        render = threading.Thread(target=lambda: codes.append(main([
            str(PLATE), "-o", f"{tmp_path}/cluster/{output}", *args,
            "--scheduler", local.scheduler_address])))
        render.start()
        victim = None
        deadline = time.monotonic() + 60
        while victim is None and time.monotonic() < deadline and render.is_alive():
            under_way = {msg[1] for _, msg in drawn}
            # A worker whose segment (its task's key: boids-render-TOKEN-SEGMENT-TRY) has
            # drawn a frame: killed as it began a new one, nothing would be drawn twice.
            caught = [w for w, keys in client.processing().items()
                      if any(str(k).startswith("boids-render-")
                             and int(str(k).split("-")[-2]) in under_way for k in keys)]
            if len(under_way) >= 2 and caught:  # both workers have drawn part of a segment
                victim = caught[0]
                os.kill(pids[victim], signal.SIGKILL)
            time.sleep(0.05)
        render.join(timeout=180)
        assert not render.is_alive()
        assert victim is not None, "no segment was caught in flight"
        assert codes == [0]
        assert victim not in client.nthreads()  # that worker died; its nanny restarted it
    # Some segment's frames were drawn twice: the killed task's, run again elsewhere.
    reports = [(msg[1], msg[2]) for _, msg in drawn]
    assert len(set(reports)) < len(reports)
    assert main([str(PLATE), "-o", f"{tmp_path}/local/{output}", *args]) == 0
    if output.endswith("/"):
        assert files(tmp_path / "cluster" / "frames") == files(tmp_path / "local" / "frames")
    else:
        assert framemd5(tmp_path / "cluster" / output) == framemd5(tmp_path / "local" / output)
    assert sorted(p.name for p in (tmp_path / "cluster").iterdir()) == [output.rstrip("/")]


def test_an_interrupted_cluster_render_leaves_nothing(scheduler, tmp_path):
    scene = load_scene(PLATE, [("output.size", '"160x90"', "test"),
                                     ("output.frames", "24", "test")])
    from render.states import simulated

    class Interrupting:
        n = 0
        disable = True  # as a --quiet render's bar

        def update(self, k):
            self.n += k
            if self.n:
                raise KeyboardInterrupt

    out = tmp_path / "clip.mp4"
    with pytest.raises(KeyboardInterrupt):
        cluster.draw_on_cluster(scene, simulated(scene, 0, 24), Target.of(str(out), scene),
                                Cluster(scheduler), bar=Interrupting())
    assert list(tmp_path.iterdir()) == []


def worker_encoders(pid: int) -> list[int]:
    """Pids of the ffmpeg processes that the children of `pid` (its local cluster's
    workers) started: segments being encoded."""
    return [p for worker in children(pid) for p in children(worker)
            if b"ffmpeg" in _cmdline(p)]


def _cmdline(pid: int) -> bytes:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def _signalled(out: Path, frames: str, sent: int, ready) -> tuple[int, str]:
    """Render the plate into `out` on a local cluster of two workers, in a session of its
    own as a terminal's job; send `sent` to its whole process group (as a terminal does)
    once `ready(its pid)`: (its exit status, its stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "render", str(PLATE), "-o", str(out), "--size", "320x180",
         "--frames", frames, "--quiet", "--scheduler", "local", "--workers", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=default_sigint)
    try:
        deadline = time.monotonic() + 60
        while not ready(proc.pid):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the render never got there"
            time.sleep(0.01)
        os.killpg(proc.pid, sent)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the workers")
@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGHUP])
def test_a_terminals_signal_while_the_local_workers_start_is_one_line(tmp_path, sent):
    """Ctrl-C or a hangup as the local cluster's worker processes are spawned (the whole
    process group receives it): each worker printed its own traceback, dozens of lines.
    They start with both held back, and this process alone answers: one line, 130."""
    code, err = _signalled(tmp_path / "clip.mp4", "200", sent, lambda pid: [
        child for child in children(pid) if b"multiprocessing" in _cmdline(child)])
    assert code == 130, err
    assert err.strip().splitlines() == ["boids-render: interrupted"], err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the workers")
def test_the_local_workers_start_with_the_stop_signals_held_back(tmp_path):
    """multiprocessing's resource tracker, started by the thread that spawns the first
    worker, unblocked SIGINT there: the workers then started with it deliverable, and a
    Ctrl-C as they started printed a fatal error from one of them (now and then)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "render", str(PLATE), "-o", str(tmp_path / "clip.mp4"),
         "--size", "320x180", "--frames", "3000", "--quiet", "--scheduler", "local",
         "--workers", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True, preexec_fn=default_sigint)
    try:
        deadline, workers = time.monotonic() + 60, []
        while len(workers) < 2:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the workers never started"
            time.sleep(0.05)
            workers = [child for child in children(proc.pid)
                       if b"spawn_main" in _cmdline(child)]
        # The tracker ignores SIGINT and SIGTERM itself; a hang-up killed it when it was
        # started before the signals were held back ("process died unexpectedly").
        tracker = [child for child in children(proc.pid)
                   if b"resource_tracker" in _cmdline(child)]
        stops = (signal.SIGINT, signal.SIGHUP, signal.SIGXCPU, signal.SIGUSR1, signal.SIGUSR2)
        for pid, held in [*((w, stops) for w in workers),
                          *((t, (signal.SIGHUP,)) for t in tracker)]:
            status = (Path("/proc") / str(pid) / "status").read_text()
            blocked = int(re.search(r"^SigBlk:\s*([0-9a-f]+)", status, re.M)[1], 16)
            for sent in held:
                assert blocked >> (sent - 1) & 1, (pid, sent.name, hex(blocked))
        assert len(tracker) == 1
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to find the workers")
def test_ctrl_c_in_a_terminal_stops_a_local_cluster_render_in_one_line(tmp_path):
    """A terminal's Ctrl-C signals the whole foreground process group, the cluster's
    worker processes too: still one line, exit 130, nothing under the output's name."""
    # Segments of a few seconds: an interrupted worker finishes its segment before the
    # cluster's close would kill it, and then exits on its own (where it used to print a
    # traceback). 1200 frames take longer to draw than to reach the first segment.
    code, err = _signalled(tmp_path / "clip.mp4", "1200", signal.SIGINT, worker_encoders)
    assert code == 130, err
    assert "Traceback" not in err and len(err.splitlines()) <= 2, err
    assert err.strip().splitlines()[-1] == "boids-render: interrupted"
    assert list(tmp_path.iterdir()) == []  # no clip, no segments


@pytest.mark.parametrize("args, message", [
    (("--scheduler", "tcp://127.0.0.1:1"), "cannot reach a Dask scheduler"),
    (("--scheduler", "nowhere"), "expected 'local' or a scheduler's address"),
    (("--scheduler", "tls://127.0.0.1:8786"), "expected 'local' or a tcp:// address"),
    (("--scheduler", "local", "-o", "{tmp}/x.gif", "--fps", "25"), "palette"),
    (("--scheduler", "local", "-o", "{tmp}/x.webp"), "assembles an animated WebP whole"),
    (("--scheduler", "local", "-o", "{tmp}/x.apng"), "cannot join APNG segments"),
    (("--scheduler", "local", "--still", "1", "-o", "{tmp}/x.png"), "drop --scheduler"),
    (("--cache-dir", "{tmp}/c"), "add --scheduler"),
    (("--scheduler", "local", "--resume"), "--resume applies to PNG sequences"),
    (("--scheduler", "tcp://127.0.0.1:1", "--workers", "4"), "dask worker --nworkers"),
])
def test_cluster_options_misused_are_refused_clearly(cli, tmp_path, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "-o" not in args:
        args += ["-o", f"{tmp_path}/x.mp4"]
    started = time.monotonic()
    r = cli(PLATE, *args, "--frames", "3")
    assert r.code == 2, r
    assert message in r.err
    assert time.monotonic() - started < 15
    assert not [p for p in tmp_path.iterdir() if p.name != "c"]


@pytest.mark.parametrize("args, message", [
    (("-o", "{tmp}/x.gif", "--fps", "25"), "palette"),
    (("-o", "{tmp}/x.webp",), "assembles an animated WebP whole"),
    (("-o", "{tmp}/x.mov", "-o", "{tmp}/y.mov"), "--scheduler writes one output at a time"),
    (("-o", "{tmp}/x.mp4", "--cache-dir", "{tmp}/file/states"),
     "--cache-dir {tmp}/file/states: {tmp}/file is a file, not a folder"),
    (("-o", "{tmp}/two\nlines.mp4"), "cannot hold a name with a line break"),
])
def test_check_refuses_what_a_cluster_render_refuses_and_the_render_before_any_work(
        cli, tmp_path, monkeypatch, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    message = message.replace("{tmp}", str(tmp_path))
    (tmp_path / "file").write_text("")  # where --cache-dir wants a folder

    def no_work(*args, **kwargs):
        raise AssertionError("nothing may be simulated before the refusal")

    monkeypatch.setattr(states, "Simulation", no_work)
    for check in ((), ("--check",)):
        r = cli(PLATE, *args, "--scheduler", "local", "--frames", "3", *check)
        assert r.code == 2 and len(r.err_lines) == 1 and message in r.err, r.err
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


def test_without_the_extra_the_error_says_how_to_install_it(cli, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if absent
    r = cli(PLATE, "-o", tmp_path / "x.mp4", "--frames", "3", "--scheduler", "local")
    assert r.code == 2
    assert "boids-render[distributed]" in r.err


@pytest.mark.parametrize("other", ["version", "sources"])
def test_a_worker_with_another_version_or_modified_sources_is_refused(
        cli, scheduler, tmp_path, monkeypatch, other):
    import render

    if other == "version":
        monkeypatch.setattr(render, "__version__", "0.0.0-other")  # this side only
    else:  # the same version number, its code edited on one side
        monkeypatch.setattr(segments, "_sources", lambda: "0123456789abcdef")

    def no_work(*args, **kwargs):
        raise AssertionError("refused before the flock is simulated (a film settles minutes)")

    monkeypatch.setattr(states, "Simulation", no_work)
    r = cli(PLATE, "-o", tmp_path / "x.mp4", "--frames", "3", "--scheduler", scheduler)
    assert r.code == 2, r.err
    assert "install the same version, from the same sources, on every worker" in r.err
    assert list(tmp_path.iterdir()) == []


def _scheduler_alone() -> tuple[subprocess.Popen, str]:
    """A Dask scheduler process on a free local port, no worker, once it listens; and its
    address."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                                  "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", ":0"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    return scheduler, f"tcp://127.0.0.1:{port}"


def test_a_scheduler_lost_while_asking_for_its_workers_is_one_line():
    """The render asks the scheduler how many threads its workers have before each task;
    killed before, the question is the first to find it gone: the same one line as a
    task's lost result, not the client's own account of the connection (reset under a
    question, or not made again)."""
    import dask
    from distributed import Client

    from render.cluster import _slots
    from render.errors import BoidsError

    scheduler, address = _scheduler_alone()
    try:
        with dask.config.set({"distributed.comm.timeouts.connect": "2s"}), \
                Client(address, timeout=5) as client:
            assert _slots(client, address) == 1  # no worker yet: at least one
            scheduler.kill()
            scheduler.wait()
            with pytest.raises(BoidsError, match="connection to the scheduler was lost"):
                _slots(client, address)
    finally:
        scheduler.kill()
        scheduler.wait()


def test_a_lost_scheduler_ends_the_render_in_one_line(capsys, tmp_path):
    """The scheduler killed mid-render: exit 1, one line saying so, nothing written."""
    from render.cli import main

    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    scheduler, address = _scheduler_alone()
    worker = None
    try:
        worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                                   address, "--nthreads", "1", "--nworkers", "1"], **quiet)
        codes = []
        out = tmp_path / "clip.mp4"
        render = threading.Thread(target=lambda: codes.append(main([
            str(PLATE), "-o", str(out), "--size", "640x360", "--frames", "60",
            "--motion-blur", "8", "--quiet", "--scheduler", address])))
        render.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(tmp_path.glob(".clip.segments-*")):
            time.sleep(0.1)  # the render is under way once its segments folder exists
        time.sleep(1)
        scheduler.kill()
        render.join(timeout=120)
        assert not render.is_alive()
    finally:
        for proc in (worker, scheduler):
            if proc is not None:
                proc.kill()
                proc.wait()
    assert codes == [1]
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "connection to the scheduler was lost" in lines[0], lines
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("greeting", [None, b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n"],
                         ids=["silent", "banner"])
def test_something_else_listening_at_the_address_is_refused_in_seconds(
        cli, tmp_path, monkeypatch, greeting):
    """A web server or the dashboard (silent: the handshake would wait forever) or sshd
    (its banner read as a message's length: 3 EiB) at the scheduler's address."""
    monkeypatch.setattr(cluster, "ANSWER_S", 1.0)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        port = server.getsockname()[1]

        def serve():
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:
                    return
                if greeting:
                    conn.sendall(greeting)

        threading.Thread(target=serve, daemon=True).start()
        started = time.monotonic()
        r = cli(PLATE, "-o", tmp_path / "x.mp4", "--frames", "3", "--scheduler",
                f"tcp://127.0.0.1:{port}")
    assert r.code == 2 and time.monotonic() - started < 10, r.err
    assert "something listens there, but no Dask scheduler answered within 1 s" in r.err
    assert list(tmp_path.iterdir()) == []


def test_the_scheduler_is_reached_before_the_flock_settles(cli, tmp_path):
    """No scheduler there: said at once, not after minutes of settling and flight."""
    started = time.monotonic()
    r = cli(SCENES / "murmuration.toml", "-o", tmp_path / "x.mp4", "--frames", "3",
            "--scheduler", "tcp://127.0.0.1:1")
    assert r.code == 2 and "cannot reach a Dask scheduler" in r.err, r.err
    assert "settling" not in r.err and time.monotonic() - started < 10


def test_a_scheduler_without_workers_says_it_waits_then_gives_up(cli, tmp_path,
                                                                   monkeypatch):
    monkeypatch.setattr(cluster, "WORKER_WAIT_S", 2.0)
    scheduler, address = _scheduler_alone()
    try:
        r = cli(PLATE, "-o", tmp_path / "x.mp4", "--frames", "3", "--scheduler", address)
    finally:
        scheduler.kill()
        scheduler.wait()
    assert r.code == 2, r.err
    lines = r.err.splitlines()
    waiting = [i for i, line in enumerate(lines) if "no worker has joined yet; waiting up "
               "to 2 s" in line]
    given_up = [i for i, line in enumerate(lines) if "no worker joined within 2 s" in line]
    assert waiting and given_up and waiting[0] < given_up[0], lines
    assert list(tmp_path.iterdir()) == []


def test_an_encoder_failing_on_a_worker_names_the_frames_not_its_scratch_file(tmp_path,
                                                                              monkeypatch):
    """A segment's clip is encoded into the worker's scratch space: a failure there names
    the worker and the segment's frames, not a scratch file no one else can see."""
    from render.errors import EncodeError
    from render.states import simulated

    fake = tmp_path / "ffmpeg"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("IMAGEIO_FFMPEG_EXE", str(fake))
    scene = load_scene(PLATE, [("output.size", '"160x90"', "test")])
    shipped = segments.Shipment(tuple(simulated(scene, 4, 3)))
    with pytest.raises(EncodeError) as failed:
        segments.render_clip_segment(".mp4", scene, shipped, "t", 0, segments.version())
    assert str(failed.value).startswith("a worker: ")
    assert "frames 4–6" in str(failed.value) and "segment.mp4" not in str(failed.value)


@pytest.mark.parametrize("known", [True, False])
def test_a_worker_on_other_code_is_left_out_and_the_render_completes(cli, local_frames,
                                                                     tmp_path, monkeypatch,
                                                                     known):
    """One stray worker on a shared cluster (another checkout, an older install) ended
    the whole render. It is left out, with a line naming it, and the others draw every
    frame: found there when the render starts (`known`), or when it refuses a task
    (the workers' versions not read at the start)."""
    stray = tmp_path / "stray.py"
    stray.write_text("import render.segments\n\n\ndef dask_setup(worker):\n"
                     "    render.segments._sources = lambda: '0123456789abcdef'\n")
    if not known:
        monkeypatch.setattr(cluster, "_other_versions", lambda client: {})
    scheduler, address = _scheduler_alone()
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker",
                                 address, "--nthreads", "1", "--nworkers", "1",
                                 *extra], **quiet)
               for extra in ((), ("--preload", str(stray)))]
    try:
        with Client(address) as client:
            client.wait_for_workers(2, timeout=60)
        r = cli(PLATE, "-o", f"{tmp_path}/frames/", *SMALL, "--frames", "14",
                "--motion-blur", "2", "--scheduler", address)
    finally:
        for proc in (*workers, scheduler):
            proc.kill()
            proc.wait()
    assert r.code == 0, r.err
    left = [line for line in r.err_lines if "left out of this render" in line]
    assert len(left) == 1 and "(sources 0123456789abcdef)" in left[0], r.err
    assert files(tmp_path / "frames") == files(local_frames / "frames")
