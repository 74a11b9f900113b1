"""A run over several processes (hosts): :func:`initialize_distributed`
starts :func:`jax.distributed.initialize` from arguments or the usual
environment variables, each process then plays its share of the games
(:func:`process_share`) on its own local devices, and the processes agree
(:func:`exchange`) and wait for each other (:func:`wait_for_every_process`)
through the run's coordination service, not through device collectives.
"""

from __future__ import annotations

import os
import re
import socket
import threading
from typing import Callable, Sequence

import jax

from c4jax.validation import env_int

__all__ = ["exchange", "given_process_count", "initialize_distributed", "process_share", "wait_for_every_process"]

# How long a process waits for the others at the end of a run: their shares
# differ by at most one game, but hosts of unequal speed finish apart.
FINISH_TIMEOUT_S = 7 * 24 * 3600


def initialize_distributed(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    on_join: Callable[[str], None] | None = None,
) -> tuple[int, int]:
    """Joins a multi-process run with :func:`jax.distributed.initialize`
    (before anything else uses JAX), or does nothing for one process.

    Each value comes from its argument, else from the environment variable
    ``JAX_COORDINATOR_ADDRESS`` (``host:port`` of process 0),
    ``JAX_NUM_PROCESSES`` or ``JAX_PROCESS_ID``.  With none of them set the
    run is one process, unless a cluster JAX detects by itself (SLURM, Open
    MPI, Cloud TPU) is named by ``JAX_COORDINATOR_ADDRESS=auto``.

    Returns:
      ``(process_index, process_count)``.
    Raises:
      ValueError: some but not all of the three given, a count below 1, a
        process id outside ``0..num_processes - 1``, an address that is
        not ``HOST:PORT``, or a host that does not resolve.
      ConnectionError: process 0 cannot listen on the port, or JAX's
        client fails to join.
    """
    coordinator = coordinator or os.environ.get("JAX_COORDINATOR_ADDRESS") or None
    num_processes = given_process_count(num_processes)
    process_id = process_id if process_id is not None else env_int("JAX_PROCESS_ID")
    if coordinator == "auto":
        jax.distributed.initialize()
        return jax.process_index(), jax.process_count()
    given = [x is not None for x in (coordinator, num_processes, process_id)]
    if not any(given):
        return 0, 1
    if not all(given):
        raise ValueError(
            "a multi-process run needs the coordinator address, the number of processes and this "
            "process's id (--coordinator HOST:PORT --num-processes N --process-id I, or "
            "JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID)"
        )
    if num_processes < 1:
        raise ValueError(f"the number of processes must be >= 1; got {num_processes}")
    if not 0 <= process_id < num_processes:
        raise ValueError(f"the process id must be in 0..{num_processes - 1}; got {process_id}")
    if num_processes == 1:
        return 0, 1
    host, _, port = coordinator.rpartition(":")
    if not host or not re.fullmatch("[0-9]{1,5}", port) or not 1 <= int(port) <= 65535:
        raise ValueError(
            f"the coordinator address must be HOST:PORT with a port in 1..65535 (process 0's host); got {coordinator!r}"
        )
    try:
        socket.getaddrinfo(host[1:-1] if host.startswith("[") else host, int(port))
    except (socket.gaierror, UnicodeError, ValueError):  # ValueError: a NUL in the name
        raise ValueError(f"the coordinator host {host!r} (of {coordinator!r}) cannot be resolved") from None
    if process_id == 0 and not os.environ.get("JAX_COORDINATOR_BIND_ADDRESS"):
        _check_port_free(int(port))
    if on_join is not None:
        on_join(
            f"process {process_id} of {num_processes}: joining the run at {coordinator} (waits for every "
            "process to start, each with its own --process-id)"
        )
    try:
        _interruptible(jax.distributed.initialize, coordinator, num_processes, process_id)
    except jax.errors.JaxRuntimeError as e:
        raise ConnectionError(f"cannot join the run at {coordinator}: {str(e).splitlines()[0]}") from None
    return jax.process_index(), jax.process_count()


def given_process_count(num_processes: int | None) -> int | None:
    """The number of processes this process was started with: ``num_processes``,
    else ``JAX_NUM_PROCESSES``, else ``None``.  Raises ``ValueError`` for a
    ``JAX_NUM_PROCESSES`` that is not ASCII digits."""
    return num_processes if num_processes is not None else env_int("JAX_NUM_PROCESSES")


def _check_port_free(port: int) -> None:
    """Raises ``ConnectionError`` where another program listens on ``port``
    (where process 0's coordinator binds, all addresses): JAX's service
    crashes the process on such a port instead of raising."""
    try:
        if socket.has_dualstack_ipv6():
            probe = socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True)
        else:
            probe = socket.create_server(("", port))
    except OSError as e:
        raise ConnectionError(
            f"process 0 cannot start the run's coordinator on port {port} ({os.strerror(e.errno) if e.errno else e}): "
            "choose another port in --coordinator"
        ) from None
    probe.close()


def _interruptible(fn: Callable, *args):
    """``fn(*args)`` on a thread of its own while this one waits: JAX's
    client blocks in C++ while it waits for the other processes, and Ctrl-C
    (``KeyboardInterrupt``) reaches a thread only between Python steps."""
    done: list = []

    def target():
        try:
            done.append((True, fn(*args)))
        except BaseException as e:  # handed to the waiting thread
            done.append((False, e))

    thread = threading.Thread(target=target, name="c4jax-distributed", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.1)
    ok, value = done[0]
    if not ok:
        raise value
    return value


def process_share(indices: Sequence[int], process_index: int, process_count: int) -> list[int]:
    """The games of ``indices`` that process ``process_index`` of
    ``process_count`` plays: those with ``g % process_count ==
    process_index`` (each game exactly once over all processes, whatever
    each process has already played; shares of ``range(G)`` within one game
    of each other)."""
    return [g for g in indices if g % process_count == process_index]


def _coordination_client():
    """The client of this run's coordination service (the key-value store and
    barriers that :func:`jax.distributed.initialize` starts), from JAX's
    private ``jax._src.distributed``: the one place c4jax reaches it.

    Raises:
      RuntimeError: ``jax.distributed`` is not initialized.
    """
    from jax._src import distributed

    client = distributed.global_state.client
    if client is None:
        raise RuntimeError("jax.distributed is not initialized: no other processes to reach")
    return client


def exchange(name: str, value: str, timeout_s: float = 300.0) -> list[str]:
    """Every process's ``value`` under ``name``, in process order: each
    process writes its own to the coordination service's key-value store and
    reads the others' (no device program, no compilation).  Every process of
    the run must call it with the same ``name``, once.

    Raises:
      RuntimeError: ``jax.distributed`` is not initialized.
      Exception: JAX's error where a process has not written its value
        within ``timeout_s`` or the run's coordination service failed.
    """
    client = _coordination_client()
    client.key_value_set(f"c4jax/{name}/{jax.process_index()}", value)
    return [
        _interruptible(client.blocking_key_value_get, f"c4jax/{name}/{i}", int(timeout_s * 1000))
        for i in range(jax.process_count())
    ]


def wait_for_every_process(name: str, timeout_s: float = FINISH_TIMEOUT_S) -> None:
    """Returns once every process of the run has called it with ``name``
    (a barrier of the coordination service; no device program).

    Raises:
      RuntimeError: ``jax.distributed`` is not initialized.
      Exception: JAX's error where a process does not arrive within
        ``timeout_s`` or has stopped.
    """
    _interruptible(_coordination_client().wait_at_barrier, f"c4jax/{name}", int(timeout_s * 1000))
