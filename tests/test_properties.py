"""Property tests: the library against the plain-Python reference rules.

Hypothesis draws move sequences (mostly legal moves, some out-of-range actions,
full columns or occupied cells, and moves after the end of the game); the whole
sequence is played by one jitted ``lax.scan`` per game (compiled once) and every
step is compared with the reference: the board, reward, done, winner, player to
move, ply, last action, legal action mask and winning moves.  ``from_moves`` is
checked against stepping, and its errors name the offending move (or, given
no sequence at all, say what a move list is).
"""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from c4jax.games import connect4, tictactoe

from reference_games import reference_for
from marks import slow_unless

GAMES = [
    ("tictactoe", lambda: tictactoe.GAME),
    ("connect4", lambda: connect4.make()),
    ("c4_4x4_k3", lambda: connect4.make(4, 4, 3)),
    ("c4_4x4_k4", lambda: connect4.make(4, 4, 4)),
    ("c4_5x8_k4", lambda: connect4.make(5, 8, 4)),
    ("c4_6x7_k5", lambda: connect4.make(6, 7, 5)),
    ("c4_32x5_k4", lambda: connect4.make(32, 5, 4)),
    ("c4_7x40_k4", lambda: connect4.make(7, 40, 4)),
    # Around the word boundaries (a column is two uint32 words from 33 rows
    # on; actions up to 64) and the tutorial's boards.
    ("c4_31x7_k4", lambda: connect4.make(31, 7, 4)),
    ("c4_33x7_k4", lambda: connect4.make(33, 7, 4)),
    ("c4_40x7_k4", lambda: connect4.make(40, 7, 4)),
    ("c4_14x20_k4", lambda: connect4.make(14, 20, 4)),
    ("c4_19x15_k4", lambda: connect4.make(19, 15, 4)),
    ("c4_6x63_k4", lambda: connect4.make(6, 63, 4)),
    ("c4_64x64_k4", lambda: connect4.make(64, 64, 4)),
    ("c4_64x3_k3", lambda: connect4.make(64, 3, 3)),
]

# The quick loop's games: both games' usual boards, the smallest board, the
# first board of two words per column and the largest.
QUICK = [f for i, f in GAMES if i in ("tictactoe", "connect4", "c4_4x4_k3", "c4_33x7_k4", "c4_64x64_k4")]

# Reproducible in CI: derandomized, no example database, no deadline (the
# first call of a game compiles).
PROPERTY = settings(
    max_examples=40,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


EXTRA_PLIES = 6  # moves drawn past the longest game: moves after the end
# At most this many moves are drawn per example (a 64x64 game lasts up to
# 4,096 plies, beyond what hypothesis draws at once); boards with more cells
# than that are played part of the way (most end with a line well before).
MAX_DRAWN = 600
# Fewer examples on the boards of over 1,000 cells (each compares up to
# MAX_DRAWN whole boards with the plain-Python reference).
BIG_BOARD = settings(PROPERTY, max_examples=8)


@functools.lru_cache(maxsize=None)
def play_fn(game):
    """``jit``: actions ``int32[L]`` -> every intermediate position and output.

    ``L = max_plies + EXTRA_PLIES``; position 0 is the reset state, position
    ``i + 1`` the state after ``actions[i]``.
    """

    def observe(env):
        return dict(
            board=game.board_array(env),
            to_move=env.to_move,
            ply=env.ply,
            done=env.done,
            winner=env.winner,
            last_action=env.last_action,
            legal=game.legal_action_mask(env),
            wins=game.winning_moves(env),
        )

    def play(actions):
        env0 = game.env_reset()

        def body(env, a):
            new, reward, done = game.env_step(env, a)
            return new, (new, observe(new), reward, done)

        _, (envs, obs, reward, done) = jax.lax.scan(body, env0, actions)
        return env0, observe(env0), envs, obs, reward, done

    return jax.jit(play)


def seq_len(game) -> int:
    return game.max_plies + EXTRA_PLIES


def out_of_range(game, v: int) -> int:
    a = game.num_actions
    return (-1, -2, a, a + 1, a + 100, np.iinfo(np.int32).max, np.iinfo(np.int32).min)[v % 7]


def actions_from_codes(game, codes: list[int]) -> list[int]:
    """Turns hypothesis' integers into actions, using the reference state.

    Most codes pick one of the legal moves (code 0: the first); about one in
    40 is an out-of-range action and one in 40 a full column / occupied cell
    (when there is one).  After the end of the game the codes give arbitrary
    actions.

    The first code also picks how the game is played: half the examples as
    above; a quarter are long games (no illegal move, and no move completes a
    line while another move does not), which fill the board to its top rows
    (the second word of a tall column); a quarter are long games among the
    four leftmost such columns, which pile stones high on wide boards too.
    """
    ref = reference_for(game)
    s, out = ref.reset(), []
    mode = codes[0] % 4 if codes else 0
    for v in codes:
        kind, v = v % 41, v // 41
        legal = ref.legal_moves(s)
        if s.done:
            a = out_of_range(game, v) if v % 2 else v % game.num_actions
        elif kind == 39 and mode < 2:
            a = out_of_range(game, v)
        elif kind == 40 and mode < 2 and not all(legal):
            blocked = [i for i, ok in enumerate(legal) if not ok]
            a = blocked[v % len(blocked)]
        else:
            ok = [i for i, ok in enumerate(legal) if ok]
            if mode >= 2:
                wins = ref.winning_moves(s)
                ok = [i for i in ok if not wins[i]] or ok
                ok = ok[:4] if mode == 3 else ok
            a = ok[v % len(ok)]
        out.append(int(a))
        s = ref.step(s, a)[0]
    return out


def codes_for(game):
    """Codes for a whole game (and a few plies past its end), cut short in some
    examples so that positions in the middle of a game end a sequence too."""
    n = min(seq_len(game), MAX_DRAWN)
    full = st.lists(st.integers(0, 2**20), min_size=n, max_size=n)
    cut = st.one_of(st.just(n), st.integers(0, n))
    return st.tuples(full, cut).map(lambda t: t[0][: t[1]])


def check_against_reference(game, actions: list[int]):
    ref = reference_for(game)
    padded = np.zeros(seq_len(game), np.int32)
    padded[: len(actions)] = actions
    env0, obs0, envs, obs, reward, done = jax.device_get(play_fn(game)(jnp.asarray(padded)))

    def compare(o, i, s, where):
        get = (lambda x: x[i]) if i is not None else (lambda x: x)
        assert get(o["board"]).tolist() == ref.board(s), where
        assert int(get(o["to_move"])) == s.to_move, where
        assert int(get(o["ply"])) == s.ply, where
        assert bool(get(o["done"])) == s.done, where
        assert int(get(o["winner"])) == s.winner, where
        assert int(get(o["last_action"])) == s.last_action, where
        assert get(o["legal"]).tolist() == ref.legal_moves(s), where
        assert get(o["wins"]).tolist() == ref.winning_moves(s), where

    s = ref.reset()
    compare(obs0, None, s, "reset")
    for i, a in enumerate(actions):
        s, r, d = ref.step(s, a)
        where = f"after move {i} ({a}) of {actions}"
        assert float(reward[i]) == r, where
        assert bool(done[i]) == d, where
        compare(obs, i, s, where)
    return envs, s


def _legal_prefix(game, actions):
    """The moves up to (not including) the first illegal move or move after
    the end, as 0-based actions; and the index of that bad move (or None)."""
    ref = reference_for(game)
    s = ref.reset()
    for i, a in enumerate(actions):
        in_range = 0 <= a < game.num_actions
        if s.done or not in_range or not ref.legal_moves(s)[a]:
            return actions[:i], i
        s = ref.step(s, a)[0]
    return list(actions), None


def _check_from_moves(game, actions, envs):
    prefix, bad = _legal_prefix(game, actions)
    moves = [a + 1 for a in prefix]
    if prefix:
        stepped = jax.tree.map(lambda x: x[len(prefix) - 1], envs)
        chex.assert_trees_all_equal(game.from_moves(moves), stepped, strict=True)
        if game.num_actions <= 9:
            text = "".join(str(m) for m in moves)
            chex.assert_trees_all_equal(game.from_moves(text), stepped, strict=True)
    else:
        chex.assert_trees_all_equal(game.from_moves(moves), game.env_reset(), strict=True)
    if bad is not None:
        # Every illegal action (full column, occupied cell, out of range, after
        # the end) is refused by from_moves with the move's number (1-based) in the message.
        with pytest.raises(ValueError, match=rf"\bmove {bad + 1}\b"):  # 1-based
            game.from_moves(moves + [actions[bad] + 1])


@pytest.mark.parametrize("make", slow_unless([f for _, f in GAMES], lambda f: f in QUICK), ids=[i for i, _ in GAMES])
def test_library_agrees_with_reference(make):
    game = make()

    @(BIG_BOARD if game.max_plies > 1000 else PROPERTY)
    @given(codes=codes_for(game))
    def run(codes):
        actions = actions_from_codes(game, codes)
        envs, _ = check_against_reference(game, actions)
        _check_from_moves(game, actions, envs)

    run()


@pytest.mark.parametrize("make", [f for _, f in GAMES[:4]], ids=[i for i, _ in GAMES[:4]])
def test_arbitrary_actions_agree_with_reference(make):
    """Actions drawn without looking at the position: many illegal ones."""
    game = make()
    a = game.num_actions

    @PROPERTY
    @given(actions=st.lists(st.integers(-3, a + 2), max_size=seq_len(game)))
    def run(actions):
        check_against_reference(game, actions)

    run()


def test_the_strategy_covers_every_kind_of_move():
    """The move sequences drawn above reach wins, draws, illegal moves and
    moves after the end, so the properties test all of them."""
    game = connect4.make(4, 4, 4)
    ref = reference_for(game)
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(300):
        codes = rng.integers(0, 2**20, size=seq_len(game)).tolist()
        s = ref.reset()
        for a in actions_from_codes(game, codes):
            was_done = s.done
            s, r, d = ref.step(s, a)
            seen.add("after end" if was_done else {1: "win", -1: "illegal", 0: "draw" if d else "move"}[r])
    assert seen == {"win", "illegal", "draw", "move", "after end"}


# --- from_moves errors -------------------------------------------------------------


def _raises_at(game, moves, index: int):
    with pytest.raises(ValueError, match=rf"\bmove {index + 1}\b") as info:  # 1-based, as players count
        game.from_moves(moves)
    return str(info.value)


@pytest.mark.parametrize(
    "moves, index, words",
    [
        ("44a", 2, "'a'"),
        ("0", 0, "1..7"),
        ("448", 2, "1..7"),
        ("4 4,x", 2, "'x'"),  # spaces and commas are skipped, not counted
        ([4, 4, 0], 2, "1..7"),
        ([4, 8], 1, "1..7"),
        ([-1], 0, "1..7"),
        ([4, 4.0], 1, "int"),
        ([True], 0, "int"),
        ("4444444", 6, "full"),
        ([1, 1, 1, 1, 1, 1, 1], 6, "full"),
        ("44556673", 7, "ended"),  # X wins along the bottom row at move 6
    ],
)
def test_connect4_from_moves_errors(moves, index, words):
    msg = _raises_at(connect4.make(), moves, index)
    assert words in msg


@pytest.mark.parametrize(
    "moves, index, words",
    [
        ("51a", 2, "'a'"),
        ("510", 2, "1..9"),
        ([5, 10], 1, "1..9"),
        ([5, 0], 1, "1..9"),
        ("515", 2, "occupied"),
        ([5, 1, 1], 2, "occupied"),
        ("142537", 5, "ended"),  # X wins with 1-2-3 at move 4
    ],
)
def test_tictactoe_from_moves_errors(moves, index, words):
    msg = _raises_at(tictactoe.GAME, moves, index)
    assert words in msg


@pytest.mark.parametrize("game", [connect4.make(), tictactoe.GAME], ids=["connect4", "tictactoe"])
@pytest.mark.parametrize("moves, field", [(",4,,5,", "field 1 of 5"), ("4,,5", "field 2 of 3"), ("4,", "field 2 of 2"),
                                          (" , 4", "field 1 of 2")])
def test_an_empty_field_between_commas_is_an_error_naming_it(game, moves, field):
    with pytest.raises(ValueError, match=field + " between commas is empty"):
        game.from_moves(moves)
    digits = [c for c in moves if c.isdigit()]
    assert int(game.from_moves(moves.replace(",", "")).ply) == len(digits)  # the same moves without commas


def test_from_moves_wide_board_needs_ints():
    game = connect4.make(7, 40, 4)
    with pytest.raises(ValueError, match="sequence of ints"):
        game.from_moves("123")
    env = game.from_moves([40, 40, 12])
    assert int(env.ply) == 3 and int(env.last_action) == 11
    with pytest.raises(ValueError, match=r"\bmove 2\b.*1\.\.40"):
        game.from_moves([40, 41])
    # Strings are fine for up to 9 columns, and "8" is not a column of 7.
    chex.assert_trees_all_equal(
        connect4.make(5, 8, 4).from_moves("818"), connect4.make(5, 8, 4).from_moves([8, 1, 8])
    )


@pytest.mark.parametrize("moves", [None, 5, 2.5])
@pytest.mark.parametrize("game", [connect4, tictactoe], ids=["connect4", "tictactoe"])
def test_from_moves_of_no_sequence_is_a_value_error(game, moves):
    # None or a single number is no move list: a ValueError saying what a
    # move list is, not an error from iterating over it.
    with pytest.raises(ValueError, match="moves must be a string of digits or a sequence of ints; got"):
        game.from_moves(moves)
    assert int(game.from_moves((1, 2)).ply) == int(game.from_moves([1, 2]).ply) == 2  # sequences still work


def test_from_moves_accepts_numpy_ints():
    chex.assert_trees_all_equal(
        connect4.from_moves(np.array([4, 4, 3], np.int64)), connect4.from_moves("443"), strict=True
    )
    chex.assert_trees_all_equal(
        tictactoe.from_moves([np.int32(5), np.int8(1)]), tictactoe.from_moves("51"), strict=True
    )
