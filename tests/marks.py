"""The quick loop: which cases of a test's parameter matrix
``pytest -m "not slow"`` runs (CI runs every case)."""

import pytest


def slow_unless(cases, quick):
    """``cases`` (tuples unpack into several arguments) as pytest
    parameters, each one for which ``quick(case)`` is false marked
    ``slow``.

    Raises:
      ValueError: ``quick`` keeps no case (the quick loop would lose the test).
    """
    cases = list(cases)
    kept = [quick(case) for case in cases]
    if not any(kept):
        raise ValueError("slow_unless: the quick loop keeps none of these cases")
    return [
        pytest.param(*(case if isinstance(case, tuple) else (case,)), marks=() if keep else pytest.mark.slow)
        for case, keep in zip(cases, kept)
    ]
