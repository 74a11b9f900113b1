"""A progress bar for long work: games played, searches compiled."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

__all__ = ["progress_bar"]


@contextlib.contextmanager
def progress_bar(description: str, total: int, shown: bool = True) -> Iterator[Callable[[int], None]]:
    """A context giving ``update(finished, description=None)``: a rich
    progress bar of ``total`` steps (description, bar, ``finished/total``,
    time elapsed; ``description`` replaces the text) while ``shown``, else
    an ``update`` that does nothing."""
    if not shown:
        yield lambda finished, description=None: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()) as bar:
        task = bar.add_task(description, total=total)

        def update(finished: int, description: str | None = None) -> None:
            bar.update(task, completed=finished, **({} if description is None else {"description": description}))

        yield update
