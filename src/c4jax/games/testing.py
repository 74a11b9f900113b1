"""Checks that a game meets the :class:`c4jax.games.env.Game` contract:
:func:`check_game`, the harness every game runs (Connect 4 and tic-tac-toe in
the project's tests, your own game in yours).

After pgx's ``api_test``: shapes and dtypes, the rules every game shares
(finished games, illegal moves, who wins), ``jit`` against eager, ``vmap``
against a loop, and random play to the end.  It needs nothing but the game:
no reference rules.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from c4jax.games.env import NO_WINNER, Env, check_fields
from c4jax.validation import check_int

__all__ = ["check_game"]


class GameContractError(AssertionError):
    """A game broke the :class:`c4jax.games.env.Game` contract (what, where)."""


def _require(ok, what: str) -> None:
    if not bool(ok):
        raise GameContractError(what)


def _row(tree, i):
    return jax.tree.map(lambda x: x[i], tree)


def _stack(envs):
    return jax.tree.map(lambda *x: jnp.stack(x), *envs)


def _same(a, b, what: str) -> None:
    la, lb = jax.tree.leaves(a), jax.tree.leaves(b)
    _require(jax.tree.structure(a) == jax.tree.structure(b), f"{what}: different structures")
    for x, y in zip(la, lb):
        x, y = np.asarray(x), np.asarray(y)
        _require(x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y), f"{what}: {x!r} != {y!r}")


def _random_play(game, num_games: int, plies: int):
    """``jit``: ``num_games`` games of uniformly random legal moves for
    ``plies`` steps (finished games are stepped too: they must not change)."""

    def play(key):
        envs = jax.tree.map(lambda x: jnp.broadcast_to(x, (num_games,) + x.shape), game.env_reset())

        def body(envs, k):
            legal = game.legal_action_mask(envs)
            # A finished game gets action 0 (stepping it must change nothing).
            logits = jnp.where(legal, 0.0, -jnp.inf)
            logits = jnp.where(jnp.any(legal, axis=-1, keepdims=True), logits, 0.0)
            action = jax.random.categorical(k, logits).astype(jnp.int32)
            new, reward, done = game.env_step(envs, action)
            return new, (envs, action, new, reward, done, legal, game.winning_moves(envs))

        return jax.lax.scan(body, envs, jax.random.split(key, plies))[1]

    return jax.jit(play)


def check_game(game, *, num_games: int = 32, seed: int = 0) -> None:
    """Checks ``game`` against the :class:`c4jax.games.env.Game` contract.

    Plays ``num_games`` random games to the end (one jitted ``lax.scan``)
    and checks, on them and on positions taken from them:

    * ``name`` a str, ``num_actions`` and ``max_plies`` ints >= 1, the game
      hashable and equal to itself;
    * shapes and dtypes: every :class:`Env` field (``check_fields``), the
      outputs of every function for one game and for a batch;
    * ``env_reset``: ply 0, player 0 to move, running, no winner, no last
      action, some legal move;
    * every step of random legal play: reward 0 or +1, ``done`` as the
      returned env says, ply + 1, the mover flips, ``last_action`` the action;
      a +1 makes the mover the winner and ends the game; a game that ends
      without a winner ends at ``max_plies``; every game is over by
      ``max_plies``;
    * finished games: no legal move, no winning move, and a step changes
      nothing (same env, reward 0, done True);
    * ``winning_moves``: exactly the legal moves whose step gives +1;
    * illegal actions (a move the mask forbids, -1, ``num_actions``): reward
      -1, game over, the opponent the winner, the stones unchanged;
    * ``jit`` equals eager, and a ``vmap`` batch equals the games one by one,
      for ``env_step``, ``legal_action_mask``, ``winning_moves`` and the
      rollouts (``threat_aware_rollout`` too where the game has one);
    * rollouts: in {-1, 0, +1}, the same for the same key, a finished game's
      own result (+1/-1 for the player to move as the winner), and the
      heuristic (and threat-aware) rollout wins (+1) where a winning move
      exists.

    Not checked: that the rollouts play well, or for the right side beyond
    the rules above (a sign flipped on running positions passes).

    Args:
      game: the game object (static, hashable).
      num_games: random games played (an int >= 2).
      seed: their PRNG seed.
    Raises:
      GameContractError (an ``AssertionError``): naming the first broken rule.
      ValueError: a bad ``num_games`` or ``seed``.
    """
    num_games = check_int("num_games", num_games, 2)
    rollouts = ("rollout", "heuristic_rollout") + (
        ("threat_aware_rollout",) if hasattr(game, "threat_aware_rollout") else ())
    seed = check_int("seed", seed)
    # --- static facts ---------------------------------------------------------
    _require(isinstance(game.name, str) and game.name, "name must be a non-empty str")
    a, max_plies = game.num_actions, game.max_plies
    for name, v in (("num_actions", a), ("max_plies", max_plies)):
        _require(isinstance(v, int) and not isinstance(v, bool) and v >= 1, f"{name} must be an int >= 1; got {v!r}")
    hash(game)
    _require(game == game, "the game must equal itself")

    # --- reset, shapes and dtypes ----------------------------------------------
    env = game.env_reset()
    _require(isinstance(env, Env) and env.game == game, "env_reset must return an Env of this game")
    try:
        check_fields(env)
    except ValueError as e:
        raise GameContractError(f"env_reset: {e}") from None
    _require(env.batch_shape == (), "env_reset must return one game")
    _require(int(env.ply) == 0 and int(env.to_move) == 0 and not bool(env.done), "env_reset: ply 0, X to move, running")
    _require(int(env.winner) == NO_WINNER and int(env.last_action) == -1, "env_reset: no winner, last_action -1")
    _require(np.asarray(game.legal_action_mask(env)).any(), "env_reset: some legal move")
    key = jax.random.key(seed)
    for bshape in ((), (3,)):
        envs = jax.tree.map(lambda x: jnp.broadcast_to(x, bshape + x.shape), env)
        acts = jnp.zeros(bshape, jnp.int32)
        keys = jax.random.split(key, 3) if bshape else key
        new, reward, done = jax.eval_shape(game.env_step, envs, acts)
        _require(isinstance(new, Env), "env_step must return (Env, reward, done)")
        _require((reward.shape, reward.dtype) == (bshape, jnp.float32), f"env_step's reward: float32{list(bshape)}")
        _require((done.shape, done.dtype) == (bshape, jnp.bool_), f"env_step's done: bool{list(bshape)}")
        for fn in (game.legal_action_mask, game.winning_moves):
            m = jax.eval_shape(fn, envs)
            _require((m.shape, m.dtype) == (bshape + (a,), jnp.bool_), f"{fn.__name__}: bool{list(bshape + (a,))}")
        for fn in (getattr(game, name) for name in rollouts):
            v = jax.eval_shape(fn, keys, envs)
            _require((v.shape, v.dtype) == (bshape, jnp.float32), f"{fn.__name__}: float32{list(bshape)}")

    # --- random play to the end -----------------------------------------------------
    plies = max_plies + 2
    before, action, after, reward, done, legal, wins = jax.device_get(
        _random_play(game, num_games, plies)(jax.random.fold_in(key, 1))
    )
    try:
        check_fields(after)
    except ValueError as e:
        raise GameContractError(f"env_step: {e}") from None
    running = ~before.done
    _require(np.array_equal(done, after.done), "env_step's done must be the returned env's done")
    _require(set(np.unique(reward[running])) <= {0.0, 1.0}, "a legal move's reward must be 0 or +1")
    _require((after.ply[running] == before.ply[running] + 1).all(), "a legal move adds one ply")
    _require((after.to_move[running] == 1 - before.to_move[running]).all(), "the player to move flips")
    _require((after.last_action[running] == action[running]).all(), "last_action is the action played")
    won = running & (reward == 1.0)
    _require((after.winner[won] == before.to_move[won]).all() and after.done[won].all(), "a +1 move wins and ends the game")
    drawn = running & after.done & (reward == 0.0)
    _require((after.winner[drawn] == NO_WINNER).all() and (after.ply[drawn] == max_plies).all(),
             "a game without a winner ends at max_plies")
    _require(after.done[max_plies - 1].all(), "every game is over by max_plies")
    _require(running[0].all() and legal[running].any(axis=-1).all(), "a running game has a legal move")
    fin = before.done
    _require(not legal[fin].any() and not wins[fin].any(), "a finished game has no legal or winning move")
    _require((reward[fin] == 0).all() and done[fin].all(), "stepping a finished game: reward 0, done True")
    for f in dataclasses.fields(Env):
        if f.name != "game":
            x, y = getattr(before, f.name), getattr(after, f.name)
            _require(np.array_equal(x[fin], y[fin]), f"stepping a finished game changed {f.name}")
    _require(wins[running].sum() > 0 or max_plies < 3, "random play met no winning move (is winning_moves all False?)")

    # --- positions from the games: winning moves, illegal moves, jit, vmap, rollouts --
    t_idx = np.linspace(0, max_plies - 1, num=min(6, max_plies)).astype(int)
    # JAX arrays, as the search passes them (a game may use .at[] and the like).
    positions = [jax.tree.map(jnp.asarray, _row(_row(before, int(t)), g))
                 for t in t_idx for g in range(min(num_games, 4))]
    batch = _stack(positions)
    n = len(positions)
    step_all = jax.jit(jax.vmap(game.env_step, in_axes=(None, 0)))  # one position, every action
    for i, p in enumerate(positions):
        if bool(p.done):
            continue
        _, r_all, _ = step_all(p, jnp.arange(a, dtype=jnp.int32))
        r_all = np.asarray(r_all)
        lm = np.asarray(game.legal_action_mask(p))
        wm = np.asarray(game.winning_moves(p))
        _require(np.array_equal(wm, lm & (r_all == 1.0)), f"winning_moves must be the legal moves that win at once (position {i})")
        _require((r_all[~lm] == -1.0).all(), f"a move the mask forbids must be illegal: reward -1 (position {i})")
        for bad in [int(x) for x in np.flatnonzero(~lm)[:1]] + [-1, a]:
            new, r, d = game.env_step(p, jnp.int32(bad))
            _require(float(r) == -1.0 and bool(d), f"illegal action {bad}: reward -1, game over")
            _require(int(new.winner) == 1 - int(p.to_move), f"illegal action {bad}: the opponent wins")
            _require(np.array_equal(np.asarray(new.stones), np.asarray(p.stones)), f"illegal action {bad}: stones unchanged")
            _require(not np.asarray(game.legal_action_mask(new)).any() and not np.asarray(game.winning_moves(new)).any(),
                     f"after illegal action {bad} the game is over: no legal or winning move")
        if wm.any():
            for name in rollouts[1:]:
                h = float(jax.jit(getattr(game, name))(jax.random.fold_in(key, 100 + i), p))
                _require(h == 1.0, f"{name} must win where a winning move exists (position {i})")
    acts = jnp.asarray([int(np.flatnonzero(np.asarray(game.legal_action_mask(p)))[0]) if not bool(p.done) else 0
                        for p in positions], jnp.int32)
    keys = jax.random.split(jax.random.fold_in(key, 2), n)
    fns = {
        "env_step": (game.env_step, lambda i: (positions[i], acts[i]), (batch, acts)),
        "legal_action_mask": (game.legal_action_mask, lambda i: (positions[i],), (batch,)),
        "winning_moves": (game.winning_moves, lambda i: (positions[i],), (batch,)),
        **{name: (getattr(game, name), lambda i: (keys[i], positions[i]), (keys, batch)) for name in rollouts},
    }
    for name, (fn, one, many) in fns.items():
        batched = jax.jit(jax.vmap(fn))(*many)
        for i in range(0, n, max(1, n // 6)):
            eager, jitted = fn(*one(i)), jax.jit(fn)(*one(i))
            _same(eager, jitted, f"{name}: jit against eager (position {i})")
            _same(_row(batched, i), jitted, f"{name}: vmap row {i} against the one game")
    for name in rollouts:
        fn = jax.jit(jax.vmap(getattr(game, name)))
        v1, v2 = np.asarray(fn(keys, batch)), np.asarray(fn(keys, batch))
        _require(set(np.unique(v1)) <= {-1.0, 0.0, 1.0}, f"{name}: results must be -1, 0 or +1")
        _require(np.array_equal(v1, v2), f"{name}: the same key must give the same result")
        for i, p in enumerate(positions):
            if bool(p.done):
                w = int(p.winner)
                own = 0.0 if w == NO_WINNER else (1.0 if w == int(p.to_move) else -1.0)
                _require(v1[i] == own, f"{name} of a finished game must be its own result (position {i})")
