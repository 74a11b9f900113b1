"""This checkout's search against another git revision's, in the same run:
``run_mcts`` on empty Connect 4 (7x6) boards at batch 1 x 1,000 and batch
1,024 x 200 simulations, called directly and inside a caller's ``jax.jit``.

The other revision is checked out into a temporary git worktree.  Each
round runs one process per revision (this checkout's first, then the
other's, alternating which goes first), each process calling every shape
once (compile), then ``--calls`` timed calls (``block_until_ready``, a new
key per call) and printing their median; the figure per revision is the
median over ``--rounds`` rounds, and the ratio this / other says which is
faster on the same machine at the same time.

Run:  python benchmarks/against_revision.py --rev HEAD~1 [--rounds 5] [--calls 5] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, sys, time
import c4jax, jax, jax.numpy as jnp
try:
    from c4jax.games import connect4
except ImportError:  # a revision whose games sit at the top of the package
    from c4jax import connect4
shapes, calls = json.loads(sys.argv[1]), int(sys.argv[2])
out = {}
for games, sims in shapes:
    env = jax.tree.map(lambda x: jnp.stack([x] * games), connect4.env_reset()) if games > 1 else connect4.env_reset()
    direct = lambda k: c4jax.run_mcts(k, env, sims)
    jitted = jax.jit(lambda k, e: c4jax.run_mcts(k, e, sims))
    for style, fn in (("direct", direct), ("jit", lambda k: jitted(k, env))):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(jax.random.key(0)))
        first = time.perf_counter() - t0
        times = []
        for i in range(calls):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(jax.random.key(i + 1)))
            times.append(time.perf_counter() - t0)
        median = sorted(times)[len(times) // 2]
        out[f"{style} {games}x{sims}"] = {"sims_per_s": games * sims / median, "first_s": first}
print(json.dumps(out))
"""


def _measure(src: pathlib.Path, shapes, calls: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    r = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(shapes), str(calls)], env=env,
                       capture_output=True, text=True, timeout=3600, cwd=src.parent)
    if r.returncode:
        raise SystemExit(f"the measurement under {src} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", required=True, help="the git revision to compare with (e.g. HEAD~1, main)")
    parser.add_argument("--rounds", type=int, default=5, help="processes per revision; default 5")
    parser.add_argument("--calls", type=int, default=5, help="timed calls per shape in a process; default 5")
    parser.add_argument("--quick", action="store_true", help="smoke run: batch 1 x 100 and 32 x 50, 2 rounds")
    args = parser.parse_args()
    shapes = [(1, 100), (32, 50)] if args.quick else [(1, 1000), (1024, 200)]
    rounds = 2 if args.quick else args.rounds
    commit = subprocess.run(["git", "rev-parse", "--short", args.rev], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="c4jax-rev-") as tmp:
        other = pathlib.Path(tmp) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(other), commit], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            trees = {"this": ROOT / "src", commit: other / "src"}
            results = {name: [] for name in trees}
            for r in range(rounds):
                order = list(trees) if r % 2 == 0 else list(trees)[::-1]
                for name in order:
                    results[name].append(_measure(trees[name], shapes, args.calls))
                    print(f"round {r + 1}/{rounds}: {name} done", file=sys.stderr, flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, capture_output=True)
    print(f"| call | this sims/s | {commit} sims/s | this / {commit} | first call s (this, {commit}) |")
    print("|---|---:|---:|---:|---:|")
    for row in results["this"][0]:
        mine = statistics.median(x[row]["sims_per_s"] for x in results["this"])
        theirs = statistics.median(x[row]["sims_per_s"] for x in results[commit])
        first = (statistics.median(x[row]["first_s"] for x in results["this"]),
                 statistics.median(x[row]["first_s"] for x in results[commit]))
        print(f"| {row} | {mine:,.0f} | {theirs:,.0f} | {mine / theirs:.3f} | {first[0]:.1f}, {first[1]:.1f} |")


if __name__ == "__main__":
    main()
