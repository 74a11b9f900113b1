"""What a trained evaluation network buys: a learning curve over training
minutes of ``c4jax.training.train`` from scratch.

The run trains in segments (``train(DIR, minutes=t)`` resumes the run in
DIR, so the evaluations are not training time) and after each segment
evaluates the best network (``c4jax.training.load``):

``net:N`` searches N simulations with the network as ``load`` gives it: its
prior, on Connect 4 over a temperature (``--prior-temperature``, default
``c4jax.training.CONNECT4_PRIOR_TEMPERATURE``; 1: as trained) and its value
mixed with a rollout (``--rollout-weight``, default
``c4jax.training.CONNECT4_ROLLOUT_WEIGHT``; 0: the value alone).

Connect 4 (any size):
  * ``net:N`` against the default rollout search ``mcts:N`` at equal
    simulations (``--sims``, default 200 and 800), ``--games`` games, both
    colours alternating: W/D/L, score with a 95% Wilson interval;
  * the network alone, its prior's most likely legal move (no search),
    against ``mcts:200`` (``--games`` games) and its optimal-move share on the
    330 perfect-play positions;
  * the optimal-move share of ``net:1000`` and of the rollout defaults
    ``mcts:1000`` on the 330 positions (standard board only), each the mean
    over ``--share-keys`` search keys (the same keys for both);
  * at the last point only: equal time, both sides ``run_mcts_anytime`` with
    ``--think`` seconds per move and subtree reuse (``--equal-time-games``).
Tic-tac-toe: ``net:64`` against the perfect player (``--games`` games, both
colours), and against ``mcts:64``.

Also: self-play games/s, training steps/s and where the training time goes
(self-play, optimiser, gate), from the run's curve.

Run:  python benchmarks/training.py --game tictactoe --minutes 5 --eval-every 1
      python benchmarks/training.py --minutes 120 --eval-every 15
      (a finished run is evaluated again without training, at its end only:
      the same --out and --minutes, e.g. with another --rollout-weight)
      (``--quick``: a smoke run, tic-tac-toe, half a minute, 20 games.)
Writes ``DIR/benchmark.json`` (``--out``, default ``runs/<game>``;
``benchmark-w<W>-t<T>.json`` with ``--rollout-weight W`` or
``--prior-temperature T``) and prints
markdown tables (``benchmarks/README.md#training``); ``--plot`` a PNG.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import c4jax
from c4jax.games import connect4, tictactoe
from c4jax.tools.stats import wilson_interval
from c4jax.training import load, train
from c4jax.training.network import prior_fn

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from equal_time import C4jaxPlayer  # noqa: E402

POSITIONS = pathlib.Path(c4jax.__file__).parent / "data" / "connect4_positions.jsonl"


def arena_row(a, b, games: int, env, seed: int = 1) -> dict:
    r = c4jax.arena(jax.random.key(seed), a, b, games, env)
    return {"a": r.player_a, "b": r.player_b, "games": games, "wdl": [r.wins, r.draws, r.losses],
            "score": r.score, "score_ci": wilson_interval(r.wins + 0.5 * r.draws, games),
            "seconds": r.seconds}


def prior_player(trained) -> c4jax.Player:
    """The network alone: its prior's most likely legal move."""
    game = trained.game

    def policy(key, env, params):
        logits = prior_fn(params, env)
        return jnp.argmax(jnp.where(game.legal_action_mask(env), logits, -jnp.inf)).astype(jnp.int32)

    def act(keys, envs, state, params):
        return jax.vmap(policy, in_axes=(0, 0, None))(keys, envs, params), state

    return c4jax.Player(name="prior", act=act, params=trained.params)


def positions():
    recs = [json.loads(line) for line in POSITIONS.read_text().splitlines() if line.strip()]
    envs = jax.tree.map(lambda *xs: jnp.stack(xs), *[connect4.from_moves(r["moves"]) for r in recs])
    return recs, envs


def optimal_share(actions, recs) -> dict:
    hits = np.array([int(a) in r["best"] for a, r in zip(np.asarray(actions), recs, strict=True)])
    return {"share": float(hits.mean()), "ci": wilson_interval(int(hits.sum()), len(recs)), "n": len(recs)}


def search_share(recs, envs, sims: int, options: dict, keys: int) -> dict:
    """The optimal-move share of ``run_mcts`` with ``options``, the mean over
    search keys ``0 .. keys - 1``; its interval pools their moves."""
    shares = [optimal_share(c4jax.run_mcts(jax.random.key(k), envs, sims, **options).action, recs)["share"]
              for k in range(keys)]
    hits = round(sum(shares) * len(recs))
    return {"share": float(np.mean(shares)), "shares": shares, "ci": wilson_interval(hits, keys * len(recs)),
            "n": len(recs), "keys": keys}


def prior_share(recs, envs, trained) -> dict:
    logits = jax.vmap(lambda e: prior_fn(trained.params, e))(envs)
    legal = jax.vmap(connect4.legal_action_mask)(envs)
    return optimal_share(jnp.argmax(jnp.where(legal, logits, -jnp.inf), axis=1), recs)


def equal_time(trained, think: float, games: int, seed: int = 7) -> dict:
    """``games`` games (colours alternating) of the network and the rollout
    defaults, both anytime with ``think`` seconds per move and subtree reuse."""
    game = trained.game
    net = C4jaxPlayer(seed, budget=think, **trained.search_options())
    rollouts = C4jaxPlayer(seed + 1, budget=think)
    for p in (net, rollouts):
        p.game = game
        p.warm_up()
    wdl = [0, 0, 0]
    sims = {"net": [], "rollouts": []}
    for g in range(games):
        env = game.env_reset()
        first, second = (net, rollouts) if g % 2 == 0 else (rollouts, net)
        for p in (first, second):
            p.new_game(env, jax.random.fold_in(jax.random.key(seed), g))
        ply = 0
        while not bool(env.done):
            mover = first if ply % 2 == 0 else second
            a = mover.act(env, ply)
            (second if mover is first else first).observe(a)
            env = game.env_step(env, a)[0]
            ply += 1
        winner = int(env.winner)
        net_side = 0 if g % 2 == 0 else 1
        wdl[0 if winner == net_side else 2 if winner >= 0 else 1] += 1
    sims["net"], sims["rollouts"] = net.sims_done, rollouts.sims_done
    score = (wdl[0] + 0.5 * wdl[1]) / games
    return {"think": think, "games": games, "wdl": wdl, "score": score,
            "score_ci": wilson_interval(wdl[0] + 0.5 * wdl[1], games),
            "median_sims": {k: float(np.median(v)) if v else 0.0 for k, v in sims.items()}}


def evaluate(trained, game, args, recs, envs, baseline, last: bool) -> dict:
    ev: dict = {"iteration": trained.iteration, "rollout_weight": trained.rollout_weight,
                "prior_temperature": trained.prior_temperature}
    options = trained.search_options()
    if game.name == "tictactoe":
        net = c4jax.mcts_player(64, name="net:64", **options)
        ev["vs_perfect"] = arena_row(net, c4jax.perfect_player(), args.games, game.env_reset())
        ev["vs_mcts"] = arena_row(net, c4jax.mcts_player(64), args.games, game.env_reset())
        ev["prior_vs_perfect"] = arena_row(prior_player(trained), c4jax.perfect_player(), args.games,
                                           game.env_reset())
        return ev
    for n in args.sims:
        ev[f"vs_mcts_{n}"] = arena_row(c4jax.mcts_player(n, name=f"net:{n}", **options), c4jax.mcts_player(n),
                                       args.games, game.env_reset())
    ev["prior_vs_mcts_200"] = arena_row(prior_player(trained), c4jax.mcts_player(200), args.games,
                                        game.env_reset())
    if recs is not None:
        ev["prior_optimal"] = prior_share(recs, envs, trained)
        ev["net_1000_optimal"] = search_share(recs, envs, 1000, options, args.share_keys)
        ev["rollouts_1000_optimal"] = baseline
    if last and args.equal_time_games:
        ev["equal_time"] = equal_time(trained, args.think, args.equal_time_games)
    return ev


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def ci(c) -> str:
    return f"[{100 * c[0]:.0f}, {100 * c[1]:.0f}]"


def table(points: list[dict], game) -> str:
    if game.name == "tictactoe":
        head = ("| minutes | iteration | net:64 vs perfect W/D/L | net:64 vs mcts:64 score | "
                "prior alone vs perfect W/D/L |\n|---:|---:|---|---|---|\n")
        return head + "".join(
            f"| {p['minutes']:.1f} | {p['eval']['iteration']} | "
            f"{'/'.join(map(str, p['eval']['vs_perfect']['wdl']))} | "
            f"{pct(p['eval']['vs_mcts']['score'])} {ci(p['eval']['vs_mcts']['score_ci'])} | "
            f"{'/'.join(map(str, p['eval']['prior_vs_perfect']['wdl']))} |\n" for p in points)
    sims = [k for k in points[0]["eval"] if k.startswith("vs_mcts_")]
    cols = [f"net:{k[8:]} vs mcts:{k[8:]}" for k in sims] + ["prior vs mcts:200"]
    with_pos = "prior_optimal" in points[0]["eval"]
    if with_pos:
        cols += ["optimal: prior", "optimal: net:1000", "optimal: mcts:1000"]
    out = ("| minutes | iteration | rollout weight | prior temperature | " + " | ".join(cols) + " |\n|---:|---:|---:|---:|"
           + "---|" * len(cols) + "\n")
    for p in points:
        e = p["eval"]
        cells = [f"{pct(e[k]['score'])} {ci(e[k]['score_ci'])}" for k in sims + ["prior_vs_mcts_200"]]
        if with_pos:
            cells += [pct(e[k]["share"]) for k in ("prior_optimal", "net_1000_optimal", "rollouts_1000_optimal")]
        out += (f"| {p['minutes']:.1f} | {e['iteration']} | {e['rollout_weight']:g} | {e['prior_temperature']:g} | "
                + " | ".join(cells) + " |\n")
    return out


def where_time_goes(curve: list[dict]) -> str:
    total = {k: sum(e[k] for e in curve) for k in ("selfplay_seconds", "train_seconds", "gate_seconds")}
    whole = sum(total.values())
    games = sum(e["games"] for e in curve)
    steps = sum(e["train_steps_per_second"] * e["train_seconds"] for e in curve)
    return (f"{len(curve)} iterations, {whole / 60:.1f} training minutes: self-play {pct(total['selfplay_seconds'] / whole)}"
            f" ({games:,} games, {games / total['selfplay_seconds']:.1f} games/s), optimiser "
            f"{pct(total['train_seconds'] / whole)} ({steps / total['train_seconds']:.1f} steps/s), gate "
            f"{pct(total['gate_seconds'] / whole)}; the gate passed {sum(e['accepted'] for e in curve)} times")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--game", choices=("connect4", "tictactoe"), default="connect4")
    p.add_argument("--rows", type=int, default=None)
    p.add_argument("--cols", type=int, default=None)
    p.add_argument("--connect", type=int, default=None)
    p.add_argument("--minutes", type=float, default=120.0, help="training minutes in all")
    p.add_argument("--eval-every", type=float, default=15.0, help="training minutes between evaluations")
    p.add_argument("--games", type=int, default=200, help="games per arena evaluation (even)")
    p.add_argument("--sims", type=int, nargs="+", default=[200, 800])
    p.add_argument("--think", type=float, default=0.5, help="seconds per move at equal time")
    p.add_argument("--equal-time-games", type=int, default=40, help="0: no equal-time match")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rollout-weight", type=float, default=None,
                   help="the rollout's share in net:N's leaf values, 0..1 (default: c4jax.training.load's)")
    p.add_argument("--prior-temperature", type=float, default=None,
                   help="net:N's prior temperature, > 0 (default: c4jax.training.load's)")
    p.add_argument("--share-keys", type=int, default=4, help="search keys per optimal-move share")
    p.add_argument("--out", default=None, help="the run's folder (default runs/<game>); resumed if it holds one")
    p.add_argument("--plot", default=None, help="write the curves as a PNG")
    p.add_argument("--quick", action="store_true", help="smoke run: tic-tac-toe, 0.5 minutes, 20 games")
    args = p.parse_args(argv)
    if args.rollout_weight is not None and not 0.0 <= args.rollout_weight <= 1.0:  # nan too, before training
        p.error(f"--rollout-weight must be a number in [0, 1]; got {args.rollout_weight}")
    if args.prior_temperature is not None and not 0.0 < args.prior_temperature < float("inf"):
        p.error(f"--prior-temperature must be a finite number > 0; got {args.prior_temperature}")
    if args.share_keys < 1:
        p.error(f"--share-keys must be an int >= 1; got {args.share_keys}")
    if args.quick:
        args.game, args.minutes, args.eval_every, args.games, args.equal_time_games = "tictactoe", 0.5, 0.5, 20, 0
    sizes = {k: v for k in ("rows", "cols", "connect") if (v := getattr(args, k)) is not None}
    game = c4jax.make(args.game, **sizes)
    folder = pathlib.Path(args.out or f"runs/{args.game}")
    standard = game == connect4.make()
    recs, envs = positions() if standard else (None, None)
    baseline = search_share(recs, envs, 1000, {}, args.share_keys) if standard else None

    points = []
    t = 0.0
    while t < args.minutes - 1e-9:
        t = min(args.minutes, t + args.eval_every)
        t0 = time.perf_counter()
        result = train(folder, game, minutes=t, seed=args.seed, progress=sys.stderr.isatty())
        wall = time.perf_counter() - t0
        last = t >= args.minutes - 1e-9
        if not last and result.curve[-1]["minutes"] >= args.minutes - 1e-9:
            continue  # a finished run evaluated again: its one point is the last
        trained = load(folder, game, rollout_weight=args.rollout_weight, prior_temperature=args.prior_temperature)
        t1 = time.perf_counter()
        ev = evaluate(trained, game, args, recs, envs, baseline, last=last)
        point = {"minutes": result.curve[-1]["minutes"], "train_wall_seconds": wall,
                 "eval_seconds": time.perf_counter() - t1, "eval": ev}
        points.append(point)
        print(f"-- {point['minutes']:.1f} training minutes, iteration {result.iteration}: "
              f"{json.dumps(ev)[:400]}", flush=True)
        name = "benchmark" + "".join(f"-{tag}{v:g}" for tag, v in (("w", args.rollout_weight),
                                                                   ("t", args.prior_temperature)) if v is not None)
        name += ".json"
        (folder / name).write_text(json.dumps({"game": args.game, "sizes": sizes, "points": points,
                                                           "curve": list(result.curve)}, indent=1))
    curve = list(result.curve)
    print()
    print(table(points, game))
    print(where_time_goes(curve))
    if points[-1]["eval"].get("equal_time"):
        e = points[-1]["eval"]["equal_time"]
        print(f"\nequal time, {e['think']:g} s per move, {e['games']} games: W/D/L {'/'.join(map(str, e['wdl']))}, "
              f"score {pct(e['score'])} {ci(e['score_ci'])}, median simulations per move {e['median_sims']}")
    if args.plot:
        plot(points, game, args.plot)
    return 0


def plot(points: list[dict], game, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), constrained_layout=True)
    minutes = [p["minutes"] for p in points]
    keys = (["vs_perfect", "vs_mcts", "prior_vs_perfect"] if game.name == "tictactoe"
            else [k for k in points[0]["eval"] if k.startswith("vs_mcts_") or k == "prior_vs_mcts_200"])
    for k in keys:
        ax.plot(minutes, [p["eval"][k]["score"] for p in points], marker="o", label=k.replace("_", " "))
    if "prior_optimal" in points[0]["eval"]:
        for k in ("prior_optimal", "net_1000_optimal", "rollouts_1000_optimal"):
            ax.plot(minutes, [p["eval"][k]["share"] for p in points], ls="--", label=k.replace("_", " "))
    ax.axhline(0.5, color="grey", lw=0.5)
    ax.set_ylim(0, 1)
    ax.set_xlabel("training minutes")
    ax.set_ylabel("score / optimal-move share")
    ax.legend(fontsize=7)
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    raise SystemExit(main())
