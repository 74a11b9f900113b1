"""Priors and leaf values, and the ``root_fn``/``recurrent_fn`` that feed mctx.

Sign conventions (negamax, Silver et al. 2017; Browne et al. 2012, sec. 3.3):

* a reward is the reward of the player who moved (the mover);
* a value is for the player to move at the node;
* the discount is -1 per ply (the next node's value is the opponent's) and 0
  once the game is over, so ``Q(s, a) = r + discount * V(s')`` is always the
  mover's.  A finished game's value is 0: its result is already in the reward
  of the move that ended it.

Illegal actions get the prior logit ``jnp.finfo(float32).min`` (not ``-inf``,
which would give NaN in a softmax over an all-illegal node).
"""

from __future__ import annotations

import inspect
from typing import Callable, Literal

import jax
import jax.numpy as jnp
import mctx

from c4jax.games.env import Env, check_env
from c4jax.games.rollout import win_else_block_moves
from c4jax.keys import as_key, keys_for_games
from c4jax.validation import check_choice, check_int

__all__ = [
    "PRIORS",
    "ROLLOUT_POLICIES",
    "HEURISTIC_LOGIT_GAP",
    "prior_logits",
    "leaf_value",
    "make_root_fn",
    "make_recurrent_fn",
]

PRIORS = ("uniform", "heuristic")
ROLLOUT_POLICIES = ("uniform", "heuristic", "threat_aware")
# Under the heuristic prior, the preferred moves (win at once, else block)
# get this much more logit than the other legal moves: prior odds e**5 = 148.
HEURISTIC_LOGIT_GAP = 5.0

_NEG = float(jnp.finfo(jnp.float32).min)
_BIG = 1e30  # |prior logit| a prior_fn's infinities become (finite, above any softmax gap)


def prior_logits(
    env: Env, prior: Literal["uniform", "heuristic"] = "uniform", prior_fn: Callable | None = None
) -> jax.Array:
    """Prior logits over the actions of one game, or of each game of a batch.

    Args:
      env: one game, or a batch (leading axes; ``vmap`` ped inside, as the
        games' functions, :func:`c4jax.games.positions.one_game_or_batch`).
      prior: ``"uniform"``: equal logits over the legal actions.
        ``"heuristic"``: the moves that win at once get ``HEURISTIC_LOGIT_GAP``
        more logit than the other legal moves; if there is none, the moves that
        block the opponent's immediate win do (the win/block rule of the
        Connect 4 mctx tutorials).
      prior_fn: your own prior instead of ``prior``: ``prior_fn(env) ->
        float32[num_actions]``, logits for one game (a network's policy head,
        say); it may close over arrays and is traced, not called per node.
        Its illegal actions are masked here; a NaN logit counts as 0 and an
        infinite one as +-1e30 (a rule, not NaN arithmetic).
    Returns:
      ``float32[num_actions]`` (a batch's axes in front); illegal actions get
      ``finfo(float32).min``.
    Raises:
      ValueError: for an unknown ``prior``, a ``prior_fn`` that is not
        callable or returns another shape, or an ``env`` that is not an
        :class:`Env` (checked at trace time).
    """
    check_choice("prior", prior, PRIORS)
    _check_callable("prior_fn", prior_fn)
    check_env(env)
    if env.batch_shape:
        return jax.vmap(lambda e: prior_logits(e, prior, prior_fn))(env)
    return prior_and_flag(env, prior, prior_fn)[0]


def prior_and_flag(env: Env, prior: str, prior_fn: Callable | None, wins=None) -> tuple[jax.Array, jax.Array]:
    """:func:`prior_logits` of one game, checked arguments, and ``bool[]``:
    whether ``prior_fn`` gave a non-finite logit for a legal action.
    ``wins``: :func:`c4jax.games.rollout.winning_moves_of_both` of ``env``,
    where the caller has them."""
    game = env.game
    legal = game.legal_action_mask(env)
    logits = jnp.zeros(legal.shape, jnp.float32)
    bad = jnp.bool_(False)
    if prior_fn is not None:
        logits = _user_output("prior_fn", _call_user("prior_fn", "(env) -> logits", prior_fn, env), legal.shape)
        bad = jnp.any(legal & ~jnp.isfinite(logits))
        # Non-finite logits follow a rule, not NaN arithmetic: NaN is 0,
        # +-inf the largest/smallest finite logit.
        logits = jnp.nan_to_num(logits, nan=0.0, posinf=_BIG, neginf=-_BIG)
    elif prior == "heuristic":
        preferred = win_else_block_moves(env, None, wins)
        logits = jnp.where(preferred, HEURISTIC_LOGIT_GAP, 0.0)
    return jnp.where(legal, logits, _NEG).astype(jnp.float32), bad


def _check_callable(name: str, fn) -> None:
    if fn is not None and not callable(fn):
        raise ValueError(f"{name} must be None or a function; got {type(fn).__name__}")


def _call_user(name: str, signature: str, fn, *args):
    """Calls a user's ``value_fn``/``prior_fn``; arguments that do not fit
    its signature are a ValueError naming it (at trace time).  An error
    inside the function is its own."""
    target, given = fn, args
    if getattr(fn, "_c4jax_params_first", False):  # search.options.WithParams
        signature = "(params, " + signature[1:]
        target, given = fn.fn, (fn.params, *args)
    try:
        inspect.signature(target).bind(*given)
    except TypeError as e:
        raise ValueError(f"{name} must be a function {signature}; calling it that way raised TypeError: {e}") from None
    except ValueError:  # no signature to read (some builtins): the call says
        pass
    return fn(*args)


def _user_output(name: str, value, shape: tuple[int, ...]) -> jax.Array:
    """A user function's output as float32 of ``shape`` (checked at trace
    time): real numbers of any dtype are cast to float32."""
    try:
        value = jnp.asarray(value)
    except (TypeError, ValueError):
        value = None
    if value is None or value.shape != shape or not (
        jnp.issubdtype(value.dtype, jnp.floating) or jnp.issubdtype(value.dtype, jnp.integer)
    ):
        got = "not an array" if value is None else f"{value.dtype}{list(value.shape)}"
        raise ValueError(
            f"{name} must return real numbers of shape {list(shape)} for one game (cast to float32); got {got}"
        )
    return value.astype(jnp.float32)


def leaf_value(
    key: jax.Array,
    env: Env,
    *,
    num_rollouts: int = 1,
    rollout_policy: Literal["uniform", "heuristic", "threat_aware"] = "uniform",
    value_fn: Callable | None = None,
) -> jax.Array:
    """Monte Carlo value of one position: the mean of ``num_rollouts`` rollouts
    (Browne et al. 2012, sec. 3.3), or your own evaluation ``value_fn``.

    Args:
      key: PRNG key, consumed (:func:`c4jax.keys.as_key`); for a batch, one
        key (split into one per game) or one key per game.
      env: one game, or a batch (leading axes; ``vmap`` ped inside).
      num_rollouts: rollouts averaged (static, >= 1).
      rollout_policy: ``"uniform"`` random legal moves, ``"heuristic"``
        (win at once, else block, else random) or ``"threat_aware"`` (the
        game's ``threat_aware_rollout``: Connect 4's avoids opening cells
        where a line would be completed; a game without one uses its
        heuristic rollout).
      value_fn: your own evaluation instead of rollouts: ``value_fn(key, env)
        -> float32[]``, one game's value for its player to move (a network's
        value head, a hand-written evaluation); it may close over arrays and
        is traced, not called per node.  Its output is clipped to ``[-1, 1]``
        (the game results' range, which the solver's bounds assume); a NaN
        counts as 0.
    Returns:
      ``float32[]`` in ``[-1, 1]`` (a batch's axes in front), for the player
      to move; exactly 0 for a finished game (its result belongs to the move
      that ended it), whatever ``value_fn`` says.
    Raises:
      ValueError: an unknown ``rollout_policy``, a ``num_rollouts`` that is
        not an int >= 1, a ``value_fn`` that is not callable or returns
        another shape, a bad key or an ``env`` that is not an :class:`Env`.
    """
    check_choice("rollout_policy", rollout_policy, ROLLOUT_POLICIES)
    num_rollouts = check_int("num_rollouts", num_rollouts, 1)
    _check_callable("value_fn", value_fn)
    check_env(env)
    if env.batch_shape:
        keys = keys_for_games(key, env.batch_shape)
        return jax.vmap(
            lambda k, e: leaf_value(
                k, e, num_rollouts=num_rollouts, rollout_policy=rollout_policy, value_fn=value_fn
            )
        )(keys, env)
    return value_and_flag(as_key(key), env, num_rollouts, rollout_policy, value_fn)[0]


def value_and_flag(key, env: Env, num_rollouts: int, rollout_policy: str,
                   value_fn: Callable | None) -> tuple[jax.Array, jax.Array]:
    """:func:`leaf_value` of one game, checked arguments, and ``bool[]``:
    whether ``value_fn`` gave a non-finite value for a running game."""
    if value_fn is not None:
        value = _user_output("value_fn", _call_user("value_fn", "(key, env) -> value", value_fn, key, env), ())
        bad = ~env.done & ~jnp.isfinite(value)
        value = jnp.clip(jnp.nan_to_num(value, nan=0.0), -1.0, 1.0)  # NaN: 0, as a draw
        return jnp.where(env.done, 0.0, value).astype(jnp.float32), bad
    fn = rollout_function(env.game, rollout_policy)
    if num_rollouts == 1:
        value = fn(key, env)
    else:
        keys = jax.random.split(key, num_rollouts)
        value = jnp.mean(jax.vmap(fn, in_axes=(0, None))(keys, env))
    return jnp.where(env.done, 0.0, value).astype(jnp.float32), jnp.bool_(False)


def rollout_function(game, rollout_policy: str) -> Callable:
    """``fn(key, env) -> float32[]``: ``game``'s rollout for ``rollout_policy``
    (one of :data:`ROLLOUT_POLICIES`; ``"threat_aware"`` is the game's
    ``heuristic_rollout`` where it has no ``threat_aware_rollout``)."""
    if rollout_policy == "uniform":
        return game.rollout
    if rollout_policy == "threat_aware":
        return getattr(game, "threat_aware_rollout", game.heuristic_rollout)
    return game.heuristic_rollout


def _check_evaluation(prior, rollout_policy, prior_fn, value_fn) -> None:
    """ValueError naming the first bad argument of an evaluation."""
    check_choice("prior", prior, PRIORS)
    check_choice("rollout_policy", rollout_policy, ROLLOUT_POLICIES)
    _check_callable("prior_fn", prior_fn)
    _check_callable("value_fn", value_fn)


def make_root_fn(*, prior: str = "uniform", num_rollouts: int = 1, rollout_policy: str = "uniform",
                 prior_fn: Callable | None = None, value_fn: Callable | None = None):
    """A root function for driving mctx yourself.

    Returns ``root_fn(params, rng_key, env) -> mctx.RootFnOutput`` for a batch
    ``env`` (``[B]``): ``prior_logits`` ``float32[B, A]``, ``value``
    ``float32[B]`` (rollouts; row ``b`` uses ``jax.random.split(rng_key, B)[b]``)
    and ``embedding`` = ``env``.  ``params`` is ignored (close ``prior_fn``
    and ``value_fn`` over yours).  Pair it with
    ``invalid_actions = ~vmap(env.game.legal_action_mask)(env)``.
    ``prior_fn``, ``value_fn``: as :func:`prior_logits` and :func:`leaf_value`.
    """
    _check_evaluation(prior, rollout_policy, prior_fn, value_fn)

    def root_fn(params, rng_key, env: Env) -> mctx.RootFnOutput:
        del params
        keys = jax.random.split(as_key(rng_key, name="rng_key"), env.ply.shape[0])
        value = jax.vmap(
            lambda k, e: leaf_value(
                k, e, num_rollouts=num_rollouts, rollout_policy=rollout_policy, value_fn=value_fn
            )
        )(keys, env)
        return mctx.RootFnOutput(
            prior_logits=jax.vmap(lambda e: prior_logits(e, prior, prior_fn))(env),
            value=value,
            embedding=env,
        )

    return root_fn


def make_recurrent_fn(*, prior: str = "uniform", num_rollouts: int = 1, rollout_policy: str = "uniform",
                      prior_fn: Callable | None = None, value_fn: Callable | None = None):
    """A recurrent function for driving mctx yourself.

    Returns ``recurrent_fn(params, rng_key, action, env)`` -> ``(mctx.RecurrentFnOutput,
    next_env)`` for a batch: steps ``action`` (``int32[B]``), returns the
    mover's ``reward`` ``float32[B]``, ``discount`` -1 (0 once the game is
    over), the next node's prior logits and its rollout value (0 if over).
    Row ``b`` evaluates with ``jax.random.split(rng_key, B)[b]``.
    ``prior_fn``, ``value_fn``: as :func:`prior_logits` and :func:`leaf_value`.
    """
    _check_evaluation(prior, rollout_policy, prior_fn, value_fn)

    def recurrent_fn(params, rng_key, action, env: Env):
        del params
        keys = jax.random.split(as_key(rng_key, name="rng_key"), env.ply.shape[0])
        out = jax.vmap(
            lambda k, a, e: _expand(
                k, e, a, prior=prior, num_rollouts=num_rollouts, rollout_policy=rollout_policy,
                prior_fn=prior_fn, value_fn=value_fn,
            )
        )(keys, action, env)
        next_env, reward, discount, logits, value = out
        return (
            mctx.RecurrentFnOutput(
                reward=reward, discount=discount, prior_logits=logits, value=value
            ),
            next_env,
        )

    return recurrent_fn


def _expand(key, env: Env, action, *, prior, num_rollouts, rollout_policy, prior_fn=None, value_fn=None):
    """One game's expansion: ``(next_env, reward, discount, prior_logits, value)``.

    ``reward`` is the mover's, ``discount`` is -1 or 0 (game over), ``value``
    is the leaf value of ``next_env`` (0 if over).  Internal to
    :func:`make_recurrent_fn`; the search has its own expansion
    (:func:`c4jax.search.expansion.expand`), which steps a node of its tree and
    also records the solver's static bounds.
    """
    next_env, reward, done = env.game.env_step(env, action)
    discount = jnp.where(done, 0.0, -1.0).astype(jnp.float32)
    value = leaf_value(
        key, next_env, num_rollouts=num_rollouts, rollout_policy=rollout_policy, value_fn=value_fn
    )
    return next_env, reward, discount, prior_logits(next_env, prior, prior_fn), value
