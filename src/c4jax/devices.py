"""Games spread over devices and hosts: the batch of games sharded over a
process's local devices, and JAX's multi-host runtime.

* :func:`game_mesh` is a one-axis :class:`jax.sharding.Mesh` (axis
  ``"games"``) over this process's first ``K`` local devices;
  :func:`over_games` runs a function of a batch of games on it with
  :func:`jax.shard_map`: every device runs the function on its own block of
  the batch (``[B / K]`` games) with no communication between devices and no
  Python loop over them.  Self-play and the arena play their games this way.
  Every game's moves depend only on its own key, so the games do not depend
  on how many devices play them (tested on 1, 2 and 4 forced CPU devices).
* :func:`initialize_distributed` starts :func:`jax.distributed.initialize`
  from flags or the usual environment variables; each process then plays
  its share of the games on its own local devices (:func:`process_share`).
"""

from __future__ import annotations

import os
import re
import time
from typing import Callable, Sequence

import jax
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from c4jax.validation import check_int
from c4jax.xla_flags import compiler_options

__all__ = [
    "GAMES_AXIS", "search_platform", "game_mesh", "over_games", "compile_game_loop", "whole_on", "round_up",
    "padded_games", "initialize_distributed", "process_share",
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


def game_mesh(devices: int | None = None) -> Mesh:
    """A one-axis mesh (``"games"``) over this process's first ``devices``
    local devices of :func:`search_platform` (default: all of them).

    Raises:
      ValueError: ``devices`` is not an int in ``1..len(jax.local_devices())``.
    """
    local = jax.local_devices(backend=search_platform())
    if devices is None:
        devices = len(local)
    s = "s" if len(local) > 1 else ""
    devices = check_int("devices", devices, 1, len(local),
                        note=f"(this process has {len(local)} {local[0].platform.upper()} device{s})")
    return Mesh(np.array(local[:devices]), (GAMES_AXIS,))


def round_up(n: int, mesh: Mesh) -> int:
    """The smallest multiple of the mesh's size that is ``>= n``."""
    k = mesh.size
    return -(-n // k) * k


def padded_games(env, live):
    """A batch of copies of one position, padded with finished games.

    Args:
      env: an unbatched :class:`~c4jax.env.Env`.
      live: bool ``[R]`` (NumPy or JAX): which rows play.

    Returns:
      the ``Env`` batched ``[R]``: row ``r`` is ``env`` where ``live[r]``,
      else ``env`` marked finished (``done`` true), a row that never moves
      (stepping a finished game changes nothing) and fills a device's block
      of a fixed shape.

    Raises:
      ValueError: ``env`` is batched.
    """
    import dataclasses

    import jax.numpy as jnp

    if env.batch_shape:
        raise ValueError(f"env must be one position (unbatched); got batch shape {env.batch_shape}")
    live = jnp.asarray(live, bool)
    dead = dataclasses.replace(env, done=jnp.bool_(True))
    return jax.tree.map(lambda x, d: jnp.where(live.reshape(live.shape + (1,) * x.ndim), x[None], d[None]), env, dead)


def over_games(fn: Callable, mesh: Mesh, in_specs, out_specs) -> Callable:
    """``fn`` run by every device of ``mesh`` on its block of the games
    (:func:`jax.shard_map`); ``in_specs``/``out_specs`` as shard_map's, with
    ``GAMES`` (``PartitionSpec("games")``) for a leading batch axis of games
    and ``PartitionSpec()`` for a value every device gets whole."""
    return jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)


GAMES = PartitionSpec(GAMES_AXIS)


def compile_game_loop(signature: tuple, make: Callable, mesh: Mesh, keys, envs,
                      params=None) -> tuple[Callable, Callable, float]:
    """A loop over a batch of games sharded over ``mesh``, compiled ahead of
    time once per ``signature`` and kept among c4jax's compiled programs
    (:mod:`c4jax.search.compiled`: at most ``C4JAX_MAX_COMPILED``, least
    recently used dropped; ``c4jax.clear_compiled()`` drops them).

    Args:
      signature: a hashable key of everything the loop's program depends on
        besides the shapes of ``keys`` and ``envs`` and the mesh's devices
        (players, settings, the game).
      make: ``() -> (start, step)``, called on a miss: ``start(keys, envs,
        params) -> state`` and ``step(state, params) -> (state, stats)``,
        both on one device's block, every leaf of ``state`` and ``stats``
        with a leading axis of games (per-device counters as ``[1]``).
      mesh: :func:`game_mesh`'s.
      keys: ``[R]`` PRNG keys; envs: an :class:`~c4jax.env.Env` batched ``[R]``,
        ``R`` a multiple of the mesh's size.
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
    from jax.sharding import NamedSharding

    from c4jax.search import compiled  # here: c4jax.search imports this module

    rows = int(np.shape(keys)[0])
    if rows % mesh.size:
        raise ValueError(f"the batch of {rows} games is not a multiple of the mesh's {mesh.size} devices (round_up)")
    seconds = 0.0

    def build():
        nonlocal seconds
        start, step = make()
        sharded, whole = NamedSharding(mesh, GAMES), NamedSharding(mesh, PartitionSpec())
        options = compiler_options(search_platform())
        t0 = time.perf_counter()
        start_c = (jax.jit(over_games(start, mesh, (GAMES, GAMES, PartitionSpec()), GAMES),
                           in_shardings=(sharded, sharded, whole), out_shardings=sharded)
                   .lower(keys, envs, params).compile(compiler_options=options))
        step_c = (
            jax.jit(over_games(step, mesh, (GAMES, PartitionSpec()), (GAMES, GAMES)), donate_argnums=0,
                    in_shardings=(sharded, whole), out_shardings=(sharded, sharded))
            .lower(start_c.out_info, params)
            .compile(compiler_options=options)
        )
        seconds = time.perf_counter() - t0
        return start_c, step_c

    shapes = jax.tree.map(lambda x: (np.shape(x), str(jax.numpy.result_type(x))), (keys, envs, params))
    start_c, step_c = compiled.compiled(
        ("game loop", signature, str(jax.tree.structure((keys, envs, params))), tuple(jax.tree.leaves(shapes)),
         tuple((d.platform, d.id) for d in mesh.devices.flat)),
        build,
    )
    return start_c, step_c, seconds


def whole_on(mesh: Mesh, params):
    """``params`` placed whole on every device of ``mesh`` (as
    :func:`compile_game_loop`'s programs take them)."""
    from jax.sharding import NamedSharding

    return jax.device_put(params, NamedSharding(mesh, PartitionSpec()))


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    # ASCII digits only: int() would also take spaces, '+', '_' and Unicode digits.
    if not (value.isascii() and value.isdigit() and len(value) <= 9):
        raise ValueError(f"{name} must be an integer >= 0 in ASCII digits; got {value!r}")
    return int(value)


def initialize_distributed(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    on_join: Callable[[str], None] | None = None,
) -> tuple[int, int]:
    """Joins a multi-process run with :func:`jax.distributed.initialize`
    (before anything else uses JAX), or does nothing for one process.

    Each value comes from its argument, else from the environment variable
    ``JAX_COORDINATOR_ADDRESS`` (``host:port`` of process 0),
    ``JAX_NUM_PROCESSES`` or ``JAX_PROCESS_ID``.  With none of them set the
    run is one process, unless a cluster JAX detects by itself (SLURM, Open
    MPI, Cloud TPU) is named by ``JAX_COORDINATOR_ADDRESS=auto``.

    Returns:
      ``(process_index, process_count)``.
    Raises:
      ValueError: some but not all of the three given, a count below 1, a
        process id outside ``0..num_processes - 1``, or an address that is
        not ``HOST:PORT``.
    """
    coordinator = coordinator or os.environ.get("JAX_COORDINATOR_ADDRESS") or None
    num_processes = num_processes if num_processes is not None else _env_int("JAX_NUM_PROCESSES")
    process_id = process_id if process_id is not None else _env_int("JAX_PROCESS_ID")
    if coordinator == "auto":
        jax.distributed.initialize()
        return jax.process_index(), jax.process_count()
    given = [x is not None for x in (coordinator, num_processes, process_id)]
    if not any(given):
        return 0, 1
    if not all(given):
        raise ValueError(
            "a multi-process run needs the coordinator address, the number of processes and this "
            "process's id (--coordinator HOST:PORT --num-processes N --process-id I, or "
            "JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID)"
        )
    if num_processes < 1:
        raise ValueError(f"the number of processes must be >= 1; got {num_processes}")
    if not 0 <= process_id < num_processes:
        raise ValueError(f"the process id must be in 0..{num_processes - 1}; got {process_id}")
    if num_processes == 1:
        return 0, 1
    host, _, port = coordinator.rpartition(":")
    if not host or not re.fullmatch("[0-9]{1,5}", port) or not 1 <= int(port) <= 65535:
        raise ValueError(
            f"the coordinator address must be HOST:PORT with a port in 1..65535 (process 0's host); got {coordinator!r}"
        )
    if on_join is not None:
        on_join(
            f"process {process_id} of {num_processes}: joining the run at {coordinator} (waits for every "
            "process to start, each with its own --process-id)"
        )
    jax.distributed.initialize(coordinator, num_processes, process_id)
    return jax.process_index(), jax.process_count()


def process_share(indices: Sequence[int], process_index: int, process_count: int) -> list[int]:
    """The games of ``indices`` that process ``process_index`` of
    ``process_count`` plays: those with ``g % process_count ==
    process_index`` (each game exactly once over all processes, whatever
    each process has already played; shares of ``range(G)`` within one game
    of each other)."""
    return [g for g in indices if g % process_count == process_index]
