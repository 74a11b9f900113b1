"""A progress bar for long work: games played, searches compiled."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

__all__ = ["progress_bar", "progress_columns"]


def progress_columns() -> tuple:
    """The columns of :func:`progress_bar`: the description (folded onto
    more lines where the terminal is narrow), a bar 20 characters wide,
    ``finished/total`` and the time elapsed, the last two never cropped."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.table import Column

    return (TextColumn("{task.description}", table_column=Column(ratio=1, overflow="fold")),
            BarColumn(bar_width=20),
            MofNCompleteColumn(table_column=Column(no_wrap=True)),
            TimeElapsedColumn(table_column=Column(no_wrap=True)))


@contextlib.contextmanager
def progress_bar(description: str, total: int, shown: bool = True) -> Iterator[Callable[[int], None]]:
    """A context giving ``update(finished, description=None)``: a rich
    progress bar of ``total`` steps (:func:`progress_columns`;
    ``description`` replaces the text) while ``shown``, else an ``update``
    that does nothing."""
    if not shown:
        yield lambda finished, description=None: None
        return
    from rich.progress import Progress

    with Progress(*progress_columns()) as bar:
        task = bar.add_task(description, total=total)

        def update(finished: int, description: str | None = None) -> None:
            bar.update(task, completed=finished, **({} if description is None else {"description": description}))

        yield update
