"""Positions from a board: ``from_board`` round-trips with
``board_array`` and agrees with ``from_moves`` on every prefix of random
games, on 6x7, 5x5, 14x20 and tic-tac-toe, and refuses every impossible
board with a message that names the problem; ``c4jax analyze --board``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from c4jax.games import connect4, tictactoe

GAMES = {
    "6x7": connect4.make(6, 7, 4),
    "5x5": connect4.make(5, 5, 4),
    "14x20": connect4.make(14, 20, 6),
    "tictactoe": tictactoe.GAME,
}
PROPERTY = settings(
    max_examples=15, derandomize=True, database=None, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _fields(env):
    return {k: np.asarray(getattr(env, k)).tolist() for k in ("stones", "to_move", "ply", "done", "winner")}


def _random_game(game, codes):
    """1-based moves of a game played by the codes (each picks a legal move
    by index), until it ends or the codes run out."""
    moves = []
    env = game.from_moves([])
    for code in codes:
        if bool(env.done):
            break
        legal = np.flatnonzero(np.asarray(game.legal_action_mask(env)))
        a = int(legal[code % len(legal)])
        moves.append(a + 1)
        env = game.env_step(env, a)[0]
    return moves


@pytest.mark.parametrize("name", list(GAMES))
@PROPERTY
@given(codes=st.lists(st.integers(0, 10_000), max_size=60))
def test_from_board_round_trips_and_agrees_with_from_moves_on_every_prefix(name, codes):
    game = GAMES[name]
    moves = _random_game(game, codes)
    for n in range(len(moves) + 1):
        env = game.from_moves(moves[:n])
        board = np.asarray(game.board_array(env))
        back = game.from_board(board)
        assert _fields(back) == _fields(env), (name, moves[:n])
        assert int(back.last_action) == -1
        np.testing.assert_array_equal(np.asarray(game.board_array(back)), board)
        # The same board as a nested list, as X/O/. text, and as a JAX array.
        text = "/".join("".join(".XO"[v] for v in row) for row in board.tolist())
        for form in (board.tolist(), text, jax.numpy.asarray(board)):
            assert _fields(game.from_board(form)) == _fields(env)
        assert _fields(game.from_board(board, to_move=int(env.to_move))) == _fields(env)


C4 = connect4.from_board


@pytest.mark.parametrize(
    "board, kwargs, message",
    [
        ([[0] * 7] * 5, {}, "board must have shape [6, 7] (rows top first); got 5 rows"),
        ([[0] * 7] * 5 + [[0] * 6], {}, "row 6 has 6 cells"),
        ([0] * 42, {}, "got a flat list of 42 cells: reshape it first (np.reshape(board, (6, 7)))"),
        (np.zeros(42, np.int8), {}, "got a flat array of 42 cells"),
        (np.zeros((7, 6), np.int8), {}, "got shape (7, 6)"),
        (None, {}, "board must be a nested list, an array of shape [6, 7]"),
        ([[0] * 7] * 5 + [[0, 0, 3, 0, 0, 0, 0]], {}, "cell (row 6, column 3) is 3"),
        ("......./......./......./......./......./..Z....", {}, "cell (row 6, column 3) is 'Z'"),
        ([[0] * 7] * 5 + [[0, 0, 1.5, 0, 0, 0, 0]], {}, "is 1.5: a cell is 0 or '.' (empty), 1 or 'X', 2 or 'O'"),
        ([[0] * 7] * 5 + [[0, 0, True, 0, 0, 0, 0]], {}, "is True"),
        ("......./......./......./......./...X.../.......", {}, "the stone at row 5, column 4 (rows from the top) floats"),
        ("......./......./......./......./......./XX.....", {}, "impossible stone counts: 2 X and 0 O"),
        ("......./......./......./......./......./O......", {}, "impossible stone counts: 0 X and 1 O"),
        ("......./......./......./......./OOOO.../XXXX.X.", {}, "both X and O have 4 in a row"),
        ("......./......./......./......./OOO..../XXXX.O.", {}, "X has 4 in a row but X did not move last (4 X, 4 O)"),
        ("......./......./......./O....../OOOXXXX/XXXXOOO", {},
         "X's lines of 4 cannot all come from its last move: the game would have ended earlier"),
        ("......./......./......./......./......./...X...", dict(to_move="X"),
         "to_move is X but the board has 1 X and 0 O, so O is to move"),
        ("......./......./......./......./......./.......", dict(to_move=2), "to_move must be None, 0 or 'X', 1 or 'O'; got 2"),
    ],
)
def test_impossible_boards_are_refused_by_name(board, kwargs, message):
    with pytest.raises(ValueError) as e:
        C4(board, **kwargs)
    assert message in str(e.value)


def test_boards_that_end_games():
    # X's last move, on top of column 4 or column 1, completes the line.
    env = C4("......./......./......./......./OOO..../XXXX...")
    assert (bool(env.done), int(env.winner), int(env.to_move), int(env.ply)) == (True, 0, 1, 7)
    full = tictactoe.from_board("XOX/XOO/OXX")  # a draw
    assert (bool(full.done), int(full.winner), int(full.ply)) == (True, -1, 9)
    won = tictactoe.from_board([["O", "O", "O"], ["X", "X", "."], ["X", ".", "."]])
    assert (bool(won.done), int(won.winner), int(won.to_move)) == (True, 1, 0)
    with pytest.raises(ValueError, match="O has 3 in a row but O did not move last"):
        tictactoe.from_board("OOO/XX./XX.")
    with pytest.raises(ValueError, match="both X and O have 3 in a row"):
        tictactoe.from_board("XXX/OOO/X..")


def test_every_make_game_has_from_board():
    g = connect4.make(8, 10, 5)
    env = g.from_moves([1, 10, 1])
    assert _fields(g.from_board(np.asarray(g.board_array(env)))) == _fields(env)


@pytest.mark.slow
def test_analyze_takes_a_board(tmp_path, monkeypatch, capsys):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "C4JAX_CACHE_DIR": str(tmp_path / "cache"), "PYTHONWARNINGS": "ignore"}
    args = ["analyze", "-n", "64", "--json"]
    cmd = [sys.executable, "-m", "c4jax.cli"] + args
    board = "......./......./......./......./...O.../..XXO.."
    by_board = subprocess.run(cmd + ["--board", board], env=env, capture_output=True, text=True, timeout=180)
    by_moves = subprocess.run(cmd + ["3544"], env=env, capture_output=True, text=True, timeout=180)
    assert by_board.returncode == 0 and by_moves.returncode == 0, by_board.stderr + by_moves.stderr
    a, b = json.loads(by_board.stdout), json.loads(by_moves.stdout)
    assert a["moves"] is None and b["moves"] == [3, 5, 4, 4]
    assert a["board"] == b["board"] == board.split("/")
    assert a["children"] == b["children"] and a["best"] == b["best"]  # the same search
    # Refused boards: the command's one line and exit 2 (its main, in this process).
    import c4jax.cli as cli

    monkeypatch.setattr(cli, "enable_compilation_cache", lambda path: None)
    capsys.readouterr()
    assert cli.main(args + ["--board", "......./......./......./......./..X..../......."]) == 2
    assert capsys.readouterr().err == (
        "c4jax analyze: error: bad --board: the stone at row 5, column 3 (rows from the top) floats: "
        "a stone rests on the bottom row or on another stone\n"
    )
    assert cli.main(args + ["44", "--board", board]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MOVES or as --board, not both" in err


def _connectx_example():
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "examples" / "connectx_agent.py"
    spec = importlib.util.spec_from_file_location("connectx_agent_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("columns, centre", [(5, 2), (6, 3), (7, 3)])
def test_the_connectx_example_without_kaggle_answers_a_stone_in_the_centre(monkeypatch, capsys, columns, centre):
    # Without kaggle-environments the example plays one move: O's answer to
    # X's stone in the bottom row's centre column (it once put the stone one
    # column to the left).
    example = _connectx_example()
    seen = []
    monkeypatch.setattr(example, "warm_up", lambda *a: None)
    monkeypatch.setattr(example, "agent", lambda obs, config: seen.append(obs) or 0)
    monkeypatch.setitem(sys.modules, "kaggle_environments", None)  # import fails
    monkeypatch.setattr(sys, "argv", ["connectx_agent.py", "--rows", "4", "--columns", str(columns)])
    example.main()
    board = np.reshape(seen[0].board, (4, columns))
    assert seen[0].mark == 2 and board.sum() == 1 and board[3, centre] == 1
    assert "O answers X's centre with column 1" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--rows", "2"], "error: --rows must be an int in 3..64; got 2"),
    (["--columns", "100"], "error: --columns must be an int in 3..64; got 100"),
    (["--inarow", "9"], "error: --inarow must be an int in 3..7 (max(--rows, --columns) for --rows=6, --columns=7); got 9"),
])
def test_the_connectx_example_refuses_a_board_that_makes_no_game(monkeypatch, capsys, argv, message):
    # A usage line naming the script's own flags, not a traceback.
    example = _connectx_example()
    monkeypatch.setattr(sys, "argv", ["connectx_agent.py"] + argv)
    with pytest.raises(SystemExit) as e:
        example.main()
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.strip().endswith(message) and "Traceback" not in err, err


@pytest.mark.slow
def test_the_connectx_agent_compiles_before_its_first_move():
    """examples/connectx_agent.py: the warm-up compiles what the agent's
    moves run (no compile on the harness's clock), and the agent plays a
    legal column of the ConnectX board it is given, as the player ``mark``."""
    import types

    from c4jax.search.anytime import compiled_count

    agent = _connectx_example()
    agent.BUDGET_SECONDS = 0.05
    config = types.SimpleNamespace(rows=4, columns=5, inarow=3, actTimeout=2.0, seed=0)
    agent.warm_up(4, 5, 3, 0.05)
    compiled = compiled_count()
    # Bottom row X X O . . (top row first, as ConnectX sends it): O (mark 2) to move.
    obs = types.SimpleNamespace(board=[0] * 15 + [1, 1, 2, 0, 0], mark=2)
    column = agent.agent(obs, config)
    assert compiled_count() == compiled  # nothing compiled on the clock
    assert column in range(5) and obs.board[column] == 0
