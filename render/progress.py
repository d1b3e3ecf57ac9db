"""Progress bars on stderr: redrawn ten times a second on a terminal, every 10 s in a log
file (a farm, CI), where a bar redrawn ten times a second is noise, as plain lines. Each
step of a bar is also where an interrupt that was swallowed takes effect (`interrupt`)."""

import sys

from tqdm import tqdm

_interrupted = False


def stop_signals() -> tuple[int, ...]:
    """The signals that stop a render as Ctrl-C does (main thread only): SIGTERM (`kill`,
    a scheduler's time limit), and where the system has them, unless the render was
    started ignoring them (nohup's way of saying carry on), a hang-up (its terminal closed,
    its ssh session dropped) and a batch system's warnings before it kills a job (SIGXCPU
    at a CPU-time limit, SIGUSR1 or SIGUSR2): by default each of those ended the process
    at once, its temporaries left behind."""
    import signal

    optional = (getattr(signal, name, None) for name in ("SIGHUP", "SIGXCPU", "SIGUSR1",
                                                         "SIGUSR2"))
    return (signal.SIGINT, signal.SIGTERM) + tuple(
        signum for signum in optional
        if signum is not None and signal.getsignal(signum) is not signal.SIG_IGN)


def interrupt(signum=None, frame=None) -> None:
    """A signal handler: Ctrl-C or SIGTERM, raised as KeyboardInterrupt, and remembered.
    Raised inside a callback from C (numba loading its cached kernels calls back into
    Python), the exception is printed and dropped, and the render would go on: the next
    step of any bar raises it again (`check_interrupted`)."""
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def forget_interrupt() -> None:
    """A new run (the command line called again in one process) starts uninterrupted."""
    global _interrupted
    _interrupted = False


def was_interrupted() -> bool:
    """Whether an interrupt arrived in this run (see `interrupt`): an error raised after
    one was dropped (numba compiling when Ctrl-C came) is that interrupt's doing."""
    return _interrupted


def check_interrupted() -> None:
    """KeyboardInterrupt if an interrupt arrived (see `interrupt`)."""
    if _interrupted:
        raise KeyboardInterrupt


class _Bar(tqdm):
    def update(self, n=1):
        check_interrupted()
        return super().update(n)


class _Lines:
    """A log (stderr that is no terminal) as a bar writes to it: each redraw, which tqdm
    starts with a carriage return to draw over the last, becomes a line of its own, and
    the blanks that clear a bar are left out, so the log reads line by line."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        for part in text.split("\r"):
            if part.strip():
                self.stream.write(part.rstrip() + "\n")

    def flush(self) -> None:
        self.stream.flush()


def progress_bar(**options) -> tqdm:
    """A tqdm bar on stderr at the interval stderr deserves (`options` as tqdm's): on a
    terminal redrawn in place ten times a second, in a log a plain-text line every 10 s
    and one at its end; each step first checks for a swallowed interrupt
    (`check_interrupted`)."""
    if sys.stderr.isatty():
        return _Bar(mininterval=0.1, **options)
    # A bar cleared at its end on a terminal leaves its last line in a log: otherwise a
    # bar done within 10 s leaves only its first, "0%", as if the work had stalled.
    options["leave"] = True
    return _Bar(mininterval=10.0, file=_Lines(sys.stderr), ascii=True, **options)


def note(message: str) -> None:
    """A line for the user on stderr, "boids-render: " first; a bar on the screen is
    cleared for it and drawn again below it, so the line never lands after a half-drawn
    bar."""
    tqdm.write(f"boids-render: {message}", file=sys.stderr)
