"""The games c4jax knows by name: :func:`make`, :func:`register`.

A game is named by an id and keyword parameters (``("connect4", {"rows": 6,
"cols": 7, "connect": 4})``); records of played games (the arena's,
self-play's) store both, and :func:`make` rebuilds the game from them.  The
built-in games are ``"connect4"`` (:func:`c4jax.games.connect4.make`) and
``"tictactoe"``; :func:`register` adds your own (a :class:`c4jax.games.env.Game`).
A game object reports its id as ``game.name`` and its parameters as
``game.params`` (a dict; no attribute: no parameters).
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable

from c4jax.validation import check_choice

__all__ = ["make", "register", "registered", "parameters", "spec"]


# The games' modules are imported when a game is made: the command line reads
# the registry's names without starting JAX (its --help stays instant).
def _connect4(rows=6, cols=7, connect=4):
    from c4jax.games import connect4

    return connect4.make(rows, cols, connect)


def _tictactoe():
    from c4jax.games import tictactoe

    return tictactoe.GAME


_FACTORIES: dict[str, Callable[..., Any]] = {"connect4": _connect4, "tictactoe": _tictactoe}
_BUILT_IN = frozenset(_FACTORIES)


def register(name: str, factory: Callable[..., Any]) -> None:
    """Makes ``make(name, **params)`` call ``factory(**params)``.

    Args:
      name: the game's id, the ``name`` of the games ``factory`` returns
        (letters, digits, ``_``, ``-``, ``.``).
      factory: returns a :class:`c4jax.games.env.Game` for keyword parameters (the
        game's ``params``).  Registering a name again replaces its factory.
    Raises:
      ValueError: a bad name, a built-in name, or a factory that is not callable.
    """
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_.\-]{1,64}", name):
        raise ValueError(f"name must be 1 to 64 letters, digits, '_', '-' or '.'; got {name!r}"[:120])
    if name.lower() in _BUILT_IN:
        raise ValueError(f"name {name!r} is (or differs only in case from) a built-in game; choose another name")
    if not callable(factory):
        raise ValueError(f"factory must be a function (**params) -> game; got {type(factory).__name__}")
    _FACTORIES[name] = factory


def registered() -> tuple[str, ...]:
    """The ids :func:`make` takes, sorted."""
    return tuple(sorted(_FACTORIES))


def parameters(name: str) -> tuple[str, ...] | None:
    """The keyword parameters the factory of game ``name`` takes (``None``
    when its signature cannot be read).

    Raises:
      ValueError: an unknown name.
    """
    check_choice("game", name, registered())
    try:
        return tuple(p.name for p in inspect.signature(_FACTORIES[name]).parameters.values()
                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
    except (TypeError, ValueError):
        return None


def _parameters(name: str) -> str:
    """The keyword parameters game ``name`` takes, for a message."""
    names = parameters(name)
    if names is None:
        return "other parameters"
    return f"the parameters {', '.join(names)}" if names else "no parameters"


def make(name: str, /, **params: Any):
    """The game ``name`` with ``params`` (``make("connect4", rows=6, cols=7,
    connect=4)``, ``make("tictactoe")``, a registered game).

    Raises:
      ValueError: an unknown name (naming the registered ones), parameters
        the game's factory does not take (naming those it takes) or refuses,
        or a factory that returns something whose ``name`` is not ``name``.
    """
    try:
        check_choice("game", name, registered())
    except ValueError as e:
        raise ValueError(f"{e} (c4jax.register adds your own)") from None
    factory = _FACTORIES[name]
    try:
        inspect.signature(factory).bind(**params)
    except TypeError:
        raise ValueError(f"game {name!r} takes {_parameters(name)}; got {sorted(params)}") from None
    except ValueError:  # no signature to check (a builtin): the call decides
        pass
    game = factory(**params)
    if getattr(game, "name", None) != name or not callable(getattr(game, "env_reset", None)):
        raise ValueError(f"the factory of game {name!r} returned {game!r}"[:120]
                         + f", not a game named {name!r} (a c4jax.games.env.Game)")
    return game


def spec(game) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """``(id, params)``: ``game.name`` and its ``params`` as sorted ``(key,
    value)`` pairs, such that ``make(id, **dict(params)) == game`` once the
    id is registered (a game not registered yet is named all the same; its
    records are read back after :func:`register`).

    Raises:
      ValueError: ``game.name`` is not a str, a parameter is not a plain
        JSON value, or the name is registered and ``make`` does not rebuild
        ``game`` from its params.
    """
    name = getattr(game, "name", None)
    if not isinstance(name, str):
        raise ValueError(f"a game's name must be a str; got {name!r} for {game!r}"[:160])
    params = tuple(sorted(dict(getattr(game, "params", None) or {}).items()))
    for key, value in params:
        if not isinstance(key, str) or not (isinstance(value, (str, int, float, bool)) or value is None):
            raise ValueError(f"a game's params must map names to plain values (str, int, float, bool, "
                             f"None) for its records; got {key!r}: {value!r} in {game!r}"[:200])
    if name in _FACTORIES and make(name, **dict(params)) != game:
        raise ValueError(f"make({name!r}, **{dict(params)!r}) does not rebuild {game!r}: its factory and "
                         "its params disagree")
    return name, params
