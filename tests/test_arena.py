"""Players and the arena: legality, tactics, player specs, reproducibility,
batched equals one game at a time, games from a position, statistics.  The
arena's records are read and written in test_records.py."""

from __future__ import annotations

import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import c4jax
from c4jax.tools.players import parse_player
from c4jax.tools.matches import play_games
from c4jax.games import connect4 as c4
from c4jax.games import tictactoe as ttt
from c4jax.tools.stats import elo_difference, wilson_interval


def stack(envs):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *envs)


def act(player, envs, seed=0):
    keys = jax.random.split(jax.random.key(seed), envs.ply.shape[0])
    return np.asarray(player.act(keys, envs, player.init(envs))[0])


def replay(record):
    game = c4jax.make(record.game, **dict(record.game_params))
    env = game.from_moves([m + 1 for m in record.moves])
    assert bool(env.done)
    winner = int(env.winner)
    return "draw" if winner == -1 else "XO"[winner]


# --------------------------------------------------------------------------
# Players.


def test_random_player_is_legal_and_uniform():
    env = c4.from_moves("111111")  # column 1 full
    envs = jax.tree.map(lambda x: jnp.broadcast_to(x, (7000,) + x.shape), env)
    moves = act(c4jax.random_player(), envs)
    counts = np.bincount(moves, minlength=7)
    assert counts[0] == 0
    # 6 legal columns, 7000 draws: each about 1167 +- 4 sd (sd = 31).
    assert np.all(np.abs(counts[1:] - 7000 / 6) < 4 * math.sqrt(7000 * (1 / 6) * (5 / 6)))


def test_flat_mc_player_refuses_an_unknown_rollout_policy_when_built():
    with pytest.raises(ValueError, match=r"rollout_policy must be one of 'uniform', 'heuristic', 'threat_aware'; "
                                         r"got 'threat-aware'"):
        c4jax.flat_mc_player(8, rollout_policy="threat-aware")


def test_heuristic_player_wins_then_blocks():
    envs = stack([c4.from_moves("121212"), c4.from_moves("12121"), ttt.from_moves("1425")][:2])
    assert act(c4jax.heuristic_player(), envs).tolist() == [0, 0]
    assert act(c4jax.heuristic_player(), stack([ttt.from_moves("1425"), ttt.from_moves("152")])).tolist() == [2, 2]


@pytest.mark.slow
def test_flat_mc_and_mcts_players_take_the_win():
    envs = stack([c4.from_moves("121212"), c4.from_moves("1212123")])
    assert act(c4jax.flat_mc_player(8), envs).tolist() == [0, 1]
    assert act(c4jax.flat_mc_player(8, rollout_policy="threat_aware"), envs).tolist() == [0, 1]
    assert act(c4jax.mcts_player(100), envs).tolist() == [0, 1]
    assert act(c4jax.mcts_player(100, reuse=False), envs).tolist() == [0, 1]


def test_perfect_player_plays_only_optimal_moves():
    positions = ["", "1", "5", "15", "152", "1593", "1425"]
    envs = stack([ttt.from_moves(m) for m in positions])
    for seed in range(5):
        moves = act(c4jax.perfect_player(), envs, seed)
        for m, a in zip(positions, moves):
            values = ttt.solve(ttt.from_moves(m))
            assert values[a] == np.nanmax(values), (m, a)
    with pytest.raises(ValueError, match="tic-tac-toe only"):
        act(c4jax.perfect_player(), stack([c4.env_reset()]))


def test_parse_player_and_bad_specs():
    assert parse_player("mcts:250").simulations == 250
    assert parse_player("flatmc:4").name == "flatmc:4"
    for spec in ["mcts", "mcts:0", "mcts:-3", "alphazero", "flatmc:x"]:
        with pytest.raises(ValueError, match="random, heuristic, perfect, mcts:N, flatmc:N"):
            parse_player(spec)
    with pytest.raises(ValueError, match="selection"):
        c4jax.mcts_player(10, selection="best")
    with pytest.raises(ValueError, match="reuse"):
        c4jax.mcts_player(10, selection="gumbel")


def test_player_specs_take_ascii_digits_only():
    # N is written in ASCII digits, as every number the command reads:
    # Arabic-Indic or full-width digits, which int() would accept, are not N.
    for spec in ("mcts:\u0665\u0660", "flatmc:\uff15"):
        with pytest.raises(ValueError, match="unknown player"):
            parse_player(spec)


def test_mcts_player_keeps_its_subtree_across_both_sides_moves():
    player = c4jax.mcts_player(60)
    envs = stack([c4.env_reset()])
    tree = player.init(envs)
    assert tree.node_visits.shape == (1, 122)  # capacity 2 * 60 + 2, fixed
    keys = jax.random.split(jax.random.key(0), 1)
    action, tree = player.act(keys, envs, tree)
    old = jax.tree.map(lambda x: np.asarray(x[0]), tree)
    child_visits = old.children_visits[0, int(action[0])]
    tree = player.observe(tree, action)  # its own move
    assert int(tree.node_visits[0, 0]) == child_visits
    envs = jax.vmap(c4.env_step)(envs, action)[0]
    reply = jnp.array([int(np.argmax(np.asarray(tree.children_visits[0, 0])))])
    grand = int(tree.children_visits[0, 0, reply[0]])
    tree = player.observe(tree, reply)  # the opponent's move
    assert int(tree.node_visits[0, 0]) == grand > 0
    envs = jax.vmap(c4.env_step)(envs, reply)[0]
    _, tree = player.act(jax.random.split(jax.random.key(1), 1), envs, tree)
    assert int(tree.node_visits[0, 0]) == grand + 60


def test_mcts_player_search_is_the_search_behind_act():
    """``Player.search`` (what the terminal game shows) gives the whole
    SearchOutput of the move ``act`` plays, and the same next tree."""
    player = c4jax.mcts_player(100)  # test_flat_mc_and_mcts_players_take_the_win's search
    envs = stack([c4.from_moves("44"), c4.from_moves("4453")])
    tree = player.init(envs)
    keys = jax.random.split(jax.random.key(3), 2)
    out, searched = player.search(keys, envs, tree)
    action, acted = player.act(keys, envs, tree)
    np.testing.assert_array_equal(out.action, action)
    assert np.asarray(out.visit_counts).sum(axis=1).tolist() == [100, 100]
    chex.assert_trees_all_equal(searched, acted)
    assert c4jax.random_player().search is None


# --------------------------------------------------------------------------
# The arena.


def test_perfect_never_loses_to_random_and_records_replay():
    r = c4jax.arena(jax.random.key(0), c4jax.perfect_player(), c4jax.random_player(), 60, ttt.env_reset())
    assert r.losses == 0 and r.wins + r.draws == 60
    assert r.a_first[2] == 0 and r.a_second[2] == 0
    assert sum(r.a_first) == 30 and sum(r.a_second) == 30
    for g, rec in enumerate(r.games):
        assert rec.x_player == ("perfect" if g % 2 == 0 else "random")
        assert replay(rec) == rec.result
    assert r.mean_length == pytest.approx(np.mean([len(g.moves) for g in r.games]))


def test_arena_is_reproducible_and_batched_equals_one_game_at_a_time():
    a, b = c4jax.mcts_player(16, lanes=1), c4jax.heuristic_player()
    env = c4.env_reset()
    # Two compiled game loops in all (2 and 1 games per half), shared below.
    keys = jax.random.split(jax.random.key(3), 4)
    first = [True, False, True, False]
    batched, _, first_compile = play_games(keys, first, a, b, env)
    compiles = c4jax.compiled_stats()["compiles"]
    again, _, again_compile = play_games(keys, first, a, b, env)
    assert batched == again
    # The game loop is one of c4jax's kept compiled programs (a bounded set,
    # tests/test_compiled.py): the same call compiles nothing, clear_compiled
    # drops it.
    assert first_compile > 0 and again_compile == 0.0 and c4jax.compiled_stats()["compiles"] == compiles
    # Equal players made again (a notebook cell run twice, parse_player in a
    # loop) are the same players: their games compile nothing either.
    a2, b2 = c4jax.mcts_player(16, lanes=1), parse_player("heuristic")
    assert (a2, b2) == (a, b) and c4jax.mcts_player(16, lanes=2) != a
    assert parse_player("mcts:16", lanes=1) is a2 and c4jax.flat_mc_player(3) is parse_player("flatmc:3")
    again2, _, again2_compile = play_games(keys, first, a2, b2, env)
    assert again2 == batched and again2_compile == 0.0 and c4jax.compiled_stats()["compiles"] == compiles
    # A renamed player runs the same program: only the records' names change.
    mine, _, mine_compile = play_games(keys, first, c4jax.mcts_player(16, lanes=1, name="mine"), b2, env)
    assert mine_compile == 0.0 and c4jax.compiled_stats()["compiles"] == compiles
    assert [m.moves for m in mine] == [g.moves for g in batched] and "mine" in (mine[0].x_player, mine[0].o_player)
    c4jax.clear_compiled()
    assert c4jax.compiled_stats()["kept"] == 0
    _, _, recompile = play_games(keys, first, a, b, env)
    assert recompile > 0 and c4jax.compiled_stats()["compiles"] == compiles + 1
    for g in range(4):
        single, _, _ = play_games(keys[g : g + 1], first[g : g + 1], a, b, env)
        assert single[0] == batched[g], g
    # Chunking the arena into smaller jitted batches changes nothing.
    r1 = c4jax.arena(jax.random.key(4), a, b, 4, env)
    r2 = c4jax.arena(jax.random.key(4), a, b, 4, env, batch_size=2)
    assert r1.games == r2.games
    assert (r1.wins, r1.draws, r1.losses) == (r2.wins, r2.draws, r2.losses)
    for rec in r1.games:
        assert replay(rec) == rec.result


def test_arena_argument_errors():
    p = c4jax.random_player()
    for n in (0, 1, 3, 2.0):
        with pytest.raises(ValueError, match="even int"):
            c4jax.arena(jax.random.key(0), p, p, n)
    with pytest.raises(ValueError, match="batch_size"):
        c4jax.arena(jax.random.key(0), p, p, 4, batch_size=3)


def test_arena_from_a_position_with_o_to_move_credits_the_right_player():
    start = c4.from_moves("1212325")  # O to move; O wins at once in column 2
    r = c4jax.arena(jax.random.key(0), c4jax.heuristic_player(), c4jax.random_player(), 10, start)
    # The heuristic player, moving first (as O), wins at once in each of its 5 games.
    assert r.a_first == (5, 0, 0)
    for g, rec in enumerate(r.games):
        assert rec.start_ply == 7
        if g % 2 == 0:
            assert rec.o_player == "heuristic" and rec.moves == (1,) and rec.result == "O"
    with pytest.raises(ValueError, match="finished game"):
        c4jax.arena(jax.random.key(0), c4jax.random_player(), c4jax.random_player(), 2, c4.from_moves("1212121"))
    with pytest.raises(ValueError, match="Player"):
        c4jax.arena(jax.random.key(0), "random", c4jax.random_player(), 2)


def test_a_player_making_an_illegal_move_loses():
    bad = c4jax.Player.from_policy("always-col-1", lambda key, env: jnp.int32(0))
    r = c4jax.arena(jax.random.key(0), bad, c4jax.random_player(), 20)
    # Column 1 fills after 6 stones; the bad player then loses at its next move
    # unless a line was made first. It never wins by an illegal move.
    for rec in r.games:
        assert replay_or_illegal(rec)


def replay_or_illegal(rec):
    env = c4.env_reset()
    for m in rec.moves:
        env, reward, done = c4.env_step(env, m)
    winner = int(env.winner)
    return rec.result == ("draw" if winner == -1 else "XO"[winner]) and bool(env.done)


def test_wilson_and_elo_known_values():
    # Wilson (1927) 95% interval for 8/10: [0.4902, 0.9433].
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-4) and hi == pytest.approx(0.9433, abs=1e-4)
    lo, hi = wilson_interval(0, 20)
    assert lo == 0.0 and hi == pytest.approx(0.1611, abs=1e-4)
    assert elo_difference(0.5) == 0.0
    assert elo_difference(0.75) == pytest.approx(190.85, abs=0.01)  # 400 log10(3)
    assert elo_difference(1.0) == math.inf and elo_difference(0.0) == -math.inf
