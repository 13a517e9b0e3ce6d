"""`minigrad.inplace`: the in-place auditor (beyond torch).

    report = minigrad.audit(model, x)      # also minigrad.inplace.audit
    print(report)                          # a table and a line per finding
    report.to_dict()                       # the same as data

For each in-place op of one forward pass (a method ending in `_`, `+=`, `x[i] = v`,
`nn.ReLU(inplace=True)`, `F.relu(x, inplace=True)`, ...): whether backward needs a tensor it
overwrote (then backward raises torch's "modified by an inplace operation" error), whether it is
the multi-branch hazard (another branch reads the tensor it overwrites), and what it saves in
bytes, from the allocator's counters. For each out-of-place op that has an in-place form: whether
it could be in place, and what that would save. `minigrad audit module:callable` on the command
line. How it decides: minigrad/inplace/_audit.py; the guide: docs/inplace-audit.md.
"""

from ._audit import audit
from ._report import AuditReport, InplaceOp, Proposal, Saving

__all__ = ["audit", "AuditReport", "InplaceOp", "Proposal", "Saving"]
