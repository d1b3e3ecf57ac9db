"""The package's shape: imports run one way (no cycle, lazy imports included), and no
module imports the pipeline that wires it but the API on top."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "render"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that `path` imports, at its top or inside a function."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {m for m in found if m in modules and m != name}


def graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {module_name(p): imported(p, modules) for p in paths}


def test_no_module_imports_itself_through_others():
    edges = graph()
    # The one exception: the package re-exports the Python API (render.api) lazily, from
    # its module __getattr__, after it is itself initialised; modules that read
    # render.__version__ would otherwise all close a loop through it. The next test keeps
    # that edge the root's only one, and the API on top of everything but the CLI.
    edges["render"] -= {"render.api"}
    state: dict[str, str] = {}  # "open" while on the walk's path, "done" after

    def walk(module: str, path: list[str]) -> None:
        state[module] = "open"
        for other in sorted(edges[module]):
            assert state.get(other) != "open", " → ".join(path + [module, other])
            if other not in state:
                walk(other, path + [module])
        state[module] = "done"

    for module in sorted(edges):
        if module not in state:
            walk(module, [])


def test_the_package_root_only_re_exports_the_api_which_only_the_cli_uses():
    edges = graph()
    assert edges["render"] == {"render.api"}
    assert {m for m, deps in edges.items() if "render.api" in deps} == {"render",
                                                                        "render.cli"}


def test_only_the_api_imports_the_pipeline():
    # The CLI renders through the API (render.api), which wires the pipeline.
    edges = graph()
    assert {m for m, deps in edges.items() if "render.pipeline" in deps} == {"render.api"}


def test_the_simulator_imports_nothing_of_drawing_or_encoding():
    edges = graph()
    for module, deps in edges.items():
        if module.startswith("render.sim"):
            assert not {d for d in deps if d.startswith(("render.draw", "render.encode"))}, \
                module
