"""`audit(model, *example_inputs)`: which in-place ops of a forward pass are safe, what they save,
and which out-of-place ops could be in place.

How it decides (every pass is forward+backward once, see _run.py):

1. **As written**, keeping the tensor each in-place call wrote: after forward, every save the
   graph holds is read without the version check (`_saves.py`). A save whose version moved is
   stale, and backward will raise on it; the calls that wrote into its tensor after it was saved
   (same version counter, version in between) are *unsafe*. Every other in-place call is *safe*:
   nothing backward needs was overwritten. An in-place call that raises at once (a leaf that
   requires grad, a view that may not be written) is *raises*; the audit runs it out of place in
   every pass, to see the rest. That backward really raises exactly when some call is unsafe is
   checked (`consistent`).
2. **The reference program** is the program with its unsafe ops out of place (the program as
   written when there are none). The other passes are compared with it: their outputs and
   gradients, and the allocator's counts (`Saving`).
3. **Each safe in-place op made out of place** in the reference: the bytes its in-place form
   saves, and whether the results change. If they do, another branch reads the tensor after the
   write and sees the overwritten values: the *multi-branch hazard*. The other kind of it is found
   in step 1: the stale save was another op's *input* (that op read the tensor before the write
   and needs it in backward). An unsafe op is also run alone out of place, to say whether that
   alone lets backward run.
4. **Each out-of-place op with an in-place form made in place** in the reference (`propose=True`):
   it could be in place when that pass runs forward and backward, gives the same outputs and
   gradients, and the tensor it would overwrite is no input, parameter or buffer of the model.
"""

from .._formatting import type_name
from ._report import AuditReport, InplaceOp, Proposal, Saving, format_bytes
from ._run import Runner, compare


def audit(model, *example_inputs, propose=True, seed=0, rtol=1e-5, atol=1e-6):
    """Audits the in-place ops of one forward+backward of `model(*example_inputs)` (the sum of
    the outputs that require grad is backpropagated). Returns an `AuditReport`: `str(report)` is
    a table and a line per finding, `report.to_dict()` the same as data.

    The model's parameters, buffers and gradients are as they were afterwards; the example
    inputs are copied for each pass and never written. `seed` seeds minigrad's default generator
    before each pass (dropout then draws one mask for all). `rtol`/`atol` decide when two passes
    give the same results. Not thread-safe: while it runs, Tensor's in-place methods and
    nn.functional's activations are wrapped (minigrad.inplace._calls)."""
    runner = Runner(model, example_inputs, seed)
    try:
        return _audit(runner, model, example_inputs, propose, rtol, atol)
    finally:
        runner.restore()


def _audit(runner, model, example_inputs, propose, rtol, atol):
    written = runner.run(keep_targets=True)
    report = AuditReport(
        model=_describe_model(model), inputs=[_describe(x) for x in example_inputs],
        forward_error=written.forward_error, backward_error=written.backward_error,
    )
    calls = written.calls
    unsafe = sorted({k for s in written.stale for k in s.writers})
    reference = runner.run(flip=unsafe)  # with no unsafe op, this is the program as written
    if unsafe:
        report.fixed = _outcome(written, reference, _same_calls(written, reference), rtol, atol, compare_results=False)
        report.fixed["flipped"] = list(unsafe)
    base = reference if _same_calls(written, reference) and reference.ok else None

    flippable = [c.index for c in calls if c.inplace and c.twin and not c.error]
    if flippable:
        everything = runner.run(flip=flippable)
        report.all_out_of_place = _outcome(reference, everything, _same_calls(written, everything), rtol, atol)

    for c in calls:
        if c.inplace:
            if c.index not in flippable:
                alone = None
            elif c.index in unsafe:
                alone = runner.run(flip={c.index})
            else:
                alone = runner.run(flip=set(unsafe) | {c.index})
            report.inplace.append(_judge_inplace(c, written, base, alone, c.index in unsafe, rtol, atol))

    for c in calls:
        if not c.inplace and c.statement is not True and c.twin:
            report.proposals.append(_judge_proposal(c, base, unsafe, runner, propose, rtol, atol))

    report.unexplained = [s.as_dict() for s in written.stale if not s.writers]
    caused_error = bool(unsafe or report.unexplained)
    report.consistent = caused_error == written.version_error or written.forward_error is not None
    return report


def _judge_inplace(c, written, base, alone, is_unsafe, rtol, atol):
    """`base`: the reference pass (None when it did not run through); `alone`: this op out of
    place (in the reference, or by itself when it is unsafe)."""
    op = InplaceOp(index=c.index, label=c.label, where=c.where, code=c.code, module_path=c.module_path, module=c.module,
                   statement=c.statement, writes_into=c.state if c.ran_in_place else None, nbytes=c.nbytes)
    if c.error:
        op.verdict = "raises"
        op.reasons.append(c.error)
        return op
    overwritten = [s for s in written.stale if c.index in s.writers]
    if overwritten:
        op.verdict = "unsafe"
        op.overwrites = [s.as_dict() for s in overwritten]
        for s in overwritten:
            op.reasons.append(f"{s.what()}; this write moved it to version {c.version_after}, "
                              f"so backward raises")
            if not s.is_output and c.index not in s.by_writer:
                op.multi_branch = True
                op.reasons.append(f"another branch ({s.node}) read this tensor before the write and "
                                  f"needs it in backward")
            elif not s.is_output:
                op.reasons.append(f"it overwrote its own operand, which its {s.node} saved")
    elif c.twin is None:
        op.reasons.append("nothing backward needs is overwritten")
    if alone is not None and is_unsafe:
        op.out_of_place = _outcome(written, alone, _same_calls(written, alone), rtol, atol, compare_results=False)
    elif alone is not None and base is not None:
        outcome = _outcome(base, alone, _same_calls(written, alone), rtol, atol)
        op.out_of_place = outcome
        if outcome["same_results"] is False:
            if c.statement:
                op.reasons.append(f"the result is dropped: the program relies on the write itself "
                                  f"(out of place it would be `x = x.{c.twin}(...)`)")
            else:
                op.multi_branch = True
                op.reasons.append(f"another branch reads this tensor after the write and sees the "
                                  f"overwritten values: out of place, {outcome['differs_in']} differs"
                                  + _by(outcome["max_difference"]))
        if outcome["aligned"] and not c.statement:
            op.saves = _saving(alone, base, c.index)
    if op.verdict == "safe" and not op.reasons:
        op.reasons.append("nothing backward needs is overwritten")
    return op


def _judge_proposal(c, base, unsafe, runner, propose, rtol, atol):
    p = Proposal(index=c.index, label=c.label, inplace_form=c.twin, where=c.where, code=c.code,
                 module_path=c.module_path, module=c.module, nbytes=c.nbytes)
    if c.state:
        p.verdict, p.reason = "no", f"it would overwrite the {c.state}"
        return p
    if not propose or base is None:
        p.verdict = "not checked"
        p.reason = "not asked (propose=False)" if not propose else (
            "the program does not run forward and backward even with its unsafe ops out of place")
        return p
    trial = runner.run(flip=set(unsafe) | {c.index})
    outcome = _outcome(base, trial, _same_calls(base, trial), rtol, atol)
    flipped = trial.calls[c.index] if c.index < len(trial.calls) else None
    if flipped is not None and flipped.flip_error:
        p.verdict, p.reason = "no", f"in place it raises {flipped.flip_error}"
    elif trial.forward_error:
        p.verdict, p.reason = "no", f"in place, forward then raises {trial.forward_error}"
    elif trial.backward_error:
        p.verdict, p.reason = "no", f"in place, backward raises {trial.backward_error}"
    elif not outcome["same_results"]:
        p.verdict = "no"
        p.reason = (f"another branch reads the input after this op: in place, {outcome['differs_in']} "
                    f"changes" + _by(outcome["max_difference"]))
    else:
        p.saves = _saving(base, trial, c.index) if outcome["aligned"] else None
        p.reason = "backward runs and the outputs and gradients are the same" + (
            f"; saves {_bytes_phrase(p.saves)}" if p.saves else "")
    return p


def _outcome(reference, other, aligned, rtol, atol, compare_results=True):
    """How pass `other` went, and (when both ran through) whether it gave `reference`'s results."""
    backward = ("raises" if other.backward_error else "runs") if other.forward_error is None else "not reached"
    if not aligned or not compare_results:
        return {"backward": backward, "same_results": None, "differs_in": None, "max_difference": None,
                "aligned": False, "error": other.forward_error or other.backward_error}
    if not (reference.ok and other.ok):
        return {"backward": backward, "same_results": None, "differs_in": None, "max_difference": None,
                "aligned": True, "error": other.forward_error or other.backward_error}
    same, where, diff = compare(reference, other, rtol, atol)
    return {"backward": backward, "same_results": same, "differs_in": where, "max_difference": diff,
            "aligned": True, "error": None}


def _saving(out_of_place, in_place, index):
    """Bytes the pass with call `index` in place saves against the pass with it out of place."""
    peak = out_of_place.peak_bytes - in_place.peak_bytes if out_of_place.ok and in_place.ok else None
    return Saving(call=out_of_place.calls[index].call_bytes - in_place.calls[index].call_bytes,
                  held=out_of_place.held_bytes - in_place.held_bytes, peak=peak)


def _same_calls(a, b):
    """Whether two passes made the same calls (so call i is the same call in both)."""
    return [c.op for c in a.calls] == [c.op for c in b.calls]


def _by(diff):
    return f" by up to {diff:.3g}" if diff else ""


def _bytes_phrase(s):
    parts = [f"{format_bytes(s.call)} at the call", f"{format_bytes(s.held)} held into backward"]
    if s.peak is not None:
        parts.append(f"{format_bytes(s.peak)} at the peak")
    return ", ".join(parts)


def _describe(x):
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"{str(x.dtype).split('.')[-1]} {list(x.shape)}"
    return type_name(x)


def _describe_model(model):
    return type(model).__name__ if hasattr(model, "named_modules") else getattr(model, "__name__", type_name(model))
