"""Expansion and evaluation: step the game into a new node and value it.

Browne et al. 2012, sec. 3.1 (expansion, simulation): the unexpanded edge the
selection stopped at is stepped with the game's rules into a new node (if the
node capacity allows), whose value is the mean of rollouts from it
(:func:`c4jax.search.values.leaf_value`).  A finished game's value is 0 and nothing is
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

from c4jax.games.env import Env
from c4jax.games.rollout import winning_moves_of_both
from c4jax.search.options import SearchOptions
from c4jax.search.selection import Path
from c4jax.search.tree import gather, masked_prior
from c4jax.keys import as_key
from c4jax.search.values import prior_and_flag, value_and_flag

__all__ = ["Expansion", "evaluate_in_turn", "evaluate_leaf", "expand", "share_new_nodes", "shared_winning_moves"]


@chex.dataclass(frozen=True)
class Expansion:
    """The result of :func:`expand` (one game).

    child_env: the position after ``path.action`` (meaningful if ``path.expand``).
    leaf_env: the position valued: ``child_env`` if ``path.expand``, else the
      node the descent stopped at.
    reward, discount: ``float32[]``, of that step (the mover's reward; -1, or
      0 once the game is over).
    value: ``float32[]``, the leaf value: of ``child_env`` if ``path.expand``,
      else of the node the descent stopped at (0 for a finished game).
    new_node: ``bool[]``, the leaf is a node added in this step, at ``index``
      (``int32[]``; the capacity ``N`` when none).
    creates: ``bool[]``, this simulation adds it (with parallel lanes, of
      the lanes that stepped the same edge only the first does; the others
      are visits to it).
    accumulate: ``bool[]``, the tree is full and the edge collects ``value``.
    prior_logits: ``float32[A]``, the new node's prior.
    non_finite: ``int32[]``, the evaluations of this step whose user
      function gave NaN or infinity: the leaf value, and the prior of a node
      this step creates.
    lower, upper: ``float32[]``, the new node's proven bounds from the position
      alone, and ``plies`` (``int32[]``) theirs.
    """

    child_env: Env
    leaf_env: Env
    reward: jax.Array
    discount: jax.Array
    value: jax.Array
    new_node: jax.Array
    creates: jax.Array
    accumulate: jax.Array
    index: jax.Array
    prior_logits: jax.Array
    non_finite: jax.Array
    lower: jax.Array
    upper: jax.Array
    plies: jax.Array


def expand(key, tree: mctx.Tree, path: Path, next_free, opts: SearchOptions, solver,
           evaluate: bool = True) -> Expansion:
    """Steps and evaluates the leaf of ``path``; ``next_free`` (``int32[]``) is
    the first unused node index.  ``key`` is consumed by the rollouts.
    ``evaluate=False`` (static): no rollouts (``value`` 0; the caller values
    ``leaf_env``)."""
    capacity = tree.node_visits.shape[0]
    node_env = gather(tree.embeddings, path.node)
    child_env, reward, done = node_env.game.env_step(node_env, jnp.maximum(path.action, 0))
    discount = jnp.where(done, 0.0, -1.0).astype(jnp.float32)
    leaf_env = jax.tree.map(lambda c, n: jnp.where(path.expand, c, n), child_env, node_env)
    value, value_bad = evaluate_leaf(key, leaf_env, opts) if evaluate else (jnp.float32(0), jnp.bool_(False))
    new_node = path.expand & (next_free < capacity)
    wins = shared_winning_moves(child_env, opts)
    lower, upper, plies = solver.static_bounds(child_env, wins)
    # Only a new node's prior is kept, and a new node is the leaf: a
    # ``prior_fn`` reads the leaf, so that a network giving ``value_fn`` and
    # ``prior_fn`` from one forward pass runs once (XLA's CSE); the built-in
    # priors read the child, as the static bounds do (the same winning
    # moves, computed once: ``wins``).
    prior_env = leaf_env if opts.prior_fn is not None else child_env
    logits, prior_bad = prior_and_flag(prior_env, opts.prior, opts.prior_fn, wins)
    return Expansion(
        child_env=child_env,
        leaf_env=leaf_env,
        reward=reward.astype(jnp.float32),
        discount=discount,
        value=value,
        new_node=new_node,
        creates=new_node,
        accumulate=path.expand & ~new_node,
        index=jnp.where(new_node, next_free, capacity).astype(jnp.int32),
        prior_logits=masked_prior(logits, child_env.game.legal_action_mask(child_env)),
        non_finite=(value_bad.astype(jnp.int32) + (new_node & prior_bad).astype(jnp.int32)),
        lower=lower,
        upper=upper,
        plies=plies,
    )


def shared_winning_moves(env: Env, opts: SearchOptions) -> tuple[jax.Array, jax.Array] | None:
    """:func:`~c4jax.games.rollout.winning_moves_of_both` of ``env`` where
    both the solver's static bounds and the heuristic prior read them (one
    computation for both), else ``None`` (the one that reads them computes them)."""
    if opts.solver and opts.prior == "heuristic" and opts.prior_fn is None:
        return winning_moves_of_both(env)
    return None


def evaluate_leaf(key, env: Env, opts: SearchOptions) -> tuple[jax.Array, jax.Array]:
    """``(float32[], bool[])``: the leaf value of ``env`` for its player to
    move (the mean of ``opts.num_rollouts`` rollouts, or ``opts.value_fn``:
    :func:`c4jax.search.values.leaf_value`), and whether ``value_fn`` gave a
    non-finite value."""
    return value_and_flag(as_key(key), env, opts.num_rollouts, opts.rollout_policy, opts.value_fn)


def evaluate_in_turn(keys, envs: Env, opts: SearchOptions) -> tuple[jax.Array, jax.Array]:
    """``(float32[K], bool[K])``: :func:`evaluate_leaf` of each of ``envs`` (``[K]``),
    one after another.  A rollout is a loop over plies that XLA's CPU
    compiler runs as one kernel for one game, but as a dozen kernels per
    ply for several games at once (the loop body grows past the size it
    compiles whole), so a step's lanes roll out in turn."""
    num = keys.shape[0]

    def one(k, acc):
        env = jax.tree.map(lambda x: jax.lax.dynamic_index_in_dim(x, k, keepdims=False), envs)
        value, bad = evaluate_leaf(keys[k], env, opts)
        return acc[0].at[k].set(value), acc[1].at[k].set(bad)

    return jax.lax.fori_loop(0, num, one, (jnp.zeros(num, jnp.float32), jnp.zeros(num, bool)))


def share_new_nodes(paths: Path, exps: Expansion, next_free, capacity: int, on) -> Expansion:
    """The expansions of the ``K`` lanes of a step (leading axis ``[K]``;
    ``on`` ``bool[K]``: the lanes that ran), with their new nodes numbered
    from ``next_free`` in lane order.  Lanes that stepped the same unexpanded
    edge share one new node: the first creates it, the others visit it (each
    with its own rollouts); so no edge is expanded twice and no simulation is
    lost.  When the tree is full they all collect at the edge."""
    num_lanes = paths.node.shape[0]
    stepping = paths.expand & on
    same_edge = (stepping[:, None] & stepping[None] & (paths.node[:, None] == paths.node[None])
                 & (paths.action[:, None] == paths.action[None]))
    earlier = jnp.arange(num_lanes)[None] < jnp.arange(num_lanes)[:, None]  # [k, j]: j < k
    first = stepping & ~jnp.any(same_edge & earlier, axis=1)
    creator = jnp.argmax(same_edge, axis=1)  # the first lane of each edge
    index = next_free + jnp.cumsum(first) - first
    creates = first & (index < capacity)
    new_node = stepping & creates[creator]
    return exps.replace(
        new_node=new_node,
        creates=creates,
        accumulate=stepping & ~new_node,
        index=jnp.where(new_node, index[creator], capacity).astype(jnp.int32),
    )
