"""Backup: one simulation's return along its path, as a pending tree update.

Browne et al. 2012, sec. 3.1 (backpropagation); negamax signs as in
:mod:`c4jax.values`: every node on the path gets one visit and the return
``G_i = r_i + discount_i * G_{i+1}`` averaged into its value (a node's value
is for its player to move; discount -1 per ply, 0 once the game is over).
With the solver, the bounds of the path's nodes are recomputed from their
children (:meth:`c4jax.search.solver.ScoreBoundsSolver.prove_path`).

No loop and no walk up the parents: the path was recorded by the descent
(``[max_depth + 1]`` nodes, actions, rewards, discounts); the returns of all
depths come in closed form from prefix products and suffix sums, and each
tree array gets one scatter, in the :class:`~c4jax.search.tree.TreeUpdate`
that the next simulation applies (padding entries go to the dropped index
``N``).

A full tree: the unexpanded edge that collected the evaluation gets the visit
and the value average of a child (``children_visits``, ``children_values``),
and the path above it the return through that edge.
"""

from __future__ import annotations

import jax.numpy as jnp
import mctx

from c4jax.search.expansion import Expansion
from c4jax.search.selection import Path
from c4jax.search.tree import TreeUpdate

__all__ = ["backup"]


def backup(tree: mctx.Tree, path: Path, exp: Expansion, solver) -> TreeUpdate:
    """The writes of one simulation (``tree`` is the tree it read)."""
    capacity = tree.node_visits.shape[0]
    size = path.nodes.shape[0]
    max_depth = size - 1
    depth, new_node, accumulate = path.depth, exp.new_node, exp.accumulate
    leaf = jnp.where(new_node, depth + 1, depth)
    nodes = jnp.where(new_node, path.nodes.at[jnp.minimum(depth + 1, max_depth)].set(exp.index), path.nodes)
    rewards = jnp.where(path.expand, path.rewards.at[depth].set(exp.reward), path.rewards)
    discounts = jnp.where(path.expand, path.discounts.at[depth].set(exp.discount), path.discounts)
    leaf_return = jnp.where(accumulate, exp.reward + exp.discount * exp.value, exp.value)

    i = jnp.arange(size)
    on_path = i <= leaf
    has_edge = i < leaf
    pn = jnp.where(on_path, nodes, 0)
    r = jnp.where(has_edge, rewards, 0.0)
    d = jnp.where(has_edge, discounts, 1.0)
    # G_i = r_i + d_i G_{i+1}, G_leaf = leaf_return.  With D_i = prod_{k<i} d_k:
    # G_i = (sum_{i<=j<leaf} D_j r_j + D_leaf leaf_return) / D_i.  Only the last
    # edge of a path can have discount 0 (the search stops at finished games),
    # so D_i != 0 for every i < leaf.
    prefix = jnp.concatenate([jnp.ones(1, jnp.float32), jnp.cumprod(d)[:-1]])
    suffix = jnp.cumsum((prefix * r)[::-1])[::-1]
    d_leaf = jnp.sum(jnp.where(i == leaf, prefix, 0.0))
    returns = (suffix + d_leaf * leaf_return) / jnp.where(on_path & (prefix != 0), prefix, 1.0)
    returns = jnp.where(i == leaf, leaf_return, returns)
    # The new node's slot is empty (0 visits, value 0) until its update lands.
    counts = tree.node_visits[pn].astype(jnp.float32)
    new_values = (tree.node_values[pn] * counts + returns) / (counts + 1.0)

    # Proven bounds: the new node's from its position, then up the path.
    lower = jnp.where((i == leaf) & new_node, exp.lower, tree.extra_data.value_lower[pn])
    upper = jnp.where((i == leaf) & new_node, exp.upper, tree.extra_data.value_upper[pn])
    start = jnp.where(new_node, leaf - 1, leaf)
    lower, upper = solver.prove_path(
        tree, nodes, path.actions, rewards, discounts, start, leaf, lower, upper,
        accumulate & (exp.discount == 0.0), exp.reward,
    )

    # Edges: each edge above the leaf gets its child's new value; a full
    # tree's collecting edge gets the average of the values it collected.
    safe = jnp.minimum(path.node, capacity - 1), jnp.maximum(path.action, 0)
    edge_visits = tree.children_visits[safe].astype(jnp.float32)
    collected = (tree.children_values[safe] * edge_visits + exp.value) / (edge_visits + 1.0)
    child_values = jnp.concatenate([new_values[1:], jnp.zeros(1, jnp.float32)])
    at_collector = (i == leaf) & accumulate
    edge_on = has_edge | at_collector
    none = jnp.int32(capacity)
    return TreeUpdate(
        node=exp.index,
        parent=path.node,
        action=path.action,
        raw_value=exp.value,
        prior_logits=exp.prior_logits,
        embedding=exp.child_env,
        link_node=jnp.where(new_node, path.node, none),
        edge_node=jnp.where(path.expand, path.node, none),
        reward=exp.reward,
        discount=exp.discount,
        path_nodes=jnp.where(on_path, nodes, none),
        path_values=new_values,
        path_lower=lower,
        path_upper=upper,
        edge_nodes=jnp.where(edge_on, nodes, none),
        edge_actions=jnp.where(edge_on, path.actions, 0),
        edge_values=jnp.where(at_collector, collected, child_values),
    )
