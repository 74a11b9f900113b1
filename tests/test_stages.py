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
def cache_folder(tmp_path):
    """``use(kept)``: the persistent cache off (the plain programs) or on in a
    folder of this test's own (the programs kept on disk by
    c4jax.runtime.compiled); the session's restored after."""
    before = jax.config.jax_compilation_cache_dir

    def use(kept: bool):
        jax.config.update("jax_compilation_cache_dir", str(tmp_path) if kept else None)
        c4jax.clear_compiled()

    try:
        yield use
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
        c4jax.clear_compiled()


# Every option of OPTIONS[:5] on the plain programs, two sets of them
# joined in one search each; the kept ones (the same stages, traced into
# jax.export) with the defaults.
JOINED = [{}, {**OPTIONS[1], **OPTIONS[4]}, {**OPTIONS[2], **OPTIONS[3]}]
CASES = ([(False, "tictactoe", {})] + [(False, "connect4", options) for options in JOINED]
         + [(True, "connect4", {})])  # kept on disk: the same for every game


@pytest.mark.parametrize("kept,game,options", slow_unless(CASES, lambda case: case[:2] == (False, "tictactoe")
                                                          and case[2] == {}))
def test_the_staged_programs_give_the_search_traced_as_one_program(cache_folder, kept, game, options):
    cache_folder(kept)
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
    if game == "tictactoe" or options:  # one game of tic-tac-toe: test_search.py::test_eager_and_jit_agree
        return  # (a batch's games run one game's program each: the options' programs are checked above)
    env = module.from_moves(moves[1])
    one = c4jax.run_mcts(jax.random.key(3), env, 40, **options)
    one_traced = jax.jit(lambda k, e: c4jax.run_mcts(k, e, 40, **options))(jax.random.key(3), env)
    chex.assert_trees_all_equal(jax.device_get(one), jax.device_get(one_traced))


@pytest.mark.slow
def test_a_reused_tree_searched_by_the_stages_is_the_traced_searchs():
    env = c4.from_moves("4453")
    first = c4jax.run_mcts(jax.random.key(1), env, 48)
    tree = c4jax.get_subtree(first.search_tree, jnp.int32([3]))
    env = c4.env_step(env, 3)[0]
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
    the main thread compiles the other two."""
    threads = {}
    original = jax.stages.Lowered.compile

    def recording(self, **kw):
        threads.setdefault(threading.current_thread().name, []).append(1)
        return original(self, **kw)

    monkeypatch.setattr(jax.stages.Lowered, "compile", recording)
    c4jax.clear_compiled()
    c4jax.run_mcts(jax.random.key(0), ttt.from_moves("1"), 16)
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
