"""Random legal games compared move by move with OpenSpiel's ``connect_four``
(its ``rows``/``columns``/``x_in_row`` parameters give the other sizes) and
``tic_tac_toe``: legal actions, terminal flag, returns, player to move and the
board.

OpenSpiel's conventions, checked in ``test_openspiel_conventions``: Connect 4
actions are the columns 0..cols-1 from the left; ``str(state)`` draws the
board top row first, ``x`` for the first player, ``o`` for the second, ``.``
empty.  Tic-tac-toe actions are the cells 0..8 row by row from the top left, the
same drawing.  ``returns()`` is ``[first player, second player]``.
"""

from __future__ import annotations

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel", reason="OpenSpiel (open_spiel) is not installed; pip install open_spiel")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from c4jax.games import connect4, tictactoe  # noqa: E402

from test_properties import play_fn, seq_len  # noqa: E402

SIZES = [
    ("tictactoe", None),
    ("connect4", (6, 7, 4)),
    ("c4_4x4_k3", (4, 4, 3)),
    ("c4_5x8_k4", (5, 8, 4)),
    ("c4_6x7_k5", (6, 7, 5)),
    ("c4_7x9_k4", (7, 9, 4)),
]


def load(size):
    if size is None:
        return tictactoe.GAME, pyspiel.load_game("tic_tac_toe")
    rows, cols, k = size
    return connect4.make(rows, cols, k), pyspiel.load_game(
        "connect_four", {"rows": rows, "columns": cols, "x_in_row": k}
    )


def spiel_board(state, rows: int) -> list[list[int]]:
    """OpenSpiel's drawing as ``board_array`` values (0 empty, 1 x, 2 o; top first)."""
    lines = [ln for ln in str(state).splitlines() if ln.strip()][:rows]
    return [[".xo".index(ch) for ch in ln.strip()] for ln in lines]


def test_openspiel_conventions():
    """Column 0 is the left of OpenSpiel's drawing, rows drop to the bottom,
    the first player is ``x``; tic-tac-toe cell 1 is the top middle."""
    s = pyspiel.load_game("connect_four").new_initial_state()
    s.apply_action(0)
    s.apply_action(6)
    s.apply_action(0)
    board = spiel_board(s, 6)
    assert board[5] == [1, 0, 0, 0, 0, 0, 2] and board[4] == [1, 0, 0, 0, 0, 0, 0]
    lib = connect4.from_moves("171")
    assert np.asarray(connect4.board_array(lib)).tolist() == board
    t = pyspiel.load_game("tic_tac_toe").new_initial_state()
    t.apply_action(1)
    assert spiel_board(t, 3) == [[0, 1, 0], [0, 0, 0], [0, 0, 0]]
    assert np.asarray(tictactoe.board_array(tictactoe.from_moves("2"))).tolist() == spiel_board(t, 3)


@pytest.mark.parametrize("size", [s for _, s in SIZES], ids=[i for i, _ in SIZES])
def test_random_games_match_openspiel(size):
    game, spiel_game = load(size)
    rng = np.random.default_rng(0)
    n_games = 60
    ends = {"win": 0, "draw": 0}
    for _ in range(n_games):
        state = spiel_game.new_initial_state()
        actions = []
        while not state.is_terminal():
            actions.append(int(rng.choice(state.legal_actions())))
            state.apply_action(actions[-1])
        padded = np.zeros(seq_len(game), np.int32)
        padded[: len(actions)] = actions
        _, obs0, _, obs, reward, done = jax.device_get(play_fn(game)(jnp.asarray(padded)))
        assert obs0["legal"].all()
        state = spiel_game.new_initial_state()
        for i, a in enumerate(actions):
            assert state.current_player() == int(obs["to_move"][i - 1] if i else 0)
            state.apply_action(a)
            where = f"move {i} of {actions}"
            assert spiel_board(state, game.rows) == obs["board"][i].tolist(), where
            assert state.is_terminal() == bool(done[i]), where
            legal = [] if state.is_terminal() else state.legal_actions()
            assert np.flatnonzero(obs["legal"][i]).tolist() == legal, where
            if state.is_terminal():
                returns = state.returns()
                winner = int(obs["winner"][i])
                expected = {-1: [0.0, 0.0], 0: [1.0, -1.0], 1: [-1.0, 1.0]}[winner]
                assert returns == expected, where
                # The mover's reward is its own return.
                assert float(reward[i]) == returns[i % 2], where
                ends["win" if winner >= 0 else "draw"] += 1
            else:
                assert float(reward[i]) == 0.0, where
        assert state.is_terminal()
    assert ends["win"] > 0 and sum(ends.values()) == n_games
