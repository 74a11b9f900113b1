"""A long-lived process: 300 searches over mixed budgets, boards and batch
sizes in one Python process, as a notebook or a sweep script does.

Budgets 100..3,000 (a fixed pseudo-random order), boards 6x7, 5x5, 8x10 and
14x20, batches of 1 and 8 games: every search a shape of its own or one
met before.  Every 25 searches it prints the process's memory mappings
(``/proc/self/maps``), its resident memory (RSS), the searches compiled so
far and the seconds spent compiling them (:mod:`c4jax.runtime.compiled`).

Before the compiled-search set (issue 14) each distinct budget compiled a
search and kept it: a process that searched 92 budgets passed Linux's
``vm.max_map_count`` (65,530) and died with a segmentation fault.

Run:  python benchmarks/long_process.py [--searches 300] [--seed 0] [--cache-dir DIR]
Pass: it finishes, with mappings under 30,000 and RSS under 3 GB at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time


def rss_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--searches", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--every", type=int, default=25, help="report every N searches (default 25)")
    p.add_argument("--cache-dir", default=None, help="JAX's persistent compilation cache (default: none)")
    args = p.parse_args(argv)

    import c4jax  # first: it sets XLA's CPU loop flag before JAX starts
    import jax
    from c4jax.runtime import compiled

    if args.cache_dir:
        # As the c4jax command does: a search dropped from the process's set
        # and met again is read from disk instead of compiled again.
        jax.config.update("jax_compilation_cache_dir", args.cache_dir)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)

    rng = random.Random(args.seed)
    boards = [(6, 7), (5, 5), (8, 10), (14, 20)]
    games = {b: c4jax.games.connect4.make(*b) for b in boards}
    t_start = time.perf_counter()
    rows = []
    print(f"{'searches':>8} {'mappings':>9} {'RSS MB':>8} {'compiled':>8} {'compile s':>9} {'elapsed s':>9}  last")
    for i in range(1, args.searches + 1):
        n = rng.randint(100, 3000)
        board = rng.choice(boards)
        batch = rng.choice([1, 8])
        env = games[board].env_reset()
        if batch > 1:
            env = jax.tree.map(lambda x: jax.numpy.broadcast_to(x, (batch,) + x.shape), env)
        out = c4jax.run_mcts(jax.random.key(i), env, n)
        jax.block_until_ready(out.action)
        if i % args.every == 0 or i == args.searches:
            s = compiled.stats()
            row = dict(
                searches=i, mappings=compiled.memory_mappings(), rss_mb=round(rss_mb(), 1),
                compiles=s["compiles"], kept=s["kept"], compile_s=round(s["compile_seconds"], 1),
                elapsed_s=round(time.perf_counter() - t_start, 1),
            )
            rows.append(row)
            print(f"{i:8d} {row['mappings']:9,d} {row['rss_mb']:8.0f} {row['compiles']:8d} "
                  f"{row['compile_s']:9.1f} {row['elapsed_s']:9.1f}  {n} sims, {board[0]}x{board[1]}, batch {batch}",
                  flush=True)
    last = rows[-1]
    ok = last["mappings"] < 30_000 and last["rss_mb"] < 3 * 1024
    print(json.dumps({"long_process": rows[-1], "max_map_count": compiled.max_map_count(), "pass": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
