"""``python -m c4jax.cli``: the ``c4jax`` command."""

import sys

from c4jax.cli import main

sys.exit(main())
