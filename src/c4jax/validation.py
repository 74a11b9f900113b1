"""Checks of arguments at the Python boundary, with one message shape:
``"<name> must be <what is allowed>; got <value>"`` (a ``ValueError``).

Booleans are not ints here (``True`` is not a count), NumPy scalars are
taken as the Python numbers they hold, and every check returns the value as
a plain Python ``int``/``float`` (or the choice itself).
"""

from __future__ import annotations

import math
import sys
from typing import Any, Iterable

__all__ = ["check_choice", "check_int", "check_number", "int_range", "plain"]


def plain(value: Any) -> Any:
    """A NumPy scalar (``np.int64(10)``, ``np.float32(1.0)``, ``np.bool_``) as
    the Python value it holds; anything else unchanged."""
    np = sys.modules.get("numpy")  # not imported: value is no NumPy scalar
    if np is not None and isinstance(value, np.generic) and value.ndim == 0:
        return value.item()
    return value


def _got(value: Any) -> str:
    text = repr(value)[:80]
    if hasattr(value, "shape") and hasattr(value, "dtype"):  # a JAX or NumPy array
        text += " (an array: pass a plain Python value, fixed when the program is compiled)"
    return text


def int_range(lo: int | None, hi: int | None) -> str:
    """``"an int in 1..9"``, ``"an int >= 1"``, ``"an int <= 9"`` or ``"an int"``."""
    if lo is not None and hi is not None:
        return f"an int in {lo:,}..{hi:,}" if hi >= 10_000 else f"an int in {lo}..{hi}"
    if lo is not None:
        return f"an int >= {lo}"
    if hi is not None:
        return f"an int <= {hi}"
    return "an int"


def check_int(name: str, value: Any, lo: int | None = None, hi: int | None = None, *,
              optional: bool = False, even: bool = False, note: str = "") -> int | None:
    """``value`` as an ``int`` in ``lo..hi`` (bounds inclusive, ``None``: no
    bound); ``optional``: ``None`` passes; ``even``: only even ints; ``note``:
    appended to the allowed values in the message (``"(sides alternate)"``).

    Raises:
      ValueError: ``"<name> must be [None or ]an [even ]int in lo..hi; got v"``.
    """
    value = plain(value)
    if optional and value is None:
        return None
    ok = (isinstance(value, int) and not isinstance(value, bool)
          and (lo is None or value >= lo) and (hi is None or value <= hi) and not (even and value % 2))
    if not ok:
        allowed = int_range(lo, hi)
        if even:
            allowed = allowed.replace("an int", "an even int", 1)
        if optional:
            allowed = "None or " + allowed
        raise ValueError(f"{name} must be {allowed}{' ' + note if note else ''}; got {_got(value)}")
    return int(value)


def check_number(name: str, value: Any, lo: float | None = None, hi: float | None = None, *,
                 lo_open: bool = False, hi_open: bool = False, optional: bool = False) -> float | None:
    """``value`` as a finite ``float`` (an int or float, not a bool) with
    ``lo <= value <= hi`` (``lo_open``/``hi_open``: strict); ``optional``:
    ``None`` passes.

    Raises:
      ValueError: ``"<name> must be a finite number > 0; got v"`` and the like.
    """
    value = plain(value)
    if optional and value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and lo is not None:
        ok = value > lo if lo_open else value >= lo
    if ok and hi is not None:
        ok = value < hi if hi_open else value <= hi
    if not ok:
        parts = []
        if lo is not None:
            parts.append(f"{'>' if lo_open else '>='} {lo:g}")
        if hi is not None:
            parts.append(f"{'<' if hi_open else '<='} {hi:g}")
        if lo is not None and hi is not None:
            allowed = f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
        else:
            allowed = "a finite number" + (" " + parts[0] if parts else "")
        if optional:
            allowed = "None or " + allowed
        raise ValueError(f"{name} must be {allowed}; got {_got(value)}")
    return float(value)


def check_choice(name: str, value: Any, allowed: Iterable[Any], *, optional: bool = False) -> Any:
    """``value`` if it is one of ``allowed`` (``optional``: or ``None``).

    Raises:
      ValueError: ``"<name> must be one of 'a', 'b'[ or None]; got v"``.
    """
    allowed = tuple(allowed)
    value = plain(value)
    # Same type and value: 1 is not True, and 1.0 is not "1".
    if (optional and value is None) or any(type(value) is type(a) and value == a for a in allowed):
        return value
    names = ", ".join(map(repr, allowed))
    raise ValueError(f"{name} must be one of {names}{' or None' if optional else ''}; got {_got(value)}")
