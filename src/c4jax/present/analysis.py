"""One search's moves for people and programs: the statistics of every
legal move (:func:`move_stats`), their ``rich`` table (:func:`search_table`),
the principal variation and the solver's result in words."""

from __future__ import annotations

import jax
import numpy as np
from rich.table import Table

from c4jax.games.env import Env

__all__ = ["BEST_MARK", "fmt_q", "host", "move_label", "move_stats", "moves_text", "principal_variation",
           "proven_result", "root_value_text", "search_table", "shown_q"]

BEST_MARK = "<- best"


def fmt_q(q: float) -> str:
    """A value with its sign and three decimals (``-0.000`` is ``+0.000``)."""
    return f"{q:+.3f}".replace("-0.000", "+0.000")


def shown_q(q: float, lower: float, upper: float) -> float:
    """The Q-value a table shows for a move: exactly +1 / -1 where the solver
    proved a win / loss (``lower``/``upper``), else the search's mean ``q``;
    the same rule as the root's value (``SearchOutput.value``)."""
    if lower >= 1.0:
        return 1.0
    if upper <= -1.0:
        return -1.0
    return q


def root_value_text(out) -> str:
    """The root's value of a one-game search for the player to move, as the
    tables' titles write it: ``"value +0.123"``, and what the solver proved
    about the root in the words of the ``proven`` column
    (``"value -1.000 (proven loss in 6)"``)."""
    value = float(np.asarray(out.value).reshape(-1)[0])
    extra = out.search_tree.extra_data
    proof = proven_result(float(np.asarray(extra.value_lower).reshape(-1)[0]),
                          float(np.asarray(extra.value_upper).reshape(-1)[0]),
                          int(np.asarray(extra.value_plies).reshape(-1)[0]))
    return f"value {fmt_q(value)}" + (f" (proven {proof})" if proof else "")


def move_label(game) -> str:
    """What a move of ``game`` is called: its ``action_name`` ("cell" in
    tic-tac-toe, "column" in Connect 4), else "move"."""
    return getattr(game, "action_name", "move")


def moves_text(game, moves) -> str:
    """0-based ``moves`` of ``game`` written 1-based as ``c4jax analyze``
    takes them: a digit each ("4453"), or numbers separated by commas in
    games of more than 9 actions ("10,12,3")."""
    return ("," if game.num_actions > 9 else "").join(str(int(m) + 1) for m in moves)


def principal_variation(tree, action: int, max_len: int = 12) -> list[int]:
    """The line that starts with root ``action`` and then follows the most
    visited child, in a one-game tree (numpy arrays ``[1, N, ...]`` or
    ``[N, ...]``); 0-based actions."""
    index = np.asarray(tree.children_index)
    visits = np.asarray(tree.children_visits)
    if index.ndim == 3:
        index, visits = index[0], visits[0]
    line = [int(action)]
    node = int(index[0, action])
    while node >= 0 and len(line) < max_len:
        v = visits[node]
        if v.max() <= 0:
            break
        a = int(np.argmax(v))
        line.append(a)
        node = int(index[node, a])
    return line


def proven_result(lower: float, upper: float, plies: int = 0) -> str:
    """What the solver proved about a move, from its bounds
    (``SearchOutput.qvalue_lower/upper``, for the player to move) and the
    plies to the end along the proof (``SearchOutput.proven_plies``):
    "win in 3" (plies, the move itself counted), "loss in 4", "draw",
    ">= draw", "<= draw" or "" (nothing)."""
    if lower >= 1.0:
        return f"win in {plies}" if plies else "win"
    if upper <= -1.0:
        return f"loss in {plies}" if plies else "loss"
    if lower == upper == 0.0:
        return "draw"
    if lower >= 0.0:
        return ">= draw"
    if upper <= 0.0:
        return "<= draw"
    return ""


def move_stats(out, env) -> list[dict]:
    """The statistics of every legal move of a one-game search, in action
    order, as plain Python values (for a table, JSON or a GUI).

    Args:
      out: the :class:`c4jax.SearchOutput` of one game (a single ``Env`` or
        a batch of one; its ``search_tree`` is ``[1, ...]``).
      env: that game's position (the search's root), unbatched ``Env`` or a
        batch of one.
    Returns:
      One dict per legal move: ``move`` (int, 1-based, as the CLI numbers
      moves), ``visits`` (int), ``share`` (float, of the root's visits),
      ``q`` (float, the Q-value for the player to move, in [-1, 1]; None if
      unvisited), ``prior`` (float, probability), ``lower`` and ``upper``
      (the solver's bounds on Q), ``plies`` (int, plies to the proven result
      along the proof, 0 if none), ``pv`` (list of 1-based moves: the
      principal variation, most visited child first) and ``best`` (bool,
      the search's chosen move).  The one source of ``c4jax analyze``'s
      table and its ``--json``.
    Raises:
      ValueError: ``out`` or ``env`` holds more than one game, ``env`` is not
        an :class:`~c4jax.games.env.Env`, or ``out`` is a search of another game or
        board than ``env``'s.
    """
    legal = _one_game_legal(out, env)
    tree = host(out.search_tree)
    visits = np.asarray(out.visit_counts).reshape(-1)
    qvalues = np.asarray(out.qvalues).reshape(-1)
    lower = np.asarray(out.qvalue_lower).reshape(-1)
    upper = np.asarray(out.qvalue_upper).reshape(-1)
    plies = np.asarray(out.proven_plies).reshape(-1)
    best = int(np.asarray(out.action).reshape(-1)[0])
    logits = np.where(legal, np.asarray(tree.children_prior_logits)[0, 0].astype(np.float64), -np.inf)
    prior = np.exp(logits - logits.max())
    prior = prior / prior.sum()
    total = max(int(visits.sum()), 1)
    rows = []
    for a in np.flatnonzero(legal):
        a = int(a)
        pv = principal_variation(tree, a) if visits[a] > 0 else [a]
        rows.append(dict(
            move=a + 1, visits=int(visits[a]), share=float(visits[a]) / total,
            q=float(qvalues[a]) if visits[a] > 0 else None, prior=float(prior[a]),
            lower=float(lower[a]), upper=float(upper[a]), plies=int(plies[a]),
            pv=[m + 1 for m in pv], best=a == best,
        ))
    return rows


def search_table(out, env, title: str | None = None, *, with_prior: bool = False):
    """A ``rich.table.Table`` of a one-game search: per legal move (1-based)
    its visits, visit share, Q-value for the player to move (:func:`shown_q`:
    exactly +1 / -1 where proven), what the solver proved ("win in 3",
    "draw", ...), optionally its prior, and the principal variation (as
    :func:`moves_text` writes moves), the chosen move marked ``<- best``:
    what ``c4jax analyze`` and ``c4jax play --show-search`` print.

    Args:
      out, env: as :func:`move_stats` (one game's search and its root).
      title: the table's title (default: the simulations and root value).
      with_prior: add the prior probability column.
    Returns:
      A ``rich.table.Table`` (print it with ``rich.console.Console().print``).
    Raises:
      ValueError: ``out`` or ``env`` holds more than one game, ``env`` is not
        an :class:`~c4jax.games.env.Env`, or ``out`` is a search of another game or
        board than ``env``'s.
    """
    stats = move_stats(out, env)
    game = env.game
    mover = "XO"[int(np.asarray(env.to_move).reshape(-1)[0])]
    if title is None:
        visits = sum(m["visits"] for m in stats)
        title = f"MCTS, {visits:,} root visits, {mover} to move, {root_value_text(out)}"
    t = Table(title=title, title_justify="left")
    # Every column but the principal variation keeps its width (no wrapping):
    # in a narrow terminal the variation folds instead.
    t.add_column(move_label(game), justify="right", no_wrap=True, min_width=len(move_label(game)))
    t.add_column("visits", justify="right", no_wrap=True)
    t.add_column("share", justify="right", no_wrap=True)
    t.add_column(f"Q for {mover}", justify="right", no_wrap=True)
    t.add_column("proven", justify="right", no_wrap=True)
    if with_prior:
        t.add_column("prior", justify="right", no_wrap=True)
    t.add_column("principal variation", overflow="fold", min_width=9)
    t.add_column("", no_wrap=True)
    for m in stats:
        row = [
            str(m["move"]),
            f"{m['visits']:,}",
            f"{100.0 * m['share']:.1f}%",
            fmt_q(shown_q(m["q"], m["lower"], m["upper"])) if m["q"] is not None else "-",
            proven_result(m["lower"], m["upper"], m["plies"]),
        ]
        if with_prior:
            row.append(f"{m['prior']:.3f}")
        row += [moves_text(game, [x - 1 for x in m["pv"]]), BEST_MARK if m["best"] else ""]
        t.add_row(*row, style="bold green" if m["best"] else None)
    return t


def _one_game_legal(out, env):
    """The legal action mask (numpy ``bool[A]``) of one game's ``env``,
    after checking that ``out`` and ``env`` hold one game."""
    if not isinstance(env, Env):
        raise ValueError(f"env must be a c4jax Env (one game); got {type(env).__name__}")
    n_env = int(np.prod(np.shape(env.ply)))
    n_out = int(np.asarray(out.search_tree.node_visits).shape[0])
    if n_env != 1 or n_out != 1:
        raise ValueError(
            f"one game only: the search holds {n_out} games and env {n_env}; "
            "pick one with jax.tree.map(lambda x: x[b], ...)"
        )
    if np.ndim(env.ply):  # a batch of one
        env = jax.tree.map(lambda x: x[0], env)
    searched = getattr(out.search_tree.embeddings, "game", None)
    root = jax.tree.map(lambda x: np.asarray(x)[0, 0], out.search_tree.embeddings)
    if searched != env.game or not np.array_equal(root.stones, np.asarray(env.stones)):
        raise ValueError(
            f"env is not the position this search was run on (the search's root is a position of "
            f"{searched!r}{', another board' if searched == env.game else ''}; env is one of {env.game!r})"
        )
    return np.asarray(out.search_tree.root_invalid_actions)[0] == 0  # the search's ~legal_action_mask(env)


def host(tree):
    """``tree`` with every array copied to the host (NumPy)."""
    return jax.device_get(tree)
