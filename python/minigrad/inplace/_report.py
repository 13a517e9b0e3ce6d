"""The audit's findings: one `InplaceOp` per in-place call, one `Proposal` per out-of-place call
that has an in-place form, and the `AuditReport` that holds them (`str()` is a table and a line
per finding, `to_dict()` the same as data)."""

from dataclasses import asdict, dataclass, field


@dataclass
class Saving:
    """Bytes an in-place form saves against the out-of-place one, from the allocator's counters:
    `call` is what the call itself leaves allocated (the new result; transient when nothing keeps
    it), `held` what stays allocated from the end of forward into backward (retained by the
    graph), `peak` the difference in the highest allocation of forward+backward (None when a
    backward of the two passes compared raised)."""

    call: int
    held: int
    peak: int = None


@dataclass
class InplaceOp:
    index: int
    label: str                # "relu_", "+=", "F.relu(inplace=True)"
    where: str = None         # "model.py:12"
    code: str = None          # the line's text
    module_path: str = None   # the innermost module running: "0.relu" ("" is the model itself)
    module: str = None        # and what it is: "ReLU(inplace=True)"
    verdict: str = "safe"     # "safe", "unsafe" (backward needs what it overwrote), "raises" (at once)
    reasons: list = field(default_factory=list)   # a sentence each
    overwrites: list = field(default_factory=list)  # the stale saves it caused (Save.as_dict())
    multi_branch: bool = False
    statement: bool = None    # its result is dropped: the program relies on the write itself
    writes_into: str = None   # "example input 0", "parameter fc.weight"
    out_of_place: dict = None  # this op alone made out of place: {"backward", "same_results", "differs_in", "max_difference"}
    saves: Saving = None
    nbytes: int = 0           # bytes of the tensor it writes

    @property
    def safe(self):
        return self.verdict == "safe"

    def pointer(self):
        """Where to look: the program's line, else the module."""
        return _pointer(self)


@dataclass
class Proposal:
    index: int
    label: str                # the call as written: "F.relu", "relu", "+"
    inplace_form: str         # "F.relu(inplace=True)", "relu_", "+="
    where: str = None
    code: str = None
    module_path: str = None
    module: str = None
    verdict: str = "yes"      # "yes" (same results, backward fine), "no", "not checked"
    reason: str = ""
    saves: Saving = None
    nbytes: int = 0

    def pointer(self):
        return _pointer(self)


@dataclass
class AuditReport:
    model: str
    inputs: list                          # "float32 [64, 64]" per example input
    forward_error: str = None             # as written
    backward_error: str = None            # as written
    inplace: list = field(default_factory=list)    # InplaceOp
    proposals: list = field(default_factory=list)  # Proposal
    unexplained: list = field(default_factory=list)  # stale saves no seen call wrote (Save.as_dict())
    fixed: dict = None                    # the unsafe ops out of place (the reference program): {"backward", "flipped", ...}
    all_out_of_place: dict = None         # every in-place op out of place at once, against the reference
    consistent: bool = True               # the verdicts agree with what backward did

    @property
    def unsafe(self):
        return [op for op in self.inplace if not op.safe]

    @property
    def multi_branch(self):
        return [op for op in self.inplace if op.multi_branch]

    def to_dict(self):
        return asdict(self)

    def findings(self):
        """One line per finding, each starting with the place in the program it is about."""
        lines = []
        for op in self.inplace:
            head = f"{op.pointer()}: {op.label}"
            if op.code and op.where:
                head += f"  [{op.code}]"
            if op.verdict == "raises":
                lines.append(f"{head}: raises at once: {op.reasons[0]}")
            elif op.verdict == "unsafe":
                lines.append(f"{head}: UNSAFE: " + "; ".join(op.reasons))
            if op.multi_branch and op.verdict == "safe":
                lines.append(f"{head}: multi-branch hazard: " + "; ".join(op.reasons))
            if op.writes_into:
                lines.append(f"{head}: writes into the {op.writes_into}: the caller sees it change")
            if op.safe and not op.multi_branch and not op.writes_into:
                lines.append(f"{head}: safe: " + ("; ".join(op.reasons) or "nothing backward needs is overwritten"))
        for p in self.proposals:
            if p.verdict == "yes":
                lines.append(f"{p.pointer()}: {p.label} could be {p.inplace_form}: {p.reason}")
            elif p.verdict == "no":
                lines.append(f"{p.pointer()}: {p.label} must stay out of place: {p.reason}")
        for s in self.unexplained:
            lines.append(f"?: {s['node']} saved `{s['name']}` at version {s['saved_version']}, now "
                         f"{s['version']}, written by nothing the audit saw (.data, an optimizer step, code inside minigrad)")
        return lines

    def __str__(self):
        out = [f"minigrad.audit of {self.model} on {', '.join(self.inputs) or 'no inputs'}"]
        for op in self.inplace:
            if op.verdict == "raises" and not self.forward_error:
                out.append(f"as written, forward raises at {op.pointer()} ({op.label}): {op.reasons[0]}; "
                           f"the audit ran it out of place to see the rest")
        if self.forward_error:
            out.append(f"as written, forward raises {self.forward_error}")
        elif self.backward_error:
            out.append(f"as written, backward raises {self.backward_error}")
        else:
            out.append("as written, forward and backward run" if not any(
                op.verdict == "raises" for op in self.inplace) else "then forward and backward run")
        if self.fixed is not None:
            n = len(self.fixed["flipped"])
            out.append(f"with its {n} unsafe op{'s' if n > 1 else ''} out of place, backward {self.fixed['backward']}"
                       + ("; the rest of this report is about that program" if self.fixed["backward"] == "runs" else ""))
        if self.all_out_of_place is not None:
            a = self.all_out_of_place
            same = {True: "the same results", False: f"different results ({a['differs_in']})", None: "no comparison"}
            out.append(f"with every in-place op out of place: backward {a['backward']}; {same[a['same_results']]}")
        out.append("")
        out.append(f"in-place ops ({len(self.inplace)}):")
        rows = [("#", "op", "where", "verdict", "branches", "at call", "held", "peak")]
        for op in self.inplace:
            s = op.saves
            rows.append((str(op.index), op.label, op.pointer(), op.verdict, "HAZARD" if op.multi_branch else "-",
                         format_bytes(s.call) if s else "-", format_bytes(s.held) if s else "-",
                         format_bytes(s.peak) if s and s.peak is not None else "-"))
        out += _table(rows)
        checked = [p for p in self.proposals if p.verdict != "not checked"]
        out.append("")
        out.append(f"out-of-place ops with an in-place form ({len(self.proposals)}, {len(checked)} checked):")
        rows = [("#", "op", "where", "in place?", "at call", "held", "peak")]
        for p in self.proposals:
            s = p.saves
            rows.append((str(p.index), f"{p.label} -> {p.inplace_form}", p.pointer(), p.verdict,
                         format_bytes(s.call) if s else "-", format_bytes(s.held) if s else "-",
                         format_bytes(s.peak) if s and s.peak is not None else "-"))
        out += _table(rows)
        out.append("")
        out.append("findings:")
        out += [f"  {line}" for line in self.findings()]
        if not self.consistent:
            out.append("  NOTE: the verdicts do not explain what backward did; please report this")
        out.append("")
        out.append("bytes saved by the in-place form: 'at call' = left allocated by the call (transient unless "
                   "kept), 'held' = still allocated when forward ends (retained into backward), 'peak' = the "
                   "highest allocation of forward+backward")
        return "\n".join(out)


def _pointer(finding):
    if finding.where:
        return finding.where
    if finding.module is not None:
        return f"module {finding.module_path or '(the model)'} {finding.module}"
    return "?"


def format_bytes(n):
    if n is None:
        return "-"
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{sign}{n / size:.3g} {unit}"
    return f"{sign}{n} B"


def _table(rows):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
