"""Boards as people draw them.  In: a grid of cells parsed and checked
(:func:`board_grid`) and the position it shows (:func:`position_from_grid`:
whose move, whether the game is over), for ``from_board``.  Out: one game's
grid (:func:`unbatched_grid`) and :func:`status_line`, for the drawings.
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from c4jax.env import NO_WINNER, Env

__all__ = ["board_grid", "position_from_grid", "unbatched_grid", "status_line"]


_CELLS = {".": 0, "-": 0, "_": 0, "0": 0, "x": 1, "1": 1, "o": 2, "2": 2}


def _cell_value(v, r: int, c: int) -> int:
    if isinstance(v, str):
        if len(v) == 1 and v.lower() in _CELLS:
            return _CELLS[v.lower()]
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
    (cells 0/1/2, or 'X'/'O'/'.' in any case, one character each), or a
    string of rows top first separated by ``/`` or newlines
    (``"......./...X..."``; spaces within a row and blank lines around the
    rows are ignored).

    Raises:
      ValueError: naming the problem: not a board, a wrong shape (a flat list
        of ``rows * cols`` cells is named as such), an empty row between
        separators (never skipped), a bad cell value.
    """
    shape = f"[{rows}, {cols}] (rows top first)"
    if isinstance(board, str):
        # Blank lines before and after the rows go (a string in triple
        # quotes); an empty row between separators is an error, never skipped.
        lines = ["".join(ln.split()) for ln in board.strip().replace("\n", "/").split("/")]
        for k, ln in enumerate(lines):
            if not ln and len(lines) > 1:
                raise ValueError(f"row {k + 1} of {len(lines)} between '/' or line breaks is empty: "
                                 "a row is a cell per column (rows top first)")
        cells = [list(ln) for ln in lines if ln]
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


def unbatched_grid(game, env: Env) -> np.ndarray:
    """``game.board_array(env)`` of one game as a NumPy array (one compiled
    call, not an eager operation per step); ``ValueError`` for a batch."""
    if env.batch_shape:
        raise ValueError(
            f"render takes one game, got a batch of shape {env.batch_shape}: "
            "index it first (jax.tree.map(lambda x: x[i], env))"
        )
    return np.asarray(_board_array(game)(env))


@functools.lru_cache(maxsize=64)
def _board_array(game):
    return jax.jit(game.board_array)


def status_line(env: Env) -> str:
    """One line: who is to move, or how the game ended (one game)."""
    names = ("X", "O")
    if not bool(env.done):
        return f"{names[int(env.to_move)]} to move (ply {int(env.ply)})"
    winner = int(env.winner)
    if winner == NO_WINNER:
        return "Draw"
    return f"{names[winner]} wins"
