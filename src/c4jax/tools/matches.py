"""The arena: G games between two players as one jitted, batched loop.

Both sides' moves are batched across games: at every ply player A acts on the
half of the games where it is to move and player B on the other half (games
where A moves first are in one half, the others in the other), so each
player's search runs once per ply on ``G / 2`` games.  Every game has its own
PRNG key (``jax.random.split(key, G)[g]``, folded with the ply), so a game's
moves depend only on its key, who moves first and the players: the batched
arena equals one game at a time (tested).

The result: wins/draws/losses per side with 95% Wilson intervals and the Elo
difference (:mod:`c4jax.tools.stats`), the games as :class:`c4jax.GameRecord`
(:mod:`c4jax.tools.records`), the mean game length, games/s and simulations/s (run
time without compilation; compile time reported apart).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from c4jax.games import registry
from c4jax.runtime.compiled import compile_game_loop, game_mesh, whole_on
from c4jax.search.programs import round_up
from c4jax.games.env import NO_WINNER, Env, padded_games
from c4jax.keys import as_key
from c4jax.present.progress import progress_bar
from c4jax.tools.players import Player
from c4jax.tools.records import GameRecord
from c4jax.tools.stats import elo_difference, wilson_interval
from c4jax.validation import check_int
from c4jax.search.tree import check_trees_fit
from c4jax.games import connect4

__all__ = ["ArenaResult", "arena", "play_games"]

@dataclasses.dataclass(frozen=True)
class ArenaResult:
    """What :func:`arena` returns.  ``wins``/``draws``/``losses`` are A's
    (B's wins are A's losses); ``*_ci`` are 95% Wilson intervals of the
    rates; ``elo`` is A minus B with ``elo_ci``; ``a_first``/``a_second`` are
    A's (wins, draws, losses) in the games where A moved first / second."""

    player_a: str
    player_b: str
    num_games: int
    wins: int
    draws: int
    losses: int
    wins_ci: tuple[float, float]
    draws_ci: tuple[float, float]
    losses_ci: tuple[float, float]
    score: float
    elo: float
    elo_ci: tuple[float, float]
    a_first: tuple[int, int, int]
    a_second: tuple[int, int, int]
    mean_length: float
    seconds: float
    compile_seconds: float
    games_per_second: float
    simulations_per_second: float
    games: tuple[GameRecord, ...]

    def summary(self) -> dict[str, Any]:
        """Everything but the games, JSON-ready (infinite Elo as a string)."""
        d = dataclasses.asdict(self)
        d.pop("games")
        for k in ("elo",):
            if math.isinf(d[k]):
                d[k] = "inf" if d[k] > 0 else "-inf"
        d["elo_ci"] = [("inf" if x > 0 else "-inf") if math.isinf(x) else x for x in d["elo_ci"]]
        return d


def _check_players(player_a, player_b) -> None:
    for name, p in (("player_a", player_a), ("player_b", player_b)):
        if not isinstance(p, Player):
            raise ValueError(f"{name} must be a c4jax Player (e.g. c4jax.random_player()); got {p!r}")


def _program(player: Player) -> tuple:
    """What of ``player`` the compiled game loop runs."""
    return player.act, player.init, player.observe


def check_batch_fits(name: str, value, game, rows: int, tree_nodes: int, stones_shape=None) -> None:
    """Refuses an arena batch of ``rows`` games of ``game`` whose players'
    trees (``tree_nodes`` nodes per game, both players) and move records
    (every ply, on the device and its copy on the host) this machine's
    memory cannot hold (:func:`c4jax.search.tree.check_trees_fit`: a
    ``ValueError`` naming ``name`` of ``value``), before any is allocated."""
    check_trees_fit(name, value, game, rows, tree_nodes, extra=8 * game.max_plies,
                    extra_what="the move records of every ply", stones_shape=stones_shape)


def _make_play_fns(player_a: Player, player_b: Player, half: int, max_plies: int):
    """``(start, plies)`` on one device's block of games, ``2 * half`` rows
    (A moving first in the first ``half``): ``start(keys, envs, params)`` is
    the loop's first state, ``plies(state, params)`` plays up to ``_PLIES_PER_CALL``
    plies of every game (fewer once all are over) and returns ``(state,
    (ply, finished, over))``, each ``[1]``.  The host calls ``plies`` until
    the games end and reports progress between calls: no host callback
    inside a compiled loop, so JAX's persistent compilation cache can store
    both programs."""

    def start(keys, envs, params):
        moves = jnp.full((keys.shape[0], max_plies), -1, jnp.int32)
        return keys, envs, player_a.init(envs), player_b.init(envs), moves, jnp.zeros((1,), jnp.int32)

    def first(x):
        return x[:half]

    def second(x):
        return x[half:]

    def one_ply(c, params):
        keys, envs, state_a, state_b, moves, ply = c
        ply = ply[0]
        game = envs.game
        even = ply % 2 == 0
        ply_keys = jax.vmap(lambda k: jax.random.fold_in(k, ply))(keys)

        def pick(x, a_side):
            # A moves in the first half on even plies, in the second on odd.
            lo, hi = (first(x), second(x)) if a_side else (second(x), first(x))
            return jnp.where(even, lo, hi)

        def part(tree, a_side):
            return jax.tree.map(lambda x: pick(x, a_side), tree)

        def merge(tree_full, tree_part, a_side):
            def m(full, p):
                if a_side:  # A's part is the first half on even plies
                    return jnp.where(even, jnp.concatenate([p, second(full)]), jnp.concatenate([first(full), p]))
                return jnp.where(even, jnp.concatenate([first(full), p]), jnp.concatenate([p, second(full)]))

            return jax.tree.map(m, tree_full, tree_part)

        act_a, part_a = player_a.act(pick(ply_keys, True), part(envs, True), part(state_a, True), *params[0])
        act_b, part_b = player_b.act(pick(ply_keys, False), part(envs, False), part(state_b, False), *params[1])
        state_a = merge(state_a, part_a, True)
        state_b = merge(state_b, part_b, False)
        actions = jnp.where(
            even, jnp.concatenate([act_a, act_b]), jnp.concatenate([act_b, act_a])
        ).astype(jnp.int32)
        actions = jnp.where(envs.done, -1, actions)
        envs = jax.vmap(game.env_step)(envs, actions)[0]
        moves = moves.at[:, ply].set(actions)
        state_a = player_a.observe(state_a, actions)
        state_b = player_b.observe(state_b, actions)
        return keys, envs, state_a, state_b, moves, (ply + 1)[None]

    def plies(c, params):
        stop = jnp.minimum(c[5][0] + _PLIES_PER_CALL, max_plies)

        def cond(c):
            return (c[5][0] < stop) & ~jnp.all(c[1].done)

        # Each device loops over its own games: one whose games are all over
        # stops (no communication between devices).
        c = jax.lax.while_loop(cond, lambda c: one_ply(c, params), c)
        envs, ply = c[1], c[5][0]
        over = (ply >= max_plies) | jnp.all(envs.done)
        return c, (ply[None], jnp.sum(envs.done)[None], over[None])

    return start, plies


# The most games one arena plays (each game's record is kept in memory).
MAX_GAMES = 1_000_000

# Plies per compiled call of the game loop: progress is reported (and the
# host checks for the end) between calls.
_PLIES_PER_CALL = 1

def play_games(
    keys: jax.Array,
    a_first: Sequence[bool],
    player_a: Player,
    player_b: Player,
    env: Env,
    *,
    on_progress=None,
    devices: int | None = None,
) -> tuple[list[GameRecord], float, float]:
    """Plays one game per key, ``a_first[g]`` saying whether A moves first in
    game ``g``, from the unbatched position ``env`` (X or O to move), jitted
    and batched: the host calls a compiled step of the games
    (``_PLIES_PER_CALL`` plies) until every game is over.  The games are
    sharded over ``devices`` local devices (default: all;
    :mod:`c4jax.runtime.compiled`): every device plays its block of the games, with
    as many A-first as B-first rows.

    Args:
      keys: ``[G]`` PRNG keys, one per game: typed keys of any implementation
        or raw ``jax.random.PRNGKey`` keys (:func:`c4jax.keys.as_key`).
      a_first: ``G`` bools.
      player_a, player_b: :class:`~c4jax.tools.players.Player`.
      env: the starting position of every game (one unbatched, running game).
      on_progress: called after every ply as ``on_progress(ply, finished)``
        with the number of finished games (padding rows included).
      devices: local devices to shard the games over (default: all); a
        game does not depend on it.
    Returns:
      ``(records, run_seconds, compile_seconds)``; ``records[g]`` is game
      ``g``'s :class:`GameRecord`; ``compile_seconds`` is 0 when the same
      players already played this game with this many games per half in this
      process (a persistent compilation cache makes it small in a new one).
      Game ``g`` depends only on ``keys[g]``, ``a_first[g]``, the players and
      ``env``.
    Raises:
      ValueError: no games, not one key per game, a bad key, a player that
        is not a :class:`Player`, a batched or finished ``env``, a bad
        ``devices``.
    """
    a_first = [bool(x) for x in a_first]
    num = len(a_first)
    keys = as_key(keys, name="keys")
    if num == 0 or keys.shape != (num,):
        raise ValueError(f"need one key per game; got keys of shape {keys.shape} for {num} games")
    _check_players(player_a, player_b)
    if not isinstance(env, Env) or env.batch_shape:
        raise ValueError("env is the one starting position of every game (an unbatched Env)")
    if bool(env.done):
        raise ValueError("the starting position is a finished game")
    first_mover = int(env.to_move)  # 0: X moves first from env, 1: O does
    # The players' weights: arguments of the compiled loop, not constants in it.
    params = (player_a.weights(), player_b.weights())
    game_name, game_params = registry.spec(env.game)  # ValueError before any game is played
    mesh = game_mesh(devices)
    order_a = [g for g in range(num) if a_first[g]]
    order_b = [g for g in range(num) if not a_first[g]]
    half = round_up(max(len(order_a), len(order_b)), mesh)
    local = half // mesh.size  # A-first (and B-first) rows per device
    # Device d's block: A-first games d*local..(d+1)*local, then as many
    # B-first ones; padding rows (finished games) take game 0's key and never
    # draw.
    pad_a = order_a + [-1] * (half - len(order_a))
    pad_b = order_b + [-1] * (half - len(order_b))
    rows = []
    for d in range(mesh.size):
        rows += pad_a[d * local:(d + 1) * local] + pad_b[d * local:(d + 1) * local]
    live = np.asarray([g >= 0 for g in rows])
    all_keys = keys[np.asarray([max(g, 0) for g in rows], np.int32)]
    envs = padded_games(env, live)
    start_c, plies_c, compile_seconds = compile_game_loop(
        # The players' functions, not their names: a renamed player plays
        # the same program.
        ("arena", *_program(player_a), *_program(player_b), env.game, str(jax.random.key_impl(keys))),
        lambda: _make_play_fns(player_a, player_b, local, env.game.max_plies),
        mesh, all_keys, envs, params,
    )
    params = whole_on(mesh, params)
    t0 = time.perf_counter()
    state = start_c(all_keys, envs, params)
    while True:
        state, (ply, finished, over) = plies_c(state, params)
        if on_progress is not None:
            on_progress(int(np.max(ply)), int(np.sum(finished)))
        if bool(np.all(over)):
            break
    winners = np.asarray(state[1].winner)
    moves = np.asarray(state[4])
    run_seconds = time.perf_counter() - t0
    records: list[GameRecord | None] = [None] * num
    for slot, g in enumerate(rows):
        if g < 0:
            continue
        seq = tuple(int(m) for m in moves[slot] if m >= 0)
        w = int(winners[slot])
        a_is_x = a_first[g] == (first_mover == 0)
        x, o = (player_a.name, player_b.name) if a_is_x else (player_b.name, player_a.name)
        result = "draw" if w == NO_WINNER else ("X" if w == 0 else "O")
        records[g] = GameRecord(
            moves=seq, x_player=x, o_player=o, result=result, game=game_name, game_params=game_params,
            start_ply=int(env.ply),
        )
    return records, run_seconds, compile_seconds


def arena(
    key: jax.Array,
    player_a: Player,
    player_b: Player,
    num_games: int,
    env: Env | None = None,
    *,
    batch_size: int | None = None,
    progress: bool = False,
    devices: int | None = None,
) -> ArenaResult:
    """Plays ``num_games`` games between ``player_a`` and ``player_b``.

    Args:
      key: PRNG key, consumed (typed of any implementation, or a raw
        ``jax.random.PRNGKey``); game ``g`` uses ``jax.random.split(key,
        num_games)[g]``.
      player_a, player_b: :class:`~c4jax.tools.players.Player`.
      num_games: an even int >= 2: A moves first in the even-numbered games,
        B in the odd ones.
      env: the starting position (unbatched), default standard Connect 4's
        empty board.
      batch_size: games per jitted call (even; default all of them; more
        than ``num_games`` plays them all at once).  Smaller batches use less
        memory and update the progress bar more often; the results do not
        depend on it.  Refused where this machine's memory cannot hold the
        players' trees and the move records of a batch
        (:func:`check_batch_fits`).
      progress: show a rich progress bar.
      devices: local devices to shard every batch of games over (default:
        all; see :func:`play_games`).
    Returns:
      :class:`ArenaResult` (A's wins/draws/losses with Wilson intervals, Elo,
      lengths, speed and every game).
    Raises:
      ValueError: for an odd, non-positive or over 1,000,000 ``num_games``, a bad key or a bad
        ``batch_size``, or a batch whose trees and move records this machine's memory cannot hold.
    """
    num_games = check_int("num_games", num_games, 2, MAX_GAMES, even=True, note="(sides alternate)")
    given = batch_size is not None
    batch_size = check_int("batch_size", num_games if batch_size is None else batch_size, 2, MAX_GAMES, even=True)
    if env is None:
        env = connect4.env_reset()
    # A batch's trees and move records, refused before any is allocated (a
    # player or env of the wrong type: play_games says so).
    if isinstance(env, Env):
        check_batch_fits(*(("batch_size", batch_size) if given else ("num_games", num_games)), env.game,
                         min(batch_size, num_games), sum(getattr(p, "tree_nodes", 0) for p in (player_a, player_b)),
                         stones_shape=tuple(env.stones.shape)[len(env.batch_shape):])
    mesh = game_mesh(devices)  # ValueError for a bad count, before any work
    keys = jax.random.split(as_key(key), num_games)
    a_first = [g % 2 == 0 for g in range(num_games)]
    records: list[GameRecord] = []
    seconds = compile_seconds = 0.0
    chunks = [(s, min(s + batch_size, num_games)) for s in range(0, num_games, batch_size)]

    def run_chunks(update):
        nonlocal seconds, compile_seconds
        for lo, hi in chunks:
            pad = 2 * round_up(max(sum(a_first[lo:hi]), (hi - lo) - sum(a_first[lo:hi])), mesh) - (hi - lo)
            recs, run_s, comp_s = play_games(
                keys[lo:hi], a_first[lo:hi], player_a, player_b, env,
                on_progress=lambda ply, done: update(lo + max(0, done - pad)),
                devices=devices,
            )
            records.extend(recs)
            seconds += run_s
            compile_seconds += comp_s
            update(hi)

    _check_players(player_a, player_b)
    with progress_bar(f"{player_a.name} vs {player_b.name}", num_games, progress) as update:
        run_chunks(update)
    return _summarise(
        player_a, player_b, records, a_first, int(env.to_move), seconds, compile_seconds
    )


def _summarise(player_a, player_b, records, a_first, first_mover, seconds, compile_seconds) -> ArenaResult:
    n = len(records)
    first = [0, 0, 0]
    second = [0, 0, 0]
    sims = 0
    for rec, af in zip(records, a_first):
        # A moved first in this game iff af; the first mover is X iff the
        # start position had X to move.
        a_mark = "X" if af == (first_mover == 0) else "O"
        outcome = 1 if rec.result == "draw" else (0 if rec.result == a_mark else 2)
        (first if af else second)[outcome] += 1
        a_moves = sum(1 for p in range(len(rec.moves)) if (p % 2 == 0) == af)
        sims += a_moves * player_a.simulations + (len(rec.moves) - a_moves) * player_b.simulations
    wins, draws, losses = first[0] + second[0], first[1] + second[1], first[2] + second[2]
    score = (wins + 0.5 * draws) / n
    lo, hi = wilson_interval(wins + 0.5 * draws, n)
    return ArenaResult(
        player_a=player_a.name,
        player_b=player_b.name,
        num_games=n,
        wins=wins,
        draws=draws,
        losses=losses,
        wins_ci=wilson_interval(wins, n),
        draws_ci=wilson_interval(draws, n),
        losses_ci=wilson_interval(losses, n),
        score=score,
        elo=elo_difference(score),
        elo_ci=(elo_difference(lo), elo_difference(hi)),
        a_first=tuple(first),
        a_second=tuple(second),
        mean_length=float(np.mean([len(r.moves) for r in records])),
        seconds=seconds,
        compile_seconds=compile_seconds,
        games_per_second=n / seconds if seconds > 0 else math.inf,
        simulations_per_second=sims / seconds if seconds > 0 else 0.0,
        games=tuple(records),
    )
