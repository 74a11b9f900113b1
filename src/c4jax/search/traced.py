"""The search traced into a caller's program (inside ``jax.jit``, ``vmap``).

Three rules make a call inside the caller's program run as a direct call does:

* **Split over the CPU devices.**  A CPU batch that a direct call would split
  (:func:`c4jax.search.layout.cpu_mesh`) is split the same way inside the
  caller's program, with :func:`jax.shard_map` over the same devices: every
  device searches its slice of the games, and the output is sharded over
  them (``NamedSharding(mesh, PartitionSpec("games"))``).  The program stays
  on one device where the caller chose the placement: inside a mesh of the
  caller's (``jax.sharding.set_mesh``, a ``shard_map``) or a
  ``jax.default_device`` context.
* **vmap is the batched search** (:func:`jax.custom_batching.custom_vmap`):
  ``vmap`` over the search of ``B`` games (one game: ``B = 1``) runs the
  search of all ``V x B`` games as one batch, each game with its own key, so
  its trees are those of the batch called with those keys.  Weights
  (``params``) batched by the ``vmap`` are refused.
* **Non-finite evaluations are reported** by a host callback (one
  ``RuntimeWarning`` per call whose search met any), when a ``value_fn`` or
  ``prior_fn`` is given.
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from c4jax.devices import GAMES, over_games, round_up
from c4jax.search import layout
from c4jax.search.options import SearchOptions
from c4jax.search.output import SearchOutput
from c4jax.search.stages import traced_search

__all__ = ["callers_placement", "non_finite_message", "traced_batch_search"]


def callers_placement() -> bool:
    """Whether the caller chose where its program runs: a mesh context of
    its own (``jax.sharding.set_mesh``, inside a ``shard_map``) or a device
    named by ``jax.default_device``."""
    if not jax.sharding.get_abstract_mesh().empty:
        return True
    return layout.pinned_device() is not None


def non_finite_message(count: int) -> str:
    return (f"{count:,} evaluations of your value_fn/prior_fn gave NaN or infinity; the search counted a NaN "
            "value as 0 (a draw), clipped infinite values to [-1, 1], a NaN logit as 0 and infinite ones as "
            "+-1e30 (SearchOutput.non_finite counts them per game)")


def _warn_non_finite(count) -> None:
    count = int(count)
    if count:
        warnings.warn(non_finite_message(count), RuntimeWarning, stacklevel=2)


def _split_search(keys, envs, tree, params, *, opts: SearchOptions, num_simulations: int,
                  gumbel_simulations: int | None, continuing: bool) -> SearchOutput:
    """The batch's search, split over the CPU devices where a direct call
    would split it (see the module docstring)."""
    games = keys.shape[0]
    search = functools.partial(traced_search, opts=opts, gumbel_simulations=gumbel_simulations,
                               continuing=continuing)
    count = jnp.int32(num_simulations)
    mesh = None if callers_placement() else layout.cpu_mesh(games)
    if mesh is None:
        out = search(keys, envs, tree, count, params)
    else:
        rows = round_up(games, mesh)
        keys, envs, tree = layout.pad_rows((keys, envs, tree), rows)
        over = over_games(search, mesh, (GAMES, GAMES, GAMES, PartitionSpec(), PartitionSpec()), GAMES)
        out = over(keys, envs, tree, count, params)
        if rows != games:
            out = jax.tree.map(lambda x: x[:games], out)
    if opts.value_fn is not None or opts.prior_fn is not None:
        jax.debug.callback(_warn_non_finite, jnp.sum(out.non_finite))
    return out


def _vmapped_search(static, axis_size, in_batched, keys, envs, tree, params):
    """custom_vmap's rule: the ``[V, B]`` games as one batch of ``V * B``."""
    if any(jax.tree.leaves(in_batched[3])):
        raise ValueError(
            "params must be the same for every game of a vmapped search (vmap with in_axes=None for params); "
            "to search with several networks, call the search once per network")

    def rows(x, batched):
        x = x if batched else jnp.broadcast_to(x, (axis_size,) + x.shape)
        return x.reshape((axis_size * x.shape[1],) + x.shape[2:])

    keys, envs, tree = (jax.tree.map(rows, a, b) for a, b in zip((keys, envs, tree), in_batched[:3]))
    out = _search(static)(keys, envs, tree, params)
    out = jax.tree.map(lambda x: x.reshape((axis_size, -1) + x.shape[1:]), out)
    return out, jax.tree.map(lambda _: True, out)


@functools.lru_cache(maxsize=64)
def _search(static: tuple):
    opts, num_simulations, gumbel_simulations, continuing = static
    fn = jax.custom_batching.custom_vmap(functools.partial(
        _split_search, opts=opts, num_simulations=num_simulations, gumbel_simulations=gumbel_simulations,
        continuing=continuing))
    fn.def_vmap(functools.partial(_vmapped_search, static))
    return fn


def _under_vmap(args) -> bool:
    """Whether a ``jax.vmap`` around the call maps a leaf of ``args``: a
    probe (an identity with a batching rule) whose rule runs only then."""
    mapped = []

    def rule(axis_size, in_batched, *xs):
        mapped.append(True)
        return list(xs), list(in_batched)

    probe = jax.custom_batching.custom_vmap(lambda *xs: list(xs))
    probe.def_vmap(rule)
    leaves = jax.tree.leaves(args)
    if leaves:
        probe(*leaves)  # its output is unused: nothing of it stays in the program
    return bool(mapped)


def traced_batch_search(keys, envs, tree, params, opts: SearchOptions, num_simulations: int,
                        gumbel_simulations: int | None, continuing: bool) -> SearchOutput:
    """The search of ``[B]`` games traced into the caller's program
    (:func:`c4jax.search.stages.traced_search` under the rules of the module
    docstring).  The batching rule is attached only under a ``vmap``
    (the search traced once, not twice, elsewhere)."""
    static = (opts, num_simulations, gumbel_simulations, continuing)
    if _under_vmap((keys, envs, tree, params)):
        return _search(static)(keys, envs, tree, params)
    return _split_search(keys, envs, tree, params, opts=opts, num_simulations=num_simulations,
                         gumbel_simulations=gumbel_simulations, continuing=continuing)
