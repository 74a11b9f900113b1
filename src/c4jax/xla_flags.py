"""The two XLA CPU settings that c4jax's search is fast with: XLA's loop
threshold, and one CPU device per core.

On the CPU, XLA runs each operation of a program as a small kernel, except
``while`` loops whose body its cost model counts under a byte threshold
(``xla_cpu_small_while_loop_byte_threshold``, 1,024 bytes by default): those
it compiles into one kernel, loop and all.  A search's inner loops (a
rollout's plies, a descent's levels, the solver's proofs up the path) are
small, but several count over 1,024 bytes, so each of their iterations
launches a dozen kernels: a heuristic rollout of one game took 797 kernels
per simulation at the default and 182 with the threshold raised
(``benchmarks/kernels_per_simulation.py``), and a simulation about half the
time (``benchmarks/README.md``, "XLA's loop threshold").

The threshold is an ``XLA_FLAGS`` entry (``--xla_backend_extra_options=
xla_cpu_small_while_loop_byte_threshold=N``), read once per process when JAX
starts its first backend; it cannot be given per compilation (it lives in a
map field of XLA's options, which JAX's ``compiler_options`` cannot set).  So
``import c4jax`` adds it to ``XLA_FLAGS`` when all of these hold:

* JAX has not started a backend yet (``import jax`` alone is fine; running
  any JAX computation before ``import c4jax`` is too late: then c4jax warns
  once, on the CPU, and names the fix);
* ``XLA_FLAGS`` does not set the threshold already (yours wins);
* ``C4JAX_XLA_FLAGS`` is not ``0`` (the opt-out).

It raises the threshold to :data:`LOOP_BYTES` (128 KiB): loops whose body
moves more data than that (large arrays: matrix products, convolutions) are
compiled as before, so other JAX code in the process is affected only
through its small loops, which run in one kernel too.  GPU and TPU backends
ignore the entry.

One CPU device per core: XLA runs one CPU device's program on about one
core, so a batch of games uses every core only when it is split over
several devices (:mod:`c4jax.search.layout`).  Under the same conditions
(and unless ``XLA_FLAGS`` sets ``--xla_force_host_platform_device_count``
already, or ``C4JAX_CPU_DEVICES`` says how many), ``import c4jax`` adds
that flag with the number of cores this process may run on, so that
``jax.devices("cpu")`` lists one device per core.  JAX's default device and
what a computation of one game runs on do not change; other JAX code sees
the extra CPU devices (``C4JAX_CPU_DEVICES=1`` keeps one).  Nothing here
computes anything.
"""

from __future__ import annotations

import os
import re
import sys
import warnings

from c4jax.validation import check_int

__all__ = [
    "LOOP_BYTES", "THRESHOLD_KEY", "OPT_OUT", "DEVICES_KEY", "DEVICES_ENV", "flags_with_loop_threshold",
    "flags_with_cpu_devices", "cpu_devices_wanted", "loop_threshold_status",
]

THRESHOLD_KEY = "xla_cpu_small_while_loop_byte_threshold"
# Every loop of the search fits at 16 KiB on a 7-column board (kernels per
# simulation: 97.7 at 4 KiB, 66.5 at 16 KiB, the same at 64 KiB and 1 MB);
# 128 KiB leaves room for wide boards.
LOOP_BYTES = 1 << 17
OPT_OUT = "C4JAX_XLA_FLAGS"
_EXTRA = "--xla_backend_extra_options="
DEVICES_KEY = "--xla_force_host_platform_device_count"
DEVICES_ENV = "C4JAX_CPU_DEVICES"

# What configure_at_import did: "set", "user" (XLA_FLAGS had it), "opted out",
# "too late" (JAX had started), or None before it ran.
_status: str | None = None


def flags_with_loop_threshold(flags: str, threshold: int = LOOP_BYTES) -> str:
    """``flags`` (an ``XLA_FLAGS`` value) with the loop threshold added, or
    unchanged if it sets the threshold already.  An existing
    ``--xla_backend_extra_options=...`` entry gets the key appended to its
    comma-separated list (a second entry would replace the first).

    Raises:
      ValueError: ``threshold`` is not an int >= 0.
    """
    check_int("threshold", threshold, 0, note="(bytes)")
    if THRESHOLD_KEY in flags:
        return flags
    entry = f"{THRESHOLD_KEY}={threshold}"
    tokens = flags.split()
    for i, token in enumerate(tokens):
        if token.startswith(_EXTRA):
            existing = token[len(_EXTRA):]
            tokens[i] = _EXTRA + (f"{existing},{entry}" if existing else entry)
            return " ".join(tokens)
    return " ".join(tokens + [_EXTRA + entry])


def flags_with_cpu_devices(flags: str, devices: int) -> str:
    """``flags`` with ``devices`` CPU devices (``DEVICES_KEY``), or unchanged
    if it sets their number already or ``devices`` is 1.

    Raises:
      ValueError: ``devices`` is not an int >= 1.
    """
    check_int("devices", devices, 1)
    if DEVICES_KEY in flags or devices == 1:
        return flags
    return " ".join(flags.split() + [f"{DEVICES_KEY}={devices}"])


def cpu_devices_wanted() -> int:
    """The CPU devices ``import c4jax`` asks for: ``C4JAX_CPU_DEVICES`` if
    set (an int >= 1), else the cores this process may run on.

    Raises:
      ValueError: ``C4JAX_CPU_DEVICES`` is not an int >= 1.
    """
    value = os.environ.get(DEVICES_ENV, "").strip()
    if value:
        if not (value.isascii() and value.isdigit()) or int(value) < 1:
            raise ValueError(f"{DEVICES_ENV} must be an int >= 1 (CPU devices); got {value!r}")
        return int(value)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _backends_started() -> bool:
    if "jax" not in sys.modules:  # no backend can have started (and JAX stays unimported)
        return False
    try:
        from jax._src import xla_bridge
    except ImportError:  # pragma: no cover - another JAX
        return False
    started = getattr(xla_bridge, "backends_are_initialized", None)
    return bool(started()) if started is not None else False


def configure_at_import() -> None:
    """Adds the loop threshold to ``XLA_FLAGS`` (see the module docstring);
    called once by ``import c4jax``."""
    global _status
    flags = os.environ.get("XLA_FLAGS", "")
    if os.environ.get(OPT_OUT, "").strip() == "0":
        _status = "opted out"
    elif THRESHOLD_KEY in flags:
        _status = "user"
    elif _backends_started():
        _status = "too late"
        _warn_if_cpu()
    else:
        os.environ["XLA_FLAGS"] = flags_with_loop_threshold(flags)
        _status = "set"
    if _status in ("set", "user"):
        try:
            devices = cpu_devices_wanted()
        except ValueError as e:
            warnings.warn(f"c4jax: {e}; one CPU device is kept", stacklevel=3)
            devices = 1
        os.environ["XLA_FLAGS"] = flags_with_cpu_devices(os.environ["XLA_FLAGS"], devices)


def _warn_if_cpu() -> None:
    import jax

    if jax.default_backend() == "cpu":
        try:
            devices = cpu_devices_wanted()
        except ValueError:
            devices = 1
        warnings.warn(
            "c4jax: JAX had already run code before `import c4jax`, so XLA's CPU loop threshold could not be "
            "raised nor one CPU device per core made: a search runs about half as fast and a batch uses one "
            "core. Import c4jax before running JAX code, or start Python with "
            f"XLA_FLAGS='{_EXTRA}{THRESHOLD_KEY}={LOOP_BYTES} {DEVICES_KEY}={devices}' "
            f"(set {OPT_OUT}=0 to silence this).",
            stacklevel=3,
        )


def loop_threshold_status() -> str:
    """How the loop threshold stands in this process: ``"set"`` (c4jax set
    it at import), ``"user"`` (``XLA_FLAGS`` set it), ``"opted out"``
    (``C4JAX_XLA_FLAGS=0``), ``"too late"`` (JAX had started a backend
    before ``import c4jax``: XLA's default applies)."""
    if _status is None:
        configure_at_import()
    return _status


def threshold_in_effect() -> int | None:
    """The threshold XLA uses in this process if c4jax or ``XLA_FLAGS`` set
    it before JAX started (bytes), else ``None`` (XLA's default, 1,024)."""
    if loop_threshold_status() not in ("set", "user"):
        return None
    match = re.search(rf"{THRESHOLD_KEY}=(\d+)", os.environ.get("XLA_FLAGS", ""))
    return int(match.group(1)) if match else None
