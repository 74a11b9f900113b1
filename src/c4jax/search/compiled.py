"""The compiled programs a process keeps (searches, and the arena's and
self-play's game loops): a least-recently-used set of at most
:data:`MAX_COMPILED` of them, so that a long-lived process (a
notebook, a sweep over budgets and boards) that meets hundreds of shapes
keeps a bounded number of memory mappings and bytes.

Why it is needed: XLA's CPU backend maps the code of every compiled program
into the process, several regions per kernel (hundreds for one search), and
frees them only when the executable is dropped; JAX keeps every executable
it compiled for a function alive as long as that function lives, so a
process that compiles searches without bound passes Linux's
``vm.max_map_count`` (65,530 by default) and dies in LLVM.  Here every search is
compiled ahead of time from a jit object of its own; dropping the entry
drops that object, JAX's caches keyed on it, and the executable with its
mappings (tested).  The user's own compiled functions are not touched.

The number of simulations is an argument of the compiled program, not a
constant in it (except for Gumbel search, whose sequential halving plans its
visits in advance): one executable serves every budget that fits its tree,
and a fresh tree's capacity is rounded up to a power of two
(:func:`c4jax.search.search.simulation_bucket`), so a sweep over budgets
compiles once per bucket.

:func:`check_mappings` warns once when the process nears
``vm.max_map_count``, naming the fixes.
"""

from __future__ import annotations

import collections
import os
import re
import threading
import time
import warnings
from typing import Callable


__all__ = ["MAX_COMPILED", "compiled", "clear", "stats", "memory_mappings", "max_map_count", "check_mappings"]


def _max_compiled() -> int:
    value = os.environ.get("C4JAX_MAX_COMPILED", "").strip()
    if re.fullmatch("[0-9]{1,9}", value) and int(value) >= 1:  # ASCII digits: "²".isdigit() is True
        return int(value)
    if value:
        warnings.warn(f"C4JAX_MAX_COMPILED must be an int in 1..999,999,999; got {value!r}: keeping 16 compiled programs",
                      RuntimeWarning, stacklevel=2)
    return 16


MAX_COMPILED = _max_compiled()  # C4JAX_MAX_COMPILED=N to keep N instead

_CACHE: "collections.OrderedDict[tuple, Callable]" = collections.OrderedDict()
_LOCK = threading.Lock()
_BUILDING: "dict[tuple, threading.Lock]" = {}  # signature -> held while a thread builds it
_STATS = {"compiles": 0, "compile_seconds": 0.0, "dropped": 0}
_WARNED = False


def compiled(signature: tuple, build: Callable[[], object]) -> object:
    """The compiled program of ``signature`` (any hashable key that fixes
    the program: shapes, dtypes, options), made by ``build()`` on a miss (an
    executable, e.g. ``lower().compile()``, or a tuple of executables that
    are used together, as the arena's and self-play's game loops); the
    least recently used entry beyond :data:`MAX_COMPILED` is dropped.  A
    thread that meets a signature another thread is building waits for it
    and uses its program (if that build fails, the waiting thread builds)."""
    with _LOCK:
        fn = _CACHE.get(signature)
        if fn is not None:
            _CACHE.move_to_end(signature)
            return fn
        building = _BUILDING.setdefault(signature, threading.Lock())
    with building:
        with _LOCK:
            fn = _CACHE.get(signature)
            if fn is not None:
                _CACHE.move_to_end(signature)
                return fn
        try:
            t0 = time.perf_counter()
            fn = build()
            seconds = time.perf_counter() - t0
            with _LOCK:
                _STATS["compiles"] += 1
                _STATS["compile_seconds"] += seconds
                _CACHE[signature] = fn
                _CACHE.move_to_end(signature)
                while len(_CACHE) > MAX_COMPILED:
                    _CACHE.popitem(last=False)
                    _STATS["dropped"] += 1
        finally:
            with _LOCK:
                if _BUILDING.get(signature) is building:
                    del _BUILDING[signature]
    check_mappings()
    return fn


def clear() -> None:
    """Drops every compiled search this process keeps (the next search of
    each shape compiles again, or loads from the persistent cache)."""
    with _LOCK:
        _STATS["dropped"] += len(_CACHE)
        _CACHE.clear()


def stats() -> dict:
    """``{"kept", "compiles", "compile_seconds", "dropped"}``: the searches
    kept now, compiled so far, the seconds spent compiling them, and
    dropped so far."""
    with _LOCK:
        return {"kept": len(_CACHE), **_STATS}


def memory_mappings() -> int | None:
    """The process's memory mappings (lines of ``/proc/self/maps``), or
    None where there is no such file (not Linux)."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return None


def max_map_count() -> int | None:
    """Linux's ``vm.max_map_count`` (mappings a process may hold), or None."""
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


WARN_FRACTION = 0.75


def check_mappings() -> None:
    """Warns (once per process, ``ResourceWarning``) when the process holds
    more than 75% of ``vm.max_map_count`` mappings: past the limit XLA's
    compiler fails ("LLVM compilation error: Cannot allocate memory") and
    the process dies."""
    global _WARNED
    if _WARNED:
        return
    limit, now = max_map_count(), memory_mappings()
    if limit is None or now is None or now < WARN_FRACTION * limit:
        return
    _WARNED = True
    warnings.warn(
        f"this process holds {now:,} memory mappings of Linux's limit of {limit:,} "
        "(vm.max_map_count); past it XLA cannot compile and the process dies. Compiled programs "
        "hold most of them: drop the ones you no longer call (jax.clear_caches(); "
        "c4jax.clear_compiled() for c4jax's own), compile fewer shapes, or raise the limit "
        "(sudo sysctl -w vm.max_map_count=262144).",
        ResourceWarning,
        stacklevel=3,
    )
