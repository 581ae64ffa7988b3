"""Read a run's argument dump (``RunConfig(enable_dump_args=1|2)``) and compare it with a host
reference.

``python -m pypto.tools.dump_viewer DIR`` lists the entries, one line each, in the order the
values were taken (task, kernel, tensor, role, before/after, shape, dtype, and a summary of the
values); ``--show N`` prints entry ``N``'s values; ``--compare REF.pt`` compares each entry whose
tensor the file names (a ``torch.save``'d dict of tensor name to tensor) and names the first that
disagrees. ``DIR`` is the run's output directory, its ``dfx_outputs/`` or the
``dfx_outputs/args_dump/`` in it (``report.args_dump`` after the run).

From Python, :func:`load` gives the entries, each with ``.tensor`` (a torch tensor), and
:func:`compare` / :func:`first_mismatch` compare them with reference values:

>>> entries = load(kernel.last_report.args_dump)  # doctest: +SKIP
>>> first_mismatch(entries, {"mid": x * 2, "out": x * 2 + 1})  # doctest: +SKIP
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from pypto.ir import PyptoError
from pypto.runtime.reports.args_dump import ArgsDumpError, DumpEntry, load_args_dump, read_args_dump

load = load_args_dump  # the public name: ``pypto.tools.dump_viewer.load(DIR)``


@dataclass(frozen=True)
class Comparison:
    """One entry against its reference: the largest absolute and relative difference, and whether
    it is within ``rtol`` / ``atol`` (as ``torch.allclose``); ``problem`` says why it could not
    be compared (a shape that differs), else None."""

    entry: DumpEntry
    max_abs: float
    max_rel: float
    close: bool
    problem: str | None = None


def compare(
    entries: Sequence[DumpEntry], reference: Mapping[str, Any], rtol: float = 1e-5, atol: float = 1e-5
) -> list[Comparison]:
    """Compare each entry whose tensor ``reference`` names with that reference value (compared in
    float64); entries of other tensors are left out. Give each tensor the value it should have
    where its entries were taken: for a tensor one task writes, its value after that task."""
    import torch

    found = []
    for entry in entries:
        if entry.tensor_name not in reference:
            continue
        expected = torch.as_tensor(reference[entry.tensor_name])
        actual = entry.tensor
        if tuple(expected.shape) != tuple(actual.shape):
            problem = f"shape {tuple(actual.shape)} in the dump, {tuple(expected.shape)} in the reference"
            found.append(Comparison(entry, float("inf"), float("inf"), False, problem))
            continue
        a, e = actual.to(torch.float64), expected.to(torch.float64)
        diff = (a - e).abs()
        max_abs = float(diff.max()) if diff.numel() else 0.0
        rel = diff / e.abs().clamp_min(torch.finfo(torch.float64).tiny)
        max_rel = float(rel.max()) if rel.numel() else 0.0
        found.append(Comparison(entry, max_abs, max_rel, bool(torch.allclose(a, e, rtol=rtol, atol=atol))))
    return found


def first_mismatch(
    entries: Sequence[DumpEntry], reference: Mapping[str, Any], rtol: float = 1e-5, atol: float = 1e-5
) -> Comparison | None:
    """The first entry, in the order the values were taken, that disagrees with ``reference``
    (see :func:`compare`); None when every compared entry agrees."""
    return next((c for c in compare(entries, reference, rtol, atol) if not c.close), None)


def summary(entry: DumpEntry) -> str:
    """A short account of the values: min, max, mean, and how many are NaN or infinite."""
    import torch

    values = entry.tensor
    if values.numel() == 0:
        return "empty"
    if values.dtype == torch.bool:
        return f"{int(values.sum())} of {values.numel()} true"
    wide = values.to(torch.float64)
    finite = wide[torch.isfinite(wide)]
    text = (
        f"min {float(finite.min()):.6g} max {float(finite.max()):.6g} mean {float(finite.mean()):.6g}"
        if finite.numel()
        else "no finite value"
    )
    nan, inf = int(torch.isnan(wide).sum()), int(torch.isinf(wide).sum())
    if nan or inf:
        text += f" ({nan} NaN, {inf} inf)"
    return text


def entry_line(entry: DumpEntry) -> str:
    """One line of the listing."""
    shape = "x".join(str(n) for n in entry.shape) or "scalar"
    blocks = f" x{entry.blocks} blocks" if entry.blocks > 1 else ""
    return (
        f"{entry.index:>4}  task {entry.task_id:<3} {entry.kernel}{blocks}  {entry.tensor_name} "
        f"({entry.role}, {entry.when})  [{shape}] {entry.dtype}  {summary(entry)}"
    )


def listing(path: str | os.PathLike[str]) -> str:
    """The text ``python -m pypto.tools.dump_viewer DIR`` prints."""
    dump = read_args_dump(path)
    level = {1: "marked tensors", 2: "every task's tensors"}.get(dump.level, f"level {dump.level}")
    program, platform = dump.program or "?", dump.platform or "?"
    head = f"argument dump of {program} on {platform} ({level}): {len(dump.entries)} entries"
    return "\n".join([head, *(entry_line(e) for e in dump.entries)])


def show_entry(path: str | os.PathLike[str], index: int) -> str:
    """Entry ``index``'s line and its values, printed by torch."""
    import torch

    entries = load(path)
    if not 0 <= index < len(entries):
        raise ArgsDumpError(
            f"the dump has no entry {index}: it has {len(entries)}, numbered from 0",
            hint="list them first: python -m pypto.tools.dump_viewer DIR",
        )
    entry = entries[index]
    with torch.no_grad():
        torch.set_printoptions(precision=6, threshold=4096, linewidth=120)
        try:
            values = str(entry.tensor)
        finally:
            torch.set_printoptions(profile="default")
    return f"{entry_line(entry)}\n{values}"


def compared(path: str | os.PathLike[str], reference_file: str, rtol: float, atol: float) -> tuple[str, bool]:
    """The text of ``--compare``: a line per compared entry, then the first disagreement; and
    whether every compared entry agrees."""
    reference = _reference(reference_file)
    results = compare(load(path), reference, rtol, atol)
    if not results:
        names = ", ".join(sorted(reference)) or "none"
        raise ArgsDumpError(
            f"no entry of the dump is of a tensor {reference_file} names ({names})",
            hint="name the tensors as the program does (the listing's tensor column)",
        )
    lines = []
    for c in results:
        verdict = "ok" if c.close else "DIFFERS"
        detail = c.problem or f"max abs {c.max_abs:.3g}, max rel {c.max_rel:.3g}"
        lines.append(f"{c.entry.index:>4}  {c.entry.label}: {verdict} ({detail})")
    first = next((c for c in results if not c.close), None)
    if first is None:
        lines.append(f"every compared entry agrees (rtol={rtol}, atol={atol})")
    else:
        lines.append(f"first disagreement: entry {first.entry.index}, {first.entry.label}")
    return "\n".join(lines), first is None


def _reference(path: str) -> dict[str, Any]:
    import torch

    try:
        data = torch.load(path, weights_only=True)
    except (OSError, RuntimeError, EOFError, ValueError) as err:
        raise ArgsDumpError(
            f"{path} cannot be read as a torch file: {err}",
            hint='save the reference with torch.save({"out": tensor, ...}, "ref.pt")',
        ) from None
    if not (isinstance(data, dict) and all(isinstance(k, str) for k in data)):
        raise ArgsDumpError(
            f"{path} holds a {type(data).__name__}, not a dict of tensor names to tensors",
            hint='save the reference with torch.save({"out": tensor, ...}, "ref.pt")',
        )
    return data


@click.command(name="python -m pypto.tools.dump_viewer")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--show", type=int, metavar="N", help="Print entry N's values (N as the listing numbers it).")
@click.option(
    "--compare",
    "reference",
    metavar="REF.pt",
    help="Compare with a torch.save'd dict of tensor name to tensor; exit 1 when one differs.",
)
@click.option("--rtol", type=float, default=1e-5, show_default=True, help="Relative tolerance of --compare.")
@click.option("--atol", type=float, default=1e-5, show_default=True, help="Absolute tolerance of --compare.")
def main(directory: Path, show: int | None, reference: str | None, rtol: float, atol: float) -> None:
    """List, show or compare a run's argument dump (RunConfig(enable_dump_args=1 or 2)).

    DIRECTORY is the run's output directory, its dfx_outputs/ or the dfx_outputs/args_dump/ in it
    (report.args_dump after the run).

    \b
    Examples:
      python -m pypto.tools.dump_viewer build_output/two_steps_0123abcd4567
      python -m pypto.tools.dump_viewer out/dfx_outputs/args_dump --show 2
      python -m pypto.tools.dump_viewer out --compare ref.pt --rtol 1e-3 --atol 1e-3
    """
    try:
        if show is not None:
            click.echo(show_entry(directory, show))
        elif reference is not None:
            text, agree = compared(directory, reference, rtol, atol)
            click.echo(text)
            if not agree:
                sys.exit(1)
        else:
            click.echo(listing(directory))
    except PyptoError as err:
        raise click.ClickException(err.render()) from None


if __name__ == "__main__":
    main()


__all__ = [
    "ArgsDumpError",
    "Comparison",
    "DumpEntry",
    "compare",
    "first_mismatch",
    "load",
    "main",
    "show_entry",
]
