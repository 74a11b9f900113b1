"""How far a proven result is: the solver's plies against an exact
tic-tac-toe negamax with depth (written here) and Pascal Pons' perfect-play
scores; the fastest proven win and the slowest proven loss at the root."""

from __future__ import annotations

import functools
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import c4jax
from c4jax.games import connect4 as c4
from c4jax.games import tictactoe as ttt

DATA = pathlib.Path(c4jax.__file__).parent / "data" / "connect4_positions.jsonl"
LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def _won(cells, p) -> bool:
    return any(all(cells[i] == p for i in line) for line in LINES)


@functools.cache
def _negamax(cells: tuple) -> tuple[int, int]:
    """(value, plies) for the player to move under perfect play: a winner
    takes the fastest win, a loser the slowest loss (plies to the end of the
    game; 0 for a draw's plies is not used)."""
    mover = 1 if cells.count(1) == cells.count(2) else 2
    best = None
    for i in range(9):
        if cells[i]:
            continue
        nxt = cells[:i] + (mover,) + cells[i + 1:]
        if _won(nxt, mover):
            result = (1, 1)
        elif all(nxt):
            result = (0, 1)
        else:
            v, d = _negamax(nxt)
            result = (-v, d + 1)
        # Prefer higher value; among wins fewer plies, among losses more.
        key = (result[0], -result[1] if result[0] > 0 else result[1])
        if best is None or key > best[0]:
            best = (key, result)
    return best[1]


def _cells(stones) -> tuple:
    x, o = int(stones[0, 0]), int(stones[1, 0])
    return tuple(1 if x >> i & 1 else 2 if o >> i & 1 else 0 for i in range(9))


def _edge_result(cells, a) -> tuple[int, int]:
    mover = 1 if cells.count(1) == cells.count(2) else 2
    nxt = cells[:a] + (mover,) + cells[a + 1:]
    if _won(nxt, mover):
        return 1, 1
    if all(nxt):
        return 0, 1
    v, d = _negamax(nxt)
    return -v, d + 1


def test_hand_made_win_in_one_and_losses_in_two():
    # X (cells 1, 2) to move: 3 wins now; O (4, 5) threatens 6, so every X
    # move but 3 and the block at 6 loses in two plies.
    out = c4jax.run_mcts(jax.random.key(0), ttt.from_moves("1425"), 200)
    plies = np.asarray(out.proven_plies)
    assert int(out.action) == 2 and plies[2] == 1
    for a in np.flatnonzero(np.asarray(out.qvalue_upper) <= -1.0):
        if a not in (0, 1, 3, 4):  # the occupied cells are illegal (plies 0)
            assert plies[a] == 2, (a, plies)


@pytest.mark.parametrize("moves,n,lanes", [("", 3000, 1), ("15", 1500, 8)])
def test_plies_of_every_proven_node_bound_the_exact_distance(moves, n, lanes):
    out = c4jax.run_mcts(jax.random.key(1), ttt.from_moves(moves), n, lanes=lanes)
    t = jax.tree.map(lambda x: np.asarray(x[0]), out.search_tree)
    used = np.flatnonzero(t.node_visits > 0)
    decided = exact = 0
    for i in used:
        lo, hi, plies = t.extra_data.value_lower[i], t.extra_data.value_upper[i], t.extra_data.value_plies[i]
        if t.embeddings.done[i] or not (lo >= 1.0 or hi <= -1.0):
            assert plies == 0
            continue
        value, true = _negamax(_cells(t.embeddings.stones[i]))
        assert value == (1 if lo >= 1.0 else -1)
        # A proof of a win (loss) in `plies` is a forced win within that many
        # plies (a loss no slower): never fewer plies than perfect play.
        assert plies >= true, (i, plies, true)
        decided += 1
        exact += plies == true
    assert decided > 50 and exact / decided > 0.8, (decided, exact)


def test_the_fastest_proven_win_and_the_slowest_proven_loss_are_played():
    # 64 searches of positions with wins of several lengths or only losses.
    positions = ["1", "15", "159", "12", "124", "5136"]
    envs = jax.tree.map(lambda *x: jnp.stack(x), *[ttt.from_moves(m) for m in positions for _ in range(8)])
    out = c4jax.run_mcts(jax.random.key(2), envs, 3000)
    checked = 0
    for b, a in enumerate(np.asarray(out.action)):
        cells = _cells(np.asarray(envs.stones[b]))
        lo, hi = float(out.search_tree.extra_data.value_lower[b, 0]), float(out.search_tree.extra_data.value_upper[b, 0])
        if not (lo >= 1.0 or hi <= -1.0):
            continue  # the root is not proven won or lost
        value, true = _negamax(cells)
        assert _edge_result(cells, int(a)) == (value, true), (positions[b // 8], a, value, true)
        checked += 1
    assert checked >= 24, checked


@pytest.mark.slow
def test_pons_end_easy_positions_strictly_optimal_and_plies_sound():
    # Pons' score of a move: the winner wins with its (22 - |score|)-th stone.
    recs = [json.loads(line) for line in DATA.read_text().splitlines()]
    recs = [r for r in recs if r["kind"] == "testset" and r["difficulty"] == "End-Easy"]
    envs = jax.tree.map(lambda *x: jnp.stack(x), *[c4.from_moves(r["moves"]) for r in recs])
    out = c4jax.run_mcts(jax.random.key(0), envs, 2000)
    actions, plies = np.asarray(out.action), np.asarray(out.proven_plies)
    optimal = [r["scores"][a] == r["score"] for r, a in zip(recs, actions)]
    # Measured: 100 of 100 (96 of 100 when the proofs carry no ply count).
    assert np.mean(optimal) >= 0.99, [r["moves"] for r, ok in zip(recs, optimal) if not ok]
    exact = proven = 0
    for r, p in zip(recs, plies):
        mine, theirs = r["ply"] // 2, r["ply"] - r["ply"] // 2
        for a, score in enumerate(r["scores"]):
            if score is None or p[a] == 0 or score == 0:
                continue
            true = 2 * (22 - score - mine) - 1 if score > 0 else 2 * (22 + score - theirs)
            assert p[a] >= true, (r["moves"], a, p[a], true)
            proven += 1
            exact += p[a] == true
    assert proven > 200 and exact / proven > 0.95, (proven, exact)
