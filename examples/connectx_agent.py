"""c4jax as a ConnectX agent (Kaggle's ``kaggle-environments``): the board the
harness hands over becomes a position with ``from_board``, and the anytime
search picks the move within a time budget per move.

    python3 -m pip install kaggle-environments      # not a dependency of c4jax
    python3 examples/connectx_agent.py --games 10 --budget 0.5
    python3 examples/connectx_agent.py --rows 5 --columns 6 --inarow 4

Without kaggle-environments installed it plays one move on a sample board
and says how to install it.  ``agent(obs, config)`` is the function a
harness calls: ``obs.board`` is ``rows * columns`` cells, row by row from the
top, 0 empty and 1 / 2 the players (1 moves first), ``obs.mark`` the agent's
mark; ``config.rows``, ``config.columns`` and ``config.inarow`` the game, so
other board sizes work.  The search is compiled once per board size by
:func:`warm_up`, before the harness's clock runs (the first compile takes
seconds, longer than a move's time limit).
"""

from __future__ import annotations

import argparse
import re
import time
from types import SimpleNamespace

import c4jax  # first: it sets XLA's CPU loop flag before JAX starts
import jax
import numpy as np

BUDGET_SECONDS = 0.5  # thinking time per move; the harness allows 2 s (actTimeout)
_GAMES: dict = {}


def warm_up(rows: int = 6, columns: int = 7, inarow: int = 4, budget: float = BUDGET_SECONDS):
    """Compiles the anytime search for this board size (once per process)
    and returns the game."""
    key = (rows, columns, inarow)
    if key not in _GAMES:
        game = c4jax.games.connect4.make(rows, columns, inarow)
        # One search of the agent's own budget compiles both chunk programs
        # of the anytime driver at the tree capacity that budget gets
        # (c4jax.search.anytime.anytime_capacity); every move's search on
        # this board reuses them.
        c4jax.run_mcts_anytime(jax.random.key(0), game.env_reset(), budget)
        _GAMES[key] = game
    return _GAMES[key]


def agent(obs, config) -> int:
    """ConnectX's agent: the column (0-based) to play."""
    budget = min(BUDGET_SECONDS, 0.5 * float(getattr(config, "actTimeout", 2.0) or 2.0))
    game = warm_up(int(config.rows), int(config.columns), int(config.inarow), budget)
    board = np.reshape(np.asarray(obs.board, dtype=np.int8), (game.rows, game.cols))
    # ConnectX's marks are c4jax's cells: 1 moves first (X), 2 second (O).
    env = game.from_board(board, to_move=int(obs.mark) - 1)
    key = jax.random.fold_in(jax.random.key(int(getattr(config, "seed", 0) or 0)), int(np.sum(board > 0)))
    out, _ = c4jax.run_mcts_anytime(key, env, budget)
    return int(out.action)


def main() -> None:
    global BUDGET_SECONDS
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=10, help="games against each built-in agent (half as first player)")
    p.add_argument("--budget", type=float, default=BUDGET_SECONDS, help="seconds of thinking per move")
    p.add_argument("--rows", type=int, default=6)
    p.add_argument("--columns", type=int, default=7)
    p.add_argument("--inarow", type=int, default=4)
    args = p.parse_args()
    if args.games < 1 or not 0 < args.budget <= 1.0:
        p.error("--games must be >= 1 and --budget in (0, 1] seconds (ConnectX's actTimeout is 2 s)")
    try:
        c4jax.games.connect4.make(args.rows, args.columns, args.inarow)
    except ValueError as e:  # a size that makes no game: a usage error, not a traceback
        flags = {"rows": "--rows", "cols": "--columns", "connect": "--inarow"}  # c4jax's names, the flags
        p.error(re.sub(r"\b(rows|cols|connect)\b", lambda m: flags[m.group(1)], str(e)))
    BUDGET_SECONDS = args.budget
    t0 = time.perf_counter()
    warm_up(args.rows, args.columns, args.inarow, args.budget)
    print(f"compiled the search for {args.columns} columns x {args.rows} rows, {args.inarow} in a row: "
          f"{time.perf_counter() - t0:.1f} s")
    try:
        from kaggle_environments import evaluate
    except ImportError:
        config = SimpleNamespace(rows=args.rows, columns=args.columns, inarow=args.inarow, actTimeout=2)
        board = [0] * (args.rows * args.columns)
        board[(args.rows - 1) * args.columns + args.columns // 2] = 1  # X in the bottom row's centre column
        move = agent(SimpleNamespace(board=board, mark=2), config)
        print(f"kaggle-environments is not installed (python3 -m pip install kaggle-environments); "
              f"one move instead: O answers X's centre with column {move + 1}")
        return
    configuration = {"rows": args.rows, "columns": args.columns, "inarow": args.inarow}
    for opponent in ("negamax", "random"):
        first = args.games - args.games // 2
        results = evaluate("connectx", [agent, opponent], configuration, num_episodes=first)
        results += [r[::-1] for r in evaluate("connectx", [opponent, agent], configuration,
                                               num_episodes=args.games // 2)]
        wins = sum(1 for r in results if r[0] == 1)
        losses = sum(1 for r in results if r[0] == -1)
        errors = sum(1 for r in results if r[0] is None)
        draws = len(results) - wins - losses - errors
        print(f"c4jax ({args.budget:g} s per move) vs {opponent}: {wins} wins, {draws} draws, {losses} losses"
              + (f", {errors} errors (timeouts or invalid moves)" if errors else "")
              + f" in {len(results)} games ({first} moving first)")


if __name__ == "__main__":
    main()
