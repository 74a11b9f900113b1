"""JAX's persistent compilation cache for c4jax's programs: compile once per
machine, load on every later start.

``c4jax.enable_compilation_cache()`` switches it on for this process in a
per-user folder (``$C4JAX_CACHE_DIR``, else ``$XDG_CACHE_HOME/c4jax/jax`` or
``~/.cache/c4jax/jax``); the ``c4jax`` command does so unless given
``--no-cache``.  While it is on, c4jax also keeps the traced searches there
(:mod:`c4jax.runtime.compiled`), so a later start skips tracing too.  Without
the call, JAX's own ``JAX_COMPILATION_CACHE_DIR``
environment variable does the same for programs that take over a second to
compile.  Processes may share the folder: JAX writes each entry to a
temporary file and renames it, and a failed read or write costs only a
compilation.
"""

from __future__ import annotations

import os
import pathlib

__all__ = ["default_cache_dir", "enable_compilation_cache"]


def default_cache_dir() -> pathlib.Path | None:
    """The per-user cache folder: ``$C4JAX_CACHE_DIR`` (empty: ``None``, no
    cache), else ``$XDG_CACHE_HOME/c4jax/jax`` (an absolute
    ``XDG_CACHE_HOME`` only, as the XDG specification says), else
    ``~/.cache/c4jax/jax``."""
    env = os.environ.get("C4JAX_CACHE_DIR")
    if env is not None:
        return pathlib.Path(env).expanduser() if env.strip() else None
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "c4jax" / "jax"


def enable_compilation_cache(path: str | os.PathLike | None = None) -> pathlib.Path | None:
    """Switches on JAX's persistent compilation cache in ``path`` (default:
    :func:`default_cache_dir`) for every program compiled from now on,
    however quick to compile.

    Returns:
      The folder used, or ``None`` when ``path`` is ``None`` and
      ``C4JAX_CACHE_DIR`` is empty (no cache).
    Raises:
      OSError: the folder cannot be created or written (nothing is changed).
    """
    folder = pathlib.Path(path).expanduser() if path is not None else default_cache_dir()
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise PermissionError(13, "permission denied", str(folder))
    import jax  # here, not at import: the CLI's --help starts without JAX

    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return folder
