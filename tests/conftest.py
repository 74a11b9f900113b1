"""Test-session hygiene.

Each test module compiles many search variants; JAX keeps every compiled
executable alive for the rest of the process.  Over the whole suite that grew
to about 5.5 GB and, at a fixed point near the end, XLA's CPU compiler crashed
with a segmentation fault while compiling the next search (reproducibly in a
full run, never when the module ran alone; a process-wide resource such as the
number of memory mappings runs out).  Dropping JAX's caches after each module
keeps the process small; no test relies on compilations made by another
module (compile-once tests use ``chex.assert_max_traces`` inside one test).
"""

import gc

import jax
import pytest


@pytest.fixture(autouse=True, scope="module")
def _drop_jax_caches_after_module():
    yield
    jax.clear_caches()
    gc.collect()
