"""``c4jax bench``: throughput of the environment and the search on this machine."""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import sys
import time

from c4jax.cli.args import command_parser, UsageError
from c4jax.cli.terminal import print_line

BENCH_EPILOG = """\
In a source checkout with the [bench] extras (pgx, open_spiel) this imports the
repository's benchmark scripts, benchmarks/env_throughput.py and
search_throughput.py, and calls their main() (--quick passed on): c4jax against
pgx, OpenSpiel and the naive mctx recipe.  Elsewhere (an installed package) it
times c4jax itself on Connect 4 (7 columns x 6 rows): random rollouts/s at
batch 1024, and run_mcts simulations/s at batch 1 x 1000 and batch 64 x 200,
called from Python and inside jax.jit (compilation and one warm-up call
excluded; the median of the timed calls).

examples:
  c4jax bench --quick                 a short run (about 20 s built-in, 1 min with the scripts)
  c4jax bench                         more timed rounds
  c4jax bench --quick --builtin       time c4jax itself, without the peers
  c4jax bench --scripts ~/c4jax/benchmarks
"""


def add_parser(sub, game, search_parent, common) -> None:
    """Adds the ``bench`` command to the subparsers ``sub``."""
    p = command_parser(sub, "bench", [common], BENCH_EPILOG,
                       help="time the environment and the search",
                       description="Throughput of c4jax on this machine: env rollouts/s and run_mcts simulations/s.")
    p.add_argument("--quick", action="store_true", help="a short run: small shapes or few timed rounds")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--builtin", action="store_true",
        help="time c4jax itself even where the repository's benchmarks/ scripts are at hand",
    )
    which.add_argument(
        "--scripts", metavar="DIR", default=None,
        help="a folder of benchmark scripts to run (default: the source checkout's benchmarks/, "
        "never the current folder)",
    )
    p.set_defaults(func=run)


BENCH_EXTRAS = ("pgx", "pyspiel")  # what the scripts import besides c4jax


def _find_benchmarks() -> pathlib.Path | None:
    """The benchmark scripts' folder of the source checkout this package was
    imported from (an editable install, or ``src/`` on the path): the folder
    three levels above this file whose ``pyproject.toml`` names the project
    ``c4jax``.  Never the current folder: a stranger's checkout does not run
    its code by being where the command starts."""
    root = pathlib.Path(__file__).resolve().parents[3]
    folder, pyproject = root / "benchmarks", root / "pyproject.toml"
    if not ((folder / "search_throughput.py").is_file() and pyproject.is_file()):
        return None
    try:
        text = pyproject.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return folder if re.search(r'^name\s*=\s*"c4jax"\s*$', text, re.M) else None


def _run_scripts(folder: pathlib.Path, quick: bool, con) -> int:
    """Imports the benchmark scripts of ``folder`` and calls their ``main``."""
    import importlib.util
    import inspect

    ran = 0
    for name in ("env_throughput", "search_throughput"):
        path = folder / f"{name}.py"
        if not path.is_file():
            continue
        spec = importlib.util.spec_from_file_location(f"_c4jax_bench_{name}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        sys.path.insert(0, str(folder))
        try:
            spec.loader.exec_module(module)
        except ImportError as e:
            sys.modules.pop(spec.name, None)
            raise UsageError(f"{path} needs {e.name or e} (pip install 'c4jax[bench]')") from None
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(str(folder))
        fn = getattr(module, "main", None)
        if not callable(fn):
            continue
        argv = ["--quick"] if quick else []
        con.rule(f"{path.name}{' --quick' if quick else ''}")
        try:
            if inspect.signature(fn).parameters:
                fn(argv)
            else:
                saved = sys.argv
                sys.argv = [str(path)] + argv
                try:
                    fn()
                finally:
                    sys.argv = saved
        except ModuleNotFoundError as e:  # a peer imported inside main() (pgx, pyspiel)
            raise UsageError(f"{path} needs {e.name or e} (pip install 'c4jax[bench]')") from None
        ran += 1
    if not ran:
        raise UsageError(f"no benchmark script with a main() in {folder}")
    return 0


def _time_calls(fn, args_for, repeats: int, min_time: float) -> tuple[float, float]:
    """Times ``fn(*args_for(i))``.  Returns (seconds of the first call: trace,
    compile and one run; the median seconds per call over ``repeats`` timed
    runs, each of enough calls to last ``min_time``, after one more warm-up
    call).  Every call gets new arguments (a new key)."""
    import statistics

    import jax

    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args_for(0)))
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args_for(1)))
    calls = max(1, int(min_time / max(time.perf_counter() - t0, 1e-6)))
    per_call, i = [], 2
    for _ in range(repeats):
        batch = [args_for(i + j) for j in range(calls)]
        i += calls
        jax.block_until_ready(batch)
        t0 = time.perf_counter()
        for a in batch:
            jax.block_until_ready(fn(*a))
        per_call.append((time.perf_counter() - t0) / calls)
    return first, statistics.median(per_call)


def builtin_bench(quick: bool, con) -> list[dict]:
    """Times c4jax itself (Connect 4, 7 columns x 6 rows): random rollouts/s
    at batch 1024, run_mcts sims/s at batch 1 x 1000 and 64 x 200 called
    from Python (a batch split over the CPU devices) and, beside it, inside a
    ``jax.jit``.  Returns the rows."""
    import jax
    import jax.numpy as jnp
    from rich.table import Table

    from c4jax.games import connect4
    from c4jax.search import run_mcts

    repeats, min_time = (3, 0.05) if quick else (7, 0.3)
    game = connect4.make()
    env = game.env_reset()

    def batch(b):
        return jax.tree.map(lambda x: jnp.broadcast_to(x, (b,) + x.shape), env)

    rows = []
    envs = batch(1024)
    rollouts = jax.jit(lambda key, e: jax.vmap(game.rollout)(jax.random.split(key, 1024), e))
    first, med = _time_calls(rollouts, lambda i: (jax.random.key(i), envs), repeats, min_time)
    rows.append(dict(measurement="random rollouts, batch 1,024", unit="rollouts/s",
                     rate=1024 / med, ms=1e3 * med, compile_s=first))
    for b, n in ((1, 1000), (64, 200)):
        envs = batch(b)
        args_for = lambda i, envs=envs: (jax.random.key(100 + i), envs)  # noqa: E731
        # As a user calls it: from Python, a batch split over the CPU devices.
        first, med = _time_calls(lambda key, e, n=n: run_mcts(key, e, n).action, args_for, repeats, min_time)
        jitted = jax.jit(lambda key, e, n=n: run_mcts(key, e, n).action)
        jit_first, jit_med = _time_calls(jitted, args_for, repeats, min_time)
        rows.append(dict(measurement=f"run_mcts, batch {b:,} x {n:,} sims", unit="sims/s",
                         rate=b * n / med, ms=1e3 * med, compile_s=first,
                         jit_rate=b * n / jit_med, jit_ms=1e3 * jit_med, jit_compile_s=jit_first))
    t = Table(
        title=f"c4jax throughput, Connect 4 (7 columns x 6 rows), {jax.default_backend()} "
        f"({os.cpu_count()} cores), median of {repeats} runs",
        caption="run_mcts called from Python; inside jax.jit: the same search in a caller's jax.jit "
        "(x the direct call's rate).  1st call s: trace, compile (or cache load) and one run, not in the rates",
    )
    for col in ("measurement", "per second", "ms/call", "1st call s"):
        t.add_column(col, justify="left" if col == "measurement" else "right")
    for r in rows:
        t.add_row(
            r["measurement"], f"{r['rate']:,.0f} {r['unit']}", f"{r['ms']:.1f}", f"{r['compile_s']:.2f}"
        )
        if "jit_rate" in r:
            t.add_row("  inside jax.jit", f"{r['jit_rate']:,.0f}/s ({r['jit_rate'] / r['rate']:.2f}x)",
                      f"{r['jit_ms']:.1f}", f"{r['jit_compile_s']:.2f}")
    con.print(t)
    return rows


def run(args, con, t_start: float) -> int:
    import importlib.util

    if args.scripts is not None:
        folder = pathlib.Path(args.scripts).expanduser()
        if not folder.is_dir():
            raise UsageError(f"--scripts {args.scripts!r}: no such folder")
        return _run_scripts(folder, args.quick, con)
    if not args.builtin:
        folder = _find_benchmarks()
        missing = [m for m in BENCH_EXTRAS if importlib.util.find_spec(m) is None]
        if folder is not None and not missing:
            return _run_scripts(folder, args.quick, con)
        why = (
            "no benchmarks/ folder next to this installed package (the scripts ship with the source "
            "repository: install it editable, pip install -e '.[bench]', or pass --scripts benchmarks)"
            if folder is None
            else f"the benchmark scripts need {', '.join(missing)} (pip install 'c4jax[bench]')"
        )
        print_line(con, f"{why}: timing c4jax itself", style="dim", markup=False)
    builtin_bench(args.quick, con)
    return 0


