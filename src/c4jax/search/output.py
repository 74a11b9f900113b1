"""Output: the move to play and the root's statistics, from the final tree.

The move is the most visited root action (ties to the higher Q-value), among
the actions the solver lets the root play; Gumbel MuZero plays its own
recommendation (Danihelka et al. 2022); a temperature above 0 samples the
visit distribution instead (AlphaZero, Silver et al. 2017).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import mctx

from c4jax.env import Env
from c4jax.search.options import SearchOptions
from c4jax.search.selection import qtransform
from c4jax.search.tree import LOSS, ROOT, node_view

__all__ = ["SearchOutput", "search_output"]


@chex.dataclass(frozen=True)
class SearchOutput:
    """What :func:`run_mcts` returns (shapes for a batch; one game drops ``B``
    everywhere except in ``search_tree``).

    action: ``int32[B]``, the move to play: the most visited (ties to the
      higher Q; Gumbel: the best ``g + logits + sigma(q)`` among the actions
      within one visit of the most visited); -1 for a finished game
      (no search is run there).
    action_weights: ``float32[B, A]``, the root's visit distribution (all 0
      for a finished game).
    visit_counts: ``int32[B, A]``, the root's per-action visit counts.
    qvalues: ``float32[B, A]``, the root's Q-values for the player to move
      (``r + discount * V(child)``; 0 for unvisited actions; with the solver,
      exactly +1 / -1 for an action proven to win / lose, unless every
      action loses).
    value: ``float32[B]``, the root's value for the player to move (the mean
      of all backed-up returns; with the solver exactly +1 / -1 once the root
      is proven won / lost; 0 for a finished game).
    qvalue_lower, qvalue_upper: ``float32[B, A]``, what the solver proved
      about each root action's value for the player to move: ``[1, 1]`` a
      win, ``[0, 0]`` a draw, ``[-1, -1]`` a loss, ``[-1, 1]`` nothing
      (always, with ``solver=False``); illegal actions ``[-1, -1]`` (an
      illegal move loses).  The proven bounds of every node are in
      ``search_tree.extra_data`` (:class:`~c4jax.search.tree.TreeExtraData`).
    proven_plies: ``int32[B, A]``, for a root action proven to win or lose:
      the plies to the end of the game through it along the proof, at most
      (1: the move wins at once; a win: the fastest proven so far; a loss:
      the slowest against the fastest proven answers); 0 otherwise.  The
      move played is the fastest proven win, and in a root proven lost the
      slowest proven loss (ties: visits, as ever).
    non_finite: ``int32[B]``, the evaluations of this search whose
      ``value_fn`` or ``prior_fn`` gave NaN or infinity (leaf values and the
      priors of nodes it added, the root's included), which the search
      counted as the rule says (NaN 0, infinities clipped); 0 without them.
    search_tree: an :class:`mctx.Tree` with a leading batch axis (``[1, ...]``
      for one game) whose ``embeddings`` are :class:`~c4jax.env.Env`; pass it
      through :func:`c4jax.get_subtree` to reuse it.
    """

    action: jax.Array
    action_weights: jax.Array
    visit_counts: jax.Array
    qvalues: jax.Array
    value: jax.Array
    qvalue_lower: jax.Array
    qvalue_upper: jax.Array
    search_tree: mctx.Tree
    proven_plies: jax.Array
    non_finite: jax.Array


def sample_by_visits(key, visits, allowed, temperature, default):
    """An action sampled with probability ``visits ** (1 / temperature)``
    among the ``allowed`` visited ones (AlphaZero's move selection in
    self-play, Silver et al. 2017, "Self-play"); ``default`` where none is
    allowed and visited.  ``visits`` int32[A], ``allowed`` bool[A],
    ``temperature`` > 0; returns int32[]."""
    logp = jnp.log(jnp.maximum(visits.astype(jnp.float32), 1e-30)) / temperature
    ok = allowed & (visits > 0)
    sampled = jax.random.categorical(key, jnp.where(ok, logp, -jnp.inf)).astype(jnp.int32)
    return jnp.where(jnp.any(ok), sampled, default)


def search_output(key, tree: mctx.Tree, env: Env, opts: SearchOptions, solver, non_finite) -> SearchOutput:
    """The :class:`SearchOutput` of one game (unbatched) from its final tree
    and its count of ``non_finite`` evaluations; ``key`` is consumed when
    ``opts.temperature > 0``."""
    legal = env.game.legal_action_mask(env)
    visits = tree.children_visits[ROOT]
    qvalues = solver.root_qvalues(tree)
    playable = solver.playable(tree, env, legal)
    # Most visited, ties to the higher Q: (q + 1) / 4 < 1 never outweighs a visit.
    score = jnp.where(playable, visits.astype(jnp.float32) + (qvalues + 1.0) / 4.0, -jnp.inf)
    action = jnp.argmax(score).astype(jnp.int32)
    if opts.selection == "gumbel":
        # Gumbel MuZero's own recommendation (as in mctx.gumbel_muzero_policy):
        # among the actions sequential halving kept to the end, the highest
        # g + logits + sigma(q).  mctx keeps only the most visited; when the
        # budget does not divide evenly the last candidates differ by one
        # visit, so we keep those within one visit.
        completed = qtransform(opts, solver, at_root=True)(node_view(tree, ROOT)[0], 0)
        logits = tree.children_prior_logits[ROOT]
        gumbel_score = jnp.maximum(
            -1e9, tree.extra_data.root_gumbel + logits - jnp.max(logits) + completed
        )
        kept = playable & (visits >= jnp.max(jnp.where(playable, visits, 0)) - 1)
        action = jnp.argmax(jnp.where(kept, gumbel_score, -jnp.inf)).astype(jnp.int32)
    if opts.temperature > 0:
        action = sample_by_visits(key, visits, playable, opts.temperature, action)
    total = jnp.sum(visits)
    weights = visits.astype(jnp.float32) / jnp.maximum(total, 1).astype(jnp.float32)
    q_lower, q_upper, q_plies = solver.qvalue_bounds(tree)
    return SearchOutput(
        qvalue_lower=jnp.where(legal, q_lower, LOSS),
        qvalue_upper=jnp.where(legal, q_upper, LOSS),
        action=jnp.where(env.done, -1, action),
        action_weights=jnp.where(env.done, 0.0, weights),
        visit_counts=visits,
        qvalues=jnp.where(visits > 0, qvalues, 0.0),
        value=solver.root_value(tree),
        search_tree=tree,
        proven_plies=jnp.where(legal, q_plies, 0),
        non_finite=non_finite,
    )
