"""Anytime search: :func:`run_mcts_anytime`, simulations until a wall-clock
budget is spent.

A host-side driver around the compiled search of :func:`c4jax.run_mcts`: it
runs chunks of ``chunk`` simulations on the same tree (each chunk continues
the tree the previous one left, as subtree reuse continues a tree whose root
is the position searched) until the budget is spent, and returns the last
chunk's :class:`SearchOutput` and the number of simulations done.  Every
chunk runs the same simulation program, on a tree whose root is the position
(its buffers updated in place); a small start program sets up the first
chunk's tree (the root evaluated: fresh, or the given tree's if its root is
the position).  The search is compiled ahead of time, once per (shapes,
options), before the clock starts: no chunk and no later move compiles (the
tree's capacity stays fixed, so a game played with subtree reuse compiles
once).

Clock: after each chunk the driver stops if the budget is spent, if every
root is solved (its value proven: more simulations change nothing), once
``max_simulations`` are done, or if the next chunk and the output would
overrun the budget.  The next chunk is predicted to take as long as the
last; the output (computed once, after the last chunk) as long as the median
of this compiled search's last 5 outputs of its kind (nothing before the
first): those that rank moves against a fallible opponent (a pass over the
whole tree) and the others.  So it overruns the budget by at most the
misprediction of one chunk and of the output; at least one chunk always
runs.  Thinking about time rather than simulations is not reproducible from
the key alone: the key fixes the numbers of each chunk, the
clock decides how many chunks run.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import math
import time
import weakref
from typing import Any

import jax
import numpy as np

from c4jax.runtime import compiled
from c4jax.runtime.compiled import search_platform
from c4jax.games.env import Env, check_env
from c4jax.search.output import SearchOutput
from c4jax.search.programs import (compiled_search, compiled_start, cpu_mesh, first_games, round_up, is_traced, on_device,
                                   one_game_device, pad_rows)
from c4jax.search.reuse import empty_tree
from c4jax.search.run import check_params, games_of, prepare_search, unbatch_output, warn_non_finite
from c4jax.validation import check_int, check_number, plain
from c4jax.search.options import SearchOptions, options_from_kwargs
from c4jax.search.output import ranks_against_fallible
from c4jax.search.solver import make_solver

__all__ = ["run_mcts_anytime", "anytime_capacity"]

# Upper bounds, with room to spare, on the simulations one game gets per
# second and on those one CPU device runs over all the games of a batch:
# they size the default tree.
_MAX_SIMULATIONS_PER_SECOND = 400_000
_MAX_CPU_DEVICE_SIMULATIONS_PER_SECOND = 500_000
_MAX_DEFAULT_CAPACITY = 1 << 17
_MAX_BATCH_NODES = 1 << 22


def anytime_capacity(seconds: float, chunk: int, games: int = 1, cpu_devices: int | None = None,
                     max_simulations: int | None = None) -> int:
    """The default node capacity per game for a budget of ``seconds``: a
    power of two (few compiled shapes) with room for every simulation a game
    can get in that time (400,000 per second; on the CPU, 500,000 per second
    per device shared by its games) or for ``max_simulations`` if fewer, at
    least ``2 * chunk + 2``, at most 131,072 nodes and ``4,194,304 / games``
    (rounded down to a power of two).  ``cpu_devices``: the CPU devices a
    batch of ``games`` is split over (``None``: not on the CPU); there a
    batch of several games holds at most ``16 * chunk`` nodes per game
    (rounded up to a power of two), since each chunk copies each game's
    tree once.  A fuller tree still searches correctly (its unexpanded edges
    collect rollouts)."""
    rate = float(_MAX_SIMULATIONS_PER_SECOND)
    if cpu_devices:
        rate = min(rate, _MAX_CPU_DEVICE_SIMULATIONS_PER_SECOND * cpu_devices / games)
    want = int(math.ceil(seconds * rate))
    if max_simulations is not None:
        want = min(want, max_simulations + 1)
    want = max(2 * chunk + 2, want)
    limit = min(_MAX_DEFAULT_CAPACITY, 1 << (max(_MAX_BATCH_NODES // games, 1).bit_length() - 1))
    if cpu_devices and games > 1:
        limit = min(limit, 1 << (16 * chunk - 1).bit_length())
    return max(min(1 << (want - 1).bit_length(), limit), 2 * chunk + 2)


# The seconds each compiled search's last calls (at most 5 of each kind) took
# from their last chunk's end to their return (the output, ready), apart for
# the outputs that rank against a fallible opponent and those that do not;
# its output program the key.  The clock rule keeps the median of the kind
# that the tree would have for its output.
_OUTPUT_SECONDS: "weakref.WeakKeyDictionary[Any, tuple[collections.deque, collections.deque]]" = \
    weakref.WeakKeyDictionary()

MAX_SECONDS = 7 * 24 * 3600.0
MAX_CHUNK = 1 << 16  # simulations per compiled chunk

def compiled_count() -> int:
    """How many searches this process has compiled so far
    (:func:`c4jax.runtime.compiled.stats`; for tests)."""
    return compiled.stats()["compiles"]


def _on_search_device(fn):
    """``fn`` run where its search of ``env`` runs: one game on a GPU or
    TPU host on its CPU (:func:`c4jax.search.programs.one_game_device`)."""

    @functools.wraps(fn)
    def run(key, env, *args, **kwargs):
        device = None
        if isinstance(env, Env) and len(env.batch_shape) <= 1:
            games = env.batch_shape[0] if env.batch_shape else 1
            device = one_game_device(games, (key, env, kwargs.get("tree"), kwargs.get("params")))
        with on_device(device):
            return fn(key, env, *args, **kwargs)

    return run


@_on_search_device
def run_mcts_anytime(
    key: jax.Array,
    env: Env,
    seconds: float,
    *,
    tree=None,
    chunk: int = 128,
    max_simulations: int | None = None,
    clock=time.perf_counter,
    timing: dict | None = None,
    params: Any = None,
    **options: Any,
) -> tuple[SearchOutput, int]:
    """Searches ``env`` (one game or a batch) until ``seconds`` of wall-clock
    time are spent; returns ``(output, num_simulations)``.

    Args:
      key: a PRNG key or ``[B]`` keys (as :func:`c4jax.run_mcts`); chunk ``i``
        searches with ``jax.random.fold_in(key, i)``.
      env: an :class:`~c4jax.games.env.Env`, unbatched or ``[B]``.
      seconds: the budget in (0, 604800] (a number or a 0-d array): wall-clock
        seconds from the call, compiling the first call of a shape excluded.
      tree: a tree to continue (subtree reuse); ``None``: an empty tree.
      chunk: simulations per compiled call, an int in 1..65,536 (the clock's
        granularity).
      max_simulations: stop once this many are done (an int >= ``chunk``,
        rounded down to a multiple of it), or ``None``.
      clock: the time source (``time.perf_counter``): a function of no
        arguments giving finite seconds that advance.
      timing: ``None`` or a dict that gets ``"compile_s"`` (compiling, or
        loading, and running each new executable once before the clock
        starts; 0.0 when both were compiled) and ``"search_s"`` (the time
        the budget counts).
      params: the weights of ``value_fn``/``prior_fn`` (:func:`c4jax.run_mcts`).
      **options: :class:`SearchOptions` fields; ``capacity`` defaults to
        :func:`anytime_capacity` for a fresh tree.  Dirichlet noise is drawn
        anew for each chunk.
    Returns:
      ``(SearchOutput, int)``: the output after the last chunk (its tree holds
      every simulation) and the simulations done per unfinished game, a
      multiple of ``chunk`` (0 when every game is finished).  A continued
      tree keeps its root's prior, so ``non_finite`` counts a non-finite root
      prior once, not once per chunk.
    Raises:
      ValueError: a bad ``seconds``, ``chunk``, ``max_simulations``,
        ``timing`` or ``clock``, ``selection="gumbel"``, a call under
        ``jax.jit`` or ``jax.vmap`` (the driver runs on the host), and all
        that :func:`c4jax.run_mcts` raises; before anything is searched.

    One game on a GPU or TPU host runs on its CPU unless placed.  Reference:
    anytime behaviour of MCTS, Browne et al. 2012 sec. 3.3.
    """
    if not callable(clock):
        raise ValueError(f"clock must be a function of no arguments giving seconds (time.perf_counter); "
                         f"got {type(clock).__name__}")
    start = clock()  # the budget counts from the call
    if isinstance(start, bool) or not isinstance(plain(start), (int, float)) or not math.isfinite(start):
        raise ValueError(f"clock must give seconds as a finite number (time.perf_counter); got {start!r:.80}")
    if is_traced((key, env, seconds, tree, params)):
        raise ValueError("run_mcts_anytime reads a wall clock between compiled searches, on the host: call it "
                         "outside jax.jit and jax.vmap (run_mcts is the search to trace)")
    if isinstance(seconds, (np.ndarray, jax.Array)):
        if seconds.shape != () or not (np.issubdtype(seconds.dtype, np.integer)
                                       or np.issubdtype(seconds.dtype, np.floating)):
            raise ValueError(f"seconds must be a number in (0, {MAX_SECONDS:g}] (a week), or a 0-d array of one; "
                             f"got an array of shape {seconds.shape} and dtype {seconds.dtype}")
        seconds = seconds.item()  # a 0-d array: its number
    seconds = check_number("seconds", seconds, 0, MAX_SECONDS, lo_open=True)
    if timing is not None and not isinstance(timing, dict):
        raise ValueError(f"timing must be None or a dict (it gets 'compile_s' and 'search_s'); "
                         f"got {type(timing).__name__}")
    check_env(env)
    chunk = check_int("chunk", chunk, 1, MAX_CHUNK)
    max_simulations = check_int("max_simulations", max_simulations, chunk, optional=True, note=f"(chunk = {chunk})")
    given = options_from_kwargs(options)  # options= and keywords alike
    if given.selection == "gumbel":
        raise ValueError(
            "selection='gumbel' cannot run against a clock (sequential halving plans its simulations in "
            "advance); use selection='puct' or 'uct', or run_mcts with a simulation count"
        )
    games = games_of(env)
    if tree is None and given.capacity is None:
        cpu = search_platform() == "cpu"
        mesh = cpu_mesh(games, (key, env)) if cpu else None
        capacity = anytime_capacity(float(seconds), chunk, games, (1 if mesh is None else mesh.size) if cpu else None,
                                    max_simulations)
        options = {"options": dataclasses.replace(given, capacity=capacity)}
    keys, envs, tree, opts, single = prepare_search(key, env, chunk, tree, options)
    params = check_params(params, opts)
    if tree is None:
        tree = empty_tree(envs, opts.capacity)
    games = keys.shape[0]
    mesh = cpu_mesh(games, (keys, envs, tree))
    rows = games if mesh is None else round_up(games, mesh)
    if rows != games:
        # Padded once for every chunk (each call would pad and drop the rows again).
        keys, envs, tree = _padded(rows)((keys, envs, tree))
    cached = compiled_count()
    # Every chunk runs one simulation program, the continuing one (the tree's
    # root is the game's, its buffer donated): the first chunk's tree is set
    # up by the start program (the root evaluated, fresh or reused).
    search = compiled_search(keys, envs, tree, opts, chunk, continuing=True, params=params)
    begin = compiled_start(keys, envs, tree, opts, params)
    params = search.place_params(params)
    fold = _fold_in()
    fold(keys, 0)
    compile_s = 0.0
    if compiled_count() > cached:
        # Compiling is not thinking, nor is the first run of a new executable
        # (tens of ms, against a few for the next ones): the loop's steps
        # below run once, in its order, on a throw-away tree (the chunks
        # donate theirs), so that the small programs of the chunks and of
        # the return compile here too; then the clock starts.
        warm_keys, warm_envs, warm_tree = search.place(fold(keys, 0), envs, tree)
        warm_tree, total = begin(warm_keys, warm_envs, warm_tree, params)
        roots = search.roots(warm_keys, warm_envs, params)
        warm_tree, warm_non_finite = search.simulate(warm_keys, warm_envs, roots, warm_tree, params)
        total = total + warm_non_finite
        total = total + warm_non_finite
        jax.device_get((_roots_solved(warm_tree.extra_data), _ranks_against_fallible(warm_tree, warm_envs, opts)))
        warm = search.output(warm_keys, warm_tree, warm_envs, warm_non_finite).replace(non_finite=total)
        jax.block_until_ready(unbatch_output(first_games(games)(warm) if rows != games else warm, single))
        now = clock()
        compile_s, start = now - start, now
    limit = max_simulations // chunk if max_simulations is not None else None

    # A chunk runs the simulation stage alone: the root's evaluation is
    # needed again only for new root noise (a continued tree keeps its root
    # otherwise), and the output only once, after the last chunk.
    noisy = opts.dirichlet_fraction > 0
    kept = _OUTPUT_SECONDS.setdefault(search.output_program, (collections.deque(maxlen=5), collections.deque(maxlen=5)))
    reserve = [float(np.median(times)) if times else 0.0 for times in kept]
    # The kind of output is checked after each chunk only where the two
    # kinds' times differ, and otherwise once, to file the return's time.
    check = bool(kept[True]) and reserve[True] > reserve[False]
    kind = False
    done = 0
    non_finite = None
    while True:
        t0 = clock()
        chunk_keys, envs, tree = search.place(fold(keys, done), envs, tree)
        if not done:
            tree, started_non_finite = begin(chunk_keys, envs, tree, params)
        if done <= 1 or noisy:
            roots = search.roots(chunk_keys, envs, params)
        tree, chunk_non_finite = search.simulate(chunk_keys, envs, roots, tree, params)
        if not done:
            chunk_non_finite = started_non_finite + chunk_non_finite
        non_finite = chunk_non_finite if non_finite is None else non_finite + chunk_non_finite
        solved = jax.device_get(_roots_solved(tree.extra_data))
        if check:
            kind = bool(np.any(jax.device_get(_ranks_against_fallible(tree, envs, opts))))
        done += 1
        now = clock()
        if limit is not None and done >= limit:
            break
        if np.all(solved) or now - start + (now - t0) + reserve[kind] > seconds:
            break
    if not check:
        kind = bool(np.any(jax.device_get(_ranks_against_fallible(tree, envs, opts))))
    out = search.output(chunk_keys, tree, envs, chunk_non_finite)
    # A batch of finished games searched nothing (their roots stay alone).
    searched = 0 if bool(np.all(jax.device_get(envs.done))) else done * chunk
    if rows != games:
        out = first_games(games)(out.replace(non_finite=non_finite))
        non_finite = out.non_finite
    out = jax.block_until_ready(unbatch_output(warn_non_finite(out.replace(non_finite=non_finite), opts), single))
    end = clock()
    kept[kind].append(end - now)
    if timing is not None:
        timing.update(compile_s=compile_s, search_s=end - start)
    return out, searched


@jax.jit
def _roots_solved(extra) -> jax.Array:
    """``bool[B]``: whether each game's root is solved (its proven bounds
    meet), in one program (per-game, no exchange between the devices)."""
    return extra.value_lower[:, 0] == extra.value_upper[:, 0]


@functools.partial(jax.jit, static_argnums=2)
def _ranks_against_fallible(tree, envs, opts: SearchOptions) -> jax.Array:
    """``bool[B]``: whether each game's output would rank moves against a
    fallible opponent (:func:`c4jax.search.output.ranks_against_fallible`),
    in one program (per-game, no exchange between the devices)."""
    solver = make_solver(opts.solver)
    return jax.vmap(lambda t, e: ranks_against_fallible(t, e, opts, solver))(tree, envs)


@functools.cache
def _fold_in():
    """``(keys [B], i) -> keys [B]``, each folded with ``i`` (jitted once)."""
    return jax.jit(jax.vmap(jax.random.fold_in, in_axes=(0, None)))


@functools.lru_cache(maxsize=64)
def _padded(rows: int):
    """``arrays -> arrays`` with ``rows`` rows (:func:`c4jax.search.programs.pad_rows`), jitted once per count."""
    return jax.jit(lambda arrays: pad_rows(arrays, rows))
