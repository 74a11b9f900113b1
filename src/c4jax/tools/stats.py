"""Match statistics: Wilson score intervals of rates and Elo differences.

A score ``s = (wins + draws / 2) / G`` maps to the Elo difference
``400 log10(s / (1 - s))`` (logistic model); its interval is the Wilson
interval of ``s`` mapped the same way.
"""

from __future__ import annotations

import math

__all__ = ["Z95", "wilson_interval", "elo_difference"]

Z95 = 1.959963984540054


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval of a proportion ``successes / n`` (Wilson 1927).

    Returns ``(0.0, 1.0)`` for ``n == 0``.  ``successes`` may be fractional
    (a score with draws as halves)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo, hi = centre - half, centre + half
    return (0.0 if lo < 1e-12 else lo), (1.0 if hi > 1 - 1e-12 else hi)


def elo_difference(score: float) -> float:
    """Elo difference for an expected score in ``[0, 1]`` (logistic model,
    400-point scale); ``+inf``/``-inf`` at 1 and 0."""
    if score >= 1.0:
        return math.inf
    if score <= 0.0:
        return -math.inf
    return 400.0 * math.log10(score / (1.0 - score))
