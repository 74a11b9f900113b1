"""How a batch of games is laid out for the search: split over the host's
CPU devices, and in blocks of games within each device.

A search's games are independent (game ``b`` depends only on its key), so
the layout changes the speed of a batch, never its trees:

* **Devices.** XLA runs one CPU device's program on about one core.  A
  batch run outside a caller's ``jit`` is split over the CPU devices
  (:func:`cpu_mesh`; ``import c4jax`` makes one per core,
  :mod:`c4jax.xla_flags`) with :func:`jax.shard_map`, every device
  searching its own slice of the games.  GPU and TPU batches run on the
  default device as one program.
* **Blocks.** Within a device the games are searched ``BLOCK`` at a time,
  one block after another (:func:`in_blocks`, a ``lax.map`` outside the loop
  over simulations): a block's trees stay in the CPU's caches, while a
  batch of thousands of trees at once does not.  Every simulation step is
  vectorised over its block's games.
"""

from __future__ import annotations

from typing import Callable

import jax
import numpy as np
from jax.sharding import Mesh

from c4jax.devices import GAMES_AXIS

__all__ = ["BLOCK", "MIN_GAMES_PER_DEVICE", "block_size", "cpu_mesh", "in_blocks"]

# Games searched at once on one CPU device (benchmarks/README.md, "Batch
# layout").  GPU and TPU: the whole batch at once.
BLOCK = 32
# A batch is split over CPU devices only if each gets at least this many
# games: a smaller batch costs more in the split than it gains.
MIN_GAMES_PER_DEVICE = 8


def block_size(games: int, platform: str) -> int:
    """The games a block holds on ``platform``: on the CPU the largest
    divisor of ``games`` that is at most ``BLOCK``, elsewhere ``games``."""
    if platform != "cpu" or games <= BLOCK:
        return games
    return max(d for d in range(1, BLOCK + 1) if games % d == 0)


def in_blocks(fn: Callable, games: int, platform: str) -> Callable:
    """``fn(*args)`` (every leaf of ``args`` and of the result with a leading
    axis of ``games``) run one block of :func:`block_size` games after
    another; ``fn`` itself when one block holds them all."""
    block = block_size(games, platform)
    if block == games:
        return fn

    def run(*args):
        def split(x):
            return x.reshape((games // block, block) + x.shape[1:])

        out = jax.lax.map(lambda a: fn(*a), jax.tree.map(split, args))
        return jax.tree.map(lambda x: x.reshape((games,) + x.shape[2:]), out)

    return run


def cpu_mesh(games: int) -> Mesh | None:
    """A one-axis mesh (``"games"``) over the CPU devices that a batch of
    ``games`` is split over, or ``None`` to run it on the default device: the
    default backend is not the CPU, there is one CPU device, or fewer than
    ``MIN_GAMES_PER_DEVICE`` games per device.  The devices used are the
    most that divide ``games`` evenly."""
    if games < 2 * MIN_GAMES_PER_DEVICE or jax.default_backend() != "cpu":
        return None
    devices = jax.local_devices(backend="cpu")
    usable = [k for k in range(2, len(devices) + 1) if games % k == 0 and games // k >= MIN_GAMES_PER_DEVICE]
    if not usable:
        return None
    return Mesh(np.array(devices[: max(usable)]), (GAMES_AXIS,))
