"""A figure of the benchmark's table, as every section returns them."""

from __future__ import annotations


def result(figure: str, value: float, unit: str, reference: float | None = None,
           ratio: float | None = None, target: str = "", *, compared: str = "×") -> dict:
    """{figure, value, unit, reference, ratio, target, compared}; the ratio is value ÷
    reference unless given (some figures are better read the other way up, some as a
    difference: `compared` is what the ratio column writes after the number)."""
    if ratio is None and reference:
        ratio = value / reference
    return dict(figure=figure, value=value, unit=unit, reference=reference, ratio=ratio,
                target=target, compared=compared)
