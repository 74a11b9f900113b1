"""Shared helpers of the strength benchmarks: player specs, a JSON result
cache, and tables printed with rich and written as markdown.

A player spec is a small JSON-able dict, so that results can be stored next
to what made them:

* ``{"kind": "mcts", "n": 800, "options": {"prior": "heuristic"}}``
* ``{"kind": "perfect"}``, ``{"kind": "random"}``, ``{"kind": "heuristic"}``
"""

from __future__ import annotations

import json
import math
import pathlib
import platform
import sys
import time
from typing import Any, Iterable, Sequence

import jax

import c4jax

HERE = pathlib.Path(__file__).resolve().parent


def table_arguments(p, json_name: str, md_name: str, games_help: str, quick_help: str):
    """The options every strength script shares: --games, --seed, --quick,
    --resume, --out-json, --out-md.  Returns ``check(args)``, to call after
    ``p.parse_args``: it rejects an odd or too small --games."""
    p.add_argument("--games", type=int, default=200, help=games_help)
    p.add_argument("--seed", type=int, default=0, help="arena key: jax.random.key(SEED)")
    p.add_argument("--quick", action="store_true", help=quick_help)
    p.add_argument("--resume", action="store_true", help="reuse results already in the JSON file")
    p.add_argument("--out-json", type=pathlib.Path, default=HERE / json_name)
    p.add_argument("--out-md", type=pathlib.Path, default=HERE / md_name)

    def check(args) -> None:
        if args.games < 2 or args.games % 2:
            p.error("--games must be an even number >= 2")

    return check


# Every MCTS in these tables plays mctx's recipe (c4jax.MCTX_RECIPE: uniform
# prior, one uniformly random rollout per leaf, one lane, an unvisited move
# scored as a loss), the defaults before issue 9, under which they were made:
# a spec's options are what differs from it, so the stored results keep their
# keys and a rerun reproduces them.  Today's defaults are measured in
# benchmarks/README.md (equal time against OpenSpiel, defaults per second).
BASE_OPTIONS = dict(c4jax.MCTX_RECIPE)


def search_options(options: dict | None) -> dict:
    """``BASE_OPTIONS`` with ``options`` on top: what a spec's MCTS passes to
    ``run_mcts``."""
    return {**BASE_OPTIONS, **(options or {})}


def mcts(n: int, **options: Any) -> dict:
    return {"kind": "mcts", "n": int(n), "options": dict(sorted(options.items()))}


def options_label(options: dict) -> str:
    if not options:
        return "default"
    return ", ".join(f"{k}={v}" for k, v in options.items())


def spec_label(spec: dict) -> str:
    if spec["kind"] != "mcts":
        return spec["kind"]
    opts = spec.get("options") or {}
    return f"mcts:{spec['n']}" + (f" ({options_label(opts)})" if opts else "")


def make_player(spec: dict) -> c4jax.Player:
    kind = spec["kind"]
    if kind == "mcts":
        return c4jax.mcts_player(spec["n"], name=spec_label(spec), **search_options(spec.get("options")))
    if kind == "perfect":
        return c4jax.perfect_player()
    if kind == "random":
        return c4jax.random_player()
    if kind == "heuristic":
        return c4jax.heuristic_player()
    raise ValueError(f"unknown player kind {kind!r}")


def spec_simulations(spec: dict) -> int:
    return spec["n"] if spec["kind"] == "mcts" else 0


class ResultCache:
    """Results keyed by what made them, stored in one JSON file.

    With ``resume`` the entries already in the file are reused (strength
    results are deterministic for a fixed key; timings are not); otherwise
    everything is recomputed and the file is rewritten as results come in.
    """

    def __init__(self, path: pathlib.Path, resume: bool, meta: dict):
        self.path = pathlib.Path(path)
        self.entries: dict[str, Any] = {}
        if resume and self.path.exists():
            self.entries = json.loads(self.path.read_text()).get("entries", {})
        self.meta = meta

    def get(self, key: str):
        return self.entries.get(key)

    def put(self, key: str, value: Any) -> None:
        self.entries[key] = value
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {"meta": self.meta, "entries": self.entries}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(self.path)


def environment_meta(command: str) -> dict:
    import mctx

    return {
        "command": command,
        "python": platform.python_version(),
        "jax": jax.__version__,
        "mctx": getattr(mctx, "__version__", "?"),
        "backend": jax.default_backend(),
        "devices": [str(d) for d in jax.devices()],
        "cpu_count": __import__("os").cpu_count(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def command_line() -> str:
    """The command that made the results, without ``--resume`` (which only
    reuses results that same command stored)."""
    argv0 = pathlib.Path(sys.argv[0]).resolve()
    try:
        argv0 = argv0.relative_to(HERE.parent.parent)
    except ValueError:
        pass
    return "python " + " ".join([argv0.as_posix()] + [a for a in sys.argv[1:] if a != "--resume"])


def arena_key(a: dict, b: dict, games: int, seed: int, env_name: str) -> str:
    return json.dumps({"a": a, "b": b, "games": games, "seed": seed, "env": env_name}, sort_keys=True)


def run_arena(cache: ResultCache, a: dict, b: dict, games: int, seed: int, env, env_name: str,
              batch_size: int | None = None, log=print) -> dict:
    """``c4jax.arena(jax.random.key(seed), A, B, games, env)``, cached; returns
    the summary dict plus the games A lost (moves, 1-based)."""
    k = arena_key(a, b, games, seed, env_name)
    hit = cache.get(k)
    if hit is not None:
        return hit
    t0 = time.perf_counter()
    r = c4jax.arena(jax.random.key(seed), make_player(a), make_player(b), games, env, batch_size=batch_size)
    s = r.summary()
    s["wall_seconds"] = time.perf_counter() - t0
    s["a_spec"], s["b_spec"], s["seed"] = a, b, seed
    a_name = r.player_a
    lost = []
    for g in r.games:
        a_mark = "X" if g.x_player == a_name else "O"
        if g.result not in ("draw", a_mark):
            lost.append({"a_as": a_mark, "moves": "".join(str(m + 1) for m in g.moves)})
    s["a_lost_games"] = lost
    cache.put(k, s)
    log(
        f"  {r.player_a} vs {r.player_b}: as X {fmt_wdl(s['a_first'])}, as O {fmt_wdl(s['a_second'])}, "
        f"{s['wall_seconds']:.0f} s (compile {s['compile_seconds']:.0f} s)"
    )
    return s


def fmt_wdl(t: Sequence[int]) -> str:
    return "/".join(str(int(x)) for x in t)


def fmt_pct(x: float, digits: int = 1) -> str:
    return f"{100 * x:.{digits}f}%"


def fmt_ci(ci: Sequence[float], digits: int = 1) -> str:
    return f"[{100 * ci[0]:.{digits}f}, {100 * ci[1]:.{digits}f}]%"


def fmt_elo(x) -> str:
    if isinstance(x, str):
        return "+inf" if x == "inf" else "-inf"
    if math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    return f"{x:+.0f}"


class Report:
    """Collects tables; prints each with rich and renders them all as markdown."""

    def __init__(self):
        from rich.console import Console

        self.console = Console()
        self.parts: list[str] = []

    def text(self, s: str) -> None:
        self.parts.append(s.rstrip() + "\n")

    def table(self, title: str, headers: Sequence[str], rows: Iterable[Sequence[Any]],
              align: Sequence[str] | None = None, note: str | None = None) -> None:
        from rich.table import Table

        rows = [[str(c) for c in r] for r in rows]
        align = list(align) if align else ["left"] + ["right"] * (len(headers) - 1)
        t = Table(title=title)
        for h, al in zip(headers, align):
            t.add_column(h, justify=al)
        for r in rows:
            t.add_row(*r)
        self.console.print(t)
        if note:
            self.console.print(note)
        md = [f"### {title}\n"]
        if note:
            md.append(note.rstrip() + "\n")
        md.append("| " + " | ".join(headers) + " |")
        md.append("|" + "|".join("---" if al == "left" else "---:" for al in align) + "|")
        md.extend("| " + " | ".join(r) + " |" for r in rows)
        self.parts.append("\n".join(md) + "\n")

    def markdown(self) -> str:
        return "\n".join(self.parts)
