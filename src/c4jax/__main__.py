"""``python -m c4jax``: the ``c4jax`` command (:mod:`c4jax.cli`)."""

from c4jax.cli import run

if __name__ == "__main__":
    run()
