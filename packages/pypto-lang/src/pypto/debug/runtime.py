"""What the programs :func:`pypto.debug.torch_codegen` writes call at run time.

A generated program defines one Python function per IR function. Orchestration functions are
plain functions; kernels (InCore, AIC, AIV) are generators that take their core first: a core
yields when it must wait for another (a ``tpop`` on an empty pipe, an event, a barrier), so the
cores of one launch run *interleaved*, like coroutines, in one thread. :func:`launch` starts every
core of a kernel launch (each block of an spmd launch, the AIC and each AIV lane of a mixed
kernel) and gives them turns until all have returned; a whole round of turns in which no core
moves is a :class:`pypto.ir.DeadlockError`. A push never waits (the pipes are unbounded FIFOs:
the slot count changes when a push may go, never what it carries), so any order the hardware
allows gives the same numbers here.

Each op runs by the shared torch semantics of :mod:`pypto.ir.semantics`, the numbers every
backend computes (no simulator involved); tensor-level ops of pre-pass IR run by the semantics
of the tile op of the same name. The ``Call`` nodes (their attrs and result types) travel inside
the generated source as an encoded table (:func:`load`); ``_op("tile.add", 12, a, b)`` runs
call 12 of it.
"""

from __future__ import annotations

import base64
import pickle
import zlib
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from pypto.ir import Call, DeadlockError, FunctionKind, Program, PyptoError, SplitMode
from pypto.ir.launch import LoadedProgram, Seat
from pypto.ir.ops import op as core_ops
from pypto.ir.ops import system
from pypto.ir.ops import tile as tile_ops
from pypto.ir.semantics import SEMANTICS, gathered, padded_share, torch_dtype
from pypto.ir.walker import bind_extents

AIC, AIV = FunctionKind.AIC, FunctionKind.AIV
Steps = Generator[Any, None, Any]

# Ops that change nothing a host run models: pipe setup and frees, buffers the compiler placed,
# cache and ordering instructions.
NO_EFFECT = frozenset(
    {
        system.aic_initialize_pipe,
        system.aiv_initialize_pipe,
        system.tfree_to_aic,
        system.tfree_to_aiv,
        system.reserve_buffer,
        system.import_peer_buffer,
        system.fence,
        system.cacheinvalid,
        system.set_ffts,
    }
)
PUSHES = frozenset({tile_ops.tpush_to_aiv, tile_ops.tpush_to_aic})
POPS = frozenset({tile_ops.tpop_from_aic, tile_ops.tpop_from_aiv})
WAITS = POPS | {system.syncall, system.sync_set, system.sync_wait}
INDICES = frozenset({tile_ops.get_subblock_idx, core_ops.get_block_idx, core_ops.get_block_num})


class CodegenRunError(PyptoError, RuntimeError):
    """A generated program that cannot run an op (no torch reference for it)."""


@dataclass
class Encoded:
    """The IR a generated program runs: its program and its ``Call`` nodes, numbered."""

    program: Program
    calls: list[Call]
    loaded: LoadedProgram | None = None

    def plans(self) -> LoadedProgram:
        if self.loaded is None:
            self.loaded = LoadedProgram(self.program, 2)
        return self.loaded


def encode(program: Program, calls: Sequence[Call]) -> str:
    """``program`` and ``calls`` as text to embed in a generated program."""
    data = zlib.compress(pickle.dumps((program, list(calls)), protocol=pickle.HIGHEST_PROTOCOL), 9)
    return base64.b64encode(data).decode("ascii")


def load(text: str) -> Encoded:
    """The IR :func:`encode` wrote (a pickle: read only programs you generated yourself)."""
    program, calls = pickle.loads(zlib.decompress(base64.b64decode(text)))
    return Encoded(program, calls)


def run_op(ir: Encoded, name: str, index: int, args: tuple[Any, ...]) -> Any:
    """Call ``index`` of the table (op ``name``) on its evaluated operands."""
    call = ir.calls[index]
    impl = SEMANTICS.get(call.op)
    if impl is None and call.op.startswith("tensor."):
        impl = SEMANTICS.get("tile." + call.op.removeprefix("tensor."))
    if impl is None:
        raise CodegenRunError(
            f"torch codegen has no torch reference for {name}",
            call.span,
            "generate the code from the lowered program (after the pass pipeline), where the op is a tile op",
        )
    return impl(call, args)


def loop_range(start: Any, stop: Any, step: Any) -> range:
    """A ``for`` loop's iterations (a step of 0 would never end)."""
    if int(step) == 0:
        raise CodegenRunError("a loop's step is 0 at run time: the loop would never end")
    return range(int(start), int(stop), int(step))


def tile_copy(value: Any) -> Any:
    """A carried tile gets a buffer of its own (an in-place op on the next iteration's tile must not
    change the value it came from); GM tensors are carried as they are."""
    return value.clone() if isinstance(value, torch.Tensor) else value


def extents(ir: Encoded, name: str, args: Sequence[Any]) -> dict[str, int]:
    """The values of function ``name``'s dynamic extents, read from its tensor arguments."""
    found = bind_extents(ir.program.function(name), args)
    return {f"{dim.name}#{dim.ident}": value for dim, value in found.items()}


def check_shape(value: Any, shape: tuple[int | None, ...], what: str) -> Any:
    """``check_shapes=True``: ``value`` has the IR's static shape (None: a dynamic extent)."""
    if isinstance(value, torch.Tensor):
        got = tuple(value.shape)
        if len(got) != len(shape) or any(s is not None and s != g for s, g in zip(shape, got, strict=False)):
            raise AssertionError(f"{what}: shape {list(got)}, but the IR says {list(shape)}")
    return value


# ---------------------------------------------------------------- launches


@dataclass
class Pipes:
    """What the cores of one core group share: a FIFO per AIV lane each way, per pipe id, and the
    cross-core events."""

    lanes: list[int]
    to_lane: dict[tuple[int, int], deque[Any]] = field(default_factory=lambda: defaultdict(deque))
    to_cube: dict[tuple[int, int], deque[Any]] = field(default_factory=lambda: defaultdict(deque))
    events: Counter[Any] = field(default_factory=Counter)


@dataclass
class Task:
    """The cores of one kernel launch (every block): the barrier rounds and the progress count."""

    kinds: list[FunctionKind]
    arrived: Counter[Any] = field(default_factory=Counter)
    steps: int = 0


class Core:
    """The core a kernel runs on: its seat (kind, AIV lane), its block, its group's pipes.

    A generated kernel calls :meth:`op` for each op; ops that may wait are generators
    (``value = yield from _core.pop_from_aic(7)``).
    """

    def __init__(
        self, ir: Encoded, kind: FunctionKind, lane: int, block: int, block_num: int, pipes: Pipes, task: Task
    ):
        self.ir = ir
        self.kind = kind
        self.lane = lane
        self.block = block
        self.block_num = block_num
        self.pipes = pipes
        self.task = task
        self.rounds: Counter[Any] = Counter()

    def start(self) -> Steps:
        """The kernel's first turn (so every core of a launch starts before any runs on)."""
        self.task.steps += 1
        yield

    def op(self, name: str, index: int, *args: Any) -> Any:
        """An op that never waits: its semantics, a lane or block index, or nothing."""
        self.task.steps += 1
        call = self.ir.calls[index]
        if call.op in INDICES:
            if call.op == tile_ops.get_subblock_idx:
                return self.lane
            return self.block if call.op == core_ops.get_block_idx else self.block_num
        if call.op in NO_EFFECT:
            return None
        if call.op in PUSHES:
            return self._push(call, args)
        return run_op(self.ir, name, index, args)

    def _push(self, call: Call, args: tuple[Any, ...]) -> None:
        mode = call.attrs.get("split") or SplitMode.NONE
        pipe = call.attrs.get("id") or 0
        if call.op == tile_ops.tpush_to_aiv:
            stride = call.attrs.get("lane_stride")
            for lane in self.pipes.lanes:
                self.pipes.to_lane[(lane, pipe)].append(padded_share(args[0], mode, lane, stride))
        else:
            self.pipes.to_cube[(self.lane, pipe)].append(args[0].clone())

    def wait(self, name: str, index: int, *args: Any) -> Steps:
        """An op that may wait for another core: a pop, an event, a barrier."""
        self.task.steps += 1
        call = self.ir.calls[index]
        mode = call.attrs.get("split") or SplitMode.NONE
        pipe = call.attrs.get("id") or 0
        if call.op == tile_ops.tpop_from_aic:
            queue = self.pipes.to_lane[(self.lane, pipe)]
            while not queue:
                yield
            return queue.popleft()
        if call.op == tile_ops.tpop_from_aiv:
            queues = [self.pipes.to_cube[(lane, pipe)] for lane in self.pipes.lanes]
            while not all(queues):
                yield
            dtype = getattr(call.type, "dtype")  # noqa: B009 - a pop's result is a tile
            return gathered([q.popleft() for q in queues], mode).to(torch_dtype(dtype))
        if call.op == system.syncall:
            yield from self._syncall(call)
            return None
        event = int(args[0]) if args else int(call.attrs["event_id"])
        yield from self._event(call, event)
        return None

    def _event(self, call: Call, event: int) -> Steps:
        me = (self.kind, self.lane)
        peers = [(AIV, lane) for lane in self.pipes.lanes] if self.kind is AIC else [(AIC, 0)]
        if call.op == system.sync_set:
            for peer in peers:
                self.pipes.events[(event, me, peer)] += 1
            return
        keys = [(event, peer, me) for peer in peers]
        while not all(self.pipes.events[key] > 0 for key in keys):
            yield
        for key in keys:
            self.pipes.events[key] -= 1

    def _syncall(self, call: Call) -> Steps:
        by_type: dict[Any, tuple[FunctionKind, ...]] = {"aic": (AIC,), "aiv": (AIV,)}
        cores = by_type.get(call.attrs.get("core_type"), (AIC, AIV))
        key = (cores, self.rounds[cores])
        self.rounds[cores] += 1
        self.task.arrived[key] += 1
        members = sum(kind in cores for kind in self.task.kinds)
        if call.attrs.get("mode", "hard") != "hard":
            members = min(int(call.attrs["used_cores"]), members)
        while self.task.arrived[key] < members:
            yield


def launch(
    bodies: dict[str, Callable[..., Steps]],
    ir: Encoded,
    kernel: str,
    args: tuple[Any, ...],
    block_num: int = 1,
) -> Any:
    """Run ``kernel`` on ``args``: every core of every one of ``block_num`` blocks, interleaved;
    the value is what the kernel returns (the launch's arguments its ``return`` names).
    ``bodies`` maps each kernel's name to its generated function."""
    callee = ir.program.function(kernel)
    blocks = int(block_num)
    if callee.kind in (FunctionKind.InCore, FunctionKind.Opaque):
        seats = [Seat(AIV, 0, callee, tuple(range(len(callee.params))))]
        result_of: Callable[[Sequence[Any]], Any] | None = None
    else:
        plan = ir.plans().plans[kernel]
        seats = [seat for seat in plan.seats if not seat.mirror]
        result_of = plan.result
    lanes = [seat.lane for seat in seats if seat.kind is AIV] or [0]
    task = Task([seat.kind for seat in seats] * blocks)
    walks = []
    for block in range(blocks):
        pipes = Pipes(lanes)
        for seat in seats:
            core = Core(ir, seat.kind, seat.lane, block, blocks, pipes, task)
            walks.append(bodies[seat.kernel.name](core, *seat.args(args)))
    results = _take_turns(callee.name, walks, task)
    if result_of is not None:
        return result_of(args)
    return results[0] if results else None


def _take_turns(name: str, walks: list[Steps], task: Task) -> list[Any]:
    results: dict[int, Any] = {}
    while len(results) < len(walks):
        before = (len(results), task.steps)
        for i, walk in enumerate(walks):
            if i in results:
                continue
            try:
                next(walk)
            except StopIteration as done:
                results[i] = done.value
        if (len(results), task.steps) == before:
            raise DeadlockError(
                f"every running core of {name} waits for another core (in the generated torch code)"
            )
    return [results[i] for i in range(len(walks))]


def scope_core(ir: Encoded, block: int, block_num: int, lane: int = 0) -> Core:
    """The core a pre-pass ``pl.at`` scope's body runs on (its blocks one after another)."""
    return Core(ir, AIV, lane, block, block_num, Pipes([lane]), Task([AIV]))


def now(steps: Steps) -> Any:
    """The value of a wait in a pre-pass scope, whose body runs alone: it must not need to wait."""
    try:
        next(steps)
    except StopIteration as done:
        return done.value
    raise DeadlockError(
        "a pipe, event or barrier op in a pl.at scope waits for a core that does not run here"
    )


def predicate_holds(predicate: Any, tensor: Any, indices: tuple[int, ...]) -> bool:
    """A launch's ``predicate=``: whether the task runs (the element read now: tasks run in order)."""
    return bool(predicate.holds(tensor[indices].item()))
