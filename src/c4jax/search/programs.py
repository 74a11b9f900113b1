"""The search of a batch as compiled programs: the per-device layout, the
three stages' programs kept per shapes and options, and the search traced
into a caller's program.

* **Layout.**  A search's games are independent (game ``b`` depends only on
  its key), so the layout changes the speed of a batch, never its trees.  A
  CPU batch is split over the CPU devices (:func:`cpu_mesh`; ``import
  c4jax`` makes one per core) with :func:`jax.shard_map`, each device
  searching its slice, and within a device ``BLOCK`` games at a time
  (:func:`in_blocks`): a block of one game runs the one-game program, whose
  loop over simulations XLA compiles into one kernel.  GPU and TPU batches
  run as one program vectorised over the games; one game on a GPU or TPU
  host runs on its CPU (:func:`one_game_device`); a batch placed on one
  device stays there.
* **Stages.**  The root's evaluation, the simulations and the output
  (:mod:`c4jax.search.mcts` for one game) are three programs
  (:func:`compiled_search`), kept by :func:`c4jax.runtime.compiled.compiled`
  and, while JAX's persistent cache is on, on disk.  The simulation stage is
  traced first, from the root stage's predicted output shapes
  (:func:`root_shapes`), and compiled by XLA on a thread of its own while
  the caller's thread traces and compiles the other two.
* **Inside a caller's program** (:func:`traced_batch_search`): a CPU batch
  that a direct call would split is split the same way, unless the caller
  chose the placement (a mesh of its own, a ``jax.default_device``); a
  ``vmap`` over the search is the batched search of all ``V x B`` games
  (:func:`jax.custom_batching.custom_vmap`), each with its own key, weights
  batched by the ``vmap`` refused; a non-finite evaluation is reported by a
  host callback.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import warnings
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from c4jax.runtime import compiled
from c4jax.runtime.compiled import GAMES, game_mesh, over_games, search_platform
from c4jax.runtime.xla_flags import compiler_options, light_compiler_options
from c4jax.search.mcts import RootEvaluation, evaluate_root, finish, simulate, start_tree
from c4jax.search.options import SearchOptions
from c4jax.search.output import SearchOutput
from c4jax.search.prng import search_keys

__all__ = [
    "BLOCK", "MIN_GAMES_PER_DEVICE", "CompiledSearch", "block_size", "callers_placement", "compiled_search",
    "compiled_start", "cpu_mesh", "in_blocks", "is_traced", "lower_stages", "non_finite_message", "one_game_device", "one_game_platform",
    "output_stage", "pad_rows", "root_shapes", "round_up", "root_stage", "search_batch", "simulation_stage",
    "start_stage", "traced_batch_search",
    "traced_search",
]

BLOCK = 1  # games searched at once per CPU device: the one-game program
MIN_GAMES_PER_DEVICE = 8  # fewer games per CPU device run on one device


# ---------------------------------------------------------------------------
# Layout: devices and blocks.

def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def block_size(games: int, platform: str) -> int:
    """The games a block holds on ``platform``: on the CPU the batch in as
    few blocks of at most ``BLOCK`` as it takes, of equal size (the last
    padded), elsewhere ``games``."""
    if platform != "cpu" or games <= BLOCK:
        return games
    return _cdiv(games, _cdiv(games, BLOCK))


def gumbel_simulations(opts: SearchOptions, num_simulations: int) -> int | None:
    # Gumbel's sequential halving plans the visits of every simulation in
    # advance: its count stays a constant of the program.
    return num_simulations if opts.selection == "gumbel" else None


def round_up(games: int, mesh: Mesh) -> int:
    """The smallest multiple of the mesh's devices that is ``>= games``: the
    rows of a batch split over the mesh (:func:`pad_rows`)."""
    return -(-games // mesh.size) * mesh.size


def pad_rows(tree, rows: int):
    """Every leaf of ``tree`` (a leading axis of ``n <= rows`` games) with its
    last row repeated up to ``rows`` rows: padding games, searched and
    dropped, that change no other row."""
    def pad(x):
        n = x.shape[0]
        return x if n == rows else jnp.concatenate([x, jnp.repeat(x[-1:], rows - n, axis=0)])

    return jax.tree.map(pad, tree)


def in_blocks(fn: Callable, games: int, platform: str, inout: tuple[int, int] | None = None) -> Callable:
    """``fn(*args)`` (every leaf of ``args`` and of the result with a leading
    axis of ``games``) run one block of :func:`block_size` games after
    another, the batch padded to whole blocks; ``fn`` itself when one block
    holds them all.  Each block reads its rows of the arguments (dynamic
    slices) and writes its rows of the result into batch-sized buffers.
    ``inout = (i, j)``: ``fn`` returns a tuple whose entry ``j`` is argument
    ``i`` updated (a search's tree), written back into that argument's own
    buffer, in place (with the argument donated, no batch-sized copy)."""
    block = block_size(games, platform)
    if block == games:
        return fn
    padded = _cdiv(games, block) * block

    def run(*args):
        args = pad_rows(args, padded)

        def rows(x, b):
            return jax.lax.dynamic_slice_in_dim(x, b * block, block)

        def one_block(carried, b):
            block_args = [jax.tree.map(lambda x: rows(x, b), carried if inout is not None and k == inout[0] else a)
                          for k, a in enumerate(args)]
            result = fn(*block_args)
            if inout is None:
                return carried, result
            carried = jax.tree.map(lambda x, v: jax.lax.dynamic_update_slice_in_dim(x, v, b * block, 0),
                                   carried, result[inout[1]])
            return carried, tuple(None if k == inout[1] else r for k, r in enumerate(result))

        carried = None if inout is None else args[inout[0]]
        carried, results = jax.lax.scan(one_block, carried, jnp.arange(padded // block))
        results = jax.tree.map(lambda x: x.reshape((padded,) + x.shape[2:]), results)
        if inout is not None:
            results = tuple(carried if k == inout[1] else r for k, r in enumerate(results))
        return jax.tree.map(lambda x: x[:games], results)

    return run


ACCELERATORS = ("gpu", "tpu", "cuda", "rocm")


def one_game_platform(games: int, platform: str) -> str | None:
    """Where a search of ``games`` games runs when the caller chose no
    placement, on a host whose default backend is ``platform``: ``"cpu"``
    for one game on a GPU or TPU host (an accelerator pays a fixed cost per
    loop step of a simulation that only a wide batch spreads), else
    ``None`` (the default backend)."""
    return "cpu" if games == 1 and platform in ACCELERATORS else None


def one_game_device(games: int, arrays=()):
    """:func:`one_game_platform`'s device (the first CPU device) for a
    search of ``games`` games whose ``arrays`` nobody placed (no
    ``jax.default_device``, no array committed to a device), else ``None``."""
    if jax.config.jax_default_device is not None or _committed(arrays):
        return None
    platform = one_game_platform(games, jax.default_backend())
    return None if platform is None else jax.local_devices(backend=platform)[0]


def pinned_device():
    """The device ``jax.default_device`` names, where it names one (not a
    platform such as ``"cpu"``), else ``None``."""
    device = jax.config.jax_default_device
    return None if device is None or isinstance(device, str) else device


def on_device(device):
    """A context that runs JAX's computations on ``device``
    (``jax.default_device``); none for ``None``."""
    return contextlib.nullcontext() if device is None else jax.default_device(device)


def _committed(arrays) -> list:
    """The leaves of ``arrays`` that are JAX arrays committed to devices
    (``jax.device_put``; a tracer is not: the caller's program decides its
    placement)."""
    return [x for x in jax.tree.leaves(arrays)
            if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer) and x.committed]


def _on_one_device(arrays) -> bool:
    """Whether a leaf of ``arrays`` is a JAX array the caller placed on one
    device (``jax.device_put``): the search then stays there."""
    return any(len(x.sharding.device_set) == 1 for x in _committed(arrays))


def cpu_mesh(games: int, arrays=()) -> Mesh | None:
    """A one-axis mesh (``"games"``) over the CPU devices that a batch of
    ``games`` is split over (padded to a multiple of them), or ``None`` to
    run it on one device: the default backend is not the CPU, there is one
    CPU device, fewer than ``MIN_GAMES_PER_DEVICE`` games per device, a
    leaf of ``arrays`` (the search's inputs) was placed on one device, or
    the caller pinned a device (:func:`pinned_device`).  The platform is
    :func:`search_platform`'s."""
    if (games < 2 * MIN_GAMES_PER_DEVICE or search_platform() != "cpu" or _on_one_device(arrays)
            or pinned_device() is not None):
        return None
    devices = jax.local_devices(backend="cpu")
    k = min(len(devices), games // MIN_GAMES_PER_DEVICE)
    return None if k < 2 else game_mesh(k, "cpu")


# ---------------------------------------------------------------------------
# The stages over a batch.


def _per_game(fn: Callable, games: int, inout: tuple[int, int] | None = None) -> Callable:
    """``fn`` (one game's arrays in, one game's out) over a batch of
    ``games``, in the blocks of :mod:`c4jax.search.programs`: a block of one
    game runs ``fn`` without vmap (the same numbers: vmap's rows are
    independent; on the CPU the fastest way to search a game), a wider one
    vmapped; ``inout``: see :func:`c4jax.search.programs.in_blocks` (the
    searched tree written back into the reused one's buffer)."""
    def block(*args):
        if jax.tree.leaves(args)[0].shape[0] == 1:
            one = fn(*jax.tree.map(lambda x: x[0], args))
            return jax.tree.map(lambda x: x[None], one)
        return jax.vmap(fn)(*args)

    return in_blocks(block, games, search_platform(), inout)


def root_stage(keys, envs, params=None, *, opts: SearchOptions, reused: bool) -> RootEvaluation:
    keys = search_keys(keys)  # the same numbers, drawn by fused kernels
    opts = opts.with_params(params)
    return _per_game(functools.partial(evaluate_root, opts=opts, continuing=reused), keys.shape[0])(keys, envs)


def simulation_stage(keys, envs, roots: RootEvaluation, tree, num_simulations, params=None, *,
                     opts: SearchOptions, reused: bool, gumbel_simulations: int | None):
    # num_simulations: int32[] (traced); Gumbel's count is static instead.
    if gumbel_simulations is not None:
        num_simulations = gumbel_simulations
    keys = search_keys(keys)
    opts = opts.with_params(params)
    run = _per_game(functools.partial(simulate, opts=opts, num_simulations=num_simulations, continuing=reused),
                    keys.shape[0], None if tree is None else (3, 0))
    return run(keys, envs, roots) if tree is None else run(keys, envs, roots, tree)


def output_stage(keys, tree, envs, non_finite, *, opts: SearchOptions) -> SearchOutput:
    keys = search_keys(keys)
    out = _per_game(functools.partial(finish, opts=opts), keys.shape[0])(keys, tree, envs, non_finite)
    return out.replace(search_tree=tree)


def start_stage(keys, envs, tree, params=None, *, opts: SearchOptions):
    """:func:`c4jax.search.mcts.start_tree` of each game: ``(tree, non_finite)``."""
    keys = search_keys(keys)
    opts = opts.with_params(params)
    return _per_game(functools.partial(start_tree, opts=opts), keys.shape[0])(keys, envs, tree)


def traced_search(keys, envs, tree, num_simulations, params=None, *, opts: SearchOptions, gumbel_simulations,
                  continuing: bool):
    """The three stages as one traced function (inside a caller's jit)."""
    reused = continuing and tree is not None
    roots = root_stage(keys, envs, params, opts=opts, reused=reused)
    tree, non_finite = simulation_stage(keys, envs, roots, tree, num_simulations, params, opts=opts, reused=reused,
                                        gumbel_simulations=gumbel_simulations)
    return output_stage(keys, tree, envs, non_finite, opts=opts)


# ---------------------------------------------------------------------------
# Compiled programs.


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
    on disk by :mod:`c4jax.runtime.compiled` (one device only)."""
    if kept is None:
        traced = compiled.trace_program(fn, args, mesh, specs, GAMES, donate)
        return _Program(traced.lower(), traced.out_info, lambda exe: exe)
    leaves, in_tree = jax.tree.flatten(args)

    def flat_fn(*xs):
        return jax.tree.flatten(fn(*jax.tree.unflatten(in_tree, xs)))

    exported, out_tree = compiled.load_or_export(flat_fn, leaves, kept + (str(in_tree),))
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
    """The three programs of :func:`c4jax.search.run.search_batch` lowered
    (``jax.stages.Lowered``): what is compiled and cached (and what the tests
    inspect).  ``mesh``: split the games over its devices
    (:func:`c4jax.search.programs.cpu_mesh`)."""
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
    :func:`c4jax.runtime.xla_flags.light_compiler_options`; ``kept``: see
    :func:`_stage_program`.  The simulation stage, the largest program, is
    traced first (from :func:`root_shapes`) and compiles on a thread of its
    own while the other two are traced, lowered and compiled and
    ``meanwhile()`` runs (XLA's compiler releases the GIL)."""
    fns, donated = _stage_fns(opts, num_simulations, continuing and tree is not None), _donated(continuing)
    light = light_compiler_options(search_platform())

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
    ``(keys, envs, tree, params) -> SearchOutput``.  A driver that runs the
    stages itself (the anytime search) places the arguments with
    :meth:`place` and :meth:`place_params` (on a mesh: the batch padded to
    ``rows`` and split over the devices, the weights whole on every device;
    else unchanged), runs :meth:`roots`, :meth:`simulate` and :meth:`output`
    on them, and drops the padding with :meth:`unpad`."""

    staged: StagedSearch
    count: np.int32
    place: Callable
    games: int
    rows: int
    place_params: Callable

    def __call__(self, keys, envs, tree, params=None):
        return self.unpad(self.staged(*self.place(keys, envs, tree), self.count, self.place_params(params)))

    def roots(self, keys, envs, params=None) -> RootEvaluation:
        return self.staged.roots(keys, envs, params)

    def simulate(self, keys, envs, roots: RootEvaluation, tree, params=None):
        """``(tree, non_finite)`` after ``count`` simulations of each game."""
        return self.staged.simulations(keys, envs, roots, tree, self.count, params)

    def output(self, keys, tree, envs, non_finite) -> SearchOutput:
        return self.staged.output(keys, tree, envs, non_finite)

    @property
    def output_program(self) -> Callable:
        """The output stage's executable (a key for what is kept per program)."""
        return self.staged.output

    def unpad(self, out):
        """``out`` (any pytree of ``[rows]`` leaves) without the padding rows."""
        return out if self.rows == self.games else first_games(self.games)(out)


def _unplaced(*args):
    return args


def _unplaced_params(params):
    return params


def _placed_shapes(keys, envs, tree, params):
    """``(mesh, rows, args, params)``: the CPU mesh the games are split over
    (:func:`cpu_mesh`, or ``None``), the rows they are padded to, and the
    arguments ``(keys, envs, tree)`` and weights the programs are lowered
    from (with a mesh: ``jax.ShapeDtypeStruct`` s of the padded, placed
    games and of the weights whole on every device; else as given)."""
    args = (keys, envs, tree)
    games = keys.shape[0]
    mesh = cpu_mesh(games, args)
    if mesh is None:
        return None, games, args, params
    rows = round_up(games, mesh)
    games_sharding, whole = NamedSharding(mesh, GAMES), NamedSharding(mesh, PartitionSpec())
    args = jax.tree.map(lambda x: jax.ShapeDtypeStruct((rows,) + x.shape[1:], x.dtype, sharding=games_sharding), args)
    params = jax.tree.map(lambda x: jax.ShapeDtypeStruct(np.shape(x), jnp.result_type(x), sharding=whole), params)
    return mesh, rows, args, params


def _signature(args, params, opts: SearchOptions, mesh, options: dict) -> tuple:
    """What a compiled program of :func:`_placed_shapes`'s ``args`` and
    ``params`` depends on besides its function."""
    return (
        jax.tree.structure(args),
        tuple((x.shape, x.dtype, None if mesh is not None else getattr(x, "sharding", None))
              for x in jax.tree.leaves(args)),
        jax.tree.structure(params),
        tuple((np.shape(x), jnp.result_type(x), None if mesh is not None else getattr(x, "sharding", None))
              for x in jax.tree.leaves(params)),
        opts,
        None if mesh is None else tuple(d.id for d in mesh.devices.flat),
        BLOCK,
        tuple(sorted(options.items())),
        search_platform(),
    )


def compiled_start(keys, envs, tree, opts: SearchOptions, params=None) -> Callable:
    """The compiled :func:`start_stage` of these shapes and options, from the
    process's set of compiled programs: ``(keys, envs, tree, params) ->
    (tree, non_finite)`` on the arguments placed as
    :meth:`CompiledSearch.place` and :meth:`CompiledSearch.place_params`
    place them (the same mesh and padding); ``tree`` is not donated."""
    mesh, _, args, params = _placed_shapes(keys, envs, tree, params)
    options = light_compiler_options(search_platform())
    fn = functools.partial(start_stage, opts=opts)

    def build():
        specs = (GAMES, GAMES, GAMES, PartitionSpec())
        traced = compiled.trace_program(fn, args + (params,), mesh, specs, GAMES)
        return traced.lower().compile(compiler_options=options)

    return compiled.compiled(("start",) + _signature(args, params, opts, mesh, options), build)


def compiled_search(keys, envs, tree, opts: SearchOptions, num_simulations: int,
                    continuing: bool = False, params=None) -> CompiledSearch:
    """The compiled search of these shapes and options running
    ``num_simulations`` (:class:`CompiledSearch`), from the process's set of
    compiled searches (:mod:`c4jax.runtime.compiled`; compiled on a miss).
    ``params``: the weights of ``opts.value_fn``/``prior_fn``, an argument
    of the programs (new weights of the same shapes and dtypes run the same
    programs)."""
    games = keys.shape[0]
    mesh, rows, args, params = _placed_shapes(keys, envs, tree, params)
    options = compiler_options(search_platform())
    signature = (continuing,) + _signature(args, params, opts, mesh, options) + (
        gumbel_simulations(opts, num_simulations),)
    keep = mesh is None and opts.prior_fn is None and opts.value_fn is None and compiled.directory() is not None
    game_source = compiled.game_digest(type(envs.game)) if keep else None
    kept, place, place_params, meanwhile = None, _unplaced, _unplaced_params, None
    if game_source is not None:
        # Traced once and kept on disk beside the persistent compilation cache.
        kept = (repr(envs.game), game_source, repr(opts), gumbel_simulations(opts, num_simulations), continuing,
                BLOCK)
        signature += ("exported",)
    elif mesh is not None:
        def place(keys, envs, tree):
            return jax.device_put(pad_rows((keys, envs, tree), rows), NamedSharding(mesh, GAMES))

        def place_params(params):
            return jax.device_put(params, NamedSharding(mesh, PartitionSpec()))

        def meanwhile():  # placing the games compiles small programs: done while the simulations compile
            place(keys, envs, tree)

    staged = compiled.compiled(signature, lambda: compile_stages(*args, params, opts, num_simulations, continuing,
                                                                  mesh, options, meanwhile, kept))
    return CompiledSearch(staged, np.int32(num_simulations), place, games, rows, place_params)


def search_batch(keys, envs, tree, params, opts: SearchOptions, num_simulations: int,
                 continuing: bool = False) -> SearchOutput:
    """The search of ``[B]`` games (``keys``, ``envs``, ``tree`` or ``None``)
    with ``num_simulations`` each.  Called with arrays, it runs the three
    compiled programs of :func:`compiled_search` (one game on a GPU or TPU
    host on its CPU: :func:`one_game_device`); inside a caller's
    ``jax.jit`` or ``vmap`` it is traced into the caller's program
    (:func:`traced_batch_search`).  ``continuing``: the anytime driver's
    chunks (the tree's root is ``envs`` already, and the tree's
    buffers are donated)."""
    if is_traced((keys, envs, tree, params)):
        return traced_batch_search(keys, envs, tree, params, opts, num_simulations,
                                   gumbel_simulations(opts, num_simulations), continuing)
    with on_device(one_game_device(keys.shape[0], (keys, envs, tree, params))):
        return compiled_search(keys, envs, tree, opts, num_simulations, continuing, params)(keys, envs, tree, params)


# ---------------------------------------------------------------------------
# Traced into a caller's program.


def is_traced(args) -> bool:
    """Whether a leaf of ``args`` is a tracer (inside a ``jax.jit``, ``vmap``...)."""
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(args))


def callers_placement() -> bool:
    """Whether the caller chose where its program runs: a mesh context of
    its own (``jax.sharding.set_mesh``, inside a ``shard_map``) or a device
    named by ``jax.default_device``."""
    if not jax.sharding.get_abstract_mesh().empty:
        return True
    return pinned_device() is not None


def non_finite_message(count: int) -> str:
    return (f"{count:,} evaluations of your value_fn/prior_fn gave NaN or infinity; the search counted a NaN "
            "value as 0 (a draw), clipped infinite values to [-1, 1], a NaN logit as 0 and infinite ones as "
            "+-1e30 (SearchOutput.non_finite counts them per game)")


def _warn_non_finite(count) -> None:
    count = int(count)
    if count:
        warnings.warn(non_finite_message(count), RuntimeWarning, stacklevel=2)


def _split_search(keys, envs, tree, params, *, opts: SearchOptions, num_simulations: int,
                  gumbel_simulations: int | None, continuing: bool) -> SearchOutput:
    """The batch's search, split over the CPU devices where a direct call
    would split it (see the module docstring)."""
    games = keys.shape[0]
    search = functools.partial(traced_search, opts=opts, gumbel_simulations=gumbel_simulations,
                               continuing=continuing)
    count = jnp.int32(num_simulations)
    mesh = None if callers_placement() else cpu_mesh(games)
    if mesh is None:
        out = search(keys, envs, tree, count, params)
    else:
        rows = round_up(games, mesh)
        keys, envs, tree = pad_rows((keys, envs, tree), rows)
        over = over_games(search, mesh, (GAMES, GAMES, GAMES, PartitionSpec(), PartitionSpec()), GAMES)
        out = over(keys, envs, tree, count, params)
        if rows != games:
            out = jax.tree.map(lambda x: x[:games], out)
    if opts.value_fn is not None or opts.prior_fn is not None:
        jax.debug.callback(_warn_non_finite, jnp.sum(out.non_finite))
    return out


def _vmapped_search(static, axis_size, in_batched, keys, envs, tree, params):
    """custom_vmap's rule: the ``[V, B]`` games as one batch of ``V * B``."""
    if any(jax.tree.leaves(in_batched[3])):
        raise ValueError(
            "params must be the same for every game of a vmapped search (vmap with in_axes=None for params); "
            "to search with several networks, call the search once per network")

    def rows(x, batched):
        x = x if batched else jnp.broadcast_to(x, (axis_size,) + x.shape)
        return x.reshape((axis_size * x.shape[1],) + x.shape[2:])

    keys, envs, tree = (jax.tree.map(rows, a, b) for a, b in zip((keys, envs, tree), in_batched[:3]))
    out = _search(static)(keys, envs, tree, params)
    out = jax.tree.map(lambda x: x.reshape((axis_size, -1) + x.shape[1:]), out)
    return out, jax.tree.map(lambda _: True, out)


@functools.lru_cache(maxsize=64)
def _search(static: tuple):
    opts, num_simulations, gumbel_simulations, continuing = static
    fn = jax.custom_batching.custom_vmap(functools.partial(
        _split_search, opts=opts, num_simulations=num_simulations, gumbel_simulations=gumbel_simulations,
        continuing=continuing))
    fn.def_vmap(functools.partial(_vmapped_search, static))
    return fn


def _under_vmap(args) -> bool:
    """Whether a ``jax.vmap`` around the call maps a leaf of ``args``: a
    probe (an identity with a batching rule) whose rule runs only then."""
    mapped = []

    def rule(axis_size, in_batched, *xs):
        mapped.append(True)
        return list(xs), list(in_batched)

    probe = jax.custom_batching.custom_vmap(lambda *xs: list(xs))
    probe.def_vmap(rule)
    leaves = jax.tree.leaves(args)
    if leaves:
        probe(*leaves)  # its output is unused: nothing of it stays in the program
    return bool(mapped)


def traced_batch_search(keys, envs, tree, params, opts: SearchOptions, num_simulations: int,
                        gumbel_simulations: int | None, continuing: bool) -> SearchOutput:
    """The search of ``[B]`` games traced into the caller's program
    (:func:`c4jax.search.mcts.traced_search` under the rules of the module
    docstring).  The batching rule is attached only under a ``vmap``
    (the search traced once, not twice, elsewhere)."""
    static = (opts, num_simulations, gumbel_simulations, continuing)
    if _under_vmap((keys, envs, tree, params)):
        return _search(static)(keys, envs, tree, params)
    return _split_search(keys, envs, tree, params, opts=opts, num_simulations=num_simulations,
                         gumbel_simulations=gumbel_simulations, continuing=continuing)
