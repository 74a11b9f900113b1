"""The games: the :class:`~c4jax.games.env.Env` pytree and the ``Game``
contract (:mod:`~c4jax.games.env`), Connect 4 of any size
(:mod:`~c4jax.games.connect4`) and tic-tac-toe
(:mod:`~c4jax.games.tictactoe`, solved by :mod:`~c4jax.games.tictactoe_solver`),
rollouts (:mod:`~c4jax.games.rollout`), positions from moves and boards
(:mod:`~c4jax.games.positions`), games by name (:mod:`~c4jax.games.registry`)
and the checks of a game of your own (:mod:`~c4jax.games.testing`).
``from c4jax.games import connect4`` imports one.
"""

_GAMES = ("connect4", "tictactoe")


def __getattr__(name: str):
    # ``c4jax.games.connect4`` after ``import c4jax`` (loaded on first use).
    if name in _GAMES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
