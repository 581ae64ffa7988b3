"""The cost model: each op becomes modeled cycles on one hardware unit.

Rules are keyed by the op table's cost class (``OpDef.cost``) and read every constant from
``Target.cost`` by name, so another target only needs other numbers. All figures are modeled
cycles, never measurements.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import ceil, prod

from pypto.ir import Call, DataType, MemorySpace, PlatformError, Target, TileType, get_op

Mem = MemorySpace


@dataclass(frozen=True)
class OpCost:
    """``cycles`` modeled cycles on ``unit`` (e.g. "CUBE", "VECTOR", "MTE2", "FIXPIPE")."""

    unit: str
    cycles: int


# On-chip move path -> (unit, bytes-per-cycle constant); FIXPIPE paths also pay a drain.
_MOVE_RATES: dict[tuple[MemorySpace, MemorySpace], tuple[str, str]] = {
    (Mem.Mat, Mem.Left): ("MTE1", "l1_to_l0a_bytes_per_cycle"),
    (Mem.Mat, Mem.Right): ("MTE1", "l1_to_l0b_bytes_per_cycle"),
    (Mem.Mat, Mem.Bias): ("MTE1", "l1_to_bt_bytes_per_cycle"),
    (Mem.Acc, Mem.Mat): ("FIXPIPE", "fixpipe_bytes_per_cycle"),
}

# Push op -> (the producer's outgoing unit, bytes-per-cycle constant of the whole crossing).
_PUSH_RATES: dict[str, tuple[str, str]] = {
    "tpush_to_aiv": ("FIXPIPE", "pipe_c2v_bytes_per_cycle"),
    "tpush_to_aic": ("MTE3", "pipe_v2c_bytes_per_cycle"),
}

# system.* op -> its constant (syncall's depends on its mode).
_SYNC_CYCLES: dict[str, str] = {
    "system.fence": "fence_cycles",
    "system.cacheinvalid": "cacheinvalid_cycles",
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
        self._rules: dict[str, Callable[[Call], OpCost]] = {
            "vector": self._vector,
            "vector_slow": self._vector_slow,
            "matmul": self._matmul,
            "load": self._load,
            "gather": self._gather,
            "scalar_read": self._fixed("scalar_gm_read_cycles"),
            "store": self._store,
            "move": self._move,
            "pipe_init": self._fixed("pipe_init_cycles"),
            "pipe_push": lambda call: self.push_cost(call, tile_bytes(_tile_arg(call))),
            "pipe_pop": self._fixed("pipe_flag_cycles"),
            "pipe_free": self._fixed("pipe_flag_cycles"),
            "sync": self._sync,
            "none": self._scalar,
        }

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
        cost_class = get_op(call.op).cost
        if cost_class not in self._rules:
            raise PlatformError(f"the a2a3 cost model has no rule for cost class {cost_class!r} ({call.op})")
        return self._rules[cost_class](call)

    def push_cost(self, call: Call, nbytes: int) -> OpCost:
        """A pipe push moving ``nbytes`` (0 for a data-less token): handshake plus bytes at the rate."""
        unit, rate = _PUSH_RATES[call.op]
        transfer = nbytes / self.constant(rate)
        return OpCost(unit, ceil(self.constant("pipe_push_handshake_cycles") + transfer))

    def launch_cycles(self, after_another_task: bool) -> int:
        """Host-side cycles from issuing a task to its kernel starting on a core group."""
        cycles = self.constant("task_submit_cycles") + self.constant("task_schedule_cycles")
        if after_another_task:
            cycles += self.constant("task_resolve_cycles")
        return ceil(cycles)

    def retire_cycles(self) -> int:
        """Cycles from a task's last core finishing to the host seeing it complete."""
        return ceil(self.constant("task_complete_cycles"))

    # ------------------------------------------------------------ rules per cost class

    def _operand_bytes(self, call: Call) -> int:
        tiles = [a.type for a in call.args if isinstance(a.type, TileType)]
        result = [call.type] if isinstance(call.type, TileType) else []
        return sum(t.nbytes for t in tiles + result)

    def _vector(self, call: Call) -> OpCost:
        return OpCost("VECTOR", ceil(self._operand_bytes(call) / self.constant("vector_bytes_per_cycle")))

    def _vector_slow(self, call: Call) -> OpCost:
        fast = self._operand_bytes(call) / self.constant("vector_bytes_per_cycle")
        return OpCost("VECTOR", ceil(fast * self.constant("vector_slow_factor")))

    def _cube_passes(self, dtype: DataType) -> float:
        if dtype is DataType.FP32:
            return self.constant("cube_fp32_passes")
        if dtype in (DataType.INT8, DataType.UINT8):
            return self.constant("cube_int8_passes")
        return 1.0

    def _matmul(self, call: Call) -> OpCost:
        left = call.args[-2].type
        assert isinstance(left, TileType) and isinstance(call.type, TileType)
        m, n = call.type.shape
        k = left.shape[0] if call.attrs.get("a_trans") else left.shape[1]
        bm, bn, bk = (self.constant(f"cube_block_{d}") for d in "mnk")
        blocks = ceil(m / bm) * ceil(n / bn)
        k_blocks = ceil(k / bk)
        mac_cycles = blocks * k_blocks * bm * bn * bk / self.constant("cube_macs_per_cycle")
        head = k_blocks * self.constant("matmul_head_cycles")
        return OpCost("CUBE", ceil(mac_cycles * self._cube_passes(left.dtype) + head))

    def _load(self, call: Call) -> OpCost:
        assert isinstance(call.type, TileType)
        transfer = tile_bytes(call.type) / self.constant("mte2_bytes_per_cycle")
        return OpCost("MTE2", ceil(self.constant("mte2_latency_cycles") + transfer))

    def _gather(self, call: Call) -> OpCost:
        dst = _tile_arg(call)
        nbytes = prod(call.attrs["shape"]) * dst.dtype.nbytes
        return OpCost(
            "MTE2",
            ceil(self.constant("mte2_latency_cycles") + nbytes / self.constant("mte2_bytes_per_cycle")),
        )

    def _store(self, call: Call) -> OpCost:
        tile = call.args[0].type
        assert isinstance(tile, TileType)
        if tile.memory_space is Mem.Acc:
            return self._fixpipe(tile_bytes(tile))
        return OpCost("MTE3", ceil(tile_bytes(tile) / self.constant("mte3_bytes_per_cycle")))

    def _fixpipe(self, nbytes: int) -> OpCost:
        transfer = nbytes / self.constant("fixpipe_bytes_per_cycle")
        return OpCost("FIXPIPE", ceil(self.constant("fixpipe_drain_cycles") + transfer))

    def _move(self, call: Call) -> OpCost:
        tile = call.args[0].type
        assert isinstance(tile, TileType) and tile.memory_space is not None
        path = (tile.memory_space, call.attrs["target_memory"])
        if path not in _MOVE_RATES:
            raise PlatformError(f"the a2a3 cost model has no rate for a {path[0].name}->{path[1].name} move")
        unit, rate = _MOVE_RATES[path]
        if unit == "FIXPIPE":
            return self._fixpipe(tile_bytes(tile))
        return OpCost(unit, ceil(tile_bytes(tile) / self.constant(rate)))

    def _fixed(self, name: str) -> Callable[[Call], OpCost]:
        return lambda call: OpCost("SCALAR", ceil(self.constant(name)))

    def _sync(self, call: Call) -> OpCost:
        if call.op == "system.syncall":
            name = f"syncall_{call.attrs.get('mode', 'hard')}_cycles"
        else:
            name = _SYNC_CYCLES[call.op]
        return OpCost("SCALAR", ceil(self.constant(name)))

    def _scalar(self, call: Call) -> OpCost:
        return OpCost("SCALAR", ceil(self.constant("scalar_op_cycles")))


def _tile_arg(call: Call) -> TileType:
    tile = call.args[0].type
    assert isinstance(tile, TileType)
    return tile
