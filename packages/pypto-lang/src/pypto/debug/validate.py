"""Per-pass bisection: run every pass dump's IR on the host and name the first pass whose result
differs from the expected tensors.

>>> validate_pass_ir_codegen_results("build_output/k/passes_dump/", tensors, {"out": ref})  # doctest: +SKIP
==================== 01_after_OutlineScopes ====================
validate tensor: 'out', max_abs_diff: 0.000000e+00, pass: True
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from pypto.debug.codegen import torch_codegen
from pypto.ir import Program, PyptoError, SourceSpan

__all__ = [
    "PassResultMismatch",
    "ValidationInputError",
    "validate_pass_ir_codegen_results",
    "validate_program",
]

_DUMP = re.compile(r"^(\d+)_after_(.+)\.py$")


class PassResultMismatch(PyptoError, AssertionError):
    """The program after a pass computes something else than expected: that pass (or, when the
    first dump already differs, the program or the expected tensors) changed the meaning."""


class ValidationInputError(PyptoError, ValueError):
    """Arguments ``validate_pass_ir_codegen_results`` cannot run: no dumps, a parameter with no
    tensor, an expected tensor that is no parameter."""


def dump_files(path: str | os.PathLike[str]) -> list[Path]:
    """The pass dumps at ``path`` (a ``passes_dump/`` directory, in pass order, or one file)."""
    where = Path(path)
    if where.is_file():
        return [where]
    if not where.is_dir():
        raise FileNotFoundError(f"no pass dump directory or file at {where}")
    found = [(int(m.group(1)), f) for f in where.iterdir() if (m := _DUMP.match(f.name))]
    if not found:
        raise FileNotFoundError(f"{where} holds no pass dumps (NN_after_<Pass>.py)")
    return [f for _, f in sorted(found)]


def pass_name(file: Path) -> str:
    """``ExpandMixedKernel`` for ``21_after_ExpandMixedKernel.py`` (the file's stem otherwise)."""
    m = _DUMP.match(file.name)
    return m.group(2) if m else file.stem


def validate_pass_ir_codegen_results(
    path: str | os.PathLike[str],
    tensors: Mapping[str, Any],
    expected: Mapping[str, torch.Tensor],
    *,
    rtol: float = 5e-2,
    atol: float = 5e-2,
    verbose: bool = True,
) -> dict[str, dict[str, float]]:
    """Run each pass dump at ``path`` on the host and compare its outputs with ``expected``.

    Each dump is parsed with ``pl.loads_program``, written as torch by
    ``torch_codegen(..., check_shapes=True)`` and its entry run on copies of ``tensors`` (the
    entry's arguments by parameter name; scalars as they are). Every tensor named in ``expected``
    is compared (``torch.allclose`` with ``rtol`` / ``atol``); one header per dump and one line per
    tensor are printed. The first dump whose result differs raises :class:`PassResultMismatch`
    naming its file, its pass, the tensor and the largest difference. Returns each dump's largest
    absolute difference per tensor: ``{"03_after_ConvertTensorToTileOps": {"out": 0.0}}``.
    """
    import pypto.language as pl  # the parser reads the dumps back

    results: dict[str, dict[str, float]] = {}
    previous: str | None = None
    for file in dump_files(path):
        program = pl.loads_program(file)
        label = file.stem
        results[label] = validate_program(
            program,
            tensors,
            expected,
            rtol=rtol,
            atol=atol,
            label=label,
            verbose=verbose,
            culprit=f"pass {pass_name(file)} ({file})",
            previous=previous,
        )
        previous = label
    return results


def validate_program(
    program: Program,
    tensors: Mapping[str, Any],
    expected: Mapping[str, torch.Tensor],
    *,
    rtol: float = 5e-2,
    atol: float = 5e-2,
    label: str = "program",
    verbose: bool = True,
    culprit: str | None = None,
    previous: str | None = None,
) -> dict[str, float]:
    """Run ``program``'s entry (by ``torch_codegen``) on copies of ``tensors``; compare with
    ``expected``; a :class:`PassResultMismatch` naming ``culprit`` when a tensor differs."""
    entry = program.entry_function
    names = [p.var.name for p in entry.params]
    missing = [n for n in names if n not in tensors]
    if missing:
        raise ValidationInputError(
            f"{label}: {entry.name}() takes {', '.join(names)}; no tensor given for {', '.join(missing)}",
            hint="pass tensors as a dict of every parameter name to its tensor (or scalar)",
        )
    unknown = [n for n in expected if n not in names]
    if unknown:
        raise ValidationInputError(
            f"{label}: expected names {', '.join(map(repr, unknown))}, which {entry.name}() has no "
            f"parameter of; its parameters: {', '.join(names)}",
            hint="key expected by the name of an output parameter, e.g. {'out': golden}",
        )
    args = {n: v.clone() if isinstance(v, torch.Tensor) else v for n, v in tensors.items() if n in names}
    code = torch_codegen(program, check_shapes=True)
    namespace: dict[str, Any] = {}
    exec(compile(code, f"<torch_codegen {label}>", "exec"), namespace)
    where = culprit or label
    try:
        namespace[entry.name](*(args[n] for n in names))
    except (PyptoError, AssertionError, RuntimeError, ValueError, IndexError) as err:
        raise PassResultMismatch(
            f"{label}: the program after {where} does not run on the host: {err}",
            getattr(err, "span", None) or _span(program),
            _hint(previous),
        ) from err
    if verbose:
        print(f"{'=' * 20} {label} {'=' * 20}")
    diffs: dict[str, float] = {}
    for name, want in expected.items():
        got = args[name]
        diff, ok = compare(got, want, rtol, atol)
        diffs[name] = diff
        if verbose:
            print(f"validate tensor: {name!r}, max_abs_diff: {diff:.6e}, pass: {ok}")
        if not ok:
            raise PassResultMismatch(
                f"{label}: tensor {name!r} differs from the expected one after {where}: "
                f"max_abs_diff {diff:.6e} (rtol={rtol}, atol={atol})",
                _span(program),
                _hint(previous),
            )
    return diffs


def compare(got: Any, want: Any, rtol: float, atol: float) -> tuple[float, bool]:
    """The largest absolute difference of two tensors and whether they are close (NaN where the
    other has NaN counts as equal; a shape mismatch is never close)."""
    got_t, want_t = torch.as_tensor(got), torch.as_tensor(want)
    if got_t.shape != want_t.shape:
        return float("inf"), False
    a, b = got_t.double(), want_t.double()
    both_nan = torch.isnan(a) & torch.isnan(b)
    diff = (a - b).abs().masked_fill(both_nan, 0.0)
    worst = float(diff.nan_to_num(nan=float("inf")).max()) if diff.numel() else 0.0
    return worst, bool(torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True))


def _span(program: Program) -> SourceSpan | None:
    return program.entry_function.span


def _hint(previous: str | None) -> str:
    if previous is None:
        return (
            "the first program already differs: check the expected tensors and the tolerance "
            "(step 1), then the kernel itself (torch_codegen of the parsed program)"
        )
    return f"diff this dump against {previous}.py: the change between the two is the pass's"
