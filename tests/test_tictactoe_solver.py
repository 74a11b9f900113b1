"""The exact tic-tac-toe solver: solve, count_minimax_nodes, solution_table,
perfect_action_values (c4jax.games.tictactoe).

Boards in the comments: cells 1..9 row by row from the top left (the
``from_moves`` numbering); the solver's actions are these minus one.
"""

from __future__ import annotations

import dataclasses
import random
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from c4jax.games import tictactoe as ttt
from c4jax.games import tictactoe_solver

nan = np.nan
LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


# --- an independent brute-force negamax: no pruning, no memo ---------------------
def _won(board, p):
    return any(all(board[i] == p for i in line) for line in LINES)


def _brute_value(board, p):
    """Value for player ``p`` (1 X, 2 O) to move on a running ``board`` (list of 9)."""
    best = -2
    for c in range(9):
        if board[c] == 0:
            best = max(best, _brute_action(board, p, c))
    return best


def _brute_action(board, p, c):
    board = list(board)
    board[c] = p
    if _won(board, p):
        return 1
    if all(board):
        return 0
    return -_brute_value(board, 3 - p)


def _brute_all(moves):
    """``float[9]`` brute-force values of every action after ``moves`` (1-based)."""
    board = [0] * 9
    for i, m in enumerate(moves):
        board[m - 1] = 1 + i % 2
    p = 1 + len(moves) % 2
    return np.array([_brute_action(board, p, c) if board[c] == 0 else nan for c in range(9)])


def _random_positions(n, seed=0, min_ply=2):
    """``n`` distinct running (not finished) positions reached by random play."""
    rng = random.Random(seed)
    seen, out = set(), []
    while len(out) < n:
        ply = rng.randint(min_ply, 8)
        board, moves = [0] * 9, []
        for i in range(ply):
            c = rng.choice([c for c in range(9) if board[c] == 0])
            board[c] = 1 + i % 2
            moves.append(c + 1)
            if _won(board, 1 + i % 2):
                break
        if _won(board, 1) or _won(board, 2) or all(board) or tuple(moves) in seen:
            continue
        seen.add(tuple(moves))
        out.append(moves)
    return out


def _stack(envs):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *envs)


def _as_int8(values):
    return np.where(np.isnan(values), -2, values).astype(np.int8)


# --- node counts -------------------------------------------------------------------
def test_node_counts():
    minimax = ttt.count_minimax_nodes("minimax")
    alphabeta = ttt.count_minimax_nodes("alphabeta")
    ordered = ttt.count_minimax_nodes("alphabeta_ordered")
    assert minimax == 549_946  # the whole game tree, root and finished games included
    assert alphabeta == 18_297
    assert ordered == 2_096
    assert ordered < alphabeta < minimax


def test_count_bad_method():
    with pytest.raises(ValueError, match="minimax.*alphabeta.*alphabeta_ordered"):
        ttt.count_minimax_nodes("negascout")


# --- solve: known positions ----------------------------------------------------------
def test_empty_board_every_first_move_draws():
    values = ttt.solve(ttt.env_reset())
    assert values.dtype == np.float32 and values.shape == (9,)
    np.testing.assert_array_equal(values, np.zeros(9, np.float32))


def test_win_in_one():
    #  X | X | 3       X to move ("1425"): 3 wins at once (+1); 6 blocks O's
    # ---+---+---      row and draws (0); 7, 8, 9 let O win at 6 (-1).
    #  O | O | 6
    # ---+---+---
    #  7 | 8 | 9
    np.testing.assert_array_equal(
        ttt.solve(ttt.from_moves("1425")), [nan, nan, 1, nan, nan, 0, -1, -1, -1]
    )


def test_o_must_block():
    #  X | X | 3       O to move ("152"): only 3 stops X's row; it draws
    # ---+---+---      (X must then block 7, O blocks 4, X blocks 6: full
    #  4 | O | 6       board, no line).  Every other cell loses (-1).
    # ---+---+---
    #  7 | 8 | 9
    np.testing.assert_array_equal(
        ttt.solve(ttt.from_moves("152")), [nan, nan, 0, -1, nan, -1, -1, -1, -1]
    )


def test_opposite_corners_o_must_take_an_edge():
    #  X | 2 | 3       O to move ("159"): a corner (3 or 7) loses -- X blocks
    # ---+---+---      the other corner and forks (two lines through it);
    #  4 | O | 6       an edge (2, 4, 6, 8) forces X to block and draws.
    # ---+---+---
    #  7 | 8 | X
    np.testing.assert_array_equal(
        ttt.solve(ttt.from_moves("159")), [nan, 0, -1, 0, nan, 0, -1, 0, nan]
    )


def test_fork():
    #  X | 2 | O       X to move ("1593"): 7 blocks O's diagonal 3-5-7 and
    # ---+---+---      forks (X threatens 4 via 1-4-7 and 8 via 7-8-9):
    #  4 | O | 6       +1.  Anything else lets O win at 7 (-1).
    # ---+---+---
    #  7 | 8 | X
    np.testing.assert_array_equal(
        ttt.solve(ttt.from_moves("1593")), [nan, -1, nan, -1, nan, -1, 1, -1, nan]
    )


# --- solve vs brute force; memo independence ---------------------------------------------
POSITIONS = _random_positions(200)


def test_solve_matches_brute_force_negamax():
    tictactoe_solver._TT.clear()
    for moves in POSITIONS:
        got = ttt.solve(ttt.from_moves(moves))
        np.testing.assert_array_equal(got, _brute_all(moves), err_msg=str(moves))


def test_solve_after_env_steps_matches_brute_force():
    # Positions built with env_step (not from_moves), each ply checked.
    env = ttt.env_reset()
    moves = [5, 1, 9, 3, 2]
    for i, m in enumerate(moves):
        env, _, _ = ttt.env_step(env, jnp.int32(m - 1))
        np.testing.assert_array_equal(ttt.solve(env), _brute_all(moves[: i + 1]))


def test_memo_does_not_change_values():
    sample = POSITIONS[:60]
    tictactoe_solver._TT.clear()
    cold = [ttt.solve(ttt.from_moves(m)) for m in sample]  # each solved into a growing memo
    tictactoe_solver._TT.clear()
    ttt.solution_table.__wrapped__()  # fill the memo with every position first
    assert len(tictactoe_solver._TT) > 4000
    warm = [ttt.solve(ttt.from_moves(m)) for m in reversed(sample)][::-1]
    for moves, a, b in zip(sample, cold, warm):
        np.testing.assert_array_equal(a, b, err_msg=str(moves))
    for moves in sample[:10]:  # and each alone, from an empty memo
        tictactoe_solver._TT.clear()
        np.testing.assert_array_equal(ttt.solve(ttt.from_moves(moves)), _brute_all(moves))


# --- finished games and bad input ------------------------------------------------------
FINISHED = {
    "x_won": "14253",  # X completes the top row
    "draw": "159287364",  # full board, no line
}


@pytest.mark.parametrize("name", sorted(FINISHED))
def test_finished_games_all_illegal(name):
    env = ttt.from_moves(FINISHED[name])
    assert bool(env.done)
    assert np.isnan(ttt.solve(env)).all()
    np.testing.assert_array_equal(ttt.perfect_action_values(env), np.full(9, -2, np.int8))
    np.testing.assert_array_equal(
        jax.jit(ttt.perfect_action_values)(env), np.full(9, -2, np.int8)
    )


def test_game_ended_by_illegal_move_all_illegal():
    env, reward, done = ttt.env_step(ttt.from_moves("15"), jnp.int32(0))  # cell 1 is taken
    assert bool(done) and float(reward) == -1.0
    assert np.isnan(ttt.solve(env)).all()
    np.testing.assert_array_equal(ttt.perfect_action_values(env), np.full(9, -2, np.int8))


def test_batched_env_raises():
    batch = _stack([ttt.env_reset(), ttt.from_moves("5")])
    with pytest.raises(ValueError, match="index"):
        ttt.solve(batch)
    # The jit-able table takes a batch (the games' convention): row by row.
    np.testing.assert_array_equal(
        np.asarray(ttt.perfect_action_values(batch)),
        np.stack([np.asarray(ttt.perfect_action_values(ttt.env_reset())), np.asarray(ttt.perfect_action_values(ttt.from_moves("5")))]),
    )


def test_unreachable_running_position():
    # Empty board but O (player 1) to move: cannot arise in play.
    env = dataclasses.replace(ttt.env_reset(), to_move=jnp.int32(1))
    with pytest.raises(ValueError, match="unreachable"):
        ttt.solve(env)
    np.testing.assert_array_equal(ttt.perfect_action_values(env), np.full(9, -2, np.int8))


# --- solution_table and the JAX lookup ---------------------------------------------------
def test_solution_table():
    table = ttt.solution_table()
    assert table is ttt.solution_table()  # cached
    assert table.shape == (19683, 9) and table.dtype == np.int8
    assert not table.flags.writeable
    assert set(np.unique(table).tolist()) == {-2, -1, 0, 1}
    np.testing.assert_array_equal(table[0], np.zeros(9, np.int8))  # empty board: all draws
    # 4520 running positions (5478 reachable boards, 958 of them finished).
    assert int((table != -2).any(axis=1).sum()) == 4520
    # X in cell 1 (idx 1): O to move; only the centre (cell 5) draws.
    np.testing.assert_array_equal(table[1], [-2, -1, -1, -1, 0, -1, -1, -1, -1])
    # Unreachable (two X, no O) and finished (X row 1-2-3, O 4-5) rows are all -2.
    assert (table[1 + 3] == -2).all()
    assert (table[1 + 3 + 9 + 2 * 27 + 2 * 81] == -2).all()
    for moves in POSITIONS[:50]:
        board = [0] * 9
        for i, m in enumerate(moves):
            board[m - 1] = 1 + i % 2
        idx = sum(s * 3**i for i, s in enumerate(board))
        np.testing.assert_array_equal(table[idx], _as_int8(_brute_all(moves)))


def test_nothing_built_at_import():
    code = (
        "import c4jax.games.tictactoe as t, c4jax.games.tictactoe_solver as s; "
        "assert t.solution_table.cache_info().currsize == 0; assert not s._TT; "
        "import jax; assert not any(isinstance(v, jax.Array) for m in (t, s) for v in vars(m).values())"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_perfect_action_values_jit_and_vmap():
    envs = [ttt.env_reset(), *(ttt.from_moves(m) for m in POSITIONS[:40])]
    envs += [ttt.from_moves(FINISHED["x_won"]), ttt.from_moves(FINISHED["draw"])]
    expected = np.stack([_as_int8(ttt.solve(e)) for e in envs])

    jitted = jax.jit(ttt.perfect_action_values)
    for env, want in zip(envs[:8], expected):
        got = jitted(env)
        assert got.dtype == jnp.int8 and got.shape == (9,)
        np.testing.assert_array_equal(got, want)

    batched = jax.jit(jax.vmap(ttt.perfect_action_values))(_stack(envs))
    assert batched.dtype == jnp.int8 and batched.shape == (len(envs), 9)
    np.testing.assert_array_equal(batched, expected)
    # Legal actions are exactly the non-(-2) entries of a running game.
    legal = jax.vmap(ttt.legal_action_mask)(_stack(envs))
    np.testing.assert_array_equal(np.asarray(legal), expected != -2)
