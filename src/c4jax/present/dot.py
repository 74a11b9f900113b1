"""The search tree as Graphviz DOT text: :func:`tree_to_dot`.

Plain text (no graphviz dependency); render it with ``dot -Tsvg tree.dot``,
as mctx's visualisation demo does with pygraphviz.
"""

from __future__ import annotations

import math

import mctx
import numpy as np
from c4jax.validation import check_int

__all__ = ["tree_to_dot"]


def tree_to_dot(tree: mctx.Tree, batch_index: int = 0, max_depth: int | None = None, min_visits: int = 0) -> str:
    """Graphviz DOT text of one game's search tree.

    Args:
      tree: a tree from :func:`c4jax.run_mcts` (``out.search_tree``, batched
        ``[B, N, ...]``; an unbatched ``[N, ...]`` tree is taken as one game).
        A node whose game is over says "game over" (its value is 0 by
        convention; the result is the reward of the move into it).
      batch_index: the game of the batch, an int in ``0..B-1``.
      max_depth: the deepest nodes drawn, in plies from the root (``None``:
        all).
      min_visits: nodes (other than the root) with fewer visits are left out,
        with their subtrees (0: every visited node).
    Returns:
      ``digraph`` text: one node per visited node kept (label: visit count,
      value for the player to move there, what the solver proved: its bounds
      from ``tree.extra_data`` when present), one edge per kept child (label:
      the move, 1-based, the Q-value for the player moving, the prior
      probability).  Values are written as ``c4jax analyze``'s table writes
      them (:func:`c4jax.present.analysis.fmt_q`, :func:`c4jax.present.analysis.shown_q`:
      exactly +1 / -1 where proven, never ``-0.000``).
    Raises:
      ValueError: ``tree`` not an ``mctx.Tree``, a bad ``batch_index``,
        ``max_depth`` or ``min_visits``.
    """
    from c4jax.present.analysis import fmt_q, proven_result, shown_q  # rich is loaded when a tree is drawn

    if not isinstance(tree, mctx.Tree):
        raise ValueError(f"tree must be an mctx.Tree (out.search_tree); got {type(tree).__name__}")
    batched = np.ndim(tree.node_visits) == 2
    size = np.shape(tree.node_visits)[0] if batched else 1
    batch_index = check_int("batch_index", batch_index, 0, size - 1)
    max_depth = check_int("max_depth", max_depth, 0, optional=True)
    min_visits = check_int("min_visits", min_visits, 0)

    def row(x):
        x = np.asarray(x)
        return x[batch_index] if batched else x

    visits = row(tree.node_visits)
    values = row(tree.node_values)
    index = row(tree.children_index)
    child_visits = row(tree.children_visits)
    child_values = row(tree.children_values)
    rewards = row(tree.children_rewards)
    discounts = row(tree.children_discounts)
    logits = row(tree.children_prior_logits).astype(np.float64)
    extra = tree.extra_data
    finished = row(tree.embeddings.done) if hasattr(tree.embeddings, "done") else None
    bounds = None
    if hasattr(extra, "value_lower") and hasattr(extra, "value_upper"):
        bounds = row(extra.value_lower), row(extra.value_upper)
    plies = row(extra.value_plies) if hasattr(extra, "value_plies") else None

    def node_bounds(n: int) -> tuple[float, float]:
        return (float(bounds[0][n]), float(bounds[1][n])) if bounds is not None else (-1.0, 1.0)

    lines = [
        "digraph search_tree {",
        '  node [shape=box, fontname="monospace", fontsize=10];',
        '  edge [fontname="monospace", fontsize=9];',
    ]

    def node_line(n: int, depth: int) -> str:
        lo, hi = node_bounds(n)
        label = [("root" if n == 0 else f"ply +{depth}"), f"visits {int(visits[n]):,}",
                 f"value {fmt_q(shown_q(float(values[n]), lo, hi))}"]
        if finished is not None and bool(finished[n]):
            label.append("game over")  # its result is in the reward of the edge into it
        elif lo > -1.0 or hi < 1.0:
            proof = proven_result(lo, hi, int(plies[n]) if plies is not None else 0)
            label.append(f"proven {proof}" if proof else f"bounds [{lo:+g}, {hi:+g}]")
        text = "\\n".join(label)  # DOT's line break inside a label
        return f'  n{n} [label="{text}"];'

    lines.append(node_line(0, 0))
    frontier = [(0, 0)]
    while frontier:
        n, depth = frontier.pop(0)
        if max_depth is not None and depth >= max_depth:
            continue
        z = logits[n] - logits[n].max()
        prior = np.exp(z) / np.exp(z).sum()
        for a in np.flatnonzero(index[n] >= 0):
            c = int(index[n, a])
            if visits[c] <= 0 or visits[c] < min_visits:
                continue
            r, d = float(rewards[n, a]), float(discounts[n, a])
            q = r + d * float(child_values[n, a])
            lo, hi = node_bounds(c)
            # The mover's bounds on Q: r + d * [child's bounds] (d is -1 or 0),
            # as the solver's edge_bounds reads them.
            q_lo, q_hi = sorted((r + d * lo, r + d * hi))
            lines.append(node_line(c, depth + 1))
            q_text = fmt_q(shown_q(q, q_lo, q_hi)) if math.isfinite(q) else "-"
            lines.append(
                f'  n{n} -> n{c} [label="move {int(a) + 1}\\nQ {q_text}\\nprior {prior[a]:.3f}\\n'
                f'visits {int(child_visits[n, a])}"];'
            )
            frontier.append((c, depth + 1))
    lines.append("}")
    return "\n".join(lines) + "\n"
