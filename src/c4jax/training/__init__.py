"""AlphaZero-style training of an evaluation network from c4jax's own
self-play (needs the ``[train]`` extra: ``pip install "c4jax[train]"``,
equinox and optax).

* :func:`train`: the loop (:mod:`c4jax.training.loop`), resumable, with its
  checkpoints and learning curve;
* :func:`load`: a run's network as the search takes it,
  ``run_mcts(key, env, n, **load(DIR).search_options())``, on Connect 4 its
  value mixed with a rollout (:func:`default_rollout_weight`) and its prior
  flattened (:func:`default_prior_temperature`);
* :class:`TrainConfig`, :class:`NetConfig`, :func:`default_config`;
* the network (:mod:`c4jax.training.network`) and the replay buffer
  (:mod:`c4jax.training.replay`).
"""

from __future__ import annotations

__all__ = ["train", "load", "TrainConfig", "TrainResult", "Trained", "NetConfig", "default_config",
           "default_rollout_weight", "CONNECT4_ROLLOUT_WEIGHT", "default_prior_temperature",
           "CONNECT4_PRIOR_TEMPERATURE"]

_LAZY = {
    "train": "c4jax.training.loop", "load": "c4jax.training.loop", "TrainConfig": "c4jax.training.loop",
    "TrainResult": "c4jax.training.loop", "Trained": "c4jax.training.loop",
    "default_config": "c4jax.training.loop", "NetConfig": "c4jax.training.network",
    "default_rollout_weight": "c4jax.training.loop", "CONNECT4_ROLLOUT_WEIGHT": "c4jax.training.loop",
    "default_prior_temperature": "c4jax.training.loop", "CONNECT4_PRIOR_TEMPERATURE": "c4jax.training.loop",
}
EXTRA_MISSING = 'c4jax.training needs the [train] extra (equinox and optax): pip install "c4jax[train]"'


def require_extra() -> None:
    """Raises ``ImportError`` naming the ``[train]`` extra unless equinox
    and optax can be imported."""
    import importlib.util

    missing = [m for m in ("equinox", "optax") if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"{EXTRA_MISSING} (missing: {', '.join(missing)})")


def __getattr__(name: str):
    import importlib

    if name not in _LAZY:
        raise AttributeError(f"module 'c4jax.training' has no attribute {name!r}")
    require_extra()
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
