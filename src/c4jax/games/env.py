"""The game state every c4jax game shares, the :class:`Game` contract, and
the rules every game applies after a move.

An :class:`Env` is a frozen pytree.  Its array fields are batched by a leading
axis (``jax.vmap`` over the game functions); its ``game`` field is static
(pytree metadata), so that the search can be called as
``run_mcts(key, env, n)`` without naming the game again.

Board layout (bit words, ``uint32``):

* Connect 4, ``R`` rows by ``C`` columns, ``R <= 32``: ``stones[p, c]`` holds
  player ``p``'s stones in column ``c``, bit ``r`` set for row ``r`` counted
  from the bottom::

      row R-1  . . . . . . .      bit R-1 of every word
      ...
      row 0    . . . . . . .      bit 0
               0 1 2 3 4 5 6      word index = column = action

  From 33 to 64 rows a column takes two words, stored word-major:
  ``stones[p, C + c]`` holds rows 32 to ``R - 1`` of column ``c`` (bit
  ``r - 32``).

* Tic-tac-toe: ``stones[p, 0]`` is a 9-bit mask, bit ``i`` = cell ``i + 1``
  counted row by row from the top left (actions are the cells, 0-based).

Players are numbered 0 (the first player, drawn ``X``) and 1 (``O``).
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import jax
import jax.numpy as jnp
import numpy as np
__all__ = ["Env", "Game", "GAME_FUNCTIONS", "NO_WINNER", "empty_board", "env_from_values", "finish_step", "check_env", "check_game", "check_fields", "padded_games"]

NO_WINNER = -1
# The functions a built-in game's module exposes for its standard game
# (``connect4.env_step`` is ``connect4.make().env_step``).
GAME_FUNCTIONS = ("env_reset", "env_step", "legal_action_mask", "winning_moves", "from_moves", "from_board",
                  "rollout", "heuristic_rollout", "board_array")


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Env:
    """A game position (one game, or a batch of games along a leading axis).

    Fields (shapes for one game; a batch adds a leading ``[B]``):
      stones: ``uint32[2, W]``, the stones of player 0 and player 1 as bit
        words (``W`` = columns for Connect 4 up to 32 rows, twice the
        columns from 33 to 64 rows; 1 for tic-tac-toe).
      to_move: ``int32[]``, the player to move (0 or 1).  After the last move
        of a game it still flips, so values "for the player to move" stay
        defined on finished games.
      ply: ``int32[]``, number of stones on the board.
      done: ``bool[]``, whether the game is over.
      winner: ``int32[]``, 0 or 1 for the winner, -1 for none (game running,
        or drawn).  An illegal move makes the mover's opponent the winner.
      last_action: ``int32[]``, the last action taken (0-based), -1 at the
        start.
      game: the static game description (a hashable :class:`Game`: a
        :class:`~c4jax.games.connect4.Connect4` or :class:`~c4jax.games.tictactoe.TicTacToe`).
    """

    stones: jax.Array
    to_move: jax.Array
    ply: jax.Array
    done: jax.Array
    winner: jax.Array
    last_action: jax.Array
    game: Game = dataclasses.field(metadata=dict(static=True))

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """The batch dimensions (``()`` for one game)."""
        return tuple(jnp.shape(self.ply))


class Game(Protocol):
    """The contract a game meets to be searched, played and tested (checked
    by :func:`c4jax.games.testing.check_game`).  The game object is static:
    frozen, hashable, holding no arrays (the ``game`` field of every
    :class:`Env` it makes, pytree metadata).

    Attributes:
      name: a short name (``"connect4"``, ``"tictactoe"``, yours).
      num_actions: ``A``, actions are the ints ``0..A-1``.
      max_plies: the longest game; a game ends by then (a draw on a full
        board).
      stones_shape: ``Env.stones``'s shape for one game, ``uint32`` (optional:
        without it only the dtype and the batch axes are checked).
      title, action_name (optional): how people call the game and its moves
        (``"tic-tac-toe"``, ``"cell"``; default: ``name`` and ``"move"``).
      params (optional): the keywords its registry factory rebuilds it from.

    Methods (each pure, ``jit``-able and ``vmap``-able; one game, or a batch
    along leading axes: :func:`one_game_or_batch` does that for you; the
    fields of the ``Env`` they get are JAX arrays):
      env_reset() -> Env: the start, player 0 to move.
      env_step(env, action) -> (env, reward, done): ``reward`` is the
        mover's, +1 for a move that wins, 0 otherwise; an illegal action
        (``legal_action_mask`` False, or out of range) ends the game, the board
        unchanged, reward -1, the opponent the winner; stepping a finished
        game changes nothing (same env, reward 0, done True).  Use
        :func:`finish_step` for these rules.
      legal_action_mask(env) -> bool[A]: all False once done.
      winning_moves(env) -> bool[A]: the legal moves that win at once for the
        player to move (the heuristic prior, the heuristic rollout and the
        solver's decisive moves use it); all False once done.
      rollout(key, env) -> float32[]: a random playout's result for the
        player to move (+1/0/-1); a finished game's own result, as
        :func:`result_for_player_to_move`.  :func:`playout` is the shared loop.
      heuristic_rollout(key, env) -> float32[]: the same, each move winning
        at once if it can, else blocking, else random.
      threat_aware_rollout(key, env) -> float32[] (optional): the heuristic
        rollout with the game's knowledge of threats (Connect 4's avoids
        opening cells where a line would be completed); a game without one
        gets its ``heuristic_rollout`` for ``rollout_policy="threat_aware"``.
    """

    name: str
    num_actions: int
    max_plies: int

    def env_reset(self) -> Env: ...
    def env_step(self, env: Env, action: jax.Array) -> tuple[Env, jax.Array, jax.Array]: ...
    def legal_action_mask(self, env: Env) -> jax.Array: ...
    def winning_moves(self, env: Env) -> jax.Array: ...
    def rollout(self, key: jax.Array, env: Env) -> jax.Array: ...
    def heuristic_rollout(self, key: jax.Array, env: Env) -> jax.Array: ...


def result_for_player_to_move(env: Env) -> jax.Array:
    """``float32[]``: +1/0/-1 outcome of a finished game for ``env.to_move``."""
    return jnp.where(
        env.winner == NO_WINNER, 0.0, jnp.where(env.winner == env.to_move, 1.0, -1.0)
    ).astype(jnp.float32)


def empty_board(game) -> Env:
    """The start of a game: no stones (``uint32`` zeros of the game's
    ``stones_shape``), player 0 to move, ply 0, running, no winner, no last
    action.  An unbatched :class:`Env`; every game's ``env_reset``."""
    return Env(
        stones=jnp.zeros(game.stones_shape, jnp.uint32),
        to_move=jnp.int32(0),
        ply=jnp.int32(0),
        done=jnp.bool_(False),
        winner=jnp.int32(NO_WINNER),
        last_action=jnp.int32(-1),
        game=game,
    )


def env_from_values(game, stones, to_move: int, ply: int, done: bool, winner: int, last_action: int) -> Env:
    """An unbatched :class:`Env` of ``game`` from Python values and a NumPy
    ``stones`` array (``uint32``, the game's ``stones_shape``): the position
    ``from_moves`` and ``from_board`` build."""
    # NumPy values put on the device (no small program compiled per field).
    return Env(
        stones=jax.device_put(np.asarray(stones, np.uint32)),
        to_move=jax.device_put(np.int32(to_move)),
        ply=jax.device_put(np.int32(ply)),
        done=jax.device_put(np.bool_(done)),
        winner=jax.device_put(np.int32(winner)),
        last_action=jax.device_put(np.int32(last_action)),
        game=game,
    )


def finish_step(
    env: Env, new_stones: jax.Array, action: jax.Array, legal: jax.Array, won: jax.Array
) -> tuple[Env, jax.Array, jax.Array]:
    """The rules every game shares after placing a stone (or failing to).

    Args:
      env: the position before the move (one game).
      new_stones: ``uint32[2, W]`` after the move (unchanged if illegal).
      action: ``int32[]`` the action taken.
      legal: ``bool[]`` whether it was legal.
      won: ``bool[]`` whether it completed a line (False if illegal).
    Returns:
      ``(env, reward, done)``: reward +1 for a win, -1 for an illegal move
      (the game ends, the opponent wins, the board stays as it was), else 0; a
      full board ends in a draw; a finished ``env`` comes back unchanged with
      reward 0 and done True.
    """
    mover = env.to_move
    ply = env.ply + legal.astype(jnp.int32)
    done = won | (~legal) | (ply == env.game.max_plies)  # parenthesised on purpose
    reward = jnp.where(won, 1.0, jnp.where(legal, 0.0, -1.0)).astype(jnp.float32)
    winner = jnp.where(won, mover, jnp.where(legal, NO_WINNER, 1 - mover))
    new = Env(
        stones=new_stones,
        to_move=1 - mover,
        ply=ply,
        done=done,
        winner=winner.astype(jnp.int32),
        last_action=action,
        game=env.game,
    )
    out = jax.tree.map(lambda old, nxt: jnp.where(env.done, old, nxt), env, new)
    return out, jnp.where(env.done, 0.0, reward).astype(jnp.float32), out.done


def with_opponent_to_move(env: Env) -> Env:
    """The same position with the other player to move (to ask
    ``winning_moves`` for the opponent's immediate wins)."""
    return dataclasses.replace(env, to_move=1 - env.to_move)


def check_env(env) -> None:
    """Raises ``ValueError`` unless ``env`` is an :class:`Env`."""
    if not isinstance(env, Env):
        raise ValueError(f"env must be a c4jax Env (from a game's env_reset/from_moves); got {type(env).__name__}")


def check_game(game, env: Env) -> None:
    """Raises ``ValueError`` if ``env`` belongs to another game than ``game``
    (a static check: the module-level functions play the standard board), or
    if its fields do not have the dtypes and shapes of that game's
    (:func:`check_fields`)."""
    if not isinstance(env, Env):
        raise ValueError(f"expected a c4jax Env; got {type(env).__name__}")
    if env.game != game:
        raise ValueError(
            f"this Env is {env.game!r}, not {game!r}: use its own game's functions "
            "(env.game.env_step, ...)"
        )
    check_fields(env)


def _stones_shape(game) -> tuple[int, ...] | None:
    """``Env.stones``'s shape for one game of ``game`` (its ``stones_shape``),
    or None for a game that does not declare it (then only the batch axes and
    the dtype are checked)."""
    shape = getattr(game, "stones_shape", None)
    return tuple(shape) if shape is not None else None


def check_fields(env: Env) -> None:
    """Raises ``ValueError`` naming the field, unless every field of ``env``
    has its documented dtype and shape (:class:`Env`), with one batch shape
    for all: ``stones`` ``uint32[*B, 2, W]``, ``done`` ``bool[*B]``, the other
    fields ``int32[*B]``.  A static check (shapes and dtypes), also under
    ``jit``: an Env built by hand with other dtypes would otherwise fail deep
    inside JAX, or compute on silently converted values."""
    batch = tuple(jnp.shape(env.ply))
    stones = _stones_shape(env.game)
    if stones is None:  # a game that does not declare its layout: its batch axes at least
        stones = batch + tuple(jnp.shape(env.stones))[len(batch):]
    else:
        stones = batch + stones
    want = {
        "stones": (jnp.uint32, stones),
        "to_move": (jnp.int32, batch),
        "ply": (jnp.int32, batch),
        "done": (jnp.bool_, batch),
        "winner": (jnp.int32, batch),
        "last_action": (jnp.int32, batch),
    }
    for name, (dtype, shape) in want.items():
        x = getattr(env, name)
        if not hasattr(x, "dtype") or jnp.dtype(x.dtype) != jnp.dtype(dtype) or tuple(jnp.shape(x)) != shape:
            got = f"{getattr(x, 'dtype', type(x).__name__)}{list(jnp.shape(x))}"
            raise ValueError(
                f"Env.{name} must be {jnp.dtype(dtype).name}{list(shape)} for {env.game!r} "
                f"(batch shape {batch}, from Env.ply); got {got}"
            )


def padded_games(env, live):
    """A batch of copies of one position, padded with finished games.

    Args:
      env: an unbatched :class:`~c4jax.games.env.Env`.
      live: bool ``[R]`` (NumPy or JAX): which rows play.

    Returns:
      the ``Env`` batched ``[R]``: row ``r`` is ``env`` where ``live[r]``,
      else ``env`` marked finished (``done`` true), a row that never moves
      (stepping a finished game changes nothing) and fills a device's block
      of a fixed shape.

    Raises:
      ValueError: ``env`` is batched.
    """
    if env.batch_shape:
        raise ValueError(f"env must be one position (unbatched); got batch shape {env.batch_shape}")
    live = jnp.asarray(live, bool)
    dead = dataclasses.replace(env, done=jnp.bool_(True))
    return jax.tree.map(lambda x, d: jnp.where(live.reshape(live.shape + (1,) * x.ndim), x[None], d[None]), env, dead)
