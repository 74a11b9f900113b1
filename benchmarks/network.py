"""A small network for the benchmarks that search with weights: an MLP over
Connect 4's board planes (the mover's stones, the opponent's), two hidden
layers, a tanh value head and a prior head of one logit per column, as
``value_fn(params, key, env)`` and ``prior_fn(params, env)`` of
``c4jax.run_mcts``."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from c4jax.games import connect4


def network_params(key: jax.Array, hidden: int = 128) -> dict:
    """The weights of a small network over Connect 4's board planes: an MLP
    84-hidden-hidden with a tanh value head and a 7-logit prior head."""
    game = connect4.make()
    rows, cols = game.rows, game.cols
    sizes = [("h1", 2 * rows * cols, hidden), ("h2", hidden, hidden), ("value", hidden, 1), ("prior", hidden, cols)]
    keys = jax.random.split(key, len(sizes))
    return {name: {"w": jax.random.normal(k, (n_in, n_out)) / jnp.sqrt(n_in), "b": jnp.zeros((n_out,))}
            for k, (name, n_in, n_out) in zip(keys, sizes)}


def _network_trunk(params: dict, env) -> jax.Array:
    board = connect4.board_array(env).astype(jnp.int32)
    planes = jnp.stack([board == env.to_move + 1, board == 2 - env.to_move]).reshape(-1).astype(jnp.float32)
    h = jax.nn.relu(planes @ params["h1"]["w"] + params["h1"]["b"])
    return jax.nn.relu(h @ params["h2"]["w"] + params["h2"]["b"])


def network_value(params: dict, key: jax.Array, env) -> jax.Array:
    """``value_fn(params, key, env)``: the tanh value head, for the mover."""
    h = _network_trunk(params, env)
    return jnp.tanh(h @ params["value"]["w"] + params["value"]["b"])[0]


def network_prior(params: dict, env) -> jax.Array:
    """``prior_fn(params, env)``: the prior head's 7 logits."""
    h = _network_trunk(params, env)
    return h @ params["prior"]["w"] + params["prior"]["b"]
