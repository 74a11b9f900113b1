"""Subtree reuse: get_subtree keeps every statistic, run_mcts adds exactly the
new simulations on top, and the edge cases are handled."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import c4jax
from c4jax.games import connect4 as c4
from c4jax.games import tictactoe as ttt

NODE_FIELDS = ("node_visits", "raw_values", "node_values")
EDGE_FIELDS = (
    "children_prior_logits", "children_visits", "children_rewards",
    "children_discounts", "children_values",
)


# Every Connect 4 search of this file has N simulations in a tree of
# CAPACITY nodes (a fresh search fills it, so reuse runs into a full tree
# too): two compiled searches, fresh and reused, shared by the tests.
N, CAPACITY = 30, 32


def search(key, env, tree=None, n=N):
    if tree is None:
        return c4jax.run_mcts(jax.random.key(key), env, n, capacity=CAPACITY)
    return c4jax.run_mcts(jax.random.key(key), env, n, tree=tree)


def row(tree, b=0):
    return jax.tree.map(lambda x: np.asarray(x[b]), tree)


def stack(envs):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *envs)


def subtree_nodes(t, root):
    """Old indices of the subtree under `root`, in index order (plain Python)."""
    keep = {root}
    for i in range(root + 1, len(t.parents)):
        if t.parents[i] in keep:
            keep.add(i)
    return sorted(keep)


def assert_subtree_equal(old, new, old_root):
    nodes = subtree_nodes(old, old_root)
    mapping = {o: j for j, o in enumerate(nodes)}
    assert np.sum(new.node_visits > 0) == len(nodes)
    for o, j in mapping.items():
        for f in NODE_FIELDS:
            assert getattr(new, f)[j] == getattr(old, f)[o], (f, o, j)
        for f in EDGE_FIELDS:
            np.testing.assert_array_equal(getattr(new, f)[j], getattr(old, f)[o], err_msg=f)
        expect_children = [mapping[c] if c >= 0 else -1 for c in old.children_index[o]]
        assert new.children_index[j].tolist() == expect_children
        assert new.parents[j] == (-1 if o == old_root else mapping[old.parents[o]])
        np.testing.assert_array_equal(new.embeddings.stones[j], old.embeddings.stones[o])
        # The solver's proven bounds travel with their nodes.
        assert new.extra_data.value_lower[j] == old.extra_data.value_lower[o]
        assert new.extra_data.value_upper[j] == old.extra_data.value_upper[o]
    assert np.all(new.node_visits[len(nodes):] == 0)
    assert np.all(new.extra_data.value_lower[len(nodes):] == -1.0)
    assert np.all(new.extra_data.value_upper[len(nodes):] == 1.0)
    assert np.all(new.children_index[len(nodes):] == -1)


def test_subtree_keeps_every_statistic_and_new_search_adds_exactly_n():
    env = c4.from_moves("44")
    out = search(0, env)
    old = row(out.search_tree)
    action = int(out.action)
    child = old.children_index[0, action]
    sub = c4jax.get_subtree(out.search_tree, action)
    new = row(sub)
    assert_subtree_equal(old, new, child)
    assert new.node_visits[0] == old.children_visits[0, action]
    np.testing.assert_array_equal(new.children_visits[0], old.children_visits[child])
    assert new.root_invalid_actions.tolist() == [0.0] * 7

    env2 = c4.env_step(env, action)[0]
    again = search(1, env2, sub)
    t = row(again.search_tree)
    assert t.node_visits.shape == old.node_visits.shape  # capacity kept
    assert t.node_visits[0] == old.children_visits[0, action] + N
    assert t.children_visits[0].sum() == old.children_visits[child].sum() + N
    # Every kept node keeps at least its old visits (the new ones come on top).
    kept = int(np.sum(new.node_visits > 0))
    assert np.all(t.node_visits[:kept] >= new.node_visits[:kept])
    # The root value is the old mean updated by the N new returns.
    assert abs(float(again.value)) <= 1.0


def test_unexpanded_move_starts_fresh():
    env = c4.env_reset()
    out = search(0, env, n=3)
    visited = np.asarray(out.search_tree.children_index[0, 0]) >= 0
    action = int(np.flatnonzero(~visited)[0])  # a move never expanded
    sub = c4jax.get_subtree(out.search_tree, action)
    assert np.all(np.asarray(sub.node_visits) == 0)  # empty, not a corrupted root
    assert np.all(np.asarray(sub.parents) == -1)
    env2 = c4.env_step(env, action)[0]
    reused = search(5, env2, sub)
    fresh = search(5, env2)
    chex.assert_trees_all_equal(reused, fresh)
    # -1 (what a finished game's search returns) also gives an empty subtree.
    assert np.all(np.asarray(c4jax.get_subtree(out.search_tree, -1).node_visits) == 0)


def test_tree_of_another_position_is_not_reused():
    out = search(0, c4.from_moves("4"))
    sub = c4jax.get_subtree(out.search_tree, 3)  # the position after "44"
    other = c4.from_moves("43")
    reused = search(2, other, sub)
    fresh = search(2, other)
    chex.assert_trees_all_equal(reused, fresh)


def test_capacity_reached_during_reuse_loses_no_simulation():
    env = c4.from_moves("33")
    out = search(0, env)
    action = int(out.action)
    sub = c4jax.get_subtree(out.search_tree, action)
    before = int(sub.node_visits[0, 0])
    kept = int(np.sum(np.asarray(sub.node_visits) > 0))
    env2 = c4.env_step(env, action)[0]
    again = search(1, env2, sub)
    t = row(again.search_tree)
    assert kept + N > CAPACITY  # the tree fills up
    assert np.all(t.node_visits > 0)
    assert t.node_visits[0] == before + N
    assert t.children_visits[0].sum() == before - 1 + N
    collecting = (t.children_index == -1) & (t.children_visits > 0)
    assert collecting.any()


def test_finished_root_runs_no_search():
    env = c4.from_moves("121212")
    out = search(0, env)
    assert int(out.action) == 0
    sub = c4jax.get_subtree(out.search_tree, 0)  # X wins: a finished game
    assert bool(sub.embeddings.done[0, 0])
    finished = c4.env_step(env, 0)[0]
    again = search(1, finished, sub)
    assert int(again.action) == -1
    assert np.all(np.asarray(again.visit_counts) == 0)
    assert np.all(np.asarray(again.action_weights) == 0)
    # The kept (finished) node comes back as it was: no simulation was run.
    assert int(sub.node_visits[0, 0]) > 1
    chex.assert_trees_all_equal(again.search_tree, sub)
    # A fresh search of a finished game keeps only the root.
    fresh = row(search(1, finished).search_tree)
    assert fresh.node_visits[0] == 1 and np.all(fresh.node_visits[1:] == 0)


def test_batch_with_a_different_action_per_game():
    envs = stack([ttt.from_moves(""), ttt.from_moves("5"), ttt.from_moves("19")])
    out = c4jax.run_mcts(jax.random.key(0), envs, 120)
    actions = jnp.array([4, 0, 8])  # 8 is occupied in game 2: empty subtree
    sub = c4jax.get_subtree(out.search_tree, actions)
    for b, a in enumerate(actions.tolist()):
        old, new = row(out.search_tree, b), row(sub, b)
        child = old.children_index[0, a]
        if child < 0:
            assert np.all(new.node_visits == 0)
        else:
            assert_subtree_equal(old, new, child)
    with pytest.raises(ValueError, match="shape"):
        c4jax.get_subtree(out.search_tree, jnp.array([1, 2]))


def test_a_game_played_with_reuse_compiles_once():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def reuse_step(key, env, tree):
        out = c4jax.run_mcts(key, env, N, tree=tree)
        next_env = c4.env_step(env, out.action)[0]
        return next_env, c4jax.get_subtree(out.search_tree, out.action), out

    env = c4.env_reset()
    first = search(0, env)
    tree = c4jax.get_subtree(first.search_tree, first.action)
    env = c4.env_step(env, first.action)[0]
    for move in range(6):
        previous_root_visits = int(tree.node_visits[0, 0])
        env, tree_next, out = reuse_step(jax.random.key(move + 1), env, tree)
        assert int(out.search_tree.node_visits[0, 0]) == max(previous_root_visits, 1) + N
        tree = tree_next


def test_gumbel_refuses_a_reused_tree():
    out = search(0, c4.env_reset())
    sub = c4jax.get_subtree(out.search_tree, 3)
    with pytest.raises(ValueError, match="gumbel"):
        c4jax.run_mcts(jax.random.key(0), c4.from_moves("4"), 20, tree=sub, selection="gumbel")
    with pytest.raises(ValueError, match="capacity"):
        c4jax.run_mcts(jax.random.key(0), c4.from_moves("4"), 20, tree=sub, capacity=99)
    with pytest.raises(ValueError, match="another game"):
        c4jax.run_mcts(jax.random.key(0), c4.make(6, 8, 4).env_reset(), 20, tree=sub)
