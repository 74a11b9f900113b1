"""What the heuristic prior costs: run_mcts simulations/s with prior="uniform"
and prior="heuristic", Connect 4 from the empty board, in the same run.

    python benchmarks/prior_cost.py [--simulations 1000] [--batch 1] [--repeats 7]

Warm-up call timed apart (compile), then --repeats rounds timing one call of
each prior in turn (ended by block_until_ready); medians reported.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import numpy as np

import c4jax
from c4jax.games import connect4


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--simulations", type=int, default=1000)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--repeats", type=int, default=7)
    args = p.parse_args(argv)
    env = connect4.env_reset()
    if args.batch > 1:
        env = jax.tree.map(lambda x: np.broadcast_to(x, (args.batch,) + x.shape), env)
    fns, compile_s, times = {}, {}, {}
    for prior in ("uniform", "heuristic"):
        fns[prior] = jax.jit(lambda k, e, prior=prior: c4jax.run_mcts(k, e, args.simulations, prior=prior).action)
        t0 = time.perf_counter()
        fns[prior](jax.random.key(0), env).block_until_ready()
        compile_s[prior] = time.perf_counter() - t0
        times[prior] = []
    # Round-robin, so that a change of load hits both alike.
    for i in range(args.repeats):
        for prior, f in fns.items():
            t0 = time.perf_counter()
            f(jax.random.key(i + 1), env).block_until_ready()
            times[prior].append(time.perf_counter() - t0)
    for prior in fns:
        sims = args.batch * args.simulations / float(np.median(times[prior]))
        print(json.dumps({"prior": prior, "batch": args.batch, "simulations": args.simulations,
                          "sims_per_s": round(sims), "compile_s": round(compile_s[prior], 2)}))

if __name__ == "__main__":
    main()
