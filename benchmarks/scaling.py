"""Search cost against tree size: is a simulation's cost flat from 250 to 64,000 simulations?

Connect 4 (7x6), empty board, ``c4jax.run_mcts`` with its defaults (PUCT,
heuristic prior and rollouts, first-play urgency, the solver, one lane), called
through ``jax.jit`` with a new key per call, next to OpenSpiel's C++
``MCTSBot`` (UCT c = 2, one random rollout per leaf, ``solve=False``, one
thread) at the same simulation counts, all in the same run:

* batch 1 at 250, 1,000, 4,000, 16,000 and 64,000 simulations, and batch 64
  at 200, 800 and 3,200 simulations: ms per move (one call searches every
  game of the batch once), µs per simulation (ms per move / batch /
  simulations), compile time (lower + compile, apart from the timed calls) and
  the peak resident memory of the process that ran it;
* ``c4jax.get_subtree`` (jitted) on trees of capacity 2,002 and 32,002 at
  batch 1 and 64;
* with ``--baseline REV``: the same searches with the c4jax of git revision
  ``REV`` (e.g. the code before a change), in the same run.

Method: every measurement runs in its own worker process (so that its peak
RSS is its own), started one after another so that compile times are not
measured under each other's load; each worker compiles, warms up twice and
then waits.  Then the measurements are timed round-robin, ``--repeats``
rounds (default 5), each call ended by ``block_until_ready``; the figure is
the median.  OpenSpiel runs ``max(1, 4000 // sims)`` steps per round (all
enter the median).

Run:  python benchmarks/scaling.py [--repeats 5] [--baseline REV] [--quick]
      [--json results.jsonl]
(``--quick``: small shapes and 2 rounds, a smoke run whose figures mean little.)

Targets (issue 8), checked on the full run and printed at the end:
batch 1: µs/sim at 16,000 and at 64,000 at most 1.3 x that at 1,000;
batch 64: µs/sim at 3,200 at most 1.3 x that at 200; a 16,000-simulation
search at most 5 x OpenSpiel's in the same run; 1,000 simulations at batch 1
not slower than ``--baseline``; 64,000 simulations in under 1 GB of RSS;
every compile under 10 s.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve()
REPO = HERE.parent.parent


# ---------------------------------------------------------------------------
# Worker side: one measurement per process, driven over stdin/stdout.


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def _worker_search(batch: int, sims: int):
    import jax
    import jax.numpy as jnp

    import c4jax
    from c4jax.games import connect4

    envs = jax.tree.map(lambda x: jnp.stack([x] * batch), connect4.env_reset())
    fn = jax.jit(lambda k, e: c4jax.run_mcts(k, e, sims).visit_counts)
    t = time.perf_counter()
    compiled = fn.lower(jax.random.key(0), envs).compile()
    compile_s = time.perf_counter() - t
    for i in range(2):
        compiled(jax.random.key(10_000 + i), envs).block_until_ready()
    counter = iter(range(1, 1 << 30))

    def run():
        key = jax.random.key(next(counter))
        t = time.perf_counter()
        visits = compiled(key, envs).block_until_ready()
        dt = time.perf_counter() - t
        assert int(visits.sum()) == batch * sims, "every simulation reaches the root's children"
        return [dt]

    return compile_s, run


def _worker_subtree(batch: int, capacity: int):
    import jax
    import jax.numpy as jnp

    import c4jax
    from c4jax.games import connect4

    envs = jax.tree.map(lambda x: jnp.stack([x] * batch), connect4.env_reset())
    sims = min((capacity - 2) // 2, 64_000 // batch)
    out = jax.jit(lambda k, e: c4jax.run_mcts(k, e, sims, capacity=capacity))(jax.random.key(0), envs)
    tree, action = out.search_tree, out.action
    tree.node_visits.block_until_ready()
    fn = jax.jit(c4jax.get_subtree)
    t = time.perf_counter()
    compiled = fn.lower(tree, action).compile()
    compile_s = time.perf_counter() - t
    for _ in range(2):
        compiled(tree, action).node_visits.block_until_ready()

    def run():
        t = time.perf_counter()
        compiled(tree, action).node_visits.block_until_ready()
        return [time.perf_counter() - t]

    return compile_s, run


def _worker_openspiel(sims: int):
    import pyspiel

    game = pyspiel.load_game("connect_four")
    bot = pyspiel.MCTSBot(
        game,
        pyspiel.RandomRolloutEvaluator(1, 1),
        2.0,  # uct_c
        sims,  # max_simulations
        4000,  # max_memory_mb
        False,  # solve
        1,  # seed
        False,  # verbose
    )
    state = game.new_initial_state()
    bot.step(state)
    steps = max(1, 4000 // sims)

    def run():
        times = []
        for _ in range(steps):
            t = time.perf_counter()
            bot.step(state)
            times.append(time.perf_counter() - t)
        return times

    return 0.0, run


def worker(kind: str, a: int, b: int) -> int:
    if kind == "search":
        compile_s, run = _worker_search(a, b)
    elif kind == "subtree":
        compile_s, run = _worker_subtree(a, b)
    else:
        compile_s, run = _worker_openspiel(b)
    print(json.dumps({"ready": True, "compile_s": compile_s}), flush=True)
    for line in sys.stdin:
        if line.strip() == "run":
            print(json.dumps({"times": run()}), flush=True)
        else:
            break
    print(json.dumps({"peak_rss_mb": _peak_rss_mb()}), flush=True)
    return 0


# ---------------------------------------------------------------------------
# Driver side.


class Worker:
    """A measurement in its own process: ``script --worker KIND A B`` with
    ``src`` first on ``PYTHONPATH`` (the c4jax to time); it answers ``run``
    with ``{"times": [...]}`` (also used by ``boards.py``)."""

    def __init__(self, label: str, kind: str, batch: int, size: int, code: str, src: pathlib.Path,
                 script: pathlib.Path = HERE):
        self.label, self.kind, self.batch, self.size, self.code = label, kind, batch, size, code
        self.times: list = []
        env = dict(os.environ, PYTHONPATH=str(src) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, str(script), "--worker", kind, str(batch), str(size)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=tempfile.gettempdir(),
        )
        self.compile_s = self._read()["compile_s"]
        self.peak_rss_mb = None

    def _read(self) -> dict:
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"worker {self.label} died (exit {self.proc.wait()})")
            if line.startswith("{"):
                return json.loads(line)

    def run(self) -> None:
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        self.times += self._read()["times"]

    def close(self) -> None:
        self.proc.stdin.write("quit\n")
        self.proc.stdin.flush()
        self.peak_rss_mb = self._read()["peak_rss_mb"]
        self.proc.wait()

    @property
    def median_s(self) -> float:
        return statistics.median(self.times)


def run_rounds(workers: list[Worker], repeats: int) -> None:
    """Times every worker once per round, round-robin, then closes them."""
    for r in range(repeats):
        for w in workers:
            w.run()
        print(f"round {r + 1}/{repeats} done", file=sys.stderr, flush=True)
    for w in workers:
        w.close()


def _baseline_src(rev: str) -> pathlib.Path:
    out = pathlib.Path(tempfile.mkdtemp(prefix="c4jax-baseline-"))
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "src"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out / "src"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=5, help="timed rounds (default 5)")
    p.add_argument("--baseline", metavar="REV", help="also time the c4jax of this git revision")
    p.add_argument("--quick", action="store_true", help="small shapes, 2 rounds (smoke run)")
    p.add_argument("--json", metavar="FILE", help="append one JSON line per measurement")
    p.add_argument("--no-openspiel", action="store_true", help="skip OpenSpiel (pyspiel not installed)")
    p.add_argument("--worker", nargs=3, metavar=("KIND", "A", "B"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        kind, a, b = args.worker
        return worker(kind, int(a), int(b))
    if args.repeats < 1:
        p.error("--repeats must be >= 1")

    batch1 = [250, 1000, 4000, 16000, 64000]
    batch64 = [200, 800, 3200]
    subtree = [2002, 32002]
    repeats = args.repeats
    if args.quick:
        batch1, batch64, subtree, repeats = [250, 1000], [200], [2002], 2
    src = REPO / "src"
    codes = [("c4jax", src)]
    if args.baseline:
        codes.append((f"c4jax@{args.baseline}", _baseline_src(args.baseline)))

    import jax  # noqa: F401  (versions only; the workers do the work)

    info = {
        "python": platform.python_version(),
        "jax": jax.__version__,
        "backend": jax.default_backend(),
        "cpus": os.cpu_count(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(info), flush=True)
    specs = []
    for code, path in codes:
        specs += [(f"{code}, batch 1 x {n} sims", "search", 1, n, code, path) for n in batch1]
        specs += [(f"{code}, batch 64 x {n} sims", "search", 64, n, code, path) for n in batch64]
    specs += [(f"get_subtree, batch {b}, capacity {c}", "subtree", b, c, "c4jax", src)
              for c in subtree for b in (1, 64)]
    if not args.no_openspiel:
        specs += [(f"OpenSpiel C++ MCTSBot, {n} sims", "openspiel", 1, n, "openspiel", src)
                  for n in sorted(set(batch1 + batch64))]
    workers = []
    for spec in specs:
        t = time.perf_counter()
        workers.append(Worker(*spec))
        print(f"started {spec[0]} ({time.perf_counter() - t:.1f} s)", file=sys.stderr, flush=True)
    run_rounds(workers, repeats)
    info["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps({"loadavg_end": info["loadavg_end"]}), flush=True)

    openspiel = {w.size: w.median_s for w in workers if w.kind == "openspiel"}
    rows = []
    for w in workers:
        row = {"measurement": w.label, "kind": w.kind, "code": w.code, "batch": w.batch,
               "size": w.size, "median_ms": w.median_s * 1e3, "compile_s": w.compile_s,
               "peak_rss_mb": w.peak_rss_mb, "n_times": len(w.times)}
        if w.kind in ("search", "openspiel"):
            row["us_per_sim"] = w.median_s / (w.batch * w.size) * 1e6
            if w.kind == "search" and w.size in openspiel:
                # Time per simulation against OpenSpiel's at the same count.
                row["per_sim_vs_openspiel"] = row["us_per_sim"] / (openspiel[w.size] / w.size * 1e6)
                row["per_move_vs_openspiel"] = w.median_s / openspiel[w.size]
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "a") as f:
            for row in rows:
                f.write(json.dumps(dict(row, **info)) + "\n")

    print()
    print("| measurement | ms/move | µs/sim | compile s | peak RSS MB | ms/move vs OpenSpiel |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in rows:
        if row["kind"] == "subtree":
            continue
        ratio = row.get("per_move_vs_openspiel")
        print(f"| {row['measurement']} | {row['median_ms']:,.1f} | {row['us_per_sim']:.2f} | "
              f"{row['compile_s']:.2f} | {row['peak_rss_mb']:,.0f} | "
              f"{'-' if ratio is None else f'{ratio:.2f}'} |")
    print()
    print("| get_subtree | ms | compile s |")
    print("|---|---:|---:|")
    for row in rows:
        if row["kind"] == "subtree":
            print(f"| batch {row['batch']}, capacity {row['size']:,} | {row['median_ms']:.2f} | "
                  f"{row['compile_s']:.2f} |")

    def us(code, batch, n):
        for row in rows:
            if row["kind"] == "search" and row["code"] == code and row["batch"] == batch and row["size"] == n:
                return row["us_per_sim"]
        return None

    checks = []
    if not args.quick:
        for n in (16000, 64000):
            ratio = us("c4jax", 1, n) / us("c4jax", 1, 1000)
            checks.append((f"batch 1: us/sim at {n} / at 1000 <= 1.3", f"{ratio:.2f}", ratio <= 1.3))
        ratio = us("c4jax", 64, 3200) / us("c4jax", 64, 200)
        checks.append(("batch 64: us/sim at 3200 / at 200 <= 1.3", f"{ratio:.2f}", ratio <= 1.3))
        if openspiel:
            r16 = next(r["per_move_vs_openspiel"] for r in rows
                       if r["code"] == "c4jax" and r["kind"] == "search" and r["batch"] == 1 and r["size"] == 16000)
            checks.append(("16,000 sims, batch 1: c4jax / OpenSpiel <= 5", f"{r16:.2f}", r16 <= 5))
        if args.baseline:
            ratio = us("c4jax", 1, 1000) / us(f"c4jax@{args.baseline}", 1, 1000)
            checks.append((f"1,000 sims, batch 1: c4jax / c4jax@{args.baseline} <= 1",
                           f"{ratio:.2f}", ratio <= 1.0))
        rss = next(r["peak_rss_mb"] for r in rows
                   if r["code"] == "c4jax" and r["kind"] == "search" and r["size"] == 64000)
        checks.append(("64,000 sims, batch 1: peak RSS < 1 GB", f"{rss:,.0f} MB", rss < 1000))
        worst = max(r["compile_s"] for r in rows if r["code"] == "c4jax" and r["kind"] != "openspiel")
        checks.append(("every c4jax compile < 10 s", f"{worst:.2f} s", worst < 10))
        print()
        print("| target | measured | result |")
        print("|---|---|---|")
        for name, value, ok in checks:
            print(f"| {name} | {value} | {'PASS' if ok else 'FAIL'} |")
    print(f"\nload average: start {info['loadavg_start']}, end {info['loadavg_end']}")
    return 0 if all(ok for _, _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
