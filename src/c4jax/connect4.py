"""Connect 4 of any size (connect-N) as pure JAX functions.

The module-level functions play the standard game: 6 rows, 7 columns, four in
a row.  ``make(rows, cols, connect)`` returns a :class:`Connect4` whose methods
are the same functions for another board.  Every function works eagerly, under
``jax.jit`` and under ``jax.vmap``.

Batches: every ``jit``-able function (``env_step``, ``legal_action_mask``,
``winning_moves``, ``rollout``, ``heuristic_rollout``, ``board_array``) takes
one game or a batch of games (an :class:`~c4jax.env.Env` with the same leading
batch axes on every array field) and ``vmap`` s itself over the batch;
``env_step`` then takes one action per game, the rollouts one key (split into
one per game) or one key per game (:func:`c4jax.env.one_game_or_batch`).
Shapes below are for one game; a batch puts its axes in front.  The host-side
functions (``from_moves``, ``render``, ``render_rich``) take one game;
``render`` and ``render_rich`` raise ``ValueError`` for a batch.

Rules (the contract the search relies on):

* Actions are 0-based columns, ``int32`` in ``[0, cols)``.
* ``env_step`` returns the reward of the player who moved: +1 if the move
  completes a line of ``connect`` stones, 0 otherwise (draws included).  A win
  with the last empty cell is a win, not a draw.
* An illegal action (a full column, an index out of range) ends the game: the
  board is unchanged, the mover gets reward -1 and the opponent is the winner.
* Stepping a finished game changes nothing: same env, reward 0, done True.

Board layout: one ``uint32`` word per column, bit ``r`` = row ``r`` from the
bottom (see :mod:`c4jax.env`).  A column's occupied bits are always
``2**height - 1``, so the cell a stone drops into is ``occupied + 1``.  Win
detection is branch-free: runs of ``connect`` stones in the four directions,
found with ``log2(connect)`` shift-and steps over the whole board.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from c4jax.env import NO_WINNER, Env, as_action, check_game, finish_step, move_list, one_game_or_batch, playout
from c4jax.keys import as_key

__all__ = [
    "Connect4",
    "make",
    "env_reset",
    "env_step",
    "legal_action_mask",
    "winning_moves",
    "from_moves",
    "rollout",
    "heuristic_rollout",
    "render",
    "render_rich",
    "board_array",
    "MIN_ROWS",
    "MAX_ROWS",
    "MIN_COLS",
    "MAX_COLS",
    "MIN_CONNECT",
]

MIN_ROWS, MAX_ROWS = 3, 32  # a column is one uint32 word
MIN_COLS, MAX_COLS = 3, 64
MIN_CONNECT = 3

# The four line directions as (column step, row step).
_DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


@dataclasses.dataclass(frozen=True)
class Connect4:
    """Connect-``connect`` on a ``rows`` x ``cols`` board with gravity.

    Build one with :func:`make` (it validates the size).  Instances are
    hashable and carry no arrays; they are the static ``game`` field of every
    :class:`~c4jax.env.Env` they create.
    """

    rows: int = 6
    cols: int = 7
    connect: int = 4

    # --- static facts ------------------------------------------------------
    @property
    def name(self) -> str:
        return "connect4"

    @property
    def num_actions(self) -> int:
        return self.cols

    @property
    def max_plies(self) -> int:
        return self.rows * self.cols

    @property
    def _full(self) -> int:
        return (1 << self.rows) - 1

    def __repr__(self) -> str:
        return f"Connect4(rows={self.rows}, cols={self.cols}, connect={self.connect})"

    # --- bit-board kernels (shape [..., cols], uint32) ----------------------
    def _shift(self, x: jax.Array, dc: int, dr: int) -> jax.Array:
        """``y[c]`` has bit ``r`` iff ``x`` has the cell ``(c + dc, r + dr)``."""
        cols = self.cols
        if dc:
            pad = jnp.zeros(x.shape[:-1] + (min(abs(dc), cols),), x.dtype)
            if dc >= cols or -dc >= cols:
                x = jnp.zeros_like(x)
            elif dc > 0:
                x = jnp.concatenate([x[..., dc:], pad], axis=-1)
            else:
                x = jnp.concatenate([pad, x[..., : cols + dc]], axis=-1)
        if dr >= 32 or -dr >= 32:
            return jnp.zeros_like(x)
        if dr > 0:
            x = x >> dr
        elif dr < 0:
            x = (x << -dr) & jnp.uint32(self._full)
        return x

    def _has_line(self, x: jax.Array) -> jax.Array:
        """``bool[...]``: whether the stones ``x`` (``uint32[..., cols]``) hold a line."""
        k = self.connect
        found = jnp.zeros(x.shape, jnp.uint32)
        for dc, dr in _DIRECTIONS:
            runs, length = x, 1  # runs: cells starting a run of `length` stones
            while 2 * length <= k:
                runs = runs & self._shift(runs, dc * length, dr * length)
                length *= 2
            if length < k:  # k - length < length: two overlapping runs cover k
                runs = runs & self._shift(runs, dc * (k - length), dr * (k - length))
            found = found | runs
        return jnp.any(found != 0, axis=-1)

    def _threats(self, x: jax.Array, occupied: jax.Array) -> jax.Array:
        """``uint32[..., cols]``: empty cells that would complete a line for ``x``."""
        k = self.connect
        full = jnp.uint32(self._full)
        cells = jnp.zeros(x.shape, jnp.uint32)
        for dc, dr in _DIRECTIONS:
            ahead = [jnp.full(x.shape, full)]  # ahead[m]: the m cells after are x
            behind = [jnp.full(x.shape, full)]
            for m in range(1, k):
                ahead.append(ahead[-1] & self._shift(x, dc * m, dr * m))
                behind.append(behind[-1] & self._shift(x, -dc * m, -dr * m))
            for j in range(k):
                cells = cells | (behind[j] & ahead[k - 1 - j])
        return cells & ~occupied & full

    def _playable(self, occupied: jax.Array) -> jax.Array:
        """``uint32[..., cols]``: the cell a stone would drop into (0 if full)."""
        return (occupied + jnp.uint32(1)) & jnp.uint32(self._full)

    # --- the rules ------------------------------------------------------------
    def env_reset(self) -> Env:
        """The empty board, player 0 to move.  Returns an unbatched :class:`Env`."""
        return Env(
            stones=jnp.zeros((2, self.cols), jnp.uint32),
            to_move=jnp.int32(0),
            ply=jnp.int32(0),
            done=jnp.bool_(False),
            winner=jnp.int32(NO_WINNER),
            last_action=jnp.int32(-1),
            game=self,
        )

    @one_game_or_batch()
    def legal_action_mask(self, env: Env) -> jax.Array:
        """``bool[cols]``: the columns that are not full; all False once done."""
        check_game(self, env)
        occupied = env.stones[..., 0, :] | env.stones[..., 1, :]
        return (occupied != jnp.uint32(self._full)) & ~env.done[..., None]

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
        legal = jnp.any(onehot & (occupied != jnp.uint32(self._full)))
        drop = jnp.where(onehot & legal, occupied + jnp.uint32(1), jnp.uint32(0))
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
        hits = self._threats(mine, occupied) & self._playable(occupied)
        return (hits != 0) & ~env.done

    def _rollout(self, key: jax.Array, env: Env, heuristic: bool) -> jax.Array:
        check_game(self, env)
        key = as_key(key)
        if key.shape != ():
            raise ValueError(f"a rollout of one game takes one key; got keys of shape {key.shape}")
        full = jnp.uint32(self._full)
        return playout(
            key,
            env,
            words=lambda e: (e.stones[0], e.stones[1]),
            legal=lambda occ: occ != full,
            wins=lambda x, occ: (self._threats(x, occ) & self._playable(occ)) != 0,
            drop=lambda onehot, occ: jnp.where(onehot, occ + jnp.uint32(1), jnp.uint32(0)),
            has_line=self._has_line,
            heuristic=heuristic,
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
        (ties broken uniformly).  About 3x the cost of a random ply, much
        stronger per rollout.  Same arguments and return value."""
        return self._rollout(key, env, heuristic=True)

    # --- positions from and to text -----------------------------------------
    def from_moves(self, moves: str | Sequence[int]) -> Env:
        """A position from its move list, 1-based columns.

        Args:
          moves: a string of digits (Pascal Pons' notation, ``"4453"``; only
            for boards of at most 9 columns), or a sequence of ints (any
            width).  Spaces and commas in a string are ignored.
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
            text = moves.replace(" ", "").replace(",", "")
            if cols > 9 and text:
                raise ValueError(
                    f"a {rows}x{cols} board has more than 9 columns: give the moves as "
                    f"a sequence of ints 1..{cols}, not a string"
                )
            parsed = []
            for i, ch in enumerate(text):
                if ch not in "123456789"[:cols]:
                    raise ValueError(
                        f"move {i} is {ch!r}: expected a column digit 1..{cols}"
                    )
                parsed.append(int(ch))
        else:
            parsed = []
            for i, m in enumerate(move_list(moves)):
                if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
                    raise ValueError(f"move {i} is {m!r}: expected an int column 1..{cols}")
                parsed.append(int(m))
        grid = [[-1] * cols for _ in range(rows)]  # grid[row from bottom][col]
        heights = [0] * cols
        player, winner, done, last = 0, NO_WINNER, False, -1
        for i, col in enumerate(parsed):
            if done:
                raise ValueError(f"move {i} ({col}) comes after the game ended")
            if not 1 <= col <= cols:
                raise ValueError(f"move {i} is {col}: columns are 1..{cols}")
            c = col - 1
            if heights[c] >= rows:
                raise ValueError(f"move {i} ({col}) is into a full column")
            r = heights[c]
            grid[r][c] = player
            heights[c] += 1
            last = c
            if _python_line_through(grid, r, c, self.connect):
                winner, done = player, True
            elif sum(heights) == rows * cols:
                done = True
            player = 1 - player
        stones = np.zeros((2, cols), np.uint32)
        for r in range(rows):
            for c in range(cols):
                if grid[r][c] >= 0:
                    stones[grid[r][c], c] |= np.uint32(1 << r)
        return Env(
            stones=jnp.asarray(stones),
            to_move=jnp.int32(player),
            ply=jnp.int32(len(parsed)),
            done=jnp.bool_(done),
            winner=jnp.int32(winner),
            last_action=jnp.int32(last),
            game=self,
        )

    @one_game_or_batch()
    def board_array(self, env: Env) -> jax.Array:
        """``int8[..., rows, cols]``: 0 empty, 1 player 0 (X), 2 player 1 (O);
        row 0 is the top row, as drawn."""
        check_game(self, env)
        r = jnp.arange(self.rows - 1, -1, -1, dtype=jnp.uint32)[:, None]
        p0 = (env.stones[..., 0, None, :] >> r) & 1
        p1 = (env.stones[..., 1, None, :] >> r) & 1
        return (p0 + 2 * p1).astype(jnp.int8)

    def render(self, env: Env) -> str:
        """A plain-text drawing of one game: the board (``X`` moves first,
        ``O`` second, ``.`` empty), the column numbers (1-based) and a status
        line.  Raises ``ValueError`` for a batch."""
        grid = _unbatched_grid(self, env)
        w = len(str(self.cols)) + 1
        lines = ["".join(" XO"[v].replace(" ", ".").rjust(w) for v in row) for row in grid]
        lines.append("".join(str(c + 1).rjust(w) for c in range(self.cols)))
        lines.append(status_line(env))
        return "\n".join(lines)

    def render_rich(self, env: Env, *, ascii_only: bool = False, width: int | None = None):
        """A coloured :class:`rich.text.Text` of one game for the terminal
        (red X, yellow O, the last move underlined, then the column numbers
        1-based and a status line).

        Args:
          env: one game (a batch raises ``ValueError``).
          ascii_only: draw empty cells as ``.`` instead of ``\u00b7`` (for
            outputs whose encoding has no such glyph).
          width: the characters a line may take (the terminal's or a pipe's
            width).  A board that is wider in the usual drawing (each cell
            right-aligned under its column number) is drawn one character per
            cell, the column numbers written downwards over as many lines as
            their digits, so that no row breaks.  ``None``: the usual drawing.
        """
        from rich.text import Text

        grid = _unbatched_grid(self, env)
        last = int(env.last_action)
        top = -1
        if last >= 0:
            col = grid[:, last]
            nz = np.nonzero(col)[0]
            top = int(nz[0]) if len(nz) else -1
        digits = len(str(self.cols))
        w = digits + 1
        compact = width is not None and self.cols * w > width
        if compact:
            w = 1
        empty = "." if ascii_only else "\u00b7"
        text = Text()
        for r, row in enumerate(grid):
            for c, v in enumerate(row):
                style = {0: "dim", 1: "bold red", 2: "bold yellow"}[int(v)]
                if r == top and c == last:
                    style += " underline"
                text.append(" " * (w - 1))
                text.append((empty + "XO")[int(v)], style=style)
            text.append("\n")
        if compact:
            # Column numbers written downwards: line i holds digit i of each
            # number, right-aligned (column 12 of 30: " ", "1", "2" -> "1" over "2").
            labels = [str(c + 1).rjust(digits) for c in range(self.cols)]
            text.append("\n".join("".join(s[i] for s in labels) for i in range(digits)), style="cyan")
        else:
            text.append("".join(str(c + 1).rjust(w) for c in range(self.cols)), style="cyan")
        text.append("\n" + status_line(env))
        return text


def _unbatched_grid(game, env: Env) -> np.ndarray:
    if env.batch_shape:
        raise ValueError(
            f"render takes one game, got a batch of shape {env.batch_shape}: "
            "index it first (jax.tree.map(lambda x: x[i], env))"
        )
    return np.asarray(game.board_array(env))


def status_line(env: Env) -> str:
    """One line: who is to move, or how the game ended (one game)."""
    names = ("X", "O")
    if not bool(env.done):
        return f"{names[int(env.to_move)]} to move (ply {int(env.ply)})"
    winner = int(env.winner)
    if winner == NO_WINNER:
        return "Draw"
    return f"{names[winner]} wins"


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
      rows: board height, ``3..32`` (a column is one 32-bit word).
      cols: board width, ``3..64``; it is also the number of actions.
      connect: stones in a row that win, ``3..max(rows, cols)``.
    Returns:
      A hashable :class:`Connect4` with the same functions as this module.
    Raises:
      ValueError: naming the allowed range when a size makes no game.
    """
    for name, value, lo, hi in (
        ("rows", rows, MIN_ROWS, MAX_ROWS),
        ("cols", cols, MIN_COLS, MAX_COLS),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"{name} must be an int in {lo}..{hi}, got {value!r}")
        if not lo <= value <= hi:
            raise ValueError(f"{name} must be in {lo}..{hi}, got {value}")
    hi = max(rows, cols)
    if isinstance(connect, bool) or not isinstance(connect, (int, np.integer)):
        raise ValueError(f"connect must be an int in {MIN_CONNECT}..{hi}, got {connect!r}")
    if not MIN_CONNECT <= connect <= hi:
        raise ValueError(
            f"connect must be in {MIN_CONNECT}..{hi} (= max(rows, cols)) "
            f"for a {rows}x{cols} board, got {connect}"
        )
    return _make(int(rows), int(cols), int(connect))


_STANDARD = _make(6, 7, 4)
env_reset = _STANDARD.env_reset
env_step = _STANDARD.env_step
legal_action_mask = _STANDARD.legal_action_mask
winning_moves = _STANDARD.winning_moves
from_moves = _STANDARD.from_moves
rollout = _STANDARD.rollout
heuristic_rollout = _STANDARD.heuristic_rollout
render = _STANDARD.render
render_rich = _STANDARD.render_rich
board_array = _STANDARD.board_array
