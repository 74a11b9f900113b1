"""Where a simulation's time goes: the search with its parts switched on one by one.

Connect 4 from the empty board, on ONE device (one core), at batch 1 (1,000
simulations) and at a batch (default 1,024 x 200, its games searched one
after another as on every CPU device; split over the cores, each core does
this for its share).  Each row adds one
part to the row above it; the difference is that part's cost:

  tree         PUCT descent, expansion and backup; no solver, leaf value 0
  + solver     the solver's proofs and bounds
  + rollouts   one uniform random rollout per leaf (OpenSpiel's work per simulation)
  + prior      the heuristic prior (win, else block)
  = defaults   + the threat-aware rollout policy (win, else block): run_mcts's defaults

The programs are compiled first (compile seconds reported apart) and then
called in turn, ``--repeats`` rounds, so that a drift in the machine's speed
hits every row alike; medians.

A second table times the rollout alone, the part of a simulation that a
vectorised batch suits best (bit-board words, no tree): one rollout from
each of ``--batch`` random 10-ply positions, in one program either
vectorised over the batch (``jit(vmap(rollout))``) or one game after
another (``jit(lax.map(rollout))``, as a CPU device searches its games),
both rollout policies, on the same device; microseconds per rollout.

Run:  C4JAX_CPU_DEVICES=1 python benchmarks/simulation_breakdown.py [--batch 1024] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("C4JAX_CPU_DEVICES", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from c4jax.games import connect4  # noqa: E402

from c4jax.runtime import xla_flags
from c4jax.search.values import rollout_function  # noqa: E402
from c4jax.search.run import prepare_search  # noqa: E402
from c4jax.search.programs import compile_stages  # noqa: E402


def _zero(key, env):
    return jnp.float32(0)


ROWS = (
    ("tree", dict(prior="uniform", solver=False, value_fn=_zero)),
    ("+ solver", dict(prior="uniform", value_fn=_zero)),
    ("+ rollouts (uniform)", dict(prior="uniform", rollout_policy="uniform")),
    ("+ prior (heuristic)", dict(rollout_policy="uniform")),
    ("= defaults", dict()),
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--batch-sims", type=int, default=200)
    ap.add_argument("--single-sims", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    print(f"jax {jax.__version__}, {jax.device_count()} device(s), {os.cpu_count()} cores")
    shapes = ((1, args.single_sims), (args.batch, args.batch_sims))
    programs = {}
    for b, n in shapes:
        env = connect4.env_reset()
        if b > 1:
            env = jax.tree.map(lambda x: jnp.broadcast_to(x, (b,) + x.shape), env)
        for name, opts in ROWS:
            keys, envs, tree, o, _ = prepare_search(jax.random.key(0), env, n, None, dict(opts))
            t0 = time.perf_counter()
            # The programs run_mcts compiles, on one device.
            fn = compile_stages(keys, envs, tree, None, o, n, False, None,
                                 xla_flags.compiler_options(jax.default_backend()))
            args_ = (keys, envs, tree, jnp.int32(n))
            jax.block_until_ready(fn(*args_))
            programs[(b, n, name)] = (fn, args_, time.perf_counter() - t0)
    times = {k: [] for k in programs}
    for _ in range(args.repeats):
        for k, (fn, a, _) in programs.items():
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*a))
            times[k].append(time.perf_counter() - t0)
    for b, n in shapes:
        print(f"\nbatch {b} x {n} simulations, one device")
        print(f"| part | us per simulation per game | added | compile + first call |")
        print("|---|---:|---:|---:|")
        prev = 0.0
        for name, _ in ROWS:
            us = statistics.median(times[(b, n, name)]) / (b * n) * 1e6
            print(f"| {name} | {us:.2f} | {us - prev:+.2f} | {programs[(b, n, name)][2]:.1f} s |")
            prev = us
    rollout_table(args.batch, args.repeats)


def random_positions(batch: int, plies: int = 10):
    """``batch`` Connect 4 positions after ``plies`` uniformly random moves
    (a game that ends sooner stays finished)."""
    game = connect4.make()

    def one(key):
        def ply(env, k):
            legal = game.legal_action_mask(env)
            action = jnp.argmax(jnp.where(legal, jax.random.uniform(k, legal.shape), -1.0))
            stepped, _, _ = game.env_step(env, action)
            return jax.tree.map(lambda old, new: jnp.where(env.done, old, new), env, stepped), None

        return jax.lax.scan(ply, game.env_reset(), jax.random.split(key, plies))[0]

    return jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(1), batch))


def rollout_table(batch: int, repeats: int) -> None:
    envs = random_positions(batch)
    game = connect4.make()
    programs = {}
    for policy in ("uniform", "threat_aware"):
        rollout = rollout_function(game, policy)
        for layout, fn in (("vectorised over the batch", jax.vmap(rollout)),
                           ("one game after another", lambda k, e, r=rollout: jax.lax.map(lambda a: r(*a), (k, e)))):
            t0 = time.perf_counter()
            compiled = jax.jit(fn).lower(jax.random.split(jax.random.key(0), batch), envs).compile(
                xla_flags.compiler_options(jax.default_backend()))
            jax.block_until_ready(compiled(jax.random.split(jax.random.key(0), batch), envs))
            programs[(policy, layout)] = (compiled, time.perf_counter() - t0, [])
    for r in range(repeats):
        keys = jax.random.split(jax.random.key(r + 2), batch)
        for compiled, _, times in programs.values():
            t0 = time.perf_counter()
            jax.block_until_ready(compiled(keys, envs))
            times.append(time.perf_counter() - t0)
    print(f"\nrollouts alone, {batch} random 10-ply positions, one device")
    print("| rollout policy | program | us per rollout | compile + first call |")
    print("|---|---|---:|---:|")
    for (policy, layout), (_, compile_s, times) in programs.items():
        print(f"| {policy} | {layout} | {statistics.median(times) / batch * 1e6:.2f} | {compile_s:.1f} s |")


if __name__ == "__main__":
    main()
