"""Test-session hygiene.

Each test module compiles many search variants; JAX keeps every compiled
executable alive for the rest of the process.  Over the whole suite that grew
to about 5.5 GB and, at a fixed point near the end, XLA's CPU compiler crashed
with a segmentation fault while compiling the next search (reproducibly in a
full run, never when the module ran alone).  The resource that runs out is
the number of memory mappings (Linux's vm.max_map_count, 65530 here): the
compiled code of test_search.py alone takes the process from about 5,600 to
35,000 mappings.  Dropping JAX's caches after each module brings it back
(measured: 35,000 -> 5,650) and the peak memory from 5.5 to 3.0 GB; no test
relies on compilations made by another module (compile-once tests use
``chex.assert_max_traces`` inside one test).
"""

import gc

import jax
import pytest


@pytest.fixture(autouse=True, scope="module")
def _drop_jax_caches_after_module():
    yield
    jax.clear_caches()
    gc.collect()
