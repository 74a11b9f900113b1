"""The game state shared by every c4jax game, and the pieces the games share.

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
import functools
from typing import Protocol

import jax
import jax.numpy as jnp

__all__ = ["Env", "Game", "NO_WINNER", "one_game_or_batch"]

NO_WINNER = -1


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
        :class:`~c4jax.connect4.Connect4` or :class:`~c4jax.tictactoe.TicTacToe`).
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
    """The contract a game meets to be searched, played and tested: the one
    place it is written down.  :mod:`c4jax.connect4` and
    :mod:`c4jax.tictactoe` meet it; so can your own game, outside the package
    (``examples/tictactoe4.py``), and :func:`c4jax.testing.check_game` checks it.

    The game object is static: frozen, hashable, holding no arrays (it is the
    ``game`` field of every :class:`Env` it makes, pytree metadata).

    Attributes:
      name: a short name (``"connect4"``, ``"tictactoe"``, yours).
      num_actions: ``A``, actions are the ints ``0..A-1``.
      max_plies: the longest game; a game ends by then (a draw on a full
        board).
      stones_shape: ``Env.stones``'s shape for one game, ``uint32`` (optional:
        without it only the dtype and the batch axes are checked).

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


# ----------------------------------------------------------------------------
# Shared helpers for the games' hot loops (trace-time only; no arrays at import).

_GOLDEN = 0x9E3779B9


def hash_u32(x: jax.Array) -> jax.Array:
    """A counter-based 32-bit mixing hash (lowbias32 constants, C. Wellons).

    Args:
      x: ``uint32[...]``.
    Returns:
      ``uint32[...]``, well-mixed bits: consecutive counters give independent
      looking values, so one seed drawn from a JAX key drives a whole rollout.
    """
    x = x.astype(jnp.uint32)
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    x = x ^ (x >> 16)
    return x


def rollout_random(seed: jax.Array, counter: jax.Array) -> jax.Array:
    """``uint32[]`` random bits for step ``counter`` of the rollout ``seed``."""
    return hash_u32(seed + counter.astype(jnp.uint32) * jnp.uint32(_GOLDEN))


def pick_uniform(mask: jax.Array, bits: jax.Array) -> jax.Array:
    """One-hot choice, uniform over the ``True`` entries of ``mask``.

    Args:
      mask: ``bool[A]``, at least one entry ``True`` (A <= 256).
      bits: ``uint32[]`` random bits.
    Returns:
      ``bool[A]`` with exactly one ``True`` (all ``False`` if ``mask`` is).
      The index is ``floor(u * n)`` with ``u`` from the top 24 bits, so the
      bias is below ``2**-24`` per move.
    """
    m = mask.astype(jnp.uint32)
    n = jnp.sum(m, axis=-1, dtype=jnp.uint32)
    r = ((bits >> 8) * n) >> 24
    return mask & (jnp.cumsum(m, axis=-1, dtype=jnp.uint32) == r + 1)


def seed_from_key(key: jax.Array) -> jax.Array:
    """``uint32[]`` seed for :func:`rollout_random`; the key is consumed."""
    return jax.random.bits(key, (), jnp.uint32)


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


def win_else_block(win: jax.Array, block: jax.Array, otherwise: jax.Array | None) -> jax.Array:
    """The win-else-block rule (the heuristic of the Connect 4 mctx
    tutorials; the heuristic prior, rollout and player): ``bool[A]``, the
    moves that win at once if there is one, else those that block the
    opponent's immediate win if there is one, else ``otherwise`` (``None``:
    no move, one select fewer, as the prior needs)."""
    if otherwise is None:
        return jnp.where(jnp.any(win), win, block)
    return jnp.where(jnp.any(win), win, jnp.where(jnp.any(block), block, otherwise))


def with_opponent_to_move(env: Env) -> Env:
    """The same position with the other player to move (to ask
    ``winning_moves`` for the opponent's immediate wins)."""
    return dataclasses.replace(env, to_move=1 - env.to_move)


def win_else_block_moves(env: Env, otherwise: jax.Array | None) -> jax.Array:
    """:func:`win_else_block` of one game's position: its winning moves, and
    the opponent's (the moves that block them), from ``winning_moves``."""
    game = env.game
    legal = game.legal_action_mask(env)
    win = game.winning_moves(env)
    block = game.winning_moves(with_opponent_to_move(env)) & legal
    return win_else_block(win, block, otherwise)


def playout(key, env: Env, *, words, legal, wins, drop, has_line, heuristic: bool) -> jax.Array:
    """The rollout loop every game shares, on mover-relative bit words.

    Game hooks (on the game's word shape ``S``: ``[cols]`` or ``[]``):
    ``words(env) -> (stones_p0, stones_p1)``; ``legal(occ) -> bool[A]``;
    ``wins(stones, occ) -> bool[A]`` (moves completing a line, for the
    heuristic policy); ``drop(onehot bool[A], occ) -> S`` (the new stone's
    bits); ``has_line(stones) -> bool[]``.

    Returns ``float32[]``: the result for the player to move in ``env``
    (+1/0/-1); a finished ``env`` is not played (its own result).
    """
    seed = seed_from_key(key)
    p0, p1 = words(env)
    mine = jnp.where(env.to_move == 0, p0, p1)
    max_plies = env.game.max_plies

    def cond(state):
        return ~state[3]

    def body(state):
        cur, occ, ply, _, i, _ = state
        mask = legal(occ)
        if heuristic:
            win = wins(cur, occ)
            mask = win_else_block(win, wins(cur ^ occ, occ), mask)
        bits = drop(pick_uniform(mask, rollout_random(seed, i)), occ)
        me = cur | bits
        occ = occ | bits
        ply = ply + 1
        won = has_line(me)
        # float32 literals: under JAX_ENABLE_X64 a bare 1.0 would be float64.
        result = jnp.where(won, jnp.where(i % 2 == 0, jnp.float32(1), jnp.float32(-1)), jnp.float32(0))
        return (occ ^ me, occ, ply, won | (ply >= max_plies), i + 1, result)

    init = (mine, p0 | p1, env.ply, env.done, jnp.int32(0), result_for_player_to_move(env))
    return jax.lax.while_loop(cond, body, init)[5].astype(jnp.float32)


def as_action(action) -> jax.Array:
    """An action as ``int32[]``, for ``env_step``.

    Integers outside the int32 range become -1 (an illegal move, which ends
    the game with a loss for the mover), never a wrapped-around legal move.

    Raises:
      ValueError: (at trace time) for a non-integer action (a float, a bool, a
        string) or one that is not a scalar (``jax.vmap`` for a batch).
    """
    import numpy as np

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


def move_list(moves) -> list:
    """A game's ``moves`` given as a sequence (``[4, 4, 5]``) as a list, for
    ``from_moves``.

    Raises:
      ValueError: ``moves`` is not iterable (``None``, a number), naming the
        two forms ``from_moves`` takes.
    """
    try:
        return list(moves)
    except TypeError:
        raise ValueError(
            f"moves must be a string of digits or a sequence of ints; got {type(moves).__name__}"
        ) from None


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


def one_game_or_batch(*, key: int | None = None):
    """Decorates a game method ``method(self, *args)`` written for one game so
    that it also takes a batch: the convention of every jit-able game function
    (``legal_action_mask``, ``env_step``, ``winning_moves``, ``rollout``,
    ``heuristic_rollout``, ``board_array``).

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
                    from c4jax.keys import keys_for_games

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


# --- positions from a board (from_board) ---------------------------------------------------

_CELLS = {".": 0, "-": 0, "_": 0, "0": 0, "x": 1, "1": 1, "o": 2, "2": 2}


def _cell_value(v, r: int, c: int) -> int:
    import numpy as np

    if isinstance(v, str):
        if v.strip().lower() in _CELLS and len(v.strip()) == 1:
            return _CELLS[v.strip().lower()]
    elif not isinstance(v, (bool, np.bool_)) and isinstance(v, (int, float, np.integer, np.floating)):
        if float(v) in (0.0, 1.0, 2.0):
            return int(v)
    raise ValueError(
        f"cell (row {r + 1}, column {c + 1}) is {v!r}: a cell is 0 or '.' (empty), 1 or 'X', 2 or 'O'"
    )


def board_grid(board, rows: int, cols: int):
    """A board as people draw it, as ``int8[rows, cols]`` (0 empty, 1 X, 2 O;
    row 0 the top row).

    ``board``: a nested list, a NumPy or JAX array of shape ``[rows, cols]``
    (cells 0/1/2, or 'X'/'O'/'.' in any case), or a string of rows top first
    separated by ``/`` or newlines (``"......./...X..."``).

    Raises:
      ValueError: naming the problem: not a board, a wrong shape (a flat list
        of ``rows * cols`` cells is named as such), a bad cell value.
    """
    import numpy as np

    shape = f"[{rows}, {cols}] (rows top first)"
    if isinstance(board, str):
        lines = [ln.strip() for ln in board.replace("\n", "/").split("/")]
        lines = [ln.replace(" ", "") for ln in lines if ln]
        cells = [list(ln) for ln in lines]
    else:
        if hasattr(board, "shape") and hasattr(board, "dtype"):  # NumPy or JAX
            board = np.asarray(board)
            if board.ndim == 1 and board.size == rows * cols:
                raise ValueError(
                    f"board must have shape {shape}; got a flat array of {board.size} cells: "
                    f"reshape it first (np.reshape(board, ({rows}, {cols})))"
                )
            if board.shape != (rows, cols):
                raise ValueError(f"board must have shape {shape}; got shape {board.shape}")
            cells = board.tolist()
        else:
            try:
                cells = [list(row) for row in board]
            except TypeError:
                if isinstance(board, (list, tuple)):
                    if len(board) == rows * cols:
                        raise ValueError(
                            f"board must have shape {shape}; got a flat list of {len(board)} cells: "
                            f"reshape it first (np.reshape(board, ({rows}, {cols})))"
                        ) from None
                raise ValueError(
                    f"board must be a nested list, an array of shape {shape} or a string of rows; "
                    f"got {type(board).__name__}"
                ) from None
    if len(cells) != rows:
        raise ValueError(f"board must have shape {shape}; got {len(cells)} rows")
    for r, row in enumerate(cells):
        if len(row) != cols:
            raise ValueError(f"board must have shape {shape}; row {r + 1} has {len(row)} cells")
    return np.array([[_cell_value(v, r, c) for c, v in enumerate(row)] for r, row in enumerate(cells)], np.int8)


def _runs(grid, player: int, connect: int) -> list[list[tuple[int, int]]]:
    """Every maximal straight run of ``player``'s stones of length >=
    ``connect`` (a list of cells)."""
    rows, cols = grid.shape
    found = []
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        for r in range(rows):
            for c in range(cols):
                if grid[r, c] != player:
                    continue
                pr, pc = r - dr, c - dc
                if 0 <= pr < rows and 0 <= pc < cols and grid[pr, pc] == player:
                    continue  # not the start of its run
                run = []
                rr, cc = r, c
                while 0 <= rr < rows and 0 <= cc < cols and grid[rr, cc] == player:
                    run.append((rr, cc))
                    rr, cc = rr + dr, cc + dc
                if len(run) >= connect:
                    found.append(run)
    return found


def position_from_grid(grid, connect: int, gravity: bool, to_move=None) -> dict:
    """What a board says of its game, checked: ``{"to_move", "ply", "done",
    "winner"}`` for ``grid`` (:func:`board_grid`), X moving first, a line
    of ``connect`` winning; ``gravity``: stones rest on the bottom row or on
    another stone (Connect 4).  ``to_move``: None (from the stone counts),
    0/1 or 'X'/'O'.

    Raises:
      ValueError: a floating stone, impossible stone counts, two winners, a
        winner who did not move last (or whose lines no single last move
        made), a ``to_move`` that contradicts the counts, or a ``to_move``
        that is not one of None, 0, 1, 'X', 'O'.
    """
    import numpy as np

    rows, cols = grid.shape
    if gravity:
        for c in range(cols):
            for r in range(rows - 1):
                if grid[r, c] and not grid[r + 1, c]:
                    raise ValueError(
                        f"the stone at row {r + 1}, column {c + 1} (rows from the top) floats: "
                        "a stone rests on the bottom row or on another stone"
                    )
    x, o = int(np.sum(grid == 1)), int(np.sum(grid == 2))
    if x not in (o, o + 1):
        raise ValueError(
            f"impossible stone counts: {x} X and {o} O (X moves first, so X has as many stones as O "
            "or one more)"
        )
    by_counts = 0 if x == o else 1
    if to_move is not None:
        if isinstance(to_move, str) and to_move.strip().upper() in ("X", "O"):
            wanted = "XO".index(to_move.strip().upper())
        elif not isinstance(to_move, (bool, np.bool_)) and isinstance(to_move, (int, np.integer)) and to_move in (0, 1):
            wanted = int(to_move)
        else:
            raise ValueError(f"to_move must be None, 0 or 'X', 1 or 'O'; got {to_move!r}")
        if wanted != by_counts:
            raise ValueError(
                f"to_move is {'XO'[wanted]} but the board has {x} X and {o} O, so {'XO'[by_counts]} is to move"
            )
    runs = {p: _runs(grid, p, connect) for p in (1, 2)}
    if runs[1] and runs[2]:
        raise ValueError(f"both X and O have {connect} in a row: a game ends at the first line")
    winner = -1
    for p in (1, 2):
        if not runs[p]:
            continue
        name = "XO"[p - 1]
        if by_counts != 2 - p:  # the winner must have moved last
            raise ValueError(
                f"{name} has {connect} in a row but {name} did not move last ({x} X, {o} O): "
                "a game ends at the winning move"
            )
        # The last move is one stone (on top of its column, with gravity)
        # that every line goes through, and without which none is left.
        def top(r, c):
            return not gravity or r == 0 or grid[r - 1, c] == 0

        def ends_all(cell):
            for run in runs[p]:
                if cell not in run:
                    return False
                i = run.index(cell)
                if i >= connect or len(run) - 1 - i >= connect:
                    return False  # the run holds a line without it
            return True

        if not any(top(*cell) and ends_all(cell) for run in runs[p] for cell in run):
            raise ValueError(
                f"{name}'s lines of {connect} cannot all come from its last move: the game would "
                "have ended earlier"
            )
        winner = p - 1
    done = winner >= 0 or x + o == rows * cols
    return {"to_move": by_counts, "ply": x + o, "done": done, "winner": winner}
