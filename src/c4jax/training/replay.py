"""Training examples from self-play games and the replay buffer that keeps
the latest of them.

An example is ``(planes, policy, value)``: the position's planes
(:func:`c4jax.training.network.planes`), the root's visit counts
normalised (AlphaZero's policy target) and the game's result for the
player to move (+1 won, 0 drawn, -1 lost).  The buffer is a ring of the
last ``capacity`` examples; a sampled batch is mirrored left-right per
example with probability one half (the board's symmetry).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from c4jax.training.network import grid_shape, mirror_actions, planes

__all__ = ["examples_from_records", "ReplayBuffer"]


@functools.lru_cache(maxsize=8)
def _replay_program(game):
    """Jitted ``(moves int32[G, P]) -> (planes uint8[G, P, 2, H, W])``: the
    position before every ply of ``G`` games (``-1`` moves once over)."""

    def one(moves):
        def step(env, move):
            x = planes(env).astype(jnp.uint8)
            env = jax.lax.cond(move >= 0, lambda e: game.env_step(e, move)[0], lambda e: e, env)
            return env, x

        return jax.lax.scan(step, game.env_reset(), moves)[1]

    return jax.jit(jax.vmap(one))


def examples_from_records(records, game) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(planes uint8[N, 2, H, W], policy float32[N, A], value float32[N])``:
    one example per ply of the self-play ``records`` (with ``visits``; their
    start is ``game``'s empty board)."""
    if not records:
        h, w = grid_shape(game)
        return (np.zeros((0, 2, h, w), np.uint8), np.zeros((0, game.num_actions), np.float32),
                np.zeros((0,), np.float32))
    p = game.max_plies
    moves = np.full((len(records), p), -1, np.int32)
    for i, r in enumerate(records):
        if r.start_ply or r.visits is None:
            raise ValueError("training examples come from self-play records of the empty board, with visits")
        moves[i, :len(r.moves)] = r.moves
    x = np.asarray(_replay_program(game)(jnp.asarray(moves)))
    xs, policies, values = [], [], []
    for i, r in enumerate(records):
        n = len(r.moves)
        visits = np.asarray(r.visits[:n], np.float32)
        policies.append(visits / np.maximum(visits.sum(axis=1, keepdims=True), 1.0))
        # Player 0 (X) moves at even plies.
        x_result = {"X": 1.0, "O": -1.0, "draw": 0.0}[r.result]
        values.append(np.where(np.arange(n) % 2 == 0, x_result, -x_result).astype(np.float32))
        xs.append(x[i, :n])
    return np.concatenate(xs), np.concatenate(policies), np.concatenate(values)


class ReplayBuffer:
    """The last ``capacity`` examples of one game, in host memory.

    ``add(planes, policy, value)`` appends (the oldest go first once full);
    ``sample(key, batch)`` draws ``batch`` examples uniformly with
    replacement, each mirrored with probability one half; ``state()`` and
    ``from_state`` give and take its arrays (for checkpoints).
    """

    def __init__(self, game, capacity: int):
        h, w = grid_shape(game)
        self.game = game
        self.capacity = int(capacity)
        self.planes = np.zeros((self.capacity, 2, h, w), np.uint8)
        self.policy = np.zeros((self.capacity, game.num_actions), np.float32)
        self.value = np.zeros((self.capacity,), np.float32)
        self.size = 0  # examples held
        self.next = 0  # where the next one goes
        self.mirror = mirror_actions(game)

    def __len__(self) -> int:
        return self.size

    def add(self, x: np.ndarray, policy: np.ndarray, value: np.ndarray) -> None:
        n = len(x)
        if n >= self.capacity:
            x, policy, value, n = x[-self.capacity:], policy[-self.capacity:], value[-self.capacity:], self.capacity
        idx = (self.next + np.arange(n)) % self.capacity
        self.planes[idx], self.policy[idx], self.value[idx] = x, policy, value
        self.next = int((self.next + n) % self.capacity)
        self.size = int(min(self.capacity, self.size + n))

    def sample(self, key: jax.Array, batch: int) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``(planes float32[batch, 2, H, W], policy float32[batch, A], value
        float32[batch])``."""
        if not self.size:
            raise ValueError("the replay buffer is empty")
        k_idx, k_flip = jax.random.split(key)
        idx = np.asarray(jax.random.randint(k_idx, (batch,), 0, self.size))
        flip = np.asarray(jax.random.bernoulli(k_flip, 0.5, (batch,)))
        x = self.planes[idx].astype(np.float32)
        policy = self.policy[idx]
        x = np.where(flip[:, None, None, None], x[..., ::-1], x)
        policy = np.where(flip[:, None], policy[:, self.mirror], policy)
        return jnp.asarray(x), jnp.asarray(policy), jnp.asarray(self.value[idx])

    def state(self) -> dict[str, np.ndarray]:
        """The buffer's contents, oldest first."""
        order = (self.next - self.size + np.arange(self.size)) % self.capacity
        return {"planes": self.planes[order], "policy": self.policy[order], "value": self.value[order]}

    @classmethod
    def from_state(cls, game, capacity: int, state: dict[str, np.ndarray]) -> "ReplayBuffer":
        buffer = cls(game, capacity)
        buffer.add(state["planes"], state["policy"], state["value"])
        return buffer
