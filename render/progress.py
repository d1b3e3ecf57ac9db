"""Progress bars on stderr: redrawn ten times a second on a terminal, every 10 s in a log
file (a farm, CI), where a bar redrawn ten times a second is noise."""

import sys

from tqdm import tqdm


def progress_bar(**options) -> tqdm:
    """A tqdm bar on stderr at the interval stderr deserves (`options` as tqdm's)."""
    return tqdm(mininterval=0.1 if sys.stderr.isatty() else 10.0, **options)


def note(message: str) -> None:
    """A line for the user on stderr, "boids-render: " first; a bar on the screen is
    cleared for it and drawn again below it, so the line never lands after a half-drawn
    bar."""
    tqdm.write(f"boids-render: {message}", file=sys.stderr)
