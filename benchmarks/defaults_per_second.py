"""The measurements that chose ``run_mcts``'s defaults: strength per second.

Each row changes one option from the defaults (``--change NAME=VALUE``) and
plays that search against the defaults themselves at equal wall-clock time
per move: Connect 4 (7x6), both sides ``run_mcts_anytime`` with subtree reuse
(``benchmarks/equal_time.py``'s player), colours alternating, one game at a
time.  It reports W/D/L of the changed search, its score (wins + half the
draws) with a 95% Wilson interval, both median times per move and both median
simulation counts.  A score above 50% says the change is stronger at that
budget; within the interval of 50% it says nothing either way.

The defaults as measured (``SearchOptions``'s docstring; benchmarks/README.md,
"Defaults chosen per second"), 100 games at 50 ms, 2-core CPU:

    python benchmarks/defaults_per_second.py --budget 0.05 --games 100 \\
        --change lanes=1 --change prior='"uniform"' --change unvisited_q='"loss"' \\
        --change num_rollouts=2 --change pb_c_init=2.0

Values are JSON (strings quoted).  Writes ``--out-json`` (default
``benchmarks/defaults_per_second.json``) and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys

import jax

import c4jax

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from equal_time import C4jaxPlayer, wilson  # noqa: E402

from c4jax.search.options import options_from_kwargs  # noqa: E402


def match(changed: dict, budget: float, games: int, seed: int) -> dict:
    """``games`` games of the defaults with ``changed`` (A) against the
    defaults (B) at ``budget`` seconds per move; W/D/L from A's side."""
    a = C4jaxPlayer(seed + 1, budget=budget, **changed)
    b = C4jaxPlayer(seed + 2, budget=budget)
    a.warm_up()
    b.warm_up()
    wins = draws = losses = 0
    from rich.progress import Progress

    with Progress(transient=True) as progress:
        task = progress.add_task(json.dumps(changed), total=games)
        for g in range(games):
            a_first = g % 2 == 0
            env = c4jax.games.connect4.env_reset()
            a.new_game(env, jax.random.fold_in(jax.random.key(seed + 1), g))
            b.new_game(env, jax.random.fold_in(jax.random.key(seed + 2), g))
            ply = 0
            while not bool(env.done):
                mover = a if (ply % 2 == 0) == a_first else b
                action = mover.act(env, ply)
                a.observe(action)
                b.observe(action)
                env, _, _ = c4jax.games.connect4.env_step(env, action)
                ply += 1
            winner = int(env.winner)
            if winner not in (0, 1):
                draws += 1
            elif (winner == 0) == a_first:
                wins += 1
            else:
                losses += 1
            progress.advance(task)
    score = (wins + draws / 2) / games
    lo, hi = wilson(score, games)
    return dict(
        change=changed, budget_s=budget, games=games, wins=wins, draws=draws, losses=losses, score=score,
        wilson_low=lo, wilson_high=hi,
        changed_median_move_s=statistics.median(a.times), defaults_median_move_s=statistics.median(b.times),
        changed_median_sims=statistics.median(a.sims_done), defaults_median_sims=statistics.median(b.sims_done),
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--budget", type=float, default=0.05, help="seconds per move (both sides)")
    p.add_argument("--games", type=int, default=100, help="games per row (even)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--change", action="append", default=[], metavar="NAME=VALUE",
                   help="one option changed from the defaults (repeatable; one row each; JSON values)")
    p.add_argument("--out-json", type=pathlib.Path, default=HERE / "defaults_per_second.json")
    args = p.parse_args(argv)
    if args.games < 2 or args.games % 2:
        p.error("--games must be an even number >= 2")
    if not args.change:
        p.error("give at least one --change NAME=VALUE")
    rows = []
    for item in args.change:
        name, sep, value = item.partition("=")
        if not sep:
            p.error(f"--change takes NAME=VALUE; got {item!r}")
        try:
            changed = {name: json.loads(value)}
        except json.JSONDecodeError:
            p.error(f"--change {name}: the value must be JSON (quote strings); got {value!r}")
        try:  # a bad option fails before any game
            options_from_kwargs(changed)
        except ValueError as e:
            p.error(str(e))
        row = match(changed, args.budget, args.games, args.seed)
        rows.append(row)
        print(json.dumps(row), flush=True)
    args.out_json.write_text(json.dumps(dict(rows=rows, jax=jax.__version__), indent=1) + "\n")
    print()
    print("| change from the defaults | W/D/L | score (95% Wilson) | ms/move changed / defaults | sims/move (median) changed / defaults |")
    print("|---|---|---|---|---|")
    for r in rows:
        (name, value), = r["change"].items()
        print(
            f"| `{name}={value!r}` | {r['wins']}/{r['draws']}/{r['losses']} | {r['score']:.0%} "
            f"({r['wilson_low']:.0%}-{r['wilson_high']:.0%}) | {r['changed_median_move_s'] * 1e3:.1f} / "
            f"{r['defaults_median_move_s'] * 1e3:.1f} | {r['changed_median_sims']:.0f} / {r['defaults_median_sims']:.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
