"""The commands' terminal output: the rich console (colour and width rules),
the status line (compiling, then searching, with a clock), result lines that
never wrap, any output encoding, tables and boards that never squash a column
or break a row, Ctrl-C's message and a hard exit."""

from __future__ import annotations

import contextlib
import os
import sys
import time

MIN_WIDTH = 40  # the narrowest output drawn (a narrower terminal wraps it)


COMPILING = "compiling the search (once per board size and setting; later runs load it from the cache)"


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, with what the command kept: ``c4jax COMMAND: interrupted:
    MESSAGE`` on stderr and exit status 130 (:func:`c4jax.cli.main`)."""


def interrupt_behind(e: BaseException) -> KeyboardInterrupt | None:
    """The ``KeyboardInterrupt`` that ``e`` is or was caused by (its
    ``__cause__`` and ``__context__`` chain), else ``None``."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


@contextlib.contextmanager
def interrupts_held():
    """Holds Ctrl-C back while the block runs: a command's start-up, whose
    ``import jax`` loads C extensions that crash, abort or report another
    error when an interrupt lands inside them.  Yields a list that gets the
    signal if one came (the caller acts on it after the block); outside the
    main thread, where no handler can be set, it holds nothing back."""
    import signal

    came: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    except (ValueError, OSError):
        yield came
        return
    try:
        yield came
    finally:
        # None: a handler set outside Python, which cannot be put back.
        signal.signal(signal.SIGINT, signal.default_int_handler if previous is None else previous)


def on_interrupt(signum, frame) -> None:
    """The commands' SIGINT handler: ``KeyboardInterrupt``, except inside a
    ``gc`` callback (JAX's runs at every collection), where Python would
    print the exception and drop it: there the signal is sent again 50 ms
    later, once the collection is over."""
    import gc
    import signal
    import threading

    callbacks = {getattr(cb, "__code__", None) for cb in gc.callbacks}
    f = frame
    while f is not None:
        if f.f_code in callbacks:
            threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
            return
        f = f.f_back
    raise KeyboardInterrupt


@contextlib.contextmanager
def plain_interrupts():
    """Raises the ``KeyboardInterrupt`` itself where a Ctrl-C came out of the
    block as another exception: one that lands in a C extension's callback
    (numpy asking a JAX scalar type for its dtype) surfaces as
    ``SystemError: ... returned a result with an exception set``, the
    interrupt its cause."""
    try:
        yield
    except Exception as e:
        interrupt = interrupt_behind(e)
        if interrupt is None:
            raise
        raise interrupt from None


def console(**kw):
    """The commands' rich Console (highlighting off).  ``NO_COLOR`` (any
    value) and ``TERM=dumb`` turn every escape code off, ``FORCE_COLOR``
    turns colour on in a pipe, ``COLUMNS`` sets the width (80 in a pipe)."""
    from rich.console import Console

    # rich drops colours under NO_COLOR but still writes bold and underline
    # codes, and FORCE_COLOR overrides TERM=dumb: no styles at all in either.
    if os.environ.get("NO_COLOR") or os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
        kw.setdefault("color_system", None)
    con = Console(highlight=False, **kw)
    if con.width < MIN_WIDTH:  # COLUMNS=0 made rich print nothing, 1 a letter per line
        con.width = MIN_WIDTH
    return con


class _NoStatus:
    def update(self, text) -> None:
        pass


class _StatusLine:
    """A rich Status whose text changes are drawn at once (rich's own
    ``update`` waits for its next refresh, which a short phase may end
    before)."""

    def __init__(self, status, spinner: str):
        self._status, self._spinner = status, spinner

    def update(self, text) -> None:
        self._status.update(text, spinner=self._spinner)  # a new spinner: rich redraws now


@contextlib.contextmanager
def status(text):
    """A status line with a spinner on standard error while the block runs
    (compiling, searching): standard output stays the command's own; nothing
    is drawn when standard error is not a terminal.  Yields an object whose
    ``update(text)`` changes the line (a new phase: compiling, then
    searching); ``text`` is a string or a :class:`Clock`."""
    err = console(stderr=True)
    if not err.is_terminal:
        yield _NoStatus()
        return
    spinner = "line" if ascii_only(err) else "dots"
    with err.status(text, spinner=spinner) as rich_status:
        line = _StatusLine(rich_status, spinner)
        line.update(text)
        yield line


class Clock:
    """A status text that counts the seconds of a search with a time budget
    ("thinking: 12 s of 30 s..."), drawn anew at each refresh of the line."""

    def __init__(self, what: str, seconds: float):
        self.what, self.seconds, self.start = what, seconds, time.perf_counter()

    def __str__(self) -> str:
        elapsed = min(time.perf_counter() - self.start, self.seconds)
        # Tenths under 10 s, so that a short budget's clock moves.
        return f"{self.what}: {elapsed:.{1 if self.seconds < 10 else 0}f} s of {self.seconds:g} s..."

    def __rich__(self):
        from rich.text import Text

        return Text(str(self))


def print_line(con, text: str, **kw) -> None:
    """Prints one result or summary line whole: never wrapped at the
    console's width (a pipe's 80 columns), so that no phrase breaks."""
    con.print(text, soft_wrap=True, **kw)


GLYPHS = "\u00b7\u2501\u2502"  # the board's empty cell, rich's table and bar lines


def ascii_only(con) -> bool:
    """Whether ``con``'s output encoding cannot carry the board's glyphs
    (ASCII, Latin-1 without the box lines, an unknown codec): the board then
    draws empty cells as ``.`` (rich switches its tables to ASCII itself)."""
    try:
        GLYPHS.encode(con.encoding)
    except (LookupError, UnicodeEncodeError):
        return True
    return False


def tolerate_any_encoding() -> None:
    """Makes ``sys.stdout`` and ``sys.stderr`` replace what their encoding
    cannot write (``?``) instead of raising ``UnicodeEncodeError``: a
    non-UTF-8 terminal or pipe (``PYTHONIOENCODING=ascii``, a
    Windows code page) never ends a command with a traceback."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None:  # started with the stream closed (>&-)
            setattr(sys, name, open(os.devnull, "w"))
            continue
        try:
            GLYPHS.encode(stream.encoding or "ascii")
        except (LookupError, UnicodeEncodeError):
            with contextlib.suppress(AttributeError, ValueError, OSError):
                stream.reconfigure(errors="replace")


def _unsquashed_width(table) -> int:
    """The width ``table`` needs with every ``no_wrap`` column at its widest
    cell and the others at their longest word (rich's own measure lets it
    squash ``no_wrap`` columns too)."""
    from rich.cells import cell_len

    total = 0
    for col in table.columns:
        cells = [str(c) for c in col._cells] + [str(col.header)]
        if col.no_wrap:
            width = max(cell_len(c) for c in cells)
        else:
            width = max([col.min_width or 1] + [cell_len(w) for c in cells for w in c.split()])
        total += width + 2  # one space of padding each side
    return total + len(table.columns) + 1  # the column lines


def print_table(con, table) -> None:
    """Prints a rich Table without squashing a column: the columns that do
    not wrap (moves, visits, values) keep their width and only the principal
    variation folds; a terminal narrower than that gets a wider table (its
    lines run past the edge) rather than cropped numbers.  A title justified
    left is printed as one line above it (rich would wrap it at the
    table's width) and taken off the table."""
    if isinstance(table.title, str) and table.title and table.title_justify == "left":
        print_line(con, table.title, style=table.title_style or "table.title", markup=False)
        table.title = None
    needed = _unsquashed_width(table)
    if needed <= con.width:
        con.print(table)
        return
    width = con.width
    con.width = needed  # rich's print(width=...) cannot go past the console's width
    try:
        con.print(table, crop=False)
    finally:
        con.width = width


def print_board(con, game, env, max_lines: int | None = None, see_all: str = "") -> None:
    """Draws one game on ``con``: ASCII where its encoding needs it, and a
    board wider than the console (or a pipe's 80 columns) one character per
    cell, so that no row breaks.  A drawing of more than ``max_lines`` lines
    (``None``: no limit) keeps its last lines (the bottom rows, the column
    numbers and the status line) under one line that says what is hidden,
    and ``see_all`` after it (how to see the whole board)."""
    from rich.text import Text

    from c4jax.present.boards import render_rich, unbatched_grid

    drawing = render_rich(game, env, ascii_only=ascii_only(con), width=con.width)
    lines = drawing.split("\n")
    if max_lines is not None and len(lines) > max_lines:
        rows = unbatched_grid(game, env).shape[0]
        # The lines below the grid and at least one row stay.
        hidden = len(lines) - max(max_lines - 1, len(lines) - rows + 1)
        if hidden > 0:
            stones = sum(line.plain.count("X") + line.plain.count("O") for line in lines[:hidden])
            what = f"{stones} stone{'s' if stones != 1 else ''}" if stones else "empty"
            note = Text(f"... top {hidden} of {rows} rows not shown ({what}){see_all}", style="dim")
            drawing = Text("\n").join([note, *lines[hidden:]])
    con.print(drawing, no_wrap=True, overflow="ignore", crop=False)


def hard_exit(code: int) -> None:
    """Flushes the output and ends the process at once (``os._exit``)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
