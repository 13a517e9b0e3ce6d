"""The tutorial (docs/tutorial/) stays true: every python block of every page runs, in order, in
one namespace per page, and prints exactly the ```output block shown under it (a block with no
output block must print nothing). The pictures are checked too: the DOT a page writes is the
committed one, and the committed SVG shows that DOT's labels. Every relative link resolves.

    python tests/test_tutorial.py --write     # reruns the pages and rewrites the output blocks
                                              # and the pictures (needs Graphviz for the SVG)

The pages run from a scratch directory holding links to the real `docs` and `examples` (so they
can read docs/bench/full.json and audit examples/audit_models.py, and the files they write land in
the scratch directory). Each block is
compiled under its page's name with its own line numbers, so tracebacks, anomaly mode's blame and
the audit's findings point at lines of the page.
"""

import contextlib
import html
import io
import linecache
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial"
PAGES = sorted(p.name for p in TUTORIAL.glob("*.md"))
# files a page writes -> the committed copy
PICTURES = {"stale-save.dot": TUTORIAL / "img" / "stale-save.dot",
            "inplace-bench.png": TUTORIAL / "img" / "inplace-bench.png"}

FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.S | re.M)


def blocks(text):
    """[(first line of the code, code, shown output or None, (start, end) of the output block,
    end of the code block)]."""
    fences = [(m.group(1), m.group(2), m.start(), m.end(), m.start(2)) for m in FENCE.finditer(text)]
    out = []
    for i, (lang, body, start, end, body_start) in enumerate(fences):
        if lang != "python":
            continue
        line = text.count("\n", 0, body_start) + 1
        shown, span = None, None
        if i + 1 < len(fences) and fences[i + 1][0] == "output" and not text[end:fences[i + 1][2]].strip():
            shown, span = fences[i + 1][1], (fences[i + 1][2], fences[i + 1][3])
        out.append((line, body, shown, span, end))
    return out


def run_page(name):
    """What each python block of the page prints, in order (run in the current directory)."""
    rel = f"docs/tutorial/{name}"
    text = (TUTORIAL / name).read_text()
    linecache.cache[rel] = (len(text), None, text.splitlines(True), rel)
    namespace = {"__name__": "__tutorial__"}
    printed = []
    for line, code, *_ in blocks(text):
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            exec(compile("\n" * (line - 1) + code, rel, "exec"), namespace)
        printed.append(buffer.getvalue())
    return printed


@contextlib.contextmanager
def scratch(path):
    """Runs in `path` with links to the real `docs` and `examples`."""
    (path / "docs").symlink_to(ROOT / "docs")
    (path / "examples").symlink_to(ROOT / "examples")
    old, old_path = os.getcwd(), list(sys.path)
    os.chdir(path)
    try:
        yield path
    finally:
        os.chdir(old)
        sys.path[:] = old_path


def _lines(text):
    return [line.rstrip() for line in text.rstrip("\n").splitlines()]


@pytest.mark.parametrize("name", PAGES)
def test_page_prints_what_it_shows(name, tmp_path):
    with scratch(tmp_path):
        printed = run_page(name)
    for (line, code, shown, *_), got in zip(blocks((TUTORIAL / name).read_text()), printed):
        if shown is None:
            assert got == "", f"{name}:{line}: the block prints but the page shows no output block:\n{got}"
        else:
            assert _lines(got) == _lines(shown), f"{name}:{line}: the page shows\n{shown}\nthe code prints\n{got}"
        if shown is not None:
            assert shown.strip(), f"{name}:{line}: an empty output block"


def test_the_graph_picture_is_what_the_page_draws(tmp_path):
    """The DOT the page writes is the committed one, and the committed SVG draws that DOT: the
    same nodes, every label line, and the stale save in red."""
    with scratch(tmp_path):
        run_page("1-version-counters.md")
        dot = (tmp_path / "stale-save.dot").read_text()
    assert dot == PICTURES["stale-save.dot"].read_text(), "rerun: python tests/test_tutorial.py --write"
    svg = (TUTORIAL / "img" / "stale-save.svg").read_text()
    nodes = {n for n in re.findall(r"^\s+(\w+) \[", dot, re.M) if n not in ("node", "edge")}
    assert {html.unescape(t) for t in re.findall(r"<title>(.*?)</title>", svg) if "->" not in html.unescape(t)} \
        == nodes | {"autograd"}, "the SVG's nodes are not the DOT's: rerender it"
    texts = {html.unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg)}
    for label in re.findall(r'label="(.*?)"', dot):
        for part in label.split("\\n"):
            assert part in texts, f"the SVG does not show {part!r}: rerender it from the DOT"
    assert 'stroke="red"' in svg  # the stale save


def test_links_resolve():
    for page in TUTORIAL.glob("*.md"):
        for target in re.findall(r"\]\(([^)#\s]+)", page.read_text()):
            if "://" not in target:
                assert (page.parent / target).exists(), f"{page.name}: broken link {target}"


def test_the_tutorial_is_listed():
    index = (ROOT / "docs" / "README.md").read_text()
    assert "tutorial/README.md" in index
    listing = (TUTORIAL / "README.md").read_text()
    assert all(name in listing for name in PAGES if name != "README.md")


def write():
    """Reruns every page and writes what it prints into its output blocks, and the pictures."""
    with tempfile.TemporaryDirectory() as tmp, scratch(Path(tmp)):
        for name in PAGES:
            page = TUTORIAL / name
            text = page.read_text()
            printed = run_page(name)
            for (line, code, shown, span, code_end), got in reversed(list(zip(blocks(text), printed))):
                fresh = f"```output\n{got.rstrip()}\n```" if got else ""
                if span is not None:  # replace the block (and the blank line before it when it goes)
                    start = span[0] if fresh else code_end
                    text = text[:start] + fresh + text[span[1]:]
                elif fresh:
                    text = text[:code_end] + "\n\n" + fresh + text[code_end:]
            page.write_text(text)
        for made, committed in PICTURES.items():
            if (Path(tmp) / made).exists():
                shutil.copy(Path(tmp) / made, committed)
    dot = PICTURES["stale-save.dot"]
    subprocess.run(["dot", "-Tsvg", str(dot), "-o", str(dot.with_suffix(".svg"))], check=True)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    write()
