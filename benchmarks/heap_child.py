"""One process's median step time (ms) and minor page faults per step at BIRDS birds, two
threads, after a few settling steps: `heap_child.py BIRDS STEPS TUNED`, TUNED 1 with the
malloc tuning the command line applies, 0 without. sim_bench.heap_tuning runs it.

With the tuning glibc keeps freed heap blocks (up to 32 MiB) for the next step instead of
returning them to the OS: every step allocates its results afresh, and without it the next
step takes a page fault per 4 KiB to get them back.
"""
import resource
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
birds, steps, tuned = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
if tuned:
    from render.cli import tune_process  # the console script's own tuning

    tune_process()
import sim_bench  # noqa: E402
from render.sim.simulate import Simulation  # noqa: E402

scale = (birds / sim_bench.BIRDS) ** 0.5
sim = Simulation(sim_bench.load_scene(sim_bench.SCENE, [
    ("world.width", repr(80.0 * scale), "bench"),
    ("world.height", repr(45.0 * scale), "bench"),
    ("scene.settle_steps", "5", "bench")]))
with sim_bench.numba_threads(2):
    sim.advance()
    times, faults = [], resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(steps):
        start = time.perf_counter()
        sim.advance()
        times.append((time.perf_counter() - start) * 1e3)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
print(statistics.median(times), faults / steps)
