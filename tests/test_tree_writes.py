"""``c4jax.search.tree.write``: the tree's writes without scatters (so that
XLA's CPU compiler runs the loop over simulations as one kernel) do what
``x.at[index].set/add(v, mode="drop")`` does, eagerly, under ``jit`` and
under ``vmap``; the scatters other platforms get do the same."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import c4jax
from c4jax.games import connect4 as c4
from c4jax.search import tree as tree_mod
from c4jax.search.tree import write
from marks import slow_unless

N, A, S = 9, 3, 5


def _reference(arrays, index, values, adds):
    index = index if isinstance(index, tuple) else (index,)
    index = tuple(np.where(np.asarray(i) < 0, n, i) for i, n in zip(index, arrays[0].shape))
    return [x.at[index].add(v, mode="drop") if add else x.at[index].set(v, mode="drop")
            for x, v, add in zip(arrays, values, adds)]


def _path(rng, length):
    """A path: ``length`` distinct nodes, then ``N`` (out of range)."""
    nodes = np.full(S, N, np.int32)
    nodes[:length] = rng.choice(N, length, replace=False)
    return nodes


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_a_write_is_the_scatter_it_replaces(mode):
    rng = np.random.default_rng(0)
    fn = write if mode == "eager" else jax.jit(write, static_argnames=("adds", "prefix"))
    for _ in range(40):
        x = jnp.asarray(rng.normal(size=N).astype(np.float32))
        y = jnp.asarray(rng.integers(0, 9, (N, A)).astype(np.int32))
        z = jnp.asarray(rng.normal(size=(N, A)).astype(np.float32))
        path = jnp.asarray(_path(rng, rng.integers(0, S + 1)))
        actions = jnp.asarray(rng.integers(0, A, S).astype(np.int32))
        v = jnp.asarray(rng.normal(size=S).astype(np.float32))
        row = jnp.asarray(rng.normal(size=A).astype(np.float32))
        node = jnp.int32(rng.integers(-1, N + 2))
        # A path of nodes: a visit added and a value set at each.
        got = fn([z, y], (path, actions), [v, 1], adds=(False, True), prefix=True)
        chex.assert_trees_all_equal(got, _reference([z, y], (path, actions), [v, 1], (False, True)))
        got = fn([x], path, [v], prefix=True)
        np.testing.assert_array_equal(got[0], _reference([x], path, [v], (False,))[0])
        # One node's row; an index out of range (or negative) writes nothing.
        got = fn([z, x], node, [row, 2.0])
        chex.assert_trees_all_equal(got, _reference([z, x], node, [row, 2.0], (False, False)))
        # Entries that are not a path: every one in range is written.
        lanes = jnp.asarray(rng.integers(-1, N + 1, 4).astype(np.int32))
        got = fn([x], lanes, [v[:4]], adds=(True,))
        np.testing.assert_array_equal(got[0], _reference([x], lanes, [v[:4]], (True,))[0])


def test_a_batch_writes_each_game_as_alone():
    rng = np.random.default_rng(1)
    B = 5
    xs = jnp.asarray(rng.normal(size=(B, N)).astype(np.float32))
    ys = jnp.asarray(rng.integers(0, 9, (B, N, A)).astype(np.int32))
    paths = jnp.asarray(np.stack([_path(rng, length) for length in (0, 1, 3, S, 2)])[:, None])  # [B, K=1, S]
    actions = jnp.asarray(rng.integers(0, A, (B, 1, S)).astype(np.int32))
    v = jnp.asarray(rng.normal(size=(B, 1, S)).astype(np.float32))

    def one(x, y, p, a, v):
        return write([x, y], (p, a), [v, 1], adds=(False, True), prefix=True)

    zs = jnp.asarray(rng.normal(size=(B, N, A)).astype(np.float32))
    got = jax.jit(jax.vmap(one))(zs, ys, paths, actions, v)
    want = [jnp.stack(w) for w in zip(*[_reference([zs[b], ys[b]], (paths[b], actions[b]), [v[b], 1], (False, True))
                                         for b in range(B)])]
    chex.assert_trees_all_equal(got, want)
    # An unbatched array or index is broadcast over the games.
    got = jax.vmap(lambda i: write([xs[0]], i, [7.0])[0])(jnp.array([0, 3, N, -1, 8]))
    np.testing.assert_array_equal(got[:, 0], [7.0, xs[0, 0], xs[0, 0], xs[0, 0], xs[0, 0]])
    np.testing.assert_array_equal(got[1, 3], 7.0)


@pytest.mark.parametrize("batch", slow_unless([1, 3], lambda batch: batch == 1))
def test_the_search_with_scatter_writes_grows_the_same_tree(monkeypatch, batch):
    """The writes GPUs and TPUs get (scatters) and the CPU's give the same
    trees, for one game and for a vectorised batch."""
    envs = jax.tree.map(lambda x: jnp.stack([x] * batch), c4.from_moves("4453"))
    keys = jax.random.split(jax.random.key(3), batch)

    def search():
        fn = jax.jit(jax.vmap(lambda k, e: c4jax.run_mcts(k, e, 60, lanes=2 if batch == 1 else 1).search_tree))
        return jax.device_get(fn(keys, envs))

    cpu = search()
    monkeypatch.setattr(tree_mod, "SCATTER_FREE_PLATFORMS", ())
    scattered = search()
    assert int(np.asarray(cpu.node_visits)[..., 0].min()) == 61
    chex.assert_trees_all_equal(cpu, scattered)
