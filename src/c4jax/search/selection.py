"""Selection: the action-selection rules and the descent from the root.

One simulation's selection phase (Browne et al. 2012, sec. 3.1): from the
root, pick actions with the selection rule until an action whose child was
never expanded, a finished game, or ``max_depth``.  Illegal actions (and,
with the solver, actions proven worse than a sibling) are masked at every
node, not only at the root as in mctx.  The rules are mctx's own functions
(PUCT: ``mctx.muzero_action_selection``; Gumbel: ``mctx.gumbel_muzero_*``)
and UCT (Kocsis & Szepesvari 2006) on mctx's ``Tree``.

The descent only reads the tree, one node view per level
(:func:`~c4jax.search.tree.node_view`): the selection rule sees a tree of one
node, at index 0.  It records the path, ``S = max_depth + 1``
entries: the node at each depth, the action taken there and the reward and
discount of that edge, so that the backup needs no walk up the parents.
"""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import mctx

from c4jax.search.options import SearchOptions
from c4jax.search.tree import NO_PARENT, ROOT, UNVISITED, legal_at, node_view, set_entry

__all__ = ["Path", "descend", "make_selection", "qtransform", "with_virtual_loss"]


def _qtransform_by_min_max(tree: mctx.Tree, node, *, qvalues, min_value, max_value,
                           unvisited="loss") -> jax.Array:
    """``mctx.qtransform_by_min_max``'s formula on the solver's Q-values
    (with the solver, proven ±1 at the root).  An unvisited action scores
    as a loss (0, mctx's rule) or, ``unvisited="parent"``, as the node's own
    value (first-play urgency)."""
    visits = tree.children_visits[node]
    fill = min_value if unvisited == "loss" else tree.node_values[node]
    score = jnp.where(visits > 0, qvalues(tree, node), fill)
    return (score - min_value) / (max_value - min_value)


def qtransform(opts: SearchOptions, solver, at_root: bool):
    """The Q transform ``(tree, node) -> float32[A]`` of ``opts.qtransform``,
    for the root or (``at_root=False``) for the nodes below it."""
    if opts.qtransform == "min_max":
        return functools.partial(
            _qtransform_by_min_max, qvalues=functools.partial(solver.qvalues, at_root=at_root),
            min_value=opts.value_min, max_value=opts.value_max, unvisited=opts.unvisited_q,
        )
    if opts.qtransform == "parent_and_siblings":
        return mctx.qtransform_by_parent_and_siblings
    return mctx.qtransform_completed_by_mix_value


def _uct_selection(key, tree, node, allowed, c, qvalues):
    """UCB1 on trees (Kocsis & Szepesvari 2006): unvisited actions first, then
    ``Q + c sqrt(ln n / n_a)``; ties broken by noise of 1e-7."""
    visits = tree.children_visits[node].astype(jnp.float32)
    total = jnp.maximum(jnp.sum(visits), 1.0)
    bonus = c * jnp.sqrt(jnp.log(total) / jnp.maximum(visits, 1.0))
    score = jnp.where(visits > 0, qvalues(tree, node) + bonus, 1e9)
    score = score + 1e-7 * jax.random.uniform(key, score.shape)
    return jnp.argmax(jnp.where(allowed, score, -jnp.inf)).astype(jnp.int32)


def with_virtual_loss(view: mctx.Tree, qvalues, virtual, loss: float, in_view: bool):
    """``(view, Q)``: what the selection rule sees while ``virtual``
    (``int32[A]``) other simulations of the same step are in flight through
    each action: each counts as a visit that lost (virtual loss, Chaslot,
    Winands & van den Herik 2008).  ``qvalues`` (``float32[A]``) are the
    Q-values selection would see (the solver's proofs applied); with the
    in-flight visits they become ``Q = (n Q + o loss) / (n + o)``, and the
    view's children's visit counts ``n + o``.  The node's own visit count is
    left as it is (adding the in-flight visits there too pushed the descent
    loop past the size XLA's CPU compiler runs as one kernel).  ``in_view`` (static): also write ``Q``
    into the view (as its rewards, with discount 0) for the Q transforms
    that read ``view.qvalues``."""
    n = view.children_visits[0]
    total = n + virtual
    q = jnp.where(total > 0, (n * qvalues + virtual * loss) / jnp.maximum(total, 1), 0.0).astype(jnp.float32)
    view = view.replace(children_visits=total[None])
    if in_view:
        view = view.replace(children_rewards=q[None], children_discounts=jnp.zeros_like(view.children_discounts))
    return view, q


def make_selection(opts: SearchOptions, solver, num_simulations: int):
    """``select(key, tree, node, depth, at_root, virtual=None) -> int32[]``
    for ``opts.selection``, never an action the solver disallows (illegal
    ones first of all).  ``at_root`` is static: the root (depth 0) has rules
    of its own (the solver's proven Q-values, Gumbel's sequential halving), so
    the levels below it are compiled without them.  ``virtual``
    (``int32[A]``): the simulations of the same step already on their way
    through each action (parallel lanes, :func:`with_virtual_loss`; not with
    Gumbel)."""

    def allowed_at(tree, node, at_root):
        return solver.allowed(tree, node, legal_at(tree, node), at_root)

    # The Q transforms of mctx read view.qvalues; ours and UCT take a function.
    q_in_view = opts.selection == "puct" and opts.qtransform != "min_max"

    def lost_in_flight(tree, node, at_root, virtual):
        """(view, qvalues function) with the in-flight visits counted."""
        if virtual is None:
            return tree, functools.partial(solver.qvalues, at_root=at_root)
        view, q = with_virtual_loss(tree, solver.qvalues(tree, node, at_root), virtual, opts.value_min, q_in_view)
        return view, lambda t, n: q

    if opts.selection == "puct":
        def select(key, tree, node, depth, at_root, virtual=None):
            # mctx masks invalid actions at depth 0 only; present every node's
            # disallowed actions as the "root" mask and call it with depth 0.
            invalid = (~allowed_at(tree, node, at_root)).astype(jnp.float32)
            view, qvalues = lost_in_flight(tree, node, at_root, virtual)
            if virtual is None:
                qt = qtransform(opts, solver, at_root)
            elif opts.qtransform == "min_max":
                qt = functools.partial(
                    _qtransform_by_min_max, qvalues=qvalues, min_value=opts.value_min,
                    max_value=opts.value_max, unvisited=opts.unvisited_q,
                )
            else:
                qt = qtransform(opts, solver, at_root)
            return mctx.muzero_action_selection(
                key, view.replace(root_invalid_actions=invalid), node, 0,
                pb_c_init=opts.pb_c_init, pb_c_base=opts.pb_c_base, qtransform=qt,
            )
    elif opts.selection == "uct":
        c = opts.uct_c * (opts.value_max - opts.value_min)

        def select(key, tree, node, depth, at_root, virtual=None):
            allowed = allowed_at(tree, node, at_root)
            view, qvalues = lost_in_flight(tree, node, at_root, virtual)
            return _uct_selection(key, view, node, allowed, c, qvalues)
    else:
        def select(key, tree, node, depth, at_root, virtual=None):
            del virtual  # Gumbel runs one lane (options refuse more)
            qt = qtransform(opts, solver, at_root)
            if at_root:
                # The root's disallowed actions count as invalid there.
                tree = tree.replace(
                    root_invalid_actions=(~allowed_at(tree, ROOT, True)).astype(jnp.float32)
                )
                return mctx.gumbel_muzero_root_action_selection(
                    key, tree, node,
                    num_simulations=num_simulations,
                    max_num_considered_actions=opts.max_num_considered_actions,
                    qtransform=qt,
                )
            # Interior: deterministic, and never picks an illegal action: their
            # probability is 0 while some legal action scores > 0.
            return mctx.gumbel_muzero_interior_action_selection(key, tree, node, depth, qtransform=qt)

    return select


@chex.dataclass(frozen=True)
class Path:
    """What the descent found (one game; ``S = max_depth + 1``).

    node, depth: ``int32[]``, where it stopped.  action: ``int32[]``, the
      unexpanded action to step when ``expand``; else ``node`` is a finished
      game or at ``max_depth``.
    expand: ``bool[]``.
    nodes: ``int32[S]``, the node at each depth (``NO_PARENT`` past ``depth``).
    actions: ``int32[S]``, the action taken at each depth (-1 past it).
    rewards, discounts: ``float32[S]``, those of each edge taken (0 for the
      unexpanded edge, which the expansion steps, and past it).
    """

    node: jax.Array
    depth: jax.Array
    action: jax.Array
    expand: jax.Array
    nodes: jax.Array
    actions: jax.Array
    rewards: jax.Array
    discounts: jax.Array


def descend(key, tree: mctx.Tree, select, max_depth: int, in_flight=None) -> Path:
    """The selection phase of one simulation (reads the tree only).

    Each level reads its node through one node view and records the edge
    taken (action, reward, discount).  ``in_flight``: ``(nodes, actions)``,
    ``int32[K, S]`` the paths of the simulations of the same step that went
    before (parallel lanes; entries past a path, and lanes not yet run, -1):
    each of them counts as a virtual loss where it passed
    (:func:`with_virtual_loss`).  Under ``vmap`` the descents of a batch run
    together; a batch of one runs the unbatched loop on its one game (without
    the per-row masking of a batched ``while_loop``), which keeps the loop
    small enough for XLA's CPU compiler to compile into one kernel."""
    run = functools.partial(_descend, select=select, max_depth=max_depth)

    @jax.custom_batching.custom_vmap
    def one_game(key, tree, in_flight):
        return run(key, tree, in_flight)

    @one_game.def_vmap
    def games(axis_size, in_batched, key, tree, in_flight):
        key_batched, tree_batched, flight_batched = in_batched
        if axis_size == 1:
            # Every array of the tree keeps its batch axis (of 1): slicing
            # game 0 out of the tree buffers, which the loop over simulations
            # updates in place, would make XLA copy them.
            whole = jax.tree.map(lambda x, b: x if b else x[None], tree, tree_batched)
            flight = jax.tree.map(lambda x, b: x[0] if b else x, in_flight, flight_batched)  # [S, K]
            path = run(key[0] if key_batched else key, whole, flight, game=0)
            path = jax.tree.map(lambda x: x[None], path)
        else:
            axes = (
                0 if key_batched else None,
                jax.tree.map(lambda b: 0 if b else None, tree_batched),
                jax.tree.map(lambda b: 0 if b else None, flight_batched),
            )
            path = jax.vmap(run, in_axes=axes, axis_size=axis_size)(key, tree, in_flight)
        return path, jax.tree.map(lambda _: True, path)

    return one_game(key, tree, in_flight)


def _in_flight_visits(in_flight, node, depth, num_actions: int):
    """``int32[A]``: how many of the paths ``in_flight`` took each action of
    ``node`` (at ``depth``: a node is at one depth of every path)."""
    edges = jax.lax.dynamic_index_in_dim(in_flight, depth, axis=0, keepdims=False)  # [K]
    return jnp.sum(edges[:, None] == node * num_actions + jnp.arange(num_actions), axis=0).astype(jnp.int32)


def _descend(key, tree: mctx.Tree, in_flight, select, max_depth: int, game: int | None = None) -> Path:
    """One game's descent (see :func:`descend`); ``game``: read the tree at
    that batch index (:func:`~c4jax.search.tree.node_view`)."""
    size = max_depth + 1
    num_actions = tree.children_index.shape[-1]

    def cond(s):
        return s[5]

    def step(s, at_root: bool):
        key, node, depth, _, _, _, nodes, actions, rewards, discounts = s
        key, select_key = jax.random.split(key)
        view, children_done = node_view(tree, node, game)
        virtual = None if in_flight is None else _in_flight_visits(in_flight, node, depth, num_actions)
        action = select(select_key, view, 0, depth, at_root, virtual)
        child = view.children_index[0, action]
        taken = child != UNVISITED
        actions = set_entry(actions, depth, action)
        # An unexpanded edge's reward and discount are 0 here: the expansion
        # steps it.  (Past the depth reached every entry is as initialised.)
        rewards = set_entry(rewards, depth, jnp.where(taken, view.children_rewards[0, action], 0.0))
        discounts = set_entry(discounts, depth, jnp.where(taken, view.children_discounts[0, action], 0.0))
        nodes = set_entry(nodes, depth + 1, jnp.where(taken, child, NO_PARENT))
        go_on = taken & ~children_done[action] & (depth + 1 < max_depth)
        node = jnp.where(taken, child, node)
        depth = jnp.where(taken, depth + 1, depth)
        return key, node, depth, action, ~taken, go_on, nodes, actions, rewards, discounts

    init = (
        key,
        jnp.int32(ROOT),
        jnp.int32(0),
        jnp.int32(-1),
        jnp.bool_(False),
        jnp.bool_(True),
        jnp.full(size, NO_PARENT, jnp.int32).at[0].set(ROOT),
        jnp.full(size, -1, jnp.int32),
        jnp.zeros(size, jnp.float32),
        jnp.zeros(size, jnp.float32),
    )
    # The root's level, then the levels below it in a loop.
    state = step(init, at_root=True)
    # The scope names the loop in the compiled program.
    with jax.named_scope("descent"):
        state = jax.lax.while_loop(cond, functools.partial(step, at_root=False), state)
    _, node, depth, action, expand, _, nodes, actions, rewards, discounts = state
    return Path(
        node=node, depth=depth, action=action, expand=expand,
        nodes=nodes, actions=actions, rewards=rewards, discounts=discounts,
    )
