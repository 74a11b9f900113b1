"""The search's three compiled programs (root, simulations, output;
c4jax.search.programs.compile_stages): the same output as the search traced
as one program, kept on disk or not, and the simulation stage traced from
predicted root shapes that match the root stage's."""

from __future__ import annotations

import functools
import threading

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import c4jax
from c4jax.games import connect4 as c4
from c4jax.games import tictactoe as ttt
from c4jax.runtime import compiled
from c4jax.search import programs
from c4jax.search.options import options_from_kwargs
from marks import slow_unless

OPTIONS = [
    {},
    {"selection": "uct", "solver": False},
    {"selection": "gumbel"},
    {"dirichlet_fraction": 0.25, "prior": "uniform"},
    {"lanes": 4},
    {"prior_fn": lambda env: jnp.zeros(env.game.num_actions), "value_fn": lambda key, env: jnp.float32(0.5)},
]


@pytest.mark.parametrize("game", ["connect4", "tictactoe"])
@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("reused", [False, True])
def test_the_predicted_root_shapes_are_the_root_stages(game, options, reused):
    module = c4 if game == "connect4" else ttt
    env = jax.tree.map(lambda x: jnp.stack([x, x, x]), module.from_moves("12"))
    keys = jax.random.split(jax.random.key(0), 3)
    opts = options_from_kwargs(dict(options))
    real = jax.eval_shape(functools.partial(programs.root_stage, opts=opts, reused=reused), keys, env)
    assert programs.avals(programs.root_shapes(keys, env, opts)) == programs.avals(real)
    assert jax.tree.structure(programs.root_shapes(keys, env, opts)) == jax.tree.structure(real)


@pytest.fixture
def keep_on_disk(tmp_path):
    """``keep_on_disk()``: from then on the persistent cache is a folder of
    this test's own, where c4jax.runtime.compiled keeps the programs it
    traces (in the session's, the tests' searches are plain programs:
    tests/conftest.py); returns the folder of the kept programs.  The
    session's cache is restored after."""
    before = jax.config.jax_compilation_cache_dir

    def use():
        jax.config.update("jax_compilation_cache_dir", str(tmp_path))
        c4jax.clear_compiled()  # the next search is traced into jax.export, whatever this process compiled before
        return tmp_path / compiled.SUBFOLDER

    try:
        yield use
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
        c4jax.clear_compiled()


# Every option of OPTIONS[1:5] on the plain programs, joined in two searches
# on tic-tac-toe (its defaults: test_callers_program.py::
# test_the_callers_placement_keeps_the_search_on_one_device), and the
# defaults on Connect 4, with one game searched by the plain programs and by
# those kept on disk (a batch split over the CPU devices is never kept: its
# plain programs are the kept case's too).
JOINED = [{**OPTIONS[1], **OPTIONS[4]}, {**OPTIONS[2], **OPTIONS[3]}]
CASES = [("tictactoe", options) for options in JOINED] + [("connect4", {})]


@pytest.mark.parametrize("game,options", slow_unless(CASES, lambda case: case == ("tictactoe", JOINED[0])))
def test_the_staged_programs_give_the_search_traced_as_one_program(keep_on_disk, game, options):
    module = c4 if game == "connect4" else ttt
    moves = ["", "4453", "121212", "44"] if game == "connect4" else ["", "15", "1524", "5"]
    envs = jax.tree.map(lambda *xs: jnp.stack(xs), *[module.from_moves(m) for m in moves * 5])  # 20 games:
    key = jax.random.key(7)  # split over the CPU devices where there are two
    staged = c4jax.run_mcts(key, envs, 40, **options)
    # The traced search on one device (the caller's placement keeps it there):
    # the staged programs split over the devices against one program on one.
    with jax.default_device(jax.local_devices(backend="cpu")[0]):
        traced = jax.jit(lambda k, e: c4jax.run_mcts(k, e, 40, **options))(key, envs)
    chex.assert_trees_all_equal(jax.device_get(staged), jax.device_get(traced))
    if game == "tictactoe":  # one game of tic-tac-toe: test_search.py::test_eager_and_jit_agree
        return  # (a batch's games run one game's program each: the options' programs are checked above)
    env = module.from_moves(moves[1])
    one_traced = jax.jit(lambda k, e: c4jax.run_mcts(k, e, 40, **options))(jax.random.key(3), env)
    one = c4jax.run_mcts(jax.random.key(3), env, 40, **options)  # the plain programs
    chex.assert_trees_all_equal(jax.device_get(one), jax.device_get(one_traced))
    kept = keep_on_disk()  # the same stages traced into jax.export, kept on disk
    one = c4jax.run_mcts(jax.random.key(3), env, 40, **options)
    assert len(list(kept.glob("*.exported"))) == 3  # root, simulations, output
    chex.assert_trees_all_equal(jax.device_get(one), jax.device_get(one_traced))


@pytest.mark.slow
def test_a_reused_tree_searched_by_the_stages_is_the_traced_searchs():
    env = c4.from_moves("4453")
    first = c4jax.run_mcts(jax.random.key(1), env, 48)  # the one-game search of the cases above
    # Jitted: one program each where their eager operations compile dozens.
    tree = jax.jit(c4jax.get_subtree)(first.search_tree, jnp.int32([3]))
    env = jax.jit(c4.env_step)(env, 3)[0]
    staged = c4jax.run_mcts(jax.random.key(2), env, 48, tree=tree)
    traced = jax.jit(lambda k, e, t: c4jax.run_mcts(k, e, 48, tree=t))(jax.random.key(2), env, tree)
    chex.assert_trees_all_equal(jax.device_get(staged), jax.device_get(traced))
    assert int(staged.search_tree.node_visits[0, 0]) > 48  # the reused visits are there


def test_a_wrong_prediction_compiles_the_simulations_again_for_the_real_shapes(monkeypatch):
    """The simulation stage is traced from predicted root shapes; were they
    to differ from the root stage's (here a weak type), it is compiled again
    from the real ones and the search is unchanged."""
    env = c4.from_moves("4453")
    expected = c4jax.run_mcts(jax.random.key(4), env, 32)
    predict = programs.root_shapes

    def wrong(keys, envs, opts):
        shapes = predict(keys, envs, opts)
        return shapes._replace(prior_bad=jax.ShapeDtypeStruct(shapes.prior_bad.shape, jnp.int32, weak_type=True))

    monkeypatch.setattr(programs, "root_shapes", wrong)
    c4jax.clear_compiled()
    compiles = []
    original = jax.stages.Lowered.compile
    monkeypatch.setattr(jax.stages.Lowered, "compile",
                        lambda self, **kw: compiles.append(1) or original(self, **kw))
    chex.assert_trees_all_equal(jax.device_get(c4jax.run_mcts(jax.random.key(4), env, 32)), jax.device_get(expected))
    assert len(compiles) == 4  # root, output, simulations twice


def test_the_search_stages_compile_the_simulations_on_another_thread(monkeypatch):
    """The simulation stage's compilation runs on a thread of its own while
    the main thread compiles the other two (the search of
    test_a_wrong_prediction_compiles_the_simulations_again_for_the_real_shapes:
    its programs dropped, each is compiled again or loaded from the persistent
    cache, by the same calls)."""
    threads = {}
    original = jax.stages.Lowered.compile

    def recording(self, **kw):
        threads.setdefault(threading.current_thread().name, []).append(1)
        return original(self, **kw)

    monkeypatch.setattr(jax.stages.Lowered, "compile", recording)
    c4jax.clear_compiled()
    c4jax.run_mcts(jax.random.key(0), c4.from_moves("4453"), 32)
    assert sorted(len(v) for v in threads.values()) == [1, 2]
    assert any(name.startswith("c4jax-compile") for name in threads)


@pytest.mark.slow
def test_an_odd_batch_split_over_two_devices_runs_chunk_after_chunk():
    """17 games padded to 18 over two CPU devices, searched chunk after chunk
    by the anytime driver, with every chunk's padded rows dropped (one
    program per call gathers across the devices); the process runs to the
    end with every simulation counted."""
    envs = jax.tree.map(lambda *xs: jnp.stack(xs), *[c4.from_moves(m) for m in ["", "4", "44"] * 5 + ["", "4"]])
    for capacity in (None, 1024):
        out, done = c4jax.run_mcts_anytime(jax.random.key(3), envs, 0.5, capacity=capacity)
        assert done >= 128 and done % 128 == 0 and out.visit_counts.shape == (17, 7)
        np.testing.assert_array_equal(np.asarray(out.visit_counts).sum(axis=1), done)
