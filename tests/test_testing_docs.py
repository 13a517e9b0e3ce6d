"""The code in docs/testing-api.md, docs/viz.md and docs/inplace-audit.md runs as written."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.mark.parametrize("page", ["testing-api.md", "viz.md", "inplace-audit.md"])
def test_doc_code_runs(page, tmp_path, monkeypatch):
    code = "\n".join(re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), re.S))
    assert code
    monkeypatch.chdir(tmp_path)  # files the examples write land here
    exec(compile(code, str(DOCS / page), "exec"), {"__name__": "docs_example"})
