"""Subtree reuse: keep the subtree of the move played for the next search.

mctx 0.0.71 has no ``get_subtree`` and its ``search`` allocates a fresh tree
each call; this module cuts an :class:`mctx.Tree` (as :func:`c4jax.run_mcts`
returns it) down to the subtree under one root action, re-indexed so that the
kept child becomes node 0, with the same node capacity.  Every visit count,
value, prior, reward and discount of the kept subtree is kept as it was, and
so are the solver's proven bounds (``TreeExtraData``).

The subtree is found in ``O(N log D)`` by pointer jumping over ``parents``
(``D``: the game's longest game, which bounds the depth of any tree);
the kept nodes keep their relative order (a parent's index is always smaller
than its children's, in mctx's trees and in ours), so node ``0`` is the new
root and the next free index is the number of kept nodes.
"""

from __future__ import annotations

import functools

import math

import jax
import jax.numpy as jnp
import mctx

from c4jax.search.options import MAX_NODES
from c4jax.search.tree import LOSS, WIN, check_trees_fit, new_tree
from c4jax.validation import check_int

__all__ = ["get_subtree", "empty_tree"]

UNVISITED = mctx.Tree.UNVISITED
NO_PARENT = mctx.Tree.NO_PARENT


def get_subtree(tree: mctx.Tree, action) -> mctx.Tree:
    """The subtree under root ``action``, ready for ``run_mcts(..., tree=...)``.

    Args:
      tree: a batched tree (``[B, N, ...]``) from :func:`c4jax.run_mcts`
        (``B`` = 1 for one game).
      action: ``int32[]`` or ``int32[B]``: the action played at the root of
        each game (0-based).  A scalar applies to every row.
    Returns:
      A tree of the same shapes (same capacity ``N``).  Row ``b`` holds the
      subtree of the root's child ``action[b]``, re-indexed from 0.  If that
      child was never expanded, or ``action[b]`` is out of range (e.g. -1,
      what :func:`run_mcts` returns for a finished game), the row is empty
      (all visit counts 0) and the next search of that row starts fresh.
    Raises:
      ValueError: if ``tree`` is not batched or ``action`` has the wrong shape.
    """
    if not isinstance(tree, mctx.Tree) or tree.node_visits.ndim != 2:
        raise ValueError("tree must be a batched mctx.Tree ([B, N, ...]) from run_mcts")
    batch = tree.node_visits.shape[0]
    if isinstance(action, (bool, str)) or not jnp.issubdtype(jnp.asarray(action).dtype, jnp.integer):
        raise ValueError(f"action must be an integer (scalar or [B]); got {action!r}")
    action = jnp.asarray(action, jnp.int32)
    if action.ndim == 0:
        action = jnp.full((batch,), action)
    if action.shape != (batch,):
        raise ValueError(f"action must be a scalar or of shape ({batch},); got {action.shape}")
    return jax.vmap(_subtree_one)(tree, action)


def _subtree_one(tree: mctx.Tree, action: jax.Array) -> mctx.Tree:
    n, num_actions = tree.children_index.shape
    in_range = (action >= 0) & (action < num_actions)
    new_root = jnp.where(in_range, tree.children_index[0, jnp.clip(action, 0, num_actions - 1)], UNVISITED)
    index = jnp.arange(n, dtype=jnp.int32)
    # keep[i]: node i is new_root or one of its descendants.  Pointer jumping:
    # after k rounds, keep[i] covers ancestors up to 2**k - 1 levels up.
    keep = (index == new_root) & (new_root != UNVISITED)
    jump = tree.parents
    # A node lies at most max_plies edges below the root (an edge is a ply),
    # so 2**rounds - 1 >= max_plies levels up cover every path; the capacity
    # bounds it too.  (7x6 at 65,536 nodes: 7 rounds instead of 17.)
    levels = min(n, tree.embeddings.game.max_plies + 1)
    for _ in range(max(1, math.ceil(math.log2(levels)) + 1)):
        valid = jump >= 0
        safe = jnp.where(valid, jump, 0)
        keep = keep | (valid & keep[safe])
        jump = jnp.where(valid, jump[safe], NO_PARENT)
    new_index = jnp.where(keep, jnp.cumsum(keep) - 1, UNVISITED).astype(jnp.int32)
    count = jnp.sum(keep)
    # old_of_new[j]: the old index of new node j (n for the empty tail).
    old_of_new = jnp.full(n, n, jnp.int32).at[jnp.where(keep, new_index, n)].set(index, mode="drop")
    used = index < count
    src = jnp.where(used, old_of_new, 0)

    def take(x, fill):
        g = x[src]
        mask = used.reshape((n,) + (1,) * (g.ndim - 1))
        return jnp.where(mask, g, jnp.asarray(fill, x.dtype))

    def remap(old):  # old node indices -> new ones (UNVISITED/NO_PARENT stay -1)
        return jnp.where(old >= 0, new_index[jnp.maximum(old, 0)], old)

    parents = take(remap(tree.parents), NO_PARENT)
    action_from_parent = take(tree.action_from_parent, NO_PARENT)
    parents = parents.at[0].set(NO_PARENT)
    action_from_parent = action_from_parent.at[0].set(NO_PARENT)
    embeddings = jax.tree.map(lambda x: take(x, 0), tree.embeddings)
    root_env = jax.tree.map(lambda x: x[0], embeddings)
    legal = root_env.game.legal_action_mask(root_env)
    extra = tree.extra_data
    if hasattr(extra, "value_lower"):  # run_mcts's TreeExtraData: the solver's bounds
        extra = extra.replace(
            value_lower=take(extra.value_lower, -1.0),
            value_upper=take(extra.value_upper, 1.0),
            value_plies=take(extra.value_plies, 0),
        )
    return tree.replace(
        extra_data=extra,
        node_visits=take(tree.node_visits, 0),
        raw_values=take(tree.raw_values, 0),
        node_values=take(tree.node_values, 0),
        parents=parents,
        action_from_parent=action_from_parent,
        children_index=take(remap(tree.children_index), UNVISITED),
        children_prior_logits=take(tree.children_prior_logits, 0),
        children_values=take(tree.children_values, 0),
        children_visits=take(tree.children_visits, 0),
        children_rewards=take(tree.children_rewards, 0),
        children_discounts=take(tree.children_discounts, 0),
        embeddings=embeddings,
        root_invalid_actions=jnp.where(count > 0, ~legal, True).astype(tree.root_invalid_actions.dtype),
    )


def empty_tree(env, capacity: int) -> mctx.Tree:
    """An empty tree (all visit counts 0) with room for ``capacity`` nodes, for
    a batch ``env`` (``[B]``): ``run_mcts(..., tree=empty_tree(env, N))``
    searches fresh with capacity ``N``, and a game played that way compiles
    its reuse step once, from the first move on.

    Raises:
      ValueError: if ``env`` is not batched, ``capacity`` is not in
        ``2..2**31 - 1`` or the trees would not fit in this machine's memory.
    """
    capacity = check_int("capacity", capacity, 2, MAX_NODES)
    if len(env.batch_shape) != 1:
        raise ValueError(f"env must have one batch axis [B]; got batch shape {env.batch_shape}")
    check_trees_fit("capacity", capacity, env.game, env.batch_shape[0], capacity,
                    stones_shape=tuple(env.stones.shape)[1:])

    return _empty_trees(env, capacity)


@functools.partial(jax.jit, static_argnames=("capacity",))
def _empty_trees(env, capacity: int) -> mctx.Tree:
    def one(e):
        logits = jnp.zeros((e.game.num_actions,), jnp.float32)
        tree = new_tree(e, logits, jnp.float32(0), capacity, None, LOSS, WIN, 0)
        return tree.replace(node_visits=jnp.zeros_like(tree.node_visits))

    return jax.vmap(one)(env)
