"""Search options: :class:`SearchOptions`, checked once at the Python boundary."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from c4jax.values import PRIORS, ROLLOUT_POLICIES

__all__ = ["QTRANSFORMS", "SELECTIONS", "SearchOptions", "options_from_kwargs"]

SELECTIONS = ("puct", "uct", "gumbel")
QTRANSFORMS = ("min_max", "parent_and_siblings", "mix_value")
UNVISITED_Q = ("loss", "parent")


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
    lanes: simulations run together per step on the same tree (tree
      parallelisation with virtual loss, Chaslot, Winands & van den Herik
      2008): each step, ``lanes`` descents run one after another, each seeing
      the earlier ones' paths as visits that lost; their expansions,
      rollouts and backups then run as one vectorised batch, which amortises
      the cost of a step.  Lanes that step the same unexpanded edge share the
      new node; the root's visit count still grows by exactly
      ``num_simulations`` (the last step runs fewer lanes if ``lanes`` does
      not divide it).  1: one simulation at a time (mctx's search).  Not
      with Gumbel.
    unvisited_q: what the ``"min_max"`` Q transform gives an unvisited
      action: ``"loss"`` (mctx's rule: it scores 0, so PUCT explores a move
      only through its prior term) or ``"parent"`` (the node's own value:
      first-play urgency, as in Leela Zero and KataGo, so that with a
      uniform prior wide boards get every column tried).
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
    lanes: int = 1
    unvisited_q: str = "loss"

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
        choice("unvisited_q", UNVISITED_Q)
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
        for name, lo in (("num_rollouts", 1), ("max_num_considered_actions", 1), ("lanes", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise ValueError(f"{name} must be an int >= {lo}; got {v!r}")
        if not isinstance(self.solver, bool):
            raise ValueError(f"solver must be True or False; got {self.solver!r}")
        for name, lo in (("max_depth", 1), ("capacity", 2)):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < lo):
                raise ValueError(f"{name} must be None or an int >= {lo}; got {v!r}")
        if self.lanes > 1 and self.selection == "gumbel":
            raise ValueError(
                f"selection='gumbel' runs one simulation at a time (lanes=1); got lanes={self.lanes} "
                "(sequential halving plans each simulation's root action)"
            )
        return dataclasses.replace(self, qtransform=qt)


def _python_scalar(v: Any) -> Any:
    """NumPy scalars (``np.int64(10)``, ``np.float32(1.0)``, ``np.bool_``)
    as the Python values they hold; anything else unchanged."""
    if isinstance(v, np.generic) and v.ndim == 0:
        return v.item()
    return v


def options_from_kwargs(options: dict[str, Any]) -> SearchOptions:
    """The :class:`SearchOptions` for ``run_mcts``'s keywords, validated.

    Raises:
      ValueError: an unknown option (listing the options) or a bad value.
    """
    fields = [f.name for f in dataclasses.fields(SearchOptions)]
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(unknown)}; the options are: {', '.join(fields)}"
        )
    return SearchOptions(**{k: _python_scalar(v) for k, v in options.items()}).validated()
