"""The ``c4jax`` command: play against the AI in the terminal, analyse a
position, run an arena between two players, self-play, train a network,
time the library.

::

    c4jax play [--game connect4|tictactoe] [--first human|ai] [--simulations N | --think SECONDS] [--show-search]
    c4jax analyze MOVES [--simulations N | --think SECONDS] [--plot visits.png]
    c4jax arena PLAYER_A PLAYER_B [--games G] [--out games.jsonl]
    c4jax selfplay --games G --simulations N --out games.jsonl [--resume] [--devices K]
    c4jax train [--game connect4|tictactoe] --minutes M --out DIR [--overwrite]
    c4jax bench [--quick]

One module per command (:mod:`c4jax.cli.play`, ``analyze``, ``arena``,
``selfplay``, ``train``, ``bench``); what they share: the arguments (:mod:`c4jax.cli.args`),
the library's objects from them (:mod:`c4jax.cli.from_args`) and the terminal
output (:mod:`c4jax.cli.terminal`).  ``main(argv)``
returns the exit status (0 on success, 2 for a bad argument, which is reported
as one line on stderr, never as a traceback; Ctrl-C ends every command with
a line saying what it kept, and 130); :func:`run`, the console
script, ends the process with it at once, without the interpreter's
teardown.  JAX's persistent compilation cache is switched on inside
:func:`main` (never at import), in ``$C4JAX_CACHE_DIR`` or
``~/.cache/c4jax/jax`` (``--no-cache`` turns it off), so that a second start
skips most of the XLA compilation.

The command modules import JAX, the search and matplotlib inside the
functions that use them: ``--help`` and argument errors start no JAX.
"""

from __future__ import annotations

import time

_START = time.perf_counter()  # as near the process start as an import gets

import argparse  # noqa: E402
import contextlib  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from typing import Sequence  # noqa: E402

from c4jax import __version__  # noqa: E402
from c4jax.cli import analyze, arena, bench, play, selfplay, train  # noqa: E402
from c4jax.cli.args import (  # noqa: E402
    EXIT_USAGE, PROG, OutputError, Parser, UsageError, common_parent, game_parent, search_parent,
)
from c4jax.cli.terminal import (  # noqa: E402
    Interrupted, console, hard_exit, interrupts_held, on_interrupt, plain_interrupts, tolerate_any_encoding,
)
from c4jax.cli.from_args import cache_dir, check_memory_of, enable_compilation_cache, use_device  # noqa: E402

__all__ = ["main", "run", "build_parser"]


MAIN_EPILOG = """\
examples:
  c4jax play --game tictactoe
  c4jax analyze 121212
  c4jax arena mcts:200 random --games 20
  c4jax selfplay --games 100 --simulations 200 --out games.jsonl
  c4jax train --game tictactoe --minutes 5 --out ttt-net
  c4jax bench --quick
Run 'c4jax COMMAND --help' for a command's options.
"""


def build_parser() -> argparse.ArgumentParser:
    """The ``c4jax`` argument parser (subcommands play, analyze, arena, selfplay, train, bench)."""
    parser = Parser(
        prog=PROG,
        description="Batched Monte Carlo Tree Search for Connect 4 and tic-tac-toe in JAX.",
        epilog=MAIN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    common, game = common_parent(), game_parent()
    for command in (play, analyze, arena, selfplay, train, bench):
        command.add_parser(sub, game, search_parent, common)
    parser.set_defaults(command_parsers=sub.choices)
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, with an unrecognized argument reported by
    the command it was given to (``c4jax analyze: error: unrecognized
    arguments: --foo (see 'c4jax analyze --help')``).  Raises SystemExit as
    argparse does."""
    args, extra = parser.parse_known_args(argv)
    if extra:
        command = args.command_parsers.get(args.command, parser)
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``c4jax`` command with ``argv`` (default ``sys.argv[1:]``);
    returns the exit status."""
    t_start = _START if argv is None else time.perf_counter()
    # Ctrl-C during start-up (JAX's import) is held back and acted on after it.
    with interrupts_held() as came:
        parser = build_parser()
        try:
            args = parse(parser, None if argv is None else list(argv))
        except SystemExit as e:  # --help, --version and argparse's one-line errors
            return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_USAGE)
        if args.command is None:
            sys.stderr.write(
                f"{PROG}: error: a command is required: play, analyze, arena, selfplay, train or bench "
                f"(see '{PROG} --help')\n"
            )
            return EXIT_USAGE
        tolerate_any_encoding()
        con = console()
        enable_compilation_cache(cache_dir(args))
        # JAX's and the search's extensions load here, held, with or without
        # the cache (a Ctrl-C inside their initialisation is an ImportError).
        import c4jax.search  # noqa: F401
    # Ctrl-C must reach us even if SIGINT was inherited as ignored (nohup, some
    # CI runners): every command ends on it with exit status 130.
    import signal

    previous = None
    with contextlib.suppress(ValueError, OSError):
        previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        # The console script's hold (c4jax.__main__) has what came before.
        if came or getattr(previous, "held", None):
            raise KeyboardInterrupt
        with plain_interrupts():
            check_memory_of(args)
            use_device(args)
            return args.func(args, con, t_start)
    except UsageError as e:
        sys.stderr.write(f"{PROG} {args.command}: error: {e}\n")
        return EXIT_USAGE
    except OutputError as e:
        sys.stderr.write(f"{PROG} {args.command}: error: {e}\n")
        return 1
    except KeyboardInterrupt as e:
        # Interrupted says what the command kept (the games written, or none).
        kept = f": {e}" if isinstance(e, Interrupted) and str(e) else ""
        sys.stderr.write(f"{PROG} {args.command}: interrupted{kept}\n")
        # Compilation or a search may still be running in XLA's threads; the
        # interpreter's normal shutdown would crash under them.
        hard_exit(130)
        return 130
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")
        return 1
    except OSError as e:
        # A file or the output that cannot be read or written (a full disk,
        # /dev/full, a closed terminal, a folder gone since the checks): one
        # line where it can still go, exit 1.
        if _is_output_error(e):
            with contextlib.suppress(OSError):
                sys.stdout = open(os.devnull, "w")
            message = f"cannot write the output: {e.strerror or e}"
        else:
            message = f"{e.strerror or e}" + (f": {e.filename!r}" if e.filename else "")
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"{PROG} {args.command}: error: {message}\n")
        return 1


def run() -> None:
    """The console script (``c4jax``, ``python -m c4jax``; :mod:`c4jax.__main__` calls it): :func:`main`,
    then the process ends at once with its status (:func:`hard_exit`),
    without the interpreter's teardown of JAX's runtime (its client and
    compiled programs), which nothing a finished command needs: every file
    is written whole and every compilation cached before :func:`main`
    returns.  Output still buffered is written first: if it cannot be (a
    closed pipe, a full disk), the status is 1, with one line on stderr
    unless the reader is gone, as :func:`main` reports its own output errors.
    Where ``jax.distributed`` is initialized (self-play over several
    processes) the normal exit runs, with JAX's shutdown."""
    code = main()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = code or 1
    except (OSError, ValueError) as e:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"{PROG}: error: cannot write the output: {getattr(e, 'strerror', None) or e}\n")
        code = code or 1
    if "jax" in sys.modules:
        import jax

        if jax.distributed.is_initialized():
            sys.exit(code)
        jax.effects_barrier()  # what JAX's own exit waits for
    hard_exit(code)


def _is_output_error(error: OSError) -> bool:
    """Whether ``error`` came from writing standard output (rich's write to
    the console's file), judged by the traceback's last frame."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename.endswith(("rich/console.py", "rich\\console.py"))


if __name__ == "__main__":
    sys.exit(main())
