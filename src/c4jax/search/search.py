"""Batched, terminal-aware MCTS on mctx's ``Tree``: :func:`run_mcts`.

The loop is our own (mctx 0.0.71's ``search`` takes no initial tree, so it can
not continue a reused subtree, and it keeps descending below finished games),
but it is built from mctx's public pieces: the :class:`mctx.Tree` layout, the
action-selection functions and the Q transforms.  With the same key it builds
the same tree as ``mctx.muzero_policy`` wherever mctx's own search is correct
(tested).  It reads like mctx's ``_src/search.py``, one module per stage:

1. selection (:mod:`c4jax.search.selection`): from the root to an unexpanded
   edge, a finished game or ``max_depth``, recording the path;
2. expansion and evaluation (:mod:`c4jax.search.expansion`): step the game
   into a new node (if the capacity allows) and value it with rollouts;
3. backup (:mod:`c4jax.search.backup`): the return along the recorded path,
   with the solver's proofs (:mod:`c4jax.search.solver`, chosen once per
   search);
4. output (:mod:`c4jax.search.output`): the move and the root's statistics.

Cost: a simulation costs ``O(max_depth * A)`` plus its rollouts, whatever the
node capacity ``N``: each simulation applies the previous one's writes first
and then only reads (:mod:`c4jax.search.tree`), so XLA updates the tree in
place (no whole-tree ``select`` or ``copy`` in the loop; tested on the
compiled program).  A batch runs every step for all its games at once,
laid out by :mod:`c4jax.search.layout`.

Programs: called with arrays, a search runs three compiled programs, one per
stage of its games (the root's evaluation, the simulations, the output), kept
per shapes and options (:mod:`c4jax.search.compiled`); the simulations, the
largest, compile on a thread of their own beside the other two.  Inside a
caller's ``jax.jit`` the three are traced into the caller's program.

Capacity: the tree holds ``capacity`` nodes (default ``num_simulations + 1``;
a reused tree keeps its own).  When it is full, a simulation that would
expand a node evaluates the leaf all the same and backs it up through the
unexpanded edge: that edge's visit count and value average grow (it acts as a
leaf that collects rollouts), nothing is dropped and nothing is written to
another node.  The root's visit count always grows by exactly
``num_simulations``.

Shapes: ``B`` is the batch size, ``A`` the number of actions, ``N`` the node
capacity.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import warnings
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import mctx
import numpy as np

from jax.sharding import NamedSharding, PartitionSpec

from c4jax.devices import GAMES, over_games
from c4jax.env import Env, check_fields
from c4jax.keys import as_key, keys_for_games
from c4jax.search import layout
from c4jax.search.backup import backup
from c4jax.search.expansion import evaluate_in_turn, evaluate_leaf, expand, share_new_nodes
from c4jax.search.prng import search_keys
from c4jax.search.options import SearchOptions, options_from_kwargs
from c4jax.search.output import SearchOutput, search_output
from c4jax.search.selection import descend, make_selection
from c4jax.search.solver import make_solver
from c4jax.search.tree import (
    ROOT,
    TreeExtraData,
    apply_update,
    gather,
    masked_prior,
    new_tree,
    no_update,
    same_position,
)
from c4jax.values import prior_and_flag
from c4jax.validation import check_int
from c4jax.xla_flags import compiler_options, light_compiler_options
from c4jax.search import compiled, programs

__all__ = ["run_mcts", "MAX_SIMULATIONS"]

# Node indices are int32 and a tree has num_simulations + 1 nodes.
MAX_SIMULATIONS = 2**30
MIN_BUCKET = 64


def simulation_bucket(num_simulations: int) -> int:
    """The simulations a fresh tree has room for: ``num_simulations``
    rounded up to a power of two, at least 64.  Every budget of a bucket
    runs the same compiled search (the count is an argument of the program,
    the tree's capacity ``bucket + 1`` its shape); the tree never fills, so
    the search is the one of capacity ``num_simulations + 1``."""
    return max(MIN_BUCKET, 1 << (int(num_simulations) - 1).bit_length())


def run_mcts(
    key: jax.Array,
    env: Env,
    num_simulations: int,
    *,
    tree: mctx.Tree | None = None,
    **options: Any,
) -> SearchOutput:
    """Searches one game or a batch of games with MCTS and proposes a move.

    Args:
      key: a PRNG key (consumed) or ``[B]`` keys, one per game
        (:func:`c4jax.keys.as_key`); with one key, game ``b`` uses
        ``jax.random.split(key, B)[b]``, so batch row ``b`` equals the
        unbatched search of game ``b`` with that key and the same ``lanes``.
      env: an :class:`~c4jax.env.Env`, unbatched or ``[B]`` (finished games
        may be mixed in).
      num_simulations: simulations per game, a Python int in ``1..2**30``.
      tree: the tree of an earlier search cut with :func:`c4jax.get_subtree`
        after the move played (subtree reuse); its root must be ``env``; a row
        whose tree is empty or holds another position starts fresh.
      **options: the fields of :class:`SearchOptions`, or
        ``options=SearchOptions(...)`` (other keywords replace its fields).
    Returns:
      :class:`SearchOutput`.
    Raises:
      ValueError: an unknown option or a bad value (naming the allowed
        values), a bad ``num_simulations``, ``env``, key or ``tree`` shape, or
        Gumbel search with a reused tree.

    Compiled once per (shapes, options) and kept (:func:`c4jax.compiled_stats`);
    the number of simulations is an argument of the program (except with
    Gumbel) and a fresh tree holds ``simulation_bucket(num_simulations)``
    nodes, so every budget of a bucket runs one executable.  It can be called
    inside ``jax.jit``.  References: Browne et al. 2012 (MCTS), Winands et al.
    2008 and Cazenave & Saffidine 2011 (the solver), Kocsis & Szepesvari 2006
    (UCT), Silver et al. 2017 (PUCT), Danihelka et al. 2022 (Gumbel).
    """
    keys, envs, tree, opts, single = prepare_search(key, env, num_simulations, tree, options)
    out = search_batch(keys, envs, tree, opts, num_simulations)
    return unbatch_output(warn_non_finite(out, opts), single)


def warn_non_finite(out: SearchOutput, opts: SearchOptions) -> SearchOutput:
    """``out``, after one ``RuntimeWarning`` if its search met NaN or infinite
    values or logits of ``opts.value_fn``/``opts.prior_fn`` (only these can
    give them; checked outside a caller's ``jit`` only)."""
    if (opts.value_fn is not None or opts.prior_fn is not None) and not _is_traced(out.non_finite):
        count = int(np.sum(jax.device_get(out.non_finite)))
        if count:
            warnings.warn(
                f"{count} evaluations of your value_fn/prior_fn gave NaN or infinity; the search counted a NaN "
                "value as 0 (a draw), clipped infinite values to [-1, 1], a NaN logit as 0 and infinite ones as "
                "+-1e30 (SearchOutput.non_finite counts them per game)", RuntimeWarning, stacklevel=3)
    return out


def _is_traced(args) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(args))


def _gumbel_simulations(opts: SearchOptions, num_simulations: int) -> int | None:
    # Gumbel's sequential halving plans the visits of every simulation in
    # advance: its count stays a constant of the program.
    return num_simulations if opts.selection == "gumbel" else None


class _Stages(NamedTuple):
    """One value per stage of the search (root, simulations, output)."""

    roots: Any
    simulations: Any
    output: Any


# Each stage's arguments: sharded by game (GAMES) or whole on every device.
_SPECS = _Stages((GAMES, GAMES), (GAMES, GAMES, GAMES, GAMES, PartitionSpec()), (GAMES, GAMES, GAMES, GAMES))


def _stage_fns(opts: SearchOptions, num_simulations: int, reused: bool) -> _Stages:
    simulate = functools.partial(_simulation_stage, opts=opts, reused=reused,
                                 gumbel_simulations=_gumbel_simulations(opts, num_simulations))
    return _Stages(functools.partial(_root_stage, opts=opts, reused=reused), simulate,
                   functools.partial(_output_stage, opts=opts))


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
                 mesh=None) -> _Stages:
    """The three programs of :func:`search_batch` lowered
    (``jax.stages.Lowered``): what is compiled and cached (and what the tests
    inspect).  ``mesh``: split the games over its devices
    (:func:`c4jax.search.layout.cpu_mesh`)."""
    fns, donated = _stage_fns(opts, num_simulations, continuing and tree is not None), _donated(continuing)
    roots = _stage_program(fns.roots, (keys, envs), _SPECS.roots, donated.roots, mesh, None)
    simulations = _stage_program(fns.simulations, (keys, envs, roots.out_shapes, tree, np.int32(num_simulations)),
                                 _SPECS.simulations, donated.simulations, mesh, None)
    searched, non_finite = simulations.out_shapes
    output = _stage_program(fns.output, (keys, searched, envs, non_finite),
                            _SPECS.output, donated.output, mesh, None)
    return _Stages(roots.lowered, simulations.lowered, output.lowered)


def _root_shapes(keys, envs, opts: SearchOptions) -> RootEvaluation:
    """What :func:`_root_stage` returns for ``keys`` and ``envs``, as
    ``jax.ShapeDtypeStruct`` s, without tracing it (tested against its
    trace)."""
    games, actions = keys.shape[0], envs.game.num_actions

    def shape(*axes, dtype=jnp.float32):
        return jax.ShapeDtypeStruct((games, *axes), dtype)

    return RootEvaluation(
        logits=shape(actions), prior_bad=shape(dtype=jnp.int32),
        root_gumbel=shape(actions) if opts.selection == "gumbel" else None,
        value=shape(), value_bad=shape(dtype=jnp.bool_), lower=shape(), upper=shape(), plies=shape(dtype=jnp.int32))


def _avals(shapes) -> list:
    return [(x.shape, x.dtype, x.weak_type) for x in jax.tree.leaves(shapes)]


@functools.lru_cache(maxsize=64)
def first_games(games: int) -> Callable:
    """The first ``games`` rows of every leaf of a padded output sharded over
    a mesh, in one program, so that its gathers across the devices run in one
    executable per call: executables that gather, started in whatever order
    their inputs are ready, can leave two devices waiting in different ones."""
    return jax.jit(lambda out: jax.tree.map(lambda x: x[:games], out))


def _compile_stages(keys, envs, tree, opts: SearchOptions, num_simulations: int, continuing: bool, mesh,
                    options: dict, meanwhile: Callable[[], object] | None = None,
                    kept: tuple | None = None) -> Callable:
    """``run(keys, envs, tree, count) -> SearchOutput``: the programs of
    :func:`lower_stages` compiled, the simulation stage with XLA's
    ``options``, the other two with
    :func:`c4jax.xla_flags.light_compiler_options`; ``kept``: see
    :func:`_stage_program`.  The simulation stage, the largest program, is
    traced first (from :func:`_root_shapes`) and compiles on a thread of its
    own while the other two are traced, lowered and compiled and
    ``meanwhile()`` runs (XLA's compiler releases the GIL)."""
    fns, donated = _stage_fns(opts, num_simulations, continuing and tree is not None), _donated(continuing)
    light = light_compiler_options(jax.default_backend())

    def program(stage: str, args: tuple) -> _Program:
        return _stage_program(getattr(fns, stage), args, getattr(_SPECS, stage), getattr(donated, stage), mesh,
                              None if kept is None else kept + (stage,))

    count = np.int32(num_simulations)
    predicted = _root_shapes(keys, envs, opts)
    simulations = program("simulations", (keys, envs, predicted, tree, count))
    searched, non_finite = simulations.out_shapes
    # Only XLA's compilation runs on the thread: tracing and lowering stay on
    # the caller's, under its JAX settings.  An error (or an interrupt) here
    # does not wait for the thread.
    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="c4jax-compile")
    try:
        pending = pool.submit(simulations.lowered.compile, compiler_options=options)
        output = program("output", (keys, searched, envs, non_finite))
        output_fn = output.wrap(output.lowered.compile(compiler_options=light))
        roots = program("roots", (keys, envs))
        roots_fn = roots.wrap(roots.lowered.compile(compiler_options=light))
        if meanwhile is not None:
            meanwhile()
        simulations_fn = simulations.wrap(pending.result())
    finally:
        pool.shutdown(wait=False)
    if _avals(roots.out_shapes) != _avals(predicted):  # never expected (tested): compiled again for the real shapes
        again = program("simulations", (keys, envs, roots.out_shapes, tree, count))
        simulations_fn = again.wrap(again.lowered.compile(compiler_options=options))

    def run(keys, envs, tree, count):
        evaluated = roots_fn(keys, envs)
        searched, non_finite = simulations_fn(keys, envs, evaluated, tree, count)
        return output_fn(keys, searched, envs, non_finite)

    return run


def search_batch(keys, envs, tree, opts: SearchOptions, num_simulations: int, continuing: bool = False):
    """The batched search after :func:`prepare_search`.  Called with arrays,
    it runs an executable from :mod:`c4jax.search.compiled` (compiled once
    per shapes, options and, for Gumbel only, simulation count); inside a
    ``jax.jit`` of the caller's it is traced into the caller's program.
    ``continuing``: the anytime driver's later chunks (the tree's root is
    ``envs`` already, so nothing of tree size is checked or rebuilt, and the
    compiled program takes the tree's buffers as donated)."""
    if _is_traced((keys, envs, tree)):
        return _search_batch_impl(keys, envs, tree, jnp.int32(num_simulations), opts=opts, continuing=continuing,
                                  gumbel_simulations=_gumbel_simulations(opts, num_simulations))
    return compiled_search(keys, envs, tree, opts, num_simulations, continuing)(keys, envs, tree)


def compiled_search(keys, envs, tree, opts: SearchOptions, num_simulations: int, continuing: bool = False):
    """``fn(keys, envs, tree) -> SearchOutput``: the compiled search of
    these shapes and options running ``num_simulations``, from the
    process's set of compiled searches (:mod:`c4jax.search.compiled`;
    compiled on a miss)."""
    args = (keys, envs, tree)
    games = keys.shape[0]
    mesh = layout.cpu_mesh(games, args)
    options = compiler_options(jax.default_backend())
    if mesh is not None:
        # The games padded to a multiple of the devices and placed on them;
        # the program is lowered from their shapes.
        rows = -(-games // mesh.size) * mesh.size
        games_sharding = NamedSharding(mesh, GAMES)
        args = jax.tree.map(
            lambda x: jax.ShapeDtypeStruct((rows,) + x.shape[1:], x.dtype, sharding=games_sharding), args)
    signature = (
        continuing,
        jax.tree.structure(args),
        tuple((x.shape, x.dtype, None if mesh is not None else getattr(x, "sharding", None))
              for x in jax.tree.leaves(args)),
        opts,
        _gumbel_simulations(opts, num_simulations),
        None if mesh is None else tuple(d.id for d in mesh.devices.flat),
        layout.BLOCK,
        tuple(sorted(options.items())),
    )
    count = np.int32(num_simulations)
    keep = mesh is None and opts.prior_fn is None and opts.value_fn is None and programs.directory() is not None
    game_source = programs.game_digest(type(envs.game)) if keep else None
    if game_source is not None:
        # Traced once and kept on disk beside the persistent compilation cache.
        kept = (repr(envs.game), game_source, repr(opts), _gumbel_simulations(opts, num_simulations), continuing,
                layout.BLOCK)
        fn = compiled.compiled(signature + ("exported",), lambda: _compile_stages(
            *args, opts, num_simulations, continuing, None, options, kept=kept))
        return lambda keys, envs, tree: fn(keys, envs, tree, count)
    if mesh is None:
        fn = compiled.compiled(signature, lambda: _compile_stages(*args, opts, num_simulations, continuing, mesh,
                                                                  options))
        return lambda keys, envs, tree: fn(keys, envs, tree, count)

    def place(keys, envs, tree):
        return jax.device_put(layout.pad_rows((keys, envs, tree), rows), games_sharding)

    # Placing the games compiles small programs of its own: done while the
    # simulations compile.
    fn = compiled.compiled(signature, lambda: _compile_stages(*args, opts, num_simulations, continuing, mesh,
                                                              options, lambda: place(keys, envs, tree)))

    def run(keys, envs, tree):
        placed = place(keys, envs, tree)
        out = fn(*placed, count)
        return out if rows == games else first_games(games)(out)

    return run


def prepare_search(key, env, num_simulations: int, tree, options: dict):
    """:func:`run_mcts`'s checks at the Python boundary and its batching:
    ``(keys [B], envs [B], tree or None, opts, single)`` with ``opts``
    validated and its ``capacity``, ``max_depth`` and ``lanes`` resolved.  Raises the
    ``ValueError`` s that :func:`run_mcts` documents."""
    opts = options_from_kwargs(options)
    num_simulations = check_int("num_simulations", num_simulations, 1, MAX_SIMULATIONS)
    if not isinstance(env, Env):
        raise ValueError(f"env must be a c4jax Env (from a game's env_reset/from_moves); got {type(env).__name__}")
    check_fields(env)
    batch_shape = env.batch_shape
    if len(batch_shape) > 1:
        raise ValueError(f"env may have at most one batch axis; got batch shape {batch_shape}")
    single = batch_shape == ()
    batch = 1 if single else env.ply.shape[0]
    key = as_key(key)
    if key.ndim > 1 or (key.ndim == 1 and (single or key.shape[0] != batch)):
        raise ValueError(
            f"key must be one PRNG key or a [B] batch of keys, one key per game "
            f"({'one game' if single else f'B = {batch}'}); got keys of shape {key.shape}"
        )
    if single:
        keys, envs = _add_batch_axis((key, env))
    else:
        keys, envs = keys_for_games(key, (batch,)), env

    game = envs.game
    capacity = opts.capacity
    if tree is not None:
        if opts.selection == "gumbel":
            raise ValueError(
                "selection='gumbel' cannot reuse a tree (sequential halving assumes a fresh root); "
                "pass tree=None or use selection='puct' or 'uct'"
            )
        if not isinstance(tree, mctx.Tree):
            raise ValueError(f"tree must be an mctx.Tree from run_mcts/get_subtree; got {type(tree).__name__}")
        if not isinstance(tree.extra_data, TreeExtraData):
            raise ValueError(
                "tree must come from run_mcts, get_subtree or empty_tree (its extra_data holds the "
                f"solver's bounds); got extra_data of type {type(tree.extra_data).__name__}"
            )
        if tree.node_visits.ndim != 2 or tree.node_visits.shape[0] != batch:
            raise ValueError(
                f"tree must have a leading batch axis of {batch}; got node_visits of shape {tree.node_visits.shape}"
            )
        if tree.num_actions != game.num_actions or getattr(tree.embeddings, "game", None) != game:
            raise ValueError(f"tree was built for another game than {game!r}")
        tree_nodes = tree.node_visits.shape[1]
        if capacity is not None and capacity != tree_nodes:
            raise ValueError(
                f"capacity={capacity} differs from the reused tree's {tree_nodes} nodes; "
                "the capacity stays fixed across a game"
            )
        capacity = tree_nodes
    elif capacity is None:
        capacity = simulation_bucket(num_simulations) + 1
    if opts.max_depth is not None and opts.max_depth > game.max_plies:
        raise ValueError(
            f"max_depth must be None or an int in 1..{game.max_plies} (the longest game of {game!r}); "
            f"got {opts.max_depth}"
        )
    max_depth = opts.max_depth if opts.max_depth is not None else game.max_plies
    opts = dataclasses.replace(opts, capacity=capacity, max_depth=max_depth, lanes=opts.lanes_for(batch))
    return keys, envs, tree, opts, single


# One compiled call each (an eager operation per array would compile one
# small program per operation on a process's first search).
_add_batch_axis = jax.jit(lambda tree: jax.tree.map(lambda x: x[None], tree))
_UNBATCHED = ("action", "action_weights", "visit_counts", "qvalues", "qvalue_lower", "qvalue_upper", "value",
              "proven_plies", "non_finite")
_first_rows = jax.jit(lambda arrays: [x[0] for x in arrays])


def unbatch_output(out: SearchOutput, single: bool) -> SearchOutput:
    """The output of one game (``single``) without its batch axis of one,
    except ``search_tree``; a batch's unchanged."""
    if single:
        out = out.replace(**dict(zip(_UNBATCHED, _first_rows([getattr(out, f) for f in _UNBATCHED]))))
    return out


def _per_game(fn: Callable, games: int, inout: tuple[int, int] | None = None) -> Callable:
    """``fn`` (one game's arrays in, one game's out) over a batch of
    ``games``, in the blocks of :mod:`c4jax.search.layout`: a block of one
    game runs ``fn`` without vmap (the same numbers: vmap's rows are
    independent; on the CPU the fastest way to search a game), a wider one
    vmapped; ``inout``: see :func:`c4jax.search.layout.in_blocks` (the
    searched tree written back into the reused one's buffer)."""
    def block(*args):
        if jax.tree.leaves(args)[0].shape[0] == 1:
            one = fn(*jax.tree.map(lambda x: x[0], args))
            return jax.tree.map(lambda x: x[None], one)
        return jax.vmap(fn)(*args)

    return layout.in_blocks(block, games, jax.default_backend(), inout)


# The search runs in three stages, each over the batch (each its own loop over
# the games, which XLA's CPU backend compiles into a kernel of its own).
# Between them pass the root's evaluation and the tree; each stage derives the
# keys it needs from the games' keys (:func:`_root_keys`).  Called with
# arrays, each stage is a program of its own (:func:`_compile_stages`);
# traced, they are one program (:func:`_search_batch_impl`).

def _root_stage(keys, envs, *, opts: SearchOptions, reused: bool) -> RootEvaluation:
    keys = search_keys(keys)  # the same numbers, drawn by fused kernels
    return _per_game(functools.partial(_evaluate_root, opts=opts, continuing=reused), keys.shape[0])(keys, envs)


def _simulation_stage(keys, envs, roots: RootEvaluation, tree, num_simulations, *, opts: SearchOptions,
                      reused: bool, gumbel_simulations: int | None):
    # num_simulations: int32[] (traced); Gumbel's count is static instead.
    if gumbel_simulations is not None:
        num_simulations = gumbel_simulations
    keys = search_keys(keys)
    simulate = _per_game(functools.partial(_simulate, opts=opts, num_simulations=num_simulations, continuing=reused),
                         keys.shape[0], None if tree is None else (3, 0))
    return simulate(keys, envs, roots) if tree is None else simulate(keys, envs, roots, tree)


def _output_stage(keys, tree, envs, non_finite, *, opts: SearchOptions) -> SearchOutput:
    keys = search_keys(keys)
    out = _per_game(functools.partial(_search_finish, opts=opts), keys.shape[0])(keys, tree, envs, non_finite)
    return out.replace(search_tree=tree)


def _search_batch_impl(keys, envs, tree, num_simulations, opts: SearchOptions, gumbel_simulations, continuing: bool):
    """The three stages as one traced function (inside a caller's jit)."""
    reused = continuing and tree is not None
    roots = _root_stage(keys, envs, opts=opts, reused=reused)
    tree, non_finite = _simulation_stage(keys, envs, roots, tree, num_simulations, opts=opts, reused=reused,
                                         gumbel_simulations=gumbel_simulations)
    return _output_stage(keys, tree, envs, non_finite, opts=opts)


# ---------------------------------------------------------------------------
# One game (vmapped above).  Every tree below is unbatched: [N], [N, A].


def _dirichlet(key, logits, legal, fraction, alpha):
    """Root prior ``(1 - f) p + f Dir(alpha)`` over the legal actions (AlphaZero)."""
    probs = jax.nn.softmax(logits)
    noise = jax.random.dirichlet(key, jnp.full(logits.shape, alpha, jnp.float32))
    noise = jnp.where(legal, noise, 0.0)
    noise = noise / jnp.maximum(jnp.sum(noise), 1e-30)
    mixed = (1.0 - fraction) * probs + fraction * noise
    tiny = jnp.finfo(jnp.float32).tiny
    return jnp.where(legal, jnp.log(jnp.maximum(mixed, tiny)), jnp.finfo(jnp.float32).min)


class RootEvaluation(NamedTuple):
    """What the first stage of one game's search computes (:func:`_evaluate_root`).

    logits: ``float32[A]``, the root's prior (noise mixed in, masked);
      ``prior_bad``: ``int32[]``, 1 if ``prior_fn`` gave NaN or infinity.
    root_gumbel: ``float32[A]`` (Gumbel search) or ``None``.
    value, value_bad: the root's leaf value and its non-finite flag; bounds
      ``lower``, ``upper``, ``plies`` (:meth:`static_bounds`); zeros when the
      tree is continued (its root is valued already).
    """

    logits: jax.Array
    prior_bad: jax.Array
    root_gumbel: jax.Array | None
    value: jax.Array
    value_bad: jax.Array
    lower: jax.Array
    upper: jax.Array
    plies: jax.Array


def _root_keys(key) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """One game's keys, from its search key: ``(root_key, noise_key,
    search_key, action_key)``, for the root's value, its noise, the
    simulations and the output."""
    root_key, policy_key = jax.random.split(key)
    action_key, noise_key, search_key = jax.random.split(policy_key, 3)
    return root_key, noise_key, search_key, action_key


def _evaluate_root(key, env: Env, *, opts: SearchOptions, continuing: bool) -> RootEvaluation:
    """The first stage of one game's search: its root's prior, noise and
    value.  ``continuing`` (static): the anytime driver's later chunks (the
    tree's root is valued already)."""
    root_key, noise_key, _, _ = _root_keys(key)
    legal = env.game.legal_action_mask(env)
    logits, prior_bad = prior_and_flag(env, opts.prior, opts.prior_fn)
    root_gumbel = None
    if opts.selection == "gumbel":
        root_gumbel = opts.gumbel_scale * jax.random.gumbel(noise_key, logits.shape)
    elif opts.dirichlet_fraction > 0:
        logits = _dirichlet(noise_key, logits, legal, opts.dirichlet_fraction, opts.dirichlet_alpha)
    if continuing:
        value, value_bad = jnp.float32(0), jnp.bool_(False)
        lower, upper, plies = jnp.float32(0), jnp.float32(0), jnp.int32(0)
    else:
        # split(key, 1)[0]: the key make_root_fn gives row 0 of a batch of one.
        value, value_bad = evaluate_leaf(jax.random.split(root_key, 1)[0], env, opts)
        lower, upper, plies = make_solver(opts.solver).static_bounds(env)
    return RootEvaluation(
        logits=masked_prior(logits, legal), prior_bad=(prior_bad & ~env.done).astype(jnp.int32),
        root_gumbel=root_gumbel, value=value, value_bad=value_bad, lower=lower, upper=upper, plies=plies)


def _root_tree(root: RootEvaluation, env: Env, tree, opts: SearchOptions,
               continuing: bool) -> tuple[mctx.Tree, jax.Array]:
    """The tree to search: a fresh root, or the reused ``tree`` if its root is
    ``env`` (with this search's root prior, noise and legal mask);
    ``continuing`` (static): ``tree``'s root is ``env``, unchecked (the
    anytime driver's chunks).  With it ``int32[]``: the root's evaluations
    whose user function gave NaN or infinity."""
    legal = env.game.legal_action_mask(env)
    logits, prior_bad = root.logits, root.prior_bad
    if continuing:  # (never Gumbel: the driver refuses it)
        tree = tree.replace(root_invalid_actions=(~legal).astype(jnp.float32))
        if opts.dirichlet_fraction == 0:
            # The first chunk stored this very prior; writing it again made
            # XLA copy the whole prior array on every chunk.
            return tree, jnp.int32(0)
        return tree.replace(children_prior_logits=tree.children_prior_logits.at[ROOT].set(logits)), prior_bad

    def fresh():
        tree = new_tree(env, logits, root.value, opts.capacity, root.root_gumbel, root.lower, root.upper, root.plies)
        return tree, prior_bad + root.value_bad.astype(jnp.int32)

    if tree is None:
        return fresh()

    def reused():
        return tree.replace(
            extra_data=tree.extra_data.replace(
                root_gumbel=(jnp.zeros_like(tree.extra_data.root_gumbel) if root.root_gumbel is None
                             else root.root_gumbel)),
            root_invalid_actions=(~legal).astype(jnp.float32),
            children_prior_logits=tree.children_prior_logits.at[ROOT].set(logits),
        ), prior_bad

    reusable = (tree.node_visits[ROOT] > 0) & same_position(gather(tree.embeddings, ROOT), env)
    # One branch runs (one game; a batch's vmap selects between both): a
    # reused tree is not rebuilt, a fresh one not compared field by field.
    return jax.lax.cond(reusable, reused, fresh)


def _descend_lanes(key, tree, select, max_depth: int, lanes: int):
    """The descents of one step's ``lanes`` lanes, one after another: lane
    ``k`` counts the paths of lanes ``0..k-1`` as virtual losses.  A
    :class:`Path` with a leading ``[lanes]`` axis."""
    size = max_depth + 1
    num_actions = tree.children_index.shape[-1]
    keys = jax.random.split(key, lanes)
    no_edges = jnp.full((size, lanes), -1, jnp.int32)

    def lane(k, acc):
        edges, paths = acc
        path = descend(keys[k], tree, select, max_depth, in_flight=edges)
        paths = jax.tree.map(lambda a, x: a.at[k].set(x), paths, path)
        taken = jnp.where(path.actions >= 0, path.nodes * num_actions + path.actions, -1)
        return edges.at[:, k].set(taken), paths

    shapes = jax.eval_shape(lambda: descend(keys[0], tree, select, max_depth, in_flight=no_edges))
    paths = jax.tree.map(lambda s: jnp.zeros((lanes,) + s.shape, s.dtype), shapes)
    return jax.lax.fori_loop(0, lanes, lane, (no_edges, paths))[1]


def _search_finish(key, tree, env: Env, non_finite, *, opts: SearchOptions) -> SearchOutput:
    """The last stage of one game's search: its :class:`SearchOutput`,
    without ``search_tree`` (``None``; the caller has the tree)."""
    out = search_output(_root_keys(key)[3], tree, env, opts, make_solver(opts.solver), non_finite)
    return out.replace(search_tree=None)


def _simulate(key, env: Env, root: RootEvaluation, tree=None, *, opts: SearchOptions, num_simulations,
              continuing: bool) -> tuple[mctx.Tree, jax.Array]:
    """The second stage of one game's search: the tree to search
    (:func:`_root_tree`) after ``num_simulations`` simulations, and the
    evaluations whose user function gave NaN or infinity (``int32[]``)."""
    solver = make_solver(opts.solver)
    tree, root_non_finite = _root_tree(root, env, tree, opts, continuing)
    search_key = _root_keys(key)[2]
    next_free = jnp.sum(tree.node_visits > 0).astype(jnp.int32)
    # Only Gumbel's root selection needs the count, and then it is an int.
    select = make_selection(opts, solver, num_simulations if opts.selection == "gumbel" else None)
    active = ~env.done  # a finished game is not searched: its tree is the root alone
    capacity = opts.capacity

    lanes = opts.lanes
    lane_ids = jnp.arange(lanes)

    def simulation(step, state):
        key, tree, pending, next_free, non_finite = state
        # Every write first, then only reads (see c4jax.search.tree).
        tree = apply_update(tree, pending)
        # The key schedule mirrors mctx.search for a batch of one, so that
        # the trees are identical where both searches are correct.
        key, simulate_key, expand_key = jax.random.split(key, 3)
        if lanes == 1:
            path = descend(jax.random.split(simulate_key, 1)[0], tree, select, opts.max_depth)
            expansion = expand(jax.random.split(expand_key, 1)[0], tree, path, next_free, opts, solver)
            paths, expansions = jax.tree.map(lambda x: x[None], (path, expansion))
            on = jnp.ones(1, bool)
        else:
            # The last step may run fewer lanes, the closing one none; a
            # finished game runs none.
            on = (lane_ids < num_simulations - step * lanes) & active
            paths = _descend_lanes(simulate_key, tree, select, opts.max_depth, lanes)
            expansions = jax.vmap(lambda p: expand(None, tree, p, next_free, opts, solver, evaluate=False))(paths)
            values, value_bad = evaluate_in_turn(jax.random.split(expand_key, lanes), expansions.leaf_env, opts)
            expansions = expansions.replace(value=values, non_finite=expansions.non_finite + value_bad)
            expansions = share_new_nodes(paths, expansions, next_free, capacity, on)
        update, bounds = backup(tree, paths, expansions, solver, on)
        if bounds is not None:  # several lanes: the step proved them in place
            tree = tree.replace(extra_data=tree.extra_data.replace(
                value_lower=bounds[0], value_upper=bounds[1], value_plies=bounds[2]))
        writes = active & (step < num_steps)
        pending = jax.vmap(lambda u: u.masked(writes, capacity))(update)
        added = jnp.sum(writes & expansions.creates & on).astype(jnp.int32)
        non_finite = non_finite + jnp.sum(jnp.where(writes & on, expansions.non_finite, 0)).astype(jnp.int32)
        return key, tree, pending, next_free + added, non_finite

    num_steps = (num_simulations + lanes - 1) // lanes
    init = (search_key, tree, jax.tree.map(lambda x: x[None].repeat(lanes, 0), no_update(tree, opts.max_depth + 1)),
            next_free, root_non_finite)
    # One closing step more, whose own writes are dropped: it applies the last
    # simulation's writes inside the loop.  Applied after the loop instead,
    # they made XLA copy every tree buffer once per search (the output reads
    # the tree as well as returning it): an O(N) cost per call that the
    # anytime driver paid on every chunk.
    # The scope names the loop in the compiled program (tests/test_search_cost.py).
    with jax.named_scope("simulations"):
        _, tree, _, _, non_finite = jax.lax.fori_loop(0, num_steps + 1, simulation, init)
    return tree, non_finite
