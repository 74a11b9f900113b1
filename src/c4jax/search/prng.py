"""Threefry-2x32 keys for the search, with the hash as straight-line code.

The search draws random numbers at every level of every descent (mctx's
selection rules break ties with ``jax.random.uniform``, the key schedule
splits at each level) and once per rollout.  JAX lowers its Threefry hash on
the CPU as a rolled loop of five steps (a while loop of about a dozen small
kernels per call), to keep compile times short; in a search of many tiny
simulations that loop is a large share of the XLA kernels each simulation
launches, and on the CPU a simulation's cost is mostly kernel launches.

This module defines the same generator, Threefry-2x32 (Salmon et al. 2011,
"Parallel random numbers: as easy as 1, 2, 3", 20 rounds) with JAX's
partitionable key derivation (``jax_threefry_partitionable``, the default),
as a PRNG implementation of its own (``jax.extend.random.define_prng_impl``)
whose hash is written out round by round, so that XLA fuses each call into one
kernel.  It produces bit for bit the numbers JAX's ``threefry2x32`` does
(tested against ``jax.random.split``, ``bits``, ``uniform``, ``fold_in``,
``categorical``, ``gumbel``, ``dirichlet``), so the trees are the same as with
the user's key (among them the tree equality with ``mctx.muzero_policy``).

:func:`search_keys` re-types the user's keys as this implementation where
that holds (threefry keys under partitionable derivation); any other key
(``rbg``, ``unsafe_rbg``, threefry with ``jax_threefry_partitionable=False``)
is used as it is.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import define_prng_impl, threefry_prng_impl

__all__ = ["search_keys", "threefry2x32"]

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_KEY_PARITY = np.uint32(0x1BD11BDA)


def _rotate_left(x: jax.Array, r: int) -> jax.Array:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(k1: jax.Array, k2: jax.Array, x1: jax.Array, x2: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The Threefry-2x32 block cipher, 20 rounds (Salmon et al. 2011, sec. 3),
    unrolled.

    Args:
      k1, k2: ``uint32[]``, the key words.
      x1, x2: ``uint32[...]`` of one shape, the counter words.
    Returns:
      Two ``uint32`` arrays of the counters' shape.
    """
    ks = (k1, k2, k1 ^ k2 ^ _KEY_PARITY)
    x1, x2 = x1 + ks[0], x2 + ks[1]
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            x1 = x1 + x2
            x2 = _rotate_left(x2, r) ^ x1
        x1 = x1 + ks[(block + 1) % 3]
        x2 = x2 + ks[(block + 2) % 3] + np.uint32(block + 1)
    return x1, x2


def _counters(shape: tuple[int, ...]) -> tuple[jax.Array, jax.Array]:
    """The row-major index of each element as a 64-bit count (high, low words)."""
    size = math.prod(shape)
    if size >= 2**32:
        raise NotImplementedError(f"random arrays of 2**32 elements or more; got shape {shape}")
    low = jnp.arange(size, dtype=jnp.uint32).reshape(shape)
    return jnp.zeros(shape, jnp.uint32), low


def _split(key: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    high, low = _counters(tuple(shape))
    b1, b2 = threefry2x32(key[0], key[1], high, low)
    return jnp.stack([b1, b2], axis=b1.ndim)


def _random_bits(key: jax.Array, bit_width: int, shape: tuple[int, ...]) -> jax.Array:
    if bit_width not in (8, 16, 32, 64):
        raise TypeError(f"bit_width must be 8, 16, 32 or 64; got {bit_width}")
    high, low = _counters(tuple(shape))
    b1, b2 = threefry2x32(key[0], key[1], high, low)
    if bit_width == 64:
        return (b1.astype(jnp.uint64) << np.uint64(32)) | b2.astype(jnp.uint64)
    bits = b1 ^ b2
    return bits if bit_width == 32 else bits.astype(jnp.dtype(f"uint{bit_width}"))


def _fold_in(key: jax.Array, data) -> jax.Array:
    data = jnp.asarray(data).astype(jnp.uint32)
    b1, b2 = threefry2x32(key[0], key[1], jnp.zeros((1,), jnp.uint32), data.reshape(1))
    return jnp.concatenate([b1, b2])


@functools.cache
def _impl():
    # Defined on first use (no work at import time).
    return define_prng_impl(
        key_shape=(2,),
        seed=threefry_prng_impl.seed,
        split=_split,
        random_bits=_random_bits,
        fold_in=_fold_in,
        name="c4jax_threefry2x32",
        tag="c4fry",
    )


def search_keys(keys: jax.Array) -> jax.Array:
    """The keys the search draws with: ``keys`` re-typed as the unrolled
    Threefry implementation when that gives the same numbers, else ``keys``.

    Args:
      keys: typed PRNG keys of any shape, or raw ``uint32[..., 2]`` keys
        (``jax.random.PRNGKey``), which JAX reads with its default
        implementation.
    Returns:
      Typed keys of the same batch shape.
    """
    if not jax.config.jax_threefry_partitionable:
        return keys
    if jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key):
        if str(jax.random.key_impl(keys)) != "threefry2x32":
            return keys
        keys = jax.random.key_data(keys)
    elif jax.config.jax_default_prng_impl != "threefry2x32":
        return keys
    return jax.random.wrap_key_data(keys, impl=_impl())
