"""The ``c4jax`` command: play against the AI in the terminal, analyse a
position, run an arena between two players, time the library.

::

    c4jax play [--game connect4|tictactoe] [--first human|ai] [--simulations N | --think SECONDS] [--show-search]
    c4jax analyze MOVES [--simulations N | --think SECONDS] [--plot visits.png]
    c4jax arena PLAYER_A PLAYER_B [--games G] [--out games.jsonl]
    c4jax bench [--quick]

``main(argv)`` returns the exit status (0 on success, 2 for a bad argument,
which is reported as one line on stderr, never as a traceback).  JAX's
persistent compilation cache is switched on inside :func:`main` (never at
import), in ``$C4JAX_CACHE_DIR`` or ``~/.cache/c4jax/jax`` (``--no-cache``
turns it off), so that a second start skips most of the XLA compilation.

The human player of the terminal game lives here (OpenSpiel's
``examples/mcts.py`` and ``bots/human.py`` are the model: players by flag,
search statistics per move on request, re-prompt on bad input, the legal moves
on an empty line, a clean exit with a summary on Ctrl-C or EOF).
"""

from __future__ import annotations

import time

_START = time.perf_counter()  # as near the process start as an import gets (c4jax imports JAX)

import argparse  # noqa: E402
import contextlib  # noqa: E402
import functools  # noqa: E402
import os  # noqa: E402
import pathlib  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from typing import Any, Sequence  # noqa: E402

import c4jax  # noqa: E402

__all__ = ["main", "build_parser"]

PROG = "c4jax"
GAMES = ("connect4", "tictactoe")
EXIT_USAGE = 2
BEST_MARK = "<- best"


class UsageError(Exception):
    """A bad argument found after parsing: reported as one line, exit 2."""


# ---------------------------------------------------------------------------
# Argument parsing


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are ONE line on stderr (no usage block)."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's examples as written."""


def _positive_int(text: str) -> int:
    if not (text.isascii() and text.strip().lstrip("+-").isdigit() and len(text) <= 12):
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text[:20]!r}")
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


MAX_SIMULATIONS = 1_000_000  # a tree of 2 N + 2 nodes must fit in memory


def _simulations(text: str) -> int:
    value = _positive_int(text)
    if value > MAX_SIMULATIONS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_SIMULATIONS:,}, got {value:,}")
    return value


MAX_THINK_SECONDS = 3600.0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text[:20]!r}") from None
    if not (0 < value <= MAX_THINK_SECONDS):
        raise argparse.ArgumentTypeError(f"must be in (0, {MAX_THINK_SECONDS:g}] seconds, got {text[:20]!r}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _seed(text: str) -> int:
    value = _int(text)
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"must be in 0..{2**32 - 1}, got {value}")
    return value


def _common_parent() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("compilation cache")
    g.add_argument(
        "--cache-dir",
        metavar="DIR",
        default=None,
        help="JAX persistent compilation cache (default: $C4JAX_CACHE_DIR, else "
        "$XDG_CACHE_HOME/c4jax/jax or ~/.cache/c4jax/jax)",
    )
    g.add_argument("--no-cache", action="store_true", help="do not use the persistent compilation cache")
    return p


def _game_parent() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("game")
    g.add_argument("--game", default="connect4", choices=GAMES, help="which game (default: connect4)")
    g.add_argument("--rows", type=_int, default=None, help="Connect 4 board rows, 3..32 (default 6)")
    g.add_argument("--cols", type=_int, default=None, help="Connect 4 board columns, 3..64 (default 7)")
    g.add_argument(
        "--connect", type=_int, default=None, help="Connect 4 stones in a row to win (default 4)"
    )
    return p


def _search_parent(default_sims: int) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("search")
    budget = g.add_mutually_exclusive_group()
    budget.add_argument(
        "--simulations", "-n", type=_simulations, default=default_sims, metavar="N",
        help=f"MCTS simulations per move (default: {default_sims})",
    )
    budget.add_argument(
        "--think", type=_seconds, default=None, metavar="SECONDS",
        help="think for this many seconds of wall-clock time per search instead "
        "(c4jax.run_mcts_anytime: chunks of 128 simulations until the time is spent)",
    )
    g.add_argument(
        "--prior", default="uniform", choices=("uniform", "heuristic"),
        help="prior of the search: uniform, or heuristic (win, else block); default: uniform",
    )
    g.add_argument(
        "--no-solver", action="store_true",
        help="plain mean backups: no proofs of wins, draws and losses in the tree "
        "(the 'proven' column stays empty)",
    )
    return p


def _search_options(args) -> dict:
    """The run_mcts keywords the command line sets."""
    return {"prior": args.prior, "solver": not args.no_solver}


PLAY_EPILOG = """\
examples:
  c4jax play                                  Connect 4, you move first, 1000 simulations
  c4jax play --first ai --show-search         the AI opens and shows its search per move
  c4jax play --game tictactoe --seed 7        tic-tac-toe (cells 1-9, row by row)
  c4jax play --rows 5 --cols 5 --connect 4 -n 400
  c4jax play --think 0.5                      the AI thinks half a second per move

at the prompt: a column (Connect 4, 1-based) or a cell 1-9 (tic-tac-toe);
  hint   what the AI would play here (a search; nothing is played)
  undo   take back your last move and the AI's answer
  quit   stop (so do Ctrl-C and Ctrl-D); an empty line lists the legal moves
"""

ANALYZE_EPILOG = """\
examples:
  c4jax analyze 4453                           Connect 4 after columns 4, 4, 5, 3 (1-based)
  c4jax analyze 121212 -n 2000                 X to move can win in column 1
  c4jax analyze 4453 --think 2                 two seconds of thinking instead of a count
  c4jax analyze 1425 --game tictactoe          tic-tac-toe cells 1, 4, 2, 5; X wins at 3
  c4jax analyze "" --plot visits.png           the empty board, visit counts as a bar chart
  c4jax analyze 10,11,3 --cols 12 --rows 8     boards wider than 9 columns: commas
"""

ARENA_EPILOG = """\
players: random, heuristic (win, else block, else random), mcts:N (N simulations
  per move, subtree reuse), flatmc:N (N rollouts per move), perfect (tic-tac-toe)

examples:
  c4jax arena mcts:400 random --games 20
  c4jax arena mcts:1000 flatmc:200 --games 100 --batch-size 20 --out games.jsonl
  c4jax arena perfect mcts:200 --game tictactoe --games 50
"""

BENCH_EPILOG = """\
In a source checkout with the [bench] extras (pgx, open_spiel) this imports the
repository's benchmark scripts, benchmarks/env_throughput.py and
search_throughput.py, and calls their main() (--quick passed on): c4jax against
pgx, OpenSpiel and the naive mctx recipe.  Elsewhere (an installed package) it
times c4jax itself on Connect 4 6x7: random rollouts/s at batch 1024, and
run_mcts simulations/s at batch 1 x 1000 and batch 64 x 200 (compilation and
one warm-up call excluded; the median of the timed calls).

examples:
  c4jax bench --quick                 a short run (about 20 s built-in, 1 min with the scripts)
  c4jax bench                         more timed rounds
  c4jax bench --quick --builtin       time c4jax itself, without the peers
  c4jax bench --scripts ~/c4jax/benchmarks
"""

MAIN_EPILOG = """\
examples:
  c4jax play --game tictactoe
  c4jax analyze 121212
  c4jax arena mcts:200 random --games 20
  c4jax bench --quick
Run 'c4jax COMMAND --help' for a command's options.
"""


def build_parser() -> argparse.ArgumentParser:
    """The ``c4jax`` argument parser (subcommands play, analyze, arena, bench)."""
    parser = _Parser(
        prog=PROG,
        description="Batched Monte Carlo Tree Search for Connect 4 and tic-tac-toe in JAX.",
        epilog=MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {c4jax.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    common, game = _common_parent(), _game_parent()

    p = sub.add_parser(
        "play",
        parents=[game, _search_parent(1000), common],
        help="play against the MCTS AI in the terminal",
        description="Play Connect 4 or tic-tac-toe against MCTS in the terminal.",
        epilog=PLAY_EPILOG,
        formatter_class=_Formatter,
    )
    p.add_argument(
        "--first", choices=("human", "ai"), default="human",
        help="who moves first and plays X (default: human)",
    )
    p.add_argument(
        "--seed", type=_seed, default=None, help="random seed of the AI (default: random, printed)"
    )
    p.add_argument(
        "--show-search", action="store_true",
        help="after each AI move (and hint), a table of every legal move: visit share, Q-value, "
        "what the solver proved (win/draw/loss), principal variation",
    )
    p.set_defaults(func=cmd_play)

    p = sub.add_parser(
        "analyze",
        parents=[game, _search_parent(1000), common],
        help="search a position and show every move's statistics",
        description="Search a position with MCTS; show the board and a table of every legal move\n"
        "(visits, Q-value for the player to move, what the solver proved, prior), the best move marked.",
        epilog=ANALYZE_EPILOG,
        formatter_class=_Formatter,
    )
    p.add_argument(
        "moves", metavar="MOVES", nargs="?", default="",
        help="the moves so far, 1-based columns (Connect 4) or cells 1-9 (tic-tac-toe), e.g. 4453; "
        "empty: the empty board",
    )
    p.add_argument("--seed", type=_seed, default=0, help="random seed of the search (default: 0)")
    p.add_argument("--plot", metavar="PNG", default=None, help="write a bar chart of the visit counts (PNG)")
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser(
        "arena",
        parents=[game, common],
        help="play games between two players",
        description="Play G games between two players (they alternate moving first), batched and\n"
        "jitted; show a progress bar, then wins/draws/losses with 95%% Wilson intervals and Elo.",
        epilog=ARENA_EPILOG,
        formatter_class=_Formatter,
    )
    p.add_argument("player_a", metavar="PLAYER_A", help="e.g. mcts:1000")
    p.add_argument("player_b", metavar="PLAYER_B", help="e.g. random")
    p.add_argument(
        "--games", type=_int, default=100,
        help="number of games, even: the players alternate moving first (default: 100)",
    )
    p.add_argument("--seed", type=_seed, default=0, help="random seed (default: 0)")
    p.add_argument("--batch-size", type=_int, default=None, help="games per jitted call, even (default: all)")
    p.add_argument("--out", metavar="JSONL", default=None, help="write every game as JSON lines")
    p.set_defaults(func=cmd_arena)

    p = sub.add_parser(
        "bench",
        parents=[common],
        help="time the environment and the search",
        description="Throughput of c4jax on this machine: env rollouts/s and run_mcts simulations/s.",
        epilog=BENCH_EPILOG,
        formatter_class=_Formatter,
    )
    p.add_argument("--quick", action="store_true", help="a short run: small shapes or few timed rounds")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--builtin", action="store_true",
        help="time c4jax itself even where the repository's benchmarks/ scripts are at hand",
    )
    which.add_argument(
        "--scripts", metavar="DIR", default=None,
        help="the folder of the benchmark scripts (default: ./benchmarks or the source checkout's)",
    )
    p.set_defaults(func=cmd_bench)
    return parser


# ---------------------------------------------------------------------------
# Helpers shared by the commands


def _cache_dir(args) -> pathlib.Path | None:
    if getattr(args, "no_cache", False):
        return None
    if getattr(args, "cache_dir", None):
        return pathlib.Path(args.cache_dir).expanduser()
    env = os.environ.get("C4JAX_CACHE_DIR")
    if env is not None:
        return pathlib.Path(env).expanduser() if env.strip() else None  # empty: off
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "c4jax" / "jax"


def enable_compilation_cache(path: pathlib.Path | None) -> pathlib.Path | None:
    """Switches on JAX's persistent compilation cache in ``path`` (every
    compiled function, however quick to compile).  Returns the directory used,
    or ``None`` (no path, or it cannot be created: the cache is then off)."""
    if path is None:
        return None
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if not os.access(path, os.W_OK):
        return None
    import jax

    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


def make_game(args):
    """The game named by ``--game/--rows/--cols/--connect``; UsageError for a
    bad size (connect4.make's message)."""
    from c4jax import connect4, tictactoe

    sizes = {k: getattr(args, k) for k in ("rows", "cols", "connect")}
    if args.game == "tictactoe":
        given = [f"--{k}" for k, v in sizes.items() if v is not None]
        if given:
            raise UsageError(f"{'/'.join(given)} {'applies' if len(given) == 1 else 'apply'} to connect4 only, not to tictactoe")
        return tictactoe.GAME
    try:
        return connect4.make(
            6 if sizes["rows"] is None else sizes["rows"],
            7 if sizes["cols"] is None else sizes["cols"],
            4 if sizes["connect"] is None else sizes["connect"],
        )
    except ValueError as e:
        raise UsageError(f"bad board size: {e}") from None


def parse_moves(game, text: str):
    """An Env from a MOVES argument; UsageError naming the bad move."""
    text = text.strip()
    moves: Any = text
    if game.name == "connect4" and game.cols > 9 and text:
        moves = []
        for i, tok in enumerate(t for t in re.split(r"[,\s]+", text) if t):
            if not (tok.isascii() and tok.isdigit() and len(tok) <= 9):
                raise UsageError(f"bad MOVES {text!r}: move {i} is {tok!r}: expected a column 1..{game.cols}")
            moves.append(int(tok))
    try:
        return game.from_moves(moves)
    except ValueError as e:
        raise UsageError(f"bad MOVES {text!r}: {e}") from None


def _check_writable(path: str, what: str) -> None:
    """UsageError unless a file can be written at ``path`` (checked before the
    work starts, without creating the file)."""
    p = pathlib.Path(path).expanduser()
    if p.is_dir():
        raise UsageError(f"cannot write {what} {path!r}: it is a directory")
    parent = p.parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {what} {path!r}: no such directory {str(parent)!r}")
    if (p.exists() and not os.access(p, os.W_OK)) or not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write {what} {path!r}: permission denied")


def _console(**kw):
    from rich.console import Console

    return Console(highlight=False, **kw)


def _fmt_q(q: float) -> str:
    return f"{q:+.3f}"


def _move_label(game) -> str:
    return "cell" if game.name == "tictactoe" else "column"


def principal_variation(tree, action: int, max_len: int = 12) -> list[int]:
    """The line that starts with root ``action`` and then follows the most
    visited child, in a one-game tree (numpy arrays ``[1, N, ...]`` or
    ``[N, ...]``); 0-based actions."""
    import numpy as np

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


def search_table(game, out, legal, title: str, mover: str, with_prior: bool = False):
    """A rich Table of one search: per legal move its visits, visit share,
    Q-value (for the player to move), what the solver proved about it,
    optionally its prior, and the principal variation (1-based), the chosen
    move marked ``<- best``; ``mover`` ("X"
    or "O") names the player to move in the Q column.  ``out`` is a
    :class:`c4jax.SearchOutput` of one game (its ``search_tree`` ``[1, ...]``)."""
    import numpy as np
    from rich.table import Table

    tree = _host(out.search_tree)
    visits = np.asarray(out.visit_counts).reshape(-1)
    qvalues = np.asarray(out.qvalues).reshape(-1)
    q_lower = np.asarray(out.qvalue_lower).reshape(-1)
    q_plies = np.asarray(out.proven_plies).reshape(-1)
    q_upper = np.asarray(out.qvalue_upper).reshape(-1)
    best = int(np.asarray(out.action).reshape(-1)[0])
    total = max(int(visits.sum()), 1)
    t = Table(title=title, title_justify="left")
    t.add_column(_move_label(game), justify="right")
    t.add_column("visits", justify="right")
    t.add_column("share", justify="right")
    t.add_column(f"Q for {mover}", justify="right")
    t.add_column("proven", justify="right")
    if with_prior:
        logits = np.asarray(tree.children_prior_logits)[0, 0].astype(np.float64)
        logits = np.where(legal, logits, -np.inf)
        prior = np.exp(logits - logits.max())
        prior = prior / prior.sum()
        t.add_column("prior", justify="right")
    t.add_column("principal variation")
    t.add_column("")
    for a in np.flatnonzero(legal):
        a = int(a)
        pv = principal_variation(tree, a) if visits[a] > 0 else [a]
        row = [
            str(a + 1),
            f"{int(visits[a])}",
            f"{100.0 * visits[a] / total:.1f}%",
            _fmt_q(float(qvalues[a])) if visits[a] > 0 else "-",
            proven_result(float(q_lower[a]), float(q_upper[a]), int(q_plies[a])),
        ]
        if with_prior:
            row.append(f"{prior[a]:.3f}")
        row += [" ".join(str(m + 1) for m in pv), BEST_MARK if a == best else ""]
        t.add_row(*row, style="bold green" if a == best else None)
    return t


def _host(tree):
    import jax

    return jax.device_get(tree)


# ---------------------------------------------------------------------------
# play


class _AI:
    """The MCTS side of the terminal game: one jitted search with a tree of
    fixed capacity ``2 N + 2`` kept between moves (subtree reuse)."""

    def __init__(self, game, num_simulations: int, seed: int, options: dict, think: float | None = None):
        import jax

        from c4jax.reuse import empty_tree, get_subtree
        from c4jax.search import run_mcts, run_mcts_anytime
        from c4jax.search.anytime import anytime_capacity

        self.game = game
        self.n = num_simulations
        self.think = think
        self.capacity = anytime_capacity(think, 128) if think else 2 * num_simulations + 2
        self.key = jax.random.key(seed)

        def search(key, ply, salt, env, tree):
            k = jax.random.fold_in(jax.random.fold_in(key, ply), salt)
            envs = jax.tree.map(lambda x: x[None], env)
            return run_mcts(k, envs, num_simulations, tree=tree, **options)

        def think_search(key, ply, salt, env, tree, seconds=think):
            k = jax.random.fold_in(jax.random.fold_in(key, ply), salt)
            envs = jax.tree.map(lambda x: x[None], env)
            out, self.n = run_mcts_anytime(k, envs, seconds, tree=tree, **options)
            return out

        def fresh(env):
            return empty_tree(jax.tree.map(lambda x: x[None], env), self.capacity)

        # With a time budget, the anytime driver (compiled ahead of time by
        # itself) replaces the jitted search of a fixed simulation count.
        self._search = think_search if think else jax.jit(search)
        self._warm_search = functools.partial(think_search, seconds=0.001) if think else self._search
        self._cut = jax.jit(get_subtree)
        self._fresh = jax.jit(fresh)
        self._legal = jax.jit(game.legal_action_mask)
        self.tree = None
        self._warm: dict[str, threading.Thread] = {}

    def reset(self, env) -> None:
        """Forget the tree: the next search starts from ``env`` afresh."""
        self.tree = self._fresh(env)

    def warm_up(self, env) -> None:
        """Compiles the search and the tree cut, each in a background thread,
        while the human thinks; :meth:`wait` joins them."""
        import jax

        tree = self.tree

        def search():
            jax.block_until_ready(self._warm_search(self.key, 0, 2, env, tree).action)

        def cut():
            jax.block_until_ready(self._cut(tree, 0))

        self._warm = {
            name: threading.Thread(target=fn, name=f"c4jax-warm-up-{name}", daemon=True)
            for name, fn in (("search", search), ("cut", cut))
        }
        for t in self._warm.values():
            t.start()

    def busy(self) -> bool:
        """Whether a warm-up thread is still running."""
        return any(t.is_alive() for t in self._warm.values())

    def wait(self, which: str | None = None) -> None:
        """Joins the warm-up of ``which`` ("search" or "cut"; default both)."""
        for name in [which] if which else list(self._warm):
            t = self._warm.get(name)
            if t is not None:
                t.join()  # an interrupted join leaves the thread listed (see busy)
                self._warm.pop(name, None)

    def legal(self, env):
        import numpy as np

        return np.asarray(self._legal(env))

    def search(self, env, ply: int, hint: bool = False):
        """One search from ``env`` (the tree's root); the tree is kept only
        for a real move (:meth:`played` then cuts it).  Returns the
        :class:`c4jax.SearchOutput` (batch of one) as numpy arrays."""
        import jax

        self.wait("search")
        out = self._search(self.key, ply, 1 if hint else 0, env, self.tree)
        if not hint:
            self.tree = out.search_tree
        return jax.device_get(out)

    def played(self, action: int) -> None:
        """Keeps the subtree of the move just played (either side's)."""
        self.wait("cut")
        self.tree = self._cut(self.tree, action)


class _Game:
    """The state of a terminal game: the moves so far (0-based)."""

    def __init__(self, game, human: int):
        self.game = game
        self.human = human  # 0: the human is X (moves first), 1: O
        self.moves: list[int] = []
        self.env = game.env_reset()

    def push(self, action: int) -> None:
        self.moves.append(action)
        self.env = self.game.from_moves([m + 1 for m in self.moves])

    def pop(self, n: int) -> None:
        del self.moves[len(self.moves) - n:]
        self.env = self.game.from_moves([m + 1 for m in self.moves])

    @property
    def ply(self) -> int:
        return len(self.moves)

    @property
    def done(self) -> bool:
        return bool(self.env.done)

    @property
    def to_move(self) -> int:
        return self.ply % 2

    def result(self) -> str:
        if not self.done:
            return f"undecided, {'XO'[self.to_move]} to move"
        w = int(self.env.winner)
        if w < 0:
            return "draw"
        return f"{'XO'[w]} wins ({'you' if w == self.human else 'the AI'})"

    def summary(self, stopped: bool) -> str:
        moves = " ".join(str(m + 1) for m in self.moves) or "none"
        n = self.ply
        head = "Stopped" if stopped else "Game over"
        res = "result so far" if stopped else "result"
        return f"{head}: {n} move{'s' if n != 1 else ''} played ({moves}); {res}: {self.result()}."


def _search_title(what: str, out) -> str:
    return f"{what}: {int(out.visit_counts.sum())} root visits, value {float(out.value[0]):+.3f}"


_PENDING = bytearray()  # bytes read from stdin but not yet returned as a line


def _read_move(prompt: str) -> str:
    """One line from the player.  On POSIX the wait polls stdin with
    ``select`` (reading the file descriptor itself, so no line hides in a
    Python buffer) instead of blocking in ``input()``: the kernel may deliver
    Ctrl-C's SIGINT to one of JAX's or the warm-up's threads, and a main
    thread blocked in a read would then never see it.  Polling runs Python
    code in the main thread every 0.1 s, so the KeyboardInterrupt comes at
    once.  Raises ``EOFError`` at end of input."""
    import select

    try:
        fileno = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        fileno = None
    if fileno is None or os.name != "posix":
        return input(prompt)
    sys.stdout.write(prompt)
    sys.stdout.flush()
    while b"\n" not in _PENDING:
        ready, _, _ = select.select([fileno], [], [], 0.1)
        if not ready:
            continue
        chunk = os.read(fileno, 4096)
        if not chunk:  # end of input
            if not _PENDING:
                raise EOFError
            _PENDING.extend(b"\n")
        _PENDING.extend(chunk)
    line, _, rest = bytes(_PENDING).partition(b"\n")
    _PENDING[:] = rest
    return line.decode("utf-8", errors="replace").rstrip("\r")


def _legal_text(game, legal) -> str:
    import numpy as np

    return f"Legal moves: {' '.join(str(int(a) + 1) for a in np.flatnonzero(legal))}"


def cmd_play(args, con, t_start: float) -> int:
    game = make_game(args)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "little")
    human = 0 if args.first == "human" else 1
    state = _Game(game, human)
    ai = _AI(game, args.simulations, seed, _search_options(args), think=args.think)
    ai.reset(state.env)
    label = _move_label(game)
    n_actions = game.num_actions
    gname = "tic-tac-toe" if game.name == "tictactoe" else (
        "Connect 4" if (game.rows, game.cols, game.connect) == (6, 7, 4)
        else f"Connect {game.connect} on {game.rows}x{game.cols}"
    )
    con.print(
        f"[bold]c4jax play[/bold]: {gname}. You are [bold]{'XO'[human]}[/bold] and move "
        f"{'first' if human == 0 else 'second'}."
    )
    per_move = f"{args.think:g} s of thinking" if args.think else f"{args.simulations} simulations"
    con.print(f"The AI is MCTS, {per_move} per move (seed {seed}).")
    con.print(
        f"Type a {label} 1-{n_actions}, or [bold]hint[/bold], [bold]undo[/bold], "
        "[bold]quit[/bold] (an empty line lists the legal moves)."
    )
    first_ai_move = True
    stopped = True
    if human == 0:
        ai.warm_up(state.env)
    try:
        con.print(game.render_rich(state.env))
        while not state.done:
            legal = ai.legal(state.env)
            if state.to_move != human:
                t0 = time.perf_counter()
                out = ai.search(state.env, state.ply)
                dt = time.perf_counter() - t0
                action = int(out.action[0])
                if args.show_search:
                    title = _search_title("AI search", out)
                    con.print(search_table(game, out, legal, title, "XO"[state.to_move]))
                since = f", {time.perf_counter() - t_start:.1f} s after start" if first_ai_move else ""
                con.print(
                    f"AI ({'XO'[state.to_move]}) plays {label} [bold]{action + 1}[/bold]"
                    f"  ({ai.n} simulations in {dt:.2f} s{since})"
                )
                first_ai_move = False
                ai.played(action)
                state.push(action)
                con.print(game.render_rich(state.env))
                continue
            try:
                text = _read_move(f"Your move ({'XO'[human]}), {label} 1-{n_actions} [hint/undo/quit]: ")
            except EOFError:
                con.print()
                break
            cmd = text.strip().lower()
            if cmd in ("q", "quit", "exit"):
                break
            if cmd in ("help", "h", "?"):
                con.print(f"Type a {label} 1-{n_actions}; hint: what the AI would play; undo: take back "
                          "your last move and the AI's; quit: stop.")
                con.print(_legal_text(game, legal))
                continue
            if cmd == "hint":
                out = ai.search(state.env, state.ply, hint=True)
                a = int(out.action[0])
                share = float(out.action_weights[0, a])
                q = float(out.qvalues[0, a])
                if args.show_search:
                    title = _search_title("Hint search", out)
                    con.print(search_table(game, out, legal, title, "XO"[state.to_move]))
                con.print(
                    f"Hint: the AI would play {label} [bold]{a + 1}[/bold] "
                    f"(visit share {100 * share:.0f}%, Q {_fmt_q(q)})"
                )
                continue
            if cmd == "undo":
                if state.ply < 2:
                    con.print("Nothing to undo.")
                else:
                    state.pop(2)
                    ai.reset(state.env)
                    con.print("Took back your last move and the AI's.")
                    con.print(game.render_rich(state.env))
                continue
            error = None
            if not cmd:
                error = f"Type a {label} number 1-{n_actions}, or hint, undo, quit."
            elif not re.fullmatch(r"[+-]?[0-9]{1,9}", cmd, flags=re.ASCII):
                shown = text.strip() if len(text.strip()) <= 20 else text.strip()[:20] + "..."
                error = f"{shown!r} is not a move: type a {label} number 1-{n_actions}."
            else:
                m = int(cmd)
                if not 1 <= m <= n_actions:
                    error = f"There is no {label} {m}: {label}s are 1-{n_actions}."
                elif not legal[m - 1]:
                    error = f"Column {m} is full." if label == "column" else f"Cell {m} is taken."
            if error is not None:
                con.print(error, style="red", markup=False)
                con.print(_legal_text(game, legal))
                continue
            action = int(cmd) - 1
            ai.played(action)
            state.push(action)
            con.print(game.render_rich(state.env))
        else:
            stopped = False
            w = int(state.env.winner)
            msg = "Nobody wins." if w < 0 else ("You win!" if w == human else "The AI wins.")
            con.print(f"[bold]{msg}[/bold]")
    except KeyboardInterrupt:
        con.print()
        interrupted = True
    else:
        interrupted = False
    con.print(state.summary(stopped))
    if interrupted or ai.busy():
        # A search may still be running in XLA's threads (a warm-up, or the
        # AI's own move that Ctrl-C interrupted): leave now rather than wait
        # for it, and without the interpreter's shutdown, which aborts
        # (SIGABRT) while XLA threads are running.
        _hard_exit(0)
    return 0


def _hard_exit(code: int) -> None:
    """Flushes the output and ends the process at once (``os._exit``)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


# ---------------------------------------------------------------------------
# analyze


def cmd_analyze(args, con, t_start: float) -> int:
    import numpy as np

    from c4jax.search import run_mcts

    game = make_game(args)
    env = parse_moves(game, args.moves)
    if args.plot:
        _check_writable(args.plot, "the plot")
    if bool(env.done):
        con.print(game.render_rich(env))
        raise UsageError(f"MOVES {args.moves!r} is a finished game: nothing to analyze")
    import jax

    if args.think:
        from c4jax.search import run_mcts_anytime

        out, sims = run_mcts_anytime(jax.random.key(args.seed), env, args.think, **_search_options(args))
        done = f"{sims} simulations in {args.think:g} s"
    else:
        out = run_mcts(jax.random.key(args.seed), env, args.simulations, **_search_options(args))
        done = f"{args.simulations} simulations"
    legal = np.asarray(game.legal_action_mask(env))
    con.print(game.render_rich(env))
    mover = "XO"[int(env.to_move)]
    title = f"{done}, {mover} to move, value {float(out.value):+.3f}"
    con.print(search_table(game, out, legal, title, mover, with_prior=True))
    best = int(out.action)
    con.print(f"Best move: {_move_label(game)} {best + 1}")
    if args.plot:
        _plot_visits(args.plot, game, out, legal, args.moves)
        con.print(f"Wrote the visit counts to {args.plot}")
    return 0


def _plot_visits(path: str, game, out, legal, moves: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    actions = np.flatnonzero(legal)
    visits = np.asarray(out.visit_counts)[actions]
    best = int(out.action)
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(actions) + 2), 3.5))
    colors = ["tab:green" if a == best else "tab:blue" for a in actions]
    ax.bar([str(a + 1) for a in actions], visits, color=colors)
    ax.set_xlabel(_move_label(game))
    ax.set_ylabel("visits")
    name = "tic-tac-toe" if game.name == "tictactoe" else repr(game)
    ax.set_title(f"{name}, moves {moves or '(none)'}: best {_move_label(game)} {best + 1}")
    fig.tight_layout()
    try:
        fig.savefig(path, format="png", dpi=100)
    except OSError as e:
        raise UsageError(f"cannot write the plot {path!r}: {e.strerror or e}") from None
    finally:
        plt.close(fig)


# ---------------------------------------------------------------------------
# arena


def cmd_arena(args, con, t_start: float) -> int:
    import jax

    from c4jax.arena import arena, write_games
    from c4jax.players import parse_player

    game = make_game(args)
    if args.games < 2 or args.games % 2:
        raise UsageError(
            f"--games must be an even number >= 2 (the players alternate moving first); got {args.games}"
        )
    if args.batch_size is not None and (args.batch_size < 2 or args.batch_size % 2):
        raise UsageError(f"--batch-size must be an even number >= 2; got {args.batch_size}")
    players = []
    for spec in (args.player_a, args.player_b):
        try:
            players.append(parse_player(spec))
        except ValueError as e:
            raise UsageError(str(e)) from None
        if spec.strip().lower() == "perfect" and game.name != "tictactoe":
            raise UsageError("the perfect player plays tic-tac-toe only: add --game tictactoe")
    if args.out:
        _check_writable(args.out, "the games")
    result = arena(
        jax.random.key(args.seed),
        players[0],
        players[1],
        args.games,
        game.env_reset(),
        batch_size=args.batch_size,
        progress=True,
    )
    con.print(result.table())
    if args.out:
        try:
            write_games(args.out, result.games)
        except OSError as e:
            raise UsageError(f"cannot write the games {args.out!r}: {e.strerror or e}") from None
        con.print(f"Wrote {len(result.games)} games to {args.out}")
    return 0


# ---------------------------------------------------------------------------
# bench


BENCH_EXTRAS = ("pgx", "pyspiel")  # what the scripts import besides c4jax


def _find_benchmarks() -> pathlib.Path | None:
    for p in (pathlib.Path.cwd() / "benchmarks", pathlib.Path(__file__).resolve().parents[2] / "benchmarks"):
        if (p / "search_throughput.py").is_file():
            return p
    return None


def _run_scripts(folder: pathlib.Path, quick: bool, con) -> int:
    """Imports the benchmark scripts of ``folder`` and calls their ``main``."""
    import importlib.util
    import inspect

    ran = 0
    for name in ("env_throughput", "search_throughput"):
        path = folder / f"{name}.py"
        if not path.is_file():
            continue
        spec = importlib.util.spec_from_file_location(f"_c4jax_bench_{name}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        sys.path.insert(0, str(folder))
        try:
            spec.loader.exec_module(module)
        except ImportError as e:
            sys.modules.pop(spec.name, None)
            raise UsageError(f"{path} needs {e.name or e} (pip install 'c4jax[bench]')") from None
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(str(folder))
        fn = getattr(module, "main", None)
        if not callable(fn):
            continue
        argv = ["--quick"] if quick else []
        con.rule(f"{path.name}{' --quick' if quick else ''}")
        if inspect.signature(fn).parameters:
            fn(argv)
        else:
            saved = sys.argv
            sys.argv = [str(path)] + argv
            try:
                fn()
            finally:
                sys.argv = saved
        ran += 1
    if not ran:
        raise UsageError(f"no benchmark script with a main() in {folder}")
    return 0


def _time_calls(fn, args_for, repeats: int, min_time: float) -> tuple[float, float]:
    """Times ``fn(*args_for(i))``.  Returns (seconds of the first call: trace,
    compile and one run; the median seconds per call over ``repeats`` timed
    runs, each of enough calls to last ``min_time``, after one more warm-up
    call).  Every call gets new arguments (a new key)."""
    import statistics

    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args_for(0)))
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args_for(1)))
    calls = max(1, int(min_time / max(time.perf_counter() - t0, 1e-6)))
    per_call, i = [], 2
    for _ in range(repeats):
        batch = [args_for(i + j) for j in range(calls)]
        i += calls
        jax.block_until_ready(batch)
        t0 = time.perf_counter()
        for a in batch:
            jax.block_until_ready(fn(*a))
        per_call.append((time.perf_counter() - t0) / calls)
    return first, statistics.median(per_call)


def builtin_bench(quick: bool, con) -> list[dict]:
    """Times c4jax itself (Connect 4, 6x7): random rollouts/s at batch 1024,
    run_mcts sims/s at batch 1 x 1000 and 64 x 200.  Returns the rows."""
    import jax
    import jax.numpy as jnp
    from rich.table import Table

    from c4jax import connect4
    from c4jax.search import run_mcts

    repeats, min_time = (3, 0.05) if quick else (7, 0.3)
    game = connect4.make()
    env = game.env_reset()

    def batch(b):
        return jax.tree.map(lambda x: jnp.broadcast_to(x, (b,) + x.shape), env)

    rows = []
    envs = batch(1024)
    rollouts = jax.jit(lambda key, e: jax.vmap(game.rollout)(jax.random.split(key, 1024), e))
    first, med = _time_calls(rollouts, lambda i: (jax.random.key(i), envs), repeats, min_time)
    rows.append(dict(measurement="random rollouts, batch 1024", unit="rollouts/s",
                     rate=1024 / med, ms=1e3 * med, compile_s=first))
    for b, n in ((1, 1000), (64, 200)):
        envs = batch(b)
        fn = jax.jit(lambda key, e, n=n: run_mcts(key, e, n).action)
        first, med = _time_calls(fn, lambda i, envs=envs: (jax.random.key(100 + i), envs), repeats, min_time)
        rows.append(dict(measurement=f"run_mcts, batch {b} x {n} sims", unit="sims/s",
                         rate=b * n / med, ms=1e3 * med, compile_s=first))
    t = Table(
        title=f"c4jax throughput, Connect 4 6x7, {jax.default_backend()} ({os.cpu_count()} cores), "
        f"median of {repeats} runs",
        caption="1st call s: trace, compile (or cache load) and one run, not in the rates",
    )
    for col in ("measurement", "per second", "ms/call", "1st call s"):
        t.add_column(col, justify="left" if col == "measurement" else "right")
    for r in rows:
        t.add_row(
            r["measurement"], f"{r['rate']:,.0f} {r['unit']}", f"{r['ms']:.1f}", f"{r['compile_s']:.2f}"
        )
    con.print(t)
    return rows


def cmd_bench(args, con, t_start: float) -> int:
    import importlib.util

    if args.scripts is not None:
        folder = pathlib.Path(args.scripts).expanduser()
        if not folder.is_dir():
            raise UsageError(f"--scripts {args.scripts!r}: no such folder")
        return _run_scripts(folder, args.quick, con)
    if not args.builtin:
        folder = _find_benchmarks()
        missing = [m for m in BENCH_EXTRAS if importlib.util.find_spec(m) is None]
        if folder is not None and not missing:
            return _run_scripts(folder, args.quick, con)
        why = (
            "no benchmarks/ folder (it ships with the source repository)" if folder is None
            else f"the benchmark scripts need {', '.join(missing)} (pip install 'c4jax[bench]')"
        )
        con.print(f"[dim]{why}: timing c4jax itself[/dim]")
    builtin_bench(args.quick, con)
    return 0


# ---------------------------------------------------------------------------
# main

def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``c4jax`` command with ``argv`` (default ``sys.argv[1:]``);
    returns the exit status."""
    t_start = _START if argv is None else time.perf_counter()
    parser = build_parser()
    try:
        args = parser.parse_args(None if argv is None else list(argv))
    except SystemExit as e:  # --help, --version and argparse's one-line errors
        return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_USAGE)
    if args.command is None:
        sys.stderr.write(
            f"{PROG}: error: a command is required: play, analyze, arena or bench (see '{PROG} --help')\n"
        )
        return EXIT_USAGE
    con = _console()
    # Ctrl-C must reach us even if SIGINT was inherited as ignored (nohup, some
    # CI runners): play, analyze and arena all end cleanly on it.
    import signal

    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.default_int_handler)
    enable_compilation_cache(_cache_dir(args))
    try:
        return args.func(args, con, t_start)
    except UsageError as e:
        sys.stderr.write(f"{PROG} {args.command}: error: {e}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG} {args.command}: interrupted\n")
        # Compilation or a search may still be running in XLA's threads; the
        # interpreter's normal shutdown would crash under them.
        _hard_exit(130)
        return 130
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")
        return 1


if __name__ == "__main__":
    sys.exit(main())
