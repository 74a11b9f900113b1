"""The game registry (``c4jax.make``, ``c4jax.register``) and game records that
name their game by id and parameters."""

from __future__ import annotations

import pathlib
import sys

import jax
import pytest

import c4jax
from c4jax.games import connect4, registry, tictactoe
from c4jax.tools import records

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "examples"))
from tictactoe4 import GAME as TTT4, TicTacToe4  # noqa: E402


def test_make_builds_the_built_in_games():
    assert c4jax.make("connect4") == connect4.make()
    assert c4jax.make("connect4", rows=8, cols=9, connect=5) == connect4.make(8, 9, 5)
    assert c4jax.make("tictactoe") == tictactoe.GAME
    assert registry.spec(connect4.make(8, 9, 5)) == ("connect4", (("cols", 9), ("connect", 5), ("rows", 8)))
    assert registry.spec(tictactoe.GAME) == ("tictactoe", ())


@pytest.mark.parametrize("name, params, words", [
    ("chess", {}, "game must be one of 'connect4', 'tictactoe'"),
    ("connect4", {"rows": 2}, "rows must be an int in 3..64; got 2"),
    ("connect4", {"width": 7}, r"takes the parameters rows, cols, connect; got \['width'\]"),
    ("tictactoe", {"rows": 3}, r"takes no parameters; got \['rows'\]"),
])
def test_make_refuses_unknown_games_and_parameters(name, params, words):
    with pytest.raises(ValueError, match=words):
        c4jax.make(name, **params)


@pytest.mark.parametrize("name, factory, words", [
    ("connect4", lambda: TTT4, "built-in"),
    ("", lambda: TTT4, "letters, digits"),
    ("a b", lambda: TTT4, "letters, digits"),
    ("mine", "not a function", "factory must be a function"),
])
def test_register_refuses_bad_names_and_factories(name, factory, words):
    with pytest.raises(ValueError, match=words):
        c4jax.register(name, factory)


@pytest.fixture
def registered_ttt4():
    c4jax.register("tictactoe4", TicTacToe4)
    yield
    registry._FACTORIES.pop("tictactoe4", None)


def test_a_registered_user_game_round_trips_through_selfplay_records(tmp_path, registered_ttt4):
    assert c4jax.make("tictactoe4") == TTT4 and "tictactoe4" in registry.registered()
    result = c4jax.selfplay(jax.random.key(0), 32, 2, env=TTT4.env_reset(), devices=1)
    path = tmp_path / "ttt4.jsonl"
    c4jax.write_games(path, result.games)
    back = c4jax.read_games(path)
    assert back == list(result.games)
    assert {(g.game, g.game_params) for g in back} == {("tictactoe4", ())}
    assert all(c4jax.make(g.game, **dict(g.game_params)) == TTT4 for g in back)


def test_records_of_a_game_not_registered_are_read_after_registering_it(tmp_path):
    r = c4jax.arena(jax.random.key(1), c4jax.random_player(), c4jax.random_player(), 2, TTT4.env_reset())
    path = tmp_path / "ttt4.jsonl"
    c4jax.write_games(path, r.games)
    with pytest.raises(ValueError, match="game must be one of .*c4jax.register adds your own"):
        c4jax.read_games(path)
    c4jax.register("tictactoe4", TicTacToe4)
    try:
        assert [g.moves for g in c4jax.read_games(path)] == [g.moves for g in r.games]
    finally:
        registry._FACTORIES.pop("tictactoe4", None)


def test_a_registered_name_that_does_not_rebuild_the_game_is_refused(registered_ttt4):
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Other(TicTacToe4):  # named "tictactoe4" too, but another game
        pass

    c4jax.register("tictactoe4", Other)  # replaces the factory: it makes another game
    with pytest.raises(ValueError, match="does not rebuild"):
        registry.spec(TTT4)


def test_connect4_records_name_the_board_size(tmp_path):
    env = connect4.make(5, 6, 4).env_reset()
    r = c4jax.arena(jax.random.key(2), c4jax.random_player(), c4jax.random_player(), 2, env)
    assert {(g.game, g.game_params) for g in r.games} == {("connect4", (("cols", 6), ("connect", 4), ("rows", 5)))}
    path = tmp_path / "c4.jsonl"
    c4jax.write_games(path, r.games)
    assert '"game": "connect4", "game_params": {"cols": 6, "connect": 4, "rows": 5}' in path.read_text()
    assert c4jax.read_games(path) == list(r.games)


@pytest.mark.slow
def test_selfplay_records_of_tiny_budgets_read_back(tmp_path, registered_ttt4):
    # With 2 simulations the solver plays moves the search never visited (it
    # rules out the visited ones it proves worse); their records read back.
    result = c4jax.selfplay(jax.random.key(0), 2, 64, env=TTT4.env_reset(), devices=1)
    assert any(row[m] == 0 for g in result.games for row, m in zip(g.visits, g.moves))
    path = tmp_path / "tiny.jsonl"
    c4jax.write_games(path, result.games)
    records._replay_step.cache_clear()
    assert c4jax.read_games(path) == list(result.games)
    # A game without from_moves is replayed by its own steps, jitted once for all 64 records.
    assert records._replay_step.cache_info()[:2] == (63, 1)  # hits, misses


@pytest.mark.parametrize("call, words", [
    (lambda: c4jax.make("connect4", foo=1), r"game 'connect4' takes the parameters rows, cols, connect; got \['foo'\]"),
    (lambda: c4jax.make("tictactoe", size=3), r"game 'tictactoe' takes no parameters; got \['size'\]"),
    (lambda: c4jax.make("connect4", name="x"), r"takes the parameters rows, cols, connect; got \['name'\]"),
])
def test_make_names_the_parameters_a_game_takes(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_make_refuses_a_factory_that_returns_no_game_of_its_name():
    for name, factory in (("retnone", lambda: None), ("alias", TicTacToe4), ("other", lambda: tictactoe.GAME)):
        c4jax.register(name, factory)
        try:
            with pytest.raises(ValueError, match=f"the factory of game '{name}' returned .*, not a game named '{name}'"):
                c4jax.make(name)
        finally:
            registry._FACTORIES.pop(name, None)
    with pytest.raises(ValueError, match="differs only in case from"):
        c4jax.register("Connect4", TicTacToe4)


def test_a_factory_error_is_the_factorys_own():
    def broken():
        return len(5)

    c4jax.register("broken", broken)
    try:
        with pytest.raises(TypeError, match="has no len"):  # not reported as a parameter problem
            c4jax.make("broken")
    finally:
        registry._FACTORIES.pop("broken", None)


def test_game_params_must_be_plain_values_for_the_records():
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Shaped(TicTacToe4):
        @property
        def params(self):
            return {"shape": (4, 4)}

    with pytest.raises(ValueError, match="params must map names to plain values"):
        registry.spec(Shaped())
