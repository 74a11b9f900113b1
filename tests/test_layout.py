"""The layout of a batch on a CPU device (c4jax.search.programs.in_blocks):
blocks of games one after another give what the function gives on the whole
batch, padded or not, with an argument updated in place or not; and the
search's trees do not depend on the block size (that a continued search of a
batch copies no tree buffer: tests/test_search_cost.py)."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import c4jax
from c4jax.games import tictactoe as ttt
from c4jax.search import programs


def _step(counts, scale, table):
    """A per-game function of three arguments: ``(table updated, total)``;
    row-wise, so its value on a batch is its value row by row."""
    total = jnp.sum(table * scale[:, None], axis=1) + counts
    return table.at[:, 0].add(counts), total


@pytest.mark.parametrize("games,block", [(6, 1), (6, 2), (7, 3), (5, 8)])
@pytest.mark.parametrize("inout", [None, (2, 0)])
def test_blocks_of_games_give_the_whole_batchs_result(monkeypatch, games, block, inout):
    monkeypatch.setattr(programs, "BLOCK", block)
    counts = jnp.arange(games, dtype=jnp.int32)
    scale = jnp.arange(games, dtype=jnp.int32) * 3 - 4
    table = jnp.arange(games * 4, dtype=jnp.int32).reshape(games, 4)
    want = _step(counts, scale, table)
    got = jax.jit(programs.in_blocks(_step, games, "cpu", inout))(counts, scale, table)
    chex.assert_trees_all_equal(got, want)


def test_the_search_of_a_batch_does_not_depend_on_its_block_size(monkeypatch):
    # Blocks of 2 and of 3 games (5 games: padded to 6 either way), each
    # against the one-game blocks' search, computed once.  Tic-tac-toe: the
    # layout is the same for every game, and its programs compile faster.
    envs = jax.tree.map(lambda *x: jnp.stack(x), *[ttt.from_moves(m) for m in ("", "5", "15", "159", "12")])
    keys = jax.random.split(jax.random.key(3), 5)
    tree = c4jax.empty_tree(envs, 80)
    want = c4jax.run_mcts(keys, envs, 40, tree=tree)
    for block in (2, 3):
        monkeypatch.setattr(programs, "BLOCK", block)
        c4jax.clear_compiled()
        got = c4jax.run_mcts(keys, envs, 40, tree=tree)
        c4jax.clear_compiled()
        chex.assert_trees_all_equal(got, want)
