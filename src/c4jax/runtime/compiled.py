"""Compiled programs: where they run, how they are compiled, and the set a
process keeps.

* **Devices.**  A batch of games runs on a one-axis mesh (``"games"``) of
  one platform's local devices (:func:`game_mesh`), every device running
  the program on its block of the games (:func:`over_games`, with
  :func:`jax.shard_map`; no communication between devices).
* **Compile and keep.**  :func:`trace_program` traces a function on one
  device or over a mesh; the search's stages and the arena's and
  self-play's game loops (:func:`compile_game_loop`) are compiled from it
  ahead of time and kept by :func:`compiled`, a least-recently-used set of
  at most :data:`MAX_COMPILED` programs per process.  XLA's CPU backend
  maps the code of every compiled program into the process and frees it
  only when the executable is dropped, so a process that compiles without
  bound passes Linux's ``vm.max_map_count`` and dies in LLVM; dropping an
  entry drops its jit object, JAX's caches keyed on it and the executable
  (:func:`check_mappings` warns near the limit).
* **On disk.**  While JAX's persistent compilation cache is on
  (:mod:`c4jax.runtime.cache`), :func:`load_or_export` keeps each search's
  traced program (``jax.export``) in its ``c4jax-programs`` subfolder, keyed
  by everything the program depends on (c4jax's source, the versions of
  jax, jaxlib and mctx, options, shapes, the game, the backend and the JAX
  settings that change tracing), so a warm start neither traces nor
  compiles.  Entries are written whole; one that cannot be read or was
  written for another key is traced again.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import importlib.util
import inspect
import pathlib
import pickle
import threading
import time
import warnings
from typing import Callable

import jax
import numpy as np
from jax import export
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from c4jax.files import write_whole
from c4jax.runtime.xla_flags import compiler_options
from c4jax.validation import check_int, env_int

__all__ = [
    "GAMES", "GAMES_AXIS", "MAX_COMPILED", "check_mappings", "clear", "compile_game_loop", "compiled", "directory",
    "game_digest", "game_mesh", "load_or_export", "max_map_count", "memory_mappings", "over_games",
    "search_platform", "stats", "trace_program", "whole_on",
]


GAMES_AXIS = "games"


def search_platform() -> str:
    """The platform c4jax's programs being compiled or traced run on: that
    of ``jax.default_device`` where set (the caller's choice, the CLI's
    ``--device``), else JAX's default backend."""
    device = jax.config.jax_default_device
    if device is None:
        return jax.default_backend()
    return device if isinstance(device, str) else device.platform


def game_mesh(devices: int | None = None, platform: str | None = None) -> Mesh:
    """A one-axis mesh (``"games"``) over this process's first ``devices``
    local devices of ``platform`` (default: :func:`search_platform`'s;
    all of them).

    Raises:
      ValueError: ``devices`` is not an int in ``1..len(jax.local_devices())``.
    """
    local = jax.local_devices(backend=platform or search_platform())
    if devices is None:
        devices = len(local)
    s = "s" if len(local) > 1 else ""
    devices = check_int("devices", devices, 1, len(local),
                        note=f"(this process has {len(local)} {local[0].platform.upper()} device{s})")
    return Mesh(np.array(local[:devices]), (GAMES_AXIS,))


GAMES = PartitionSpec(GAMES_AXIS)


def over_games(fn: Callable, mesh: Mesh, in_specs, out_specs) -> Callable:
    """``fn`` run by every device of ``mesh`` on its block of the games
    (:func:`jax.shard_map`); ``in_specs``/``out_specs`` as shard_map's, with
    ``GAMES`` (``PartitionSpec("games")``) for a leading batch axis of games
    and ``PartitionSpec()`` for a value every device gets whole."""
    return jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)


def trace_program(fn: Callable, args: tuple, mesh: Mesh | None = None, in_specs: tuple = (), out_specs=GAMES,
                  donate: tuple = ()) -> "jax.stages.Traced":
    """``fn`` jitted and traced at ``args`` (arrays or
    ``jax.ShapeDtypeStruct`` s), donating the arguments ``donate``: on one
    device, or with ``mesh`` by every device on its block of the games
    (:func:`over_games` with ``in_specs`` per argument and ``out_specs``,
    inputs and outputs sharded so)."""
    if mesh is None:
        return jax.jit(fn, donate_argnums=donate).trace(*args)
    jitted = jax.jit(over_games(fn, mesh, in_specs, out_specs),
                     in_shardings=tuple(NamedSharding(mesh, s) for s in in_specs),
                     out_shardings=jax.tree.map(lambda s: NamedSharding(mesh, s), out_specs,
                                                is_leaf=lambda s: isinstance(s, PartitionSpec)),
                     donate_argnums=donate)
    return jitted.trace(*args)


def compile_game_loop(signature: tuple, make: Callable, mesh: Mesh, keys, envs,
                      params=None) -> tuple[Callable, Callable, float]:
    """A loop over a batch of games sharded over ``mesh``, compiled ahead of
    time once per ``signature`` and kept by :func:`compiled`.

    Args:
      signature: a hashable key of everything the loop's program depends on
        besides the shapes of ``keys`` and ``envs`` and the mesh's devices
        (players, settings, the game).
      make: ``() -> (start, step)``, called on a miss: ``start(keys, envs,
        params) -> state`` and ``step(state, params) -> (state, stats)``,
        both on one device's block, every leaf of ``state`` and ``stats``
        with a leading axis of games (per-device counters as ``[1]``).
      mesh: :func:`game_mesh`'s.
      keys: ``[R]`` PRNG keys; envs: an ``Env`` batched ``[R]``, ``R`` a
        multiple of the mesh's size.
      params: a pytree of arrays every device gets whole (the players'
        weights), an argument of both programs: new values of the same
        shapes and dtypes compile nothing.

    Returns:
      ``(start, step, compile_seconds)``, 0 seconds when it was kept:
      ``start(keys, envs, params)``, ``step(state, params)``, ``params``
      placed by :func:`whole_on`.  The state stays on its devices between
      calls (``step`` donates it).

    Raises:
      ValueError: ``R`` is not a multiple of the mesh's devices.
    """
    rows = int(np.shape(keys)[0])
    if rows % mesh.size:
        raise ValueError(f"the batch of {rows} games is not a multiple of the mesh's {mesh.size} devices")
    seconds = 0.0

    def build():
        nonlocal seconds
        start, step = make()
        options = compiler_options(search_platform())
        t0 = time.perf_counter()
        whole = PartitionSpec()
        start_c = trace_program(start, (keys, envs, params), mesh, (GAMES, GAMES, whole)).lower().compile(
            compiler_options=options)
        step_c = trace_program(step, (start_c.out_info, params), mesh, (GAMES, whole), (GAMES, GAMES),
                               donate=(0,)).lower().compile(compiler_options=options)
        seconds = time.perf_counter() - t0
        return start_c, step_c

    shapes = jax.tree.map(lambda x: (np.shape(x), str(jax.numpy.result_type(x))), (keys, envs, params))
    start_c, step_c = compiled(
        ("game loop", signature, str(jax.tree.structure((keys, envs, params))), tuple(jax.tree.leaves(shapes)),
         tuple((d.platform, d.id) for d in mesh.devices.flat)),
        build,
    )
    return start_c, step_c, seconds


def whole_on(mesh: Mesh, params):
    """``params`` placed whole on every device of ``mesh`` (as
    :func:`compile_game_loop`'s programs take them)."""
    return jax.device_put(params, NamedSharding(mesh, PartitionSpec()))


def max_compiled() -> int:
    """``C4JAX_MAX_COMPILED`` (an int >= 1; a bad value warns), else 16."""
    return env_int("C4JAX_MAX_COMPILED", 1, default=16, warn=True)


MAX_COMPILED = max_compiled()  # the programs a process keeps

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


SUBFOLDER = "c4jax-programs"


def directory() -> pathlib.Path | None:
    """Where traced searches are kept: a subfolder of JAX's persistent
    compilation cache folder; ``None`` while that cache is off (or without
    the ``flatbuffers`` package, which ``jax.export`` serializes with)."""
    folder = jax.config.jax_compilation_cache_dir
    if not folder or importlib.util.find_spec("flatbuffers") is None:
        return None
    return pathlib.Path(folder) / SUBFOLDER


@functools.lru_cache(maxsize=1)
def _versions() -> str:
    """The package's source digest and the versions its programs depend on."""
    import importlib.metadata

    import mctx

    root = pathlib.Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return "|".join((digest.hexdigest(), jax.__version__, importlib.metadata.version("jaxlib"), mctx.__version__))


@functools.lru_cache(maxsize=None)
def game_digest(cls: type) -> str | None:
    """What a kept search of a game of class ``cls`` depends on besides
    c4jax: ``"c4jax"`` for c4jax's own games (their source is in every key),
    else a digest of the file that defines the class, so that editing a game
    of your own traces its searches again; ``None`` where that file cannot be
    read (a class typed into a notebook): such a game's searches are not
    kept."""
    if cls.__module__.split(".")[0] == "c4jax":
        return "c4jax"
    try:
        return hashlib.sha256(pathlib.Path(inspect.getsourcefile(cls)).read_bytes()).hexdigest()
    except (TypeError, OSError):
        return None


def _key(parts: tuple, leaves: list) -> str:
    config = (jax.config.jax_enable_x64, jax.config.jax_threefry_partitionable, jax.config.jax_default_prng_impl,
              search_platform())
    avals = [(str(getattr(x, "dtype", type(x))), tuple(getattr(x, "shape", ()))) for x in leaves]
    text = repr((_versions(), config, avals, parts))
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def load_or_export(flat_fn: Callable, leaves: list, parts: tuple):
    """``(exported, out_tree)`` for ``flat_fn(*leaves) -> (out_leaves,
    out_tree)`` traced at ``leaves``: loaded from :func:`directory` when an
    entry of this key is there, else traced, exported and written there.

    Args:
      flat_fn: takes the flat argument leaves; returns ``(out_leaves,
        out_tree)``, the outputs flattened.
      leaves: the argument leaves (arrays).
      parts: what else the program depends on (options, game, static
        arguments, the argument tree), as a ``repr``-able tuple.
    """
    folder = directory()
    key = _key(parts, leaves)
    path = None if folder is None else folder / f"{key}.exported"
    if path is not None and path.is_file():
        try:
            stored, blob, out_tree = pickle.loads(path.read_bytes())
            if stored == key:  # an entry written for another program is traced again
                return export.deserialize(blob), out_tree
        except Exception:  # noqa: BLE001 - a damaged or foreign entry: trace again
            pass
    box: dict = {}

    def traced(*xs):
        outs, box["out_tree"] = flat_fn(*xs)
        return outs

    exported = export.export(jax.jit(traced))(*leaves)
    if path is not None:
        try:  # a folder that cannot be written costs only the saving
            path.parent.mkdir(parents=True, exist_ok=True)
            write_whole(path, pickle.dumps((key, exported.serialize(), box["out_tree"])))
        except OSError:
            pass
    return exported, box["out_tree"]

