"""Search options: :class:`SearchOptions`, checked once at the Python boundary."""

from __future__ import annotations

import dataclasses
import math
import types
from typing import Any, Callable


from c4jax.search.values import PRIORS, ROLLOUT_POLICIES
from c4jax.validation import check_choice, check_int, check_number, plain

__all__ = ["DEFAULT_LANES", "MCTX_RECIPE", "QTRANSFORMS", "SELECTIONS", "SearchOptions", "options_from_kwargs"]

SELECTIONS = ("puct", "uct", "gumbel")
QTRANSFORMS = ("min_max", "parent_and_siblings", "mix_value")
UNVISITED_Q = ("loss", "parent")
# Simulations per step on one tree when SearchOptions.lanes is None.
DEFAULT_LANES = 1
MAX_LANES = 1024  # simulations of one search step: more only exhausts memory
# mctx's recipe (uniform prior, one uniformly random rollout per leaf, one
# simulation at a time, an unvisited action scored as a loss): with these and
# solver=False, run_mcts builds mctx.muzero_policy's tree wherever mctx's
# search is correct, and the hand-worked trees of the tests are worked out
# for it.  Read-only.
MCTX_RECIPE = types.MappingProxyType(
    dict(prior="uniform", rollout_policy="uniform", lanes=1, unvisited_q="loss")
)


@dataclasses.dataclass(frozen=True)
class SearchOptions:
    """Search options (static; hashable); every field is a keyword of :func:`run_mcts`.

    selection: ``"puct"`` (MuZero's PUCT; ``pb_c_init``, ``pb_c_base``),
      ``"uct"`` (UCB1 on trees, Kocsis & Szepesvari 2006: ``Q + uct_c (value_max
      - value_min) sqrt(ln n / n_a)``) or ``"gumbel"`` (Gumbel MuZero, Danihelka
      et al. 2022; ``max_num_considered_actions``, ``gumbel_scale``).
    qtransform: ``"min_max"``, ``"parent_and_siblings"`` or ``"mix_value"``;
      ``None``: ``"min_max"`` for PUCT, ``"mix_value"`` for Gumbel.
    value_min, value_max: the range of the returns (-1 loss, +1 win).
    prior: ``"heuristic"`` (moves that win at once, else block, get odds e**5)
      or ``"uniform"``; ``prior_fn(env) -> float32[A]`` logits replaces it.
    rollout_policy: ``"threat_aware"`` (the game's ``threat_aware_rollout``,
      else its heuristic one), ``"heuristic"`` (win, else block, else
      random) or ``"uniform"``; ``num_rollouts`` per leaf; ``value_fn(key,
      env) -> float32[]`` replaces the rollouts (clipped to [-1, 1], NaN
      counts as 0; a finished game's value is its reward).  Non-finite values
      and logits are counted (``SearchOutput.non_finite``) and ``run_mcts``
      warns.  A new function object compiles a new search.
    max_depth: most edges from the root to a leaf; ``None``: the longest game.
    capacity: nodes of the tree; ``None``: the budget's bucket + 1 (a power of
      two, at least 64) for a fresh tree, the tree's own for a reused one.
    temperature: 0 plays the most visited action (ties: higher Q; Gumbel: its
      recommendation); above 0 samples ``visits ** (1 / temperature)``.
    dirichlet_fraction, dirichlet_alpha: root prior ``(1 - f) p + f Dir(alpha)``.
    solver: prove wins, draws and losses in the tree (score-bounded MCTS,
      Cazenave & Saffidine 2011; MCTS-Solver, Winands et al. 2008): selection
      skips actions proven worse than a sibling, proven root actions have Q
      exactly +1/-1, the move played is never proven worse than another, and
      among equally proven moves the one a fallible opponent is likelier to
      get wrong is played (:func:`c4jax.search.output.fallible_qvalues`).
      ``False``: plain mean backups (mctx's tree where no game ends).
    lanes: simulations per step on one tree (tree parallelisation with
      virtual loss, Chaslot et al. 2008), 1..:data:`MAX_LANES`; ``None``:
      :data:`DEFAULT_LANES` (one simulation at a time, so batch row ``b``
      equals the single-game search of game ``b``).
    unvisited_q: the ``"min_max"`` score of an unvisited action: ``"parent"``
      (the node's value, first-play urgency) or ``"loss"`` (mctx's rule).

    The defaults are the strongest at equal thinking time on Connect 4 7x6.
    """

    selection: str = "puct"
    pb_c_init: float = 1.25
    pb_c_base: float = 19652.0
    uct_c: float = math.sqrt(2.0)
    qtransform: str | None = None
    value_min: float = -1.0
    value_max: float = 1.0
    prior: str = "heuristic"
    rollout_policy: str = "threat_aware"
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

    def with_params(self, params) -> "SearchOptions":
        """``self`` with ``params`` bound as the first argument of
        ``value_fn`` and ``prior_fn`` (inside a traced stage: ``params`` may
        be tracers); ``self`` for ``params=None``."""
        if params is None:
            return self
        return dataclasses.replace(
            self, value_fn=None if self.value_fn is None else WithParams(self.value_fn, params),
            prior_fn=None if self.prior_fn is None else WithParams(self.prior_fn, params))

    def lanes_for(self, num_games: int) -> int:
        """The lanes a search of ``num_games`` games runs: ``lanes``, or
        :data:`DEFAULT_LANES` for ``None`` (at any ``num_games``)."""
        return DEFAULT_LANES if self.lanes is None else self.lanes


class WithParams:
    """A user's ``value_fn``/``prior_fn`` with ``params`` bound first:
    ``WithParams(f, p)(*args) == f(p, *args)``."""

    _c4jax_params_first = True

    def __init__(self, fn: Callable, params: Any):
        self.fn, self.params = fn, params

    def __call__(self, *args):
        return self.fn(self.params, *args)


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
