"""Connect 4 (7x6) strength tables of c4jax's MCTS.

(a) Strength against the number of simulations: MCTS(n), n = 50 .. 1600,
    and MCTS(400) without the solver, against a fixed MCTS(400), G games each (half with MCTS(n) moving first),
    all G games of a pairing in one jitted, batched arena call: wins, draws,
    losses with 95% Wilson intervals, and the Elo difference with the interval
    mapped from the Wilson interval of the score.
(b) The optimal-move rate on the 330 perfect-play positions
    (``src/c4jax/data/connect4_positions.jsonl``): one ``run_mcts`` call on all
    positions as one batch, ``key = jax.random.key(k)`` (position i uses
    ``split(key, 330)[i]``), for keys k = 0 .. K-1.  "strict": the move is in
    ``best`` (the fastest win / slowest loss); "WDL": the move is in
    ``best_wdl`` (keeps the game-theoretic value).  Against the number of
    simulations (50 .. 3200, with and without the solver), and at 400
    simulations against PUCT's ``pb_c_init`` (0.25 .. 4) and UCT's ``uct_c``
    (both without the solver) and a few other options.

Run:   python benchmarks/strength/connect4_tables.py             (about 35 min on 2 shared CPU cores)
       python benchmarks/strength/connect4_tables.py --quick     (smoke run)
       --resume reuses results already in the JSON file.
Writes benchmarks/strength/results_connect4.json and connect4_tables.md.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import c4jax  # noqa: E402
from c4jax.games import connect4  # noqa: E402
from c4jax.tools.stats import wilson_interval  # noqa: E402
from common import (  # noqa: E402
    Report, ResultCache, command_line, environment_meta, fmt_ci, fmt_elo, fmt_pct, fmt_wdl,
    mcts, options_label, run_arena, search_options, spec_label, table_arguments,
)

DATA = pathlib.Path(c4jax.__file__).parent / "data" / "connect4_positions.jsonl"
ENV_NAME = "connect4-7x6"
ARENA_SIMS = (50, 100, 200, 400, 800, 1600)
OPPONENT_SIMS = 400
RATE_SIMS = (50, 100, 200, 400, 800, 1600, 3200)
FIXED_SIMS = 400
PB_C_INITS = (0.25, 0.5, 1.0, 1.25, 2.0, 4.0)
UCT_CS = (0.25, 0.5, 1.0, math.sqrt(2.0), 2.0, 4.0)
# (a) also plays MCTS(OPPONENT_SIMS, options) against MCTS(OPPONENT_SIMS).
ARENA_OPTIONS = ({"solver": False},)
# The pb_c_init and uct_c sweeps were measured without the solver.
SWEEP_BASE = {"solver": False}
OTHER_OPTIONS = (
    {},
    {"solver": False},
    {"qtransform": "parent_and_siblings"},
    {"prior": "heuristic"},
    {"rollout_policy": "heuristic"},
    {"prior": "heuristic", "rollout_policy": "heuristic"},
    {"num_rollouts": 4},
    {"selection": "gumbel"},
)


def load_positions() -> list[dict]:
    return [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]


def category(rec: dict) -> str:
    return "tactical" if rec["kind"] == "tactical" else rec["difficulty"]


def position_rates(actions: np.ndarray, recs: list[dict]) -> dict:
    strict = np.array([a in r["best"] for a, r in zip(actions, recs)])
    wdl = np.array([a in r["best_wdl"] for a, r in zip(actions, recs)])
    decisive = np.array([r["n_best_wdl"] < r["n_legal"] for r in recs])
    cats = {}
    for c in sorted({category(r) for r in recs}):
        m = np.array([category(r) == c for r in recs])
        cats[c] = {"n": int(m.sum()), "strict": float(strict[m].mean()), "wdl": float(wdl[m].mean())}
    return {
        "n": len(recs),
        "strict": float(strict.mean()),
        "wdl": float(wdl.mean()),
        "wdl_decisive": float(wdl[decisive].mean()),
        "n_decisive": int(decisive.sum()),
        "by_category": cats,
    }


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    check = table_arguments(p, "results_connect4.json", "connect4_tables.md",
                            "games per pairing in (a) (even)", "smoke run: 20 games, small budgets, 1 key")
    p.add_argument("--keys", type=int, default=4, help="search keys 0..K-1 in (b)")
    args = p.parse_args(argv)
    check(args)

    arena_sims, opp_sims, rate_sims, fixed = ARENA_SIMS, OPPONENT_SIMS, RATE_SIMS, FIXED_SIMS
    pb_cs, uct_cs, others = PB_C_INITS, UCT_CS, OTHER_OPTIONS
    if args.quick:
        args.games, args.keys = 20, 1
        arena_sims, opp_sims, rate_sims, fixed = (50, 200), 100, (50, 200), 100
        pb_cs, uct_cs, others = (0.5, 1.25), (1.0,), OTHER_OPTIONS[:2]

    command = command_line()
    cache = ResultCache(args.out_json, args.resume, environment_meta(command))
    env = connect4.env_reset()
    G, half = args.games, args.games // 2
    rep = Report()
    t_start = time.perf_counter()

    rep.text("# Connect 4 (7x6): strength of c4jax's MCTS\n")
    rep.text(
        "Made by\n\n```\n" + command + "\n```\n\n"
        f"(jax {cache.meta['jax']}, mctx {cache.meta['mctx']}, backend {cache.meta['backend']}, "
        f"{cache.meta['cpu_count']} CPU cores shared with other jobs: run times are noisy, results "
        "are deterministic for the keys.)  Raw results: `" + args.out_json.name + "`; plots: "
        "`python examples/plots.py`.  `mcts:N` is `c4jax.mcts_player(N, **c4jax.MCTX_RECIPE)` / "
        "`run_mcts(..., N, **c4jax.MCTX_RECIPE)`: mctx's recipe, the defaults before issue 9 "
        "(PUCT c1 = 1.25, uniform prior, one uniformly random rollout per leaf, one lane, min-max Q "
        "transform with an unvisited move scored as a loss, the solver, most-visited move; the "
        "players reuse their subtree); \"default\" below means that recipe, and named options change "
        "it.  Today's defaults: benchmarks/README.md.  \"run s\": "
        "run time without compilation."
    )

    # (a) Strength against the number of simulations.
    rep.text(
        f"## (a) MCTS(n) against MCTS({opp_sims})\n\n"
        f"`c4jax.arena(jax.random.key({args.seed}), mcts_player(n), mcts_player({opp_sims}), {G})`: "
        f"{G} games per row, MCTS(n) moves first in {half}; all {G} games of a row run as one "
        "batched, jitted call.  95% Wilson intervals; Elo = 400 log10(s / (1 - s)) of the score "
        "s = (W + D/2) / G, its interval mapped from the Wilson interval of s."
    )
    rows = []
    pairings = [mcts(n) for n in arena_sims] + [mcts(opp_sims, **o) for o in ARENA_OPTIONS]
    for a in pairings:
        print(f"(a) {spec_label(a)} vs MCTS({opp_sims})")
        s = run_arena(cache, a, mcts(opp_sims), G, args.seed, env, ENV_NAME)
        rows.append([
            spec_label(a), str(s["wins"]), fmt_ci(s["wins_ci"], 0), str(s["draws"]), str(s["losses"]),
            fmt_ci(s["losses_ci"], 0), f"{100 * s['score']:.1f}%", fmt_elo(s["elo"]),
            f"[{fmt_elo(s['elo_ci'][0])}, {fmt_elo(s['elo_ci'][1])}]",
            fmt_wdl(s["a_first"]), fmt_wdl(s["a_second"]), f"{s['mean_length']:.1f}",
            f"{s['seconds']:.1f}",
        ])
    rep.table(
        f"MCTS(n) vs MCTS({opp_sims}), {G} games each",
        ["A", "W", "W 95% CI", "D", "L", "L 95% CI", "score", "Elo", "Elo 95% CI",
         f"first ({half}) W/D/L", f"second ({half}) W/D/L", "plies/game", "run s"],
        rows,
    )

    # (b) The optimal-move rate.
    recs = load_positions()
    envs = jax.tree.map(lambda *xs: jnp.stack(xs), *[connect4.from_moves(r["moves"]) for r in recs])
    keys = list(range(args.keys))
    n_dec = sum(r["n_best_wdl"] < r["n_legal"] for r in recs)

    def rates(n: int, options: dict) -> dict:
        """Per key: the chosen moves and their rates; cached."""
        out = {}
        for k in keys:
            ck = json.dumps({"rate": n, "options": options, "key": k, "positions": len(recs)}, sort_keys=True)
            hit = cache.get(ck)
            if hit is None:
                fn = jax.jit(lambda key, e: c4jax.run_mcts(key, e, n, **search_options(options)).action)
                t0 = time.perf_counter()
                compiled = fn.lower(jax.random.key(k), envs).compile()
                t1 = time.perf_counter()
                actions = np.asarray(jax.block_until_ready(compiled(jax.random.key(k), envs)))
                hit = position_rates(actions, recs)
                hit["actions"] = actions.tolist()
                hit["seconds"] = time.perf_counter() - t1
                hit["compile_seconds"] = t1 - t0
                hit.update({"simulations": n, "options": options, "key": k})
                cache.put(ck, hit)
            out[k] = hit
        return out

    def rate_row(label: str, per_key: dict) -> list[str]:
        r0 = per_key[0]
        st = [v["strict"] for v in per_key.values()]
        wd = [v["wdl"] for v in per_key.values()]
        lo_s = wilson_interval(r0["strict"] * r0["n"], r0["n"])
        lo_w = wilson_interval(r0["wdl"] * r0["n"], r0["n"])
        row = [label, fmt_pct(r0["strict"]), fmt_ci(lo_s, 0)]
        if len(keys) > 1:
            row.append(f"{100 * np.mean(st):.1f}% [{100 * min(st):.1f}, {100 * max(st):.1f}]")
        row += [fmt_pct(r0["wdl"]), fmt_ci(lo_w, 0)]
        if len(keys) > 1:
            row.append(f"{100 * np.mean(wd):.1f}% [{100 * min(wd):.1f}, {100 * max(wd):.1f}]")
        row += [fmt_pct(np.mean([v["wdl_decisive"] for v in per_key.values()])),
                f"{np.mean([v['seconds'] for v in per_key.values()]):.1f}"]
        return row

    kk = f"keys 0-{len(keys) - 1}" if len(keys) > 1 else ""
    rate_headers = ["", "strict, key 0", "95% CI"] + ([f"strict, mean [min, max] over {kk}"] if kk else []) \
        + ["WDL, key 0", "95% CI"] + ([f"WDL, mean [min, max] over {kk}"] if kk else []) \
        + [f"WDL on the {n_dec} decisive, mean", "run s (one batch)"]
    rep.text(
        f"## (b) Optimal-move rate on the {len(recs)} perfect-play positions\n\n"
        f"`run_mcts(jax.random.key(k), all {len(recs)} positions as one batch, n, **options).action`, "
        f"k = {', '.join(map(str, keys))}.  strict: the move is in `best`; WDL: in `best_wdl`.  "
        "The 95% CI is the Wilson interval over the positions for key 0 (how much another set of "
        "positions could move the rate); the min/max over keys shows the search's own noise.  "
        f"\"Decisive\": the {n_dec} positions where some legal move changes the game-theoretic "
        "value.  A uniformly random legal move scores about 26% strict and 62% WDL.  "
        "tests/test_search.py asserts strict >= 0.85 and WDL >= 0.95 at 400 simulations, key 0."
    )
    rows = []
    by_cat = []
    for n in rate_sims:
        print(f"(b) rates, n={n}")
        per_key = rates(n, {})
        rows.append(rate_row(str(n), per_key))
        cats = per_key[0]["by_category"]
        by_cat.append([str(n)] + [f"{fmt_pct(c['strict'], 0)} / {fmt_pct(c['wdl'], 0)}" for c in cats.values()])
    for n in rate_sims:
        print(f"(b) rates, n={n}, solver=False")
        rows.append(rate_row(f"{n}, solver=False", rates(n, {"solver": False})))
    rep.table("Against the number of simulations (default options, then solver=False)", ["simulations"] + rate_headers[1:], rows)
    cats = rates(rate_sims[0], {})[0]["by_category"]
    rep.table(
        "By kind of position, key 0: strict / WDL",
        ["simulations"] + [f"{c} ({v['n']})" for c, v in cats.items()],
        by_cat,
    )

    rows = []
    for c in pb_cs:
        print(f"(b) rates, pb_c_init={c}")
        rows.append(rate_row(f"{c:g}", rates(fixed, {"pb_c_init": c, **SWEEP_BASE})))
    rep.table(f"PUCT at {fixed} simulations against pb_c_init (c1; default 1.25), solver=False",
              ["pb_c_init"] + rate_headers[1:], rows)

    rows = []
    for c in uct_cs:
        print(f"(b) rates, uct c={c}")
        label = f"{c:.3g}" + (" (sqrt 2, default)" if abs(c - math.sqrt(2)) < 1e-9 else "")
        rows.append(rate_row(label, rates(fixed, {"selection": "uct", "uct_c": c, **SWEEP_BASE})))
    rep.table(f"UCT (selection=\"uct\") at {fixed} simulations against uct_c, solver=False",
              ["uct_c"] + rate_headers[1:], rows,
              note="The UCB1 bonus is uct_c * (value_max - value_min) * sqrt(ln N / n_a) = "
              "2 uct_c sqrt(ln N / n_a) for returns in [-1, 1].")

    rows = []
    for o in others:
        print(f"(b) rates, {options_label(o)}")
        rows.append(rate_row(options_label(o), rates(fixed, o)))
    rep.table(f"Other options at {fixed} simulations", ["options"] + rate_headers[1:], rows)

    stored_s = sum(v.get("wall_seconds", v.get("seconds", 0.0) + v.get("compile_seconds", 0.0))
                   for v in cache.entries.values() if isinstance(v, dict))
    rep.text(
        f"Run time: the stored results took {stored_s / 60:.0f} min of wall time (compilation "
        f"included); this invocation took {(time.perf_counter() - t_start) / 60:.1f} min"
        f"{' (with --resume)' if args.resume else ''}."
    )
    cache.meta["total_seconds"] = time.perf_counter() - t_start
    cache.meta["positions"] = len(recs)
    cache.save()
    args.out_md.write_text(rep.markdown())
    print(f"wrote {args.out_md} and {args.out_json}")


if __name__ == "__main__":
    main()
