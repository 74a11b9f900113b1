"""How a batch of games is laid out for the search: split over the host's
CPU devices, and in blocks of games within each device.

A search's games are independent (game ``b`` depends only on its key), so
the layout changes the speed of a batch, never its trees:

* **Devices.** XLA runs one CPU device's program on about one core.  A
  batch is split over the CPU devices (:func:`cpu_mesh`; ``import c4jax``
  makes one per core, :mod:`c4jax.xla_flags`) with :func:`jax.shard_map`,
  every device searching its own slice of the games, called directly or
  inside a caller's ``jit`` (:mod:`c4jax.search.traced`); its outputs stay
  sharded over them.  A batch whose arrays the caller placed on one device
  stays there, GPU and TPU batches run on the default device as one
  program, and one game on a GPU or TPU host runs on its CPU
  (:func:`one_game_device`).
* **Blocks.** Within a CPU device the games are searched ``BLOCK``
  (:data:`c4jax.xla_flags.CPU_BLOCK`, 1) at a time, one block after
  another (:func:`in_blocks`, a loop outside the loop over simulations
  that reads each block's rows in place and writes a reused tree back into
  its own buffer).  A block of one game runs the one-game program, whose
  loop over simulations XLA compiles into one kernel; a block of several
  games (GPU and TPU: the whole batch) runs every simulation step
  vectorised over them, with gathers over the batch, and a loop that ends
  with its longest member (a rollout, a descent), which on the CPU costs
  more per game than searching the games one by one.
"""

from __future__ import annotations

import contextlib
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from c4jax.devices import GAMES_AXIS, search_platform
from c4jax.xla_flags import CPU_BLOCK as BLOCK
from c4jax.xla_flags import MIN_GAMES_PER_DEVICE

__all__ = ["BLOCK", "MIN_GAMES_PER_DEVICE", "block_size", "cpu_mesh", "in_blocks", "one_game_device",
           "one_game_platform", "pad_rows", "search_platform"]



def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def block_size(games: int, platform: str) -> int:
    """The games a block holds on ``platform``: on the CPU the batch in as
    few blocks of at most ``BLOCK`` as it takes, of equal size (the last
    padded), elsewhere ``games``."""
    if platform != "cpu" or games <= BLOCK:
        return games
    return _cdiv(games, _cdiv(games, BLOCK))


def pad_rows(tree, rows: int):
    """Every leaf of ``tree`` (a leading axis of ``n <= rows`` games) with its
    last row repeated up to ``rows`` rows: padding games, searched and
    dropped, that change no other row."""
    def pad(x):
        n = x.shape[0]
        return x if n == rows else jnp.concatenate([x, jnp.repeat(x[-1:], rows - n, axis=0)])

    return jax.tree.map(pad, tree)


def in_blocks(fn: Callable, games: int, platform: str, inout: tuple[int, int] | None = None) -> Callable:
    """``fn(*args)`` (every leaf of ``args`` and of the result with a leading
    axis of ``games``) run one block of :func:`block_size` games after
    another, the batch padded to whole blocks; ``fn`` itself when one block
    holds them all.  Each block reads its rows of the arguments (dynamic
    slices) and writes its rows of the result into batch-sized buffers.
    ``inout = (i, j)``: ``fn`` returns a tuple whose entry ``j`` is argument
    ``i`` updated (a search's tree), written back into that argument's own
    buffer, in place (with the argument donated, no batch-sized copy)."""
    block = block_size(games, platform)
    if block == games:
        return fn
    padded = _cdiv(games, block) * block

    def run(*args):
        args = pad_rows(args, padded)

        def rows(x, b):
            return jax.lax.dynamic_slice_in_dim(x, b * block, block)

        def one_block(carried, b):
            block_args = [jax.tree.map(lambda x: rows(x, b), carried if inout is not None and k == inout[0] else a)
                          for k, a in enumerate(args)]
            result = fn(*block_args)
            if inout is None:
                return carried, result
            carried = jax.tree.map(lambda x, v: jax.lax.dynamic_update_slice_in_dim(x, v, b * block, 0),
                                   carried, result[inout[1]])
            return carried, tuple(None if k == inout[1] else r for k, r in enumerate(result))

        carried = None if inout is None else args[inout[0]]
        carried, results = jax.lax.scan(one_block, carried, jnp.arange(padded // block))
        results = jax.tree.map(lambda x: x.reshape((padded,) + x.shape[2:]), results)
        if inout is not None:
            results = tuple(carried if k == inout[1] else r for k, r in enumerate(results))
        return jax.tree.map(lambda x: x[:games], results)

    return run


ACCELERATORS = ("gpu", "tpu", "cuda", "rocm")


def one_game_platform(games: int, platform: str) -> str | None:
    """Where a search of ``games`` games runs when the caller chose no
    placement, on a host whose default backend is ``platform``: ``"cpu"``
    for one game on a GPU or TPU host (an accelerator pays a fixed cost per
    loop step of a simulation that only a wide batch spreads), else
    ``None`` (the default backend)."""
    return "cpu" if games == 1 and platform in ACCELERATORS else None


def one_game_device(games: int, arrays=()):
    """:func:`one_game_platform`'s device (the first CPU device) for a
    search of ``games`` games whose ``arrays`` nobody placed (no
    ``jax.default_device``, no array committed to a device), else ``None``."""
    if jax.config.jax_default_device is not None or _committed(arrays):
        return None
    platform = one_game_platform(games, jax.default_backend())
    return None if platform is None else jax.local_devices(backend=platform)[0]


def pinned_device():
    """The device ``jax.default_device`` names, where it names one (not a
    platform such as ``"cpu"``), else ``None``."""
    device = jax.config.jax_default_device
    return None if device is None or isinstance(device, str) else device


def on_device(device):
    """A context that runs JAX's computations on ``device``
    (``jax.default_device``); none for ``None``."""
    return contextlib.nullcontext() if device is None else jax.default_device(device)


def _committed(arrays) -> list:
    """The leaves of ``arrays`` that are JAX arrays committed to devices
    (``jax.device_put``; a tracer is not: the caller's program decides its
    placement)."""
    return [x for x in jax.tree.leaves(arrays)
            if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer) and x.committed]


def _on_one_device(arrays) -> bool:
    """Whether a leaf of ``arrays`` is a JAX array the caller placed on one
    device (``jax.device_put``): the search then stays there."""
    return any(len(x.sharding.device_set) == 1 for x in _committed(arrays))


def cpu_mesh(games: int, arrays=()) -> Mesh | None:
    """A one-axis mesh (``"games"``) over the CPU devices that a batch of
    ``games`` is split over (padded to a multiple of them), or ``None`` to
    run it on one device: the default backend is not the CPU, there is one
    CPU device, fewer than ``MIN_GAMES_PER_DEVICE`` games per device, a
    leaf of ``arrays`` (the search's inputs) was placed on one device, or
    the caller pinned a device (:func:`pinned_device`).  The platform is
    :func:`search_platform`'s."""
    if (games < 2 * MIN_GAMES_PER_DEVICE or search_platform() != "cpu" or _on_one_device(arrays)
            or pinned_device() is not None):
        return None
    devices = jax.local_devices(backend="cpu")
    k = min(len(devices), games // MIN_GAMES_PER_DEVICE)
    return None if k < 2 else Mesh(np.array(devices[:k]), (GAMES_AXIS,))
