"""The cost model: each op becomes modeled cycles on one hardware unit.

Rules are keyed by the op table's cost class (``OpSpec.cost``, its Cost trait) and read every constant from
``Target.cost`` by name, so another target only needs other numbers. All figures are modeled
cycles, never measurements. Besides its cycles, an op that does cube, vector or memory work says
how many cycles that work needs at the unit's peak rate (no fixed latency, head or drain): the
roofline of a kernel adds these up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import ceil, prod

from pypto.ir import Call, DataType, MemorySpace, PlatformError, Target, TileType, get_op
from pypto.ir.backend import ROOF_CUBE, ROOF_MEMORY, ROOF_VECTOR
from pypto.ir.ops import prefetch, system
from pypto.ir.ops import tile as tile_ops
from pypto.ir.semantics import prefetched_bytes
from pypto_sim_a2a3.engine.scheduler import Advance

Mem = MemorySpace


@dataclass(frozen=True)
class OpCost:
    """``cycles`` modeled cycles on ``unit`` (e.g. "CUBE", "VECTOR", "MTE2", "FIXPIPE"), the pipe
    of the core that runs the op: from its start to its result being ready.

    ``peak_cycles`` is what the op's work needs at peak on the roof ``roof`` ("cube", "vector" or
    "memory"; None for control, scalar and synchronisation ops). ``pipelined`` is the part of
    ``cycles`` that does not hold the pipe (a GM load's latency: the next load streams behind it).
    """

    unit: str
    cycles: int
    peak_cycles: float = 0.0
    roof: str | None = None
    pipelined: int = 0

    @property
    def occupancy(self) -> int:
        """The cycles the op holds its pipe."""
        return self.cycles - self.pipelined

    def on(self, call: Call) -> Advance:
        """The scheduler event of spending this cost on ``call``."""
        return Advance(self.unit, self.cycles, call.op, call.span, self.peak_cycles, self.roof)


# On-chip move path -> (unit, bytes-per-cycle constant); FIXPIPE paths also pay a drain.
_MOVE_RATES: dict[tuple[MemorySpace, MemorySpace], tuple[str, str]] = {
    (Mem.Mat, Mem.Left): ("MTE1", "l1_to_l0a_bytes_per_cycle"),
    (Mem.Mat, Mem.Right): ("MTE1", "l1_to_l0b_bytes_per_cycle"),
    (Mem.Mat, Mem.Bias): ("MTE1", "l1_to_bt_bytes_per_cycle"),
    (Mem.Acc, Mem.Mat): ("FIXPIPE", "fixpipe_bytes_per_cycle"),
}

# Push op -> the producer's unit that writes the tile out; the consumer reads it in by MTE2.
_PUSH_UNIT: dict[str, str] = {tile_ops.tpush_to_aiv: "FIXPIPE", tile_ops.tpush_to_aic: "MTE3"}

# system.* op -> its constant (syncall's, absent here, depends on its mode).
_SYNC_CYCLES: dict[str, str] = {
    system.fence: "fence_cycles",
    system.cacheinvalid: "cacheinvalid_cycles",
    system.sync_set: "pipe_flag_cycles",
    system.sync_wait: "pipe_flag_cycles",
    system.set_ffts: "scalar_op_cycles",
    prefetch.wait: "pipe_flag_cycles",  # the flag check once the prefetch has landed
}


def tile_bytes(tile: TileType) -> int:
    """Bytes of the tile's valid region (the bytes a transfer actually moves)."""
    return prod(tile.valid_shape or tile.shape) * tile.dtype.nbytes


class CostModel:
    """Modeled cycles of ops and task dispatch, from ``target.cost``.

    ``CostModel(A2A3_TARGET).op_cost(matmul_call)`` -> ``OpCost(unit="CUBE", cycles=...)``.
    """

    def __init__(self, target: Target):
        self.target = target
        # Each call's cost, made once: it depends on the call's static types only. Keyed by the
        # call's identity (hashing an IR node would walk it); the call is kept alive beside it.
        self._costs: dict[int, tuple[Call, OpCost]] = {}
        self._issue_step: Advance | None = None

    def constant(self, name: str) -> float:
        """The target's cost constant ``name``."""
        try:
            return self.target.cost[name]
        except KeyError:
            raise PlatformError(
                f"target {self.target.name!r} has no cost constant {name!r}",
                hint="add it to the Target's cost mapping",
            ) from None

    def op_cost(self, call: Call) -> OpCost:
        """The unit and modeled cycles of one op executed on a core."""
        known = self._costs.get(id(call))
        if known is not None and known[0] is call:
            return known[1]
        cost_class = get_op(call.op).cost
        rule = _RULES.get(cost_class)
        if rule is None:
            raise PlatformError(f"the a2a3 cost model has no rule for cost class {cost_class!r} ({call.op})")
        cost = rule(self, call)
        self._costs[id(call)] = (call, cost)
        return cost

    def push_cost(self, call: Call, nbytes: int) -> OpCost:
        """A push writing ``nbytes`` out (0 for a data-less token): a handshake plus the bytes."""
        return self._transfer(
            _PUSH_UNIT[call.op], nbytes, "pipe_out_bytes_per_cycle", "pipe_push_handshake_cycles"
        )

    def pop_cost(self, nbytes: int) -> OpCost:
        """A pop reading its ``nbytes`` share into the ring (0 for a token): a flag plus the bytes."""
        return self._transfer("MTE2", nbytes, "pipe_in_bytes_per_cycle", "pipe_flag_cycles")

    def sync_cycles(self) -> int:
        """One flag handshake between two pipes of a core."""
        return ceil(self.constant("pipe_sync_cycles"))

    def issue_cycles(self) -> int:
        """The scalar unit's cycles to hand one op to its pipe."""
        return ceil(self.constant("issue_cycles"))

    def issue_step(self) -> Advance:
        """The scalar unit handing one op to its pipe, as the scheduler sees it (made once)."""
        if self._issue_step is None:
            self._issue_step = Advance.scalar(self.issue_cycles())
        return self._issue_step

    def submit_cycles(self) -> int:
        """The orchestration's cycles to hand one task to the scheduler."""
        return ceil(self.constant("task_submit_cycles"))

    def dispatch_cycles(self, resolves: bool) -> int:
        """The scheduler's cycles to start one block of a task on a free core group, plus resolving
        the task's dependencies when it has any (``resolves``: its first block)."""
        cycles = self.constant("task_schedule_cycles")
        if resolves:
            cycles += self.constant("task_resolve_cycles")
        return ceil(cycles)

    def retire_cycles(self) -> int:
        """The scheduler's cycles from a task's last block finishing to the task completing."""
        return ceil(self.constant("task_complete_cycles"))

    # ------------------------------------------------------------ rules per cost class

    def _operand_bytes(self, call: Call) -> int:
        tiles = [a.type for a in call.args if isinstance(a.type, TileType)]
        result = [call.type] if isinstance(call.type, TileType) else []
        return sum(t.nbytes for t in tiles + result)

    def _transfer(
        self, unit: str, nbytes: float, rate: str, fixed: str | None = None, latency: bool = False
    ) -> OpCost:
        """``nbytes`` at the ``rate`` constant, plus the ``fixed`` constant: a drain or handshake
        that holds the pipe, or (``latency``) a latency the next transfer streams behind."""
        peak = nbytes / self.constant(rate)
        overhead = self.constant(fixed) if fixed else 0
        cycles = ceil(overhead + peak)
        pipelined = min(cycles - 1, ceil(overhead)) if latency else 0
        return OpCost(unit, cycles, peak, ROOF_MEMORY, pipelined)

    def _vector(self, call: Call) -> OpCost:
        peak = self._operand_bytes(call) / self.constant("vector_bytes_per_cycle")
        return OpCost("VECTOR", ceil(peak), peak, ROOF_VECTOR)

    def _vector_slow(self, call: Call) -> OpCost:
        fast = self._operand_bytes(call) / self.constant("vector_bytes_per_cycle")
        peak = fast * self.constant("vector_slow_factor")
        return OpCost("VECTOR", ceil(peak), peak, ROOF_VECTOR)

    def _cube_passes(self, dtype: DataType) -> float:
        if dtype is DataType.FP32:
            return self.constant("cube_fp32_passes")
        if dtype in (DataType.INT8, DataType.UINT8):
            return self.constant("cube_int8_passes")
        return 1.0

    def _matmul(self, call: Call) -> OpCost:
        left = _left_operand(call)
        assert isinstance(left, TileType) and isinstance(call.type, TileType)
        *batch, m, n = call.type.shape  # a batched product: one product per leading index
        k = left.shape[-2] if call.attrs.get("a_trans") else left.shape[-1]
        bm, bn, bk = (self.constant(f"cube_block_{d}") for d in "mnk")
        blocks = prod(batch) * ceil(m / bm) * ceil(n / bn)
        k_blocks = ceil(k / bk)
        mac_cycles = blocks * k_blocks * bm * bn * bk / self.constant("cube_macs_per_cycle")
        peak = mac_cycles * self._cube_passes(left.dtype)
        head = prod(batch) * ceil(k / self.constant("matmul_head_k")) * self.constant("matmul_head_cycles")
        return OpCost("CUBE", ceil(peak + head), peak, ROOF_CUBE)

    def _load(self, call: Call) -> OpCost:
        assert isinstance(call.type, TileType)
        return self._gm_read(tile_bytes(call.type))

    def _gather(self, call: Call) -> OpCost:
        dst = _tile_arg(call)
        return self._gm_read(prod(call.attrs["shape"]) * dst.dtype.nbytes)

    def _gm_read(self, nbytes: int) -> OpCost:
        return self._transfer("MTE2", nbytes, "mte2_bytes_per_cycle", "mte2_latency_cycles", latency=True)

    def _prefetch(self, call: Call) -> OpCost:
        # A GM read of the whole source at the load line, on the MTE2 queue: the engine pulling
        # it into L2 is modeled like a load, and its latency streams behind like a load's.
        return self._gm_read(prefetched_bytes(call))

    def _store(self, call: Call) -> OpCost:
        tile = call.args[0].type
        assert isinstance(tile, TileType)
        if tile.memory_space is Mem.Acc:
            # L0C -> GM drains through FIXPIPE but lands at the GM write rate, the slower of the two.
            rate = min(("fixpipe_bytes_per_cycle", "gm_write_bytes_per_cycle"), key=self.constant)
            return self._transfer("FIXPIPE", tile_bytes(tile), rate, "fixpipe_drain_cycles")
        return self._transfer("MTE3", tile_bytes(tile), "gm_write_bytes_per_cycle")

    def _move(self, call: Call) -> OpCost:
        tile = call.args[0].type
        assert isinstance(tile, TileType) and tile.memory_space is not None
        path = (tile.memory_space, call.attrs["target_memory"])
        if path not in _MOVE_RATES:
            raise PlatformError(f"the a2a3 cost model has no rate for a {path[0].name}->{path[1].name} move")
        unit, rate = _MOVE_RATES[path]
        drain = "fixpipe_drain_cycles" if unit == "FIXPIPE" else None
        return self._transfer(unit, tile_bytes(tile), rate, drain)

    def _sync(self, call: Call) -> OpCost:
        name = _SYNC_CYCLES.get(call.op) or f"syncall_{call.attrs.get('mode', 'hard')}_cycles"
        return OpCost("SCALAR", ceil(self.constant(name)))

    def _scalar(self, call: Call) -> OpCost:
        return OpCost("SCALAR", ceil(self.constant("scalar_op_cycles")))


def _fixed(name: str) -> Callable[[CostModel, Call], OpCost]:
    return lambda model, call: OpCost("SCALAR", ceil(model.constant(name)))


# The rule of each cost class (functions of the model, not its bound methods: a model holding
# its own bound methods would be a reference cycle, freed only by the cyclic collector).
_RULES: dict[str, Callable[[CostModel, Call], OpCost]] = {
    "vector": CostModel._vector,
    "vector_slow": CostModel._vector_slow,
    "matmul": CostModel._matmul,
    "load": CostModel._load,
    "gather": CostModel._gather,
    "prefetch": CostModel._prefetch,
    "scalar_read": _fixed("scalar_gm_read_cycles"),
    "scalar_write": _fixed("scalar_gm_write_cycles"),
    "store": CostModel._store,
    "move": CostModel._move,
    "pipe_init": _fixed("pipe_init_cycles"),
    "pipe_push": lambda model, call: model.push_cost(call, tile_bytes(_tile_arg(call))),
    "pipe_pop": lambda model, call: model.pop_cost(tile_bytes(_result_tile(call))),
    "pipe_free": _fixed("pipe_flag_cycles"),
    "sync": CostModel._sync,
    "none": CostModel._scalar,
}


def _left_operand(call: Call) -> object:
    """A product's left operand: the one before the right (an accumulator and a bias aside)."""
    spec = get_op(call.op)
    names = [o.name for o in spec.operands]
    return call.args[names.index("a")].type if "a" in names else call.args[-2].type


def _tile_arg(call: Call) -> TileType:
    tile = call.args[0].type
    assert isinstance(tile, TileType)
    return tile


def _result_tile(call: Call) -> TileType:
    assert isinstance(call.type, TileType)
    return call.type
