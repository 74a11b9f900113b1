"""Connect 4 of any size (connect-N) as pure JAX functions.

The module-level functions play the standard game: 6 rows, 7 columns, four in
a row.  ``make(rows, cols, connect)`` returns a :class:`Connect4` whose methods
are the same functions for another board.  Every function works eagerly, under
``jax.jit`` and under ``jax.vmap``.

Batches: every ``jit``-able function (``env_step``, ``legal_action_mask``,
``winning_moves``, the three rollouts, ``board_array``) takes
one game or a batch of games (an :class:`~c4jax.games.env.Env` with the same leading
batch axes on every array field) and ``vmap`` s itself over the batch;
``env_step`` then takes one action per game, the rollouts one key (split into
one per game) or one key per game (:func:`c4jax.games.positions.one_game_or_batch`).
Shapes below are for one game; a batch puts its axes in front.  ``from_moves``
and ``from_board`` make one game (drawings: :mod:`c4jax.present.boards`).

Rules (the contract the search relies on):

* Actions are 0-based columns, ``int32`` in ``[0, cols)``.
* ``env_step`` returns the reward of the player who moved: +1 if the move
  completes a line of ``connect`` stones, 0 otherwise (draws included).  A win
  with the last empty cell is a win, not a draw.
* An illegal action (a full column, an index out of range) ends the game: the
  board is unchanged, the mover gets reward -1 and the opponent is the winner.
* Stepping a finished game changes nothing: same env, reward 0, done True.

Board layout: one ``uint32`` word per column up to 32 rows, bit ``r`` = row
``r`` from the bottom (see :mod:`c4jax.games.env`); from 33 to 64 rows two words
per column, stored word-major (``stones[p, w * cols + c]``, bit ``r`` of word
``w`` = row ``32 * w + r``), so ``stones`` is ``uint32[2, num_words * cols]``.
A column's occupied bits are always ``2**height - 1``, so the cell a stone
drops into is ``occupied + 1`` (with a carry between the words of a tall
column).  Win detection is branch-free: runs of ``connect`` stones in the four
directions, found with ``log2(connect)`` shift-and steps over the whole board,
row shifts carrying bits across words.  A board of up to 32 rows runs the
one-word code only.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from c4jax.games.positions import board_grid, position_from_grid
from c4jax.games.env import GAME_FUNCTIONS, NO_WINNER, Env, check_game, empty_board, env_from_values, finish_step
from c4jax.games.positions import as_action, digit_moves, move_list, one_game_or_batch
from c4jax.games.rollout import playout
from c4jax.validation import check_int

__all__ = [
    "Connect4",
    "make",
    *GAME_FUNCTIONS,
    "threat_aware_rollout",
    "MIN_ROWS",
    "MAX_ROWS",
    "MIN_COLS",
    "MAX_COLS",
    "MIN_CONNECT",
]

MIN_ROWS, MAX_ROWS = 3, 64  # a column is one uint32 word up to 32 rows, two up to 64
WORD_BITS = 32
MIN_COLS, MAX_COLS = 3, 64
MIN_CONNECT = 3

def _and(a: tuple, b: tuple) -> tuple:
    return tuple(x & y for x, y in zip(a, b))


def _or(a: tuple, b: tuple) -> tuple:
    return tuple(x | y for x, y in zip(a, b))


# The four line directions as (column step, row step).
_DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


def _traced_once(method):
    """``method`` of a game (its other arguments arrays) jitted with the game
    static and inlined: a search calls it at several places, and JAX traces
    its Python once per shape instead of once per call (the program is the
    same)."""
    jitted = jax.jit(method, static_argnums=0, inline=True)

    @functools.wraps(method)
    def call(self, *args):
        return jitted(self, *args)

    return call


@dataclasses.dataclass(frozen=True)
class Connect4:
    """Connect-``connect`` on a ``rows`` x ``cols`` board with gravity.

    Build one with :func:`make` (it validates the size).  Instances are
    hashable and carry no arrays; they are the static ``game`` field of every
    :class:`~c4jax.games.env.Env` they create.
    """

    rows: int = 6
    cols: int = 7
    connect: int = 4

    # --- static facts ------------------------------------------------------
    @property
    def name(self) -> str:
        return "connect4"

    @property
    def params(self) -> dict[str, int]:
        """``make(**params)`` rebuilds this game (:func:`c4jax.make`)."""
        return {"rows": self.rows, "cols": self.cols, "connect": self.connect}

    @property
    def num_actions(self) -> int:
        return self.cols

    action_name = "column"

    @property
    def title(self) -> str:
        """``"Connect 4"`` on the standard board, else e.g. ``"Connect 5 on 9
        columns x 8 rows"`` (``make(rows=8, cols=9, connect=5)``)."""
        if (self.rows, self.cols, self.connect) == (6, 7, 4):
            return "Connect 4"
        return f"Connect {self.connect} on {self.cols} columns x {self.rows} rows"

    @property
    def max_plies(self) -> int:
        return self.rows * self.cols

    @property
    def stones_shape(self) -> tuple[int, int]:
        """``Env.stones``'s shape for one game: ``(2, num_words * cols)``."""
        return (2, self.num_words * self.cols)

    @property
    def num_words(self) -> int:
        """``uint32`` words per column: ``ceil(rows / 32)`` (1 up to 32 rows, 2 up to 64)."""
        return -(-self.rows // WORD_BITS)

    @property
    def _fulls(self) -> tuple[int, ...]:
        """Per word, the mask of its rows (word ``w`` holds rows ``32w ..``)."""
        return tuple(
            (1 << min(WORD_BITS, self.rows - WORD_BITS * w)) - 1 for w in range(self.num_words)
        )

    def __repr__(self) -> str:
        return f"Connect4(rows={self.rows}, cols={self.cols}, connect={self.connect})"

    # --- bit-board kernels ----------------------------------------------------
    # A player's stones are stored as ``uint32[..., num_words * cols]``, word
    # ``w`` of every column first (``[w * cols + c]``).  The kernels below work
    # on a *board*: the tuple of the ``num_words`` arrays ``uint32[..., cols]``
    # (one array up to 32 rows, so that 7x6 runs exactly the one-word code).
    def _split(self, x: jax.Array) -> tuple[jax.Array, ...]:
        if self.num_words == 1:
            return (x,)
        c = self.cols
        return tuple(x[..., w * c : (w + 1) * c] for w in range(self.num_words))

    def _join(self, words: tuple[jax.Array, ...]) -> jax.Array:
        return words[0] if len(words) == 1 else jnp.concatenate(words, axis=-1)

    def _per_word(self, mask: jax.Array) -> jax.Array:
        """``[..., cols]`` -> the stored layout ``[..., num_words * cols]``."""
        return mask if self.num_words == 1 else jnp.concatenate([mask] * self.num_words, axis=-1)

    def _any_per_column(self, x: jax.Array | tuple) -> jax.Array:
        """``bool[..., cols]``: the columns with a bit set in ``x`` (stored
        layout, or a board)."""
        words = x if isinstance(x, tuple) else self._split(x)
        out = words[0] != 0
        for w in words[1:]:
            out = out | (w != 0)
        return out

    def _shift_cols(self, x: jax.Array, dc: int) -> jax.Array:
        cols = self.cols
        if not dc:
            return x
        if dc >= cols or -dc >= cols:
            return jnp.zeros_like(x)
        pad = jnp.zeros(x.shape[:-1] + (abs(dc),), x.dtype)
        if dc > 0:
            return jnp.concatenate([x[..., dc:], pad], axis=-1)
        return jnp.concatenate([pad, x[..., : cols + dc]], axis=-1)

    def _shift(self, board: tuple, dc: int, dr: int) -> tuple:
        """The board ``y`` with the cell ``(c, r)`` iff ``board`` has ``(c + dc, r + dr)``."""
        return self._shift_rows(tuple(self._shift_cols(x, dc) for x in board), dr)

    def _shift_rows(self, board: tuple, dr: int) -> tuple:
        """:meth:`_shift` by ``dr`` rows only.  Rows shift across words: with
        ``q, s = divmod(dr, 32)``, output word ``w`` takes the high bits of
        word ``w + q`` and the low bits of word ``w + q + 1``; words off the
        board are empty."""
        if not dr:
            return board
        n = len(board)
        q, s = divmod(dr, WORD_BITS)
        out = []
        for w in range(n):
            lo = board[w + q] if 0 <= w + q < n else None
            hi = board[w + q + 1] if s and 0 <= w + q + 1 < n else None
            parts = []
            if lo is not None:
                parts.append(lo >> s if s else lo)
            if hi is not None:
                parts.append(hi << (WORD_BITS - s))
            y = functools.reduce(jnp.bitwise_or, parts) if parts else jnp.zeros_like(board[w])
            if dr < 0:  # bits pushed above the top row
                y = y & jnp.uint32(self._fulls[w])
            out.append(y)
        return tuple(out)

    @_traced_once
    def _has_line(self, x: jax.Array) -> jax.Array:
        """``bool[...]``: whether the stones ``x`` (stored layout) hold a line."""
        k = self.connect
        board = self._split(x)
        found = tuple(jnp.zeros(w.shape, jnp.uint32) for w in board)
        for dc, dr in _DIRECTIONS:
            runs, length = board, 1  # runs: cells starting a run of `length` stones
            while 2 * length <= k:
                runs = _and(runs, self._shift(runs, dc * length, dr * length))
                length *= 2
            if length < k:  # k - length < length: two overlapping runs cover k
                runs = _and(runs, self._shift(runs, dc * (k - length), dr * (k - length)))
            found = _or(found, runs)
        return jnp.any(self._any_per_column(found), axis=-1)

    @_traced_once
    def _threats(self, x: jax.Array, occupied: jax.Array) -> jax.Array:
        """Stored layout: the empty cells that would complete a line for
        ``x``, on a board with gravity (a vertical line ends at the cell: an
        empty cell has no stone above it)."""
        k, cols = self.connect, self.cols
        board = self._split(x)
        fulls = tuple(jnp.uint32(f) for f in self._fulls)
        # Every column shift is a slice of one board padded with k - 1 empty
        # columns on both sides: XLA fuses a slice into the computation that
        # reads it, while a shift by concatenation is an array of its own.
        pad = k - 1
        padded = tuple(jnp.pad(w, [(0, 0)] * (w.ndim - 1) + [(pad, pad)]) for w in board)

        def shifted(dc: int, dr: int) -> tuple:
            cut = tuple(jax.lax.slice_in_dim(w, pad + dc, pad + dc + cols, axis=-1) for w in padded)
            return self._shift_rows(cut, dr)

        cells = functools.reduce(_and, [self._shift_rows(board, -m) for m in range(1, k)])
        for dc, dr in _DIRECTIONS[1:]:
            ahead = [tuple(jnp.full(w.shape, f) for w, f in zip(board, fulls))]  # the m cells after are x
            behind = [tuple(jnp.full(w.shape, f) for w, f in zip(board, fulls))]
            for m in range(1, k):
                ahead.append(_and(ahead[-1], shifted(dc * m, dr * m)))
                behind.append(_and(behind[-1], shifted(-dc * m, -dr * m)))
            for j in range(k):
                cells = _or(cells, _and(behind[j], ahead[k - 1 - j]))
        occ = self._split(occupied)
        return self._join(tuple(c & ~o & f for c, o, f in zip(cells, occ, fulls)))

    def _next_cells(self, occupied: jax.Array) -> jax.Array:
        """Stored layout: the cell a stone drops into, per column; meaningful
        only in columns that are not full."""
        if self.num_words == 1:
            return occupied + jnp.uint32(1)  # occupied bits are 2**height - 1
        occ = self._split(occupied)
        above = self._shift(occ, 0, -1)  # the cell above each stone
        above = (above[0] | jnp.uint32(1),) + above[1:]
        return self._join(tuple(a & ~o for a, o in zip(above, occ)))

    def _playable(self, occupied: jax.Array) -> jax.Array:
        """Stored layout: the cell a stone would drop into (none if full)."""
        return self._next_cells(occupied) & self._per_word_const(self._fulls)

    def _per_word_const(self, values: tuple[int, ...]) -> jax.Array:
        """Stored layout: word ``w`` of every column set to ``values[w]``."""
        if self.num_words == 1:
            return jnp.uint32(values[0])
        return jnp.asarray(np.repeat(np.asarray(values, np.uint32), self.cols))

    def _legal(self, occupied: jax.Array) -> jax.Array:
        """``bool[..., cols]``: the columns that are not full."""
        if self.num_words == 1:
            return occupied != jnp.uint32(self._fulls[0])
        words = self._split(occupied)
        out = words[0] != jnp.uint32(self._fulls[0])
        for w, f in zip(words[1:], self._fulls[1:]):
            out = out | (w != jnp.uint32(f))
        return out

    def _drop(self, onehot: jax.Array, occupied: jax.Array) -> jax.Array:
        """Stored layout: the stone dropped in the column of ``onehot`` (``bool[..., cols]``,
        a column that is not full), or nothing where ``onehot`` is all False."""
        return jnp.where(self._per_word(onehot), self._next_cells(occupied), jnp.uint32(0))

    # --- the rules ------------------------------------------------------------
    def env_reset(self) -> Env:
        """The empty board, player 0 to move.  Returns an unbatched :class:`Env`."""
        return empty_board(self)

    @one_game_or_batch()
    def legal_action_mask(self, env: Env) -> jax.Array:
        """``bool[cols]``: the columns that are not full; all False once done."""
        check_game(self, env)
        occupied = env.stones[..., 0, :] | env.stones[..., 1, :]
        return self._legal(occupied) & ~env.done[..., None]

    @one_game_or_batch()
    def env_step(self, env: Env, action: jax.Array) -> tuple[Env, jax.Array, jax.Array]:
        """Plays ``action`` for the player to move.

        Args:
          env: one game, or a batch (then ``action`` has one column per game).
          action: ``int32[]`` column, 0-based.  Any integer is accepted: one
            outside ``[0, cols)`` or a full column is an illegal move.
        Returns:
          ``(env, reward, done)``: the new position, ``float32[]`` reward of
          the player who moved (+1 win, -1 illegal move, else 0), and
          ``bool[]`` whether the game is over.  A finished ``env`` comes back
          unchanged with reward 0 and done True.
        """
        check_game(self, env)
        action = as_action(action)
        stones = env.stones
        occupied = stones[0] | stones[1]
        onehot = jnp.arange(self.cols, dtype=jnp.int32) == action
        legal = jnp.any(onehot & self._legal(occupied))
        drop = self._drop(onehot & legal, occupied)
        mover = env.to_move
        mine = jnp.where(mover == 0, stones[0], stones[1]) | drop
        new_stones = jnp.where(
            mover == 0, jnp.stack([mine, stones[1]]), jnp.stack([stones[0], mine])
        )
        return finish_step(env, new_stones, action, legal, legal & self._has_line(mine))

    @one_game_or_batch()
    def winning_moves(self, env: Env) -> jax.Array:
        """``bool[cols]``: the columns that win at once for the player to move.

        All False on a finished game.  Used by the heuristic prior and
        rollouts (win at once, else block).
        """
        check_game(self, env)
        occupied = env.stones[0] | env.stones[1]
        mine = jnp.where(env.to_move == 0, env.stones[0], env.stones[1])
        return self._wins(mine, occupied) & ~env.done

    def _wins(self, x: jax.Array, occupied: jax.Array) -> jax.Array:
        """``bool[..., cols]``: the columns whose next stone completes a line for ``x``."""
        return self._any_per_column(self._threats(x, occupied) & self._playable(occupied))

    def _wins_and_opens(self, x: jax.Array, occupied: jax.Array) -> tuple[jax.Array, jax.Array]:
        """:meth:`_wins`, and the columns whose next stone opens the cell
        above it, an empty cell that would complete a line for ``x`` (one
        computation of the threats)."""
        threats, playable = self._threats(x, occupied), self._playable(occupied)
        above = self._join(self._shift(self._split(playable), 0, -1))
        return self._any_per_column(threats & playable), self._any_per_column(above & threats)

    def _rollout(self, key: jax.Array, env: Env, heuristic: bool, threat_aware: bool = False) -> jax.Array:
        check_game(self, env)
        return playout(
            key,
            env,
            words=lambda e: (e.stones[0], e.stones[1]),
            legal=self._legal,
            wins=self._wins,
            drop=self._drop,
            has_line=self._has_line,
            heuristic=heuristic,
            wins_and_opens=self._wins_and_opens if threat_aware else None,
        )

    @one_game_or_batch(key=0)
    def rollout(self, key: jax.Array, env: Env) -> jax.Array:
        """Plays uniformly random legal moves to the end of the game.

        Args:
          key: a JAX PRNG key; it is consumed (one 32-bit seed drives a
            counter-based hash for every ply, so the rollout is deterministic
            for a key).
          env: one game, or a batch (then ``key`` is one key or one per game).
        Returns:
          ``float32[]``: the result for the player to move in ``env``: +1
          win, 0 draw, -1 loss.  On a finished game nothing is played and the
          result is that game's for ``env.to_move`` (the player who did not
          make the last move): -1 after a win, 0 after a draw, +1 after the
          opponent's illegal move.

        The Monte Carlo leaf evaluation of MCTS (Browne et al. 2012, sec. 3.3,
        the "default policy").
        """
        return self._rollout(key, env, heuristic=False)

    @one_game_or_batch(key=0)
    def heuristic_rollout(self, key: jax.Array, env: Env) -> jax.Array:
        """Like :meth:`rollout`, but each ply wins at once if it can, else
        blocks the opponent's immediate win, else plays uniformly at random
        (ties broken uniformly): costlier per ply than a random one, much
        stronger per rollout.  Same arguments and return value."""
        return self._rollout(key, env, heuristic=True)

    @one_game_or_batch(key=0)
    def threat_aware_rollout(self, key: jax.Array, env: Env) -> jax.Array:
        """Like :meth:`heuristic_rollout`, but a ply that neither wins nor
        blocks plays, at random, a column whose stone opens no cell above it
        where the opponent would complete a line, nor one where the mover
        would; else one that opens none of the opponent's; else any
        (:func:`c4jax.games.rollout.threat_aware`).  So the rollouts play out
        zugzwang: the side that runs out of such columns first gives the
        other its line.  Same arguments and return value."""
        return self._rollout(key, env, heuristic=True, threat_aware=True)

    # --- positions from and to text -----------------------------------------
    def from_moves(self, moves: str | Sequence[int]) -> Env:
        """A position from its move list, 1-based columns.

        Args:
          moves: a string of digits (Pascal Pons' notation, ``"4453"``; only
            for boards of at most 9 columns), or a sequence of ints (any
            width).  Spaces in a string are ignored; commas may separate
            moves, but no field between commas may be empty.
        Returns:
          An unbatched :class:`Env` (possibly a finished game, if the last
          move ended it).
        Raises:
          ValueError: naming the offending move and its 0-based index for a
            bad character, a column outside ``1..cols``, a full column, or a
            move after the game ended; ``moves`` neither a string nor a
            sequence (``None``, a number).
        """
        cols, rows = self.cols, self.rows
        if isinstance(moves, str):
            if cols > 9 and moves.replace(" ", "").replace(",", ""):
                raise ValueError(
                    f"a board of {cols} columns (more than 9) takes the moves as "
                    f"a sequence of ints 1..{cols}, not a string"
                )
            parsed = digit_moves(moves, cols, "column")
        else:
            parsed = move_list(moves, f"column 1..{cols}")
        grid = [[-1] * cols for _ in range(rows)]  # grid[row from bottom][col]
        heights = [0] * cols
        player, winner, done, last = 0, NO_WINNER, False, -1
        for i, col in enumerate(parsed):
            if done:
                raise ValueError(f"move {i + 1} ({col}) comes after the game ended")
            if not 1 <= col <= cols:
                raise ValueError(f"move {i + 1} is {col}: columns are 1..{cols}")
            c = col - 1
            if heights[c] >= rows:
                raise ValueError(f"move {i + 1} ({col}) is into a full column")
            r = heights[c]
            grid[r][c] = player
            heights[c] += 1
            last = c
            if _python_line_through(grid, r, c, self.connect):
                winner, done = player, True
            elif sum(heights) == rows * cols:
                done = True
            player = 1 - player
        return self._env_from_grid(grid, player, len(parsed), done, winner, last)

    def _env_from_grid(self, grid, player: int, ply: int, done: bool, winner: int, last: int) -> Env:
        """An Env from ``grid[row from bottom][col]`` (-1 empty, 0 X, 1 O)."""
        cols = self.cols
        stones = np.zeros((2, self.num_words * cols), np.uint32)
        for r in range(self.rows):
            word, bit = divmod(r, WORD_BITS)
            for c in range(cols):
                if grid[r][c] >= 0:
                    stones[grid[r][c], word * cols + c] |= np.uint32(1 << bit)
        return env_from_values(self, stones, player, ply, done, winner, last)

    def from_board(self, board, to_move=None) -> Env:
        """A position from its board, as people and other programs draw it
        (the inverse of :meth:`board_array`).

        Args:
          board: ``[rows, cols]``, the top row first: a nested list, a NumPy
            or JAX array, cells 0 (empty), 1 (X, who moved first), 2 (O),
            or 'X', 'O', '.' in any case; or a string of rows separated by
            ``/`` (``"......./...X..."``).  Kaggle's ConnectX hands a flat
            list: reshape it to ``[rows, cols]`` first.
          to_move: None (from the stone counts: X if both have as many), or
            0/'X', 1/'O' to check against them.
        Returns:
          An unbatched :class:`Env`: ``ply`` the stones on the board,
          ``done`` and ``winner`` from its lines; ``last_action`` is -1 (a
          board does not say which move was last).
        Raises:
          ValueError: naming the problem: a wrong shape or cell value, a
            floating stone, impossible stone counts, two winners, a winner
            who did not move last (or whose lines no single last move made),
            a ``to_move`` that contradicts the counts.
        """
        top_first = board_grid(board, self.rows, self.cols)
        state = position_from_grid(top_first, self.connect, gravity=True, to_move=to_move)
        grid = [[int(v) - 1 for v in row] for row in top_first[::-1]]  # bottom first, -1 empty
        return self._env_from_grid(grid, state["to_move"], state["ply"], state["done"], state["winner"], -1)

    @one_game_or_batch()
    def board_array(self, env: Env) -> jax.Array:
        """``int8[..., rows, cols]``: 0 empty, 1 player 0 (X), 2 player 1 (O);
        row 0 is the top row, as drawn."""
        check_game(self, env)
        if self.num_words == 1:
            r = jnp.arange(self.rows - 1, -1, -1, dtype=jnp.uint32)[:, None]
            p0 = (env.stones[..., 0, None, :] >> r) & 1
            p1 = (env.stones[..., 1, None, :] >> r) & 1
        else:
            word, bit = np.divmod(np.arange(self.rows - 1, -1, -1), WORD_BITS)
            per_row = env.stones.reshape(env.stones.shape[:-1] + (self.num_words, self.cols))[..., word, :]
            r = jnp.asarray(bit.astype(np.uint32))[:, None]  # per_row: [2, rows, cols]
            p0 = (per_row[..., 0, :, :] >> r) & 1
            p1 = (per_row[..., 1, :, :] >> r) & 1
        return (p0 + 2 * p1).astype(jnp.int8)


def _python_line_through(grid, r: int, c: int, k: int) -> bool:
    """Plain-Python check of a line of ``k`` through ``(r, c)`` (for ``from_moves``)."""
    rows, cols, p = len(grid), len(grid[0]), grid[r][c]
    for dr, dc in ((1, 0), (0, 1), (1, 1), (1, -1)):
        n = 1
        for sign in (1, -1):
            rr, cc = r + sign * dr, c + sign * dc
            while 0 <= rr < rows and 0 <= cc < cols and grid[rr][cc] == p:
                n += 1
                rr, cc = rr + sign * dr, cc + sign * dc
        if n >= k:
            return True
    return False


@functools.lru_cache(maxsize=None)
def _make(rows: int, cols: int, connect: int) -> Connect4:
    return Connect4(rows, cols, connect)


def make(rows: int = 6, cols: int = 7, connect: int = 4) -> Connect4:
    """Connect-``connect`` on a board of ``rows`` x ``cols``.

    Args:
      rows: board height, ``3..64`` (a column is one 32-bit word up to 32
        rows, two above).
      cols: board width, ``3..64``; it is also the number of actions.
      connect: stones in a row that win, ``3..max(rows, cols)``.
    Returns:
      A hashable :class:`Connect4` with the same functions as this module.
    Raises:
      ValueError: naming the allowed range when a size makes no game.
    """
    rows = check_int("rows", rows, MIN_ROWS, MAX_ROWS)
    cols = check_int("cols", cols, MIN_COLS, MAX_COLS)
    connect = check_int("connect", connect, MIN_CONNECT, max(rows, cols),
                        note=f"(max(rows, cols) for rows={rows}, cols={cols})")
    return _make(rows, cols, connect)


_STANDARD = _make(6, 7, 4)
(env_reset, env_step, legal_action_mask, winning_moves, from_moves, from_board, rollout,
 heuristic_rollout, board_array) = (getattr(_STANDARD, name) for name in GAME_FUNCTIONS)
threat_aware_rollout = _STANDARD.threat_aware_rollout
