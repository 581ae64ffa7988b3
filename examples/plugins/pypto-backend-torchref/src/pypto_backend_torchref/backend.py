"""The ``torchref`` backend: a lowered program run op by op with plain torch, no timing.

The shared walker (``pypto.ir.walker``) runs the program and ``pypto.ir.semantics`` gives each op
its numbers; torchref adds its pipes (unbounded queues: a push never waits, a pop yields until its
tile is there) and barrier. A launch's cores take turns; a lane that only mirrors lane 0 does not run.
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pypto.ir import Call, FunctionKind, Program, RunReport, SplitMode, TaskRecord, VerificationError
from pypto.ir.launch import LaunchPlan, LoadedProgram, Seat
from pypto.ir.ops import op, system
from pypto.ir.semantics import SEMANTICS, gathered, padded_share, torch_dtype
from pypto.ir.targets import get_target
from pypto.ir.walker import INDEX_OPS, HostWalker, KernelWalker, Steps, drive, take_turns

TORCHREF_TARGET = get_target("a2a3")  # so that a program lowers for torchref exactly as for a2a3sim
AIC, AIV = FunctionKind.AIC, FunctionKind.AIV
# torchref has no pipe flags, caches or write buffers: these ops change nothing it models.
NO_EFFECT = {op.aic_initialize_pipe, op.aiv_initialize_pipe, op.tfree_to_aic, op.tfree_to_aiv}
NO_EFFECT |= {op.reserve_buffer, op.import_peer_buffer}  # the compiler placed the buffers
NO_EFFECT |= {system.fence, system.cacheinvalid}
PIPE_OPS = {op.tpush_to_aiv, op.tpush_to_aic, op.tpop_from_aic, op.tpop_from_aiv, system.syncall}


class Launch:
    """What the running cores of one task share: a queue per lane each way, the barrier rounds."""

    def __init__(self, plan: LaunchPlan) -> None:
        self.kinds = [seat.kind for seat in plan.seats if not seat.mirror]
        self.lanes = [seat.lane for seat in plan.seats if seat.kind is AIV and not seat.mirror]
        # One queue per lane, each way, of each pipe id (``id=`` on the pipe ops, 0 when left out).
        self.to_lane: dict[tuple[int, int], deque[Any]] = defaultdict(deque)
        self.to_cube: dict[tuple[int, int], deque[Any]] = defaultdict(deque)
        self.arrived: Counter[tuple[Any, int]] = Counter()  # (barrier's cores, round) -> arrivals
        self.steps = 0  # ops done by any core: a round of turns without one is a deadlock


class Core(KernelWalker):
    """A kernel on one core of a launch."""

    def __init__(self, seat: Seat, args: Sequence[Any], launch: Launch) -> None:
        super().__init__(seat, args)
        self.launch = launch
        self.rounds: Counter[Any] = Counter()  # syncalls passed, per barrier

    def apply(self, call: Call, args: tuple[Any, ...]) -> Steps:
        self.launch.steps += 1
        mode = call.attrs.get("split") or SplitMode.NONE
        if call.op in INDEX_OPS:
            return self.index(call)
        pipe = call.attrs.get("id") or 0
        if call.op == op.tpush_to_aiv:
            for lane in self.launch.lanes:
                self.launch.to_lane[(lane, pipe)].append(padded_share(args[0], mode, lane))
        elif call.op == op.tpush_to_aic:
            self.launch.to_cube[(self.seat.lane, pipe)].append(args[0])
        elif call.op == op.tpop_from_aic:
            queue = self.launch.to_lane[(self.seat.lane, pipe)]
            while not queue:
                yield  # give the other cores turns until a tile is there
            return queue.popleft()
        elif call.op == op.tpop_from_aiv:
            queues = [self.launch.to_cube[(lane, pipe)] for lane in self.launch.lanes]
            while not all(queues):
                yield
            assert call.type is not None
            return gathered([queue.popleft() for queue in queues], mode).to(torch_dtype(call.type.dtype))
        elif call.op == system.syncall:
            yield from self.syncall(call)
        elif call.op not in NO_EFFECT:
            if call.op not in SEMANTICS:
                raise VerificationError(f"torchref does not implement {call.op}", call.span)
            return SEMANTICS[call.op](call, args)
        return None

    def syncall(self, call: Call) -> Steps:
        """Wait for every core of the barrier (``core_type``), or ``used_cores`` of them (soft)."""
        cores = {"aic": (AIC,), "aiv": (AIV,)}.get(call.attrs.get("core_type"), (AIC, AIV))
        key = (cores, self.rounds[cores])
        self.rounds[cores] += 1
        self.launch.arrived[key] += 1
        members = sum(kind in cores for kind in self.launch.kinds)
        if call.attrs.get("mode", "hard") != "hard":
            members = min(int(call.attrs["used_cores"]), members)
        while self.launch.arrived[key] < members:
            yield


class Host(HostWalker):
    """The orchestration: each ``call`` runs its kernel's launch to the end."""

    platform = "torchref"

    def __init__(self, program: Program, args: Sequence[Any], on_task: Callable[[str], None] | None) -> None:
        loaded = LoadedProgram(program, TORCHREF_TARGET.aiv_per_group)
        super().__init__(program.entry_function, args, loaded, SEMANTICS)
        self.on_task = on_task
        self.tasks: list[TaskRecord] = []

    def launch(self, plan: LaunchPlan, call: Call, args: tuple[Any, ...]) -> Steps:
        site = self.predicate_site(call)  # tasks run in order: the element is current now
        if site is not None:
            predicate, tensor, indices = site
            if not predicate.holds(tensor[indices].item()):
                return  # predicate= false: the task is skipped
        shared = Launch(plan)
        cores = [Core(seat, seat.args(args), shared).run() for seat in plan.seats if not seat.mirror]
        take_turns(plan.kernel.name, cores, lambda: shared.steps)
        self.tasks.append(TaskRecord(plan.kernel.name, 0, 0, 0))
        if self.on_task is not None:
            self.on_task(plan.kernel.name)
        yield from ()


class TorchRefBackend:
    """Runs lowered programs with plain torch, no modeled time: ``TorchRefBackend().run(program,
    [a, b, out], {})`` writes ``out`` in place."""

    name = "torchref"
    target = TORCHREF_TARGET
    ops = frozenset(SEMANTICS) | INDEX_OPS | NO_EFFECT | PIPE_OPS

    def run(self, program: Program, args: Sequence[Any], options: Mapping[str, Any]) -> RunReport:
        """Run ``program``'s entry on ``args``; ``options["on_task"]`` hears of each finished task."""
        host = Host(program, args, options.get("on_task"))
        outputs = drive(host.run())
        return RunReport(self.name, self.target.clock_mhz, total_cycles=0, tasks=host.tasks, outputs=outputs)
