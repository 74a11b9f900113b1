"""run_mcts inside a caller's program (c4jax.search.programs): jit, vmap, the
weights as an argument, non-finite values reported, and where one game runs."""

from __future__ import annotations

import warnings

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import c4jax
from c4jax.games import tictactoe
from c4jax.search import programs

GAMES = 24  # split over the CPU devices (at least 8 per device)
SIMS = 24


def _batch(env, n=GAMES):
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), env)


@pytest.fixture(scope="module")
def position():
    env = tictactoe.from_moves("15")
    return env, _batch(env), jax.random.split(jax.random.key(5), GAMES)


def test_a_jitted_batch_is_split_over_the_cpu_devices_with_the_direct_calls_trees(position):
    _, envs, keys = position
    direct = c4jax.run_mcts(keys, envs, SIMS)
    jitted = jax.jit(lambda k, e: c4jax.run_mcts(k, e, SIMS))(keys, envs)
    chex.assert_trees_all_equal(jax.device_get(direct), jax.device_get(jitted))
    devices = len(jax.local_devices(backend="cpu"))
    assert len(jitted.action.sharding.device_set) == min(devices, GAMES // programs.MIN_GAMES_PER_DEVICE)


def test_a_vmap_of_one_game_searches_is_the_batched_search(position):
    env, envs, keys = position
    batch = c4jax.run_mcts(keys, envs, SIMS)
    vmapped = jax.jit(jax.vmap(lambda k, e: c4jax.run_mcts(k, e, SIMS)))(keys, envs)
    # One game's output keeps its tree's batch axis of one.
    vmapped = vmapped.replace(search_tree=jax.tree.map(lambda x: x[:, 0], vmapped.search_tree))
    chex.assert_trees_all_equal(jax.device_get(batch), jax.device_get(vmapped))
    # The same position for every game (env not mapped), and no jit around it.
    shared = jax.vmap(lambda k: c4jax.run_mcts(k, env, SIMS))(keys)
    chex.assert_trees_all_equal(batch.visit_counts, shared.visit_counts)
    assert len(vmapped.action.sharding.device_set) > 1 or len(jax.local_devices(backend="cpu")) == 1


def test_a_vmap_of_batched_searches_is_one_batch(position):
    _, envs, keys = position
    batch = c4jax.run_mcts(keys, envs, SIMS)
    k2 = keys.reshape(2, GAMES // 2)
    e2 = jax.tree.map(lambda x: x.reshape((2, GAMES // 2) + x.shape[1:]), envs)
    nested = jax.vmap(lambda k, e: c4jax.run_mcts(k, e, SIMS))(k2, e2)
    chex.assert_trees_all_equal(jax.device_get(batch),
                                jax.device_get(jax.tree.map(lambda x: x.reshape((GAMES,) + x.shape[2:]), nested)))


def test_the_callers_placement_keeps_the_search_on_one_device(position):
    _, envs, keys = position
    device = jax.local_devices(backend="cpu")[-1]
    with jax.default_device(device):
        out = jax.jit(lambda k, e: c4jax.run_mcts(k, e, SIMS))(keys, envs)
        direct = c4jax.run_mcts(keys, envs, SIMS)
    assert out.action.sharding.device_set == direct.action.sharding.device_set == {device}
    # The whole outputs: the search traced as one program on that device, its
    # staged programs there, and its staged programs split over the CPU
    # devices (the call outside the placement; test_stages.py checks the
    # split programs of the other options and of Connect 4 so).
    chex.assert_trees_all_equal(*jax.device_get((out, direct, c4jax.run_mcts(keys, envs, SIMS))))


def _value_fn(params, key, env):
    del key
    x = tictactoe.board_array(env).reshape(-1).astype(jnp.float32)
    return jnp.tanh(jnp.tanh(x @ params["w1"]) @ params["w2"])[0]


def _prior_fn(params, env):
    return tictactoe.board_array(env).reshape(-1).astype(jnp.float32) @ params["wp"]


def _weights(seed):
    k1, k2, k3 = jax.random.split(jax.random.key(seed), 3)
    return {"w1": 0.3 * jax.random.normal(k1, (9, 8)), "w2": jax.random.normal(k2, (8, 1)),
            "wp": 0.3 * jax.random.normal(k3, (9, 9))}


def test_ten_weight_pytrees_compile_one_search_outside_and_inside_jit(position):
    _, envs, keys = position
    options = dict(value_fn=_value_fn, prior_fn=_prior_fn)
    before = c4jax.compiled_stats()["compiles"]
    direct = [c4jax.run_mcts(keys, envs, SIMS, params=_weights(s), **options) for s in range(10)]
    assert c4jax.compiled_stats()["compiles"] == before + 1
    traces = []

    @jax.jit
    def search(k, e, p):
        traces.append(1)
        return c4jax.run_mcts(k, e, SIMS, params=p, **options)

    for s in range(10):
        chex.assert_trees_all_equal(jax.device_get(search(keys, envs, _weights(s))), jax.device_get(direct[s]))
    assert len(traces) == 1 and c4jax.compiled_stats()["compiles"] == before + 1
    # The weights matter: two of them give different searches.
    assert not np.array_equal(direct[0].visit_counts, direct[1].visit_counts)


def test_params_are_the_first_argument_and_checked(position):
    env, envs, keys = position
    weights = _weights(3)
    closed = c4jax.run_mcts(keys, envs, SIMS, value_fn=lambda k, e: _value_fn(weights, k, e),
                            prior_fn=lambda e: _prior_fn(weights, e))
    # The search of the test above (its functions, other weights).
    given = c4jax.run_mcts(keys, envs, SIMS, value_fn=_value_fn, prior_fn=_prior_fn, params=weights)
    chex.assert_trees_all_equal(closed.visit_counts, given.visit_counts)
    with pytest.raises(ValueError, match="give value_fn or prior_fn"):
        c4jax.run_mcts(jax.random.key(1), env, SIMS, params=_weights(3))
    with pytest.raises(ValueError, match="pytree of arrays"):
        c4jax.run_mcts(jax.random.key(1), env, SIMS, value_fn=_value_fn, params={"w": "x"})
    with pytest.raises(ValueError, match=r"\(params, key, env\) -> value"):
        c4jax.run_mcts(jax.random.key(1), env, SIMS, value_fn=lambda k, e: 0.0, params=_weights(3))
    with pytest.raises(ValueError, match="dtype <U1"):
        c4jax.run_mcts(jax.random.key(1), env, SIMS, value_fn=_value_fn, params={"w1": np.array(["a"])})
    # An error inside the function is its own, not blamed on its signature.
    wrong = dict(_weights(3), w1=jnp.zeros((8, 8)))
    with pytest.raises(TypeError, match="dot_general"):
        c4jax.run_mcts(jax.random.key(1), env, SIMS, value_fn=_value_fn, params=wrong)
    with pytest.raises(ValueError, match="the same for every game of a vmapped search"):
        jax.vmap(lambda k, p: c4jax.run_mcts(k, env, SIMS, value_fn=_value_fn, params=p))(
            jax.random.split(jax.random.key(0), 2), jax.tree.map(lambda x: jnp.stack([x, x]), _weights(1)))


def test_players_selfplay_and_anytime_take_weights_without_compiling_again():
    env = c4jax.games.tictactoe.env_reset()

    def value_fn(params, key, env):
        return jnp.tanh(params[0])

    c4jax.selfplay(jax.random.key(0), 8, 2, env, value_fn=value_fn, params=jnp.zeros(1))
    before = c4jax.compiled_stats()["compiles"]
    runs = [c4jax.selfplay(jax.random.key(0), 8, 2, env, value_fn=value_fn, params=jnp.full(1, w))
            for w in (-2.0, 2.0)]
    player = c4jax.mcts_player(8, value_fn=value_fn, params=jnp.full(1, 0.5))
    c4jax.arena(jax.random.key(1), player, c4jax.random_player(), 4, env=env)
    arena_compiles = c4jax.compiled_stats()["compiles"]
    c4jax.arena(jax.random.key(1), c4jax.mcts_player(8, value_fn=value_fn, params=jnp.full(1, -0.5)),
                c4jax.random_player(), 4, env=env)
    assert c4jax.compiled_stats()["compiles"] == arena_compiles == before + 1
    assert runs[0].games[0].values != runs[1].games[0].values  # the weights reach the search
    c4jax.run_mcts_anytime(jax.random.key(2), env, 0.01, value_fn=value_fn, params=jnp.zeros(1))
    anytime = c4jax.compiled_stats()["compiles"]
    _, n = c4jax.run_mcts_anytime(jax.random.key(2), env, 0.01, value_fn=value_fn, params=jnp.ones(1))
    assert n >= 128 and c4jax.compiled_stats()["compiles"] == anytime


def test_a_nan_value_inside_jit_is_reported_once_per_call(position):
    _, envs, keys = position

    def nan_fn(params, key, env):
        return params * jnp.nan

    search = jax.jit(lambda k, e, p: c4jax.run_mcts(k, e, SIMS, value_fn=nan_fn, params=p).non_finite)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        counts = search(keys, envs, jnp.float32(1.0))
        jax.effects_barrier()
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert messages == [f"{int(np.sum(counts)):,} evaluations of your value_fn/prior_fn gave NaN or infinity"
                        + messages[0].split("infinity", 1)[1]]
    assert int(np.sum(counts)) > GAMES


@pytest.mark.parametrize("games, platform, expected", [
    (1, "gpu", "cpu"), (1, "tpu", "cpu"), (1, "cpu", None), (2, "gpu", None), (1024, "gpu", None),
])
def test_one_game_runs_on_the_cpu_of_an_accelerator_host(games, platform, expected):
    assert programs.one_game_platform(games, platform) == expected


def test_one_game_device_respects_the_callers_placement(monkeypatch):
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert programs.one_game_device(1) == jax.local_devices(backend="cpu")[0]
    assert programs.one_game_device(2) is None
    with jax.default_device(jax.local_devices(backend="cpu")[-1]):
        assert programs.one_game_device(1) is None
    placed = jax.device_put(jnp.zeros(2), jax.local_devices(backend="cpu")[-1])
    assert programs.one_game_device(1, (placed,)) is None
