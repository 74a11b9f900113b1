"""Game records: one JSON line per game, written whole and read back by
replaying every game's moves in the game that :func:`c4jax.make` rebuilds
from the record's ``game`` and ``game_params``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from typing import Any, Iterable

import numpy as np

from c4jax.games import registry
from c4jax.files import write_whole
from c4jax.validation import check_int

__all__ = ["GameRecord", "write_games", "read_games", "records_from_bytes"]


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
    write_whole(path, "".join(lines))


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


@functools.lru_cache(maxsize=8)
def _replay_step(game):
    """``jit``: ``(env, action) -> (next env, its legal action mask)`` of
    ``game`` (hashable, as every game is): one program per game, one
    dispatch per replayed move."""
    import jax

    def step(env, action):
        env = game.env_step(env, action)[0]
        return env, game.legal_action_mask(env)

    return jax.jit(step)


def _check_replay(record: GameRecord) -> None:
    """ValueError unless the record's moves, played from the empty board of
    its game, are legal and end as its ``result`` says (the game's
    ``from_moves``, or else its steps, one jitted program per game)."""
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
        step = _replay_step(game)
        env = game.env_reset()
        legal = np.asarray(game.legal_action_mask(env))
        for p, a in enumerate(record.moves):
            if bool(env.done) or not 0 <= a < game.num_actions or not legal[a]:
                raise ValueError(f"move {p + 1} ({a + 1}) is illegal in {name}"
                                 f"{' (the game had ended)' if bool(env.done) else ''}")
            env, legal = step(env, np.int32(a))
            legal = np.asarray(legal)
    if not bool(env.done):
        result = None  # an unfinished game: the arena never writes one
    else:
        w = int(env.winner)
        result = "draw" if w < 0 else "XO"[w]
    if result != record.result:
        raise ValueError(f"result is {record.result!r} but the moves give {result or 'an unfinished game'!r}")
