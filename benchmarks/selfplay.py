"""Self-play throughput against the number of devices and the batch size:
games/s, simulations/s and plies/s (``c4jax.selfplay``).

For every number of devices ``D`` (``--devices``) and batch size ``B``
(``--batches``, games per compiled batch, sharded ``B / D`` per device):
``c4jax.selfplay`` of ``B`` games from the empty board, ``--simulations``
per move, subtree reuse, the first 8 plies sampled from the visit counts.

Method: the first call compiles (reported apart as "compile s", from
``SelfPlayResult.compile_seconds``, and its run is not timed); then
``--repeats`` timed calls round-robin over all (D, B), each with a new key
(new games, so their lengths vary: the figures are per ply and per game);
the time is ``SelfPlayResult.seconds`` (the games' play, every step ended by
reading its result on the host).  The median over the repeats is reported,
for all devices together and per device.

Next to it, in the same run: OpenSpiel's C++ ``MCTSBot`` (UCT c=2, one
random rollout per leaf, one thread) playing Connect 4 against itself at the
same simulations per move, ``--openspiel-games`` games (sims/s, games/s).

On a CPU machine ``import c4jax`` makes one CPU device per core
(:mod:`c4jax.runtime.xla_flags`), and ``--devices all`` (the default) takes them;
more than that are forced host devices (``--xla_force_host_platform_device_count``,
set by this script in a child process) that share the cores.  On a GPU or
TPU machine ``--devices all`` takes every device.

``--network``: the search evaluates with a small network instead of the
rollouts (``benchmarks/network.py``: an MLP 84-128-128, value and prior,
Connect 4 only), its weights an argument of the compiled game loop: every
timed call passes other weights of the same shapes, and the table counts the
compiles they caused (none expected).  ``--devices 1,2`` beside each other
show whether the devices share the work.

Run:  python benchmarks/selfplay.py [--devices all] [--batches 256,1024]
                                    [--simulations 200] [--game connect4]
                                    [--repeats 3] [--json FILE] [--quick]
      python benchmarks/selfplay.py --network --devices 1,2 --batches 256
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--devices", default="all", help="comma-separated device counts, or 'all' (the default)")
    p.add_argument("--batches", default="256,1024", help="comma-separated games per batch (default 256,1024)")
    p.add_argument("--simulations", type=int, default=200, help="simulations per move (default 200)")
    p.add_argument("--openspiel-games", type=int, default=10,
                   help="OpenSpiel self-play games at the same simulations (connect4; 0: none; default 10)")
    p.add_argument("--game", default="connect4", choices=("connect4", "tictactoe"))
    p.add_argument("--repeats", type=int, default=3, help="timed calls per point (median; default 3)")
    p.add_argument("--json", metavar="FILE", help="append one JSON line per point")
    p.add_argument("--quick", action="store_true", help="smoke run: batches 4,8, 16 simulations, 1 repeat")
    p.add_argument("--network", action="store_true",
                   help="evaluate with a small network (benchmarks/network.py), new weights every call")
    args = p.parse_args(argv)
    if args.network and args.game != "connect4":
        p.error("--network is a Connect 4 network")
    if args.quick:
        args.batches, args.simulations, args.repeats, args.openspiel_games = "4,8", 16, 1, 2
    if args.repeats < 1 or args.simulations < 1:
        p.error("--repeats and --simulations must be >= 1")

    import c4jax  # first: it sets XLA's CPU loop flag before JAX starts
    import jax

    if args.devices == "all":
        devices = [len(jax.local_devices())]
    else:
        devices = _ints(args.devices)
    have = len(jax.local_devices())
    if max(devices) > have:
        if jax.default_backend() != "cpu" or os.environ.get("C4JAX_BENCH_CHILD"):
            p.error(f"--devices {max(devices)}: this machine has {have} {jax.default_backend()} devices")
        # Forced host devices must be set before JAX starts: run in a child.
        env = dict(os.environ, C4JAX_BENCH_CHILD="1")
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={max(devices)}".strip()
        return subprocess.call([sys.executable, __file__, *(argv if argv is not None else sys.argv[1:])], env=env)

    from rich.console import Console
    from rich.table import Table

    log = Console(stderr=True, width=120).log
    game = c4jax.games.connect4 if args.game == "connect4" else c4jax.games.tictactoe
    batches = _ints(args.batches)
    points = [(d, b) for d in devices for b in batches if b % d == 0]
    skipped = [(d, b) for d in devices for b in batches if b % d]
    for d, b in skipped:
        log(f"skipping batch {b} on {d} devices: not a multiple")
    results: dict = {pt: [] for pt in points}
    compile_s: dict = {}

    network = {}
    if args.network:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from network import network_params, network_prior, network_value

        network = dict(value_fn=network_value, prior_fn=network_prior)

    def play(d, b, seed):
        if args.network:
            network["params"] = network_params(jax.random.key(seed))  # other weights every call
        return c4jax.selfplay(
            jax.random.key(seed), args.simulations, b, game.env_reset(), devices=d, batch_size=b,
            temperature_plies=8, **network,
        )

    for d, b in points:
        r = play(d, b, 0)
        compile_s[(d, b)] = r.compile_seconds
        log(f"compiled {d} device(s), batch {b}: {r.compile_seconds:.1f} s")
    compiles = c4jax.compiled_stats()["compiles"]
    for rep in range(args.repeats):
        for d, b in points:
            results[(d, b)].append(play(d, b, 1 + rep))
        log(f"round {rep + 1}/{args.repeats} done")
    timed_compiles = c4jax.compiled_stats()["compiles"] - compiles

    kind = jax.local_devices()[0].device_kind
    table = Table(
        title=f"c4jax self-play, {args.game}, {args.simulations} simulations per move, on {kind} "
        f"(median of {args.repeats})" + (", a network's value and prior, new weights every call" if args.network
                                        else ""),
        caption=f"compiles during the timed calls: {timed_compiles}",
    )
    for col in ("devices", "batch", "games/s", "sims/s", "plies/s", "sims/s per device", "plies per game",
                "compile s"):
        table.add_column(col, justify="right")
    rows = []
    for d, b in points:
        rs = results[(d, b)]
        games = statistics.median(r.games_per_second for r in rs)
        sims = statistics.median(r.simulations_per_second for r in rs)
        plies = statistics.median(r.plies_per_second for r in rs)
        length = statistics.mean(r.plies / len(r.games) for r in rs)
        table.add_row(str(d), str(b), f"{games:,.2f}", f"{sims:,.0f}", f"{plies:,.1f}", f"{sims / d:,.0f}",
                      f"{length:.1f}", f"{compile_s[(d, b)]:.1f}")
        rows.append(dict(
            benchmark="selfplay", network=args.network, game=args.game, simulations=args.simulations, devices=d, batch=b,
            games_per_s=round(games, 3), sims_per_s=round(sims, 1), plies_per_s=round(plies, 2),
            sims_per_s_per_device=round(sims / d, 1), plies_per_game=round(length, 2),
            compile_s=round(compile_s[(d, b)], 2), repeats=args.repeats, backend=jax.default_backend(),
            device_kind=kind, cpus=os.cpu_count(), python=platform.python_version(), jax=jax.__version__,
        ))
    Console(width=120).print(table)
    if args.openspiel_games and args.game == "connect4":
        ref = openspiel_selfplay(args.simulations, args.openspiel_games)
        Console(width=120).print(
            f"OpenSpiel C++ MCTSBot self-play, 1 thread, {args.simulations} simulations per move: "
            f"{ref['sims_per_s']:,.0f} sims/s, {ref['games_per_s']:.3f} games/s ({ref['games']} games, "
            f"{ref['plies_per_game']:.1f} plies per game); c4jax's sims/s against it: "
            + ", ".join(f"{r['devices']} device(s) x batch {r['batch']}: {r['sims_per_s'] / ref['sims_per_s']:.2f}x"
                        for r in rows))
        for row in rows:
            row["ratio_to_openspiel"] = round(row["sims_per_s"] / ref["sims_per_s"], 3)
        rows.append(ref)
    for row in rows:
        print(json.dumps(row))
    if args.json:
        with open(args.json, "a") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)
    return 0


def openspiel_selfplay(simulations: int, games: int, seed: int = 1) -> dict:
    """OpenSpiel's C++ MCTSBot against itself: ``games`` games of Connect 4,
    ``simulations`` per move, one thread; the time of its ``step`` calls."""
    import time

    import pyspiel

    game = pyspiel.load_game("connect_four")
    bot = pyspiel.MCTSBot(game, pyspiel.RandomRolloutEvaluator(1, seed), 2.0, simulations, 1000, False, seed, False)
    plies, seconds = 0, 0.0
    for _ in range(games):
        state = game.new_initial_state()
        while not state.is_terminal():
            t0 = time.perf_counter()
            action = bot.step(state)
            seconds += time.perf_counter() - t0
            state.apply_action(action)
            plies += 1
    return dict(benchmark="selfplay", player="openspiel", simulations=simulations, games=games,
                sims_per_s=round(plies * simulations / seconds, 1), games_per_s=round(games / seconds, 4),
                plies_per_game=round(plies / games, 2))


if __name__ == "__main__":
    sys.exit(main())
