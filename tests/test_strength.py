"""Playing strength floors of the MCTS player (fixed keys, so the game
results are deterministic).  The budgets come from the tables in
benchmarks/strength/ (ttt_tables.md, connect4_tables.md), which also show
how close to the floors these configurations are."""

from __future__ import annotations

import jax
import pytest

import c4jax
from c4jax import tictactoe as ttt

# No loss to the perfect tic-tac-toe player, 100 games as X and
# 100 as O, at the budget of `c4jax play --game tictactoe` (1000 simulations)
# with the default options.  (With mctx's recipe, uniform prior and random
# rollouts, MCTS still lost 7 games in 1000 at 800 simulations over keys 0-4
# and none from 1600 on: benchmarks/strength/ttt_tables.md, section 3.)
PLAY_DEFAULT_SIMS = 1000


@pytest.mark.slow
@pytest.mark.optimized
def test_tictactoe_mcts_never_loses_to_perfect():
    r = c4jax.arena(
        jax.random.key(0), c4jax.mcts_player(PLAY_DEFAULT_SIMS), c4jax.perfect_player(), 200, ttt.env_reset()
    )
    assert r.num_games == 200 and sum(r.a_first) == 100 and sum(r.a_second) == 100
    # Nobody beats the perfect player; nothing beats perfect play either.
    assert r.wins == 0
    assert r.a_first[2] == 0 and r.a_second[2] == 0, (r.a_first, r.a_second)
    assert r.losses == 0 and r.draws == 200


@pytest.mark.slow
@pytest.mark.optimized
def test_tictactoe_mcts_without_solver_still_loses_to_perfect():
    # Why the solver is on by default: mctx's recipe without it loses.
    # ttt_tables.md section 3, solver=False, key 0: 9 losses as O in 100 at
    # 800 simulations (2 at 1600, 1 at 3200 and 6400).
    player = c4jax.mcts_player(800, solver=False, **c4jax.MCTX_RECIPE)
    r = c4jax.arena(jax.random.key(0), player, c4jax.perfect_player(), 200, ttt.env_reset())
    assert r.a_second[2] >= 3, r.a_second


@pytest.mark.slow
@pytest.mark.optimized
def test_tictactoe_mcts_beats_the_random_player():
    # Key 0, 200 games: default MCTS(400) wins 100/100 as X and 68/100 as O,
    # and loses none.  With mctx's recipe (random rollouts) it won 89/100 as
    # O (ttt_tables.md section 6): a random rollout models a random opponent,
    # the default win-else-block rollout a sharper one, so against a random
    # player the default search plays for a draw more often.  For scale: the
    # perfect player (a random move among the value-optimal ones, which does
    # not try to win more often) wins 97/100 as X and only 66/100 as O
    # against it with the same key.
    r = c4jax.arena(jax.random.key(0), c4jax.mcts_player(400), c4jax.random_player(), 200, ttt.env_reset())
    assert sum(r.a_first) == 100 and sum(r.a_second) == 100
    assert r.a_first[0] >= 95, r.a_first
    assert r.a_second[0] >= 60, r.a_second
    assert r.losses == 0, (r.a_first, r.a_second)


@pytest.mark.slow
@pytest.mark.optimized
def test_connect4_more_simulations_win():
    # connect4_tables.md (a): MCTS(50) vs MCTS(400) scored 19 wins, 8 draws,
    # 173 losses in 200 games (Elo -354).  tests/test_search.py already
    # checks the optimal-move rate at 400 simulations; this checks that the
    # extra simulations turn into won games, from both sides.
    r = c4jax.arena(jax.random.key(0), c4jax.mcts_player(400), c4jax.mcts_player(50), 40)
    assert r.a_first[0] >= 16 and r.a_second[0] >= 16, (r.a_first, r.a_second)
    assert r.wins >= 34, (r.wins, r.draws, r.losses)
