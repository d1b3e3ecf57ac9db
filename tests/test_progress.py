"""Progress bars: redrawn often on a terminal, rarely in a log file."""

import io

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


def test_settling_into_a_log_draws_its_bar_once(capsys):
    """Seconds of settling into a file: the bar's first line, not one every 0.1 s."""
    def settled(steps: int, shown: bool) -> None:
        settings = {"seed": 5, "dt": 0.01, "settle_steps": steps}
        scene = build_scene({**scene3(n=50).to_dict(), "scene": settings}, "t.toml")
        Simulation3D(scene, progress=shown, cache=False)

    settled(2, shown=False)  # a first run compiles: its first step alone may take 10 s
    settled(1500, shown=True)
    err = capsys.readouterr().err
    assert err.count("settling:") == 1, err
