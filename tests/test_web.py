"""--quality web: NAME.mp4 (H.264), NAME.av1.mp4 (AV1), NAME.jpg (poster), NAME.html, all
read back with real readers, written together or not at all, and played in a real
headless Chromium."""

from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import chromium
from conftest import chroma_location
from render import states
from render.encode import files, video, web
from render.encode.video import count_frames, ffmpeg_exe

SIZE = (320, 180)
ARGS = ("--quality", "web", "--size", "320x180", "--duration", "1", "-q")
NAMES = ["hero.av1.mp4", "hero.html", "hero.jpg", "hero.mp4"]


def render_web(cli, scene: Path, folder: Path, *extra):
    return cli(scene, "-o", folder / "hero.mp4", *ARGS, *extra)


@pytest.fixture(scope="module")
def page(tmp_path_factory, small_scene_text) -> Path:
    """A web render of the small scene (1 s at 30 fps, 320x180) and its first frame as a
    PNG; returns the folder."""
    from render.cli import main

    folder = tmp_path_factory.mktemp("web")
    scene = folder / "small.toml"
    scene.write_text(small_scene_text)
    assert main([str(scene), "-o", str(folder / "out" / "hero.mp4"), *ARGS]) == 0
    assert main([str(scene), "-o", str(folder / "first_%03d.png"), "--size", "320x180",
                 "--fps", "30", "--frames", "1", "-q"]) == 0
    return folder


def probe(path: Path) -> dict:
    """The first video stream of `path` as ffmpeg describes it: codec, pix_fmt, size."""
    err = subprocess.run([ffmpeg_exe(), "-hide_banner", "-i", str(path)],
                         capture_output=True, text=True).stderr
    m = re.search(r"Video: (\w+) .*?, (\w+)\(.*?\), (\d+)x(\d+)", err)
    assert m, err
    return dict(codec=m[1], pix_fmt=m[2], size=(int(m[3]), int(m[4])), text=err)


def top_level_boxes(path: Path) -> list[str]:
    return [kind for kind, _, _ in web.mp4_boxes(path.read_bytes())]


def decoded_first_frame(path: Path) -> np.ndarray:
    """Frame 0 of a clip, decoded by ffmpeg to (h, w, 3) uint8 RGB."""
    raw = subprocess.run([ffmpeg_exe(), "-v", "error", "-i", str(path), "-frames:v", "1",
                          "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         capture_output=True, check=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(SIZE[1], SIZE[0], 3)


# ---------------------------------------------------------------------------------------
# The four files


def test_web_writes_four_files(page):
    assert sorted(p.name for p in (page / "out").iterdir()) == NAMES  # no temporaries


# H.264 in 8 bits (browsers decode no High 10); AV1 in 10 bits, measured smaller for the
# same VMAF (docs/loops.md), and AV1 Main decodes it everywhere AV1 plays.
@pytest.mark.parametrize("name, codec, profile, pix_fmt", [
    ("hero.mp4", "h264", "(High)", "yuv420p"),
    ("hero.av1.mp4", "av1", "(Main)", "yuv420p10le")])
def test_each_clip_reads_back_with_its_codec_size_frames_and_faststart(
        page, name, codec, profile, pix_fmt):
    path = page / "out" / name
    found = probe(path)
    assert found["codec"] == codec and profile in found["text"]
    assert found["pix_fmt"] == pix_fmt
    assert found["size"] == SIZE
    assert "bt709" in found["text"]
    # AV1 has no word for centred chroma (only left and top-left): it says nothing.
    assert chroma_location(path) == ("center" if codec == "h264" else "unspecified")
    assert count_frames(path) == 30
    boxes = top_level_boxes(path)
    assert boxes.index("moov") < boxes.index("mdat"), boxes  # +faststart


def test_poster_is_the_first_frame(page):
    poster = Image.open(page / "out" / "hero.jpg")
    assert poster.format == "JPEG" and poster.size == SIZE
    jpeg = np.asarray(poster.convert("RGB"), dtype=np.int16)
    frame = np.asarray(Image.open(page / "first_000.png").convert("RGB"), dtype=np.int16)
    diff = np.abs(jpeg - frame)
    assert diff.mean() < 1.5 and np.percentile(diff, 99) < 24, (diff.mean(), diff.max())
    # …and the clips' first frame is the same picture (through 4:2:0 and the encoder).
    for name in ("hero.mp4", "hero.av1.mp4"):
        clip = decoded_first_frame(page / "out" / name).astype(np.int16)
        assert np.abs(clip - frame).mean() < 4, name


def test_the_poster_records_its_scene_and_from_draws_it_again(page, cli):
    info = cli("--info", page / "out" / "hero.jpg")
    assert info.code == 0, info.err
    assert "time: 0" in info.out and 'size = "320x180"' in info.out
    assert "dpi: 72" in info.out  # as a JPEG still records it
    again = page / "again.jpg"
    assert cli("--from", page / "out" / "hero.jpg", "-o", again, "-q").code == 0
    with Image.open(again) as still, Image.open(page / "out" / "hero.jpg") as poster:
        assert np.array_equal(np.asarray(still), np.asarray(poster))


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.videos: list[dict] = []
        self.sources: list[dict] = []

    def handle_starttag(self, tag, attrs):
        if tag == "video":
            self.videos.append(dict(attrs))
        elif tag == "source":
            self.sources.append(dict(attrs))


def test_page_offers_av1_first_then_h264_with_the_files_codecs(page):
    parsed = _Page()
    parsed.feed((page / "out" / "hero.html").read_text(encoding="utf-8"))
    parsed.close()
    (element,) = parsed.videos
    assert {"autoplay", "muted", "loop", "playsinline"} <= set(element)
    assert element["poster"] == "hero.jpg"
    assert (element["width"], element["height"]) == ("320", "180")
    assert [s["src"] for s in parsed.sources] == ["hero.av1.mp4", "hero.mp4"]
    av1, avc = (s["type"] for s in parsed.sources)
    # AV1 Main profile, level 2.0 (seq_level_idx 0) for 320x180 at 30 fps, Main tier, 10-bit.
    assert av1 == 'video/mp4; codecs="av01.0.00M.10"'
    # High profile (0x64), no constraints, level 3.1 (0x1f: the lowest the preset sets).
    assert avc == 'video/mp4; codecs="avc1.64001f"'


@pytest.mark.parametrize("size, fps, level", [
    ((1280, 720), 30, "3.1"), ((1280, 720), 60, "4.0"), ((1920, 1080), 30, "4.0"),
    ((1920, 1080), 60, "4.2"), ((3840, 2160), 30, "5.1"), ((3840, 2160), 60, "5.2"),
    ((7680, 4320), 30, None),
    # Within 3.1's frame size (2700 of 3600 macroblocks) but 180 across, past its √28800.
    ((2880, 240), 30, "4.0"), ((8704, 16), 30, None)])
def test_h264_level_is_the_lowest_that_fits_size_and_rate(size, fps, level):
    from fractions import Fraction

    args = web.h264_args(size, Fraction(fps))
    assert (args[args.index("-level") + 1] if "-level" in args else None) == level


def test_codecs_strings_read_the_decoder_configuration(tmp_path):
    # Hand-built: stsd → avc1 (78 bytes of fields) → avcC with profile 0x4d, level 0x28.
    def box(kind, payload):
        return (8 + len(payload)).to_bytes(4, "big") + kind + payload

    avcc = box(b"avcC", bytes([1, 0x4D, 0x40, 0x28]) + bytes(4))
    stsd = box(b"stsd", bytes(4) + (1).to_bytes(4, "big") + box(b"avc1", bytes(78) + avcc))
    nest = stsd
    for kind in (b"stbl", b"minf", b"mdia", b"trak", b"moov"):
        nest = box(kind, nest)
    path = tmp_path / "x.mp4"
    path.write_bytes(box(b"ftyp", b"isom") + nest)
    assert web.codecs_of(path) == "avc1.4d4028"
    # av1C: marker/version, profile 0 level 8 (4.0), tier high, 10-bit.
    av1c = box(b"av1C", bytes([0x81, 0x08, 0xC0, 0]))
    stsd = box(b"stsd", bytes(4) + (1).to_bytes(4, "big") + box(b"av01", bytes(78) + av1c))
    nest = stsd
    for kind in (b"stbl", b"minf", b"mdia", b"trak", b"moov"):
        nest = box(kind, nest)
    path.write_bytes(nest)
    assert web.codecs_of(path) == "av01.0.08H.10"


# ---------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("output, says", [
    ("hero.webm", "--quality web needs -o NAME.mp4"),
    ("frames/", "--quality web needs -o NAME.mp4"),
    ("hero.av1.mp4", "not .av1.mp4"),
])
def test_web_refuses_an_output_that_is_not_name_mp4(cli, small_scene, tmp_path, output,
                                                    says):
    r = cli(small_scene, "-o", tmp_path / output, *ARGS)
    assert r.code == 2 and len(r.err_lines) == 1 and says in r.err, r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]


def test_web_refuses_no_output_crf_and_transparency(cli, small_scene, tmp_path):
    r = cli(small_scene, "--stats", tmp_path / "s.csv", *ARGS)
    assert r.code == 2 and "one -o NAME.mp4" in r.err, r.err
    r = render_web(cli, small_scene, tmp_path, "--crf", "20")
    assert r.code == 2 and "drop --crf" in r.err, r.err
    r = render_web(cli, small_scene, tmp_path, "--transparent")
    assert r.code == 2 and "no alpha channel: drop --transparent" in r.err, r.err
    assert ".mov" not in r.err  # which --quality web would refuse in turn
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]


def test_web_checks_and_draws_contact_sheets_as_the_other_presets(cli, small_scene,
                                                                  tmp_path):
    # Both were refused: --check wanted -o NAME.mp4, and a contact sheet wanted it, then
    # refused it ("drop -o").
    assert cli(small_scene, *ARGS, "--check").code == 0
    sheet = tmp_path / "sheet.png"
    r = cli(small_scene, *ARGS, "--contact-sheet", sheet)
    assert r.code == 0 and sheet.exists(), r.err


def test_web_refuses_a_size_its_encoders_fail_on_before_any_work(cli, small_scene,
                                                                  tmp_path):
    for check in (["--check"], []):
        r = cli(small_scene, "-o", tmp_path / "hero.mp4", *ARGS, "--size", "16x8", *check)
        assert r.code == 2 and r.err_lines == [
            "boids-render: --quality web needs a size of at least 16x16 px, got 16x8"], r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]
    assert render_web(cli, small_scene, tmp_path, "--size", "16x16").code == 0


def test_web_sets_720p30_and_leaves_loop_to_loop(cli, small_scene):
    r = cli(small_scene, "--quality", "web", "--check", "-o", "out/hero.mp4")
    assert r.code == 0, r.err
    assert re.search(r'size = "1280x720"\s+# --quality web', r.out), r.out
    assert re.search(r"loop = false", r.out), r.out
    r = cli(small_scene, "--quality", "web", "--loop", "--duration", "3", "--check", "-o",
            "out/hero.mp4")
    assert re.search(r"loop = true\s+# --loop", r.out), r.out


def test_no_overwrite_refuses_when_any_of_the_four_exists(cli, small_scene, tmp_path):
    (tmp_path / "hero.html").write_text("mine")
    r = render_web(cli, small_scene, tmp_path, "--no-overwrite")
    assert r.code == 2 and "hero.html: already exists" in r.err, r.err
    assert (tmp_path / "hero.html").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hero.html", "small.toml"]


# ---------------------------------------------------------------------------------------
# All four or none


def test_interrupted_web_render_leaves_none_of_the_four(cli, small_scene, tmp_path,
                                                        monkeypatch):
    real, drawn = states.draw_frame, []

    def draw(*args, **kwargs):
        if len(drawn) == 5:
            raise KeyboardInterrupt
        drawn.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(states, "draw_frame", draw)
    r = render_web(cli, small_scene, tmp_path)
    assert r.code == 130, r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]


def test_the_h264_clip_failing_its_check_last_leaves_no_av1_either(
        cli, small_scene, tmp_path, monkeypatch):
    # The H.264 clip closes last, after the AV1 clip and the poster are finished: before
    # the files were held and placed together, those two stayed.
    real = video.count_frames
    monkeypatch.setattr(video, "count_frames",
                        lambda path: real(path) - (".av1." not in Path(path).name))
    r = render_web(cli, small_scene, tmp_path)
    assert r.code == 1 and "hero.mp4: expected 30 frames, ffmpeg wrote 29" in r.err, r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]


def third_place_fails(monkeypatch) -> list[str]:
    """files.place failing on its third call (a full disk); returns the names it got."""
    real, calls = files.place, []

    def place(tmp, path, **kw):
        calls.append(path.name)
        if len(calls) == 3:
            raise OSError(28, "No space left on device", str(path))
        return real(tmp, path, **kw)

    monkeypatch.setattr(files, "place", place)
    return calls


def test_a_rename_failing_midway_takes_back_the_files_already_placed(
        cli, small_scene, tmp_path, monkeypatch):
    calls = third_place_fails(monkeypatch)
    r = render_web(cli, small_scene, tmp_path)
    assert r.code == 1 and "No space left on device" in r.err, r.err
    assert calls == ["hero.mp4", "hero.av1.mp4", "hero.jpg"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]


def staged_over_old(folder, names) -> list:
    """(temporary, final) pairs: each final name holds "old NAME", its temporary "new NAME"."""
    staged = []
    for name in names:
        (folder / name).write_text(f"old {name}")
        tmp = files.temp_beside(folder / name, ".x")
        tmp.write_text(f"new {name}")
        staged.append((tmp, folder / name))
    return staged


def test_a_set_that_fails_midway_puts_back_the_files_it_replaced(tmp_path, monkeypatch):
    staged = staged_over_old(tmp_path, ("a.mp4", "b.jpg", "c.html"))
    third_place_fails(monkeypatch)
    with pytest.raises(OSError, match="No space"):
        files.place_together(staged)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {
        name: f"old {name}" for name in ("a.mp4", "b.jpg", "c.html")}


def test_a_folder_at_one_of_the_pages_names_is_refused_before_any_work(cli, small_scene,
                                                                       tmp_path):
    (tmp_path / "hero.html").mkdir()
    r = render_web(cli, small_scene, tmp_path)
    assert r.code == 2 and "hero.html: is a folder" in r.err, r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hero.html", "small.toml"]


def test_place_together_with_no_overwrite_places_none_when_one_name_is_taken(tmp_path):
    pairs = []
    for name in ("a.mp4", "b.jpg", "c.html"):
        tmp = files.temp_beside(tmp_path / name, ".x")
        tmp.write_text(f"new {name}")
        pairs.append((tmp, tmp_path / name))
    (tmp_path / "c.html").write_text("someone else's")
    with pytest.raises(Exception, match="c.html: appeared while rendering"):
        files.place_together(pairs, overwrite=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.html"]
    assert (tmp_path / "c.html").read_text() == "someone else's"


# ---------------------------------------------------------------------------------------
# In a browser

# Plays `src` alone (muted, looping) for `wait_ms`, sampling currentTime every 50 ms.
PLAY = """new Promise(resolve => {
  const v = document.createElement('video');
  v.muted = true; v.loop = true; v.playsInline = true; v.src = %s;
  const seen = [];
  const poll = setInterval(() => seen.push(v.currentTime), 50);
  const done = result => { clearInterval(poll); v.remove(); resolve(result); };
  v.onerror = () => done({error: v.error ? v.error.code + ' ' + v.error.message : '?'});
  document.body.appendChild(v);
  v.play().catch(e => done({error: String(e)}));
  setTimeout(() => done({width: v.videoWidth, height: v.videoHeight,
                         duration: v.duration, seen}), %d);
})"""


@pytest.mark.slow
def test_each_source_plays_loops_and_has_the_asked_width_in_chromium(page):
    exe = chromium.find()
    if exe is None:
        pytest.skip(f"no headless Chromium ({', '.join(chromium.NAMES)}) on PATH; "
                    f"`make test` installs chromium-headless-shell")
    with chromium.serve(page / "out") as url, chromium.Browser(exe) as browser:
        browser.call("Page.enable", browser.session)
        browser.goto(url + "hero.html")
        # The page itself: the poster is set, and the browser picks the AV1 source.
        chosen = browser.evaluate("""new Promise(resolve => {
            const v = document.querySelector('video');
            const check = () => v.currentTime > 0 ? resolve([v.currentSrc, v.poster])
                                                  : setTimeout(check, 50);
            check(); })""")
        assert chosen == [url + "hero.av1.mp4", url + "hero.jpg"]
        for src in ("hero.av1.mp4", "hero.mp4"):
            played = browser.evaluate(PLAY % (json.dumps(src), 2600))  # clip: 1 s
            assert "error" not in played, (src, played)
            seen = played["seen"]
            assert (played["width"], played["height"]) == SIZE, src
            assert played["duration"] == pytest.approx(1.0, abs=0.05), src
            assert max(seen) > 0.5, (src, seen)  # currentTime advances …
            wraps = [i for i in range(1, len(seen)) if seen[i] < seen[i - 1] - 0.3]
            assert wraps and seen[wraps[0] - 1] > 0.7, (src, seen)  # … and wraps (loop)
            assert max(seen[wraps[0]:]) > 0.3, (src, seen)  # and plays on after the wrap


def test_web_is_encoded_here_not_on_a_cluster(cli, small_scene, tmp_path):
    r = render_web(cli, small_scene, tmp_path, "--scheduler", "local")
    assert r.code == 2 and "drop --scheduler" in r.err, r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]
