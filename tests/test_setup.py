"""The set-up installs what constraints.txt pins: the versions the tests' reference frames
and the docs' figures were made with (a newer numba or numpy may move a trajectory's last
bits, and every frame after them)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from packaging.requirements import Requirement

CONSTRAINTS = Path(__file__).resolve().parents[1] / "constraints.txt"


def pins() -> list[Requirement]:
    lines = (line.split("#")[0].strip() for line in CONSTRAINTS.read_text().splitlines())
    return [Requirement(line) for line in lines if line]


def test_every_pin_is_exact_and_named_once_per_python():
    seen = set()
    for req in pins():
        assert len(req.specifier) == 1 and next(iter(req.specifier)).operator == "==", req
        key = (req.name.lower(), str(req.marker))
        assert key not in seen, req
        seen.add(key)


def test_the_installed_versions_are_the_pinned_ones():
    wrong = []
    for req in pins():
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            installed = version(req.name)
        except PackageNotFoundError:
            installed = "none"
        if installed not in req.specifier:
            wrong.append(f"{req.name} {installed} (pinned: {req.specifier})")
    assert not wrong, "installed without constraints.txt (make does it: pip install -c " \
        "constraints.txt): " + ", ".join(wrong)
