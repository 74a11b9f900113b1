"""The solver: proven bounds on game-theoretic values, behind one interface.

:func:`make_solver` picks the implementation once per search, from
``SearchOptions.solver``; the other stages call its methods and never ask
which one they have.

* :class:`ScoreBoundsSolver` (``solver=True``, the default): score-bounded
  MCTS (Cazenave & Saffidine 2011, which extends the MCTS-Solver of Winands
  et al. 2008 to draws).  A finished game's value is known (0 for the player
  to move: its result is in the reward of the move that ended it); a node's
  value for its player to move lies in ``[max_a lower(a), max_a upper(a)]``
  with ``[lower(a), upper(a)] = r + discount * [bounds of the child]``
  (``[-1, 1]`` for an unexpanded action), tightened by the position itself: a
  player with a winning move has a win, one facing two winning moves of the
  opponent (and having none) has a loss (decisive moves, Teytaud & Teytaud
  2010).  PUCT and UCT selection never take an action proven worse than
  another action of the same node (its score is masked); Gumbel's interior
  nodes select by mctx's deterministic rule on the solver's Q-values, which
  can take one (a proven loss still scores low there).  At the root, an action proven to win or lose has Q exactly
  +1 or -1 (in selection and in the output), an action proven to lose is
  neither explored nor played while another legal action is not proven to
  lose, and the move played is never one proven worse than another (a win in
  one, else a proven win, is played when there is one).  Below the root the
  means are left as backed up; among moves of the best proven lower bound
  the output stage picks by :func:`c4jax.search.output.fallible_qvalues`.
* :class:`NoSolver` (``solver=False``): plain mean backups; bounds are only
  ``[0, 0]`` for finished games and ``[-1, 1]`` otherwise.

Shapes are for one game (the search is vmapped over the batch): ``A``
actions, ``S = max_depth + 1`` path entries.  The methods that take a
``(tree, node)`` pair read a node view (:func:`c4jax.search.tree.node_view`,
``node`` 0); those that take the whole tree read its root's view themselves.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import mctx

from c4jax.games.env import Env
from c4jax.games.rollout import winning_moves_of_both
from c4jax.search.tree import LOSS, ROOT, UNVISITED, WIN, legal_at, node_view, set_entry, write

__all__ = ["NoSolver", "ScoreBoundsSolver", "make_solver", "edge_bounds", "edge_plies"]


def edge_bounds(view: mctx.Tree, node) -> tuple[jax.Array, jax.Array]:
    """Proven bounds ``float32[A]`` on ``Q(node, a)`` for the player to move,
    from a node view (:func:`~c4jax.search.tree.node_view`, ``node`` 0):
    ``r + discount * [child's bounds]`` (discounts are -1 or 0, so the
    child's upper bound gives the edge's lower one); ``[-1, 1]`` for an
    unexpanded action, except that a visited unexpanded edge into a finished
    game (a full tree) is worth its reward exactly."""
    extra = view.extra_data
    r = view.children_rewards[node]
    d = view.children_discounts[node]
    expanded = view.children_index[node] != UNVISITED
    known = ~expanded & (view.children_visits[node] > 0) & (d == 0.0)
    lower = jnp.where(expanded, r + d * extra.children_upper[node], jnp.where(known, r, LOSS))
    upper = jnp.where(expanded, r + d * extra.children_lower[node], jnp.where(known, r, WIN))
    return lower, upper


def edge_plies(view: mctx.Tree, node) -> jax.Array:
    """``int32[A]``: plies to the end of the game through each action, where
    its result is proven (from a node view read with ``plies=True``): one
    more than the child's ``value_plies`` (1 into a finished game); 1 for a
    visited unexpanded edge into a finished game (a full tree); 0 for
    another unexpanded edge."""
    expanded = view.children_index[node] != UNVISITED
    known = ~expanded & (view.children_visits[node] > 0) & (view.children_discounts[node] == 0.0)
    return jnp.where(expanded, 1 + view.extra_data.children_plies[node], jnp.where(known, 1, 0)).astype(jnp.int32)


def _node_plies(legal, e_lo, e_hi, e_plies, lo, hi, current):
    """``int32[]``: the plies of a node with bounds ``[lo, hi]`` from its
    edges: won, the fastest proven win; lost (every legal edge proven to
    lose), the slowest of those losses; each at most ``current`` when the
    node was already proven so (both are bounds from above on the
    perfect-play distance, and a static proof, a win in one or a loss in
    two, is exact); 0 otherwise."""
    big = jnp.iinfo(jnp.int32).max
    cur = jnp.where(current > 0, current, big)
    win = jnp.min(jnp.where(legal & (e_lo >= WIN), e_plies, big))
    all_lost = jnp.all(~legal | (e_hi <= LOSS)) & jnp.any(legal)
    loss = jnp.where(all_lost, jnp.max(jnp.where(legal, e_plies, 0)), big)
    plies = jnp.where(lo >= WIN, jnp.minimum(cur, win), jnp.where(hi <= LOSS, jnp.minimum(cur, loss), 0))
    return jnp.where(plies == big, 0, plies).astype(jnp.int32)


@dataclasses.dataclass(frozen=True)
class NoSolver:
    """Plain mean backups (``solver=False``): nothing is proven."""

    def static_bounds(self, env: Env, wins=None) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``float32[]`` bounds of a position: ``[0, 0]`` if finished, else
        ``[-1, 1]``; plies 0."""
        del wins
        lower = jnp.where(env.done, 0.0, LOSS).astype(jnp.float32)
        upper = jnp.where(env.done, 0.0, WIN).astype(jnp.float32)
        return lower, upper, jnp.int32(0)

    def allowed(self, tree: mctx.Tree, node, legal, at_root: bool) -> jax.Array:
        """``bool[A]``: the actions selection may take at ``node`` (the root
        if ``at_root``, a static flag)."""
        del tree, node, at_root
        return legal

    def qvalues(self, tree: mctx.Tree, node, at_root: bool) -> jax.Array:
        """``float32[A]``: the Q-values selection sees at ``node``."""
        del at_root
        return tree.qvalues(node)

    def root_qvalues(self, tree: mctx.Tree) -> jax.Array:
        """``float32[A]``: the root's Q-values in the output."""
        return tree.qvalues(ROOT)

    def prove_path(self, tree, path_nodes, path_actions, rewards, discounts, start, leaf,
                   lower, upper, plies, leaf_edge_known, leaf_edge_value):
        """The path's bounds after a simulation (here: unchanged)."""
        del tree, path_nodes, path_actions, rewards, discounts, start, leaf
        del leaf_edge_known, leaf_edge_value
        return lower, upper, plies

    def prove_lanes(self, tree, path_nodes, on_path, path_actions, rewards, discounts, start, leaf,
                    lower, upper, plies, at_new, leaf_edge_known, leaf_edge_value, new_edges):
        """The lanes' bounds after a step (here: unchanged; several lanes:
        the tree's)."""
        if path_nodes.shape[0] == 1:
            return lower, upper, plies
        extra = tree.extra_data
        return extra.value_lower, extra.value_upper, extra.value_plies

    def playable(self, tree: mctx.Tree, env: Env, legal) -> jax.Array:
        """``bool[A]``: the root actions the output may play."""
        del tree, env
        return legal

    def root_value(self, tree: mctx.Tree) -> jax.Array:
        """``float32[]``: the root's value in the output (the mean)."""
        return tree.node_values[ROOT]

    def qvalue_bounds(self, tree: mctx.Tree) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``float32[A]`` bounds on the root's Q-values: nothing proven
        (plies 0)."""
        shape = tree.children_visits[ROOT].shape
        return (jnp.full(shape, LOSS, jnp.float32), jnp.full(shape, WIN, jnp.float32),
                jnp.zeros(shape, jnp.int32))


@dataclasses.dataclass(frozen=True)
class ScoreBoundsSolver:
    """Score-bounded MCTS with decisive moves (``solver=True``); see the
    module docstring."""

    def static_bounds(self, env: Env, wins=None) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Bounds on a position's value for the player to move, from the
        position alone: a finished game is worth 0 (its result belongs to the
        move that ended it); a player with a winning move has a win (decisive
        moves, Teytaud & Teytaud 2010); a player without one facing two or
        more winning moves of the opponent has a loss (it can block only one);
        else ``[-1, 1]``.  ``float32[]`` each, and the plies of the proof
        (``int32[]``: 1 for a win in one, 2 for a loss in two, else 0).
        ``wins``: :func:`~c4jax.games.rollout.winning_moves_of_both` of
        ``env``, where the caller has them."""
        game = env.game
        wins, theirs = winning_moves_of_both(env) if wins is None else wins
        own = jnp.any(wins)
        threats = jnp.sum(theirs & game.legal_action_mask(env))
        lost = ~own & (threats >= 2)
        lower = jnp.where(env.done, 0.0, jnp.where(own, WIN, LOSS))
        upper = jnp.where(env.done, 0.0, jnp.where(lost, LOSS, WIN))
        plies = jnp.where(env.done, 0, jnp.where(own, 1, jnp.where(lost, 2, 0)))
        return lower.astype(jnp.float32), upper.astype(jnp.float32), plies.astype(jnp.int32)

    def allowed(self, tree: mctx.Tree, node, legal, at_root: bool) -> jax.Array:
        """Legal actions not proven worse than another action of ``node``
        (``tree``: a node view): their upper bound reaches the node's lower
        bound (always at least one).  At the root (``at_root``, static) also no action proven to
        lose while some legal action is not (MCTS-Solver's rule; below the
        root a proven loss that is not dominated stays selectable, so the
        means keep counting the opponent's blunders).  ``bool[A]``."""
        _, upper = edge_bounds(tree, node)
        allowed = legal & (upper >= tree.extra_data.value_lower[node])
        if not at_root:
            return allowed
        not_lost = allowed & (upper > LOSS)
        return jnp.where(jnp.any(not_lost), not_lost, allowed)

    def root_qvalues(self, tree: mctx.Tree) -> jax.Array:
        """The root's ``Q(root, a)`` ``float32[A]`` with the proofs applied:
        exactly +1 for an action proven to win, -1 for one proven to lose
        (MCTS-Solver), the mean otherwise.  Only wins and losses replace the
        mean: a proven draw keeps its mean, because comparing an exact 0 with
        its siblings' unproven (rollout-biased) means would bias the choice
        against the proven move.  In a root proven lost (every action loses)
        the means are kept too: they rank the losing moves by how often a
        fallible opponent goes wrong."""
        return self._proven_qvalues(node_view(tree, ROOT)[0], 0)

    def qvalues(self, tree: mctx.Tree, node, at_root: bool) -> jax.Array:
        """``float32[A]``: :meth:`root_qvalues` at the root (``at_root``,
        static), the means below (``tree``: a node view)."""
        return self._proven_qvalues(tree, node) if at_root else tree.qvalues(node)

    def _proven_qvalues(self, tree: mctx.Tree, node) -> jax.Array:
        q = tree.qvalues(node)
        lower, upper = edge_bounds(tree, node)
        lost = tree.extra_data.value_upper[node] <= LOSS
        proven = jnp.where(lower >= WIN, WIN, jnp.where(upper <= LOSS, LOSS, q))
        return jnp.where(lost, q, proven)

    def prove_lanes(self, tree, path_nodes, on_path, path_actions, rewards, discounts, start, leaf,
                    lower, upper, plies, at_new, leaf_edge_known, leaf_edge_value, new_edges):
        """The bounds of the ``K`` lanes of a step (every argument with a
        leading ``[K]``), proved as if their simulations had run one after
        another: lane ``k`` runs :meth:`prove_path` on the tree's bounds as
        lanes ``0..k-1`` left them, and sees the edges this step added
        (``new_edges``: ``(nodes, actions, rewards, discounts, lower, upper,
        plies, created)``, ``[K]`` each: the new child's bounds from its
        position)
        though they are not in the tree yet.  ``lower``, ``upper``, ``plies``
        hold the new node's where ``at_new`` (``bool[K, S]``).  Returns the
        tree's new ``(value_lower, value_upper, value_plies)``, ``[N]``
        (updated in place).  With one lane: :meth:`prove_path`'s ``(lower,
        upper, plies)``, ``[1, S]``, for the tree update to write."""
        if path_nodes.shape[0] == 1:
            out = self.prove_path(
                tree, path_nodes[0], path_actions[0], rewards[0], discounts[0], start[0], leaf[0],
                lower[0], upper[0], plies[0], leaf_edge_known[0], leaf_edge_value[0],
            )
            return tuple(x[None] for x in out)
        capacity, num_actions = tree.children_index.shape
        e_node, e_action, e_reward, e_discount, e_lower, e_upper, e_plies, e_created = new_edges
        e_hit_lo = e_reward + e_discount * e_upper
        e_hit_hi = e_reward + e_discount * e_lower

        def overlay(j, node, e_lo, e_hi, e_pl):
            hit = (e_created & (e_node == node))[:, None] & (e_action[:, None] == jnp.arange(num_actions))
            e_lo = jnp.maximum(e_lo, jnp.max(jnp.where(hit, e_hit_lo[:, None], -jnp.inf), axis=0))
            e_hi = jnp.minimum(e_hi, jnp.min(jnp.where(hit, e_hit_hi[:, None], jnp.inf), axis=0))
            e_pl = jnp.where(jnp.any(hit, axis=0), jnp.max(jnp.where(hit, 1 + e_plies[:, None], 0), axis=0), e_pl)
            return e_lo, e_hi, e_pl

        def lane(k, bounds):
            value_lower, value_upper, value_plies = bounds
            now = tree.replace(extra_data=tree.extra_data.replace(
                value_lower=value_lower, value_upper=value_upper, value_plies=value_plies))
            nodes = path_nodes[k]
            safe = jnp.clip(nodes, 0, capacity - 1)
            # The new node's bounds are its position's; every other node's, the tree's now.
            lo0 = jnp.where(at_new[k], lower[k], value_lower[safe])
            hi0 = jnp.where(at_new[k], upper[k], value_upper[safe])
            pl0 = jnp.where(at_new[k], plies[k], value_plies[safe])
            lo, hi, pl = self.prove_path(
                now, nodes, path_actions[k], rewards[k], discounts[k], start[k], leaf[k],
                lo0, hi0, pl0, leaf_edge_known[k], leaf_edge_value[k], overlay=overlay,
            )
            index = jnp.where(on_path[k], nodes, capacity)
            return tuple(write([value_lower, value_upper, value_plies], index, [lo, hi, pl], prefix=True))

        extra = tree.extra_data
        init = (extra.value_lower, extra.value_upper, extra.value_plies)
        return jax.lax.fori_loop(0, path_nodes.shape[0], lane, init)

    def prove_path(self, tree, path_nodes, path_actions, rewards, discounts, start, leaf,
                   lower, upper, plies, leaf_edge_known, leaf_edge_value, overlay=None):
        """Score bounds of the path's nodes after a simulation, bottom-up.

        ``tree`` is the tree before this simulation's writes; what the
        simulation adds is passed in: ``rewards``, ``discounts``
        (``float32[S]``, edge ``i`` leads from depth ``i`` to ``i + 1``, the
        new edge included), ``lower``, ``upper`` (``float32[S]``, the path's
        bounds, the new node's included; ``plies`` ``int32[S]``, theirs) and,
        for an unexpanded edge that
        collected the evaluation at depth ``leaf`` (a full tree), whether its
        value is now known exactly (``leaf_edge_known``: it ends the game)
        and that value.  Recomputes the bounds of the nodes at depths
        ``start, start - 1, ..., 0`` from their children, stopping at the
        first node whose bounds did not change (its ancestors' cannot either).
        ``overlay(j, node, e_lo, e_hi, e_plies) -> (e_lo, e_hi, e_plies)``:
        the edges read at depth ``j`` with what other lanes of the step
        proved (:meth:`prove_lanes`).  A node proven won or lost also gets its
        plies (:func:`_node_plies`); a change of plies alone goes on up too.
        Returns ``(lower, upper, plies)``, updated.
        """
        size = path_nodes.shape[0]

        def cond(s):
            return s[1]

        def body(s):
            j, _, lower, upper, plies = s
            view, _ = node_view(tree, path_nodes[j], plies=True)
            legal = legal_at(view, 0)
            e_lo, e_hi = edge_bounds(view, 0)
            e_pl = edge_plies(view, 0)
            if overlay is not None:
                e_lo, e_hi, e_pl = overlay(j, path_nodes[j], e_lo, e_hi, e_pl)
            a = jnp.maximum(path_actions[j], 0)
            jc = jnp.minimum(j + 1, size - 1)
            # The path's child: its bounds as just recomputed.
            on = j < leaf
            r, d = rewards[j], discounts[j]
            e_lo = jnp.where(on, set_entry(e_lo, a, r + d * upper[jc]), e_lo)
            e_hi = jnp.where(on, set_entry(e_hi, a, r + d * lower[jc]), e_hi)
            e_pl = jnp.where(on, set_entry(e_pl, a, 1 + plies[jc]), e_pl)
            at_leaf = (j == leaf) & leaf_edge_known
            e_lo = jnp.where(at_leaf, set_entry(e_lo, a, leaf_edge_value), e_lo)
            e_hi = jnp.where(at_leaf, set_entry(e_hi, a, leaf_edge_value), e_hi)
            e_pl = jnp.where(at_leaf, set_entry(e_pl, a, 1), e_pl)
            # Bounds only tighten: intersect with what was already proven
            # (which holds the finished-game and decisive-move bounds).
            live = jnp.any(legal)  # a finished game keeps its [0, 0]
            lo = jnp.where(live, jnp.maximum(lower[j], jnp.max(jnp.where(legal, e_lo, -jnp.inf))), lower[j])
            hi = jnp.where(live, jnp.minimum(upper[j], jnp.max(jnp.where(legal, e_hi, -jnp.inf))), upper[j])
            pl = jnp.where(live, _node_plies(legal, e_lo, e_hi, e_pl, lo, hi, plies[j]), plies[j])
            changed = (lo != lower[j]) | (hi != upper[j]) | (pl != plies[j])
            return (j - 1, changed & (j > 0), set_entry(lower, j, lo), set_entry(upper, j, hi),
                    set_entry(plies, j, pl))

        init = (start, start >= 0, lower, upper, plies)
        with jax.named_scope("proof"):  # names the loop in profiles and compiled programs
            _, _, lower, upper, plies = jax.lax.while_loop(cond, body, init)
        return lower, upper, plies

    def playable(self, tree: mctx.Tree, env: Env, legal) -> jax.Array:
        """``bool[A]``: never a move proven worse than another; a win in one
        if there is one, else the fastest proven win if there is one; in a
        root proven lost, the slowest proven losses."""
        game = env.game
        view, _ = node_view(tree, ROOT, plies=True)
        lower, upper = edge_bounds(view, 0)
        e_plies = edge_plies(view, 0)
        playable = self.allowed(view, 0, legal, at_root=True)
        proven_win = playable & (lower >= WIN)
        fastest = proven_win & (e_plies == jnp.min(jnp.where(proven_win, e_plies, jnp.iinfo(jnp.int32).max)))
        lost = (view.extra_data.value_upper[0] <= LOSS) & jnp.all(~playable | (upper <= LOSS))
        slowest = playable & (e_plies == jnp.max(jnp.where(playable, e_plies, 0)))
        wins_now = game.winning_moves(env) & legal
        return jnp.where(
            jnp.any(wins_now), wins_now,
            jnp.where(jnp.any(proven_win), fastest, jnp.where(lost, slowest, playable)),
        )

    def root_value(self, tree: mctx.Tree) -> jax.Array:
        """``float32[]``: exactly +1 / -1 once the root is proven won / lost,
        else the mean."""
        lower, upper = tree.extra_data.value_lower[ROOT], tree.extra_data.value_upper[ROOT]
        return jnp.where(lower >= WIN, WIN, jnp.where(upper <= LOSS, LOSS, tree.node_values[ROOT]))

    def qvalue_bounds(self, tree: mctx.Tree) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``float32[A]``: what was proven about each root action, and
        ``int32[A]`` the plies to the end through it where it is proven to
        win or lose (0 otherwise)."""
        view = node_view(tree, ROOT, plies=True)[0]
        lower, upper = edge_bounds(view, 0)
        decided = (lower >= WIN) | (upper <= LOSS)
        return lower, upper, jnp.where(decided, edge_plies(view, 0), 0)


def make_solver(solver: bool) -> NoSolver | ScoreBoundsSolver:
    """The solver for ``SearchOptions.solver``, chosen once per search."""
    return ScoreBoundsSolver() if solver else NoSolver()
