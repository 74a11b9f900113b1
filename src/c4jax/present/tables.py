"""The arena's result as a table for the terminal."""

from __future__ import annotations

import math

__all__ = ["arena_table"]


def arena_table(result):
    """A :class:`rich.table.Table` of an :class:`~c4jax.tools.matches.ArenaResult`."""
    from rich.table import Table

    def pct(x):
        return f"{100 * x:.1f}%"

    def ci(c):
        return f"[{pct(c[0])}, {pct(c[1])}]"

    def elo(x):
        return "+inf" if x == math.inf else "-inf" if x == -math.inf else f"{x:+.0f}"

    n = result.num_games
    t = Table(title=f"{result.player_a} vs {result.player_b}: {n:,} games")
    # No column wraps or crops (the command line widens the
    # table instead in a narrow terminal).
    t.add_column("", no_wrap=True)
    t.add_column("games", justify="right", no_wrap=True)
    t.add_column("rate", justify="right", no_wrap=True)
    t.add_column("95% CI (Wilson)", justify="right", no_wrap=True)
    t.add_row(f"A ({result.player_a}) wins", f"{result.wins:,}", pct(result.wins / n), ci(result.wins_ci))
    t.add_row("draws", f"{result.draws:,}", pct(result.draws / n), ci(result.draws_ci))
    t.add_row(f"B ({result.player_b}) wins", f"{result.losses:,}", pct(result.losses / n), ci(result.losses_ci))
    t.add_section()
    t.add_row("A moving first (w/d/l)", "/".join(f"{x:,}" for x in result.a_first), "", "")
    t.add_row("A moving second (w/d/l)", "/".join(f"{x:,}" for x in result.a_second), "", "")
    t.add_row(
        "Elo (A - B)", elo(result.elo), "", f"[{elo(result.elo_ci[0])}, {elo(result.elo_ci[1])}]"
    )
    t.add_row("mean game length", f"{result.mean_length:.1f} plies", "", "")
    t.add_row(
        "speed",
        f"{result.games_per_second:,.1f} games/s",
        f"{result.simulations_per_second:,.0f} sims/s" if result.simulations_per_second > 0 else "no search",
        "",
    )
    t.add_row("time", f"run {result.seconds:.1f} s", f"compile {result.compile_seconds:.1f} s", "")
    return t
