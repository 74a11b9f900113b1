"""What the ``c4jax`` commands share: argument types and parent parsers, the
compilation cache, the console, the game and moves from the arguments, the
search table, and the one-line usage error."""

from __future__ import annotations

import argparse
import contextlib
import os
import pathlib
import re
import sys
from typing import Any

from c4jax.cache import default_cache_dir
from c4jax.cache import enable_compilation_cache as enable_cache

PROG = "c4jax"
GAMES = ("connect4", "tictactoe")
EXIT_USAGE = 2


class UsageError(Exception):
    """A bad argument found after parsing: reported as one line, exit 2."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are ONE line on stderr (no usage block)."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's examples as written."""


def shown(text: str, limit: int = 40) -> str:
    """``text`` for an error message: quoted, at most ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


def positive_int(text: str) -> int:
    if not (text.isascii() and text.strip().lstrip("+-").isdigit() and len(text) <= 40):
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text[:20]!r}")
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


MAX_SIMULATIONS = 1_000_000  # a tree of 2 N + 2 nodes must fit in memory


def simulations_arg(text: str) -> int:
    value = positive_int(text)
    if value > MAX_SIMULATIONS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_SIMULATIONS:,}, got {value:,}")
    return value


MAX_THINK_SECONDS = 3600.0


def seconds_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text[:20]!r}") from None
    if not (0 < value <= MAX_THINK_SECONDS):
        raise argparse.ArgumentTypeError(f"must be in (0, {MAX_THINK_SECONDS:g}] seconds, got {text[:20]!r}")
    return value


def int_arg(text: str) -> int:
    """An ASCII integer (Unicode digits are refused, as in MOVES), at most
    40 characters."""
    if not (text.isascii() and len(text) <= 40):
        raise argparse.ArgumentTypeError(f"expected an integer, got {shown(text)}")
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {shown(text)}") from None


MAX_GAMES = 1_000_000  # arena --games: the records of every game are kept in memory


def games_arg(text: str) -> int:
    value = int_arg(text)
    if not 2 <= value <= MAX_GAMES or value % 2:
        raise argparse.ArgumentTypeError(
            f"must be an even number in 2..{MAX_GAMES:,} (the players alternate moving first), got {value:,}"
        )
    return value


def file_arg(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a file name, got an empty one")
    return text


def seed_arg(text: str) -> int:
    value = int_arg(text)
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"must be in 0..{2**32 - 1}, got {value}")
    return value


def common_parent() -> argparse.ArgumentParser:
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


def game_parent() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("game")
    g.add_argument("--game", default="connect4", choices=GAMES, help="which game (default: connect4)")
    g.add_argument("--rows", type=int_arg, default=None, help="Connect 4 board rows, 3..64 (default 6)")
    g.add_argument("--cols", type=int_arg, default=None, help="Connect 4 board columns, 3..64 (default 7)")
    g.add_argument(
        "--connect", type=int_arg, default=None, help="Connect 4 stones in a row to win (default 4)"
    )
    return p


def search_parent(default_sims: int) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("search")
    budget = g.add_mutually_exclusive_group()
    budget.add_argument(
        "--simulations", "-n", type=simulations_arg, default=default_sims, metavar="N",
        help=f"MCTS simulations per move (default: {default_sims})",
    )
    budget.add_argument(
        "--think", type=seconds_arg, default=None, metavar="SECONDS",
        help="think for this many seconds of wall-clock time per search instead "
        "(c4jax.run_mcts_anytime: chunks of 128 simulations until the time is spent)",
    )
    g.add_argument(
        "--prior", default=None, choices=("uniform", "heuristic"),
        help="prior of the search: heuristic (win, else block) or uniform; default: run_mcts's, heuristic",
    )
    g.add_argument(
        "--no-solver", action="store_true",
        help="plain mean backups: no proofs of wins, draws and losses in the tree "
        "(the 'proven' column stays empty)",
    )
    return p


def search_options(args) -> dict:
    """The run_mcts keywords the command line sets (the others keep
    run_mcts's defaults)."""
    options = {"solver": not args.no_solver}
    if args.prior is not None:
        options["prior"] = args.prior
    return options


def cache_dir(args) -> pathlib.Path | None:
    """The cache folder of ``--cache-dir``/``--no-cache``, else the per-user
    default (:func:`c4jax.cache.default_cache_dir`)."""
    if getattr(args, "no_cache", False):
        return None
    if getattr(args, "cache_dir", None):
        return pathlib.Path(args.cache_dir).expanduser()
    return default_cache_dir()


def enable_compilation_cache(path: pathlib.Path | None) -> pathlib.Path | None:
    """:func:`c4jax.cache.enable_compilation_cache` in ``path``; a folder
    that cannot be created or written is one warning line on stderr, and
    the command runs without the cache (``None``)."""
    if path is None:
        return None
    try:
        return enable_cache(path)
    except OSError as e:
        sys.stderr.write(
            f"{PROG}: warning: cannot use the compilation cache {str(path)!r} "
            f"({e.strerror or type(e).__name__}); running without it\n"
        )
        return None


def make_game(args):
    """The game named by ``--game/--rows/--cols/--connect``; UsageError for a
    bad size (connect4.make's message)."""
    from c4jax import registry

    sizes = {k: v for k in ("rows", "cols", "connect") if (v := getattr(args, k)) is not None}
    if args.game != "connect4" and sizes:
        given = [f"--{k}" for k in sizes]
        raise UsageError(f"{'/'.join(given)} {'applies' if len(given) == 1 else 'apply'} to connect4 only, "
                         f"not to {args.game}")
    try:
        return registry.make(args.game, **sizes)
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
                raise UsageError(f"bad MOVES {shown(text)}: move {i + 1} is {shown(tok, 12)}: expected a column 1..{game.cols}")
            moves.append(int(tok))
    try:
        return game.from_moves(moves)
    except ValueError as e:
        hint = ""
        if isinstance(moves, list) and any(m > game.cols for m in moves) and not re.search(r"[,\s]", text):
            # "4453" on a 10-column board: one number, not four moves.
            hint = (f"; a board of more than 9 columns takes its moves separated by commas "
                    f"(e.g. {','.join(text[:4])})")
        raise UsageError(f"bad MOVES {shown(text)}: {e}{hint}") from None


def check_writable(path: str, what: str) -> None:
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


def check_devices(devices: int | None) -> None:
    """UsageError unless ``--devices`` is None or in 1..(this process's
    local devices)."""
    if devices is None:
        return
    import jax

    local = jax.local_devices()
    if not 1 <= devices <= len(local):
        raise UsageError(
            f"--devices must be in 1..{len(local)} (this process has {len(local)} "
            f"{local[0].platform.upper()} device{'s' if len(local) > 1 else ''}); got {devices}"
        )


def console(**kw):
    """The commands' rich Console (highlighting off).  ``NO_COLOR`` (any
    value) and ``TERM=dumb`` turn every escape code off, ``FORCE_COLOR``
    turns colour on in a pipe, ``COLUMNS`` sets the width (80 in a pipe)."""
    from rich.console import Console

    # rich drops colours under NO_COLOR but still writes bold and underline
    # codes, and FORCE_COLOR overrides TERM=dumb: no styles at all in either.
    if os.environ.get("NO_COLOR") or os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
        kw.setdefault("color_system", None)
    con = Console(highlight=False, **kw)
    if con.width < MIN_WIDTH:  # COLUMNS=0 made rich print nothing, 1 a letter per line
        con.width = MIN_WIDTH
    return con


MIN_WIDTH = 40  # the narrowest output drawn (a narrower terminal wraps it)

PREPARING = "preparing the search (compiled on the first run of a board size and setting only)"


@contextlib.contextmanager
def status(text: str):
    """A status line with a spinner on standard error while the block runs
    (compiling, searching): standard output stays the command's own; nothing
    is drawn when standard error is not a terminal."""
    err = console(stderr=True)
    if not err.is_terminal:
        yield
        return
    with err.status(text, spinner="line" if ascii_only(err) else "dots"):
        yield


GLYPHS = "\u00b7\u2501\u2502"  # the board's empty cell, rich's table and bar lines


def ascii_only(con) -> bool:
    """Whether ``con``'s output encoding cannot carry the board's glyphs
    (ASCII, Latin-1 without the box lines, an unknown codec): the board then
    draws empty cells as ``.`` (rich switches its tables to ASCII itself)."""
    try:
        GLYPHS.encode(con.encoding)
    except (LookupError, UnicodeEncodeError):
        return True
    return False


def tolerate_any_encoding() -> None:
    """Makes ``sys.stdout`` and ``sys.stderr`` replace what their encoding
    cannot write (``?``) instead of raising ``UnicodeEncodeError``: a
    non-UTF-8 terminal or pipe (``PYTHONIOENCODING=ascii``, a
    Windows code page) never ends a command with a traceback."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:  # started with the stream closed (>&-)
            setattr(sys, name, open(os.devnull, "w"))
            continue
        try:
            GLYPHS.encode(stream.encoding or "ascii")
        except (LookupError, UnicodeEncodeError):
            with contextlib.suppress(AttributeError, ValueError, OSError):
                stream.reconfigure(errors="replace")


def _unsquashed_width(table) -> int:
    """The width ``table`` needs with every ``no_wrap`` column at its widest
    cell and the others at their longest word (rich's own measure lets it
    squash ``no_wrap`` columns too)."""
    from rich.cells import cell_len

    total = 0
    for col in table.columns:
        cells = [str(c) for c in col._cells] + [str(col.header)]
        if col.no_wrap:
            width = max(cell_len(c) for c in cells)
        else:
            width = max([col.min_width or 1] + [cell_len(w) for c in cells for w in c.split()])
        total += width + 2  # one space of padding each side
    return total + len(table.columns) + 1  # the column lines


def print_table(con, table) -> None:
    """Prints a rich Table without squashing a column: the columns that do
    not wrap (moves, visits, values) keep their width and only the principal
    variation folds; a terminal narrower than that gets a wider table (its
    lines run past the edge) rather than cropped numbers."""
    needed = _unsquashed_width(table)
    if needed <= con.width:
        con.print(table)
        return
    width = con.width
    con.width = needed  # rich's print(width=...) cannot go past the console's width
    try:
        con.print(table, crop=False)
    finally:
        con.width = width


def print_board(con, game, env) -> None:
    """Draws one game on ``con``: ASCII where its encoding needs it, and a
    board wider than the console (or a pipe's 80 columns) one character per
    cell, so that no row breaks."""
    con.print(
        game.render_rich(env, ascii_only=ascii_only(con), width=con.width),
        no_wrap=True, overflow="ignore", crop=False,
    )


def hard_exit(code: int) -> None:
    """Flushes the output and ends the process at once (``os._exit``)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


