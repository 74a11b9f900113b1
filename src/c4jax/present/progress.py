"""A progress bar for long work: games played, searches compiled."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

__all__ = ["progress_bar", "new_progress"]


def new_progress(console=None):
    """The :class:`rich.progress.Progress` of :func:`progress_bar`: one line,
    two columns narrower than the terminal, holding the description (cut
    short with an ellipsis where the terminal is narrow), a bar 12
    characters wide, ``finished/total`` and the time elapsed, the last two
    never cropped.  (The two columns take the "^C" a terminal echoes on
    Ctrl-C: where it wraps, the bar is drawn again on the next line.)
    ``console``: rich's console to draw on (default: rich's own)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    from rich.table import Column

    class OneLine(Progress):
        def make_tasks_table(self, tasks):
            table = super().make_tasks_table(tasks)
            live = getattr(self, "live", None)  # None while Progress.__init__ runs
            if live is not None:
                table.width = max(1, live.console.width - 2)
            return table

    description = Column(ratio=1, no_wrap=True, overflow="ellipsis")
    return OneLine(TextColumn("{task.description}", table_column=description),
                   BarColumn(bar_width=12),
                   MofNCompleteColumn(table_column=Column(no_wrap=True)),
                   TimeElapsedColumn(table_column=Column(no_wrap=True)),
                   expand=True, console=console)


@contextlib.contextmanager
def progress_bar(description: str, total: int, shown: bool = True) -> Iterator[Callable[[int], None]]:
    """A context giving ``update(finished, description=None)``: a rich
    progress bar of ``total`` steps (:func:`new_progress`;
    ``description`` replaces the text) while ``shown``, else an ``update``
    that does nothing."""
    if not shown:
        yield lambda finished, description=None: None
        return
    with new_progress() as bar:
        task = bar.add_task(description, total=total)

        def update(finished: int, description: str | None = None) -> None:
            bar.update(task, completed=finished, **({} if description is None else {"description": description}))

        yield update
