"""Every numeric option of every command has a range, shown in its help and
checked as it is parsed: at its limits it is taken, one past them and at 0,
-1, 2**31, 2**63, 10**20, nan and inf (where those are outside) it is one
line on stderr, exit status 2, no traceback and no file written, before
any JAX work.  Sizes within the ranges that this machine's memory cannot
hold are refused with an estimate, by the command and by the library's
public functions (a ``ValueError`` before anything is allocated, never a
``MemoryError`` or ``OverflowError``)."""

from __future__ import annotations

import argparse
import re

import jax
import pytest

import c4jax
import c4jax.validation
from c4jax.cli import build_parser, main
from c4jax.games import connect4, tictactoe

BIG = [0, -1, 2**31, 2**63, 10**20]

# command, the arguments it needs, and where it would write (checked to stay unwritten)
COMMANDS = {
    "play": ([], []),
    "analyze": (["44", "--dot", "{tmp}/tree.dot", "--plot", "{tmp}/visits.png"], ["tree.dot", "visits.png"]),
    "arena": (["random", "random", "--out", "{tmp}/games.jsonl"], ["games.jsonl"]),
    "selfplay": (["--out", "{tmp}/selfplay.jsonl"], ["selfplay.jsonl"]),
    "train": (["--minutes", "1", "--out", "{tmp}/run"], ["run"]),
}

GAME = [("--rows", int, 3, 64, "3..64"), ("--cols", int, 3, 64, "3..64"), ("--connect", int, 3, 64, "3..64")]
SEARCH = [("--simulations", int, 1, 1_000_000, "1..1,000,000"), ("--think", float, 0.0, 3600.0, "(0, 3600]")]
SEED = ("--seed", int, 0, 2**32 - 1, "0..4,294,967,295")

# (command, option, kind, lo, hi, the range as --help shows it); floats:
# --think excludes its lower limit, arena's counts are even.
LIMITS = [
    *[("play", *o) for o in SEARCH + [SEED] + GAME],
    *[("analyze", *o) for o in SEARCH + [SEED] + GAME],
    ("analyze", "--depth", int, 0, 4096, "0..4096"),
    ("analyze", "--min-visits", int, 0, 2**31 - 1, "0..2,147,483,647"),
    ("arena", "--games", int, 2, 1_000_000, "2..1,000,000, even"),
    ("arena", *SEED),
    ("arena", "--batch-size", int, 2, 1_000_000, "2..1,000,000, even"),
    ("arena", "--devices", int, 1, 4096, "1..4096"),
    *[("arena", *o) for o in GAME],
    *[("selfplay", *o) for o in SEARCH + [SEED] + GAME],
    ("selfplay", "--games", int, 1, 100_000_000, "1..100,000,000"),
    ("selfplay", "--temperature-plies", int, 0, 4096, "0..4096"),
    ("selfplay", "--temperature", float, 0.001, 1000.0, "[0.001, 1000]"),
    ("selfplay", "--dirichlet-fraction", float, 0.0, 1.0, "[0, 1]"),
    ("selfplay", "--dirichlet-alpha", float, 0.001, 1000.0, "[0.001, 1000]"),
    ("selfplay", "--devices", int, 1, 4096, "1..4096"),
    ("selfplay", "--batch-size", int, 1, 100_000_000, "1..100,000,000"),
    ("selfplay", "--num-processes", int, 1, 65_536, "1..65,536"),
    ("selfplay", "--process-id", int, 0, 65_535, "0..65,535"),
    ("train", "--minutes", float, 0.0, 100_000.0, "(0, 100000]"),
    ("train", *SEED),
    ("train", "--simulations", int, 1, 100_000, "1..100,000"),
    ("train", "--games", int, 1, 1_000_000, "1..1,000,000"),
    *[("train", *o) for o in GAME],
]
EVEN = {("arena", "--games"), ("arena", "--batch-size")}
OPEN_LOW = {"--think", "--minutes"}


def _inside(command, option, lo, hi, value) -> bool:
    above = value > lo if option in OPEN_LOW else value >= lo
    return above and value <= hi and not ((command, option) in EVEN and value % 2)


def _good(command, option, kind, lo, hi):
    """(text, value) at the limits: the lower one (just above it where it is excluded) and the upper one."""
    low = lo + 0.001 if option in OPEN_LOW else lo
    return [(str(low), kind(low)), (str(hi), kind(hi))]


def _bad(command, option, kind, lo, hi):
    """The texts refused: one past each limit, the big and negative numbers outside, nan and inf."""
    step = 1 if kind is int else 0.001
    past = [lo if option in OPEN_LOW else lo - step, hi + step]
    if (command, option) in EVEN:
        past.append(lo + 1)
    texts = [repr(v) if kind is float else str(v) for v in past]
    texts += [str(v) for v in BIG if not _inside(command, option, lo, hi, v)]
    return texts + ["nan", "inf", "-inf", "1e999"] * (kind is float) + ["nan", "inf"] * (kind is int)


BAD_CASES = [(c, o, t) for (c, o, k, lo, hi, _) in LIMITS for t in dict.fromkeys(_bad(c, o, k, lo, hi))]
GOOD_CASES = [(c, o, t, v) for (c, o, k, lo, hi, _) in LIMITS for t, v in _good(c, o, k, lo, hi)]


def _numeric_options() -> set[tuple[str, str]]:
    """(command, option) of every option whose parsed value is a number."""
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    found = set()
    for command, parser in sub.choices.items():
        for action in parser._actions:
            if hasattr(action.type, "lo"):
                found.add((command, action.option_strings[0]))
    return found


def test_every_numeric_option_of_every_command_is_in_the_table():
    assert _numeric_options() == {(c, o) for c, o, *_ in LIMITS}


def test_every_option_that_takes_a_value_is_a_number_with_a_range_a_choice_or_a_name():
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    names = {"file_arg", "folder_arg", "cache_folder_arg"}
    for command, parser in sub.choices.items():
        for action in parser._actions:
            if action.nargs == 0 or action.option_strings == [] or action.choices:
                continue
            kind = getattr(action.type, "__name__", None)
            assert hasattr(action.type, "lo") or kind in names or action.type is None, (command, action.dest, kind)
            assert action.type is not None or action.dest in ("board", "coordinator", "scripts"), (command, action.dest)


# selfplay parses --think only to refuse it by name: its help leaves it out.
HELP = [row for row in LIMITS if row[:2] != ("selfplay", "--think")]


def test_the_command_lines_limits_are_the_librarys():
    # The command line starts without JAX, so it keeps the library's limits as its own numbers.
    from c4jax.cli import args
    from c4jax.tools import matches, players, self_play

    assert (args.MAX_GAMES, args.MAX_SELFPLAY_GAMES, args.MAX_SIMULATIONS) == (
        matches.MAX_GAMES, self_play.MAX_GAMES, players.MAX_SIMULATIONS)
    assert args.MAX_BOARD == connect4.MAX_ROWS == connect4.MAX_COLS == 64
    assert args.MAX_PLIES == connect4.make(64, 64).max_plies == 4096


@pytest.mark.parametrize("command, option, kind, lo, hi, shown", HELP, ids=[f"{c} {o}" for c, o, *_ in HELP])
def test_help_shows_the_range(command, option, kind, lo, hi, shown, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    # One entry per option: from its line (two spaces, then the option) to the next.
    entries = re.split(r"\n(?=  -)", out)
    entry = " ".join(next(e for e in entries if re.match(rf"  {option}[ ,\n]", e.lstrip("\n"))).split())
    assert shown in entry, entry


@pytest.mark.parametrize("command, option, text, value", GOOD_CASES, ids=[f"{c} {o} {t}" for c, o, t, _ in GOOD_CASES])
def test_the_limits_are_taken(command, option, text, value):
    base = [a.replace("{tmp}", "/tmp") for a in COMMANDS[command][0]]
    args = build_parser().parse_args([command, *base, option, text])
    got = getattr(args, option.lstrip("-").replace("-", "_"))
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("command, option, text", BAD_CASES, ids=[f"{c} {o} {t}" for c, o, t in BAD_CASES])
def test_past_the_limits_is_one_line_exit_2_and_nothing_written(command, option, text, tmp_path, capsys):
    base, writes = COMMANDS[command]
    code = main([command, *[a.replace("{tmp}", str(tmp_path)) for a in base], option, text])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    if text in ("-inf",):  # argparse takes it for an option
        assert f"argument {option}" in lines[0] and "expected one argument" in lines[0], lines[0]
    else:
        assert re.match(rf"c4jax {command}: error: {option}(/-n)? must be (an|a) ", lines[0]), lines[0]
    assert not [w for w in writes if (tmp_path / w).exists()]


def test_the_reported_crashes_are_one_line_each(capsys, tmp_path):
    out = str(tmp_path / "s.jsonl")
    cases = [
        (["selfplay", "--games", "2", "-n", "20", "--out", out, "--temperature-plies", "2147483648"],
         "--temperature-plies must be an int in 0..4096; got 2147483648"),
        (["selfplay", "--out", out, "--batch-size", "99999999999999999999"],
         "--batch-size must be an int in 1..100,000,000; got 99999999999999999999"),
        (["selfplay", "--out", out, "--batch-size", "9223372036854775807"], "--batch-size must be an int in 1..100"),
        (["selfplay", "--out", out, "--batch-size", "4294967296"], "--batch-size must be an int in 1..100"),
        (["selfplay", "--out", out, "--batch-size", "2147483648"], "--batch-size must be an int in 1..100"),
        (["analyze", "4453", "--dot", str(tmp_path / "d.dot"), "--min-visits", "-1"],
         "--min-visits must be an int in 0..2,147,483,647; got -1"),
        (["play", "-n", "3000000"], "--simulations/-n must be an int in 1..1,000,000; got 3000000"),
    ]
    for argv, message in cases:
        code = main(argv)
        line = capsys.readouterr().err.strip()
        assert code == 2 and line.startswith(f"c4jax {argv[0]}: error: {message}") and "None" not in line, line
    assert list(tmp_path.iterdir()) == []


# --- sizes within the ranges that the machine's memory cannot hold -------------------------

GB = 10**9


@pytest.fixture
def memory_of_16_gb(monkeypatch):
    """A machine of 16 GB, whatever this one has: the refusals do not depend on it."""
    monkeypatch.setattr(c4jax.validation, "machine_memory", lambda: 16 * GB)
    import c4jax.cli as cli

    monkeypatch.setattr(cli, "enable_compilation_cache", lambda path: None)


@pytest.mark.parametrize("argv, message", [
    (["selfplay", "--games", "100000", "--batch-size", "100000", "-n", "1000000"],
     "--batch-size must fit in this machine's memory (16 GB): the trees of 100,000 games (2,000,002 nodes per game "
     "x 273 bytes) and the records of every ply (1,512 bytes per game) need about 54.6 TB; got 100000"),
    (["selfplay", "-n", "1000000"], "--simulations/-n must fit in this machine's memory (16 GB): the trees of 100"),
    (["arena", "mcts:1000000", "mcts:1000000", "--games", "1000"],
     "--games must fit in this machine's memory (16 GB): the trees of 1,000 games (4,000,004 nodes per game"),
    (["arena", "mcts:1000000", "random", "--games", "1000", "--batch-size", "1000"],
     "--batch-size must fit in this machine's memory (16 GB): the trees of 1,000 games (2,000,002 nodes"),
    (["analyze", "44", "--rows", "64", "--cols", "64", "-n", "1000000", "--dot", "{tmp}/d.dot"],
     "--simulations/-n must fit in this machine's memory (16 GB): the trees of 1 game (1,048,577 nodes per game "
     "x 2,609 bytes) need about 2.74 GB"),
    (["play", "--rows", "64", "--cols", "64", "-n", "1000000"],
     "--simulations/-n must fit in this machine's memory (16 GB): the trees of 1 game (2,000,002 nodes"),
    (["arena", "random", "random", "--games", "1000000", "--batch-size", "1000000", "--rows", "64", "--cols", "64"],
     "--batch-size must fit in this machine's memory (16 GB): the move records of every ply of 1,000,000 games "
     "(32,768 bytes per game) need about 32.8 GB; got 1000000"),
], ids=["selfplay-batch", "selfplay-n", "arena-games", "arena-batch", "analyze", "play", "arena-random-players"])
def test_sizes_the_memory_cannot_hold_are_refused_with_an_estimate(argv, message, memory_of_16_gb, monkeypatch,
                                                                   tmp_path, capsys):
    if argv[0] in ("analyze", "play"):  # one tree of 2.7 GB and 5.2 GB: refused on a machine of 1 GB
        monkeypatch.setattr(c4jax.validation, "machine_memory", lambda: GB)
        message = message.replace("(16 GB)", "(1 GB)")
    out = [] if argv[0] in ("play", "analyze") else ["--out", str(tmp_path / "g.jsonl")]
    code = main([a.replace("{tmp}", str(tmp_path)) for a in argv] + out)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"c4jax {argv[0]}: error: {message}"), lines[0]
    assert list(tmp_path.iterdir()) == []


# --- the Python API: sizes refused with one-line ValueErrors before any allocation ---------

HUGE = [2**31, 2**63, 10**20, float("nan"), float("inf"), -1]
KEY = jax.random.key(0)
TTT = tictactoe.env_reset()


def _api_cases():
    cases = []
    for v in HUGE:
        cases += [
            (f"run_mcts num_simulations={v}", lambda v=v: c4jax.run_mcts(KEY, TTT, v),
             r"num_simulations must be an int in 1\.\.1,073,741,824; got "),
            (f"run_mcts capacity={v}", lambda v=v: c4jax.run_mcts(KEY, TTT, 8, capacity=v),
             r"capacity must be None or an int in 2\.\.2,147,483,647; got "),
            (f"empty_tree capacity={v}", lambda v=v: c4jax.empty_tree(jax.tree.map(lambda x: x[None], TTT), v),
             r"capacity must be an int in 2\.\.2,147,483,647; got "),
            (f"mcts_player num_simulations={v}", lambda v=v: c4jax.mcts_player(v),
             r"num_simulations must be an int in 1\.\.1,073,741,824; got "),
            (f"selfplay num_simulations={v}", lambda v=v: c4jax.selfplay(KEY, v, 2, TTT),
             r"num_simulations must be an int in 1\.\.1,073,741,824; got "),
            (f"selfplay games={v}", lambda v=v: c4jax.selfplay(KEY, 8, v, TTT),
             r"games must be an int (in 1\.\.100,000,000|>= 1 or a list of game indices); got "),
            (f"selfplay batch_size={v}", lambda v=v: c4jax.selfplay(KEY, 8, 2, TTT, batch_size=v),
             r"batch_size must be an int in 1\.\.100,000,000; got "),
            (f"selfplay temperature_plies={v}", lambda v=v: c4jax.selfplay(KEY, 8, 2, TTT, temperature_plies=v),
             r"temperature_plies must be an int in 0\.\.2,147,483,647; got "),
            (f"arena num_games={v}", lambda v=v: c4jax.arena(KEY, c4jax.random_player(), c4jax.random_player(), v, TTT),
             r"num_games must be an even int in 2\.\.1,000,000 \(sides alternate\); got "),
            (f"arena batch_size={v}",
             lambda v=v: c4jax.arena(KEY, c4jax.random_player(), c4jax.random_player(), 2, TTT, batch_size=v),
             r"batch_size must be an even int in 2\.\.1,000,000; got "),
        ]
    # Within the ranges, too large for 16 GB: the estimate, before anything of that size exists.
    def batch():
        return jax.tree.map(lambda x: x[None].repeat(64, 0), connect4.env_reset())

    fits = r"must fit in this machine's memory \(16 GB\): the trees of "
    cases += [
        ("run_mcts num_simulations=2**30", lambda: c4jax.run_mcts(KEY, TTT, 2**30),
         rf"^num_simulations {fits}1 game \(1,073,741,825 nodes per game x 273 bytes\) need about 293 GB; "
         r"got 1073741824$"),
        ("run_mcts capacity=2**31-1", lambda: c4jax.run_mcts(KEY, TTT, 8, capacity=2**31 - 1),
         rf"^capacity {fits}1 game \(2,147,483,647 nodes"),
        ("run_mcts 64 games x capacity 2**26", lambda: c4jax.run_mcts(KEY, batch(), 8, capacity=2**26),
         rf"^capacity {fits}64 games \(67,108,864 nodes per game x 273 bytes\) need about 1.17 TB; got 67108864$"),
        ("empty_tree 64 x 2**26", lambda: c4jax.empty_tree(batch(), 2**26), rf"^capacity {fits}64 games"),
        ("selfplay num_simulations=2**30", lambda: c4jax.selfplay(KEY, 2**30, 2, TTT),
         rf"^num_simulations {fits}\d+ games \(2,147,483,647 nodes per game"),
        ("selfplay batch_size=10**8", lambda: c4jax.selfplay(KEY, 100, [0, 10**8 - 1], TTT, batch_size=10**8),
         rf"^batch_size {fits}100,000,000 games \(202 nodes per game x 273 bytes\) and the records of every ply"),
        ("arena num_games=10**6", lambda: c4jax.arena(KEY, c4jax.mcts_player(10**4), c4jax.random_player(), 10**6, TTT),
         rf"^num_games {fits}1,000,000 games \(20,002 nodes per game"),
        ("arena batch_size=10**6",
         lambda: c4jax.arena(KEY, c4jax.mcts_player(10**4), c4jax.mcts_player(10**4), 10**6, TTT, batch_size=10**6),
         rf"^batch_size {fits}1,000,000 games \(40,004 nodes per game"),
        # Players without trees: the move records of every ply (64x64: 4,096 plies, 8 bytes each).
        ("arena random players num_games=10**6 on 64x64",
         lambda: c4jax.arena(KEY, c4jax.random_player(), c4jax.random_player(), 10**6, BIG),
         r"^num_games must fit in this machine's memory \(16 GB\): the move records of every ply of 1,000,000 "
         r"games \(32,768 bytes per game\) need about 32.8 GB; got 1000000$"),
        ("arena mcts player batch_size=10**6 on 64x64",
         lambda: c4jax.arena(KEY, c4jax.mcts_player(8), c4jax.random_player(), 10**6, BIG, batch_size=10**6),
         rf"^batch_size {fits}1,000,000 games \(18 nodes per game x 2,609 bytes\) and the move records of every "
         r"ply \(32,768 bytes per game\) need about 79.7 GB; got 1000000$"),
    ]
    return cases


BIG = c4jax.make("connect4", rows=64, cols=64).env_reset()
API_CASES = _api_cases()


@pytest.mark.parametrize("call, message", [c[1:] for c in API_CASES], ids=[c[0] for c in API_CASES])
def test_public_functions_refuse_sizes_with_one_line_value_errors(call, message, memory_of_16_gb):
    with pytest.raises(ValueError) as e:
        call()
    assert type(e.value) is ValueError and "\n" not in str(e.value), repr(e.value)
    assert re.search(message, str(e.value)), str(e.value)
