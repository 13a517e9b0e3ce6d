"""`minigrad bench`: the benchmark CLI (`minigrad bench --quick`, `python -m minigrad bench`).

Layout: `cli` (arguments, the run), `suites/` (what is measured, one module per suite),
`timing` (interleaved repetitions), `machine` (description, threads, copy bandwidth),
`peers` (torch, NumPy), `report`/`plot` (table, JSON, Markdown, PNG)."""

from .cli import main  # noqa: F401
