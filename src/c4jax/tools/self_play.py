"""Self-play: games of one MCTS against itself, with the search's statistics
at every ply, batched, jitted and sharded over the devices.

AlphaZero's data generation (Silver et al. 2017, "Self-play"; Silver et al.
2018): both sides are the same search with subtree reuse (one tree per game
that keeps the subtree of every move played), the move sampled in
proportion to the root's visit counts (temperature 1, or ``visits ** (1 /
temperature)``) for the first ``temperature_plies`` plies and the search's
own choice (the most visited move, proven results first) after, optionally
with Dirichlet noise on the root prior.  Every ply keeps the root's visit
counts (the policy target) and the root value for the player to move.

Game ``g`` of a run uses the key ``jax.random.fold_in(key, g)`` and nothing
else, so a game is the same whatever else is played with it: on 1, 2 or 4
devices, in any batch, in one process or several, in a run or its resumed
remainder (tested).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from c4jax.games import registry
from c4jax.tools.records import GameRecord
from c4jax.runtime.compiled import compile_game_loop, game_mesh, whole_on
from c4jax.search.programs import round_up
from c4jax.games.env import NO_WINNER, Env, padded_games
from c4jax.keys import as_key
from c4jax.present.progress import progress_bar
from c4jax.tools.players import mcts_player
from c4jax.search.output import sample_by_visits
from c4jax.validation import check_int, check_number
from c4jax.search.run import MAX_SIMULATIONS
from c4jax.search.tree import check_trees_fit
from c4jax.search.options import DEFAULT_LANES, options_from_kwargs
from c4jax.games import connect4

__all__ = ["SelfPlayResult", "selfplay", "MAX_GAMES"]

MAX_GAMES = 100_000_000  # game indices of one run
MAX_TEMPERATURE_PLIES = 2**31 - 1  # compared with the int32 ply in the compiled loop


@dataclasses.dataclass(frozen=True)
class SelfPlayResult:
    """What :func:`selfplay` returns: the games (:class:`GameRecord` with
    ``index``, ``visits`` and ``values``, in the order played; empty when
    they were only streamed, ``keep_games=False``), how many were played
    (``num_games``) and the speed.

    ``seconds`` is the time of play without compiling (``compile_seconds``,
    apart); ``plies`` the moves played, ``simulations`` the new simulations
    searched (``plies * num_simulations``; the reused subtrees come on top);
    the rates are for all ``num_devices`` devices together (per device:
    divide by ``num_devices``).
    """

    games: tuple[GameRecord, ...]
    num_devices: int
    seconds: float
    compile_seconds: float
    plies: int
    simulations: int
    num_games: int

    @property
    def games_per_second(self) -> float:
        return self.num_games / self.seconds if self.seconds > 0 else math.inf

    @property
    def plies_per_second(self) -> float:
        return self.plies / self.seconds if self.seconds > 0 else math.inf

    @property
    def simulations_per_second(self) -> float:
        return self.simulations / self.seconds if self.seconds > 0 else math.inf

    def summary(self) -> dict[str, Any]:
        """The speed, JSON-ready (per device too)."""
        d = {
            "games": self.num_games, "plies": self.plies, "simulations": self.simulations,
            "devices": self.num_devices, "seconds": self.seconds, "compile_seconds": self.compile_seconds,
            "games_per_second": self.games_per_second, "plies_per_second": self.plies_per_second,
            "simulations_per_second": self.simulations_per_second,
        }
        for k in ("games_per_second", "plies_per_second", "simulations_per_second"):
            d[k + "_per_device"] = d[k] / self.num_devices
        return d


def _make_fns(player, temperature_plies: int, temperature: float, max_plies: int, num_actions: int):
    """``(start, ply)`` on one device's block of games: ``start(keys, envs,
    params)`` is the state, ``ply(state, params) -> (state, finished
    int32[1])`` plays one ply of every live game (``params``: ``()``, or
    ``(weights,)`` of the player's network)."""

    def start(keys, envs, params):
        b = keys.shape[0]
        return dict(
            keys=keys, envs=envs, tree=player.init(envs),
            moves=jnp.full((b, max_plies), -1, jnp.int32),
            visits=jnp.zeros((b, max_plies, num_actions), jnp.int32),
            values=jnp.zeros((b, max_plies), jnp.float32),
            ply=jnp.zeros((b,), jnp.int32),  # the same in every row
        )

    def ply(state, params):
        envs = state["envs"]
        game = envs.game
        p = state["ply"][0]
        both = jax.vmap(lambda k: jax.random.split(jax.random.fold_in(k, p)))(state["keys"])
        out, tree = player.search(both[:, 0], envs, state["tree"], *params)
        if temperature_plies > 0:
            # Sampled among the moves not proven lost (illegal ones are [-1, -1]).
            sampled = jax.vmap(lambda k, v, ok, a: sample_by_visits(k, v, ok, temperature, a))(
                both[:, 1], out.visit_counts, out.qvalue_upper > -1.0, out.action
            )
            action = jnp.where(p < temperature_plies, sampled, out.action)
        else:
            action = out.action
        live = ~envs.done
        action = jnp.where(live, action, -1).astype(jnp.int32)
        state = dict(
            state,
            envs=jax.vmap(game.env_step)(envs, action)[0],
            tree=player.observe(tree, action),
            moves=state["moves"].at[:, p].set(action),
            visits=state["visits"].at[:, p].set(jnp.where(live[:, None], out.visit_counts, 0)),
            values=state["values"].at[:, p].set(jnp.where(live, out.value, 0.0)),
            ply=state["ply"] + 1,
        )
        return state, jnp.sum(state["envs"].done).astype(jnp.int32)[None]

    return start, ply


def search_options(options: dict):
    """Self-play's :class:`~c4jax.search.options.SearchOptions` from search
    keyword arguments, ``lanes=None`` written out as the lanes it runs,
    as records stamp it (:func:`run_settings`).  Raises ``ValueError`` for
    a bad option."""
    opts = options_from_kwargs(options)
    return opts if opts.lanes is not None else dataclasses.replace(opts, lanes=DEFAULT_LANES)


def run_settings(opts, temperature_plies: int, temperature: float) -> tuple[tuple[str, Any], ...]:
    """What, besides the game, the simulations and the seed, decides a
    run's games: stamped on every record (``"settings"``) so that a resumed
    or merged run can check it continues the same run.  Callables
    (``value_fn``, ``prior_fn``) are named by their qualified name."""
    # "sampling_temperature" is self-play's; "temperature" the search's own.
    d = {"temperature_plies": int(temperature_plies), "sampling_temperature": float(temperature)}
    for f in dataclasses.fields(opts):
        if f.name in ("capacity", "max_depth"):
            continue
        v = getattr(opts, f.name)
        if callable(v):
            v = getattr(v, "__qualname__", type(v).__name__)
        if isinstance(v, float) and not math.isfinite(v):
            v = repr(v)
        d[f.name] = v
    return tuple(sorted(d.items()))


def check_batch_fits(name: str, value, game, rows: int, tree_nodes: int, stones_shape=None) -> None:
    """Refuses a batch of ``rows`` games of ``game`` whose trees of
    ``tree_nodes`` nodes and records of every ply this machine's memory
    cannot hold (:func:`c4jax.search.tree.check_trees_fit`: a ``ValueError``
    naming ``name`` of ``value``), before any of it is allocated."""
    check_trees_fit(name, value, game, rows, tree_nodes, extra=4 * game.max_plies * (game.num_actions + 2),
                    extra_what="the records of every ply", stones_shape=stones_shape)


def selfplay(
    key: jax.Array,
    num_simulations: int,
    games: int | Sequence[int],
    env: Env | None = None,
    *,
    temperature_plies: int = 8,
    temperature: float = 1.0,
    devices: int | None = None,
    batch_size: int | None = None,
    seed: int | None = None,
    on_batch: Callable[[list[GameRecord]], None] | None = None,
    keep_games: bool = True,
    progress: bool = False,
    params: Any = None,
    **options: Any,
) -> SelfPlayResult:
    """Self-play games of one MCTS with subtree reuse against itself.

    Args:
      key: a PRNG key; game ``g`` uses ``jax.random.fold_in(key, g)``.
      num_simulations: new simulations per move (an int in ``1..2**30``), on
        top of the subtree kept from the last move.
      games: how many games (``G``: games ``0..G-1``), or the game indices to
        play (those a resumed run lacks, one process's share).
      env: the unbatched, running start position (default: standard Connect 4).
      temperature_plies, temperature: the first ``temperature_plies`` moves
        are sampled with probability ``visits ** (1 / temperature)`` among the
        moves not proven to lose; later ones are the search's own choice.
      devices: local devices to shard every batch over (default: all).
      batch_size: games per compiled batch, ``1..100,000,000`` (default:
        all, up to 1,024), cut to the run's games (the highest index + 1: a
        resumed remainder keeps the run's shape), rounded up to a multiple of
        the devices with finished padding games; refused where this
        machine's memory cannot hold a batch's trees and records.
      seed: ``None`` or an int in ``0..2**32 - 1``, stamped on every record.
      on_batch: called with each batch's records (index order) when it ends.
      keep_games: False: the result holds no records (stream them through
        ``on_batch``, which it then needs).
      progress: show a rich progress bar.
      params: the weights of ``value_fn``/``prior_fn`` (:func:`c4jax.run_mcts`),
        an argument of the compiled game loop: new weights of the same
        shapes and dtypes compile nothing.
      **options: :func:`c4jax.run_mcts`'s options (``lanes`` defaults to 1).
    Returns:
      :class:`SelfPlayResult`; record ``visits[p]`` holds the root's visit
      counts at ply ``p``, ``values[p]`` the root value for the player to move.
    Raises:
      ValueError: a bad key, count, index list, temperature, device count or
        batch size, a finished or batched ``env``, ``keep_games=False``
        without ``on_batch``, or bad search options.
    """
    num_simulations = check_int("num_simulations", num_simulations, 1, MAX_SIMULATIONS)
    if isinstance(games, (int, np.integer)):  # bools are refused by check_int
        indices = range(check_int("games", games, 1, MAX_GAMES))  # a range: no list of every index
    elif isinstance(games, (str, bytes)):
        raise ValueError(f"games must be an int >= 1 or a list of game indices; got {games!r}"[:120])
    else:
        try:
            indices = list(games)
        except TypeError:
            raise ValueError(f"games must be an int >= 1 or a list of game indices; got {games!r}") from None
        if not all(isinstance(g, (int, np.integer)) and not isinstance(g, bool) for g in indices):
            raise ValueError(f"games: the game indices must be ints; got {indices[:5]!r}")
        indices = [int(g) for g in indices]
        if not indices or len(set(indices)) != len(indices) or any(not 0 <= g < MAX_GAMES for g in indices):
            raise ValueError(f"games: the game indices must be distinct ints in 0..{MAX_GAMES - 1:,}, at least one")
    temperature_plies = check_int("temperature_plies", temperature_plies, 0, MAX_TEMPERATURE_PLIES)
    seed = check_int("seed", seed, 0, 2**32 - 1, optional=True)
    check_number("temperature", temperature, 0, lo_open=True)
    if env is None:
        env = connect4.env_reset()
    if not isinstance(env, Env) or env.batch_shape:
        raise ValueError("env is the one starting position of every game (an unbatched Env)")
    if bool(env.done):
        raise ValueError("the starting position is a finished game")
    mesh = game_mesh(devices)
    if batch_size is not None:
        batch_size = check_int("batch_size", batch_size, 1, MAX_GAMES)
    opts = search_options(options)  # ValueError for bad options
    player = mcts_player(num_simulations, options=opts, params=params)
    weights = whole_on(mesh, player.weights())
    key = as_key(key)
    # An explicit batch size is one compiled shape for every call (a resumed
    # run's remainder compiles nothing new); by default, all games up to 1,024.
    highest = indices[-1] if isinstance(indices, range) else max(indices)
    rows = round_up(min(batch_size, highest + 1) if batch_size else min(1024, len(indices)), mesh)
    game = env.game
    check_batch_fits(*(("batch_size", batch_size) if batch_size else ("num_simulations", num_simulations)),
                     game, rows, player.tree_nodes, stones_shape=tuple(env.stones.shape))
    game_name, game_params = registry.spec(game)  # ValueError before any game is played
    # What the compiled game loop depends on besides shapes and devices.
    settings = ("selfplay", num_simulations, opts, temperature_plies, float(temperature), game,
                str(jax.random.key_impl(key)))
    stamp = run_settings(opts, temperature_plies, temperature)
    if not isinstance(keep_games, bool):
        raise ValueError(f"keep_games must be True or False; got {keep_games!r}")
    if not keep_games and on_batch is None:
        raise ValueError("keep_games=False needs on_batch: the games would be lost")
    records: list[GameRecord] = []
    played = 0
    seconds = compile_seconds = 0.0
    plies = 0

    def batch_inputs(chunk):
        keys = jax.vmap(lambda g: jax.random.fold_in(key, g))(
            jnp.asarray(list(chunk) + [0] * (rows - len(chunk)), jnp.uint32)
        )
        return keys, padded_games(env, np.arange(rows) < len(chunk))

    def run(update):
        nonlocal seconds, compile_seconds, plies, played
        for lo in range(0, len(indices), rows):
            chunk = indices[lo:lo + rows]
            keys, envs = batch_inputs(chunk)
            start_c, ply_c, comp = compile_game_loop(
                settings,
                lambda: _make_fns(player, temperature_plies, temperature, game.max_plies, game.num_actions),
                mesh, keys, envs, weights,
            )
            if comp:
                # The first run of new executables is slow (loading them onto
                # the devices): not play, as compiling is not.
                t0 = time.perf_counter()
                jax.block_until_ready(ply_c(start_c(keys, envs, weights), weights)[1])
                comp += time.perf_counter() - t0
            compile_seconds += comp
            t0 = time.perf_counter()
            state = start_c(keys, envs, weights)
            pad = rows - len(chunk)
            for _ in range(game.max_plies):
                state, finished = ply_c(state, weights)
                done = int(np.sum(np.asarray(finished)))
                update(lo + max(0, done - pad))
                if done == rows:
                    break
            moves = np.asarray(state["moves"])
            visits = np.asarray(state["visits"])
            values = np.asarray(state["values"])
            winners = np.asarray(state["envs"].winner)
            seconds += time.perf_counter() - t0
            batch = []
            for i, g in enumerate(chunk):
                n = int(np.sum(moves[i] >= 0))
                w = int(winners[i])
                batch.append(GameRecord(
                    moves=tuple(int(m) for m in moves[i, :n]), x_player=player.name, o_player=player.name,
                    result="draw" if w == NO_WINNER else "XO"[w], game=game_name, game_params=game_params,
                    start_ply=int(env.ply),
                    index=int(g), seed=seed, settings=stamp, visits=tuple(tuple(int(v) for v in row) for row in visits[i, :n]),
                    values=tuple(float(v) for v in values[i, :n]),
                ))
                plies += n
            played += len(batch)
            if keep_games:
                records.extend(batch)
            if on_batch is not None:
                on_batch(batch)
            update(lo + len(chunk))

    with progress_bar(f"self-play {player.name}", len(indices), progress) as update:
        run(update)
    return SelfPlayResult(
        games=tuple(records), num_devices=mesh.size, seconds=seconds, compile_seconds=compile_seconds,
        plies=plies, simulations=plies * num_simulations, num_games=played,
    )
