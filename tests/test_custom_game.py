"""Your own game: ``c4jax.games.testing.check_game`` on the package's games and on
a game written outside it (``examples/tictactoe4.py``, 4x4 tic-tac-toe),
which then runs through ``run_mcts``, the solver, subtree reuse and the arena
unchanged; and ``check_game`` catches broken rules."""

from __future__ import annotations

import dataclasses
import pathlib
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import c4jax
from c4jax.games import connect4, tictactoe
from c4jax.games.testing import GameContractError, check_game

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from tictactoe4 import GAME as TTT4, TicTacToe4  # noqa: E402
from marks import slow_unless


@pytest.mark.parametrize(
    "game",
    slow_unless([tictactoe.GAME, connect4.make(), TTT4], lambda game: game is tictactoe.GAME),
    ids=["tictactoe", "connect4", "tictactoe4 (examples/)"],
)
def test_check_game_passes(game):
    check_game(game)


def test_the_example_game_is_searched_solved_and_played():
    env = TTT4.env_reset()
    for a in (0, 5, 1, 6, 2):  # X: cells 1, 2, 3 of the top row; O: 6, 7
        env, _, _ = TTT4.env_step(env, a)
    assert np.asarray(TTT4.winning_moves(env)).tolist() == [False] * 16  # O cannot win at once
    out = c4jax.run_mcts(jax.random.key(0), env, 64)
    assert int(out.action) == 3  # O blocks cell 4
    # X to move at cell 4 wins: the solver proves it at the root.
    env_x, _, _ = TTT4.env_step(env, 9)  # O elsewhere: X now wins at once
    out = c4jax.run_mcts(jax.random.key(1), env_x, 64)
    assert int(out.action) == 3 and float(out.qvalue_lower[3]) == 1.0 and int(out.proven_plies[3]) == 1
    # Subtree reuse keeps the child's visits.
    sub = c4jax.get_subtree(out.search_tree, out.action)
    assert int(sub.node_visits[0, 0]) == int(out.visit_counts[3])
    # The arena, both colours: MCTS never loses to random play here.
    r = c4jax.arena(jax.random.key(2), c4jax.mcts_player(100), c4jax.random_player(), 4, TTT4.env_reset())
    assert r.num_games == 4 and r.losses == 0
    for g in r.games:
        assert (g.game, g.game_params) == ("tictactoe4", ()) and 7 <= len(g.moves) <= 16


@dataclasses.dataclass(frozen=True)
class _UsesJaxArrayMethods(TicTacToe4):
    """Correct rules written with ``.at[]``, which NumPy arrays lack: the
    harness must pass JAX arrays, as the search does."""

    def env_step(self, env, action):
        env = dataclasses.replace(env, stones=env.stones.at[0, 0].get()[None, None] * 0 + env.stones)
        return super().env_step(env, action)


def test_check_game_passes_jax_arrays_to_the_game():
    check_game(_UsesJaxArrayMethods())


@dataclasses.dataclass(frozen=True)
class _NoWinningMoves(TicTacToe4):
    def winning_moves(self, env):
        return jnp.zeros(env.batch_shape + (16,), bool)


@dataclasses.dataclass(frozen=True)
class _IllegalMovesAllowed(TicTacToe4):
    def env_step(self, env, action):
        # Forgets the rule for occupied cells: a stone on a stone is a move.
        action = jnp.asarray(action, jnp.int32)
        occupied = env.stones[..., 0, 0] | env.stones[..., 1, 0]
        new, r, d = super().env_step(env, action)
        return new, jnp.where((occupied >> jnp.clip(action, 0, 15).astype(jnp.uint32)) & 1 == 1, 0.0, r), d


@pytest.mark.parametrize(
    "game, match",
    [
        (_NoWinningMoves(), "winning_moves"),
        (_IllegalMovesAllowed(), "must be illegal: reward -1"),
    ],
    ids=["no_winning_moves", "occupied_cell_allowed"],
)
def test_check_game_catches_broken_rules(game, match):
    with pytest.raises(GameContractError, match=match):
        check_game(game)
