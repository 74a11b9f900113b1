"""Bad input at the Python boundary and in jit: found by a fresh user's
break-it session, each case rerun here."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import c4jax
from c4jax import connect4 as c4
from c4jax import tictactoe as ttt


@pytest.mark.parametrize("action", [3.7, -0.5, float("nan"), "3", True, np.float32(2.0)])
def test_non_integer_actions_are_rejected(action):
    with pytest.raises(ValueError, match="action must be an integer"):
        c4.env_step(c4.from_moves("4453"), action)
    with pytest.raises(ValueError, match="action must be an integer"):
        ttt.env_step(ttt.from_moves("5"), action)


def test_non_integer_action_under_jit_is_rejected_at_trace_time():
    with pytest.raises(ValueError, match="action must be an integer"):
        jax.jit(c4.env_step)(c4.from_moves("4453"), jnp.float32(3.9))


@pytest.mark.parametrize("action", [2**33 + 2, np.int64(2**33 + 2), -(2**40), np.uint32(2**32 - 1)])
def test_huge_integers_are_illegal_moves_not_wrapped(action):
    env = c4.from_moves("4453")
    new, reward, done = c4.env_step(env, action)
    assert float(reward) == -1.0 and bool(done) and int(new.winner) == 1 - int(env.to_move)
    np.testing.assert_array_equal(np.asarray(new.stones), np.asarray(env.stones))


def test_module_functions_refuse_an_env_of_another_game():
    five = c4.make(6, 7, 5).from_moves("121212")
    for fn in (c4.legal_action_mask, c4.winning_moves, c4.render, c4.board_array):
        with pytest.raises(ValueError, match="connect=5"):
            fn(five)
    with pytest.raises(ValueError, match="connect=5"):
        c4.env_step(five, 0)
    with pytest.raises(ValueError, match="TicTacToe"):
        c4.rollout(jax.random.key(0), ttt.from_moves("15"))
    with pytest.raises(ValueError, match="Connect4"):
        ttt.legal_action_mask(c4.from_moves("4453"))
    # Its own game plays connect five: four in a column is not a win.
    _, reward, done = five.game.env_step(five, 0)
    assert float(reward) == 0.0 and not bool(done)
