"""What the budget check refuses and what it lets through: the disk only where an output's
size follows from its frames, outputs written together added up, a GIF's encoder holding
every frame, the web preset's second encoder."""

from __future__ import annotations

import pytest

from render import budget
from render.scene import load_scene


def test_a_clip_is_not_refused_by_a_guess_at_its_size(cli, small_scene, tmp_path,
                                                      monkeypatch):
    # 30 frames at 1080p: H.264's guess 6.2 MB, a PNG sequence's 12.4 MB; 1 MB is free.
    monkeypatch.setattr(budget, "available_disk", lambda folder: 1e6)
    r = cli(small_scene, "-o", tmp_path / "a.mp4", "--size", "320x180", "-q")
    assert r.code == 0, r.err
    assert (tmp_path / "a.mp4").stat().st_size < 1e6  # the guess was far above it
    r = cli(small_scene, "-o", f"{tmp_path}/frames/", "--size", "1920x1080", "-q")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert "on disk, but only 1 MB is free there" in r.err
    assert "fewer frames (--frames, --duration) or a smaller frame (--size)" in r.err
    r = cli(small_scene, "--check", "-o", tmp_path / "b.mp4", "--size", "1920x1080")
    assert r.code == 0 and "of the order of 6.22 MB on disk" in r.out, r.out


@pytest.mark.parametrize("keep", ["--resume", "--no-overwrite"])
def test_frames_already_there_are_not_counted_again(cli, small_scene, tmp_path, monkeypatch,
                                                    keep):
    seq, size = f"{tmp_path}/frames/", ("--size", "640x360", "--frames", "6")
    assert cli(small_scene, "-o", seq, *size, "--frames", "4", "-q").code == 0
    scene = load_scene(small_scene, [("output.size", '"640x360"', "--size"),
                                     ("output.frames", "6", "--frames")])
    each = budget.estimate(scene, seq).disk / 6
    # Room for the two frames still to draw, not for six: refused unless the four there
    # are kept.
    monkeypatch.setattr(budget, "available_disk", lambda folder: 3 * each)
    r = cli(small_scene, "-o", seq, *size, "-q")
    assert r.code == 2 and "on disk, but only" in r.err, r.err
    r = cli(small_scene, "--check", "-o", seq, *size, keep)
    assert r.code == 0, r.err
    assert "(4 frames already there left out)" in r.out
    assert f"{budget._bytes(2 * each)} on disk" in r.out
    r = cli(small_scene, "-o", seq, *size, keep, "-q")
    assert r.code == 0, r.err
    assert len(list((tmp_path / "frames").iterdir())) == 6
    r = cli(small_scene, "-o", f"{tmp_path}/f_%d_%d.png", *size, keep)
    assert r.code == 2 and "a frame pattern holds one %0Nd" in r.err, r.err


def test_outputs_written_together_are_refused_when_only_each_fits(cli, small_scene, tmp_path,
                                                                   monkeypatch):
    one = budget.estimate(load_scene(small_scene), "a.npz").disk
    monkeypatch.setattr(budget, "available_disk", lambda folder: 1.5 * one)
    r = cli(small_scene, "-o", tmp_path / "a.npz", "-o", tmp_path / "b.npz", "-q")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert f"{tmp_path / 'a.npz'}, {tmp_path / 'b.npz'}: need about" in r.err
    assert "on disk together" in r.err and "one at a time" in r.err
    assert not list(tmp_path.glob("*.npz"))
    assert cli(small_scene, "-o", tmp_path / "a.npz", "-q").code == 0  # alone, it fits


def test_outputs_written_together_add_up_their_memory(small_scene, monkeypatch):
    from render.errors import UsageError

    scene = load_scene(small_scene, [("output.size", '"3840x2160"', "--size")])
    costs = [budget.estimate(scene, name) for name in ("a.mp4", "b.mov")]
    shared = budget.BASE_BYTES + scene.count * budget.simulation_costs(scene)[0]
    together = sum(c.bytes for c in costs) - shared
    monkeypatch.setattr(budget, "available_memory", lambda: together - 1)
    with pytest.raises(UsageError, match="of memory together"):
        budget.check_together(scene, ["a.mp4", "b.mov"], costs)
    monkeypatch.setattr(budget, "available_memory", lambda: together + 1)
    budget.check_together(scene, ["a.mp4", "b.mov"], costs)


def test_a_gif_is_costed_with_every_frame_its_palette_holds(cli, small_scene, monkeypatch):
    def gif(seconds: float):
        scene = load_scene(small_scene, [("output.size", '"1920x1080"', "--size"),
                                         ("scene.duration", str(seconds), "--duration")])
        return budget.estimate(scene, "a.gif").bytes - budget.estimate(scene, "a.mp4").bytes

    frames = 60 * 30  # a minute at 30 fps: 13 GB held (20 GB measured for 3,000 frames)
    assert gif(60) == pytest.approx(frames * 1920 * 1080 * budget.GIF_BYTES_PER_PX_FRAME,
                                    rel=0.01)
    assert gif(60) > 10 * gif(5)
    monkeypatch.setattr(budget, "available_memory", lambda: 4e9)
    r = cli(small_scene, "--check", "-o", "x.gif", "--size", "1920x1080", "--duration", "60")
    assert r.code == 2 and "fewer frames (a GIF's encoder holds every frame)" in r.err, r.err


def test_the_web_preset_is_costed_with_both_its_encoders(small_scene):
    scene = load_scene(small_scene, [("output.size", '"1280x720"', "--size")])
    plain, web = budget.estimate(scene, "a.mp4"), budget.estimate(scene, "a.mp4", web=True)
    assert web.bytes - plain.bytes == pytest.approx(
        budget.WEB_BYTES + 1280 * 720 * budget.WEB_BYTES_PER_PX)
    frames = scene.frame_count
    assert web.seconds - plain.seconds == pytest.approx(
        frames * 1280 * 720 * budget.WEB_S_PER_PX)


def test_what_3d_frames_and_measures_cost_is_counted(write_scene):
    from conftest import SCENES

    film = load_scene(SCENES / "flock3d.toml", [("output.size", '"1920x1080"', "--size"),
                                                ("output.frames", "30", "--frames")])
    px = 1920 * 1080 * 30
    png, mp4, mov = (budget.estimate(film, name) for name in ("f/", "a.mp4", "a.mov"))
    # zlib on a 3D frame's dithered sky, ProRes: measured slower than x264's share.
    assert png.seconds - mp4.seconds == pytest.approx(
        px * (budget.PNG3_S_PER_PX - budget.VIDEO_S_PER_PX))
    assert mov.seconds - mp4.seconds == pytest.approx(
        px * (budget.MOV_S_PER_PX - budget.VIDEO_S_PER_PX))
    measured = budget.estimate(film, None, stats=True).bytes
    assert measured - budget.estimate(film, None).bytes == pytest.approx(
        film.count * budget.STATS3_BYTES_PER_BIRD)


def test_local_workers_each_hold_a_frame_and_an_encoder(cli, small_scene, tmp_path,
                                                        monkeypatch):
    scene = load_scene(small_scene, [("output.size", '"3840x2160"', "--size")])
    one = budget.estimate(scene, "a.mp4")
    two = budget.on_local_workers(scene, one, 2)
    frame = one.pixels * one.per_pixel  # 1.23 GB at 4K: two workers, 3.2 GB (3.65 measured)
    assert two.bytes - one.bytes == pytest.approx(
        2 * budget.BASE_BYTES + scene.count * budget.DRAW_BYTES_PER_BIRD + frame)
    monkeypatch.setattr(budget, "available_memory", lambda: one.bytes + 1e6)
    r = cli(small_scene, "--check", "-o", tmp_path / "a.mp4", "--size", "3840x2160",
            "--scheduler", "local", "--workers", "2")
    assert r.code == 2 and f"{tmp_path / 'a.mp4'} on 2 local workers: needs about" in r.err, \
        r.err
    assert cli(small_scene, "--check", "-o", tmp_path / "a.mp4", "--size",
               "3840x2160").code == 0  # on this process's threads, it fits


def test_too_many_local_workers_are_told_how_many_fit(cli, small_scene, tmp_path,
                                                     monkeypatch):
    """Five local workers at 4K where three fit: the advice is three workers, not a frame
    or a flock the size of what fits (a larger frame than asked, once)."""
    scene = load_scene(small_scene, [("output.size", '"3840x2160"', "--size")])
    one = budget.estimate(scene, "a.mp4")
    monkeypatch.setattr(budget, "available_memory",
                        lambda: budget.on_local_workers(scene, one, 3).bytes + 1)
    r = cli(small_scene, "--check", "-o", tmp_path / "a.mp4", "--size", "3840x2160",
            "--scheduler", "local", "--workers", "5")
    assert r.code == 2 and len(r.err_lines) == 1, r.err
    assert r.err_lines[0].endswith("(each worker draws and encodes in a process of its own); "
                                   "it would fit with --workers 3"), r.err
    assert cli(small_scene, "--check", "-o", tmp_path / "a.mp4", "--size", "3840x2160",
               "--scheduler", "local", "--workers", "3").code == 0


def test_every_drawing_threads_canvases_are_counted(small_scene, tmp_path):
    """2·threads + 1 canvases are in flight, each 4 bytes a pixel, and a 3D frame's float
    image (16) for OpenEXR, its straight colours (3) when transparent."""
    flat = load_scene(small_scene, [("output.size", '"3840x2160"', "--size")])
    three = budget.estimate(flat, "f_%04d.png", threads=15).bytes - \
        budget.estimate(flat, "f_%04d.png", threads=1).bytes
    assert three == 28 * 4 * 3840 * 2160
    (tmp_path / "s.toml").write_text('[world]\ndimensions = 3\n[flock]\ncount = 100\n'
                                     '[output]\nsize = "3840x2160"\n')
    deep = load_scene(tmp_path / "s.toml")
    clear = load_scene(tmp_path / "s.toml", [("output.transparent", "true", "--set")])
    for scene, output, each in ((deep, "f_%04d.exr", 4 + 16), (deep, "f_%04d.png", 4),
                                (clear, "f_%04d.png", 4 + 3)):
        grown = budget.estimate(scene, output, threads=7).bytes - \
            budget.estimate(scene, output, threads=2).bytes
        assert grown == 10 * each * 3840 * 2160, output


def test_a_local_clusters_workers_each_count_one_drawing_threads_canvases(
        cli, small_scene, tmp_path, monkeypatch):
    """Each worker draws on one thread (three canvases in flight), however many threads
    this machine's own drawing would take (32 cores here, as if)."""
    monkeypatch.setattr(budget, "drawing_threads", lambda: 31)
    scene = load_scene(small_scene, [("output.size", '"3840x2160"', "--size")])
    two = budget.on_local_workers(scene, budget.estimate(scene, "a.mp4", threads=1), 2)
    monkeypatch.setattr(budget, "available_memory", lambda: two.bytes + 1e6)
    r = cli(small_scene, "--check", "-o", tmp_path / "a.mp4", "--size", "3840x2160",
            "--scheduler", "local", "--workers", "2")
    assert r.code == 0, r.err  # counted as 31 threads a worker, it was refused


@pytest.mark.parametrize("output, transparent", [
    ("frames/", False), ("f_%03d.exr", False), ("clip.mov", False), ("f_%03d.jpg", False),
    ("clip.apng", False), ("frames/", True), ("f_%03d.exr", True), ("clip.mov", True)])
@pytest.mark.parametrize("size", ["320x180", "640x360", "480x270"])
def test_the_disk_estimate_bounds_what_the_frames_take(cli, tmp_path, size, output,
                                                       transparent):
    """The plate's 3,600 streaks at small sizes, with alpha: estimated at the 1080p rates,
    its ProRes took 3.9 times the estimate at 640x360 and ran out of disk at the end."""
    from conftest import SCENES

    flags = ["--size", size, "--frames", "4", *(["--transparent"] if transparent else [])]
    scene = load_scene(SCENES / "plate.toml", [
        ("output.size", f'"{size}"', "--size"), ("output.frames", "4", "--frames"),
        ("output.transparent", "true" if transparent else "false", "--transparent")])
    estimated = budget.estimate(scene, output).disk
    assert cli(SCENES / "plate.toml", "-o", f"{tmp_path}/{output}", *flags, "-q").code == 0
    took = sum(f.stat().st_size for f in tmp_path.rglob("*") if f.is_file())
    assert 0 < took <= estimated, (took, estimated)
    assert estimated < 8 * took  # a bound, not a refusal of what would fit


def test_a_still_the_disk_cannot_hold_is_refused_before_it_is_drawn(cli, small_scene,
                                                                     tmp_path, monkeypatch):
    # Drawn whole, then "No space left on device" at the end (a poster: minutes lost).
    scene = load_scene(small_scene, [("output.size", '"1920x1080"', "--size")])
    needs = {name: budget.still_cost(scene, tmp_path / name, 0, dpi=72).disk
             for name in ("a.png", "a.jpg", "a.exr")}
    monkeypatch.setattr(budget, "available_disk", lambda folder: 1e5)
    for name, need in needs.items():
        assert need > 1e5
        r = cli(small_scene, "--still", "0", "-o", tmp_path / name, "--size", "1920x1080")
        assert r.code == 2 and r.err_lines == [
            f"boids-render: {tmp_path / name}: needs about {budget._bytes(need)} on disk, but "
            f"only 100 kB is free there: use a smaller frame (--size), or write it "
            f"elsewhere"], r.err
    r = cli(small_scene, "--still", "0", "-o", tmp_path / "a.png", "--size", "160x90", "-q")
    assert r.code == 0, r.err
    r = cli(small_scene, "--still", "0", "-o", tmp_path / "a.pdf", "-q")  # not estimated
    assert r.code == 0, r.err
