"""XLA kernels run per simulation: a cost figure that machine noise cannot move.

On the CPU a simulation's cost is mostly the launch overhead of many small XLA
kernels ("thunks"), so their number per simulation is a deterministic proxy
for speed on a shared, noisy machine (timings: benchmarks/scaling.py).  The
script runs one jitted search (Connect 4, empty board) under
``jax.profiler.trace`` and counts the kernels XLA executed, divided by the
number of simulations.

The profiler keeps a bounded number of events (about 500,000 were seen
here): a run whose count comes near that is refused rather than reported low,
so keep ``--simulations`` at about 1,000 or below.

Run:  python benchmarks/kernels_per_simulation.py [--simulations 500]
      [--option selection=uct --option solver=False ...]
"""

from __future__ import annotations

import argparse
import glob
import gzip
import json
import sys
import tempfile

import jax

import c4jax
from c4jax import connect4


def _value(text: str):
    if text in ("True", "False"):
        return text == "True"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def kernels_per_simulation(simulations: int, **options) -> float:
    env = connect4.env_reset()
    fn = jax.jit(lambda k, e: c4jax.run_mcts(k, e, simulations, **options).visit_counts)
    fn(jax.random.key(0), env).block_until_ready()
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d, create_perfetto_trace=True):
            fn(jax.random.key(1), env).block_until_ready()
        (path,) = glob.glob(f"{d}/**/*.trace.json.gz", recursive=True)
        events = json.load(gzip.open(path))
    events = events["traceEvents"] if isinstance(events, dict) else events
    kernels = sum(
        1 for e in events
        if e.get("ph") == "X" and not e["name"].startswith(("$", "end:", "ThunkExecutor"))
    )
    if kernels > 450_000:
        raise RuntimeError(
            f"{kernels} kernel events: near the profiler's event limit, the count would be "
            "truncated; use fewer simulations"
        )
    return kernels / simulations


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--simulations", type=int, default=500)
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="a run_mcts option, e.g. selection=uct (repeatable)")
    args = p.parse_args(argv)
    options = {}
    for item in args.option:
        name, sep, value = item.partition("=")
        if not sep:
            p.error(f"--option takes NAME=VALUE; got {item!r}")
        options[name] = _value(value)
    k = kernels_per_simulation(args.simulations, **options)
    print(json.dumps({"simulations": args.simulations, "options": options, "kernels_per_simulation": round(k, 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
