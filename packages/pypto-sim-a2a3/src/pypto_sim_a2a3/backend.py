"""The ``a2a3sim`` backend: runs a lowered program on a simulated a2a3 chip.

Importing it (and registering the plugin) needs no torch: the ``a2a3`` target and the backend's
name are there for compiling; torch is imported when a program runs.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from weakref import WeakKeyDictionary

from pypto.ir import ConfigError, Function, FunctionKind, PlatformError, Program, RunReport, VerificationError
from pypto.ir.argdump import DUMP_ARGS_OPTION
from pypto.ir.launch import LoadedProgram
from pypto_sim_a2a3.options import SimOptions
from pypto_sim_a2a3.target import A2A3_TARGET

TORCH_HINT = "install it: pip install torch (this project pins the CPU build in constraints.txt)"


def freeze_the_loaded_heap(sim: SimOptions) -> bool:
    """Once per process, at the first run (torch, the compiler and the simulator loaded): move
    the objects alive now into the cyclic collector's permanent generation (``gc.freeze()``).

    They are modules, classes and functions that live as long as the process (torch alone has
    about 170,000); a full collection would otherwise scan them all again each time, about 75 ms
    here, several times in a short script and throughout a long simulation. Frozen objects are
    still freed when their last reference goes; only a reference cycle alive at this moment is
    never collected. ``SimOptions.gc_freeze`` off (``PYPTO_SIM_GC_FREEZE=off``) leaves the collector
    alone. True when it froze (this run or an earlier one)."""
    return sim.gc_freeze and _freeze_once()


@functools.cache
def _freeze_once() -> bool:
    gc.freeze()
    return True


# While a program runs, the oldest generation is collected at most every this many collections
# of the middle one (Python's default is 10).
PACED_FULL_COLLECTIONS = 100


@contextmanager
def full_collections_paced(sim: SimOptions) -> Iterator[None]:
    """While a program runs, the cyclic collector's full collections are rarer: a simulation keeps
    most of what it makes until it ends (timeline slices, access records, tiles), and each full
    collection rescans all of it (a run of a 24-block matmul met one or two, ~50 ms each, about a
    tenth of its time). The young generations are collected as usual, so short-lived cycles
    still go at once; the thresholds are restored after the run. ``SimOptions.gc_freeze`` off
    leaves them alone."""
    if not sim.gc_freeze:
        yield
        return
    young, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, max(old, PACED_FULL_COLLECTIONS))
    try:
        yield
    finally:
        gc.set_threshold(young, middle, old)


class A2A3SimBackend:
    """CPU simulator of one a2a3 chip: real numbers from torch, modeled cycles from the cost model.

    ``report = A2A3SimBackend().run(program, [a, b, out], {})`` writes ``out`` in place and
    returns a ``RunReport`` whose times are modeled cycles.
    """

    name = "a2a3sim"
    target = A2A3_TARGET
    # A simulator: a run on "a2a3" with no device backend installed comes here, and every
    # RunConfig(device_id=...) names this one modeled chip (the id is recorded in the report).
    simulator = True

    def __init__(self) -> None:
        # Each program's launch plans, made on its first run (the runtime runs one program often).
        self._loaded: WeakKeyDictionary[Program, LoadedProgram] = WeakKeyDictionary()

    @property
    def ops(self) -> frozenset[str]:
        """The ops this backend has semantics for (needs torch)."""
        from pypto_sim_a2a3.distributed import kernel_ops  # noqa: F401  (registers the dist ops)
        from pypto_sim_a2a3.engine.crosscore import LAUNCH_OPS
        from pypto_sim_a2a3.engine.semantics import SEMANTICS

        return frozenset(SEMANTICS) | frozenset(LAUNCH_OPS)

    def run(self, program: Program, args: Sequence[Any], options: Mapping[str, Any]) -> RunReport:
        """Run ``program``'s entry with ``args`` (torch tensors written in place, Python scalars).

        ``options["on_task"]``, when given, is called with each finished task's kernel name;
        ``options["on_progress"]`` with ``(kernel, done, total, unit)`` as a task advances: after
        each block of an ``pl.spmd`` task (unit ``"blocks"``), else after each iteration of the
        outermost loop of its first kernel that has one (``"iterations"``; the AIC's, for a
        Group). ``options["dump_args"]`` (:data:`pypto.ir.argdump.DUMP_ARGS_OPTION`), when given, is
        the :class:`~pypto.ir.argdump.ArgDumpSink` each task's dumped arguments go to: what it reads
        as its first block starts, what it writes once it has resolved; it costs no modeled time."""
        entry = _entry(program)
        try:
            from pypto_sim_a2a3.distributed import kernel_ops  # noqa: F401  (the dist ops: a CommError on one chip)
            from pypto_sim_a2a3.engine.arguments import check_arguments
            from pypto_sim_a2a3.engine.chip import Chip
            from pypto_sim_a2a3.engine.runtime_rings import RuntimeRings
        except ImportError as exc:
            raise PlatformError(
                f"a2a3sim needs torch to run a program ({exc}); compiling for a2a3 does not",
                entry.span,
                TORCH_HINT,
            ) from None
        sim = SimOptions.for_run(options)
        freeze_the_loaded_heap(sim)
        check_arguments(entry, args)
        loaded = self._loaded.get(program)
        if loaded is None:
            loaded = self._loaded[program] = LoadedProgram(program, self.target.aiv_per_group)
        rings = RuntimeRings.from_options(options)
        debugger = debug_session(program, options.get(BREAK_AT_OPTION))
        chip = Chip(
            program,
            self.target,
            self.name,
            options.get("on_task"),
            options.get("on_progress"),
            loaded,
            rings,
            debugger,
            options.get(DUMP_ARGS_OPTION),
            sim=sim,
        )
        if debugger is not None:
            debugger.scheduler = chip.scheduler
        with full_collections_paced(sim):
            try:
                outputs = chip.run(entry, args)
                report = chip.report(outputs)
                report.timing_only = sim.timing_only
                return report
            finally:
                chip.release()

    def run_world(self, program: Program, args: Sequence[Any], options: Mapping[str, Any], ranks: int) -> Any:
        """Run ``program``'s HOST entry on a world of ``ranks`` simulated chips on one modeled clock.

        ``options`` as for :meth:`run`, plus ``"device_ids"`` (for the report), ``"windows"`` (a
        :meth:`window_store` kept across runs, or None) and ``"callbacks"`` (SubWorker name ->
        callable given the list of the call's arguments). Returns a ``WorldReport``: one
        ``RunReport`` per rank, the world's cycles and the transfers between the chips."""
        entry = self._world_entry(program, ranks)
        try:
            from pypto_sim_a2a3.distributed.world import World
        except ImportError as exc:
            raise PlatformError(
                f"a2a3sim needs torch to run a program ({exc})", entry.span, TORCH_HINT
            ) from None
        _refuse_timing_only(options, entry)
        loaded = self._loaded_program(program)
        world = World(program, self.target, self.name, ranks, options, loaded)
        with full_collections_paced(world.sim):
            return world.run(entry, args)

    def run_rank(
        self,
        program: Program,
        args: Sequence[Any],
        options: Mapping[str, Any],
        rank: int,
        ranks: int,
        link: Any,
    ) -> RunReport:
        """Simulate rank ``rank`` of a world of ``ranks`` in this process, on ``link`` (the
        runtime's ``RankLink``): the HOST entry runs here too, dispatching only this rank's work;
        what this rank does to the others goes over the link, with its modeled send cycle. The
        rank's ``RunReport``; its transfers go to ``link.transfers``. Modeled cycles equal
        :meth:`run_world`'s."""
        entry = self._world_entry(program, ranks)
        from pypto_sim_a2a3.distributed.world import World

        _refuse_timing_only(options, entry)
        loaded = self._loaded_program(program)
        world = World(program, self.target, self.name, ranks, options, loaded, local=(rank,), link=link)
        with full_collections_paced(world.sim):
            report = world.run(entry, args)
        return report.chips[0]

    def link_lookahead(self, ranks: int) -> int:
        """The smallest latency of a link between two chips, in cycles: how far ahead ranks in
        processes of their own may simulate before they exchange what they sent."""
        from pypto_sim_a2a3.target import A2A3_INTERCONNECT

        return A2A3_INTERCONNECT.latency_cycles(self.target.clock_mhz)

    def _loaded_program(self, program: Program) -> LoadedProgram:
        loaded = self._loaded.get(program)
        if loaded is None:
            loaded = self._loaded[program] = LoadedProgram(program, self.target.aiv_per_group)
        return loaded

    def _world_entry(self, program: Program, ranks: int) -> Function:
        entry = program.entry_function
        if not entry.is_host:
            raise VerificationError(
                f"entry {entry.name} is no HOST orchestrator; a world runs a @pl.jit.host entry",
                entry.span,
                "write the entry as @pl.jit.host, or as @pl.function(level=pl.Level.HOST, "
                "role=pl.Role.Orchestrator)",
            )
        if ranks < 1:
            raise PlatformError(f"a world needs at least one rank, got {ranks}", entry.span)
        freeze_the_loaded_heap(SimOptions.for_run({}))
        return entry

    def window_store(self, ranks: int) -> Any:
        """Window buffers a persistent worker keeps across runs (``options["windows"]``);
        ``store.reset()`` zeroes them."""
        from pypto_sim_a2a3.distributed.windows import WindowStore

        return WindowStore(ranks)


# The backend option naming where a run stops (RunConfig(break_at=...)): "k.py:31", "k.py:31@aiv1",
# or a list of them.
BREAK_AT_OPTION = "break_at"


def debug_session(program: Program, break_at: Any) -> Any:
    """The run's kernel debugger (:mod:`pypto_sim_a2a3.engine.debugger`), if the program has a
    ``pl.debug`` op or ``break_at`` names a line; None otherwise (the run pays nothing for it)."""
    from pypto.ir.breakpoints import parse_break_at
    from pypto_sim_a2a3.engine.debugger import DebugSession, debugs

    given = [break_at] if isinstance(break_at, str) else list(break_at or ())
    breaks = tuple(parse_break_at(text) for text in given)
    if not breaks and not debugs(program):
        return None
    return DebugSession(program, breaks)


def _refuse_timing_only(options: Mapping[str, Any], entry: Function) -> None:
    """A world of chips runs with numbers: its ranks' collectives and windows carry them."""
    if SimOptions.for_run(options).timing_only:
        raise ConfigError(
            "a timing-only run models one chip; a world of chips (distributed_config, a HOST entry "
            "on several ranks) runs with numbers",
            entry.span,
            "drop timing_only (--timing-only) for a distributed run",
        )


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
