"""Selection: the action-selection rules and the descent from the root.

One simulation's selection phase (Browne et al. 2012, sec. 3.1): from the
root, pick actions with the selection rule until an action whose child was
never expanded, a finished game, or ``max_depth``.  Illegal actions (and,
with the solver, actions proven worse than a sibling) are masked at every
node, not only at the root as in mctx.  The rules are mctx's own functions
(PUCT: ``mctx.muzero_action_selection``; Gumbel: ``mctx.gumbel_muzero_*``)
and UCT (Kocsis & Szepesvari 2006) on mctx's ``Tree``.

The descent only reads the tree, one node view per level
(:func:`~c4jax.search.tree.node_view`): the selection rule sees a tree of one
node, at index 0.  It records the path, ``S = max_depth + 1``
entries: the node at each depth, the action taken there and the reward and
discount of that edge, so that the backup needs no walk up the parents.
"""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import mctx

from c4jax.search.options import SearchOptions
from c4jax.search.tree import NO_PARENT, ROOT, UNVISITED, legal_at, node_view

__all__ = ["Path", "descend", "make_selection", "qtransform"]


def _qtransform_by_min_max(tree: mctx.Tree, node, *, qvalues, min_value, max_value) -> jax.Array:
    """``mctx.qtransform_by_min_max``'s formula (unvisited actions score 0) on
    the solver's Q-values (with the solver, proven ±1 at the root)."""
    visits = tree.children_visits[node]
    score = jnp.where(visits > 0, qvalues(tree, node), min_value)
    return (score - min_value) / (max_value - min_value)


def qtransform(opts: SearchOptions, solver, at_root: bool):
    """The Q transform ``(tree, node) -> float32[A]`` of ``opts.qtransform``,
    for the root or (``at_root=False``) for the nodes below it."""
    if opts.qtransform == "min_max":
        return functools.partial(
            _qtransform_by_min_max, qvalues=functools.partial(solver.qvalues, at_root=at_root),
            min_value=opts.value_min, max_value=opts.value_max,
        )
    if opts.qtransform == "parent_and_siblings":
        return mctx.qtransform_by_parent_and_siblings
    return mctx.qtransform_completed_by_mix_value


def _uct_selection(key, tree, node, allowed, c, qvalues):
    """UCB1 on trees (Kocsis & Szepesvari 2006): unvisited actions first, then
    ``Q + c sqrt(ln n / n_a)``; ties broken by noise of 1e-7."""
    visits = tree.children_visits[node].astype(jnp.float32)
    total = jnp.maximum(jnp.sum(visits), 1.0)
    bonus = c * jnp.sqrt(jnp.log(total) / jnp.maximum(visits, 1.0))
    score = jnp.where(visits > 0, qvalues(tree, node) + bonus, 1e9)
    score = score + 1e-7 * jax.random.uniform(key, score.shape)
    return jnp.argmax(jnp.where(allowed, score, -jnp.inf)).astype(jnp.int32)


def make_selection(opts: SearchOptions, solver, num_simulations: int):
    """``select(key, tree, node, depth, at_root) -> int32[]`` for
    ``opts.selection``, never an action the solver disallows (illegal ones
    first of all).  ``at_root`` is static: the root (depth 0) has rules of its
    own (the solver's proven Q-values, Gumbel's sequential halving), so the
    levels below it are compiled without them."""

    def allowed_at(tree, node, at_root):
        return solver.allowed(tree, node, legal_at(tree, node), at_root)

    if opts.selection == "puct":
        def select(key, tree, node, depth, at_root):
            # mctx masks invalid actions at depth 0 only; present every node's
            # disallowed actions as the "root" mask and call it with depth 0.
            masked = tree.replace(
                root_invalid_actions=(~allowed_at(tree, node, at_root)).astype(jnp.float32)
            )
            return mctx.muzero_action_selection(
                key, masked, node, 0,
                pb_c_init=opts.pb_c_init, pb_c_base=opts.pb_c_base,
                qtransform=qtransform(opts, solver, at_root),
            )
    elif opts.selection == "uct":
        c = opts.uct_c * (opts.value_max - opts.value_min)

        def select(key, tree, node, depth, at_root):
            qvalues = functools.partial(solver.qvalues, at_root=at_root)
            return _uct_selection(key, tree, node, allowed_at(tree, node, at_root), c, qvalues)
    else:
        def select(key, tree, node, depth, at_root):
            qt = qtransform(opts, solver, at_root)
            if at_root:
                # The root's disallowed actions count as invalid there.
                tree = tree.replace(
                    root_invalid_actions=(~allowed_at(tree, ROOT, True)).astype(jnp.float32)
                )
                return mctx.gumbel_muzero_root_action_selection(
                    key, tree, node,
                    num_simulations=num_simulations,
                    max_num_considered_actions=opts.max_num_considered_actions,
                    qtransform=qt,
                )
            # Interior: deterministic, and never picks an illegal action: their
            # probability is 0 while some legal action scores > 0.
            return mctx.gumbel_muzero_interior_action_selection(key, tree, node, depth, qtransform=qt)

    return select


@chex.dataclass(frozen=True)
class Path:
    """What the descent found (one game; ``S = max_depth + 1``).

    node, depth: ``int32[]``, where it stopped.  action: ``int32[]``, the
      unexpanded action to step when ``expand``; else ``node`` is a finished
      game or at ``max_depth``.
    expand: ``bool[]``.
    nodes: ``int32[S]``, the node at each depth (``NO_PARENT`` past ``depth``).
    actions: ``int32[S]``, the action taken at each depth (-1 past it).
    rewards, discounts: ``float32[S]``, those of each edge taken (0 for the
      unexpanded edge, which the expansion steps, and past it).
    """

    node: jax.Array
    depth: jax.Array
    action: jax.Array
    expand: jax.Array
    nodes: jax.Array
    actions: jax.Array
    rewards: jax.Array
    discounts: jax.Array


def descend(key, tree: mctx.Tree, select, max_depth: int) -> Path:
    """The selection phase of one simulation (reads the tree only)."""
    size = max_depth + 1

    def cond(s):
        return s[5]

    def step(s, at_root: bool):
        key, node, depth, _, _, _, nodes, actions = s
        key, select_key = jax.random.split(key)
        view, children_done = node_view(tree, node)
        action = select(select_key, view, 0, depth, at_root)
        child = view.children_index[0, action]
        unexpanded = child == UNVISITED
        actions = actions.at[depth].set(action)
        child_depth = depth + 1
        node = jnp.where(unexpanded, node, child)
        depth = jnp.where(unexpanded, depth, child_depth)
        # (Past the depth reached every entry is NO_PARENT.)
        nodes = nodes.at[child_depth].set(jnp.where(unexpanded, NO_PARENT, child))
        stop = unexpanded | children_done[action] | (child_depth >= max_depth)
        return key, node, depth, action, unexpanded, ~stop, nodes, actions

    init = (
        key,
        jnp.int32(ROOT),
        jnp.int32(0),
        jnp.int32(-1),
        jnp.bool_(False),
        jnp.bool_(True),
        jnp.full(size, NO_PARENT, jnp.int32).at[0].set(ROOT),
        jnp.full(size, -1, jnp.int32),
    )
    # The root's level, then the levels below it in a loop.
    state = step(init, at_root=True)
    # The scope names the loop in the compiled program (tests/test_search_cost.py).
    with jax.named_scope("descent"):
        state = jax.lax.while_loop(cond, functools.partial(step, at_root=False), state)
    _, node, depth, action, expand, _, nodes, actions = state
    # The edges taken, in one gather after the loop rather than one per level.
    taken = jnp.arange(size) < depth
    edge_nodes, edge_actions = jnp.maximum(nodes, 0), jnp.maximum(actions, 0)
    rewards = jnp.where(taken, tree.children_rewards[edge_nodes, edge_actions], 0.0)
    discounts = jnp.where(taken, tree.children_discounts[edge_nodes, edge_actions], 0.0)
    return Path(
        node=node, depth=depth, action=action, expand=expand,
        nodes=nodes, actions=actions, rewards=rewards, discounts=discounts,
    )
