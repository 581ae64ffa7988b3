"""The harness's golden: a reference for a run's outputs, kept on disk, compared after the run.

``pypto.runtime.run(kernel, *tensors, golden=fn, config=RunConfig(golden_data_dir="g/"))``
compiles and runs the kernel, then compares each output (``pl.Out`` / ``pl.InOut`` parameter)
with its golden, within ``config.rtol`` / ``config.atol``:

- a golden already in ``golden_data_dir`` (``<name>.pt`` per output, written by
  :func:`write_golden`) is read: later runs compare against a fixed artefact, not a recomputed one;
- else ``golden(tensors)`` computes it (a dict of the arguments by parameter name, copies taken
  before the run; the function writes the outputs in place) and, with ``golden_data_dir``, it is
  written there;
- else, with ``golden_data_dir`` only, the run's own outputs are recorded as the golden.

A mismatch is a :class:`GoldenMismatchError` naming the tensor, the largest absolute and
relative difference and the index of the worst element. ``compiled(...)`` and
``ChipWorker.run(...)`` dispatch without any of this: the golden fields do nothing there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto.ir import ConfigError, Direction, Function, PyptoError
from pypto.ir.tracebacks import call_site, raise_at_user_line

if TYPE_CHECKING:
    import torch

__all__ = ["GoldenError", "GoldenMismatchError", "compare_golden", "read_golden", "write_golden"]

Golden = Callable[[dict[str, Any]], Any]


class GoldenError(PyptoError, ValueError):
    """A golden that cannot be read, written or matched to the program's outputs."""


class GoldenMismatchError(GoldenError, AssertionError):
    """A run's output differs from its golden beyond ``rtol`` / ``atol``."""


def write_golden(golden_data_dir: str | os.PathLike[str], outputs: Mapping[str, torch.Tensor]) -> Path:
    """Write ``outputs`` (output name -> tensor) as the golden in ``golden_data_dir``
    (``<name>.pt`` each); returns the directory.

    >>> write_golden("golden/", {"out": torch.exp(x)})  # doctest: +SKIP
    """
    import torch

    directory = Path(golden_data_dir)
    directory.mkdir(parents=True, exist_ok=True)
    for name, tensor in outputs.items():
        if not isinstance(tensor, torch.Tensor):
            raise GoldenError(
                f"write_golden: {name!r} is a {type(tensor).__name__}, not a tensor",
                hint="pass a dict of output names to torch tensors",
            )
        torch.save(tensor.detach().cpu().clone(), directory / f"{name}.pt")
    return directory


def read_golden(
    golden_data_dir: str | os.PathLike[str], names: Sequence[str]
) -> dict[str, torch.Tensor] | None:
    """The goldens of ``names`` in ``golden_data_dir``, or None unless every one is there."""
    import torch

    directory = Path(golden_data_dir)
    files = {name: directory / f"{name}.pt" for name in names}
    if not all(f.is_file() for f in files.values()):
        return None
    return {name: torch.load(f, weights_only=True) for name, f in files.items()}


def output_names(entry: Function) -> list[str]:
    return [p.var.name for p in entry.params if p.direction is not Direction.In]


def expected_outputs(
    entry: Function,
    before: dict[str, Any],
    golden: Golden | None,
    golden_data_dir: str | os.PathLike[str] | None,
) -> dict[str, torch.Tensor] | None:
    """The golden of each output (see the module doc); None when only the run can give it."""
    names = output_names(entry)
    if golden_data_dir is not None:
        found = read_golden(golden_data_dir, names)
        if found is not None:
            return found
    if golden is None:
        return None
    tensors = dict(before)
    golden(tensors)
    expected = {name: tensors[name] for name in names}
    if golden_data_dir is not None:
        write_golden(golden_data_dir, expected)
    return expected


def compare_golden(name: str, got: torch.Tensor, want: torch.Tensor, rtol: float, atol: float) -> None:
    """A :class:`GoldenMismatchError` unless ``got`` is close to ``want``."""
    import torch

    if tuple(got.shape) != tuple(want.shape):
        raise GoldenMismatchError(
            f"output {name!r} has shape {list(got.shape)}, its golden {list(want.shape)}",
            hint="regenerate the golden for this program (delete the golden_data_dir files)",
        )
    a, b = got.detach().double(), want.detach().double()
    if torch.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
        return
    diff = (a - b).abs().nan_to_num(nan=float("inf"))
    rel = diff / b.abs().clamp_min(1e-12)
    worst = int(diff.flatten().argmax())
    index = [int(i) for i in torch.unravel_index(torch.tensor(worst), a.shape)] if a.dim() else []
    bad = int((~torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)).sum())
    raise GoldenMismatchError(
        f"output {name!r} differs from its golden: max abs diff {float(diff.max()):.6e}, max rel diff "
        f"{float(rel.max()):.6e}, worst at index {index} (got {float(a.flatten()[worst])!r}, golden "
        f"{float(b.flatten()[worst])!r}); {bad} of {a.numel()} elements outside rtol={rtol}, atol={atol}",
        hint="check the tolerance against the input precision first (fp16 carries about 3 digits), "
        "then bisect the passes with compiled.validate_ir (docs/precision.md)",
    )


def _check_not_timing_only(config: Any, compared: str) -> None:
    """A timing-only run computes no tile values: its outputs have nothing to compare."""
    from pypto.runtime import settings

    given = "RunConfig(timing_only=True)" if getattr(config, "timing_only", False) else None
    if given is None and settings.timing_only():
        given = "--timing-only"
    if given is None:
        return
    call = call_site()
    err = ConfigError(
        f"a golden comparison ({compared}) checks the outputs' numbers, and {given} computes none",
        span=call,
        hint="drop timing_only (--timing-only) to compare with the golden, or run without a golden "
        "to model the time alone",
    )
    if call is None:
        raise err
    raise_at_user_line(err, "run")


def check_run(
    entry: Function, args: Sequence[Any], run: Callable[[], Any], golden: Golden | None, config: Any
) -> Any:
    """Run (``run()``), then compare the outputs in ``args`` with their golden under ``config``'s
    ``rtol`` / ``atol`` / ``golden_data_dir``; returns what ``run()`` returned."""
    import torch

    directory = getattr(config, "golden_data_dir", None)
    if golden is None and directory is None:
        return run()
    _check_not_timing_only(config, "golden=" if golden is not None else "golden_data_dir")
    names = [p.var.name for p in entry.params]
    before = {n: a.clone() if isinstance(a, torch.Tensor) else a for n, a in zip(names, args, strict=True)}
    expected = expected_outputs(entry, before, golden, directory)
    result = run()
    got = {n: a for n, a in zip(names, args, strict=True) if n in output_names(entry)}
    if expected is None:  # the first run with only a golden_data_dir: its outputs become the golden
        write_golden(directory, got)  # type: ignore[arg-type]
        return result
    for name, want in expected.items():
        compare_golden(name, got[name], want, config.rtol, config.atol)
    return result
