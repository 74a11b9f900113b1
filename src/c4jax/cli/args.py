"""The command line's arguments: one-line errors (:class:`Parser`,
:class:`UsageError`), the argument types with their limits, and the parent
parsers the commands share (cache, game, search)."""

from __future__ import annotations

import argparse
import re

from c4jax.games import registry
from c4jax.validation import int_range, number_range

PROG = "c4jax"


GAMES = registry.registered()  # the built-in games: the command line registers none


EXIT_USAGE = 2


class UsageError(Exception):
    """A bad argument found after parsing: reported as one line, exit 2."""


class OutputError(Exception):
    """A file that could not be written once the work was done (a full disk,
    a folder gone): reported as one line, exit 1."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are ONE line on stderr (no usage block);
    a value out of its range reads as the library's checks do
    (``--seed must be an int in 0..4,294,967,295; got -1``)."""

    def error(self, message: str):  # noqa: D401 - argparse API
        message = re.sub(r"^argument (\S+): must be ", r"\1 must be ", message)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


class Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's examples as written."""


def command_parser(sub, name: str, parents: list, epilog: str, **kw) -> argparse.ArgumentParser:
    """Adds the subcommand ``name`` to ``sub`` with the shared ``parents``
    and ``epilog``'s examples kept as written (``help``, ``description``)."""
    return sub.add_parser(name, parents=parents, epilog=epilog, formatter_class=Formatter, **kw)


def shown(text: str, limit: int = 40) -> str:
    """``text`` for an error message: quoted, at most ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "...")


# One spelling of a number on the command line: ASCII digits, a '-' in
# front at most; no spaces, '+', '_' or other digits (which int() and
# float() would take), no 'nan' or 'inf'.
_INTEGER = re.compile(r"-?[0-9]+")
_DECIMAL = re.compile(r"-?([0-9]{1,40}(\.[0-9]{0,40})?|\.[0-9]{1,40})([eE]-?[0-9]{1,4})?")


def ranged(lo: float, hi: float, *, kind: type = int, even: bool = False, lo_open: bool = False):
    """The argument type of a number in ``lo..hi`` (``kind`` ``int``, or
    ``float`` with ``lo_open``: ``lo`` excluded; ``even``: even ints only),
    written in ASCII digits.  Its error is one line in the library's shape
    (:mod:`c4jax.validation`), which :class:`Parser` prefixes with the
    option: ``--seed must be an int in 0..4,294,967,295; got -1``.  The type
    keeps ``lo``, ``hi``, ``kind``, ``even``, ``lo_open`` and ``limits``, the
    range for the option's help (``"1..1,000,000"``, ``"(0, 3600]"``)."""
    if kind is int:
        limits = int_range(lo, hi).removeprefix("an int in ") + (", even" if even else "")
        allowed = int_range(lo, hi).replace("an int", "an even int", 1) if even else int_range(lo, hi)
    else:
        allowed = number_range(lo, hi, lo_open=lo_open)
        limits = allowed.removeprefix("a number in ")

    def parse(text: str):
        pattern = _INTEGER if kind is int else _DECIMAL
        if not pattern.fullmatch(text):
            raise argparse.ArgumentTypeError(f"must be {allowed}, written in ASCII digits; got {shown(text, 20)}")
        if kind is int and len(text) > 40:  # far out of range (and int() takes at most 4,300 digits)
            raise argparse.ArgumentTypeError(f"must be {allowed}; got {shown(text, 20)}")
        value = kind(text)
        inside = (lo < value if lo_open else lo <= value) and value <= hi and not (even and value % 2)
        if not inside:  # a float past its range may be inf ('1e999'): the text as written
            raise argparse.ArgumentTypeError(f"must be {allowed}; got {text if len(text) <= 40 else shown(text, 20)}")
        return value

    parse.lo, parse.hi, parse.kind, parse.even, parse.lo_open, parse.limits = lo, hi, kind, even, lo_open, limits
    parse.__name__ = f"{kind.__name__} in {limits}"
    return parse


MAX_SIMULATIONS = 1_000_000  # a tree of 2 N + 2 nodes must fit in memory
MAX_THINK_SECONDS = 3600.0
MAX_GAMES = 1_000_000  # arena --games: the records of every game are kept in memory
MAX_SELFPLAY_GAMES = 100_000_000  # selfplay --games: c4jax.tools.self_play.MAX_GAMES
MAX_BOARD = 64  # Connect 4 rows and columns (c4jax.games.connect4.MAX_ROWS, MAX_COLS)
MAX_PLIES = MAX_BOARD * MAX_BOARD  # the longest game of the largest board
MAX_DEVICES = 4096  # local devices of one process (the command then checks the process's own)
MAX_PROCESSES = 65_536
MAX_VISITS = 2**31 - 1  # a node's visit count is an int32
MAX_SEED = 2**32 - 1

simulations_arg = ranged(1, MAX_SIMULATIONS)
seconds_arg = ranged(0, MAX_THINK_SECONDS, kind=float, lo_open=True)
seed_arg = ranged(0, MAX_SEED)
games_arg = ranged(2, MAX_GAMES, even=True)
devices_arg = ranged(1, MAX_DEVICES)


def file_arg(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a file name, got an empty one")
    return text


def folder_arg(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty name")
    return text


def cache_folder_arg(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty name (--no-cache: no cache)")
    return text


DEVICE_PLATFORMS = ("cpu", "gpu", "tpu")


def common_parent() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("compilation cache")
    g.add_argument(
        "--cache-dir",
        metavar="DIR",
        type=cache_folder_arg,
        default=None,
        help="JAX persistent compilation cache (default: $C4JAX_CACHE_DIR, else "
        "$XDG_CACHE_HOME/c4jax/jax or ~/.cache/c4jax/jax)",
    )
    g.add_argument("--no-cache", action="store_true", help="do not use the persistent compilation cache")
    d = p.add_argument_group("device")
    d.add_argument(
        "--device", choices=DEVICE_PLATFORMS, default=None,
        help="where the searches run (default: on a GPU or TPU host, one game (play, analyze) on the CPU, "
        "batches on the accelerator; elsewhere the CPU)")
    return p


def game_parent() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("game")
    g.add_argument("--game", default="connect4", choices=GAMES, help="which game (default: connect4)")
    board = ranged(3, MAX_BOARD)
    g.add_argument("--rows", type=board, default=None, help=f"Connect 4 board rows, {board.limits} (default 6)")
    g.add_argument("--cols", type=board, default=None, help=f"Connect 4 board columns, {board.limits} (default 7)")
    g.add_argument(
        "--connect", type=board, default=None,
        help=f"Connect 4 stones in a row to win, {board.limits} and at most the larger of rows and columns (default 4)",
    )
    return p


def search_parent(default_sims: int, think: bool = True, net: bool = False) -> argparse.ArgumentParser:
    """The search's options; ``think=False``: ``--think`` is refused by the
    command (parsed, so that it can say so) and left out of its help;
    ``net``: with ``--net DIR``."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("search")
    budget = g.add_mutually_exclusive_group()
    budget.add_argument(
        "--simulations", "-n", type=simulations_arg, default=default_sims, metavar="N",
        help=f"MCTS simulations per move, {simulations_arg.limits} (default: {default_sims})",
    )
    budget.add_argument(
        "--think", type=seconds_arg, default=None, metavar="SECONDS",
        help=f"think for this many seconds, in {seconds_arg.limits}, of wall-clock time per search instead "
        "(c4jax.run_mcts_anytime: chunks of 128 simulations until the time is spent)" if think else argparse.SUPPRESS,
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
    if net:
        add_net_arg(g)
    return p


def add_net_arg(group, what: str = "the AI searches with") -> None:
    """``--net DIR``: a trained network (c4jax train)."""
    group.add_argument("--net", metavar="DIR", type=folder_arg, default=None,
                       help=f"{what} the network trained in DIR by 'c4jax train' (its prior replaces the "
                       "heuristic prior; on Connect 4 the prior is flattened and the value mixed with a rollout; "
                       "needs c4jax[train])")


def search_options(args) -> dict:
    """The run_mcts keywords the command line sets (the others keep
    run_mcts's defaults)."""
    options = {"solver": not args.no_solver}
    if args.prior is not None:
        options["prior"] = args.prior
    return options
