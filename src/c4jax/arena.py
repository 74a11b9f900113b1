"""The arena: G games between two players as one jitted, batched loop.

Both sides' moves are batched across games: at every ply player A acts on the
half of the games where it is to move and player B on the other half (games
where A moves first are in one half, the others in the other), so each
player's search runs once per ply on ``G / 2`` games.  Every game has its own
PRNG key (``jax.random.split(key, G)[g]``, folded with the ply), so a game's
moves depend only on its key, who moves first and the players: the batched
arena equals one game at a time (tested).

Statistics: wins/draws/losses per side with 95% Wilson score intervals
(Wilson 1927), the Elo difference ``400 log10(s / (1 - s))`` of A's score
``s = (wins + draws / 2) / G`` with its interval mapped from the Wilson
interval of ``s``, the mean game length, games/s and simulations/s (run time
without compilation; compile time reported apart).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from typing import Any, Iterable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from c4jax import registry
from c4jax.devices import compile_game_loop, game_mesh, padded_games, round_up
from c4jax.env import NO_WINNER, Env
from c4jax.keys import as_key
from c4jax.players import Player
from c4jax.validation import check_int

__all__ = [
    "ArenaResult",
    "GameRecord",
    "arena",
    "play_games",
    "wilson_interval",
    "elo_difference",
    "write_games",
    "read_games",
]

Z95 = 1.959963984540054


def wilson_interval(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval of a proportion ``successes / n`` (Wilson 1927).

    Returns ``(0.0, 1.0)`` for ``n == 0``.  ``successes`` may be fractional
    (a score with draws as halves)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo, hi = centre - half, centre + half
    return (0.0 if lo < 1e-12 else lo), (1.0 if hi > 1 - 1e-12 else hi)


def elo_difference(score: float) -> float:
    """Elo difference for an expected score in ``[0, 1]`` (logistic model,
    400-point scale); ``+inf``/``-inf`` at 1 and 0."""
    if score >= 1.0:
        return math.inf
    if score <= 0.0:
        return -math.inf
    return 400.0 * math.log10(score / (1.0 - score))


@dataclasses.dataclass(frozen=True)
class GameRecord:
    """One game: its moves (0-based actions, from the start position), who
    played X (the first player of the game) and O, and the result: ``"X"``,
    ``"O"`` or ``"draw"``.  ``game`` and ``game_params`` name the game
    (:func:`c4jax.make` rebuilds it from them).  ``start_ply`` is the number
    of stones already on the board at the start (0: the empty board, so
    ``moves`` replay with ``from_moves``).

    Self-play records (:func:`c4jax.selfplay`) also carry ``index`` (the
    game's number in its run: its key is ``fold_in(key, index)``), ``seed``
    (the run's seed, when known), ``visits`` (for every ply, the root's
    visit counts, ``num_actions`` ints: what an AlphaZero-style learner
    trains its policy on) and ``values`` (for every ply, the root value
    for the player to move); ``None`` in arena records."""

    moves: tuple[int, ...]
    x_player: str
    o_player: str
    result: str
    game: str
    game_params: tuple[tuple[str, Any], ...] = ()
    start_ply: int = 0
    index: int | None = None
    seed: int | None = None
    visits: tuple[tuple[int, ...], ...] | None = None
    values: tuple[float, ...] | None = None
    settings: tuple[tuple[str, Any], ...] | None = None

    def to_json(self) -> str:
        d = {
            "game": self.game,
            **({"game_params": dict(self.game_params)} if self.game_params else {}),
            "x": self.x_player,
            "o": self.o_player,
            "result": self.result,
            "plies": len(self.moves),
            "start_ply": self.start_ply,
            "moves": [m + 1 for m in self.moves],  # 1-based, as from_moves takes them
        }
        for name in ("index", "seed", "settings", "visits", "values"):
            value = getattr(self, name)
            if value is not None:
                d[name] = [list(v) for v in value] if name == "visits" else (
                    list(value) if name == "values" else dict(value) if name == "settings" else value)
        return json.dumps(d)

    @staticmethod
    def from_json(line: str) -> "GameRecord":
        d = json.loads(line)
        if not isinstance(d, dict):
            raise ValueError(f"a game record is a JSON object; got {line.strip()[:80]}")
        for field in ("game", "x", "o", "result", "moves"):
            if field not in d:
                raise ValueError(f"game record lacks {field!r}: {line.strip()[:80]}")
        if d["result"] not in ("X", "O", "draw"):
            raise ValueError(f"result must be 'X', 'O' or 'draw'; got {d['result']!r}")
        moves = d["moves"]
        if not isinstance(moves, list) or not all(
            isinstance(m, int) and not isinstance(m, bool) and m >= 1 for m in moves
        ):
            raise ValueError(f"moves must be a list of 1-based ints; got {moves!r}"[:120])
        if not isinstance(d["game"], str):
            raise ValueError(f"game must be a game's id (a string); got {d['game']!r}"[:120])
        game_params = d.get("game_params", {})
        if not (isinstance(game_params, dict)
                and all(isinstance(v, (str, int, float, bool)) or v is None for v in game_params.values())):
            raise ValueError(f"game_params must be a JSON object of plain values; got {game_params!r}"[:160])
        start_ply = d.get("start_ply", 0)
        check_int("start_ply", start_ply, 0, 4096)
        for side in ("x", "o"):
            if not isinstance(d[side], str):
                raise ValueError(f"{side!r} must be a player's name (a string); got {d[side]!r}"[:120])
        if "plies" in d and d["plies"] != len(moves):
            raise ValueError(f"plies is {d['plies']!r} but the record has {len(moves)} moves"[:120])
        for name in ("index", "seed"):
            if name in d and (isinstance(d[name], bool) or not isinstance(d[name], int) or d[name] < 0):
                raise ValueError(f"{name} must be an int >= 0; got {d[name]!r}"[:120])
        visits = d.get("visits")
        if visits is not None and not (
            isinstance(visits, list) and len(visits) == len(moves) and all(
                isinstance(row, list) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in row)
                for row in visits)
        ):
            raise ValueError(f"visits must be a list of one list of ints >= 0 per move ({len(moves)}); "
                             f"got {visits!r}"[:160])
        values = d.get("values")
        if values is not None and not (
            isinstance(values, list) and len(values) == len(moves) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)
        ):
            raise ValueError(f"values must be a list of one finite number per move ({len(moves)}); "
                             f"got {values!r}"[:160])
        settings = d.get("settings")
        if settings is not None and not (
            isinstance(settings, dict)
            and all(isinstance(v, (str, int, float, bool)) or v is None for v in settings.values())
        ):
            raise ValueError(f"settings must be a JSON object of plain values; got {settings!r}"[:160])
        return GameRecord(
            moves=tuple(m - 1 for m in moves),
            x_player=str(d["x"]),
            o_player=str(d["o"]),
            result=d["result"],
            game=d["game"],
            game_params=tuple(sorted(game_params.items())),
            start_ply=start_ply,
            settings=None if settings is None else tuple(sorted(settings.items())),
            index=d.get("index"),
            seed=d.get("seed"),
            visits=None if visits is None else tuple(tuple(row) for row in visits),
            values=None if values is None else tuple(float(v) for v in values),
        )


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

    def table(self):
        """A :class:`rich.table.Table` of the results."""
        from rich.table import Table

        def pct(x):
            return f"{100 * x:.1f}%"

        def ci(c):
            return f"[{pct(c[0])}, {pct(c[1])}]"

        def elo(x):
            return "+inf" if x == math.inf else "-inf" if x == -math.inf else f"{x:+.0f}"

        n = self.num_games
        t = Table(title=f"{self.player_a} vs {self.player_b}: {n} games")
        # No column wraps or crops (c4jax.cli.common.print_table widens the
        # table instead in a narrow terminal).
        t.add_column("", no_wrap=True)
        t.add_column("games", justify="right", no_wrap=True)
        t.add_column("rate", justify="right", no_wrap=True)
        t.add_column("95% CI (Wilson)", justify="right", no_wrap=True)
        t.add_row(f"A ({self.player_a}) wins", str(self.wins), pct(self.wins / n), ci(self.wins_ci))
        t.add_row("draws", str(self.draws), pct(self.draws / n), ci(self.draws_ci))
        t.add_row(f"B ({self.player_b}) wins", str(self.losses), pct(self.losses / n), ci(self.losses_ci))
        t.add_section()
        t.add_row("A moving first (w/d/l)", "/".join(map(str, self.a_first)), "", "")
        t.add_row("A moving second (w/d/l)", "/".join(map(str, self.a_second)), "", "")
        t.add_row(
            "Elo (A - B)", elo(self.elo), "", f"[{elo(self.elo_ci[0])}, {elo(self.elo_ci[1])}]"
        )
        t.add_row("mean game length", f"{self.mean_length:.1f} plies", "", "")
        t.add_row(
            "speed",
            f"{self.games_per_second:.1f} games/s",
            f"{self.simulations_per_second:,.0f} sims/s",
            f"run {self.seconds:.1f} s, compile {self.compile_seconds:.1f} s",
        )
        return t


def _program(player: Player) -> tuple:
    """What of ``player`` the compiled game loop runs."""
    return player.act, player.init, player.observe


def _make_play_fns(player_a: Player, player_b: Player, half: int, max_plies: int):
    """``(start, plies)`` on one device's block of games, ``2 * half`` rows
    (A moving first in the first ``half``): ``start(keys, envs)`` is the
    loop's first state, ``plies(state)`` plays up to ``_PLIES_PER_CALL``
    plies of every game (fewer once all are over) and returns ``(state,
    (ply, finished, over))``, each ``[1]``.  The host calls ``plies`` until
    the games end and reports progress between calls: no host callback
    inside a compiled loop, so JAX's persistent compilation cache can store
    both programs."""

    def start(keys, envs):
        moves = jnp.full((keys.shape[0], max_plies), -1, jnp.int32)
        return keys, envs, player_a.init(envs), player_b.init(envs), moves, jnp.zeros((1,), jnp.int32)

    def first(x):
        return x[:half]

    def second(x):
        return x[half:]

    def one_ply(c):
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

        act_a, part_a = player_a.act(pick(ply_keys, True), part(envs, True), part(state_a, True))
        act_b, part_b = player_b.act(pick(ply_keys, False), part(envs, False), part(state_b, False))
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

    def plies(c):
        stop = jnp.minimum(c[5][0] + _PLIES_PER_CALL, max_plies)

        def cond(c):
            return (c[5][0] < stop) & ~jnp.all(c[1].done)

        # Each device loops over its own games: one whose games are all over
        # stops (no communication between devices).
        c = jax.lax.while_loop(cond, one_ply, c)
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
    :mod:`c4jax.devices`): every device plays its block of the games, with
    as many A-first as B-first rows.

    Args:
      keys: ``[G]`` PRNG keys, one per game: typed keys of any implementation
        or raw ``jax.random.PRNGKey`` keys (:func:`c4jax.keys.as_key`).
      a_first: ``G`` bools.
      player_a, player_b: :class:`~c4jax.players.Player`.
      env: the starting position of every game (one unbatched, running game).
      on_progress: called after every ply as ``on_progress(ply, finished)``
        with the number of finished games (padding rows included).
      devices: local devices to shard the games over (default: all).  A
        game does not depend on it, as long as each device holds more than
        one game per side (an MCTS player searching one game alone runs 4
        lanes by default, :attr:`c4jax.SearchOptions.lanes`; pass
        ``lanes`` to the player to make that hold too).
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
    for name, p in (("player_a", player_a), ("player_b", player_b)):
        if not isinstance(p, Player):
            raise ValueError(f"{name} must be a c4jax Player (e.g. c4jax.parse_player('random')); got {p!r}")
    if not isinstance(env, Env) or env.batch_shape:
        raise ValueError("env is the one starting position of every game (an unbatched Env)")
    if bool(env.done):
        raise ValueError("the starting position is a finished game")
    first_mover = int(env.to_move)  # 0: X moves first from env, 1: O does
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
        mesh, all_keys, envs,
    )
    t0 = time.perf_counter()
    state = start_c(all_keys, envs)
    while True:
        state, (ply, finished, over) = plies_c(state)
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
      player_a, player_b: :class:`~c4jax.players.Player`.
      num_games: an even int >= 2: A moves first in the even-numbered games,
        B in the odd ones.
      env: the starting position (unbatched), default standard Connect 4's
        empty board.
      batch_size: games per jitted call (even; default all of them).  Smaller
        batches use less memory and update the progress bar more often; the
        results do not depend on it.
      progress: show a rich progress bar.
      devices: local devices to shard every batch of games over (default:
        all; see :func:`play_games`).
    Returns:
      :class:`ArenaResult` (A's wins/draws/losses with Wilson intervals, Elo,
      lengths, speed and every game).
    Raises:
      ValueError: for an odd, non-positive or over 1,000,000 ``num_games``, a bad key or a bad
        ``batch_size``.
    """
    num_games = check_int("num_games", num_games, 2, MAX_GAMES, even=True, note="(sides alternate)")
    batch_size = check_int("batch_size", num_games if batch_size is None else batch_size, 2, even=True)
    if env is None:
        from c4jax import connect4

        env = connect4.env_reset()
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

    if progress:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()
        ) as bar:
            task = bar.add_task(f"{player_a.name} vs {player_b.name}", total=num_games)
            run_chunks(lambda finished: bar.update(task, completed=finished))
    else:
        run_chunks(lambda finished: None)
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


def write_games(path, games: Iterable[GameRecord]) -> None:
    """Writes games as JSON lines (moves 1-based, as ``from_moves`` takes them).

    Every record is encoded and checked as :func:`read_games` checks it (a
    game not registered yet: its fields only) before the file is opened, so that what is written reads back, and bad
    input never truncates an existing file.

    Raises:
      ValueError: ``games`` is not an iterable of :class:`GameRecord`, or a
        record that :func:`read_games` would refuse (naming its index).
      OSError: the file cannot be written.
    """
    if isinstance(games, GameRecord):
        raise ValueError("games must be an iterable of GameRecord (a list); got one GameRecord: wrap it in a list")
    try:
        games = list(games)
    except TypeError:
        raise ValueError(f"games must be an iterable of GameRecord (a list); got {type(games).__name__}") from None
    lines = []
    for i, g in enumerate(games):
        if not isinstance(g, GameRecord):
            raise ValueError(f"games[{i}] is not a GameRecord; got {type(g).__name__}")
        try:
            line = g.to_json()
            record = GameRecord.from_json(line)
            if record.game in registry.registered():  # a game not registered yet is replayed on reading
                _check_replay(record)
        except (ValueError, TypeError, RecursionError) as e:
            raise ValueError(f"games[{i}]: {e}"[:300]) from None
        lines.append(line + "\n")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines)


def read_games(path) -> list[GameRecord]:
    """Reads games written by :func:`write_games` or ``c4jax selfplay`` (whose
    records also carry ``index``, ``seed``, ``visits`` and ``values``).

    Each record is replayed: its game is rebuilt with :func:`c4jax.make`
    from its ``game`` and ``game_params`` (a game of your own: register it
    first, :func:`c4jax.register`), its moves must be legal
    from the empty board (records of games from another start, ``start_ply >
    0``, are checked for their fields only), and its ``result`` the result of
    those moves.

    Raises:
      ValueError: on a malformed or impossible record (for self-play
        records also visit counts of the wrong length), naming the file and
        the line (also for a file that is not UTF-8 text).
      OSError: the file cannot be read.
    """
    with open(path, "rb") as f:
        return records_from_bytes(f.read(), path)


def records_from_bytes(data: bytes, source) -> list[GameRecord]:
    """The records of the lines of ``data`` (:func:`read_games`' checks),
    errors naming ``source``."""
    try:
        lines = data.decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise ValueError(f"{source}: not UTF-8 text (byte {e.start}): not a file of game records") from None
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = GameRecord.from_json(line)
            _check_replay(record)
        except (ValueError, json.JSONDecodeError, RecursionError) as e:
            raise ValueError(f"{source}: line {i + 1}: {e}") from None
        out.append(record)
    return out


def _check_replay(record: GameRecord) -> None:
    """ValueError unless the record's moves, played from the empty board of
    its game, are legal and end as its ``result`` says (plain Python)."""
    game = registry.make(record.game, **dict(record.game_params))
    name = record.game
    if record.visits is not None:
        # The move played may have no visits: the solver rules out visited
        # moves it proves worse, and its proofs of wins at once need no visit.
        for p, row in enumerate(record.visits):
            if len(row) != game.num_actions:
                raise ValueError(f"visits at ply {p + 1} has {len(row)} counts; {name} has {game.num_actions} actions")
    if record.start_ply:
        return
    if hasattr(game, "from_moves"):
        env = game.from_moves([a + 1 for a in record.moves])  # ValueError names an illegal move
    else:  # a game with only the Game contract: step it
        env = game.env_reset()
        for p, a in enumerate(record.moves):
            if bool(env.done) or not 0 <= a < game.num_actions or not bool(game.legal_action_mask(env)[a]):
                raise ValueError(f"move {p + 1} ({a + 1}) is illegal in {name}"
                                 f"{' (the game had ended)' if bool(env.done) else ''}")
            env, _, _ = game.env_step(env, a)
    if not bool(env.done):
        result = None  # an unfinished game: the arena never writes one
    else:
        w = int(env.winner)
        result = "draw" if w < 0 else "XO"[w]
    if result != record.result:
        raise ValueError(f"result is {record.result!r} but the moves give {result or 'an unfinished game'!r}")
