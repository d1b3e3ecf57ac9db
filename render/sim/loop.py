"""Seamless loops: a clip of `count` frames starting at frame t₀ of the simulation, whose
first `crossfade` frames carry the flock from where it is just after the clip's end
(frames t₀+count …, the tail) into where it is at the start (frames t₀ …, the head), so
the last frame flows into the first and every frame reads as uninterrupted flight.

Three choices make that so (docs/loops.md has the measures):
- t₀ is searched: the start, within the clip's length, at which the fewest pairs would
  be too far apart to meet, compared half-way through the morph (`loop_start`);
- each tail bird is paired with a head bird near it heading the same way (`pairing.pair`),
  the accent birds among themselves, so no bird crosses the frame;
- under a tracking camera, the 3D flock's turn over the clip (it circles the roost) and
  the change of its shape (the sheet thins, lengthens, tilts) are carried across the whole
  loop: every frame is drawn turned and stretched about its centroid by its share of them,
  so the flock's heading and shape come round to where they began and the pairs are found
  and pulled in one orientation and one layout (`flock_turn`, `flock_shape`, `carried`);
- the tail flies on under the flocking rules with each bird pulled toward its partner's
  state in the head (`Guided`: the velocity toward the partner's velocity plus a capped
  drift along the gap, the position along that drift), the pull growing from nothing at
  the morph's start; the rules still act, so neighbours turn together and the streaks keep
  their lanes. A pair the search found too far apart to meet is not pulled: it flies on
  free until it switches, rather than drift across the sky. Over the morph's last share
  (the `Pull`'s snap) the small residual closes with w = 3s² − 2s³ (position
  pₜ + w·(pₕ − pₜ), velocity vₜ + w·(vₕ − vₜ)), so frame C is the clip's. A pair whose
  drawn path would outrun the speed limit switches instead, at its own moment.

Earlier ways failed visibly: a pixel cross-dissolve ghosts a double flock; a bird-by-bird
dissolve scrambles the local headings mid-way; gliding bird i to bird i drags birds across
the frame; gliding each pair along the Hermite blend of its two free trajectories mixes two
unrelated layouts mid-way (dust). Works on (n, d) states, any d.

In 3D a bird's bank turns with its velocity toward its partner's, so it ends on it; under
a follow camera the loop closes in the flock's centroid frame (`centred`): pairs and pulls
compare positions relative to the centroids, and the centroid's own gap (and the camera's
followed point with it) is carried across the whole morph. Speeds are judged relative to
the flock's motion against the cruise speed (`flying`). A window holding a hunt's attack
or reaching the landing is not a candidate (`calm_starts`).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib
import math
import os
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from ..errors import UsageError
from ..progress import note, progress_bar
from .flight import flight
from .pairing import pair, transport
from .simulate import Frame, Simulation, between, frames, own_beats, step_fraction

# The loop's start is searched within this share of the clip (simulated once more: cheap
# next to drawing), a candidate every third of the morph.
SEARCH, STRIDE = 1.0, 3
# Child of the scene's seed for the jumping pairs' switching moments (0–2 are flock,
# accent, field).
STREAM_LOOP = 3
# A pair glides while its speed stays under this share of the measures' limit (1.5× the
# scene's maximum speed); a pair further apart switches (fades out and in).
GLIDE = 0.95 * 1.5


class Pull(NamedTuple):
    """How `Guided` pulls the tail, as shares of the morph's length: the time constant of
    its drift along the gap; the drift's cap, in maximum speeds (flight plus drift stays
    under the measures' 1.5×); the first share, over which the pull grows to its full
    weight; the time constant of the velocity's turn toward the partner's; the last share,
    over which the residual the pull leaves closes (`path`)."""

    time: float
    drift: float
    ramp: float
    turn: float
    snap: float


PULL = Pull(time=0.15, drift=0.45, ramp=0.4, turn=0.03, snap=0.3)
# In 3D a bird's ink is how much of its wings faces the camera: velocities turned within
# a tenth of the morph pitched the whole flock toward its partners' heights and headings
# at once and showed more wing, so the turn is slower; a slower pull grown over a shorter
# ramp then leaves fewer pairs to switch. The film under a tracking camera, 1 s and 3 s
# morphs (docs/loops.md): at 5,000 birds the ink from the median +0…+18% and −3…+14% with
# PULL, +2…+8% and −4…+4% with this, 28% and 7% of the birds switching (33% and 10%); at
# 20,000 birds 32% and 17% (34% and 23% with the turn alone). In 2D the ink does not
# depend on heading: the slower turn left more pairs to switch (the plate's 27% became
# 39%), and this pull took the plate's and classic's ink past −10%.
# The residual closed over the last 0.3 of a 3 s morph, as in 2D, moved the film's
# birds fastest three quarters of the way through: frames there differed from each other
# 1.56-1.61 times the clip's median on two of five seeds (its 20,000 birds under a
# tracking camera). Over the last 0.4 the steps stay under 1.5x on all five; over 0.5 the
# 480x270 WebP's alignment leaves its band (docs/loops.md).
PULL_3D = Pull(time=0.8, drift=0.45, ramp=0.2, turn=0.2, snap=0.4)


def pull_of(scene) -> Pull:
    """The scene's pull: `PULL_3D` in 3D, else `PULL`."""
    return PULL_3D if scene.dimensions == 3 else PULL


def loop_start(scene, count: int, crossfade: int, *, progress: bool = False) -> int:
    """t₀: the frame, within the clip's first `SEARCH` share (a candidate every
    crossfade/`STRIDE` frames), at which the fewest pairs of the morph would have to
    switch rather than glide (`gliding`), compared at the morph's middle. Ties go to the
    earlier start. A 3D loop's window (t₀ … t₀ + count + crossfade) must end before the
    landing and hold no hunting hawk's attack (`calm_starts`): raises UsageError, naming
    the setting, where no candidate does. `progress`: a bar on stderr while it is searched
    (a 3D flock settling first has its own)."""
    return search(scene, count, crossfade, progress=progress).start


class Search(NamedTuple):
    """What the start's search found: each calm candidate start (frames) and the share of
    its morph's pairs that would switch (in 3D, the best start's once its pairs are
    `transported`); the best start, its pairs (`partners`; in 3D `transported`), which of
    them can meet (`gliding`) and a copy of the simulation from before its tail's first
    frame, which the morph flies on from (None where the frames come faster than two
    steps: the morph simulates the tail from the start) and one from before the start
    itself, for the head beside it (None: not kept, the head flies from the start);
    `turn`, the flock's turn from the head to the tail (`flock_turn`, radians), and
    `shape`, the stretch from the head's layout, so turned, to the tail's (`flock_shape`;
    None: none)."""

    scores: dict[int, float]
    start: int
    partner: np.ndarray
    glide: np.ndarray
    tail: object | None
    head: object | None = None
    turn: float = 0.0
    shape: np.ndarray | None = None


def search(scene, count: int, crossfade: int, *, progress: bool = False,
           keep: bool = False) -> Search:
    """The loop's start, searched in one run of the simulation (see `loop_start`), once
    per scene, clip and morph (the last few kept). `keep`: the clip's frames the search
    flies through are kept for `kept_frames`, within `keep_bytes()`, and, where they
    fit, copies of the simulation for the morph's head; the search also says here
    (with `progress`) when the loop will read as a dissolve (`dissolving`)."""
    key = (scene, count, crossfade)
    with _SEARCHING:
        if key not in _SEARCHES:
            while len(_SEARCHES) >= 4:
                del _SEARCHES[next(iter(_SEARCHES))]
            held = Held(keep_bytes()) if keep else None
            _SEARCHES[key] = _searched(scene, count, crossfade, progress, held)
            _KEPT.clear()  # one clip's frames at a time
            if held is not None and held.frames is not None and len(held.frames) >= count \
                    and held.frames[0].index == _SEARCHES[key].start:
                _KEPT[key] = (held.frames[:count], held.accent)
            if progress and (advice := dissolving(scene, _SEARCHES[key])):
                note(advice)
        return _SEARCHES[key]


_SEARCHES: dict[tuple, Search] = {}
_KEPT: dict[tuple, tuple[list[Frame], np.ndarray]] = {}
# Loops rendered at once on threads of one process (through the API) search one at a
# time: a second render of the same loop waits and takes the first one's search rather
# than flying it again, and neither sees the other's half-made entries. A search keeps
# both cores busy already, so waiting costs the other render little.
_SEARCHING = threading.Lock()

# The search flies through the clip it chooses: its frames are kept for the clip itself
# (rather than flown again from the start, a third of a 3D loop's simulation) while they
# take at most this share of the memory available, and never more than KEEP_MOST.
KEEP_SHARE, KEEP_MOST = 0.25, 1 << 30
# What a copy of a simulation takes, bytes a bird (measured on a 3D flock: 384), and the
# share of the same budget the head's copies may take.
HEAD_BYTES, HEAD_SHARE = 400, 0.25


def keep_bytes() -> int:
    """The bytes the search may keep frames in (see KEEP_SHARE)."""
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not Linux
        free = KEEP_MOST
    return int(min(KEEP_MOST, KEEP_SHARE * free))


def kept_frames(scene, count: int, crossfade: int) -> tuple[Iterator[Frame], np.ndarray] | None:
    """The frames start … start + count − 1 of the simulation that `search(…, keep=True)`
    flew through for this loop (start its t₀), handed over once, each let go once it is
    yielded, with the flock's accent mask (n,) bool; None when they were not kept (over
    the budget, or searched before without `keep`)."""
    with _SEARCHING:
        held = _KEPT.pop((scene, count, crossfade), None)
    return None if held is None else (_handed(held[0][::-1]), held[1])


def _handed(reversed_frames: list[Frame]) -> Iterator[Frame]:
    while reversed_frames:
        yield reversed_frames.pop()


class Held:
    """The frames a search keeps: from the earliest it may still need (`need`) on, until
    they pass `budget` bytes (then none: `frames` None); and the flock's `accent` mask,
    which the frames are drawn with."""

    def __init__(self, budget: int):
        self.budget, self.bytes = budget, 0
        self.frames: list[Frame] | None = []
        self.accent: np.ndarray | None = None

    def add(self, frame: Frame) -> None:
        if self.frames is None:
            return
        self.frames.append(frame)
        self.bytes += frame_bytes(frame)
        if self.bytes > self.budget:
            self.frames = None

    def need(self, first: int) -> None:
        """Drop the frames before frame `first`."""
        if self.frames is None:
            return
        drop = 0
        while drop < len(self.frames) and self.frames[drop].index < first:
            self.bytes -= frame_bytes(self.frames[drop])
            drop += 1
        del self.frames[:drop]


def frame_bytes(frame: Frame) -> int:
    """The bytes of a frame's arrays (its own and its snapshot's)."""
    arrays = [v for v in (*vars(frame).values(), *vars(frame.snapshot).values())
              if isinstance(v, np.ndarray)]
    return sum(a.nbytes for a in {id(a): a for a in arrays}.values())


# Past this share of pairs switching, a loop's morph reads as a dissolve (said up front,
# before the clip is drawn; the seam report measures it after).
DISSOLVE = 0.5


def dissolving(scene, found: Search) -> str:
    """Advice, when the best start still leaves more than DISSOLVE of the pairs too far
    apart to glide (they fade out and in: the morph reads as a dissolve), else ""."""
    share = found.scores[found.start]
    if share <= DISSOLVE:
        return ""
    if scene.dimensions == 3 and not centred(scene):
        why = ("under a fixed camera a 3D flock is elsewhere on its circle round the roost "
               "by the clip's end: loop it under a tracking camera (--set "
               "camera.follow=track), or make the clip about one circle long")
    else:
        why = ("the flock at the clip's end is laid out unlike its start: a longer clip "
               "or --crossfade gives the pairs longer to meet")
    return (f"this loop cannot close as flight: at its best start (t₀ = "
            f"{found.start / float(scene.output.fps):g} s) {share:.0%} of the birds are "
            f"too far from a partner to glide, and fade out and in; {why} "
            f"(docs/loops.md)")


def _searched(scene, count: int, crossfade: int, progress: bool,
              held: Held | None = None) -> Search:
    """The search itself. The best candidate's pairs and tail are kept as the run goes, so
    the morph need not simulate the clip again to reach them: a candidate is decided once
    its window has passed (its attacks known), and only the best decided one and those
    still open are kept; so are the frames from the earliest of them on, into `held`
    (when given), so the clip need not be flown again either."""
    fps, middle = scene.output.fps, crossfade // 2
    stride = max(1, crossfade // STRIDE)
    window = count + crossfade
    candidates = set(range(0, int(count * SEARCH) + 1, stride))
    sim = Simulation(scene, **({"progress": progress} if scene.dimensions == 3 else {}))
    # A head's copy is taken at its start and held until the start is decided, a clip
    # later: one for every candidate open at once, so only where they all fit.
    heads = held is not None and \
        len(candidates) * HEAD_BYTES * len(sim.positions) <= held.budget * HEAD_SHARE
    accent = np.asarray(sim.accent, bool)
    if held is not None:
        held.accent = accent
    dt = step_fraction(sim.dt)
    starts: dict[int, tuple] = {}
    scores: dict[int, float] = {}
    kept: dict[int, dict] = {}  # candidate → its partner and tail copy, while they may win
    best = None
    attacks = []
    flown = max(candidates) + window
    # The starts whose window may yet prove calm: once none is, the search stops there
    # and is refused, rather than fly on for minutes to say so.
    hopeful = {k for k in candidates if calm(scene, k, window, ())}  # the landing's part
    # Each candidate's pairs are found on a thread of their own while the flight goes on
    # (its pairing kernels let go of the GIL), and wanted only once its window has passed,
    # half a morph later.
    pairing: dict[int, Future] = {}
    with progress_bar(total=flown, unit="frame", desc="searching the loop's start",
                      leave=False, disable=not progress) as bar, \
            _pairer() as pairer:
        if scene.dimensions == 3:  # `transported`'s k-d tree, loaded while the flock flies
            pairer.submit(importlib.import_module, "scipy.spatial")
        for frame in frames(sim, fps, flown):
            bar.update()
            if held is not None:
                held.add(frame)
            attacks.append(bool(getattr(frame.snapshot, "attack", False)))
            f = frame.index
            if attacks[-1]:
                hopeful -= {k for k in hopeful if k <= f < k + window}
            if not hopeful:
                break
            k = f - middle
            if k in candidates:
                starts[k] = (frame.positions.copy(), frame.velocities.copy())
            # Copies not yet past the step the tail's first frame (k + count) reads, and,
            # where they fit, the head's (k): `first` is that frame.
            for first in (f + 1, f + 2):
                for name, k in (("tail", first - count), ("head", first)):
                    if k in candidates and (name == "tail" or heads) and \
                            sim.step_index <= (Fraction(first) / fps) // dt:
                        kept.setdefault(k, {})[name] = copy.deepcopy(sim, {id(scene): scene})
            k = f - middle - count
            if k in candidates:
                tail = (frame.positions.copy(), frame.velocities.copy())
                pairing[k] = pairer.submit(_paired, scene, tail, starts.pop(k), accent,
                                           crossfade)
            k = f + 1 - window
            if k in candidates:  # its window has passed: decided
                partner, glide, turn, shape, states = pairing.pop(k).result()
                scores[k] = float((~glide).mean())
                mine = kept.pop(k, {})
                mine.update(partner=partner, glide=glide, turn=turn, shape=shape,
                            states=states)
                better = best is None or scores[k] < scores[best[0]]
                if better and calm(scene, k, window, attacks):
                    best = (k, mine)
            if held is not None:  # the best decided start, or one still open
                held.need(min([*([best[0]] if best else []),
                               *(c for c in candidates if c > f + 1 - window)], default=0))
    calm_list = calm_starts(scene, sorted(candidates), window, np.array(attacks))
    start, mine = best
    if held is not None:
        held.need(start)
    assert start == min(calm_list, key=lambda k: (scores[k], k))
    partner, glide = mine["partner"], mine["glide"]
    if scene.dimensions == 3:
        partner = transported(scene, *mine["states"], accent, crossfade, partner)
        glide = gliding(scene, *mine["states"], partner, crossfade)
        scores[start] = float((~glide).mean())
    return Search({k: scores[k] for k in calm_list}, start, partner, glide,
                  mine.get("tail"), mine.get("head"), mine["turn"], mine["shape"])


@contextlib.contextmanager
def _pairer() -> Iterator[ThreadPoolExecutor]:
    """One thread for the search's pairings; on the way out (Ctrl-C included) the
    pairings not begun are dropped and the one under way is waited for."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pairing")
    try:
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _paired(scene, tail: tuple, head: tuple, accent: np.ndarray,
            crossfade: int) -> tuple[np.ndarray, np.ndarray, float, np.ndarray | None, tuple]:
    """(`partners`, `gliding`, `flock_turn`, `flock_shape`, (the tail, the head carried))
    of the tail and head states at a morph's middle, the head turned to the tail's heading
    and stretched to its layout first."""
    turn = flock_turn(scene, tail[1], head[1])
    head = turned_flock(*head, turn)
    shape = flock_shape(scene, tail[0], head[0])
    head = mapped(head[0], shape, head[0].mean(axis=0)), head[1]
    partner = partners(scene, tail, head, accent, crossfade)
    return partner, gliding(scene, tail, head, partner, crossfade), turn, shape, (tail, head)


def flock_turn(scene, tail: np.ndarray, head: np.ndarray) -> float:
    """How far a flock with velocities `head` (n, 3) has turned by the time it has `tail`,
    radians in (−π, π], counterclockwise from above: the turn of its mean velocity's
    heading. 0 unless a tracking camera films a 3D flock (`tracking`)."""
    if not tracking(scene):
        return 0.0
    (tx, ty), (hx, hy) = tail[:, :2].sum(axis=0), head[:, :2].sum(axis=0)
    return float(math.remainder(math.atan2(ty, tx) - math.atan2(hy, hx), 2 * math.pi))


def flock_shape(scene, tail: np.ndarray, head: np.ndarray) -> np.ndarray | None:
    """The stretch (3 × 3, about the centroid) from a flock laid out as `head` (positions
    (n, 3), turned to the tail's heading) to its layout as `tail`: the symmetric map
    nearest the identity that carries the head's second moments onto the tail's (the
    optimal-transport map between two normal distributions with those moments). In six
    seconds a 20,000-bird sheet thins and lengthens by a fifth; the tail's birds were
    paired across that change, a tenth of them 20 m or more from their partners. None (no
    stretch) unless a tracking camera films a 3D flock (`tracking`), or where either flock
    has no extent along some axis."""
    if not tracking(scene) or len(tail) < 4:
        return None
    spread_t, spread_h = np.cov(tail.T), np.cov(head.T)
    least = min(np.linalg.eigvalsh(spread_t)[0], np.linalg.eigvalsh(spread_h)[0])
    if not least > 1e-9 * max(np.trace(spread_t), np.trace(spread_h)):
        return None
    root, inverse = power(spread_h, 0.5), power(spread_h, -0.5)
    return inverse @ power(root @ spread_t @ root, 0.5) @ inverse


def power(matrix: np.ndarray, t: float) -> np.ndarray:
    """A symmetric positive-definite matrix to the (real) power t."""
    values, vectors = np.linalg.eigh(matrix)
    return (vectors * values ** t) @ vectors.T


def carried(turn: float, shape: np.ndarray | None, t: float) -> np.ndarray | None:
    """The map (3 × 3, about the centroid) a frame `t` of the way through the clip is drawn
    with: that share of the flock's turn and stretch taken back, R(−t·turn)·S⁻ᵗ; a morph
    frame, in the tail's heading and layout, is drawn with carried(t) @ carried(1). None
    where there is no stretch (the turn alone: `turned`). Only places are stretched: the
    birds' velocities are turned alone, since a sheet that thins does not pitch its birds
    (velocities stretched with it showed a fifth more wing from below)."""
    if shape is None:
        return None
    c, s = math.cos(-t * turn), math.sin(-t * turn)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ power(shape, -t)


def mapped(points: np.ndarray, matrix: np.ndarray | None, about: np.ndarray) -> np.ndarray:
    """(n, 3) points mapped by `matrix` (None: as they are) about the point `about`."""
    return points if matrix is None else about + (points - about) @ matrix.T


def turned(vectors: np.ndarray, angle: float, about=None) -> np.ndarray:
    """(n, 3) `vectors` turned by `angle` (radians, counterclockwise from above) about the
    vertical; points about the vertical through `about` (3 floats; None: vectors, such as
    velocities, turned as they are). The same array when the angle is 0."""
    if angle == 0.0:
        return vectors
    c, s = math.cos(angle), math.sin(angle)
    x0, y0 = (0.0, 0.0) if about is None else (about[0], about[1])
    x, y = vectors[:, 0] - x0, vectors[:, 1] - y0
    out = vectors.copy()
    out[:, 0], out[:, 1] = x0 + c * x - s * y, y0 + s * x + c * y
    return out


def into_tail(positions: np.ndarray, velocities: np.ndarray, turn: float,
              shape: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """A head flock's (positions, velocities) in the tail's heading and layout: turned by
    `turn` (`turned_flock`), then its places stretched by `shape` (`carried`)."""
    positions, velocities = turned_flock(positions, velocities, turn)
    return mapped(positions, shape, positions.mean(axis=0)), velocities


def turned_flock(positions: np.ndarray, velocities: np.ndarray,
                 angle: float) -> tuple[np.ndarray, np.ndarray]:
    """A flock's (positions, velocities) turned by `angle` (radians) about the vertical
    through its centroid (`turned`)."""
    return turned(positions, angle, positions.mean(axis=0)), turned(velocities, angle)


def calm(scene, start: int, window: int, attacks) -> bool:
    """Whether the loop's `window` frames from `start` end before the landing begins and
    hold no hunting hawk's attack (`attacks`: the attack flag of each frame from 0)."""
    landing = landing_at(scene)
    return (landing is None or (start + window) / float(scene.output.fps) <= landing) and \
        not any(attacks[start:start + window])


def landing_at(scene) -> float | None:
    """When the scene's landing begins, s (None: it has none)."""
    roost = getattr(scene, "roost", None)
    return getattr(roost, "landing_at", None) if roost is not None and roost.enabled else None


def landing_error(landing: float, seconds: float) -> UsageError:
    """What a loop of `seconds` (the clip and its morph) that cannot end before the
    landing at `landing` s is told."""
    return UsageError(f"roost.landing_at = {landing:g} s: a --loop of {seconds:g} s (the "
                      f"clip and its morph) cannot end before the landing, which no loop "
                      f"can undo: set roost.landing_at later or a shorter clip")


def calm_starts(scene, candidates: list[int], window: int, attacks: np.ndarray) -> list[int]:
    """The candidate starts whose `window` frames are `calm`: an attack starting or ending
    inside a loop, or a landing, changes the flock as uninterrupted flight never undoes,
    so the end cannot flow into the start. Raises UsageError, naming the setting, where
    none is."""
    fps = float(scene.output.fps)
    landing = landing_at(scene)
    kept = [k for k in candidates if landing is None or (k + window) / fps <= landing]
    if not kept:
        raise landing_error(landing, window / fps)
    calm_ones = [k for k in kept if calm(scene, k, window, attacks)]
    if not calm_ones:
        raise UsageError(f"hawk.mode = \"hunt\": every loop start within "
                         f"{round(kept[-1] / fps, 2):g} s puts an attack inside the "
                         f"{window / fps:g} s loop (the clip and its morph), and a loop "
                         f"cannot close across one (the hawk's attacks: "
                         f"{spans(attacks, fps)}): set hawk.enabled = false, or a clip "
                         f"that fits between two attacks")
    return calm_ones


def spans(flags, fps: float) -> str:
    """The runs of True in `flags` (one per frame from 0) as "a–b s, from c s" (seconds,
    each run from its first frame's time to the end of its last; "from" where the run
    goes on past the last flag, its end not yet flown)."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], np.asarray(flags, np.int8), [0]))))
    return ", ".join(f"from {a / fps:.1f} s" if b == len(flags) else
                     f"{a / fps:.1f}–{b / fps:.1f} s" for a, b in edges.reshape(-1, 2))


def partners(scene, tail: tuple, head: tuple, accent: np.ndarray, crossfade: int,
             greedy: np.ndarray | None = None):
    """Tail bird i becomes head bird partner[i] ((n,) int64; accent birds among
    themselves); `tail`, `head`: (positions, velocities) at the morph's middle, compared
    in the centroid's frame where the camera follows the flock (`centred`). `greedy`:
    such pairs (`pair`'s) to move to the least-cost pairing among each bird's nearest
    candidates instead (`pairing.transport`; not across a wrapping edge)."""
    partner = np.empty(accent.size, np.int64)
    span = crossfade / float(scene.output.fps)
    pt, ph = tail[0], head[0]
    if centred(scene):
        pt, ph = pt - pt.mean(axis=0), ph - ph.mean(axis=0)
    within = np.empty(accent.size, np.int64)  # each bird's index in its group
    for group in (np.flatnonzero(accent), np.flatnonzero(~accent)):
        if not group.size:  # no accent birds (render.accent_every = 0), or all of them
            continue
        flocks = (pt[group], tail[1][group], ph[group], head[1][group])
        if greedy is None:
            found = pair(*flocks, horizon=span / 2, extent=wrapping(scene, tail[0]))
        else:
            within[group] = np.arange(group.size)
            found = transport(*flocks, within[greedy[group]], horizon=span / 2)
        partner[group] = group[found]
    return partner


def transported(scene, tail: tuple, head: tuple, accent: np.ndarray, crossfade: int,
                partner: np.ndarray) -> np.ndarray:
    """The greedy `partner` moved to the least-cost pairing (`partners` with `greedy`): a
    3D flock's birds shift a metre or two along the sheet where the greedy pairing leaves
    some tens of metres from their partners, which fade out and in."""
    return partners(scene, tail, head, accent, crossfade, greedy=partner)


def gliding(scene, tail: tuple, head: tuple, partner: np.ndarray, crossfade: int):
    """Which pairs glide ((n,) bool): at the morph's middle, where the glide is fastest
    (w′ = 1.5 / span), flight plus glide stays under the speed limits (`flying`)."""
    span = crossfade / float(scene.output.fps)
    gap = head[0][partner] - tail[0]
    extent = wrapping(scene, tail[0])
    if extent is not None:
        gap -= extent * np.round(gap / extent)
    if centred(scene):
        gap -= gap.mean(axis=0)  # the camera carries the centroid's gap
    return flying(scene, 0.5 * (tail[1] + head[1][partner]) + 1.5 * gap / span)


def flying(scene, velocity: np.ndarray) -> np.ndarray:
    """Which birds' drawn velocities ((n, d), world units/s) read as flight ((n,) bool):
    under `GLIDE` × the maximum speed (where the picture is the world's: not a 3D flock
    under a follow camera) and, in 3D, relative to the flock's motion (`flock_motion`)
    under `GLIDE` × the cruise speed (the measures' 4th)."""
    ok = np.ones(len(velocity), bool)
    if not centred(scene):
        ok &= np.sqrt((velocity * velocity).sum(axis=1)) <= GLIDE * scene.flock.max_speed
    if scene.dimensions == 3:
        relative = velocity - flock_motion(velocity)
        ok &= np.sqrt((relative * relative).sum(axis=1)) <= GLIDE * cruise_speed(scene)
    return ok


def flock_motion(steps: np.ndarray) -> np.ndarray:
    """The flock's own motion in (n, d) steps or velocities: the centroid's, taken as the
    birds' median on each axis so that a few birds jumping across do not drag it. (d,)."""
    return np.median(steps, axis=0)


def tracking(scene) -> bool:
    """Whether a tracking camera (`camera.follow = "track"`) films the 3D flock: it moves
    with the flock's centroid and never turns, and the sky, ground and treeline look the
    same from anywhere at its height, so the flock turned about its centroid shows only
    as the turn, not as a flock flying sideways (under a camera that pans to look at the
    flock, its path across the sky would no longer follow its birds' headings)."""
    return centred(scene) and scene.camera.follow == "track"


def centred(scene) -> bool:
    """Whether the loop closes in the flock's centroid frame: a 3D flock filmed by a
    camera that follows it, which carries the flock's place (elsewhere, the world's)."""
    cam = scene.camera
    return scene.dimensions == 3 and cam is not None and cam.enabled and \
        cam.follow != "none"


def cruise_speed(scene) -> float:
    """A 3D flock's cruise speed, m/s (without [flight], the middle of its speed range)."""
    fl = flight(scene)
    return fl.cruise if fl.active else 0.5 * (fl.min_speed + fl.max_speed)


def wrapping(scene, positions: np.ndarray) -> np.ndarray | None:
    """The world's (d,) size where it wraps (distances cross the edge), else None."""
    return world_size(scene)[:positions.shape[1]] if scene.world.boundary == "wrap" else None


def switch_moments(seed: int, count: int) -> np.ndarray:
    """When each switching pair switches, in [0, 1) of the morph, spread evenly so the
    pixels change at a steady rate. (n,)."""
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed).spawn(
        STREAM_LOOP + 1)[STREAM_LOOP]))
    return rng.random(count)


def world_size(scene) -> np.ndarray:
    """The world's size along each axis (x, y; z where the world has a depth), float64."""
    world = scene.world
    return np.array([world.width, world.height, getattr(world, "depth", 0.0)], float)


def looped(scene, head: Iterator[Frame], start: int, count: int, crossfade: int,
           accent: np.ndarray) -> Iterator[Frame]:
    """The loop's frames 0..count−1 from `head` (the simulation's frames start ..
    start+count−1), re-indexed from 0 (time index / fps); the first `crossfade` morph from
    the guided tail (`morph`). Frame k is drawn turned about its centroid by −k/count of
    the flock's turn over the clip (`Search.turn`; a morph frame, in the tail's heading, by
    the whole turn more), so the flock's heading comes round: a flock that turns 25° in a
    4 s clip is drawn turning 25° less, steadily, rather than turned back in the morph.
    Its stretch (`Search.shape`) is taken back the same way (`carried`), and so are a
    tracking camera's trail behind the flock and the flock's altitude (`trailed`)."""
    fps = scene.output.fps
    found = search(scene, count, crossfade)
    turn, whole = found.turn, carried(found.turn, found.shape, 1.0)
    buffered, slide = [], None
    for frame in head:
        k = frame.index - start
        frame = dataclasses.replace(frame, index=k, time=Fraction(k) / fps)
        if k >= crossfade:
            frame = drawn_turned(frame, -turn * k / count, carried(turn, found.shape, k / count))
            yield trailed(frame, slide, (k - crossfade) / (count - crossfade))
            continue
        buffered.append(frame)
        if len(buffered) < crossfade:
            continue
        for frame in morph(scene, buffered, start, count, accent):
            t = frame.index / count
            frame = drawn_turned(frame, -turn * (1 + t),
                                 None if whole is None else carried(turn, found.shape, t) @ whole)
            if slide is None and tracking(scene):
                slide = trail(frame) - trail(buffered[0])
            yield trailed(frame, slide, 1.0 - smooth(frame.index / crossfade))


def trail(frame: Frame) -> np.ndarray:
    """(3,): how far a tracking camera's followed point lies from the flock's centroid,
    level (x, y), and the centroid's altitude (z)."""
    centre = frame.positions.mean(axis=0)
    gap = np.asarray(frame.followed, float) - centre
    return np.array([gap[0], gap[1], centre[2]])


def trailed(frame: Frame, slide: np.ndarray | None, share: float) -> Frame:
    """The frame with `share` of the `slide` (`trail` just past the clip's end against
    its start's; None: none) taken back: the followed point moved level by its x and y,
    the birds up or down by its z. A tracking camera trails its flock by some 30 m, a few
    metres more or less as the flock speeds up and turns, and the flock rises and sinks a
    few metres on the roost's spring: both are taken back over the whole clip, at a few
    centimetres a frame, rather than in the morph, where they slid the flock across the
    frame twice as fast as in flight. The morph blends the tail, so moved, into the
    head."""
    if slide is None or share == 0.0:
        return frame
    lift = np.array([0.0, 0.0, share * slide[2]])
    followed = np.asarray(frame.followed, float)
    followed[:2] -= share * slide[:2]
    return dataclasses.replace(
        frame, positions=frame.positions - lift, followed=tuple(float(x) for x in followed),
        exposure=tuple((p - lift, v) for p, v in frame.exposure))


def drawn_turned(frame: Frame, angle: float, matrix: np.ndarray | None = None) -> Frame:
    """The frame turned by `angle` (radians) about the vertical through its centroid: its
    birds' places and velocities, its exposures' with the same centre, and the point a
    tracking camera follows, which trails the flock along its heading and turns with it
    (left where it was, the flock slid across the frame as its heading came round: at the
    wrap, a 30 m trail swung back through 40° in the morph's second); where `matrix`
    (3 × 3, `carried`) is given, the places are mapped by it instead."""
    if angle == 0.0 and matrix is None:
        return frame
    centre = frame.positions.mean(axis=0)

    def placed(points):
        return turned(points, angle, centre) if matrix is None else \
            mapped(points, matrix, centre)
    return dataclasses.replace(
        frame, positions=placed(frame.positions), velocities=turned(frame.velocities, angle),
        exposure=tuple((placed(p), turned(v, angle)) for p, v in frame.exposure),
        followed=turned_point(frame.followed, angle, centre))


def turned_point(point: tuple | None, angle: float, about: np.ndarray) -> tuple | None:
    """A point (3 floats; None: none) turned by `angle` about the vertical through
    `about` (`turned`)."""
    if point is None:
        return None
    return tuple(float(x) for x in turned(np.array([point], float), angle, about)[0])


def morph(scene, head: list[Frame], start: int, count: int,
          accent: np.ndarray) -> Iterator[Frame]:
    """The morph's frames: the tail (frames start+count … of the simulation) flown on by
    the flocking rules with each bird pulled toward its head partner (`Guided`), then, over
    the last share of the morph (the `Pull`'s snap), the residual closed exactly; a pair
    too far apart to meet switches instead, at its own moment. Rows in the tail's order
    (frame 0 is then exactly the frame after the last); the frame after the morph is the
    clip's."""
    c, fps = len(head), scene.output.fps
    extent = wrapping(scene, head[0].positions)
    found = search(scene, count, c)
    if found.start != start:
        raise ValueError(f"a loop starts at frame {found.start} (loop_start), not {start}")
    partner = found.partner
    guided = list(frames(Guided(scene, partner, start, count, c, found.tail, found.glide,
                                found.head, found.turn, found.shape),
                         fps, c, first=start + count))
    # The head in the tail's heading and layout: the morph ends on it, and `looped` turns
    # it back.
    head = [dataclasses.replace(f, positions=p, velocities=v,
                                followed=turned_point(f.followed, found.turn,
                                                      f.positions.mean(axis=0)))
            for f, (p, v) in zip(head, (into_tail(f.positions, f.velocities, found.turn,
                                                  found.shape) for f in head))]
    paths = [path(scene, i / c, frame.positions[partner], t.positions, extent)
             for i, (frame, t) in enumerate(zip(head, guided))]
    glides = flies(scene, guided, paths, head[-1].positions[partner])
    moment = switch_moments(scene.scene.seed, accent.size)
    for i, (frame, t, (snap, residual, carried)) in enumerate(zip(head, guided, paths)):
        w = np.where(glides, snap, (moment < i / c).astype(float))[:, None]
        pos = t.positions + carried + w * residual
        if extent is not None:
            pos = np.mod(pos, extent)
        vel = t.velocities + w * (frame.velocities[partner] - t.velocities)
        nb = np.where(w[:, 0] < 0.5, t.snapshot.neighbours, frame.snapshot.neighbours[partner])
        snapshot = dataclasses.replace(frame.snapshot, neighbours=nb)
        followed, bank, beats = frame.followed, frame.bank, None
        if scene.dimensions == 3:
            bank, followed = carried_3d(frame, t, partner, w[:, 0], smooth(i / c))
            beats = carried_beats(partner, w[:, 0])
        yield dataclasses.replace(frame, positions=pos, velocities=vel, exposure=(),
                                  snapshot=snapshot, followed=followed, bank=bank,
                                  beats=beats)


def smooth(s):
    """The smoothstep 3s² − 2s³ of s in [0, 1] (scalar or array)."""
    return s * s * (3 - 2 * s)


def path(scene, s: float, target: np.ndarray, guided: np.ndarray, extent):
    """Where a morph frame `s` (0–1) of the way through draws its birds, as the guided
    tail's positions plus (snap, residual, carried): `residual` (n, d) closes with the
    weight `snap` over the morph's last share (`pull_of`'s snap; each gliding pair's; a
    switching pair's is 0 or 1), `carried` (d,) is the centroid's gap to the head
    (`target`: the partners' positions), carried all the morph long with a smoothstep
    where the camera follows the flock (`centred`; elsewhere 0)."""
    last = pull_of(scene).snap
    snap = smooth(np.clip((s - (1 - last)) / last, 0.0, 1.0))
    delta = target - guided
    if extent is not None:
        delta -= extent * np.round(delta / extent)
    carried = np.zeros(delta.shape[1])
    if centred(scene):
        carried = delta.mean(axis=0)
        delta = delta - carried
        carried = smooth(s) * carried
    return snap, delta, carried


def carried_3d(head: Frame, tail: Frame, partner: np.ndarray, w: np.ndarray, s: float):
    """A 3D morph frame's bank ((n,) radians, each bird's turned from the guided tail's
    toward its partner's with its weight `w`, so at the morph's end it is the partner's)
    and the followed point (the camera carried from the tail's to the head's with `s`)."""
    return tail.bank + w * (head.bank[partner] - tail.bank), between(tail.followed,
                                                                     head.followed, s)


def carried_beats(partner: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Each row's place in its wing beat at time 0 (cycles) in a morph frame: its own
    (`simulate.own_beats`) turned the shorter way round toward its partner's with its
    weight `w`, so the row beats on as the head's bird it becomes (the frame after the
    morph draws that bird in its own row)."""
    own = own_beats(len(partner))
    gap = own[partner] - own
    return own + w * (gap - np.round(gap))


def flies(scene, guided: list[Frame], paths: list[tuple], end: np.ndarray) -> np.ndarray:
    """Which birds ((n,) bool) read as flight (`flying`) from frame to frame along
    guided + carried + snap·residual (`paths`, see `path`), the step into `end` (the
    partners' positions in the morph's last head frame, where the clip goes on) included."""
    fps, extent = float(scene.output.fps), wrapping(scene, guided[0].positions)
    drawn = [t.positions + carried + w * residual
             for t, (w, residual, carried) in zip(guided, paths)]
    drawn.append(end)
    ok = np.ones(len(end), bool)
    for a, b in zip(drawn, drawn[1:]):
        step = b - a
        if extent is not None:
            step -= extent * np.round(step / extent)
        ok &= flying(scene, step * fps)
    return ok


class Guided:
    """The tail's simulation (frames start+count … of the scene) with each bird pulled, as
    the morph goes on, toward its partner's state in the head (frames start …, a second
    simulation run in step): after each step of the flocking rules, a drift along the gap
    (the gap over the `Pull`'s time, at most its cap × the maximum speed) moves the
    position, and the velocity turns (the `Pull`'s turn) toward the partner's velocity
    plus that drift, both weighted by a smoothstep from 0 at the morph's start to 1 at
    the `Pull`'s ramp (`PULL`, in 3D `PULL_3D`). The rules still act on every bird, so
    neighbours turn together and the streaks keep their lanes. The head's states are
    turned by `turn` (radians, `flock_turn`) and stretched by `shape` (`flock_shape`)
    about their centroid first (`into_tail`): the tail is pulled toward the head's layout
    in its own heading and shape. Exposes what `frames` samples: scene, dt,
    world, step_index, advance()."""

    def __init__(self, scene, partner: np.ndarray, start: int, count: int, crossfade: int,
                 tail=None, glide=None, head=None, turn: float = 0.0,
                 shape: np.ndarray | None = None):
        fps = float(scene.output.fps)
        self.scene, self.partner, self.turn, self.shape = scene, partner, turn, shape
        # The tail flies on from `tail` (a simulation not yet past the morph's first
        # frame, copied: a search's is kept for the next render), else from the start;
        # the head from `head` (not yet past the loop's start), else from the start.
        self.tail = Simulation(scene) if tail is None else copy.deepcopy(tail, {id(scene): scene})
        self.head = Simulation(scene) if head is None else copy.deepcopy(head, {id(scene): scene})
        # Only the pairs that can meet are pulled (None: all); the others fly on free until
        # they switch, rather than drift across the sky toward a partner out of reach.
        self.glide = (np.ones(len(partner)) if glide is None else glide.astype(float))[:, None]
        self.dt, self.world = self.tail.dt, self.tail.world
        # The first step at or after the morph's frame 0 (a frame between two steps is
        # drawn from both, so neither may be pulled yet).
        self.begin = math.ceil((start + count) / fps / self.dt - 1e-9)
        self.offset = int(round(count / fps / self.dt))  # tail step − head step
        self.steps = crossfade / fps / self.dt
        self.span = crossfade / fps
        self.extent = wrapping(scene, self.tail.positions)
        self.centred = centred(scene)
        self.pull = pull_of(scene)

    @property
    def step_index(self) -> int:
        return self.tail.step_index

    def advance(self):
        snap = self.tail.advance()
        k = self.tail.step_index
        if k <= self.begin:
            return snap
        while self.head.step_index < k - self.offset:
            self.head.advance()
        s = min(1.0, (k - self.begin) / (self.pull.ramp * self.steps))
        self.tail.positions, self.tail.velocities = self.pulled(smooth(s))
        return snap

    def pulled(self, g: float) -> tuple[np.ndarray, np.ndarray]:
        """The tail's state after one step's pull of weight `g` (0–1); a 3D tail's bank
        turns with its velocity, toward the partner's."""
        pos, vel, dt = self.tail.positions, self.tail.velocities, self.dt
        there, moving = into_tail(self.head.positions, self.head.velocities, self.turn,
                                  self.shape)
        gap = there[self.partner] - pos
        if self.extent is not None:
            gap -= self.extent * np.round(gap / self.extent)
        if self.centred:
            gap -= gap.mean(axis=0)  # the morph carries the centroid's gap (`path`)
        tau = self.pull.time * self.span
        drift = gap / tau * self.glide
        cap = self.pull.drift * self.scene.flock.max_speed
        size = np.sqrt((drift * drift).sum(axis=1, keepdims=True))
        drift *= np.minimum(1.0, cap / np.maximum(size, 1e-12))
        want = moving[self.partner] + drift
        turn = min(1.0, g * dt / (self.pull.turn * self.span)) * self.glide
        vel = vel + turn * (want - vel)
        if self.scene.dimensions == 3:
            bank = self.tail.bank
            self.tail.bank = bank + turn[:, 0] * (self.head.bank[self.partner] - bank)
        pos = pos + dt * g * drift
        if self.extent is not None:
            pos = np.mod(pos, self.extent)
        return pos, vel
