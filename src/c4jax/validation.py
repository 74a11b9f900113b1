"""Checks of arguments at the Python boundary, with one message shape:
``"<name> must be <what is allowed>; got <value>"`` (a ``ValueError``).

Booleans are not ints here (``True`` is not a count), NumPy scalars are
taken as the Python numbers they hold, and every check returns the value as
a plain Python ``int``/``float`` (or the choice itself).
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from typing import Any, Iterable

__all__ = ["byte_text", "check_choice", "check_int", "check_memory", "check_number", "env_int", "int_range",
           "machine_memory", "number_range", "plain"]


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


def env_int(name: str, lo: int = 0, hi: int | None = None, *, default: int | None = None,
            warn: bool = False, note: str = "") -> int | None:
    """The environment variable ``name`` as an int in ``lo..hi`` (``None``: no
    bound; ASCII digits only, no spaces: ``int()`` would also take spaces,
    ``+``, ``_`` and other scripts' digits), or ``default`` where it is unset or empty.

    Raises:
      ValueError: ``"<name> must be an int in lo..hi; got '<text>'"``; with
        ``warn``, a ``RuntimeWarning`` of that message instead, and
        ``default`` is returned.
    """
    text = os.environ.get(name, "")
    if not text:
        return default
    if text.isascii() and text.isdigit() and len(text) <= 18:
        value = int(text)
        if value >= lo and (hi is None or value <= hi):
            return value
    message = f"{name} must be {int_range(lo, hi)}{' ' + note if note else ''}; got {text[:80]!r}"
    if warn:
        warnings.warn(f"{message}: using {default}", RuntimeWarning, stacklevel=3)
        return default
    raise ValueError(message)


def number_range(lo: float | None, hi: float | None, *, lo_open: bool = False, hi_open: bool = False) -> str:
    """``"a number in (0, 1]"``, ``"a finite number > 0"`` or ``"a finite number"``."""
    if lo is not None and hi is not None:
        return f"a number in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    if lo is not None:
        return f"a finite number {'>' if lo_open else '>='} {lo:g}"
    if hi is not None:
        return f"a finite number {'<' if hi_open else '<='} {hi:g}"
    return "a finite number"


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
        allowed = number_range(lo, hi, lo_open=lo_open, hi_open=hi_open)
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


def machine_memory() -> int | None:
    """This machine's physical memory in bytes (``SC_PAGE_SIZE *
    SC_PHYS_PAGES``), or ``None`` where the system does not say."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None
    return total if total > 0 else None


def byte_text(count: int) -> str:
    """``count`` bytes for a message: ``"512 bytes"``, ``"3.2 MB"``, ``"1.5 TB"`` (powers of 1000)."""
    if count < 1000:
        return f"{count} bytes"
    for unit in ("kB", "MB", "GB", "TB", "PB"):
        count /= 1000
        if count < 1000:
            return f"{count:.3g} {unit}"
    return f"{count:,.0f} PB"


def check_memory(name: str, value: Any, need: int, what: str) -> None:
    """Refuses a size whose memory this machine cannot hold: ``need`` bytes
    (the estimate of ``what``, e.g. ``"64 trees of 2,050 nodes x 285 bytes"``)
    against :func:`machine_memory` (nothing is refused where it is unknown).
    Call it before anything of that size is allocated.

    Raises:
      ValueError: ``"<name> must fit in this machine's memory (16 GB): <what>
        need about 1.2 TB; got <value>"``.
    """
    have = machine_memory()
    if have is not None and need > have:
        raise ValueError(f"{name} must fit in this machine's memory ({byte_text(have)}): {what} "
                         f"need about {byte_text(need)}; got {_got(value)}")
