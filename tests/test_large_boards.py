"""Boards of up to 64 rows and 64 columns through the whole stack.

From 33 rows on a column is two ``uint32`` words.  On a wide board of one
word (14 rows x 20 columns), the largest one (64 x 64), and next to the word
boundary (33 rows): the search plays a win whose cell is the
first row of the second word, subtree reuse keeps the subtree of the move
played, and arena games end in results the plain-Python reference rules agree
with.  A full tall board ends in a draw, or in a win made with its last cell.
The rules themselves are checked against the reference in
``test_properties.py`` and ``test_rules.py`` (these sizes included).
"""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import c4jax
from c4jax.games import connect4

from reference_games import Connect4Ref, RefState
from test_rules import envs_from_grids

SIZES = [(64, 64), (33, 7), (14, 20)]
IDS = [f"{r}x{c}" for r, c in SIZES]
SIMS = 48


def _tower_position(rows: int, cols: int):
    """X to move, three X stones at heights 29..31 of column 0 (the top of
    the first word) and filler below that makes no line: X wins by playing
    column 0, whose next cell is height 32 (the second word on a board of
    over 32 rows).  On a shorter board (14 rows) the tower is at 11..13 and
    the win is the top cell.  Returns (grid, column of the win)."""
    top = min(rows, 33) - 1  # the winning cell's height
    grid = [[None] * cols for _ in range(rows)]
    heights = list(range(top))
    for h in heights:
        if h >= top - 3:
            mark = "X"
        else:  # pairs O O X X ... downwards from the tower: no four in the column
            mark = "OX"[((top - 4 - h) // 2) % 2]
        grid[rows - 1 - h][0] = mark
    # O's stones, two per column from the right (never four of O's in a
    # column, nor in a row: the pairs are two columns apart), balance the
    # count: as many O as X, X to move.
    need = sum(row.count("X") for row in grid) - sum(row.count("O") for row in grid)
    c, h = cols - 1, 0
    for _ in range(need):
        grid[rows - 1 - h][c] = "O"
        h += 1
        if h == 2:
            c, h = c - 2, 0
    return tuple(tuple(r) for r in grid), 0


CAPACITY = 2 * SIMS + 1  # room for a kept subtree and SIMS more nodes


@functools.lru_cache(maxsize=None)
def _searches(rows: int, cols: int):
    """The game and its jitted search of one game from a tree: one program
    for the fresh searches (from an empty tree, whose root is not the
    position: searched fresh) and the reused one."""
    game = connect4.make(rows, cols)
    search = jax.jit(lambda k, e, t: c4jax.run_mcts(k, e, SIMS, tree=t))

    def fresh(key, env):
        return search(key, env, c4jax.empty_tree(jax.tree.map(lambda x: x[None], env), CAPACITY))

    return game, fresh, search


@pytest.mark.slow
@pytest.mark.parametrize("rows, cols", SIZES, ids=IDS)
def test_search_plays_the_win_in_the_second_word_and_reuses_its_tree(rows, cols):
    game, fresh, reused = _searches(rows, cols)
    ref = Connect4Ref(rows, cols, 4)
    grid, win = _tower_position(rows, cols)
    env = envs_from_grids(game, grid, 0)
    state = RefState(grid, 0, int(env.ply))
    assert not ref.has_line(grid, "X") and not ref.has_line(grid, "O")
    assert ref.winning_moves(state) == [c == win for c in range(cols)]
    assert np.asarray(game.winning_moves(env)).tolist() == ref.winning_moves(state)

    out = fresh(jax.random.key(0), env)
    assert int(out.action) == win
    assert int(out.visit_counts.sum()) == SIMS
    assert float(out.qvalue_lower[win]) == 1.0  # the solver proves it
    assert int(out.proven_plies[win]) == 1

    # Reuse from the empty board: the kept subtree of the move played keeps
    # its visits, and the next search adds exactly SIMS on top.
    empty = game.env_reset()
    out = fresh(jax.random.key(1), empty)
    action = int(out.action)
    assert 0 <= action < cols and bool(game.legal_action_mask(empty)[action])
    kept = int(out.search_tree.children_visits[0, 0, action])
    sub = c4jax.get_subtree(out.search_tree, action)
    assert int(sub.node_visits[0, 0]) == kept > 0
    child, _, _ = game.env_step(empty, action)
    chex.assert_trees_all_equal(jax.tree.map(lambda x: x[0, 0], sub.embeddings), child)
    again = reused(jax.random.key(2), child, sub)
    assert int(again.search_tree.node_visits[0, 0]) == kept + SIMS


@pytest.mark.slow
@pytest.mark.parametrize("rows, cols", SIZES, ids=IDS)
def test_arena_games_finish_on_every_board(rows, cols):
    """MCTS with subtree reuse against the win-else-block player, two games:
    every game ends, and replaying its moves with the reference rules gives
    the recorded result."""
    game = connect4.make(rows, cols)
    ref = Connect4Ref(rows, cols, 4)
    result = c4jax.arena(
        jax.random.key(3), c4jax.mcts_player(8), c4jax.heuristic_player(), 2, game.env_reset()
    )
    assert len(result.games) == 2
    for record in result.games:
        state = ref.play(list(record.moves))  # 0-based actions
        assert state.done and len(record.moves) == state.ply <= rows * cols
        expected = {0: "X", 1: "O", -1: "draw"}[state.winner]
        assert record.result == expected


def _draw_moves(rows: int, cols: int):
    """Every column filled in turn, X and O alternating in it: no line of
    ``rows`` (the connect length) anywhere; the last stone fills the board."""
    return [c for c in range(cols) for _ in range(rows)]


def _last_cell_win_moves(rows: int):
    """On a ``rows`` x 3 board, connect ``rows`` (``rows`` a multiple of 4):
    X and O first half-fill columns 0 and 1 alternately (X 0, O 0, X 1, O 1,
    ...), then X fills them up while O fills column 2 alone, whose top cell,
    the board's last, is O's ``rows``-th stone there: a column-long line."""
    first = [0, 0, 1, 1] * (rows // 4)
    second = [a for i in range(rows) for a in (i % 2, 2)]
    return first + second


@pytest.mark.parametrize("rows", [64, 40])
def test_a_full_tall_board_draws_or_wins_with_its_last_cell(rows):
    """Connect ``rows`` on a ``rows`` x 3 board (a column is two words): one
    filling ends in a draw, the other in O's column-long line made with the
    last empty cell (a win, not a draw); both agree with the reference."""
    game = connect4.make(rows, 3, rows)
    ref = Connect4Ref(rows, 3, rows)
    step = jax.jit(game.env_step)
    for moves, winner in ((_draw_moves(rows, 3), -1), (_last_cell_win_moves(rows), 1)):
        assert len(moves) == 3 * rows
        env = game.env_reset()
        for i, a in enumerate(moves):
            env, reward, done = step(env, jnp.int32(a))
            assert bool(done) == (i == len(moves) - 1), i
        state = ref.play(moves)
        assert state.done and state.winner == winner
        assert (float(reward), int(env.winner), int(env.ply)) == (float(winner == 1), winner, 3 * rows)
        assert not np.asarray(game.legal_action_mask(env)).any()
        assert np.asarray(game.board_array(env)).tolist() == ref.board(state)
        chex.assert_trees_all_equal(game.from_moves([m + 1 for m in moves]), env, strict=True)
        # The same game one ply before the end: the last cell is O's win.
        before = game.from_moves([m + 1 for m in moves[:-1]])
        assert np.asarray(game.winning_moves(before)).tolist() == [False, False, winner == 1]
