"""The ``torchref`` backend: a lowered program run op by op with plain torch, no timing.

The shared walker (``pypto.ir.walker``) runs the program and ``pypto.ir.semantics`` gives each op
its numbers; torchref adds its pipes (unbounded queues: a push never waits, a pop yields until its
tile is there), barrier and cross-core events (counters: a wait yields until its set is there). A
launch's cores take turns; a lane that only mirrors lane 0 does not run.
"""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pypto.ir import Call, FunctionKind, Program, RunReport, SplitMode, TaskRecord, VerificationError
from pypto.ir.launch import LaunchPlan, LoadedProgram, Seat
from pypto.ir.ops import system
from pypto.ir.ops import tile as tile_ops
from pypto.ir.semantics import SEMANTICS, gathered, padded_share, torch_dtype
from pypto.ir.targets import get_target
from pypto.ir.walker import INDEX_OPS, HostWalker, KernelWalker, Steps, drive, take_turns

TORCHREF_TARGET = get_target("a2a3")  # so that a program lowers for torchref exactly as for a2a3sim
AIC, AIV = FunctionKind.AIC, FunctionKind.AIV
# torchref has no pipe flags, caches or write buffers: these ops change nothing it models.
NO_EFFECT = {system.aic_initialize_pipe, system.aiv_initialize_pipe, system.tfree_to_aic, system.tfree_to_aiv}
NO_EFFECT |= {system.reserve_buffer, system.import_peer_buffer}  # the compiler placed the buffers
NO_EFFECT |= {system.fence, system.cacheinvalid, system.set_ffts}
PUSHES_POPS = {tile_ops.tpush_to_aiv, tile_ops.tpush_to_aic, tile_ops.tpop_from_aic, tile_ops.tpop_from_aiv}
PIPE_OPS = PUSHES_POPS | {system.syncall, system.sync_set, system.sync_wait}


class Launch:
    """What the running cores of one task share: a queue per lane each way, the barrier rounds."""

    def __init__(self, plan: LaunchPlan) -> None:
        self.kinds = [seat.kind for seat in plan.seats if not seat.mirror]
        self.lanes = [seat.lane for seat in plan.seats if seat.kind is AIV and not seat.mirror]
        # One queue per lane, each way, of each pipe id (``id=`` on the pipe ops, 0 when left out).
        self.to_lane: dict[tuple[int, int], deque[Any]] = defaultdict(deque)
        self.to_cube: dict[tuple[int, int], deque[Any]] = defaultdict(deque)
        self.arrived: Counter[tuple[Any, int]] = Counter()  # (barrier's cores, round) -> arrivals
        # (event id, setting core, waiting core) -> sets not yet waited for; a core is (kind, lane)
        self.events: Counter[tuple[int, tuple[FunctionKind, int], tuple[FunctionKind, int]]] = Counter()
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
        if call.op == tile_ops.tpush_to_aiv:
            stride = call.attrs.get("lane_stride")
            for lane in self.launch.lanes:
                self.launch.to_lane[(lane, pipe)].append(padded_share(args[0], mode, lane, stride))
        elif call.op == tile_ops.tpush_to_aic:
            self.launch.to_cube[(self.seat.lane, pipe)].append(args[0])
        elif call.op == tile_ops.tpop_from_aic:
            queue = self.launch.to_lane[(self.seat.lane, pipe)]
            while not queue:
                yield  # give the other cores turns until a tile is there
            return queue.popleft()
        elif call.op == tile_ops.tpop_from_aiv:
            queues = [self.launch.to_cube[(lane, pipe)] for lane in self.launch.lanes]
            while not all(queues):
                yield
            assert call.type is not None
            return gathered([queue.popleft() for queue in queues], mode).to(torch_dtype(call.type.dtype))
        elif call.op == system.syncall:
            yield from self.syncall(call)
        elif call.op in (system.sync_set, system.sync_wait):
            yield from self.event(call, int(args[0]) if args else int(call.attrs["event_id"]))
        elif call.op not in NO_EFFECT:
            if call.op not in SEMANTICS:
                raise VerificationError(f"torchref does not implement {call.op}", call.span)
            return SEMANTICS[call.op](call, args)
        return None

    def event(self, call: Call, event: int) -> Steps:
        """A set raises the event toward each core of the other kind; a wait takes one set from
        each of them, yielding until they are there."""
        me = (self.seat.kind, self.seat.lane)
        peers = [(AIV, lane) for lane in self.launch.lanes] if me[0] is AIC else [(AIC, 0)]
        if call.op == system.sync_set:
            for peer in peers:
                self.launch.events[(event, me, peer)] += 1
            return
        keys = [(event, peer, me) for peer in peers]
        while not all(self.launch.events[key] > 0 for key in keys):
            yield
        for key in keys:
            self.launch.events[key] -= 1

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
