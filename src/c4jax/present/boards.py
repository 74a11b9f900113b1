"""One game's board as plain text (:func:`render`) and for the terminal
(:func:`render_rich`), drawn from the game's ``board_array``: a game whose
actions are its columns (Connect 4) is drawn with the column numbers
under the board; a game whose actions are its cells (tic-tac-toe) with the
number of each empty cell in it.  Every drawing ends with a status line.
"""

from __future__ import annotations

import functools

import jax
import numpy as np

from c4jax.games.env import NO_WINNER, Env

__all__ = ["render", "render_rich", "status_line", "unbatched_grid"]

_STYLES = {0: "dim", 1: "bold red", 2: "bold yellow"}


def unbatched_grid(game, env: Env) -> np.ndarray:
    """``game.board_array(env)`` of one game as a NumPy array.

    Raises:
      ValueError: ``env`` is a batch.
    """
    if env.batch_shape:
        raise ValueError(
            f"render takes one game, got a batch of shape {env.batch_shape}: "
            "index it first (jax.tree.map(lambda x: x[i], env))"
        )
    return np.asarray(_board_array(game)(env))


@functools.lru_cache(maxsize=64)
def _board_array(game):
    return jax.jit(game.board_array)  # one compiled call, not an eager operation per step


def status_line(env: Env) -> str:
    """One line: who is to move, or how the game ended (one game)."""
    names = ("X", "O")
    if not bool(env.done):
        return f"{names[int(env.to_move)]} to move (ply {int(env.ply)})"
    winner = int(env.winner)
    if winner == NO_WINNER:
        return "Draw"
    return f"{names[winner]} wins"


def _by_columns(game, grid: np.ndarray) -> bool:
    return game.num_actions == grid.shape[1] and grid.shape[0] > 1


def render(game, env: Env) -> str:
    """A plain-text drawing of one game of ``game``: ``X`` (moves first),
    ``O`` and empty cells (``.``, or the cell's number where actions are
    cells), the column numbers (1-based) where actions are columns, then
    :func:`status_line`.

    Raises:
      ValueError: ``env`` is a batch.
    """
    grid = unbatched_grid(game, env)
    rows, cols = grid.shape
    if _by_columns(game, grid):
        w = len(str(cols)) + 1
        lines = ["".join(".XO"[v].rjust(w) for v in row) for row in grid]
        lines.append("".join(str(c + 1).rjust(w) for c in range(cols)))
        return "\n".join(lines + [status_line(env)])
    w = len(str(rows * cols))
    lines = [" " + " | ".join(("XO"[v - 1] if v else str(r * cols + c + 1)).rjust(w) for c, v in enumerate(row))
             for r, row in enumerate(grid)]
    rule = "+".join(["-" * (w + 2)] * cols)
    return f"\n{rule}\n".join(lines) + "\n" + status_line(env)


def render_rich(game, env: Env, *, ascii_only: bool = False, width: int | None = None):
    """:func:`render` as a coloured :class:`rich.text.Text` for the terminal
    (red X, yellow O, the last move underlined).

    Args:
      game: the game of ``env``.
      env: one game.
      ascii_only: draw empty cells as ``.`` instead of ``\u00b7`` (for
        outputs whose encoding has no such glyph).
      width: the characters a line may take (the terminal's or a pipe's).
        A board by columns that is wider in the usual drawing (each cell
        under its column number) is drawn one character per cell, the
        column numbers written downwards over as many lines as their
        digits, so that no row breaks.  ``None``: the usual drawing.

    Raises:
      ValueError: ``env`` is a batch.
    """
    from rich.text import Text

    grid = unbatched_grid(game, env)
    rows, cols = grid.shape
    last = int(env.last_action)
    text = Text()
    if not _by_columns(game, grid):
        w = len(str(rows * cols))
        for r, row in enumerate(grid):
            for c, v in enumerate(row):
                cell = r * cols + c
                style = _STYLES[int(v)] + (" underline" if cell == last else "")
                text.append(" ")
                text.append(("XO"[v - 1] if v else str(cell + 1)).rjust(w), style=style)
                text.append(" |" if c < cols - 1 else "\n")
            if r < rows - 1:
                text.append("+".join(["-" * (w + 2)] * cols) + "\n", style="dim")
        text.append(status_line(env))
        return text
    top = -1
    if last >= 0:
        filled = np.nonzero(grid[:, last])[0]
        top = int(filled[0]) if len(filled) else -1
    digits = len(str(cols))
    compact = width is not None and cols * (digits + 1) > width
    w = 1 if compact else digits + 1
    empty = "." if ascii_only else "\u00b7"
    for r, row in enumerate(grid):
        for c, v in enumerate(row):
            style = _STYLES[int(v)] + (" underline" if r == top and c == last else "")
            text.append(" " * (w - 1))
            text.append((empty + "XO")[int(v)], style=style)
        text.append("\n")
    if compact:
        # Line i holds digit i of each column number, right-aligned.
        labels = [str(c + 1).rjust(digits) for c in range(cols)]
        text.append("\n".join("".join(s[i] for s in labels) for i in range(digits)), style="cyan")
    else:
        text.append("".join(str(c + 1).rjust(w) for c in range(cols)), style="cyan")
    text.append("\n" + status_line(env))
    return text
