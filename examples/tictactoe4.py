"""Your own game, outside the package: 4x4 tic-tac-toe (four in a row).

A game is a frozen, hashable object with the methods of the
:class:`c4jax.games.env.Game` contract; ``c4jax.games.testing.check_game`` checks it, and
then ``run_mcts`` (with its solver), subtree reuse, the players and the arena
take it as they take Connect 4, with no change to the package.  The rules
below reuse the package's shared pieces: :func:`c4jax.games.env.empty_board`, :func:`c4jax.games.env.finish_step` (the
rules every game shares after a move), :func:`c4jax.games.rollout.playout` (the
rollout loop) and :func:`c4jax.games.positions.one_game_or_batch` (one game or a batch).

Board: a 16-bit mask per player in one ``uint32`` word (``stones[p, 0]``),
bit ``i`` = cell ``i + 1`` counted row by row from the top left; actions are
the cells, 0-based.

    python examples/tictactoe4.py          # check_game, a search, an arena
    python examples/tictactoe4.py --simulations 64 --games 4
"""

from __future__ import annotations

import argparse
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

import c4jax
from c4jax.games.env import Env, check_game, empty_board, finish_step
from c4jax.games.positions import as_action, one_game_or_batch
from c4jax.games.rollout import playout

N = 4
ALL = (1 << (N * N)) - 1


def _lines() -> list[int]:
    """The 10 winning lines as 16-bit masks: 4 rows, 4 columns, 2 diagonals."""
    rows = [sum(1 << (r * N + c) for c in range(N)) for r in range(N)]
    cols = [sum(1 << (r * N + c) for r in range(N)) for c in range(N)]
    diagonals = [sum(1 << (i * N + i) for i in range(N)), sum(1 << (i * N + N - 1 - i) for i in range(N))]
    return rows + cols + diagonals


@dataclasses.dataclass(frozen=True)
class TicTacToe4:
    """4x4 tic-tac-toe: four in a row, column or diagonal wins."""

    @property
    def name(self) -> str:
        return "tictactoe4"

    @property
    def num_actions(self) -> int:
        return N * N

    @property
    def max_plies(self) -> int:
        return N * N

    @property
    def stones_shape(self) -> tuple[int, int]:
        return (2, 1)

    # --- bit kernels (a scalar uint32 mask per player) ----------------------------
    @staticmethod
    def _has_line(x: jax.Array) -> jax.Array:
        lines = jnp.asarray(np.array(_lines(), np.uint32))
        return jnp.any((x & lines) == lines)

    @staticmethod
    def _threats(x: jax.Array, occupied: jax.Array) -> jax.Array:
        """The empty cells that complete a line for ``x`` (a mask)."""
        lines = jnp.asarray(np.array(_lines(), np.uint32))
        cells = jnp.arange(N * N, dtype=jnp.uint32)
        bits = jnp.left_shift(jnp.uint32(1), cells)  # [16]
        # cell c completes line L if L has c, c is empty and the other cells of L are x's.
        completes = ((lines[:, None] & bits[None, :]) != 0) & (((x | bits[None, :]) & lines[:, None]) == lines[:, None])
        hit = jnp.any(completes, axis=0) & ((occupied & bits) == 0)
        return jnp.sum(jnp.where(hit, bits, jnp.uint32(0)), dtype=jnp.uint32)

    @staticmethod
    def _cells(mask: jax.Array) -> jax.Array:
        return ((mask >> jnp.arange(N * N, dtype=jnp.uint32)) & 1) != 0

    # --- the rules ------------------------------------------------------------------
    def env_reset(self) -> Env:
        return empty_board(self)

    @one_game_or_batch()
    def legal_action_mask(self, env: Env) -> jax.Array:
        check_game(self, env)
        occupied = env.stones[0, 0] | env.stones[1, 0]
        return ~self._cells(occupied) & ~env.done

    @one_game_or_batch()
    def env_step(self, env: Env, action) -> tuple[Env, jax.Array, jax.Array]:
        check_game(self, env)
        action = as_action(action)
        occupied = env.stones[0, 0] | env.stones[1, 0]
        in_range = (action >= 0) & (action < N * N)
        bit = jnp.where(in_range, jnp.left_shift(jnp.uint32(1), jnp.clip(action, 0, N * N - 1).astype(jnp.uint32)), 0)
        legal = in_range & ((occupied & bit) == 0)
        mine = jnp.where(env.to_move == 0, env.stones[0, 0], env.stones[1, 0]) | jnp.where(legal, bit, 0)
        new = jnp.where(env.to_move == 0, jnp.stack([mine, env.stones[1, 0]]), jnp.stack([env.stones[0, 0], mine]))
        return finish_step(env, new[:, None], action, legal, legal & self._has_line(mine))

    @one_game_or_batch()
    def winning_moves(self, env: Env) -> jax.Array:
        check_game(self, env)
        occupied = env.stones[0, 0] | env.stones[1, 0]
        mine = jnp.where(env.to_move == 0, env.stones[0, 0], env.stones[1, 0])
        return self._cells(self._threats(mine, occupied)) & ~env.done

    def _rollout(self, key, env: Env, heuristic: bool) -> jax.Array:
        check_game(self, env)
        return playout(
            key, env,
            words=lambda e: (e.stones[0, 0], e.stones[1, 0]),
            legal=lambda occ: ~self._cells(occ),
            wins=lambda x, occ: self._cells(self._threats(x, occ)),
            drop=lambda onehot, occ: jnp.sum(
                jnp.where(onehot, jnp.left_shift(jnp.uint32(1), jnp.arange(N * N, dtype=jnp.uint32)), 0),
                dtype=jnp.uint32,
            ),
            has_line=self._has_line,
            heuristic=heuristic,
        )

    @one_game_or_batch(key=0)
    def rollout(self, key, env: Env) -> jax.Array:
        return self._rollout(key, env, heuristic=False)

    @one_game_or_batch(key=0)
    def heuristic_rollout(self, key, env: Env) -> jax.Array:
        return self._rollout(key, env, heuristic=True)

    def render(self, env: Env) -> str:
        x, o = int(env.stones[0, 0]), int(env.stones[1, 0])
        rows = []
        for r in range(N):
            rows.append(" ".join("X" if x >> (r * N + c) & 1 else "O" if o >> (r * N + c) & 1 else "."
                                 for c in range(N)))
        return "\n".join(rows)


GAME = TicTacToe4()


def main(argv=None) -> None:
    from c4jax.games.testing import check_game as check

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--simulations", type=int, default=200, help="of the search and of the arena's MCTS player")
    p.add_argument("--games", type=int, default=20, help="arena games (even; 0: no arena)")
    args = p.parse_args(argv)
    check(GAME)
    print("check_game(TicTacToe4()): passed")
    env = GAME.env_reset()
    for a in (0, 5, 1, 6, 2):  # X has cells 1, 2, 3 of the top row; O 6, 7
        env, _, _ = GAME.env_step(env, a)
    print(GAME.render(env))
    out = c4jax.run_mcts(jax.random.key(0), env, args.simulations)
    print(f"{'XO'[int(env.to_move)]} to move must block cell 4: the search plays cell {int(out.action) + 1} "
          f"(proven bounds of that move: [{float(out.qvalue_lower[out.action]):+.0f}, "
          f"{float(out.qvalue_upper[out.action]):+.0f}])")
    if not args.games:
        return
    result = c4jax.arena(jax.random.key(1), c4jax.mcts_player(args.simulations), c4jax.random_player(), args.games,
                         GAME.env_reset())
    lo, hi = result.wins_ci
    print(f"{result.player_a} against {result.player_b}, {result.num_games:,} games: W/D/L "
          f"{result.wins}/{result.draws}/{result.losses}, score {result.score:.0%}, Elo {result.elo:+.0f} "
          f"(A's wins: 95% interval {lo:.0%}-{hi:.0%})")


if __name__ == "__main__":
    main()
