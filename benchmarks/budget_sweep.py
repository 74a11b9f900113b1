"""A sweep over 20 search budgets in one process (issue 14's "before and
after"): ``run_mcts`` on the empty Connect 4 board at 100, 200, ..., 2,000
simulations, as a tutorial's plot of a rate against the budget does.

It counts XLA's backend compiles (JAX's monitoring event
``/jax/core/compile/backend_compile_duration``, every compile of the process:
the searches and their small helpers alike) and the sweep's seconds, cold:
no persistent compilation cache.  Any revision of c4jax runs it, so the code
before a change is measured the same way, in the same session:

    python benchmarks/budget_sweep.py
    git worktree add /tmp/before REV && PYTHONPATH=/tmp/before/src python benchmarks/budget_sweep.py

It prints one JSON line: compiles, compile seconds, total seconds, the c4jax
it imported.
"""

from __future__ import annotations

import argparse
import json
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--budgets", type=int, nargs="+", default=list(range(100, 2001, 100)))
    args = p.parse_args(argv)

    import jax
    import jax.monitoring

    import c4jax
    from c4jax.games import connect4

    compiles = []

    def listen(event: str, seconds: float, **kwargs) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(seconds)

    jax.monitoring.register_event_duration_secs_listener(listen)
    env = connect4.env_reset()
    t0 = time.perf_counter()
    for n in args.budgets:
        c4jax.run_mcts(jax.random.key(0), env, n).action.block_until_ready()
    total = time.perf_counter() - t0
    print(json.dumps({
        "budgets": len(args.budgets), "compiles": len(compiles), "compile_s": round(sum(compiles), 1),
        "total_s": round(total, 1), "c4jax": c4jax.__file__,
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
