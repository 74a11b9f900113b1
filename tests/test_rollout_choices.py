"""The moves a heuristic rollout's ply picks among, and the move it picks,
against the reference rules: the rule on packed words (up to
``WORD_ACTIONS`` moves) and on boolean masks (wider boards) choose the same
moves as ``reference_games``' win-else-block(-else-threat-aware) policy, and
the population-count pick is ``pick_uniform``'s pick."""

from __future__ import annotations

import random

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from c4jax.games import connect4, tictactoe
from c4jax.games.rollout import (WORD_ACTIONS, from_bits, heuristic_choices, pick_uniform, pick_uniform_word,
                                 to_bits)

from reference_games import Connect4Ref, TicTacToeRef


def _random_positions(ref, count: int, seed: int) -> list[list[int]]:
    """``count`` move lists of unfinished games, each played by uniformly
    random legal moves for a random number of plies."""
    rng = random.Random(seed)
    games = []
    while len(games) < count:
        state, moves = ref.reset(), []
        for _ in range(rng.randrange(ref.max_plies)):
            legal = [a for a, ok in enumerate(ref.legal_moves(state)) if ok]
            action = rng.choice(legal)
            nxt, _, done = ref.step(state, action)
            if done:
                break
            state, moves = nxt, moves + [action]
        games.append(moves)
    return games


def _choices(game, envs, threat_aware: bool, word: bool = False):
    """``heuristic_choices`` of each game of ``envs``, with the hooks the
    game's rollouts pass to ``playout``."""
    if isinstance(game, connect4.Connect4):
        stones, hooks = (lambda env: env.stones), {"wins": game._wins}
        if threat_aware:
            hooks["wins_and_opens"] = game._wins_and_opens
    else:  # tic-tac-toe: one word per player
        stones, hooks = (lambda env: env.stones[:, 0]), {"wins": lambda x, occ: game._cells(game._threats(x, occ))}

    def one(env):
        words = stones(env)
        mine = jnp.where(env.to_move == 0, words[0], words[1])
        return heuristic_choices(mine, words[0] | words[1], game.legal_action_mask(env), word=word, **hooks)

    return jax.jit(jax.vmap(one))(envs)


@pytest.mark.parametrize("threat_aware", [False, True], ids=["heuristic", "threat_aware"])
@pytest.mark.parametrize("shape", [(6, 7, 4), (4, 5, 3), (33, 7, 4), (7, 40, 5), (3, 33, 3)],
                         ids=["7x6", "5x4-connect3", "7x33-two-words", "40x7-wider-than-a-word", "33x3"])
def test_connect4_rollout_choices_are_the_reference_policys(shape, threat_aware):
    rows, cols, k = shape
    game, ref = connect4.make(rows, cols, k), Connect4Ref(rows, cols, k)
    positions = _random_positions(ref, 64, seed=rows * 100 + cols)
    envs = jax.tree.map(lambda *xs: jnp.stack(xs), *[game.from_moves([a + 1 for a in m]) for m in positions])
    got = np.asarray(_choices(game, envs, threat_aware))
    assert got.shape == (len(positions), cols)
    for moves, row in zip(positions, got):
        expected = ref.heuristic_choices(ref.play(moves), threat_aware)
        assert np.flatnonzero(row).tolist() == expected, moves
    if cols <= WORD_ACTIONS:
        words = _choices(game, envs, threat_aware, word=True)
        assert words.dtype == jnp.uint32
        np.testing.assert_array_equal(jax.vmap(lambda w: from_bits(w, cols))(words), got)
        np.testing.assert_array_equal(to_bits(jnp.asarray(got)), words)
    else:
        with pytest.raises(ValueError, match=f"a set of {cols} moves is not one word"):
            _choices(game, envs, threat_aware, word=True)


def test_tictactoe_rollout_choices_are_the_reference_policys():
    game, ref = tictactoe.GAME, TicTacToeRef()
    positions = _random_positions(ref, 64, seed=9)
    envs = jax.tree.map(lambda *xs: jnp.stack(xs), *[game.from_moves([a + 1 for a in m]) for m in positions])
    got = np.asarray(_choices(game, envs, threat_aware=False))
    for moves, row in zip(positions, got):
        assert np.flatnonzero(row).tolist() == ref.heuristic_choices(ref.play(moves)), moves


def test_the_population_count_pick_is_pick_uniforms():
    rng = np.random.default_rng(0)
    for num_actions in (1, 7, 9, 31, 32):
        masks = rng.random((512, num_actions)) < rng.random((512, 1))
        masks[:, 0] |= ~masks.any(axis=1)  # at least one move
        bits = jnp.asarray(rng.integers(0, 2**32, 512, dtype=np.uint64).astype(np.uint32))
        words = to_bits(jnp.asarray(masks))
        by_count = jax.vmap(pick_uniform_word, in_axes=(0, None, 0))(words, num_actions, bits)
        by_sum = jax.vmap(pick_uniform)(jnp.asarray(masks), bits)
        np.testing.assert_array_equal(by_count, by_sum)
        assert (np.asarray(by_count).sum(axis=1) == 1).all()
    # The extremes of the random bits pick the first and the last move.
    full = to_bits(jnp.ones(32, bool))
    assert int(jnp.argmax(pick_uniform_word(full, 32, jnp.uint32(0)))) == 0
    assert int(jnp.argmax(pick_uniform_word(full, 32, jnp.uint32(2**32 - 1)))) == 31


def _reference_rule(win, block, legal, opens_theirs, opens_mine):
    """``reference_games``' policy on given sets of moves (Python sets)."""
    if win:
        return win
    if block:
        return block
    moves = legal
    for avoid in (opens_theirs, opens_mine):
        kept = moves - avoid
        if not kept:
            break
        moves = kept
    return moves


@pytest.mark.parametrize("num_actions", [7, 16])
def test_the_rule_on_words_is_the_reference_rule_on_any_sets(num_actions):
    """Sets of moves drawn at random, of every density, empty ones included
    (positions where every move opens a line cell are rare in games): the
    hooks read each side's winning moves from bits 0-15 of its stones and the
    moves that open a cell from bits 16-31."""
    rng = np.random.default_rng(num_actions)
    n = 4000
    density = rng.choice([0.0, 0.1, 0.3, 0.7, 1.0], (n, 5))
    sets = rng.random((n, 5, num_actions)) < density[..., None]
    sets[:, 2, 0] |= ~sets[:, 2].any(axis=1)  # at least one legal move
    win, block, legal, opens_theirs, opens_mine = (sets[:, i] for i in range(5))
    bit = 1 << np.arange(num_actions, dtype=np.uint64)
    word = lambda m: (m * bit).sum(axis=1).astype(np.uint32)  # noqa: E731
    mine = word(win) | (word(opens_mine) << 16)
    theirs = word(block) | (word(opens_theirs) << 16)
    shifts = jnp.arange(num_actions, dtype=jnp.uint32)

    def wins_and_opens(x, occupied):
        return (x >> shifts) & 1 == 1, (x >> (shifts + 16)) & 1 == 1

    def one(m, t, lg):
        return heuristic_choices(m, m ^ t, lg, wins=None, wins_and_opens=wins_and_opens)

    got = np.asarray(jax.jit(jax.vmap(one))(jnp.asarray(mine), jnp.asarray(theirs), jnp.asarray(legal)))
    as_set = lambda row: set(np.flatnonzero(row).tolist())  # noqa: E731
    for i in range(n):
        expected = _reference_rule(*(as_set(s[i]) for s in (win, block, legal, opens_theirs, opens_mine)))
        assert as_set(got[i]) == expected, [np.flatnonzero(s[i]).tolist() for s in sets.transpose(1, 0, 2)]
