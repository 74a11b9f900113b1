"""The search's Threefry keys (c4jax.search.prng) draw exactly JAX's numbers.

The search re-types the user's threefry keys as an implementation whose hash
is unrolled (fused by XLA into one kernel instead of a rolled loop of small
ones).  It must change no number: every draw is compared bit for bit with
``jax.random`` on the original key, eagerly, under ``jit`` and under ``vmap``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from c4jax.search.prng import search_keys, threefry2x32

DRAWS = {
    "split": lambda k: jax.random.key_data(jax.random.split(k, 3)),
    "split_2d": lambda k: jax.random.key_data(jax.random.split(k, (2, 5))),
    "split_1": lambda k: jax.random.key_data(jax.random.split(k, 1)),
    "fold_in": lambda k: jax.random.key_data(jax.random.fold_in(k, 17)),
    "bits32": lambda k: jax.random.bits(k, (7,)),
    "bits32_scalar": lambda k: jax.random.bits(k),
    "bits8": lambda k: jax.random.bits(k, (3, 5), jnp.uint8),
    "bits16": lambda k: jax.random.bits(k, (5,), jnp.uint16),
    "uniform": lambda k: jax.random.uniform(k, (2, 7)),
    "gumbel": lambda k: jax.random.gumbel(k, (7,)),
    "categorical": lambda k: jax.random.categorical(k, jnp.arange(7.0)),
    "dirichlet": lambda k: jax.random.dirichlet(k, jnp.full(7, 0.3)),
    "randint": lambda k: jax.random.randint(k, (9,), 0, 7),
    "normal": lambda k: jax.random.normal(k, (4,)),
}


@pytest.mark.parametrize("seed", [0, 2**31 - 1])
@pytest.mark.parametrize("name", sorted(DRAWS))
def test_draws_equal_jax_threefry(seed, name):
    draw = DRAWS[name]
    key = jax.random.key(seed)
    fast = search_keys(key)
    assert str(jax.random.key_impl(fast)) != "threefry2x32"  # it was re-typed
    expected = np.asarray(draw(key))
    np.testing.assert_array_equal(np.asarray(draw(fast)), expected)
    np.testing.assert_array_equal(np.asarray(jax.jit(draw)(fast)), expected)


def test_batched_and_raw_keys():
    keys = jax.random.split(jax.random.key(5), 4)
    draw = lambda k: jax.random.uniform(jax.random.split(k)[1], (7,))  # noqa: E731
    expected = np.asarray(jax.vmap(draw)(keys))
    np.testing.assert_array_equal(np.asarray(jax.vmap(draw)(search_keys(keys))), expected)
    # Raw uint32[2] keys (jax.random.PRNGKey) are read as the default threefry.
    raw = jax.random.PRNGKey(5)
    np.testing.assert_array_equal(
        np.asarray(draw(search_keys(raw))), np.asarray(draw(jax.random.wrap_key_data(raw)))
    )


def test_the_hash_is_threefry_2x32_known_answers():
    """Known-answer vectors of Threefry-2x32 with 20 rounds (Salmon et al.
    2011, the Random123 distribution's kat_vectors)."""
    u = lambda *xs: [jnp.uint32(x) for x in xs]  # noqa: E731
    cases = [
        (u(0, 0, 0, 0), (0x6B200159, 0x99BA4EFE)),
        (u(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
        (u(0x13198A2E, 0x03707344, 0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
    ]
    for (k1, k2, x1, x2), expected in cases:
        out = threefry2x32(k1, k2, x1, x2)
        assert (int(out[0]), int(out[1])) == expected


def test_other_keys_are_left_alone():
    rbg = jax.random.key(0, impl="rbg")
    assert search_keys(rbg) is rbg
    key = jax.random.key(0)
    with jax.threefry_partitionable(False):
        assert search_keys(key) is key
