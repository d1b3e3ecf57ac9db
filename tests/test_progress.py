"""Progress bars: redrawn often on a terminal, rarely in a log file."""

import io
import time

import numpy as np

from render import progress
from render.scene import build_scene
from render.sim.simulate3d import Simulation3D

from test_step3d import scene3


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_is_redrawn_ten_times_a_second_on_a_terminal_and_every_10_s_in_a_log(
        monkeypatch):
    monkeypatch.setattr("sys.stderr", Terminal())
    assert progress.progress_bar(total=1).mininterval == 0.1
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert progress.progress_bar(total=1).mininterval == 10.0


def test_a_bar_in_a_log_is_plain_lines(monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr("sys.stderr", log)
    with progress.progress_bar(total=3, desc="clip.mp4", unit="frame") as bar:
        for _ in range(3):
            bar.update()
    with progress.progress_bar(total=2, desc="settling", leave=False) as bar:
        bar.update(2)  # cleared at its end on a terminal, in a log its last line stays
    text = log.getvalue()
    assert "\r" not in text and text.isascii() and text.endswith("\n"), repr(text)
    lines = text.splitlines()
    assert lines[0].startswith("clip.mp4:   0%") and lines[1].startswith("clip.mp4: 100%")
    assert "3/3" in lines[1] and lines[2].startswith("settling:   0%"), lines
    assert lines[3].startswith("settling: 100%") and "2/2" in lines[3], lines
    assert all(line == line.rstrip() and line for line in lines), lines
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with progress.progress_bar(total=1) as bar:
        bar.update()
    assert "\r" in terminal.getvalue()  # drawn in place


def test_settling_into_a_log_draws_its_start_and_its_end(capsys):
    """Seconds of settling into a file: its first line and its last, not one every 0.1 s."""
    def settled(steps: int, shown: bool) -> None:
        settings = {"seed": 5, "dt": 0.01, "settle_steps": steps}
        scene = build_scene({**scene3(n=50).to_dict(), "scene": settings}, "t.toml")
        Simulation3D(scene, progress=shown, cache=False)

    settled(2, shown=False)  # a first run compiles: its first step alone may take 10 s
    started = time.monotonic()
    settled(1500, shown=True)
    took = time.monotonic() - started
    err = capsys.readouterr().err
    # Its start and its end, and a line every 10 s on a machine slow enough to take that
    # long (under load).
    assert 2 <= err.count("settling:") <= 2 + took // 10, err
    assert "settling: 100%" in err.splitlines()[-1], err


def test_a_still_late_in_a_clip_shows_the_flight_to_it_unless_quiet(cli, small_scene,
                                                                     tmp_path):
    shown = cli(small_scene, "--still", "0.75", "-o", tmp_path / "a.png")
    assert shown.code == 0 and "flying to 0.75 s" in shown.err, shown.err
    quiet = cli(small_scene, "--still", "0.75", "-o", tmp_path / "b.png", "-q")
    assert quiet.code == 0 and quiet.err == ""
    early = cli(small_scene, "--still", "0", "-o", tmp_path / "c.png")
    assert "flying to" not in early.err  # frame 0 is where the flock already is


def test_the_flight_to_the_first_frame_is_the_same_flight_with_its_bar(small_scene):
    from render.scene import load_scene
    from render.sim.simulate import Simulation, frames

    scene = load_scene(small_scene)
    fps = scene.output.fps
    shown, plain = (next(frames(Simulation(scene), fps, 1, first=20, progress=progress))
                    for progress in (True, False))
    assert shown.time == plain.time
    np.testing.assert_array_equal(shown.positions, plain.positions)
    np.testing.assert_array_equal(shown.velocities, plain.velocities)


def test_a_contact_sheet_shows_its_frames_bar_unless_quiet(cli, small_scene, tmp_path):
    shown = cli(small_scene, "--contact-sheet", tmp_path / "a.png")
    assert shown.code == 0 and "a.png" in shown.err, shown.err
    quiet = cli(small_scene, "--contact-sheet", tmp_path / "b.png", "-q")
    assert quiet.code == 0 and quiet.err == ""


def test_a_loop_shows_the_search_for_its_start_unless_quiet(cli, small_scene, tmp_path):
    from render.sim import loop

    loop._SEARCHES.clear()  # searched once per scene in a process: this one searches again
    shown = cli(small_scene, "--loop", "--crossfade", "0.2", "-o", tmp_path / "a.webm")
    assert shown.code == 0 and "searching the loop's start" in shown.err, shown.err
    loop._SEARCHES.clear()
    quiet = cli(small_scene, "--loop", "--crossfade", "0.2", "-o", tmp_path / "b.webm", "-q")
    assert quiet.code == 0 and "searching" not in quiet.err


def test_a_note_during_a_bar_starts_a_line_of_its_own(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    with progress.progress_bar(total=3, desc="clip.gif", file=terminal) as bar:
        bar.update()
        progress.note("60 fps is faster than a GIF plays")
        bar.update()
    lines = terminal.getvalue().replace("\r", "\n").split("\n")
    assert "boids-render: 60 fps is faster than a GIF plays" in lines, lines


def test_a_full_bar_says_the_encoder_is_finishing_then_ends_plain(cli, small_scene, tmp_path):
    """The last frames handed over, ffmpeg still encodes what its look-ahead holds: the bar
    says so rather than sit full and silent, and its last line is the plain count."""
    shown = cli(small_scene, "-o", tmp_path / "a.mp4")
    assert shown.code == 0, shown.err
    lines = [line for line in shown.err.splitlines() if line.startswith("a.mp4:")]
    finishing = [i for i, line in enumerate(lines) if "encoding the last frames" in line]
    assert finishing and "100%" in lines[finishing[0]], lines
    assert finishing[-1] < len(lines) - 1 and "100%" in lines[-1], lines
    assert "encoding the last frames" not in lines[-1], lines
    quiet = cli(small_scene, "-o", tmp_path / "b.mp4", "-q")
    assert quiet.code == 0 and quiet.err == ""
