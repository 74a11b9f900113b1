"""Parallel simulations in one tree (``lanes``): exact visit counts, tree
invariants, the solver's soundness against the exact tic-tac-toe solver,
tactics, determinism, batches and subtree reuse."""

from __future__ import annotations

import chex
import jax
import numpy as np
import pytest

import c4jax
from c4jax.games import connect4 as c4
from c4jax.games import tictactoe as ttt
from test_search import _exact_value, records, row, stack


def _check_lane_tree(tree, n, live):
    """The tree invariants of tests/test_search.py, as they read with lanes:
    exact root counts; every node is the child of exactly one edge (no edge
    expanded twice); child and edge statistics agree; a node has at least
    one visit more than its children (more when several lanes of one step
    visited it as a new leaf, each with its own rollouts)."""
    for b in range(tree.node_visits.shape[0]):
        t = row(tree, b)
        used = np.flatnonzero(t.node_visits > 0)
        if not live[b]:
            assert used.tolist() == [0]
            continue
        assert t.node_visits[0] == n + 1 and t.children_visits[0].sum() == n
        assert np.all(np.isfinite(t.node_values)) and np.all(np.abs(t.node_values[used]) <= 1 + 1e-6)
        edges = set()
        for i in used:
            if i > 0:
                edge = (int(t.parents[i]), int(t.action_from_parent[i]))
                assert edge not in edges and t.children_index[edge] == i, (i, edge)
                edges.add(edge)
            legal = np.asarray(t.embeddings.game.legal_action_mask(jax.tree.map(lambda x: x[i], t.embeddings)))
            assert np.all(t.children_visits[i][~legal] == 0) and np.all(t.children_index[i][~legal] == -1)
            if not bool(t.embeddings.done[i]):
                assert t.node_visits[i] >= 1 + t.children_visits[i].sum()
            for a in np.flatnonzero(t.children_index[i] >= 0):
                c = t.children_index[i, a]
                assert t.children_visits[i, a] == t.node_visits[c]
                np.testing.assert_allclose(t.children_values[i, a], t.node_values[c], atol=1e-5)
            # A node's value is the mean of what was backed up through it:
            # its own evaluations and its children's returns.
            if not bool(t.embeddings.done[i]) and t.node_visits[i] == 1 + t.children_visits[i].sum():
                q = t.children_rewards[i] + t.children_discounts[i] * t.children_values[i]
                total = t.raw_values[i] + np.sum(t.children_visits[i] * q)
                np.testing.assert_allclose(t.node_values[i] * t.node_visits[i], total, atol=2e-3)


# The Connect 4 searches here run 8 lanes and at most 64 simulations (a tree
# of 65 nodes), on one game or five: one compiled search per batch size
# (and one for a reused tree).


def test_root_visits_exactly_num_simulations_in_a_batch_of_live_and_finished_games():
    finished = [c4.from_moves("1212121"), c4.env_step(c4.from_moves("1111112"), 0)[0]]
    live = [c4.from_moves("4453"), c4.from_moves("121212"), c4.from_moves("3")]
    envs = stack([live[0], finished[0], live[1], finished[1], live[2]])
    n = 59  # not a multiple of the lanes: the last step runs 3 of 8
    out = c4jax.run_mcts(jax.random.key(3), envs, n, lanes=8)
    assert out.action.tolist()[1] == -1 and out.action.tolist()[3] == -1
    assert int(out.action[2]) == 0  # "121212": X wins in column 1
    _check_lane_tree(out.search_tree, n, [True, False, True, False, True])


def test_a_reused_tree_grows_by_exactly_num_simulations():
    env = c4.from_moves("44")
    out = c4jax.run_mcts(jax.random.key(0), env, 64, lanes=8)
    action = int(out.action)
    kept = int(out.search_tree.children_visits[0, 0, action])
    sub = c4jax.get_subtree(out.search_tree, action)
    # 37: not a multiple of the lanes (the kept 18 nodes and 37 more fit in
    # the 65).
    again = c4jax.run_mcts(jax.random.key(1), c4.env_step(env, action)[0], 37, tree=sub, lanes=8)
    t = row(again.search_tree)
    assert t.node_visits[0] == kept + 37 and t.children_visits[0].sum() == kept - 1 + 37


def test_a_full_tree_loses_no_simulation_with_uct():
    out = c4jax.run_mcts(jax.random.key(2), c4.from_moves("4"), 200, capacity=40, lanes=8, selection="uct")
    t = row(out.search_tree)
    assert t.node_visits[0] == 201 and t.children_visits[0].sum() == 200
    assert np.all(t.node_visits > 0)  # every slot used, none twice (the root's count is exact)


@pytest.mark.parametrize("moves,n,seed", [("15", 1500, 2)])
def test_solver_bounds_hold_the_exact_value_of_every_node(moves, n, seed):
    out = c4jax.run_mcts(jax.random.key(seed), ttt.from_moves(moves), n, lanes=8)
    t = row(out.search_tree)
    _check_lane_tree(out.search_tree, n, [True])
    used = np.flatnonzero(t.node_visits > 0)
    lo, hi = t.extra_data.value_lower[used], t.extra_data.value_upper[used]
    exact = np.array([_exact_value(t.embeddings.stones[i]) for i in used])
    assert np.all(lo <= exact) and np.all(exact <= hi)
    # As many proofs as one simulation at a time finds (0.68 there, measured).
    assert (lo == hi).mean() > 0.5, (lo == hi).mean()
    values = ttt.solve(ttt.from_moves(moves))
    assert values[int(out.action)] == np.nanmax(values)


@pytest.mark.slow
def test_forced_wins_and_blocks_as_one_lane_finds_them():
    recs = [r for r in records() if r["kind"] == "tactical"]
    envs = stack([c4.from_moves(r["moves"]) for r in recs] * 4)
    keys = jax.random.split(jax.random.key(0), len(recs) * 4)
    # (One lane: tests/test_search.py, the same positions and budget.)
    actions = np.asarray(c4jax.run_mcts(keys, envs, 1000, lanes=8).action)
    for i, a in enumerate(actions):
        r = recs[i % len(recs)]
        assert a in r["best"], (r["moves"], r["tactic"], a, r["best"])


def test_same_key_same_tree_and_batch_rows_equal_single_games():
    moves = ["", "4453", "3344", "4", "121212"]
    envs = stack([c4.from_moves(m) for m in moves])
    key = jax.random.key(11)
    a = c4jax.run_mcts(key, envs, 64, lanes=8)
    chex.assert_trees_all_equal(a, c4jax.run_mcts(key, envs, 64, lanes=8))
    keys = jax.random.split(key, len(moves))
    for i, m in enumerate(moves):
        single = c4jax.run_mcts(keys[i], c4.from_moves(m), 64, lanes=8)
        chex.assert_trees_all_close(row(a.search_tree, i), row(single.search_tree, 0), atol=1e-6)
        assert int(single.action) == int(a.action[i])


def test_lanes_spread_over_the_root_moves():
    # Virtual loss: the 8 lanes of the first step do not all take the same
    # move (with one lane, PUCT with a uniform prior and min-max Q visits the
    # first move it tried and its neighbours only).
    out = c4jax.run_mcts(jax.random.key(0), c4.env_reset(), 8, lanes=8)
    assert int(np.sum(np.asarray(out.visit_counts) > 0)) == 7


def test_bad_lanes_raise_value_errors():
    env = c4.env_reset()
    for bad in (0, -1, 2.0, True, "4"):
        with pytest.raises(ValueError, match="lanes must be None or an int in 1..1024"):
            c4jax.run_mcts(jax.random.key(0), env, 10, lanes=bad)
    with pytest.raises(ValueError, match="gumbel.*lanes=1"):
        c4jax.run_mcts(jax.random.key(0), env, 10, selection="gumbel", lanes=4)


def test_lanes_have_an_upper_bound():
    # At most 1024 lanes: a huge count is a ValueError naming the bound and
    # the value given, before anything is allocated for it.
    with pytest.raises(ValueError, match=r"lanes must be None or an int in 1\.\.1024; got 1000000000"):
        c4jax.run_mcts(jax.random.key(0), c4.env_reset(), 16, lanes=10**9)
