"""Your own evaluation: ``value_fn`` and ``prior_fn`` in ``run_mcts``,
``leaf_value``, ``prior_logits`` and ``make_root_fn`` /
``make_recurrent_fn``, and ``run_mcts(..., options=SearchOptions(...))``;
non-finite numbers from them, and the errors that name a bad function.

Tic-tac-toe keeps the compiles small; each distinct function compiles its own
search, so the functions below are built once."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

import c4jax
from c4jax.search import leaf_value, prior_logits
from c4jax.games import connect4 as c4
from c4jax.games import tictactoe as ttt
from marks import slow_unless


def zero_value(key, env):
    return jnp.float32(0.0)


def centre_prior(env):
    """All the prior mass on the centre cell (action 4)."""
    return jnp.where(jnp.arange(9) == 4, 10.0, 0.0)


def nan_value(key, env):
    return jnp.float32(jnp.nan)


def minus_inf_prior(env):
    return jnp.full(9, -jnp.inf)


def test_a_constant_value_still_takes_an_immediate_win():
    # X (cells 1, 2) to move wins with cell 3; every leaf is worth 0, so only
    # the terminal reward of the winning move can tell, and the solver is off.
    env = ttt.from_moves("1425")
    out = c4jax.run_mcts(jax.random.key(0), env, 64, value_fn=zero_value, prior="uniform", solver=False, lanes=1)
    assert int(out.action) == 2
    assert float(out.qvalues[2]) == 1.0
    # Every other visited move is worth 0 to X (a leaf's 0, discounted).
    visited = np.asarray(out.visit_counts) > 0
    others = np.asarray(out.qvalues)[visited & (np.arange(9) != 2)]
    assert np.all(np.abs(others) <= 1.0)


def test_a_prior_on_one_move_concentrates_the_visits():
    env = ttt.env_reset()
    out = c4jax.run_mcts(jax.random.key(1), env, 64, prior_fn=centre_prior, value_fn=zero_value, lanes=1)
    visits = np.asarray(out.visit_counts)
    assert visits[4] > 0.5 * visits.sum(), visits
    # The prior the search stored is prior_fn's, softmaxed over legal moves.
    stored = np.asarray(out.search_tree.children_prior_logits[0, 0])
    np.testing.assert_allclose(stored, np.asarray(centre_prior(env)), atol=1e-6)
    # An illegal action keeps the masked logit whatever prior_fn says.
    env2 = ttt.from_moves("5")
    logits = prior_logits(env2, prior_fn=centre_prior)
    assert float(logits[4]) == float(jnp.finfo(jnp.float32).min)


def _value_of(params, env):
    """A tiny linear evaluation of the board, for the player to move."""
    board = ttt.board_array(env).reshape(-1).astype(jnp.float32)
    mine = jnp.where(env.to_move == 0, board == 1, board == 2)
    theirs = jnp.where(env.to_move == 0, board == 2, board == 1)
    return jnp.tanh(jnp.dot(params, mine.astype(jnp.float32) - theirs.astype(jnp.float32)))


def test_a_closure_over_parameters_under_jit_on_a_batch():
    traces = []

    @jax.jit
    def search(params, key, envs):
        def value_fn(k, e):
            traces.append(1)
            return _value_of(params, e)

        return c4jax.run_mcts(key, envs, 32, value_fn=value_fn, lanes=1)

    envs = jax.tree.map(lambda *x: jnp.stack(x), *[ttt.from_moves(m) for m in ("", "5", "51", "159")])
    p1 = jnp.asarray(np.linspace(-1.0, 1.0, 9, dtype=np.float32))
    p2 = jnp.asarray(np.full(9, 0.3, np.float32))
    out1 = search(p1, jax.random.key(2), envs)
    n_traces = len(traces)
    out2 = search(p2, jax.random.key(2), envs)  # new parameters: no new trace
    assert len(traces) == n_traces
    assert not np.array_equal(np.asarray(out1.search_tree.node_values), np.asarray(out2.search_tree.node_values))
    # The same search without the outer jit, parameters as constants: the same tree.
    eager = c4jax.run_mcts(jax.random.key(2), envs, 32, value_fn=lambda k, e: _value_of(p1, e), lanes=1)
    chex.assert_trees_all_close(eager.search_tree.node_values, out1.search_tree.node_values, atol=1e-6)
    np.testing.assert_array_equal(eager.action, out1.action)
    # The root's stored value is value_fn's (batch row b: game b).
    np.testing.assert_allclose(
        np.asarray(out1.search_tree.raw_values[:, 0]),
        np.asarray(jax.vmap(lambda e: _value_of(p1, e))(envs)), atol=1e-6,
    )


def test_options_object_equals_keywords_and_keywords_replace_its_fields():
    env = ttt.from_moves("5")
    options = c4jax.SearchOptions(prior="uniform", lanes=1, selection="uct")
    a = c4jax.run_mcts(jax.random.key(3), env, 40, options=options)
    b = c4jax.run_mcts(jax.random.key(3), env, 40, prior="uniform", lanes=1, selection="uct")
    chex.assert_trees_all_equal(a, b)
    c = c4jax.run_mcts(jax.random.key(3), env, 40, options=c4jax.SearchOptions(prior="uniform"), lanes=1,
                       selection="uct")
    chex.assert_trees_all_equal(a, c)
    with pytest.raises(ValueError, match="options must be a c4jax.SearchOptions"):
        c4jax.run_mcts(jax.random.key(3), env, 40, options=dict(prior="uniform"))


def test_a_finished_game_is_worth_zero_whatever_value_fn_says():
    done = ttt.from_moves("14253")  # X has won
    assert float(leaf_value(jax.random.key(0), done, value_fn=lambda k, e: 0.7)) == 0.0
    running = ttt.from_moves("1")
    assert float(leaf_value(jax.random.key(0), running, value_fn=lambda k, e: 0.7)) == pytest.approx(0.7)
    # Values outside [-1, 1] are clipped to the results' range.
    assert float(leaf_value(jax.random.key(0), running, value_fn=lambda k, e: 5.0)) == 1.0


def test_non_finite_evaluations_follow_a_rule():
    """A NaN value counts as 0 (a draw), NaN logits as 0 and infinite logits
    as +-1e30, so that no NaN reaches the tree's statistics."""
    env = ttt.from_moves("5")
    v = leaf_value(jax.random.key(0), env, value_fn=lambda k, e: jax.numpy.nan)
    assert float(v) == 0.0
    with pytest.warns(RuntimeWarning, match="gave NaN or infinity"):
        out = c4jax.run_mcts(jax.random.key(0), env, 32, value_fn=nan_value, lanes=1)
    assert np.isfinite(np.asarray(out.qvalues)).all() and np.isfinite(float(out.value))
    logits = np.asarray(prior_logits(env, prior_fn=lambda e: jax.numpy.full(9, jax.numpy.nan)))
    legal = np.asarray(ttt.legal_action_mask(env))
    assert (logits[legal] == 0.0).all()
    logits = np.asarray(prior_logits(env, prior_fn=lambda e: jax.numpy.full(9, jax.numpy.inf)))
    assert (logits[legal] == 1e30).all()


@pytest.mark.parametrize("lanes", slow_unless([1, 4], lambda lanes: lanes == 1))
def test_the_search_counts_non_finite_values_and_logits_and_warns(lanes):
    """From the empty board no game ends within 32 simulations (a game of
    tic-tac-toe ends 5 plies in at the earliest, deeper than these searches
    go), so every leaf value is value_fn's (the root's and one per
    simulation: 33) and every node's prior is prior_fn's (33 nodes, the root
    included).  The NaN value's search with one lane is
    test_non_finite_evaluations_follow_a_rule's."""
    env = ttt.env_reset()
    with pytest.warns(RuntimeWarning, match="33 evaluations"):
        out = c4jax.run_mcts(jax.random.key(0), env, 32, lanes=lanes, value_fn=nan_value)
    assert int(out.non_finite) == 33 and int(out.action) >= 0
    with pytest.warns(RuntimeWarning, match="33 evaluations"):
        out = c4jax.run_mcts(jax.random.key(0), env, 32, lanes=lanes, prior_fn=minus_inf_prior)
    assert int(out.non_finite) == int(np.sum(np.asarray(out.search_tree.node_visits) > 0)) == 33


def test_finite_evaluations_count_nothing_and_a_batch_counts_per_game():
    import warnings

    env = ttt.env_reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # The searches of the tests above: finite functions of yours, and none.
        assert int(c4jax.run_mcts(jax.random.key(0), env, 16, prior_fn=centre_prior, value_fn=zero_value,
                                  lanes=1).non_finite) == 0
        assert int(c4jax.run_mcts(jax.random.key(0), env, 16, prior="uniform", lanes=1,
                                  selection="uct").non_finite) == 0
    batch = jax.tree.map(lambda *x: jnp.stack(x), ttt.env_reset(), ttt.from_moves("1"), ttt.from_moves("12"))

    def value_fn(key, e):  # NaN in the positions with an odd number of stones
        return jnp.where(e.ply % 2 == 1, jnp.nan, 0.0)

    with pytest.warns(RuntimeWarning):
        out = c4jax.run_mcts(jax.random.key(1), batch, 8, value_fn=value_fn)
    counts = np.asarray(out.non_finite)
    assert counts.shape == (3,) and counts[1] > 0 and counts[0] > 0 and counts[2] > 0
    assert counts.sum() < 3 * 9  # only odd plies: never every evaluation


@pytest.mark.slow
def test_the_anytime_search_counts_over_its_chunks():
    with pytest.warns(RuntimeWarning):
        out, sims = c4jax.run_mcts_anytime(jax.random.key(0), c4.env_reset(), 60.0, chunk=16, max_simulations=48,
                                           value_fn=lambda k, e: jnp.float32(jnp.inf))
    assert sims == 48 and int(out.non_finite) == 1 + 48


def test_root_and_recurrent_functions_take_the_same_callables():
    envs = jax.tree.map(lambda *x: jnp.stack(x), c4.from_moves("44"), c4.from_moves("4"))
    root_fn = c4jax.make_root_fn(value_fn=lambda k, e: 0.25 * (1 - 2 * e.to_move), prior_fn=lambda e: jnp.arange(7.0))
    root = jax.jit(root_fn)(None, jax.random.key(0), envs)  # jitted: one program, not dozens of operations
    np.testing.assert_allclose(np.asarray(root.value), [0.25, -0.25])
    np.testing.assert_allclose(np.asarray(root.prior_logits[0]), np.arange(7.0))
    recurrent_fn = c4jax.make_recurrent_fn(value_fn=lambda k, e: jnp.float32(-0.5))
    out, nxt = jax.jit(recurrent_fn)(None, jax.random.key(1), jnp.array([0, 1]), envs)
    np.testing.assert_allclose(np.asarray(out.value), [-0.5, -0.5])
    assert isinstance(out, mctx.RecurrentFnOutput)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(value_fn=3), "value_fn must be None or a function"),
        (dict(prior_fn="heuristic"), "prior_fn must be None or a function"),
        (dict(value_fn=lambda k, e: jnp.zeros(2)), r"value_fn must return real numbers of shape \[\] for one game"),
        (dict(prior_fn=lambda e: jnp.zeros(3)), r"prior_fn must return real numbers of shape \[9\] for one game"),
        (dict(value_fn=lambda k, e: None), r"value_fn must return real numbers of shape \[\].*not an array"),
        (dict(value_fn=lambda k, e: "x"), r"value_fn must return real numbers"),
        (dict(value_fn=lambda e: 0.0), r"value_fn must be a function \(key, env\) -> value"),
        (dict(prior_fn=lambda k, e: 0.0), r"prior_fn must be a function \(env\) -> logits"),
    ],
)
def test_bad_callables_are_value_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        c4jax.run_mcts(jax.random.key(0), ttt.env_reset(), 8, **kwargs)


def _net(params, env):
    """A one-layer network over tic-tac-toe's 18 stone bits: 9 logits and a value."""
    bits = (env.stones[:, None] >> jnp.arange(9, dtype=env.stones.dtype)) & 1
    out = jnp.tanh(bits.reshape(-1).astype(jnp.float32) @ params)
    return out[:9], out[9]


def _net_value(params, key, env):
    return _net(params, env)[1]


def _net_prior(params, env):
    return _net(params, env)[0]


def test_a_value_and_prior_of_one_forward_pass_are_evaluated_once():
    """The search gives ``prior_fn`` the leaf that ``value_fn`` values, so
    that XLA computes a network's shared forward pass once per simulation:
    adding a ``prior_fn`` of the same network adds no matrix product."""
    params = jax.random.normal(jax.random.key(0), (18, 10))
    envs = jax.tree.map(lambda x: jnp.stack([x] * 4), ttt.from_moves("5"))
    keys = jax.random.split(jax.random.key(1), 4)

    def compiled(**fns):
        search = jax.jit(lambda p, k, e: c4jax.run_mcts(k, e, 16, params=p, **fns))
        return search.lower(params, keys, envs).compile()

    def dots(program):
        return program.as_text().count(" dot(")

    value_only = dots(compiled(value_fn=_net_value))
    assert value_only >= 1
    both = compiled(value_fn=_net_value, prior_fn=_net_prior)
    assert dots(both) == value_only
    # Every node's prior is the network's prior of that node's position (in
    # the first game's tree: the search of keys[0] and "5" alone).
    out = both(params, keys, envs)
    tree = jax.tree.map(lambda x: x[0], out.search_tree)
    nodes = np.flatnonzero(np.asarray(tree.node_visits) > 0)
    assert len(nodes) == 17
    for node in nodes:
        env = jax.tree.map(lambda x: x[node], tree.embeddings)
        legal = np.asarray(ttt.legal_action_mask(env))
        np.testing.assert_array_equal(np.asarray(tree.children_prior_logits[node])[legal],
                                      np.asarray(_net_prior(params, env))[legal])
