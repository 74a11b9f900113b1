"""c4jax: batched Monte Carlo Tree Search for Connect 4 and tic-tac-toe in JAX.

The public API is ``__all__``; the packages below hold the rest:

* search: :func:`run_mcts` (batched, terminal-aware MCTS on mctx's ``Tree``),
  :func:`run_mcts_anytime` (against a wall-clock budget),
  :class:`SearchOptions` (your own ``value_fn`` and ``prior_fn`` among
  them), :data:`MCTX_RECIPE`, :class:`SearchOutput`, subtree reuse
  (:func:`get_subtree`, :func:`empty_tree`), :func:`tree_to_dot`, and
  mctx's ``root_fn``/``recurrent_fn`` of a game (:func:`make_root_fn`,
  :func:`make_recurrent_fn`); more in :mod:`c4jax.search`;
* games: :func:`make` a game by name (``make("connect4", rows=6, cols=7)``),
  :func:`register` your own, :class:`Env`, :func:`check_game`; the modules
  in :mod:`c4jax.games`;
* players, the arena and self-play: :class:`Player` and its makers,
  :func:`arena`, :func:`selfplay`, game records in JSON lines
  (:mod:`c4jax.tools`);
* training an evaluation network by self-play: :mod:`c4jax.training`
  (the ``[train]`` extra);
* compiled programs: :func:`compiled_stats`, :func:`clear_compiled`, and
  :func:`enable_compilation_cache` (JAX's persistent cache in a per-user
  folder).

``import c4jax`` adds c4jax's XLA CPU settings to ``XLA_FLAGS`` before JAX
starts (:mod:`c4jax.runtime.xla_flags`; ``C4JAX_XLA_FLAGS=0`` opts out) and
imports nothing else: the names load on first use.
"""

# First, before anything can start a JAX backend: XLA reads XLA_FLAGS once.
from c4jax.runtime import xla_flags as _xla_flags  # noqa: E402

_xla_flags.configure_at_import()

__version__ = "0.1.0"

# Loaded on first use (PEP 562): ``import c4jax`` imports neither JAX nor the
# search, so that the ``c4jax`` command's --help answers at once.
# Name -> (module, attribute).
_LAZY = {
    "make": ("c4jax.games.registry", "make"),
    "register": ("c4jax.games.registry", "register"),
    "Env": ("c4jax.games.env", "Env"),
    "check_game": ("c4jax.games.testing", "check_game"),
    "MCTX_RECIPE": ("c4jax.search", "MCTX_RECIPE"),
    "SearchOptions": ("c4jax.search", "SearchOptions"),
    "SearchOutput": ("c4jax.search", "SearchOutput"),
    "run_mcts": ("c4jax.search", "run_mcts"),
    "run_mcts_anytime": ("c4jax.search", "run_mcts_anytime"),
    "empty_tree": ("c4jax.search", "empty_tree"),
    "get_subtree": ("c4jax.search", "get_subtree"),
    "make_recurrent_fn": ("c4jax.search", "make_recurrent_fn"),
    "make_root_fn": ("c4jax.search", "make_root_fn"),
    "tree_to_dot": ("c4jax.present.dot", "tree_to_dot"),
    "Player": ("c4jax.tools.players", "Player"),
    "flat_mc_player": ("c4jax.tools.players", "flat_mc_player"),
    "heuristic_player": ("c4jax.tools.players", "heuristic_player"),
    "mcts_player": ("c4jax.tools.players", "mcts_player"),
    "perfect_player": ("c4jax.tools.players", "perfect_player"),
    "random_player": ("c4jax.tools.players", "random_player"),
    "ArenaResult": ("c4jax.tools.matches", "ArenaResult"),
    "arena": ("c4jax.tools.matches", "arena"),
    "SelfPlayResult": ("c4jax.tools.self_play", "SelfPlayResult"),
    "selfplay": ("c4jax.tools.self_play", "selfplay"),
    "GameRecord": ("c4jax.tools.records", "GameRecord"),
    "read_games": ("c4jax.tools.records", "read_games"),
    "write_games": ("c4jax.tools.records", "write_games"),
    "clear_compiled": ("c4jax.runtime.compiled", "clear"),
    "compiled_stats": ("c4jax.runtime.compiled", "stats"),
    "enable_compilation_cache": ("c4jax.runtime.cache", "enable_compilation_cache"),
}
_PACKAGES = ("cli", "games", "present", "runtime", "search", "tools", "training")


def __getattr__(name: str):
    import importlib

    if name in _PACKAGES:
        return importlib.import_module(f"c4jax.{name}")
    if name not in _LAZY:
        raise AttributeError(f"module 'c4jax' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ArenaResult",
    "Env",
    "GameRecord",
    "MCTX_RECIPE",
    "Player",
    "SearchOptions",
    "SearchOutput",
    "SelfPlayResult",
    "arena",
    "check_game",
    "clear_compiled",
    "compiled_stats",
    "empty_tree",
    "enable_compilation_cache",
    "flat_mc_player",
    "get_subtree",
    "heuristic_player",
    "make",
    "make_recurrent_fn",
    "make_root_fn",
    "mcts_player",
    "perfect_player",
    "random_player",
    "read_games",
    "register",
    "run_mcts",
    "run_mcts_anytime",
    "selfplay",
    "tree_to_dot",
    "write_games",
]
