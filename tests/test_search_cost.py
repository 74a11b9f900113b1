"""The search's cost per simulation does not grow with the tree: proven from
the compiled program, not timed (timings are in benchmarks/scaling.py).

Inside the loop over simulations no instruction may copy, select or
concatenate a whole tree-sized array (an ``O(N)`` cost per simulation): every
tree buffer must be updated in place.  The tree capacity 4,001 is a size no
other array of the search has, so any array with an axis of 4,001 is a tree
array.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import re

import chex
import jax
import jax.numpy as jnp
import pytest

import c4jax
from c4jax.games import connect4 as c4
from c4jax.search.options import options_from_kwargs
from c4jax.runtime import compiled
from c4jax.search import programs
from c4jax.search.programs import lower_stages

from hlo_inspect import gathers_from, launched_loops, parse, simulation_loop_is_one_kernel, whole_array_ops
from marks import slow_unless

# Inspects the compiled HLO: compiled with the fusion emitters users get (tests/conftest.py).
pytestmark = pytest.mark.users_hlo

CAPACITY = 4001
SIMULATIONS = 16  # the trip count does not change the program's shape



def test_the_inspected_programs_are_compiled_with_the_users_fusion_emitters():
    """The guard for tests/conftest.py's ``users_hlo`` override: the suite's
    ``XLA_FLAGS`` turn XLA's fusion emitters off, which changes the
    optimised HLO; under this module's marker every compilation must give the
    HLO of the emitters users get instead."""
    def f(x):
        return jnp.cumprod(x * 2.0, axis=0).sum(), jnp.any(x > 0.5, axis=1)

    def text(options=None):
        return jax.jit(f, compiler_options=options).lower(jnp.ones((64, 7))).compile().as_text()

    users = text({"xla_cpu_use_fusion_emitters": True})
    assert text() == users  # what the tests below inspect
    assert text({"xla_cpu_use_fusion_emitters": False}) != users  # the emitters do change the HLO

@functools.cache
def _compiled_text(batch: int, reused: bool, capacity: int = CAPACITY, vectorised: bool = True, **options) -> str:
    """The optimized HLO of the search's simulation stage, the program that
    holds the loop over simulations (cached: the tests share it).  A
    batch is searched ``vectorised`` (one block of all its games, as on a
    GPU) unless asked for the CPU's blocks of one game."""
    envs = jax.tree.map(lambda x: jnp.stack([x] * batch), c4.from_moves("44"))
    keys = jax.random.split(jax.random.key(0), batch)
    tree = c4jax.empty_tree(envs, capacity) if reused else None
    opts = options_from_kwargs(options)
    opts = dataclasses.replace(opts, capacity=capacity, max_depth=c4.make().max_plies, lanes=opts.lanes_for(batch))
    saved = programs.BLOCK
    programs.BLOCK = batch if vectorised else saved
    try:
        return lower_stages(keys, envs, tree, opts, SIMULATIONS).simulations.compile().as_text()
    finally:
        programs.BLOCK = saved


def _descent_loops(loops):
    return [w for w in loops if re.search(r"/(vmap\()?descent\)?/", w.text)]


# (batch, selection, solver, reused): every pair of two factors' values in
# some case (a pairwise covering of the 20 combinations; Gumbel refuses
# reused trees), each case one compiled program that the tests share.
CASES = [
    (1, "puct", True, False), (8, "puct", True, True), (8, "puct", False, False),
    (1, "uct", False, True), (8, "uct", True, False),
    (1, "gumbel", False, False), (8, "gumbel", True, False),
]


def test_the_cases_cover_every_pair_of_values():
    every = [(b, s, v, r) for b in (1, 8) for s in ("puct", "uct", "gumbel") for v in (True, False)
             for r in (False, True) if not (s == "gumbel" and r)]
    for i, j in itertools.combinations(range(4), 2):
        assert {(c[i], c[j]) for c in every} == {(c[i], c[j]) for c in CASES}, (i, j)


# The quick loop's cases: the default search, fresh for one game and reused
# for a batch.
QUICK = {(1, "puct", True, False), (8, "puct", True, True)}


@pytest.mark.parametrize("batch,selection,solver,reused", slow_unless(CASES, QUICK.__contains__))
def test_no_whole_tree_copy_or_select_inside_the_simulation_loop(batch, selection, solver, reused):
    text = _compiled_text(batch, reused, CAPACITY, selection=selection, solver=solver)
    loops, ops = whole_array_ops(text, CAPACITY)
    # Exactly one loop carries the tree: the loop over simulations.
    assert len(loops) == 1, [w.text[:200] for w in loops]
    assert ops == [], "\n".join(f"{o.opcode} {o.shape} in {o.computation}" for o in ops[:20])


@pytest.mark.parametrize("batch,capacity,selection,solver,reused", slow_unless([
    (batch, capacity, selection, solver, reused)
    for (batch, selection, solver, reused) in CASES
    if batch == 1 and selection != "gumbel"
    for capacity in (CAPACITY,)
] + [(1, 64_001, "puct", True, True)] + [
    (batch, CAPACITY, selection, solver, reused) for (batch, selection, solver, reused) in CASES if batch > 1
], lambda case: case[1] == CAPACITY and (case[0], *case[2:]) in QUICK))
def test_the_descent_is_compiled_into_one_kernel(batch, capacity, selection, solver, reused):
    """XLA's CPU compiler runs the descent loop as one compiled kernel (a
    call marked ``xla_cpu_small_call``), at any capacity and batch size: the
    loop holds no scatter (a batch's path writes are selects,
    ``c4jax.search.tree.set_entry``) and c4jax's loop threshold
    (``c4jax.runtime.xla_flags``) exceeds the bytes it counts.  A loop whose
    iterations launch their kernels one by one costs dozens of kernel
    launches per level (benchmarks/kernels_per_simulation.py).  At a batch
    of several games every loop inside a simulation is one kernel."""
    text = _compiled_text(batch, reused, capacity, selection=selection, solver=solver)
    hoisted, launched = launched_loops(text, capacity)
    assert len(_descent_loops(hoisted)) == 1, [w.text[:160] for w in hoisted + launched]
    assert _descent_loops(launched) == []
    if batch > 1:
        assert launched == [], [w.text[:160] for w in launched]


@pytest.mark.parametrize("batch,selection,solver,reused", slow_unless(CASES, QUICK.__contains__))
def test_the_simulation_loop_is_compiled_into_one_kernel(batch, selection, solver, reused):
    """On the CPU the tree is written without scatters
    (``c4jax.search.tree.write``), so XLA's CPU compiler runs the whole loop
    over simulations as one kernel, for one game and for a vectorised batch."""
    text = _compiled_text(batch, reused, CAPACITY, selection=selection, solver=solver)
    assert simulation_loop_is_one_kernel(text, CAPACITY)


def test_the_cpu_searches_a_batch_one_game_at_a_time():
    """On the CPU a batch runs the one-game program over its games
    (``c4jax.search.programs``): the compiled batch holds no gather over the
    batch and its loop over simulations is one kernel."""
    text = _compiled_text(8, False, CAPACITY, vectorised=False)
    assert simulation_loop_is_one_kernel(text, CAPACITY)
    assert gathers_from(text, CAPACITY) == []


@pytest.mark.parametrize("batch,selection,solver,reused", slow_unless([c for c in CASES if c[0] > 1], QUICK.__contains__))
def test_a_batch_reads_its_nodes_with_gathers_over_the_batch(batch, selection, solver, reused):
    """At a batch of several games the descent reads every game's node at
    once, with gathers from the batched tree arrays, not in a loop over the
    games (c4jax.search.tree.node_view)."""
    text = _compiled_text(batch, reused, CAPACITY, selection=selection, solver=solver)
    assert len(gathers_from(text, CAPACITY)) > 0


def test_the_inspection_finds_the_copy_of_a_read_then_write_loop():
    """The control (the toy of shared/notes/search-cost.md): a loop step that
    descends 8 levels reading a tree-sized buffer and then writes it is
    compiled with whole-buffer copies, and the inspection sees them; applying
    the write at the start of the next step instead leaves none."""

    def make(pipelined: bool):
        def one(seed):
            vals = jnp.zeros((CAPACITY,), jnp.float32) + seed
            kids = jnp.full((CAPACITY, 7), -1, jnp.int32)

            def body(i, s):
                vals, kids, pending = s
                if pipelined:
                    kids = kids.at[pending, i % 7].set(i % CAPACITY, mode="drop")
                node = jnp.int32(0)
                for d in range(8):
                    nxt = kids[node, d % 7]
                    node = jnp.where(nxt >= 0, nxt, node)
                idx = (i * 7919) % CAPACITY
                vals = vals.at[idx].add(vals[node] + 1.0)
                if not pipelined:
                    kids = kids.at[idx, i % 7].set(i % CAPACITY)
                return vals, kids, idx

            init = (vals, kids, jnp.int32(CAPACITY))
            with jax.named_scope("simulations"):  # as the search names its loop
                return jax.lax.fori_loop(0, 100, body, init)[0].sum()

        return jax.jit(jax.vmap(one)).lower(jnp.zeros(1)).compile().as_text()

    loops, ops = whole_array_ops(make(pipelined=False), CAPACITY)
    assert len(loops) == 1 and any(o.opcode == "copy" for o in ops)
    loops, ops = whole_array_ops(make(pipelined=True), CAPACITY)
    assert len(loops) == 1 and ops == []


@pytest.mark.slow
def test_a_game_played_with_reuse_compiles_the_search_once():
    """``run_mcts`` called move after move with the kept subtree (not inside
    a jit of the caller's) traces and compiles its search once."""
    player = c4jax.mcts_player(24, capacity=120)
    env = jax.tree.map(lambda x: x[None], c4.env_reset())
    tree = player.init(env)
    compiled.clear()
    before = compiled.stats()["compiles"]
    for move in range(6):
        action, tree = player.act(jax.random.split(jax.random.key(move), 1), env, tree)
        env = jax.vmap(c4.env_step)(env, action)[0]
        tree = player.observe(tree, action)
        chex.assert_equal(int(tree.node_visits.shape[1]), 120)
    assert compiled.stats()["compiles"] - before == 1


@pytest.mark.parametrize("batch", slow_unless([1, 8], lambda batch: batch == 1))
def test_parallel_lanes_update_the_tree_in_place(batch):
    """With 8 lanes a step reads the tree (8 descents), then proves the
    lanes' bounds one after another writing them into the tree: still no
    whole-tree copy or select in the loop over simulations."""
    text = _compiled_text(batch, False, CAPACITY, lanes=8)
    loops, ops = whole_array_ops(text, CAPACITY)
    assert len(loops) == 1, [w.text[:200] for w in loops]
    assert ops == [], "\n".join(f"{o.opcode} {o.shape} in {o.computation}" for o in ops[:20])


def test_a_lane_descent_is_one_kernel_at_batch_one():
    """The virtual losses of the earlier lanes keep each descent one kernel."""
    text = _compiled_text(1, False, CAPACITY, lanes=8)
    hoisted, launched = launched_loops(text, CAPACITY)
    assert len(_descent_loops(hoisted)) == 1, [w.text[:160] for w in hoisted + launched]
    assert _descent_loops(launched) == []


@pytest.mark.users_hlo
@pytest.mark.parametrize("lanes,batch", slow_unless([(1, 1), (4, 1), (1, 8)], lambda case: case[0] == 1))
def test_a_continued_anytime_chunk_copies_no_tree_buffer(lanes, batch):
    """The anytime driver's chunks (``continuing=True``, the tree
    donated) update the tree in place from the first instruction to the
    last: no capacity-sized ``copy`` anywhere in its three programs (the last
    simulation's writes are applied by a closing step inside the loop, a
    chunk without Dirichlet noise leaves the root's stored prior alone, and
    a batch searched one game after another writes each game's tree back
    into the donated batch)."""
    envs = jax.tree.map(lambda x: jnp.stack([x] * batch), c4.from_moves("44"))
    keys = jax.random.split(jax.random.key(0), batch)
    opts = options_from_kwargs(dict(lanes=lanes))
    opts = dataclasses.replace(opts, capacity=CAPACITY, max_depth=c4.make().max_plies)
    stages = lower_stages(keys, envs, c4jax.empty_tree(envs, CAPACITY), opts, SIMULATIONS, continuing=True)
    copies = [i for stage in stages for c in parse(stage.compile().as_text()).values() for i in c
              if i.opcode == "copy" and any(CAPACITY in d for d in i.dims())]
    assert copies == [], [i.text[:120] for i in copies]


@pytest.mark.parametrize("batch", [1, 2])
def test_a_fresh_searchs_simulation_stage_reduces_no_array_of_the_tree(batch):
    """A fresh tree holds the root alone, so the search knows its first free
    node without a sum over the tree: built from constants, such a sum is
    folded by XLA while it compiles, node by node (the lowered program is
    read: the folded one no longer shows it)."""
    envs = jax.tree.map(lambda x: jnp.stack([x] * batch), c4.from_moves("44"))
    keys = jax.random.split(jax.random.key(0), batch)
    opts = options_from_kwargs({})
    opts = dataclasses.replace(opts, capacity=CAPACITY, max_depth=c4.make().max_plies, lanes=opts.lanes_for(batch))
    text = lower_stages(keys, envs, None, opts, SIMULATIONS).simulations.as_text()
    over_nodes = re.compile(rf"stablehlo\.reduce\(.*: \(tensor<(\d+x)*{CAPACITY}(x\d+)*x(i32|i1|f32)>")
    assert "stablehlo.reduce" in text  # the pattern's operation is in the program
    assert [line.strip()[:160] for line in text.splitlines() if over_nodes.search(line)] == []
