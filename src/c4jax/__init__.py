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
* compile once per machine: :func:`enable_compilation_cache` (JAX's
  persistent cache in a per-user folder);
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

import sys
import types

# First, before anything can start a JAX backend: XLA reads XLA_FLAGS once.
from c4jax import xla_flags  # noqa: E402

xla_flags.configure_at_import()

__version__ = "0.1.0"

# The public API is loaded on first use (PEP 562): ``import c4jax`` imports
# neither JAX nor the search, so that the ``c4jax`` command's --help and usage
# errors answer at once.  Name -> (module, attribute or None for the module).
_LAZY = {
    "connect4": ("c4jax.connect4", None),
    "devices": ("c4jax.devices", None),
    "testing": ("c4jax.testing", None),
    "tictactoe": ("c4jax.tictactoe", None),
    "make": ("c4jax.registry", "make"),
    "register": ("c4jax.registry", "register"),
    "enable_compilation_cache": ("c4jax.cache", "enable_compilation_cache"),
    "ArenaResult": ("c4jax.arena", "ArenaResult"),
    "GameRecord": ("c4jax.records", "GameRecord"),
    "arena": ("c4jax.arena", "arena"),
    "play_games": ("c4jax.arena", "play_games"),
    "read_games": ("c4jax.records", "read_games"),
    "write_games": ("c4jax.records", "write_games"),
    "move_stats": ("c4jax.analysis", "move_stats"),
    "search_table": ("c4jax.analysis", "search_table"),
    "Env": ("c4jax.env", "Env"),
    "Player": ("c4jax.players", "Player"),
    "flat_mc_player": ("c4jax.players", "flat_mc_player"),
    "heuristic_player": ("c4jax.players", "heuristic_player"),
    "mcts_player": ("c4jax.players", "mcts_player"),
    "parse_player": ("c4jax.players", "parse_player"),
    "perfect_player": ("c4jax.players", "perfect_player"),
    "random_player": ("c4jax.players", "random_player"),
    "empty_tree": ("c4jax.reuse", "empty_tree"),
    "get_subtree": ("c4jax.reuse", "get_subtree"),
    "clear_compiled": ("c4jax.search.compiled", "clear"),
    "compiled_stats": ("c4jax.search.compiled", "stats"),
    "MCTX_RECIPE": ("c4jax.search", "MCTX_RECIPE"),
    "SearchOptions": ("c4jax.search", "SearchOptions"),
    "SearchOutput": ("c4jax.search", "SearchOutput"),
    "TreeExtraData": ("c4jax.search", "TreeExtraData"),
    "run_mcts": ("c4jax.search", "run_mcts"),
    "run_mcts_anytime": ("c4jax.search", "run_mcts_anytime"),
    "tree_to_dot": ("c4jax.search", "tree_to_dot"),
    "SelfPlayResult": ("c4jax.selfplay", "SelfPlayResult"),
    "selfplay": ("c4jax.selfplay", "selfplay"),
    "leaf_value": ("c4jax.values", "leaf_value"),
    "make_recurrent_fn": ("c4jax.values", "make_recurrent_fn"),
    "make_root_fn": ("c4jax.values", "make_root_fn"),
    "prior_logits": ("c4jax.values", "prior_logits"),
}


def __getattr__(name: str):
    import importlib

    # A public name, else a submodule (c4jax.search, c4jax.env, ...), as an
    # eager package would have them after importing its API.
    module, attribute = _LAZY.get(name, (f"c4jax.{name}", None))
    try:
        value = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name != module:
            raise
        raise AttributeError(f"module 'c4jax' has no attribute {name!r}") from None
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


# c4jax.arena and c4jax.selfplay are functions that share their modules'
# names.  Importing such a module sets the package's attribute to the module;
# the package keeps its function (the module stays in sys.modules).
_SHADOWED = frozenset(name for name, (module, attribute) in _LAZY.items() if module == f"c4jax.{name}" and attribute)


class _Package(types.ModuleType):
    def __setattr__(self, name, value):
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


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
    "enable_compilation_cache",
    "flat_mc_player",
    "get_subtree",
    "heuristic_player",
    "leaf_value",
    "make",
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
    "register",
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
