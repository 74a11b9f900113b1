"""The training loop (c4jax.training): the network's planes and symmetry,
examples from self-play records, the replay buffer, determinism for a seed,
a killed run resuming where it stopped, checkpoints refused when partial or
foreign, and the trained network in the search."""

import dataclasses
import json
import os

import jax
import numpy as np
import pytest

pytest.importorskip("equinox", reason="the [train] extra")  # CI installs it (README's test command)

import c4jax  # noqa: E402
from c4jax.games import connect4, tictactoe  # noqa: E402
from c4jax.tools.records import GameRecord  # noqa: E402
from c4jax.training import NetConfig, load, train  # noqa: E402
from c4jax.training import loop  # noqa: E402
from c4jax.training.checkpoint import CHECKPOINT, CheckpointError  # noqa: E402
from c4jax.training.network import (make_net, mirror_actions, mixed_value_fn, planes, prior_fn,  # noqa: E402
                                    tempered_prior_fn, value_fn)
from c4jax.training.replay import ReplayBuffer, examples_from_records  # noqa: E402
from tiny_training import TINY  # noqa: E402


def _strip_times(curve):
    timed = ("minutes", "selfplay_seconds", "train_seconds", "gate_seconds", "selfplay_games_per_second",
             "train_steps_per_second")
    return [{k: v for k, v in e.items() if k not in timed} for e in curve]


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(tree)]


def test_planes_hold_the_movers_stones_first():
    env = connect4.from_moves("44")  # X in column 4, O on it; X to move
    x = np.asarray(planes(env))
    assert x.shape == (2, 6, 7)
    assert x[0, 5, 3] == 1 and x[0].sum() == 1  # X's stone, bottom row
    assert x[1, 4, 3] == 1 and x[1].sum() == 1  # O's, above it
    y = np.asarray(planes(connect4.from_moves("445")))  # O to move: O's stones first
    assert y[0, 4, 3] == 1 and y[0].sum() == 1 and y[1].sum() == 2


def test_the_mirror_maps_columns_and_cells():
    assert mirror_actions(connect4.make(rows=5, cols=4)).tolist() == [3, 2, 1, 0]
    assert mirror_actions(tictactoe.GAME).tolist() == [2, 1, 0, 5, 4, 3, 8, 7, 6]
    # The mirror of a position's planes are the planes of the mirrored moves.
    a = np.asarray(planes(connect4.from_moves("1237")))
    b = np.asarray(planes(connect4.from_moves("7651")))
    np.testing.assert_array_equal(a[..., ::-1], b)


def test_examples_are_every_ply_with_its_visits_and_the_result_for_the_mover():
    moves = (4, 0, 2, 1, 6)  # X takes the 4-2-6 diagonal... X wins on ply 5 (cells 2, 4, 6)
    visits = tuple(tuple(3 if a == m else 1 for a in range(9)) for m in moves)
    record = GameRecord(moves=moves, x_player="a", o_player="a", result="X", game="tictactoe", visits=visits,
                        values=(0.0,) * 5)
    x, policy, value = examples_from_records([record], tictactoe.GAME)
    assert x.shape == (5, 2, 3, 3) and x.dtype == np.uint8
    assert value.tolist() == [1, -1, 1, -1, 1]
    np.testing.assert_allclose(policy.sum(axis=1), 1.0)
    np.testing.assert_allclose(policy[0, 4], 3 / 11)
    for p in range(5):
        want = np.asarray(planes(tictactoe.from_moves([m + 1 for m in moves[:p]])))
        np.testing.assert_array_equal(x[p], want)


def test_the_buffer_keeps_the_latest_and_mirrors_planes_with_their_policy():
    game = tictactoe.GAME
    buf = ReplayBuffer(game, capacity=4)
    x = np.zeros((6, 2, 3, 3), np.uint8)
    x[np.arange(6), 0, 0, 0] = 1  # every example's mover stone in the top-left cell
    policy = np.zeros((6, 9), np.float32)
    policy[:, 0] = 1.0  # ... and its visits on that cell
    buf.add(x, policy, np.arange(6, dtype=np.float32))
    assert len(buf) == 4
    assert buf.state()["value"].tolist() == [2, 3, 4, 5]
    bx, bp, bv = (np.asarray(a) for a in buf.sample(jax.random.key(1), 64))
    flipped = bx[:, 0, 0, 2] == 1
    assert 0 < flipped.sum() < 64  # both kinds drawn
    # Mirrored planes carry the mirrored policy: the stone and the visits stay on one cell.
    assert np.all(bp[flipped, 2] == 1) and np.all(bp[~flipped, 0] == 1)
    assert set(bv.tolist()) <= {2.0, 3.0, 4.0, 5.0}


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("train") / "run"
    result = train(folder, tictactoe.GAME, iterations=2, config=TINY, seed=3)
    return folder, result


def test_a_run_writes_its_checkpoint_curve_and_plot(straight_run):
    folder, result = straight_run
    assert result.iteration == 2
    assert [e["iteration"] for e in result.curve] == [1, 2]
    assert sorted(os.listdir(folder)) == ["checkpoint.npz", "curve.json", "curve.png"]
    curve = json.loads((folder / "curve.json").read_text())
    assert _strip_times(curve) == _strip_times(result.curve)
    for e in curve:
        assert e["games"] == 8 and e["positions"] >= 8 * 5  # a tic-tac-toe game lasts 5 plies or more
        assert 0.0 <= e["gate_score"] <= 1.0 and e["policy_loss"] > 0 and e["value_loss"] >= 0
    assert (folder / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_loop_is_deterministic_and_a_killed_run_resumes_as_if_never_killed(straight_run, tmp_path, monkeypatch):
    folder, result = straight_run
    other = tmp_path / "run"
    train(other, tictactoe.GAME, iterations=1, config=TINY, seed=3)

    # Killed in the middle of iteration 2 (after its self-play, in training):
    # the checkpoint still holds iteration 1.
    real = loop._update_program

    def killed(config):
        raise KeyboardInterrupt

    monkeypatch.setattr(loop, "_update_program", killed)
    with pytest.raises(KeyboardInterrupt):
        train(other, tictactoe.GAME, iterations=2)
    assert loop.RunState.load(str(other)).iteration == 1
    monkeypatch.setattr(loop, "_update_program", real)

    resumed = train(other, iterations=2)  # the stored game, config and seed
    assert [e["iteration"] for e in resumed.curve] == [1, 2]
    assert _strip_times(resumed.curve) == _strip_times(result.curve)
    for a, b in zip(_leaves(resumed.candidate.params), _leaves(result.candidate.params), strict=True):
        np.testing.assert_array_equal(a, b)
    assert json.loads((other / "curve.json").read_text())[0]["minutes"] == resumed.curve[0]["minutes"]


def test_a_trained_network_searches_through_run_mcts_players_and_selfplay(straight_run):
    folder, _ = straight_run
    net = load(folder, tictactoe.GAME)
    assert net.game == tictactoe.GAME and net.iteration in (1, 2)
    env = tictactoe.from_moves([1, 5, 2])  # X threatens 1-2-3: O must take cell 3
    out = c4jax.run_mcts(jax.random.key(0), env, 64, **net.search_options())
    assert int(out.action) == 2
    player = c4jax.mcts_player(8, **net.search_options())
    result = c4jax.arena(jax.random.key(0), player, c4jax.random_player(), 2, tictactoe.env_reset())
    assert result.num_games == 2
    played = c4jax.selfplay(jax.random.key(0), 8, 2, tictactoe.env_reset(), **net.search_options())
    assert played.num_games == 2
    # A tic-tac-toe network is searched with its value alone unless told.
    assert net.rollout_weight == 0.0 and net.value_fn is value_fn
    assert net.prior_temperature == 1.0 and net.prior_fn is prior_fn
    mixed = load(folder, rollout_weight=0.25, prior_temperature=1.5)
    assert mixed.value_fn is mixed_value_fn(0.25) and mixed.prior_fn is tempered_prior_fn(1.5)
    out = c4jax.run_mcts(jax.random.key(0), env, 64, **mixed.search_options())
    assert int(out.action) == 2  # the block, with the values mixed too


def test_a_resumed_run_refuses_another_game_config_or_seed(straight_run):
    folder, _ = straight_run
    with pytest.raises(ValueError, match="holds a run of tictactoe, not of connect4"):
        train(folder, connect4.make(), iterations=3)
    with pytest.raises(ValueError, match="another configuration"):
        train(folder, iterations=3, config=dataclasses.replace(TINY, steps=4))
    with pytest.raises(ValueError, match="seed 3, not 4"):
        train(folder, iterations=3, seed=4)
    with pytest.raises(ValueError, match="holds a run of tictactoe, not of connect4"):
        load(folder, connect4.make())


def test_missing_partial_and_foreign_checkpoints_get_one_clear_error(straight_run, tmp_path):
    folder, _ = straight_run
    with pytest.raises(CheckpointError, match="holds no training run"):
        load(tmp_path)
    partial = tmp_path / "partial"
    partial.mkdir()
    data = (folder / CHECKPOINT).read_bytes()
    (partial / CHECKPOINT).write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="not a whole training checkpoint"):
        load(partial)
    before = sorted(os.listdir(partial))
    with pytest.raises(CheckpointError):
        train(partial, iterations=5)
    assert sorted(os.listdir(partial)) == before  # nothing written
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    np.savez(foreign / CHECKPOINT, meta=np.frombuffer(b'{"format": "other"}', np.uint8))
    with pytest.raises(CheckpointError, match="not a c4jax training checkpoint"):
        load(foreign)
    for bad in (-0.1, 1.5, float("nan"), "0.5", True):
        with pytest.raises(ValueError, match="rollout_weight must be"):
            load(folder, rollout_weight=bad)
        with pytest.raises(ValueError, match="rollout_weight must be"):
            mixed_value_fn(bad)
    for bad in (0, -1.0, float("inf"), float("nan"), "2", True):
        with pytest.raises(ValueError, match="prior_temperature must be"):
            load(folder, prior_temperature=bad)
        with pytest.raises(ValueError, match="prior_temperature must be"):
            tempered_prior_fn(bad)
    with pytest.raises(ValueError, match="which must be 'best' or 'candidate'"):
        load(folder, which="latest")


@pytest.mark.parametrize("bad, match", [
    (dict(iterations=0), "iterations must be"),
    (dict(minutes=-1.0), "minutes must be"),
    (dict(minutes=float("nan")), "minutes must be"),
    (dict(), "give minutes or iterations"),
    (dict(iterations=1, config=dataclasses.replace(TINY, gate_games=3)), "gate_games"),
    (dict(iterations=1, seed=2**32), "seed must be"),
])
def test_bad_numbers_are_refused_before_anything_is_written(tmp_path, bad, match):
    with pytest.raises(ValueError, match=match):
        train(tmp_path / "run", tictactoe.GAME, **bad)
    assert not (tmp_path / "run").exists()


def test_a_new_network_is_near_uniform_and_sized_by_its_board():
    for game in (tictactoe.GAME, connect4.make(), connect4.make(rows=9, cols=11, connect=5)):
        net = make_net(jax.random.key(0), game, NetConfig(channels=8, blocks=1))
        logits, value = net(planes(game.env_reset()))
        assert logits.shape == (game.num_actions,)
        assert float(np.ptp(np.asarray(logits))) < 1.0 and abs(float(value)) < 0.5


def test_the_convolution_as_a_matrix_product_is_equinoxs_convolution():
    from c4jax.training.network import conv

    net = make_net(jax.random.key(1), connect4.make(rows=5, cols=8), NetConfig(channels=6, blocks=1))
    x = jax.random.normal(jax.random.key(2), (6, 5, 8))
    for layer in (net.blocks[0][0], net.policy_conv):
        np.testing.assert_allclose(np.asarray(conv(layer, x)), np.asarray(layer(x)), rtol=1e-5, atol=1e-5)


def test_a_connect4_board_of_another_size_trains_with_its_own_network(tmp_path):
    game = connect4.make(rows=5, cols=4, connect=3)
    result = train(tmp_path / "run", game, iterations=1, config=TINY, seed=1)
    assert result.iteration == 1 and result.curve[0]["positions"] >= 8 * 5  # connect 3 takes 5 plies or more
    net = load(tmp_path / "run", game)
    logits, value = net.params(planes(game.env_reset()))
    assert logits.shape == (4,) and net.params.policy_out.weight.shape == (4, 2 * 5 * 4)
    with pytest.raises(ValueError, match="not of connect4"):
        load(tmp_path / "run", connect4.make())
    # A Connect 4 network's leaf values mix in a rollout by default; tic-tac-toe's do not.
    assert net.rollout_weight == loop.CONNECT4_ROLLOUT_WEIGHT == 0.7
    assert net.search_options()["value_fn"] is mixed_value_fn(0.7) is load(tmp_path / "run").value_fn
    assert load(tmp_path / "run", rollout_weight=0).value_fn is value_fn
    # Its prior is flattened by default; tic-tac-toe's is not.
    assert net.prior_temperature == loop.CONNECT4_PRIOR_TEMPERATURE == 2.0
    assert net.search_options()["prior_fn"] is tempered_prior_fn(2.0)
    assert load(tmp_path / "run", prior_temperature=1).prior_fn is prior_fn


def test_the_tempered_prior_is_the_logits_over_the_temperature():
    game = connect4.make()
    net = make_net(jax.random.key(0), game, NetConfig(channels=4, blocks=1, hidden=8))
    net = jax.tree.map(lambda x: x * 3.0 if isinstance(x, jax.Array) else x, net)
    env = connect4.from_moves("4453")
    logits = np.asarray(prior_fn(net, env))
    assert float(np.ptp(logits)) > 0.1  # a prior that a temperature changes
    for t in (0.5, 2.0, 3.0):
        tempered = np.asarray(jax.jit(tempered_prior_fn(t))(net, env))
        np.testing.assert_allclose(tempered, logits / t, rtol=1e-6, atol=1e-6)
        flat = np.exp(tempered - tempered.max()) / np.exp(tempered - tempered.max()).sum()
        sharp = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        assert (flat.max() < sharp.max()) == (t > 1)  # > 1 flattens the softmax prior, < 1 sharpens it
    assert tempered_prior_fn(1.0) is prior_fn and tempered_prior_fn(2) is tempered_prior_fn(2.0)


def test_the_mixed_leaf_value_is_the_weighted_mean_of_the_network_and_a_rollout():
    game = connect4.make()
    net = make_net(jax.random.key(0), game, NetConfig(channels=4, blocks=1, hidden=8))
    # Weights scaled up so that the network's value is far from 0.
    net = jax.tree.map(lambda x: x * 3.0 if isinstance(x, jax.Array) else x, net)
    rollout = game.threat_aware_rollout
    values = {}
    for moves in ("", "4453", "44444"):
        env = connect4.from_moves(moves)
        for seed in range(6):
            key = jax.random.key(seed)
            v, r = float(value_fn(net, key, env)), float(rollout(key, env))
            values[r] = True
            assert float(mixed_value_fn(0.0)(net, key, env)) == v
            assert float(mixed_value_fn(1.0)(net, key, env)) == r
            np.testing.assert_allclose(float(jax.jit(mixed_value_fn(0.7))(net, key, env)), 0.3 * v + 0.7 * r,
                                       rtol=1e-6, atol=1e-6)
            assert abs(v) > 0.01
    assert set(values) <= {-1.0, 0.0, 1.0} and len(values) >= 2  # rollouts are game results, several seen

