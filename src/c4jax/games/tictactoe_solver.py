"""Exact tic-tac-toe values in plain Python: negamax with alpha-beta pruning
over the two players' 9-bit masks (bit ``i`` = cell ``i``).

Method: negamax with alpha-beta (Knuth & Moore, "An analysis of alpha-beta
pruning", Artificial Intelligence 6(4), 1975; Russell & Norvig, *Artificial
Intelligence: A Modern Approach*, ch. 5), moves ordered immediate wins, forced
blocks, centre, corners, edges, and a memo on the position holding proven
lower/upper bounds only, so a bound found under a narrow window is never taken
for an exact value.  Nothing is searched at import.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["FULL", "LINE_MASKS", "has_line", "solve_masks", "count_minimax_nodes", "solution_table"]

FULL = 0b111111111  # every cell taken
# The eight lines (rows, columns, diagonals), and for each cell the lines through it.
LINE_MASKS = (0b000000111, 0b000111000, 0b111000000, 0b001001001,
              0b010010010, 0b100100100, 0b100010001, 0b001010100)
_CELL_LINES = tuple(tuple(l for l in LINE_MASKS if l >> c & 1) for c in range(9))
# Static move order: centre, corners, edges.
_STATIC_ORDER = (4, 0, 2, 6, 8, 1, 3, 5, 7)
# The memo: (x_mask, o_mask) -> (lower, upper) bound of the value for the
# player to move.  Filled on demand; every entry is a proven bound.
_TT: dict[tuple[int, int], tuple[int, int]] = {}
_COUNT_METHODS = ("minimax", "alphabeta", "alphabeta_ordered")


def has_line(mask: int) -> bool:
    """Whether the 9-bit ``mask`` holds a line."""
    return any(mask & l == l for l in LINE_MASKS)


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
        elif full | bit == FULL:
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


def solve_masks(me: int, opp: int) -> list[float]:
    """The exact value of each of the 9 actions for the player to move (stones
    ``me``; the opponent's ``opp``) of a running game: +1 win, 0 draw, -1
    loss; NaN for an occupied cell."""
    out = [float("nan")] * 9
    occ = me | opp
    for c in range(9):
        bit = 1 << c
        if occ & bit:
            continue
        if _completes_line(me, c):
            out[c] = 1.0
        elif occ | bit == FULL:
            out[c] = 0.0
        else:
            out[c] = float(-_negamax(opp, me | bit, -1, 1))
    return out


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
        if has_line(opp):
            return -1
        occ = me | opp
        if occ == FULL:
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
      2 O; cell ``i`` as in the actions) holds :func:`c4jax.games.tictactoe.solve`'s values for the
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
        if diff not in (0, 1) or x | o == FULL or has_line(x) or has_line(o):
            continue
        me, opp = (x, o) if diff == 0 else (o, x)
        vals = solve_masks(me, opp)
        table[idx] = [-2 if v != v else int(v) for v in vals]
    table.flags.writeable = False
    return table
