"""Start-up and first-answer times of whole processes: what a user waits for.

Every row is a fresh Python process, timed from its start to its exit
(``--repeats`` runs, default 3; the median), in one run, next to ``python
-c "import jax"`` (JAX's own start):

* ``c4jax --help``;
* ``c4jax analyze 4453 -n 1000 --json``, cold (``--no-cache``) and warm (a
  persistent compilation cache that a first, untimed run filled);
* ``c4jax arena mcts:200 random --games 10``, cold;
* ``run_mcts``'s default search compiled in a fresh process: the first call
  minus a later call, at batch 1 x 1,000 and batch 1,024 x 200 simulations.

The targets are printed with the table (PASS/FAIL).

Run:  python benchmarks/startup.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CLI = [sys.executable, "-m", "c4jax.cli"]

_COMPILE = r"""
import sys, time
import c4jax, jax, jax.numpy as jnp
batch, n = int(sys.argv[1]), int(sys.argv[2])
env = c4jax.connect4.env_reset()
if batch > 1:
    env = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), env)
times = []
for i in range(3):
    t = time.perf_counter()
    c4jax.run_mcts(jax.random.key(i), env, n).action.block_until_ready()
    times.append(time.perf_counter() - t)
print(times[0] - min(times[1:]))
"""


def wall(cmd: list[str], env: dict) -> float:
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per row (median); default 3")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    from rich.console import Console
    from rich.table import Table

    log = Console(stderr=True).log
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "COLUMNS": "120"}
    warm_dir = tempfile.mkdtemp(prefix="c4jax-startup-cache-")
    rows = {
        'python -c "import jax"': ([sys.executable, "-c", "import jax"], env),
        "c4jax --help": (CLI + ["--help"], env),
        "c4jax analyze --help": (CLI + ["analyze", "--help"], env),
        "c4jax analyze 4453 -n 1000 --json, cold": (CLI + ["analyze", "4453", "-n", "1000", "--json", "--no-cache"], env),
        "c4jax analyze 4453 -n 1000 --json, warm": (
            CLI + ["analyze", "4453", "-n", "1000", "--json", "--cache-dir", warm_dir], env),
        "c4jax arena mcts:200 random --games 10, cold": (
            CLI + ["arena", "mcts:200", "random", "--games", "10", "--no-cache"], env),
    }
    wall(rows["c4jax analyze 4453 -n 1000 --json, warm"][0], env)  # fills the warm cache
    times: dict[str, list[float]] = {name: [] for name in rows}
    compiles: dict[str, list[float]] = {"run_mcts compile, batch 1 x 1000": [], "run_mcts compile, batch 1024 x 200": []}
    for r in range(args.repeats):
        for name, (cmd, e) in rows.items():
            times[name].append(wall(cmd, e))
        for name, (b, n) in zip(compiles, ((1, 1000), (1024, 200))):
            out = subprocess.run([sys.executable, "-c", _COMPILE, str(b), str(n)], env=env, capture_output=True,
                                 text=True, check=True)
            compiles[name].append(float(out.stdout.strip().splitlines()[-1]))
        log(f"round {r + 1}/{args.repeats} done")
    med = {name: statistics.median(v) for name, v in {**times, **compiles}.items()}
    table = Table(title=f"Whole processes: median of {args.repeats} runs (seconds)")
    for col in ("what", "median s", "min s", "max s"):
        table.add_column(col, justify="left" if col == "what" else "right")
    for name, v in {**times, **compiles}.items():
        table.add_row(name, f"{med[name]:.2f}", f"{min(v):.2f}", f"{max(v):.2f}")
    jax_s = med['python -c "import jax"']
    targets = [
        ("c4jax --help < 0.6 s", med["c4jax --help"] < 0.6),
        ("analyze, cold <= import jax + 4 s", med["c4jax analyze 4453 -n 1000 --json, cold"] <= jax_s + 4),
        ("analyze, warm <= import jax + 1.5 s", med["c4jax analyze 4453 -n 1000 --json, warm"] <= jax_s + 1.5),
        ("arena, cold < 10 s", med["c4jax arena mcts:200 random --games 10, cold"] < 10),
        ("run_mcts compile at batch 1 <= 3 s", med["run_mcts compile, batch 1 x 1000"] <= 3),
        ("run_mcts compile at batch 1024 <= 4 s", med["run_mcts compile, batch 1024 x 200"] <= 4),
    ]
    out = Console(width=120)
    out.print(table)
    tt = Table(title="Targets")
    tt.add_column("target")
    tt.add_column("result")
    for name, ok in targets:
        tt.add_row(name, "[green]PASS[/green]" if ok else "[red]FAIL[/red]")
    out.print(tt)
    print(json.dumps({"median_s": {k: round(v, 3) for k, v in med.items()},
                      "targets": {n: ("pass" if ok else "fail") for n, ok in targets}, "cpus": os.cpu_count()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
