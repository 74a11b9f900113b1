"""XLA kernels run per simulation: a cost figure that machine noise cannot move.

On the CPU every XLA kernel ("thunk") launched costs a fraction of a
microsecond, and a loop that XLA does not compile whole launches its body's
kernels on every iteration; with c4jax's loop threshold the whole loop over
simulations is one kernel, so the count per simulation is near 0 and any
growth of it is a regression.  The script runs one jitted search (Connect 4,
empty board; ``--batch`` games on one CPU device, ``--block`` of them at
once) under ``jax.profiler.trace`` and counts the kernels XLA executed,
divided by the number of simulations.  ``--top K`` also lists the K kernels
with the most exclusive time (a kernel's own time, the kernels nested in it
taken out; a loop compiled into one kernel is one entry), in microseconds per
simulation per game.

The profiler keeps a bounded number of events (about 500,000 were seen
here): a run whose count comes near that is refused rather than reported low,
so keep ``--simulations`` at about 1,000 or below.

Run:  python benchmarks/kernels_per_simulation.py [--simulations 500] [--batch 32] [--block 32] [--top 12]
      [--option selection=uct --option solver=False ...]
"""

from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import re
import sys
import tempfile

import jax
import jax.numpy as jnp

import c4jax
from c4jax.games import connect4


def _value(text: str):
    if text in ("True", "False"):
        return text == "True"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _exclusive_us(kernels: list[dict]) -> collections.Counter:
    """Each kernel name's own time (microseconds): its events' durations less
    those of the events nested in them on the same thread."""
    by_thread = collections.defaultdict(list)
    for e in kernels:
        by_thread[(e.get("pid"), e.get("tid"))].append(e)
    own = collections.Counter()
    for events in by_thread.values():
        events.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        stack: list[dict] = []
        for e in events:
            while stack and stack[-1]["ts"] + stack[-1].get("dur", 0) <= e["ts"]:
                stack.pop()
            if stack:
                own[stack[-1]["name"]] -= e.get("dur", 0)
            own[e["name"]] += e.get("dur", 0)
            stack.append(e)
    return own


def profile(simulations: int, batch: int = 1, **options):
    """``(kernels per simulation, exclusive us per kernel name, calls per
    kernel name, JAX scope per kernel name)`` of one search of ``batch``
    games (1: unbatched)."""
    env = connect4.env_reset()
    if batch > 1:
        env = jax.tree.map(lambda x: jnp.repeat(x[None], batch, 0), env)
    fn = jax.jit(lambda k, e: c4jax.run_mcts(k, e, simulations, **options).visit_counts)
    fn(jax.random.key(0), env).block_until_ready()
    hlo = fn.lower(jax.random.key(0), env).compile().as_text()  # the same program: names its kernels
    with tempfile.TemporaryDirectory() as d:
        with jax.profiler.trace(d, create_perfetto_trace=True):
            fn(jax.random.key(1), env).block_until_ready()
        (path,) = glob.glob(f"{d}/**/*.trace.json.gz", recursive=True)
        events = json.load(gzip.open(path))
    events = events["traceEvents"] if isinstance(events, dict) else events
    kernels = [
        e for e in events
        if e.get("ph") == "X" and not e["name"].startswith(("$", "end:", "ThunkExecutor"))
        and not e["name"].startswith(("PjitFunction", "CommonPjRt"))
    ]
    if len(kernels) > 450_000:
        raise RuntimeError(
            f"{len(kernels)} kernel events: near the profiler's event limit, the count would be "
            "truncated; use fewer simulations"
        )
    return (len(kernels) / simulations, _exclusive_us(kernels), collections.Counter(e["name"] for e in kernels),
            _scopes(hlo))


def _scopes(hlo: str) -> dict[str, str]:
    """Each instruction's JAX scope (its ``op_name``, the ``jit(...)`` prefix
    dropped), by instruction name: what a kernel of that name computes."""
    scopes = {}
    for m in re.finditer(r'%([\w.\-]+) = [^\n]*?op_name="([^"]*)"', hlo):
        scopes[m.group(1)] = m.group(2).split("/", 1)[-1]
    return scopes


def kernels_per_simulation(simulations: int, **options) -> float:
    """XLA kernels run per simulation of one unbatched search."""
    return profile(simulations, **options)[0]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--simulations", type=int, default=500)
    p.add_argument("--batch", type=int, default=1, help="games searched at once (default 1, unbatched)")
    p.add_argument("--block", type=int, default=None,
                   help="games a CPU device searches at once (default: c4jax's, one; --block 32 runs a batch "
                   "vectorised as a GPU does)")
    p.add_argument("--top", type=int, default=0, help="also list the K kernels with the most exclusive time")
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="a run_mcts option, e.g. selection=uct (repeatable)")
    args = p.parse_args(argv)
    options = {}
    for item in args.option:
        name, sep, value = item.partition("=")
        if not sep:
            p.error(f"--option takes NAME=VALUE; got {item!r}")
        options[name] = _value(value)
    if args.block is not None:
        from c4jax.search import programs

        programs.BLOCK = args.block
    k, own, calls, scopes = profile(args.simulations, args.batch, **options)
    result = {"simulations": args.simulations, "batch": args.batch, "block": args.block, "options": options,
              "kernels_per_simulation": round(k, 1)}
    if args.top:
        scale = args.simulations * args.batch
        result["us_per_simulation_per_game"] = round(sum(own.values()) / scale, 3)
        result["top"] = [
            {"kernel": name, "scope": scopes.get(name, "?"), "calls_per_simulation": round(calls[name] / args.simulations, 2),
             "us_per_simulation_per_game": round(us / scale, 3)}
            for name, us in own.most_common(args.top)
        ]
    print(json.dumps(result, indent=1 if args.top else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
