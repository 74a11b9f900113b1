"""The anytime driver (run_mcts_anytime): the clock rule on a fake clock,
exact simulation counts, one compilation across chunks and moves, the stop
at a solved root, a finished game, the default capacity of a game and of a
batch, an odd batch over two devices, and its arguments and their errors."""

from __future__ import annotations

import chex
import jax
import numpy as np
import pytest

import c4jax
from c4jax.games import connect4 as c4
from c4jax.games import tictactoe as ttt
from c4jax.search import anytime
from c4jax.search.options import options_from_kwargs


# The searches of one game below share one compiled shape (tic-tac-toe, 2,048
# nodes; the chunk size is an argument of the program), and those of a batch
# another (20 rows), except where a test needs shapes no other test compiles
# (112 nodes).  The timing tests drop c4jax's compiled searches first, so
# that their first call compiles its programs again (or loads them from the
# persistent cache) and its output program has no times of earlier calls.
TTT_CAPACITY = 2048


class FakeClock:
    """Advances ``step`` seconds each time it is read."""

    def __init__(self, step: float):
        self.t, self.step, self.reads = 0.0, step, 0

    def __call__(self) -> float:
        self.t += self.step
        self.reads += 1
        return self.t


def test_compiling_and_the_first_runs_are_not_thinking_time():
    """A call that compiles runs both new executables once before the clock
    starts (a new executable's first run is several times slower than the
    next): ``timing`` reports that time apart, and a second call with the
    same shapes compiles and warms nothing, and keeps the time the first
    call's output took.  c4jax's compiled searches are dropped first, so
    the first call compiles (TTT_CAPACITY)."""
    env = ttt.from_moves("5")
    timing: dict = {}
    clock = FakeClock(1.0)
    c4jax.clear_compiled()
    _, n = c4jax.run_mcts_anytime(jax.random.key(0), env, 3.5, chunk=11, capacity=TTT_CAPACITY, clock=clock,
                                  timing=timing)
    # Reads: the call's start, the end of the warm-up (the clock restarts),
    # then two per chunk (the rule stops after the chunk ending at 1 + 2k > 3.5 - 1 step).
    assert timing["compile_s"] == 1.0 and n == 11 * 2
    assert timing["search_s"] == clock.t - 2.0 == 5.0
    timing.clear()
    clock = FakeClock(1.0)
    _, n = c4jax.run_mcts_anytime(jax.random.key(1), env, 3.5, chunk=11, capacity=TTT_CAPACITY, clock=clock,
                                  timing=timing)
    # The first call's output took one step (from its last chunk's end to its
    # return): this one keeps a step for it, so its first chunk (ending at 3,
    # 2 + 1 + 1 > 3.5) is its last, and it returns at 4, within the budget.
    assert timing["compile_s"] == 0.0 and n == 11
    assert timing["search_s"] == clock.t - 1.0 == 3.0


class JumpingClock(FakeClock):
    """A :class:`FakeClock` whose read number ``at`` jumps ``jump`` steps."""

    def __init__(self, at: int, jump: float):
        super().__init__(1.0)
        self.at, self.jump = at, jump

    def __call__(self) -> float:
        return super().__call__() + (self.jump if self.reads >= self.at else 0.0)


def test_the_time_kept_for_the_output_is_the_median_of_the_last_returns():
    """One slow return (a pause of the process) does not cut the next calls
    short: the clock rule keeps the median of the last returns' times.
    c4jax's compiled searches are dropped first: a new output program, with
    no times of earlier calls (TTT_CAPACITY)."""
    env = ttt.from_moves("1")

    def call(budget, clock):
        timing: dict = {}
        _, n = c4jax.run_mcts_anytime(jax.random.key(0), env, budget, chunk=7, capacity=TTT_CAPACITY, clock=clock,
                                      timing=timing)
        return n, timing

    c4jax.clear_compiled()
    call(3.5, FakeClock(1.0))  # compiles; its return takes one step
    n, _ = call(3.5, FakeClock(1.0))  # keeps one step: the chunk ending at 3 is its last
    assert n == 7
    # Read 4 (the return) of this call jumps 10 steps: its return took 11.
    n, timing = call(3.5, JumpingClock(4, 10.0))
    assert n == 7 and timing["search_s"] == 13.0
    # The median of 1, 1 and 11 steps is 1: five chunks fit 10.5 steps
    # (after the chunk ending at 9, 8 + 1 + 1 <= 10.5); the last return
    # alone would have stopped it after one (2 + 1 + 11 > 10.5).
    n, _ = call(10.5, FakeClock(1.0))
    assert n == 7 * 5


def test_the_time_kept_for_the_output_is_that_of_its_kind():
    """An output that ranks moves against a fallible opponent (a pass over
    the whole tree, :func:`c4jax.search.output.ranks_against_fallible`) is
    timed apart from the others: a slow one cuts short only the calls whose
    tree would need it.  c4jax's compiled searches are dropped first: a new
    output program, with no times of earlier calls (TTT_CAPACITY)."""
    def call(moves, budget, clock, **kw):
        return c4jax.run_mcts_anytime(jax.random.key(0), ttt.from_moves(moves), budget, chunk=101,
                                      capacity=TTT_CAPACITY, clock=clock, **kw)

    c4jax.clear_compiled()
    call("", 3.5, FakeClock(1.0))  # compiles; a return of one step, nothing proven at the root
    # "51" after 1,010 simulations: a move proven a draw, the root unsolved.
    # Read 22 (the return) jumps 10 steps: that return took 11.
    out, n = call("51", 1e5, JumpingClock(22, 10.0), max_simulations=1010)
    bounds = out.search_tree.extra_data
    assert n == 1010 and float(bounds.value_lower[0, 0]) < float(bounds.value_upper[0, 0])
    # The empty board keeps one step (its kind's last return), not 11: five
    # chunks fit 10.5 steps.
    _, n = call("", 10.5, FakeClock(1.0))
    assert n == 101 * 5
    # "51" again on that tree keeps 11: after one chunk 2 + 1 + 11 > 10.5.
    _, n = call("51", 10.5, FakeClock(1.0), tree=out.search_tree)
    assert n == 101


@pytest.mark.slow
def test_the_clock_rule_never_overruns_by_more_than_one_chunk():
    # Each chunk reads the clock twice (before, after): one chunk "takes"
    # one step.  Budget 10.5 steps: it stops once the next chunk would
    # overrun, and its elapsed time stays within one chunk of the budget.
    env = ttt.env_reset()
    clock = FakeClock(1.0)
    out, n = c4jax.run_mcts_anytime(jax.random.key(0), env, 10.5, chunk=16, clock=clock, capacity=TTT_CAPACITY)
    chunks = n // 16
    elapsed = clock.t - 1.0  # the first read starts the clock
    assert elapsed <= 10.5 + 2.0 and chunks >= 4
    assert int(out.search_tree.node_visits[0, 0]) == n + 1
    assert int(np.sum(out.visit_counts)) == n


@pytest.mark.parametrize("lanes", [1, 4])
def test_the_driver_tells_the_outputs_that_rank_against_a_fallible_opponent(lanes):
    """What the driver checks after a chunk, per game: a root with a draw
    proven and nothing better ("51" after 1,000 simulations) ranks against
    a fallible opponent; the empty board (nothing proven) and a root proven
    won ("1234", a win in three) do not.  Each game's tree is the driver's
    (the one-game shapes of the tests above), the three stacked as a batch's."""
    moves = ("", "1234", "51")
    envs = jax.tree.map(lambda *x: np.stack(x), *[ttt.from_moves(m) for m in moves])
    opts = options_from_kwargs(dict(capacity=TTT_CAPACITY, lanes=lanes))
    trees = [c4jax.run_mcts_anytime(jax.random.key(0), ttt.from_moves(m), 1e5, chunk=100, max_simulations=1000,
                                    options=opts)[0].search_tree for m in moves]
    tree = jax.tree.map(lambda *x: np.concatenate(x), *trees)
    bounds = tree.extra_data
    assert np.asarray(bounds.value_lower[:, 0] == bounds.value_upper[:, 0]).tolist() == [False, True, False]
    assert np.asarray(anytime._ranks_against_fallible(tree, envs, opts)).tolist() == [False, False, True]


def test_max_simulations_and_exact_counts():
    out, n = c4jax.run_mcts_anytime(
        jax.random.key(1), ttt.from_moves("5"), 60.0, chunk=16, max_simulations=100, capacity=TTT_CAPACITY
    )
    assert n == 96  # rounded down to whole chunks
    assert int(np.sum(out.visit_counts)) == 96


def test_one_compilation_across_chunks_and_moves_with_subtree_reuse():
    env = ttt.env_reset()
    envs = jax.tree.map(lambda x: x[None], env)
    tree = c4jax.empty_tree(envs, TTT_CAPACITY)  # the shapes of the tests above: compiled once per module
    cut = jax.jit(c4jax.get_subtree)
    before = None
    for ply in range(4):
        out, n = c4jax.run_mcts_anytime(jax.random.key(ply), envs, 30.0, tree=tree, chunk=16, max_simulations=128)
        if before is None:
            before = anytime.compiled_count()
        assert anytime.compiled_count() == before, ply  # nothing new compiled
        root = int(out.search_tree.node_visits[0, 0])
        assert root >= n + 1 and n == 128
        action = out.action
        tree = cut(out.search_tree, action)
        envs = jax.vmap(ttt.env_step)(envs, action)[0]


def test_a_solved_root_stops_the_search():
    # X to move wins at once: the solver proves the root in the first chunk.
    out, n = c4jax.run_mcts_anytime(jax.random.key(0), ttt.from_moves("1425"), 60.0, chunk=32, capacity=TTT_CAPACITY)
    assert n == 32 and int(out.action) == 2
    assert float(out.value) == 1.0


def test_a_finished_game_runs_no_simulations():
    # X has won: there is nothing to search, so no simulation is counted
    # and no move is recommended.
    out, n = c4jax.run_mcts_anytime(jax.random.key(0), ttt.from_moves("14253"), 5.0, chunk=8, capacity=TTT_CAPACITY)
    assert n == 0 and int(out.action) == -1 and int(out.visit_counts.sum()) == 0


def test_the_budget_may_be_a_0d_array():
    """``seconds`` as ``jnp.float32(30.0)`` is a number like a Python float
    (the run stops at max_simulations); an array of two values is not."""
    env = ttt.from_moves("5")
    _, n = c4jax.run_mcts_anytime(jax.random.key(0), env, jax.numpy.float32(30.0), chunk=9,
                                  max_simulations=18, capacity=TTT_CAPACITY)
    assert n == 18
    for bad in (jax.numpy.zeros(2), jax.numpy.array([0.1]), jax.numpy.bool_(True), np.array(True)):
        with pytest.raises(ValueError, match=r"seconds must be a number in \(0, 604800\] \(a week\), or a 0-d "
                                             r"array of one; got an array of shape"):
            c4jax.run_mcts_anytime(jax.random.key(0), env, bad)


@pytest.mark.parametrize("kwargs,match", [
    (dict(seconds=0), r"seconds must be a number in \(0, 604800\]"),
    (dict(seconds=-1.0), r"seconds must be a number in \(0, 604800\]"),
    (dict(seconds=float("nan")), r"seconds must be a number in \(0, 604800\]"),
    (dict(seconds="1"), r"seconds must be a number in \(0, 604800\]"),
    (dict(seconds=1.0, chunk=0), "chunk must be an int in 1"),
    (dict(seconds=1.0, chunk=64, max_simulations=10), r"max_simulations must be None or an int >= 64 \(chunk = 64\)"),
    (dict(seconds=1.0, selection="gumbel"), "selection='gumbel' cannot run against a clock"),
    (dict(seconds=1.0, lanes=0), "lanes must be None or an int in 1..1024"),
    (dict(seconds=1.0, env=None), "env must be a c4jax Env .*; got NoneType"),
    (dict(seconds=1.0, env={}), "env must be a c4jax Env .*; got dict"),
    (dict(seconds=1.0, timing=[]), r"timing must be None or a dict .*; got list"),
    (dict(seconds=1.0, clock=None), r"clock must be a function of no arguments .*; got NoneType"),
    (dict(seconds=1.0, clock=lambda: "x"), "clock must give seconds as a finite number .*; got 'x'"),
    (dict(seconds=1.0, clock=lambda: float("nan")), "clock must give seconds as a finite number .*; got nan"),
])
def test_bad_arguments_raise_value_errors(kwargs, match):
    # Each before anything is searched or compiled.
    kwargs = {"env": c4.env_reset(), **kwargs}
    compiled = anytime.compiled_count()
    with pytest.raises(ValueError, match=match):
        c4jax.run_mcts_anytime(jax.random.key(0), **kwargs)
    assert anytime.compiled_count() == compiled


def test_the_driver_refuses_to_be_traced():
    message = "run_mcts_anytime reads a wall clock between compiled searches, on the host: call it outside jax.jit"
    env = ttt.from_moves("5")
    with pytest.raises(ValueError, match=message):
        jax.jit(lambda k, e: c4jax.run_mcts_anytime(k, e, 0.01))(jax.random.key(0), env)
    with pytest.raises(ValueError, match=message):
        jax.jit(lambda s: c4jax.run_mcts_anytime(jax.random.key(0), env, s))(0.01)
    envs = jax.tree.map(lambda x: x[None], env)
    with pytest.raises(ValueError, match=message):
        jax.jit(lambda t: c4jax.run_mcts_anytime(jax.random.key(0), envs, 0.01, tree=t))(c4jax.empty_tree(envs, 64))


def test_the_default_capacity_has_room_for_a_games_simulations_within_a_batchs_share():
    # One game: 400,000 simulations per second at most, rounded up to a power of two.
    assert anytime.anytime_capacity(0.05, 128) == 32768
    assert anytime.anytime_capacity(0.3, 128) == 131072
    assert anytime.anytime_capacity(1e-6, 128) == 512  # 2 * chunk + 2 = 258, rounded up
    assert anytime.anytime_capacity(1e-6, 300) == 1024
    # A batch on two CPU devices: 1,000,000 simulations per second shared by its games,
    # at most 16 chunks' worth of nodes per game.
    assert anytime.anytime_capacity(0.3, 128, 1024, 2) == 512
    assert anytime.anytime_capacity(0.3, 128, 17, 2) == 2048
    assert anytime.anytime_capacity(0.3, 8, 17, 2) == 128
    # No more than max_simulations need, rounded up.
    assert anytime.anytime_capacity(100.0, 128, max_simulations=512) == 1024
    assert anytime.anytime_capacity(100.0, 128, max_simulations=128) == 512  # 2 * chunk + 2 = 258
    # At most 4,194,304 nodes in all (off the CPU too), never less than two chunks.
    assert anytime.anytime_capacity(10.0, 128, 1024) == 4096
    assert anytime.anytime_capacity(10.0, 1000, 1 << 20) == 2002


def test_a_batch_searches_with_the_default_capacity_of_its_share():
    envs = jax.tree.map(lambda *x: np.stack(x), *[ttt.from_moves(m) for m in ["4", "45"] * 10])
    out, n = c4jax.run_mcts_anytime(jax.random.key(0), envs, 0.2, chunk=16, max_simulations=16)
    devices = c4jax.search.programs.cpu_mesh(20)
    want = anytime.anytime_capacity(0.2, 16, 20, 1 if devices is None else devices.size, 16)
    assert out.search_tree.node_visits.shape == (20, want) and n == 16


def test_an_odd_batch_gives_the_rows_of_the_even_batch_it_is_padded_to():
    # 19 games padded to 20: the shapes of the test above (its default
    # capacity, 64 nodes, given here), so its compiled search.
    moves = ["4", "45", "123", "", "7", "4561", "3", "68", "1", "5"] * 2
    envs = jax.tree.map(lambda *x: np.stack(x), *[ttt.from_moves(m) for m in moves])
    keys = jax.random.split(jax.random.key(5), 20)
    kwargs = dict(chunk=16, max_simulations=32, capacity=64)
    odd, n_odd = c4jax.run_mcts_anytime(keys[:19], jax.tree.map(lambda x: x[:19], envs), 60.0, **kwargs)
    even, n_even = c4jax.run_mcts_anytime(keys, envs, 60.0, **kwargs)
    assert n_odd == n_even == 32 and odd.action.shape == (19,)
    chex.assert_trees_all_equal(odd, jax.tree.map(lambda x: x[:19], even))


@pytest.mark.parametrize("noise", [0.0, 0.25])
def test_the_chunks_are_run_mcts_continuing_its_tree(noise):
    """Chunk ``i`` searches with ``fold_in(key, i)`` on the tree the chunk
    before left: the same as ``run_mcts`` reusing that tree (its root is the
    same position), with or without root noise drawn anew per chunk.  The
    driver's shapes of the one-game tests above (TTT_CAPACITY)."""
    env, chunk, key = ttt.from_moves("5"), 16, jax.random.key(7)
    got, n = c4jax.run_mcts_anytime(key, env, 60.0, chunk=chunk, max_simulations=3 * chunk, capacity=TTT_CAPACITY,
                                    dirichlet_fraction=noise)
    tree = c4jax.empty_tree(jax.tree.map(lambda x: x[None], env), TTT_CAPACITY)
    for i in range(3):
        want = c4jax.run_mcts(jax.random.fold_in(key, i), env, chunk, tree=tree, dirichlet_fraction=noise)
        tree = want.search_tree
    assert n == 3 * chunk
    chex.assert_trees_all_equal(got, want)


def test_every_chunk_runs_one_compiled_simulation_program():
    """The first chunk runs the simulation program of the others (a small
    start program sets up its tree): a new shape compiles one simulation
    program, not one for the first chunk and one for the rest."""
    names = []

    def listener(event, duration, fun_name=None, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            names.append(fun_name)

    c4jax.clear_compiled()
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        _, n = c4jax.run_mcts_anytime(jax.random.key(3), ttt.from_moves("4"), 60.0, chunk=8, max_simulations=24,
                                      capacity=112)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert n == 24
    assert names.count("jit(simulation_stage)") == 1 and names.count("jit(start_stage)") == 1, names


@pytest.mark.parametrize("games", [1, 17])
def test_nothing_compiles_once_the_clock_has_started(games):
    """Every program a call needs (the search's and the chunks' small ones)
    compiles before the budget's clock starts: a process's first move is
    not cut short by compiling."""
    reads, compiled_at = [], []

    def clock():
        reads.append(None)
        return 1e-6 * len(reads)

    def listener(event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            compiled_at.append(len(reads))

    moves = ["4", "45", "123", "", "7", "4561", "3", "68", "1"] * 2
    envs = jax.tree.map(lambda *x: np.stack(x), *[ttt.from_moves(m) for m in moves[:games]])
    env = ttt.from_moves("4") if games == 1 else envs
    c4jax.clear_compiled()
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        _, n = c4jax.run_mcts_anytime(jax.random.key(games), env, 1.0, chunk=8, max_simulations=48,
                                      capacity=112, clock=clock)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    # Read 1 takes the call's time, read 2 restarts the clock after compiling, then each
    # chunk reads it twice, and the return once.
    assert n == 48 and len(reads) == 2 + 2 * 6 + 1 and compiled_at
    assert [c for c in compiled_at if 2 < c < len(reads)] == [], compiled_at
