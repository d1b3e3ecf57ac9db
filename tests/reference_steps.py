"""Helpers of the kernel tests: scenes, and the product and the all-pairs reference
(tests/naive.py) driven side by side from the same arrays."""

from __future__ import annotations

import math

import numpy as np

from naive import naive_integrate, naive_total_accel
from render.scene import build_scene
from render.sim.forces.flocking import Flocking
from render.sim.grid import grid_shape
from render.sim.motion import World
from render.sim.neighbours import FALLOFF_POWER, neighbour_sums
from render.sim.simulate import Simulation

TOL = 1e-9


def make_scene(*, count=100, width=20.0, height=16.0, boundary="wrap", radius=2.5,
               sep_radius=1.2, falloff="unit", alignment="mean", weights=(1.0, 1.0, 0.5),
               max_force=None, speeds=(1.0, 2.0), seed=3, attractor=None,
               wall_margin=3.0, wall_strength=5.0, init="uniform"):
    """A Scene built from a TOML-shaped dict, with no settling steps."""
    raw = {
        "scene": {"seed": seed, "settle_steps": 0},
        "world": {"width": width, "height": height, "boundary": boundary,
                  "wall_margin": wall_margin, "wall_strength": wall_strength},
        "flock": {"count": count, "min_speed": speeds[0], "max_speed": speeds[1],
                  "init": init},
        "rules": {"perception_radius": radius, "separation_radius": sep_radius,
                  "falloff": falloff, "alignment": alignment,
                  "separation_weight": weights[0], "alignment_weight": weights[1],
                  "cohesion_weight": weights[2]},
    }
    if max_force is not None:
        raw["rules"]["max_force"] = max_force
    if attractor is not None:
        raw["attractor"] = attractor
    return build_scene(raw)


def simulation_at(scene, positions, velocities):
    """A Simulation of `scene` whose current state is the given arrays."""
    sim = Simulation(scene)
    sim.positions = np.array(positions, dtype=np.float64)
    sim.velocities = np.array(velocities, dtype=np.float64)
    return sim


def reference_model(scene, time_s):
    """The keyword arguments of naive_total_accel for `scene` at time `time_s`, read from
    the scene's settings (the attractor's path interpolated here, independently)."""
    world, rules = scene.world, scene.rules
    attractor = None
    if scene.attractor is not None:
        att = scene.attractor
        if att.path is not None:
            keys = np.array(att.path, dtype=np.float64)
            point = (np.interp(time_s, keys[:, 0], keys[:, 1]),
                     np.interp(time_s, keys[:, 0], keys[:, 2]))
        elif att.position is not None:
            point = att.position
        else:
            point = (world.width / 2, world.height / 2)
        attractor = dict(point=point, strength=att.strength, radius=att.radius)
    return dict(width=world.width, height=world.height, boundary=world.boundary,
                radius=rules.perception_radius, sep_radius=rules.separation_radius,
                falloff=rules.falloff, alignment=rules.alignment,
                w_sep=rules.separation_weight, w_ali=rules.alignment_weight,
                w_coh=rules.cohesion_weight,
                max_force=math.inf if rules.max_force is None else rules.max_force,
                wall_margin=world.wall_margin, wall_strength=world.wall_strength,
                attractor=attractor)


def reference_integrate(scene, pos, vel, acc):
    world, flock = scene.world, scene.flock
    return naive_integrate(pos, vel, acc, dt=scene.scene.dt, min_speed=flock.min_speed,
                           max_speed=flock.max_speed, width=world.width,
                           height=world.height, boundary=world.boundary)


def position_error(scene, a, b):
    """Largest coordinate difference, the short way round on a torus."""
    diff = np.asarray(a) - np.asarray(b)
    if scene.world.boundary == "wrap":
        extent = np.array([scene.world.width, scene.world.height])
        diff -= extent * np.round(diff / extent)
    return float(np.abs(diff).max())


def assert_matches_reference(sim, steps, tol=TOL):
    """Advance `sim` and the reference `steps` times from sim's current state; after every
    step the neighbour counts are equal and positions/velocities agree to `tol`."""
    scene = sim.scene
    pos, vel = sim.positions.copy(), sim.velocities.copy()
    for k in range(steps):
        acc, count = naive_total_accel(pos, vel, **reference_model(scene, k * scene.scene.dt))
        snap = sim.advance()
        np.testing.assert_array_equal(snap.neighbours, count,
                                      err_msg=f"neighbour counts differ at step {k}")
        pos, vel = reference_integrate(scene, pos, vel, acc)
        pos_err = position_error(scene, sim.positions, pos)
        vel_err = float(np.abs(sim.velocities - vel).max())
        assert pos_err <= tol and vel_err <= tol, (
            f"step {k}: positions differ by {pos_err:.3g}, velocities by {vel_err:.3g}")


def kernel_sums(pos, vel, *, width, height, wrap, radius, sep_radius, falloff):
    """Call the neighbourhood kernel on a grid from counting_sort; results by bird."""
    pos = np.ascontiguousarray(pos, dtype=np.float64)
    vel = np.ascontiguousarray(vel, dtype=np.float64)
    shape = grid_shape(pos, radius, width, height, wrap)
    rules = Flocking(radius, sep_radius, FALLOFF_POWER[falloff], 1.0, 1.0, 1.0, False,
                     math.inf)
    return neighbour_sums(pos, vel, shape, World(wrap, width, height), rules)
