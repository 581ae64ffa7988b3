"""The acceptance figures of issue #38 (a simulator engine for model scale), each against its goal.

    nox -s bench                           # every figure, then this summary at the end
    python benchmarks/acceptance.py FILE   # the summary of the figures recorded in FILE

``bench.py`` and ``qwen3.py`` measure the figures and call :func:`record` for each: it prints the
figure against its goal at once and, when ``PYPTO_BENCH_FIGURES`` names a file (``nox -s bench``
sets it), appends the figure to that file as a line of JSON; run alone, a script prints the table
of its own figures at its end (:func:`print_summary`). The figures themselves are measured as
benchmarks/README.md says (medians, a full collection before each series, torch on one thread,
each ratio's two sides in one process); nothing here times anything.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

FIGURES_ENV = "PYPTO_BENCH_FIGURES"

# The acceptance criteria the bench does not measure (tests and an install check do).
NOT_HERE = (
    "the reference and the compiled engine agree (cycles, slices, diagnostics, numbers): a test",
    "pip install -r requirements.txt in a new venv builds the core, or falls back with a notice",
)


@dataclass(frozen=True)
class Figure:
    """One acceptance figure: ``value`` against ``goal`` (at most), or a check (``ok``)."""

    name: str
    value: float | None  # None: not measured in this tree or this run (``how`` says why)
    goal: float | None  # the most the value may be; None for a check that passes or fails
    unit: str  # "x" (a ratio) or "s" (seconds)
    how: str  # what was measured: "measured", or how it was derived (an extrapolation)
    ok: bool | None = None  # a check's outcome (numbers against torch)

    @property
    def met(self) -> bool | None:
        """Whether the goal is met; None when nothing was measured."""
        if self.goal is None:
            return self.ok
        if self.value is None:
            return None
        return self.value <= self.goal

    def value_text(self) -> str:
        if self.goal is None:
            return {True: "OK", False: "MISMATCH", None: "-"}[self.ok]
        if self.value is None:
            return "-"
        return f"{self.value:.1f} s" if self.unit == "s" else f"{self.value:.2f}x"

    def goal_text(self) -> str:
        if self.goal is None:
            return "matches torch"
        return f"<= {self.goal:g} s" if self.unit == "s" else f"<= {self.goal:g}x"

    def verdict(self) -> str:
        return {True: "met", False: "NOT met", None: "not measured"}[self.met]


_RECORDED: list[Figure] = []


def record(figure: Figure) -> Figure:
    """Print ``figure`` against its goal, keep it for this process's summary and, under ``nox -s
    bench``, append it to the run's file of figures."""
    print(f"  => {figure.name}: {figure.value_text()} (goal {figure.goal_text()}): {figure.verdict()}")
    _RECORDED.append(figure)
    path = os.environ.get(FIGURES_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(asdict(figure)) + "\n")
    return figure


def recorded() -> list[Figure]:
    """The figures this process recorded, in order."""
    return list(_RECORDED)


def load(path: Path) -> list[Figure]:
    """The figures recorded in ``path``, in order (an absent file: none)."""
    if not path.is_file():
        return []
    return [Figure(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line]


def summary(figures: list[Figure]) -> str:
    """The table of ``figures``: name, value, goal, met or not, and how each was measured."""
    rows = [("figure", "value", "goal", "verdict", "how")]
    rows += [(f.name, f.value_text(), f.goal_text(), f.verdict(), f.how) for f in figures]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[4]])
        for row in rows
    ]
    lines.insert(1, "-" * min(120, len(lines[0])))
    met = sum(1 for f in figures if f.met)
    lines.append(f"{met} of {len(figures)} figures meet their goal")
    lines += [f"not measured by the bench: {what}" for what in NOT_HERE]
    return "\n".join(lines)


def print_summary(figures: list[Figure] | None = None) -> None:
    """Print the summary table of ``figures`` (default: this process's), unless the figures go to
    a run's file (``nox -s bench`` prints one table of all of them at the end)."""
    if os.environ.get(FIGURES_ENV) and figures is None:
        return
    print("\nissue #38: the acceptance figures")
    print(summary(recorded() if figures is None else figures))


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(
            "usage: python benchmarks/acceptance.py FILE (the figures bench.py and qwen3.py recorded)"
        )
    figures = load(Path(sys.argv[1]))
    if not figures:
        raise SystemExit(f"no figures recorded in {sys.argv[1]}")
    print_summary(figures)


if __name__ == "__main__":
    main()
