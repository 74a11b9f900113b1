"""Tic-tac-toe as pure JAX functions (same contract as :mod:`c4jax.connect4`,
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
import functools
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from c4jax.env import NO_WINNER, Env, as_action, check_game, empty_board, finish_step, move_list, one_game_or_batch, playout
from c4jax.keys import as_key

__all__ = [
    "TicTacToe",
    "GAME",
    "env_reset",
    "env_step",
    "legal_action_mask",
    "winning_moves",
    "from_moves",
    "from_board",
    "rollout",
    "heuristic_rollout",
    "render",
    "render_rich",
    "board_array",
    "LINES",
    "solve",
    "count_minimax_nodes",
    "solution_table",
    "perfect_action_values",
]

# The eight winning lines as 9-bit masks (numpy constants, no JAX work at import).
LINES = np.array(
    [
        0b000000111, 0b000111000, 0b111000000,  # rows
        0b001001001, 0b010010010, 0b100100100,  # columns
        0b100010001, 0b001010100,  # diagonals
    ],
    dtype=np.uint32,
)
_ALL = 0b111111111


@dataclasses.dataclass(frozen=True)
class TicTacToe:
    """Tic-tac-toe on the 3x3 board; hashable, carries no arrays."""

    @property
    def name(self) -> str:
        return "tictactoe"

    @property
    def num_actions(self) -> int:
        return 9

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
        :meth:`c4jax.connect4.Connect4.env_step`: ``float32[]`` reward of the
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
        key = as_key(key)
        if key.shape != ():
            raise ValueError(f"a rollout of one game takes one key; got keys of shape {key.shape}")
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
        :meth:`c4jax.connect4.Connect4.rollout`; the key is consumed."""
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
            parsed = []
            for i, ch in enumerate(moves.replace(" ", "").replace(",", "")):
                if ch not in "123456789":
                    raise ValueError(f"move {i + 1} is {ch!r}: expected a cell digit 1..9")
                parsed.append(int(ch))
        else:
            parsed = []
            for i, m in enumerate(move_list(moves)):
                if isinstance(m, bool) or not isinstance(m, (int, np.integer)):
                    raise ValueError(f"move {i + 1} is {m!r}: expected an int cell 1..9")
                parsed.append(int(m))
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
        return Env(
            stones=jnp.asarray(stones),
            to_move=jnp.int32(player),
            ply=jnp.int32(ply),
            done=jnp.bool_(done),
            winner=jnp.int32(winner),
            last_action=jnp.int32(last),
            game=self,
        )

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
        from c4jax.env import board_grid, position_from_grid

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

    def render(self, env: Env) -> str:
        """Plain text of one game: X, O, and the number of each empty cell,
        then a status line.  Raises ``ValueError`` for a batch."""
        from c4jax.connect4 import _unbatched_grid, status_line

        grid = _unbatched_grid(self, env)
        rows = []
        for r in range(3):
            rows.append(
                " " + " | ".join(
                    "XO"[grid[r, c] - 1] if grid[r, c] else str(3 * r + c + 1) for c in range(3)
                )
            )
        return "\n---+---+---\n".join(rows) + "\n" + status_line(env)

    def render_rich(self, env: Env, *, ascii_only: bool = False, width: int | None = None):
        """A coloured :class:`rich.text.Text` of one game (empty cells dim,
        numbered 1-9).  The drawing is ASCII and 12 characters wide whatever
        ``ascii_only`` and ``width`` say (they are there so that both games
        draw with the same call; see :meth:`c4jax.connect4.Connect4.render_rich`).
        Raises ``ValueError`` for a batch."""
        from rich.text import Text

        from c4jax.connect4 import _unbatched_grid, status_line

        grid = _unbatched_grid(self, env)
        last = int(env.last_action)
        text = Text()
        for r in range(3):
            for c in range(3):
                v = int(grid[r, c])
                cell = 3 * r + c
                style = {0: "dim", 1: "bold red", 2: "bold yellow"}[v]
                if cell == last:
                    style += " underline"
                text.append(" ")
                text.append("XO"[v - 1] if v else str(cell + 1), style=style)
                text.append(" |" if c < 2 else "\n")
            if r < 2:
                text.append("---+---+---\n", style="dim")
        text.append(status_line(env))
        return text


GAME = TicTacToe()
env_reset = GAME.env_reset
env_step = GAME.env_step
legal_action_mask = GAME.legal_action_mask
winning_moves = GAME.winning_moves
from_moves = GAME.from_moves
from_board = GAME.from_board
rollout = GAME.rollout
heuristic_rollout = GAME.heuristic_rollout
render = GAME.render
render_rich = GAME.render_rich
board_array = GAME.board_array


# =============================================================================
# Exact solver (plain Python, no JAX inside the search)
#
# Negamax with alpha-beta pruning (Knuth & Moore, "An analysis of alpha-beta
# pruning", Artificial Intelligence 6(4), 1975; Russell & Norvig, "Artificial
# Intelligence: A Modern Approach", ch. 5 "Adversarial Search"), move ordering,
# and a memo (transposition table) keyed on (x_mask, o_mask) holding proven
# lower/upper bounds, so that a bound found under a narrow window is never
# mistaken for an exact value.  Everything here is built lazily: importing the
# module does no search and creates no arrays.

# The eight lines as plain ints, and for each cell the lines through it.
_LINES_PY = (0b000000111, 0b000111000, 0b111000000, 0b001001001,
             0b010010010, 0b100100100, 0b100010001, 0b001010100)
_CELL_LINES = tuple(tuple(l for l in _LINES_PY if l >> c & 1) for c in range(9))
# Static move order: centre, corners, edges.
_STATIC_ORDER = (4, 0, 2, 6, 8, 1, 3, 5, 7)
# The memo: (x_mask, o_mask) -> (lower, upper) bound of the value for the
# player to move.  Filled on demand; every entry is a proven bound.
_TT: dict[tuple[int, int], tuple[int, int]] = {}
_COUNT_METHODS = ("minimax", "alphabeta", "alphabeta_ordered")


def _has_line_py(mask: int) -> bool:
    return any(mask & l == l for l in _LINES_PY)


def _completes_line(mask: int, cell: int) -> bool:
    """Whether adding ``cell`` to ``mask`` makes a line through it."""
    m = mask | (1 << cell)
    return any(m & l == l for l in _CELL_LINES[cell])


def _ordered_moves(me: int, opp: int) -> list[int]:
    """Empty cells: immediate wins, then forced blocks, then centre, corners, edges."""
    occ = me | opp
    empty = [c for c in _STATIC_ORDER if not occ >> c & 1]
    wins = [c for c in empty if _completes_line(me, c)]
    blocks = [c for c in empty if c not in wins and _completes_line(opp, c)]
    rest = [c for c in empty if c not in wins and c not in blocks]
    return wins + blocks + rest


def _negamax(me: int, opp: int, alpha: int, beta: int) -> int:
    """Value (-1/0/+1) for the player to move (stones ``me``) of a running game.

    Fail-soft alpha-beta: a result ``<= alpha`` is an upper bound, ``>= beta``
    a lower bound, anything in between exact; with the window ``(-1, 1)`` the
    result is always exact (no value lies outside ``[-1, 1]``).
    """
    key = (me, opp) if bin(me).count("1") == bin(opp).count("1") else (opp, me)
    lo, hi = _TT.get(key, (-1, 1))
    if lo == hi or lo >= beta:
        return lo
    if hi <= alpha:
        return hi
    a0, b0 = max(alpha, lo), min(beta, hi)
    a, full = a0, me | opp
    best = -2
    for c in _ordered_moves(me, opp):
        bit = 1 << c
        if _completes_line(me, c):
            v = 1
        elif full | bit == _ALL:
            v = 0
        else:
            v = -_negamax(opp, me | bit, -b0, -a)
        if v > best:
            best = v
            if v > a:
                a = v
                if a >= b0:
                    break
    if best <= a0:
        hi = min(hi, best)
    elif best >= b0:
        lo = max(lo, best)
    else:
        lo = hi = best
    _TT[key] = (lo, hi)
    return min(max(best, lo), hi)


def _solve_masks(me: int, opp: int) -> list[float]:
    """Exact value of each of the 9 actions of a running game (NaN if occupied)."""
    out = [float("nan")] * 9
    occ = me | opp
    for c in range(9):
        bit = 1 << c
        if occ & bit:
            continue
        if _completes_line(me, c):
            out[c] = 1.0
        elif occ | bit == _ALL:
            out[c] = 0.0
        else:
            out[c] = float(-_negamax(opp, me | bit, -1, 1))
    return out


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

    Method: negamax with alpha-beta pruning (Knuth & Moore 1975; Russell &
    Norvig, *Artificial Intelligence: A Modern Approach*, ch. 5), moves
    ordered immediate wins, forced blocks, centre, corners, edges, and a memo
    on ``(x_mask, o_mask)`` that stores proven bounds only, so it never
    changes a returned value.
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
    if bool(done) or _has_line_py(x) or _has_line_py(o) or x | o == _ALL:
        return nan
    nx, no, mover = bin(x).count("1"), bin(o).count("1"), int(to_move)
    if mover not in (0, 1) or nx - no != mover:
        raise ValueError(
            f"unreachable running position: {nx} X and {no} O stones with player {mover} to move"
        )
    me, opp = (x, o) if mover == 0 else (o, x)
    return np.asarray(_solve_masks(me, opp), np.float32)


def count_minimax_nodes(method: str) -> int:
    """Number of nodes a full search of the empty board visits.

    Every position entered counts once, the root and the finished games at the
    leaves included (a game stops at a line or a full board).  No memo.

    Args:
      method: ``"minimax"``: plain minimax, cells tried in order 0..8 (the
        whole game tree: 549,946 nodes); ``"alphabeta"``: alpha-beta (Knuth &
        Moore 1975), same order, root window ``(-inf, +inf)``;
        ``"alphabeta_ordered"``: the same with immediate wins first, then
        forced blocks, then centre, corners, edges.
    Returns:
      ``int``, the node count.
    Raises:
      ValueError: for any other ``method``.
    """
    if method not in _COUNT_METHODS:
        raise ValueError(f"method must be one of {_COUNT_METHODS}, got {method!r}")
    count = 0
    inf = 2  # larger than any game value

    def search(me: int, opp: int, alpha: int, beta: int, prune: bool, ordered: bool) -> int:
        # Negamax; without `prune` it is plain minimax (every node visited).
        nonlocal count
        count += 1
        if _has_line_py(opp):
            return -1
        occ = me | opp
        if occ == _ALL:
            return 0
        moves = _ordered_moves(me, opp) if ordered else [c for c in range(9) if not occ >> c & 1]
        best = -inf
        for c in moves:
            best = max(best, -search(opp, me | (1 << c), -beta, -alpha, prune, ordered))
            alpha = max(alpha, best)
            if prune and alpha >= beta:
                break
        return best

    value = search(0, 0, -inf, inf, method != "minimax", method == "alphabeta_ordered")
    assert value == 0, value  # tic-tac-toe is a draw
    return count


@functools.lru_cache(maxsize=None)
def solution_table() -> np.ndarray:
    """Perfect-play values of every action of every tic-tac-toe board.

    Returns:
      ``numpy.int8[19683, 9]`` (read-only, built on the first call and cached):
      row ``idx = sum(cell_state[i] * 3**i)`` (``cell_state`` 0 empty, 1 X,
      2 O; cell ``i`` as in the actions) holds :func:`solve`'s values for the
      player to move (X if the counts are equal, else O) as ``int8``
      (+1/0/-1), with ``-2`` for illegal actions.  Rows of unreachable boards
      (bad stone counts) and of finished boards (a line, or full) are all -2.
    """
    table = np.full((3**9, 9), -2, np.int8)
    for idx in range(3**9):
        x = o = 0
        r = idx
        for i in range(9):
            r, s = divmod(r, 3)
            if s == 1:
                x |= 1 << i
            elif s == 2:
                o |= 1 << i
        diff = bin(x).count("1") - bin(o).count("1")
        if diff not in (0, 1) or x | o == _ALL or _has_line_py(x) or _has_line_py(o):
            continue
        me, opp = (x, o) if diff == 0 else (o, x)
        vals = _solve_masks(me, opp)
        table[idx] = [-2 if v != v else int(v) for v in vals]
    table.flags.writeable = False
    return table


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

