"""The a2a3 chip (Ascend A2/A3, "dav-c220") as a :class:`pypto.ir.Target`.

Every a2a3 figure the simulator uses lives here; the rest of the package reads them from the
target, so a second target can differ. Throughputs are modeling constants, not measurements.
"""

from __future__ import annotations

from enum import Enum

from pypto.ir import MemorySpace, MemorySpec, Target

Mem = MemorySpace

# The MTE2 (GM -> L1/UB) line runs through the vendor cost model's two reference loads:
# 64 KiB ~ 2090 cycles and 128 KiB ~ 2775 cycles.
_MTE2_REF_SMALL = (65536, 2090)
_MTE2_REF_LARGE = (131072, 2775)
_MTE2_BYTES_PER_CYCLE = (_MTE2_REF_LARGE[0] - _MTE2_REF_SMALL[0]) / (_MTE2_REF_LARGE[1] - _MTE2_REF_SMALL[1])
_MTE2_LATENCY_CYCLES = _MTE2_REF_SMALL[1] - _MTE2_REF_SMALL[0] / _MTE2_BYTES_PER_CYCLE

A2A3_COST: dict[str, float] = {
    # cube: one 16x16x16 fp16 block (4096 MACs) per cycle; fp32 inputs take 2 passes, int8 half a pass
    "cube_block_m": 16,
    "cube_block_n": 16,
    "cube_block_k": 16,
    "cube_macs_per_cycle": 4096,
    "cube_fp32_passes": 2,
    "cube_int8_passes": 0.5,
    "matmul_head_cycles": 21,  # per K-block of a matmul instruction
    # vector: operand bytes per cycle for simple elementwise ops; exp/log/sqrt/div are slower
    "vector_bytes_per_cycle": 256,
    "vector_slow_factor": 4,
    # data movement
    "mte2_latency_cycles": _MTE2_LATENCY_CYCLES,  # 1405
    "mte2_bytes_per_cycle": _MTE2_BYTES_PER_CYCLE,  # ~95.7
    "gm_write_bytes_per_cycle": 64,  # UB -> GM (MTE3) and L0C -> GM (FIXPIPE out)
    "l1_to_l0a_bytes_per_cycle": 130,
    "l1_to_l0b_bytes_per_cycle": 85,
    "l1_to_bt_bytes_per_cycle": 85,  # no published figure; assumed like L1->L0B
    "fixpipe_bytes_per_cycle": 118,
    "fixpipe_drain_cycles": 164,
    "scalar_op_cycles": 1,
    "scalar_gm_read_cycles": 200,  # assumed: one scalar load from GM through the scalar data cache
    # cross-core pipes go through L2 on a2a3: the producer writes its tile out (C->V by FIXPIPE,
    # V->C by MTE3) and sets the ready flag; the consumer waits for the flag and reads its share
    # into the ring slot in its own memory. Each side's transfer is busy time on its own core.
    "pipe_out_bytes_per_cycle": 86,  # L2 write (~86), slower than FIXPIPE's own ~118
    "pipe_in_bytes_per_cycle": 110,  # L2-hit read into UB or L1 (~110)
    "pipe_push_handshake_cycles": 164,  # assumed: a drain like FIXPIPE's plus setting the ready flag
    "pipe_flag_cycles": 20,  # assumed: one cross-core flag wait or set (tpop, tfree)
    "pipe_init_cycles": 40,  # assumed: resetting the slot flags of both directions
    # cross-core ordering through GM (assumed figures, no published ones)
    "fence_cycles": 30,  # drain the core's outstanding memory pipes
    "cacheinvalid_cycles": 120,  # write back / invalidate the core's data cache lines
    "syncall_hard_cycles": 100,  # hardware cross-core barrier after the last arrival
    "syncall_soft_cycles": 600,  # barrier through atomics on a GM workspace: a few GM round trips
    # AICPU task dispatch
    "task_submit_cycles": 100,
    "task_schedule_cycles": 200,
    "task_resolve_cycles": 390,
    "task_complete_cycles": 240,
}

A2A3_TARGET = Target(
    name="a2a3",
    core_groups=24,
    aic_per_group=1,
    aiv_per_group=2,
    clock_mhz=1850,
    memory={
        Mem.Vec: MemorySpec(capacity=196608, usable=188416, alignment=32),
        Mem.Mat: MemorySpec(capacity=524288, usable=524288, alignment=32),
        Mem.Left: MemorySpec(capacity=65536, usable=65536, alignment=32),
        Mem.Right: MemorySpec(capacity=65536, usable=65536, alignment=32),
        Mem.Acc: MemorySpec(capacity=131072, usable=131072, alignment=32),
        Mem.Bias: MemorySpec(capacity=1024, usable=1024, alignment=32),
    },
    data_paths=frozenset(
        {
            (Mem.DDR, Mem.Vec),
            (Mem.DDR, Mem.Mat),
            (Mem.Vec, Mem.DDR),
            (Mem.Mat, Mem.Left),
            (Mem.Mat, Mem.Right),
            (Mem.Mat, Mem.Bias),
            (Mem.Acc, Mem.Mat),
            (Mem.Acc, Mem.DDR),
        }
    ),
    max_pipe_slots=8,
    default_slot_num=2,
    cost=A2A3_COST,
)


class CoreKind(Enum):
    """The two kinds of core in a core group."""

    AIC = "AIC"  # cube core
    AIV = "AIV"  # vector core


# Which on-chip memory spaces each kind of core owns.
CORE_MEMORY_SPACES: dict[CoreKind, tuple[MemorySpace, ...]] = {
    CoreKind.AIC: (Mem.Mat, Mem.Left, Mem.Right, Mem.Acc, Mem.Bias),
    CoreKind.AIV: (Mem.Vec,),
}
