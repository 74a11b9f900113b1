"""The search tree: mctx's :class:`mctx.Tree` layout, our extra data, and the
pending writes of one simulation.

The tree is mctx's (node ``0`` is the root, ``UNVISITED``/``NO_PARENT`` = -1,
``Q(s, a) = r + discount * V(s')``, a node's value is the mean of every value
backed up through it), so that mctx's action-selection functions and Q
transforms read it as they read their own.  Every array has the node capacity
``N`` as its leading axis (``[N]``, ``[N, A]``, and the per-node game states
``embeddings``, an :class:`~c4jax.games.env.Env` with leading axis ``[N]``).

Why writes are pending: in a loop over simulations, XLA updates a tree-sized
buffer in place only if no read of the old buffer can come after the write.
A simulation reads the tree (selection, the solver's proofs) and then writes
it (expansion, backup); written in that order, XLA copies every tree buffer
on every simulation, an ``O(N)`` cost per simulation.  So a simulation does not write the tree:
it returns its writes as a :class:`TreeUpdate`, a few scalars and
``[max_depth + 1]`` path vectors, and the next simulation applies them with
:func:`apply_update` *before* it reads anything.  Within one loop step every
write then precedes every read, and each buffer is updated in place.

How nodes are read: selection and the solver read a node through
:func:`node_view`, a one-node :class:`mctx.Tree` of its rows (dynamic slices;
no arithmetic on tree-sized arrays), so that mctx's functions read it at the
static index 0.  Under ``vmap`` a batch of games reads its views with one
gather per array for all games at once.
"""

from __future__ import annotations

import functools
import math

import chex
import jax
import jax.numpy as jnp
import mctx
import numpy as np

from c4jax.games.env import Env
from c4jax.runtime.compiled import search_platform
from c4jax.validation import check_memory

__all__ = [
    "ILLEGAL_LOGIT",
    "LOSS",
    "WIN",
    "NO_PARENT",
    "ROOT",
    "UNVISITED",
    "TreeExtraData",
    "TreeUpdate",
    "apply_update",
    "check_trees_fit",
    "gather",
    "legal_at",
    "masked_prior",
    "new_tree",
    "no_update",
    "NodeViewData",
    "node_bytes",
    "node_view",
    "same_position",
    "set_entry",
    "write",
    "SCATTER_FREE_PLATFORMS",
]

UNVISITED = mctx.Tree.UNVISITED
NO_PARENT = mctx.Tree.NO_PARENT
ROOT = mctx.Tree.ROOT_INDEX
# Game-theoretic values are in [LOSS, WIN] for the player to move (rewards
# are -1, 0, +1); the solver's bounds start there.
LOSS, WIN = -1.0, 1.0
# The prior logit of an illegal action, exactly (c4jax.search.values.prior_logits
# gives it; every prior the search stores is masked with it).  The search
# reads a node's legal actions from its stored prior: ``legal(node) =
# children_prior_logits[node] > ILLEGAL_LOGIT`` (all False for a finished
# game), which saves gathering and re-deriving the node's position at every
# level of every descent.
ILLEGAL_LOGIT = float(np.finfo(np.float32).min)


# A node's fields in :func:`new_tree`: 8 int32/float32 scalars (visits, raw
# and mean values, parent, action, the solver's bounds and plies) and 6 per
# action (child index, prior, value, visits, reward, discount), besides its
# Env: the stones (uint32) and 5 scalars (4 int32 and a bool).
NODE_SCALAR_BYTES = 8 * 4
EDGE_BYTES = 6 * 4
ENV_SCALAR_BYTES = 4 * 4 + 1


def node_bytes(game, stones_shape: tuple[int, ...] | None = None) -> int:
    """The bytes one node of a tree of ``game`` takes (:func:`new_tree`):
    its scalars, one edge per action and its position, whose ``stones`` are
    ``uint32[stones_shape]`` (default: the game's ``stones_shape``)."""
    shape = stones_shape if stones_shape is not None else getattr(game, "stones_shape", None)
    if shape is None:  # a game that does not declare it: its start position's
        shape = jax.eval_shape(game.env_reset).stones.shape
    return NODE_SCALAR_BYTES + EDGE_BYTES * int(game.num_actions) + 4 * math.prod(shape) + ENV_SCALAR_BYTES


def check_trees_fit(name: str, value, game, games: int, nodes: int, *, extra: int = 0, extra_what: str = "",
                    stones_shape: tuple[int, ...] | None = None) -> None:
    """Refuses, before anything is allocated, the trees of ``games`` games
    of ``game``, ``nodes`` nodes per game (and ``extra`` bytes per game
    beside them: ``extra_what``), where this machine's memory cannot hold
    them (:func:`c4jax.validation.check_memory`): a ``ValueError`` naming the
    argument ``name`` of ``value``."""
    each = node_bytes(game, stones_shape)
    of_games = f"{games:,} game{'s' if games != 1 else ''}"
    what = f"the trees of {of_games} ({nodes:,} nodes per game x {each:,} bytes)"
    if extra:
        what = (f"{what} and {extra_what}" if nodes else f"{extra_what} of {of_games}") + f" ({extra:,} bytes per game)"
    check_memory(name, value, games * (nodes * each + extra), what)


@chex.dataclass(frozen=True)
class TreeExtraData:
    """``search_tree.extra_data`` of the trees :func:`c4jax.run_mcts` returns.

    root_gumbel: ``float32[A]``, Gumbel MuZero's root noise (zeros unless
      ``selection="gumbel"``; mctx's Gumbel functions read this field).
    value_lower, value_upper: ``float32[N]``, proven bounds on each node's
      game-theoretic value for its player to move (``[-1, 1]`` when nothing is
      proven, ``[0, 0]`` for a finished game; equal bounds: the node is
      solved).  Kept by :func:`c4jax.get_subtree`.  Without the solver they
      stay ``[-1, 1]`` (finished games ``[0, 0]``).
    value_plies: ``int32[N]``, for a node proven won or lost: the plies to
      the end of the game along the proof, at most (a win: the fastest win
      proven so far; a loss: the slowest loss against the fastest proven
      answers); 0 otherwise (draws, unproven nodes, finished games).
    """

    root_gumbel: jax.Array
    value_lower: jax.Array
    value_upper: jax.Array
    value_plies: jax.Array


def gather(tree_like, index):
    """Entry ``index`` of every leaf of a pytree (e.g. one node's ``Env``)."""
    return jax.tree.map(lambda x: x[index], tree_like)


def set_entry(x: jax.Array, index, value) -> jax.Array:
    """``x.at[index].set(value)`` for a short vector ``x`` (``[S]``) and an
    ``index`` in ``0..S-1``, as one select: under ``vmap`` a per-game
    ``index`` makes ``.at[]`` a scatter, and XLA's CPU backend runs a loop
    that holds a scatter as many kernels per iteration instead of one."""
    return jnp.where(jnp.arange(x.shape[0]) == index, value, x)


def _write_of_game(arrays, index, values, adds, prefix, game=None):
    """``arrays`` with ``values`` written (added where ``adds``) at ``index``
    (see :func:`write`), in ``x[game]`` of each ``x`` if ``game`` is not
    None (a traced int32 batch index)."""
    lead = () if game is None else (game,)
    k = len(index)
    dims = arrays[0].shape[len(lead):len(lead) + k]

    def in_range(idx):
        ok = jnp.bool_(True)
        for i, n in zip(idx, dims):
            ok = ok & (i >= 0) & (i < n)
        return ok

    def put(arrays, idx, vals):
        ok = in_range(idx)
        starts = lead + tuple(jnp.clip(i, 0, n - 1) for i, n in zip(idx, dims))
        out = []
        for x, v, add in zip(arrays, vals, adds):
            rest = x.shape[len(lead) + k:]
            at = starts + (jnp.int32(0),) * len(rest)
            sizes = (1,) * (len(lead) + k) + rest
            old = jax.lax.dynamic_slice(x, at, sizes)
            v = jnp.broadcast_to(v, rest).reshape(sizes).astype(x.dtype)
            out.append(jax.lax.dynamic_update_slice(x, jnp.where(ok, old + v if add else v, old), at))
        return out

    shape = jnp.broadcast_shapes(*(jnp.shape(i) for i in index))
    if not shape:
        return put(arrays, index, values)
    size = shape[-1] if prefix else 1
    index = tuple(jnp.broadcast_to(i, shape).reshape(-1, size) for i in index)
    values = [jnp.broadcast_to(v, shape + x.shape[len(lead) + k:]).reshape((-1, size) + x.shape[len(lead) + k:])
              for x, v in zip(arrays, values)]
    rows = index[0].shape[0]

    def row(r, arrays):
        if not prefix:
            return put(arrays, tuple(i[r, 0] for i in index), [v[r, 0] for v in values])

        def cond(state):
            j, _ = state
            return (j < size) & in_range(tuple(i[r, jnp.minimum(j, size - 1)] for i in index))

        def entry(state):
            j, arrays = state
            return j + 1, put(arrays, tuple(i[r, j] for i in index), [v[r, j] for v in values])

        return jax.lax.while_loop(cond, entry, (jnp.int32(0), arrays))[1]

    return jax.lax.fori_loop(0, rows, row, list(arrays))


def _make_writer(adds: tuple, prefix: bool):
    @jax.custom_batching.custom_vmap
    def one(arrays, index, values):
        return _write_of_game(arrays, index, values, adds, prefix)

    @one.def_vmap
    def batch(axis_size, in_batched, arrays, index, values):
        # A batch writes one game after another: XLA's CPU backend compiles
        # a loop that holds a scatter as many kernels per iteration, and a
        # loop of dynamic update slices into one.
        def batched(x, b):
            return x if b else jnp.broadcast_to(x, (axis_size,) + jnp.shape(x))

        arrays_b, index_b, values_b = in_batched
        arrays = [batched(x, b) for x, b in zip(arrays, arrays_b)]
        index = tuple(batched(i, b) for i, b in zip(index, index_b))
        values = [batched(v, b) for v, b in zip(values, values_b)]

        def game(g, arrays):
            pick = functools.partial(jax.lax.dynamic_index_in_dim, index=g, keepdims=False)
            return _write_of_game(arrays, tuple(map(pick, index)), list(map(pick, values)), adds, prefix,
                                   game=g)

        return jax.lax.fori_loop(0, axis_size, game, arrays), [True] * len(arrays)

    return one


_WRITERS: dict = {}
# Where write() avoids scatters (elsewhere a scatter over the batch is one
# cheap kernel, and a loop over the games the worst case).
SCATTER_FREE_PLATFORMS = ("cpu",)


def _scatter(arrays, index, values, adds):
    """:func:`write` as scatters (negative indices write nothing, as there)."""
    index = index if isinstance(index, tuple) else (index,)
    index = tuple(jnp.where(jnp.asarray(i) < 0, n, i) for i, n in zip(index, arrays[0].shape))
    return [x.at[index].add(v, mode="drop") if add else x.at[index].set(v, mode="drop")
            for x, v, add in zip(arrays, values, adds)]


def write(arrays, index, values, adds=None, prefix: bool = False):
    """``[x.at[index].set(v, mode="drop") for x, v in zip(arrays, values)]``
    (``.add`` where ``adds[i]``).  On :data:`SCATTER_FREE_PLATFORMS` (the
    CPU) written as dynamic update slices, never a scatter: XLA's CPU
    backend compiles a loop holding a scatter as many kernels per
    iteration, and one holding none into one kernel.  Elsewhere: scatters.

    ``index``: a tuple of int32 indices into the leading axes of every
    ``x`` (or one index), each ``[]`` or ``[..., S]``; ``values`` broadcast
    to ``index``'s shape followed by the rest of each ``x``'s shape.
    Entries are written in order; an index out of range writes nothing.
    ``prefix``: the last axis of ``index`` is a path whose entries past the
    first out-of-range index are all out of range (a simulation's path),
    so a row stops there.  Under ``vmap`` the games write one after another.
    """
    adds = tuple(adds) if adds is not None else (False,) * len(arrays)
    if search_platform() not in SCATTER_FREE_PLATFORMS:
        return _scatter(arrays, index, values, adds)
    if (adds, prefix) not in _WRITERS:
        _WRITERS[adds, prefix] = _make_writer(adds, prefix)
    index = tuple(jnp.asarray(i, jnp.int32) for i in (index if isinstance(index, tuple) else (index,)))
    values = [jnp.asarray(v, x.dtype) for x, v in zip(arrays, values)]
    return _WRITERS[adds, prefix](list(arrays), index, values)


def _read_row(x: jax.Array, index, game) -> jax.Array:
    """``x[index]``, or ``x[game, index]`` for a batched ``x`` (``game`` not
    None), as one dynamic slice."""
    # int32 starts: under JAX_ENABLE_X64 a Python 0 or a loop counter is int64.
    lead = () if game is None else (jnp.asarray(game, jnp.int32),)
    k = len(lead)
    starts = lead + (jnp.asarray(index, jnp.int32),) + (jnp.int32(0),) * (x.ndim - k - 1)
    sizes = (1,) * (k + 1) + x.shape[k + 1:]
    return jax.lax.dynamic_slice(x, starts, sizes).reshape(x.shape[k + 1:])


def _read_of_game(arrays, index, game=None):
    """One game's reads of each of ``arrays`` (``[N, ...]``, or ``[B, N,
    ...]`` with ``game`` a static batch index): its row at ``index``
    (``int32[]``, a dynamic slice), or its entries at each of ``index``
    (``int32[A]``, one gather)."""
    if index.ndim == 0:
        return [_read_row(x, index, game) for x in arrays]
    return [(x if game is None else x[game])[index] for x in arrays]


@jax.custom_batching.custom_vmap
def _read(arrays, index):
    """``_read_of_game``; a batch of games: see ``_read_batch``."""
    return _read_of_game(arrays, index)


@_read.def_vmap
def _read_batch(axis_size, in_batched, arrays, index):
    """A batch of games reads with one gather per array, all games at once; a
    batch of one reads its one game's rows (dynamic slices)."""
    arrays_b, index_b = in_batched
    if axis_size == 1:
        game_arrays = [jax.lax.dynamic_index_in_dim(x, 0, keepdims=False) if b else x
                       for x, b in zip(arrays, arrays_b)]
        out = [x[None] for x in _read_of_game(game_arrays, index[0] if index_b else index)]
        return out, [True] * len(out)
    axes = ([0 if b else None for b in arrays_b], 0 if index_b else None)
    out = jax.vmap(_read_of_game, in_axes=axes, axis_size=axis_size)(arrays, index)
    return out, [True] * len(out)


# The arrays of the tree that node_view reads a row of at the node (besides
# the node's own bounds; at its children it reads their bounds and done flags).
_NODE_FIELDS = (
    "node_visits", "raw_values", "node_values", "children_index", "children_prior_logits",
    "children_values", "children_visits", "children_rewards", "children_discounts",
)


def _read_node(node_arrays, child_arrays, node, game=None):
    """The rows of ``node_arrays`` at ``node`` and the entries of
    ``child_arrays`` at its children (``children_index`` is
    ``node_arrays[3]``); ``game``: see :func:`node_view`."""
    node = jnp.asarray(node, jnp.int32)
    if game is not None:
        rows = _read_of_game(node_arrays, node, game)
        return rows, _read_of_game(child_arrays, jnp.maximum(rows[3], 0), game)
    rows = _read(node_arrays, node)
    return rows, _read(child_arrays, jnp.maximum(rows[3], 0))


@chex.dataclass(frozen=True)
class NodeViewData:
    """``extra_data`` of a node view (:func:`node_view`).

    root_gumbel: ``float32[A]``, as in :class:`TreeExtraData`.
    value_lower, value_upper: ``float32[1]``, the node's proven bounds.
    children_lower, children_upper: ``float32[1, A]``, its children's proven
      bounds (meaningless for an unexpanded action).
    value_plies, children_plies: ``int32[1]``, ``int32[1, A]``: the node's
      and its children's ``value_plies`` (read only by the solver's proofs
      and the output: ``node_view(..., plies=True)``; else zeros).
    """

    root_gumbel: jax.Array
    value_lower: jax.Array
    value_upper: jax.Array
    children_lower: jax.Array
    children_upper: jax.Array
    value_plies: jax.Array
    children_plies: jax.Array


def node_view(tree: mctx.Tree, node, game: int | None = None, plies: bool = False) -> tuple[mctx.Tree, jax.Array]:
    """What selection and the solver read of one node: ``(view,
    children_done)``.

    ``view`` is an :class:`mctx.Tree` of one node, ``node`` at index 0: its
    ``children_*`` rows (``children_index`` holds the children's indices in
    ``tree``), its visit count and values, the root fields, and in
    :class:`NodeViewData` its proven bounds and its children's.  mctx's
    selection functions, Q transforms and ``Tree.qvalues`` read it at the
    static index 0 as they read ``tree`` at ``node``.  ``children_done``
    (``bool[A]``): which children are finished games.

    ``tree`` is one game's (the search is vmapped); or, with ``game`` (a
    static int), a batch's with every array batched, read at that game.
    Every read is a dynamic slice of one row or one element; under ``vmap``
    a gather over the batch (``_read_batch``), so that reading a node
    costs the same at any capacity.  ``plies`` (static): also read the node's and its children's
    ``value_plies``."""
    extra = tree.extra_data
    node_arrays = [getattr(tree, f) for f in _NODE_FIELDS] + [extra.value_lower, extra.value_upper]
    child_arrays = [extra.value_lower, extra.value_upper, tree.embeddings.done]
    if plies:
        node_arrays.append(extra.value_plies)
        child_arrays.append(extra.value_plies)
    rows, children = _read_node(node_arrays, child_arrays, node, game)
    child_lower, child_upper, child_done = children[:3]
    num_actions = tree.children_index.shape[-1]
    node_plies = rows[-1] if plies else jnp.int32(0)
    child_plies = children[3] if plies else jnp.zeros(num_actions, jnp.int32)
    root = (lambda x: x) if game is None else (lambda x: x[game])  # noqa: E731
    row = dict(zip(_NODE_FIELDS + ("value_lower", "value_upper"), rows))
    view = mctx.Tree(
        **{f: row[f][None] for f in _NODE_FIELDS},
        parents=jnp.full((1,), NO_PARENT, jnp.int32),
        action_from_parent=jnp.full((1,), NO_PARENT, jnp.int32),
        embeddings=None,
        root_invalid_actions=root(tree.root_invalid_actions),
        extra_data=NodeViewData(
            root_gumbel=root(extra.root_gumbel),
            value_lower=row["value_lower"][None],
            value_upper=row["value_upper"][None],
            children_lower=child_lower[None],
            children_upper=child_upper[None],
            value_plies=node_plies[None],
            children_plies=child_plies[None],
        ),
    )
    return view, (row["children_index"] != UNVISITED) & child_done


def legal_at(tree: mctx.Tree, node) -> jax.Array:
    """``bool[A]``: the legal actions of ``node``, from its stored prior."""
    return tree.children_prior_logits[node] > ILLEGAL_LOGIT


def masked_prior(logits, legal) -> jax.Array:
    """``logits`` with the illegal actions at exactly ``ILLEGAL_LOGIT``."""
    return jnp.where(legal, logits, ILLEGAL_LOGIT).astype(jnp.float32)


def same_position(a: Env, b: Env) -> jax.Array:
    """``bool[]``: the two (unbatched) games are the same position."""
    return jnp.all(a.stones == b.stones) & (a.to_move == b.to_move) & (a.done == b.done)


def new_tree(env: Env, logits, value, capacity: int, root_gumbel, lower, upper, plies=0) -> mctx.Tree:
    """A tree of ``capacity`` nodes holding only the root ``env`` (one visit,
    value ``value``, prior ``logits`` ``float32[A]``, proven bounds ``lower``,
    ``upper`` and their ``plies``).  Unbatched.  ``logits`` must already be masked
    (:func:`masked_prior`)."""
    num_actions = env.game.num_actions
    n, na = (capacity,), (capacity, num_actions)
    embeddings = jax.tree.map(lambda x: jnp.zeros(n + x.shape, x.dtype).at[ROOT].set(x), env)
    if root_gumbel is None:
        root_gumbel = jnp.zeros((num_actions,), jnp.float32)
    extra_data = TreeExtraData(
        root_gumbel=root_gumbel,
        value_lower=jnp.full(n, LOSS, jnp.float32).at[ROOT].set(lower),
        value_upper=jnp.full(n, WIN, jnp.float32).at[ROOT].set(upper),
        value_plies=jnp.zeros(n, jnp.int32).at[ROOT].set(plies),
    )
    return mctx.Tree(
        node_visits=jnp.zeros(n, jnp.int32).at[ROOT].set(1),
        raw_values=jnp.zeros(n, jnp.float32).at[ROOT].set(value),
        node_values=jnp.zeros(n, jnp.float32).at[ROOT].set(value),
        parents=jnp.full(n, NO_PARENT, jnp.int32),
        action_from_parent=jnp.full(n, NO_PARENT, jnp.int32),
        children_index=jnp.full(na, UNVISITED, jnp.int32),
        children_prior_logits=jnp.zeros(na, jnp.float32).at[ROOT].set(logits),
        children_values=jnp.zeros(na, jnp.float32),
        children_visits=jnp.zeros(na, jnp.int32),
        children_rewards=jnp.zeros(na, jnp.float32),
        children_discounts=jnp.zeros(na, jnp.float32),
        embeddings=embeddings,
        root_invalid_actions=(~env.game.legal_action_mask(env)).astype(jnp.float32),
        extra_data=extra_data,
    )


@chex.dataclass(frozen=True)
class TreeUpdate:
    """The writes of one simulation, applied by :func:`apply_update` at the
    start of the next one (see the module docstring).  ``S = max_depth + 1``.
    An index equal to the capacity ``N`` writes nothing (``mode="drop"``).

    node: ``int32[]``, the new node's index (``N``: no new node), with its
      ``parent``, ``action`` (from the parent), ``raw_value``,
      ``prior_logits`` ``float32[A]`` and ``embedding`` (an unbatched ``Env``).
    link_node: ``int32[]``, the node whose ``children_index[link_node,
      action]`` becomes ``node`` (``N``: none).
    edge_node: ``int32[]``, the node whose edge ``action`` was stepped for the
      first time or again (a full tree): its ``reward``, ``discount``.
    path_nodes: ``int32[S]``, the nodes backed up (``N`` past the leaf): one
      visit each and new means ``path_values`` ``float32[S]``.
    bound_nodes: ``int32[S]``, the nodes whose proven bounds become
      ``path_lower``, ``path_upper`` (``float32[S]``): the path's, or none
      (``N``) when the step wrote them itself (parallel lanes), and their
      ``path_plies`` ``int32[S]``.
    With parallel lanes every field has a leading ``[K]`` axis.
    edge_nodes, edge_actions: ``int32[S]``, the edges backed up: one visit
      each and new child values ``edge_values`` ``float32[S]``.
    """

    node: jax.Array
    parent: jax.Array
    action: jax.Array
    raw_value: jax.Array
    prior_logits: jax.Array
    embedding: Env
    link_node: jax.Array
    edge_node: jax.Array
    reward: jax.Array
    discount: jax.Array
    path_nodes: jax.Array
    path_values: jax.Array
    bound_nodes: jax.Array
    path_lower: jax.Array
    path_upper: jax.Array
    path_plies: jax.Array
    edge_nodes: jax.Array
    edge_actions: jax.Array
    edge_values: jax.Array

    def masked(self, active, capacity: int) -> "TreeUpdate":
        """The same update, writing nothing unless ``active`` (``bool[]``)."""

        def drop(index, n):
            return jnp.where(active, index, n)

        n = jnp.int32(capacity)
        return self.replace(
            node=drop(self.node, n),
            link_node=drop(self.link_node, n),
            edge_node=drop(self.edge_node, n),
            path_nodes=drop(self.path_nodes, n),
            bound_nodes=drop(self.bound_nodes, n),
            edge_nodes=drop(self.edge_nodes, n),
        )


def no_update(tree: mctx.Tree, path_size: int) -> TreeUpdate:
    """An update that writes nothing (the first simulation's pending writes)."""
    capacity, num_actions = tree.children_index.shape
    none = jnp.int32(capacity)
    zeros = jnp.zeros(path_size, jnp.float32)
    nowhere = jnp.full(path_size, capacity, jnp.int32)
    return TreeUpdate(
        node=none,
        parent=jnp.int32(NO_PARENT),
        action=jnp.int32(0),
        raw_value=jnp.float32(0),
        prior_logits=jnp.zeros(num_actions, jnp.float32),
        embedding=gather(tree.embeddings, ROOT),
        link_node=none,
        edge_node=none,
        reward=jnp.float32(0),
        discount=jnp.float32(0),
        path_nodes=nowhere,
        path_values=zeros,
        bound_nodes=nowhere,
        path_lower=zeros,
        path_upper=zeros,
        path_plies=jnp.zeros(path_size, jnp.int32),
        edge_nodes=nowhere,
        edge_actions=jnp.zeros(path_size, jnp.int32),
        edge_values=zeros,
    )


def apply_update(tree: mctx.Tree, u: TreeUpdate) -> mctx.Tree:
    """``tree`` with the writes of ``u`` applied (unbatched; in place under
    ``jit`` when nothing reads the old tree afterwards)."""
    extra = tree.extra_data
    leaves, treedef = jax.tree.flatten(tree.embeddings)
    new = write([tree.raw_values, tree.parents, tree.action_from_parent, tree.children_prior_logits] + leaves,
                u.node, [u.raw_value, u.parent, u.action, u.prior_logits] + jax.tree.leaves(u.embedding))
    raw_values, parents, action_from_parent, children_prior_logits = new[:4]
    (children_index,) = write([tree.children_index], (u.link_node, u.action), [u.node])
    children_rewards, children_discounts = write(
        [tree.children_rewards, tree.children_discounts], (u.edge_node, u.action), [u.reward, u.discount])
    node_visits, node_values = write([tree.node_visits, tree.node_values], u.path_nodes, [1, u.path_values],
                                     adds=(True, False), prefix=True)
    children_visits, children_values = write(
        [tree.children_visits, tree.children_values], (u.edge_nodes, u.edge_actions), [1, u.edge_values],
        adds=(True, False), prefix=True)
    value_lower, value_upper, value_plies = write(
        [extra.value_lower, extra.value_upper, extra.value_plies], u.bound_nodes,
        [u.path_lower, u.path_upper, u.path_plies], prefix=True)
    return tree.replace(
        raw_values=raw_values, parents=parents, action_from_parent=action_from_parent,
        children_prior_logits=children_prior_logits, embeddings=jax.tree.unflatten(treedef, new[4:]),
        children_index=children_index, children_rewards=children_rewards, children_discounts=children_discounts,
        node_visits=node_visits, node_values=node_values, children_visits=children_visits,
        children_values=children_values,
        extra_data=extra.replace(value_lower=value_lower, value_upper=value_upper, value_plies=value_plies),
    )
