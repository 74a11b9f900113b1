"""Equal thinking time: c4jax against OpenSpiel's C++ MCTSBot on Connect 4 (7x6).

c4jax plays with ``run_mcts``'s defaults through the anytime driver
(``c4jax.run_mcts_anytime``, a wall-clock budget per move), one game at a
time, with subtree reuse (the tree of the position reached is kept between
moves: ``get_subtree`` after each move of either side).  OpenSpiel's
``MCTSBot`` (via ``pyspiel``): UCT c = 2, one random rollout per leaf,
``solve=True``, one thread, a fixed simulation count.

Calibration, in the same run: c4jax's time per move (the driver's call plus
its tree cuts, from being shown the position to answering) is measured over
two calibration games at the budget; OpenSpiel's microseconds per simulation
over the same positions; OpenSpiel's simulation count is then set so that
its median time per move matches c4jax's, and after every pair of games of
the match rescaled by the ratio of the two medians so far (the machine is
shared).  Both medians over the match are reported, with OpenSpiel's median
and range of simulation counts; a setting counts only if the medians are
within 15%.

Per setting: ``--games`` games (even; colours alternate, c4jax moves first in
the even games), W/D/L for c4jax, its score (wins + half the draws) with a
95% Wilson interval, both median times per move and the simulation counts.
Also, unless ``--no-equal-sims``: the same match at equal simulations
(c4jax with ``run_mcts`` at OpenSpiel's count of the first setting).

Run:  python benchmarks/equal_time.py [--budgets 0.05 0.5] [--games 40] [--quick]
      (``--quick``: 4 games at 0.05 s, a smoke run).
Writes ``benchmarks/equal_time.json`` and prints a markdown table
(``benchmarks/README.md#equal-thinking-time``).
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import statistics
import sys
import time

import jax
import numpy as np

import c4jax

HERE = pathlib.Path(__file__).resolve().parent
TARGET = 0.90  # the score a setting needs at 50 ms and at 500 ms per move (100 games each)


def wilson(score: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion ``score`` over ``n`` games."""
    if n == 0:
        return 0.0, 1.0
    centre = (score + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(score * (1 - score) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


class C4jaxPlayer:
    """c4jax with subtree reuse: ``budget`` seconds per move (anytime), or
    ``sims`` simulations per move (``run_mcts``)."""

    def __init__(self, seed: int, budget: float | None = None, sims: int | None = None, **options):
        self.game = c4jax.games.connect4
        self.budget, self.sims, self.options = budget, sims, options
        self.key = jax.random.key(seed)
        self.capacity = (
            c4jax.search.anytime.anytime_capacity(budget, 128) if budget else 2 * sims + 2
        )
        self._cut = jax.jit(c4jax.get_subtree)
        if sims:
            self._search = jax.jit(
                lambda k, e, t: c4jax.run_mcts(k, e, sims, tree=t, **options)
            )
        self.sims_done: list[int] = []
        self.times: list[float] = []
        self.driver_times: list[float] = []

    def new_game(self, env, game_key) -> None:
        self.key = game_key
        envs = jax.tree.map(lambda x: x[None], env)
        self.tree = c4jax.empty_tree(envs, self.capacity)
        self.pending: list[int] = []

    def observe(self, action: int) -> None:
        self.pending.append(action)

    def act(self, env, ply: int) -> int:
        t = time.perf_counter()
        for a in self.pending:
            self.tree = self._cut(self.tree, np.array([a], np.int32))
        self.pending = []
        envs = jax.tree.map(lambda x: x[None], env)
        key = jax.random.fold_in(self.key, ply)
        if self.budget:
            t_driver = time.perf_counter()
            out, n = c4jax.run_mcts_anytime(key, envs, self.budget, tree=self.tree, **self.options)
            self.driver_times.append(time.perf_counter() - t_driver)
        else:
            out, n = self._search(key, envs, self.tree), self.sims
        action = int(out.action[0])
        self.tree = out.search_tree
        self.times.append(time.perf_counter() - t)
        self.sims_done.append(n)
        return action

    def warm_up(self) -> None:
        env = self.game.env_reset()
        self.new_game(env, jax.random.key(0))
        self.act(env, 0)
        self.observe(3)
        self.observe(3)
        self.act(self.game.from_moves([4, 4]), 2)
        self.times.clear()
        self.sims_done.clear()
        self.driver_times.clear()


class OpenSpielPlayer:
    def __init__(self, sims: int, seed: int):
        import pyspiel

        self.pyspiel = pyspiel
        self.game = pyspiel.load_game("connect_four")
        self.sims = sims
        self.seed = seed
        self.times: list[float] = []
        self.sims_used: list[int] = [sims]

    def new_game(self, game_seed: int) -> None:
        p = self.pyspiel
        self.bot = p.MCTSBot(
            self.game, p.RandomRolloutEvaluator(1, game_seed), 2.0, self.sims, 4000, True, game_seed, False
        )

    def act(self, state) -> int:
        t = time.perf_counter()
        action = self.bot.step(state)
        self.times.append(time.perf_counter() - t)
        return int(action)


def play_match(c4: C4jaxPlayer, os_player: OpenSpielPlayer, games: int, seed: int, label: str,
               recalibrate: bool = False) -> dict:
    """``games`` games, colours alternating; W/D/L from c4jax's side.
    ``recalibrate``: after each pair of games, OpenSpiel's simulation count
    is rescaled so that its median time per move so far matches c4jax's."""
    import pyspiel

    from rich.progress import Progress

    game = pyspiel.load_game("connect_four")
    wins = draws = losses = 0
    lengths = []
    with Progress(transient=True) as progress:
        task = progress.add_task(label, total=games)
        for g in range(games):
            c4_first = g % 2 == 0
            state = game.new_initial_state()
            env = c4jax.games.connect4.env_reset()
            c4.new_game(env, jax.random.fold_in(jax.random.key(seed), g))
            os_player.new_game(seed * 1000 + g)
            ply = 0
            if g % 2 == 0 and g and recalibrate and c4.times and os_player.times:
                # Keep OpenSpiel's median time per move on c4jax's.
                ratio = statistics.median(c4.times) / statistics.median(os_player.times)
                os_player.sims = max(10, int(os_player.sims * ratio))
                os_player.sims_used.append(os_player.sims)
            while not state.is_terminal():
                c4_turn = (state.current_player() == 0) == c4_first
                if c4_turn:
                    action = c4.act(env, ply)
                else:
                    action = os_player.act(state)
                    # MCTSBot advances with the state it is shown; keep c4jax's tree in step.
                c4.observe(action)
                state.apply_action(action)
                env, _, _ = c4jax.games.connect4.env_step(env, action)
                ply += 1
            returns = state.returns()
            mine = returns[0] if c4_first else returns[1]
            wins += mine > 0
            draws += mine == 0
            losses += mine < 0
            lengths.append(ply)
            progress.advance(task)
    score = (wins + 0.5 * draws) / games
    lo, hi = wilson(score, games)
    return dict(
        games=games, wins=int(wins), draws=int(draws), losses=int(losses), score=score,
        wilson_low=lo, wilson_high=hi, mean_plies=statistics.mean(lengths),
    )


def calibrate_openspiel(c4_median_s: float, seed: int, positions: list[list[int]]) -> tuple[int, float]:
    """OpenSpiel's simulation count for a median time per move of
    ``c4_median_s`` over ``positions`` (move lists): its us/simulation
    measured there at 2,000 simulations, then checked once and rescaled."""
    import pyspiel

    game = pyspiel.load_game("connect_four")

    def median_time(sims: int) -> float:
        times = []
        for i, moves in enumerate(positions):
            bot = pyspiel.MCTSBot(game, pyspiel.RandomRolloutEvaluator(1, seed + i), 2.0, sims, 4000, True,
                                  seed + i, False)
            state = game.new_initial_state()
            for m in moves:
                state.apply_action(m)
            t = time.perf_counter()
            bot.step(state)
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    probe = 2000
    per_sim = median_time(probe) / probe
    sims = max(10, int(c4_median_s / per_sim))
    for _ in range(2):
        t = median_time(sims)
        sims = max(10, int(sims * c4_median_s / t))
    return sims, per_sim * 1e6


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--budgets", type=float, nargs="+", default=[0.05, 0.5], help="c4jax seconds per move")
    p.add_argument("--games", type=int, default=40, help="games per setting (even)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-equal-sims", action="store_true", help="skip the match at equal simulations")
    p.add_argument("--quick", action="store_true", help="4 games at 0.05 s (a smoke run)")
    p.add_argument("--out-json", type=pathlib.Path, default=HERE / "equal_time.json")
    p.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                   help="a run_mcts option for c4jax (repeatable; values parsed as JSON), e.g. num_rollouts=2")
    args = p.parse_args(argv)
    if args.quick:
        args.budgets, args.games = [0.05], 4
    if args.games < 2 or args.games % 2:
        p.error("--games must be an even number >= 2")
    options = {}
    for item in args.option:
        name, _, value = item.partition("=")
        try:
            options[name] = json.loads(value)
        except json.JSONDecodeError:
            options[name] = value

    results = []
    for budget in args.budgets:
        c4 = C4jaxPlayer(args.seed, budget=budget, **options)
        t = time.perf_counter()
        c4.warm_up()
        compile_s = time.perf_counter() - t
        # Calibration: two games of c4jax against itself at the budget.
        positions = []
        for g in range(2):
            env = c4jax.games.connect4.env_reset()
            c4.new_game(env, jax.random.key(10_000 + g))
            moves: list[int] = []
            while not bool(env.done):
                positions.append(list(moves))
                a = c4.act(env, len(moves))
                c4.observe(a)
                moves.append(a)
                env, _, _ = c4jax.games.connect4.env_step(env, a)
        c4_median = statistics.median(c4.times)
        os_sims, os_us = calibrate_openspiel(c4_median, args.seed, positions)
        c4.times.clear()
        c4.sims_done.clear()
        c4.driver_times.clear()
        os_player = OpenSpielPlayer(os_sims, args.seed)
        match = play_match(c4, os_player, args.games, args.seed, f"{budget * 1000:.0f} ms per move",
                           recalibrate=True)
        c4_med, os_med = statistics.median(c4.times), statistics.median(os_player.times)
        row = dict(
            setting=f"equal time, {budget * 1000:.0f} ms", budget_s=budget, options=options,
            c4jax_median_move_s=c4_med, openspiel_median_move_s=os_med,
            time_ratio=c4_med / os_med, c4jax_median_sims=statistics.median(c4.sims_done),
            driver_median_s=statistics.median(c4.driver_times), driver_max_s=max(c4.driver_times),
            driver_over_budget=sum(t > budget for t in c4.driver_times) / len(c4.driver_times),
            openspiel_sims=int(statistics.median(os_player.sims_used)), openspiel_sims_range=[
                min(os_player.sims_used), max(os_player.sims_used)], openspiel_us_per_sim=os_us, c4jax_compile_s=compile_s, **match,
        )
        row["calibrated"] = abs(row["time_ratio"] - 1) <= 0.15
        results.append(row)
        print(json.dumps(row), flush=True)
    if not args.no_equal_sims:
        sims = results[0]["openspiel_sims"]
        c4 = C4jaxPlayer(args.seed, sims=sims, **options)
        c4.warm_up()
        os_player = OpenSpielPlayer(sims, args.seed)
        match = play_match(c4, os_player, args.games, args.seed, f"{sims} simulations each")
        row = dict(
            setting=f"equal simulations, {sims}", budget_s=None, options=options,
            c4jax_median_move_s=statistics.median(c4.times),
            openspiel_median_move_s=statistics.median(os_player.times),
            c4jax_median_sims=sims, openspiel_sims=sims, **match,
        )
        row["time_ratio"] = row["c4jax_median_move_s"] / row["openspiel_median_move_s"]
        results.append(row)
        print(json.dumps(row), flush=True)

    args.out_json.write_text(json.dumps(dict(results=results, jax=jax.__version__), indent=1) + "\n")
    print()
    print("| setting | c4jax W/D/L | score (95% Wilson) | c4jax ms/move | OpenSpiel ms/move | c4jax sims/move (median) | OpenSpiel sims | target |")
    print("|---|---|---|---:|---:|---:|---:|---|")
    ok = True
    for r in results:
        timed = r["budget_s"] is not None
        passed = (r["score"] >= TARGET and r["calibrated"]) if timed else None
        ok &= passed is not False
        verdict = "-" if passed is None else ("PASS" if passed else "FAIL")
        print(
            f"| {r['setting']} | {r['wins']}/{r['draws']}/{r['losses']} | {r['score']:.0%} "
            f"({r['wilson_low']:.0%}-{r['wilson_high']:.0%}) | {r['c4jax_median_move_s'] * 1e3:.1f} | "
            f"{r['openspiel_median_move_s'] * 1e3:.1f} | {r['c4jax_median_sims']:.0f} | {r['openspiel_sims']} | {verdict} |"
        )
    print()
    for r in results:
        if r["budget_s"] is not None:
            print(
                f"{r['setting']}: the driver's call took {r['driver_median_s'] * 1e3:.1f} ms (median), "
                f"{r['driver_max_s'] * 1e3:.1f} ms at most; {r['driver_over_budget']:.0%} of the calls ran "
                f"over {r['budget_s'] * 1e3:.0f} ms (a chunk of 128 simulations: about "
                f"{r['budget_s'] * 1e3 * 128 / max(r['c4jax_median_sims'], 1):.1f} ms)"
            )
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
