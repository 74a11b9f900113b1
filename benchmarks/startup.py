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

The targets are printed with the table (PASS/FAIL).  ``--baseline REV``
also times the c4jax of git revision ``REV`` (its ``src`` on
``PYTHONPATH``), every row alternating with today's in the same rounds.

Run:  python benchmarks/startup.py [--repeats 3] [--baseline REV]
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
import time

CLI = [sys.executable, "-m", "c4jax.cli"]
REPO = pathlib.Path(__file__).resolve().parents[1]

_COMPILE = r"""
import sys, time
import c4jax, jax, jax.numpy as jnp
batch, n = int(sys.argv[1]), int(sys.argv[2])
env = c4jax.games.connect4.env_reset()
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


def _baseline_src(rev: str) -> pathlib.Path:
    out = pathlib.Path(tempfile.mkdtemp(prefix="c4jax-baseline-"))
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "src"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out / "src"


def _rows(env: dict) -> tuple[dict, str]:
    """The timed commands with ``env``, and the warm cache folder of the warm row."""
    warm_dir = tempfile.mkdtemp(prefix="c4jax-startup-cache-")
    return {
        'python -c "import jax"': [sys.executable, "-c", "import jax"],
        "c4jax --help": CLI + ["--help"],
        "c4jax analyze --help": CLI + ["analyze", "--help"],
        "c4jax analyze 4453 -n 1000 --json, cold": CLI + ["analyze", "4453", "-n", "1000", "--json", "--no-cache"],
        "c4jax analyze 4453 -n 1000 --json, warm": CLI + ["analyze", "4453", "-n", "1000", "--json",
                                                          "--cache-dir", warm_dir],
        "c4jax arena mcts:200 random --games 10, cold": CLI + ["arena", "mcts:200", "random", "--games", "10",
                                                               "--no-cache"],
    }, warm_dir


COMPILES = {"run_mcts compile, batch 1 x 1000": (1, 1000), "run_mcts compile, batch 1024 x 200": (1024, 200)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per row (median); default 3")
    parser.add_argument("--baseline", metavar="REV", help="also time the c4jax of this git revision")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    from rich.console import Console
    from rich.table import Table

    log = Console(stderr=True).log
    base_env = {**os.environ, "PYTHONWARNINGS": "ignore", "COLUMNS": "120"}
    codes = {"c4jax": base_env}
    if args.baseline:
        src = _baseline_src(args.baseline)
        codes[f"c4jax@{args.baseline}"] = {**base_env, "PYTHONPATH": os.pathsep.join(
            [str(src)] + ([base_env["PYTHONPATH"]] if base_env.get("PYTHONPATH") else []))}
    rows = {}
    for code, env in codes.items():
        rows[code], _ = _rows(env)
        wall(rows[code]["c4jax analyze 4453 -n 1000 --json, warm"], env)  # fills the warm cache
    names = list(rows["c4jax"]) + list(COMPILES)
    times = {(code, name): [] for code in codes for name in names}
    for r in range(args.repeats):
        for name in names:
            for code, env in codes.items():
                if name in COMPILES:
                    out = subprocess.run([sys.executable, "-c", _COMPILE, *map(str, COMPILES[name])], env=env,
                                         capture_output=True, text=True, check=True)
                    times[code, name].append(float(out.stdout.strip().splitlines()[-1]))
                else:
                    times[code, name].append(wall(rows[code][name], env))
        log(f"round {r + 1}/{args.repeats} done")
    med = {key: statistics.median(v) for key, v in times.items()}
    table = Table(title=f"Whole processes: median of {args.repeats} runs (seconds)")
    table.add_column("what")
    for code in codes:
        table.add_column(f"{code} median s" if len(codes) > 1 else "median s", justify="right")
    table.add_column("min s", justify="right")
    table.add_column("max s", justify="right")
    for name in names:
        v = times["c4jax", name]
        table.add_row(name, *(f"{med[code, name]:.2f}" for code in codes), f"{min(v):.2f}", f"{max(v):.2f}")
    now = {name: med["c4jax", name] for name in names}
    jax_s = now['python -c "import jax"']
    targets = [
        ("c4jax --help < 0.6 s", now["c4jax --help"] < 0.6),
        ("analyze, cold <= import jax + 4 s", now["c4jax analyze 4453 -n 1000 --json, cold"] <= jax_s + 4),
        ("analyze, warm <= import jax + 1.5 s", now["c4jax analyze 4453 -n 1000 --json, warm"] <= jax_s + 1.5),
        ("arena, cold < 10 s", now["c4jax arena mcts:200 random --games 10, cold"] < 10),
        ("run_mcts compile at batch 1 <= 3 s", now["run_mcts compile, batch 1 x 1000"] <= 3),
        ("run_mcts compile at batch 1024 <= 4 s", now["run_mcts compile, batch 1024 x 200"] <= 4),
    ]
    out = Console(width=120)
    out.print(table)
    if len(codes) > 1:
        out.print("min s and max s: of c4jax (today's code).")
    tt = Table(title="Targets")
    tt.add_column("target")
    tt.add_column("result")
    for name, ok in targets:
        tt.add_row(name, "[green]PASS[/green]" if ok else "[red]FAIL[/red]")
    out.print(tt)
    print(json.dumps({"median_s": {code: {name: round(med[code, name], 3) for name in names} for code in codes},
                      "targets": {n: ("pass" if ok else "fail") for n, ok in targets}, "cpus": os.cpu_count()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
