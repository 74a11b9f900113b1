"""c4jax's XLA settings for the CPU, all in one place.  GPU and TPU ignore
them.

``import c4jax`` adds three ``XLA_FLAGS`` entries, read once when JAX starts
its first backend, so only before JAX has started one (else it warns once,
on the CPU, naming the fix), only where ``XLA_FLAGS`` does not set them
already (yours win), and unless ``C4JAX_XLA_FLAGS=0``.  They apply to every
CPU program of the process, yours included:

1. XLA's loop threshold, raised to :data:`LOOP_BYTES`.  XLA's CPU backend
   compiles a ``while`` loop into one kernel when the bytes its cost model
   counts stay under ``xla_cpu_small_while_loop_byte_threshold`` (1,024 by
   default) and it holds no scatter; the search's loops count the tree, so
   with the raised threshold (and the tree written without scatters on the
   CPU, :func:`c4jax.search.tree.write`) the loop over simulations runs as
   one kernel at any capacity.
2. One CPU device per core (``--xla_force_host_platform_device_count``, or
   ``C4JAX_CPU_DEVICES``): XLA runs one CPU device's program on about one
   core, so a batch uses every core only when split over several devices
   (:mod:`c4jax.search.programs`).  JAX's default device does not change.
3. LLVM's loop strength reduction off (:data:`LLVM_NO_LSR`), the costliest
   pass of the search's compile, which buys it no speed; added only where
   no GPU or TPU plugin of jaxlib is installed (their LLVM backends would
   read it too); ``-disable-lsr=false`` keeps the pass.

Two more settings are per compilation, of c4jax's own programs only
(:func:`compiler_options`): LLVM level :data:`CPU_OPT_LEVEL`, XLA's default
(an ``xla_backend_optimization_level`` in ``XLA_FLAGS`` wins), and for the
programs that run once per search (:func:`light_compiler_options`) level
:data:`LIGHT_OPT_LEVEL` with XLA's fusion emitters off, so they compile
sooner beside the simulation stage.
"""

from __future__ import annotations

import os
import re
import sys
import warnings

from c4jax.validation import check_int, env_int

__all__ = [
    "LOOP_BYTES", "THRESHOLD_KEY", "LLVM_NO_LSR", "flags_with_llvm_option", "OPT_LEVEL_KEY", "CPU_OPT_LEVEL", "compiler_options",
    "LIGHT_OPT_LEVEL", "EMITTERS_KEY", "light_compiler_options", "OPT_OUT", "opted_out", "DEVICES_KEY", "DEVICES_ENV", "flags_with_loop_threshold",
    "flags_with_cpu_devices", "cpu_devices_wanted", "loop_threshold_status",
]

THRESHOLD_KEY = "xla_cpu_small_while_loop_byte_threshold"
OPT_LEVEL_KEY = "xla_backend_optimization_level"
LLVM_NO_LSR = "-disable-lsr"
CPU_OPT_LEVEL = 3
LIGHT_OPT_LEVEL = 1
EMITTERS_KEY = "xla_cpu_use_fusion_emitters"
LOOP_BYTES = 1 << 30
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
    return _with_extra_option(flags, f"{THRESHOLD_KEY}={threshold}")


def flags_with_llvm_option(flags: str, option: str = LLVM_NO_LSR) -> str:
    """``flags`` with the LLVM ``option`` (``"-name"`` or ``"-name=value"``)
    added to ``--xla_backend_extra_options``, or unchanged if they name the
    option already (with any value)."""
    name = option.split("=", 1)[0]
    if re.search(rf"(?:^|[=,]){re.escape(name)}(?:[=,\s]|$)", flags):
        return flags
    return _with_extra_option(flags, option)


def _with_extra_option(flags: str, entry: str) -> str:
    tokens = flags.split()
    for i, token in enumerate(tokens):
        if token.startswith(_EXTRA):
            existing = token[len(_EXTRA):]
            tokens[i] = _EXTRA + (f"{existing},{entry}" if existing else entry)
            return " ".join(tokens)
    return " ".join(tokens + [_EXTRA + entry])


def accelerator_plugin_installed() -> bool:
    """Whether a GPU or TPU plugin of jaxlib is installed (the
    ``jax_plugins`` namespace of the CUDA and ROCm plugins, or ``libtpu``),
    found without importing it."""
    from importlib.util import find_spec

    return any(find_spec(name) is not None for name in ("jax_plugins", "libtpu"))


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
    wanted = env_int(DEVICES_ENV, 1, note="(CPU devices)")
    if wanted is not None:
        return wanted
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def light_compiler_options(platform: str) -> dict[str, int | bool]:
    """Per-compilation XLA options for c4jax's programs that run once per
    search, not once per simulation (the search's root and output stages):
    :func:`compiler_options` with LLVM level :data:`LIGHT_OPT_LEVEL` and,
    where jaxlib has the flag (before 0.11), XLA's fusion emitters off; both
    only where ``XLA_FLAGS`` does not set them.  ``{}`` off the CPU or with
    ``C4JAX_XLA_FLAGS=0``."""
    options: dict[str, int | bool] = dict(compiler_options(platform))
    if platform != "cpu" or opted_out():
        return options
    flags = os.environ.get("XLA_FLAGS", "")
    if OPT_LEVEL_KEY not in flags:
        options[OPT_LEVEL_KEY] = LIGHT_OPT_LEVEL
    if EMITTERS_KEY not in flags and _jaxlib_before(0, 11):
        options[EMITTERS_KEY] = False
    return options


def _jaxlib_before(major: int, minor: int) -> bool:
    from importlib.metadata import version

    return tuple(int(x) for x in re.findall(r"[0-9]+", version("jaxlib"))[:2]) < (major, minor)


def compiler_options(platform: str) -> dict[str, int]:
    """Per-compilation XLA options for c4jax's own programs on ``platform``
    (``jax.default_backend()``): ``{OPT_LEVEL_KEY: CPU_OPT_LEVEL}`` on the
    CPU, unless ``XLA_FLAGS`` sets the level or ``C4JAX_XLA_FLAGS=0``;
    else ``{}``.  For ``.lower(...).compile(compiler_options=...)``."""
    if platform != "cpu" or OPT_LEVEL_KEY in os.environ.get("XLA_FLAGS", ""):
        return {}
    if opted_out():
        return {}
    return {OPT_LEVEL_KEY: CPU_OPT_LEVEL}


_warned_opt_out = False


def opted_out() -> bool:
    """Whether ``C4JAX_XLA_FLAGS=0`` turns c4jax's XLA settings off.  Unset,
    empty or ``1``: they stay on; another value warns once (naming the
    allowed values) and they stay on."""
    global _warned_opt_out
    value = os.environ.get(OPT_OUT, "").strip()
    if value in ("", "1"):
        return False
    if value == "0":
        return True
    if not _warned_opt_out:
        _warned_opt_out = True
        warnings.warn(f"c4jax: {OPT_OUT} must be 0 (XLA's own settings) or 1 (c4jax's, the default); "
                      f"got {value!r}: c4jax's settings are kept", stacklevel=3)
    return False


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
    """Adds the loop threshold, the CPU devices and LLVM's options to
    ``XLA_FLAGS`` (see the module docstring); called once by ``import
    c4jax``."""
    global _status
    flags = os.environ.get("XLA_FLAGS", "")
    if opted_out():
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
        if not accelerator_plugin_installed():
            os.environ["XLA_FLAGS"] = flags_with_llvm_option(os.environ["XLA_FLAGS"])


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
            f"XLA_FLAGS='{_EXTRA}{THRESHOLD_KEY}={LOOP_BYTES},{LLVM_NO_LSR} {DEVICES_KEY}={devices}' "
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
