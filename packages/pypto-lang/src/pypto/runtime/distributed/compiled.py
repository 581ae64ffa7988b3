"""``DistributedCompiledProgram``: a HOST-level program compiled for a world of chips.

``pypto.ir.compile(program, distributed_config=dc)``, ``host_kernel.compile(*args,
config=RunConfig(distributed_config=dc))`` and ``compile_program`` under such a config give one.
Calling it runs the program once on ``len(dc.device_ids)`` simulated chips (one-shot: host tensors
only); :meth:`DistributedCompiledProgram.prepare` gives a :class:`DistributedWorker` that
dispatches it many times.

>>> compiled = orchestrator.compile(x, y, config=RunConfig(distributed_config=dc))  # doctest: +SKIP
>>> compiled(x, y)  # doctest: +SKIP
>>> print(compiled.last_report.summary())  # doctest: +SKIP
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pypto.ir import Function, PlatformError, Program, PyptoError, Role, log
from pypto.ir.backend import WorldReport
from pypto.ir.distributed_compiled_program import DistributedConfig
from pypto.ir.errors import CommError
from pypto.ir.extensions import IR
from pypto.ir.tracebacks import call_site, raise_at_user_line
from pypto.runtime import settings
from pypto.runtime.compiling import artifacts
from pypto.runtime.compiling.compiled import CompiledProgram
from pypto.runtime.config import RunConfig
from pypto.runtime.platforms.registry import get_backend
from pypto.runtime.reports import launches
from pypto.runtime.reports.world import WorldProfileFiles, write_world_profile
from pypto.runtime.running.device import DeviceTensor, DeviceTensorError
from pypto.runtime.settings import ConfigError

WORLD_SUMMARY = "world_summary.txt"  # beside report.txt: the world's summary after a run


def sub_workers(program: Program) -> dict[str, Function]:
    """The program's HOST ``SubWorker`` functions by name (the host callbacks it calls)."""
    return {name: fn for name, fn in program.functions.items() if fn.is_host and fn.role is Role.SubWorker}


@dataclass(repr=False)
class DistributedCompiledProgram(CompiledProgram):
    """A compiled HOST-level program and the world it runs on (``config.distributed_config``).

    ``world_size`` is ``len(device_ids)``; rank ``r`` runs on device ``device_ids[r]``. Calling it
    (``compiled(x, y)``) runs it once and blocks until every rank is done; ``prepare()`` gives a
    :class:`~pypto.runtime.DistributedWorker` for many dispatches. After a run ``last_report`` is
    the :class:`~pypto.ir.backend.WorldReport` (one ``RunReport`` per rank, the link transfers);
    with profiling on, ``last_world_profile`` the files written from it (a trace with a process per
    rank, a swimlane, a summary).
    """

    last_world_profile: WorldProfileFiles | None = field(default=None, init=False, repr=False)

    @property
    def distributed_config(self) -> DistributedConfig:
        return cast(DistributedConfig, self.config.distributed_config)

    @property
    def device_ids(self) -> tuple[int, ...]:
        return self.distributed_config.device_ids

    @property
    def world_size(self) -> int:
        return self.distributed_config.world_size

    @property
    def world_report(self) -> WorldReport | None:
        """The last run's :class:`~pypto.ir.backend.WorldReport` (``last_report`` under its type)."""
        report: Any = self.last_report
        return report if isinstance(report, WorldReport) else None

    def __repr__(self) -> str:
        params = ", ".join(p.var.name for p in self.entry.params)
        report = self.world_report
        last = f"{report.total_cycles} modeled cycles" if report is not None else "not run"
        return (
            f"DistributedCompiledProgram({self.entry.name}({params}) on {self.platform}, "
            f"{self.world_size} rank(s) on devices {list(self.device_ids)}, last run: {last})"
        )

    # ------------------------------------------------------------ one-shot

    def __call__(self, *args: Any, config: RunConfig | None = None) -> Any:
        """Run once on ``args`` (host ``torch.Tensor`` s and scalars; written in place) and block until
        every rank is done; returns what the HOST entry returns. A ``DeviceTensor`` or
        ``StackedDeviceTensor`` belongs to a prepared worker: pass it to ``rt(...)`` instead."""
        try:
            self._reject_resident(args)
            return self.dispatch(args, config)
        except PyptoError as err:
            failure = err.with_span(call_site())
        raise_at_user_line(failure, self.entry.name)

    def _reject_resident(self, args: tuple[Any, ...]) -> None:
        from pypto.runtime.distributed.tensors import StackedDeviceTensor

        for name, arg in zip(self.param_names, args, strict=False):
            if isinstance(arg, (DeviceTensor, StackedDeviceTensor)):
                raise DeviceTensorError(
                    f"{self.entry.name}() one-shot call was given the {type(arg).__name__} {name!r}: a "
                    "one-shot call takes host torch.Tensor arguments only",
                    call_site(),
                    "dispatch resident tensors through the worker that allocated them: "
                    "with compiled.prepare() as rt: rt(...)",
                )

    def dispatch(self, args: tuple[Any, ...], config: RunConfig | None = None) -> Any:
        orch = self.build_orch_args(*args)
        result = self._one_shot(orch.values, self.checked_config(config))
        return self._or_made(result, list(orch.made))

    def run_checked(self, args: tuple[Any, ...], config: RunConfig | None = None) -> Any:
        """A run on arguments already checked (``host_kernel(x, y, config=cfg)``)."""
        chosen = self.checked_config(config)
        if chosen.codegen_only:
            self.write_artifacts(chosen)
            return None
        return self._one_shot(args, chosen)

    def _one_shot(self, args: Sequence[Any], config: RunConfig) -> Any:
        """One run with the world set up for it: every rank's chip in this process on one modeled
        clock (a prepared worker runs a process per rank; under torchrun this process simulates
        its own rank)."""
        from pypto.runtime.distributed.engine import ProcessEngine, make_engine

        engine = make_engine([self], {}, None, processes=False)
        if not isinstance(engine, ProcessEngine):
            return self.run_world(args, config)
        try:
            return self.run_world(args, config, engine=engine)
        finally:
            engine.close()

    def checked_config(self, config: RunConfig | None) -> RunConfig:
        """A run's config: the compile's, or the one given, whose ``distributed_config`` (if it has
        one) must name the devices this program was compiled for."""
        if config is None:
            return self.config
        if not isinstance(config, RunConfig):
            raise ConfigError(
                f"config= takes a RunConfig, got {type(config).__name__}",
                call_site(),
                "pass config=RunConfig(platform=...), or leave it out",
            )
        given = config.distributed_config
        if given is not None and given.device_ids != self.device_ids:
            raise ConfigError(
                f"config= names devices {list(given.device_ids)}, but {self.entry.name} was compiled "
                f"for devices {list(self.device_ids)}",
                call_site(),
                "compile it again with that DistributedConfig, or leave distributed_config out of the "
                "run's config",
            )
        return config

    # ------------------------------------------------------------ the world run

    def run_world(
        self,
        args: Sequence[Any],
        config: RunConfig,
        *,
        windows: Any = None,
        callbacks: Mapping[str, Callable[..., Any]] | None = None,
        engine: Any = None,
    ) -> Any:
        """Run the HOST entry on ``args`` on every rank through the platform's ``run_world``;
        ``windows`` is a persistent worker's window store, ``callbacks`` the SubWorker bindings,
        ``engine`` the worker's rank engine (None: in this process). Returns what the entry
        returns; the :class:`WorldReport` is kept in ``last_report``."""
        self.check_callbacks(callbacks or {})
        if settings.timing_only():
            raise ConfigError(
                f"--timing-only models one chip; {self.entry.name} runs on a world of "
                f"{self.world_size} chips, which runs with numbers",
                call_site(),
                "run the distributed program without --timing-only",
            )
        call = self.build_call_config(config)
        directory = config.checked_profile_path(self.lowered.name)
        options: dict[str, Any] = {
            **call.backend_options,
            "device_ids": self.device_ids,
            "windows": windows,
            "callbacks": dict(callbacks or {}),
        }
        start = time.perf_counter()
        if engine is None:
            report = world_backend(self.platform, config).run_world(
                self.lowered, list(args), options, ranks=self.world_size
            )
        else:
            report = engine.run_world(self, list(args), options)
        if not report.device_ids:
            report.device_ids = self.device_ids
        self.last_report = cast(Any, report)  # a distributed program's last report is its world's
        seconds = time.perf_counter() - start
        if directory is not None:
            self.last_world_profile = write_world_profile(report, directory, self.lowered.name)
        log.event(
            f"ran {self.lowered.name} on {self.world_size} {self.platform} chip(s): "
            f"{report.total_cycles} modeled cycles in {seconds:.3f} s"
        )
        for rank, chip in enumerate(report.chips):
            title = f"{self.lowered.name} rank{rank}"
            launches.record(launches.Launch(title, self.platform, chip, None, seconds))
        if artifacts.wants_run_files(config):
            self.write_artifacts(config)
        if report.outputs:
            return report.outputs[0] if len(report.outputs) == 1 else report.outputs
        returned = self._returned_params(tuple(args))
        if not returned:
            return None
        return returned[0] if len(returned) == 1 else returned

    def check_callbacks(self, callbacks: Mapping[str, Callable[..., Any]]) -> None:
        """Every ``...``-body SubWorker of the program is bound (a :class:`CommError`, a
        ``ValueError``, naming it otherwise: a one-shot call binds none)."""
        for name, fn in sub_workers(self.lowered).items():
            if fn.requires_runtime_binding and name not in callbacks:
                raise CommError(
                    f"the SubWorker {name!r} of {self.lowered.name} has no implementation (its body is "
                    "`...`) and none was bound",
                    fn.span or call_site(),
                    f'bind it on a prepared worker: with compiled.prepare(callbacks={{"{name}": fn}}) as '
                    "rt: rt(...), where fn takes the list of the call's arguments",
                )

    def write_artifacts(self, config: RunConfig) -> Path:
        """The compiled artifacts, and after a run the world's summary and each rank's run files in
        ``rank<r>/``."""
        report = self.world_report
        self.last_report = None  # the base class writes single-chip run files only
        try:
            directory = super().write_artifacts(config)
        finally:
            self.last_report = cast(Any, report)
        if report is not None and self._reported is not cast(Any, report):
            (directory / WORLD_SUMMARY).write_text(report.summary() + "\n")
            for rank, chip in enumerate(report.chips):
                artifacts.write_run(
                    directory / f"rank{rank}", chip, config, f"{self.lowered.name} rank{rank}"
                )
            self._reported = cast(Any, report)
        return directory

    # ------------------------------------------------------------ the prepared worker

    def prepare(
        self,
        config: RunConfig | None = None,
        *,
        extra_compiled: Sequence[DistributedCompiledProgram] = (),
        persistent: bool = False,
        reset_persistent_windows: bool | None = None,
        callbacks: Mapping[str, Callable[..., Any]] | None = None,
        sub_worker_overrides: Mapping[str, Callable[..., Any]] | None = None,
        startup_timeout_s: float | None = None,
    ) -> Any:
        """A :class:`~pypto.runtime.DistributedWorker` for this program (and ``extra_compiled``):
        set up once, dispatched many times; use it as a context manager. See
        :class:`~pypto.runtime.DistributedWorker` for the parameters."""
        from pypto.runtime.distributed.worker import DistributedWorker

        return DistributedWorker(
            [self, *extra_compiled],
            config=config,
            persistent=persistent,
            reset_persistent_windows=reset_persistent_windows,
            callbacks=callbacks,
            sub_worker_overrides=sub_worker_overrides,
            startup_timeout_s=startup_timeout_s,
        )


def world_backend(platform: str, config: RunConfig) -> Any:
    """The platform's backend, which must run worlds (``run_world``); else a PlatformError."""
    backend = get_backend(platform, config.platform_origin)
    if not callable(getattr(backend, "run_world", None)):
        raise PlatformError(
            f"platform {platform!r} runs single-chip programs only: its backend has no run_world",
            call_site(),
            "run distributed programs on a simulator that models a world of chips: "
            'RunConfig(platform="a2a3sim")',
        )
    return backend


def check_entry(program: Program, config: RunConfig) -> None:
    """A program compiled with ``distributed_config`` has a HOST orchestrator entry, and one with a
    HOST entry has a ``distributed_config``; else a ConfigError at the entry."""
    entry = program.entry_function
    if config.distributed_config is not None and not entry.is_host:
        raise ConfigError(
            f"distributed_config was given, but {program.name}'s entry {entry.name!r} is not a HOST "
            "orchestrator",
            entry.span or call_site(),
            "make the entry a @pl.jit.host function (or @pl.function(level=pl.Level.HOST, "
            "role=pl.Role.Orchestrator)) that dispatches a chip orchestration per rank with device=r",
        )
    if config.distributed_config is None and entry.is_host:
        raise ConfigError(
            f"{entry.name!r} is a HOST orchestrator: it runs on a world of chips, which needs a "
            "DistributedConfig",
            entry.span or call_site(),
            "pass RunConfig(distributed_config=DistributedConfig(device_ids=[0, 1])) (or "
            "ir.compile(program, distributed_config=...))",
        )


def distributed(compiled: CompiledProgram) -> DistributedCompiledProgram:
    """``compiled`` as a :class:`DistributedCompiledProgram` (same fields)."""
    made = DistributedCompiledProgram(
        compiled.lowered,
        compiled.config,
        compiled.constants,
        compile_seconds=compiled.compile_seconds,
        cache=compiled.cache,
        parsed=compiled.parsed,
        compile_profile=compiled.compile_profile,
        home=compiled.home,
    )
    made._written = compiled._written
    return made


IR.extend(DistributedCompiledProgram=DistributedCompiledProgram)

__all__ = ["DistributedCompiledProgram", "check_entry", "distributed", "sub_workers"]
