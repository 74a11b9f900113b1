"""Traced searches kept on disk, so that a warm start neither traces nor compiles.

JAX's persistent compilation cache (:mod:`c4jax.cache`) saves the XLA
compilation of a program, but a new process still traces and lowers the
search before it can look the program up.  While that cache is on
(``jax_compilation_cache_dir`` set), :func:`load_or_export` keeps each search's
lowered program (``jax.export``, serialized) in the folder's
``c4jax-programs`` subfolder, keyed by everything the program depends on: the
source of c4jax, the versions of jax, jaxlib and mctx, the options, the
argument shapes and dtypes, the game (and the source of a game of your own:
:func:`game_digest`), the backend and the JAX settings that change tracing.  A later process loads it (no tracing) and compiles it,
which the compilation cache answers.  A search with your own ``prior_fn`` or
``value_fn`` is not kept (a function cannot be keyed).  An entry that
cannot be read or was written for another key is traced again and
rewritten; entries are written whole (a temporary file and a rename), so
processes may share the folder.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import pathlib
import pickle
from typing import Callable

import jax
from jax import export

from c4jax.files import write_whole
from c4jax.search.layout import search_platform

__all__ = ["directory", "game_digest", "load_or_export"]

SUBFOLDER = "c4jax-programs"


def directory() -> pathlib.Path | None:
    """Where traced searches are kept: a subfolder of JAX's persistent
    compilation cache folder; ``None`` while that cache is off (or without
    the ``flatbuffers`` package, which ``jax.export`` serializes with)."""
    folder = jax.config.jax_compilation_cache_dir
    if not folder or importlib.util.find_spec("flatbuffers") is None:
        return None
    return pathlib.Path(folder) / SUBFOLDER


@functools.lru_cache(maxsize=1)
def _versions() -> str:
    """The package's source digest and the versions its programs depend on."""
    import importlib.metadata

    import mctx

    root = pathlib.Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return "|".join((digest.hexdigest(), jax.__version__, importlib.metadata.version("jaxlib"), mctx.__version__))


@functools.lru_cache(maxsize=None)
def game_digest(cls: type) -> str | None:
    """What a kept search of a game of class ``cls`` depends on besides
    c4jax: ``"c4jax"`` for c4jax's own games (their source is in every key),
    else a digest of the file that defines the class, so that editing a game
    of your own traces its searches again; ``None`` where that file cannot be
    read (a class typed into a notebook): such a game's searches are not
    kept."""
    if cls.__module__.split(".")[0] == "c4jax":
        return "c4jax"
    try:
        return hashlib.sha256(pathlib.Path(inspect.getsourcefile(cls)).read_bytes()).hexdigest()
    except (TypeError, OSError):
        return None


def _key(parts: tuple, leaves: list) -> str:
    config = (jax.config.jax_enable_x64, jax.config.jax_threefry_partitionable, jax.config.jax_default_prng_impl,
              search_platform())
    avals = [(str(getattr(x, "dtype", type(x))), tuple(getattr(x, "shape", ()))) for x in leaves]
    text = repr((_versions(), config, avals, parts))
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def load_or_export(flat_fn: Callable, leaves: list, parts: tuple):
    """``(exported, out_tree)`` for ``flat_fn(*leaves) -> (out_leaves,
    out_tree)`` traced at ``leaves``: loaded from :func:`directory` when an
    entry of this key is there, else traced, exported and written there.

    Args:
      flat_fn: takes the flat argument leaves; returns ``(out_leaves,
        out_tree)``, the outputs flattened.
      leaves: the argument leaves (arrays).
      parts: what else the program depends on (options, game, static
        arguments, the argument tree), as a ``repr``-able tuple.
    """
    folder = directory()
    key = _key(parts, leaves)
    path = None if folder is None else folder / f"{key}.exported"
    if path is not None and path.is_file():
        try:
            stored, blob, out_tree = pickle.loads(path.read_bytes())
            if stored == key:  # an entry written for another program is traced again
                return export.deserialize(blob), out_tree
        except Exception:  # noqa: BLE001 - a damaged or foreign entry: trace again
            pass
    box: dict = {}

    def traced(*xs):
        outs, box["out_tree"] = flat_fn(*xs)
        return outs

    exported = export.export(jax.jit(traced))(*leaves)
    if path is not None:
        try:  # a folder that cannot be written costs only the saving
            path.parent.mkdir(parents=True, exist_ok=True)
            write_whole(path, pickle.dumps((key, exported.serialize(), box["out_tree"])))
        except OSError:
            pass
    return exported, box["out_tree"]
