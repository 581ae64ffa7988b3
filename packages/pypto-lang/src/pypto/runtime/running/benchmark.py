"""``pypto.runtime.benchmark``: register a compiled program once on a fresh ``ChipWorker``, launch it
``warmup`` rounds unmeasured and ``rounds`` rounds measured, and return the statistics.

Each measured launch is one :class:`TraceInvocation`, a tree of timed spans:

- ``chip.run``: the whole dispatch on the host (measured wall clock);
- ``chip.run.bind``: checking the arguments and building the orchestration's (``build_orch_args``);
- ``chip.run.runner_run``: the launch itself, the backend's ``run`` (measured);
- ``chip.run.runner_run.device_wall``: the device's wall time of the launch, tagged ``[dev]``. On
  a simulator it is the cost model's modeled time of the run (``RunReport.total_us``), not a
  measurement; ``BenchmarkStats.device_modeled`` says so.

``host_wall_us`` per round is ``chip.run``; ``device_wall_us`` is ``device_wall``.

>>> stats = benchmark(compiled, [a, b, out], rounds=20, warmup=2)  # doctest: +SKIP
>>> stats.device_wall_us_median, stats.host_wall_us_median  # doctest: +SKIP
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from pypto.ir import PyptoError
from pypto.ir.tracebacks import call_site, raise_at_user_line
from pypto.runtime.compiling.compiled import CompiledProgram
from pypto.runtime.config import RunConfig
from pypto.runtime.running.worker import ChipWorker
from pypto.runtime.settings import ConfigError

ROOT, BIND, RUNNER, DEVICE = (
    "chip.run",
    "chip.run.bind",
    "chip.run.runner_run",
    "chip.run.runner_run.device_wall",
)
SPREADS = ("stdev", "minmax", "both", "none")


@dataclass(frozen=True)
class TraceSpan:
    """One timed span of a launch: its dotted ``name``, its duration ``dur_us`` and whether it is
    in the device's clock domain (``device``)."""

    name: str
    dur_us: float
    device: bool = False


@dataclass(frozen=True)
class TraceInvocation:
    """The spans of one measured launch of ``task_name`` (``task``: the callable's key)."""

    task: str
    task_name: str
    spans: tuple[TraceSpan, ...]

    def by_name(self) -> dict[str, TraceSpan]:
        return {span.name: span for span in self.spans}

    @property
    def device_wall_us(self) -> float:
        return self.by_name()[DEVICE].dur_us

    @property
    def host_wall_us(self) -> float:
        return self.by_name()[ROOT].dur_us


def _aggregate(name: str, pick: Callable[[Sequence[float]], float]) -> Callable[[BenchmarkStats], float]:
    def get(self: BenchmarkStats) -> float:
        values = getattr(self, name)
        return pick(values) if values else 0.0

    return get


_PICKS: dict[str, Callable[[Sequence[float]], float]] = {
    "median": statistics.median,
    "min": min,
    "max": max,
    "mean": statistics.fmean,
    "stdev": lambda v: statistics.stdev(v) if len(v) > 1 else 0.0,
}


@dataclass
class BenchmarkStats:
    """What :func:`benchmark` measured: per measured round, ``device_wall_us`` (modeled on a
    simulator: ``device_modeled``) and ``host_wall_us`` (measured), each with ``_median``,
    ``_min``, ``_max``, ``_mean`` and ``_stdev`` aggregates (also spelled ``device_us_*`` /
    ``host_us_*``); ``samples`` is ``device_wall_us``; ``invocations`` the span tree of each
    measured launch (warmup excluded)."""

    device_wall_us: list[float]
    host_wall_us: list[float]
    rounds: int
    warmup: int
    platform: str
    device_modeled: bool
    invocations: list[TraceInvocation] = field(default_factory=list, repr=False)

    @property
    def samples(self) -> list[float]:
        return self.device_wall_us

    @property
    def all_zero_device(self) -> bool:
        """Whether no round has a device time (a runtime that reports none)."""
        return all(value == 0 for value in self.device_wall_us)

    def per_round(self, metric: str = "device") -> list[float]:
        """One value per measured round: ``"device"`` or ``"host"``."""
        if metric == "device":
            return list(self.device_wall_us)
        if metric == "host":
            return list(self.host_wall_us)
        raise ConfigError(
            f"per_round takes 'device' or 'host' here, got {metric!r}",
            call_site(),
            "one chip has no per-rank or union figures: stats.per_round('device')",
        )

    def format_tree(self, launch: int = 0) -> str:
        """The span tree of measured launch ``launch``."""
        if not -len(self.invocations) <= launch < len(self.invocations):
            raise ConfigError(
                f"launch {launch} is not one of the {len(self.invocations)} measured launches",
                call_site(),
                f"pass a launch from 0 to {len(self.invocations) - 1}",
            )
        chosen = self.invocations[launch]
        rows = [(span, f"{span.dur_us:.1f}us") for span in chosen.spans]
        return _tree(f"launch {launch % len(self.invocations)} of {chosen.task_name}:", rows)

    def format_mean_tree(self, spread: str = "stdev") -> str:
        """Each span's mean over the measured launches, with its ``spread``: ``"stdev"``,
        ``"minmax"``, ``"both"`` or ``"none"``."""
        if spread not in SPREADS:
            raise ConfigError(
                f"spread takes one of {', '.join(SPREADS)}, got {spread!r}",
                call_site(),
                'write stats.print_mean_tree(spread="both")',
            )
        if not self.invocations:
            return "no measured launches"
        rows = []
        for index, span in enumerate(self.invocations[0].spans):
            values = [inv.spans[index].dur_us for inv in self.invocations]
            text = f"{statistics.fmean(values):.1f}us"
            if spread in ("stdev", "both"):
                text += f"  ±{_PICKS['stdev'](values):.1f}"
            if spread in ("minmax", "both"):
                text += f"  [{min(values):.1f}..{max(values):.1f}]"
            rows.append((span, text))
        head = f"mean of {len(self.invocations)} launches (warmup {self.warmup} excluded):"
        return _tree(head, rows)

    def print_tree(self, launch: int = 0) -> None:
        print(self.format_tree(launch))

    def print_mean_tree(self, spread: str = "stdev") -> None:
        print(self.format_mean_tree(spread))


for _series, _short in (("device_wall_us", "device_us"), ("host_wall_us", "host_us")):
    for _what, _pick in _PICKS.items():
        _prop = property(_aggregate(_series, _pick), doc=f"The {_what} of ``{_series}``.")
        setattr(BenchmarkStats, f"{_series}_{_what}", _prop)
        setattr(BenchmarkStats, f"{_short}_{_what}", _prop)


def _tree(head: str, rows: list[tuple[TraceSpan, str]]) -> str:
    """Rows as a tree by their dotted names, each name indented under its parent."""
    lines = [head]
    width = max(len(span.name.split(".")[-1]) + 3 * span.name.count(".") for span, _ in rows) + 8
    for span, text in rows:
        depth = span.name.count(".") - 1
        label = ("   " * max(depth - 1, 0) + ("`- " if depth else "")) + span.name.split(".")[-1]
        if depth == 0:
            label = span.name
        label += " [dev]" if span.device else ""
        lines.append(f"{label:<{width}}{text}")
    return "\n".join(lines)


def benchmark(
    compiled: CompiledProgram,
    args: Sequence[Any],
    rounds: int = 100,
    warmup: int = 3,
    *,
    platform: str | None = None,
    device_id: int | None = None,
    config: RunConfig | None = None,
) -> BenchmarkStats:
    """Launch ``compiled`` on ``args`` ``warmup`` + ``rounds`` times through one registration on a
    fresh ``ChipWorker``; returns the :class:`BenchmarkStats` of the measured rounds.

    The worker is made from ``platform`` / ``device_id`` (default: the program's platform, device
    0) or from a whole ``config`` (for ``aicpu_thread_num``, ring sizes...), not both. ``args`` are
    host tensors and scalars (a ``DeviceTensor`` belongs to another worker)."""
    try:
        chosen = _worker_config(compiled, args, rounds, warmup, platform, device_id, config)
    except PyptoError as err:
        failure = err.with_span(call_site())
    else:
        return _measure(compiled, tuple(args), rounds, warmup, chosen)
    raise_at_user_line(failure, "benchmark")


def _worker_config(
    compiled: Any,
    args: Any,
    rounds: Any,
    warmup: Any,
    platform: str | None,
    device_id: int | None,
    config: RunConfig | None,
) -> RunConfig:
    if not isinstance(compiled, CompiledProgram):
        _fail(
            f"benchmark takes a CompiledProgram, got {type(compiled).__name__}",
            "compile it first: kernel.compile(*args) or ir.compile(program)",
        )
    if not isinstance(args, (list, tuple)):
        _fail(
            f"benchmark takes the arguments as a list, got {type(args).__name__}",
            "write benchmark(compiled, [a, b, out])",
        )
    for name, value, low in (("rounds", rounds, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            _fail(
                f"benchmark({name}=...) takes an int >= {low}, got {value!r}", f"write {name}={max(low, 3)}"
            )
    if config is not None:
        if platform is not None or device_id is not None:
            _fail(
                "benchmark takes platform= / device_id= or config=, not both",
                "put the platform and device_id in the RunConfig, or leave config= out",
            )
        if not isinstance(config, RunConfig):
            _fail(
                f"benchmark(config=...) takes a RunConfig, got {type(config).__name__}",
                "pass config=RunConfig(...)",
            )
        return config
    return RunConfig(platform=platform or compiled.platform, device_id=0 if device_id is None else device_id)


def _measure(
    compiled: CompiledProgram, args: tuple[Any, ...], rounds: int, warmup: int, config: RunConfig
) -> BenchmarkStats:
    device: list[float] = []
    host: list[float] = []
    invocations: list[TraceInvocation] = []
    with ChipWorker(config=config) as worker:
        worker.register(compiled)  # the load happens once, here, outside the rounds
        call = compiled.build_call_config(config)
        for round_index in range(warmup + rounds):
            start = time.perf_counter()
            orch = compiled.build_orch_args(*(worker._device_value(arg) for arg in args))
            bound = time.perf_counter()
            compiled.launch(orch.values, call)
            end = time.perf_counter()
            if round_index < warmup:
                continue
            report = compiled.last_report
            modeled = float(report.total_us) if report is not None else 0.0
            spans = (
                TraceSpan(ROOT, (end - start) * 1e6),
                TraceSpan(BIND, (bound - start) * 1e6),
                TraceSpan(RUNNER, (end - bound) * 1e6),
                TraceSpan(DEVICE, modeled, device=True),
            )
            callable_ = compiled.chip_callable
            invocations.append(TraceInvocation(callable_.key, callable_.entry, spans))
            host.append(spans[0].dur_us)
            device.append(modeled)
        modeled_device = bool(getattr(compiled.last_report, "modeled", True))
    return BenchmarkStats(device, host, rounds, warmup, config.platform_name, modeled_device, invocations)


def _fail(message: str, hint: str) -> NoReturn:
    raise ConfigError(message, hint=hint)


__all__ = ["BenchmarkStats", "TraceInvocation", "TraceSpan", "benchmark"]
