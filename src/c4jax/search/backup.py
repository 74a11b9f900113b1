"""Backup: one simulation's return along its path, as a pending tree update.

Browne et al. 2012, sec. 3.1 (backpropagation); negamax signs as in
:mod:`c4jax.search.values`: every node on the path gets one visit and the return
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

from typing import Any

import jax
import jax.numpy as jnp
import mctx

from c4jax.search.expansion import Expansion
from c4jax.search.selection import Path
from c4jax.search.tree import LOSS, WIN, TreeUpdate, set_entry

__all__ = ["backup"]


def _lane_returns(path: Path, exp: Expansion, on):
    """One lane's path (``S = max_depth + 1`` entries): its nodes (the new
    node included), edge rewards and discounts, whether each entry is on the
    path / has an edge below it, and the return ``G_i`` at each depth."""
    size = path.nodes.shape[0]
    max_depth = size - 1
    depth, new_node, accumulate = path.depth, exp.new_node, exp.accumulate
    leaf = jnp.where(new_node, depth + 1, depth)
    nodes = jnp.where(new_node, set_entry(path.nodes, jnp.minimum(depth + 1, max_depth), exp.index), path.nodes)
    rewards = jnp.where(path.expand, set_entry(path.rewards, depth, exp.reward), path.rewards)
    discounts = jnp.where(path.expand, set_entry(path.discounts, depth, exp.discount), path.discounts)
    leaf_return = jnp.where(accumulate, exp.reward + exp.discount * exp.value, exp.value)

    i = jnp.arange(size)
    on_path = (i <= leaf) & on
    has_edge = (i < leaf) & on
    r = jnp.where(has_edge, rewards, 0.0)
    d = jnp.where(has_edge, discounts, 1.0)
    # G_i = r_i + d_i G_{i+1}, G_leaf = leaf_return.  With D_i = prod_{k<i} d_k:
    # G_i = (sum_{i<=j<leaf} D_j r_j + D_leaf leaf_return) / D_i.  Only the last
    # edge of a path can have discount 0 (the search stops at finished games),
    # so D_i != 0 for every i < leaf.
    # Every product and sum here is of small integers, exact in any order: a
    # log-depth scan (elementwise; jnp.cumsum is a quadratic reduce-window on
    # the CPU).
    prefix = jnp.concatenate([jnp.ones(1, jnp.float32), jax.lax.associative_scan(jnp.multiply, d)[:-1]])
    suffix = jax.lax.associative_scan(jnp.add, prefix * r, reverse=True)
    d_leaf = jnp.sum(jnp.where(i == leaf, prefix, 0.0))
    returns = (suffix + d_leaf * leaf_return) / jnp.where(on_path & (prefix != 0), prefix, 1.0)
    returns = jnp.where(i == leaf, leaf_return, returns)
    return leaf, nodes, rewards, discounts, on_path, has_edge, returns


def _lanes_sum(same, x):
    """``sum_j same[k, j, i] x[j, i]`` for each lane ``k`` and depth ``i``."""
    return jnp.sum(jnp.where(same, x[None], 0), axis=1)


def backup(tree: mctx.Tree, paths: Path, exps: Expansion, solver, on) -> tuple[TreeUpdate, Any]:
    """The writes of one step of ``K`` lanes (``tree`` is the tree they read;
    ``paths``, ``exps`` have a leading lane axis ``[K]``; ``on`` ``bool[K]``:
    the lanes that ran): ``(update, bounds)``.  One lane is one simulation.
    Where lanes pass through the same node, its new value averages all of
    their returns (each entry of the update holds the same value, so the
    scatter is exact) and its visit count grows by their number; an edge
    that collects rollouts in a full tree averages every lane's evaluation.
    ``bounds``: ``None`` with one lane (the update writes the path's proven
    bounds); with several, the tree's new ``(value_lower, value_upper)``
    (:meth:`~c4jax.search.solver.ScoreBoundsSolver.prove_lanes`), which the
    update leaves alone."""
    capacity = tree.node_visits.shape[0]
    leaf, nodes, rewards, discounts, on_path, has_edge, returns = jax.vmap(_lane_returns)(paths, exps, on)
    num_lanes, size = nodes.shape
    i = jnp.arange(size)
    pn = jnp.where(on_path, nodes, 0)
    # same[k, j, i]: lanes k and j are at the same node at depth i (a node has
    # one depth, so this compares the paths entry by entry).
    same = on_path[:, None] & on_path[None] & (nodes[:, None] == nodes[None])
    # The new node's slot is empty (0 visits, value 0) until its update lands.
    counts = tree.node_visits[pn].astype(jnp.float32)
    if num_lanes == 1:
        lane_count, lane_returns = 1.0, returns
    else:
        lane_count, lane_returns = _lanes_sum(same, jnp.ones_like(returns)), _lanes_sum(same, returns)
    new_values = (tree.node_values[pn] * counts + lane_returns) / (counts + lane_count)

    # Proven bounds: the new node's from its position, then up the path.
    at_new = (i == leaf[:, None]) & exps.new_node[:, None]
    start = jnp.where(exps.new_node, leaf - 1, leaf)
    extra = tree.extra_data
    if num_lanes == 1:
        lower = jnp.where(at_new, exps.lower[:, None], extra.value_lower[pn])
        upper = jnp.where(at_new, exps.upper[:, None], extra.value_upper[pn])
        plies = jnp.where(at_new, exps.plies[:, None], extra.value_plies[pn])
    else:
        lower = jnp.where(at_new, exps.lower[:, None], LOSS)
        upper = jnp.where(at_new, exps.upper[:, None], WIN)
        plies = jnp.where(at_new, exps.plies[:, None], 0)
    new_edges = (paths.node, paths.action, exps.reward, exps.discount, exps.lower, exps.upper, exps.plies,
                 exps.creates & on)
    bounds = solver.prove_lanes(
        tree, nodes, on_path, paths.actions, rewards, discounts, start, leaf, lower, upper, plies, at_new,
        exps.accumulate & (exps.discount == 0.0), exps.reward, new_edges,
    )

    # Edges: each edge above the leaf gets its child's new value; a full
    # tree's collecting edge gets the average of the values it collected.
    safe = jnp.minimum(paths.node, capacity - 1), jnp.maximum(paths.action, 0)
    edge_visits = tree.children_visits[safe].astype(jnp.float32)
    collects = exps.accumulate & on
    if num_lanes == 1:
        collected_count, collected_sum = 1.0, exps.value
    else:
        same_edge = (collects[:, None] & collects[None] & (paths.node[:, None] == paths.node[None])
                     & (paths.action[:, None] == paths.action[None]))
        collected_count = jnp.sum(same_edge, axis=1).astype(jnp.float32)
        collected_sum = jnp.sum(jnp.where(same_edge, exps.value[None], 0.0), axis=1)
    collected = (tree.children_values[safe] * edge_visits + collected_sum) / (edge_visits + collected_count)
    child_values = jnp.concatenate([new_values[:, 1:], jnp.zeros((num_lanes, 1), jnp.float32)], axis=1)
    at_collector = (i == leaf[:, None]) & collects[:, None]
    edge_on = has_edge | at_collector
    none = jnp.int32(capacity)
    creates = exps.creates & on
    return TreeUpdate(
        node=jnp.where(creates, exps.index, none),
        parent=paths.node,
        action=paths.action,
        raw_value=exps.value,
        prior_logits=exps.prior_logits,
        embedding=exps.child_env,
        link_node=jnp.where(creates, paths.node, none),
        edge_node=jnp.where(paths.expand & on, paths.node, none),
        reward=exps.reward,
        discount=exps.discount,
        path_nodes=jnp.where(on_path, nodes, none),
        path_values=new_values,
        bound_nodes=jnp.where(on_path, nodes, none) if num_lanes == 1 else jnp.full_like(nodes, none),
        path_lower=bounds[0] if num_lanes == 1 else lower,
        path_upper=bounds[1] if num_lanes == 1 else upper,
        path_plies=bounds[2] if num_lanes == 1 else plies,
        edge_nodes=jnp.where(edge_on, nodes, none),
        edge_actions=jnp.where(edge_on, paths.actions, 0),
        edge_values=jnp.where(at_collector, collected[:, None], child_values),
    ), (None if num_lanes == 1 else bounds)
