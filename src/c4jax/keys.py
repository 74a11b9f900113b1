"""PRNG keys at the boundary of every public function that takes one.

c4jax accepts what JAX users hold: typed keys of any implementation
(``jax.random.key(0)``, ``jax.random.key(0, impl="rbg")``, ``"unsafe_rbg"``,
custom ones) and legacy raw keys (``jax.random.PRNGKey(0)``: ``uint32[2]``
with the default Threefry implementation, ``uint32[4]`` under
``jax_default_prng_impl="rbg"``).  Anything else is a ``ValueError`` that
says what a key is.  Raw keys are re-typed with the default implementation
(JAX's own reading of them), so both spellings of a key draw the same
numbers.  The checks look at shapes and dtypes only: they work on tracers,
inside ``jit`` and ``vmap``.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

__all__ = ["as_key", "keys_for_games"]


def _raw_size() -> int:
    """Words of a raw key of the default implementation (2 for Threefry)."""
    return _raw_size_of(jax.config.jax_default_prng_impl)


@functools.lru_cache(maxsize=None)
def _raw_size_of(impl: str) -> int:
    return jax.eval_shape(lambda: jax.random.PRNGKey(0)).shape[-1]


def _accepted() -> str:
    return (f"a PRNG key: jax.random.key(seed) of any implementation (threefry, rbg, unsafe_rbg) "
            f"or a raw jax.random.PRNGKey(seed) (uint32[{_raw_size()}])")


def as_key(key, *, name: str = "key") -> jax.Array:
    """``key`` as a typed PRNG key array of the same batch shape.

    Args:
      key: a typed key array of any implementation and shape, or a raw
        ``uint32[..., W]`` key array with ``W`` the default implementation's
        key words (2 for Threefry).
      name: the argument's name in the error message.
    Returns:
      A typed key array: ``key`` itself if typed, else
      ``jax.random.wrap_key_data(key)``.
    Raises:
      ValueError: ``None``, a Python number, a float or signed array, or a raw
        key of the wrong width; the message names the accepted kinds.
    """
    if key is None or isinstance(key, (bool, int, float, complex, str, bytes)):
        raise ValueError(f"{name} must be {_accepted()}; got {type(key).__name__} {key!r:.40}")
    if not isinstance(key, jax.Array):
        try:
            key = jnp.asarray(key)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be {_accepted()}; got {type(key).__name__}") from None
    if jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key
    if key.dtype != jnp.uint32:
        raise ValueError(f"{name} must be {_accepted()}; got an array of dtype {key.dtype} and shape {key.shape}")
    if key.ndim < 1 or key.shape[-1] != _raw_size():
        raise ValueError(f"{name} must be {_accepted()}; got a uint32 array of shape {key.shape}")
    return jax.random.wrap_key_data(key)


def keys_for_games(key, batch_shape: tuple[int, ...], *, name: str = "key") -> jax.Array:
    """One typed key per game of a batch.

    Args:
      key: one key (see :func:`as_key`), split into one key per game, or keys
        of shape ``batch_shape`` (one per game, used as they are).
      batch_shape: the games' batch shape, e.g. ``(B,)``; ``()`` for one game.
    Returns:
      Typed keys of shape ``batch_shape``; with one key ``k`` for ``B`` games,
      game ``b`` gets ``jax.random.split(k, B)[b]`` (a batch shape of several
      axes: the split reshaped to it).
    Raises:
      ValueError: what :func:`as_key` raises, or keys of another batch shape.
    """
    key = as_key(key, name=name)
    if key.shape == tuple(batch_shape):
        return key
    if key.shape == ():
        return jax.random.split(key, math.prod(batch_shape)).reshape(batch_shape)
    raise ValueError(
        f"{name} must be one key or one key per game (shape {tuple(batch_shape)}); got keys of shape {key.shape}"
    )
