"""Game-rule throughput: c4jax against pgx, both games, measured in one run.

For Connect 4 (7x6) and tic-tac-toe, at each batch size:

* env steps/s: ``jit(vmap(step))`` on uniformly random legal actions, ``T``
  steps inside one ``lax.scan`` per call (so Python's per-call overhead is not
  counted), finished games reset in place.  c4jax: ``game.env_step``; pgx:
  ``env.step`` of ``pgx.make("connect_four")`` / ``"tic_tac_toe"``.  Both use
  the same random-action code and the same reset-in-place code.
* random playouts/s (whole games from the empty board): c4jax
  ``jit(vmap(game.rollout))``; pgx a jitted ``while_loop`` that plays uniformly
  random legal actions (``jax.random``, as pgx users do) with ``jit``-ed
  ``vmap(env.step)`` until every game of the batch is over.

Method: each function is lowered and compiled first (reported apart as
"compile s": trace + lower + compile), then called twice to warm up.  Then all
measurements are timed round-robin for ``--repeats`` rounds; a timed run calls
the function enough times to take at least ``--min-time`` seconds, each call
ended by ``block_until_ready``; the figure is the median over the rounds.
A new key is passed on every call.

Run:  python benchmarks/env_throughput.py [--batches 1,64,1024,4096]
                                          [--repeats 5] [--quick]
Prints a rich table (with the ratio c4jax / pgx of each row) and one JSON
line per measurement.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import time
from typing import Callable

import jax
import jax.numpy as jnp

from c4jax.games import connect4, tictactoe

GAMES = {
    "connect4": (lambda: connect4.make(), "connect_four"),
    "tictactoe": (lambda: tictactoe.GAME, "tic_tac_toe"),
}


# --- shared pieces (identical for c4jax and pgx) --------------------------------------


def random_legal(key: jax.Array, mask: jax.Array) -> jax.Array:
    """``int32[B]``: a uniformly random legal action per row of ``mask[B, A]``."""
    u = jax.random.uniform(key, mask.shape)
    return jnp.argmax(jnp.where(mask, u, -1.0), axis=-1).astype(jnp.int32)


def reset_where(done: jax.Array, fresh, state):
    """Rows of ``state`` where ``done`` replaced by the same rows of ``fresh``."""

    def pick(f, s):
        d = done.reshape(done.shape + (1,) * (s.ndim - done.ndim))
        return jnp.where(d, f, s)

    return jax.tree.map(pick, fresh, state)


def steps_per_call(batch: int, quick: bool) -> int:
    """Scan length: about 256k env steps per call (2k steps at batch 1)."""
    target = 16_384 if quick else 262_144
    return int(max(16, min(2_000, target // batch)))


# --- c4jax ---------------------------------------------------------------------------------


def c4jax_steps_fn(game, batch: int, t: int) -> Callable:
    step = jax.vmap(game.env_step)
    legal = jax.vmap(game.legal_action_mask)

    def run(key):
        fresh = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), game.env_reset())

        def body(env, k):
            env, _, done = step(env, random_legal(k, legal(env)))
            return reset_where(done, fresh, env), None

        env, _ = jax.lax.scan(body, fresh, jax.random.split(key, t))
        return env.ply  # something to wait for

    return run


def c4jax_playouts_fn(game, batch: int) -> Callable:
    rollout = jax.vmap(game.rollout, in_axes=(0, None))

    def run(key):
        return rollout(jax.random.split(key, batch), game.env_reset())

    return run


# --- pgx -------------------------------------------------------------------------------------


def pgx_steps_fn(env, batch: int, t: int) -> Callable:
    step = jax.vmap(env.step)
    init = jax.vmap(env.init)

    def run(key):
        fresh = init(jax.random.split(key, batch))

        def body(state, k):
            state = step(state, random_legal(k, state.legal_action_mask))
            return reset_where(state.terminated, fresh, state), None

        state, _ = jax.lax.scan(body, fresh, jax.random.split(jax.random.fold_in(key, 1), t))
        return state.terminated

    return run


def pgx_playouts_fn(env, batch: int) -> Callable:
    step = jax.vmap(env.step)
    init = jax.vmap(env.init)

    def run(key):
        k0, k1 = jax.random.split(key)
        state = init(jax.random.split(k0, batch))

        def cond(c):
            return ~jnp.all(c[0].terminated)

        def body(c):
            state, k, plies = c
            k, sub = jax.random.split(k)
            plies = plies + (~state.terminated).astype(jnp.int32)
            return step(state, random_legal(sub, state.legal_action_mask)), k, plies

        state, _, plies = jax.lax.while_loop(cond, body, (state, k1, jnp.zeros(batch, jnp.int32)))
        return state.rewards[:, 0], plies

    return run


# --- timing ------------------------------------------------------------------------------------


@dataclasses.dataclass
class Measurement:
    game: str
    kind: str  # "steps" or "playouts"
    impl: str  # "c4jax" or "pgx"
    batch: int
    work_per_call: int  # env steps or games per call
    fn: Callable
    compile_s: float = 0.0
    calls_per_run: int = 1
    run_s: list = dataclasses.field(default_factory=list)
    key_counter: int = 0

    def next_key(self):
        self.key_counter += 1
        return jax.random.key(self.key_counter)

    @property
    def per_s(self) -> float:
        return self.work_per_call * self.calls_per_run / statistics.median(self.run_s)


def prepare(m: Measurement, min_time: float) -> None:
    t0 = time.perf_counter()
    compiled = jax.jit(m.fn).lower(jax.random.key(0)).compile()
    m.compile_s = time.perf_counter() - t0
    m.fn = compiled
    for _ in range(2):
        jax.block_until_ready(m.fn(m.next_key()))
    t0 = time.perf_counter()
    jax.block_until_ready(m.fn(m.next_key()))
    one = max(time.perf_counter() - t0, 1e-6)
    m.calls_per_run = max(1, int(min_time / one))


def timed_run(m: Measurement) -> None:
    keys = [m.next_key() for _ in range(m.calls_per_run)]
    jax.block_until_ready(keys)
    t0 = time.perf_counter()
    for k in keys:
        jax.block_until_ready(m.fn(k))
    m.run_s.append(time.perf_counter() - t0)


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        import pgx
    except ImportError:  # --no-pgx on a machine without it
        pgx = None

    return dict(
        cpu=cpu,
        cores=os.cpu_count(),
        backend=jax.default_backend(),
        devices=[str(d) for d in jax.devices()],
        jax=jax.__version__,
        pgx=getattr(pgx, "__version__", None),
        python=platform.python_version(),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", default="1,64,1024,4096", help="comma-separated batch sizes")
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds (median reported)")
    parser.add_argument("--min-time", type=float, default=0.2, help="seconds per timed run, at least")
    parser.add_argument("--games", default="connect4,tictactoe")
    parser.add_argument("--quick", action="store_true", help="smoke run: batches 1,64, 2 rounds, short runs")
    parser.add_argument("--no-pgx", action="store_true", help="c4jax alone (where pgx is not installed)")
    args = parser.parse_args()
    if args.quick:
        args.batches, args.repeats, args.min_time = "1,64", 2, 0.02
    batches = [int(b) for b in args.batches.split(",")]

    if args.no_pgx:
        pgx = None
    else:
        import pgx

    info = machine()
    info["load_avg_start"] = os.getloadavg()
    print(json.dumps(dict(machine=info)))

    ms: list[Measurement] = []
    for name in args.games.split(","):
        make_game, pgx_id = GAMES[name]
        game, env = make_game(), (None if pgx is None else pgx.make(pgx_id))
        for b in batches:
            t = steps_per_call(b, args.quick)
            ms.append(Measurement(name, "steps", "c4jax", b, b * t, c4jax_steps_fn(game, b, t)))
            if env is not None:
                ms.append(Measurement(name, "steps", "pgx", b, b * t, pgx_steps_fn(env, b, t)))
            ms.append(Measurement(name, "playouts", "c4jax", b, b, c4jax_playouts_fn(game, b)))
            if env is not None:
                ms.append(Measurement(name, "playouts", "pgx", b, b, pgx_playouts_fn(env, b)))
    for m in ms:
        prepare(m, args.min_time)
    # Sanity: both playout functions play whole random games.  c4jax: the
    # first player's mean result (Connect 4 about 0.556 - 0.442 = 0.114,
    # tic-tac-toe 0.585 - 0.288 = 0.297); pgx: the mean length (Connect 4
    # about 21.3 plies, tic-tac-toe 7.63).
    for m in ms:
        if m.kind == "playouts" and m.batch == max(batches):
            out = jax.device_get(m.fn(jax.random.key(123)))
            if m.impl == "c4jax":
                assert set(out.tolist()) <= {-1.0, 0.0, 1.0}
                sanity = dict(first_player_mean_result=round(float(out.mean()), 4))
            else:
                sanity = dict(mean_plies=round(float(out[1].mean()), 3))
            print(json.dumps(dict(sanity=dict(game=m.game, impl=m.impl, batch=m.batch, **sanity))))
    for _ in range(args.repeats):
        for m in ms:
            timed_run(m)
    info["load_avg_end"] = os.getloadavg()

    by_key = {(m.game, m.kind, m.impl, m.batch): m for m in ms}
    for m in ms:
        other = by_key.get((m.game, m.kind, "pgx" if m.impl == "c4jax" else "c4jax", m.batch))
        unit = "steps/s" if m.kind == "steps" else "games/s"
        print(
            json.dumps(
                dict(
                    game=m.game,
                    kind=m.kind,
                    impl=m.impl,
                    batch=m.batch,
                    per_s=round(m.per_s, 1),
                    unit=unit,
                    compile_s=round(m.compile_s, 3),
                    median_call_ms=round(1e3 * statistics.median(m.run_s) / m.calls_per_run, 4),
                    calls_per_run=m.calls_per_run,
                    work_per_call=m.work_per_call,
                    runs=len(m.run_s),
                    ratio_c4jax_over_pgx=None if other is None else round(
                        (m.per_s / other.per_s) if m.impl == "c4jax" else (other.per_s / m.per_s), 3
                    ),
                )
            )
        )

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"env throughput (median of {args.repeats}; {info['cpu']}, {info['cores']} cores, {info['backend']})")
    for col in ("game", "measure", "batch", "c4jax", "pgx", "c4jax / pgx", "compile s c4jax", "compile s pgx"):
        table.add_column(col, justify="left" if col in ("game", "measure") else "right")
    for m in ms:
        if m.impl != "c4jax":
            continue
        p = by_key.get((m.game, m.kind, "pgx", m.batch))
        unit = "steps/s" if m.kind == "steps" else "playouts/s"
        table.add_row(
            m.game,
            unit,
            str(m.batch),
            f"{m.per_s:,.0f}",
            "-" if p is None else f"{p.per_s:,.0f}",
            "-" if p is None else f"{m.per_s / p.per_s:.2f}",
            f"{m.compile_s:.2f}",
            "-" if p is None else f"{p.compile_s:.2f}",
        )
    Console(width=140).print(table)
    print(json.dumps(dict(load_avg_start=info["load_avg_start"], load_avg_end=info["load_avg_end"])))


if __name__ == "__main__":
    main()
