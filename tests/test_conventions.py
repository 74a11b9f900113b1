"""The conventions every public function keeps: keys of every
implementation, one game or a batch for every jit-able game function, and
JAX's 64-bit mode.

Keys: each public entry point that takes a key is called with a typed
Threefry key, an ``rbg`` and an ``unsafe_rbg`` key and a raw
``jax.random.PRNGKey``; each must run (the raw key giving the Threefry key's
result) and refuse non-keys with a ValueError; a raw key of another default
implementation is accepted too.  Batches: each game function given a batch
equals the same function called game by game (and a batch of one is read as
a batch, not as one game: tic-tac-toe's ``winning_moves`` on ``"1745"``
answers for the game, not for the batch axis).  64-bit mode
(``JAX_ENABLE_X64``): rollouts and the search keep their float32 values."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import c4jax
from c4jax.tools.matches import play_games
from c4jax.search import leaf_value, prior_logits
from c4jax.games import connect4 as c4
from c4jax.games import tictactoe as ttt
from c4jax.present.boards import render, render_rich
from marks import slow_unless

KINDS = {
    "threefry": lambda s: jax.random.key(s),
    "rbg": lambda s: jax.random.key(s, impl="rbg"),
    "unsafe_rbg": lambda s: jax.random.key(s, impl="unsafe_rbg"),
    "raw": lambda s: jax.random.PRNGKey(s),
}
NOT_KEYS = [None, 7, 2.5, "key", jnp.array([0.5, 0.5]), jnp.array([1, 2], jnp.int32), jnp.zeros(3, jnp.uint32)]


def _stack(envs):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *envs)


ENTRY_POINTS = {
    "run_mcts": lambda k: c4jax.run_mcts(k, ttt.from_moves("5"), 6).visit_counts,
    "run_mcts_anytime": lambda k: c4jax.run_mcts_anytime(
        k, ttt.from_moves("5"), 60.0, chunk=4, max_simulations=8
    )[0].visit_counts,
    "arena": lambda k: np.asarray(
        [g.moves for g in c4jax.arena(k, c4jax.random_player(), c4jax.random_player(), 2, ttt.env_reset()).games],
        dtype=object,
    ),
    "connect4.rollout": lambda k: c4.rollout(k, c4.env_reset()),
    "connect4.heuristic_rollout": lambda k: c4.heuristic_rollout(k, c4.env_reset()),
    "tictactoe.rollout": lambda k: ttt.rollout(k, ttt.env_reset()),
    "tictactoe.heuristic_rollout": lambda k: ttt.heuristic_rollout(k, ttt.env_reset()),
    "leaf_value": lambda k: leaf_value(k, c4.from_moves("44"), num_rollouts=3),
    "make_root_fn": lambda k: c4jax.make_root_fn()(None, k, _stack([c4.env_reset()] * 2)).value,
    "make_recurrent_fn": lambda k: c4jax.make_recurrent_fn()(
        None, k, jnp.array([3, 4]), _stack([c4.env_reset()] * 2)
    )[0].value,
}


@pytest.mark.parametrize("entry", slow_unless(ENTRY_POINTS, lambda entry: entry != "run_mcts_anytime"))
def test_every_key_kind_is_accepted_and_non_keys_are_refused(entry):
    fn = ENTRY_POINTS[entry]
    results = {kind: fn(make(3)) for kind, make in KINDS.items()}
    # A raw key is the default (Threefry) key's data: the same numbers.
    if entry == "arena":
        assert list(results["raw"]) == list(results["threefry"])
    else:
        np.testing.assert_array_equal(np.asarray(results["raw"]), np.asarray(results["threefry"]))
    for bad in NOT_KEYS:
        with pytest.raises(ValueError, match="PRNG key"):
            fn(bad)


def test_play_games_takes_keys_of_any_kind():
    for make in KINDS.values():
        keys = jax.vmap(make)(jnp.arange(2)) if make is not KINDS["raw"] else jax.random.split(make(0), 2)
        records, _, _ = play_games(keys, [True, False], c4jax.random_player(), c4jax.random_player(), ttt.env_reset())
        assert len(records) == 2 and all(r.result in ("X", "O", "draw") for r in records)
    with pytest.raises(ValueError, match="PRNG key"):
        play_games(jnp.zeros((2, 3)), [True, False], c4jax.random_player(), c4jax.random_player(), ttt.env_reset())


def test_a_raw_key_of_the_default_implementation_is_accepted():
    """``jax.random.PRNGKey`` under ``jax_default_prng_impl="rbg"`` is a
    uint32[4] key, accepted as the raw key of that implementation; a
    threefry-shaped raw key is then refused, naming the shape."""
    env = ttt.env_reset()
    before = jax.config.jax_default_prng_impl
    jax.config.update("jax_default_prng_impl", "rbg")
    try:
        out = c4jax.run_mcts(jax.random.PRNGKey(0), env, 6)
        assert int(out.visit_counts.sum()) == 6
        with pytest.raises(ValueError, match=r"uint32\[4\]"):
            c4jax.run_mcts(jnp.zeros(2, jnp.uint32), env, 6)
    finally:
        jax.config.update("jax_default_prng_impl", before)


# ---------------------------------------------------------------------------
# One game or a batch


C4_MOVES = ["", "4", "121212", "4453", "1212121", "44444"]  # "1212121": X has won
TTT_MOVES = ["", "5", "1745", "12437", "159", "14253"]  # "14253": X has won


def _games(game, moves):
    return [game.from_moves(m) for m in moves]


def _loop(fn, envs, *per_game):
    return jax.tree.map(lambda *xs: np.stack(xs), *[fn(e, *[a[i] for a in per_game]) for i, e in enumerate(envs)])


@pytest.mark.parametrize("module,moves", [(c4, C4_MOVES), (ttt, TTT_MOVES)], ids=["connect4", "tictactoe"])
def test_every_game_function_takes_a_batch_as_the_same_function_game_by_game(module, moves):
    envs = _games(module, moves)
    batch = _stack(envs)
    b = len(envs)
    for fn in (module.legal_action_mask, module.winning_moves, module.board_array):
        np.testing.assert_array_equal(np.asarray(fn(batch)), _loop(fn, envs), err_msg=fn.__name__)
    actions = jnp.arange(b, dtype=jnp.int32) % module.env_reset().game.num_actions
    got = module.env_step(batch, actions)
    want = _loop(lambda e, a: module.env_step(e, a), envs, actions)
    chex.assert_trees_all_equal(got, want)
    keys = jax.random.split(jax.random.key(1), b)
    for fn in (module.rollout, module.heuristic_rollout):
        want = _loop(lambda e, k: fn(k, e), envs, keys)
        np.testing.assert_array_equal(np.asarray(fn(keys, batch)), want, err_msg=fn.__name__)
        # One key for the batch is split, one per game.
        np.testing.assert_array_equal(np.asarray(fn(jax.random.key(1), batch)), want)
    # Two batch axes: the same values, reshaped.
    grid = jax.tree.map(lambda x: x[: 2 * (b // 2)].reshape((2, b // 2) + x.shape[1:]), batch)
    np.testing.assert_array_equal(
        np.asarray(module.winning_moves(grid)).reshape(-1, module.env_reset().game.num_actions),
        _loop(module.winning_moves, envs[: 2 * (b // 2)]),
    )
    # Under jit and under an outer vmap too.
    np.testing.assert_array_equal(np.asarray(jax.jit(module.winning_moves)(batch)), _loop(module.winning_moves, envs))
    np.testing.assert_array_equal(np.asarray(jax.vmap(module.winning_moves)(batch)), _loop(module.winning_moves, envs))
    # prior_logits and leaf_value follow the same rule.
    np.testing.assert_array_equal(
        np.asarray(prior_logits(batch, "heuristic")), _loop(lambda e: prior_logits(e, "heuristic"), envs)
    )
    np.testing.assert_array_equal(
        np.asarray(leaf_value(keys, batch)), _loop(lambda e, k: leaf_value(k, e), envs, keys)
    )


def test_a_batch_of_one_is_a_batch():
    one = ttt.from_moves("1745")  # X to move: 1 and 4 are X's, 7 is taken; no win
    batch = _stack([one])
    assert np.asarray(ttt.winning_moves(batch)).shape == (1, 9)
    np.testing.assert_array_equal(np.asarray(ttt.winning_moves(batch))[0], np.asarray(ttt.winning_moves(one)))
    assert np.asarray(c4.winning_moves(_stack(_games(c4, C4_MOVES[:1] * 7)))).shape == (7, 7)
    np.testing.assert_array_equal(
        np.asarray(ttt.perfect_action_values(batch))[0], np.asarray(ttt.perfect_action_values(one))
    )


def test_a_batch_needs_one_action_and_one_key_per_game():
    batch = _stack(_games(c4, C4_MOVES))
    with pytest.raises(ValueError, match="one value per game"):
        c4.env_step(batch, 3)
    with pytest.raises(ValueError, match="one value per game"):
        c4.env_step(batch, jnp.zeros(2, jnp.int32))
    with pytest.raises(ValueError, match=r"one key or one key per game \(shape \(6,\)\)"):
        c4.rollout(jax.random.split(jax.random.key(0), 5), batch)
    with pytest.raises(ValueError, match="one key"):
        c4.rollout(jax.random.split(jax.random.key(0), 2), c4.env_reset())


def test_the_host_side_functions_take_one_game_and_say_so():
    for module, moves in ((c4, C4_MOVES), (ttt, TTT_MOVES)):
        batch = _stack(_games(module, moves))
        for fn in (render, render_rich):
            with pytest.raises(ValueError, match="one game"):
                fn(module.GAME if module is ttt else module.make(), batch)
    with pytest.raises(ValueError, match="batch"):
        ttt.solve(_stack(_games(ttt, TTT_MOVES)))


# ---------------------------------------------------------------------------
# JAX's 64-bit mode


def test_64_bit_mode_searches_and_rolls_out():
    # With jax.enable_x64 every rollout still returns a float32 result in
    # {-1, 0, 1} (no float64 literal changes its loop's carry type), and the
    # search runs.
    with jax.enable_x64(True):
        for fn in (c4.rollout, c4.heuristic_rollout, ttt.rollout):
            value = fn(jax.random.key(1), fn.__self__.env_reset())
            assert value.dtype == np.float32 and float(value) in (-1.0, 0.0, 1.0)
        out = c4jax.run_mcts(jax.random.key(0), ttt.from_moves("12"), 8)
        assert int(out.visit_counts.sum()) == 8
