"""boids-render: offline film-quality flock renderer.

The Python API (docs/api.md): `load_scene`, `simulate`, `frame`, `render`, defined in
render/api.py and loaded on first use, so `import render` stays cheap (no numpy, numba
or cairo until a function needs them).
"""
__version__ = "0.1.0"

_API = ("State", "frame", "load_scene", "render", "simulate")
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'render' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
