"""Files written whole or not at all."""

from __future__ import annotations

import os

__all__ = ["write_whole"]


def write_whole(path, data: bytes | str) -> None:
    """Writes ``data`` (text as UTF-8) to ``path`` through a temporary file
    beside it, flushed to disk and renamed over ``path``: a reader sees the
    old file or the whole new one, never a part.  A path that exists and is
    not a regular file (a device such as ``/dev/null``, a pipe) is written
    directly.

    Raises:
      OSError: the file cannot be written (the temporary file is removed).
    """
    path = os.fspath(path)
    data = data.encode("utf-8") if isinstance(data, str) else data
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "wb") as f:
            f.write(data)
        return
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
