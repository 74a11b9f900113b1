"""Batched, terminal-aware MCTS on mctx's ``Tree``: :func:`run_mcts`.

The loop is our own (mctx 0.0.71's ``search`` takes no initial tree, so it can
not continue a reused subtree, and it keeps descending below finished games),
but it is built from mctx's public pieces: the :class:`mctx.Tree` layout and
its conventions (node ``0`` is the root, ``UNVISITED``/``NO_PARENT`` = -1,
``Q(s, a) = r + discount * V(s')``, a node's value is the mean of every value
backed up through it), the action-selection functions
(``mctx.muzero_action_selection``, ``mctx.gumbel_muzero_*``) and the Q
transforms.  With the same key it builds the same tree as
``mctx.muzero_policy`` wherever mctx's own search is correct (tested).

One simulation (Browne et al. 2012, sec. 3.1; Silver et al. 2017 for PUCT):

1. selection: from the root, pick actions with the selection rule until an
   action whose child was never expanded, a finished game, or ``max_depth``;
   illegal actions are masked at every node, not only at the root;
2. expansion: step the game into a new node (if the node capacity allows);
3. evaluation: the new node's value is the mean of rollouts from it
   (:func:`c4jax.values.leaf_value`); a finished game's value is 0 and is
   never expanded below (terminal-aware search: no node is spent there, the
   simulation just backs up its result again);
4. backup: every node on the path gets one visit and the return
   ``G = r + discount * G'`` averaged into its value (negamax: discount -1);
5. proof (``solver=True``, the default): the bounds on the game-theoretic
   value of the nodes on the path are recomputed from their children
   (score-bounded MCTS, Cazenave & Saffidine 2011, which extends the
   MCTS-Solver of Winands et al. 2008 to draws): a finished game's value is
   known; a node's value for its player to move lies in
   ``[max_a lower(a), max_a upper(a)]`` with ``[lower(a), upper(a)] =
   r + discount * [bounds of the child]`` (``[-1, 1]`` for an unexpanded
   action), tightened by the position itself: a player with a winning move
   has a win, one facing two winning moves of the opponent (and having none)
   has a loss (decisive moves, Teytaud & Teytaud 2010).  Selection never
   takes an action proven worse than another action of the same node.  At
   the root, an action proven to win or lose has Q exactly +1 or -1 (in
   selection and in the output, MCTS-Solver), an action proven to lose is
   neither explored nor played while another legal action is not proven to
   lose, and the move played is never one proven worse than another (a win
   in one, else a proven win, is played when there is one).  Below the root the means are left as backed up: they
   also rank moves by how likely a fallible opponent is to go wrong, which
   is what beats weaker players; replacing them by the proofs there made the
   search win less often against the random player without making it lose
   less to the perfect one.

Capacity: the tree holds ``capacity`` nodes (default ``num_simulations + 1``;
a reused tree keeps its own).  When it is full, a simulation that would
expand a node evaluates the leaf all the same and backs it up through the
unexpanded edge: that edge's visit count and value average grow (it acts as a
leaf that collects rollouts), nothing is dropped and nothing is written to
another node.  The root's visit count always grows by exactly
``num_simulations``.

Shapes: ``B`` is the batch size, ``A`` the number of actions, ``N`` the node
capacity.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import chex
import jax
import jax.numpy as jnp
import mctx
import numpy as np

from c4jax.env import Env
from c4jax.values import PRIORS, ROLLOUT_POLICIES, _swap_mover, leaf_value, prior_logits

__all__ = ["SearchOptions", "SearchOutput", "TreeExtraData", "run_mcts", "SELECTIONS", "QTRANSFORMS"]

SELECTIONS = ("puct", "uct", "gumbel")
QTRANSFORMS = ("min_max", "parent_and_siblings", "mix_value")
UNVISITED = mctx.Tree.UNVISITED
NO_PARENT = mctx.Tree.NO_PARENT
# Game-theoretic values are in [LOSS, WIN] for the player to move (rewards
# are -1, 0, +1); the solver's bounds start there.
LOSS, WIN = -1.0, 1.0


@chex.dataclass(frozen=True)
class TreeExtraData:
    """``search_tree.extra_data`` of the trees :func:`run_mcts` returns.

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
ROOT = mctx.Tree.ROOT_INDEX


@dataclasses.dataclass(frozen=True)
class SearchOptions:
    """Search options (static; hashable).  Every field is a keyword of
    :func:`run_mcts`.

    selection: ``"puct"`` (AlphaZero/MuZero PUCT, ``mctx.muzero_action_selection``;
      Silver et al. 2017, Schrittwieser et al. 2020 app. B), ``"uct"`` (UCB1
      applied to trees, Kocsis & Szepesvari 2006: ``Q + uct_c * (value_max -
      value_min) * sqrt(ln n / n_a)``, unvisited actions first), or
      ``"gumbel"`` (Gumbel MuZero, Danihelka et al. 2022: sequential halving
      at the root, ``mctx.gumbel_muzero_*``).
    pb_c_init, pb_c_base: PUCT constants ``c1``, ``c2`` (defaults as MuZero).
    uct_c: UCB1 constant for returns in ``[0, 1]`` (Auer et al.'s sqrt(2));
      it is scaled by the range of the returns ``value_max - value_min``.
    qtransform: how PUCT/Gumbel turn Q-values into ``[0, 1]`` scores:
      ``"min_max"`` (``(Q - value_min) / (value_max - value_min)``, unvisited
      actions score 0), ``"parent_and_siblings"`` (mctx's default for PUCT) or
      ``"mix_value"`` (Gumbel's completed Q-values).  ``None`` picks
      ``"min_max"`` for PUCT and ``"mix_value"`` for Gumbel.
    value_min, value_max: the range of the returns (-1 loss, +1 win).
    prior: ``"uniform"`` or ``"heuristic"`` (see :func:`c4jax.values.prior_logits`).
    rollout_policy: ``"uniform"`` or ``"heuristic"`` rollouts for leaf values.
    num_rollouts: rollouts averaged per leaf (>= 1).
    max_depth: most edges from the root to a leaf; ``None``: the game's
      longest game (the search stops at finished games anyway).
    capacity: nodes in the tree; ``None``: ``num_simulations + 1`` for a fresh
      tree, the tree's own for a reused one.
    temperature: 0 plays the most visited action (ties: higher Q; Gumbel:
      its own recommendation, the best ``g + logits + sigma(q)`` among the
      actions within one visit of the most visited); above 0 the action is sampled with probability
      ``visits ** (1 / temperature)``.
    dirichlet_fraction, dirichlet_alpha: root prior ``(1 - f) p + f Dir(alpha)``;
      0 (off) by default, also at a reused root.
    max_num_considered_actions, gumbel_scale: Gumbel MuZero's ``m`` and the
      scale of its Gumbel noise (0 makes it deterministic).
    solver: ``True`` (default): prove wins, draws and losses in the tree and
      use them (score-bounded MCTS, Cazenave & Saffidine 2011; MCTS-Solver,
      Winands et al. 2008; decisive moves, Teytaud & Teytaud 2010; see the
      module docstring): selection skips actions proven worse than a
      sibling; at the root, actions proven to win or lose have Q exactly
      +1 / -1 (with the min-max Q transform and UCT; ``parent_and_siblings``
      and Gumbel see the plain means) and the move played is never proven
      worse than another (a win in one first).  ``False``: plain mean
      backups (then, where no finished game is reached, the tree equals
      ``mctx.muzero_policy``'s).  Why it is on: with plain backups the
      default search kept losing to the perfect tic-tac-toe player at every
      budget up to 6400 simulations (benchmarks/strength/ttt_tables.md).
    """

    selection: str = "puct"
    pb_c_init: float = 1.25
    pb_c_base: float = 19652.0
    uct_c: float = math.sqrt(2.0)
    qtransform: str | None = None
    value_min: float = -1.0
    value_max: float = 1.0
    prior: str = "uniform"
    rollout_policy: str = "uniform"
    num_rollouts: int = 1
    max_depth: int | None = None
    capacity: int | None = None
    temperature: float = 0.0
    dirichlet_fraction: float = 0.0
    dirichlet_alpha: float = 0.3
    max_num_considered_actions: int = 16
    gumbel_scale: float = 1.0
    solver: bool = True

    def validated(self) -> "SearchOptions":
        """Checks every field; returns ``self`` with ``qtransform`` resolved.

        Raises:
          ValueError: naming the field and its allowed values.
        """
        def choice(name, allowed):
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(
                    f"{name} must be one of {', '.join(map(repr, allowed))}; got {value!r}"
                )

        choice("selection", SELECTIONS)
        choice("prior", PRIORS)
        choice("rollout_policy", ROLLOUT_POLICIES)
        qt = self.qtransform
        if qt is None:
            qt = "mix_value" if self.selection == "gumbel" else "min_max"
        if qt not in QTRANSFORMS:
            raise ValueError(
                f"qtransform must be one of {', '.join(map(repr, QTRANSFORMS))} or None; got {qt!r}"
            )
        for name in ("pb_c_init", "pb_c_base", "uct_c", "dirichlet_alpha"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number > 0; got {v!r}")
        for name in ("temperature", "gumbel_scale"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0 or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number >= 0; got {v!r}")
        if isinstance(self.dirichlet_fraction, bool) or not (
            isinstance(self.dirichlet_fraction, (int, float)) and 0 <= self.dirichlet_fraction <= 1
        ):
            raise ValueError(f"dirichlet_fraction must be in [0, 1]; got {self.dirichlet_fraction!r}")
        for name in ("value_min", "value_max"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number; got {v!r}")
        if not (self.value_max > self.value_min):
            raise ValueError(
                f"value_max must be > value_min; got {self.value_min!r}, {self.value_max!r}"
            )
        for name, lo in (("num_rollouts", 1), ("max_num_considered_actions", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"{name} must be an int >= {lo}; got {v!r}")
        if not isinstance(self.solver, bool):
            raise ValueError(f"solver must be True or False; got {self.solver!r}")
        for name, lo in (("max_depth", 1), ("capacity", 2)):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < lo):
                raise ValueError(f"{name} must be None or an int >= {lo}; got {v!r}")
        return dataclasses.replace(self, qtransform=qt)


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
      ``search_tree.extra_data`` (:class:`TreeExtraData`).
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


def _python_scalar(v: Any) -> Any:
    """NumPy scalars (``np.int64(10)``, ``np.float32(1.0)``, ``np.bool_``)
    as the Python values they hold; anything else unchanged."""
    if isinstance(v, np.generic) and v.ndim == 0:
        return v.item()
    return v


def _options_from_kwargs(options: dict[str, Any]) -> SearchOptions:
    fields = [f.name for f in dataclasses.fields(SearchOptions)]
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(unknown)}; the options are: {', '.join(fields)}"
        )
    return SearchOptions(**{k: _python_scalar(v) for k, v in options.items()}).validated()


def _is_key_batch(key: jax.Array) -> bool:
    if not (jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key) or key.dtype == jnp.uint32):
        raise ValueError(
            f"key must be a PRNG key (jax.random.key or jax.random.PRNGKey) or a batch of them; "
            f"got an array of dtype {key.dtype}"
        )
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        if key.ndim > 1:
            raise ValueError(f"key must be one PRNG key or a [B] batch of keys; got shape {key.shape}")
        return key.ndim == 1
    if key.ndim not in (1, 2) or key.shape[-1] != 2:
        raise ValueError(
            f"key must be a PRNG key (jax.random.key or PRNGKey) or a batch of them; got shape {key.shape}"
        )
    return key.ndim == 2


def run_mcts(
    key: jax.Array,
    env: Env,
    num_simulations: int,
    *,
    tree: mctx.Tree | None = None,
    **options: Any,
) -> SearchOutput:
    """Searches one game or a batch of games with MCTS and proposes a move.

    Args:
      key: a PRNG key (consumed), or a ``[B]`` batch of keys, one per game.
        With one key and a batch of games, game ``b`` uses
        ``jax.random.split(key, B)[b]``, so batch row ``b`` equals the
        unbatched search of game ``b`` with that key.
      env: an :class:`~c4jax.env.Env` of any game and size, unbatched or with
        one leading batch axis ``[B]`` (finished games may be mixed in).
      num_simulations: simulations per game, a Python ``int >= 1``.
      tree: a tree from an earlier search, cut with :func:`c4jax.get_subtree`
        after the move was played, to reuse (subtree reuse).  Its root must be
        the position ``env``; a row whose tree is empty (the move played was
        never expanded) or holds another position starts fresh.  The node
        capacity stays the tree's, so a game played with reuse compiles once.
      **options: the fields of :class:`SearchOptions` (selection rule,
        exploration constants, Q transform, prior, rollouts, ``max_depth``,
        ``capacity``, temperature, Dirichlet noise, Gumbel settings, and
        ``solver``: on by default, it proves wins, draws and losses in the
        tree, reported in ``qvalue_lower``/``qvalue_upper``).
    Returns:
      :class:`SearchOutput`.
    Raises:
      ValueError: an unknown option or a bad value (naming the allowed
        values), a ``num_simulations`` that is not a positive int, an ``env``
        that is not an ``Env`` with at most one batch axis, a key of the wrong
        shape, a ``tree`` whose shape does not fit ``env``, or Gumbel search
        with a reused tree (sequential halving assumes a fresh root).

    Compiled once per (shapes, options, num_simulations) and cached; it can be
    called inside ``jax.jit`` too.  References: Browne et al. 2012 (MCTS),
    Winands et al. 2008 and Cazenave & Saffidine 2011 (the solver),
    Kocsis & Szepesvari 2006 (UCT), Silver et al. 2017 (PUCT), Danihelka et
    al. 2022 (Gumbel), Sutton & Barto 2018 sec. 8.11.
    """
    opts = _options_from_kwargs(options)
    if isinstance(num_simulations, bool) or not isinstance(num_simulations, int) or num_simulations < 1:
        raise ValueError(f"num_simulations must be a Python int >= 1; got {num_simulations!r}")
    if not isinstance(env, Env):
        raise ValueError(f"env must be a c4jax Env (from a game's env_reset/from_moves); got {type(env).__name__}")
    batch_shape = env.batch_shape
    if len(batch_shape) > 1:
        raise ValueError(f"env may have at most one batch axis; got batch shape {batch_shape}")
    single = batch_shape == ()
    envs = jax.tree.map(lambda x: x[None], env) if single else env
    batch = envs.ply.shape[0]
    if key is None:
        raise ValueError("key must be a PRNG key (jax.random.key(seed)); got None")
    key = jnp.asarray(key) if not isinstance(key, jax.Array) else key
    if _is_key_batch(key):
        if single or key.shape[0] != batch:
            raise ValueError(
                f"a batch of keys must have one key per game ({batch if not single else 'no batch'}); "
                f"got {key.shape[0]}"
            )
        keys = key
    else:
        keys = key[None] if single else jax.random.split(key, batch)

    game = envs.game
    capacity = opts.capacity
    if tree is not None:
        if opts.selection == "gumbel":
            raise ValueError(
                "selection='gumbel' cannot reuse a tree (sequential halving assumes a fresh root); "
                "pass tree=None or use selection='puct' or 'uct'"
            )
        if not isinstance(tree, mctx.Tree):
            raise ValueError(f"tree must be an mctx.Tree from run_mcts/get_subtree; got {type(tree).__name__}")
        if not isinstance(tree.extra_data, TreeExtraData):
            raise ValueError(
                "tree must come from run_mcts, get_subtree or empty_tree (its extra_data holds the "
                f"solver's bounds); got extra_data of type {type(tree.extra_data).__name__}"
            )
        if tree.node_visits.ndim != 2 or tree.node_visits.shape[0] != batch:
            raise ValueError(
                f"tree must have a leading batch axis of {batch}; got node_visits of shape {tree.node_visits.shape}"
            )
        if tree.num_actions != game.num_actions or getattr(tree.embeddings, "game", None) != game:
            raise ValueError(f"tree was built for another game than {game!r}")
        tree_nodes = tree.node_visits.shape[1]
        if capacity is not None and capacity != tree_nodes:
            raise ValueError(
                f"capacity={capacity} differs from the reused tree's {tree_nodes} nodes; "
                "the capacity stays fixed across a game"
            )
        capacity = tree_nodes
    elif capacity is None:
        capacity = num_simulations + 1
    if opts.max_depth is not None and opts.max_depth > game.max_plies:
        raise ValueError(
            f"max_depth must be None or an int in 1..{game.max_plies} (the longest game of {game!r}); "
            f"got {opts.max_depth}"
        )
    max_depth = opts.max_depth if opts.max_depth is not None else game.max_plies
    opts = dataclasses.replace(opts, capacity=capacity, max_depth=max_depth)
    out = _search_batch(keys, envs, tree, opts, num_simulations)
    if single:
        out = out.replace(
            action=out.action[0],
            action_weights=out.action_weights[0],
            visit_counts=out.visit_counts[0],
            qvalues=out.qvalues[0],
            qvalue_lower=out.qvalue_lower[0],
            qvalue_upper=out.qvalue_upper[0],
            value=out.value[0],
        )
    return out


@functools.partial(jax.jit, static_argnames=("opts", "num_simulations"))
def _search_batch(keys, envs, tree, opts: SearchOptions, num_simulations: int) -> SearchOutput:
    if tree is None:
        return jax.vmap(lambda k, e: _search_one(k, e, None, opts, num_simulations))(keys, envs)
    return jax.vmap(lambda k, e, t: _search_one(k, e, t, opts, num_simulations))(keys, envs, tree)


# ---------------------------------------------------------------------------
# One game (vmapped above).  Every tree below is unbatched: [N], [N, A].


def _gather(tree_like, index):
    return jax.tree.map(lambda x: x[index], tree_like)


def _static_bounds(env: Env) -> tuple[jax.Array, jax.Array]:
    """Bounds on a position's value for the player to move, from the position
    alone: a finished game is worth 0 (its result belongs to the move that
    ended it); a player with a winning move has a win (decisive moves,
    Teytaud & Teytaud 2010); a player without one facing two or more winning
    moves of the opponent has a loss (it can block only one); else [-1, 1]."""
    game = env.game
    own = jnp.any(game.winning_moves(env))
    threats = jnp.sum(game.winning_moves(_swap_mover(env)) & game.legal_action_mask(env))
    lost = ~own & (threats >= 2)
    lower = jnp.where(env.done, 0.0, jnp.where(own, WIN, LOSS))
    upper = jnp.where(env.done, 0.0, jnp.where(lost, LOSS, WIN))
    return lower.astype(jnp.float32), upper.astype(jnp.float32)


def _new_tree(env: Env, logits, value, capacity: int, root_gumbel=None, solver: bool = True) -> mctx.Tree:
    num_actions = env.game.num_actions
    n, na = (capacity,), (capacity, num_actions)
    embeddings = jax.tree.map(lambda x: jnp.zeros(n + x.shape, x.dtype).at[ROOT].set(x), env)
    if root_gumbel is None:
        root_gumbel = jnp.zeros((num_actions,), jnp.float32)
    if solver:
        lower, upper = _static_bounds(env)
    else:
        lower, upper = jnp.where(env.done, 0.0, LOSS), jnp.where(env.done, 0.0, WIN)
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


def _same_position(a: Env, b: Env) -> jax.Array:
    return jnp.all(a.stones == b.stones) & (a.to_move == b.to_move) & (a.done == b.done)


def _dirichlet(key, logits, legal, fraction, alpha):
    """Root prior ``(1 - f) p + f Dir(alpha)`` over the legal actions (AlphaZero)."""
    probs = jax.nn.softmax(logits)
    noise = jax.random.dirichlet(key, jnp.full(logits.shape, alpha, jnp.float32))
    noise = jnp.where(legal, noise, 0.0)
    noise = noise / jnp.maximum(jnp.sum(noise), 1e-30)
    mixed = (1.0 - fraction) * probs + fraction * noise
    tiny = jnp.finfo(jnp.float32).tiny
    return jnp.where(legal, jnp.log(jnp.maximum(mixed, tiny)), jnp.finfo(jnp.float32).min)


def _edge_bounds(tree: mctx.Tree, node) -> tuple[jax.Array, jax.Array]:
    """Proven bounds ``float32[A]`` on ``Q(node, a)`` for the player to move:
    ``r + discount * [child's bounds]`` (discounts are -1 or 0, so the child's
    upper bound gives the edge's lower one); ``[-1, 1]`` for an unexpanded
    action, except that a visited unexpanded edge into a finished game (a
    full tree) is worth its reward exactly."""
    child = tree.children_index[node]
    safe = jnp.maximum(child, 0)
    extra = tree.extra_data
    r = tree.children_rewards[node]
    d = tree.children_discounts[node]
    expanded = child != UNVISITED
    known = ~expanded & (tree.children_visits[node] > 0) & (d == 0.0)
    lower = jnp.where(expanded, r + d * extra.value_upper[safe], jnp.where(known, r, LOSS))
    upper = jnp.where(expanded, r + d * extra.value_lower[safe], jnp.where(known, r, WIN))
    return lower, upper


def _solver_qvalues(tree: mctx.Tree, node) -> jax.Array:
    """``Q(node, a)`` ``float32[A]`` with the proofs applied: exactly +1 for an
    action proven to win, -1 for one proven to lose (MCTS-Solver), the mean
    otherwise.  Only wins and losses replace the mean: a proven draw keeps
    its mean, because comparing an exact 0 with its siblings' unproven
    (rollout-biased) means would bias the choice against the proven move.
    In a node proven lost (every action loses) the means are kept too: they
    rank the losing moves by how often a fallible opponent goes wrong."""
    q = tree.qvalues(node)
    lower, upper = _edge_bounds(tree, node)
    lost = tree.extra_data.value_upper[node] <= LOSS
    proven = jnp.where(lower >= WIN, WIN, jnp.where(upper <= LOSS, LOSS, q))
    return jnp.where(lost, q, proven)


def _qtransform_min_max_solver(tree: mctx.Tree, node, *, min_value, max_value) -> jax.Array:
    """``mctx.qtransform_by_min_max`` (the same formula: unvisited actions
    score 0), on :func:`_solver_qvalues` at the root and on the plain means
    below it."""
    visits = tree.children_visits[node]
    q = jnp.where(node == ROOT, _solver_qvalues(tree, node), tree.qvalues(node))
    score = jnp.where(visits > 0, q, min_value)
    return (score - min_value) / (max_value - min_value)


def _solver_allowed(tree: mctx.Tree, node, legal) -> jax.Array:
    """Legal actions not proven worse than another action of ``node``: their
    upper bound reaches the node's lower bound (always at least one).  At the
    root also no action proven to lose while some legal action is not
    (MCTS-Solver's rule; below the root a proven loss that is not dominated
    stays selectable, so the means keep counting the opponent's blunders)."""
    _, upper = _edge_bounds(tree, node)
    allowed = legal & (upper >= tree.extra_data.value_lower[node])
    not_lost = allowed & (upper > LOSS)
    return jnp.where((node == ROOT) & jnp.any(not_lost), not_lost, allowed)


def _qtransform(opts: SearchOptions):
    if opts.qtransform == "min_max":
        fn = _qtransform_min_max_solver if opts.solver else mctx.qtransform_by_min_max
        return functools.partial(fn, min_value=opts.value_min, max_value=opts.value_max)
    if opts.qtransform == "parent_and_siblings":
        return mctx.qtransform_by_parent_and_siblings
    return mctx.qtransform_completed_by_mix_value


def _uct_selection(key, tree, node, legal, c, solver):
    visits = tree.children_visits[node].astype(jnp.float32)
    total = jnp.maximum(jnp.sum(visits), 1.0)
    bonus = c * jnp.sqrt(jnp.log(total) / jnp.maximum(visits, 1.0))
    q = tree.qvalues(node)
    if solver:
        q = jnp.where(node == ROOT, _solver_qvalues(tree, node), q)
    score = jnp.where(visits > 0, q + bonus, 1e9)
    score = score + 1e-7 * jax.random.uniform(key, score.shape)
    return jnp.argmax(jnp.where(legal, score, -jnp.inf)).astype(jnp.int32)


def _make_selection(opts: SearchOptions, num_simulations: int):
    """``select(key, tree, node, depth) -> action`` with illegal actions masked."""
    qtransform = _qtransform(opts)

    def legal_at(tree, node):
        legal = tree.embeddings.game.legal_action_mask(_gather(tree.embeddings, node))
        return _solver_allowed(tree, node, legal) if opts.solver else legal

    if opts.selection == "puct":
        def select(key, tree, node, depth):
            # mctx masks invalid actions at depth 0 only; present every node's
            # illegal actions as the "root" mask and call it with depth 0.
            masked = tree.replace(root_invalid_actions=(~legal_at(tree, node)).astype(jnp.float32))
            return mctx.muzero_action_selection(
                key, masked, node, 0,
                pb_c_init=opts.pb_c_init, pb_c_base=opts.pb_c_base, qtransform=qtransform,
            )
    elif opts.selection == "uct":
        c = opts.uct_c * (opts.value_max - opts.value_min)

        def select(key, tree, node, depth):
            return _uct_selection(key, tree, node, legal_at(tree, node), c, opts.solver)
    else:
        def select(key, tree, node, depth):
            if opts.solver:  # the root's proven-worse actions count as invalid there
                tree = tree.replace(
                    root_invalid_actions=(~legal_at(tree, ROOT)).astype(jnp.float32)
                )
            root_action = mctx.gumbel_muzero_root_action_selection(
                key, tree, node,
                num_simulations=num_simulations,
                max_num_considered_actions=opts.max_num_considered_actions,
                qtransform=qtransform,
            )
            # Interior: deterministic, and never picks an illegal action: their
            # probability is 0 while some legal action scores > 0.
            interior = mctx.gumbel_muzero_interior_action_selection(
                key, tree, node, depth, qtransform=qtransform
            )
            return jnp.where(depth == 0, root_action, interior)

    return select


def _descend(key, tree, select, max_depth: int):
    """Selection phase.  Returns ``(node, action, depth, expand, path_nodes,
    path_actions)``: if ``expand``, ``(node, action)`` is an unexpanded edge
    at depth ``depth``; otherwise ``node`` (at ``depth``) is a finished game or
    at ``max_depth``.  ``path_nodes[i]`` is the node at depth ``i``,
    ``path_actions[i]`` the action taken there."""
    size = max_depth + 1
    done = tree.embeddings.done

    def cond(s):
        return s[5]

    def body(s):
        key, node, depth, _, _, _, path_nodes, path_actions = s
        key, select_key = jax.random.split(key)
        action = select(select_key, tree, node, depth)
        child = tree.children_index[node, action]
        unexpanded = child == UNVISITED
        path_actions = path_actions.at[depth].set(action)
        child_depth = depth + 1
        node = jnp.where(unexpanded, node, child)
        depth = jnp.where(unexpanded, depth, child_depth)
        path_nodes = jnp.where(unexpanded, path_nodes, path_nodes.at[child_depth].set(child))
        stop = unexpanded | done[jnp.maximum(child, 0)] | (child_depth >= max_depth)
        return key, node, depth, action, unexpanded, ~stop, path_nodes, path_actions

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
    _, node, depth, action, expand, _, path_nodes, path_actions = jax.lax.while_loop(cond, body, init)
    return node, action, depth, expand, path_nodes, path_actions


def _prove_path(tree: mctx.Tree, path_nodes, path_actions, start, leaf):
    """Score bounds of the path's nodes after a simulation, bottom-up.

    Recomputes the bounds of the nodes at depths ``start, start - 1, ..., 0``
    from their children (the path's child with its new bounds), stopping at
    the first node whose bounds did not change (its ancestors' cannot either).
    Returns ``(lower, upper)``, ``float32[max_depth + 1]``: the bounds of
    every node on the path (depths ``0..leaf``), updated.
    """
    extra = tree.extra_data
    size = path_nodes.shape[0]
    i = jnp.arange(size)
    pn = jnp.where(i <= leaf, path_nodes, 0)
    lower0 = extra.value_lower[pn]
    upper0 = extra.value_upper[pn]

    def cond(s):
        return s[1]

    def body(s):
        j, _, lower, upper = s
        node = path_nodes[j]
        env = _gather(tree.embeddings, node)
        legal = env.game.legal_action_mask(env)
        e_lo, e_hi = _edge_bounds(tree, node)
        # The path's child: its bounds as just recomputed.
        a = jnp.maximum(path_actions[j], 0)
        jc = jnp.minimum(j + 1, size - 1)
        on = j < leaf
        r = tree.children_rewards[node, a]
        d = tree.children_discounts[node, a]
        e_lo = jnp.where(on, e_lo.at[a].set(r + d * upper[jc]), e_lo)
        e_hi = jnp.where(on, e_hi.at[a].set(r + d * lower[jc]), e_hi)
        # Bounds only tighten: intersect with what was already proven (which
        # holds the finished-game and decisive-move bounds).
        live = jnp.any(legal)  # a finished game keeps its [0, 0]
        lo = jnp.where(live, jnp.maximum(lower[j], jnp.max(jnp.where(legal, e_lo, -jnp.inf))), lower[j])
        hi = jnp.where(live, jnp.minimum(upper[j], jnp.max(jnp.where(legal, e_hi, -jnp.inf))), upper[j])
        changed = (lo != lower[j]) | (hi != upper[j])
        return j - 1, changed & (j > 0), lower.at[j].set(lo), upper.at[j].set(hi)

    _, _, lower, upper = jax.lax.while_loop(
        cond, body, (start, start >= 0, lower0, upper0)
    )
    return lower, upper


def _simulate_once(key, tree, next_free, select, opts: SearchOptions):
    """One simulation: selection, expansion, evaluation, backup."""
    capacity, max_depth = opts.capacity, opts.max_depth
    # The key schedule mirrors mctx.search for a batch of one, so that the
    # trees are identical where both searches are correct.
    key, simulate_key, expand_key = jax.random.split(key, 3)
    simulate_key = jax.random.split(simulate_key, 1)[0]
    eval_key = jax.random.split(expand_key, 1)[0]

    node, action, depth, expand, path_nodes, path_actions = _descend(
        simulate_key, tree, select, max_depth
    )
    node_env = _gather(tree.embeddings, node)
    game = node_env.game
    child_env, reward, done = game.env_step(node_env, jnp.maximum(action, 0))
    discount = jnp.where(done, 0.0, -1.0).astype(jnp.float32)
    leaf_env = jax.tree.map(lambda c, n: jnp.where(expand, c, n), child_env, node_env)
    value = leaf_value(
        eval_key, leaf_env, num_rollouts=opts.num_rollouts, rollout_policy=opts.rollout_policy
    )

    new_node = expand & (next_free < capacity)
    if opts.solver:
        child_lower, child_upper = _static_bounds(child_env)
    else:
        child_lower = jnp.where(done, 0.0, LOSS)
        child_upper = jnp.where(done, 0.0, WIN)
    accumulate = expand & ~new_node
    idx = jnp.where(new_node, next_free, capacity)  # out of bounds: dropped
    drop = dict(mode="drop")
    edge_n = jnp.where(expand, node, capacity)
    tree = tree.replace(
        raw_values=tree.raw_values.at[idx].set(value, **drop),
        parents=tree.parents.at[idx].set(node, **drop),
        action_from_parent=tree.action_from_parent.at[idx].set(action, **drop),
        children_prior_logits=tree.children_prior_logits.at[idx].set(
            prior_logits(child_env, opts.prior), **drop
        ),
        embeddings=jax.tree.map(lambda t, s: t.at[idx].set(s, **drop), tree.embeddings, child_env),
        children_index=tree.children_index.at[jnp.where(new_node, node, capacity), action].set(idx, **drop),
        children_rewards=tree.children_rewards.at[edge_n, action].set(reward, **drop),
        children_discounts=tree.children_discounts.at[edge_n, action].set(discount, **drop),
        extra_data=tree.extra_data.replace(
            value_lower=tree.extra_data.value_lower.at[idx].set(child_lower, **drop),
            value_upper=tree.extra_data.value_upper.at[idx].set(child_upper, **drop),
        ),
    )
    # A full tree: the unexpanded edge collects the evaluation itself.
    acc_n = jnp.where(accumulate, node, capacity)
    safe = jnp.minimum(node, capacity - 1), jnp.maximum(action, 0)
    edge_visits = tree.children_visits[safe]
    edge_value = (tree.children_values[safe] * edge_visits + value) / (edge_visits + 1)
    tree = tree.replace(
        children_visits=tree.children_visits.at[acc_n, action].add(1, **drop),
        children_values=tree.children_values.at[acc_n, action].set(edge_value, **drop),
    )

    # Backup along the path (depths 0..leaf), one vectorised scatter.
    leaf = jnp.where(new_node, depth + 1, depth)
    path_nodes = jnp.where(new_node, path_nodes.at[jnp.minimum(depth + 1, max_depth)].set(idx), path_nodes)
    leaf_return = jnp.where(accumulate, reward + discount * value, value)
    size = max_depth + 1
    i = jnp.arange(size)
    on_path = i <= leaf
    has_edge = i < leaf
    pn = jnp.where(on_path, path_nodes, 0)
    pa = jnp.where(has_edge, path_actions, 0)
    r = jnp.where(has_edge, tree.children_rewards[pn, pa], 0.0)
    d = jnp.where(has_edge, tree.children_discounts[pn, pa], 1.0)
    # G_i = r_i + d_i G_{i+1}, G_leaf = leaf_return.  With D_i = prod_{k<i} d_k:
    # G_i = (sum_{i<=j<leaf} D_j r_j + D_leaf leaf_return) / D_i.  Only the last
    # edge of a path can have discount 0 (the search stops at finished games),
    # so D_i != 0 for every i < leaf.
    prefix = jnp.concatenate([jnp.ones(1, jnp.float32), jnp.cumprod(d)[:-1]])
    weighted = prefix * r
    suffix = jnp.cumsum(weighted[::-1])[::-1]
    d_leaf = jnp.sum(jnp.where(i == leaf, prefix, 0.0))
    returns = (suffix + d_leaf * leaf_return) / jnp.where(on_path & (prefix != 0), prefix, 1.0)
    returns = jnp.where(i == leaf, leaf_return, returns)

    nodes = jnp.where(on_path, path_nodes, capacity)
    counts = tree.node_visits[pn].astype(jnp.float32)
    new_values = (tree.node_values[pn] * counts + returns) / (counts + 1.0)
    if opts.solver:
        # From the new node's parent (or from the node whose unexpanded edge
        # collected the evaluation) up, while the bounds change.
        start = jnp.where(new_node, leaf - 1, leaf)
        lower, upper = _prove_path(tree, path_nodes, path_actions, start, leaf)
        tree = tree.replace(
            extra_data=tree.extra_data.replace(
                value_lower=tree.extra_data.value_lower.at[nodes].set(lower, **drop),
                value_upper=tree.extra_data.value_upper.at[nodes].set(upper, **drop),
            )
        )
    child_values = jnp.concatenate([new_values[1:], jnp.zeros(1, jnp.float32)])
    edge_nodes = jnp.where(has_edge, path_nodes, capacity)
    tree = tree.replace(
        node_visits=tree.node_visits.at[nodes].add(1, **drop),
        node_values=tree.node_values.at[nodes].set(new_values, **drop),
        children_visits=tree.children_visits.at[edge_nodes, pa].add(1, **drop),
        children_values=tree.children_values.at[edge_nodes, pa].set(child_values, **drop),
    )
    return key, tree, next_free + new_node.astype(jnp.int32)


def _search_one(key, env: Env, tree, opts: SearchOptions, num_simulations: int) -> SearchOutput:
    game = env.game
    root_key, policy_key = jax.random.split(key)
    action_key, noise_key, search_key = jax.random.split(policy_key, 3)
    legal = game.legal_action_mask(env)
    logits = prior_logits(env, opts.prior)
    root_gumbel = None
    if opts.selection == "gumbel":
        root_gumbel = opts.gumbel_scale * jax.random.gumbel(noise_key, logits.shape)
    elif opts.dirichlet_fraction > 0:
        logits = _dirichlet(noise_key, logits, legal, opts.dirichlet_fraction, opts.dirichlet_alpha)
    # split(root_key, 1)[0]: the key make_root_fn gives row 0 of a batch of one.
    root_value = leaf_value(
        jax.random.split(root_key, 1)[0],
        env,
        num_rollouts=opts.num_rollouts,
        rollout_policy=opts.rollout_policy,
    )
    fresh = _new_tree(env, logits, root_value, opts.capacity, root_gumbel, opts.solver)
    if tree is not None:
        reusable = (tree.node_visits[ROOT] > 0) & _same_position(_gather(tree.embeddings, ROOT), env)
        tree = tree.replace(
            extra_data=tree.extra_data.replace(root_gumbel=fresh.extra_data.root_gumbel),
            root_invalid_actions=(~legal).astype(jnp.float32),
            children_prior_logits=tree.children_prior_logits.at[ROOT].set(logits),
        )
        tree = jax.tree.map(lambda t, f: jnp.where(reusable, t, f), tree, fresh)
    else:
        tree = fresh
    next_free = jnp.sum(tree.node_visits > 0).astype(jnp.int32)
    select = _make_selection(opts, num_simulations)

    def body(_, state):
        return _simulate_once(*state, select, opts)

    _, searched, _ = jax.lax.fori_loop(0, num_simulations, body, (search_key, tree, next_free))
    # A finished game is not searched: its tree is the root alone.
    tree = jax.tree.map(lambda a, b: jnp.where(env.done, a, b), tree, searched)

    visits = tree.children_visits[ROOT]
    qvalues = _solver_qvalues(tree, ROOT) if opts.solver else tree.qvalues(ROOT)
    total = jnp.sum(visits)
    playable = legal
    if opts.solver:
        # Never a move proven worse than another; a proven win if there is one.
        lower, _ = _edge_bounds(tree, ROOT)
        playable = _solver_allowed(tree, ROOT, legal)
        proven_win = playable & (lower >= WIN)
        wins_now = game.winning_moves(env) & legal
        playable = jnp.where(
            jnp.any(wins_now), wins_now, jnp.where(jnp.any(proven_win), proven_win, playable)
        )
    # Most visited, ties to the higher Q: (q + 1) / 4 < 1 never outweighs a visit.
    score = jnp.where(playable, visits.astype(jnp.float32) + (qvalues + 1.0) / 4.0, -jnp.inf)
    action = jnp.argmax(score).astype(jnp.int32)
    if opts.selection == "gumbel":
        # Gumbel MuZero's own recommendation (Danihelka et al. 2022, as in
        # mctx.gumbel_muzero_policy): among the actions sequential halving
        # kept to the end, the highest g + logits + sigma(q).  mctx keeps only
        # the most visited; when the budget does not divide evenly the last
        # candidates differ by one visit, so we keep those within one visit.
        completed = _qtransform(opts)(tree, ROOT)
        logits = tree.children_prior_logits[ROOT]
        gumbel_score = jnp.maximum(
            -1e9, tree.extra_data.root_gumbel + logits - jnp.max(logits) + completed
        )
        kept = playable & (visits >= jnp.max(jnp.where(playable, visits, 0)) - 1)
        action = jnp.argmax(jnp.where(kept, gumbel_score, -jnp.inf)).astype(jnp.int32)
    if opts.temperature > 0:
        logp = jnp.log(jnp.maximum(visits.astype(jnp.float32), 1e-30)) / opts.temperature
        logp = jnp.where(playable & (visits > 0), logp, -jnp.inf)
        sampled = jax.random.categorical(action_key, logp).astype(jnp.int32)
        action = jnp.where(jnp.any(playable & (visits > 0)), sampled, action)
    weights = visits.astype(jnp.float32) / jnp.maximum(total, 1).astype(jnp.float32)
    out_value = tree.node_values[ROOT]
    if opts.solver:
        lower, upper = tree.extra_data.value_lower[ROOT], tree.extra_data.value_upper[ROOT]
        out_value = jnp.where(lower >= WIN, WIN, jnp.where(upper <= LOSS, LOSS, out_value))
    q_lower, q_upper = _edge_bounds(tree, ROOT)
    if not opts.solver:
        q_lower, q_upper = jnp.full_like(q_lower, LOSS), jnp.full_like(q_upper, WIN)
    return SearchOutput(
        qvalue_lower=jnp.where(legal, q_lower, LOSS),
        qvalue_upper=jnp.where(legal, q_upper, LOSS),
        action=jnp.where(env.done, -1, action),
        action_weights=jnp.where(env.done, 0.0, weights),
        visit_counts=visits,
        qvalues=jnp.where(visits > 0, qvalues, 0.0),
        value=out_value,
        search_tree=tree,
    )
