"""Inside the Rust core crate, where the crate graph cannot enforce it (issue 11): the op layer and
the autograd engine meet through one door each way. Ops use only the items `autograd/mod.rs`
re-exports at its root (plus its `blame` and `mode` modules); autograd reaches ops only through
`ops/for_autograd.rs`. The crates themselves (base -> kernels -> core -> py) are layered by Cargo."""

import re
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "rust" / "core" / "src"


def _root_exports():
    text = (CORE / "autograd" / "mod.rs").read_text()
    names = set()
    for group in re.findall(r"^pub use \w+::\{?([^;}]*)\}?;", text, re.M):
        names.update(n.strip() for n in group.split(",") if n.strip())
    return names


def _paths(text, prefix):
    """Each name used right after `prefix` (`crate::autograd::`), braces expanded."""
    out = []
    for m in re.finditer(re.escape(prefix) + r"(\{[^}]*\}|\w+)", text):
        item = m.group(1)
        if item.startswith("{"):
            out += [n.strip().split("::")[0].split(" ")[0] for n in item[1:-1].split(",") if n.strip()]
        else:
            out.append(item)
    return out


def _uses(folder, prefix):
    found = {}
    for path in sorted((CORE / folder).rglob("*.rs")):
        for name in _paths(path.read_text(), prefix):
            found.setdefault(name, []).append(str(path.relative_to(CORE)))
    return found


def test_ops_use_only_what_autograd_exports_at_its_root():
    allowed = _root_exports() | {"blame", "mode"}
    assert {"Recorder", "Ctx", "Formula", "precheck", "check_inplace"} <= allowed
    stray = {name: files for name, files in _uses("ops", "crate::autograd::").items() if name not in allowed}
    assert not stray, f"ops reach into autograd's modules (export the item at the root instead): {stray}"


def test_autograd_reaches_ops_only_through_for_autograd():
    used = _uses("autograd", "crate::ops::")
    assert set(used) <= {"for_autograd"}, f"autograd uses ops other than through ops::for_autograd: {used}"
    assert "for_autograd" in used
    stray = {f for f in (CORE / "autograd").rglob("*.rs") if re.search(r"\bsuper::super::ops\b|use crate::ops;", f.read_text())}
    assert not stray


def test_the_checks_see_braced_and_nested_paths():
    text = "use crate::autograd::{Ctx, Formula};\nlet r = crate::autograd::record::precheck(&[]);"
    assert _paths(text, "crate::autograd::") == ["Ctx", "Formula", "record"]


def _methods(path, start):
    """Names of the `fn`s in the block that opens at the first line starting with `start`."""
    text = (CORE / path).read_text()
    body = text[text.index(start):]
    depth, end = 0, 0
    for i, ch in enumerate(body):
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "}" and depth == 0:
            end = i
            break
    return set(re.findall(r"^    fn (\w+)", body[:end], re.M))


def test_the_widening_wrapper_passes_every_backend_method_on():
    """Every backend sits behind `device::Widen`; a method it does not override would fall back to
    the trait's NotImplementedError default on every device, the CPU's included."""
    trait = _methods("device/mod.rs", "pub trait Backend")
    wrapper = _methods("device/widen.rs", "impl Backend for Widen")
    assert {"copy", "reduce", "random_fill"} <= trait
    assert trait - wrapper == set(), f"add these to device/widen.rs: {sorted(trait - wrapper)}"
