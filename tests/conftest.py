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

The tests compile with LLVM's optimisation off
(``XLA_FLAGS=--xla_backend_optimization_level=0``, unless ``XLA_FLAGS``
already sets a level): the suite's time is mostly XLA compiling, and this cut
it by about 30% (tests/test_reuse.py: 317 s -> 218 s, same run).  The
programs are the same HLO (every pass that the structural tests of
tests/test_search_cost.py inspect still runs); only the machine code is less
optimised, and XLA's CPU backend never reorders floating-point arithmetic
(no fast math), so every value is the same.  The CLI's subprocesses inherit
the setting; the benchmarks never use it.
"""

import gc
import os

if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

import jax  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture(autouse=True, scope="module")
def _drop_jax_caches_after_module():
    yield
    jax.clear_caches()
    gc.collect()
