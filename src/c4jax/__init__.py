"""c4jax: batched Monte Carlo Tree Search for Connect 4 and tic-tac-toe in JAX.

Public API (everything else is internal):

* games: :mod:`c4jax.connect4` (any size, connect-N; ``connect4.make``) and
  :mod:`c4jax.tictactoe`, pure functions over an :class:`Env` pytree;
* search: :func:`run_mcts` (batched, terminal-aware MCTS on mctx's ``Tree``),
  :func:`run_mcts_anytime` (the same against a wall-clock budget),
  :class:`SearchOptions` (your own ``value_fn`` and ``prior_fn`` among
  them), :data:`MCTX_RECIPE` (the options that make it mctx's search),
  :class:`SearchOutput`, :func:`compiled_stats` and :func:`clear_compiled`
  (the bounded set of compiled searches a process keeps),
  :class:`TreeExtraData` (the solver's bounds in
  ``search_tree.extra_data``), :func:`tree_to_dot` (the tree as Graphviz
  text), :func:`move_stats` and :func:`search_table` (one search's moves as
  plain values and as the CLI's rich table);
* your own game: the :class:`c4jax.env.Game` contract and
  :func:`c4jax.testing.check_game`, which checks it;
* subtree reuse: :func:`get_subtree`;
* driving mctx yourself: :func:`make_root_fn`, :func:`make_recurrent_fn`,
  :func:`prior_logits`, :func:`leaf_value`;
* players and the arena: :class:`Player` and its makers, :func:`arena`,
  :class:`ArenaResult`, game records in JSON lines;
* self-play: :func:`selfplay` (games with every ply's visit counts and
  values, sharded over the devices: :mod:`c4jax.devices`, which also joins
  a multi-host run), :class:`SelfPlayResult`;
* :mod:`c4jax.xla_flags`: the XLA CPU settings that ``import c4jax`` adds
  to ``XLA_FLAGS`` before JAX starts (the loop threshold, and one CPU device
  per core for batches; ``C4JAX_XLA_FLAGS=0`` opts out).
"""

# First, before anything can start a JAX backend: XLA reads XLA_FLAGS once.
from c4jax import xla_flags

xla_flags.configure_at_import()

from c4jax import connect4, devices, testing, tictactoe  # noqa: E402
from c4jax.arena import ArenaResult, GameRecord, arena, play_games, read_games, write_games  # noqa: E402
from c4jax.cli.common import move_stats, search_table  # noqa: E402
from c4jax.env import Env  # noqa: E402
from c4jax.players import (  # noqa: E402
    Player,
    flat_mc_player,
    heuristic_player,
    mcts_player,
    parse_player,
    perfect_player,
    random_player,
)
from c4jax.reuse import empty_tree, get_subtree  # noqa: E402
from c4jax.search.compiled import clear as clear_compiled  # noqa: E402
from c4jax.search.compiled import stats as compiled_stats  # noqa: E402
from c4jax.search import (  # noqa: E402
    MCTX_RECIPE,
    SearchOptions,
    SearchOutput,
    TreeExtraData,
    run_mcts,
    run_mcts_anytime,
    tree_to_dot,
)
from c4jax.selfplay import SelfPlayResult, selfplay  # noqa: E402
from c4jax.values import leaf_value, make_recurrent_fn, make_root_fn, prior_logits  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "ArenaResult",
    "Env",
    "GameRecord",
    "MCTX_RECIPE",
    "Player",
    "SearchOptions",
    "SearchOutput",
    "SelfPlayResult",
    "TreeExtraData",
    "__version__",
    "arena",
    "clear_compiled",
    "compiled_stats",
    "connect4",
    "devices",
    "empty_tree",
    "flat_mc_player",
    "get_subtree",
    "heuristic_player",
    "leaf_value",
    "make_recurrent_fn",
    "make_root_fn",
    "mcts_player",
    "move_stats",
    "parse_player",
    "perfect_player",
    "play_games",
    "prior_logits",
    "random_player",
    "read_games",
    "run_mcts",
    "run_mcts_anytime",
    "search_table",
    "selfplay",
    "testing",
    "tictactoe",
    "tree_to_dot",
    "write_games",
    "xla_flags",
]
