"""Checks of the 3D murmuration's settings against each other (docs/model.md): the hawk's mode
for the world's dimension, a hunting hawk that can catch the flock, and a landing inside
the clip."""

from __future__ import annotations

from .values import show


def check_hunt_and_landing(values, merged, where, usable, problems, rank) -> None:
    """Append a one-line problem for each: [hawk] mode against the world's dimension, a
    hunting hawk no faster than the flock (or whose dive is slower than its pursuit) or
    starting before frame 0 (settling is the flock's alone: its kept state holds no hawk),
    a hunt without topological neighbours (the waves spread over the k nearest), and
    roost.landing_at outside the clip (before settling ends is negative time). A clip cut
    short of its landing by a later setting (`--duration` over the file's landing_at:
    `rank` orders where settings came from) is an excerpt, not a mistake; so is one that
    `output.frames` cuts (--frames N, the API's frames=n: which frames to render)."""
    world, hawk, roost = values["world"], values["hawk"], values["roost"]
    three = world.dimensions == 3
    if hawk is not None and usable("hawk.mode", "world.dimensions"):
        wanted = "hunt" if three else "chord"
        if hawk.mode != wanted:
            problems.append(f"{where('hawk.mode')}: a {'3D' if three else '2D'} world's hawk "
                            f"{'hunts' if three else 'flies chords'}: expected \"{wanted}\", "
                            f"got {show(hawk.mode)}")
        elif three:
            _check_hunter(values, where, usable, problems, rank)
    end, by, said = _clip_end(values)
    landing = merged.get("roost", {}).get("landing_at")
    if three and roost is None and landing is not None and usable("roost.landing_at",
                                                                   "roost.enabled"):
        if rank("roost.enabled") > rank("roost.landing_at"):  # the roost just went off
            problems.append(f"{where('roost.enabled')}: a landing (roost.landing_at = "
                            f"{show(landing)}) needs the roost: expected true, got false")
        else:
            problems.append(f"{where('roost.landing_at')}: a landing needs the roost: "
                            f"expected roost.enabled = true, got false")
    if roost is not None and roost.landing_at is not None and usable(
            "roost.landing_at", by):
        if roost.landing_at < 0.0:
            problems.append(f"{where('roost.landing_at')}: the landing starts before "
                            f"settling is over (times count from frame 0, after settling): "
                            f"expected ≥ 0 s, got {show(roost.landing_at)}")
        elif roost.landing_at >= end and rank(by) <= rank("roost.landing_at"):
            problems.append(f"{where('roost.landing_at')}: the landing starts after the "
                            f"clip's end: expected below {said}, got "
                            f"{show(roost.landing_at)}")
    if three and hawk is not None and hawk.mode == "hunt" and hawk.start >= end and \
            rank(by) <= rank("hawk.start") and usable("hawk.start", by):
        problems.append(f"{where('hawk.start')}: the hunt starts after the clip's end: "
                        f"expected below {said}, got {show(hawk.start)}")


def _clip_end(values) -> tuple[float, str, str]:
    """Where the clip ends (s), the setting that says so and that end as a message names
    it: scene.duration, or output.frames where they run past it (frames cut short of it
    are an excerpt; a loop's search flies past them)."""
    output, duration = values["output"], values["scene"].duration
    if output.frames is None or output.frames / output.fps <= duration:
        return duration, "scene.duration", f"scene.duration ({show(duration)} s)"
    end = float(output.frames / output.fps)
    return end, "output.frames", f"the clip's end ({output.frames} frames at " \
                                 f"{output.fps} fps: {end:.4g} s)"


def _check_hunter(values, where, usable, problems, rank) -> None:
    hawk, flight, flock = values["hawk"], values["flight"], values["flock"]
    flock_speed, name = (flight.cruise_speed, "flight.cruise_speed") if flight is not None \
        else (flock.max_speed, "flock.max_speed")
    if hawk.speed <= flock_speed and usable("hawk.speed", name, "hawk.mode"):
        if rank("hawk.mode") > max(rank(name), rank("hawk.speed")):  # the hunt just began
            given = " (the default)" if rank("hawk.speed") == 0 else ""
            problems.append(f"{where('hawk.mode')}: a hunting hawk must outfly the flock to "
                            f"catch it: expected hawk.speed above {name} "
                            f"({show(flock_speed)} m/s), got {show(hawk.speed)} m/s{given}; "
                            f"set hawk.speed too (the film's hawk flies 20 m/s)")
        elif rank(name) > rank("hawk.speed"):  # the flock's speed is what was just changed
            problems.append(f"{where(name)}: a hunting hawk must outfly the flock to catch "
                            f"it: expected less than hawk.speed ({show(hawk.speed)} m/s), "
                            f"got {show(flock_speed)} m/s")
        else:
            problems.append(f"{where('hawk.speed')}: a hunting hawk must outfly the flock "
                            f"to catch it: expected more than {name} ({show(flock_speed)} "
                            f"m/s), got {show(hawk.speed)} m/s")
    if hawk.dive_speed < hawk.speed and usable("hawk.dive_speed", "hawk.speed"):
        problems.append(f"{where('hawk.dive_speed')}: expected ≥ hawk.speed "
                        f"({show(hawk.speed)} m/s), got {show(hawk.dive_speed)}")
    if hawk.enabled and hawk.start < 0.0 and usable("hawk.start"):
        problems.append(f"{where('hawk.start')}: the hunt starts before settling is over "
                        f"(times count from frame 0, after settling): expected ≥ 0 s, got "
                        f"{show(hawk.start)}")
    if values["rules"].neighbours != "topological" and usable("rules.neighbours"):
        problems.append(f"{where('rules.neighbours')}: a hunt's agitation waves spread over "
                        f"the k nearest: expected \"topological\", got "
                        f"{show(values['rules'].neighbours)}")
