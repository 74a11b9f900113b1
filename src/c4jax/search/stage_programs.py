"""The search of a batch as three compiled programs, one per stage
(:mod:`c4jax.search.stages`: the root's evaluation, the simulations, the
output), kept per shapes and options (:mod:`c4jax.search.compiled`; on disk:
:mod:`c4jax.search.programs`).

The simulation stage, the largest program, is traced first (from the root
stage's output shapes, predicted: :func:`root_shapes`) and compiled by XLA
on a thread of its own while the caller's thread traces, lowers and compiles
the other two (with :func:`c4jax.xla_flags.light_compiler_options`: they run
once per search).  A batch split over the CPU devices
(:func:`c4jax.search.layout.cpu_mesh`) runs each stage with
``jax.shard_map`` over them.
"""

from __future__ import annotations

import concurrent.futures
import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from c4jax.devices import GAMES, over_games, round_up
from c4jax.search import compiled, layout, programs
from c4jax.search.options import SearchOptions
from c4jax.search.stages import RootEvaluation, gumbel_simulations, output_stage, root_stage, simulation_stage
from c4jax.xla_flags import compiler_options, light_compiler_options

__all__ = ["CompiledSearch", "StagedSearch", "compile_stages", "compiled_search", "first_games", "lower_stages",
           "root_shapes"]


class _Stages(NamedTuple):
    """One value per stage of the search (root, simulations, output)."""

    roots: Any
    simulations: Any
    output: Any


# Each stage's arguments: sharded by game (GAMES) or whole on every device
# (the simulation count, the weights ``params``).
_SPECS = _Stages((GAMES, GAMES, PartitionSpec()), (GAMES, GAMES, GAMES, GAMES, PartitionSpec(), PartitionSpec()),
                 (GAMES, GAMES, GAMES, GAMES))


def _stage_fns(opts: SearchOptions, num_simulations: int, reused: bool) -> _Stages:
    simulate = functools.partial(simulation_stage, opts=opts, reused=reused,
                                 gumbel_simulations=gumbel_simulations(opts, num_simulations))
    return _Stages(functools.partial(root_stage, opts=opts, reused=reused), simulate,
                   functools.partial(output_stage, opts=opts))


def _donated(continuing: bool) -> _Stages:
    """The donated arguments of each stage: the reused tree (``continuing``)
    and the searched tree the output stage returns, updated in place."""
    return _Stages((), (3,) if continuing else (), (1,))


class _Program(NamedTuple):
    lowered: Any  # jax.stages.Lowered
    out_shapes: Any  # the outputs' jax.ShapeDtypeStruct s
    wrap: Callable  # the compiled executable -> fn(*args)


def _stage_program(fn: Callable, args: tuple, specs: tuple, donate: tuple, mesh, kept: tuple | None) -> _Program:
    """The stage ``fn`` lowered at ``args`` (arrays or
    ``jax.ShapeDtypeStruct`` s): jitted on one device or (``mesh``) over the
    mesh's devices with ``specs`` per argument; with ``kept`` (what the
    program depends on besides the arguments' shapes), traced once and kept
    on disk by :mod:`c4jax.search.programs` (one device only)."""
    if kept is None:
        if mesh is None:
            jitted = jax.jit(fn, donate_argnums=donate)
        else:
            jitted = jax.jit(over_games(fn, mesh, specs, GAMES),
                             in_shardings=tuple(NamedSharding(mesh, s) for s in specs),
                             out_shardings=NamedSharding(mesh, GAMES), donate_argnums=donate)
        traced = jitted.trace(*args)
        return _Program(traced.lower(), traced.out_info, lambda exe: exe)
    leaves, in_tree = jax.tree.flatten(args)

    def flat_fn(*xs):
        return jax.tree.flatten(fn(*jax.tree.unflatten(in_tree, xs)))

    exported, out_tree = programs.load_or_export(flat_fn, leaves, kept + (str(in_tree),))
    starts = np.cumsum([0] + [len(jax.tree.leaves(x)) for x in args])
    flat_donate = tuple(i for arg in donate for i in range(starts[arg], starts[arg + 1]))
    lowered = jax.jit(exported.call, donate_argnums=flat_donate).lower(*leaves)
    out_shapes = jax.tree.unflatten(out_tree, [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                                               for a in exported.out_avals])

    def wrap(exe):
        return lambda *xs: jax.tree.unflatten(out_tree, exe(*jax.tree.leaves(xs)))

    return _Program(lowered, out_shapes, wrap)


def lower_stages(keys, envs, tree, opts: SearchOptions, num_simulations: int, continuing: bool = False,
                 mesh=None, params=None) -> _Stages:
    """The three programs of :func:`c4jax.search.search.search_batch` lowered
    (``jax.stages.Lowered``): what is compiled and cached (and what the tests
    inspect).  ``mesh``: split the games over its devices
    (:func:`c4jax.search.layout.cpu_mesh`)."""
    fns, donated = _stage_fns(opts, num_simulations, continuing and tree is not None), _donated(continuing)
    roots = _stage_program(fns.roots, (keys, envs, params), _SPECS.roots, donated.roots, mesh, None)
    simulations = _stage_program(fns.simulations,
                                 (keys, envs, roots.out_shapes, tree, np.int32(num_simulations), params),
                                 _SPECS.simulations, donated.simulations, mesh, None)
    searched, non_finite = simulations.out_shapes
    output = _stage_program(fns.output, (keys, searched, envs, non_finite),
                            _SPECS.output, donated.output, mesh, None)
    return _Stages(roots.lowered, simulations.lowered, output.lowered)


def root_shapes(keys, envs, opts: SearchOptions) -> RootEvaluation:
    """What :func:`root_stage` returns for ``keys`` and ``envs``, as
    ``jax.ShapeDtypeStruct`` s, without tracing it (tested against its
    trace)."""
    games, actions = keys.shape[0], envs.game.num_actions

    def shape(*axes, dtype=jnp.float32):
        return jax.ShapeDtypeStruct((games, *axes), dtype)

    return RootEvaluation(
        logits=shape(actions), prior_bad=shape(dtype=jnp.int32),
        root_gumbel=shape(actions) if opts.selection == "gumbel" else None,
        value=shape(), value_bad=shape(dtype=jnp.bool_), lower=shape(), upper=shape(), plies=shape(dtype=jnp.int32))


def avals(shapes) -> list:
    return [(x.shape, x.dtype, x.weak_type) for x in jax.tree.leaves(shapes)]


@functools.lru_cache(maxsize=64)
def first_games(games: int) -> Callable:
    """The first ``games`` rows of every leaf of a padded output sharded over
    a mesh, in one program, so that its gathers across the devices run in one
    executable per call: executables that gather, started in whatever order
    their inputs are ready, can leave two devices waiting in different ones."""
    return jax.jit(lambda out: jax.tree.map(lambda x: x[:games], out))


def compile_stages(keys, envs, tree, params, opts: SearchOptions, num_simulations: int, continuing: bool, mesh,
                   options: dict, meanwhile: Callable[[], object] | None = None,
                   kept: tuple | None = None) -> "StagedSearch":
    """:class:`StagedSearch`: the programs of
    :func:`lower_stages` compiled, the simulation stage with XLA's
    ``options``, the other two with
    :func:`c4jax.xla_flags.light_compiler_options`; ``kept``: see
    :func:`_stage_program`.  The simulation stage, the largest program, is
    traced first (from :func:`root_shapes`) and compiles on a thread of its
    own while the other two are traced, lowered and compiled and
    ``meanwhile()`` runs (XLA's compiler releases the GIL)."""
    fns, donated = _stage_fns(opts, num_simulations, continuing and tree is not None), _donated(continuing)
    light = light_compiler_options(layout.search_platform())

    def program(stage: str, args: tuple) -> _Program:
        return _stage_program(getattr(fns, stage), args, getattr(_SPECS, stage), getattr(donated, stage), mesh,
                              None if kept is None else kept + (stage,))

    count = np.int32(num_simulations)
    predicted = root_shapes(keys, envs, opts)
    simulations = program("simulations", (keys, envs, predicted, tree, count, params))
    searched, non_finite = simulations.out_shapes
    # Only XLA's compilation runs on the thread: tracing and lowering stay on
    # the caller's, under its JAX settings.  An error (or an interrupt) here
    # does not wait for the thread.
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="c4jax-compile")
    try:
        pending = pool.submit(simulations.lowered.compile, compiler_options=options)
        output = program("output", (keys, searched, envs, non_finite))
        output_fn = output.wrap(output.lowered.compile(compiler_options=light))
        roots = program("roots", (keys, envs, params))
        roots_fn = roots.wrap(roots.lowered.compile(compiler_options=light))
        if meanwhile is not None:
            meanwhile()
        simulations_fn = simulations.wrap(pending.result())
    finally:
        pool.shutdown(wait=False)
    if avals(roots.out_shapes) != avals(predicted):  # never expected (tested): compiled again for the real shapes
        again = program("simulations", (keys, envs, roots.out_shapes, tree, count, params))
        simulations_fn = again.wrap(again.lowered.compile(compiler_options=options))

    return StagedSearch(roots_fn, simulations_fn, output_fn)


class StagedSearch(NamedTuple):
    """A search's three compiled programs; calling it runs them in turn:
    ``(keys, envs, tree, count, params) -> SearchOutput``."""

    roots: Callable  # (keys, envs, params) -> RootEvaluation
    simulations: Callable  # (keys, envs, roots, tree, count, params) -> (tree, non_finite)
    output: Callable  # (keys, tree, envs, non_finite) -> SearchOutput

    def __call__(self, keys, envs, tree, count, params=None):
        searched, non_finite = self.simulations(keys, envs, self.roots(keys, envs, params), tree, count, params)
        return self.output(keys, searched, envs, non_finite)


class CompiledSearch(NamedTuple):
    """:func:`compiled_search`'s result; calling it runs the search:
    ``(keys, envs, tree, params) -> SearchOutput``.  ``place(keys, envs,
    tree)`` pads and places the arguments as ``staged`` takes them (on a
    mesh: the batch padded to ``rows`` and split over the devices; else
    unchanged), ``place_params(params)`` the weights (whole on every
    device); ``staged`` runs them with ``count`` simulations."""

    staged: StagedSearch
    count: np.int32
    place: Callable
    games: int
    rows: int
    place_params: Callable

    def __call__(self, keys, envs, tree, params=None):
        out = self.staged(*self.place(keys, envs, tree), self.count, self.place_params(params))
        return out if self.rows == self.games else first_games(self.games)(out)


def _unplaced(*args):
    return args


def _unplaced_params(params):
    return params


def compiled_search(keys, envs, tree, opts: SearchOptions, num_simulations: int,
                    continuing: bool = False, params=None) -> CompiledSearch:
    """The compiled search of these shapes and options running
    ``num_simulations`` (:class:`CompiledSearch`), from the process's set of
    compiled searches (:mod:`c4jax.search.compiled`; compiled on a miss).
    ``params``: the weights of ``opts.value_fn``/``prior_fn``, an argument
    of the programs (new weights of the same shapes and dtypes run the same
    programs)."""
    args = (keys, envs, tree)
    games = keys.shape[0]
    mesh = layout.cpu_mesh(games, args)
    options = compiler_options(layout.search_platform())
    rows = games
    if mesh is not None:
        # The games padded to a multiple of the devices and placed on them;
        # the program is lowered from their shapes.
        rows = round_up(games, mesh)
        games_sharding = NamedSharding(mesh, GAMES)
        args = jax.tree.map(
            lambda x: jax.ShapeDtypeStruct((rows,) + x.shape[1:], x.dtype, sharding=games_sharding), args)
        whole = NamedSharding(mesh, PartitionSpec())
        params = jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x), sharding=whole),
                              params)
    signature = (
        continuing,
        jax.tree.structure(args),
        tuple((x.shape, x.dtype, None if mesh is not None else getattr(x, "sharding", None))
              for x in jax.tree.leaves(args)),
        jax.tree.structure(params),
        tuple((np.shape(x), jnp.result_type(x), None if mesh is not None else getattr(x, "sharding", None))
              for x in jax.tree.leaves(params)),
        opts,
        gumbel_simulations(opts, num_simulations),
        None if mesh is None else tuple(d.id for d in mesh.devices.flat),
        layout.BLOCK,
        tuple(sorted(options.items())),
        layout.search_platform(),
    )
    count = np.int32(num_simulations)
    keep = mesh is None and opts.prior_fn is None and opts.value_fn is None and programs.directory() is not None
    game_source = programs.game_digest(type(envs.game)) if keep else None
    if game_source is not None:
        # Traced once and kept on disk beside the persistent compilation cache.
        kept = (repr(envs.game), game_source, repr(opts), gumbel_simulations(opts, num_simulations), continuing,
                layout.BLOCK)
        staged = compiled.compiled(signature + ("exported",), lambda: compile_stages(
            *args, params, opts, num_simulations, continuing, None, options, kept=kept))
        return CompiledSearch(staged, count, _unplaced, games, rows, _unplaced_params)
    if mesh is None:
        staged = compiled.compiled(signature, lambda: compile_stages(*args, params, opts, num_simulations, continuing,
                                                                      mesh, options))
        return CompiledSearch(staged, count, _unplaced, games, rows, _unplaced_params)

    def place(keys, envs, tree):
        return jax.device_put(layout.pad_rows((keys, envs, tree), rows), games_sharding)

    def place_params(params):
        return jax.device_put(params, whole)

    # Placing the games compiles small programs of its own: done while the
    # simulations compile.
    staged = compiled.compiled(signature, lambda: compile_stages(*args, params, opts, num_simulations, continuing,
                                                                  mesh, options, lambda: place(keys, envs, tree)))
    return CompiledSearch(staged, count, place, games, rows, place_params)
