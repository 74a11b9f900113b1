"""``python -m c4jax`` and the ``c4jax`` console script: :func:`c4jax.cli.run`,
with Ctrl-C held from this module's first call: an interrupt that comes while
the command's modules are imported is recorded (``_hold.held``) and
:func:`c4jax.cli.main` ends the command with it (exit status 130, one line);
Python's own handler would print a traceback from inside an import.  This
module imports nothing but :mod:`signal` before the hold is on."""

import signal


def _hold(signum, frame) -> None:
    _hold.held.append(signum)


_hold.held = []


def run() -> None:
    """Holds SIGINT (where a handler can be set: the main thread), imports the
    command and runs it."""
    try:
        signal.signal(signal.SIGINT, _hold)
    except (ValueError, OSError):
        pass
    from c4jax.cli import run as command

    command()


if __name__ == "__main__":
    run()
