"""Tic-tac-toe as pure JAX functions (same contract as :mod:`c4jax.games.connect4`,
batches included: the jit-able functions, :func:`perfect_action_values` too,
take one game or a batch and ``vmap`` themselves; :func:`solve`,
``from_moves`` and the drawings take one game).

Actions are the cells, 0-based, row by row from the top left::

     0 | 1 | 2        (1-based cell numbers, used by from_moves and the
    ---+---+---        terminal game, are these plus one)
     3 | 4 | 5
    ---+---+---
     6 | 7 | 8

``Env.stones[p, 0]`` is player ``p``'s 9-bit mask, bit ``i`` = cell ``i``.
X (player 0) moves first.  An illegal action (an occupied cell, an index
outside ``[0, 9)``) ends the game with reward -1 for the mover; stepping a
finished game changes nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from c4jax.games.positions import board_grid, position_from_grid
from c4jax.games.env import GAME_FUNCTIONS, NO_WINNER, Env, check_game, empty_board, env_from_values, finish_step
from c4jax.games.positions import as_action, digit_moves, move_list, one_game_or_batch
from c4jax.games.rollout import playout
from c4jax.games.tictactoe_solver import FULL, LINE_MASKS, count_minimax_nodes, has_line, solution_table, solve_masks

__all__ = [
    "TicTacToe",
    "GAME",
    *GAME_FUNCTIONS,
    "LINES",
    "solve",
    "count_minimax_nodes",
    "solution_table",
    "perfect_action_values",
]

# The eight winning lines as 9-bit masks (numpy constants, no JAX work at import).
LINES = np.array(LINE_MASKS, dtype=np.uint32)


@dataclasses.dataclass(frozen=True)
class TicTacToe:
    """Tic-tac-toe on the 3x3 board; hashable, carries no arrays."""

    @property
    def name(self) -> str:
        return "tictactoe"

    @property
    def num_actions(self) -> int:
        return 9

    title = "tic-tac-toe"
    action_name = "cell"

    def perfect_action_values(self, env: Env) -> jax.Array:
        """:func:`perfect_action_values`: exact values of every action."""
        return perfect_action_values(env)

    @property
    def stones_shape(self) -> tuple[int, int]:
        """``Env.stones``'s shape for one game: ``(2, 1)``, a 9-bit mask each."""
        return (2, 1)

    @property
    def max_plies(self) -> int:
        return 9

    rows = 3
    cols = 3

    def __repr__(self) -> str:
        return "TicTacToe()"

    # --- kernels on 9-bit masks ------------------------------------------------
    @staticmethod
    def _has_line(x: jax.Array) -> jax.Array:
        lines = jnp.asarray(LINES)
        return jnp.any((x[..., None] & lines) == lines, axis=-1)

    @staticmethod
    def _threats(x: jax.Array, occupied: jax.Array) -> jax.Array:
        """``uint32[...]``: empty cells that would complete a line for ``x``."""
        lines = jnp.asarray(LINES)
        missing = lines & ~x[..., None]
        single = (missing != 0) & ((missing & (missing - jnp.uint32(1))) == 0)
        hits = jnp.where(single & ((missing & occupied[..., None]) == 0), missing, 0)
        return jax.lax.reduce(hits.astype(jnp.uint32), jnp.uint32(0), jax.lax.bitwise_or, (hits.ndim - 1,))

    @staticmethod
    def _cells(mask: jax.Array) -> jax.Array:
        """``bool[..., 9]`` from a 9-bit mask."""
        return ((mask[..., None] >> jnp.arange(9, dtype=jnp.uint32)) & 1) == 1

    @staticmethod
    def _mask(cells: jax.Array) -> jax.Array:
        """9-bit ``uint32`` mask from ``bool[..., 9]``."""
        weights = jnp.uint32(1) << jnp.arange(9, dtype=jnp.uint32)
        return jnp.sum(jnp.where(cells, weights, 0), axis=-1, dtype=jnp.uint32)

    # --- the rules ----------------------------------------------------------------
    def env_reset(self) -> Env:
        """The empty board, X (player 0) to move.  An unbatched :class:`Env`."""
        return empty_board(self)

    @one_game_or_batch()
    def legal_action_mask(self, env: Env) -> jax.Array:
        """``bool[9]``: the empty cells; all False once the game is over."""
        check_game(self, env)
        occupied = env.stones[..., 0, 0] | env.stones[..., 1, 0]
        return ~self._cells(occupied) & ~env.done[..., None]

    @one_game_or_batch()
    def env_step(self, env: Env, action: jax.Array) -> tuple[Env, jax.Array, jax.Array]:
        """Marks cell ``action`` (``int32[]``, 0-based) for the player to move.

        Returns ``(env, reward, done)`` exactly as
        :meth:`c4jax.games.connect4.Connect4.env_step`: ``float32[]`` reward of the
        mover (+1 win, -1 illegal move, else 0), ``bool[]`` done; a finished
        game is returned unchanged with reward 0.
        """
        check_game(self, env)
        action = as_action(action)
        occupied = env.stones[0, 0] | env.stones[1, 0]
        in_range = (action >= 0) & (action < 9)
        bit = jnp.where(
            in_range, jnp.uint32(1) << jnp.clip(action, 0, 8).astype(jnp.uint32), jnp.uint32(0)
        )
        legal = in_range & ((occupied & bit) == 0)
        bit = jnp.where(legal, bit, jnp.uint32(0))
        mover = env.to_move
        mine = jnp.where(mover == 0, env.stones[0, 0], env.stones[1, 0]) | bit
        new_stones = jnp.where(
            mover == 0,
            jnp.stack([mine, env.stones[1, 0]]),
            jnp.stack([env.stones[0, 0], mine]),
        )[:, None]
        return finish_step(env, new_stones, action, legal, legal & self._has_line(mine))

    @one_game_or_batch()
    def winning_moves(self, env: Env) -> jax.Array:
        """``bool[9]``: cells that win at once for the player to move."""
        check_game(self, env)
        occupied = env.stones[0, 0] | env.stones[1, 0]
        mine = jnp.where(env.to_move == 0, env.stones[0, 0], env.stones[1, 0])
        return self._cells(self._threats(mine, occupied)) & ~env.done

    def _rollout(self, key: jax.Array, env: Env, heuristic: bool) -> jax.Array:
        check_game(self, env)
        return playout(
            key,
            env,
            words=lambda e: (e.stones[0, 0], e.stones[1, 0]),
            legal=lambda occ: ~self._cells(occ),
            wins=lambda x, occ: self._cells(self._threats(x, occ)),
            drop=lambda onehot, occ: self._mask(onehot),
            has_line=self._has_line,
            heuristic=heuristic,
        )

    @one_game_or_batch(key=0)
    def rollout(self, key: jax.Array, env: Env) -> jax.Array:
        """Uniformly random play to the end; ``float32[]`` result (+1/0/-1) for
        the player to move in ``env``.  Same contract as
        :meth:`c4jax.games.connect4.Connect4.rollout`; the key is consumed."""
        return self._rollout(key, env, heuristic=False)

    @one_game_or_batch(key=0)
    def heuristic_rollout(self, key: jax.Array, env: Env) -> jax.Array:
        """Rollout that wins at once if it can, else blocks, else plays at random."""
        return self._rollout(key, env, heuristic=True)

    def from_moves(self, moves: str | Sequence[int]) -> Env:
        """A position from its moves, cells 1-9 row by row from the top left
        (``"519"`` or ``[5, 1, 9]``).

        Raises:
          ValueError: naming the offending move and its 0-based index for a
            bad character, a cell outside 1..9, an occupied cell, a move
            after the game ended, or ``moves`` neither a string nor a
            sequence (``None``, a number).
        """
        if isinstance(moves, str):
            parsed = digit_moves(moves, 9, "cell")
        else:
            parsed = move_list(moves, "cell 1..9")
        marks = [-1] * 9
        player, winner, done, last = 0, NO_WINNER, False, -1
        for i, cell in enumerate(parsed):
            if done:
                raise ValueError(f"move {i + 1} ({cell}) comes after the game ended")
            if not 1 <= cell <= 9:
                raise ValueError(f"move {i + 1} is {cell}: cells are 1..9")
            if marks[cell - 1] >= 0:
                raise ValueError(f"move {i + 1} ({cell}) is on an occupied cell")
            marks[cell - 1] = player
            last = cell - 1
            mask = sum(1 << j for j in range(9) if marks[j] == player)
            if any((mask & int(line)) == int(line) for line in LINES):
                winner, done = player, True
            elif all(m >= 0 for m in marks):
                done = True
            player = 1 - player
        return self._env_from_marks(marks, player, len(parsed), done, winner, last)

    def _env_from_marks(self, marks, player: int, ply: int, done: bool, winner: int, last: int) -> Env:
        """An Env from ``marks[cell]`` (-1 empty, 0 X, 1 O; cells row by row)."""
        stones = np.zeros((2, 1), np.uint32)
        for j, m in enumerate(marks):
            if m >= 0:
                stones[m, 0] |= np.uint32(1 << j)
        return env_from_values(self, stones, player, ply, done, winner, last)

    def from_board(self, board, to_move=None) -> Env:
        """A position from its 3x3 board (the inverse of :meth:`board_array`):
        a nested list, a NumPy or JAX array (top row first; 0 empty, 1 X, 2 O,
        or 'X', 'O', '.'), or a string ``"X../.O./..."``.  ``to_move``: None
        (from the counts) or 0/'X', 1/'O' to check.  ``last_action`` is -1.

        Raises:
          ValueError: naming the problem: a wrong shape or cell value,
            impossible counts, two winners, a winner who did not move last,
            a ``to_move`` that contradicts the counts.
        """
        grid = board_grid(board, 3, 3)
        state = position_from_grid(grid, 3, gravity=False, to_move=to_move)
        marks = [int(v) - 1 for v in grid.reshape(-1)]
        return self._env_from_marks(marks, state["to_move"], state["ply"], state["done"], state["winner"], -1)

    @one_game_or_batch()
    def board_array(self, env: Env) -> jax.Array:
        """``int8[..., 3, 3]``: 0 empty, 1 X, 2 O; row 0 is the top row."""
        check_game(self, env)
        p0 = self._cells(env.stones[..., 0, 0]).astype(jnp.int8)
        p1 = self._cells(env.stones[..., 1, 0]).astype(jnp.int8)
        return (p0 + 2 * p1).reshape(p0.shape[:-1] + (3, 3))


GAME = TicTacToe()
(env_reset, env_step, legal_action_mask, winning_moves, from_moves, from_board, rollout,
 heuristic_rollout, board_array) = (getattr(GAME, name) for name in GAME_FUNCTIONS)


def solve(env: Env) -> np.ndarray:
    """Exact game-theoretic value of every action of one tic-tac-toe position.

    Args:
      env: one unbatched tic-tac-toe :class:`Env` (``stones`` ``uint32[2, 1]``,
        scalar ``to_move``/``done``), e.g. from :func:`from_moves`.  Its arrays
        are read once with numpy; this function cannot be traced by ``jax.jit``
        (use :func:`perfect_action_values` there).

    Returns:
      ``numpy.float32[9]``: for each action (cell 0..8), the negamax value with
      perfect play by both sides *for the player to move*: ``+1`` win, ``0``
      draw, ``-1`` loss.  Illegal actions are ``NaN``: occupied cells, and
      every action of a finished game (``env.done``, or a board that already
      holds a line or is full).

    Raises:
      ValueError: for a batched env (index it first, e.g.
        ``jax.tree.map(lambda a: a[i], env)``), a non-tic-tac-toe env, or a
        running position that cannot arise in play (overlapping stones, or
        stone counts that do not match ``to_move``).

    Method: :mod:`c4jax.games.tictactoe_solver` (negamax with alpha-beta pruning).
    """
    if not isinstance(env.game, TicTacToe):
        raise ValueError(f"solve() takes a tic-tac-toe Env, got game {env.game!r}")
    stones, to_move, done = (np.asarray(a) for a in jax.device_get((env.stones, env.to_move, env.done)))
    if stones.shape != (2, 1) or to_move.shape != () or done.shape != ():
        raise ValueError(
            f"solve() takes one unbatched Env (stones uint32[2, 1]); got stones of shape "
            f"{stones.shape}: index the batch first, e.g. jax.tree.map(lambda a: a[i], env)"
        )
    x, o = int(stones[0, 0]), int(stones[1, 0])
    if (x | o) >> 9 or x & o:
        raise ValueError(f"invalid stones: X mask {x:#011b}, O mask {o:#011b}")
    nan = np.full(9, np.nan, np.float32)
    if bool(done) or has_line(x) or has_line(o) or x | o == FULL:
        return nan
    nx, no, mover = bin(x).count("1"), bin(o).count("1"), int(to_move)
    if mover not in (0, 1) or nx - no != mover:
        raise ValueError(
            f"unreachable running position: {nx} X and {no} O stones with player {mover} to move"
        )
    me, opp = (x, o) if mover == 0 else (o, x)
    return np.asarray(solve_masks(me, opp), np.float32)


def perfect_action_values(env: Env) -> jax.Array:
    """Perfect-play value of every action, looked up in :func:`solution_table`.

    JAX, ``jit``- and ``vmap``-safe.

    Args:
      env: one tic-tac-toe :class:`Env` (``stones`` ``uint32[2, 1]``), or a
        batch (``stones`` ``uint32[..., 2, 1]``: the result gets the batch
        axes in front).
    Returns:
      ``int8[9]``: for the player to move, +1 win, 0 draw, -1 loss under
      perfect play (as :func:`solve`), ``-2`` for illegal actions; all ``-2``
      for a finished game (``env.done``, a line, or a full board) and for a
      board that cannot arise with ``env.to_move`` to move.
    Raises:
      ValueError: (at trace time) for an Env of another game, or whose
        ``stones`` are not ``[..., 2, 1]``.
    """
    check_game(GAME, env)
    if env.batch_shape:
        return jax.vmap(perfect_action_values)(env)
    stones = jnp.asarray(env.stones)
    if stones.shape != (2, 1):
        raise ValueError(
            f"perfect_action_values takes tic-tac-toe Envs (stones [..., 2, 1]); got stones of shape {stones.shape}"
        )
    table = jnp.asarray(solution_table())
    x = stones[0, 0].astype(jnp.uint32)
    o = stones[1, 0].astype(jnp.uint32)
    shifts = jnp.arange(9, dtype=jnp.uint32)
    xc = ((x >> shifts) & 1).astype(jnp.int32)
    oc = ((o >> shifts) & 1).astype(jnp.int32)
    pow3 = jnp.asarray(np.array([3**i for i in range(9)], np.int32))
    valid = ((x & o) == 0) & ((x | o) < (1 << 9))
    idx = jnp.where(valid, jnp.sum((xc + 2 * oc) * pow3), 0)
    mover_ok = jnp.asarray(env.to_move, jnp.int32) == jnp.sum(xc) - jnp.sum(oc)
    ok = valid & mover_ok & ~jnp.asarray(env.done, bool)
    return jnp.where(ok, table[idx], jnp.int8(-2))

