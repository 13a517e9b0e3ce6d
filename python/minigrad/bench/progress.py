"""A progress bar on stderr while the cases run: rich if installed, else tqdm, else nothing."""

import sys
from contextlib import contextmanager


@contextmanager
def bar(total, enabled=True):
    """Yields `advance(label)`, called once per finished case."""
    if not enabled or total == 0:
        yield lambda label: None
        return
    try:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    except ImportError:
        Progress = None
    if Progress is not None:
        with Progress(TextColumn("[bold]bench"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      TextColumn("{task.description}"), console=Console(stderr=True), transient=True) as p:
            task = p.add_task("", total=total)
            yield lambda label: p.update(task, advance=1, description=label)
        return
    try:
        from tqdm import tqdm
    except ImportError:
        yield lambda label: None
        return
    with tqdm(total=total, file=sys.stderr, leave=False) as t:
        def advance(label):
            t.set_postfix_str(label)
            t.update(1)
        yield advance
