"""Collect every distinct failure of the generated programs, shrunk, as runnable reproducers.

    python tests/fuzz/collect.py --examples 500 --out /tmp/findings [--family tile] [--seed 1]

Each family runs ``--examples`` programs and notes every distinct failure (one per signature,
see harness.ProgramFailure); then hypothesis searches again for each signature alone and shrinks
it to a small program. Each is written to
``OUT/<family>_<n>.py``: the program, a copy of harness.py and a main that judges it, so
``python OUT/tile_3.py`` shows the failure with nothing else on the path. ``OUT/INDEX.md``
lists them by signature.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import tempfile
from pathlib import Path

import harness
import programs
from hypothesis import HealthCheck, Phase, given, seed, settings


def reproducer(failure: harness.ProgramFailure) -> str:
    """The failing program's source, the harness, and a main that judges the file itself."""
    message, _, program = str(failure).partition("\n\n--- generated program ")
    source = program.split(" ---\n", 1)[1]
    judge = inspect.getsource(harness).replace("from __future__ import annotations\n", "")
    note = "\n".join(f"# {line}" for line in message.splitlines()[:40])
    return (
        f"# Reproducer: {failure.signature}\n# Run: python THIS_FILE\n#\n{note}\n\n{source}\n\n"
        f"# ---------------- the judge: a copy of tests/fuzz/harness.py ----------------\n{judge}\n\n"
        'if __name__ == "__main__":\n'
        "    print(judge(Path(__file__).resolve()))\n"
    )


def _settings(examples: int, phases: list[Phase]) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        phases=phases,
        suppress_health_check=list(HealthCheck),
    )


def survey(family: str, examples: int, run_seed: int, directory: Path) -> dict[str, int]:
    """Run ``examples`` programs without stopping at failures: signature -> count."""
    seen: dict[str, int] = {}

    @seed(run_seed)
    @_settings(examples, [Phase.generate])
    @given(program=programs.FAMILIES[family]())
    def run(program: programs.Program) -> None:
        path = directory / program.file_name()
        path.write_text(program.source())
        try:
            harness.judge(path)
        except harness.ProgramFailure as failure:
            seen[failure.signature] = seen.get(failure.signature, 0) + 1

    run()
    return seen


def shrink(family: str, signature: str, examples: int, run_seed: int, directory: Path):
    """The smallest program hypothesis finds failing with ``signature`` (None if not found again)."""

    @seed(run_seed)
    @_settings(examples, [Phase.generate, Phase.shrink])
    @given(program=programs.FAMILIES[family]())
    def run(program: programs.Program) -> None:
        path = directory / program.file_name()
        path.write_text(program.source())
        try:
            harness.judge(path)
        except harness.ProgramFailure as failure:
            if failure.signature == signature:
                raise

    try:
        run()
    except harness.ProgramFailure as failure:
        return failure
    return None


def collect(family: str, examples: int, run_seed: int, out: Path) -> list[tuple[str, int, str]]:
    directory = Path(tempfile.mkdtemp(prefix=f"fuzz-{family}-"))
    seen = survey(family, examples, run_seed, directory)
    written = []
    for n, (signature, count) in enumerate(sorted(seen.items(), key=lambda item: -item[1])):
        print(f"{family}: shrinking {signature} ({count})", file=sys.stderr)
        failure = shrink(family, signature, examples, run_seed, directory)
        name = f"{family}_{n}.py"
        if failure is not None:
            (out / name).write_text(reproducer(failure))
        written.append((signature, count, name if failure is not None else "(not found again)"))
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=300)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--family", choices=sorted(programs.FAMILIES), action="append")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    index = ["# Distinct failures of the generated programs", ""]
    for family in args.family or list(programs.FAMILIES):
        found = collect(family, args.examples, args.seed, args.out)
        print(f"{family}: {len(found)} distinct failures", file=sys.stderr)
        index += [f"- `{name}` ({count} of {args.examples}): {signature}" for signature, count, name in found]
    (args.out / f"INDEX-seed{args.seed}.md").write_text("\n".join(index) + "\n")


if __name__ == "__main__":
    main()
