"""Your own evaluation in the search: a hand-written Connect 4 value function.

``run_mcts(..., value_fn=f)`` replaces the rollouts at the leaves with ``f(key,
env) -> float32[]`` (one game's value for its player to move, in [-1, 1]);
``prior_fn=g`` would replace the prior the same way.  Here ``f`` counts the
windows of four cells each side could still fill (more stones in a window
count more), the classic Connect 4 evaluation, in plain ``jax.numpy``: no
training framework.  A network's value head plugs in the same way, its
weights passed as ``params`` (``value_fn(params, key, env)``), so that new
weights compile nothing.

It then plays the arena at equal simulations: MCTS with this evaluation
against MCTS with the default rollouts, colours alternating, and prints the
result.

    python examples/custom_evaluation.py [--simulations 200] [--games 20] [--dot tree.dot]
    python examples/custom_evaluation.py --simulations 16 --games 0    # the first search alone

``--dot FILE`` also writes the first search's tree (two plies deep) as
Graphviz DOT text (``c4jax.tree_to_dot``), and renders it to ``FILE.svg``
if Graphviz's ``dot`` program is installed (it is not needed otherwise).
"""

from __future__ import annotations

import argparse
import itertools

import jax
import jax.numpy as jnp
import numpy as np

import c4jax
from c4jax.games import connect4


def windows(rows: int = 6, cols: int = 7, k: int = 4) -> np.ndarray:
    """``int[W, k]``: the flat cell indices of every line of ``k`` cells."""
    out = []
    for r, c in itertools.product(range(rows), range(cols)):
        for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
            cells = [(r + i * dr, c + i * dc) for i in range(k)]
            if all(0 <= rr < rows and 0 <= cc < cols for rr, cc in cells):
                out.append([rr * cols + cc for rr, cc in cells])
    return np.array(out)


def make_value_fn(weights=(0.0, 0.02, 0.1, 0.5), scale: float = 1.0):
    """``value_fn(key, env)``: tanh of the weighted count of open windows
    (``weights[n]`` for a window holding ``n`` of a side's stones and none of
    the other's), the mover's minus the opponent's."""
    lines = windows()  # numpy, built once when the function is made
    w = jnp.asarray(weights, jnp.float32)

    def value_fn(key, env):
        del key  # deterministic
        board = connect4.board_array(env).reshape(-1)  # 0 empty, 1 X, 2 O
        cells = board[lines]  # [W, 4]
        me = jnp.where(env.to_move == 0, 1, 2)
        mine = jnp.sum(cells == me, axis=1)
        theirs = jnp.sum((cells != 0) & (cells != me), axis=1)
        score = jnp.sum(jnp.where(theirs == 0, w[jnp.minimum(mine, 3)], 0.0)) - jnp.sum(
            jnp.where(mine == 0, w[jnp.minimum(theirs, 3)], 0.0)
        )
        return jnp.tanh(scale * score)

    return value_fn


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--simulations", type=int, default=200)
    p.add_argument("--games", type=int, default=20, help="arena games (even; 0: no arena)")
    p.add_argument("--dot", metavar="FILE", help="write the first search's tree (Graphviz DOT text)")
    args = p.parse_args(argv)
    value_fn = make_value_fn()

    moves = "4453"
    env = connect4.from_moves(moves)
    out = c4jax.run_mcts(jax.random.key(0), env, args.simulations, value_fn=value_fn)
    mover = "XO"[int(env.to_move)]  # the side whose value value_fn gives
    print(f"Position {moves}, {mover} to move: value_fn says {float(value_fn(None, env)):+.3f}; "
          f"the search ({args.simulations:,} simulations) plays column {int(out.action) + 1}, "
          f"root value {float(out.value):+.3f}")
    if args.dot:
        import shutil
        import subprocess

        with open(args.dot, "w") as f:
            f.write(c4jax.tree_to_dot(out.search_tree, max_depth=2))
        print(f"wrote the search tree to {args.dot}")
        if shutil.which("dot"):
            subprocess.run(["dot", "-Tsvg", args.dot, "-o", args.dot + ".svg"], check=True)
            print(f"rendered it to {args.dot}.svg")

    if not args.games:
        return
    a = c4jax.mcts_player(args.simulations, value_fn=value_fn, name=f"mcts:{args.simulations}+windows")
    b = c4jax.mcts_player(args.simulations, name=f"mcts:{args.simulations}+rollouts")
    result = c4jax.arena(jax.random.key(1), a, b, args.games, progress=True)
    lo, hi = result.wins_ci
    print(f"{result.player_a} against {result.player_b}, {result.num_games:,} games: W/D/L "
          f"{result.wins}/{result.draws}/{result.losses}, score {result.score:.0%}, Elo {result.elo:+.0f} "
          f"(A's wins: 95% interval {lo:.0%}-{hi:.0%})")


if __name__ == "__main__":
    main()
