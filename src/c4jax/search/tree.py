"""The search tree: mctx's :class:`mctx.Tree` layout, our extra data, and the
pending writes of one simulation.

The tree is mctx's (node ``0`` is the root, ``UNVISITED``/``NO_PARENT`` = -1,
``Q(s, a) = r + discount * V(s')``, a node's value is the mean of every value
backed up through it), so that mctx's action-selection functions and Q
transforms read it as they read their own.  Every array has the node capacity
``N`` as its leading axis (``[N]``, ``[N, A]``, and the per-node game states
``embeddings``, an :class:`~c4jax.env.Env` with leading axis ``[N]``).

Why writes are pending: in a loop over simulations, XLA updates a tree-sized
buffer in place only if no read of the old buffer can come after the write.
A simulation reads the tree (selection, the solver's proofs) and then writes
it (expansion, backup); written in that order, XLA copies every tree buffer
on every simulation, an ``O(N)`` cost per simulation (measured:
``shared/notes/search-cost.md``).  So a simulation does not write the tree:
it returns its writes as a :class:`TreeUpdate`, a few scalars and
``[max_depth + 1]`` path vectors, and the next simulation applies them with
:func:`apply_update` *before* it reads anything.  Within one loop step every
write then precedes every read, and each buffer is updated in place.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import mctx
import numpy as np

from c4jax.env import Env

__all__ = [
    "ILLEGAL_LOGIT",
    "LOSS",
    "WIN",
    "NO_PARENT",
    "ROOT",
    "UNVISITED",
    "TreeExtraData",
    "TreeUpdate",
    "apply_update",
    "gather",
    "legal_at",
    "masked_prior",
    "new_tree",
    "no_update",
    "same_position",
]

UNVISITED = mctx.Tree.UNVISITED
NO_PARENT = mctx.Tree.NO_PARENT
ROOT = mctx.Tree.ROOT_INDEX
# Game-theoretic values are in [LOSS, WIN] for the player to move (rewards
# are -1, 0, +1); the solver's bounds start there.
LOSS, WIN = -1.0, 1.0
# The prior logit of an illegal action, exactly (c4jax.values.prior_logits
# gives it; every prior the search stores is masked with it).  The search
# reads a node's legal actions from its stored prior: ``legal(node) =
# children_prior_logits[node] > ILLEGAL_LOGIT`` (all False for a finished
# game), which saves gathering and re-deriving the node's position at every
# level of every descent.
ILLEGAL_LOGIT = float(np.finfo(np.float32).min)


@chex.dataclass(frozen=True)
class TreeExtraData:
    """``search_tree.extra_data`` of the trees :func:`c4jax.run_mcts` returns.

    root_gumbel: ``float32[A]``, Gumbel MuZero's root noise (zeros unless
      ``selection="gumbel"``; mctx's Gumbel functions read this field).
    value_lower, value_upper: ``float32[N]``, proven bounds on each node's
      game-theoretic value for its player to move (``[-1, 1]`` when nothing is
      proven, ``[0, 0]`` for a finished game; equal bounds: the node is
      solved).  Kept by :func:`c4jax.get_subtree`.  Without the solver they
      stay ``[-1, 1]`` (finished games ``[0, 0]``).
    """

    root_gumbel: jax.Array
    value_lower: jax.Array
    value_upper: jax.Array


def gather(tree_like, index):
    """Entry ``index`` of every leaf of a pytree (e.g. one node's ``Env``)."""
    return jax.tree.map(lambda x: x[index], tree_like)


def legal_at(tree: mctx.Tree, node) -> jax.Array:
    """``bool[A]``: the legal actions of ``node``, from its stored prior."""
    return tree.children_prior_logits[node] > ILLEGAL_LOGIT


def masked_prior(logits, legal) -> jax.Array:
    """``logits`` with the illegal actions at exactly ``ILLEGAL_LOGIT``."""
    return jnp.where(legal, logits, ILLEGAL_LOGIT).astype(jnp.float32)


def same_position(a: Env, b: Env) -> jax.Array:
    """``bool[]``: the two (unbatched) games are the same position."""
    return jnp.all(a.stones == b.stones) & (a.to_move == b.to_move) & (a.done == b.done)


def new_tree(env: Env, logits, value, capacity: int, root_gumbel, lower, upper) -> mctx.Tree:
    """A tree of ``capacity`` nodes holding only the root ``env`` (one visit,
    value ``value``, prior ``logits`` ``float32[A]``, proven bounds ``lower``,
    ``upper``).  Unbatched.  ``logits`` must already be masked
    (:func:`masked_prior`)."""
    num_actions = env.game.num_actions
    n, na = (capacity,), (capacity, num_actions)
    embeddings = jax.tree.map(lambda x: jnp.zeros(n + x.shape, x.dtype).at[ROOT].set(x), env)
    if root_gumbel is None:
        root_gumbel = jnp.zeros((num_actions,), jnp.float32)
    extra_data = TreeExtraData(
        root_gumbel=root_gumbel,
        value_lower=jnp.full(n, LOSS, jnp.float32).at[ROOT].set(lower),
        value_upper=jnp.full(n, WIN, jnp.float32).at[ROOT].set(upper),
    )
    return mctx.Tree(
        node_visits=jnp.zeros(n, jnp.int32).at[ROOT].set(1),
        raw_values=jnp.zeros(n, jnp.float32).at[ROOT].set(value),
        node_values=jnp.zeros(n, jnp.float32).at[ROOT].set(value),
        parents=jnp.full(n, NO_PARENT, jnp.int32),
        action_from_parent=jnp.full(n, NO_PARENT, jnp.int32),
        children_index=jnp.full(na, UNVISITED, jnp.int32),
        children_prior_logits=jnp.zeros(na, jnp.float32).at[ROOT].set(logits),
        children_values=jnp.zeros(na, jnp.float32),
        children_visits=jnp.zeros(na, jnp.int32),
        children_rewards=jnp.zeros(na, jnp.float32),
        children_discounts=jnp.zeros(na, jnp.float32),
        embeddings=embeddings,
        root_invalid_actions=(~env.game.legal_action_mask(env)).astype(jnp.float32),
        extra_data=extra_data,
    )


@chex.dataclass(frozen=True)
class TreeUpdate:
    """The writes of one simulation, applied by :func:`apply_update` at the
    start of the next one (see the module docstring).  ``S = max_depth + 1``.
    An index equal to the capacity ``N`` writes nothing (``mode="drop"``).

    node: ``int32[]``, the new node's index (``N``: no new node), with its
      ``parent``, ``action`` (from the parent), ``raw_value``,
      ``prior_logits`` ``float32[A]`` and ``embedding`` (an unbatched ``Env``).
    link_node: ``int32[]``, the node whose ``children_index[link_node,
      action]`` becomes ``node`` (``N``: none).
    edge_node: ``int32[]``, the node whose edge ``action`` was stepped for the
      first time or again (a full tree): its ``reward``, ``discount``.
    path_nodes: ``int32[S]``, the nodes backed up (``N`` past the leaf): one
      visit each, new means ``path_values`` and proven bounds ``path_lower``,
      ``path_upper``, all ``float32[S]``.
    edge_nodes, edge_actions: ``int32[S]``, the edges backed up: one visit
      each and new child values ``edge_values`` ``float32[S]``.
    """

    node: jax.Array
    parent: jax.Array
    action: jax.Array
    raw_value: jax.Array
    prior_logits: jax.Array
    embedding: Env
    link_node: jax.Array
    edge_node: jax.Array
    reward: jax.Array
    discount: jax.Array
    path_nodes: jax.Array
    path_values: jax.Array
    path_lower: jax.Array
    path_upper: jax.Array
    edge_nodes: jax.Array
    edge_actions: jax.Array
    edge_values: jax.Array

    def masked(self, active, capacity: int) -> "TreeUpdate":
        """The same update, writing nothing unless ``active`` (``bool[]``)."""

        def drop(index, n):
            return jnp.where(active, index, n)

        n = jnp.int32(capacity)
        return self.replace(
            node=drop(self.node, n),
            link_node=drop(self.link_node, n),
            edge_node=drop(self.edge_node, n),
            path_nodes=drop(self.path_nodes, n),
            edge_nodes=drop(self.edge_nodes, n),
        )


def no_update(tree: mctx.Tree, path_size: int) -> TreeUpdate:
    """An update that writes nothing (the first simulation's pending writes)."""
    capacity, num_actions = tree.children_index.shape
    none = jnp.int32(capacity)
    zeros = jnp.zeros(path_size, jnp.float32)
    nowhere = jnp.full(path_size, capacity, jnp.int32)
    return TreeUpdate(
        node=none,
        parent=jnp.int32(NO_PARENT),
        action=jnp.int32(0),
        raw_value=jnp.float32(0),
        prior_logits=jnp.zeros(num_actions, jnp.float32),
        embedding=gather(tree.embeddings, ROOT),
        link_node=none,
        edge_node=none,
        reward=jnp.float32(0),
        discount=jnp.float32(0),
        path_nodes=nowhere,
        path_values=zeros,
        path_lower=zeros,
        path_upper=zeros,
        edge_nodes=nowhere,
        edge_actions=jnp.zeros(path_size, jnp.int32),
        edge_values=zeros,
    )


def apply_update(tree: mctx.Tree, u: TreeUpdate) -> mctx.Tree:
    """``tree`` with the writes of ``u`` applied (unbatched; in place under
    ``jit`` when nothing reads the old tree afterwards)."""
    drop = dict(mode="drop")
    extra = tree.extra_data
    return tree.replace(
        raw_values=tree.raw_values.at[u.node].set(u.raw_value, **drop),
        parents=tree.parents.at[u.node].set(u.parent, **drop),
        action_from_parent=tree.action_from_parent.at[u.node].set(u.action, **drop),
        children_prior_logits=tree.children_prior_logits.at[u.node].set(u.prior_logits, **drop),
        embeddings=jax.tree.map(lambda t, s: t.at[u.node].set(s, **drop), tree.embeddings, u.embedding),
        children_index=tree.children_index.at[u.link_node, u.action].set(u.node, **drop),
        children_rewards=tree.children_rewards.at[u.edge_node, u.action].set(u.reward, **drop),
        children_discounts=tree.children_discounts.at[u.edge_node, u.action].set(u.discount, **drop),
        node_visits=tree.node_visits.at[u.path_nodes].add(1, **drop),
        node_values=tree.node_values.at[u.path_nodes].set(u.path_values, **drop),
        children_visits=tree.children_visits.at[u.edge_nodes, u.edge_actions].add(1, **drop),
        children_values=tree.children_values.at[u.edge_nodes, u.edge_actions].set(u.edge_values, **drop),
        extra_data=extra.replace(
            value_lower=extra.value_lower.at[u.path_nodes].set(u.path_lower, **drop),
            value_upper=extra.value_upper.at[u.path_nodes].set(u.path_upper, **drop),
        ),
    )
