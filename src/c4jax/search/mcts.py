"""Batched, terminal-aware MCTS on mctx's ``Tree``, for one game: the
root's evaluation (prior, noise, value), the loop over simulations, and the
output.

The loop is our own (mctx 0.0.71's ``search`` takes no initial tree, so it
cannot continue a reused subtree, and it keeps descending below finished
games), built from mctx's public pieces: the :class:`mctx.Tree` layout, the
action-selection functions and the Q transforms; with the same key it builds
the same tree as ``mctx.muzero_policy`` wherever mctx's own search is
correct.  One simulation, one module per stage as in mctx's ``_src/``:

1. selection (:mod:`c4jax.search.selection`): from the root to an unexpanded
   edge, a finished game or ``max_depth``, recording the path;
2. expansion and evaluation (:mod:`c4jax.search.expansion`): step the game
   into a new node (if the capacity allows) and value it with rollouts;
3. backup (:mod:`c4jax.search.backup`): the return along the recorded path,
   with the solver's proofs (:mod:`c4jax.search.solver`);
4. output (:mod:`c4jax.search.output`): the move and the root's statistics.

A simulation costs ``O(max_depth * A)`` plus its rollouts, whatever the
node capacity ``N``: its writes are pending (:mod:`c4jax.search.tree`),
so XLA updates the tree in place.
Each step derives the keys it needs from the game's key (:func:`_root_keys`).
Every tree here is unbatched (``[N]``, ``[N, A]``);
:mod:`c4jax.search.programs` runs the steps over a batch.  References:
Browne et al. 2012 (MCTS), Silver et al. 2017 (PUCT), Danihelka et al. 2022
(Gumbel).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import mctx

from c4jax.games.env import Env
from c4jax.search.backup import backup
from c4jax.search.expansion import evaluate_in_turn, evaluate_leaf, expand, share_new_nodes, shared_winning_moves
from c4jax.search.options import SearchOptions
from c4jax.search.output import SearchOutput, search_output
from c4jax.search.selection import descend, make_selection
from c4jax.search.solver import make_solver
from c4jax.search.tree import ROOT, apply_update, gather, masked_prior, new_tree, no_update, same_position
from c4jax.search.values import prior_and_flag

__all__ = ["RootEvaluation", "evaluate_root", "finish", "simulate", "start_tree"]


def _dirichlet(key, logits, legal, fraction, alpha):
    """Root prior ``(1 - f) p + f Dir(alpha)`` over the legal actions (AlphaZero)."""
    probs = jax.nn.softmax(logits)
    noise = jax.random.dirichlet(key, jnp.full(logits.shape, alpha, jnp.float32))
    noise = jnp.where(legal, noise, 0.0)
    noise = noise / jnp.maximum(jnp.sum(noise), 1e-30)
    mixed = (1.0 - fraction) * probs + fraction * noise
    tiny = jnp.finfo(jnp.float32).tiny
    return jnp.where(legal, jnp.log(jnp.maximum(mixed, tiny)), jnp.finfo(jnp.float32).min)


class RootEvaluation(NamedTuple):
    """What the first stage of one game's search computes (:func:`evaluate_root`).

    logits: ``float32[A]``, the root's prior (noise mixed in, masked);
      ``prior_bad``: ``int32[]``, 1 if ``prior_fn`` gave NaN or infinity.
    root_gumbel: ``float32[A]`` (Gumbel search) or ``None``.
    value, value_bad: the root's leaf value and its non-finite flag; bounds
      ``lower``, ``upper``, ``plies`` (:meth:`static_bounds`); zeros when the
      tree is continued (its root is valued already).
    """

    logits: jax.Array
    prior_bad: jax.Array
    root_gumbel: jax.Array | None
    value: jax.Array
    value_bad: jax.Array
    lower: jax.Array
    upper: jax.Array
    plies: jax.Array


def _root_keys(key) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """One game's keys, from its search key: ``(root_key, noise_key,
    search_key, action_key)``, for the root's value, its noise, the
    simulations and the output."""
    root_key, policy_key = jax.random.split(key)
    action_key, noise_key, search_key = jax.random.split(policy_key, 3)
    return root_key, noise_key, search_key, action_key


def evaluate_root(key, env: Env, *, opts: SearchOptions, continuing: bool) -> RootEvaluation:
    """The first stage of one game's search: its root's prior, noise and
    value.  ``continuing`` (static): the anytime driver's chunks (the
    tree's root is valued already)."""
    root_key, noise_key, _, _ = _root_keys(key)
    legal = env.game.legal_action_mask(env)
    wins = shared_winning_moves(env, opts)
    logits, prior_bad = prior_and_flag(env, opts.prior, opts.prior_fn, wins)
    root_gumbel = None
    if opts.selection == "gumbel":
        root_gumbel = opts.gumbel_scale * jax.random.gumbel(noise_key, logits.shape)
    elif opts.dirichlet_fraction > 0:
        logits = _dirichlet(noise_key, logits, legal, opts.dirichlet_fraction, opts.dirichlet_alpha)
    if continuing:
        value, value_bad = jnp.float32(0), jnp.bool_(False)
        lower, upper, plies = jnp.float32(0), jnp.float32(0), jnp.int32(0)
    else:
        # split(key, 1)[0]: the key make_root_fn gives row 0 of a batch of one.
        value, value_bad = evaluate_leaf(jax.random.split(root_key, 1)[0], env, opts)
        lower, upper, plies = make_solver(opts.solver).static_bounds(env, wins)
    return RootEvaluation(
        logits=masked_prior(logits, legal), prior_bad=(prior_bad & ~env.done).astype(jnp.int32),
        root_gumbel=root_gumbel, value=value, value_bad=value_bad, lower=lower, upper=upper, plies=plies)


def _root_tree(root: RootEvaluation, env: Env, tree, opts: SearchOptions,
               continuing: bool) -> tuple[mctx.Tree, jax.Array]:
    """The tree to search: a fresh root, or the reused ``tree`` if its root is
    ``env`` (with this search's root prior, noise and legal mask);
    ``continuing`` (static): ``tree``'s root is ``env``, unchecked (the
    anytime driver's chunks).  With it ``int32[]``: the root's evaluations
    whose user function gave NaN or infinity."""
    legal = env.game.legal_action_mask(env)
    logits, prior_bad = root.logits, root.prior_bad
    if continuing:  # (never Gumbel: the driver refuses it)
        tree = tree.replace(root_invalid_actions=(~legal).astype(jnp.float32))
        if opts.dirichlet_fraction == 0:
            # The first chunk stored this very prior: not written again (a
            # write would copy the whole prior array).
            return tree, jnp.int32(0)
        return tree.replace(children_prior_logits=tree.children_prior_logits.at[ROOT].set(logits)), prior_bad

    def fresh():
        tree = new_tree(env, logits, root.value, opts.capacity, root.root_gumbel, root.lower, root.upper, root.plies)
        return tree, prior_bad + root.value_bad.astype(jnp.int32)

    if tree is None:
        return fresh()

    def reused():
        return tree.replace(
            extra_data=tree.extra_data.replace(
                root_gumbel=(jnp.zeros_like(tree.extra_data.root_gumbel) if root.root_gumbel is None
                             else root.root_gumbel)),
            root_invalid_actions=(~legal).astype(jnp.float32),
            children_prior_logits=tree.children_prior_logits.at[ROOT].set(logits),
        ), prior_bad

    reusable = (tree.node_visits[ROOT] > 0) & same_position(gather(tree.embeddings, ROOT), env)
    # One branch runs (one game; a batch's vmap selects between both): a
    # reused tree is not rebuilt, a fresh one not compared field by field.
    return jax.lax.cond(reusable, reused, fresh)


def start_tree(key, env: Env, tree=None, *, opts: SearchOptions) -> tuple[mctx.Tree, jax.Array]:
    """The anytime driver's tree before its first chunk: ``env``'s root
    evaluated and set up as a search from ``tree`` sets it up (a fresh
    root, or ``tree`` if its root is ``env``), so that every chunk, the
    first included, runs the continuing simulation stage (one compiled
    simulation program).  With it ``int32[]``: the root's evaluations
    whose user function gave NaN or infinity, less a non-finite root prior
    where the chunk counts it (Dirichlet noise: each chunk writes its own)."""
    root = evaluate_root(key, env, opts=opts, continuing=False)
    tree, non_finite = _root_tree(root, env, tree, opts, continuing=False)
    if opts.dirichlet_fraction > 0:
        non_finite = non_finite - root.prior_bad
    return tree, non_finite


def _descend_lanes(key, tree, select, max_depth: int, lanes: int):
    """The descents of one step's ``lanes`` lanes, one after another: lane
    ``k`` counts the paths of lanes ``0..k-1`` as virtual losses.  A
    :class:`Path` with a leading ``[lanes]`` axis."""
    size = max_depth + 1
    num_actions = tree.children_index.shape[-1]
    keys = jax.random.split(key, lanes)
    no_edges = jnp.full((size, lanes), -1, jnp.int32)

    def lane(k, acc):
        edges, paths = acc
        path = descend(keys[k], tree, select, max_depth, in_flight=edges)
        paths = jax.tree.map(lambda a, x: a.at[k].set(x), paths, path)
        taken = jnp.where(path.actions >= 0, path.nodes * num_actions + path.actions, -1)
        return edges.at[:, k].set(taken), paths

    shapes = jax.eval_shape(lambda: descend(keys[0], tree, select, max_depth, in_flight=no_edges))
    paths = jax.tree.map(lambda s: jnp.zeros((lanes,) + s.shape, s.dtype), shapes)
    return jax.lax.fori_loop(0, lanes, lane, (no_edges, paths))[1]


def finish(key, tree, env: Env, non_finite, *, opts: SearchOptions) -> SearchOutput:
    """The last stage of one game's search: its :class:`SearchOutput`,
    without ``search_tree`` (``None``; the caller has the tree)."""
    out = search_output(_root_keys(key)[3], tree, env, opts, make_solver(opts.solver), non_finite)
    return out.replace(search_tree=None)


def simulate(key, env: Env, root: RootEvaluation, tree=None, *, opts: SearchOptions, num_simulations,
              continuing: bool) -> tuple[mctx.Tree, jax.Array]:
    """The second stage of one game's search: the tree to search
    (:func:`_root_tree`) after ``num_simulations`` simulations, and the
    evaluations whose user function gave NaN or infinity (``int32[]``)."""
    solver = make_solver(opts.solver)
    fresh = tree is None and not continuing  # the tree is the root alone
    tree, root_non_finite = _root_tree(root, env, tree, opts, continuing)
    search_key = _root_keys(key)[2]
    # Known for a fresh tree: a sum over its visit counts, constants, is
    # folded by XLA while it compiles, node by node.
    next_free = jnp.int32(1) if fresh else jnp.sum(tree.node_visits > 0).astype(jnp.int32)
    # Only Gumbel's root selection needs the count, and then it is an int.
    select = make_selection(opts, solver, num_simulations if opts.selection == "gumbel" else None)
    active = ~env.done  # a finished game is not searched: its tree is the root alone
    capacity = opts.capacity

    lanes = opts.lanes
    lane_ids = jnp.arange(lanes)

    def simulation(step, state):
        key, tree, pending, next_free, non_finite = state
        # Every write first, then only reads (see c4jax.search.tree).
        tree = apply_update(tree, pending)
        # The key schedule mirrors mctx.search for a batch of one, so that
        # the trees are identical where both searches are correct.
        key, simulate_key, expand_key = jax.random.split(key, 3)
        if lanes == 1:
            path = descend(jax.random.split(simulate_key, 1)[0], tree, select, opts.max_depth)
            expansion = expand(jax.random.split(expand_key, 1)[0], tree, path, next_free, opts, solver)
            paths, expansions = jax.tree.map(lambda x: x[None], (path, expansion))
            on = jnp.ones(1, bool)
        else:
            # The last step may run fewer lanes, the closing one none; a
            # finished game runs none.
            on = (lane_ids < num_simulations - step * lanes) & active
            paths = _descend_lanes(simulate_key, tree, select, opts.max_depth, lanes)
            expansions = jax.vmap(lambda p: expand(None, tree, p, next_free, opts, solver, evaluate=False))(paths)
            values, value_bad = evaluate_in_turn(jax.random.split(expand_key, lanes), expansions.leaf_env, opts)
            expansions = expansions.replace(value=values, non_finite=expansions.non_finite + value_bad)
            expansions = share_new_nodes(paths, expansions, next_free, capacity, on)
        update, bounds = backup(tree, paths, expansions, solver, on)
        if bounds is not None:  # several lanes: the step proved them in place
            tree = tree.replace(extra_data=tree.extra_data.replace(
                value_lower=bounds[0], value_upper=bounds[1], value_plies=bounds[2]))
        writes = active & (step < num_steps)
        pending = jax.vmap(lambda u: u.masked(writes, capacity))(update)
        added = jnp.sum(writes & expansions.creates & on).astype(jnp.int32)
        non_finite = non_finite + jnp.sum(jnp.where(writes & on, expansions.non_finite, 0)).astype(jnp.int32)
        return key, tree, pending, next_free + added, non_finite

    num_steps = (num_simulations + lanes - 1) // lanes
    init = (search_key, tree, jax.tree.map(lambda x: x[None].repeat(lanes, 0), no_update(tree, opts.max_depth + 1)),
            next_free, root_non_finite)
    # One closing step more, whose own writes are dropped: it applies the last
    # simulation's writes inside the loop, where XLA updates the tree in place.
    # The scope names the loop in the compiled program.
    with jax.named_scope("simulations"):
        _, tree, _, _, non_finite = jax.lax.fori_loop(0, num_steps + 1, simulation, init)
    return tree, non_finite
