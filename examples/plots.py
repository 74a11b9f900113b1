"""Plots of c4jax's MCTS strength (matplotlib, Agg, PNG files).

    python examples/plots.py                    # reads benchmarks/strength/results_*.json
    python examples/plots.py --quick            # recomputes small versions (a few minutes)
    python examples/plots.py --out some/dir --keys 200 --simulations 200
    python examples/plots.py --only action_histogram --keys 8 --simulations 16   # one figure

Figures (written to --out, default benchmarks/strength/img/):

* ``action_histogram.png``: how often each column is chosen by repeated
  searches of one position (``--keys`` searches with different keys, at
  ``--simulations`` and 8x as many), for the empty Connect 4 board and a
  tactical position; optimal columns marked.  Always computed here (seconds).
* ``connect4_strength.png``: score and Elo of MCTS(n) against MCTS(400) with
  95% Wilson intervals (table (a) of benchmarks/strength/connect4_tables.py).
* ``connect4_optimal_moves.png``: the optimal-move rate on the 330
  perfect-play positions against the number of simulations and against the
  exploration constant (PUCT's pb_c_init, UCT's uct_c) at a fixed budget
  (table (b)).
* ``ttt_sweep.png``: tic-tac-toe games lost to the perfect player against the
  number of simulations, per option set (benchmarks/strength/ttt_tables.py).
* ``tall_boards_actions.png`` (the tutorial's boards): how often each column
  is chosen by ``--keys`` searches of 100 simulations (``run_mcts``'s
  defaults) from the empty 40-row x 7-column and 19-row x 15-column boards.
  Always computed here (a minute).
* ``optimal_rate_by_budget.png``: the optimal-move rate (strict and WDL) on
  the 330 perfect-play positions at 100, 200, 500, 1,000 and 2,000
  simulations with ``run_mcts``'s defaults, key 0, one batch per budget.
  Always computed here (two minutes).

The JSON files are written by the table scripts; without them (or with
``--quick``) this script runs those scripts' ``--quick`` modes into
``<out>/quick_results/`` and plots that (the figures then mean little).
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
STRENGTH = ROOT / "benchmarks" / "strength"
Z95 = 1.959963984540054

# The empty 7x6 board: only the centre column wins for the first player
# (Allis 1988; Pons' solver scores the columns -2 -1 0 1 0 -1 -2).
EMPTY = {"name": "empty board, X to move", "moves": "", "best": [3], "best_wdl": [3],
         "scores": [-2, -1, 0, 1, 0, -1, -2]}
# Pons Test_L2_R2 (Middle-Medium), from src/c4jax/data/connect4_positions.jsonl:
# only column 3 wins; columns 4-7 draw; columns 1-2 lose.
TACTICAL_MOVES = "71113555416334261"


def wilson(successes: float, n: int) -> tuple[float, float]:
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + Z95 ** 2 / n
    centre = (p + Z95 ** 2 / (2 * n)) / denom
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 ** 2 / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def yerr(value, ci) -> np.ndarray:
    """Asymmetric error bars ``[value - lo, hi - value]``, never negative."""
    value, ci = np.asarray(value, float), np.asarray(ci, float)
    return np.maximum(np.stack([value - ci[:, 0], ci[:, 1] - value]), 0.0)


def elo(score: float) -> float:
    score = min(max(score, 1e-9), 1 - 1e-9)
    return 400 * math.log10(score / (1 - score))


def load(path: pathlib.Path) -> dict:
    return json.loads(path.read_text())["entries"]


def find_results(out: pathlib.Path, quick: bool) -> tuple[pathlib.Path | None, pathlib.Path | None]:
    c4 = STRENGTH / "results_connect4.json"
    ttt = STRENGTH / "results_ttt.json"
    if not quick and c4.exists():
        return c4, ttt if ttt.exists() else None
    if not quick:
        print(f"{c4} not found: running the table scripts' --quick modes (or run them in full first)")
    sys.path.insert(0, str(STRENGTH))
    import connect4_tables  # noqa: E402

    qdir = out / "quick_results"
    qdir.mkdir(parents=True, exist_ok=True)
    c4q = qdir / "results_connect4.json"
    connect4_tables.main(["--quick", "--out-json", str(c4q), "--out-md", str(qdir / "connect4_tables.md")])
    return c4q, (ttt if ttt.exists() else None)


# ---------------------------------------------------------------------------
# (i) Action-frequency histogram.


def action_histogram(out: pathlib.Path, keys: int, sims: int) -> pathlib.Path:
    import jax
    import jax.numpy as jnp

    import c4jax
    from c4jax.games import connect4

    data = pathlib.Path(c4jax.__file__).parent / "data" / "connect4_positions.jsonl"
    recs = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    tactical = next(r for r in recs if r["moves"] == TACTICAL_MOVES)
    tactical = dict(tactical, name=f"Pons {tactical['difficulty']} line {tactical['line']}, "
                    f"{'X' if tactical['to_move'] == 1 else 'O'} to move")
    budgets = (sims, 8 * sims)
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), constrained_layout=True)
    for ax, pos in zip(axes, (EMPTY, tactical)):
        env = connect4.from_moves(pos["moves"])
        envs = jax.tree.map(lambda x: jnp.broadcast_to(x, (keys,) + x.shape), env)
        legal = np.asarray(connect4.legal_action_mask(env))
        width = 0.4
        for j, n in enumerate(budgets):
            # mctx's recipe, as the strength tables (benchmarks/strength/common.py).
            actions = np.asarray(c4jax.run_mcts(jax.random.key(0), envs, n, **c4jax.MCTX_RECIPE).action)
            freq = np.bincount(actions, minlength=7) / keys
            x = np.arange(7) + (j - 0.5) * width
            colours = ["tab:green" if c in pos["best"] else "tab:olive" if c in pos["best_wdl"]
                       else "tab:red" for c in range(7)]
            ax.bar(x, freq, width, color=colours, alpha=0.55 if j == 0 else 1.0,
                   edgecolor="black", linewidth=0.6, hatch="//" if j == 0 else None)
            lo_hi = np.array([wilson(f * keys, keys) for f in freq])
            ax.errorbar(x, freq, yerr=yerr(freq, lo_hi), fmt="none",
                        ecolor="black", capsize=2, linewidth=0.8)
        ax.set_xticks(range(7))
        ax.set_xticklabels([f"{c + 1}\n{pos['scores'][c] if legal[c] else 'full'}" for c in range(7)])
        ax.set_xlabel("column (1-based); below: perfect-play score for the mover (Pons)")
        ax.set_ylabel(f"fraction of {keys} searches choosing it")
        ax.set_ylim(0, 1.05)
        moves = pos["moves"] or "(none)"
        ax.set_title(f"{pos['name']}\nmoves {moves}", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
        handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in ("tab:green", "tab:olive", "tab:red")]
        leg1 = ax.legend(handles, ["optimal (in best)", "keeps the value, slower (in best_wdl)",
                                   "changes the value (e.g. win -> draw)"], loc="upper left", fontsize=8)
        ax.add_artist(leg1)
        budget_handles = [
            plt.Rectangle((0, 0), 1, 1, facecolor="lightgrey", edgecolor="black", hatch="//"),
            plt.Rectangle((0, 0), 1, 1, facecolor="dimgrey", edgecolor="black"),
        ]
        ax.legend(budget_handles, [f"{budgets[0]} simulations (left, hatched)",
                                   f"{budgets[1]} simulations (right)"], loc="upper right", fontsize=8)
    fig.suptitle(f"Which move does c4jax's MCTS pick? {keys} searches, keys split(key(0), {keys}), "
                 "mctx's recipe (c4jax.MCTX_RECIPE); bars: 95% Wilson intervals", fontsize=11)
    path = out / "action_histogram.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


TALL_BOARDS = ((40, 7), (19, 15))  # (rows, columns): the tutorial's boards
FIGURES = ("action_histogram", "tall_boards_actions", "optimal_rate_by_budget", "connect4_strength",
           "connect4_optimal_moves", "ttt_sweep")  # the files' names, without .png
BUDGETS = (100, 200, 500, 1000, 2000)


def tall_boards_histogram(out: pathlib.Path, keys: int, sims: int = 100) -> pathlib.Path:
    """Column frequencies of ``keys`` searches (defaults, ``sims``
    simulations) from the empty board of each of ``TALL_BOARDS``."""
    import jax
    import jax.numpy as jnp

    import c4jax
    from c4jax.games import connect4

    fig, axes = plt.subplots(1, len(TALL_BOARDS), figsize=(12, 4.2), constrained_layout=True,
                             gridspec_kw={"width_ratios": [c for _, c in TALL_BOARDS]})
    for ax, (rows, cols) in zip(axes, TALL_BOARDS):
        game = connect4.make(rows, cols)
        envs = jax.tree.map(lambda x: jnp.broadcast_to(x, (keys,) + x.shape), game.env_reset())
        actions = np.asarray(c4jax.run_mcts(jax.random.key(0), envs, sims).action)
        freq = np.bincount(actions, minlength=cols) / keys
        lo_hi = np.array([wilson(f * keys, keys) for f in freq])
        ax.bar(np.arange(1, cols + 1), freq, color="tab:blue", edgecolor="black", linewidth=0.6)
        ax.errorbar(np.arange(1, cols + 1), freq, yerr=yerr(freq, lo_hi), fmt="none",
                    ecolor="black", capsize=2, linewidth=0.8)
        ax.set_xticks(range(1, cols + 1))
        ax.set_xlabel("column (1-based)")
        ax.set_ylabel(f"fraction of {keys} searches choosing it")
        ax.set_ylim(0, max(0.4, 1.25 * float(lo_hi[:, 1].max())))
        ax.set_title(f"{rows} rows x {cols} columns, empty board", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"Which first move? {keys} searches of {sims} simulations each (run_mcts's defaults, "
                 f"keys split(key(0), {keys})); bars: 95% Wilson intervals", fontsize=11)
    path = out / "tall_boards_actions.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def optimal_rate_by_budget(out: pathlib.Path, budgets=BUDGETS) -> pathlib.Path:
    """The strict and WDL optimal-move rates of ``run_mcts``'s defaults on the
    330 perfect-play positions (one batch per budget, key 0)."""
    import jax
    import jax.numpy as jnp

    import c4jax
    from c4jax.games import connect4

    data = pathlib.Path(c4jax.__file__).parent / "data" / "connect4_positions.jsonl"
    recs = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    envs = jax.tree.map(lambda *xs: jnp.stack(xs), *[connect4.from_moves(r["moves"]) for r in recs])
    rates = {"strict": [], "wdl": []}
    for n in budgets:
        actions = np.asarray(c4jax.run_mcts(jax.random.key(0), envs, n).action)
        rates["strict"].append(np.mean([a in r["best"] for a, r in zip(actions, recs)]))
        rates["wdl"].append(np.mean([a in r["best_wdl"] for a, r in zip(actions, recs)]))
        print(f"  {n} simulations: strict {rates['strict'][-1]:.3f}, WDL {rates['wdl'][-1]:.3f}", flush=True)
    fig, ax = plt.subplots(figsize=(7, 4.4), constrained_layout=True)
    x = np.array(budgets)
    for metric, label, marker in (("strict", "strict (move in best)", "o"),
                                  ("wdl", "WDL (move in best_wdl)", "s")):
        m = np.array(rates[metric])
        ci = np.array([wilson(v * len(recs), len(recs)) for v in m])
        ax.errorbar(x, m, yerr=yerr(m, ci), fmt=marker + "-", capsize=4, label=label)
    ax.set_xscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels([f"{b:,}" for b in budgets])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_ylim(0.5, 1.0)
    ax.set_xlabel("simulations per search (log scale)")
    ax.set_ylabel(f"fraction of the {len(recs)} positions")
    ax.set_title("Connect 4 (7 columns x 6 rows): optimal moves against the budget" "\n"
                 f"run_mcts's defaults, key 0; error bars: 95% Wilson intervals over the positions",
                 fontsize=10)
    ax.legend(loc="lower right")
    ax.grid(alpha=0.3)
    path = out / "optimal_rate_by_budget.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------
# (ii) Strength against the number of simulations.


def _simulations_axis(ax, n, opp) -> None:
    """Log-2 x axis ticked at the budgets ``n``, the opponent's budget marked."""
    ax.axvline(opp, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xticks(n)
    ax.set_xticklabels(n)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("simulations per move n (log scale)")


def strength_plot(entries: dict, out: pathlib.Path) -> pathlib.Path:
    # Default options on both sides (rows with options, e.g. solver=False, are other series).
    rows = [v for v in entries.values() if isinstance(v, dict) and "a_spec" in v
            and v["a_spec"]["kind"] == "mcts" and v["b_spec"]["kind"] == "mcts"
            and not v["a_spec"]["options"] and not v["b_spec"]["options"]]
    if not rows:
        raise SystemExit("no arena results in the Connect 4 JSON")
    opp = rows[0]["b_spec"]["n"]
    rows = sorted((r for r in rows if r["b_spec"]["n"] == opp), key=lambda r: r["a_spec"]["n"])
    n = np.array([r["a_spec"]["n"] for r in rows])
    games = rows[0]["num_games"]
    score = np.array([r["score"] for r in rows])
    ci = np.array([wilson(r["wins"] + 0.5 * r["draws"], r["num_games"]) for r in rows])
    wins = np.array([r["wins"] / r["num_games"] for r in rows])
    wci = np.array([r["wins_ci"] for r in rows])
    losses = np.array([r["losses"] / r["num_games"] for r in rows])
    lci = np.array([r["losses_ci"] for r in rows])

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.6), constrained_layout=True)
    ax1.errorbar(n, score, yerr=yerr(score, ci), fmt="o-", capsize=4,
                 label="score (W + D/2) / G")
    ax1.errorbar(n * 0.96, wins, yerr=yerr(wins, wci), fmt="^--", capsize=3,
                 alpha=0.7, label="wins")
    ax1.errorbar(n * 1.04, losses, yerr=yerr(losses, lci), fmt="v--",
                 capsize=3, alpha=0.7, label="losses")
    ax1.axhline(0.5, color="grey", linewidth=0.8)
    _simulations_axis(ax1, n, opp)
    ax1.set_ylim(0, 1)
    ax1.set_ylabel("fraction of games")
    ax1.set_title(f"MCTS(n) vs MCTS({opp}), {games} games per point")
    ax1.legend(fontsize=8)
    ax1.grid(alpha=0.3)

    e = np.array([elo(s) for s in score])
    elo_lo = np.array([elo(c[0]) for c in ci])
    elo_hi = np.array([elo(c[1]) for c in ci])
    ax2.errorbar(n, e, yerr=np.maximum([e - elo_lo, elo_hi - e], 0), fmt="o-", capsize=4, color="tab:purple")
    ax2.axhline(0, color="grey", linewidth=0.8)
    _simulations_axis(ax2, n, opp)
    ax2.set_ylabel(f"Elo of MCTS(n) minus MCTS({opp})")
    ax2.set_title("Elo difference (logistic, 400-point scale)")
    ax2.grid(alpha=0.3)
    fig.suptitle("Connect 4 7x6, mctx's recipe (c4jax.MCTX_RECIPE); error bars: 95% Wilson intervals "
                 "(Elo: mapped from the score's interval)", fontsize=11)
    path = out / "connect4_strength.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------
# (iii) Optimal-move rate.


def rate_series(entries: dict):
    """{(options json, n): [per-key records]}."""
    series = defaultdict(list)
    for v in entries.values():
        if isinstance(v, dict) and "strict" in v and "simulations" in v:
            series[(json.dumps(v["options"], sort_keys=True), v["simulations"])].append(v)
    return series


def _points(recs_by_x, metric):
    xs = sorted(recs_by_x)
    mean = np.array([np.mean([r[metric] for r in recs_by_x[x]]) for x in xs])
    npos = recs_by_x[xs[0]][0]["n"]
    ci = np.array([wilson(m * npos, npos) for m in mean])
    return np.array(xs), mean, ci, len(recs_by_x[xs[0]]), npos


def optimal_moves_plot(entries: dict, out: pathlib.Path) -> pathlib.Path:
    series = rate_series(entries)
    by_n = {n: recs for (o, n), recs in series.items() if o == "{}"}
    fixed = None
    puct, uct = {}, {}
    solver_note = ""
    for (o, n), recs in series.items():
        opts = json.loads(o)
        if opts.get("solver") is False and set(opts) - {"solver"} in ({"pb_c_init"}, {"selection", "uct_c"}):
            # The exploration sweeps of the tables ran without the solver.
            opts.pop("solver")
            solver_note = ", solver off"
        if set(opts) == {"pb_c_init"}:
            puct[opts["pb_c_init"]] = recs
            fixed = n
        elif set(opts) == {"selection", "uct_c"} and opts["selection"] == "uct":
            uct[opts["uct_c"]] = recs
            fixed = n
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.8), constrained_layout=True)
    for metric, label, marker in (("strict", "strict (move in best)", "o"), ("wdl", "WDL (move in best_wdl)", "s")):
        x, m, ci, k, npos = _points(by_n, metric)
        ax1.errorbar(x, m, yerr=yerr(m, ci), fmt=marker + "-", capsize=4, label=label)
    ax1.axhline(0.26, color="tab:blue", linestyle=":", linewidth=0.8)
    ax1.axhline(0.62, color="tab:orange", linestyle=":", linewidth=0.8)
    ax1.text(x[-1], 0.27, "uniformly random move, strict", fontsize=7, color="tab:blue", ha="right")
    ax1.text(x[-1], 0.63, "uniformly random move, WDL", fontsize=7, color="tab:orange", ha="right")
    ax1.set_xscale("log", base=2)
    ax1.set_xticks(x)
    ax1.set_xticklabels(x)
    ax1.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax1.set_ylim(0.2, 1.0)
    ax1.set_xlabel("simulations per search (log scale)")
    ax1.set_ylabel(f"fraction of the {npos} positions")
    ax1.set_title("Against the number of simulations (PUCT, mctx's recipe)")
    ax1.legend(fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 0.32))
    ax1.grid(alpha=0.3)

    for recs_by_c, name, colour in ((puct, "PUCT, c = pb_c_init", "tab:green"),
                                    (uct, "UCT, c = uct_c", "tab:red")):
        if not recs_by_c:
            continue
        for metric, ls, marker in (("strict", "-", "o"), ("wdl", "--", "s")):
            x, m, ci, k, npos = _points(recs_by_c, metric)
            ax2.errorbar(x, m, yerr=yerr(m, ci), fmt=marker + ls, capsize=4,
                         color=colour, label=f"{name}: {'strict' if metric == 'strict' else 'WDL'}")
    ax2.axvline(1.25, color="tab:green", linestyle=":", linewidth=0.8)
    ax2.axvline(math.sqrt(2), color="tab:red", linestyle=":", linewidth=0.8)
    ax2.set_xscale("log", base=2)
    cs = sorted(set(puct) | set(uct))
    ax2.set_xticks(cs)
    ax2.set_xticklabels([f"{c:.3g}" for c in cs], fontsize=8, rotation=60)
    ax2.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax2.set_ylim(0.2, 1.0)
    ax2.set_xlabel("exploration constant c (log scale; dotted: defaults 1.25 and sqrt 2)")
    ax2.set_ylabel(f"fraction of the {npos} positions")
    ax2.set_title(f"Against the exploration constant, {fixed} simulations{solver_note}")
    ax2.legend(fontsize=8, loc="lower right")
    ax2.grid(alpha=0.3)
    fig.suptitle(f"Connect 4: optimal-move rate on {npos} perfect-play positions; points: mean over "
                 f"{k} search key(s); error bars: 95% Wilson intervals over the positions", fontsize=11)
    path = out / "connect4_optimal_moves.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------
# Tic-tac-toe sweep.


def ttt_sweep_plot(entries: dict, out: pathlib.Path) -> pathlib.Path | None:
    by_opts = defaultdict(dict)
    for v in entries.values():
        if isinstance(v, dict) and "a_spec" in v and v["b_spec"]["kind"] == "perfect" \
                and v["a_spec"]["kind"] == "mcts" and v["num_games"] >= 100 and v.get("seed") == 0:
            label = ", ".join(f"{k}={x}" for k, x in v["a_spec"]["options"].items()) or "default"
            by_opts[label][v["a_spec"]["n"]] = v
    by_opts = {k: v for k, v in by_opts.items() if len(v) >= 3}
    if not by_opts:
        return None
    fig, ax = plt.subplots(figsize=(9, 5), constrained_layout=True)
    games = None
    x_lost = [n for pts in by_opts.values() for n, v in pts.items() if v["a_first"][2] > 0]
    all_n = sorted({n for pts in by_opts.values() for n in pts})
    for label, pts in sorted(by_opts.items(), key=lambda kv: kv[0] != "default"):
        n = np.array(sorted(pts))
        g = np.array([pts[x]["num_games"] // 2 for x in n])
        games = int(g[0])
        lost_o = np.array([pts[x]["a_second"][2] for x in n])
        ci = np.array([wilson(l_, gg) for l_, gg in zip(lost_o, g)])
        rate = lost_o / g
        # Zero losses cannot be drawn on a log axis: plot them at 1e-3.
        shown = np.where(rate > 0, rate, 1e-3)
        ax.errorbar(n, shown, yerr=[shown - np.maximum(ci[:, 0], 1e-3), np.maximum(ci[:, 1] - shown, 0)],
                    fmt="o-", capsize=3, label=label, linewidth=2.2 if label == "default" else 1.2)
    ax.set_xscale("log", base=2)
    ax.set_xticks(all_n)
    ax.set_xticklabels(all_n, fontsize=8, rotation=45)
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_yscale("log")
    ax.set_ylim(8e-4, 1)
    ax.axhline(1e-3, color="grey", linewidth=0.6)
    ax.text(ax.get_xlim()[0] * 1.05, 1.15e-3, "0 losses", fontsize=8, color="grey")
    ax.set_xlabel("simulations per move (log scale)")
    ax.set_ylabel(f"fraction of the {games} games as O lost (log scale)")
    as_x = (f"as X no option set lost a game above {max(x_lost)} simulations" if x_lost
            else "as X it never lost")
    ax.set_title(f"Tic-tac-toe: MCTS as O against the perfect player, {games} games per point, key 0\n"
                 f"({as_x}); error bars: 95% Wilson intervals; bottom row: 0 losses",
                 fontsize=10)
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 0.08))
    ax.grid(alpha=0.3, which="both")
    path = out / "ttt_sweep.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=pathlib.Path, default=STRENGTH / "img")
    p.add_argument("--quick", action="store_true", help="recompute small versions instead of reading the JSON")
    p.add_argument("--keys", type=int, default=200, help="searches per histogram")
    p.add_argument("--simulations", type=int, default=200, help="simulations of the histogram (and 8x)")
    p.add_argument("--only", choices=FIGURES, default=None, help="write this figure alone (default: all)")
    args = p.parse_args(argv)
    if args.quick:
        args.keys = min(args.keys, 50)
    args.out.mkdir(parents=True, exist_ok=True)
    wanted = FIGURES if args.only is None else (args.only,)
    written = []
    if "action_histogram" in wanted:
        written.append(action_histogram(args.out, args.keys, args.simulations))
    if "tall_boards_actions" in wanted:
        written.append(tall_boards_histogram(args.out, args.keys))
    if "optimal_rate_by_budget" in wanted:
        written.append(optimal_rate_by_budget(args.out, BUDGETS[:2] if args.quick else BUDGETS))
    if {"connect4_strength", "connect4_optimal_moves", "ttt_sweep"} & set(wanted):
        c4, ttt = find_results(args.out, args.quick)
        entries = load(c4)
        if "connect4_strength" in wanted:
            written.append(strength_plot(entries, args.out))
        if "connect4_optimal_moves" in wanted:
            written.append(optimal_moves_plot(entries, args.out))
        if "ttt_sweep" in wanted and ttt is not None:
            path = ttt_sweep_plot(load(ttt), args.out)
            if path:
                written.append(path)
    for w in written:
        print(f"wrote {w}")


if __name__ == "__main__":
    main()
