"""What the game functions take: an action (:func:`as_action`), a list of
moves (:func:`move_list`), and one game or a batch (:func:`one_game_or_batch`).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from c4jax.env import Env, check_game
from c4jax.keys import keys_for_games

__all__ = ["as_action", "digit_moves", "move_list", "one_game_or_batch"]


def as_action(action) -> jax.Array:
    """An action as ``int32[]``, for ``env_step``.

    Integers outside the int32 range become -1 (an illegal move, which ends
    the game with a loss for the mover), never a wrapped-around legal move.

    Raises:
      ValueError: (at trace time) for a non-integer action (a float, a bool, a
        string) or one that is not a scalar (``jax.vmap`` for a batch).
    """
    if isinstance(action, (bool, np.bool_)):
        raise ValueError(f"action must be an integer, not a bool; got {action!r}")
    if isinstance(action, (int, np.integer)):
        value = int(action)
        return jnp.int32(value if -(2**31) <= value < 2**31 else -1)
    try:
        a = jnp.asarray(action)
    except TypeError:
        raise ValueError(f"action must be an integer; got {action!r}") from None
    if not jnp.issubdtype(a.dtype, jnp.integer):
        raise ValueError(f"action must be an integer, got dtype {a.dtype} ({action!r})")
    if a.shape != ():
        raise ValueError(f"action must be a scalar for one game (a batch of games takes one per game); got shape {a.shape}")
    if jnp.iinfo(a.dtype).max > jnp.iinfo(jnp.int32).max:
        a = jnp.where(a > jnp.iinfo(jnp.int32).max, -1, a)
    return a.astype(jnp.int32)


def move_list(moves, expected: str) -> list[int]:
    """A game's ``moves`` given as a sequence of ints (``[4, 4, 5]``) as a
    list of Python ints, for ``from_moves`` (the range is the game's check).

    Raises:
      ValueError: ``moves`` is not iterable (``None``, a number), naming the
        two forms ``from_moves`` takes, or a move is not an int (a bool, a
        float), naming it and what was ``expected`` (``"column 1..7"``).
    """
    try:
        items = list(moves)
    except TypeError:
        raise ValueError(
            f"moves must be a string of digits or a sequence of ints; got {type(moves).__name__}"
        ) from None
    for i, m in enumerate(items):
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
            raise ValueError(f"move {i + 1} is {m!r}: expected an int {expected}")
    return [int(m) for m in items]


def digit_moves(text: str, limit: int, what: str) -> list[int]:
    """The moves of a string of digits, one digit a move (``"4453"``), for
    ``from_moves``; spaces are ignored and commas may separate moves
    (``"4,4,5,3"``).

    Raises:
      ValueError: a character that is not a digit ``1..limit`` (naming the
        move and the ``what``: ``"column"``, ``"cell"``), or an empty field
        between commas (naming its position), which is never read as no move.
    """
    fields = text.split(",")
    moves: list[int] = []
    for k, field in enumerate(fields):
        field = field.replace(" ", "")
        if not field and len(fields) > 1:
            raise ValueError(f"field {k + 1} of {len(fields)} between commas is empty (no move)")
        for ch in field:
            if ch not in "123456789"[:limit]:
                raise ValueError(f"move {len(moves) + 1} is {ch!r}: expected a {what} digit 1..{limit}")
            moves.append(int(ch))
    return moves


def one_game_or_batch(*, key: int | None = None):
    """Decorates a game method ``method(self, *args)`` written for one game so
    that it also takes a batch: the convention of every jit-able game function
    (``legal_action_mask``, ``env_step``, ``winning_moves``, the rollouts,
    ``board_array``).

    With an :class:`Env` of batch shape ``S`` (``(B,)``, or more axes) among
    ``args``, the method is ``jax.vmap`` ped over each axis of ``S``; every
    other argument must then carry ``S`` in front (an action per game), except
    the argument at position ``key`` (a PRNG key), which may also be one key,
    split into one per game (:func:`c4jax.keys.keys_for_games`).  Under an
    outer ``vmap`` each game is unbatched and the method runs as written.

    Raises:
      ValueError: an argument without the games' batch shape, naming it.
    """

    def decorate(method):
        @functools.wraps(method)
        def wrapper(self, *args):
            env = next((a for a in args if isinstance(a, Env)), None)
            batch = env.batch_shape if env is not None else ()
            if not batch:
                return method(self, *args)
            check_game(self, env)
            args = list(args)
            for i, a in enumerate(args):
                if a is env:
                    continue
                if i == key:
                    args[i] = keys_for_games(a, batch)
                    continue
                shape = tuple(jnp.shape(a))
                if shape[: len(batch)] != batch:
                    raise ValueError(
                        f"{method.__name__} of a batch of games (batch shape {batch}) needs one "
                        f"value per game in argument {i}; got shape {shape}"
                    )
            fn = functools.partial(method, self)
            for _ in batch:
                fn = jax.vmap(fn)
            return fn(*args)

        return wrapper

    return decorate
