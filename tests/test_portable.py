"""numba compiles the simulator for one instruction set on every x86-64 machine that has
it (render.sim.cache.portable_target), named Haswell; numba adds the host's features to
the name, so the golden baseline holds on every such machine with AVX-512 (docs/model.md)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from render.sim import cache

HASWELL = "flags\t\t: fpu sse2 ssse3 sse4_1 sse4_2 popcnt avx f16c fma movbe bmi1 bmi2 avx2"
OLDER = "flags\t\t: fpu sse2 ssse3 sse4_1 sse4_2 popcnt avx"

x86 = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                         reason="the portable target is x86-64's")


def _cpuinfo(tmp_path: Path, flags: str) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(f"processor\t: 0\nmodel name\t: test\n{flags}\n")
    return path


@x86
def test_a_processor_with_avx2_gets_the_haswell_target(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CPU_NAME", raising=False)
    cache.portable_target(_cpuinfo(tmp_path, HASWELL))
    assert os.environ["NUMBA_CPU_NAME"] == cache.PORTABLE_CPU == "haswell"


@x86
def test_an_older_processor_is_left_to_numba(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_CPU_NAME", raising=False)
    cache.portable_target(_cpuinfo(tmp_path, OLDER))
    assert "NUMBA_CPU_NAME" not in os.environ


@x86
def test_a_target_set_by_the_user_is_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CPU_NAME", "host")
    cache.portable_target(_cpuinfo(tmp_path, HASWELL))
    assert os.environ["NUMBA_CPU_NAME"] == "host"


@x86
def test_importing_the_simulator_first_sets_numbas_target():
    """In a fresh process (no NUMBA_CPU_NAME), on this machine: numba, imported after the
    simulator, compiles for Haswell when the processor has its instructions."""
    flags = next((line for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("flags")), "")
    if not {"avx2", "fma", "bmi2", "movbe"} <= set(flags.partition(":")[2].split()):
        pytest.skip("this processor lacks Haswell's instructions")
    code = "import render.sim.step3d; from numba.core import config; print(config.CPU_NAME)"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CPU_NAME"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    assert out.stdout.strip() == "haswell"


def test_numba_imported_first_is_said_and_the_first_run_check_looks_where_it_caches():
    """numba has read its settings: boids-render leaves NUMBA_CACHE_DIR unset (so the check
    for a first run looks beside the sources, where numba caches) and warns that the
    kernels are neither its cache's nor compiled for the portable target."""
    code = ("import numba, os, warnings; warnings.simplefilter('always'); import render.sim; "
            "print(os.environ.get('NUMBA_CACHE_DIR'))")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env, cwd=Path(__file__).parents[1])
    assert out.stdout.strip() == "None"
    assert "RuntimeWarning: numba was imported before boids-render" in out.stderr
    after = subprocess.run([sys.executable, "-c", code.replace("import numba, ", "import ")],
                           capture_output=True, text=True, check=True, env=env,
                           cwd=Path(__file__).parents[1])
    assert "boids-render" in after.stdout and after.stderr == ""
