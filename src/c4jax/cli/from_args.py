"""The library's objects from the parsed arguments, checked: the game, the
position of a MOVES argument, the compilation cache folder, files to write
and the devices to use.  Each refusal is a :class:`UsageError`."""

from __future__ import annotations

import os
import pathlib
import re
import sys
import tempfile
from typing import Any

from c4jax.games import registry
from c4jax.runtime.cache import default_cache_dir
from c4jax.runtime.cache import enable_compilation_cache as enable_cache
from c4jax.cli.args import GAMES, PROG, UsageError, shown

def cache_dir(args) -> pathlib.Path | None:
    """The cache folder of ``--cache-dir``/``--no-cache``, else the per-user
    default (:func:`c4jax.runtime.cache.default_cache_dir`)."""
    if getattr(args, "no_cache", False):
        return None
    if getattr(args, "cache_dir", None):
        return pathlib.Path(args.cache_dir).expanduser()
    return default_cache_dir()


def enable_compilation_cache(path: pathlib.Path | None) -> pathlib.Path | None:
    """:func:`c4jax.runtime.cache.enable_compilation_cache` in ``path``; a folder
    that cannot be created or written is one warning line on stderr, and
    the command runs without the cache (``None``).  Entries that JAX later
    fails to write or read there (a full disk) are one warning line too
    (:func:`one_cache_warning`)."""
    if path is None:
        return None
    try:
        folder = enable_cache(path)
    except OSError as e:
        reason = "not a folder" if path.exists() and not path.is_dir() else (e.strerror or type(e).__name__)
        sys.stderr.write(
            f"{PROG}: warning: cannot use the compilation cache {str(path)!r} ({reason}); running without it\n"
        )
        return None
    one_cache_warning(folder)
    return folder


# JAX's warning for each cache entry it cannot write or read (jax._src.compiler).
_CACHE_ENTRY_WARNING = re.compile(r"Error (writing|reading) persistent compilation cache entry for '[^']*': (.*)",
                                  re.DOTALL)


def one_cache_warning(folder: pathlib.Path) -> None:
    """Shows JAX's warnings about cache entries it could not write or read
    in ``folder`` as one line for the whole process (``c4jax: warning:
    cannot write to the compilation cache '...' (OSError: [Errno 28] No
    space left on device); ...``) instead of two lines per program; other
    warnings are shown as before."""
    import warnings

    show = warnings.showwarning
    said = set()

    def one_line(message, category, filename, lineno, file=None, line=None):
        m = _CACHE_ENTRY_WARNING.match(str(message))
        if m is None:
            return show(message, category, filename, lineno, file, line)
        verb = "write to" if m.group(1) == "writing" else "read"
        if verb not in said:
            said.add(verb)
            reason = " ".join(m.group(2).split())
            then = "without keeping its programs" if verb == "write to" else "compiling instead"
            sys.stderr.write(f"{PROG}: warning: cannot {verb} the compilation cache {str(folder)!r} ({reason}); "
                             f"the run goes on {then}\n")

    warnings.showwarning = one_line


def make_game(args):
    """The game named by ``--game/--rows/--cols/--connect``; UsageError for a
    bad size (connect4.make's message)."""
    sizes = {k: v for k in ("rows", "cols", "connect") if (v := getattr(args, k)) is not None}
    wrong = [k for k in sizes if k not in (registry.parameters(args.game) or ())]
    if wrong:
        given = [f"--{k}" for k in wrong]
        owners = [g for g in GAMES if set(wrong) <= set(registry.parameters(g) or ())]
        raise UsageError(f"{'/'.join(given)} {'applies' if len(given) == 1 else 'apply'} to "
                         f"{' and '.join(owners)} only, not to {args.game}")
    try:
        return registry.make(args.game, **sizes)
    except ValueError as e:
        raise UsageError(f"bad board size: {e}") from None


def network_options(args, game) -> dict:
    """``dict(value_fn=..., prior_fn=..., params=...)`` of ``--net DIR`` for
    ``game`` (:func:`c4jax.training.load`), ``{}`` without it; UsageError for
    a missing extra, no checkpoint, a partial one or one of another board."""
    if getattr(args, "net", None) is None:
        return {}
    from c4jax.training import require_extra

    try:
        require_extra()
        from c4jax.training.loop import load

        return load(os.path.expanduser(args.net), game).search_options()
    except (ImportError, ValueError) as e:
        raise UsageError(f"--net: {e}") from None


def separated_moves(game) -> bool:
    """Whether MOVES of ``game`` are numbers separated by commas or spaces
    (more than 9 actions), rather than one digit per move."""
    return game.num_actions > 9


def parse_moves(game, text: str):
    """An Env from a MOVES argument; UsageError naming the bad move."""
    from c4jax.present.analysis import move_label

    text = text.strip()
    moves: Any = text
    if separated_moves(game) and text:
        moves = []
        fields = text.split(",")
        for k, field in enumerate(fields):
            if not field.split():
                raise UsageError(f"bad MOVES {shown(text)}: field {k + 1} of {len(fields)} between commas is empty")
            for tok in field.split():
                if not (tok.isascii() and tok.isdigit() and len(tok) <= 9):
                    raise UsageError(f"bad MOVES {shown(text)}: move {len(moves) + 1} is {shown(tok, 12)}: "
                                     f"expected a {move_label(game)} 1..{game.num_actions}")
                moves.append(int(tok))
    try:
        return game.from_moves(moves)
    except ValueError as e:
        hint = ""
        if isinstance(moves, list) and any(m > game.num_actions for m in moves) and not re.search(r"[,\s]", text):
            # "4453" on a 10-column board: one number, not four moves.
            hint = (f"; a game of more than 9 {move_label(game)}s takes its moves separated by commas "
                    f"(e.g. {','.join(text[:4])})")
        raise UsageError(f"bad MOVES {shown(text)}: {e}{hint}") from None


def check_memory_of(args) -> None:
    """UsageError, before any work starts, where this machine's memory
    cannot hold the search trees the command's sizes ask for (the
    library's own estimate, :func:`c4jax.search.tree.check_trees_fit`):
    one game's tree of ``-n`` (play, analyze), a self-play batch's trees and
    records, an arena batch's trees of both players and move records.  A time budget
    (``--think``) keeps its tree small; other bad arguments are left to the
    command, which names them."""
    if args.command not in ("play", "analyze", "selfplay", "arena", "train") or getattr(args, "think", None):
        return
    if args.command == "selfplay" and args.merge:
        return
    from c4jax.search.run import simulation_bucket
    from c4jax.search.tree import check_trees_fit
    from c4jax.tools.players import mcts_player, parse_player
    from c4jax.tools.matches import check_batch_fits as check_arena_batch_fits
    from c4jax.tools.self_play import check_batch_fits

    game = make_game(args)
    batch = "--batch-size", getattr(args, "batch_size", None)
    sims = "--simulations/-n", getattr(args, "simulations", None)
    try:
        if args.command == "play":
            check_trees_fit(*sims, game, 1, mcts_player(args.simulations).tree_nodes)
        elif args.command == "analyze":
            check_trees_fit(*sims, game, 1, simulation_bucket(args.simulations) + 1)
        elif args.command == "selfplay":
            rows = min(args.batch_size or 1024, args.games)
            nodes = mcts_player(args.simulations).tree_nodes
            check_batch_fits(*(batch if args.batch_size else sims), game, rows, nodes)
        elif args.command == "train":  # its self-play batches (the defaults are small)
            if args.simulations is not None:
                rows = min(1024, args.games or 128)
                check_batch_fits(*sims, game, rows, mcts_player(args.simulations).tree_nodes)
        else:
            try:
                nodes = sum(parse_player(_as_mcts(spec)).tree_nodes for spec in (args.player_a, args.player_b))
            except ValueError:
                return  # the arena names the bad player
            rows = min(args.batch_size or args.games, args.games)
            check_arena_batch_fits(*(batch if args.batch_size else ("--games", args.games)), game, rows, nodes)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _as_mcts(spec: str) -> str:
    """``net:N`` as ``mcts:N`` (the same tree), other players as they are."""
    return "mcts:" + spec[4:] if spec.startswith("net:") else spec


def _read_only(folder: pathlib.Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs (not POSIX)
        return False


def check_writable(path: str, what: str) -> None:
    """UsageError unless a file can be written at ``path``, checked before the
    work starts: not a directory, its folder exists, and a file can be
    created there (a probe file, removed at once: a read-only file system or
    a folder such as ``/proc`` fails it) unless ``path`` is an existing
    device such as ``/dev/null``; ``-`` (standard output) is refused."""
    if path == "-":
        raise UsageError(f"cannot write {what} to '-' (standard output): give a path")
    p = pathlib.Path(path).expanduser()
    if p.is_dir():
        raise UsageError(f"cannot write {what} {path!r}: it is a directory")
    parent = p.parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {what} {path!r}: no such directory {str(parent)!r}")
    if (p.exists() and not os.access(p, os.W_OK)) or not os.access(parent, os.W_OK | os.X_OK):
        reason = "read-only file system" if _read_only(parent) else "permission denied"
        raise UsageError(f"cannot write {what} {path!r}: {reason}")
    if p.exists() and not p.is_file():
        return  # a device or a pipe: written as it is
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=".c4jax-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise UsageError(f"cannot write {what} {path!r}: {e.strerror or e}") from None


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


ONE_GAME_COMMANDS = ("play", "analyze")


def use_device(args) -> None:
    """Where the command's searches run: ``--device`` if it names another
    platform than JAX's default, else (``play``, ``analyze``) one game on a
    GPU or TPU host on its CPU (:func:`c4jax.search.programs.one_game_platform`);
    set as JAX's default device.  JAX starts only where that can matter
    (``--device`` given, or a GPU or TPU plugin installed).

    Raises:
      UsageError: ``--device`` names a platform this machine lacks.
    """
    from c4jax.runtime.xla_flags import accelerator_plugin_installed

    platform = getattr(args, "device", None)
    if platform is None and (args.command not in ONE_GAME_COMMANDS or not accelerator_plugin_installed()):
        return
    import jax

    from c4jax.search.programs import one_game_platform

    default = jax.default_backend()
    if platform is None:
        platform = one_game_platform(1, default)
        if platform is None:
            return
    if platform == default:
        return
    try:
        jax.local_devices(backend=platform)
    except RuntimeError:
        raise UsageError(f"--device {platform}: this machine has no {platform.upper()} "
                         f"(its default device is a {default.upper()})") from None
    # The platform, not one device: a batch is still split over its devices.
    jax.config.update("jax_default_device", platform)
