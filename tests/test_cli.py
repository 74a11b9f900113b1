"""The ``c4jax`` command, driven as a user drives it: subprocesses for
``analyze``, ``arena``, ``bench``, the errors and the output streams, pexpect
in a terminal for ``analyze``'s status line (``play``: test_cli_play.py).  The usage errors that ``c4jax.cli.main`` reports before
any search are also checked in this process, here and in test_cli_usage.py.

Every run uses the CPU and one persistent compilation cache per test session
(a temporary folder), so the first test of a shape compiles and the later ones
load it.  Small simulation counts keep the file fast.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

pexpect = pytest.importorskip("pexpect")

# pexpect forks this process; where another test has started JAX here, JAX
# warns about fork.  The child execs at once, so the warning does not apply.
pytestmark = pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")

CMD = [sys.executable, "-m", "c4jax.cli"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
SIMS = "48"  # one simulation count for every tic-tac-toe game: compiled once
# One for the Connect 4 analyses of the standard board: the search that
# `bench --builtin` times at batch 1 x 1,000 (the same budget bucket, 1,024),
# so that the session's cache serves it there.
C4_SIMS = "1000"


def strip(text: str) -> str:
    return ANSI.sub("", text)


@pytest.fixture(scope="session")
def cli_env(tmp_path_factory):
    return {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "C4JAX_CACHE_DIR": str(tmp_path_factory.mktemp("jax-cache")),
        "COLUMNS": "120",
        "PYTHONWARNINGS": "ignore",
    }


def run(env, *args, timeout=180, cwd=None):
    return subprocess.run(
        CMD + [str(a) for a in args], env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


def best_row(text: str) -> list[str]:
    """The cells of the table row marked '<- best' (the last such table)."""
    rows = [ln for ln in text.splitlines() if "<- best" in ln]
    assert rows, text
    return [c.strip() for c in rows[-1].strip("│┃| ").split("│")]


# ---------------------------------------------------------------------------
# analyze


@pytest.mark.slow
def test_analyze_thinks_for_a_time_budget(cli_env):
    r = run(cli_env, "analyze", "15", "--game", "tictactoe", "--think", "0.3")
    assert r.returncode == 0, r.stderr
    # The time it took, and the budget (a solved root stops it early).
    # Compiling (here, or loading from the cache) is said apart, not counted.
    m = re.search(r"([0-9,]+) simulations in ([0-9.]+) s \(budget 0.3 s(; compiling before it [0-9.]+ s)?\)", r.stdout)
    sims = int(m.group(1).replace(",", "")) if m else 0
    assert sims >= 128 and sims % 128 == 0, r.stdout[-400:]
    bad = run(cli_env, "analyze", "4453", "--think", "0")
    assert bad.returncode == 2 and "--think" in bad.stderr
    both = run(cli_env, "analyze", "4453", "--think", "1", "-n", "10")
    assert both.returncode == 2 and "not allowed with" in both.stderr


def test_analyze_connect4_names_the_winning_column(cli_env):
    r = run(cli_env, "analyze", "121212", "-n", C4_SIMS)
    assert r.returncode == 0, r.stderr
    assert "X to move" in r.stdout
    cells = best_row(r.stdout)
    assert cells[0] == "1" and cells[3] == "+1.000" and cells[4] == "win in 1"
    assert "Best move: column 1" in r.stdout
    # The other columns lose in two plies (O then wins in column 1).
    assert r.stdout.count("loss in 2") >= 1
    # Every legal column has a row: visits, share, Q, proven, prior, PV.
    rows = [ln for ln in r.stdout.splitlines() if re.match(r"│\s+\d+ │", ln)]
    assert len(rows) == 7
    # Outputs that are not UTF-8 (a pipe with PYTHONIOENCODING=ascii; the C
    # locale), which cannot encode the board's empty-cell glyph: the same
    # analysis in ASCII, with no UnicodeEncodeError (the cache makes these two
    # fast).
    plain = {k: v for k, v in cli_env.items() if k not in ("LANG", "LC_ALL", "LC_CTYPE", "PYTHONUTF8")}
    envs = [
        {**plain, "PYTHONIOENCODING": "ascii"},
        {**plain, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
    ]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(
            lambda e: subprocess.run(CMD + ["analyze", "121212", "-n", C4_SIMS], env=e, capture_output=True,
                                     timeout=180),
            envs,
        ))
    for e, a in zip(envs, runs):
        out, err = a.stdout.decode("ascii"), a.stderr.decode("utf-8", "replace")  # ASCII, or this raises
        assert a.returncode == 0 and "Traceback" not in err, (e.get("PYTHONIOENCODING"), err[-600:])
        board = out.splitlines()[:6]
        assert all(set(line) <= set(" .XO") for line in board) and "." in board[0], out[:400]
        ascii_rows = [ln for ln in out.splitlines() if re.match(r"\|\s+\d+ \|", ln)]
        assert len(ascii_rows) == 7 and "win in 1" in ascii_rows[0], out


@pytest.mark.slow
def test_analyze_no_solver_proves_nothing(cli_env):
    # "271": every O move loses (tictactoe.solve); the solver proves it, and
    # --no-solver turns the proofs off.
    r = run(cli_env, "analyze", "271", "--game", "tictactoe", "-n", SIMS)
    assert r.returncode == 0, r.stderr
    rows = [ln for ln in r.stdout.splitlines() if re.match(r"│\s+\d+ │", ln)]
    assert len(rows) == 6 and all("loss" in ln for ln in rows), r.stdout
    r = run(cli_env, "analyze", "271", "--game", "tictactoe", "-n", SIMS, "--no-solver")
    assert r.returncode == 0, r.stderr
    rows = [ln for ln in r.stdout.splitlines() if re.match(r"│\s+\d+ │", ln)]
    assert len(rows) == 6 and not any("loss" in ln or "draw" in ln for ln in rows), r.stdout


@pytest.mark.slow
def test_analyze_tictactoe_with_plot_whatever_the_matplotlib_backend(cli_env, tmp_path):
    """The table, and the plot written as a PNG even where MPLBACKEND names
    a backend matplotlib does not know (its import would fail): Agg draws
    it whatever the environment says."""
    png = tmp_path / "visits.png"
    r = run({**cli_env, "MPLBACKEND": "bogus"}, "analyze", "1425", "--game", "tictactoe", "-n", SIMS, "--plot", png)
    assert r.returncode == 0, r.stderr
    assert best_row(r.stdout)[0] == "3"
    assert "Best move: cell 3" in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv, best, n_children",
    [(["121212", "-n", C4_SIMS], 1, 7), (["1425", "--game", "tictactoe", "-n", SIMS], 3, 5)],
    ids=["connect4", "tictactoe"],
)
def test_analyze_json_and_dot(cli_env, tmp_path, argv, best, n_children):
    dot = tmp_path / "tree.dot"
    r = run(cli_env, "analyze", *argv, "--json", "--dot", dot)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)  # one JSON object, nothing else on stdout
    if data["game"] == "connect4":
        assert (data["rows"], data["cols"], data["connect"]) == (6, 7, 4)
    else:
        assert data["game"] == "tictactoe" and "rows" not in data
    assert data["moves"] == [int(c) for c in argv[0]]
    assert data["to_move"] == "X" and data["ply"] == len(argv[0])
    assert data["simulations"] == int(argv[argv.index("-n") + 1])
    assert data["best"] == best and -1.0 <= data["value"] <= 1.0
    children = data["children"]
    assert len(children) == n_children
    assert sum(c["visits"] for c in children) == data["simulations"]
    assert abs(sum(c["share"] for c in children) - 1.0) < 1e-6 and abs(sum(c["prior"] for c in children) - 1.0) < 1e-5
    won = next(c for c in children if c["move"] == best)
    assert won["lower"] == won["upper"] == 1.0 and won["plies"] == 1 and won["pv"][0] == best
    assert set(children[0]) == {"move", "visits", "share", "q", "prior", "lower", "upper", "plies", "pv"}
    assert dot.read_text().startswith("digraph search_tree {")


# ---------------------------------------------------------------------------
# arena


@pytest.mark.slow
def test_arena_perfect_never_loses(cli_env, tmp_path):
    from c4jax import read_games  # plain Python: reads JSON lines

    out = tmp_path / "games.jsonl"
    r = run(cli_env, "arena", "perfect", "random", "--game", "tictactoe", "--games", "20", "--out", out)
    assert r.returncode == 0, r.stderr
    assert "perfect vs random: 20 games" in r.stdout
    assert re.search(r"B \(random\) wins\s+│\s+0 │", r.stdout), r.stdout
    games = read_games(out)
    assert len(games) == 20
    for g in games:
        mark = "X" if g.x_player == "perfect" else "O"
        assert g.result in (mark, "draw"), g


# ---------------------------------------------------------------------------
# selfplay


def test_selfplay_summary_lines_are_whole_in_a_pipe_with_thousands_separators(cli_env, tmp_path):
    """A pipe is 80 columns wide: the summary lines, longer than that, are
    written whole (never broken mid-phrase), their counts with separators."""
    from c4jax import read_games  # plain Python: reads JSON lines

    env = {k: v for k, v in cli_env.items() if k not in ("COLUMNS", "LINES")}
    out = tmp_path / "games.jsonl"
    r = run(env, "selfplay", "--game", "tictactoe", "--games", 2, "-n", 1000, "--devices", 1, "--out", out)
    assert r.returncode == 0, r.stderr
    games = read_games(out)
    plies = sum(len(g.moves) for g in games)
    lines = r.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("2 games, "))  # after the progress bar
    m = re.fullmatch(r"2 games, (\d+) plies, ([\d,]+) simulations in \d+\.\d\d s \(compiling \d+\.\d s apart\) "
                     r"on 1 CPU device", lines[at])
    assert m and len(lines[at]) > 80, r.stdout
    assert int(m.group(1)) == plies and m.group(2) == f"{1000 * plies:,}"
    assert re.fullmatch(r"per device: [\d.]+ games/s, [\d,]+ simulations/s, [\d,.]+ plies/s", lines[at + 1]), r.stdout
    assert lines[at + 2] == f"Wrote 2 games to {out}"


# ---------------------------------------------------------------------------
# bench


@pytest.mark.slow
def test_bench_builtin_quick(cli_env, tmp_path):
    r = run(cli_env, "bench", "--quick", "--builtin", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for label in ("random rollouts, batch 1,024", "run_mcts, batch 1 x 1,000", "run_mcts, batch 64 x 200"):
        assert label in r.stdout
    assert re.search(r"[\d,]+ rollouts/s", r.stdout) and len(re.findall(r"[\d,]+ sims/s", r.stdout)) == 2


def test_bench_calls_the_scripts_main(cli_env, tmp_path):
    (tmp_path / "env_throughput.py").write_text(
        "import sys\ndef main():\n    print('ENV', sys.argv[1:])\n"
    )
    (tmp_path / "search_throughput.py").write_text(
        "def main(argv=None):\n    print('SEARCH', argv)\n    return 0\n"
    )
    r = run(cli_env, "bench", "--quick", "--scripts", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "ENV ['--quick']" in r.stdout and "SEARCH ['--quick']" in r.stdout


# ---------------------------------------------------------------------------
# help, version, errors


def test_help_version_and_python_m(cli_env):
    import c4jax

    runs = [[], ["play"], ["analyze"], ["arena"], ["bench"]]
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        helps = list(pool.map(lambda a: run(cli_env, *a, "--help"), runs))
        version = pool.submit(run, cli_env, "--version").result()
    for args, r in zip(runs, helps):
        assert r.returncode == 0 and "examples:" in r.stdout and "usage: c4jax" in r.stdout, (args, r.stderr)
    assert version.returncode == 0 and version.stdout.strip() == f"c4jax {c4jax.__version__}"
    # The console script the install made (pip install . puts it beside the
    # interpreter): it must exist and run.
    script = shutil.which("c4jax", path=os.path.dirname(sys.executable))
    assert script, f"no c4jax script beside {sys.executable}: install the project as the README says"
    r = subprocess.run([script, "--version"], env=cli_env, capture_output=True, text=True, timeout=60)
    assert r.stdout.strip() == f"c4jax {c4jax.__version__}"


def test_python_dash_m_c4jax_is_the_command():
    r = subprocess.run([sys.executable, "-m", "c4jax", "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "play" in r.stdout and "analyze" in r.stdout, r.stderr


@pytest.mark.parametrize("distributed", [False, True])
def test_the_console_script_ends_with_mains_status(monkeypatch, distributed):
    """``run`` (the console script) ends the process at once with
    ``main``'s status, except under ``jax.distributed``, where it exits
    normally (JAX's shutdown runs)."""
    import jax

    import c4jax.cli as cli

    ended = []
    monkeypatch.setattr(cli, "main", lambda: 3)
    monkeypatch.setattr(cli, "hard_exit", ended.append)
    monkeypatch.setattr(jax.distributed, "is_initialized", lambda: distributed)
    if distributed:
        with pytest.raises(SystemExit) as exit_:
            cli.run()
        assert exit_.value.code == 3 and ended == []
    else:
        cli.run()
        assert ended == [3]


ARENA = ["arena", "random", "random", "--game", "tictactoe", "--games", "2"]


@pytest.mark.slow
def test_a_full_or_closed_stdout_is_one_line_not_a_traceback():
    with open("/dev/full", "w") as full:
        r = subprocess.run(CMD + ARENA, env={**os.environ, "JAX_PLATFORMS": "cpu", "C4JAX_CACHE_DIR": ""},
                           stdout=full, stderr=subprocess.PIPE, timeout=300)
    err = r.stderr.decode()
    assert r.returncode == 1 and "Traceback" not in err, err
    assert err.strip().splitlines() == ["c4jax arena: error: cannot write the output: No space left on device"]
    # A closed stdout (the preexec_fn forks this process; the child execs at
    # once, which the module's warning filter covers).
    closed = subprocess.run(CMD + ARENA, env={**os.environ, "JAX_PLATFORMS": "cpu", "C4JAX_CACHE_DIR": ""},
                            stderr=subprocess.PIPE, timeout=300, preexec_fn=lambda: os.close(1))
    assert closed.returncode == 0 and b"Traceback" not in closed.stderr, closed.stderr.decode()


def _buffered(env):
    """``env`` with standard output block-buffered, as a user's is
    (``PYTHONUNBUFFERED`` unset)."""
    return {k: v for k, v in env.items() if k != "PYTHONUNBUFFERED"}


@pytest.mark.parametrize("argv", [["analyze", "159", "--game", "tictactoe", "-n", "8", "--json"], ["--help"]],
                         ids=["analyze_json", "help"])
def test_buffered_output_that_cannot_be_written_is_exit_1_and_one_line(cli_env, argv):
    """Output ``print`` left in Python's buffer is written before the
    command's fast exit (``c4jax.cli.run``): a full disk is one line and
    exit 1, a reader that is gone exit 1, never a silent 0 or a traceback."""
    with open("/dev/full", "w") as full:
        r = subprocess.run(CMD + argv, env=_buffered(cli_env), stdout=full, stderr=subprocess.PIPE, timeout=300)
    err = r.stderr.decode()
    assert r.returncode == 1 and err.strip().splitlines() == [
        "c4jax: error: cannot write the output: No space left on device"], err
    p = subprocess.Popen(CMD + argv, env=_buffered(cli_env), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # the reader is gone before anything is written
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 1 and "Traceback" not in err, err


# Errors argparse finds: main() returns before touching JAX, so they are
# checked in this process (two of them also end to end, below).
PARSE_ERRORS = [
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    ([], "a command is required"),
    (["play", "--game", "chess"], "invalid choice: 'chess'"),
    (["play", "--simulations", "0"], "--simulations/-n must be an int in 1..1,000,000; got 0"),
    (["analyze", "-n", "many"], "must be an int in 1..1,000,000, written in ASCII digits; got 'many'"),
    (["play", "--seed", "x"], "--seed must be an int in 0..4,294,967,295, written in ASCII digits; got 'x'"),
    (["arena", "random"], "the following arguments are required: PLAYER_B"),
    (["bench", "--builtin", "--scripts", "x"], "not allowed with argument"),
]

# Errors found after parsing (sizes, moves, players, paths): end to end.
BAD = [
    (["play", "--game", "chess"], "invalid choice: 'chess'"),
    (["analyze", "--simulations", "0"], "--simulations/-n must be an int in 1..1,000,000; got 0"),
    (["analyze", "--rows", "2"], "rows must be an int in 3..64; got 2"),
    (["analyze", "--rows", "65"], "rows must be an int in 3..64; got 65"),
    (["play", "--cols", "70"], "cols must be an int in 3..64; got 70"),
    (["analyze", "--connect", "8"], "connect must be an int in 3..7"),
    (["play", "--game", "tictactoe", "--rows", "4"], "--rows applies to connect4 only"),
    (["analyze", "1289"], "move 3 is '8'"),
    (["analyze", "1111111"], "move 7 (1) is into a full column"),
    (["analyze", "--game", "tictactoe", "55"], "move 2 (5) is on an occupied cell"),
    (["analyze", "1212121"], "finished game"),
    (["arena", "mcts:0", "random"], "player 'mcts:0': N must be in 1.."),
    (["arena", "random", "alphazero"], "unknown player 'alphazero'"),
    (["arena", "perfect", "random"], "the perfect player plays tic-tac-toe only"),
    (["arena", "random", "random", "--games", "7"], "--games must be an even int in 2..1,000,000; got 7"),
    (["arena", "random", "random", "--batch-size", "3"], "--batch-size must be an even int in 2..1,000,000; got 3"),
    (["arena", "random", "random", "--out", "/nonexistent/dir/g.jsonl"], "no such directory"),
    (["arena", "random", "random", "--out", "{tmp}"], "it is a directory"),
    (["analyze", "--plot", "/nonexistent/dir/v.png"], "cannot write the plot"),
    (["bench", "--scripts", "/nonexistent/benchmarks"], "no such folder"),
]


def check_one_line(returncode: int, stderr: str, message: str) -> None:
    assert returncode == 2
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("c4jax") and "error" in lines[0] and message in lines[0], lines[0]


@pytest.mark.parametrize(
    "args, message", PARSE_ERRORS, ids=[" ".join(a) or "(none)" for a, _ in PARSE_ERRORS]
)
def test_bad_usage_in_process(capsys, args, message):
    from c4jax.cli import main

    code = main(args)
    captured = capsys.readouterr()
    check_one_line(code, captured.err, message)
    assert captured.out == ""


def run_in_process(monkeypatch, capsys, args) -> tuple[int, str]:
    """``c4jax ARGS`` through ``main`` in this process, without switching on
    the compilation cache (which would move this test session's)."""
    import c4jax.cli as cli

    monkeypatch.setattr(cli, "enable_compilation_cache", lambda path: None)
    code = cli.main(args)
    return code, capsys.readouterr().err


@pytest.mark.parametrize("i", range(len(BAD)), ids=[" ".join(a) for a, _ in BAD])
def test_bad_arguments_one_line_no_traceback(monkeypatch, capsys, tmp_path, i):
    args = [a.replace("{tmp}", str(tmp_path)) for a in BAD[i][0]]
    check_one_line(*run_in_process(monkeypatch, capsys, args), BAD[i][1])


@pytest.mark.parametrize("i", [1, 7, 11], ids=[" ".join(BAD[i][0]) for i in (1, 7, 11)])
def test_bad_arguments_end_to_end_exit_2_with_one_line(cli_env, i):
    r = run(cli_env, *BAD[i][0], timeout=60)
    check_one_line(r.returncode, r.stderr, BAD[i][1])


# ---------------------------------------------------------------------------
# The compilation cache: shared, unwritable, and the arena in it


@pytest.mark.slow
def test_arena_and_analyze_share_a_cache_folder_and_the_arena_is_cached(cli_env, tmp_path):
    """Two arenas and two analyses at once on one fresh cache folder: none
    crashes.  Then the arena again: every program it needs is read from the
    cache (no new entry: its loop holds no host callback, which JAX never
    caches)."""
    cache = tmp_path / "cache"
    env = {**cli_env, "C4JAX_CACHE_DIR": str(cache)}
    arena = ["arena", "random", "heuristic", "--game", "tictactoe", "--games", "4"]
    analyze = ["analyze", "15", "--game", "tictactoe", "-n", SIMS]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(lambda a: run(env, *a), [arena, arena, analyze, analyze]))
    for r in runs:
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-800:]
    entries = {p.name for p in cache.iterdir()}
    assert any("plies" in name for name in entries), sorted(entries)
    again = run(env, *arena)
    assert again.returncode == 0, again.stderr
    assert {p.name for p in cache.iterdir()} == entries
    assert "random vs heuristic: 4 games" in again.stdout


@pytest.mark.slow
def test_an_unusable_cache_folder_is_one_warning_and_a_run_without_it(cli_env, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    r = run(cli_env, "arena", "random", "random", "--game", "tictactoe", "--games", "2",
            "--cache-dir", blocker / "cache")
    assert r.returncode == 0, r.stderr
    warnings = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("c4jax: warning: cannot use the compilation cache"), r.stderr
    assert "random vs random: 2 games" in r.stdout


def test_bench_never_runs_scripts_from_the_current_folder(tmp_path, monkeypatch):
    from c4jax.cli import bench

    hostile = tmp_path / "benchmarks"
    hostile.mkdir()
    (hostile / "search_throughput.py").write_text("raise SystemExit('ran a stranger\\'s code')\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "c4jax"\n')
    monkeypatch.chdir(tmp_path)
    found = bench._find_benchmarks()
    assert found is None or found.resolve() != hostile.resolve()
    # What it finds is the checkout c4jax was imported from, if any.
    import c4jax

    if found is not None:
        assert found.parent == __import__("pathlib").Path(c4jax.__file__).resolve().parents[2]


@pytest.mark.parametrize("command", ["play", "analyze"])
def test_the_commands_search_with_run_mcts_defaults_unless_told(command):
    """Without flags the commands pass only the solver switch, so that
    run_mcts's own defaults (its prior among them) apply; a flag given is
    passed as given."""
    from c4jax.cli import build_parser
    from c4jax.cli.args import search_options

    parser = build_parser()
    extra = ["4453"] if command == "analyze" else []
    assert search_options(parser.parse_args([command, *extra])) == {"solver": True}
    told = parser.parse_args([command, *extra, "--prior", "uniform", "--no-solver"])
    assert search_options(told) == {"solver": False, "prior": "uniform"}


@pytest.mark.slow
def test_analyze_shows_a_status_line_on_a_terminal_and_none_in_a_pipe(cli_env):
    """The status line says "compiling" while the search compiles (nothing
    cached), then "searching" with the simulations; a pipe gets neither
    (its run goes through the same two phases, the search loaded from the
    session's cache or compiled into it)."""
    child = pexpect.spawn(CMD[0], CMD[1:] + ["analyze", "44", "-n", C4_SIMS, "--no-cache"], env=cli_env,
                          encoding="utf-8", timeout=120, dimensions=(50, 120))
    child.expect("compiling the search")
    child.expect(r"searching \(1,000 simulations\)")
    child.expect("Best move: column")
    child.expect(pexpect.EOF)
    piped = run(cli_env, "analyze", "44", "-n", C4_SIMS)
    out = piped.stdout + piped.stderr
    assert piped.returncode == 0 and "compiling" not in out and "searching" not in out
    assert re.search(r"^1,000 simulations, X to move, value [+-]\d\.\d{3}", piped.stdout, flags=re.M), out

