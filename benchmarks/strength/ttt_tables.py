"""Tic-tac-toe strength tables of c4jax's MCTS, as MCTS tutorials publish them.

1. MCTS (``c4jax.mcts_player`` with mctx's recipe, ``c4jax.MCTX_RECIPE``, the
   defaults before issue 9: PUCT c1=1.25, uniform prior, one uniform random
   rollout per leaf, one lane, the solver, subtree reuse) at 10,
   100, 1000 and 3200 simulations per move against the perfect player (a uniformly random
   move among the optimal ones), the random player and MCTS(1000): 200 games
   each, 100 with MCTS as X (moving first) and 100 as O, wins/draws/losses.
2. The exact solver's node counts from the empty board
   (``tictactoe.count_minimax_nodes``).
3. The sweep: the smallest number of simulations at which MCTS stops losing to
   the perfect player (0 losses in 100 games as X and 100 as O), with the
   default options, without the solver (plain mean backups: they never stop
   losing) and with other options; then the default options over five
   arena keys.
4. Why it loses: how often one search, as O, answers X's first move with a
   losing reply (200 searches with different keys per opening).
5. Other options at one budget, and the configuration tests/test_strength.py
   checked before issue 9, with its key and game count.

Every arena uses ``c4jax.arena(jax.random.key(SEED), A, B, G,
tictactoe.env_reset())``: game g uses ``split(key, G)[g]``, A is X in the
even-numbered games.  Results are deterministic for a fixed key; the
run times are not (shared machine).

Run:   python benchmarks/strength/ttt_tables.py            (about 75 min on 2 shared CPU cores)
       python benchmarks/strength/ttt_tables.py --quick    (smoke run, figures mean little)
       --resume reuses the arenas already in the JSON file.
Writes benchmarks/strength/results_ttt.json and benchmarks/strength/ttt_tables.md
(--out-json, --out-md).
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import c4jax  # noqa: E402
from c4jax.games import tictactoe  # noqa: E402
from common import (  # noqa: E402
    Report, ResultCache, command_line, environment_meta, fmt_wdl, mcts, options_label, search_options,
    run_arena, spec_label, table_arguments,
)

ENV_NAME = "tictactoe"
TABLE_SIMS = (10, 100, 1000, 3200)
SWEEP_SIMS = (25, 50, 100, 200, 400, 800, 1600, 3200, 6400)
# The options in FULL_SWEEPS are swept to the end of SWEEP_SIMS; the others
# stop after two budgets in a row without a loss, or at VARIANT_MAX_SIMS.
VARIANT_MAX_SIMS = 3200
SWEEP_VARIANTS = (
    {},
    {"solver": False},
    {"prior": "heuristic"},
    {"prior": "heuristic", "solver": False},
    {"rollout_policy": "heuristic", "solver": False},
    {"num_rollouts": 8, "solver": False},
    {"selection": "uct", "solver": False},
)
FULL_SWEEPS = ({"solver": False},)
# The default options over several arena keys: G games for each key in
# ROBUST_SEEDS at each budget in ROBUST_SIMS.
ROBUST_SIMS = (800, 1600, 3200)
ROBUST_SEEDS = (0, 1, 2, 3, 4)
# Options at one budget (OPTIONS_SIMS), against the perfect player.
OPTIONS_SIMS = 800
OPTION_SETS = (
    {},
    {"pb_c_init": 0.5},
    {"pb_c_init": 2.5},
    {"pb_c_init": 5.0},
    {"qtransform": "parent_and_siblings"},
    {"selection": "uct", "uct_c": 0.5},
    {"selection": "uct", "uct_c": 1.0},
    {"selection": "uct"},
    {"num_rollouts": 8},
    {"prior": "heuristic"},
    {"rollout_policy": "heuristic"},
    {"dirichlet_fraction": 0.25},
    {"solver": False},
)
# X's first moves up to symmetry: corner (cell 1), edge (cell 2), centre (cell 5).
OPENINGS = (("corner (1)", "1"), ("edge (2)", "2"), ("centre (5)", "5"))
REPLY_KEYS = 200
REPLY_VARIANTS = ({}, {"solver": False}, {"prior": "heuristic", "solver": False})
REPLY_MAX_SIMS = 3200

# What tests/test_strength.py checked before issue 9, with mctx's recipe (the
# tests now play today's defaults: MCTS(1000) against the perfect player, 200
# games, and MCTS(400) against the random player, >= 60 wins as O): (player spec,
# opponent, games), all with key TEST_SEED.
TEST_SEED = 0
TEST_CHECKS = (
    (mcts(3200), {"kind": "perfect"}, 100, "0 losses as X and as O"),
    (mcts(3200), {"kind": "random"}, 100, "(for scale)"),
    (mcts(400), {"kind": "random"}, 200, ">= 95 wins as X, >= 85 as O, 0 losses"),
    ({"kind": "perfect"}, {"kind": "random"}, 200, "(for scale)"),
)


def losing_reply_rate(opening: str, n: int, options: dict, keys: int, seed: int) -> tuple[float, dict]:
    """Fraction of ``keys`` searches (keys ``split(key(seed), keys)``) that answer
    ``opening`` with a move whose exact value is a loss; and the move counts."""
    env = tictactoe.from_moves(opening)
    values = tictactoe.solve(env)
    envs = jax.tree.map(lambda x: jnp.broadcast_to(x, (keys,) + x.shape), env)
    out = c4jax.run_mcts(jax.random.key(seed), envs, n, **search_options(options))
    actions = np.asarray(out.action)
    counts = {int(c) + 1: int(k) for c, k in zip(*np.unique(actions, return_counts=True))}
    return float(np.mean(values[actions] < 0)), counts


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    check = table_arguments(p, "results_ttt.json", "ttt_tables.md",
                            "games per arena (even; half as X)", "smoke run: 20 games, small budgets")
    args = p.parse_args(argv)
    check(args)

    table_sims, sweep_sims, variant_max = TABLE_SIMS, SWEEP_SIMS, VARIANT_MAX_SIMS
    robust_sims, robust_seeds = ROBUST_SIMS, ROBUST_SEEDS
    option_sims, reply_keys, option_sets = OPTIONS_SIMS, REPLY_KEYS, OPTION_SETS
    if args.quick:
        args.games = 20
        table_sims, sweep_sims, variant_max = (10, 100), (25, 100), 100
        robust_sims, robust_seeds = (100,), (0, 1)
        option_sims, reply_keys, option_sets = 100, 20, OPTION_SETS[:3]

    command = command_line()
    cache = ResultCache(args.out_json, args.resume, environment_meta(command))
    env = tictactoe.env_reset()
    G, seed = args.games, args.seed
    half = G // 2
    rep = Report()
    t_start = time.perf_counter()

    def arena(a, b, games=G, s=seed):
        return run_arena(cache, a, b, games, s, env, ENV_NAME)

    rep.text("# Tic-tac-toe: strength of c4jax's MCTS\n")
    rep.text(
        "Made by\n\n```\n" + command + "\n```\n\n"
        f"(jax {cache.meta['jax']}, mctx {cache.meta['mctx']}, backend {cache.meta['backend']}, "
        f"{cache.meta['cpu_count']} CPU cores shared with other jobs; run times are noisy, the game "
        "results are deterministic for the key.)  Raw results: `" + args.out_json.name + "`.\n\n"
        f"Every arena is `c4jax.arena(jax.random.key({seed}), A, B, {G}, tictactoe.env_reset())`: "
        f"A is X (moves first) in {half} games and O in {half}.  `mcts:N` is "
        "`c4jax.mcts_player(N, **c4jax.MCTX_RECIPE)`: mctx's recipe, the defaults before issue 9 "
        "(PUCT, c1 = 1.25, uniform prior, one uniformly random rollout per leaf, one lane, min-max Q "
        "transform with an unvisited move scored as a loss, the solver, subtree reuse, most-visited "
        "move); \"default options\" below means that recipe, and named options change it.  Today's "
        "defaults: benchmarks/README.md and tests/test_strength.py. "
        "`perfect` plays a uniformly random move among the optimal ones (exact solver); `random` "
        "plays uniformly random legal moves.  W/D/L are MCTS's wins/draws/losses; \"run s\" is "
        "the arena's run time without compilation."
    )

    # 1. The tutorial tables.
    rep.text("## 1. MCTS against the perfect player, the random player and MCTS(1000)\n")
    for opp_name, opp in (("perfect", {"kind": "perfect"}), ("random", {"kind": "random"}),
                          ("mcts:1000", mcts(1000 if not args.quick else 100))):
        rows = []
        for n in table_sims:
            print(f"MCTS({n}) vs {opp_name}")
            s = arena(mcts(n), opp)
            rows.append([
                f"mcts:{n}", fmt_wdl(s["a_first"]), fmt_wdl(s["a_second"]),
                fmt_wdl((s["wins"], s["draws"], s["losses"])), f"{100 * s['score']:.1f}%",
                f"{s['mean_length']:.1f}", f"{s['seconds']:.1f}",
            ])
        rep.table(
            f"MCTS(n) vs {opp_name if not args.quick else opp['kind']}, {G} games",
            ["MCTS", f"as X ({half}) W/D/L", f"as O ({half}) W/D/L", "total W/D/L", "score",
             "plies/game", "run s"],
            rows,
        )

    # 2. Node counts of the exact solver.
    rep.text("## 2. Exact solver: nodes visited from the empty board\n")
    rows = []
    for method in ("minimax", "alphabeta", "alphabeta_ordered"):
        t0 = time.perf_counter()
        count = tictactoe.count_minimax_nodes(method)
        rows.append([method, f"{count:,}", f"{time.perf_counter() - t0:.2f}"])
    cache.put("node_counts", {r[0]: int(r[1].replace(",", "")) for r in rows})
    rep.table(
        "tictactoe.count_minimax_nodes(method)",
        ["method", "nodes", "s (Python)"],
        rows,
        note="Every position entered counts once, root and finished games included, no memo; "
        "`alphabeta_ordered` tries immediate wins, forced blocks, centre, corners, edges.",
    )

    # 3. The sweep.
    rep.text(
        "## 3. The sweep: when does MCTS stop losing to the perfect player?\n\n"
        f"MCTS(n) vs perfect, {G} games ({half} as X, {half} as O), key {seed}.  The default "
        f"options without the solver run to {sweep_sims[-1]} simulations; each other variant stops after two budgets in a "
        f"row without a loss or at {variant_max}."
    )
    first_zero = {}
    for options in SWEEP_VARIANTS:
        label = options_label(options)
        rows, zeros = [], 0
        for n in sweep_sims:
            full = options in FULL_SWEEPS
            if not full and n > variant_max:
                break
            print(f"sweep [{label}] MCTS({n}) vs perfect")
            s = arena(mcts(n, **options), {"kind": "perfect"})
            lost = s["losses"]
            if lost == 0 and label not in first_zero:
                first_zero[label] = n
            zeros = zeros + 1 if lost == 0 else 0
            o_lost = sorted({g["moves"] for g in s["a_lost_games"] if g["a_as"] == "O"})
            rows.append([
                str(n), fmt_wdl(s["a_first"]), fmt_wdl(s["a_second"]), str(lost),
                ", ".join(o_lost[:4]) + (" ..." if len(o_lost) > 4 else ""), f"{s['seconds']:.1f}",
            ])
            if not full and zeros >= 2:
                break
        rep.table(
            f"Sweep, options: {label}",
            ["n", f"as X ({half}) W/D/L", f"as O ({half}) W/D/L", "losses", "some lost games (cells 1-9)", "run s"],
            rows,
        )
    rows = [[options_label(o), str(first_zero.get(options_label(o), "none"))] for o in SWEEP_VARIANTS]
    cache.put("first_zero_loss", first_zero)
    rep.table(
        "Smallest swept budget with 0 losses to the perfect player",
        ["options", "simulations"],
        rows,
        note="Not necessarily monotonic: a budget above the first zero can lose again (the games "
        "are random).",
    )

    # 3b. The default options over several keys.
    rows = []
    for n in robust_sims:
        per_seed = []
        for sd in robust_seeds:
            print(f"keys: MCTS({n}) vs perfect, key {sd}")
            per_seed.append(arena(mcts(n), {"kind": "perfect"}, s=sd))
        losses = [r["losses"] for r in per_seed]
        lost = sorted({g["moves"] for r in per_seed for g in r["a_lost_games"]})
        rows.append([
            str(n), " ".join(map(str, losses)), f"{sum(losses)} / {G * len(robust_seeds)}",
            ", ".join(lost[:4]) + (" ..." if len(lost) > 4 else ""),
        ])
    cache.put("losses_by_key", {r[0]: r[1] for r in rows})
    rep.table(
        f"Default options vs perfect, keys {', '.join(map(str, robust_seeds))}: {G} games each",
        ["n", "losses per key", "losses / games", "some lost games (cells 1-9)"],
        rows,
        note=f"`c4jax.arena(jax.random.key(k), mcts_player(n), perfect_player(), {G}, "
        "tictactoe.env_reset())` for each key k (the key decides the perfect player's choices "
        "among its optimal moves and MCTS's rollouts).  Before issue 9 tests/test_strength.py played "
        f"key {TEST_SEED} at {TEST_CHECKS[0][0]['n']} simulations, 100 games.",
    )

    # 4. Why: losing first replies as O.
    rep.text(
        "## 4. Why MCTS loses as O: its first reply\n\n"
        "X has three first moves up to symmetry; O's only non-losing replies are the centre "
        "after a corner; the centre, the two adjacent corners or the opposite edge after an "
        "edge; a corner after the centre.  The table gives the fraction of "
        f"{reply_keys} searches (`run_mcts(jax.random.key({seed}), batch of {reply_keys} copies, n)`, "
        "one key per copy) that pick a losing reply (exact value from `tictactoe.solve`)."
    )
    rows = []
    for options in REPLY_VARIANTS:
        for n in sweep_sims:
            if options == {} and n > REPLY_MAX_SIMS:
                break
            key = f"reply|{options_label(options)}|{n}|{reply_keys}|{seed}"
            hit = cache.get(key)
            if hit is None:
                print(f"first replies [{options_label(options)}] n={n}")
                hit = {name: losing_reply_rate(op, n, options, reply_keys, seed)[0] for name, op in OPENINGS}
                cache.put(key, hit)
            rows.append([options_label(options), str(n)] + [f"{100 * hit[name]:.1f}%" for name, _ in OPENINGS])
    rep.table(
        f"P(one search as O picks a losing reply), {reply_keys} keys",
        ["options", "n"] + [f"after X {name}" for name, _ in OPENINGS],
        rows,
    )

    # 5. Other options at one budget; the test's configuration.
    rep.text(f"## 5. Options at {option_sims} simulations against the perfect player\n")
    rows = []
    for options in option_sets:
        print(f"options [{options_label(options)}] MCTS({option_sims}) vs perfect")
        s = arena(mcts(option_sims, **options), {"kind": "perfect"})
        rows.append([options_label(options), fmt_wdl(s["a_first"]), fmt_wdl(s["a_second"]),
                     str(s["losses"]), f"{s['seconds']:.1f}"])
    rep.table(
        f"MCTS({option_sims}, options) vs perfect, {G} games",
        ["options", f"as X ({half}) W/D/L", f"as O ({half}) W/D/L", "losses", "run s"],
        rows,
    )

    rep.text(
        "## 6. What tests/test_strength.py checked before issue 9 (mctx's recipe)\n\n"
        f"`c4jax.arena(jax.random.key({TEST_SEED}), A, B, G, tictactoe.env_reset())`.  `perfect` picks a random move among the value-optimal ones, "
        "so it does not try to win more often against the random player."
    )
    rows = []
    for a, b, games, asserted in TEST_CHECKS:
        if args.quick:
            games = 20
            a = mcts(min(a["n"], 100), **a["options"]) if a["kind"] == "mcts" else a
        s = arena(a, b, games=games, s=TEST_SEED)
        rows.append([spec_label(a), spec_label(b), str(games), fmt_wdl(s["a_first"]), fmt_wdl(s["a_second"]),
                     asserted, f"{s['seconds']:.1f}"])
    rep.table(
        f"The tests' arenas, key {TEST_SEED}",
        ["A", "B", "games", "A as X W/D/L", "A as O W/D/L", "the test asserts", "run s"],
        rows,
    )

    arena_s = sum(v.get("wall_seconds", 0.0) for v in cache.entries.values() if isinstance(v, dict))
    rep.text(
        f"Run time: the stored arenas took {arena_s / 60:.0f} min of wall time (compilation included; "
        f"section 4's searches not counted); this invocation took "
        f"{(time.perf_counter() - t_start) / 60:.1f} min{' (with --resume)' if args.resume else ''}."
    )
    cache.meta["total_seconds"] = time.perf_counter() - t_start
    cache.save()
    args.out_md.write_text(rep.markdown())
    print(f"wrote {args.out_md} and {args.out_json}")


if __name__ == "__main__":
    main()
