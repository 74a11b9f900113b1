"""Test-session settings: bounded compiled programs, fast compiles, one
shared persistent compilation cache.

* Memory mappings: XLA's CPU backend maps the code of every executable into
  the process and JAX keeps executables alive as long as their functions;
  over a whole suite that passes Linux's ``vm.max_map_count`` and LLVM
  crashes.  So JAX's caches and c4jax's compiled searches are dropped after
  every module (no test relies on another module's compilations; compile-once
  tests use ``chex.assert_max_traces`` inside one test).
* Compile time is most of the suite's time, so ``XLA_FLAGS`` turns off LLVM's
  optimisation (``--xla_backend_optimization_level=0``), the MLIR fusion
  emitters (``--xla_cpu_use_fusion_emitters=false``), the splitting of a
  program's LLVM module for parallel compilation (the workers keep every
  core busy already) and three HLO passes that only simplify loops
  (``_FLAGS``), each unless ``XLA_FLAGS`` sets it.  XLA's CPU backend never reorders floating-point arithmetic, so
  every value is the same.  Tests that inspect optimised HLO are marked
  ``users_hlo`` (fusion emitters on: they change fusion decisions); tests
  that search for a long time are marked ``optimized`` and compile as
  users' searches do, at c4jax's LLVM level (``_compile_overrides``).
* Python's cyclic garbage collector runs its young generation every 50,000
  allocations instead of 700 (``gc.set_threshold``): tracing allocates
  millions of short-lived objects, which the default threshold collects
  over and over.  The drop after every module (below) still runs a full
  collection.
* One persistent compilation cache per session, shared by the xdist workers
  (``pytest_configure``), keeping every program: tests build the same
  programs again from functions of their own.  Searches are not kept on
  disk as traced programs there (``c4jax.runtime.compiled.load_or_export``:
  exporting a search and lowering the export again costs each new search
  more than a later load saves in one session); a test that points JAX's
  cache at a folder of its own gets them, as users do, and so does every
  ``c4jax`` command the tests start (``_traced_programs_kept_in_own_folders``).
"""


import gc
import os

gc.set_threshold(50_000, 50, 1_000)

# c4jax keeps 16 compiled searches by default (c4jax.runtime.compiled); a test
# module meets more shapes than that and comes back to them, so the suite
# keeps 32, dropped with JAX's caches after every module (below).
os.environ.setdefault("C4JAX_MAX_COMPILED", "32")


def _jaxlib_before(major: int, minor: int) -> bool:
    from importlib.metadata import version

    return tuple(int(x) for x in version("jaxlib").split(".")[:2]) < (major, minor)


# XLA from jaxlib 0.11 on has no fusion-emitters flag (and stops at an unknown
# flag in XLA_FLAGS).
_FLAGS = (
    ("xla_backend_optimization_level", "0"),
    ("xla_cpu_parallel_codegen_split_count", "1"),
    ("xla_disable_hlo_passes",
     "while-loop-invariant-code-motion,simplify-while-loops,post_scatter_expansion_simplification"),
) + ((("xla_cpu_use_fusion_emitters", "false"),) if _jaxlib_before(0, 11) else ())
for _flag, _value in _FLAGS:
    if _flag not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --{_flag}={_value}".strip()

import jax  # noqa: E402
import pytest  # noqa: E402

from c4jax.runtime.xla_flags import CPU_OPT_LEVEL  # noqa: E402


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
        # The user's cache folder is left alone: every process the tests
        # start (the c4jax command, matplotlib's font cache) gets a cache
        # home of the session's, and the session checks the user's at its end.
        config._c4jax_user_cache = _user_cache_state()
        config._c4jax_xdg = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="c4jax-test-cache-home-")
    jax.config.update("jax_compilation_cache_dir", os.environ["C4JAX_TEST_JAX_CACHE"])
    # Every program, however quick to compile: tests compile the same
    # programs again from functions of their own (a new jit of the same
    # search), and a load from the cache skips XLA's compile.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def _user_cache_folder() -> str:
    base = os.environ.get("XDG_CACHE_HOME", "")
    return base if os.path.isabs(base) else os.path.join(os.path.expanduser("~"), ".cache")


def _user_cache_state(folder: str | None = None) -> dict:
    """``{path: (size, mtime)}`` of every file under the user's cache folder
    (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    folder = folder or _user_cache_folder()
    state = {}
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            state[path] = (st.st_size, st.st_mtime_ns)
    state[""] = folder
    return state


def pytest_sessionfinish(session, exitstatus):
    """Fails the run if a test changed anything under the user's cache
    folder (the session's own cache home stands in for it)."""
    before = getattr(session.config, "_c4jax_user_cache", None)
    if before is None:
        return
    after = _user_cache_state(before[""])
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    if changed:
        session.config._c4jax_cache_changes = changed
        session.exitstatus = 1


def pytest_terminal_summary(terminalreporter):
    changed = getattr(terminalreporter.config, "_c4jax_cache_changes", None)
    if changed:
        terminalreporter.write_line(
            f"FAILED: the tests changed {len(changed)} files under the user's cache folder, e.g. {changed[:3]}",
            red=True)


def pytest_unconfigure(config):
    if getattr(config, "_c4jax_cache_owner", False):
        import shutil

        shutil.rmtree(os.environ.pop("C4JAX_TEST_JAX_CACHE"), ignore_errors=True)
        shutil.rmtree(os.environ.pop("XDG_CACHE_HOME"), ignore_errors=True)
        if config._c4jax_xdg is not None:
            os.environ["XDG_CACHE_HOME"] = config._c4jax_xdg


# Per-compilation overrides of XLA_FLAGS above, by marker: ``optimized``
# gets the LLVM level c4jax compiles its programs with for users
# (c4jax.runtime.xla_flags.CPU_OPT_LEVEL) and XLA's default fusion emitters;
# ``users_hlo`` (the tests that inspect compiled HLO) the fusion emitters,
# whose flag changes XLA's fusion decisions and so the optimised HLO, while
# LLVM's optimisation level changes only machine code (checked: the
# optimised HLO of a search is the same text at levels 0 and 2).
_EMITTERS = {"xla_cpu_use_fusion_emitters": True} if _jaxlib_before(0, 11) else {}
OVERRIDES = {
    "optimized": {"xla_backend_optimization_level": CPU_OPT_LEVEL, **_EMITTERS},
    "users_hlo": _EMITTERS,
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

    if "c4jax.runtime.compiled" in sys.modules:
        sys.modules["c4jax.runtime.compiled"].clear()
    jax.clear_caches()
    gc.collect()


@pytest.fixture(autouse=True)
def _traced_programs_kept_in_own_folders(monkeypatch):
    """``c4jax.runtime.compiled.directory()`` is ``None`` (no traced program
    kept) while JAX's cache is the session's, and the library's answer for
    any other folder (the tests of keeping set their own)."""
    import c4jax.runtime.compiled as compiled

    directory = compiled.directory

    def outside_the_session_cache():
        if jax.config.jax_compilation_cache_dir == os.environ.get("C4JAX_TEST_JAX_CACHE"):
            return None
        return directory()

    monkeypatch.setattr(compiled, "directory", outside_the_session_cache)
