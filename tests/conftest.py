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


def pytest_configure(config):
    """One persistent compilation cache for the whole test session, shared by
    both xdist workers (they inherit this process's environment) and kept
    across the per-module cache drops below: a program that another module
    or the other worker already compiled is loaded instead of compiled.  A
    fresh folder per session, so no run reads another's entries; tests that
    check the cache itself use folders of their own."""
    import tempfile

    if "C4JAX_TEST_JAX_CACHE" not in os.environ:
        os.environ["C4JAX_TEST_JAX_CACHE"] = tempfile.mkdtemp(prefix="c4jax-test-jax-cache-")
        config._c4jax_cache_owner = True  # this process made it: it removes it
    jax.config.update("jax_compilation_cache_dir", os.environ["C4JAX_TEST_JAX_CACHE"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def pytest_unconfigure(config):
    if getattr(config, "_c4jax_cache_owner", False):
        import shutil

        shutil.rmtree(os.environ.pop("C4JAX_TEST_JAX_CACHE"), ignore_errors=True)


@pytest.fixture(autouse=True, scope="module")
def _drop_jax_caches_after_module():
    yield
    jax.clear_caches()
    gc.collect()
