"""Expansion and evaluation: step the game into a new node and value it.

Browne et al. 2012, sec. 3.1 (expansion, simulation): the unexpanded edge the
selection stopped at is stepped with the game's rules into a new node (if the
node capacity allows), whose value is the mean of rollouts from it
(:func:`c4jax.values.leaf_value`).  A finished game's value is 0 and nothing is
expanded below it (terminal-aware search: the simulation backs up its result
again); a node at ``max_depth`` is evaluated again.

Full tree: when the capacity is reached, the edge is evaluated all the same
and collects the evaluation itself (its visit count and value average grow,
see :mod:`c4jax.search.backup`): nothing is dropped and nothing is written to
another node.

Only reads the tree; what it adds is written by the next simulation
(:class:`c4jax.search.tree.TreeUpdate`).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import mctx

from c4jax.env import Env
from c4jax.search.options import SearchOptions
from c4jax.search.selection import Path
from c4jax.search.tree import gather, masked_prior
from c4jax.values import leaf_value, prior_logits

__all__ = ["Expansion", "expand"]


@chex.dataclass(frozen=True)
class Expansion:
    """The result of :func:`expand` (one game).

    child_env: the position after ``path.action`` (meaningful if ``path.expand``).
    reward, discount: ``float32[]``, of that step (the mover's reward; -1, or
      0 once the game is over).
    value: ``float32[]``, the leaf value: of ``child_env`` if ``path.expand``,
      else of the node the descent stopped at (0 for a finished game).
    new_node: ``bool[]``, a node was added, at ``index`` (``int32[]``; the
      capacity ``N`` when none).
    accumulate: ``bool[]``, the tree is full and the edge collects ``value``.
    prior_logits: ``float32[A]``, the new node's prior.
    lower, upper: ``float32[]``, the new node's proven bounds from the position
      alone.
    """

    child_env: Env
    reward: jax.Array
    discount: jax.Array
    value: jax.Array
    new_node: jax.Array
    accumulate: jax.Array
    index: jax.Array
    prior_logits: jax.Array
    lower: jax.Array
    upper: jax.Array


def expand(key, tree: mctx.Tree, path: Path, next_free, opts: SearchOptions, solver) -> Expansion:
    """Steps and evaluates the leaf of ``path``; ``next_free`` (``int32[]``) is
    the first unused node index.  ``key`` is consumed by the rollouts."""
    capacity = tree.node_visits.shape[0]
    node_env = gather(tree.embeddings, path.node)
    child_env, reward, done = node_env.game.env_step(node_env, jnp.maximum(path.action, 0))
    discount = jnp.where(done, 0.0, -1.0).astype(jnp.float32)
    leaf_env = jax.tree.map(lambda c, n: jnp.where(path.expand, c, n), child_env, node_env)
    value = leaf_value(key, leaf_env, num_rollouts=opts.num_rollouts, rollout_policy=opts.rollout_policy)
    new_node = path.expand & (next_free < capacity)
    lower, upper = solver.static_bounds(child_env)
    return Expansion(
        child_env=child_env,
        reward=reward.astype(jnp.float32),
        discount=discount,
        value=value,
        new_node=new_node,
        accumulate=path.expand & ~new_node,
        index=jnp.where(new_node, next_free, capacity).astype(jnp.int32),
        prior_logits=masked_prior(
            prior_logits(child_env, opts.prior), child_env.game.legal_action_mask(child_env)
        ),
        lower=lower,
        upper=upper,
    )
