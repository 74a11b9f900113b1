"""``c4jax analyze``: search one position and show every move's statistics."""

from __future__ import annotations

import json
import os
import re
import sys

from c4jax.cli.args import (
    MAX_PLIES, MAX_VISITS, OutputError, UsageError, command_parser, file_arg, ranged, search_options, seed_arg,
)
from c4jax.cli.terminal import COMPILING, Clock, print_board, print_line, print_table, status
from c4jax.cli.from_args import check_writable, make_game, network_options, parse_moves, separated_moves

ANALYZE_EPILOG = """\
examples:
  c4jax analyze 4453                           Connect 4 after columns 4, 4, 5, 3 (1-based)
  c4jax analyze 121212 -n 2000                 X to move can win in column 1
  c4jax analyze 4453 --think 2                 two seconds of thinking instead of a count
  c4jax analyze 1425 --game tictactoe          tic-tac-toe cells 1, 4, 2, 5; X wins at 3
  c4jax analyze "" --plot visits.png           the empty board, visit counts as a bar chart
  c4jax analyze 10,11,3 --cols 12 --rows 8     boards wider than 9 columns: commas
  c4jax analyze --board "......./......./......./......./...O.../..XXO.."
                                               a position from its board, top row first
"""


def add_parser(sub, game, search_parent, common) -> None:
    """Adds the ``analyze`` command to the subparsers ``sub``."""
    p = command_parser(sub, "analyze", [game, search_parent(1000, net=True), common], ANALYZE_EPILOG,
                       help="search a position and show every move's statistics",
                       description="Search a position with MCTS; show the board and a table of every legal move\n"
                       "(visits, Q-value for the player to move, what the solver proved, prior), the best move marked.")
    p.add_argument(
        "moves", metavar="MOVES", nargs="?", default="",
        help="the moves so far, 1-based columns (Connect 4) or cells 1-9 (tic-tac-toe), e.g. 4453; "
        "empty: the empty board",
    )
    p.add_argument(
        "--board", metavar="ROWS", default=None,
        help="the position as its board instead of MOVES: rows top first separated by '/', "
        "cells X, O and '.' (e.g. \"......./......./......./......./...O.../..XXO..\"); "
        "the player to move follows from the stone counts",
    )
    p.add_argument("--seed", type=seed_arg, default=0,
                   help=f"random seed of the search, {seed_arg.limits} (default: 0)")
    p.add_argument("--plot", metavar="FILE", type=file_arg, default=None,
                   help="write a bar chart of the visit counts (PNG; .svg or .pdf by the file's extension)")
    p.add_argument("--json", action="store_true",
                   help="print the analysis as one JSON object instead of the board and table (moves 1-based)")
    p.add_argument("--dot", metavar="FILE", type=file_arg, default=None,
                   help="write the search tree as Graphviz DOT text (render: dot -Tsvg FILE); "
                   "'-': print it instead of the board and table")
    depth, visits = ranged(0, MAX_PLIES), ranged(0, MAX_VISITS)
    p.add_argument("--depth", type=depth, default=None, metavar="K",
                   help=f"with --dot: draw nodes at most K plies below the root, {depth.limits} (default: all)")
    p.add_argument("--min-visits", type=visits, default=0, metavar="V",
                   help=f"with --dot: leave out nodes with fewer than V visits, and their subtrees, {visits.limits} "
                   "(default: 0)")
    p.set_defaults(func=run)


def run(args, con, t_start: float) -> int:
    # The library is imported when a command runs: 'c4jax --help' and usage errors start without JAX.
    from c4jax.present.analysis import move_label, root_value_text, search_table

    import numpy as np

    from c4jax.search import run_mcts

    game = make_game(args)
    if args.board is not None:
        if args.moves:
            raise UsageError("give the position as MOVES or as --board, not both")
        try:
            env = game.from_board(args.board)
        except ValueError as e:
            raise UsageError(f"bad --board: {e}") from None
    else:
        env = parse_moves(game, args.moves)
    if args.plot:
        _plot_format(args.plot)
        check_writable(args.plot, "the plot")
    if args.dot and args.dot != "-":
        check_writable(args.dot, "the tree")
    if not args.dot and (args.depth is not None or args.min_visits):
        raise UsageError("--depth and --min-visits go with --dot")
    if args.json and args.dot == "-":
        raise UsageError("--json and --dot - would both write to stdout: give --dot a file name")
    if bool(env.done):
        if not args.json:  # stdout stays JSON-only (empty) with --json
            print_board(con, game, env)
        what = f"--board {args.board!r}" if args.board is not None else f"MOVES {args.moves!r}"
        raise UsageError(f"{what} is a finished game: nothing to analyze")
    import jax

    # Two phases on the status line: compiling (a first search too small to
    # matter, of the same compiled programs), then the search itself.
    key, options = jax.random.key(args.seed), {**search_options(args), **network_options(args, game)}
    if args.think:
        from c4jax.search import run_mcts_anytime
        from c4jax.search.anytime import anytime_capacity

        # The tree the budget gets by default, for both searches (a budget of
        # a millisecond alone would get a smaller one: another program).
        options["capacity"] = anytime_capacity(args.think, 128)
        warm: dict = {}
        timing: dict = {}
        with status(f"{COMPILING}...") as line:
            run_mcts_anytime(key, env, 1e-3, timing=warm, **options)
            line.update(Clock("searching", args.think))
            out, sims = run_mcts_anytime(key, env, args.think, timing=timing, **options)
        compile_s = warm["compile_s"] + timing["compile_s"]
        done = f"{sims:,} simulations in {timing['search_s']:.2f} s (budget {args.think:g} s"
        if compile_s:
            done += f"; compiling before it {compile_s:.1f} s"
        done += ")"
    else:
        from c4jax.search.run import simulation_bucket

        with status(f"{COMPILING}...") as line:
            # One simulation in the tree of the count's size runs the same
            # compiled programs (the count is their argument).
            jax.block_until_ready(
                run_mcts(key, env, 1, capacity=simulation_bucket(args.simulations) + 1, **options).action)
            line.update(f"searching ({args.simulations:,} simulations)...")
            out = jax.block_until_ready(run_mcts(key, env, args.simulations, **options))
        sims = args.simulations
        done = f"{args.simulations:,} simulations"
    legal = np.asarray(out.search_tree.root_invalid_actions)[0] == 0  # the search's legal moves
    dot = {"max_depth": args.depth, "min_visits": args.min_visits}
    if args.plot:
        _plot_visits(args.plot, game, out, legal, args.moves if args.board is None else "from a board")
    if args.dot and args.dot != "-":
        _write_dot(args.dot, out, **dot)
    if args.dot == "-" or args.json:  # stdout holds the DOT text or the JSON alone
        if args.dot == "-":
            from c4jax.present.dot import tree_to_dot

            print(tree_to_dot(out.search_tree, **dot), end="")
        else:
            print(json.dumps(analysis_json(game, env, out, None if args.board is not None else args.moves, sims)))
        for path, what in ((args.plot, "the visit counts"), (args.dot if args.dot != "-" else None, "the search tree")):
            if path:
                print(f"Wrote {what} to {path}", file=sys.stderr)
        return 0
    print_board(con, game, env)
    mover = "XO"[int(env.to_move)]
    title = f"{done}, {mover} to move, {root_value_text(out)}"
    print_table(con, search_table(out, env, title, with_prior=True))
    best = int(out.action)
    print_line(con, f"Best move: {move_label(game)} {best + 1}")
    if args.plot:
        print_line(con, f"Wrote the visit counts to {args.plot}", markup=False)
    if args.dot:
        print_line(con, f"Wrote the search tree to {args.dot}", markup=False)
    return 0


def analysis_json(game, env, out, moves: str | None, simulations: int) -> dict:
    """The analysis as a JSON-ready dict (``c4jax analyze --json``): the
    position (``moves``, None for a position given as ``--board``, and
    ``board``, rows top first in X, O and '.'), the simulations, the root
    value and, per legal move, its statistics (:func:`c4jax.present.analysis.move_stats`);
    moves 1-based, values for the player to move."""
    import numpy as np

    from c4jax.present.analysis import move_stats
    from c4jax.present.boards import unbatched_grid

    children = move_stats(out, env)
    return {
        "game": game.name,
        **getattr(game, "params", {}),
        "moves": None if moves is None else _moves_list(game, moves),
        "board": ["".join(".XO"[v] for v in row) for row in unbatched_grid(game, env).tolist()],
        "to_move": "XO"[int(env.to_move)],
        "ply": int(env.ply),
        "simulations": int(simulations),
        "value": float(np.asarray(out.value).reshape(-1)[0]),
        "best": int(np.asarray(out.action).reshape(-1)[0]) + 1,
        "children": [
            {k: m[k] for k in ("move", "visits", "share", "q", "prior", "lower", "upper", "plies", "pv")}
            for m in children
        ],
    }


def _moves_list(game, text: str) -> list[int]:
    """The MOVES argument as 1-based ints (digits, or comma-separated on wide boards)."""
    text = text.strip()
    if separated_moves(game):
        return [int(t) for t in re.split(r"[,\s]+", text) if t]
    return [int(ch) for ch in text if ch.isdigit()]


_PLOT_FORMATS = ("png", "svg", "pdf")


def _plot_format(path: str) -> str:
    """The plot's format from its file name's extension (none: PNG);
    UsageError for ``-`` or an extension it cannot write."""
    if path == "-":
        raise UsageError("--plot - : a plot is an image file, not text for the terminal; give a file name")
    suffix = os.path.splitext(path)[1].lower().lstrip(".")
    if suffix and suffix not in _PLOT_FORMATS:
        raise UsageError(f"--plot {path!r}: the plot is written as {', '.join(_PLOT_FORMATS)} "
                         f"(by the file's extension); got .{suffix}")
    return suffix or "png"


def _write_dot(path: str, out, **cut) -> None:
    from c4jax.files import write_whole
    from c4jax.present.dot import tree_to_dot

    try:
        write_whole(path, tree_to_dot(out.search_tree, **cut))
    except OSError as e:
        raise OutputError(f"cannot write the tree {path!r}: {e.strerror or e}") from None


def _plot_visits(path: str, game, out, legal, moves: str) -> None:
    import io

    from c4jax.files import write_whole

    fig = visits_figure(game, out, legal, moves)  # sets matplotlib's backend first
    import matplotlib.pyplot as plt
    image = io.BytesIO()
    try:
        fig.savefig(image, format=_plot_format(path), dpi=100)
        write_whole(path, image.getvalue())
    except OSError as e:
        raise OutputError(f"cannot write the plot {path!r}: {e.strerror or e}") from None
    finally:
        plt.close(fig)


def visits_figure(game, out, legal, moves: str):
    """The bar chart of the root's visit counts (a matplotlib Figure, Agg),
    its title wrapped to the figure's width: the best move and its Q as the
    table writes it (exactly +1 / -1 where proven, what was proven)."""
    import textwrap

    from c4jax.present.analysis import fmt_q, move_label, proven_result, shown_q

    # An MPLBACKEND matplotlib does not know would fail its import: the plot
    # is a PNG file, drawn by Agg whatever the environment says.
    os.environ["MPLBACKEND"] = "Agg"
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    actions = np.flatnonzero(legal)
    visits = np.asarray(out.visit_counts)[actions]
    best = int(out.action)
    colors = ["tab:green" if a == best else "tab:blue" for a in actions]
    if len(actions) <= 20:  # one labelled bar per move
        fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(actions) + 2), 3.5))
        ax.bar([str(a + 1) for a in actions], visits, color=colors)
    else:  # up to 64 columns on a page's width: bars at their column, fewer labels
        from matplotlib.ticker import MaxNLocator

        fig, ax = plt.subplots(figsize=(12.0, 3.5))
        ax.bar(actions + 1, visits, color=colors, width=0.8)
        ax.set_xlim(0.3, game.num_actions + 0.7)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=16, integer=True))
    ax.set_xlabel(move_label(game))
    ax.set_ylabel("visits")
    name = getattr(game, "title", game.name)
    lower = float(np.asarray(out.qvalue_lower).reshape(-1)[best])
    upper = float(np.asarray(out.qvalue_upper).reshape(-1)[best])
    q = f"Q {fmt_q(shown_q(float(np.asarray(out.qvalues).reshape(-1)[best]), lower, upper))}"
    proof = proven_result(lower, upper, int(np.asarray(out.proven_plies).reshape(-1)[best]))
    if proof:
        q += f", proven {proof}"
    chars = int(fig.get_figwidth() * 100 / 10)  # under 10 pixels a character at the title's size
    about = f"{name}, moves {moves or '(none)'}"
    if len(about) > 2 * chars:  # at most two lines of position: the moves cut short
        about = about[:2 * chars - 3] + "..."
    head = f"best {move_label(game)}: {best + 1} ({q})"
    fig.suptitle("\n".join(textwrap.wrap(head, chars) + textwrap.wrap(about, chars)), fontsize="medium")
    fig.tight_layout()
    return fig


