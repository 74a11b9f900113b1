"""Players: random, heuristic, MCTS (with subtree reuse), flat Monte Carlo and
perfect tic-tac-toe, behind one small batched interface.

A :class:`Player` acts on a batch of games at once (``Env`` with a leading
``[B]`` axis) and may carry a state (the MCTS player's search trees):

* ``init(envs) -> state``;
* ``act(keys, envs, state) -> (actions int32[B], state)``, with one PRNG key
  per game (``keys[B]``, consumed), so that a game's moves depend on its own
  key only (batched play equals one game at a time); ``actions`` must be
  legal for every live game (finished games are ignored by the caller);
* ``observe(state, actions) -> state``: every move played, by either side, is
  shown to both players (the MCTS player cuts its tree to the subtree of that
  move here).

A stateless player is one function ``policy(key, env) -> action`` on one game:
``Player.from_policy(name, policy)`` vmaps it.  Everything is jit-safe; the
arena runs whole games inside one ``jax.jit``.  The terminal's human player
lives in :mod:`c4jax.cli`.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any, Callable

import jax
import jax.numpy as jnp

from c4jax.games.env import Env
from c4jax.games.rollout import pick_uniform, win_else_block_moves
from c4jax.search.reuse import empty_tree, get_subtree
from c4jax.search import run_mcts
from c4jax.search.run import MAX_SIMULATIONS as MAX_SEARCH_SIMULATIONS, check_params, simulation_bucket
from c4jax.validation import check_choice, check_int
from c4jax.search.values import ROLLOUT_POLICIES, leaf_value
from c4jax.search.options import MAX_NODES, options_from_kwargs

__all__ = [
    "Player",
    "random_player",
    "heuristic_player",
    "mcts_player",
    "flat_mc_player",
    "perfect_player",
    "parse_player",
    "PLAYER_KINDS",
]

PLAYER_KINDS = ("random", "heuristic", "perfect", "mcts:N", "flatmc:N", "net:N")  # parse_player's spellings


def _no_state(envs: Env) -> Any:
    return None


def _keep_state(state: Any, actions: jax.Array) -> Any:
    return state


@dataclasses.dataclass(frozen=True)
class Player:
    """A batched player (see the module docstring).

    name: shown in tables and game records.
    act: ``(keys[B], envs[B], state) -> (int32[B], state)``; keys consumed.
    init: ``envs[B] -> state`` (default: no state).
    observe: ``(state, int32[B]) -> state`` (default: state unchanged).
    simulations: search simulations per move (0 if it does not search), for
      the arena's simulations/s.
    search: for a player that searches, ``(keys[B], envs[B], state) ->
      (SearchOutput, state)``: the whole search behind :attr:`act` (visit
      counts, Q-values, the tree), for tools that show it (the terminal
      game's ``--show-search`` and hints) or record it (self-play);
      ``None`` otherwise.
    params: the weights of a player's network (a pytree of arrays), or
      ``None``.  A player with weights gets them as the last argument of
      ``act`` and ``search`` (``act(keys, envs, state, params)``); the
      arena and self-play pass them as an argument of their compiled game
      loops, so players that differ only in weights share one program.  Not
      part of the player's equality.
    tree_nodes: the nodes of the search tree the player holds per game (0:
      none), for the memory a batch of games needs.
    """

    name: str
    act: Callable
    init: Callable = _no_state
    observe: Callable = _keep_state
    simulations: int = 0
    search: Callable | None = None
    params: Any = dataclasses.field(default=None, compare=False, hash=False)
    tree_nodes: int = 0

    def weights(self) -> tuple:
        """``(params,)`` for a player with weights, else ``()``: the
        arguments after ``state`` of :attr:`act` and :attr:`search`."""
        return () if self.params is None else (self.params,)

    @staticmethod
    def from_policy(name: str, policy: Callable, simulations: int = 0) -> "Player":
        """A stateless player from ``policy(key, env) -> int32[]`` on one game."""

        def act(keys, envs, state):
            return jax.vmap(policy)(keys, envs).astype(jnp.int32), state

        return Player(name=name, act=act, simulations=simulations)


def _choose(key, mask):
    """A uniformly random action among ``mask`` (``bool[A]``), int32[]."""
    bits = jax.random.bits(key, (), jnp.uint32)
    return jnp.argmax(pick_uniform(mask, bits)).astype(jnp.int32)


# The constructors give the same Player object for the same arguments, so the
# arena's compiled game loops (keyed on the players) are shared by equal
# players made by separate calls (``parse_player("mcts:16")`` twice).
_same_player = functools.lru_cache(maxsize=64)


@_same_player
def random_player() -> Player:
    """Uniformly random legal moves."""
    return Player.from_policy(
        "random", lambda key, env: _choose(key, env.game.legal_action_mask(env))
    )


@_same_player
def heuristic_player() -> Player:
    """Wins at once if it can, else blocks the opponent's immediate win, else
    plays uniformly at random (ties broken uniformly)."""

    def policy(key, env):
        return _choose(key, win_else_block_moves(env, env.game.legal_action_mask(env)))

    return Player.from_policy("heuristic", policy)


@_same_player
def perfect_player() -> Player:
    """Perfect tic-tac-toe: a uniformly random move among those with the best
    exact value (the game's ``perfect_action_values``, which tic-tac-toe
    has).  Raises ``ValueError`` at trace time for a game without it."""

    def policy(key, env):
        exact = getattr(env.game, "perfect_action_values", None)
        if exact is None:
            raise ValueError(f"the perfect player plays tic-tac-toe only, not {env.game!r}")
        values = exact(env).astype(jnp.int32)
        best = (values == jnp.max(values)) & (values > -2)
        return _choose(key, best)

    return Player.from_policy("perfect", policy)


def flat_mc_player(rollouts_per_move: int, rollout_policy: str = "uniform") -> Player:
    """Flat Monte Carlo (Browne et al. 2012, sec. 2.4): every legal move gets
    ``rollouts_per_move`` rollouts of ``rollout_policy`` (one of
    :data:`c4jax.search.values.ROLLOUT_POLICIES`) from the position after it; play
    the best mean for the mover (an immediate win scores +1).  Raises
    ``ValueError`` for a bad ``rollouts_per_move`` or ``rollout_policy``."""
    rollout_policy = check_choice("rollout_policy", rollout_policy, ROLLOUT_POLICIES)
    return _flat_mc_player(check_int("rollouts_per_move", rollouts_per_move, 1), rollout_policy)


@_same_player
def _flat_mc_player(rollouts_per_move: int, rollout_policy: str) -> Player:
    def policy(key, env):
        game = env.game
        actions = jnp.arange(game.num_actions, dtype=jnp.int32)
        keys = jax.random.split(key, game.num_actions)

        def score(k, a):
            child, reward, done = game.env_step(env, a)
            value = leaf_value(k, child, num_rollouts=rollouts_per_move, rollout_policy=rollout_policy)
            return reward - value  # discount -1 (0 once over, where value is 0)

        scores = jax.vmap(score)(keys, actions)
        legal = game.legal_action_mask(env)
        return jnp.argmax(jnp.where(legal, scores, -jnp.inf)).astype(jnp.int32)

    return Player.from_policy(f"flatmc:{rollouts_per_move}", policy, simulations=0)


def mcts_player(
    num_simulations: int,
    *,
    reuse: bool = True,
    capacity: int | None = None,
    name: str | None = None,
    params: Any = None,
    **options: Any,
) -> Player:
    """MCTS with :func:`c4jax.run_mcts` and any of its options.

    With ``reuse`` (the default) the player keeps its tree across its own
    moves and the opponent's: after every move it keeps the subtree of the
    move played.  ``Player.search`` gives the whole
    :class:`c4jax.SearchOutput` behind each move (the terminal game uses it).  The node capacity stays fixed for the whole game, default
    ``2 * num_simulations + 2`` (at most ``2**31 - 1``), so the kept subtree has room to grow (see
    :mod:`c4jax.search.run` for what happens when it is full).
    Equal arguments give the same :class:`Player` object (an equal one
    with ``name`` or ``params``), so the arena compiles its game loop once
    for them.  ``params``: the weights of ``value_fn``/``prior_fn``
    (:func:`c4jax.run_mcts`), kept in :attr:`Player.params`.
    Raises ``ValueError`` for ``num_simulations`` outside ``1..2**30``, bad
    options or ``params`` (checked here, at construction).
    """
    # Validate now, not at the first move (options= or keywords).
    num_simulations = check_int("num_simulations", num_simulations, 1, MAX_SEARCH_SIMULATIONS)

    given = options_from_kwargs(dict(options, **({} if capacity is None else {"capacity": capacity})))
    if reuse and given.selection == "gumbel":
        raise ValueError("selection='gumbel' cannot reuse trees; pass reuse=False")
    params = check_params(params, given)
    args = (int(num_simulations), bool(reuse), given.capacity, dataclasses.replace(given, capacity=None))
    try:
        player = _mcts_player(*args)
    except TypeError:  # an option that cannot be hashed: a player of its own
        player = _mcts_player.__wrapped__(*args)
    if name:
        player = dataclasses.replace(player, name=name)
    return player if params is None else dataclasses.replace(player, params=params)


@_same_player
def _mcts_player(num_simulations: int, reuse: bool, capacity: int | None, given) -> Player:
    options = {"options": given}
    label = f"mcts:{num_simulations}"
    if not reuse:
        def search(keys, envs, state, params=None):
            return run_mcts(keys, envs, num_simulations, capacity=capacity, params=params, **options), state

        nodes = capacity if capacity is not None else simulation_bucket(num_simulations) + 1
        return Player(name=label, act=_act_of(search), simulations=num_simulations, search=search,
                      tree_nodes=nodes)

    cap = capacity if capacity is not None else min(2 * num_simulations + 2, MAX_NODES)

    def init(envs):
        return empty_tree(envs, cap)

    def search(keys, envs, tree, params=None):
        out = run_mcts(keys, envs, num_simulations, tree=tree, params=params, **options)
        return out, out.search_tree

    def observe(tree, actions):
        return get_subtree(tree, actions)

    return Player(
        name=label, act=_act_of(search), init=init, observe=observe,
        simulations=num_simulations, search=search, tree_nodes=cap,
    )


def _act_of(search: Callable) -> Callable:
    """``act`` from ``search``: the search's chosen actions."""

    def act(keys, envs, state, *params):
        out, state = search(keys, envs, state, *params)
        return out.action, state

    return act


def _spelled(spec: str) -> bool:
    """Whether ``spec`` is one of :func:`parse_player`'s spellings (any N)."""
    return spec in ("random", "heuristic", "perfect") or bool(
        _MCTS.fullmatch(spec) or _FLAT.fullmatch(spec) or _NET.fullmatch(spec))


# ASCII digits only (\d would take any Unicode digit), at most 40 of them.
_MCTS = re.compile(r"mcts:(-?[0-9]{1,40})")  # fullmatch: '$' would let a trailing newline through
_FLAT = re.compile(r"flatmc:(-?[0-9]{1,40})")
_NET = re.compile(r"net:(-?[0-9]{1,40})")
MAX_SIMULATIONS = 1_000_000  # mcts:N (a tree of 2 N + 2 nodes per game)
MAX_ROLLOUTS = 100_000  # flatmc:N (N rollouts of every legal move, batched)


def parse_player(spec: str, network: dict | None = None, **mcts_options: Any) -> Player:
    """A player from its command-line spelling: ``random``, ``heuristic``,
    ``perfect`` (tic-tac-toe), ``mcts:N`` (N simulations per move, with
    ``mcts_options``), ``flatmc:N`` (N rollouts per move), ``net:N`` (N
    simulations per move with ``network``: ``dict(value_fn=..., prior_fn=...,
    params=...)``, e.g. ``c4jax.training.load(DIR).search_options()``),
    exactly so: lower case, no spaces, N in ASCII digits.

    Raises:
      ValueError: naming the allowed spellings, or ``net:N`` without a network.
    """
    if not isinstance(spec, str):
        raise ValueError(
            f"a player is written as a string: {', '.join(PLAYER_KINDS)}; got {spec!r}"
        )
    if spec != spec.strip().lower() and _spelled(spec.strip().lower()):
        raise ValueError(
            f"player {spec[:40]!r}: players are written in lower case without spaces "
            f"({', '.join(PLAYER_KINDS)}); did you mean {spec.strip().lower()[:40]!r}?"
        )
    if spec == "random":
        return random_player()
    if spec == "heuristic":
        return heuristic_player()
    if spec == "perfect":
        return perfect_player()
    m = _MCTS.fullmatch(spec) or _FLAT.fullmatch(spec) or _NET.fullmatch(spec)
    if m:
        n, top = int(m.group(1)), (MAX_ROLLOUTS if spec.startswith("flatmc") else MAX_SIMULATIONS)
        if not 1 <= n <= top:
            raise ValueError(f"player {spec[:40]!r}: N must be in 1..{top:,} (players: {', '.join(PLAYER_KINDS)})")
        if spec.startswith("net"):
            if not network:
                raise ValueError(f"player {spec!r} searches with a trained network: give one (--net DIR)")
            return mcts_player(n, name=spec, **{**mcts_options, **network})
        return mcts_player(n, **mcts_options) if spec.startswith("mcts") else flat_mc_player(n)
    raise ValueError(
        f"unknown player {spec!r}; use one of: {', '.join(PLAYER_KINDS)} "
        "(N a positive integer, e.g. mcts:1000)"
    )

