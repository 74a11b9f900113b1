"""Search throughput on Connect 4 (7x6) from the empty board: simulations/s
at batch 1 to 4,096, against OpenSpiel's C++ MCTS in the same run.

Measured in one run, so that the ratios hold on a shared machine:

* OpenSpiel's C++ ``MCTSBot`` (via ``pyspiel``), UCT c=2, one random rollout
  per leaf, one thread: sims/s = simulations / time of ``bot.step(state)``,
  at 200 and at 1,000 simulations per move (the reference is their mean);
* ``c4jax.run_mcts`` called as a user calls it (from Python, not inside a
  ``jit`` of ours, so that a batch is laid out over the CPU's cores,
  :mod:`c4jax.search.programs`), a new key per call: batch 1 x 1,000
  simulations and batches 16, 64, 256, 1,024, 4,096 x 200, with the default
  options and with ``rollout_policy="uniform"`` (OpenSpiel's work per
  simulation: one uniformly random rollout per leaf);
* ``--naive``: also the naive mctx recipe (``benchmarks/naive_mctx_recipe.py``)
  at batch 1 and 256;
* ``--calls LIST`` (a run of its own, beside OpenSpiel's two rows): the
  default search at batch 1 x 1,000 and 256 and 1,024 x ``--batch-sims``,
  called in each listed style: ``direct`` (from Python), ``jit`` (inside a
  ``jax.jit`` of the caller's), ``vmap`` (a ``jax.jit(jax.vmap(...))`` of the
  one-game search over ``[B]`` keys and games) and ``params`` (a small
  network, an MLP 84-128-128 with a tanh value head and a 7-logit prior head,
  as ``value_fn`` and ``prior_fn``, its weights an argument: inside the
  caller's ``jit`` and directly, each timed call with other weights of the
  same shapes), each row beside the direct call of its batch; the notes give
  the compiles counted while the params rows ran.

Method: every JAX function is called once first; that call (trace + compile +
one run) minus the median call is reported apart as "compile s" (the definition
of ``benchmarks/startup.py``), with the whole first call beside it.  Then the measurements are timed
round-robin, ``--repeats`` rounds (default 5), each call ended by
``block_until_ready``; the figure is the median.  OpenSpiel's step takes a few
milliseconds, so each of its rounds times 10 steps (all 10 enter the median).

Run:  python benchmarks/search_throughput.py [--repeats 5] [--quick]
      python benchmarks/search_throughput.py --batches 1,1024,8192,32768   (c4jax alone)
      python benchmarks/search_throughput.py --blocks 1,8,32   (games per block on a CPU device)
      python benchmarks/search_throughput.py --opt-levels 2,3   (LLVM's level for the search on the CPU)
      python benchmarks/search_throughput.py --lsr   (LLVM's loop strength reduction off, c4jax's default, and on)
      python benchmarks/search_throughput.py --calls direct,jit,vmap,params   (run_mcts called from Python,
                                         inside jax.jit, under jax.vmap, with a network's weights as argument)
(``--quick``: small shapes and 2 rounds, a smoke run whose figures mean little.)

Targets (checked on the full run): uniform rollouts at batch 256 >= 4x and at
1,024 >= 5x OpenSpiel's sims/s; default options >= 2.5x and 3x; microseconds
per simulation per game at batch 1,024 <= 1/6 of batch 1's; compile <= 4 s
for the default search at batch 1 and 1,024.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import time
from typing import Callable

import jax
import jax.numpy as jnp

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import c4jax  # noqa: E402
import naive_mctx_recipe as naive  # noqa: E402
from network import network_params, network_prior, network_value  # noqa: E402
from c4jax.games import connect4  # noqa: E402
from c4jax.runtime import xla_flags
from c4jax.search import programs  # noqa: E402

OPENSPIEL_STEPS_PER_ROUND = 10
BATCHES = (16, 64, 256, 1024, 4096)
TARGET_RATIOS = {("uniform", 256): 4.0, ("uniform", 1024): 5.0, ("default", 256): 2.5, ("default", 1024): 3.0}
TARGET_PER_GAME_FRACTION = 1 / 6
TARGET_COMPILE_S = 4.0


@dataclasses.dataclass
class Measurement:
    name: str
    kind: str  # "c4jax", "naive", "openspiel"
    batch: int
    simulations: int
    run: Callable[[int], None]  # run(i): one timed call (blocks until done)
    calls_per_round: int = 1
    compile_s: float | None = None  # the first call minus the median call
    first_call_s: float | None = None
    times: list[float] = dataclasses.field(default_factory=list)

    @property
    def sims_per_call(self) -> int:
        return self.batch * self.simulations

    @property
    def median_s(self) -> float:
        return statistics.median(self.times)

    @property
    def sims_per_s(self) -> float:
        return self.sims_per_call / self.median_s

    @property
    def us_per_sim_per_game(self) -> float:
        return 1e6 * self.median_s / self.sims_per_call


def c4jax_measurement(batch: int, sims: int, block: int | None = None, opt_level: int | None = None,
                      **options) -> Measurement:
    env = connect4.env_reset()
    envs = env if batch == 1 else jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), env)
    keys = [jax.random.key(i) for i in range(1000)]

    def run(i: int) -> None:
        saved = programs.BLOCK, xla_flags.CPU_OPT_LEVEL
        programs.BLOCK = saved[0] if block is None else block
        xla_flags.CPU_OPT_LEVEL = saved[1] if opt_level is None else opt_level
        try:
            c4jax.run_mcts(keys[i % len(keys)], envs, sims, **options).action.block_until_ready()
        finally:
            programs.BLOCK, xla_flags.CPU_OPT_LEVEL = saved

    label = ", ".join(f"{k}={v}" for k, v in options.items()) or "defaults"
    kind = "c4jax-uniform" if options.get("rollout_policy") == "uniform" else "c4jax"
    if block is not None:
        label += f", blocks of {block}"
    if opt_level is not None:
        label += f", LLVM level {opt_level}"
    return Measurement(f"c4jax {label}, batch {batch} x {sims}", kind, batch, sims, run)


def naive_measurement(batch: int, sims: int) -> Measurement:
    states = naive.batch_reset(batch)
    keys = [jax.random.key(10_000 + i) for i in range(1000)]

    def run(i: int) -> None:
        naive.search_action(keys[i % len(keys)], states, sims).block_until_ready()

    return Measurement(f"naive mctx recipe, batch {batch} x {sims} sims", "naive", batch, sims, run)


def openspiel_measurement(sims: int, seed: int = 1) -> Measurement:
    import pyspiel

    game = pyspiel.load_game("connect_four")
    bot = pyspiel.MCTSBot(
        game,
        pyspiel.RandomRolloutEvaluator(1, seed),
        2.0,  # uct_c
        sims,  # max_simulations
        1000,  # max_memory_mb
        False,  # solve
        seed,
        False,  # verbose
    )
    state = game.new_initial_state()

    def run(i: int) -> None:
        bot.step(state)

    return Measurement(
        f"OpenSpiel C++ MCTSBot, 1 thread, {sims} sims",
        "openspiel",
        1,
        sims,
        run,
        calls_per_round=OPENSPIEL_STEPS_PER_ROUND,
    )


def measure(ms: list[Measurement], repeats: int, log) -> None:
    for m in ms:
        t0 = time.perf_counter()
        m.run(0)
        first = time.perf_counter() - t0
        if m.kind != "openspiel":
            m.first_call_s = first
        m.run(1)  # one more warm call
        log(f"warm-up {m.name}: first call {first:.2f} s")
    call = 2
    for r in range(repeats):
        for m in ms:
            for _ in range(m.calls_per_round):
                t0 = time.perf_counter()
                m.run(call)
                m.times.append(time.perf_counter() - t0)
                call += 1
        log(f"round {r + 1}/{repeats} done")
    for m in ms:
        if m.first_call_s is not None:
            m.compile_s = m.first_call_s - m.median_s


def batches_only(args, repeats: int, log, out, b1_sims: int) -> int:
    """``--batches``: c4jax's run_mcts alone at the given batch sizes."""
    from rich.table import Table

    batches = [int(b) for b in args.batches.split(",") if b.strip()]
    ms = [c4jax_measurement(b, b1_sims if b == 1 else args.batch_sims) for b in batches]
    measure(ms, repeats, log)
    kind = jax.local_devices()[0].device_kind
    table = Table(title=f"c4jax run_mcts from the empty Connect 4 board on {kind} (median of {repeats} rounds)")
    for col in ("batch", "simulations", "sims/s", "us/sim/game", "ms/move", "compile s"):
        table.add_column(col, justify="right")
    for m in ms:
        table.add_row(str(m.batch), str(m.simulations), f"{m.sims_per_s:,.0f}", f"{m.us_per_sim_per_game:.3f}",
                      f"{1000 * m.median_s:,.1f}", f"{m.compile_s:.2f}")
        print(json.dumps({"measurement": m.name, "batch": m.batch, "simulations": m.simulations,
                          "sims_per_s": round(m.sims_per_s, 1), "us_per_sim_per_game": round(m.us_per_sim_per_game, 4),
                          "ms_per_move": round(1000 * m.median_s, 3),
                          "compile_s": round(m.compile_s, 3), "backend": jax.default_backend(),
                          "device_kind": kind}))
    out.print(table)
    return 0


def blocks_only(args, repeats: int, log, out) -> int:
    """``--blocks``: the default search of --batch-sims simulations at batch
    256 and 1,024, a CPU device searching its games in blocks of each size."""
    from rich.table import Table

    blocks = [int(b) for b in args.blocks.split(",") if b.strip()]
    ms = [c4jax_measurement(batch, args.batch_sims, block=b) for batch in (256, 1024) for b in blocks]
    measure(ms, repeats, log)
    table = Table(title=f"c4jax run_mcts, games per block on each CPU device (median of {repeats} rounds)")
    for col in ("batch", "block", "us/sim/game", "ms/move", "compile s"):
        table.add_column(col, justify="right")
    for m, (batch, b) in zip(ms, [(batch, b) for batch in (256, 1024) for b in blocks]):
        table.add_row(str(batch), str(b), f"{m.us_per_sim_per_game:.2f}", f"{1000 * m.median_s:,.1f}",
                      f"{m.compile_s:.2f}")
    out.print(table)
    return 0


def levels_only(args, repeats: int, log, out) -> int:
    """``--opt-levels``: the default search (batch 1 x 1,000 and 1,024 x
    --batch-sims) and the uniform-rollout one at batch 1,024, compiled at each
    of LLVM's optimisation levels (``xla_backend_optimization_level``)."""
    from rich.table import Table

    if jax.default_backend() != "cpu" or not xla_flags.compiler_options("cpu"):
        raise SystemExit("--opt-levels: only on the CPU, without a level in XLA_FLAGS and without C4JAX_XLA_FLAGS=0")
    levels = [int(x) for x in args.opt_levels.split(",") if x.strip()]
    shapes = [(1, 1000, {}), (1024, args.batch_sims, {}), (1024, args.batch_sims, {"rollout_policy": "uniform"})]
    ms = [c4jax_measurement(b, n, opt_level=level, **o) for b, n, o in shapes for level in levels]
    measure(ms, repeats, log)
    table = Table(title=f"c4jax run_mcts by LLVM optimisation level (median of {repeats} rounds)")
    for col in ("measurement", "us/sim/game", "ms/move", "compile s"):
        table.add_column(col, justify="left" if col == "measurement" else "right")
    for m in ms:
        table.add_row(m.name, f"{m.us_per_sim_per_game:.2f}", f"{1000 * m.median_s:,.1f}", f"{m.compile_s:.2f}")
        print(json.dumps({"measurement": m.name, "us_per_sim_per_game": round(m.us_per_sim_per_game, 4),
                          "compile_s": round(m.compile_s, 3)}))
    out.print(table)
    return 0


def lsr_only(args, repeats: int, log, out) -> int:
    """``--lsr``: the default search at batch 1 x 1,000 and 1,024 x
    --batch-sims with LLVM's loop strength reduction off (c4jax's default,
    :data:`c4jax.runtime.xla_flags.LLVM_NO_LSR`) and on.  ``XLA_FLAGS`` is read when
    JAX starts, so each setting runs in fresh processes (``--batches``),
    alternating, twice each; the figures are the medians of both."""
    from rich.table import Table

    flags = os.environ.get("XLA_FLAGS", "")  # with what import c4jax added
    on = re.sub(rf"{xla_flags.LLVM_NO_LSR}(?=[,\s]|$)", f"{xla_flags.LLVM_NO_LSR}=false", flags)
    if jax.default_backend() != "cpu" or on == flags:
        raise SystemExit("--lsr: only on the CPU, with c4jax's XLA flags (and no -disable-lsr of yours)")
    settings = {"off (default)": flags, "on": on}
    runs: dict[tuple[str, int], list[dict]] = {}
    for turn in range(2):
        for name, value in settings.items():
            log(f"LLVM loop strength reduction {name}, process {turn + 1} of 2")
            proc = subprocess.run(
                [sys.executable, __file__, "--batches", "1,1024", "--batch-sims", str(args.batch_sims),
                 "--repeats", str(repeats)],
                env={**os.environ, "XLA_FLAGS": value}, capture_output=True, text=True)
            if proc.returncode != 0:
                raise SystemExit(f"--lsr: the run with loop strength reduction {name} failed:\n{proc.stderr[-2000:]}")
            for line in proc.stdout.splitlines():
                if line.startswith("{"):
                    rec = json.loads(line)
                    runs.setdefault((name, rec["batch"]), []).append(rec)
    table = Table(title=f"c4jax run_mcts, LLVM's loop strength reduction off and on (2 processes each, "
                        f"median of {repeats} rounds in each)")
    for col in ("loop strength reduction", "batch x simulations", "us/sim/game", "compile s"):
        table.add_column(col, justify="left" if col == "loop strength reduction" else "right")
    for (name, batch), recs in runs.items():
        us = statistics.median(r["us_per_sim_per_game"] for r in recs)
        compile_s = statistics.median(r["compile_s"] for r in recs)
        table.add_row(name, f"{batch} x {recs[0]['simulations']}", f"{us:.2f}", f"{compile_s:.2f}")
        print(json.dumps({"loop_strength_reduction": name, "batch": batch, "us_per_sim_per_game": round(us, 4),
                          "compile_s": round(compile_s, 3), "runs": recs}))
    out.print(table)
    return 0

CALL_STYLES = ("direct", "jit", "vmap", "params")
CALL_BATCHES = (1, 256, 1024)
NETWORK_WEIGHTS = 5  # weight pytrees of the params rows, one per timed call in turn


def call_measurement(style: str, batch: int, sims: int, weights: list | None = None) -> Measurement:
    """The default search of ``sims`` simulations per game at ``batch`` (1:
    one unbatched game; ``vmap``: ``[1]`` keys and games), called in
    ``style``: "direct", "jit", "vmap", "params jit" or "params direct" (the
    last two with ``weights``, one pytree per call in turn).  The jitted
    function is ``run.jitted`` (for its cache size)."""
    env = connect4.env_reset()
    envs = env if batch == 1 and style != "vmap" else jax.tree.map(
        lambda x: jnp.broadcast_to(x, (batch,) + x.shape), env)
    keys = [jax.random.key(20_000 + i) for i in range(1000)]
    jitted = None
    if style == "direct":
        def call(i):
            return c4jax.run_mcts(keys[i % len(keys)], envs, sims).action
    elif style == "jit":
        jitted = jax.jit(lambda k, e: c4jax.run_mcts(k, e, sims).action)

        def call(i):
            return jitted(keys[i % len(keys)], envs)
    elif style == "vmap":
        jitted = jax.jit(jax.vmap(lambda k, e: c4jax.run_mcts(k, e, sims).action))
        split = [jax.random.split(keys[i], batch) for i in range(16)]

        def call(i):
            return jitted(split[i % len(split)], envs)
    elif style == "params jit":
        jitted = jax.jit(lambda k, e, p: c4jax.run_mcts(
            k, e, sims, value_fn=network_value, prior_fn=network_prior, params=p).action)

        def call(i):
            return jitted(keys[i % len(keys)], envs, weights[i % len(weights)])
    elif style == "params direct":
        def call(i):
            return c4jax.run_mcts(keys[i % len(keys)], envs, sims, value_fn=network_value,
                                  prior_fn=network_prior, params=weights[i % len(weights)]).action
    else:
        raise ValueError(f"unknown call style {style!r}")

    def run(i: int) -> None:
        call(i).block_until_ready()

    run.jitted = jitted
    return Measurement(f"{style}, batch {batch} x {sims}", f"call-{style}", batch, sims, run)


def calls_only(args, repeats: int, log, out) -> int:
    """``--calls``: run_mcts at batch 1, 256 and 1,024 called in each listed
    style, beside OpenSpiel's MCTSBot at --batch-sims and batch 1's
    simulations (the reference is their mean)."""
    from rich.table import Table

    styles = [c.strip() for c in args.calls.split(",") if c.strip()]
    b1_sims, sims, batches = (100, 20, (1, 16, 64)) if args.quick else (1000, args.batch_sims, CALL_BATCHES)
    rows = []  # (style, batch, sims)
    for b in batches:
        n = b1_sims if b == 1 else sims
        for style in styles:
            rows += [("params jit", b, n), ("params direct", b, n)] if style == "params" else [(style, b, n)]
    weights = [network_params(jax.random.key(7 + i)) for i in range(NETWORK_WEIGHTS)]
    ms = [call_measurement(style, b, n, weights) for style, b, n in rows]
    ops = [openspiel_measurement(sims), openspiel_measurement(b1_sims)]

    # Compiles counted while the params rows run their timed calls (every one
    # with other weights than the call before).
    timed_compiles = {"n": 0}
    for m in ms:
        if m.kind.startswith("call-params"):
            inner = m.run

            def counted(i, inner=inner):
                before = c4jax.compiled_stats()["compiles"]
                inner(i)
                if i >= 2:
                    timed_compiles["n"] += c4jax.compiled_stats()["compiles"] - before
            counted.jitted = inner.jitted
            m.run = counted
    compiles_start = c4jax.compiled_stats()["compiles"]
    measure(ops + ms, repeats, log)
    compiles_end = c4jax.compiled_stats()["compiles"]

    ref = statistics.mean(m.sims_per_s for m in ops)
    direct = {}
    for m in ms:
        if m.kind in ("call-direct", "call-params direct"):
            direct[(m.kind, m.batch)] = m
    kind = jax.devices()[0].device_kind
    table = Table(title=f"run_mcts by call style from the empty Connect 4 board, {kind} "
                        f"({len(jax.devices('cpu'))} CPU devices; median of {repeats} rounds)")
    for col in ("call style", "batch x sims", "sims/s", "us/sim/game", "x OpenSpiel", "compile s", "first call s",
                "x direct"):
        table.add_column(col, justify="left" if col == "call style" else "right")
    records = []
    for m in ops + ms:
        style = m.kind[len("call-"):] if m.kind.startswith("call-") else "OpenSpiel MCTSBot"
        base = direct.get(("call-params direct" if style.startswith("params") else "call-direct", m.batch))
        ratio = None if m.kind == "openspiel" or base is None else base.median_s / m.median_s
        table.add_row(style, f"{m.batch} x {m.simulations}", f"{m.sims_per_s:,.0f}", f"{m.us_per_sim_per_game:.2f}",
                      f"{m.sims_per_s / ref:.2f}", "-" if m.compile_s is None else f"{m.compile_s:.2f}",
                      "-" if m.first_call_s is None else f"{m.first_call_s:.2f}",
                      "-" if ratio is None else f"{ratio:.2f}")
        records.append({
            "call_style": style, "batch": m.batch, "simulations": m.simulations,
            "sims_per_s": round(m.sims_per_s, 1), "us_per_sim_per_game": round(m.us_per_sim_per_game, 4),
            "ratio_to_openspiel": round(m.sims_per_s / ref, 4),
            "compile_s": None if m.compile_s is None else round(m.compile_s, 3),
            "first_call_s": None if m.first_call_s is None else round(m.first_call_s, 3),
            "ratio_to_direct": None if ratio is None else round(ratio, 4),
            "times_s": [round(t, 5) for t in m.times],
        })
    out.print(table)
    out.print("x OpenSpiel: against the mean of OpenSpiel's two rows. x direct: the direct call's median time of the "
              "same batch over this row's (params rows: against params direct). compile s: the first call "
              "(trace + compile + one run) minus the median call.")
    notes = {"compiles_before": compiles_start, "compiles_after": compiles_end}
    if any(m.kind.startswith("call-params") for m in ms):
        jit_cache = {m.batch: m.run.jitted._cache_size() for m in ms if m.kind == "call-params jit"}
        notes.update(params_timed_call_compiles=timed_compiles["n"], params_jit_cache_sizes=jit_cache)
        out.print(f"params rows: {NETWORK_WEIGHTS} weight pytrees of the same shapes, each timed call with the next. "
                  f"c4jax.compiled_stats()['compiles']: {compiles_start} before the warm-up, {compiles_end} after the "
                  f"timed rounds; {timed_compiles['n']} during the params rows' timed calls. The params jit's "
                  f"compiled programs (jax.jit cache size) by batch: {jit_cache}.")
    for rec in records:
        print(json.dumps(rec))
    print(json.dumps({"notes": notes, "env": {"backend": jax.default_backend(), "device_kind": kind,
                                              "cpu_devices": len(jax.devices("cpu")), "repeats": repeats,
                                              "quick": args.quick}}))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds (median); default 5")
    parser.add_argument("--quick", action="store_true", help="smoke run: small shapes, 2 rounds")
    parser.add_argument("--naive", action="store_true", help="also the naive mctx recipe at batch 1 and 256")
    parser.add_argument(
        "--batches", default=None, metavar="LIST",
        help="c4jax alone at these batch sizes (e.g. 1,1024,8192,32768 on an accelerator): batch 1 at "
        "1000 simulations, the others at --batch-sims; no peers, no targets",
    )
    parser.add_argument("--batch-sims", type=int, default=200,
                        help="simulations per move with --batches and --blocks (default 200)")
    parser.add_argument("--blocks", default=None, metavar="LIST",
                        help="c4jax alone at batch 256 and 1,024 with each CPU device searching its games in blocks "
                        "of these sizes (e.g. 1,8,32); no peers, no targets")
    parser.add_argument("--opt-levels", default=None, metavar="LIST",
                        help="c4jax alone, the search compiled at each of these LLVM optimisation levels (e.g. 2,3; "
                        "CPU only); no peers, no targets")
    parser.add_argument("--lsr", action="store_true",
                        help="c4jax alone at batch 1 and 1,024 with LLVM's loop strength reduction off (the default) "
                        "and on, in fresh processes (CPU only); no peers, no targets")
    parser.add_argument("--calls", default=None, metavar="LIST",
                        help="run_mcts called in these styles (a subset of " + ",".join(CALL_STYLES) + ") at batch 1, "
                        "256 and 1,024, beside OpenSpiel; no targets")
    args = parser.parse_args(argv)
    repeats = 2 if args.quick else args.repeats
    if repeats < 1:
        parser.error("--repeats must be >= 1")
    if args.calls is not None:
        given = {c.strip() for c in args.calls.split(",") if c.strip()}
        if not given or given - set(CALL_STYLES):
            parser.error(f"--calls: a comma-separated subset of {','.join(CALL_STYLES)}; got {args.calls!r}")

    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=True, width=120)
    out = Console(width=120)
    log = lambda msg: console.log(msg)  # noqa: E731

    b1_sims, sims, batches = (100, 20, (16, 64)) if args.quick else (1000, 200, BATCHES)
    if args.blocks:
        return blocks_only(args, repeats, log, out)
    if args.lsr:
        return lsr_only(args, repeats, log, out)
    if args.opt_levels:
        return levels_only(args, repeats, log, out)
    if args.batches:
        return batches_only(args, repeats, log, out, 100 if args.quick else b1_sims)
    if args.calls:
        return calls_only(args, repeats, log, out)

    import mctx
    import pyspiel

    info = {
        "python": platform.python_version(),
        "jax": jax.__version__,
        "mctx": mctx.__version__,
        "pyspiel": getattr(pyspiel, "__version__", "?"),
        "backend": jax.default_backend(),
        "cpus": os.cpu_count(),
        "cpu_devices": len(jax.devices("cpu")),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "repeats": repeats,
        "quick": args.quick,
    }
    ms = [openspiel_measurement(sims), openspiel_measurement(b1_sims)]
    for options in ({}, {"rollout_policy": "uniform"}):
        ms.append(c4jax_measurement(1, b1_sims, **options))
        ms.extend(c4jax_measurement(b, sims, **options) for b in batches)
    if args.naive:
        ms += [naive_measurement(1, b1_sims), naive_measurement(256, sims)]
    measure(ms, repeats, log)
    info["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]

    ref = statistics.mean(m.sims_per_s for m in ms[:2])
    table = Table(title=f"Connect 4 search throughput from the empty board, {jax.devices()[0].device_kind} "
                        f"({len(jax.devices('cpu'))} CPU devices; median of {repeats} rounds)")
    for col in ("measurement", "sims/s", "us/sim/game", "ms/move", "compile s", "first call s", "x OpenSpiel"):
        table.add_column(col, justify="left" if col == "measurement" else "right")
    records = []
    for m in ms:
        table.add_row(m.name, f"{m.sims_per_s:,.0f}", f"{m.us_per_sim_per_game:.2f}", f"{1000 * m.median_s:,.1f}",
                      "-" if m.compile_s is None else f"{m.compile_s:.2f}",
                      "-" if m.first_call_s is None else f"{m.first_call_s:.2f}", f"{m.sims_per_s / ref:.2f}")
        records.append({
            "measurement": m.name, "kind": m.kind, "batch": m.batch, "simulations": m.simulations,
            "sims_per_s": round(m.sims_per_s, 1), "us_per_sim_per_game": round(m.us_per_sim_per_game, 3),
            "ms_per_move": round(1000 * m.median_s, 3),
            "compile_s": None if m.compile_s is None else round(m.compile_s, 3),
            "first_call_s": None if m.first_call_s is None else round(m.first_call_s, 3),
            "ratio_to_openspiel": round(m.sims_per_s / ref, 4), "times_s": [round(t, 5) for t in m.times],
        })
    out.print(table)
    out.print("x OpenSpiel: against the mean of OpenSpiel's two rows. compile s: the first call "
              "(trace + compile + one run) minus the median call.")

    def find(kind, batch):
        return next((m for m in ms if m.kind == kind and m.batch == batch), None)

    targets = []
    for (rollouts, batch), ratio in TARGET_RATIOS.items():
        m = find("c4jax-uniform" if rollouts == "uniform" else "c4jax", batch)
        if m is not None:
            targets.append((f"{rollouts} batch {batch} >= {ratio:g}x OpenSpiel", f"{m.sims_per_s / ref:.2f}x",
                            m.sims_per_s >= ratio * ref))
    one, big = find("c4jax", 1), find("c4jax", 1024)
    if big is not None:
        fraction = big.us_per_sim_per_game / one.us_per_sim_per_game
        targets.append(("us/sim/game at batch 1,024 <= 1/6 of batch 1's",
                        f"{big.us_per_sim_per_game:.2f} vs {one.us_per_sim_per_game:.2f} (1/{1 / fraction:.1f})",
                        fraction <= TARGET_PER_GAME_FRACTION))
        targets.append((f"default compile <= {TARGET_COMPILE_S:g} s at batch 1 and 1,024",
                        f"{one.compile_s:.2f} s and {big.compile_s:.2f} s",
                        max(one.compile_s, big.compile_s) <= TARGET_COMPILE_S))
    tt = Table(title="Targets" + (" (--quick: shapes differ, not meaningful)" if args.quick else ""))
    for col in ("target", "measured", "result"):
        tt.add_column(col)
    for name, measured, ok in targets:
        tt.add_row(name, measured, "[green]PASS[/green]" if ok else "[red]FAIL[/red]")
    out.print(tt)

    for rec in records:
        print(json.dumps(rec))
    print(json.dumps({"targets": {n: ("pass" if ok else "fail") for n, _, ok in targets}, "env": info}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
