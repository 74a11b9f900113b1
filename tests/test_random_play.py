"""Random-play statistics against known answers, within 4 standard errors.

* Connect 4 (7x6), both players uniformly random (20 million games, the
  project's notes): first player wins 0.5557, second 0.4417, draw 0.0026; mean
  length 21.31 plies.
* Tic-tac-toe, uniformly random: X wins 737/1260, O 121/420, draw 8/63 (exact);
  recomputed here by enumeration with the reference rules, which also give the
  exact mean length and the exact outcome of the win-else-block heuristic.

``rollout`` only returns the result, so the game lengths come from a separate
jitted ``lax.scan`` player built on ``env_step`` with ``jax.random`` (an
independent random generator); its outcomes are checked too.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import jax
import jax.numpy as jnp
import pytest

from c4jax.games import connect4, tictactoe
from c4jax.search.values import rollout_function

from reference_games import Connect4Ref, TicTacToeRef

pytestmark = [pytest.mark.slow, pytest.mark.optimized]

# Connect 4 (7x6), 20 million random games; quoted to 4 decimals (2 for the length).
C4_REF_GAMES = 20_000_000
C4_FIRST, C4_SECOND, C4_DRAW, C4_MEAN_PLIES = 0.5557, 0.4417, 0.0026, 21.31


def assert_close_freq(count: int, n: int, p: float, what: str, ref_games=None, rounding=0.0):
    """``count / n`` is ``p`` within 4 standard errors (plus the reference's own
    sampling error and rounding, when ``p`` is itself an estimate)."""
    var = p * (1 - p) * (1 / n + (1 / ref_games if ref_games else 0.0))
    tol = 4 * math.sqrt(var) + rounding
    got = count / n
    assert abs(got - p) <= tol, f"{what}: {got:.5f} vs {p:.5f} (tolerance {tol:.5f}, n={n})"


@functools.lru_cache(maxsize=None)
def rollout_counts_fn(game, n_chunks: int, chunk: int, policy: str):
    """``jit``: ``(key, env) -> [wins, losses, draws]`` of ``n_chunks * chunk``
    rollouts of ``policy`` (a ``rollout_policy``) from ``env``, for the player
    to move there."""
    fn = rollout_function(game, policy)

    def counts(key, env):
        keys = jax.random.split(key, n_chunks * chunk).reshape(n_chunks, chunk)

        def one_chunk(ks):
            v = jax.vmap(fn, in_axes=(0, None))(ks, env)
            return jnp.stack([jnp.sum(v == 1), jnp.sum(v == -1), jnp.sum(v == 0), v.size])

        return jnp.sum(jax.lax.map(one_chunk, keys), axis=0)

    return jax.jit(counts)


def rollout_counts(game, env, n: int, key: int, policy="uniform", chunk=250_000):
    chunk = min(chunk, n)
    assert n % chunk == 0
    c = rollout_counts_fn(game, n // chunk, chunk, policy)(jax.random.key(key), env)
    wins, losses, draws, total = (int(x) for x in c)
    assert total == n and wins + losses + draws == n  # every result is -1, 0 or +1
    return wins, losses, draws


@functools.lru_cache(maxsize=None)
def scan_player(game, n: int):
    """``jit``: ``key -> (plies, winner)`` of ``n`` uniformly random games played
    with ``env_step`` in a ``lax.scan`` (choices by ``jax.random.categorical``)."""
    step = jax.vmap(game.env_step)
    legal = jax.vmap(game.legal_action_mask)

    def play(key):
        envs = jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), game.env_reset())

        def body(envs, k):
            mask = legal(envs)
            a = jax.random.categorical(k, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)
            a = jnp.where(envs.done, 0, a)
            return step(envs, a)[0], None

        envs, _ = jax.lax.scan(body, envs, jax.random.split(key, game.max_plies))
        return envs.ply, envs.winner, envs.done

    return jax.jit(play)


# --- Connect 4 -----------------------------------------------------------------------


def test_connect4_random_rollout_outcomes():
    game = connect4.make()
    n = 1_000_000  # 4 standard errors: +-0.2% on the first player's 55.6%
    first, second, draw = rollout_counts(game, game.env_reset(), n, key=2024)
    assert_close_freq(first, n, C4_FIRST, "first player wins", C4_REF_GAMES, 5e-5)
    assert_close_freq(second, n, C4_SECOND, "second player wins", C4_REF_GAMES, 5e-5)
    assert_close_freq(draw, n, C4_DRAW, "draws", C4_REF_GAMES, 5e-5)


def test_connect4_random_game_length_and_outcomes():
    game = connect4.make()
    n = 200_000
    plies, winner, done = jax.device_get(scan_player(game, n)(jax.random.key(7)))
    assert done.all() and plies.min() >= 7 and plies.max() <= 42
    mean, sd = plies.mean(), plies.std()
    tol = 4 * sd * math.sqrt(1 / n + 1 / C4_REF_GAMES) + 0.005
    assert abs(mean - C4_MEAN_PLIES) <= tol, f"mean length {mean:.4f} vs {C4_MEAN_PLIES} (tol {tol:.4f})"
    # The same games, scored: an independent check of the outcome frequencies.
    assert_close_freq(int((winner == 0).sum()), n, C4_FIRST, "first (scan)", C4_REF_GAMES, 5e-5)
    assert_close_freq(int((winner == 1).sum()), n, C4_SECOND, "second (scan)", C4_REF_GAMES, 5e-5)
    assert_close_freq(int((winner == -1).sum()), n, C4_DRAW, "draw (scan)", C4_REF_GAMES, 5e-5)
    # A game's length has the parity of its winner: X wins on odd plies.
    assert (plies[winner == 0] % 2 == 1).all() and (plies[winner == 1] % 2 == 0).all()
    assert (plies[winner == -1] == 42).all()


# --- tic-tac-toe -------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def ttt_exact(moves: str = "", heuristic: bool = False):
    """Exact (P[X wins], P[O wins], P[draw], E[plies played]) by enumeration."""
    ref = TicTacToeRef()
    return ref.exact_playout(ref.play([int(c) - 1 for c in moves]), heuristic)


def test_tictactoe_known_answers_by_enumeration():
    x, o, d, plies = ttt_exact()
    assert (x, o, d) == (Fraction(737, 1260), Fraction(121, 420), Fraction(8, 63))
    assert plies == Fraction(3203, 420)  # 7.626 plies


def test_tictactoe_random_rollout_outcomes():
    game = tictactoe.GAME
    n = 2_000_000
    x, o, d, _ = ttt_exact()
    xw, ow, dr = rollout_counts(game, game.env_reset(), n, key=11)
    for count, p, what in ((xw, x, "X wins"), (ow, o, "O wins"), (dr, d, "draws")):
        assert_close_freq(count, n, float(p), what)


def test_tictactoe_random_game_length():
    game = tictactoe.GAME
    n = 400_000
    plies, winner, done = jax.device_get(scan_player(game, n)(jax.random.key(3)))
    assert done.all()
    x, o, d, mean = ttt_exact()
    assert abs(plies.mean() - float(mean)) <= 4 * plies.std() / math.sqrt(n)
    for who, p, what in ((0, x, "X"), (1, o, "O"), (-1, d, "draw")):
        assert_close_freq(int((winner == who).sum()), n, float(p), what + " (scan)")


# Positions (1-based cells) whose rollout result, for the player to move, is
# compared with the exact distribution: the sign convention matters here.
TTT_POSITIONS = ["5", "51", "159", "1524", "12547"]


@pytest.mark.parametrize("heuristic", [False, True], ids=["random", "heuristic"])
@pytest.mark.parametrize("moves", TTT_POSITIONS)
def test_tictactoe_rollout_from_positions(moves, heuristic):
    game = tictactoe.GAME
    n = 250_000
    x, o, d, _ = ttt_exact(moves, heuristic)
    me, other = (x, o) if len(moves) % 2 == 0 else (o, x)  # who is to move
    wins, losses, draws = rollout_counts(game, game.from_moves(moves), n, key=len(moves),
                                         policy="heuristic" if heuristic else "uniform")
    assert_close_freq(wins, n, float(me), f"{moves}: wins of the player to move")
    assert_close_freq(losses, n, float(other), f"{moves}: losses")
    assert_close_freq(draws, n, float(d), f"{moves}: draws")


def test_tictactoe_heuristic_rollouts_draw_far_more_often():
    """Win-else-block-else-random play against itself, from the empty board.

    The exact outcome, by enumeration of that policy with the reference rules
    (``TicTacToeRef().exact_playout(..., heuristic=True)``): X 1177/3780 =
    0.3114, O 73/420 = 0.1738, draw 139/270 = 0.5148, against 8/63 = 0.1270
    draws for uniformly random play.  The library's heuristic rollouts must
    match it within 4 standard errors, and so draw more than half the time and
    about 4 times as often as random rollouts (exact ratio 4.05; 3.9 leaves
    room for 4 standard errors of both estimates at a million games).
    """
    game = tictactoe.GAME
    n = 1_000_000
    x, o, d, _ = ttt_exact(heuristic=True)
    assert (x, o, d) == (Fraction(1177, 3780), Fraction(73, 420), Fraction(139, 270))
    xw, ow, dr = rollout_counts(game, game.env_reset(), n, key=5, policy="heuristic")
    for count, p, what in ((xw, x, "X wins"), (ow, o, "O wins"), (dr, d, "draws")):
        assert_close_freq(count, n, float(p), "heuristic " + what)
    _, _, random_draws = rollout_counts(game, game.env_reset(), n, key=6)
    assert dr / n > 0.5 and dr > 3.9 * random_draws


# --- a small Connect 4, exactly -------------------------------------------------------


@pytest.mark.parametrize("policy", ["uniform", "heuristic", "threat_aware"])
@pytest.mark.parametrize("shape, moves", [((4, 4, 3), ""), ((4, 4, 3), "23"), ((4, 4, 3), "2332"), ((4, 5, 3), "23")],
                         ids=["4x4-empty", "4x4-23", "4x4-2332", "4x5-23"])
def test_small_connect4_rollouts_match_enumeration(shape, moves, policy):
    """Connect 3 on 4x4 and 4x5: the exact outcome of random, heuristic and
    threat-aware heuristic play by the reference's enumeration, against the
    library's rollouts.  The policies' exact outcomes differ by far more than
    the tolerance (4x4 from the empty board, first player: 0.6232 random,
    0.5921 heuristic, 0.6060 threat-aware; 4x5 after "23": 0.5489 heuristic,
    0.5017 threat-aware)."""
    game = connect4.make(*shape)
    ref = Connect4Ref(*shape)
    state = ref.play([int(c) - 1 for c in moves])
    x, o, d, _ = ref.exact_playout(state, policy != "uniform", policy == "threat_aware", exact=False)
    me, other = (x, o) if len(moves) % 2 == 0 else (o, x)
    n = 500_000
    wins, losses, draws = rollout_counts(game, game.from_moves(moves), n, key=13, policy=policy)
    assert_close_freq(wins, n, float(me), "wins of the player to move")
    assert_close_freq(losses, n, float(other), "losses")
    assert_close_freq(draws, n, float(d), "draws")


def test_threat_aware_rollouts_of_a_game_without_them_are_its_heuristic_rollouts():
    """Tic-tac-toe has no ``threat_aware_rollout`` (no move opens another
    cell): ``rollout_policy="threat_aware"`` plays its heuristic rollout."""
    assert not hasattr(tictactoe.GAME, "threat_aware_rollout")
    assert rollout_function(tictactoe.GAME, "threat_aware") == tictactoe.GAME.heuristic_rollout
    assert rollout_function(connect4.make(), "threat_aware") == connect4.make().threat_aware_rollout
