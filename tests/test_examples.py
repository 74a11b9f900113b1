"""Every script in examples/ runs with small settings (its own flags), and
what its first lines say about the position is true: the side to move
agrees with the stones on the board and the moves played, the move
played is legal, the sizes and counts are those asked for.  Each runs as
a user runs it, ``python examples/NAME.py``, on the CPU with the test
session's compilation cache.  (make_transcripts.py: test_transcripts.py.)"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, *args, cwd=None) -> str:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONWARNINGS": "ignore", "MPLBACKEND": "Agg", "COLUMNS": "100"}
    if os.environ.get("C4JAX_TEST_JAX_CACHE"):  # the session's cache (conftest.py)
        env["JAX_COMPILATION_CACHE_DIR"] = os.environ["C4JAX_TEST_JAX_CACHE"]
    r = subprocess.run([sys.executable, str(EXAMPLES / name), *map(str, args)], env=env, capture_output=True,
                       text=True, timeout=600, cwd=cwd)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-3000:]
    return r.stdout


def board_rows(text: str, cells: str) -> list[list[str]]:
    """The rows of a board drawn with one character per cell, spaced, from
    ``cells`` (e.g. ``"XO·."``)."""
    return [ln.split() for ln in text.splitlines() if ln.split() and set(ln.split()) <= set(cells)
            and all(len(c) == 1 for c in ln.split())]


def side_to_move(rows) -> str:
    """X moves first: X is to move when the two have as many stones."""
    stones = [c for row in rows for c in row]
    x, o = stones.count("X"), stones.count("O")
    assert x - o in (0, 1), rows
    return "X" if x == o else "O"


def test_quickstart_names_the_side_to_move_of_its_position():
    out = run_example("quickstart.py", "--simulations", 64)
    rows = board_rows(out, "XO·.")
    assert len(rows) == 6 and all(len(r) == 7 for r in rows), out
    stones = sum(c in "XO" for row in rows for c in row)
    side = side_to_move(rows)
    # The module's docstring: a Pons test position, O to move.
    assert side == "O" and re.search(rf"^{side} to move \(ply {stones}\)$", out, flags=re.M), out
    assert re.search(r"^MCTS, 64 simulations", out, flags=re.M), out
    best = int(re.search(r"best move: (\d)", out).group(1))
    assert rows[0][best - 1] not in "XO", out  # a column with room


def test_custom_evaluation_names_the_side_to_move_of_4453():
    out = run_example("custom_evaluation.py", "--simulations", 16, "--games", 0)
    first = out.splitlines()[0]
    m = re.fullmatch(r"Position (\d+), ([XO]) to move: value_fn says [+-]\d\.\d{3}; the search \(16 simulations\) "
                     r"plays column (\d), root value [+-]\d\.\d{3}", first)
    assert m, first
    moves, side, column = m.group(1), m.group(2), int(m.group(3))
    assert side == "XO"[len(moves) % 2]
    assert 1 <= column <= 7
    assert len(out.splitlines()) == 1, out  # --games 0: no arena after it


def test_tictactoe4_says_who_must_block_and_where():
    out = run_example("tictactoe4.py", "--simulations", 32, "--games", 0)
    lines = out.splitlines()
    assert lines[0] == "check_game(TicTacToe4()): passed"
    rows = board_rows("\n".join(lines[1:5]), "XO.")
    assert len(rows) == 4 and all(len(r) == 4 for r in rows), out
    m = re.match(r"([XO]) to move must block cell (\d+): the search plays cell (\d+)", lines[5])
    assert m, out
    side, cell, played = m.group(1), int(m.group(2)), int(m.group(3))
    assert side == side_to_move(rows)
    cells = [c for row in rows for c in row]
    other = "O" if side == "X" else "X"
    # The cell completes the other side's row of three: four in a row there.
    assert cells[cell - 1] == "." and all(cells[i] == other for i in range(4) if i != cell - 1), rows
    assert cells[played - 1] == ".", rows


def test_connectx_agent_answers_on_the_board_size_asked():
    out = run_example("connectx_agent.py", "--budget", 0.05, "--rows", 4, "--columns", 5, "--games", 1)
    assert out.startswith("compiled the search for 5 columns x 4 rows, 4 in a row: "), out
    if "kaggle-environments is not installed" in out:
        column = int(re.search(r"O answers X's centre with column (\d+)", out).group(1))
        assert 1 <= column <= 5, out
    else:
        assert re.search(r"vs negamax: \d+ wins, \d+ draws, \d+ losses", out), out


def test_plots_writes_the_figure_asked_for(tmp_path):
    out = run_example("plots.py", "--only", "action_histogram", "--keys", 4, "--simulations", 8, "--out", tmp_path)
    assert out.splitlines() == [f"wrote {tmp_path / 'action_histogram.png'}"]
    out = run_example("plots.py", "--only", "connect4_strength", "--out", tmp_path)  # from the results' JSON
    assert out.splitlines() == [f"wrote {tmp_path / 'connect4_strength.png'}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["action_histogram.png", "connect4_strength.png"]
    for p in tmp_path.iterdir():
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_every_example_is_run_here():
    tests = pathlib.Path(__file__).read_text()
    others = {"make_transcripts.py"}  # test_transcripts.py
    for script in sorted(EXAMPLES.glob("*.py")):
        assert script.name in others or f'run_example("{script.name}"' in tests, script.name
