"""The shared harness every game and board size runs (after pgx's ``api_test``).

For each game: the dtypes and shapes of every :class:`~c4jax.games.env.Env` field
and of every function's output; eager and ``jax.jit`` give the same results;
each row of a ``jax.vmap`` batch equals the one-game result; many random games
played to the end under one jitted ``lax.scan`` keep the end-of-game
invariants; rollouts are in {-1, 0, 1} and deterministic for a key; ``render``
draws one game and refuses a batch.
"""

from __future__ import annotations

import dataclasses
import functools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from rich.text import Text

from c4jax.games import connect4, tictactoe
from c4jax.games.env import Env
from c4jax.present.boards import render, render_rich

from reference_games import MARKS, RefState, reference_for
from marks import slow_unless

# (id, factory): factories, so that no game work happens at import time.
GAMES = [
    ("tictactoe", lambda: tictactoe.GAME),
    ("connect4", lambda: connect4.make()),
    ("c4_4x4_k3", lambda: connect4.make(4, 4, 3)),
    ("c4_4x4_k4", lambda: connect4.make(4, 4, 4)),
    ("c4_5x8_k4", lambda: connect4.make(5, 8, 4)),
    ("c4_6x7_k5", lambda: connect4.make(6, 7, 5)),
    ("c4_20x14_k4", lambda: connect4.make(20, 14, 4)),
    ("c4_7x40_k4", lambda: connect4.make(7, 40, 4)),
    ("c4_14x20_k6", lambda: connect4.make(14, 20, 6)),
    ("c4_32x5_k4", lambda: connect4.make(32, 5, 4)),
    # Two uint32 words per column (33..64 rows): the first such board and the largest.
    ("c4_33x7_k4", lambda: connect4.make(33, 7, 4)),
    ("c4_64x64_k4", lambda: connect4.make(64, 64, 4)),
]


# The quick loop's games: both games' usual boards, the smallest board, the
# first board of two words per column and the largest.
QUICK = [f for i, f in GAMES if i in ("tictactoe", "connect4", "c4_4x4_k3", "c4_33x7_k4", "c4_64x64_k4")]


@pytest.fixture(params=slow_unless([f for _, f in GAMES], lambda f: f in QUICK), ids=[i for i, _ in GAMES])
def game(request):
    return request.param()


def words(game) -> int:
    """Words per player in ``Env.stones``: a column each (two above 32 rows),
    or one 9-bit mask."""
    if game.name == "tictactoe":
        return 1
    return game.cols * (1 if game.rows <= 32 else 2)


def batch(env: Env, n: int) -> Env:
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), env)


def row(tree, i: int):
    return jax.tree.map(lambda x: x[i], tree)


def popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of a ``uint32`` array, summed over its last axis (bytes
    unpacked: no 32-fold copy of a 64x64 board's trajectory)."""
    x = np.ascontiguousarray(x, np.uint32)
    bits = np.unpackbits(x.view(np.uint8), axis=-1)
    return bits.sum(axis=-1, dtype=np.int64)


def grid_from_stones(game, stones: np.ndarray):
    """The reference grid (row 0 = top, ``"X"``/``"O"``/None) of one game's
    ``Env.stones``, decoded here from the documented bit layout."""
    rows, cols = game.rows, game.cols
    grid = [[None] * cols for _ in range(rows)]
    for p in (0, 1):
        for r in range(rows):
            for c in range(cols):
                if game.name == "tictactoe":
                    bit = (int(stones[p, 0]) >> (3 * r + c)) & 1
                else:  # bit ``h`` of column word ``c`` is the row ``h`` from the
                    # bottom; rows 32.. are in word ``cols + c`` (two-word columns)
                    word, h = divmod(rows - 1 - r, 32)
                    bit = (int(stones[p, word * cols + c]) >> h) & 1
                if bit:
                    assert grid[r][c] is None
                    grid[r][c] = MARKS[p]
    return tuple(tuple(r) for r in grid)


# --- jitted functions, built once per game ---------------------------------------


@functools.lru_cache(maxsize=None)
def jitted(game):
    """One-game functions under ``jax.jit`` (compiled once per game)."""
    return dict(
        step=jax.jit(game.env_step),
        legal=jax.jit(game.legal_action_mask),
        wins=jax.jit(game.winning_moves),
        board=jax.jit(game.board_array),
        rollout=jax.jit(game.rollout),
        heuristic=jax.jit(game.heuristic_rollout),
    )


@functools.lru_cache(maxsize=None)
def batched(game):
    """``jit(vmap(...))`` of every game function."""
    return dict(
        step=jax.jit(jax.vmap(game.env_step)),
        legal=jax.jit(jax.vmap(game.legal_action_mask)),
        wins=jax.jit(jax.vmap(game.winning_moves)),
        board=jax.jit(jax.vmap(game.board_array)),
        rollout=jax.jit(jax.vmap(game.rollout)),
        heuristic=jax.jit(jax.vmap(game.heuristic_rollout)),
    )


@functools.lru_cache(maxsize=None)
def random_play(game, n_games: int, n_steps: int):
    """A jitted player of ``n_games`` uniformly random games for ``n_steps`` plies.

    Returns ``f(key) -> trajectory`` with a leading time axis ``[n_steps, n_games]``:
    the env after each step, the action, reward, done, legal action mask and
    winning moves of the new env.  Finished games keep being stepped (with
    action 0), which must change nothing.
    """
    step = jax.vmap(game.env_step)
    legal = jax.vmap(game.legal_action_mask)
    wins = jax.vmap(game.winning_moves)

    def play(key):
        envs = batch(game.env_reset(), n_games)

        def body(envs, k):
            mask = legal(envs)
            u = jax.random.uniform(k, mask.shape)
            action = jnp.argmax(jnp.where(mask, u, -1.0), axis=-1).astype(jnp.int32)
            new, reward, done = step(envs, action)
            return new, (new, action, reward, done, legal(new), wins(new))

        return jax.lax.scan(body, envs, jax.random.split(key, n_steps))[1]

    return jax.jit(play)


def n_random_games(game) -> int:
    if game.max_plies <= 42:
        return 512
    return 64 if game.max_plies <= 1000 else 16  # 64x64: 16 games of up to 4,098 plies


@functools.lru_cache(maxsize=None)
def trajectory(game):
    """Random games played to the end (and two plies past it), on the host."""
    n = n_random_games(game)
    return jax.device_get(random_play(game, n, game.max_plies + 2)(jax.random.key(42)))


# --- dtypes and shapes -----------------------------------------------------------


def test_static_facts(game):
    ref = reference_for(game)
    assert game.num_actions == ref.num_actions
    assert game.max_plies == ref.max_plies
    assert isinstance(game.name, str) and game.name in ("connect4", "tictactoe")
    hash(game)  # static pytree metadata must be hashable
    assert game == type(game)(*(() if game.name == "tictactoe" else (game.rows, game.cols, game.connect)))


FIELDS = ("stones", "to_move", "ply", "done", "winner", "last_action")


def expected_fields(game, batch_shape=()):
    scalar = lambda dtype: (batch_shape, dtype)  # noqa: E731
    return dict(
        stones=(batch_shape + (2, words(game)), jnp.uint32),
        to_move=scalar(jnp.int32),
        ply=scalar(jnp.int32),
        done=scalar(jnp.bool_),
        winner=scalar(jnp.int32),
        last_action=scalar(jnp.int32),
    )


def assert_env_layout(game, env, batch_shape=()):
    assert env.game is game
    assert env.batch_shape == batch_shape
    for name, (shape, dtype) in expected_fields(game, batch_shape).items():
        x = getattr(env, name)
        assert x.shape == shape and x.dtype == dtype, (name, x.shape, x.dtype)


def test_env_fields(game):
    env = game.env_reset()
    assert_env_layout(game, env)
    # The field set is exactly these (plus the static game, not a leaf).
    assert {f.name for f in dataclasses.fields(Env)} == set(FIELDS) | {"game"}
    assert jax.tree.structure(env).num_leaves == len(FIELDS)
    assert jax.tree.structure(env) == jax.tree.structure(jitted(game)["step"](env, 0)[0])


def test_output_dtypes_and_shapes(game):
    """Every function's outputs, one game and a batch (traced, not run: the
    values are checked in the other tests)."""
    env, a = game.env_reset(), game.num_actions
    key = jax.random.key(0)
    act = jnp.int32(0)
    f32, bool_ = jnp.float32, jnp.bool_
    for bshape, wrap, keys, acts in (
        ((), lambda f: f, key, act),
        ((5,), jax.vmap, jax.random.split(key, 5), jnp.zeros(5, jnp.int32)),
    ):
        envs = batch(env, bshape[0]) if bshape else env
        new, reward, done = jax.eval_shape(wrap(game.env_step), envs, acts)
        assert_env_layout(game, new, bshape)
        assert (reward.shape, reward.dtype) == (bshape, f32)
        assert (done.shape, done.dtype) == (bshape, bool_)
        for fn in (game.legal_action_mask, game.winning_moves):
            m = jax.eval_shape(wrap(fn), envs)
            assert (m.shape, m.dtype) == (bshape + (a,), bool_)
        board = jax.eval_shape(wrap(game.board_array), envs)
        assert (board.shape, board.dtype) == (bshape + (game.rows, game.cols), jnp.int8)
        for fn in (game.rollout, game.heuristic_rollout):
            v = jax.eval_shape(wrap(fn), keys, envs)
            assert (v.shape, v.dtype) == (bshape, f32)


def test_reset(game):
    env = game.env_reset()
    fns = jitted(game)
    assert not np.asarray(env.stones).any()
    assert (int(env.to_move), int(env.ply), bool(env.done)) == (0, 0, False)
    assert (int(env.winner), int(env.last_action)) == (-1, -1)
    assert np.asarray(fns["legal"](env)).all()
    assert not np.asarray(fns["wins"](env)).any()
    assert not np.asarray(fns["board"](env)).any()


# --- eager == jit, vmap row == one game ---------------------------------------------


def _some_actions(game, n: int, seed: int) -> list[int]:
    """Random legal actions for ``n`` plies (reference-chosen), then an illegal one."""
    ref = reference_for(game)
    rng = np.random.default_rng(seed)
    s, actions = ref.reset(), []
    for _ in range(n):
        legal = [a for a, ok in enumerate(ref.legal_moves(s)) if ok]
        if not legal:
            break
        actions.append(int(rng.choice(legal)))
        s = ref.step(s, actions[-1])[0]
    return actions + [game.num_actions + 3, 0]


def test_eager_equals_jit(game):
    fns = jitted(game)
    env_e = env_j = game.env_reset()
    key = jax.random.key(7)
    for i, a in enumerate(_some_actions(game, 5, seed=1)):
        out_e = game.env_step(env_e, a)
        out_j = fns["step"](env_j, jnp.int32(a))
        assert_env_layout(game, out_e[0])
        chex.assert_trees_all_equal(out_e, out_j, strict=True)
        env_e, env_j = out_e[0], out_j[0]
        chex.assert_trees_all_equal(game.legal_action_mask(env_e), fns["legal"](env_j), strict=True)
        chex.assert_trees_all_equal(game.winning_moves(env_e), fns["wins"](env_j), strict=True)
        chex.assert_trees_all_equal(game.board_array(env_e), fns["board"](env_j), strict=True)
        # An eager while_loop compiles like a jitted one (about a second per
        # game and policy), so eager rollouts are checked on the standard games.
        if i == 2 and game in (tictactoe.GAME, connect4.make()):
            chex.assert_trees_all_equal(game.rollout(key, env_e), fns["rollout"](key, env_j), strict=True)
            chex.assert_trees_all_equal(
                game.heuristic_rollout(key, env_e), fns["heuristic"](key, env_j), strict=True
            )
    assert bool(env_j.done)


def test_vmap_rows_equal_single_game(game):
    n = n_random_games(game)
    envs_t = trajectory(game)[0]
    # A batch of positions from different games and times (early, middle, finished).
    rng = np.random.default_rng(0)
    b = 12
    t_idx = rng.integers(0, game.max_plies + 1, size=b)
    t_idx[:3] = [0, game.max_plies // 2, game.max_plies]
    g_idx = rng.choice(n, size=b, replace=False)
    envs = jax.tree.map(lambda x: x[t_idx, g_idx], envs_t)
    a = game.num_actions
    actions = jnp.asarray(
        np.concatenate([rng.integers(0, a, size=b - 4), [-1, a, a + 7, np.iinfo(np.int32).min]]),
        jnp.int32,
    )
    keys = jax.random.split(jax.random.key(11), b)
    bf, sf = batched(game), jitted(game)
    out_b = bf["step"](envs, actions)
    legal_b, wins_b, board_b = bf["legal"](envs), bf["wins"](envs), bf["board"](envs)
    roll_b, heur_b = bf["rollout"](keys, envs), bf["heuristic"](keys, envs)
    for i in range(b):
        env_i = row(envs, i)
        chex.assert_trees_all_equal(row(out_b, i), sf["step"](env_i, actions[i]), strict=True)
        chex.assert_trees_all_equal(legal_b[i], sf["legal"](env_i), strict=True)
        chex.assert_trees_all_equal(wins_b[i], sf["wins"](env_i), strict=True)
        chex.assert_trees_all_equal(board_b[i], sf["board"](env_i), strict=True)
        chex.assert_trees_all_equal(roll_b[i], sf["rollout"](keys[i], env_i), strict=True)
        chex.assert_trees_all_equal(heur_b[i], sf["heuristic"](keys[i], env_i), strict=True)


# --- random games to the end --------------------------------------------------------


def test_random_games_end_of_game_invariants(game):
    n = n_random_games(game)
    envs, action, reward, done, legal, wins = trajectory(game)
    stones = np.asarray(envs.stones)
    ply, to_move = np.asarray(envs.ply), np.asarray(envs.to_move)
    winner, last = np.asarray(envs.winner), np.asarray(envs.last_action)
    env_done = np.asarray(envs.done)

    # The previous state of every step (the reset state before step 0).
    def prev(x, init):
        return np.concatenate([np.full((1,) + x.shape[1:], init, x.dtype), x[:-1]])

    prev_done, prev_ply = prev(env_done, False), prev(ply, 0)
    prev_to_move, prev_stones = prev(to_move, 0), prev(stones, 0)
    moved = ~prev_done  # a step on a running game

    np.testing.assert_array_equal(done, env_done)
    assert set(np.unique(reward)) <= {0.0, 1.0}  # random *legal* play: never -1
    # Stones: disjoint, one per ply, gravity (a column's stones are 2**h - 1).
    assert not (stones[..., 0, :] & stones[..., 1, :]).any()
    np.testing.assert_array_equal(popcount(stones).sum(-1), ply)
    if game.name == "connect4":
        occ = (stones[..., 0, :] | stones[..., 1, :]).astype(np.uint64)
        if game.rows > 32:  # a column's two words as one 64-bit integer
            occ = occ[..., : game.cols] | (occ[..., game.cols :] << np.uint64(32))
        assert not (occ & (occ + np.uint64(1))).any()
    x_count = popcount(stones[..., 0, :])
    np.testing.assert_array_equal(x_count - (ply - x_count), ply % 2)

    # A step on a running game: one stone for the mover at the action, ply + 1,
    # the mover flips, last_action is the action.
    np.testing.assert_array_equal(ply[moved], prev_ply[moved] + 1)
    np.testing.assert_array_equal(to_move[moved], 1 - prev_to_move[moved])
    np.testing.assert_array_equal(last[moved], action[moved])
    np.testing.assert_array_equal(to_move, ply % 2)  # to_move alternates with the ply
    mover_stones_before = np.take_along_axis(prev_stones, prev_to_move[..., None, None], axis=-2)[..., 0, :]
    mover_stones_after = np.take_along_axis(stones, prev_to_move[..., None, None], axis=-2)[..., 0, :]
    diff = mover_stones_after ^ mover_stones_before
    np.testing.assert_array_equal(popcount(diff)[moved], 1)
    if game.name == "connect4":  # the stone is in the action's column
        in_column = np.take_along_axis(diff, np.clip(action, 0, None)[..., None], axis=-1)[..., 0]
    else:  # the stone is on the action's cell
        in_column = (diff[..., 0] >> np.clip(action, 0, None).astype(np.uint32)) & 1
    assert (in_column[moved] != 0).all()
    # A step on a finished game changes nothing.
    for x, px in ((stones, prev_stones), (ply, prev_ply), (to_move, prev_to_move)):
        np.testing.assert_array_equal(x[prev_done], px[prev_done])
    assert (reward[prev_done] == 0).all() and done[prev_done].all()

    # Running games: no winner yet, the legal action mask is the free columns/cells.
    running = ~env_done
    assert (winner[running] == -1).all()
    assert legal[running].any(axis=-1).all()
    # Finished games: no legal action, no winning move, the winner matches the
    # reward of the final step, a draw only on a full board.
    assert not legal[env_done].any() and not wins[env_done].any()
    ended = env_done & moved
    np.testing.assert_array_equal(winner[ended & (reward == 1)], prev_to_move[ended & (reward == 1)])
    assert (winner[ended & (reward == 0)] == -1).all()
    assert (ply[ended & (reward == 0)] == game.max_plies).all()
    assert (reward[~ended] == 0).all()
    # Every game is over by max_plies, and both a win and a non-win happened.
    assert env_done[game.max_plies - 1].all()
    assert (reward == 1).any()

    # The final boards, checked by the reference: the winner has a line, the
    # loser none; a draw has no line at all.
    ref = reference_for(game)
    for g in range(n):
        grid = grid_from_stones(game, stones[-1, g])
        w = int(winner[-1, g])
        for p in (0, 1):
            assert ref.has_line(grid, MARKS[p]) == (p == w), (g, w, grid)
        if w == -1:
            assert all(v is not None for r in grid for v in r)


def test_positions_from_random_play_agree_with_reference(game):
    """Positions met in random play (decoded from the bit layout): the board,
    legal action mask and winning moves agree with the reference rules."""
    envs, _, _, _, legal, wins = trajectory(game)
    ref = reference_for(game)
    board = jitted(game)["board"]
    rng = np.random.default_rng(1)
    n_wins = 0
    # Ten times spread over the longest game (random games on big boards end
    # long before the board is full).
    longest = int(np.asarray(envs.ply).max())
    for t in range(0, longest, max(1, longest // 10)):
        for g in rng.choice(n_random_games(game), size=6, replace=False):
            e = row(row(envs, t), g)
            grid = grid_from_stones(game, e.stones)
            s = RefState(grid, int(e.to_move), int(e.ply), bool(e.done), int(e.winner))
            assert ref.board(s) == np.asarray(board(e)).tolist()
            assert ref.legal_moves(s) == legal[t, g].tolist()
            assert ref.winning_moves(s) == wins[t, g].tolist()
            n_wins += int(wins[t, g].sum())
    assert n_wins > 0


# --- rollouts -------------------------------------------------------------------------


def test_rollout_values_and_determinism(game):
    n = 256 if game.max_plies <= 42 else 64
    fns = batched(game)
    envs = batch(game.env_reset(), n)
    keys = jax.random.split(jax.random.key(2024), n)
    for fn in ("rollout", "heuristic"):
        v1 = np.asarray(fns[fn](keys, envs))
        v2 = np.asarray(fns[fn](keys, envs))
        assert v1.dtype == np.float32 and v1.shape == (n,)
        assert set(np.unique(v1)) <= {-1.0, 0.0, 1.0}
        np.testing.assert_array_equal(v1, v2)  # a key fixes the rollout
        assert len(np.unique(v1)) >= 2  # different keys give different games
        v3 = np.asarray(fns[fn](jax.random.split(jax.random.key(2025), n), envs))
        assert (v3 != v1).any()
    # From mid-game positions too (the result is for the player to move there).
    m = min(n, n_random_games(game))
    keys, envs = keys[:m], jax.tree.map(lambda x: x[min(4, game.max_plies - 1), :m], trajectory(game)[0])
    v = np.asarray(fns["rollout"](keys, envs))
    assert set(np.unique(v)) <= {-1.0, 0.0, 1.0}
    np.testing.assert_array_equal(v, np.asarray(fns["rollout"](keys, envs)))


def test_module_functions_are_the_standard_games():
    std = connect4.make()
    assert connect4.make(6, 7, 4) is std  # cached: one static game per size
    env = connect4.from_moves("4455")
    chex.assert_trees_all_equal(connect4.env_step(env, 2), std.env_step(env, 2), strict=True)
    assert connect4.env_reset().game == std
    assert tictactoe.env_reset().game == tictactoe.GAME
    np.testing.assert_array_equal(connect4.winning_moves(connect4.from_moves("445566")),
                                  [False, False, True, False, False, False, True])


# --- render -----------------------------------------------------------------------------


def test_render(game):
    ref = reference_for(game)
    step = jitted(game)["step"]
    actions = _some_actions(game, 6, seed=4)[:-2]
    env = game.env_reset()
    for a in actions:
        env = step(env, a)[0]
    s_ref = ref.play(actions)
    text = render(game, env)
    assert isinstance(text, str)
    lines = text.splitlines()
    if s_ref.done:
        assert lines[-1] == {-1: "Draw", 0: "X wins", 1: "O wins"}[s_ref.winner]
    else:
        assert lines[-1] == MARKS[s_ref.to_move] + f" to move (ply {s_ref.ply})"
    board_text = "\n".join(lines[:-1])
    assert board_text.count("X") == sum(r.count("X") for r in s_ref.grid)
    assert board_text.count("O") == sum(r.count("O") for r in s_ref.grid)
    if game.name == "connect4":
        assert len(lines) == game.rows + 2
        # Each board line shows its row of the reference grid.
        for r in range(game.rows):
            marks = "".join(ch for ch in lines[r] if ch in "XO.")
            assert marks == "".join(v or "." for v in s_ref.grid[r])
        assert lines[game.rows].split() == [str(c + 1) for c in range(game.cols)]
    else:
        assert len(lines) == 3 + 2 + 1
    rich_text = render_rich(game, env)
    assert isinstance(rich_text, Text)
    rich_lines = rich_text.plain.splitlines()
    assert rich_lines[-1] == lines[-1]
    assert "\n".join(rich_lines[:-1]).count("X") == board_text.count("X")
    # A finished game's status line.
    won = env
    for a in _some_actions(game, game.max_plies, seed=4)[len(actions):-2]:
        won = step(won, a)[0]
    assert bool(won.done)
    status = render(game, won).splitlines()[-1]
    assert status == {-1: "Draw", 0: "X wins", 1: "O wins"}[int(won.winner)]

    envs = batch(env, 2)
    with pytest.raises(ValueError, match="batch"):
        render(game, envs)
    with pytest.raises(ValueError, match="batch"):
        render_rich(game, envs)
