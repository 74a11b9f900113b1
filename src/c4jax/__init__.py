"""c4jax: batched Monte Carlo Tree Search for Connect 4 and tic-tac-toe in JAX.

Public API (everything else is internal):

* games: :mod:`c4jax.connect4` (any size, connect-N; ``connect4.make``) and
  :mod:`c4jax.tictactoe`, pure functions over an :class:`Env` pytree.
"""

from c4jax import connect4, tictactoe
from c4jax.env import Env

__version__ = "0.1.0"

__all__ = [
    "Env",
    "__version__",
    "connect4",
    "tictactoe",
]
