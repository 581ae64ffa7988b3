"""Hand-lowered mixed kernels: what ExpandMixedKernel makes of the seed's ``a @ b + bias`` and kin.

Every program is an orchestration ``<name>_host`` calling a ``Group`` kernel ``<name>`` whose body
calls ``<name>_aic`` then ``<name>_aiv``, as the compiler emits them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from sim_lowered import FP16, FP32, FunctionBuilder, Mem, program, rand, tensor_t

from pypto.ir import Call, DataType, Direction, Function, FunctionKind, Program, SourceSpan, SplitMode, Var
from pypto.ir.nodes import stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import split_shape

C2V, V2C, BOTH = 1, 2, 3
INT32 = DataType.INT32


def span_of(fn: Function, op: str) -> SourceSpan:
    """The span of the first call of ``op`` in ``fn``."""
    for stmt in walk_stmts(fn.body):
        for root in stmt_exprs(stmt):
            for e in walk_expr(root):
                if isinstance(e, Call) and e.op == op:
                    assert e.span is not None
                    return e.span
    raise AssertionError(f"{fn.name} has no {op}")


def at(span: SourceSpan) -> str:
    return f"{span.file}:{span.line}"


def group_program(name: str, aic: Function, aiv: Function) -> Program:
    """``<name>_host(params) -> <name>(params) -> <name>_aic(params); <name>_aiv(params)``."""
    group = FunctionBuilder(name, FunctionKind.Group)
    params = [group.param(p.var.name, p.var.type, p.direction) for p in aic.params]
    group.call(aic.name, *params)
    group.call(aiv.name, *params)
    host = FunctionBuilder(f"{name}_host", FunctionKind.Orchestration)
    host.call(name, *[host.param(p.var.name, p.var.type, p.direction) for p in aic.params])
    return program(host.build(), group.build(), aic, aiv)


def _lane_offsets(b: FunctionBuilder, mode: SplitMode, row: object, lane: Var | None, share: tuple[int, int]):
    """Where lane ``lane``'s share of the row block at ``row`` sits in a GM tensor."""
    if mode is SplitMode.UP_DOWN:
        return [b.scalar("scalar.add", row, b.scalar("scalar.mul", lane, share[0])), 0]
    if mode is SplitMode.LEFT_RIGHT:
        return [row, b.scalar("scalar.mul", lane, share[1])]
    return [row, 0]


@dataclass(frozen=True)
class MatmulBias:
    """``out = a @ b + bias``, streamed in ``blocks`` row blocks of ``rows`` rows through ``mixed_c2v``.

    ``pushes`` / ``pops`` change how many blocks each side handles (default ``blocks``);
    ``free=False`` drops the tfree; ``aiv_slot_size`` gives the AIV side a different setup;
    ``vec_at`` places AIV tiles by hand (e.g. over the ring); ``consumer_work`` adds that many
    slow but exact vector ops (``t / 1.0``) per block, to make the lanes the slow side;
    ``pop_split`` makes the lanes pop with another split than the cube pushes.
    """

    mode: SplitMode = SplitMode.UP_DOWN
    blocks: int = 1
    rows: int = 128
    k: int = 256
    n: int = 128
    slot_num: int = 2
    pushes: int | None = None
    pops: int | None = None
    free: bool = True
    aiv_slot_size: int | None = None
    vec_at: dict[str, int] = field(default_factory=dict)
    consumer_work: int = 0
    pop_split: SplitMode | None = None

    @property
    def slot_size(self) -> int:
        return self.rows * self.n * 4

    @property
    def m(self) -> int:
        return self.blocks * self.rows

    def params(self, b: FunctionBuilder) -> tuple[Var, Var, Var, Var]:
        return (
            b.param("a", tensor_t((self.m, self.k), FP16)),
            b.param("b", tensor_t((self.k, self.n), FP16)),
            b.param("bias", tensor_t((self.m, self.n))),
            b.param("out", tensor_t((self.m, self.n)), Direction.Out),
        )

    def aic(self) -> Function:
        b = FunctionBuilder("mixed_aic", FunctionKind.AIC)
        a_gm, b_gm, _, _ = self.params(b)
        b.do("system.aic_initialize_pipe", dir_mask=C2V, slot_size=self.slot_size, slot_num=self.slot_num)
        b_l1 = b.op("b_l1", "tile.load", b_gm, [0, 0], shape=(self.k, self.n), target_memory=Mem.Mat)
        b_l0 = b.op("b_l0", "tile.move", b_l1, target_memory=Mem.Right)
        with b.loop("i", 0, self.pushes or self.blocks) as i:
            row = b.scalar("scalar.mul", b.scalar("scalar.mod", i, self.blocks), self.rows)
            a_l1 = b.op("a_l1", "tile.load", a_gm, [row, 0], shape=(self.rows, self.k), target_memory=Mem.Mat)
            a_l0 = b.op("a_l0", "tile.move", a_l1, target_memory=Mem.Left)
            acc = b.op("acc", "tile.matmul", a_l0, b_l0, out_dtype=FP32)
            b.do("tile.tpush_to_aiv", acc, split=self.mode)
        return b.build()

    def aiv(self) -> Function:
        b = FunctionBuilder("mixed_aiv", FunctionKind.AIV)
        _, _, bias_gm, out_gm = self.params(b)
        slot_size = self.aiv_slot_size or self.slot_size
        b.do("system.aiv_initialize_pipe", dir_mask=C2V, slot_size=slot_size, slot_num=self.slot_num)
        lane = None if self.mode is SplitMode.NONE else b.op("lane", "tile.get_subblock_idx")
        share = split_shape((self.rows, self.n), self.mode)
        with b.loop("i", 0, self.pops or self.blocks) as i:
            row = b.scalar("scalar.mul", b.scalar("scalar.mod", i, self.blocks), self.rows)
            acc = b.op(
                "acc_vec", "tile.tpop_from_aic", shape=share, dtype=FP32, split=self.pop_split or self.mode
            )
            offsets = _lane_offsets(b, self.mode, row, lane, share)
            bias = b.op("bias_vec", "tile.load", bias_gm, offsets, shape=share, target_memory=Mem.Vec)
            t = b.op("t", "tile.add", acc, bias)
            for step in range(self.consumer_work):
                t = b.op(f"t_{step}", "tile.divs", t, 1.0)
            if self.free:
                b.do("system.tfree_to_aic", acc)
            b.do("tile.store", t, offsets, out_gm)
        ring = self.slot_num * slot_size
        results = {"t": ring} | {f"t_{step}": ring for step in range(self.consumer_work)}
        return b.build(
            at={name: self.vec_at.get("bias_vec", ring) for name in results} | self.vec_at,
            reserve={Mem.Vec: ring},
        )

    def program(self) -> Program:
        return group_program("mixed", self.aic(), self.aiv())

    def args(self, seed: int = 0) -> tuple[torch.Tensor, ...]:
        a = rand(self.m, self.k, dtype=torch.float16, seed=seed)
        b = rand(self.k, self.n, dtype=torch.float16, seed=seed + 1)
        return a, b, rand(self.m, self.n, seed=seed + 2), torch.zeros(self.m, self.n)

    @staticmethod
    def expected(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return a.float() @ b.float() + bias


def scale_then_matmul(mode: SplitMode, slot_num: int = 2) -> Program:
    """dir_mask 2: the lanes compute ``2 * x`` (their shares) and push it; the AIC pops the
    gathered ``[64, 64]`` Mat tile and stores ``(2 * x) @ w``."""
    shape, slot_size = (64, 64), 64 * 64 * 4
    share = split_shape(shape, mode)

    def params(b: FunctionBuilder) -> tuple[Var, Var, Var]:
        return b.param("x", tensor_t(shape)), b.param("w", tensor_t(shape)), b.param("out", tensor_t(shape))

    c = FunctionBuilder("scaled_aic", FunctionKind.AIC)
    _, w_gm, out_gm = params(c)
    c.do("system.aic_initialize_pipe", dir_mask=V2C, slot_size=slot_size, slot_num=slot_num)
    w_l1 = c.op("w_l1", "tile.load", w_gm, [0, 0], shape=shape, target_memory=Mem.Mat)
    w_l0 = c.op("w_l0", "tile.move", w_l1, target_memory=Mem.Right)
    g = c.op("g", "tile.tpop_from_aiv", shape=shape, dtype=FP32, split=mode)
    g_l0 = c.op("g_l0", "tile.move", g, target_memory=Mem.Left)
    c.do("system.tfree_to_aiv", g)
    acc = c.op("acc", "tile.matmul", g_l0, w_l0, out_dtype=FP32)
    c.do("tile.store", acc, [0, 0], out_gm)
    aic = c.build(reserve={Mem.Mat: slot_num * slot_size})

    v = FunctionBuilder("scaled_aiv", FunctionKind.AIV)
    x_gm, _, _ = params(v)
    v.do("system.aiv_initialize_pipe", dir_mask=V2C, slot_size=slot_size, slot_num=slot_num)
    lane = None if mode is SplitMode.NONE else v.op("lane", "tile.get_subblock_idx")
    offsets = _lane_offsets(v, mode, 0, lane, share)
    x = v.op("x_t", "tile.load", x_gm, offsets, shape=share, target_memory=Mem.Vec)
    y = v.op("y_t", "tile.muls", x, 2.0)
    v.do("tile.tpush_to_aic", y, split=mode)
    return group_program("scaled", aic, v.build())


def round_trip(mode: SplitMode = SplitMode.UP_DOWN) -> Program:
    """dir_mask 3: ``out = (a @ b + bias) @ c`` — the sum crosses to the lanes and back."""
    shape, slot_size, slot_num = (64, 64), 64 * 64 * 4, 2
    share = split_shape(shape, mode)

    def params(b: FunctionBuilder) -> list[Var]:
        names = ("a", "b", "bias", "c")
        return [*(b.param(n, tensor_t(shape)) for n in names), b.param("out", tensor_t(shape), Direction.Out)]

    k = FunctionBuilder("trip_aic", FunctionKind.AIC)
    a_gm, b_gm, _, c_gm, out_gm = params(k)
    k.do("system.aic_initialize_pipe", dir_mask=BOTH, slot_size=slot_size, slot_num=slot_num)
    loaded = [
        k.op(f"{t.name}_l1", "tile.load", t, [0, 0], shape=shape, target_memory=Mem.Mat) for t in (a_gm, b_gm)
    ]
    a_l0 = k.op("a_l0", "tile.move", loaded[0], target_memory=Mem.Left)
    b_l0 = k.op("b_l0", "tile.move", loaded[1], target_memory=Mem.Right)
    acc = k.op("acc", "tile.matmul", a_l0, b_l0, out_dtype=FP32)
    k.do("tile.tpush_to_aiv", acc, split=mode)
    c_l1 = k.op("c_l1", "tile.load", c_gm, [0, 0], shape=shape, target_memory=Mem.Mat)
    c_l0 = k.op("c_l0", "tile.move", c_l1, target_memory=Mem.Right)
    s = k.op("s", "tile.tpop_from_aiv", shape=shape, dtype=FP32, split=mode)
    s_l0 = k.op("s_l0", "tile.move", s, target_memory=Mem.Left)
    k.do("system.tfree_to_aiv", s)
    result = k.op("result", "tile.matmul", s_l0, c_l0, out_dtype=FP32)
    k.do("tile.store", result, [0, 0], out_gm)
    aic = k.build(reserve={Mem.Mat: slot_num * slot_size})

    v = FunctionBuilder("trip_aiv", FunctionKind.AIV)
    _, _, bias_gm, _, _ = params(v)
    v.do("system.aiv_initialize_pipe", dir_mask=BOTH, slot_size=slot_size, slot_num=slot_num)
    lane = v.op("lane", "tile.get_subblock_idx")
    offsets = _lane_offsets(v, mode, 0, lane, share)
    popped = v.op("acc_vec", "tile.tpop_from_aic", shape=share, dtype=FP32, split=mode)
    bias = v.op("bias_vec", "tile.load", bias_gm, offsets, shape=share, target_memory=Mem.Vec)
    total = v.op("total", "tile.add", popped, bias)
    v.do("system.tfree_to_aic", popped)
    v.do("tile.tpush_to_aic", total, split=mode)
    return group_program("trip", aic, v.build(reserve={Mem.Vec: slot_num * slot_size}))


def through_gm(
    aic_sync: tuple[str, ...], aiv_sync: tuple[str, ...], used_cores: int | None = None
) -> Program:
    """The AIC stores ``a @ b`` into GM ``tmp``; each lane loads its rows of ``tmp`` and stores
    ``tmp + bias``. ``aic_sync`` / ``aiv_sync`` are the ``system.*`` ops between the store and the
    loads (``"cacheinvalid_rows"``: the lane's rows only). ``used_cores`` makes the syncalls soft,
    over the INT32 workspace parameter ``ws``."""
    shape, half = (64, 64), (32, 64)

    def params(b: FunctionBuilder) -> list[Var]:
        gm = [b.param(n, tensor_t(shape)) for n in ("a", "b", "bias")]
        tmp = b.param("tmp", tensor_t(shape), Direction.InOut)
        return [
            *gm,
            tmp,
            b.param("ws", tensor_t((16,), INT32)),
            b.param("out", tensor_t(shape), Direction.Out),
        ]

    k = FunctionBuilder("gm_aic", FunctionKind.AIC)
    a_gm, b_gm, _, tmp_gm, ws, _ = params(k)
    a_l1 = k.op("a_l1", "tile.load", a_gm, [0, 0], shape=shape, target_memory=Mem.Mat)
    b_l1 = k.op("b_l1", "tile.load", b_gm, [0, 0], shape=shape, target_memory=Mem.Mat)
    a_l0 = k.op("a_l0", "tile.move", a_l1, target_memory=Mem.Left)
    b_l0 = k.op("b_l0", "tile.move", b_l1, target_memory=Mem.Right)
    acc = k.op("acc", "tile.matmul", a_l0, b_l0, out_dtype=FP32)
    k.do("tile.store", acc, [0, 0], tmp_gm)
    for op in aic_sync:
        _sync_op(k, op, ws, used_cores)

    v = FunctionBuilder("gm_aiv", FunctionKind.AIV)
    _, _, bias_gm, tmp_gm, ws, out_gm = params(v)
    row = v.scalar("scalar.mul", v.op("lane", "tile.get_subblock_idx"), half[0])
    for op in aiv_sync:
        if op == "cacheinvalid_rows":
            v.do("system.cacheinvalid", tmp_gm, [row, 0], shape=half)
        else:
            _sync_op(v, op, ws, used_cores)
    t = v.op("t", "tile.load", tmp_gm, [row, 0], shape=half, target_memory=Mem.Vec)
    bias = v.op("bias_t", "tile.load", bias_gm, [row, 0], shape=half, target_memory=Mem.Vec)
    v.do("tile.store", v.op("sum", "tile.add", t, bias), [row, 0], out_gm)
    return group_program("gm", k.build(), v.build())


def _sync_op(b: FunctionBuilder, op: str, ws: Var, used_cores: int | None) -> None:
    if op == "syncall" and used_cores is not None:
        b.do("system.syncall", ws, mode="soft", used_cores=used_cores)
    else:
        b.do(f"system.{op}")


def gm_args(ws: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
    """Arguments of :func:`through_gm`: a, b, bias, tmp, ws, out."""
    a, b, bias = rand(64, 64, seed=1), rand(64, 64, seed=2), rand(64, 64, seed=3)
    workspace = torch.zeros(16, dtype=torch.int32) if ws is None else ws
    return a, b, bias, torch.zeros(64, 64), workspace, torch.zeros(64, 64)
