"""A figure of the benchmark's table, as every section returns them."""

from __future__ import annotations


def result(figure: str, value: float, unit: str, reference: float | None = None,
           ratio: float | None = None, target: str = "") -> dict:
    """{figure, value, unit, reference, ratio, target}; the ratio is value ÷ reference
    unless given (some figures are better read the other way up)."""
    if ratio is None and reference:
        ratio = value / reference
    return dict(figure=figure, value=value, unit=unit, reference=reference, ratio=ratio,
                target=target)
