"""The contact sheet: a grid of a clip's frames, drawn small, each labelled with its time."""

from __future__ import annotations

from pathlib import Path

from . import budget
from .draw.surface import Canvas
from .encode.files import folders_made_for, place_or_refuse, refuse_existing
from .encode.images import encode_png
from .errors import UsageError
from .progress import progress_bar
from .scene import Scene
from .sim.simulate import frames
from .states import FrameState, exposure, require_finite, simulation

GAP_PX, LABEL_PX = 8, 22  # between thumbnails; the label's band under each


COLUMNS, ROWS, THUMB_WIDTH = 4, 3, 480


def layout(scene: Scene, output: str | Path, first: int = 0, columns: int = COLUMNS,
           rows: int = ROWS, thumb_width: int = THUMB_WIDTH):
    """(the frames shown, spread evenly over frames first … the last, a thumbnail's
    (w, h) px, the sheet's (w, h) px), or UsageError when the sheet would be too large for
    one cairo surface."""
    count = columns * rows
    total = scene.frame_count
    span = total - 1 - first
    picks = sorted({first + round(i * span / max(count - 1, 1)) for i in range(count)})
    columns, rows = grid(len(picks), columns)
    width, height = scene.output.size
    thumb = (thumb_width, max(1, round(thumb_width * height / width)))
    gap, label = GAP_PX, LABEL_PX
    sheet_size = (columns * (thumb[0] + gap) + gap, rows * (thumb[1] + gap + label) + gap)
    if max(sheet_size) > budget.IMAGE_MAX_SIDE:
        tallest = ((budget.IMAGE_MAX_SIDE - gap) // rows - gap - label) / thumb_width
        raise UsageError(f"{output}: output.size: expected a frame at most {tallest:.1f} "
                         f"times as tall as wide for a contact sheet (its {thumb_width}-px "
                         f"wide thumbnails are drawn on one cairo surface, at most "
                         f"{budget.IMAGE_MAX_SIDE} px a side), got {width}x{height}")
    return picks, thumb, sheet_size


def grid(count: int, columns: int) -> tuple[int, int]:
    """(columns, rows) of a sheet of `count` thumbnails, at most `columns` to a row: the
    fewest rows that hold them, filled evenly (5 frames: 3 and 2, not 4 and 1)."""
    rows = -(-count // columns)
    return -(-count // rows), rows


def require_output(output: str | Path, overwrite: bool = True) -> None:
    """UsageError, before any work, when a sheet cannot be written to `output`: not a
    .png, a folder's name, or (overwrite off) a file that exists."""
    if Path(output).suffix.lower() != ".png":
        raise UsageError(f"{output}: a contact sheet is a PNG: expected FILE.png, got "
                         f"{Path(output).suffix or 'no suffix'}")
    refuse_existing(Path(output), overwrite)


def sheet_cost(scene: Scene, output: str | Path, first: int = 0, *,
               overwrite: bool = True) -> budget.Estimate:
    """What the contact sheet to `output` (frames first … the last) will cost, or
    UsageError when it cannot be drawn (`require_output`) or does not fit
    (budget.check)."""
    require_output(output, overwrite)
    picks, thumb, sheet = layout(scene, output, first)
    cost = budget.sheet_estimate(scene, len(picks), thumb[0] * thumb[1], sheet[0] * sheet[1])
    return budget.check(scene, str(output), cost)


def render_contact_sheet(scene: Scene, output: str | Path, *, first: int = 0,
                         columns: int = COLUMNS, rows: int = ROWS,
                         thumb_width: int = THUMB_WIDTH, quiet: bool = True,
                         overwrite: bool = True) -> None:
    """A grid of thumbnails spread evenly across the clip (from frame `first`: --frames
    A:B), each labelled with its time: the look of a clip without playing it. Thumbnails
    are the clip's own frames, drawn smaller (the same picture: widths are in world
    units). Unless `quiet`, a first run's kernel compilation is announced. overwrite=False:
    an existing `output` is kept (UsageError)."""
    require_output(output, overwrite)
    with folders_made_for([output]):
        _draw_sheet(scene, output, first, columns, rows, thumb_width, quiet, overwrite)


def _draw_sheet(scene, output, first, columns, rows, thumb_width, quiet, overwrite) -> None:
    picks, thumb, sheet_size = layout(scene, output, first, columns, rows, thumb_width)
    columns = grid(len(picks), columns)[0]  # as `layout` laid them out
    gap, label = GAP_PX, LABEL_PX
    sheet = Canvas(sheet_size)
    ctx = sheet.context()
    ctx.set_source_rgb(*scene.colours()["background"])
    ctx.paint()
    canvas = Canvas(thumb)
    sim = simulation(scene, quiet=quiet)
    wanted = iter(picks)
    target = next(wanted)
    slot = 0
    # The whole clip is flown up to the last thumbnail: minutes for a film.
    with progress_bar(total=picks[-1] + 1, unit="frame", desc=Path(output).name,
                      disable=quiet) as bar:
        for frame in frames(sim, scene.output.fps, picks[-1] + 1, **exposure(scene)):
            bar.update()
            if frame.index != target:
                continue
            require_finite(frame)
            pixels = FrameState.of(frame, sim.accent, scene).draw(canvas, scene)
            x = gap + (slot % columns) * (thumb[0] + gap)
            y = gap + (slot // columns) * (thumb[1] + gap + label)
            sheet.pixels[y:y + thumb[1], x:x + thumb[0]] = pixels
            sheet.surface.mark_dirty()
            ctx.set_source_rgb(*scene.colours()["ink"])
            ctx.select_font_face("sans-serif")
            ctx.set_font_size(14)
            ctx.move_to(x, y + thumb[1] + 16)
            ctx.show_text(f"{float(frame.time):.2f} s · frame {frame.index}")
            slot += 1
            target = next(wanted, None)
            if target is None:
                break
    data = encode_png(sheet.flush())
    place_or_refuse(Path(output), lambda tmp: tmp.write_bytes(data), overwrite=overwrite)
