"""The search at the Python boundary: :func:`run_mcts` checks its
arguments, batches one game, runs the batch's search
(:func:`c4jax.search.programs.search_batch`: compiled programs, or traced
into a caller's ``jax.jit``) and returns its output.

Capacity: the tree holds ``capacity`` nodes (default: the budget's bucket
+ 1, :func:`simulation_bucket`; a reused tree keeps its own).  When it is
full, a simulation that would expand a node evaluates the leaf all the same
and backs it up through the unexpanded edge: that edge's visit count and
value average grow (it acts as a leaf that collects rollouts), nothing is
dropped and nothing is written to another node.  The root's visit count
always grows by exactly ``num_simulations``.

Shapes: ``B`` is the batch size, ``A`` the number of actions, ``N`` the node
capacity.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import mctx
import numpy as np

from c4jax.games.env import Env, check_env, check_fields
from c4jax.keys import as_key, keys_for_games
from c4jax.search.options import SearchOptions, options_from_kwargs
from c4jax.search.output import SearchOutput
from c4jax.search.programs import is_traced, non_finite_message, search_batch
from c4jax.search.tree import TreeExtraData, check_trees_fit
from c4jax.validation import check_int

__all__ = ["run_mcts", "MAX_SIMULATIONS"]

# Node indices are int32 and a tree has num_simulations + 1 nodes.
MAX_SIMULATIONS = 2**30
MIN_BUCKET = 64


def simulation_bucket(num_simulations: int) -> int:
    """The simulations a fresh tree has room for: ``num_simulations``
    rounded up to a power of two, at least 64.  Every budget of a bucket
    runs the same compiled search (the count is an argument of the program,
    the tree's capacity ``bucket + 1`` its shape); the tree never fills, so
    the search is the one of capacity ``num_simulations + 1``."""
    return max(MIN_BUCKET, 1 << (int(num_simulations) - 1).bit_length())


def run_mcts(
    key: jax.Array,
    env: Env,
    num_simulations: int,
    *,
    tree: mctx.Tree | None = None,
    params: Any = None,
    **options: Any,
) -> SearchOutput:
    """Searches one game or a batch of games with MCTS and proposes a move.

    Args:
      key: a PRNG key (consumed) or ``[B]`` keys, one per game
        (:func:`c4jax.keys.as_key`); with one key, game ``b`` uses
        ``jax.random.split(key, B)[b]``, so batch row ``b`` equals the
        unbatched search of game ``b`` with that key and the same ``lanes``.
      env: an :class:`~c4jax.games.env.Env`, unbatched or ``[B]`` (finished games
        may be mixed in).
      num_simulations: simulations per game, a Python int in ``1..2**30``.
      tree: the tree of an earlier search cut with :func:`c4jax.get_subtree`
        after the move played (subtree reuse); its root must be ``env``; a row
        whose tree is empty or holds another position starts fresh.
      params: the weights of ``value_fn``/``prior_fn`` (a pytree of arrays),
        passed as their first argument: ``value_fn(params, key, env) ->
        float32[]``, ``prior_fn(params, env) -> float32[A]`` (mctx's
        convention); ``None``: they take none (``value_fn(key, env)``).
        An argument of the compiled search: new weights of the same shapes
        and dtypes compile nothing.
      **options: the fields of :class:`SearchOptions`, or
        ``options=SearchOptions(...)`` (other keywords replace its fields).
    Returns:
      :class:`SearchOutput`.
    Raises:
      ValueError: an unknown option or a bad value (naming the allowed
        values), a bad ``num_simulations``, ``env`` (0 games), key or ``tree`` shape,
        fresh trees this machine's memory cannot hold (an estimate, before
        they exist), ``params`` without ``value_fn`` or ``prior_fn`` or with
        a leaf that is not an array, or Gumbel search with a reused tree.

    Compiled once per (shapes, options) and kept (:func:`c4jax.compiled_stats`);
    the number of simulations is an argument of the program (except with
    Gumbel) and a fresh tree holds ``simulation_bucket(num_simulations)``
    nodes, so every budget of a bucket runs one executable.  Inside a
    caller's ``jax.jit`` or ``jax.vmap`` it is traced into the caller's
    program as a direct call runs (:mod:`c4jax.search.programs`: a CPU batch
    split over the CPU devices, a ``vmap`` of it the batched search, a
    non-finite evaluation warned of).  References: Browne et al. 2012 (MCTS), Winands et al.
    2008 and Cazenave & Saffidine 2011 (the solver), Kocsis & Szepesvari 2006
    (UCT), Silver et al. 2017 (PUCT), Danihelka et al. 2022 (Gumbel).
    """
    keys, envs, tree, opts, single = prepare_search(key, env, num_simulations, tree, options)
    params = check_params(params, opts)
    out = search_batch(keys, envs, tree, params, opts, num_simulations)
    return unbatch_output(warn_non_finite(out, opts), single)


def check_params(params, opts: SearchOptions):
    """``params`` with every leaf an array (NumPy and Python numbers as JAX
    arrays), checked against ``opts``.

    Raises:
      ValueError: ``params`` given without ``value_fn`` or ``prior_fn``, or a
        leaf that is not a number or an array of numbers.
    """
    if params is None:
        return None
    if opts.value_fn is None and opts.prior_fn is None:
        raise ValueError("params are the first argument of value_fn(params, key, env) and prior_fn(params, env); "
                         "give value_fn or prior_fn, or leave params out")

    def leaf(x):
        if isinstance(x, jax.Array):
            return x
        if isinstance(x, (bool, int, float, np.ndarray, np.number, np.bool_)):
            x = np.asarray(x)
            if x.dtype.kind in "biuf":
                return jnp.asarray(x)
        kind = f"dtype {x.dtype}" if isinstance(x, np.ndarray) else f"type {type(x).__name__}"
        raise ValueError(f"params must be a pytree of arrays of numbers (weights); got a leaf of {kind}")

    return jax.tree.map(leaf, params)


def warn_non_finite(out: SearchOutput, opts: SearchOptions) -> SearchOutput:
    """``out``, after one ``RuntimeWarning`` if its search met NaN or infinite
    values or logits of ``opts.value_fn``/``opts.prior_fn`` (only these can
    give them; checked outside a caller's ``jit`` only)."""
    if (opts.value_fn is not None or opts.prior_fn is not None) and not is_traced(out.non_finite):
        count = int(np.sum(jax.device_get(out.non_finite)))
        if count:
            warnings.warn(non_finite_message(count), RuntimeWarning, stacklevel=3)
    return out


def games_of(env: Env) -> int:
    """The number of games of a search's ``env``: 1 unbatched, else ``B``.

    Raises:
      ValueError: more than one batch axis, or a batch of 0 games.
    """
    if len(env.batch_shape) > 1:
        raise ValueError(f"env may have at most one batch axis; got batch shape {env.batch_shape}")
    games = env.batch_shape[0] if env.batch_shape else 1
    if games == 0:
        raise ValueError("env must be one game or a batch of at least one; got a batch of 0 games")
    return games


def prepare_search(key, env, num_simulations: int, tree, options: dict):
    """:func:`run_mcts`'s checks at the Python boundary and its batching:
    ``(keys [B], envs [B], tree or None, opts, single)`` with ``opts``
    validated and its ``capacity``, ``max_depth`` and ``lanes`` resolved.  Raises the
    ``ValueError`` s that :func:`run_mcts` documents."""
    opts = options_from_kwargs(options)
    num_simulations = check_int("num_simulations", num_simulations, 1, MAX_SIMULATIONS)
    check_env(env)
    check_fields(env)
    batch_shape = env.batch_shape
    batch = games_of(env)
    single = batch_shape == ()
    key = as_key(key)
    if key.ndim > 1 or (key.ndim == 1 and (single or key.shape[0] != batch)):
        raise ValueError(
            f"key must be one PRNG key or a [B] batch of keys, one key per game "
            f"({'one game' if single else f'B = {batch}'}); got keys of shape {key.shape}"
        )
    if tree is None:  # a fresh tree per game, refused before it exists where memory cannot hold them
        given = opts.capacity is not None
        fresh = opts.capacity if given else simulation_bucket(num_simulations) + 1
        check_trees_fit(*(("capacity", fresh) if given else ("num_simulations", num_simulations)), env.game, batch,
                        fresh, stones_shape=tuple(env.stones.shape)[len(batch_shape):])
    if single:
        keys, envs = _add_batch_axis((key, env))
    else:
        keys, envs = keys_for_games(key, (batch,)), env

    game = envs.game
    capacity = opts.capacity
    if tree is not None:
        if opts.selection == "gumbel":
            raise ValueError(
                "selection='gumbel' cannot reuse a tree (sequential halving assumes a fresh root); "
                "pass tree=None or use selection='puct' or 'uct'"
            )
        if not isinstance(tree, mctx.Tree):
            raise ValueError(f"tree must be an mctx.Tree from run_mcts/get_subtree; got {type(tree).__name__}")
        if not isinstance(tree.extra_data, TreeExtraData):
            raise ValueError(
                "tree must come from run_mcts, get_subtree or empty_tree (its extra_data holds the "
                f"solver's bounds); got extra_data of type {type(tree.extra_data).__name__}"
            )
        if tree.node_visits.ndim != 2 or tree.node_visits.shape[0] != batch:
            raise ValueError(
                f"tree must have a leading batch axis of {batch}; got node_visits of shape {tree.node_visits.shape}"
            )
        if tree.num_actions != game.num_actions or getattr(tree.embeddings, "game", None) != game:
            raise ValueError(f"tree was built for another game than {game!r}")
        tree_nodes = tree.node_visits.shape[1]
        if capacity is not None and capacity != tree_nodes:
            raise ValueError(
                f"capacity={capacity} differs from the reused tree's {tree_nodes} nodes; "
                "the capacity stays fixed across a game"
            )
        capacity = tree_nodes
    elif capacity is None:
        capacity = simulation_bucket(num_simulations) + 1
    if opts.max_depth is not None and opts.max_depth > game.max_plies:
        raise ValueError(
            f"max_depth must be None or an int in 1..{game.max_plies} (the longest game of {game!r}); "
            f"got {opts.max_depth}"
        )
    max_depth = opts.max_depth if opts.max_depth is not None else game.max_plies
    opts = dataclasses.replace(opts, capacity=capacity, max_depth=max_depth, lanes=opts.lanes_for(batch))
    return keys, envs, tree, opts, single


# One compiled call each (an eager operation per array would compile one
# small program per operation on a process's first search).
_add_batch_axis = jax.jit(lambda tree: jax.tree.map(lambda x: x[None], tree))
_UNBATCHED = ("action", "action_weights", "visit_counts", "qvalues", "qvalue_lower", "qvalue_upper", "value",
              "proven_plies", "non_finite")
_first_rows = jax.jit(lambda arrays: [x[0] for x in arrays])


def unbatch_output(out: SearchOutput, single: bool) -> SearchOutput:
    """The output of one game (``single``) without its batch axis of one,
    except ``search_tree``; a batch's unchanged."""
    if single:
        out = out.replace(**dict(zip(_UNBATCHED, _first_rows([getattr(out, f) for f in _UNBATCHED]))))
    return out
