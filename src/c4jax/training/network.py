"""The evaluation network: a small two-headed convolutional network over
the board's planes (AlphaGo Zero's shape, Silver et al. 2017), made with
equinox, and the ``value_fn``/``prior_fn`` that feed it to the search.

Why equinox: a model is a pytree whose leaves are its weights, so the model
itself is the ``params`` that :func:`c4jax.run_mcts` passes to
``value_fn(params, key, env)`` and ``prior_fn(params, env)`` (an argument of
the compiled search: new weights compile nothing) and what ``optax``
updates, with no init/apply split and no framework state; it adds two small
pure-Python packages to JAX.

Input: ``float32[2, H, W]``, the stones of the player to move and of the
opponent on the board's grid (``game.board_array``), so one network plays
both sides.  Output: ``(logits float32[A], value float32[])``, the value in
``[-1, 1]`` for the player to move.  Shapes: ``H``, ``W`` the board's rows
and columns, ``A`` its actions (Connect 4: the columns; tic-tac-toe: the
cells).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from c4jax.search.options import SearchOptions
from c4jax.search.values import rollout_function
from c4jax.validation import check_int, check_number

__all__ = ["NetConfig", "Net", "make_net", "planes", "value_fn", "mixed_value_fn", "prior_fn", "tempered_prior_fn",
           "mirror_actions",
           "grid_shape"]


@dataclasses.dataclass(frozen=True)
class NetConfig:
    """The network's size: ``channels`` filters in every 3x3 convolution,
    ``blocks`` residual blocks of two of them after the first, ``hidden``
    units in the value head."""

    channels: int = 32
    blocks: int = 2
    hidden: int = 64

    def validated(self) -> "NetConfig":
        check_int("channels", self.channels, 1, 1024)
        check_int("blocks", self.blocks, 0, 64)
        check_int("hidden", self.hidden, 1, 4096)
        return self


def grid_shape(game) -> tuple[int, int]:
    """``(H, W)``: the board's grid (Connect 4's rows and columns,
    tic-tac-toe's 3 x 3)."""
    return (int(game.rows), int(game.cols)) if hasattr(game, "rows") else (3, 3)


def mirror_actions(game) -> np.ndarray:
    """``int32[A]``: the action that the left-right mirror of the board
    makes of each action (the board's one symmetry that gravity keeps)."""
    h, w = grid_shape(game)
    if game.num_actions == w:  # an action per column
        return np.arange(w - 1, -1, -1, dtype=np.int32)
    cells = np.arange(h * w, dtype=np.int32).reshape(h, w)
    return cells[:, ::-1].reshape(-1)


def planes(env) -> jax.Array:
    """``float32[..., 2, H, W]``: the stones of the player to move, then the
    opponent's, of one game or a batch."""
    board = env.game.board_array(env).astype(jnp.int32)  # 0 empty, 1 X, 2 O
    mover = jnp.asarray(env.to_move, jnp.int32)[..., None, None]
    own = board == 1 + mover
    other = board == 2 - mover
    return jnp.stack([own, other], axis=-3).astype(jnp.float32)


def conv(layer: eqx.nn.Conv2d, x: jax.Array) -> jax.Array:
    """``layer(x)`` (a 'same' convolution of stride 1, ``x`` ``[C, H, W]``)
    as one matrix product over the ``k x k`` shifted copies of ``x``: the
    same values, and on the CPU several times faster than XLA's
    convolution inside the search's loop at one game per core."""
    w = layer.weight  # [out, in, k, k]
    k = w.shape[-1]
    pad = k // 2
    c, h, wd = x.shape
    padded = jnp.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    shifted = jnp.stack([padded[:, i:i + h, j:j + wd] for i in range(k) for j in range(k)], axis=1)
    out = w.reshape(w.shape[0], c * k * k) @ shifted.reshape(c * k * k, h * wd)
    return out.reshape(w.shape[0], h, wd) + layer.bias


class Net(eqx.Module):
    """The two-headed network of one board shape (:func:`make_net`).
    ``net(x)``: ``x`` ``float32[2, H, W]`` -> ``(logits float32[A], value
    float32[])``; ``jax.vmap`` it for a batch."""

    stem: eqx.nn.Conv2d
    blocks: tuple
    policy_conv: eqx.nn.Conv2d
    policy_out: eqx.nn.Linear
    value_conv: eqx.nn.Conv2d
    value_hidden: eqx.nn.Linear
    value_out: eqx.nn.Linear

    def __call__(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        h = jax.nn.relu(conv(self.stem, x))
        for first, second in self.blocks:
            h = jax.nn.relu(h + conv(second, jax.nn.relu(conv(first, h))))
        p = jax.nn.relu(conv(self.policy_conv, h))
        logits = self.policy_out(p.reshape(-1))
        v = jax.nn.relu(conv(self.value_conv, h))
        v = jax.nn.relu(self.value_hidden(v.reshape(-1)))
        value = jnp.tanh(self.value_out(v)[0])
        return logits, value


def make_net(key: jax.Array, game, config: NetConfig = NetConfig()) -> Net:
    """A freshly initialised :class:`Net` for ``game``'s board (equinox's
    default initialisation; the last layers of both heads scaled down, so a
    new network's prior is near uniform and its value near 0)."""
    config = config.validated()
    h, w = grid_shape(game)
    c = config.channels
    keys = iter(jax.random.split(key, 6 + 2 * config.blocks))

    def conv(cin, cout, size):
        return eqx.nn.Conv2d(cin, cout, size, padding=size // 2, key=next(keys))

    blocks = tuple((conv(c, c, 3), conv(c, c, 3)) for _ in range(config.blocks))
    net = Net(
        stem=conv(2, c, 3),
        blocks=blocks,
        policy_conv=conv(c, 2, 1),
        policy_out=eqx.nn.Linear(2 * h * w, game.num_actions, key=next(keys)),
        value_conv=conv(c, 1, 1),
        value_hidden=eqx.nn.Linear(h * w, config.hidden, key=next(keys)),
        value_out=eqx.nn.Linear(config.hidden, 1, key=next(keys)),
    )
    scale = 0.1
    net = eqx.tree_at(lambda n: (n.policy_out.weight, n.value_out.weight), net,
                      (net.policy_out.weight * scale, net.value_out.weight * scale))
    return net


def value_fn(params: Net, key: jax.Array, env) -> jax.Array:
    """The search's ``value_fn``: the network's value of one game for the
    player to move, ``float32[]`` (``key`` unused)."""
    del key
    return params(planes(env))[1]


def mixed_value_fn(rollout_weight: float) -> Callable:
    """The search's ``value_fn(params, key, env) -> float32[]`` that mixes
    the network's value with one rollout of the search's default policy
    (``SearchOptions().rollout_policy``) from the same position, with the
    same key: ``(1 - rollout_weight) * value + rollout_weight * rollout``,
    AlphaGo's leaf evaluation with ``lambda = rollout_weight`` (Silver et
    al. 2016).  ``0.0`` is :func:`value_fn` itself; one function object per
    weight, so a search compiles once per weight.

    Raises:
      ValueError: ``rollout_weight`` not a number in [0, 1].
    """
    return _mixed_value_fn(check_number("rollout_weight", rollout_weight, 0, 1))


@functools.lru_cache(maxsize=None)
def _mixed_value_fn(rollout_weight: float) -> Callable:
    if rollout_weight == 0.0:
        return value_fn
    rollout_policy = SearchOptions().rollout_policy

    def mixed(params: Net, key: jax.Array, env) -> jax.Array:
        rollout = rollout_function(env.game, rollout_policy)(key, env)
        return (1.0 - rollout_weight) * value_fn(params, key, env) + rollout_weight * rollout

    return mixed


def prior_fn(params: Net, env) -> jax.Array:
    """The search's ``prior_fn``: the network's policy logits of one game,
    ``float32[A]``."""
    return params(planes(env))[0]


def tempered_prior_fn(temperature: float) -> Callable:
    """The search's ``prior_fn(params, env) -> float32[A]``: the network's
    policy logits divided by ``temperature``, so its softmax prior is
    flatter (``> 1``) or sharper (``< 1``): the policy softmax temperature
    of Leela Chess Zero's search.  ``1.0`` is :func:`prior_fn` itself; one
    function object per temperature, so a search compiles once per
    temperature.

    Raises:
      ValueError: ``temperature`` not a finite number > 0.
    """
    return _tempered_prior_fn(check_number("prior_temperature", temperature, 0, lo_open=True))


@functools.lru_cache(maxsize=None)
def _tempered_prior_fn(temperature: float) -> Callable:
    if temperature == 1.0:
        return prior_fn

    def tempered(params: Net, env) -> jax.Array:
        return prior_fn(params, env) / temperature

    return tempered
