"""Search options: :class:`SearchOptions`, checked once at the Python boundary."""

from __future__ import annotations

import dataclasses
import math
import types
from typing import Any, Callable


from c4jax.values import PRIORS, ROLLOUT_POLICIES
from c4jax.validation import check_choice, check_int, check_number, plain

__all__ = ["DEFAULT_LANES", "MCTX_RECIPE", "QTRANSFORMS", "SELECTIONS", "SearchOptions", "options_from_kwargs"]

SELECTIONS = ("puct", "uct", "gumbel")
QTRANSFORMS = ("min_max", "parent_and_siblings", "mix_value")
UNVISITED_Q = ("loss", "parent")
# Simulations per step on one tree for PUCT and UCT (SearchOptions.lanes).
DEFAULT_LANES = 4
MAX_LANES = 1024  # simulations of one search step: more only exhausts memory
# mctx's recipe (uniform prior, one uniformly random rollout per leaf, one
# simulation at a time, an unvisited action scored as a loss): with these and
# solver=False, run_mcts builds mctx.muzero_policy's tree wherever mctx's
# search is correct (tests/test_search.py), and the hand-worked trees of the
# tests are worked out for it.  Read-only.
MCTX_RECIPE = types.MappingProxyType(
    dict(prior="uniform", rollout_policy="uniform", lanes=1, unvisited_q="loss")
)


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
    prior: ``"heuristic"`` (default: the moves that win at once, else those
      that block, get prior odds e**5) or ``"uniform"`` (see
      :func:`c4jax.values.prior_logits`).
    rollout_policy: ``"heuristic"`` (default: win at once, else block, else a
      random move) or ``"uniform"`` (random legal moves) rollouts for leaf
      values.
    num_rollouts: rollouts averaged per leaf (>= 1; default 1).
    prior_fn: your own prior, replacing ``prior``: ``prior_fn(env) ->
      float32[A]``, logits for one game (illegal actions are masked by the
      search); ``None`` (default): ``prior``.  See
      :func:`c4jax.values.prior_logits`.
    value_fn: your own leaf evaluation, replacing the rollouts:
      ``value_fn(key, env) -> float32[]``, one game's value for its player to
      move, clipped to ``[-1, 1]`` (NaN counts as 0); a finished game's value stays 0 whatever
      it says (its result is in the reward of the move that ended it).
      ``None`` (default): rollouts.  Both functions may close over arrays (a
      network's parameters); they are traced into the compiled search, and
      a search with a new function object compiles anew (build it once, or
      call ``run_mcts`` inside your own ``jit`` with the parameters as its
      arguments).  See :func:`c4jax.values.leaf_value`.
    max_depth: most edges from the root to a leaf; ``None``: the game's
      longest game (the search stops at finished games anyway).
    capacity: nodes in the tree; ``None``: ``simulation_bucket(num_simulations)
      + 1`` for a fresh tree (the budget rounded up to a power of two, at
      least 64: room for every simulation, and one compiled search for every
      budget of the bucket), the tree's own for a reused one.
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
    lanes: simulations run together per step on the same tree (tree
      parallelisation with virtual loss, Chaslot, Winands & van den Herik
      2008): each step, ``lanes`` descents run one after another, each seeing
      the earlier ones' paths as visits that lost; their expansions,
      rollouts and backups then run as one vectorised batch, which amortises
      the cost of a step.  Lanes that step the same unexpanded edge share the
      new node; the root's visit count still grows by exactly
      ``num_simulations`` (the last step runs fewer lanes if ``lanes`` does
      not divide it).  1: one simulation at a time (mctx's search); at
      most :data:`MAX_LANES`.
      ``None`` (default): :data:`DEFAULT_LANES` (4) for one game (or a
      batch of one) with PUCT or UCT; 1 for a batch of several games, where
      the batch already fills the vector width (batch 64 x 200 simulations:
      11.5 us per simulation at one lane, 16.5 at four) and for Gumbel
      (which refuses more).  So with the default a batch row equals the
      single-game search with ``lanes=1``; pass ``lanes`` to compare.
    unvisited_q: what the ``"min_max"`` Q transform gives an unvisited
      action: ``"parent"`` (default: the node's own value, first-play
      urgency as in Leela Zero and KataGo, so that wide boards get every
      column tried) or ``"loss"`` (mctx's rule: it scores 0, so PUCT
      explores a move only through its prior term).

    The defaults were chosen per second of thinking, not per simulation
    (issue 9): Connect 4 (7x6), games at equal wall-clock time per move
    (``run_mcts_anytime``, subtree reuse), each change against the others'
    defaults, colours alternating; score = (wins + draws / 2) / games, 95%
    Wilson interval.  ``benchmarks/defaults_per_second.py`` replays them;
    ``benchmarks/README.md#defaults-chosen-per-second`` has the tables.

    * ``rollout_policy="heuristic"``: against OpenSpiel's C++ MCTS at 50 ms a
      move, 51% (36-66%) of 40 games, against 28% (16-43%) with uniform
      rollouts; it costs more per ply, but in one kernel per rollout (see
      :mod:`c4jax.xla_flags`) about as much as a random one.
    * ``lanes=4``: against ``lanes=1`` at 50 ms, 57% (47-66%) of 100 games;
      ``lanes=8`` scored 62% against OpenSpiel where 4 scored 67%.
    * ``prior="heuristic"``: against ``"uniform"``, 57% (48-67%) of 100.
    * ``unvisited_q="parent"``: against ``"loss"``, 52% (42-61%) of 100, no
      loss of strength, and every column of the empty 7x40 board visited at
      200 simulations (4 of 40 with ``"loss"``).
    * ``num_rollouts=1``: 2 scored 46% (36-55%) against it; ``pb_c_init``
      1.25: 2.0 scored 44% (34-53%).
    """

    selection: str = "puct"
    pb_c_init: float = 1.25
    pb_c_base: float = 19652.0
    uct_c: float = math.sqrt(2.0)
    qtransform: str | None = None
    value_min: float = -1.0
    value_max: float = 1.0
    prior: str = "heuristic"
    rollout_policy: str = "heuristic"
    num_rollouts: int = 1
    max_depth: int | None = None
    capacity: int | None = None
    temperature: float = 0.0
    dirichlet_fraction: float = 0.0
    dirichlet_alpha: float = 0.3
    max_num_considered_actions: int = 16
    gumbel_scale: float = 1.0
    solver: bool = True
    lanes: int | None = None
    unvisited_q: str = "parent"
    prior_fn: Callable | None = None
    value_fn: Callable | None = None

    def validated(self) -> "SearchOptions":
        """Checks every field; returns ``self`` with ``qtransform`` resolved.

        Raises:
          ValueError: naming the field and its allowed values.
        """
        for name, allowed in (("selection", SELECTIONS), ("prior", PRIORS),
                              ("rollout_policy", ROLLOUT_POLICIES), ("unvisited_q", UNVISITED_Q)):
            check_choice(name, getattr(self, name), allowed)
        check_choice("qtransform", self.qtransform, QTRANSFORMS, optional=True)
        qt = self.qtransform
        if qt is None:
            qt = "mix_value" if self.selection == "gumbel" else "min_max"
        for name in ("pb_c_init", "pb_c_base", "uct_c", "dirichlet_alpha"):
            check_number(name, getattr(self, name), 0, lo_open=True)
        for name in ("temperature", "gumbel_scale"):
            check_number(name, getattr(self, name), 0)
        check_number("dirichlet_fraction", self.dirichlet_fraction, 0, 1)
        for name in ("value_min", "value_max"):
            check_number(name, getattr(self, name))
        if not (self.value_max > self.value_min):
            raise ValueError(
                f"value_max must be > value_min; got {self.value_min!r}, {self.value_max!r}"
            )
        lanes = self.lanes
        for name in ("num_rollouts", "max_num_considered_actions"):
            check_int(name, getattr(self, name), 1)
        check_int("lanes", lanes, 1, MAX_LANES, optional=True)
        for name in ("prior_fn", "value_fn"):
            fn = getattr(self, name)
            if fn is not None and not callable(fn):
                raise ValueError(f"{name} must be None or a function; got {type(fn).__name__}")
        if not isinstance(self.solver, bool):
            raise ValueError(f"solver must be True or False; got {self.solver!r}")
        for name, lo in (("max_depth", 1), ("capacity", 2)):
            check_int(name, getattr(self, name), lo, MAX_NODES, optional=True)
        if lanes is not None and lanes > 1 and self.selection == "gumbel":
            raise ValueError(
                f"selection='gumbel' runs one simulation at a time (lanes=1); got lanes={lanes} "
                "(sequential halving plans each simulation's root action)"
            )
        return dataclasses.replace(self, qtransform=qt)

    def lanes_for(self, num_games: int) -> int:
        """The lanes a search of ``num_games`` games runs: ``lanes``, or for
        ``None`` :data:`DEFAULT_LANES` for one game (PUCT, UCT) and 1 for a
        batch of several games or Gumbel."""
        if self.lanes is not None:
            return self.lanes
        return DEFAULT_LANES if num_games == 1 and self.selection != "gumbel" else 1


MAX_NODES = 2**31 - 1  # mctx's node indices are int32


def options_from_kwargs(options: dict[str, Any]) -> SearchOptions:
    """The :class:`SearchOptions` for ``run_mcts``'s keywords, validated.

    ``options["options"]``, if given, is a whole :class:`SearchOptions`
    (``run_mcts(key, env, n, options=SearchOptions(...))``); the other
    keywords then replace its fields.

    Raises:
      ValueError: an unknown option (listing the options), a bad value, or an
        ``options`` that is not a :class:`SearchOptions`.
    """
    options = dict(options)
    base = options.pop("options", None)
    if base is not None and not isinstance(base, SearchOptions):
        raise ValueError(f"options must be a c4jax.SearchOptions or None; got {type(base).__name__}")
    fields = [f.name for f in dataclasses.fields(SearchOptions)]
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(unknown)}; the options are: options, {', '.join(fields)}"
        )
    values = {k: plain(v) for k, v in options.items()}
    if base is not None:
        return dataclasses.replace(base, **values).validated()
    return SearchOptions(**values).validated()
