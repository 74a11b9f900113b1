"""Output: the move to play and the root's statistics, from the final tree.

The move is the most visited root action (ties to the higher Q-value), among
the actions the solver lets the root play; Gumbel MuZero plays its own
recommendation (Danihelka et al. 2022); a temperature above 0 samples the
visit distribution instead (AlphaZero, Silver et al. 2017).

With the solver, at temperature 0, a visited move with the best proven lower
bound (a draw, say) replaces that move where it scores higher against a
fallible opponent (:func:`fallible_qvalues`).  The tree's means model an
opponent that answers as well as the search, and below a proven move the
search stops exploring the opponent's mistakes, so among proven draws
neither the visit counts nor the means say which move leaves the opponent
the most ways to go wrong.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import mctx

from c4jax.games.env import Env, with_opponent_to_move
from c4jax.search.options import SearchOptions
from c4jax.search.selection import qtransform
from c4jax.search.tree import ILLEGAL_LOGIT, LOSS, ROOT, UNVISITED, WIN, node_view

__all__ = ["SearchOutput", "fallible_qvalues", "ranks_against_fallible", "search_output"]


@chex.dataclass(frozen=True)
class SearchOutput:
    """What :func:`run_mcts` returns (shapes for a batch; one game drops ``B``
    everywhere except in ``search_tree``).

    action: ``int32[B]``, the move to play: the most visited (ties to the
      higher Q; Gumbel: the best ``g + logits + sigma(q)`` among the actions
      within one visit of the most visited); with the solver at temperature
      0, the visited move with the highest proven lower bound (above a loss,
      short of a win) and the highest :func:`fallible_qvalues` instead,
      where that value is higher than the move's own; -1 for a finished
      game (no search is run there).
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
      for one game) whose ``embeddings`` are :class:`~c4jax.games.env.Env`; pass it
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


# A move replaces the search's own only when it scores better by more than
# float32 rounding of a mean over a few hundred values.
_FALLIBLE_MARGIN = 1e-5


def fallible_qvalues(tree: mctx.Tree, max_depth: int) -> jax.Array:
    """``float32[A]``: each root action's value for the player to move
    against a fallible opponent, one that plays each of its legal moves with
    equal probability, estimated on the tree (one game's, unbatched); -2 for
    an unexpanded action.

    ``Q(n, a) = r + discount * V(child)`` (an unexpanded edge into a finished
    game: its reward), where ``V`` of a node, for its player to move, is:

    * +1 / -1 where the solver proved it won / lost, 0 for a finished game;
    * the node's mean where it has no expanded child;
    * at a node of the root's player: the mean of ``Q`` over its visited
      expanded actions not proven worse than another, weighted by their
      visits (the moves as the search plays them);
    * at a node of the opponent: the plain mean of ``Q`` over its legal
      actions; an unexpanded one counts +1 for the opponent if it wins at
      once, -1 if it leaves the root's player a win at once (the opponent
      had a win to block and this move is not on it), else the node's mean.

    ``V`` is the search's mean with the opponent's answers weighted equally
    instead of by the visits of a search that answers well: a move after
    which most answers lose scores higher.  It only ranks moves (a move that
    does not block is taken to leave the win it does not block, as the
    win-else-block rule takes it); nothing proven rests on it.  Computed for
    every node at once, level by level up from the leaves (``max_depth``
    levels at most)."""
    extra = tree.extra_data
    lower, upper = extra.value_lower, extra.value_upper
    legal = tree.children_prior_logits > ILLEGAL_LOGIT
    child = tree.children_index
    expanded = child != UNVISITED
    safe_child = jnp.maximum(child, 0)
    r, d = tree.children_rewards, tree.children_discounts
    visits = tree.children_visits
    # An unexpanded edge visited into a finished game (a full tree) is worth its reward.
    known = ~expanded & (visits > 0) & (d == 0.0)
    mean = tree.node_values
    decided = (lower >= WIN) | (upper <= LOSS)
    fixed = jnp.where(lower >= WIN, WIN, jnp.where(upper <= LOSS, LOSS, jnp.where(tree.embeddings.done, 0.0, mean)))
    # The solver's rule below the root: actions proven worse than another are not taken.
    edge_upper = jnp.where(expanded, r + d * lower[safe_child], jnp.where(known, r, WIN))
    played = legal & expanded & (visits > 0) & (edge_upper >= lower[:, None])
    weights = jnp.where(played, visits, 0).astype(jnp.float32)
    ours = tree.embeddings.to_move == tree.embeddings.to_move[ROOT]
    num_legal = jnp.maximum(jnp.sum(legal, axis=1), 1).astype(jnp.float32)
    leaf = decided | ~jnp.any(legal & expanded, axis=1) | (ours & ~jnp.any(played, axis=1))

    # An opponent's unexpanded answer: a win at once, a win left to the root's player, or the node's mean.
    envs = tree.embeddings
    game = envs.game
    wins_now = jax.vmap(game.winning_moves)(envs)
    to_block = jax.vmap(game.winning_moves)(jax.vmap(with_opponent_to_move)(envs)) & legal
    unblocked = jnp.any(to_block, axis=1, keepdims=True) & ~to_block
    unexpanded = jnp.where(wins_now, WIN, jnp.where(unblocked, LOSS, mean[:, None]))

    def q_of(values):
        return jnp.where(expanded, r + d * values[safe_child], jnp.where(known, r, unexpanded))

    def level(values):
        q = q_of(values)
        mine = jnp.sum(weights * q, axis=1) / jnp.maximum(jnp.sum(weights, axis=1), 1.0)
        theirs = jnp.sum(jnp.where(legal, q, 0.0), axis=1) / num_legal
        return jnp.where(leaf, values, jnp.where(ours, mine, theirs)).astype(jnp.float32)

    def two_levels(state):
        # Two buffers, each written from the other: XLA updates both in
        # place (one buffer read and written by a level would be copied).
        i, values, _, _ = state
        between = level(values)
        values = level(between)
        return i + 2, values, between, jnp.any(values != between)

    # Each level fixes one more level above the leaves; a tree is at most
    # max_depth deep.
    _, values, _, _ = jax.lax.while_loop(lambda s: (s[0] <= max_depth) & s[3], two_levels,
                                         (jnp.int32(0), fixed, jnp.zeros_like(fixed), jnp.bool_(True)))
    return jnp.where(expanded[ROOT] | known[ROOT], q_of(values)[ROOT], -2.0)


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
    q_lower, q_upper, q_plies = solver.qvalue_bounds(tree)
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
    elif opts.solver:
        action = _against_fallible(tree, opts.max_depth, action, playable, q_lower, visits, score)
    total = jnp.sum(visits)
    weights = visits.astype(jnp.float32) / jnp.maximum(total, 1).astype(jnp.float32)
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


def ranks_against_fallible(tree: mctx.Tree, env: Env, opts: SearchOptions, solver) -> jax.Array:
    """``bool[]``: whether :func:`search_output` of this tree (one game's)
    computes :func:`fallible_qvalues`, a pass over the whole tree: with the
    solver and no temperature, where a visited playable move has the
    highest proven lower bound, a draw or better short of a win."""
    if opts.temperature > 0 or not opts.solver:
        return jnp.bool_(False)
    legal = env.game.legal_action_mask(env)
    visits = tree.children_visits[ROOT]
    return jnp.any(_proven_short_of_win(solver.playable(tree, env, legal), solver.qvalue_bounds(tree)[0], visits))


def _proven_short_of_win(playable, q_lower, visits) -> jax.Array:
    """``bool[A]``: the visited playable moves with the highest proven lower
    bound, where that is a draw or better short of a win."""
    best = jnp.max(jnp.where(playable, q_lower, -jnp.inf))
    return playable & (visits > 0) & (q_lower == best) & (best > LOSS) & (best < WIN)


def _against_fallible(tree, max_depth, action, playable, q_lower, visits, score):
    """``action``, or the visited playable move with the highest proven lower
    bound (a draw or better, short of a win: proven wins are already the
    fastest) that scores best against a fallible opponent
    (:func:`fallible_qvalues`), where that is more than ``action`` scores
    (ties: the higher ``score``).  The estimate is only computed where some
    such move exists (:func:`ranks_against_fallible`)."""
    proven = _proven_short_of_win(playable, q_lower, visits)
    fallible = _only_where(jnp.any(proven), lambda: fallible_qvalues(tree, max_depth),
                           jnp.zeros(visits.shape, jnp.float32))
    better = proven & (fallible > fallible[action] + _FALLIBLE_MARGIN)
    top = better & (fallible == jnp.max(jnp.where(better, fallible, -jnp.inf)))
    return jnp.where(jnp.any(better), jnp.argmax(jnp.where(top, score, -jnp.inf)).astype(jnp.int32), action)


def _only_where(flag, fn, default):
    """``fn()`` where ``flag`` (``bool[]``), else ``default``.  A loop of at
    most one step: under ``vmap`` it runs ``fn`` only if some game's flag is
    set (``lax.cond`` would run it for every batch)."""
    return jax.lax.while_loop(lambda s: s[0], lambda s: (jnp.bool_(False), fn()), (flag, default))[1]
