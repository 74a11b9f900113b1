"""Long-lived processes: the number of simulations is an argument of the
compiled search, budgets of one bucket share one executable and give the
trees of separately compiled searches, and the process keeps a bounded set
of compiled searches whose dropped members give their memory mappings back;
a bad C4JAX_MAX_COMPILED is a warning; threads meeting one signature build it
once."""

from __future__ import annotations

import threading
import time
import warnings

import chex
import jax
import numpy as np
import pytest

import c4jax
from c4jax.games import tictactoe as ttt
from c4jax.runtime import compiled
from c4jax.search.run import simulation_bucket


def test_buckets():
    assert [simulation_bucket(n) for n in (1, 64, 65, 128, 129, 1000, 1024, 1025)] == [
        64, 64, 128, 128, 256, 1024, 1024, 2048]


def _same_search(a, b, n):
    np.testing.assert_array_equal(a.visit_counts, b.visit_counts)
    np.testing.assert_array_equal(a.qvalues, b.qvalues)
    np.testing.assert_array_equal(a.value, b.value)
    np.testing.assert_array_equal(a.action, b.action)
    ta, tb = jax.device_get(a.search_tree), jax.device_get(b.search_tree)
    chex.assert_trees_all_equal_structs(ta, tb)

    def used(x, other):  # node arrays of different capacities: the used nodes
        return x[:, : n + 1] if x.ndim >= 2 and x.shape[1] != other.shape[1] else x

    chex.assert_trees_all_equal(jax.tree.map(used, ta, tb), jax.tree.map(used, tb, ta))


def test_twenty_budgets_of_one_bucket_compile_once_and_equal_separate_searches():
    env = ttt.from_moves("5")
    budgets = list(range(65, 129, 3))[:20]
    assert len(budgets) == 20 and {simulation_bucket(n) for n in budgets} == {128}
    compiled.clear()
    before = compiled.stats()["compiles"]
    outs = {n: c4jax.run_mcts(jax.random.key(n), env, n) for n in budgets}
    assert compiled.stats()["compiles"] - before == 1
    for n, out in outs.items():
        assert int(out.visit_counts.sum()) == n
        assert out.search_tree.node_visits.shape == (1, 129)
    # Separately compiled searches, each with capacity n + 1 (the smallest
    # tree that holds n simulations): the same tree for the same key, at both
    # ends of the bucket.
    for n in (budgets[0], budgets[-1]):
        _same_search(outs[n], c4jax.run_mcts(jax.random.key(n), env, n, capacity=n + 1), n)


def test_the_count_is_traced_inside_a_callers_jit_too():
    env = ttt.from_moves("15")
    search = jax.jit(lambda key, n: c4jax.run_mcts(key, env, 70).visit_counts)
    np.testing.assert_array_equal(search(jax.random.key(4), 0), c4jax.run_mcts(jax.random.key(4), env, 70).visit_counts)


@pytest.mark.slow
def test_a_bounded_set_of_compiled_searches_gives_mappings_back(monkeypatch):
    if compiled.memory_mappings() is None:
        pytest.fail("no /proc/self/maps: this test needs Linux")
    monkeypatch.setattr(compiled, "MAX_COMPILED", 1)
    compiled.clear()
    envs = [ttt.from_moves(m) for m in ("", "1")]
    batches = [jax.tree.map(lambda *x: np.stack(x), *([e] * b)) for e, b in zip(envs, (2, 3))]
    c4jax.run_mcts(jax.random.key(0), batches[0], 20).action.block_until_ready()
    first = compiled.memory_mappings()
    c4jax.run_mcts(jax.random.key(0), batches[1], 20).action.block_until_ready()  # drops the first
    c4jax.run_mcts(jax.random.key(0), batches[0], 20).action.block_until_ready()  # drops the second
    s = compiled.stats()
    assert s["kept"] == 1 and s["dropped"] >= 2
    # A compiled search maps about 150-650 regions; keeping them would add them.
    assert compiled.memory_mappings() - first < 100, (first, compiled.memory_mappings())


def test_a_warning_names_the_fix_near_the_map_limit(monkeypatch):
    monkeypatch.setattr(compiled, "_WARNED", False)
    monkeypatch.setattr(compiled, "max_map_count", lambda: 100)
    monkeypatch.setattr(compiled, "memory_mappings", lambda: 90)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled.check_mappings()
        compiled.check_mappings()  # once per process
    assert len(seen) == 1 and issubclass(seen[0].category, ResourceWarning)
    text = str(seen[0].message)
    assert "90 memory mappings" in text and "vm.max_map_count" in text and "sysctl" in text
    monkeypatch.setattr(compiled, "_WARNED", False)
    monkeypatch.setattr(compiled, "memory_mappings", lambda: 50)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        compiled.check_mappings()
    assert seen == []


@pytest.mark.parametrize("value", ["0", "-3", "abc", "\u00b2", "\u0663", "1e3", "9" * 40, " 8 "])
def test_a_bad_max_compiled_warns_and_keeps_16(monkeypatch, value):
    # "²" and "٣" pass str.isdigit() but are not numbers int() reads: a
    # setting like that, or any other bad one, is a warning, not an error
    # that stops `import c4jax`.
    monkeypatch.setenv("C4JAX_MAX_COMPILED", value)
    with pytest.warns(RuntimeWarning, match=r"C4JAX_MAX_COMPILED must be an int >= 1"):
        assert compiled.max_compiled() == 16
    monkeypatch.setenv("C4JAX_MAX_COMPILED", "8")
    assert compiled.max_compiled() == 8


def test_threads_meeting_one_uncompiled_signature_build_it_once():
    builds, started = [], threading.Event()

    def build():
        started.set()
        builds.append(threading.current_thread().name)
        time.sleep(0.3)
        return object()

    signature = ("test-threads", time.time())
    results = [None, None]

    def call(i):
        results[i] = compiled.compiled(signature, build)

    first = threading.Thread(target=call, args=(0,))
    first.start()
    started.wait()
    second = threading.Thread(target=call, args=(1,))
    second.start()
    first.join()
    second.join()
    assert len(builds) == 1 and results[0] is results[1] is not None


def test_a_thread_waiting_on_a_failed_build_builds_the_program_itself():
    started, calls = threading.Event(), []

    def build():
        calls.append(None)
        if len(calls) == 1:
            started.set()
            time.sleep(0.3)
            raise RuntimeError("the first build fails")
        return "program"

    signature = ("test-failed-build", time.time())
    errors, results = [], []

    def call():
        try:
            results.append(compiled.compiled(signature, build))
        except RuntimeError as e:
            errors.append(str(e))

    first = threading.Thread(target=call)
    first.start()
    started.wait()
    second = threading.Thread(target=call)
    second.start()
    first.join()
    second.join()
    assert errors == ["the first build fails"] and results == ["program"] and len(calls) == 2
    assert compiled.compiled(signature, build) == "program" and len(calls) == 2
