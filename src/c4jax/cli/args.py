"""The command line's arguments: one-line errors (:class:`Parser`,
:class:`UsageError`), the argument types with their limits, and the parent
parsers the commands share (cache, game, search)."""

from __future__ import annotations

import argparse
import re

from c4jax import registry

PROG = "c4jax"


GAMES = registry.registered()  # the built-in games: the command line registers none


EXIT_USAGE = 2


class UsageError(Exception):
    """A bad argument found after parsing: reported as one line, exit 2."""


class OutputError(Exception):
    """A file that could not be written once the work was done (a full disk,
    a folder gone): reported as one line, exit 1."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are ONE line on stderr (no usage block)."""

    def error(self, message: str):  # noqa: D401 - argparse API
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
# float() would take).
_INTEGER = re.compile(r"-?[0-9]{1,40}")
_DECIMAL = re.compile(r"-?([0-9]{1,40}(\.[0-9]{0,40})?|\.[0-9]{1,40})([eE]-?[0-9]{1,4})?")


def positive_int(text: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {shown(text, 20)} (ASCII digits, e.g. 200)")
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
    if not _DECIMAL.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds, got {shown(text, 20)} (ASCII digits, e.g. 2 or 0.5)"
        )
    value = float(text)
    if not (0 < value <= MAX_THINK_SECONDS):
        raise argparse.ArgumentTypeError(f"must be in (0, {MAX_THINK_SECONDS:g}] seconds, got {text[:20]!r}")
    return value


def float_arg(text: str) -> float:
    """A number in ASCII digits (a '-', a decimal point and an exponent
    allowed); no spaces, '+', '_', Unicode digits, ``nan`` or ``inf``,
    which ``float`` would take.  Its range is the library's to check."""
    if not _DECIMAL.fullmatch(text):
        raise argparse.ArgumentTypeError(f"expected a number, got {shown(text, 20)} (ASCII digits, e.g. 0.25)")
    return float(text)


def int_arg(text: str) -> int:
    """An integer in ASCII digits, a '-' in front at most, at most 40 digits
    (no spaces, '+', '_' or Unicode digits, which ``int`` would take)."""
    if not _INTEGER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"expected an integer, got {shown(text)} (ASCII digits, e.g. 12)")
    return int(text)


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


def folder_arg(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a folder, got an empty name (--no-cache: no cache)")
    return text


def seed_arg(text: str) -> int:
    value = int_arg(text)
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"must be in 0..{2**32 - 1}, got {value}")
    return value


DEVICE_PLATFORMS = ("cpu", "gpu", "tpu")


def common_parent() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("compilation cache")
    g.add_argument(
        "--cache-dir",
        metavar="DIR",
        type=folder_arg,
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
    g.add_argument("--rows", type=int_arg, default=None, help="Connect 4 board rows, 3..64 (default 6)")
    g.add_argument("--cols", type=int_arg, default=None, help="Connect 4 board columns, 3..64 (default 7)")
    g.add_argument(
        "--connect", type=int_arg, default=None, help="Connect 4 stones in a row to win (default 4)"
    )
    return p


def search_parent(default_sims: int, think: bool = True) -> argparse.ArgumentParser:
    """The search's options; ``think=False``: ``--think`` is refused by the
    command (parsed, so that it can say so) and left out of its help."""
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("search")
    budget = g.add_mutually_exclusive_group()
    budget.add_argument(
        "--simulations", "-n", type=simulations_arg, default=default_sims, metavar="N",
        help=f"MCTS simulations per move (default: {default_sims})",
    )
    budget.add_argument(
        "--think", type=seconds_arg, default=None, metavar="SECONDS",
        help=f"think for this many seconds, in (0, {MAX_THINK_SECONDS:g}], of wall-clock time per search instead "
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
    return p


def search_options(args) -> dict:
    """The run_mcts keywords the command line sets (the others keep
    run_mcts's defaults)."""
    options = {"solver": not args.no_solver}
    if args.prior is not None:
        options["prior"] = args.prior
    return options
