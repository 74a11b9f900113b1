"""Game records (``c4jax.GameRecord``, ``c4jax.write_games``,
``c4jax.read_games``): JSON lines that round-trip, and every line or record
that describes no possible game refused with a ValueError naming the line
(reading) or the index (writing), before the file is touched.

The records that name their game by registry id and parameters are checked
with the registry, in ``test_registry.py``."""

from __future__ import annotations

import json

import jax
import pytest

import c4jax
from c4jax.games import tictactoe as ttt


def test_games_round_trip_through_json_lines(tmp_path):
    r = c4jax.arena(jax.random.key(1), c4jax.heuristic_player(), c4jax.random_player(), 6, ttt.env_reset())
    path = tmp_path / "games.jsonl"
    c4jax.write_games(path, r.games)
    assert tuple(c4jax.read_games(path)) == r.games
    path.write_text('{"game": "tictactoe", "x": "a", "o": "b", "result": "maybe", "moves": []}\n')
    with pytest.raises(ValueError, match="line 1"):
        c4jax.read_games(path)


# --- reading: lines that are no game ----------------------------------------------------


def test_read_games_rejects_malformed_records(tmp_path):
    path = tmp_path / "g.jsonl"
    for line in ['5', '{"game": "g", "x": "a", "o": "b", "result": "X", "moves": null}',
                 '{"game": "g", "x": "a", "o": "b", "result": "X", "moves": [1.7, "3"]}']:
        path.write_text(line + "\n")
        with pytest.raises(ValueError, match="line 1"):
            c4jax.read_games(path)


def _record(**changes):
    """One JSON line: X wins tic-tac-toe along the top row (cells 1-2-3), with
    ``changes`` applied."""
    d = {"game": "tictactoe", "x": "a", "o": "b", "result": "X", "plies": 5, "start_ply": 0,
         "moves": [1, 4, 2, 5, 3]}
    d.update(changes)
    return json.dumps(d)


@pytest.mark.parametrize(
    "line, words",
    [
        (_record(), None),  # the valid record: read as it is
        (_record(result="O"), "the moves give 'X'"),
        (_record(plies=4), "plies is 4"),
        (_record(moves=[1, 1], plies=2), "occupied"),
        (_record(moves=[99], plies=1), "1..9"),
        (_record(moves=[1, 4, 2, 5, 3, 6], plies=6), "ended"),
        (_record(start_ply=True), "start_ply"),
        (_record(start_ply=10**30), "start_ply"),
        (_record(game="chess"), "game must be one of 'connect4', 'tictactoe'"),
        (_record(game="Connect4(rows=6, cols=7, connect=4)"), "game must be one of"),
        (_record(game="connect4", game_params={"rows": 6, "cols": 7, "connect": 9}), "connect must be an int in 3..7"),
        (_record(game="connect4", game_params={"width": 7}), "takes the parameters rows, cols, connect"),
        (_record(game="connect4", game_params=[6, 7]), "game_params must be a JSON object"),
        (_record(x={"a": 1}), "player's name"),
        (_record(game="connect4", game_params={"rows": 6, "cols": 7, "connect": 4}, moves=[1] * 7, plies=7,
                 result="draw"), "full column"),
    ],
)
def test_impossible_game_records_are_refused(tmp_path, line, words):
    path = tmp_path / "g.jsonl"
    path.write_text(line + "\n")
    if words is None:
        assert c4jax.read_games(path)[0].moves == (0, 3, 1, 4, 2)
        return
    with pytest.raises(ValueError, match="line 1") as e:
        c4jax.read_games(path)
    assert words in str(e.value), str(e.value)


def test_a_binary_file_is_a_value_error_naming_the_file(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_bytes(b"\xff\xfe\x00garbage\n")
    with pytest.raises(ValueError, match="not UTF-8"):
        c4jax.read_games(path)


# --- writing: every record checked before the file is opened ------------------------------


def test_write_games_checks_everything_before_touching_the_file(tmp_path):
    path = tmp_path / "keep.jsonl"
    path.write_text(_record() + "\n" + _record() + "\n")
    games = c4jax.read_games(path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match=r"games\[1\] is not a GameRecord"):
        c4jax.write_games(path, [games[0], "oops", games[1]])
    assert path.read_bytes() == before
    new = tmp_path / "new.jsonl"
    with pytest.raises(ValueError, match="wrap it in a list"):
        c4jax.write_games(new, games[0])
    assert not new.exists()


@pytest.mark.parametrize("changes, words", [
    (dict(result="maybe"), "result must be 'X', 'O' or 'draw'"),
    (dict(game=7), "game must be a game's id"),
    (dict(moves=(0, 0)), "occupied"),
    (dict(moves=(), result="draw"), "the moves give 'an unfinished game'"),
])
def test_write_games_refuses_what_read_games_would(tmp_path, changes, words):
    import dataclasses

    good = c4jax.GameRecord(moves=(0, 3, 1, 4, 2), x_player="a", o_player="b", result="X", game="tictactoe")
    path = tmp_path / "g.jsonl"
    path.write_text("kept\n")
    with pytest.raises(ValueError, match=f"games\\[1\\]: .*{words}"):
        c4jax.write_games(path, [good, dataclasses.replace(good, **changes)])
    assert path.read_text() == "kept\n"  # nothing written
    with pytest.raises(ValueError, match="games must be an iterable of GameRecord"):
        c4jax.write_games(path, None)
