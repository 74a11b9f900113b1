"""c4jax: batched Monte Carlo Tree Search for Connect 4 and tic-tac-toe in JAX.

Public API (everything else is internal):

* games: :mod:`c4jax.connect4` (any size, connect-N; ``connect4.make``) and
  :mod:`c4jax.tictactoe`, pure functions over an :class:`Env` pytree;
* search: :func:`run_mcts` (batched, terminal-aware MCTS on mctx's ``Tree``),
  :class:`SearchOptions`, :class:`SearchOutput`;
* subtree reuse: :func:`get_subtree`;
* driving mctx yourself: :func:`make_root_fn`, :func:`make_recurrent_fn`,
  :func:`prior_logits`, :func:`leaf_value`.
"""

from c4jax import connect4, tictactoe
from c4jax.env import Env
from c4jax.reuse import get_subtree
from c4jax.search import SearchOptions, SearchOutput, run_mcts
from c4jax.values import leaf_value, make_recurrent_fn, make_root_fn, prior_logits

__version__ = "0.1.0"

__all__ = [
    "Env",
    "SearchOptions",
    "SearchOutput",
    "__version__",
    "connect4",
    "get_subtree",
    "leaf_value",
    "make_recurrent_fn",
    "make_root_fn",
    "prior_logits",
    "run_mcts",
    "tictactoe",
]
