"""What the commands draw, on every kind of output: encodings that cannot
carry the board's glyphs, boards wider than the terminal or a pipe's 80
columns, narrow, tiny or zero-width terminals, tables that never crop a
number, and the colour switches (``NO_COLOR``, ``TERM=dumb``,
``FORCE_COLOR``).  Drawn in this process on rich consoles writing to memory;
the end-to-end runs are in test_cli.py."""

from __future__ import annotations

import io
import re

import jax
import pytest

import c4jax
from c4jax.present.analysis import search_table
from c4jax.games import connect4 as c4
from c4jax.games import tictactoe as ttt
from c4jax.cli import terminal
from c4jax.present.tables import arena_table

ESC = "\x1b["


def _console(width=80, encoding="utf-8", **kw):
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding=encoding, errors="strict", newline="\n", write_through=True)
    con = terminal.console(file=stream, width=width, **kw)
    return con, lambda: raw.getvalue().decode(encoding)


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "cp1252", "utf-8"])
def test_the_board_is_drawn_in_any_encoding(encoding):
    con, text = _console(encoding=encoding)
    terminal.print_board(con, c4.from_moves("4453").game, c4.from_moves("4453"))
    out = text()
    lines = out.splitlines()
    assert lines[-1] == "X to move (ply 4)"
    empty = "\u00b7" if encoding == "utf-8" else "."
    assert lines[0].split() == [empty] * 7, lines[0]
    assert lines[5].split() == [empty, empty, "O", "X", "X", empty, empty], lines[5]
    assert lines[6].split() == [str(c) for c in range(1, 8)]


@pytest.mark.parametrize("cols", [10, 30, 64])
def test_a_board_wider_than_the_output_is_drawn_one_character_per_cell(cols):
    game = c4.make(6, cols, 4)
    env = game.from_moves([cols, 1, cols])
    con, text = _console(width=80)
    terminal.print_board(con, game, env)
    lines = text().splitlines()
    # The usual drawing needs 3 characters per column from 10 columns on:
    # 30 or more columns do not fit in 80, and are drawn compactly.
    compact = cols * 3 > 80
    board, labels = lines[:6], lines[6:-1]
    assert all(len(line) <= 80 for line in lines), [len(x) for x in lines]
    assert len(board) == 6 and lines[-1] == "O to move (ply 3)"
    if compact:
        assert [len(x) for x in board] == [cols] * 6
        assert board[5] == "O" + "\u00b7" * (cols - 2) + "X" and board[4] == "\u00b7" * (cols - 1) + "X"
        # The column numbers read downwards: line i holds digit i.
        assert len(labels) == 2
        assert ["".join(d).strip() for d in zip(*labels)] == [str(c) for c in range(1, cols + 1)]
    else:
        assert len(labels) == 1 and labels[0].split() == [str(c) for c in range(1, cols + 1)]
        assert board[5].split() == ["O"] + ["\u00b7"] * (cols - 2) + ["X"]


def test_a_board_wider_than_a_tiny_terminal_is_not_broken():
    # 64 columns in a 40-character terminal: the rows stay whole lines.
    game = c4.make(6, 64, 4)
    con, text = _console(width=40)
    terminal.print_board(con, game, game.env_reset())
    lines = text().splitlines()
    assert [len(x) for x in lines[:6]] == [64] * 6


@pytest.mark.parametrize("columns", ["0", "1", "12"])
def test_a_zero_or_tiny_terminal_width_still_shows_everything(monkeypatch, columns):
    # COLUMNS below the console's minimum width gets the minimum (at 0 rich
    # would print nothing, at 1 a letter per line): the board and the
    # status lines come out whole.
    import io

    monkeypatch.setenv("COLUMNS", columns)
    stream = io.StringIO()
    con = terminal.console(file=stream)
    assert con.width == terminal.MIN_WIDTH
    terminal.print_board(con, c4.env_reset().game, c4.from_moves("4453"))
    con.print("Best move: column 3")
    lines = stream.getvalue().splitlines()
    assert lines[-2] == "X to move (ply 4)" and lines[-1] == "Best move: column 3"


def test_tictactoe_draws_the_same_in_ascii():
    con, text = _console(encoding="ascii")
    terminal.print_board(con, ttt.GAME, ttt.from_moves("15"))
    assert text().splitlines()[0] == " X | 2 | 3"


@pytest.fixture(scope="module")
def search():
    env = ttt.from_moves("1")
    return env, c4jax.run_mcts(jax.random.key(0), env, 48)


def test_the_search_table_never_crops_a_number_in_a_narrow_terminal(search):
    env, out = search
    visits = [str(int(v)) for v in jax.device_get(out.visit_counts)[1:]]
    widths = {}
    for width in (30, 60, 120):
        con, text = _console(width=width, encoding="ascii")
        terminal.print_table(con, search_table(out, env, "t", with_prior=True))
        lines = text().splitlines()
        widths[width] = max(len(ln) for ln in lines)
        rows = [ln.split("|") for ln in lines if re.match(r"\|\s*\d+\s*\|", ln)]
        # One row per legal cell, its number and its visit count whole.
        assert [int(r[1]) for r in rows] == [2, 3, 4, 5, 6, 7, 8, 9], text()
        assert [r[2].strip() for r in rows] == visits, text()
    # Wide enough: the table fits; too narrow: it gets the width it needs
    # (the principal variation folded), never less, and no wider than that.
    assert widths[120] <= 120
    assert widths[30] > 30 and widths[30] == widths[60] < widths[120]


def test_the_arena_table_never_crops_a_number():
    import io

    r = c4jax.arena(jax.random.key(0), c4jax.random_player(), c4jax.heuristic_player(), 4, ttt.env_reset())
    for width in (40, 80):
        stream = io.StringIO()
        con = terminal.console(file=stream, width=width)
        terminal.print_table(con, arena_table(r))
        text = stream.getvalue()
        assert "\u2026" not in text, text  # rich's ellipsis: a cropped cell
        assert f"{r.compile_seconds:.1f} s" in text or "compile" in text
        assert "/".join(map(str, r.a_first)) in text


def test_the_arena_speed_has_thousands_separators_and_no_sims_without_a_search():
    import dataclasses

    def speed(result):
        stream = io.StringIO()
        terminal.print_table(terminal.console(file=stream, width=120), arena_table(result))
        lines = stream.getvalue().splitlines()
        assert max(map(len, lines)) <= 80, lines  # the table fits an 80-column terminal
        cells = [[c.strip() for c in line.split("\u2502")[1:-1]] for line in lines]
        assert ["time", f"run {result.seconds:.1f} s", f"compile {result.compile_seconds:.1f} s", ""] in cells, lines
        return next(line for line in lines if "speed" in line)

    r = c4jax.arena(jax.random.key(0), c4jax.random_player(), c4jax.random_player(), 2, ttt.env_reset())
    assert r.simulations_per_second == 0
    line = speed(dataclasses.replace(r, games_per_second=2518.66))
    assert "2,518.7 games/s" in line and "no search" in line and "sims/s" not in line, line
    line = speed(dataclasses.replace(r, simulations_per_second=123456.7, games_per_second=2518.66,
                                     seconds=1234.5, compile_seconds=15.4))
    assert "123,457 sims/s" in line and "no search" not in line, line


@pytest.mark.parametrize("width", [40, 80, 120])
def test_a_progress_bar_is_one_line_with_room_for_an_echoed_ctrl_c_and_whole_counts(width):
    from c4jax.present.progress import new_progress

    text = "iteration 12: gate: 200 games against the best player (iteration 11)"
    con = terminal.console(file=io.StringIO(), width=width)
    bar = new_progress(con)
    bar.update(bar.add_task(text, total=300), completed=120)
    with con.capture() as captured:
        con.print(bar.make_tasks_table(bar.tasks))
    lines = captured.get().splitlines()
    # Two columns to spare: a Ctrl-C's echoed "^C" never wraps the line.
    assert len(lines) == 1 and len(lines[0]) <= width - 2 and lines[0].rstrip().endswith("120/300 0:00:00"), lines
    shown = lines[0].split("\u2501")[0].strip()  # the description, before the bar
    assert shown == text or (shown.endswith("\u2026") and text.startswith(shown[:-1])), lines


@pytest.mark.parametrize("budget, pattern", [(0.5, r"thinking: 0\.[0-5] s of 0\.5 s\.\.\."),
                                             (30, r"thinking: [0-9]+ s of 30 s\.\.\.")])
def test_the_thinking_clock_shows_tenths_under_ten_seconds(budget, pattern):
    assert re.fullmatch(pattern, str(terminal.Clock("thinking", budget)))


def test_the_quickstart_prints_the_one_search_table():
    """The quickstart prints :func:`c4jax.present.analysis.search_table` (the table of
    ``c4jax analyze``) rather than a table of its own, and that table's
    headers hold no rich markup: "proven [lower, upper]" as a header would be
    read as markup and printed as "proven"."""
    import pathlib

    from rich.console import Console

    source = (pathlib.Path(__file__).resolve().parents[1] / "examples" / "quickstart.py").read_text()
    assert "search_table(" in source and "Table(" not in source
    env = ttt.from_moves("15")
    out = c4jax.run_mcts(jax.random.key(0), env, 48)
    con = Console(width=150, record=True, file=open("/dev/null", "w"))
    con.print(search_table(out, env, "[t]", with_prior=True))
    text = con.export_text()
    for header in ("cell", "visits", "share", "Q for X", "proven", "prior", "principal variation"):
        assert header in text, text


@pytest.mark.parametrize(
    "env, colour",
    [
        ({}, False),  # not a terminal: no escape codes
        ({"FORCE_COLOR": "1"}, True),
        ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, False),
        ({"FORCE_COLOR": "1", "TERM": "dumb"}, False),
    ],
    ids=["pipe", "FORCE_COLOR", "NO_COLOR", "TERM=dumb"],
)
def test_colour_follows_the_environment(monkeypatch, env, colour):
    for name in ("FORCE_COLOR", "NO_COLOR", "TERM", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    con, text = _console()
    terminal.print_board(con, c4.from_moves("4453").game, c4.from_moves("4453"))
    assert (ESC in text()) == colour, repr(text()[:80])


def test_an_output_that_cannot_encode_replaces_instead_of_raising(monkeypatch):
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
    monkeypatch.setattr("sys.stdout", stream)
    terminal.tolerate_any_encoding()
    print("\u00b7 \u2501", file=stream, flush=True)
    assert raw.getvalue() == b"? ?\n"


def test_a_result_line_longer_than_the_console_is_written_whole():
    long = "2 games, 18 plies, 18,000 simulations in 0.05 s (compiling 14.8 s apart) on 2 CPU devices"
    con, text = _console(width=40)
    terminal.print_line(con, long)
    assert text() == long + "\n"
    con, text = _console(width=40)
    con.print(long)  # rich's own print breaks it at the width
    assert text() != long + "\n" and text().replace("\n", " ").strip() == long


def test_a_search_tables_title_is_one_line_above_it(search):
    env, out = search
    title = "1,037 simulations in 30.00 s (budget 30 s; compiling before it 9.6 s), O to move, value +0.012"
    con, text = _console(width=80)
    terminal.print_table(con, search_table(out, env, title, with_prior=True))
    lines = text().splitlines()
    assert lines[0] == title and lines[1].startswith("\u250f")  # the table's top line follows


def test_the_status_clock_counts_the_seconds_up_to_the_budget():
    clock = terminal.Clock("the AI is thinking", 30)
    assert str(clock) == "the AI is thinking: 0 s of 30 s..."
    clock.start -= 12.2
    assert str(clock) == "the AI is thinking: 12 s of 30 s..."
    clock.start -= 100
    assert str(clock) == "the AI is thinking: 30 s of 30 s..."
    assert clock.__rich__().plain == str(clock)
