"""Tuning sweeps: run one kernel under many configurations and keep the fastest in modeled time.

A sweep is a list of :class:`TrialJob`: one per configuration, each a parsed program (or the
error that stopped its parse) with everything a run needs. :func:`run_trial` compiles and runs
one job on copies of the arguments and returns a :class:`Trial`; it needs nothing but the
installed packages, so it runs in this process or on a Dask worker alike
(:mod:`pypto.tuning.cluster`). A configuration the compiler or the run rejects (a
``MemoryBudgetError``, a split it cannot make, a deadlock) is an *infeasible* trial, never an
exception out of the sweep. :class:`TuningReport` holds the trials, the best one, a table, a CSV
and a plot; :class:`TuningCache` keeps the choice on disk.

>>> report = run_sweep("seed", jobs, args, executor=SerialExecutor())  # doctest: +SKIP
>>> print(report.table())  # doctest: +SKIP
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import statistics
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pypto.ir import Program, PyptoError, RunReport
from pypto.runtime.config import RunConfig
from pypto.runtime.reports.progress import no_run_bars

OK, INFEASIBLE, FAILED = "ok", "infeasible", "failed"
OBJECTIVE_CYCLES = "modeled cycles"


class TuneError(PyptoError, RuntimeError):
    """A tuner or a sweep that cannot work as written: a ``key`` name the kernel has not, a
    config name it never reads, no config that runs, a scheduler named without Dask. When no
    config ran, ``report`` holds the sweep (each trial with its reason)."""

    report: TuningReport | None = None


class TuneWarning(UserWarning):
    """A sweep runs differently than asked, e.g. serially because Dask is not installed."""


class Config:
    """One point of a tuning space: the values a kernel body reads as compile-time constants.

    ``pl.Config(tile_m=128, slot_num=2, split=pl.SplitMode.UP_DOWN, stage=2)``, or, as Triton
    writes it, ``pl.Config({"tile_m": 128, "slot_num": 2})``. A name that is a parameter of the
    kernel is passed to it as that argument instead.
    """

    def __init__(self, kwargs: Mapping[str, Any] | None = None, /, **values: Any) -> None:
        merged = {**dict(kwargs or {}), **values}
        for name in merged:
            if not isinstance(name, str) or not name.isidentifier():
                raise TypeError(f"pl.Config names are identifiers, got {name!r}")
        self.kwargs: dict[str, Any] = merged

    def all_kwargs(self) -> dict[str, Any]:
        """The values by name (Triton's spelling)."""
        return dict(self.kwargs)

    def __getitem__(self, name: str) -> Any:
        return self.kwargs[name]

    def __contains__(self, name: object) -> bool:
        return name in self.kwargs

    def __iter__(self) -> Iterator[str]:
        return iter(self.kwargs)

    def __len__(self) -> int:
        return len(self.kwargs)

    def _identity(self) -> tuple[tuple[str, str, str], ...]:
        """Names, value types and values: ``Config(n=1)`` is not ``Config(n=True)`` nor ``Config(n=1.0)``."""
        return tuple(sorted((k, type(v).__qualname__, repr(v)) for k, v in self.kwargs.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and other._identity() == self._identity()

    def __hash__(self) -> int:
        return hash(self._identity())

    @property
    def label(self) -> str:
        """``tile_m=128 slot_num=2 split=UP_DOWN``: the values as a table shows them."""
        return " ".join(f"{name}={show_value(value)}" for name, value in self.kwargs.items())

    def __repr__(self) -> str:
        return f"Config({', '.join(f'{k}={show_value(v)}' for k, v in self.kwargs.items())})"


def show_value(value: Any) -> str:
    """A config value as a table shows it: an enum by its member name (``UP_DOWN``)."""
    name = getattr(value, "name", None)
    if isinstance(name, str) and type(value).__module__.startswith("pypto"):
        return name
    return repr(value) if isinstance(value, str) else str(value)


@dataclass(frozen=True)
class TrialOptions:
    """How each trial measures: ``objective(report)`` (None: the modeled cycles), ``warmup`` runs
    not measured, then ``rep`` runs whose objective's median counts; before each run the
    arguments named in ``reset_to_zero`` are zeroed and those in ``restore_value`` get the
    caller's values back, and ``pre_hook(named_args)`` / ``post_hook(named_args)`` are called."""

    objective: Callable[[RunReport], float] | None = None
    warmup: int = 0
    rep: int = 1
    reset_to_zero: tuple[str, ...] = ()
    restore_value: tuple[str, ...] = ()
    pre_hook: Callable[[dict[str, Any]], Any] | None = None
    post_hook: Callable[[dict[str, Any]], Any] | None = None


@dataclass(frozen=True)
class TrialJob:
    """One configuration to try: its parsed program and what compiling and running it needs, or
    the error that stopped it before (``error``: the parse rejected it)."""

    index: int
    config: Config
    program: Program | None
    run_config: RunConfig
    names: tuple[str, ...]  # the names of the arguments, in order
    constants: Mapping[str, Any] = field(default_factory=dict)
    error: PyptoError | None = None
    options: TrialOptions = TrialOptions()
    own: Mapping[int, Any] = field(default_factory=dict)  # the arguments that differ per job (scalars)


@dataclass
class Trial:
    """What one configuration gave. ``status``: ``"ok"``, ``"infeasible"`` (the compiler or the
    run rejected it: ``message`` says why) or ``"failed"`` (the trial crashed, or its worker died
    twice). The figures are modeled: ``cycles`` of the run, ``objective`` (the cycles unless the
    tuner has an ``objective=``), ``roofline`` (cycles over the roofline bound of the work, 1.0 is
    peak), ``overlap`` (the share of the run in which cube and vector are busy at once) and
    ``memory`` (the highest on-chip byte used, per memory space). ``seconds`` is wall time."""

    index: int
    config: Config
    status: str
    objective: float | None = None
    cycles: int | None = None
    roofline: float | None = None
    overlap: float | None = None
    memory: dict[str, int] = field(default_factory=dict)
    usable: dict[str, int] = field(default_factory=dict)  # per memory space, its usable bytes
    message: str = ""
    hint: str = ""  # how the rejection says to fix it (e.g. "slot_num=2 fits")
    seconds: float = 0.0
    where: str = "local"  # the Dask worker that ran it, or "local"
    error: PyptoError | None = field(default=None, repr=False)  # the rejection, to show at its line

    @property
    def feasible(self) -> bool:
        return self.status == OK

    @property
    def memory_peak(self) -> tuple[str, float] | None:
        """The memory space closest to full and how full it got (0..1)."""
        shares = [
            (space, used / self.usable[space])
            for space, used in self.memory.items()
            if self.usable.get(space)
        ]
        return max(shares, key=lambda item: item[1]) if shares else None

    def to_json(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in _TRIAL_FIELDS}
        data["config"] = self.config.label
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], config: Config) -> Trial:
        return cls(config=config, **{name: data[name] for name in _TRIAL_FIELDS if name in data})


_TRIAL_FIELDS = (
    "index",
    "status",
    "objective",
    "cycles",
    "roofline",
    "overlap",
    "memory",
    "usable",
    "message",
    "hint",
    "seconds",
    "where",
)


# ---------------------------------------------------------------- one trial


def run_trial(job: TrialJob, args: Sequence[Any]) -> Trial:
    """Compile and run ``job`` on copies of ``args`` (the caller's tensors are never written; the
    job's own values stand in at their positions). Never raises: a rejection is an infeasible
    trial, anything else a failed one."""
    start = time.perf_counter()
    args = [job.own.get(position, value) for position, value in enumerate(args)]
    if job.error is not None or job.program is None:
        return _rejected(job, job.error, start)
    try:
        from pypto.runtime.compiling.compiled import compile_program

        compiled = compile_program(job.program, job.run_config, job.constants)
    except PyptoError as err:
        return _rejected(job, err, start)
    try:
        with no_run_bars():
            values, report = _measure(job, compiled, args)
    except PyptoError as err:
        return _rejected(job, err, start)
    except Exception as exc:  # a crash of the run or of a hook: this trial fails, the sweep goes on
        message = "".join(traceback.format_exception_only(exc)).strip()
        return Trial(job.index, job.config, FAILED, message=message, seconds=time.perf_counter() - start)
    unusable = _unusable_objective(job, values, time.perf_counter() - start)
    if unusable is not None:
        return unusable
    memory: dict[str, int] = {}
    for heap in report.heaps:
        for space, top in heap.touched.items():
            memory[space] = max(memory.get(space, 0), top)
    return Trial(
        job.index,
        job.config,
        OK,
        objective=statistics.median(values),
        cycles=report.total_cycles,
        roofline=roofline_ratio(report),
        overlap=report.overlap,
        memory=memory,
        usable=dict(report.usable_bytes),
        seconds=time.perf_counter() - start,
    )


def _measure(job: TrialJob, compiled: Any, args: Sequence[Any]) -> tuple[list[float], RunReport]:
    """Run ``warmup`` + ``rep`` times on copies of ``args``; the objective of the measured runs."""
    options = job.options
    copies = [_copy(value) for value in args]
    named = dict(zip(job.names, copies, strict=True))
    values: list[float] = []
    report: RunReport | None = None
    for run in range(options.warmup + max(1, options.rep)):
        for name in options.restore_value:
            _assign(named[name], args[job.names.index(name)])
        for name in options.reset_to_zero:
            named[name].zero_()
        hook_args = {**named, **job.config.kwargs}
        if options.pre_hook is not None:
            options.pre_hook(hook_args)
        compiled.run_checked(tuple(copies), job.run_config)
        report = compiled.last_report
        if options.post_hook is not None:
            options.post_hook(hook_args)
        if run >= options.warmup:
            assert report is not None
            values.append(
                float(report.total_cycles if options.objective is None else options.objective(report))
            )
    assert report is not None
    return values, report


def _unusable_objective(job: TrialJob, values: Sequence[float], seconds: float) -> Trial | None:
    """A trial whose objective is no finite number, never the winner: NaN or -inf is a failed
    trial (the objective or the backend computed no usable figure), +inf an infeasible one (an
    ``objective=`` that rules the configuration out)."""
    bad = next((value for value in values if not math.isfinite(value)), None)
    if bad is None:
        return None
    what = "the objective= function" if job.options.objective is not None else "the run's modeled cycles"
    if bad == math.inf:
        return Trial(
            job.index,
            job.config,
            INFEASIBLE,
            message=f"the objective is inf ({what} returned inf): the configuration is ruled out",
            hint="return a finite number for a configuration that may win",
            seconds=seconds,
        )
    return Trial(
        job.index,
        job.config,
        FAILED,
        message=f"the objective is {bad} ({what} returned {bad}), not a number a trial can be ranked by",
        hint="return a finite number from the objective (lower is better), or inf to rule a config out",
        seconds=seconds,
    )


def _copy(value: Any) -> Any:
    clone = getattr(value, "clone", None)
    return clone() if callable(clone) else value


def _assign(target: Any, source: Any) -> None:
    copy_ = getattr(target, "copy_", None)
    if callable(copy_):
        copy_(source)


def _rejected(job: TrialJob, err: PyptoError | None, start: float) -> Trial:
    message = err.message if err is not None else "not compiled"
    kind = type(err).__name__ if err is not None else "Error"
    return Trial(
        job.index,
        job.config,
        INFEASIBLE,
        message=f"{kind}: {message}",
        hint=(err.hint or "") if err is not None else "",
        seconds=time.perf_counter() - start,
        error=err,
    )


def roofline_ratio(report: RunReport) -> float | None:
    """Modeled cycles of the kernels over the roofline bound of their work (1.0: at peak)."""
    lines = [line for line in report.roofline() if line.bound_cycles]
    bound = sum(line.bound_cycles for line in lines)
    return sum(line.cycles for line in lines) / bound if bound else None


# ---------------------------------------------------------------- executors


class Executor(Protocol):
    """Runs trial jobs; yields each trial as it finishes (in any order)."""

    name: str

    def run(self, jobs: Sequence[TrialJob], args: Sequence[Any]) -> Iterator[Trial]: ...


class SerialExecutor:
    """Runs the trials one after another in this process."""

    name = "this process (serially)"

    def run(self, jobs: Sequence[TrialJob], args: Sequence[Any]) -> Iterator[Trial]:
        for job in jobs:
            yield run_trial(job, args)


# ---------------------------------------------------------------- the report


@dataclass
class TuningReport:
    """All trials of one sweep (or of the sweep a cached choice came from), best first chosen.

    ``best``: the feasible trial with the lowest objective (the first configuration on a tie);
    ``cached``: the choice came from the disk cache and no trial ran in this process.
    """

    kernel: str
    key: tuple[Any, ...]
    trials: list[Trial]
    objective: str = OBJECTIVE_CYCLES
    executor: str = SerialExecutor.name
    seconds: float = 0.0
    cached: bool = False
    platform: str = "a2a3sim"

    @property
    def best(self) -> Trial | None:
        feasible = [
            t for t in self.trials if t.feasible and t.objective is not None and math.isfinite(t.objective)
        ]
        return min(feasible, key=lambda t: (t.objective, t.index)) if feasible else None

    @property
    def best_config(self) -> Config | None:
        best = self.best
        return None if best is None else best.config

    @property
    def infeasible(self) -> list[Trial]:
        return [t for t in self.trials if t.status == INFEASIBLE]

    @property
    def failed(self) -> list[Trial]:
        return [t for t in self.trials if t.status == FAILED]

    def rows(self) -> list[dict[str, str]]:
        """One row per trial, in configuration order, as the table and the CSV show them."""
        rows = []
        for trial in sorted(self.trials, key=lambda t: t.index):
            peak = trial.memory_peak
            rows.append(
                {
                    "config": trial.config.label,
                    **{name: show_value(value) for name, value in trial.config.kwargs.items()},
                    "feasible": "yes" if trial.feasible else "no",
                    "status": trial.status,
                    "modeled_cycles": "" if trial.cycles is None else str(trial.cycles),
                    "objective": "" if trial.objective is None else f"{trial.objective:g}",
                    "roofline_ratio": "" if trial.roofline is None else f"{trial.roofline:.2f}",
                    "overlap": "" if trial.overlap is None else f"{trial.overlap:.3f}",
                    "memory_high_water": _memory_text(trial),
                    **{f"memory_{space}_bytes": str(used) for space, used in sorted(trial.memory.items())},
                    "memory_peak_share": "" if peak is None else f"{peak[1]:.3f}",
                    "seconds": f"{trial.seconds:.3f}",
                    "message": trial.message,
                    "hint": trial.hint,
                }
            )
        return rows

    def table(self) -> str:
        """A plain-text table: config, modeled cycles, roofline ratio, overlap, memory high-water,
        feasible; the best row marked ``*``; the reasons of the infeasible ones below it."""
        best = self.best
        own = self.objective != OBJECTIVE_CYCLES  # a user objective: its values in a column too
        header = ["best", "config", "modeled cycles", *(["objective"] if own else [])]
        header += ["roofline", "overlap", "memory high-water", "feasible"]
        body = []
        for trial in sorted(self.trials, key=lambda t: t.index):
            shown_objective = ["-" if trial.objective is None else f"{trial.objective:,g}"] if own else []
            body.append(
                [
                    "*" if best is not None and trial.index == best.index else "",
                    trial.config.label,
                    "-" if trial.cycles is None else f"{trial.cycles:,}",
                    *shown_objective,
                    "-" if trial.roofline is None else f"{trial.roofline:.2f}x",
                    "-" if trial.overlap is None else f"{trial.overlap:.0%}",
                    _memory_text(trial) or "-",
                    "yes" if trial.feasible else trial.status,
                ]
            )
        widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
        right = set(range(2, len(header) - 2))  # the figures
        lines = [
            "  ".join(
                cell.rjust(w) if i in right else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            )
            for row in [header, *body]
        ]
        lines.insert(1, "  ".join("-" * w for w in widths))
        lines = [line.rstrip() for line in lines]
        lines.append(self.summary())
        for trial in sorted(self.trials, key=lambda t: t.index):
            if not trial.feasible:
                lines.append(f"  {trial.config.label}: {trial.status}: {_first_sentence(trial.message)}")
                if trial.hint:
                    lines.append(f"    hint: {trial.hint.splitlines()[0]}")
        return "\n".join(lines)

    def summary(self) -> str:
        """One line: how many trials, how many feasible, the best and its objective."""
        best = self.best
        ran = "from the tuning cache" if self.cached else f"in {self.seconds:.1f} s, {self.executor}"
        feasible = sum(t.feasible for t in self.trials)
        head = f"{self.kernel}: {len(self.trials)} config(s), {feasible} feasible, {ran}"
        if best is None:
            return f"{head}; none ran"
        return f"{head}; best {best.config.label}: {best.objective:,g} {self.objective}"

    def write_csv(self, path: str | Path) -> Path:
        """``results.csv``: one row per trial (every config value in a column of its own)."""
        path = Path(path)
        rows = self.rows()
        names: list[str] = []
        for row in rows:
            names += [name for name in row if name not in names]
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=names)
            writer.writeheader()
            writer.writerows(rows)
        return path

    def plot(self, path: str | Path) -> Path:
        """A bar chart of the modeled cycles per config; infeasible ones marked, the best
        highlighted. Written as PNG (matplotlib, no display needed)."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        from matplotlib import pyplot as plt

        trials = sorted(self.trials, key=lambda t: t.index)
        best = self.best
        top = max((t.cycles for t in trials if t.cycles is not None), default=1)
        heights = [t.cycles if t.cycles is not None else 0 for t in trials]
        colours = [
            "#2a9d8f"
            if best is not None and t.index == best.index
            else "#8ab6d6"
            if t.feasible
            else "#e76f51"
            for t in trials
        ]
        figure, axes = plt.subplots(figsize=(max(6.0, 0.45 * len(trials) + 2), 4.5))
        positions = list(range(len(trials)))
        axes.bar(positions, heights, color=colours)
        for position, trial in zip(positions, trials, strict=True):
            if not trial.feasible:
                axes.text(
                    position,
                    top * 0.02,
                    "x " + trial.status,
                    rotation=90,
                    ha="center",
                    va="bottom",
                    fontsize=8,
                )
        axes.set_xticks(positions, [t.config.label for t in trials], rotation=70, ha="right", fontsize=7)
        axes.set_ylabel("modeled cycles")
        axes.set_title(
            f"{self.kernel}: modeled cycles per config\n({self.platform} cost model; red: not run)"
        )
        figure.tight_layout()
        path = Path(path)
        figure.savefig(path, dpi=100)
        plt.close(figure)
        return path


# The buffers a kernel author sizes (UB and L1: tiles, rings, pipeline stages); the L0 buffers are
# filled by the matmul tiling by design, so they say little about a config (the CSV has them).
SHOWN_SPACES = ("Vec", "Mat")


def _first_sentence(message: str) -> str:
    """The first line of a message, up to the end of its first sentence."""
    line = message.splitlines()[0] if message else ""
    end = line.find(". ")
    return line if end < 0 else line[: end + 1]


def _memory_text(trial: Trial) -> str:
    """``Vec 72% Mat 40%``: how full UB and L1 got (highest byte used over usable bytes)."""
    parts = [
        f"{space} {trial.memory[space] / trial.usable[space]:.0%}"
        for space in SHOWN_SPACES
        if trial.memory.get(space) and trial.usable.get(space)
    ]
    return " ".join(parts)


def run_sweep(
    kernel: str,
    key: tuple[Any, ...],
    jobs: Sequence[TrialJob],
    args: Sequence[Any],
    executor: Executor | None = None,
    on_trial: Callable[[Trial], None] | None = None,
    objective: str = OBJECTIVE_CYCLES,
) -> TuningReport:
    """Run every job on ``executor`` (default: serially here), calling ``on_trial`` as each
    finishes; the trials come back in configuration order."""
    executor = executor or SerialExecutor()
    start = time.perf_counter()
    trials: list[Trial] = []
    for trial in executor.run(jobs, args):
        trials.append(trial)
        if on_trial is not None:
            on_trial(trial)
    trials.sort(key=lambda t: t.index)
    platform = jobs[0].run_config.platform_name if jobs else "a2a3sim"
    seconds = time.perf_counter() - start
    return TuningReport(kernel, key, trials, objective, executor.name, seconds, platform=platform)


# ---------------------------------------------------------------- the disk cache


class TuningCache:
    """Chosen configurations on disk, one JSON file per key under ``DIR/tuning/``: the best
    config's index among the tuner's configs and every trial's figures."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory) / "tuning"

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def entries(self) -> list[tuple[str, int, str]]:
        """Each stored sweep: the kernel, its number of trials and its best config (``-``: none
        ran; ``?``: an unreadable entry), oldest first."""
        found = []
        for path in sorted(self.directory.glob("*.json"), key=lambda p: p.stat().st_mtime):
            data = self.load(path.stem)
            if data is None:
                found.append((path.stem, 0, "?"))
                continue
            trials = data["trials"]
            best = next((t.get("config", "?") for t in trials if t.get("index") == data.get("best")), "-")
            found.append((str(data.get("kernel", "?")), len(trials), best))
        return found

    def clear(self) -> int:
        """Remove every stored sweep; how many there were."""
        removed = 0
        for path in self.directory.glob("*.json"):
            path.unlink(missing_ok=True)
            removed += 1
        return removed

    def load(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path(key).read_text())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and isinstance(data.get("trials"), list) else None

    def store(self, key: str, report: TuningReport) -> None:
        best = report.best
        data = {
            "kernel": report.kernel,
            "key": [repr(part) for part in report.key],
            "best": None if best is None else best.index,
            "objective": report.objective,
            "trials": [trial.to_json() for trial in report.trials],
        }
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(handle, "w") as out:
                json.dump(data, out, indent=1, default=_json_default)
            os.replace(temporary, self.path(key))
        except OSError as exc:
            import warnings

            from pypto.runtime.compiling.cache import CacheWarning

            warnings.warn(
                f"cannot write the tuning cache entry {self.path(key)}: {exc}", CacheWarning, stacklevel=3
            )

    def report(
        self, key: str, kernel: str, tuple_key: tuple[Any, ...], configs: Sequence[Config]
    ) -> TuningReport | None:
        """The stored sweep of ``key``, its trials matched to ``configs`` by index; None when there
        is none, or it does not fit these configs (then it is ignored)."""
        data = self.load(key)
        if data is None:
            return None
        trials = []
        for item in data["trials"]:
            index = item.get("index")
            if not isinstance(index, int) or not 0 <= index < len(configs):
                return None
            if item.get("config") != configs[index].label:
                return None
            trials.append(Trial.from_json(item, configs[index]))
        objective = data.get("objective", OBJECTIVE_CYCLES)
        platform = str(tuple_key[-1]) if tuple_key else "a2a3sim"
        return TuningReport(kernel, tuple_key, trials, objective, cached=True, platform=platform)


def _json_default(value: Any) -> str:
    """What JSON cannot hold as it is (a value in a trial's message or key) is stored as its repr."""
    return repr(value)


def digest(*parts: Any) -> str:
    """A SHA-256 over the reprs of ``parts`` (each a snapshot of plain data)."""
    sha = hashlib.sha256()
    for part in parts:
        sha.update(repr(part).encode())
        sha.update(b"\0")
    return sha.hexdigest()[:32]


__all__ = [
    "FAILED",
    "INFEASIBLE",
    "OK",
    "Config",
    "Executor",
    "SerialExecutor",
    "Trial",
    "TrialJob",
    "TrialOptions",
    "TuneError",
    "TuneWarning",
    "TuningCache",
    "TuningReport",
    "digest",
    "run_sweep",
    "run_trial",
]
