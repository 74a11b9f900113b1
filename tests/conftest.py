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

The tests compile fast, run slow code: the suite's time is mostly XLA
compiling (measured per test with JAX's compile-time events, over 1,436 s
of in-process tests: 64% XLA's backend compile, 27% tracing and lowering,
9% running), so ``XLA_FLAGS`` turns off LLVM's optimisation
(``--xla_backend_optimization_level=0``, which cut the suite by about 30%:
tests/test_reuse.py 317 s -> 218 s) and the MLIR fusion emitters
(``--xla_cpu_use_fusion_emitters=false``: XLA's older elemental emitter,
about 30% less compile time again on a search, fresh processes
alternating; tests/test_search.py and three more files took 1,080 s of test
time with the level alone and 830 s with both, two runs an hour apart on the
same idle machine), unless ``XLA_FLAGS`` already
sets them.  XLA's CPU backend never reorders floating-point arithmetic (no
fast math), so every value is the same.  The level changes only machine
code; the older emitter also changes which operations XLA fuses, so the
structural tests of tests/test_search_cost.py, which inspect the optimised
HLO, are marked ``users_hlo`` and compile with the fusion emitters on.  The
CLI's subprocesses inherit the setting; the benchmarks never use it.

That code runs about five times slower (a batch of 16 Connect 4 searches
of 400 simulations: 0.8 s against 0.15 s), which costs more than it saves
in the few tests that search for a long time (arenas, a million rollouts,
thousands of simulations on a batch): those are marked
``@pytest.mark.optimized`` and compile as users' programs do (XLA's
defaults, given per compilation; see ``_compile_overrides``).
"""

import gc
import os

# c4jax keeps 16 compiled searches by default (c4jax.search.compiled); a test
# module meets more shapes than that and comes back to them, so the suite
# keeps 32, dropped with JAX's caches after every module (below).
os.environ.setdefault("C4JAX_MAX_COMPILED", "32")

for _flag, _value in (("xla_backend_optimization_level", "0"), ("xla_cpu_use_fusion_emitters", "false")):
    if _flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --{_flag}={_value}".strip()

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


# Per-compilation overrides of XLA_FLAGS above, by marker: ``optimized``
# gets XLA's defaults (xla/debug_options_flags.cc), as users' programs do;
# ``users_hlo`` (the tests that inspect compiled HLO) the fusion emitters,
# whose flag changes XLA's fusion decisions and so the optimised HLO, while
# LLVM's optimisation level changes only machine code (checked: the
# optimised HLO of a search is the same text at levels 0 and 2).
OVERRIDES = {
    "optimized": {"xla_backend_optimization_level": 2, "xla_cpu_use_fusion_emitters": True},
    "users_hlo": {"xla_cpu_use_fusion_emitters": True},
}


@pytest.fixture(autouse=True)
def _compile_overrides(request):
    """A test marked ``optimized`` or ``users_hlo`` compiles with its
    :data:`OVERRIDES` on top of ``XLA_FLAGS``: JAX hands them to XLA as
    per-compilation option overrides (what ``jax.jit(...,
    compiler_options=...)`` does), here added to every compilation the test
    makes, the library's own jits included.  Programs that jitted functions
    already compiled in this process are reused as they are (JAX's in-memory
    caches do not key on these options; the persistent cache does)."""
    overrides = {}
    for name, options in OVERRIDES.items():
        if request.node.get_closest_marker(name) is not None:
            overrides.update(options)
    if not overrides:
        yield
        return
    from jax._src import compiler  # the one function that builds the options

    original = getattr(compiler, "get_compile_options", None)
    if original is None:  # another JAX
        pytest.fail("tests/conftest.py: jax._src.compiler.get_compile_options is gone; "
                    "update _compile_overrides")

    def with_overrides(*args, env_options_overrides=None, **kwargs):
        return original(*args, env_options_overrides={**overrides, **(env_options_overrides or {})}, **kwargs)

    compiler.get_compile_options = with_overrides
    try:
        yield
    finally:
        compiler.get_compile_options = original


@pytest.fixture(autouse=True, scope="module")
def _drop_jax_caches_after_module():
    yield
    if os.environ.get("C4JAX_TEST_KEEP_JAX_CACHES") == "1":  # to check the suite without the drop
        return
    import sys

    if "c4jax.search.compiled" in sys.modules:
        sys.modules["c4jax.search.compiled"].clear()
    jax.clear_caches()
    gc.collect()
