"""``python -m c4jax``: the ``c4jax`` command (:mod:`c4jax.cli`)."""

import sys

from c4jax.cli import main

if __name__ == "__main__":
    sys.exit(main())
