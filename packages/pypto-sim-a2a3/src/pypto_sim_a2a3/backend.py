"""The ``a2a3sim`` backend: runs a lowered program on a simulated a2a3 chip."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from pypto.ir import (
    Function,
    FunctionKind,
    Program,
    RunReport,
    SpecializationError,
    UnsupportedDtypeError,
    VerificationError,
    dtype_from_torch_name,
    supported_torch_dtypes,
)
from pypto_sim_a2a3.arguments import argument_mismatch
from pypto_sim_a2a3.chip import Chip
from pypto_sim_a2a3.target import A2A3_TARGET


class A2A3SimBackend:
    """CPU simulator of one a2a3 chip: real numbers from torch, modeled cycles from the cost model.

    ``report = A2A3SimBackend().run(program, [a, b, out], {})`` writes ``out`` in place and
    returns a ``RunReport`` whose times are modeled cycles.
    """

    name = "a2a3sim"
    target = A2A3_TARGET

    def run(self, program: Program, args: Sequence[Any], options: Mapping[str, Any]) -> RunReport:
        """Run ``program``'s entry with ``args`` (torch tensors written in place, Python scalars).

        ``options["on_task"]``, when given, is called with each finished task's kernel name;
        ``options["on_progress"]`` with ``(kernel, done, total, unit)`` as a task advances: after
        each block of an ``pl.spmd`` task (unit ``"blocks"``), else after each iteration of the
        outermost loop of its first kernel that has one (``"iterations"``; the AIC's, for a
        Group)."""
        entry = _entry(program)
        _check_arguments(entry, args)
        chip = Chip(program, self.target, self.name, options.get("on_task"), options.get("on_progress"))
        outputs = chip.run(entry, args)
        return chip.report(outputs)


def _entry(program: Program) -> Function:
    try:
        entry = program.entry_function
    except KeyError:
        raise VerificationError(f"entry function {program.entry!r} is not in the program") from None
    if entry.kind is not FunctionKind.Orchestration:
        raise VerificationError(
            f"entry {entry.name} is a {entry.kind.value} function; a2a3sim runs an Orchestration entry",
            entry.span,
            "run the pass pipeline (OutlineScopes makes the entry an Orchestration function)",
        )
    return entry


def _check_arguments(entry: Function, args: Sequence[Any]) -> None:
    if len(args) != len(entry.params):
        names = ", ".join(p.var.name for p in entry.params)
        raise SpecializationError(
            f"{entry.name} takes {len(entry.params)} argument(s) ({names}) but got {len(args)}",
            entry.span,
            "pass one value per parameter, in order",
        )
    for param, value in zip(entry.params, args, strict=True):
        if isinstance(value, torch.Tensor) and dtype_from_torch_name(str(value.dtype)) is None:
            raise UnsupportedDtypeError(
                f"{entry.name}: argument {param.var.name} is a {value.dtype} tensor, which PyPTO cannot hold",
                param.var.span or entry.span,
                f"supported dtypes: {', '.join(supported_torch_dtypes())}",
            )
        problem = argument_mismatch(param, value)
        if problem is not None:
            raise SpecializationError(
                f"{entry.name}: parameter {param.var.name} {problem}",
                param.var.span or entry.span,
                "convert the argument (e.g. tensor.to(torch.float16)) or change the annotation",
            )
