"""``c4jax selfplay``: self-play games with the search's visit counts and
values at every ply, as JSON lines, sharded over every device, resumable, on
one host or several (``jax.distributed``)."""

from __future__ import annotations

import glob
import os
import re

from c4jax.games import registry
from c4jax.cli.args import (
    MAX_PLIES, MAX_PROCESSES, MAX_SELFPLAY_GAMES, command_parser, devices_arg, file_arg, ranged, search_options,
    seed_arg, UsageError,
)
from c4jax.cli.from_args import check_devices, check_writable, make_game
from c4jax.cli.terminal import Interrupted, plain_interrupts, print_line

SELFPLAY_EPILOG = """\
Every line of FILE is one game: game, x, o, result ("X", "O" or "draw"), plies,
moves (1-based), index (the game's number: its key is fold_in(key(seed), index)),
seed, visits (per ply, the root's visit counts) and values (per ply, the root
value for the player to move).  c4jax.read_games reads them.

examples:
  c4jax selfplay --games 1000 --simulations 400 --out games.jsonl
  c4jax selfplay --games 1000 --simulations 400 --out games.jsonl --resume
  c4jax selfplay --game tictactoe --games 200 --simulations 64 --out ttt.jsonl --devices 2
  # two hosts (each plays the games with index % 2 == its id; process 0 merges):
  c4jax selfplay --games 4096 --out g.jsonl --coordinator host0:1234 --num-processes 2 --process-id 0
  c4jax selfplay --games 4096 --out g.jsonl --coordinator host0:1234 --num-processes 2 --process-id 1
"""

# The options' types: their ranges are checked as they are parsed.
GAMES = ranged(1, MAX_SELFPLAY_GAMES)
TEMPERATURE_PLIES = ranged(0, MAX_PLIES)
TEMPERATURE = ranged(0.001, 1000.0, kind=float)  # 0.001: nearly the most visited move; 1000: nearly uniform
DIRICHLET_FRACTION = ranged(0.0, 1.0, kind=float)
DIRICHLET_ALPHA = ranged(0.001, 1000.0, kind=float)
PROCESSES = ranged(1, MAX_PROCESSES)
PROCESS_ID = ranged(0, MAX_PROCESSES - 1)


def add_parser(sub, game, search_parent, common) -> None:
    """Adds the ``selfplay`` command to the subparsers ``sub``."""
    p = command_parser(sub, "selfplay", [game, search_parent(200, think=False), common], SELFPLAY_EPILOG,
                       help="self-play games with the search's visit counts, as JSON lines",
                       description="Self-play: both sides the same MCTS with subtree reuse; the first plies sampled\n"
                       "from the visit counts, then the most visited move.  Writes one JSON line per game\n"
                       "with every ply's root visit counts and value (AlphaZero-style training data).")
    p.add_argument("--games", type=GAMES, default=100, help=f"number of games, {GAMES.limits} (default: 100)")
    p.add_argument("--seed", type=seed_arg, default=0, help=f"random seed, {seed_arg.limits} (default: 0)")
    p.add_argument("--out", metavar="FILE", type=file_arg, required=True, help="the JSON-lines file to write")
    p.add_argument(
        "--resume", action="store_true",
        help="continue an interrupted run: the games already in FILE are not played again",
    )
    p.add_argument(
        "--temperature-plies", type=TEMPERATURE_PLIES, default=8, metavar="K",
        help=f"plies whose move is sampled from the visit counts, {TEMPERATURE_PLIES.limits} (the longest game "
        "of the largest board; default: 8); then the most visited",
    )
    p.add_argument("--temperature", type=TEMPERATURE, default=1.0,
                   help=f"sampling temperature, {TEMPERATURE.limits} (default: 1)")
    p.add_argument(
        "--dirichlet-fraction", type=DIRICHLET_FRACTION, default=0.0, metavar="F",
        help=f"root prior (1 - F) p + F Dir(alpha), AlphaZero's exploration noise, {DIRICHLET_FRACTION.limits} "
        "(default: 0, off)",
    )
    p.add_argument("--dirichlet-alpha", type=DIRICHLET_ALPHA, default=0.3, metavar="ALPHA",
                   help=f"the noise's alpha, {DIRICHLET_ALPHA.limits} (default: 0.3)")
    p.add_argument("--devices", type=devices_arg, default=None, metavar="K",
                   help=f"local devices to use, {devices_arg.limits} and at most this process's (default: all)")
    p.add_argument(
        "--batch-size", type=GAMES, default=None,
        help=f"games per compiled batch, {GAMES.limits}; more than --games plays them all at once "
        "(default: all, up to 1,024)",
    )
    d = p.add_argument_group("several processes (jax.distributed)")
    d.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="process 0's address (default: $JAX_COORDINATOR_ADDRESS)")
    d.add_argument("--num-processes", type=PROCESSES, default=None, metavar="N",
                   help=f"{PROCESSES.limits} (default: $JAX_NUM_PROCESSES)")
    d.add_argument("--process-id", type=PROCESS_ID, default=None, metavar="I",
                   help=f"{PROCESS_ID.limits}, below N (default: $JAX_PROCESS_ID)")
    d.add_argument(
        "--merge", action="store_true",
        help="only join the part files FILE.part-I-of-N of an earlier multi-process run into a new FILE "
        "(give that run's flags: the parts are checked against them)",
    )
    p.set_defaults(func=run)


def _agree(run: dict, out: str, processes: int | None, index: int, count: int,
           failure: UsageError | None, merged: bool = False) -> None:
    """The processes of a multi-process run agree before any plays: each
    shares a digest of every part of its run (game, player, seed, games,
    settings, the number of processes it was started with, ``processes``,
    and ``--out``, ``out`` resolved in its working folder) and whether its
    own checks (devices, its part file, --resume) passed
    (:func:`~c4jax.runtime.distributed.exchange`: every process sees every
    one's), so that all stop together, each with one line naming what
    differs, on a mismatch or on one process's error, instead of the others
    playing on and waiting for it at the end.  ``merged``: this process
    found every game of the run in ``out`` already (:class:`_Merged`); all
    must, or all stop."""
    import hashlib
    import json

    from c4jax.runtime.distributed import exchange

    names = {"game": "--game", "player": "-n", "seed": "--seed", "games": "--games",
             "settings": "temperature, noise or search options", "processes": "--num-processes", "out": "--out"}
    mine = dict(run, processes=processes, out=out)
    digests = [hashlib.sha256(json.dumps(mine[k], default=repr).encode()).hexdigest()[:16] for k in names]
    every = [json.loads(v) for v in exchange("selfplay-agree",
                                              json.dumps(digests + [out, merged, failure is not None]))]
    differ = [i for i in range(count) if every[i][:-3] != every[0][:-3]]
    if differ:
        what = [names[k] for j, k in enumerate(names) if any(e[j] != every[0][j] for e in every)]
        # The same relative --out names another file in another working folder.
        paths = "" if "--out" not in what else " (--out is " + "; ".join(
            f"{every[i][-3]} in process {i}" for i in [0, *differ]) + ")"
        raise UsageError(
            f"process{'es' if len(differ) > 1 else ''} {', '.join(map(str, differ))} of this run "
            f"{'were' if len(differ) > 1 else 'was'} started with another {', '.join(what)} than process 0"
            f"{paths}: start every process alike"
        )
    if failure is not None:
        raise UsageError(f"process {index} of {count}: {failure}") from None
    failed = [i for i in range(count) if every[i][-1]]
    if failed:
        raise UsageError(
            f"process{'es' if len(failed) > 1 else ''} {', '.join(map(str, failed))} of this run stopped at "
            "its checks (its own error line says why): no process played; fix that and start every "
            "process again"
        )
    unseen = [i for i in range(count) if every[i][-2] != every[0][-2]]
    if unseen:
        raise UsageError(
            f"process 0 {'finds' if every[0][-2] else 'does not find'} every game of this run in {out} and "
            f"process{'es' if len(unseen) > 1 else ''} {', '.join(map(str, unseen))} "
            f"{'do' if len(unseen) > 1 else 'does'}{' not' if every[0][-2] else ''}: the processes need one "
            "shared file system"
        )


def part_path(out: str, index: int, count: int) -> str:
    """The file process ``index`` of ``count`` writes (``out`` itself for one)."""
    return out if count == 1 else f"{out}.part-{index}-of-{count}"


def _check_run_args(args) -> None:
    """What the options' types cannot check alone (each number's range is its type's)."""
    if args.think is not None:
        raise UsageError("selfplay searches a fixed number of simulations per move: use --simulations, not --think")


def _this_run(args, game, options: dict) -> dict:
    """What makes a record one of this run's games: the game, the player,
    the seed, the settings (:func:`c4jax.tools.self_play.run_settings`) and the
    number of games (its indices ``0..games - 1``)."""
    from c4jax.tools.self_play import run_settings, search_options

    settings = run_settings(search_options(options), args.temperature_plies, args.temperature)
    name, params = registry.spec(game)
    return {"game": (name, params), "player": f"mcts:{args.simulations}", "seed": args.seed,
            "settings": settings, "games": args.games}


def _game_label(name: str, params) -> str:
    return f"{name}({', '.join(f'{k}={v}' for k, v in params)})" if params else name


# The records' settings (c4jax.tools.self_play.run_settings) this command sets, by its flags.
_SETTING_FLAGS = {"temperature_plies": "--temperature-plies", "sampling_temperature": "--temperature",
                  "dirichlet_fraction": "--dirichlet-fraction", "dirichlet_alpha": "--dirichlet-alpha",
                  "prior": "--prior"}


def _check_records(where: str, records, run: dict, indices: bool = True, share: tuple[int, int] = (0, 1)) -> None:
    """UsageError unless ``records`` (read from ``where``) are games of
    ``run`` (:func:`_this_run`), each index once, and of process
    ``share = (index, count)``'s share of the games, naming what differs."""
    games = run["games"]
    for r in records:
        if r.index is None:
            raise UsageError(f"{where} holds a game without an index: not a file c4jax selfplay wrote")
        if ((r.game, r.game_params), r.x_player, r.seed) != (run["game"], run["player"], run["seed"]):
            theirs, ours = _game_label(r.game, r.game_params), _game_label(*run["game"])
            raise UsageError(
                f"{where} holds games of another run ({theirs}, {r.x_player}, seed {r.seed}; this run: "
                f"{ours}, {run['player']}, seed {run['seed']}): give that run's --game, -n and "
                "--seed, or another --out"
            )
        if r.settings != run["settings"]:
            theirs, ours = dict(r.settings or ()), dict(run["settings"])
            diff = ", ".join(f"{_SETTING_FLAGS.get(k, k)} {theirs.get(k)!r} there, {ours.get(k)!r} here"
                             for k in sorted(set(theirs) | set(ours)) if theirs.get(k) != ours.get(k))
            raise UsageError(
                f"{where} holds games of another run (index {r.index}: {diff}): give that run's "
                "settings, or another --out"
            )
        if r.index % share[1] != share[0]:
            raise UsageError(
                f"{where} holds game {r.index}, which process {r.index % share[1]} of {share[1]} plays, not "
                f"process {share[0]}: each process resumes its own part file"
            )
    seen = [r.index for r in records]
    if len(set(seen)) != len(seen):
        raise UsageError(f"{where} holds a game twice: not a file c4jax selfplay wrote")
    if indices:
        _check_indices(where, seen, games)


def _check_indices(where: str, indices, games: int) -> None:
    """UsageError if an index is beyond ``games`` (a run of more games)."""
    top = max(indices, default=-1)
    if top >= games:
        raise UsageError(
            f"{where}: game {top:,} is beyond this run's --games {games:,} (indices 0..{games - 1:,}): "
            f"give that run's --games (at least {top + 1:,})"
        )


def _existing(path: str, run: dict, share: tuple[int, int], con) -> list:
    """The records already in ``path`` (for --resume); UsageError if they
    are not ``run``'s.  An unfinished last line (a write cut short) is
    dropped from the file, but only once the whole lines before it have
    been checked to be this run's records: a file of anything else is left
    as it was."""
    from c4jax.tools.records import records_from_bytes

    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        data = f.read()
    end = data.rfind(b"\n") + 1
    try:
        records = records_from_bytes(data[:end], path)
    except ValueError as e:
        raise UsageError(f"cannot resume from {path!r}: {e}") from None
    _check_records(repr(path), records, run, share=share)
    if end < len(data):
        tail = data[end:]
        if not tail.startswith(b'{"game": '[: len(tail)]):  # not the start of a record's line
            raise UsageError(f"cannot resume from {path!r}: its last line is not a game record")
        with open(path, "rb+") as f:
            f.truncate(end)
        print_line(con, f"Dropped an unfinished last line of {path} ({len(data) - end:,} bytes)", markup=False)
    return records


def _append(path: str, records) -> None:
    """Appends whole lines with one write and an fsync: a killed run leaves
    whole lines (a write cut short by a crash is dropped by --resume)."""
    data = "".join(r.to_json() + "\n" for r in records).encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError as e:  # os.write names no file: the error line names it
        raise OSError(e.errno, e.strerror, path) from None
    finally:
        os.close(fd)


def _kept(path: str, games: int) -> str:
    """What an interrupted run kept: the games whole in ``path`` (each
    batch's are appended when it ends; the batch under way is lost)."""
    try:
        with open(path, "rb") as f:
            have = f.read().count(b"\n")
    except OSError:
        have = 0
    when = "each batch's games are written when the batch ends"
    if not have:
        return f"no game was written ({when})"
    return f"{have:,} of {games:,} games are in {path} ({when}); add --resume to play the rest"


def _part_files(out: str) -> dict[str, int]:
    """The part files ``out.part-I-of-N`` there are, each with its run's
    number of processes ``N``."""
    found = {p: re.search(r"\.part-\d+-of-(\d+)$", p) for p in glob.glob(glob.escape(out) + ".part-*-of-*")}
    return {p: int(m.group(1)) for p, m in found.items() if m}


def merge_parts(out: str, run: dict) -> int:
    """Joins ``out.part-I-of-N`` into ``out`` (written to a temporary file
    and renamed: all or nothing), in index order, after checking that every
    part holds games of ``run`` (:func:`_this_run`: the command line's game,
    player, seed, settings and games) and that every game ``0..games-1`` is
    there exactly once; removes the parts.  Returns the number of games.
    UsageError when parts or games are missing, doubled or of another run."""
    from c4jax.tools.records import read_games, write_games

    by_count = _part_files(out)
    parts = sorted(by_count)
    counts = set(by_count.values())
    if not parts:
        raise UsageError(f"no part files {out}.part-I-of-N to merge")
    if len(counts) != 1:
        raise UsageError(
            f"cannot merge: the part files {out}.part-I-of-N are of runs of {' and '.join(map(str, sorted(counts)))} "
            "processes: remove those of the other run"
        )
    n = counts.pop()
    expected = [part_path(out, i, n) for i in range(n)]
    missing = [p for p in expected if p not in parts]
    if missing:
        raise UsageError(
            f"cannot merge: {len(missing)} of {n} part files missing ({', '.join(missing[:2])}"
            f"{', ...' if len(missing) > 2 else ''})"
        )
    games = run["games"]
    by_index: dict[int, object] = {}
    for i, p in enumerate(expected):
        try:
            records = read_games(p)
        except ValueError as e:
            raise UsageError(
                f"cannot merge: {e} (a line cut short by a crash: rerun the processes with --resume, which drops "
                "it and plays the rest)"
            ) from None
        try:
            _check_records(repr(p), records, run, indices=False, share=(i, n))
        except UsageError as e:
            raise UsageError(f"cannot merge: {e}") from None
        for r in records:
            if r.index in by_index:
                raise UsageError(f"cannot merge: game {r.index} is in two parts (the second {p!r})")
            by_index[r.index] = r
    _check_indices("cannot merge: the parts", by_index, games)
    lacking = sorted(set(range(games)) - set(by_index))
    if lacking or len(by_index) != games:
        raise UsageError(
            f"cannot merge: the parts hold {len(by_index)} games, not games 0..{games - 1} "
            f"(missing: {lacking[:5]}{'...' if len(lacking) > 5 else ''}); resume the processes first, "
            "or give that run's --games"
        )
    write_games(out, [by_index[g] for g in range(games)])
    for p in expected:
        os.remove(p)
    return games


def _holds_every_game(out: str, run: dict) -> bool:
    """Whether ``out`` holds every game of ``run``, each once (a merged
    run); UsageError where it holds games of another run."""
    from c4jax.tools.records import read_games

    try:
        records = read_games(out)
    except ValueError:  # not whole records: refused as an existing file
        return False
    _check_records(repr(out), records, run)
    return len(records) == run["games"]


class _Merged(Exception):
    """--resume of a multi-process run whose --out holds every game already:
    nothing to play."""


def _start_checks(args, path: str, index: int, count: int, run: dict, con) -> list:
    """This process's checks before it plays (the devices, its file, the
    games already there for --resume); returns those games.  UsageError
    naming the first that fails; :class:`_Merged` where a multi-process
    run's --out holds every game of it."""
    check_devices(args.devices)
    check_writable(path, "the games")
    if os.path.exists(path) and not os.path.isfile(path):
        raise UsageError(f"--out {path!r} is not a regular file (a device or a pipe): give a file name")
    if count > 1 and os.path.exists(args.out):
        if args.resume and os.path.isfile(args.out) and _holds_every_game(args.out, run):
            raise _Merged
        if args.resume:
            raise UsageError(
                f"{args.out!r} exists and does not hold every game of this run: a multi-process --resume "
                f"continues the part files {args.out}.part-I-of-{count} and its merge never replaces a file; "
                "resume that file as one process, or choose another --out"
            )
        raise UsageError(
            f"{args.out!r} exists: a multi-process run would replace it when it merges its parts; "
            "choose another --out (or pass --resume where it holds this run's merged games)"
        )
    if count > 1:
        # Parts of a run of another process count would stop the merge, after every game is played.
        stale = sorted(p for p, n in _part_files(args.out).items() if n != count)
        if stale:
            raise UsageError(
                f"{stale[0]!r}{f' and {len(stale) - 1} more' if len(stale) > 1 else ''} "
                f"{'are parts' if len(stale) > 1 else 'is a part'} of a run of another number of processes, "
                f"which this run of {count} could not merge: join that run with --merge and its flags, or "
                "remove them"
            )
    _lock(path)
    if os.path.getsize(path) and not args.resume:  # checked under the lock: no run writes it now
        raise UsageError(f"{path!r} exists: pass --resume to continue that run, or choose another --out")
    return _existing(path, run, (index, count), con) if args.resume else []


_LOCKS: list[tuple[int, str, bool]] = []  # (fd, path, created): the files this process writes, locked


def _lock(path: str) -> None:
    """An exclusive lock (``flock``) on ``path``, created if missing, held
    until the run ends (:func:`_release_locks`): a second run writing the same file at the
    same time stops here instead of adding every game again."""
    import fcntl

    new = not os.path.exists(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise UsageError(
            f"{path!r} is being written by another c4jax selfplay (it holds the file's lock): wait for it to "
            "end, or choose another --out"
        ) from None
    _LOCKS.append((fd, path, new))


def _release_locks(remove_new_empty: bool) -> None:
    """Releases the locks; with ``remove_new_empty``, removes a file the
    lock created that is still empty (a run that stopped before it played
    leaves nothing behind)."""
    while _LOCKS:
        fd, path, new = _LOCKS.pop()
        if remove_new_empty and new and os.fstat(fd).st_size == 0:
            os.remove(path)
        os.close(fd)


def run(args, con, t_start: float) -> int:
    from c4jax.runtime.distributed import given_process_count, initialize_distributed

    _check_run_args(args)
    game = make_game(args)
    options = search_options(args)
    if args.dirichlet_fraction > 0:
        options.update(dirichlet_fraction=args.dirichlet_fraction, dirichlet_alpha=args.dirichlet_alpha)
    this_run = _this_run(args, game, options)
    if args.merge:
        check_writable(args.out, "the games")
        if os.path.exists(args.out):
            raise UsageError(
                f"{args.out!r} exists: --merge writes the joined games there; choose another --out, "
                "or move that file away"
            )
        n = merge_parts(args.out, this_run)
        print_line(con, f"Merged {n:,} games into {args.out}", markup=False)
        return 0
    try:
        index, count = initialize_distributed(args.coordinator, args.num_processes, args.process_id, con.print)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if count > 1:
        # jax.distributed catches SIGTERM for its preemption notices, which
        # this command does not use: `kill` and `timeout` stop it again.
        import signal

        signal.signal(signal.SIGTERM, signal.SIG_DFL)

    path = part_path(args.out, index, count)
    played = False
    try:
        failure, merged = None, False
        try:
            done = _start_checks(args, path, index, count, this_run, con)
        except UsageError as e:
            if count == 1:
                raise
            failure, done = e, []
        except _Merged:
            merged, done = True, []
        if count > 1:
            _agree(this_run, os.path.abspath(args.out), given_process_count(args.num_processes), index, count,
                   failure, merged)
        if merged:
            print_line(con, f"process {index} of {count}: every game of this run is in {args.out} already: "
                       "nothing to play", markup=False)
            return 0
        _play_and_merge(args, con, game, options, this_run, path, index, count, done)
        played = True
    finally:
        _release_locks(remove_new_empty=not played)
    return 0


def _play_and_merge(args, con, game, options: dict, this_run: dict, path: str, index: int, count: int, done) -> None:
    """Plays this process's games that ``done`` lacks into ``path``; in a
    multi-process run, waits for every process and process 0 merges."""
    import jax

    from c4jax.runtime.distributed import process_share
    from c4jax.tools.self_play import selfplay

    have = {r.index for r in done}
    todo = process_share([g for g in range(args.games) if g not in have], index, count)
    where = f"process {index} of {count}: " if count > 1 else ""
    if done and todo:
        print_line(con, f"{where}{len(done):,} games already in {path}; playing the {len(todo):,} missing",
                   markup=False)
    if todo:
        try:
            with plain_interrupts():
                result = selfplay(
                    jax.random.key(args.seed), args.simulations, todo, game.env_reset(),
                    temperature_plies=args.temperature_plies, temperature=args.temperature, devices=args.devices,
                    batch_size=args.batch_size, seed=args.seed, on_batch=lambda recs: _append(path, recs), keep_games=False,
                    progress=True, **options,
                )
        except ValueError as e:
            raise UsageError(str(e)) from None
        except KeyboardInterrupt:
            raise Interrupted(_kept(path, len(done) + len(todo))) from None
        s = result.summary()
        d = result.num_devices
        print_line(
            con,
            f"{where}{s['games']:,} games, {s['plies']:,} plies, {s['simulations']:,} simulations in "
            f"{s['seconds']:.2f} s (compiling {s['compile_seconds']:.1f} s apart) on {d} "
            f"{jax.local_devices()[0].platform.upper()} device{'s' if d > 1 else ''}"
        )
        print_line(
            con,
            f"per device: {s['games_per_second_per_device']:.2f} games/s, "
            f"{s['simulations_per_second_per_device']:,.0f} simulations/s, "
            f"{s['plies_per_second_per_device']:,.1f} plies/s"
        )
        print_line(con, f"Wrote {s['games']:,} games to {path}", markup=False)
    else:
        print_line(con, f"{where}every game of this run is in {path} already: nothing to play", markup=False)
    if count > 1:
        from c4jax.runtime.distributed import wait_for_every_process

        try:
            wait_for_every_process("selfplay-parts-written")
        except Exception as e:  # a process died: JAX's runtime may stop this one too
            raise UsageError(
                f"another process stopped before its part was written ({type(e).__name__}); rerun every "
                "process with --resume, or join finished parts with --merge"
            ) from None
        if index == 0:
            n = merge_parts(args.out, this_run)
            print_line(con, f"Merged {n:,} games from {count} processes into {args.out}", markup=False)
