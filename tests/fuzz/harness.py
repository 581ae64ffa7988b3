"""Run one generated program and judge it.

A generated program is a module written to a file: a ``@pl.jit`` function ``kernel``, a torch
function ``reference`` computing what the kernel's outputs must hold, and constants describing
the call (``INPUTS``, ``OUTPUTS``, ``SCALARS``, ``ARGS``), what the generator knows about it
(``EXPECT``: ``"valid"``, ``"invalid"`` or ``"either"``, and ``WHY``) and the tolerance
(``RTOL``, ``ATOL``). :func:`judge` runs it and raises :class:`ProgramFailure` unless the program
either raises a :class:`pypto.ir.PyptoError` rendered with a span into the program, its source
line, a caret and a hint, or runs and leaves in its outputs what torch computes.

This module imports only torch and pypto, so a reproducer can carry a copy of it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import signal
import sys
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from pypto.ir import PyptoError, VerificationError
from pypto.runtime import RunConfig

SIM = RunConfig(platform="a2a3sim")
TIMEOUT_SECONDS = 60
INT_SENTINEL = -77  # what an output element holds before the kernel runs


class ProgramFailure(AssertionError):
    """The program broke the oracle: an internal error, a bad diagnostic, a hang or a mismatch.

    ``signature`` names the kind of failure without the program's particulars (numbers, paths,
    value names), so that failures of one cause group together.
    """

    signature = ""


_FAILURE_TYPES: dict[str, type[ProgramFailure]] = {}


def failure_type(signature: str) -> type[ProgramFailure]:
    """One ProgramFailure subclass per signature: hypothesis tells bugs apart by exception type
    and shrinks each to its own minimal program."""
    if signature not in _FAILURE_TYPES:
        name = f"ProgramFailure_{len(_FAILURE_TYPES)}"
        _FAILURE_TYPES[signature] = type(name, (ProgramFailure,), {"signature": signature})
    return _FAILURE_TYPES[signature]


def normalize(text: str) -> str:
    """``text`` without what varies between programs of one failure: paths, numbers, names."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    first = re.sub(r"\S*/gen_\w+\.py(:\d+(:\d+)?)?", "FILE", first)
    first = re.sub(r"\b(v|x|out|tmp_)\w*\d+\b", "NAME", first)
    first = re.sub(r"\d+", "N", first)
    return first[:160]


class ProgramTimeout(BaseException):
    """Raised by the alarm; a BaseException so that no ``except Exception`` swallows it."""


def load(path: Path) -> ModuleType:
    """Import the program at ``path`` as a fresh module (the DSL reads its source back)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # inspect.getsource looks the module up by name
    spec.loader.exec_module(module)
    return module


def make_tensor(shape: list[int], dtype: str, dist: str, scale: float, seed: int) -> torch.Tensor:
    """One input, the same on every run: ``dist`` is ``normal`` (clamped to +-3 scale),
    ``positive`` (in [0.5, 0.5 + scale]) or ``int`` (integers in [-scale, scale])."""
    gen = torch.Generator().manual_seed(seed)
    if dist == "int":
        bound = int(scale)
        values = torch.randint(-bound, bound + 1, shape, generator=gen, dtype=torch.int64)
    elif dist == "positive":
        values = 0.5 + scale * torch.rand(shape, generator=gen, dtype=torch.float64)
    else:
        values = scale * torch.randn(shape, generator=gen, dtype=torch.float64).clamp(-3, 3)
    return values.to(getattr(torch, dtype))


def make_output(shape: list[int], dtype: str) -> torch.Tensor:
    """An output filled with a value no kernel computes: NaN for floats, -77 for integers."""
    torch_dtype = getattr(torch, dtype)
    fill = float("nan") if torch_dtype.is_floating_point else INT_SENTINEL
    return torch.full(shape, fill, dtype=torch_dtype)


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise :class:`ProgramTimeout` if the block runs longer than ``seconds`` (main thread)."""

    def on_alarm(signum: int, frame: Any) -> None:
        raise ProgramTimeout(f"the program ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _fail(path: Path, what: str, signature: str | None = None) -> ProgramFailure:
    """A failure carrying the program's source; ``signature`` defaults to ``what``'s first line."""
    signature = signature if signature is not None else normalize(what)
    return failure_type(signature)(f"{what}\n\n--- generated program {path} ---\n{path.read_text()}")


_HEAD = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): \w+: .+")
_CARET = re.compile(r"^\s*\|\s*\^+\s*$")


def check_rendering(err: PyptoError, path: Path) -> None:
    """The rendered error has ``file:line:col`` in the program, the line with a caret, a hint."""
    text = str(err)
    lines = text.splitlines()
    head = _HEAD.match(lines[0]) if lines else None
    where = f"{type(err).__name__} rendered as:\n{text}"

    def bad(what: str) -> ProgramFailure:
        return _fail(path, f"{what}: {where}", f"{what}: {type(err).__name__}: {normalize(err.message)}")

    if head is None:
        raise bad("the error has no file:line:col")
    if Path(head["file"]).resolve() != path.resolve():
        raise bad("the error's span points outside the generated program")
    source = path.read_text().splitlines()
    if not 1 <= int(head["line"]) <= len(source):
        raise bad("the error's line is not in the program")
    # The message may span lines (a deadlock lists every core): the excerpt follows it.
    gutter = re.compile(rf"^\s*{head['line']} \| ")
    quoted = [i for i, line in enumerate(lines) if gutter.match(line)]
    want = source[int(head["line"]) - 1].strip()
    if not quoted or not lines[quoted[0]].rstrip().endswith(want):
        raise bad("the error does not quote the source line")
    if quoted[0] + 1 >= len(lines) or not _CARET.match(lines[quoted[0] + 1]):
        raise bad("the error has no caret under the source line")
    if not any(line.startswith("hint: ") for line in lines):
        raise bad("the error has no hint: line")


def _arguments(module: ModuleType) -> tuple[list[Any], dict[str, Any]]:
    values: dict[str, Any] = {}
    for name, shape, dtype, dist, scale, seed in module.INPUTS:
        values[name] = make_tensor(shape, dtype, dist, scale, seed)
    for name, shape, dtype in module.OUTPUTS:
        values[name] = make_output(shape, dtype)
    values.update(module.SCALARS)
    return [values[name] for name in module.ARGS], values


def _clone(value: Any) -> Any:
    return value.clone() if isinstance(value, torch.Tensor) else value


def _compare(module: ModuleType, path: Path, values: dict[str, Any], want: dict[str, Any]) -> None:
    for name, _shape, _dtype in module.OUTPUTS:
        got, expected = values[name], want[name]
        if tuple(got.shape) != tuple(expected.shape):
            raise _fail(path, f"generator bug: reference {name} has shape {list(expected.shape)}")
        finite = expected.double()[torch.isfinite(expected.double())]
        scale = max(1.0, float(finite.abs().max())) if finite.numel() else 1.0
        try:
            torch.testing.assert_close(
                got.double(),
                expected.double(),
                rtol=module.RTOL,
                atol=module.ATOL * scale,
                equal_nan=True,
            )
        except AssertionError as err:
            reasons = [w for w in module.WHY.split("; ") if w]
            raise _fail(
                path,
                f"mismatch against torch in {name} ({got.dtype}; torch computes {expected.dtype}):\n{err}",
                f"mismatch against torch ({module.EXPECT} program, {got.dtype} vs torch's "
                f"{expected.dtype}): {normalize(reasons[0]) if reasons else ''}",
            ) from None


def judge(path: Path, timeout: int = TIMEOUT_SECONDS) -> str:
    """Run the program at ``path``; return ``"ran"`` or ``"rejected: <ErrorType>"``, or raise
    :class:`ProgramFailure` naming what broke the oracle (with the program's source)."""
    module = load(path)
    args, values = _arguments(module)
    try:
        want = module.reference(**{name: _clone(value) for name, value in values.items()})
        ref_error = None
    except Exception as err:  # torch (or the reference's range checks) rejects the program
        want, ref_error = None, err
    try:
        with warnings.catch_warnings(), time_limit(timeout):
            warnings.simplefilter("ignore")
            module.kernel(*args, config=SIM)
    except ProgramTimeout as err:
        raise _fail(path, f"hang: {err}") from None
    except VerificationError as err:
        raise _fail(path, f"VerificationError (reserved for compiler invariants):\n{err}") from None
    except PyptoError as err:
        check_rendering(err, path)
        if module.EXPECT == "valid" and ref_error is None:
            raise _fail(
                path,
                f"a valid program was rejected with {type(err).__name__}:\n{err}",
                f"valid program rejected: {type(err).__name__}: {normalize(err.message)}",
            ) from None
        return f"rejected: {type(err).__name__}"
    except Exception as err:
        trace = "".join(traceback.format_exception(err)[-6:])
        raise _fail(
            path,
            f"internal error leaked: {type(err).__name__}: {err}\n{trace}",
            f"internal error leaked: {type(err).__name__}: {normalize(str(err))}",
        ) from None
    if module.EXPECT == "invalid":
        raise _fail(
            path,
            f"an invalid program ran without an error ({module.WHY})",
            f"invalid program ran: {normalize(module.WHY.split('; ')[-1])}",
        )
    if ref_error is not None:
        raise _fail(
            path, f"ran, but the reference rejects the program: {type(ref_error).__name__}: {ref_error}"
        )
    _compare(module, path, values, want)
    return "ran"
