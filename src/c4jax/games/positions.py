"""Positions from what people type: moves (:func:`move_list`,
:func:`digit_moves`, :func:`as_action`) and boards as they draw them (a
grid of cells parsed and checked, :func:`board_grid`, and the position it
shows, :func:`position_from_grid`), for the games' ``from_moves`` and
``from_board``; and :func:`one_game_or_batch`, how a game function takes
one game or a batch.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from c4jax.games.env import NO_WINNER, Env, check_game
from c4jax.keys import keys_for_games

__all__ = ["as_action", "board_grid", "digit_moves", "move_list", "one_game_or_batch", "position_from_grid"]


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
