"""Plain-Python reference rules for Connect 4 (any size, connect-N) and tic-tac-toe.

Written independently of ``c4jax`` to check it: no bit boards, no JAX.  A board
is a list of rows (``grid[r][c]``, row 0 = the top row, as drawn) holding
``"X"`` (the first player), ``"O"`` (the second) or ``None``; lines are found by
walking the grid from a cell in the four directions.

The contract is the library's (``c4jax.games.connect4`` module docstring):

* ``step(state, action)`` returns ``(state, reward, done)``, the reward of the
  mover: +1 if the move makes a line, 0 otherwise (draws included), -1 for an
  illegal move (out of range, full column, occupied cell), which ends the game
  with the opponent as winner and leaves the board as it was.
* Stepping a finished game changes nothing: the same state, reward 0, done True.
* After any move that was accepted (legal or illegal) the player to move flips,
  and ``last_action`` is the action given.

States are never mutated: ``step`` returns a new one.
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Iterable

MARKS = ("X", "O")
NO_WINNER = -1
# (row step, column step) on a grid whose row 0 is the top.
_WALKS = ((1, 0), (0, 1), (1, 1), (1, -1))


@dataclasses.dataclass(frozen=True)
class RefState:
    grid: tuple[tuple[str | None, ...], ...]  # grid[row][col], row 0 = top
    to_move: int = 0  # 0 = X, 1 = O
    ply: int = 0  # stones on the board
    done: bool = False
    winner: int = NO_WINNER
    last_action: int = -1


class GridGame:
    """``connect`` in a row on a ``rows`` x ``cols`` grid, with or without gravity."""

    def __init__(self, rows: int, cols: int, connect: int, gravity: bool):
        self.rows, self.cols, self.connect, self.gravity = rows, cols, connect, gravity

    # --- static facts -------------------------------------------------------
    @property
    def num_actions(self) -> int:
        return self.cols if self.gravity else self.rows * self.cols

    @property
    def max_plies(self) -> int:
        return self.rows * self.cols

    # --- geometry -------------------------------------------------------------
    def target_cell(self, grid, action: int) -> tuple[int, int] | None:
        """The cell ``action`` would fill, or None if the move is illegal."""
        if not isinstance(action, int) or not 0 <= action < self.num_actions:
            return None
        if self.gravity:
            for r in range(self.rows - 1, -1, -1):  # bottom row first
                if grid[r][action] is None:
                    return r, action
            return None
        r, c = divmod(action, self.cols)
        return (r, c) if grid[r][c] is None else None

    def line_through(self, grid, r: int, c: int) -> list[tuple[int, int]] | None:
        """The cells of a line of ``connect`` same marks through ``(r, c)``, if any."""
        mark = grid[r][c]
        if mark is None:
            return None
        for dr, dc in _WALKS:
            cells = [(r, c)]
            for sign in (1, -1):
                rr, cc = r + sign * dr, c + sign * dc
                while 0 <= rr < self.rows and 0 <= cc < self.cols and grid[rr][cc] == mark:
                    cells.append((rr, cc))
                    rr, cc = rr + sign * dr, cc + sign * dc
            if len(cells) >= self.connect:
                return sorted(cells)
        return None

    def has_line(self, grid, mark: str) -> bool:
        """Whether ``mark`` has a line anywhere (a scan of every cell)."""
        return any(
            grid[r][c] == mark and self.line_through(grid, r, c) is not None
            for r in range(self.rows)
            for c in range(self.cols)
        )

    @staticmethod
    def _put(grid, r: int, c: int, mark: str | None):
        row = list(grid[r])
        row[c] = mark
        return grid[:r] + (tuple(row),) + grid[r + 1 :]

    # --- the rules ------------------------------------------------------------
    def reset(self) -> RefState:
        return RefState(grid=tuple((None,) * self.cols for _ in range(self.rows)))

    def legal_moves(self, state: RefState) -> list[bool]:
        if state.done:
            return [False] * self.num_actions
        return [self.target_cell(state.grid, a) is not None for a in range(self.num_actions)]

    def step(self, state: RefState, action: int) -> tuple[RefState, int, bool]:
        if state.done:
            return state, 0, True
        action = int(action)
        mover = state.to_move
        cell = self.target_cell(state.grid, action)
        if cell is None:  # illegal: the opponent wins, the board stays
            new = dataclasses.replace(
                state, to_move=1 - mover, done=True, winner=1 - mover, last_action=action
            )
            return new, -1, True
        grid = self._put(state.grid, *cell, MARKS[mover])
        ply = state.ply + 1
        won = self.line_through(grid, *cell) is not None
        done = won or ply == self.max_plies
        new = RefState(
            grid=grid,
            to_move=1 - mover,
            ply=ply,
            done=done,
            winner=mover if won else NO_WINNER,
            last_action=action,
        )
        return new, (1 if won else 0), done

    def winning_moves(self, state: RefState, player: int | None = None) -> list[bool]:
        """Actions that make a line at once for ``player`` (default: the one to move)."""
        if state.done:
            return [False] * self.num_actions
        mark = MARKS[state.to_move if player is None else player]
        out = []
        for a in range(self.num_actions):
            cell = self.target_cell(state.grid, a)
            out.append(
                cell is not None
                and self.line_through(self._put(state.grid, *cell, mark), *cell) is not None
            )
        return out

    def board(self, state: RefState) -> list[list[int]]:
        """0 empty, 1 X, 2 O; row 0 = top (the library's ``board_array``)."""
        code = {None: 0, "X": 1, "O": 2}
        return [[code[v] for v in row] for row in state.grid]

    def play(self, actions: Iterable[int]) -> RefState:
        """The state after 0-based ``actions`` (any, legal or not)."""
        state = self.reset()
        for a in actions:
            state, _, _ = self.step(state, a)
        return state

    def from_ascii(self, text: str, to_move: int | None = None) -> RefState:
        """A state from a drawing: one line per row (top first), ``X``/``O``/``.``.

        Spaces are ignored.  ``to_move`` defaults to X when the counts are
        equal, O when X has one more stone.
        """
        lines = [ln.replace(" ", "") for ln in text.strip().splitlines()]
        assert len(lines) == self.rows and all(len(ln) == self.cols for ln in lines), text
        grid = tuple(tuple({"X": "X", "O": "O", ".": None}[ch] for ch in ln) for ln in lines)
        nx = sum(row.count("X") for row in grid)
        no = sum(row.count("O") for row in grid)
        if to_move is None:
            assert nx - no in (0, 1), text
            to_move = nx - no
        if self.gravity:  # no stone floats above an empty cell
            for c in range(self.cols):
                col = [grid[r][c] for r in range(self.rows)]
                first = next((r for r, v in enumerate(col) if v is not None), self.rows)
                assert all(v is not None for v in col[first:]), f"floating stone in column {c}"
        done, winner = False, NO_WINNER
        for p, mark in enumerate(MARKS):
            if self.has_line(grid, mark):
                done, winner = True, p
        if nx + no == self.max_plies:
            done = True
        return RefState(grid=grid, to_move=to_move, ply=nx + no, done=done, winner=winner)

    # --- exact random play, by enumeration ------------------------------------
    def opens_line_cell(self, state: RefState, action: int, player: int) -> bool:
        """Whether ``action``'s stone makes the cell above it playable while
        that cell, filled by ``player``, would complete a line of ``player``'s
        present stones (gravity only)."""
        cell = self.target_cell(state.grid, action)
        if not self.gravity or cell is None or cell[0] == 0:
            return False
        above = (cell[0] - 1, cell[1])
        return self.line_through(self._put(state.grid, *above, MARKS[player]), *above) is not None

    def heuristic_choices(self, state: RefState, threat_aware: bool = False) -> list[int]:
        """The moves the win-else-block-else-random policy picks among; with
        ``threat_aware``, the random move avoids opening a cell that completes
        a line for the opponent, and then one for the mover, as long as a
        legal move is left."""
        wins = self.winning_moves(state)
        if any(wins):
            return [a for a, w in enumerate(wins) if w]
        blocks = self.winning_moves(state, player=1 - state.to_move)
        if any(blocks):
            return [a for a, b in enumerate(blocks) if b]
        moves = [a for a, ok in enumerate(self.legal_moves(state)) if ok]
        if threat_aware:
            for player in (1 - state.to_move, state.to_move):
                kept = [a for a in moves if not self.opens_line_cell(state, a, player)]
                if not kept:
                    break
                moves = kept
        return moves

    def exact_playout(self, state: RefState, heuristic: bool = False, threat_aware: bool = False,
                      exact: bool = True):
        """Exact outcome of uniform (or heuristic, or threat-aware heuristic)
        play to the end from ``state``.

        Returns ``(p_x_wins, p_o_wins, p_draw, expected_plies_played)`` as
        ``Fraction``s, or (``exact=False``) as floats: the same sums in
        double precision, many times faster on boards of many positions.
        Memoised on the position; fine for tic-tac-toe and tiny Connect 4
        boards.
        """
        memo: dict = {}
        number = Fraction if exact else float

        def go(s: RefState):
            if s.done:
                return (
                    number(s.winner == 0),
                    number(s.winner == 1),
                    number(s.winner == NO_WINNER),
                    number(0),
                )
            key = (s.grid, s.to_move)
            if key in memo:
                return memo[key]
            moves = (
                self.heuristic_choices(s, threat_aware)
                if heuristic or threat_aware
                else [a for a, ok in enumerate(self.legal_moves(s)) if ok]
            )
            acc = [number(0)] * 4
            for a in moves:
                child = go(self.step(s, a)[0])
                for i in range(3):
                    acc[i] += child[i]
                acc[3] += child[3] + 1
            out = tuple(x / len(moves) for x in acc)
            memo[key] = out
            return out

        return go(state)


class Connect4Ref(GridGame):
    def __init__(self, rows: int = 6, cols: int = 7, connect: int = 4):
        super().__init__(rows, cols, connect, gravity=True)


class TicTacToeRef(GridGame):
    def __init__(self):
        super().__init__(3, 3, 3, gravity=False)


def reference_for(game) -> GridGame:
    """The reference for a ``c4jax`` game object (by its static description)."""
    if game.name == "tictactoe":
        return TicTacToeRef()
    return Connect4Ref(game.rows, game.cols, game.connect)
