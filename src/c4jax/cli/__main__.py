"""``python -m c4jax.cli``: the ``c4jax`` command."""

from c4jax.cli import run

run()
