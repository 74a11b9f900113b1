"""Search a real Connect 4 position with c4jax and print the move and its statistics.

    python examples/quickstart.py                       # a Pons test position
    python examples/quickstart.py --moves 4453 --simulations 5000
    python examples/quickstart.py --game tictactoe --moves 15

The default position is line 858 of Pascal Pons' Test_L3_R1 set, O to move;
its only optimal move (perfect-play scores by Pons' solver) is column 4.
"""

from __future__ import annotations

import argparse
import time

import jax
from rich.console import Console

import c4jax
from c4jax.present.analysis import search_table
from c4jax.present.boards import render_rich

DEFAULT_MOVES = "75621755215645652166771736427324123"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", choices=["connect4", "tictactoe"], default="connect4")
    parser.add_argument("--moves", default=None, help="1-based moves (Connect 4 columns, or cells 1-9)")
    parser.add_argument("--simulations", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    game = c4jax.make(args.game)
    moves = args.moves if args.moves is not None else (DEFAULT_MOVES if args.game == "connect4" else "")
    console = Console()
    try:
        env = game.from_moves(moves)
        if args.simulations < 1:
            raise ValueError(f"--simulations must be >= 1, got {args.simulations}")
    except ValueError as e:
        parser.error(str(e))

    search = jax.jit(lambda key, env: c4jax.run_mcts(key, env, args.simulations))
    t0 = time.perf_counter()
    out = jax.block_until_ready(search(jax.random.key(args.seed), env))
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = jax.block_until_ready(search(jax.random.key(args.seed), env))
    second = time.perf_counter() - t0

    console.print(render_rich(game, env))
    if int(out.action) < 0:
        console.print("The game is over: nothing to search.")
        return
    # The table c4jax analyze prints: visits, share, Q-value, what the solver
    # proved, prior and principal variation of every legal move.
    console.print(search_table(out, env, f"MCTS, {args.simulations:,} simulations", with_prior=True))
    console.print(f"best move: [bold]{int(out.action) + 1}[/bold]   root value {float(out.value):+.3f}")
    # Near the end of a game the rollouts are short: more simulations per second than from the empty board.
    console.print(f"search {second * 1000:.0f} ms ({args.simulations / second:,.0f} simulations/s; "
                  f"the first call, compiling, {first:.1f} s)")


if __name__ == "__main__":
    main()
