"""c4jax against a perfect player, from the won and drawn positions of
Pascal Pons' Connect 4 test sets (7x6).

For every record of ``c4jax/data/connect4_positions.jsonl`` (or
``--positions``) whose value for the side to move is a win or a draw, and
every time per move (``--times``): c4jax plays the side to move with
``run_mcts_anytime``'s defaults and subtree reuse (the player of
``benchmarks/equal_time.py``), the perfect player the other side, one game
to the end.  A won position is *converted* when c4jax wins it; a drawn one
is *held* when c4jax draws or wins it.  Reported by difficulty and in all,
with the move lists of the positions let go.

The perfect player is Pascal Pons' solver, built from its source by whoever
runs this benchmark (c4jax does not depend on it)::

    git clone https://github.com/PascalPons/connect4 && make -C connect4 c4solver
    python benchmarks/vs_perfect.py --solver connect4/c4solver [--times 0.05,0.2,1]

It runs as one process with ``-a`` (the exact score of every column of each
position it is given); the perfect player plays a best-scored column, ties
broken by a seeded random choice.  Without its opening book it says so on
its standard error (ignored here): the set's positions start at ply 12,
which it solves in milliseconds.  Before the games, the solver's scores of
every starting position are checked against the record's.

Targets (issue's acceptance, at 0.2 s per move): at least 99% of won
positions converted and 97% of drawn positions held.

``--change NAME=VALUE`` (repeatable, JSON values as in
``benchmarks/defaults_per_second.py``) adds a row per change: the defaults
with that one option changed, on the same positions and seeds, so that a
search improvement is measured against the defaults in the same run.

Run:  python benchmarks/vs_perfect.py --solver PATH [--times 0.2] [--change lanes=1] [--json FILE] [--quick]
(``--quick``: the first 12 positions at 0.05 s, a smoke run.)
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import random
import statistics
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

TARGETS = {"win": 0.99, "draw": 0.97}
DIFFICULTIES = ("End-Easy", "Middle-Easy", "Middle-Medium", "Begin-Easy")


class PonsSolver:
    """Pascal Pons' ``c4solver -a`` as one child process: ``scores(moves)``
    gives the exact score of each of the 7 columns (``None``: full)."""

    def __init__(self, path: str):
        self.proc = subprocess.Popen(
            [path, "-a"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, bufsize=1,
        )

    def scores(self, moves: str) -> list[int | None]:
        self.proc.stdin.write(moves + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().split()
        if len(line) != 8 or line[0] != moves:
            raise RuntimeError(f"c4solver answered {line!r} to {moves!r}")
        return [None if s == "-1000" else int(s) for s in line[1:]]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def perfect_move(solver: PonsSolver, moves: str, rng: random.Random) -> int:
    scores = solver.scores(moves)
    best = max(s for s in scores if s is not None)
    return rng.choice([c for c, s in enumerate(scores) if s == best])


def play_position(record: dict, player, solver: PonsSolver, seed: int) -> dict:
    """One game from ``record``'s position: c4jax for the side to move."""
    import jax

    from c4jax.games import connect4

    moves = record["moves"]
    env = connect4.from_moves(moves)
    side = int(env.to_move)
    player.new_game(env, jax.random.fold_in(jax.random.key(seed), record["line"]))
    rng = random.Random(seed * 100_003 + record["line"])
    while not bool(env.done):
        if int(env.to_move) == side:
            action = player.act(env, int(env.ply))
        else:
            action = perfect_move(solver, moves, rng)
        player.observe(action)
        env, _, _ = connect4.env_step(env, action)
        moves += str(action + 1)
    winner = int(env.winner)
    outcome = "draw" if winner < 0 else ("win" if winner == side else "loss")
    return {"moves": record["moves"], "line": record["line"], "value": record["value"],
            "difficulty": record["difficulty"], "outcome": outcome, "game": moves}


def kept(value: str, outcome: str) -> bool:
    return outcome == "win" if value == "win" else outcome in ("win", "draw")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--solver", required=True, help="path to Pascal Pons' c4solver (see above for how to build it)")
    p.add_argument("--times", default="0.2", help="comma-separated seconds per move (default 0.2)")
    p.add_argument("--positions", default=None, help="JSONL of positions (default: c4jax's packaged set)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--change", action="append", default=[], metavar="NAME=VALUE",
                   help="also the defaults with this option changed (repeatable; one row each; JSON values)")
    p.add_argument("--json", metavar="FILE", help="write the results (every game) as JSON")
    p.add_argument("--quick", action="store_true", help="smoke run: 12 positions at 0.05 s")
    args = p.parse_args(argv)
    try:
        times = [float(t) for t in args.times.split(",") if t.strip()]
    except ValueError:
        p.error(f"--times: comma-separated seconds, got {args.times!r}")
    if not times or min(times) <= 0:
        p.error("--times: each must be > 0")
    configs = [("defaults", {})]
    for item in args.change:
        name, sep, value = item.partition("=")
        if not sep:
            p.error(f"--change takes NAME=VALUE; got {item!r}")
        try:
            configs.append((item, {name: json.loads(value)}))
        except json.JSONDecodeError:
            p.error(f"--change {name}: the value must be JSON (quote strings); got {value!r}")
    from c4jax.search.options import options_from_kwargs

    for _, options in configs:  # a bad option fails before any game
        try:
            options_from_kwargs(options)
        except ValueError as e:
            p.error(str(e))
    if not pathlib.Path(args.solver).is_file():
        p.error(f"--solver {args.solver}: no such file (build it as this script's docstring says)")
    if args.json and not pathlib.Path(args.json).resolve().parent.is_dir():
        p.error(f"--json {args.json}: no such folder")

    from importlib.resources import files

    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    import jax

    from equal_time import C4jaxPlayer

    path = args.positions or files("c4jax") / "data" / "connect4_positions.jsonl"
    with open(path) as f:
        records = [r for r in map(json.loads, f) if r["value"] in ("win", "draw")]
    if args.quick:
        records, times = records[:12], [0.05]
    console = Console(width=130)
    try:
        solver = PonsSolver(args.solver)
        bad = [r["moves"] for r in records if solver.scores(r["moves"]) != r["scores"]]
    except (OSError, RuntimeError, ValueError) as e:
        p.error(f"--solver {args.solver}: not Pascal Pons' c4solver ({e})")
    if bad:
        raise SystemExit(f"c4solver's scores differ from the records' on {len(bad)} positions, e.g. {bad[0]!r}")
    console.log(f"c4solver agrees with the records on all {len(records)} starting positions")

    results = {}
    for budget in times:
        for label, options in configs:
            player = C4jaxPlayer(args.seed, budget=budget, **options)
            player.warm_up()
            games = []
            with Progress(console=console, transient=True) as progress:
                task = progress.add_task(f"{label}, {budget:g} s per move", total=len(records))
                for r in records:
                    games.append(play_position(r, player, solver, args.seed))
                    progress.advance(task)
            results[(budget, label)] = {
                "games": games,
                "median_move_s": statistics.median(player.times),
                "mean_move_s": statistics.mean(player.times),
                "median_sims_per_move": statistics.median(player.sims_done),
            }
            console.log(f"{label}, {budget:g} s per move: {len(games)} games, mean move "
                        f"{statistics.mean(player.times):.3f} s, median {statistics.median(player.sims_done):,.0f} "
                        "simulations")
    solver.close()

    table = Table(title=f"c4jax (defaults, subtree reuse) against Pons' solver, from won and drawn positions "
                        f"({jax.devices()[0].device_kind})")
    for col in ("s per move", "search", "difficulty", "won: converted", "drawn: held"):
        table.add_column(col, justify="left" if col in ("difficulty", "search") else "right")
    summary = {}
    for (budget, label), res in results.items():
        by = collections.defaultdict(list)
        for g in res["games"]:
            by[(g["difficulty"], g["value"])].append(kept(g["value"], g["outcome"]))
            by[("all", g["value"])].append(kept(g["value"], g["outcome"]))

        def cell(d, v):
            xs = by.get((d, v), [])
            return f"{sum(xs)}/{len(xs)} ({100 * sum(xs) / len(xs):.1f}%)" if xs else "-"

        for d in [d for d in DIFFICULTIES if (d, "win") in by or (d, "draw") in by] + ["all"]:
            table.add_row(f"{budget:g}", label, d, cell(d, "win"), cell(d, "draw"))
        summary[(budget, label)] = {v: (sum(by[("all", v)]), len(by[("all", v)])) for v in ("win", "draw")}
        summary[(budget, label)]["let_go"] = [g["moves"] for g in res["games"] if not kept(g["value"], g["outcome"])]
    console.print(table)
    for (budget, label), s in summary.items():
        if s["let_go"]:
            console.print(f"{label}, {budget:g} s: positions let go: {', '.join(s['let_go'])}")
    if (0.2, "defaults") in summary and not args.quick:
        for v, target in TARGETS.items():
            k, n = summary[(0.2, "defaults")][v]
            ok = n and k / n >= target
            console.print(f"target, defaults at 0.2 s: {v} positions {'converted' if v == 'win' else 'held'} >= "
                          f"{target:.0%}: {k}/{n} = {100 * k / max(n, 1):.1f}% {'PASS' if ok else 'FAIL'}")
    if args.json:
        out = {f"{b:g} s, {label}": r for (b, label), r in results.items()}
        tmp = pathlib.Path(args.json + ".tmp")
        tmp.write_text(json.dumps({"env": {"jax": jax.__version__, "device": jax.devices()[0].device_kind},
                                   "results": out}, indent=1))
        tmp.replace(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
