"""Throughput against board size: the rules and the search on 6x7 up to 64x64.

For each board (rows x columns, four in a row): 6x7 (the standard game),
14x20, 40x7, 19x15 (the tutorial's boards) and 64x64 (the largest; a column
of over 32 rows is two ``uint32`` words):

* env steps/s: ``jit`` of a ``lax.scan`` of 32 steps of ``game.env_step`` on
  a batch of 1,024 games, uniformly random legal actions
  (``jax.random.categorical`` on the legal action mask), finished games reset
  in place;
* random playouts/s: ``jit(game.rollout)`` on a batch of 1,024 empty boards
  (whole games, uniform random moves);
* search sims/s: ``jit(run_mcts)`` with its defaults from the empty board, at
  batch 1 x 1,000 simulations and batch 64 x 200;
* the compile time of each (lower + compile, apart from the timed calls).

With ``--baseline REV`` the boards that the c4jax of git revision ``REV``
supports (before issue 11: up to 32 rows) are measured with it too, in the
same run, and the ratio new / baseline printed: on 6x7 it says whether the
two-word code of tall boards cost the standard board anything.  Timings on a
shared machine are noisy, so ``--baseline`` also compiles the rules and the
search of each board with both and compares the opcode counts of XLA's
optimised programs: "same" means the same work per call.

Method: one worker process per (code, board), started one after another
(each compiles, then warms every function up twice); then ``--repeats``
rounds (default 5) time every measurement of every worker round-robin, each
call ended by ``block_until_ready`` and run until ``--min-time`` seconds
(default 0.3) have passed; the figure is the median over the rounds.  A new
key on every call.

Run:  python benchmarks/boards.py [--repeats 5] [--baseline REV] [--quick]
      [--json results.jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve()
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

from scaling import Worker, _baseline_src, run_rounds  # noqa: E402

BOARDS = [(6, 7), (14, 20), (40, 7), (19, 15), (64, 64)]
STEP_BATCH, STEP_PLIES, PLAYOUT_BATCH = 1024, 32, 1024
SEARCHES = [(1, 1000), (64, 200)]  # (batch, simulations)
MIN_TIME = 0.3


# ---------------------------------------------------------------------------
# Worker side: every measurement of one board, in one process.


def _build(rows: int, cols: int, quick: bool):
    import jax
    import jax.numpy as jnp

    import c4jax
    from c4jax.games import connect4

    game = connect4.make(rows, cols)  # raises ValueError where this c4jax has no such board
    empty = game.env_reset()

    def batch_of(n):
        return jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), empty)

    step_batch = 64 if quick else STEP_BATCH
    playout_batch = 64 if quick else PLAYOUT_BATCH

    def steps(key, envs):
        def body(envs, k):
            legal = game.legal_action_mask(envs)
            action = jax.random.categorical(k, jnp.where(legal, 0.0, -jnp.inf))
            envs, _, done = game.env_step(envs, action)
            fresh = batch_of(step_batch)
            envs = jax.tree.map(
                lambda x, y: jnp.where(done.reshape(done.shape + (1,) * (x.ndim - 1)), y, x), envs, fresh
            )
            return envs, None

        return jax.lax.scan(body, envs, jax.random.split(key, STEP_PLIES))[0]

    fns = {
        "env steps/s": (jax.jit(steps), lambda k: (k, batch_of(step_batch)), step_batch * STEP_PLIES),
        "random playouts/s": (
            jax.jit(lambda k, e: game.rollout(k, e)), lambda k: (k, batch_of(playout_batch)), playout_batch
        ),
    }
    for batch, sims in SEARCHES:
        sims = sims // 10 if quick else sims
        env = empty if batch == 1 else batch_of(batch)
        fn = jax.jit(lambda k, e, n=sims: c4jax.run_mcts(k, e, n).visit_counts)
        fns[f"search sims/s, batch {batch} x {sims}"] = (fn, lambda k, e=env: (k, e), batch * sims)
    compiled, compile_s = {}, {}
    for name, (fn, args, per_call) in fns.items():
        t = time.perf_counter()
        c = fn.lower(*args(jax.random.key(0))).compile()
        compile_s[name] = time.perf_counter() - t
        for i in range(2):
            jax.block_until_ready(c(*args(jax.random.key(10_000 + i))))
        compiled[name] = (c, args, per_call)
    counter = iter(range(1, 1 << 30))

    def run():
        rates = {}
        for name, (c, args, per_call) in compiled.items():
            calls, t0 = 0, time.perf_counter()
            while True:
                jax.block_until_ready(c(*args(jax.random.key(next(counter)))))
                calls += 1
                elapsed = time.perf_counter() - t0
                if elapsed >= MIN_TIME:
                    break
            rates[name] = calls * per_call / elapsed
        return [rates]

    return compile_s, run


def _program_summary(rows: int, cols: int) -> dict:
    """Per function, the opcode counts of XLA's optimised program (for
    ``--baseline``: the same counts say the same compiled program)."""
    import collections
    import re

    import jax

    import c4jax
    from c4jax.games import connect4

    game = connect4.make(rows, cols)
    env = game.env_reset()
    envs = jax.tree.map(lambda x: jax.numpy.stack([x] * 8), env)
    key = jax.random.key(0)
    fns = {
        "env_step": (game.env_step, (envs, jax.numpy.zeros(8, jax.numpy.int32))),
        "winning_moves": (game.winning_moves, (envs,)),
        "rollout": (game.rollout, (key, env)),
        "heuristic_rollout": (game.heuristic_rollout, (key, env)),
        "run_mcts, batch 1": (lambda k, e: c4jax.run_mcts(k, e, 1000).action, (key, env)),
        "run_mcts, batch 8": (lambda k, e: c4jax.run_mcts(k, e, 200).action, (key, envs)),
    }
    out = {}
    for name, (fn, args) in fns.items():
        text = jax.jit(fn).lower(*args).compile().as_text()
        out[name] = dict(collections.Counter(re.findall(r"= \S+ ([a-z][\w-]*)\(", text)))
    return out


def worker(rows: int, cols: int, quick: bool) -> int:
    try:
        compile_s, run = _build(rows, cols, quick)
    except ValueError as e:  # a baseline without this board size
        print(json.dumps({"ready": True, "compile_s": None, "unsupported": str(e)}), flush=True)
        compile_s, run = None, lambda: []
    else:
        print(json.dumps({"ready": True, "compile_s": compile_s}), flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        print(json.dumps({"times": run()}), flush=True)
    print(json.dumps({"peak_rss_mb": 0.0}), flush=True)
    return 0


# ---------------------------------------------------------------------------
# Driver side.


def main(argv: list[str] | None = None) -> int:
    global MIN_TIME
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=5, help="timed rounds (default 5)")
    p.add_argument("--min-time", type=float, default=MIN_TIME, help="seconds per timed run, at least")
    p.add_argument("--baseline", metavar="REV", help="also time the c4jax of this git revision")
    p.add_argument("--boards", default=",".join(f"{r}x{c}" for r, c in BOARDS),
                   help="comma-separated ROWSxCOLS (default: %(default)s)")
    p.add_argument("--quick", action="store_true", help="small batches and searches, 2 rounds (smoke run)")
    p.add_argument("--json", metavar="FILE", help="append one JSON line per measurement")
    p.add_argument("--worker", nargs=3, metavar=("KIND", "ROWS", "COLS"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    MIN_TIME = args.min_time
    if args.worker:
        kind, rows, cols = args.worker
        if kind == "program":
            print(json.dumps(_program_summary(int(rows), int(cols))))
            return 0
        return worker(int(rows), int(cols), kind == "quick")
    if args.repeats < 1:
        p.error("--repeats must be >= 1")
    try:
        boards = [tuple(int(x) for x in b.split("x")) for b in args.boards.split(",")]
    except ValueError:
        p.error(f"--boards takes ROWSxCOLS,...; got {args.boards!r}")
    repeats = 2 if args.quick else args.repeats
    codes = [("c4jax", REPO / "src")]
    if args.baseline:
        codes.append((f"c4jax@{args.baseline}", _baseline_src(args.baseline)))

    import jax  # noqa: F401  (versions only; the workers do the work)

    info = {"python": platform.python_version(), "jax": jax.__version__, "cpus": os.cpu_count(),
            "loadavg_start": [round(x, 2) for x in os.getloadavg()]}
    print(json.dumps(info), flush=True)
    kind = "quick" if args.quick else "full"
    workers = []
    for code, src in codes:
        for rows, cols in boards:
            t = time.perf_counter()
            w = Worker(f"{code} {rows}x{cols}", kind, rows, cols, code, src, script=HERE)
            print(f"started {w.label} ({time.perf_counter() - t:.1f} s)", file=sys.stderr, flush=True)
            if w.compile_s is None:
                w.close()
                print(f"  {w.label}: not supported by this code, skipped", file=sys.stderr, flush=True)
                continue
            workers.append(w)
    run_rounds(workers, repeats)
    info["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]

    rows = []
    for w in workers:
        for name in w.compile_s:
            rate = statistics.median(t[name] for t in w.times)
            rows.append({"code": w.code, "board": f"{w.batch}x{w.size}", "measurement": name,
                         "per_s": rate, "compile_s": w.compile_s[name], "rounds": len(w.times)})
    for row in rows:
        print(json.dumps(row), flush=True)
    if args.json:
        with open(args.json, "a") as f:
            for row in rows:
                f.write(json.dumps(dict(row, **info)) + "\n")

    base = {(r["board"], r["measurement"]): r["per_s"] for r in rows if r["code"] != "c4jax"}
    print()
    print("| board (rows x cols) | measurement | per second | compile s |"
          + (f" vs c4jax@{args.baseline} |" if args.baseline else ""))
    print("|---|---|---:|---:|" + ("---:|" if args.baseline else ""))
    for row in rows:
        if row["code"] != "c4jax":
            continue
        line = f"| {row['board']} | {row['measurement']} | {row['per_s']:,.0f} | {row['compile_s']:.2f} |"
        if args.baseline:
            b = base.get((row["board"], row["measurement"]))
            line += f" {row['per_s'] / b:.2f} |" if b else " - |"
        print(line)
    print(f"\nload average: start {info['loadavg_start']}, end {info['loadavg_end']}")
    if args.baseline:
        # Timings are noisy; the compiled programs are not.  Same opcode
        # counts in XLA's optimised program = the same work per call.
        print(f"\nXLA's optimised programs, c4jax against c4jax@{args.baseline} (opcode counts):")
        for rows_, cols_ in boards:
            summaries = []
            for code, src in codes:
                env = dict(os.environ, PYTHONPATH=str(src) + os.pathsep + os.environ.get("PYTHONPATH", ""))
                proc = subprocess.run([sys.executable, str(HERE), "--worker", "program", str(rows_), str(cols_)],
                                      capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
                lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                summaries.append(json.loads(lines[-1]) if proc.returncode == 0 and lines else None)
            if summaries[1] is None:
                print(f"  {rows_}x{cols_}: not supported by c4jax@{args.baseline}")
                continue
            for name in summaries[0]:
                a, b = summaries[0][name], summaries[1][name]
                verdict = "same" if a == b else f"differ ({sum(a.values())} vs {sum(b.values())} instructions)"
                print(f"  {rows_}x{cols_} {name}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
