"""Learning curves of a training run (:func:`c4jax.training.train`), drawn
with matplotlib."""

from __future__ import annotations

import io
from typing import Any, Sequence

from c4jax.files import write_whole

__all__ = ["plot_training"]


def plot_training(curve: Sequence[dict[str, Any]], path: str) -> None:
    """Writes a PNG of ``curve`` (one dict per iteration with ``minutes``,
    ``policy_loss``, ``value_loss``, ``gate_score`` and ``accepted``) to
    ``path``, whole: the losses and the gate's score over training minutes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = [e["minutes"] for e in curve]
    fig, (losses, gate) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    losses.plot(minutes, [e["policy_loss"] for e in curve], label="policy (cross-entropy)")
    losses.plot(minutes, [e["value_loss"] for e in curve], label="value (squared error)")
    losses.set_xlabel("training minutes")
    losses.set_title("losses")
    losses.legend()
    gate.plot(minutes, [e["gate_score"] for e in curve], marker=".", label="candidate's score against the best")
    accepted = [(m, e["gate_score"]) for m, e in zip(minutes, curve, strict=True) if e["accepted"]]
    if accepted:
        gate.scatter(*zip(*accepted), color="tab:green", zorder=3, label="passed: the new best")
    gate.axhline(0.5, color="grey", lw=0.5)
    gate.set_ylim(0, 1)
    gate.set_xlabel("training minutes")
    gate.set_title("gate")
    gate.legend(loc="lower right")
    data = io.BytesIO()
    fig.savefig(data, format="png", dpi=100)
    plt.close(fig)
    write_whole(path, data.getvalue())
