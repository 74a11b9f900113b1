"""A training run's checkpoint: one file, ``DIR/checkpoint.npz``, written
whole (:func:`c4jax.files.write_whole`) at the end of every iteration, so
a killed run finds the last finished iteration and nothing half-written.

It holds the run's description as JSON (format, game, configuration, seed,
iteration, training seconds, the learning curve, which network is the best)
and its arrays: the candidate network's weights (``net/i``), the best
network's (``best/i``, once one passed the gate), the optimiser's state
(``opt/i``) and the replay buffer (``buffer/*``).  The arrays are the
leaves of pytrees whose structure the configuration rebuilds, checked leaf
by leaf on loading.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from typing import Any

import jax
import numpy as np

from c4jax.files import write_whole

__all__ = ["FORMAT", "CHECKPOINT", "save", "read", "leaves_into", "CheckpointError"]

FORMAT = "c4jax-training-1"
CHECKPOINT = "checkpoint.npz"


class CheckpointError(ValueError):
    """A folder that holds no whole checkpoint, or one that does not fit."""


def save(folder: str, meta: dict[str, Any], trees: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Writes ``DIR/checkpoint.npz`` whole: ``meta`` (JSON), the leaves of
    each pytree of ``trees`` under ``name/i`` and ``arrays`` as they are."""
    entries = {"meta": np.frombuffer(json.dumps(dict(meta, format=FORMAT)).encode(), np.uint8)}
    for name, tree in trees.items():
        if tree is None:
            continue
        for i, leaf in enumerate(jax.tree.leaves(tree)):
            entries[f"{name}/{i}"] = np.asarray(leaf)
    entries.update(arrays)
    buffer = io.BytesIO()
    np.savez(buffer, **entries)
    write_whole(os.path.join(folder, CHECKPOINT), buffer.getvalue())


def read(folder: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(meta, arrays)`` of ``DIR/checkpoint.npz``.

    Raises:
      CheckpointError: no such file, or one that is not a whole checkpoint.
    """
    path = os.path.join(folder, CHECKPOINT)
    if not os.path.isfile(path):
        if not os.path.isdir(folder):
            what = "a file" if os.path.exists(folder) else "no such folder"
            raise CheckpointError(f"{folder} is {what}: give the folder of a training run (holding {CHECKPOINT})")
        raise CheckpointError(f"{folder} holds no training run (no {CHECKPOINT})")
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
        meta = json.loads(arrays.pop("meta").tobytes().decode())
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path} is not a whole training checkpoint ({type(e).__name__}: {e})"[:300]) from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a c4jax training checkpoint (format {FORMAT})")
    return meta, arrays


def leaves_into(like: Any, arrays: dict[str, np.ndarray], name: str, path: str) -> Any:
    """The pytree ``like`` with its leaves replaced by ``arrays[name/i]``,
    each checked for ``like``'s shape and dtype.

    Raises:
      CheckpointError: a leaf missing or of another shape or dtype.
    """
    leaves, treedef = jax.tree.flatten(like)
    out = []
    for i, leaf in enumerate(leaves):
        got = arrays.get(f"{name}/{i}")
        want = np.asarray(leaf)
        if got is None or got.shape != want.shape or got.dtype != want.dtype:
            what = "missing" if got is None else f"{got.dtype}{list(got.shape)}"
            raise CheckpointError(
                f"{path}: {name} weight {i} is {what}, this network's is {want.dtype}{list(want.shape)} "
                "(a checkpoint of another board or network size)")
        out.append(jax.numpy.asarray(got))
    if f"{name}/{len(leaves)}" in arrays:
        raise CheckpointError(f"{path}: {name} has more weights than this network (another network size)")
    return jax.tree.unflatten(treedef, out)
