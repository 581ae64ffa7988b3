"""The later blocks of a replayed spmd launch walk their numbers together (:mod:`pypto_sim_a2a3.fast.batch`):
which kernels may, and that the numbers, reports and errors are the ones every block's own walk
gives (the batch off) and the full engine gives (``PYPTO_SIM_REPLAY=off``)."""

from __future__ import annotations

import threading

import pytest
import torch
from sim_lowered import FP16, FP32, INT32, FunctionBuilder, Mem, program, rand, run, tensor_t

from pypto.ir import Direction, FunctionKind, PyptoError
from pypto.ir.launch import LoadedProgram
from pypto_sim_a2a3.fast import batch, replay
from pypto_sim_a2a3.fast.batch import Lanes, Unbatchable, batchable

COLS = 64


def _launch(kernel, params, blocks: int):
    b = FunctionBuilder("host", FunctionKind.Orchestration)
    args = [b.param(name, t, d) for name, t, d in params]
    b.call(kernel.name, *args, block_num=blocks)
    return program(b.build(), kernel)


def _rows_kernel(rows: int, op: str = "tile.exp", chunk: int = 16, cols: int = COLS, scale_by_block=False):
    """``out[block rows] = op(a[block rows])`` in chunks of ``chunk`` rows (two per block)."""
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((rows, cols)))
    out = k.param("out", tensor_t((rows, cols)), Direction.Out)
    block = k.op("block", "get_block_idx")
    base = k.op("base", "scalar.mul", block, 2 * chunk)
    with k.loop("c", 0, 2) as c:
        row = k.scalar("scalar.add", base, k.scalar("scalar.mul", c, chunk))
        x = k.op("x", "tile.load", a, [row, 0], shape=(chunk, cols), target_memory=Mem.Vec)
        y = k.op("y", op, x)
        if scale_by_block:
            y = k.op("z", "tile.muls", y, k.op("f", "scalar.cast", block, dtype=FP32))
        k.do("tile.store", y, [row, 0], out)
    return k.build()


def _params(rows: int, cols: int = COLS):
    return [("a", tensor_t((rows, cols)), Direction.In), ("out", tensor_t((rows, cols)), Direction.Out)]


def _walked(monkeypatch) -> list[int]:
    """The number of blocks of each batch walked."""
    batches: list[int] = []
    original = replay.walk_batch

    def counting(plan, placements, blocks, *args):
        frames = original(plan, placements, blocks, *args)
        batches.append(len(blocks))
        return frames

    monkeypatch.setattr(replay, "walk_batch", counting)
    return batches


def _three_ways(monkeypatch, prog, *args):
    """The report (or error) and the arguments after a run batched, one by one, on the full engine."""
    outcomes = []
    for mode, batched in (("on", True), ("on", False), ("off", True)):
        monkeypatch.setenv("PYPTO_SIM_REPLAY", mode)
        monkeypatch.setenv("PYPTO_SIM_BATCH", "on" if batched else "off")
        copies = [a.clone() for a in args]
        try:
            outcomes.append((run(prog, *copies), copies))
        except PyptoError as error:
            outcomes.append((error, copies))
    monkeypatch.undo()
    return outcomes


def _same(outcomes) -> None:
    """The same report and arguments after each run, or the same error."""
    (first, first_args), *rest = outcomes
    for other, other_args in rest:
        if isinstance(first, PyptoError):
            assert type(other) is type(first)
            assert (other.message, other.span, other.hint) == (first.message, first.span, first.hint)
            continue  # what GM holds after a failed run is not the contract: blocks write it early
        else:
            for field in ("total_cycles", "tasks", "busy_cycles", "stall_cycles", "timeline", "heaps"):
                assert getattr(other, field) == getattr(first, field), field
        for mine, theirs in zip(first_args, other_args, strict=True):
            assert torch.equal(mine, theirs)


def test_the_later_blocks_walk_together_and_compute_what_each_alone_does(monkeypatch):
    blocks = 40  # more than the 24 core groups, and more than one batch
    rows = blocks * 32
    walked = _walked(monkeypatch)
    prog = _launch(_rows_kernel(rows, scale_by_block=True), _params(rows), blocks)
    x = rand(rows, COLS)
    outcomes = _three_ways(monkeypatch, prog, x, torch.zeros_like(x))
    assert walked == [batch.BATCH_BLOCKS, blocks - 1 - batch.BATCH_BLOCKS]  # blocks 1-32, 33-39
    _same(outcomes)
    scale = torch.arange(blocks).repeat_interleave(32).float()[:, None]
    assert torch.equal(outcomes[0][1][1], x.exp() * scale)


def _two_step_matmul(blocks: int, m: int, kk: int, n: int, at=None, overwrite_w=False):
    """``c[block rows] = a[block rows] @ w`` in two K steps (a matmul, then a matmul_acc); with
    ``overwrite_w``, a tile of each block's own rows of ``p`` is loaded over the first slice of ``w``
    in L1 before that slice is moved on (so what is moved differs between the blocks)."""
    k = FunctionBuilder("mm2", FunctionKind.AIC)
    a = k.param("a", tensor_t((blocks * m, kk), FP16))
    w = k.param("w", tensor_t((kk, n), FP16))
    p = k.param("p", tensor_t((blocks * kk // 2, n), FP16))
    c = k.param("c", tensor_t((blocks * m, n)), Direction.Out)
    block = k.op("block", "get_block_idx")
    row = k.op("row", "scalar.mul", block, m)
    half = (kk // 2, n)
    a_l1 = k.op("a_l1", "tile.load", a, [row, 0], shape=(m, kk // 2), target_memory=Mem.Mat, dtype=FP16)
    w_l1 = k.op("w_l1", "tile.load", w, [0, 0], shape=half, target_memory=Mem.Mat, dtype=FP16)
    if overwrite_w:
        p_row = k.op("p_row", "scalar.mul", block, kk // 2)
        k.op("p_l1", "tile.load", p, [p_row, 0], shape=half, target_memory=Mem.Mat, dtype=FP16)
    a2_l1 = k.op(
        "a2_l1", "tile.load", a, [row, kk // 2], shape=(m, kk // 2), target_memory=Mem.Mat, dtype=FP16
    )
    w2_l1 = k.op("w2_l1", "tile.load", w, [kk // 2, 0], shape=half, target_memory=Mem.Mat, dtype=FP16)
    a_l0 = k.op("a_l0", "tile.move", a_l1, target_memory=Mem.Left)
    w_l0 = k.op("w_l0", "tile.move", w_l1, target_memory=Mem.Right)
    acc = k.op("acc", "tile.matmul", a_l0, w_l0, out_dtype=FP32)
    a2_l0 = k.op("a2_l0", "tile.move", a2_l1, target_memory=Mem.Left)
    w2_l0 = k.op("w2_l0", "tile.move", w2_l1, target_memory=Mem.Right)
    acc2 = k.op("acc2", "tile.matmul_acc", acc, a2_l0, w_l0 if overwrite_w else w2_l0)
    k.do("tile.store", acc2, [row, 0], c)
    params = [
        ("a", tensor_t((blocks * m, kk), FP16), Direction.In),
        ("w", tensor_t((kk, n), FP16), Direction.In),
        ("p", tensor_t((blocks * kk // 2, n), FP16), Direction.In),
        ("c", tensor_t((blocks * m, n)), Direction.Out),
    ]
    prog = _launch(k.build(at=at), params, blocks)
    x = rand(blocks * m, kk, dtype=torch.float16)
    y = rand(kk, n, dtype=torch.float16, seed=1)
    z = rand(blocks * kk // 2, n, dtype=torch.float16, seed=2)
    return prog, (x, y, z, torch.zeros(blocks * m, n))


def _one_rights(monkeypatch) -> list[bool]:
    """Per matmul of a batch whose right operand every block shares: whether it was one product."""
    seen: list[bool] = []
    original = batch._one_right

    def spying(*args):
        product = original(*args)
        seen.append(product is not None)
        return product

    monkeypatch.setattr(batch, "_one_right", spying)
    return seen


def test_a_matmul_over_the_blocks_is_each_blocks_own_bit_for_bit_and_one_product_for_a_shared_w(
    monkeypatch,
):
    blocks, m, kk, n = 6, 16, 64, 32
    layouts: dict = {}
    monkeypatch.setattr(batch, "_ONE_RIGHT", layouts)  # compared with each block's own product first
    seen = _one_rights(monkeypatch)
    walked = _walked(monkeypatch)
    prog, args = _two_step_matmul(blocks, m, kk, n)
    outcomes = _three_ways(monkeypatch, prog, *args)
    assert walked == [blocks - 1] and seen == [True, True]  # w's slices are the same in every block
    assert list(layouts.values()) == [True]
    _same(outcomes)
    x, y = args[0], args[1]
    torch.testing.assert_close(outcomes[0][1][3], x.float() @ y.float(), rtol=1e-3, atol=1e-3)


def test_a_transposed_weight_every_block_shares_is_one_product_too(monkeypatch):
    """``c[block rows] = a[block rows] @ w.T`` with w stored [n, k] (as a linear layer's weight),
    its slices moved to L0B and multiplied with b_trans: one product, each block's bits."""
    blocks, m, kk, n = 5, 16, 64, 32
    k = FunctionBuilder("mm_t", FunctionKind.AIC)
    a = k.param("a", tensor_t((blocks * m, kk), FP16))
    w = k.param("w", tensor_t((n, kk), FP16))
    c = k.param("c", tensor_t((blocks * m, n)), Direction.Out)
    row = k.op("row", "scalar.mul", k.op("block", "get_block_idx"), m)
    acc = None
    for i in range(2):
        a_l1 = k.op(
            f"a{i}", "tile.load", a, [row, i * kk // 2], shape=(m, kk // 2), target_memory=Mem.Mat, dtype=FP16
        )
        w_l1 = k.op(
            f"w{i}", "tile.load", w, [0, i * kk // 2], shape=(n, kk // 2), target_memory=Mem.Mat, dtype=FP16
        )
        a_l0 = k.op(f"a{i}_l0", "tile.move", a_l1, target_memory=Mem.Left)
        w_l0 = k.op(f"w{i}_l0", "tile.move", w_l1, target_memory=Mem.Right)
        if acc is None:
            acc = k.op("acc", "tile.matmul", a_l0, w_l0, out_dtype=FP32, b_trans=True)
        else:
            acc = k.op("acc2", "tile.matmul_acc", acc, a_l0, w_l0, b_trans=True)
    k.do("tile.store", acc, [row, 0], c)
    params = [
        ("a", tensor_t((blocks * m, kk), FP16), Direction.In),
        ("w", tensor_t((n, kk), FP16), Direction.In),
        ("c", tensor_t((blocks * m, n)), Direction.Out),
    ]
    seen = _one_rights(monkeypatch)
    walked = _walked(monkeypatch)
    prog = _launch(k.build(), params, blocks)
    x, y = rand(blocks * m, kk, dtype=torch.float16), rand(n, kk, dtype=torch.float16, seed=1)
    outcomes = _three_ways(monkeypatch, prog, x, y, torch.zeros(blocks * m, n))
    assert walked == [blocks - 1] and len(seen) == 2  # the matmul and the matmul_acc (both True here)
    _same(outcomes)
    torch.testing.assert_close(outcomes[0][1][2], x.float() @ y.float().T, rtol=1e-3, atol=1e-3)


def test_where_one_product_would_round_otherwise_each_block_multiplies_its_own(monkeypatch):
    layouts: dict = {}
    monkeypatch.setattr(batch, "_ONE_RIGHT", layouts)
    monkeypatch.setattr(batch, "_same_bits", lambda x, y: False)  # as if the library rounded otherwise
    seen = _one_rights(monkeypatch)
    prog, args = _two_step_matmul(6, 16, 64, 32)
    outcomes = _three_ways(monkeypatch, prog, *args)
    assert seen == [False, False] and list(layouts.values()) == [False]  # (one layout: compared once)
    _same(outcomes)


@pytest.mark.parametrize("over", ["all", "half"])
def test_a_shared_tile_written_over_by_one_that_differs_between_blocks_is_no_longer_shared(monkeypatch, over):
    """p's rows, its own in each block, are loaded over w's first slice in L1 (all of it, or its
    second half and beyond) before that slice is moved on: the moved tile, a matmul's right operand,
    differs between the blocks (and, where p left it, is w's in every block)."""
    blocks, m, kk, n = 5, 16, 64, 32
    half_bytes = kk // 2 * n * 2
    p_at = 4 * half_bytes + (half_bytes // 2 if over == "half" else 0)
    seen = _one_rights(monkeypatch)
    walked = _walked(monkeypatch)
    prog, args = _two_step_matmul(
        blocks, m, kk, n, at={"w_l1": 4 * half_bytes, "p_l1": p_at}, overwrite_w=True
    )
    outcomes = _three_ways(monkeypatch, prog, *args)
    assert walked == [blocks - 1] and seen == []  # never taken for shared
    _same(outcomes)
    if over == "half":
        return
    x, z = args[0], args[2]
    expected = torch.cat(
        [
            x[i * m : (i + 1) * m].float() @ z[i * kk // 2 : (i + 1) * kk // 2].float().repeat(2, 1)
            for i in range(blocks)
        ]
    )
    torch.testing.assert_close(outcomes[0][1][3], expected, rtol=1e-3, atol=1e-3)


def test_a_tile_every_block_loads_alike_is_read_whole_by_the_ops_that_read_every_block(monkeypatch):
    """A tile loaded from where no block's offsets differ is held in block 0's row alone until an
    op reads it: here an elementwise op and a store, per block."""
    blocks, rows, chunk = 5, 5 * 16, 16
    k = FunctionBuilder("alike", FunctionKind.AIV)
    w = k.param("w", tensor_t((chunk, COLS)))
    a = k.param("a", tensor_t((rows, COLS)))
    out = k.param("out", tensor_t((rows, COLS)), Direction.Out)
    row = k.op("row", "scalar.mul", k.op("block", "get_block_idx"), chunk)
    shared_tile = k.op("w_v", "tile.load", w, [0, 0], shape=(chunk, COLS), target_memory=Mem.Vec)
    x = k.op("x", "tile.load", a, [row, 0], shape=(chunk, COLS), target_memory=Mem.Vec)
    k.do("tile.store", k.op("y", "tile.add", x, shared_tile), [row, 0], out)
    params = [
        ("w", tensor_t((chunk, COLS)), Direction.In),
        ("a", tensor_t((rows, COLS)), Direction.In),
        ("out", tensor_t((rows, COLS)), Direction.Out),
    ]
    filled = []
    original = batch.BatchMemory._fill
    monkeypatch.setattr(batch.BatchMemory, "_fill", lambda self, r: (filled.append(r), original(self, r)))
    walked = _walked(monkeypatch)
    prog = _launch(k.build(), params, blocks)
    wv, x = rand(chunk, COLS, seed=3), rand(rows, COLS)
    outcomes = _three_ways(monkeypatch, prog, wv, x, torch.zeros_like(x))
    assert walked == [blocks - 1] and len(filled) == 1  # filled once, for the add
    _same(outcomes)
    assert torch.equal(outcomes[0][1][2], x + wv.repeat(blocks, 1))


def test_a_left_operand_converted_once_is_converted_again_once_its_bytes_change(monkeypatch):
    """a2's slice is moved into L0A over a's, which the first matmul converted to fp32: the second
    matmul converts a2's, not the bytes a's left there."""
    blocks, m, kk, n = 5, 16, 64, 32
    walked = _walked(monkeypatch)
    prog, args = _two_step_matmul(blocks, m, kk, n, at={"a_l0": 0, "a2_l0": 0})
    outcomes = _three_ways(monkeypatch, prog, *args)
    assert walked == [blocks - 1]
    _same(outcomes)
    x, y = args[0], args[1]
    torch.testing.assert_close(outcomes[0][1][3], x.float() @ y.float(), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("placed", ["over_acc", "elsewhere", "half_over_acc"])
def test_an_accumulating_matmul_writes_its_tile_as_each_block_does_wherever_it_lies(monkeypatch, placed):
    """The batch's matmuls write their results in their tiles' bytes themselves: a matmul_acc when
    they are the accumulator's or share none with it (half over it, it computes aside). Either way
    bit for bit each block's own numbers."""
    m, kk, n, blocks = 16, 32, 64, 5
    k = FunctionBuilder("mm_acc", FunctionKind.AIC)
    a = k.param("a", tensor_t((blocks * m, 2 * kk), FP16))
    w = k.param("w", tensor_t((2 * kk, n), FP16))
    c = k.param("c", tensor_t((blocks * m, n)), Direction.Out)
    row = k.op("row", "scalar.mul", k.op("block", "get_block_idx"), m)
    left = [
        k.op(
            f"a{i}_l0",
            "tile.move",
            k.op(f"a{i}", "tile.load", a, [row, i * kk], shape=(m, kk), target_memory=Mem.Mat, dtype=FP16),
            target_memory=Mem.Left,
        )
        for i in range(2)
    ]
    right = [
        k.op(
            f"w{i}_l0",
            "tile.move",
            k.op(f"w{i}", "tile.load", w, [i * kk, 0], shape=(kk, n), target_memory=Mem.Mat, dtype=FP16),
            target_memory=Mem.Right,
        )
        for i in range(2)
    ]
    acc = k.op("acc", "tile.matmul", left[0], right[0], out_dtype=FP32)
    acc2 = k.op("acc2", "tile.matmul_acc", acc, left[1], right[1])
    k.do("tile.store", acc2, [row, 0], c)
    tile_bytes = m * n * 4
    at = {"over_acc": 0, "elsewhere": tile_bytes, "half_over_acc": tile_bytes // 2}[placed]
    kernel = k.build(at={"acc": 0, "acc2": at})
    params = [
        ("a", tensor_t((blocks * m, 2 * kk), FP16), Direction.In),
        ("w", tensor_t((2 * kk, n), FP16), Direction.In),
        ("c", tensor_t((blocks * m, n)), Direction.Out),
    ]
    in_place = []
    original = batch.BatchFrame.into

    def into(frame, call, *operands, **options):
        dest = original(frame, call, *operands, **options)
        in_place.append(dest is not None)
        return dest

    monkeypatch.setattr(batch.BatchFrame, "into", into)
    walked = _walked(monkeypatch)
    prog = _launch(kernel, params, blocks)
    x, y = rand(blocks * m, 2 * kk, dtype=torch.float16), rand(2 * kk, n, dtype=torch.float16, seed=1)
    outcomes = _three_ways(monkeypatch, prog, x, y, torch.zeros(blocks * m, n))
    assert walked == [blocks - 1]
    # The matmul is one product (w is every block's: _one_right), copied in; the matmul_acc writes in
    # place unless its tile shares bytes with the accumulator without being it.
    assert in_place == [placed != "half_over_acc"]
    _same(outcomes)
    torch.testing.assert_close(outcomes[0][1][2], x.float() @ y.float(), rtol=1e-3, atol=1e-3)


def test_a_matmul_with_a_bias_row_writes_its_tile_as_each_block_does(monkeypatch):
    m, kk, n, blocks = 16, 32, 64, 5
    k = FunctionBuilder("mm_bias", FunctionKind.AIC)
    a = k.param("a", tensor_t((blocks * m, kk), FP16))
    w = k.param("w", tensor_t((kk, n), FP16))
    bias = k.param("bias", tensor_t((blocks, n)))
    c = k.param("c", tensor_t((blocks * m, n)), Direction.Out)
    block = k.op("block", "get_block_idx")
    row = k.op("row", "scalar.mul", block, m)
    a_l1 = k.op("a_l1", "tile.load", a, [row, 0], shape=(m, kk), target_memory=Mem.Mat, dtype=FP16)
    w_l1 = k.op("w_l1", "tile.load", w, [0, 0], shape=(kk, n), target_memory=Mem.Mat, dtype=FP16)
    b_l1 = k.op("b_l1", "tile.load", bias, [block, 0], shape=(1, n), target_memory=Mem.Mat)
    a_l0 = k.op("a_l0", "tile.move", a_l1, target_memory=Mem.Left)
    w_l0 = k.op("w_l0", "tile.move", w_l1, target_memory=Mem.Right)
    b_bt = k.op("b_bt", "tile.move", b_l1, target_memory=Mem.Bias)
    out = k.op("out", "tile.matmul_bias", a_l0, w_l0, b_bt)
    k.do("tile.store", out, [row, 0], c)
    params = [
        ("a", tensor_t((blocks * m, kk), FP16), Direction.In),
        ("w", tensor_t((kk, n), FP16), Direction.In),
        ("bias", tensor_t((blocks, n)), Direction.In),
        ("c", tensor_t((blocks * m, n)), Direction.Out),
    ]
    walked = _walked(monkeypatch)
    prog = _launch(k.build(), params, blocks)
    x, y = rand(blocks * m, kk, dtype=torch.float16), rand(kk, n, dtype=torch.float16, seed=1)
    z = rand(blocks, n, seed=2)
    outcomes = _three_ways(monkeypatch, prog, x, y, z, torch.zeros(blocks * m, n))
    assert walked == [blocks - 1]
    _same(outcomes)
    expected = x.float() @ y.float() + z.repeat_interleave(m, dim=0)
    torch.testing.assert_close(outcomes[0][1][3], expected, rtol=1e-3, atol=1e-3)


def test_a_tile_of_no_whole_vector_width_is_computed_block_by_block(monkeypatch):
    blocks, chunk, cols = 5, 3, 5  # sigmoid on 15 elements: torch's vector tail rounds differently
    rows = blocks * 2 * chunk
    walked = _walked(monkeypatch)
    prog = _launch(_rows_kernel(rows, "tile.sigmoid", chunk, cols), _params(rows, cols), blocks)
    x = rand(rows, cols)
    outcomes = _three_ways(monkeypatch, prog, x, torch.zeros_like(x))
    assert walked == [blocks - 1]
    _same(outcomes)


def test_a_load_past_the_end_stops_only_its_block_with_the_same_error(monkeypatch):
    rows = 3 * 32 + 16  # the fourth block's second chunk lies past the end
    walked = _walked(monkeypatch)
    prog = _launch(_rows_kernel(rows), _params(rows), 4)
    x = rand(rows, COLS)
    outcomes = _three_ways(monkeypatch, prog, x, torch.zeros_like(x))
    assert walked == [3]
    _same(outcomes)
    assert "region [112:128] is outside dim 0 of size 112" in outcomes[0][0].message


def test_a_scalar_division_by_zero_in_one_block_is_that_blocks_error(monkeypatch):
    walked = _walked(monkeypatch)
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((4 * 16, COLS)))
    out = k.param("out", tensor_t((4 * 16, COLS)), Direction.Out)
    block = k.op("block", "get_block_idx")
    k.op("q", "scalar.floordiv", 6, k.op("d", "scalar.sub", block, 2))  # block 2 divides by zero
    row = k.op("row", "scalar.mul", block, 16)
    x = k.op("x", "tile.load", a, [row, 0], shape=(16, COLS), target_memory=Mem.Vec)
    k.do("tile.store", x, [row, 0], out)
    prog = _launch(k.build(), _params(4 * 16), 4)
    x = rand(4 * 16, COLS)
    outcomes = _three_ways(monkeypatch, prog, x, torch.zeros_like(x))
    assert walked == [3]
    _same(outcomes)
    assert "division by zero" in outcomes[0][0].message


@pytest.mark.parametrize(
    ("op", "bad", "message"), [("tile.shl", 40, "shift amount 40"), ("tile.rem", 0, "by zero")]
)
def test_a_check_of_a_later_blocks_elements_is_that_blocks_error(monkeypatch, op, bad, message):
    """A check that reads the tiles' elements (a shift amount, an integer divisor) is made for
    every block of the batch, not for the first alone: block 2's bad element is its error, as on
    the full engine."""
    blocks, rows = 4, 4 * 16
    walked = _walked(monkeypatch)
    k = FunctionBuilder("rows", FunctionKind.AIV)
    a = k.param("a", tensor_t((rows, COLS), INT32))
    s = k.param("s", tensor_t((rows, COLS), INT32))
    out = k.param("out", tensor_t((rows, COLS), INT32), Direction.Out)
    row = k.op("row", "scalar.mul", k.op("block", "get_block_idx"), 16)
    x = k.op("x", "tile.load", a, [row, 0], shape=(16, COLS), target_memory=Mem.Vec, dtype=INT32)
    y = k.op("y", "tile.load", s, [row, 0], shape=(16, COLS), target_memory=Mem.Vec, dtype=INT32)
    k.do("tile.store", k.op("z", op, x, y), [row, 0], out)
    params = [
        ("a", tensor_t((rows, COLS), INT32), Direction.In),
        ("s", tensor_t((rows, COLS), INT32), Direction.In),
        ("out", tensor_t((rows, COLS), INT32), Direction.Out),
    ]
    prog = _launch(k.build(), params, blocks)
    x = torch.arange(rows * COLS, dtype=torch.int32).view(rows, COLS)
    amounts = torch.full((rows, COLS), 3, dtype=torch.int32)
    amounts[2 * 16 + 5, 7] = bad  # in block 2's rows
    outcomes = _three_ways(monkeypatch, prog, x, amounts, torch.zeros_like(x))
    assert walked == ([blocks - 1] if op == "tile.shl" else [])  # (torch's integer rem by 0 ends a batch)
    _same(outcomes)
    assert message in outcomes[0][0].message


def test_a_kernel_that_stores_into_what_it_loads_walks_block_by_block(monkeypatch):
    k = FunctionBuilder("inplace", FunctionKind.AIV)
    a = k.param("a", tensor_t((4 * 16, COLS)), Direction.InOut)
    row = k.op("row", "scalar.mul", k.op("block", "get_block_idx"), 16)
    x = k.op("x", "tile.load", a, [row, 0], shape=(16, COLS), target_memory=Mem.Vec)
    k.do("tile.store", k.op("y", "tile.exp", x), [row, 0], a)  # a second walk would exp it again
    kernel = k.build()
    prog = _launch(kernel, [("a", tensor_t((4 * 16, COLS)), Direction.InOut)], 4)
    assert not batchable(LoadedProgram(prog).plans["inplace"])
    walked = _walked(monkeypatch)
    x = rand(4 * 16, COLS)
    outcomes = _three_ways(monkeypatch, prog, x)
    assert walked == []
    _same(outcomes)
    assert torch.equal(outcomes[0][1][0], x.exp())


def test_arguments_that_share_storage_walk_block_by_block(monkeypatch):
    rows = 4 * 32
    walked = _walked(monkeypatch)
    prog = _launch(_rows_kernel(rows), _params(rows), 4)
    x = rand(rows, COLS)
    monkeypatch.setenv("PYPTO_SIM_REPLAY", "on")
    run(prog, x, x)  # out is a: the kernel writes what it reads
    assert walked == []
    assert torch.equal(x, rand(rows, COLS).exp())


def test_a_block_dependent_scalar_has_no_truth_value():
    with pytest.raises(Unbatchable):
        bool(Lanes((0, 1)))


def test_the_batch_memories_are_kept_one_per_core_and_space_whatever_the_kernels(monkeypatch):
    monkeypatch.setenv("PYPTO_SIM_REPLAY", "on")
    monkeypatch.setattr(batch, "_KEPT", threading.local())
    for cols, blocks in ((64, 6), (128, 3), (32, 9)):  # three kernels, three memory peaks
        rows = blocks * 32
        prog = _launch(_rows_kernel(rows, cols=cols), _params(rows, cols), blocks)
        x = rand(rows, cols)
        out = torch.zeros_like(x)
        run(prog, x, out)
        assert torch.equal(out, x.exp())
    (key, kept), *others = batch._spare().items()
    assert others == [] and key[1] is Mem.Vec
    assert tuple(kept.shape) == (8, 2 * 16 * 128 * 4)  # the most blocks, the largest peak (x, y)


def test_two_simulations_in_two_threads_batch_on_memories_of_their_own(monkeypatch):
    import concurrent.futures

    monkeypatch.setenv("PYPTO_SIM_REPLAY", "on")
    programs = []
    for cols, op, blocks in ((64, "tile.exp", 30), (64, "tile.neg", 30)):
        rows = blocks * 32
        programs.append(
            (_launch(_rows_kernel(rows, op, cols=cols), _params(rows, cols), blocks), rand(rows, cols))
        )

    def simulate(prog, x):
        out = torch.zeros_like(x)
        for _ in range(3):
            run(prog, x, out)
        return out

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda p: simulate(*p), programs))
    assert torch.equal(results[0], programs[0][1].exp())
    assert torch.equal(results[1], -programs[1][1])


def _gathered(monkeypatch) -> list[bool]:
    """Whether each gather of the blocks' regions (one torch call) was made."""
    gathered: list[bool] = []
    original = batch._gather

    def counting(*args):
        gathered.append(original(*args))
        return gathered[-1]

    monkeypatch.setattr(batch, "_gather", counting)
    return gathered


def test_loads_at_offsets_of_no_common_step_are_gathered_at_once_and_a_block_past_the_end_stops_alone(
    monkeypatch,
):
    """Block ``b`` loads rows ``((5 b) % 7) * 16``: no step from block to block, so the batch
    gathers every block's region in one call (not block by block); the block whose rows lie past the
    end stops at its load with the error its own walk meets, and the others' numbers are theirs."""
    blocks, chunk = 6, 16
    rows = blocks * chunk
    k = FunctionBuilder("perm", FunctionKind.AIV)
    a = k.param("a", tensor_t((rows, COLS), FP16))
    out = k.param("out", tensor_t((rows, COLS), FP16), Direction.Out)
    block = k.op("block", "get_block_idx")
    source = k.op(
        "source", "scalar.mul", k.op("turn", "scalar.mod", k.scalar("scalar.mul", block, 5), 7), chunk
    )
    x = k.op("x", "tile.load", a, [source, 0], shape=(chunk, COLS), target_memory=Mem.Vec)
    k.do("tile.store", x, [k.scalar("scalar.mul", block, chunk), 0], out)
    params = [
        ("a", tensor_t((rows, COLS), FP16), Direction.In),
        ("out", tensor_t((rows, COLS), FP16), Direction.Out),
    ]
    gathered = _gathered(monkeypatch)
    walked = _walked(monkeypatch)
    x_in = rand(rows, COLS).half()
    outcomes = _three_ways(monkeypatch, _launch(k.build(), params, blocks), x_in, torch.zeros_like(x_in))
    assert walked == [blocks - 1] and gathered == [True]
    _same(outcomes)
    assert "region [96:112] is outside dim 0 of size 96" in outcomes[0][0].message  # block 4's


def test_a_batch_gathers_whole_grids_of_tiles_as_each_block_loads_its_own(monkeypatch):
    """Every block loads the tile ``(b // 3, b % 3)`` of a 2-D grid of tiles (rows and columns move
    at once, by no common step): the numbers are each block's own, bit for bit."""
    blocks, tile = 9, 16
    k = FunctionBuilder("tiles", FunctionKind.AIV)
    a = k.param("a", tensor_t((3 * tile, 3 * COLS)))
    out = k.param("out", tensor_t((blocks * tile, COLS)), Direction.Out)
    block = k.op("block", "get_block_idx")
    row = k.op("row", "scalar.mul", k.op("i", "scalar.floordiv", block, 3), tile)
    col = k.op("col", "scalar.mul", k.op("j", "scalar.mod", block, 3), COLS)
    x = k.op("x", "tile.load", a, [row, col], shape=(tile, COLS), target_memory=Mem.Vec)
    k.do("tile.store", k.op("y", "tile.exp", x), [k.scalar("scalar.mul", block, tile), 0], out)
    params = [
        ("a", tensor_t((3 * tile, 3 * COLS)), Direction.In),
        ("out", tensor_t((blocks * tile, COLS)), Direction.Out),
    ]
    gathered = _gathered(monkeypatch)
    walked = _walked(monkeypatch)
    x_in = rand(3 * tile, 3 * COLS)
    outcomes = _three_ways(
        monkeypatch, _launch(k.build(), params, blocks), x_in, torch.zeros(blocks * tile, COLS)
    )
    assert walked == [blocks - 1] and gathered == [True]
    _same(outcomes)
    tiles = x_in.view(3, tile, 3, COLS).permute(0, 2, 1, 3).reshape(blocks * tile, COLS)
    assert torch.equal(outcomes[0][1][1], tiles.exp())


def _own_weights_matmul(blocks: int, placed: str):
    """``c[block rows] = a[block rows] @ w[block's own K rows]`` in two K steps: no operand is the
    same in every block; the matmul_acc's tile over its accumulator, elsewhere, or half over it."""
    m, kk, n = 16, 32, 64
    k = FunctionBuilder("mm_own", FunctionKind.AIC)
    a = k.param("a", tensor_t((blocks * m, 2 * kk), FP16))
    w = k.param("w", tensor_t((blocks * 2 * kk, n), FP16))
    c = k.param("c", tensor_t((blocks * m, n)), Direction.Out)
    block = k.op("block", "get_block_idx")
    row = k.op("row", "scalar.mul", block, m)
    w_row = k.op("w_row", "scalar.mul", block, 2 * kk)
    tiles = []
    for i in range(2):
        a_l1 = k.op(f"a{i}", "tile.load", a, [row, i * kk], shape=(m, kk), target_memory=Mem.Mat, dtype=FP16)
        w_at = k.scalar("scalar.add", w_row, i * kk)
        w_l1 = k.op(f"w{i}", "tile.load", w, [w_at, 0], shape=(kk, n), target_memory=Mem.Mat, dtype=FP16)
        tiles.append(
            (
                k.op(f"a{i}_l0", "tile.move", a_l1, target_memory=Mem.Left),
                k.op(f"w{i}_l0", "tile.move", w_l1, target_memory=Mem.Right),
            )
        )
    acc = k.op("acc", "tile.matmul", *tiles[0], out_dtype=FP32)
    acc2 = k.op("acc2", "tile.matmul_acc", acc, *tiles[1])
    k.do("tile.store", acc2, [row, 0], c)
    at = {"over_acc": 0, "elsewhere": m * n * 4, "half_over_acc": m * n * 2}[placed]
    params = [
        ("a", tensor_t((blocks * m, 2 * kk), FP16), Direction.In),
        ("w", tensor_t((blocks * 2 * kk, n), FP16), Direction.In),
        ("c", tensor_t((blocks * m, n)), Direction.Out),
    ]
    prog = _launch(k.build(at={"acc": 0, "acc2": at}), params, blocks)
    x, y = (
        rand(blocks * m, 2 * kk, dtype=torch.float16),
        rand(blocks * 2 * kk, n, dtype=torch.float16, seed=1),
    )
    return prog, (x, y, torch.zeros(blocks * m, n))


@pytest.mark.parametrize("placed", ["over_acc", "elsewhere", "half_over_acc"])
@pytest.mark.parametrize("rounds_alike", [True, False])
def test_an_accumulating_matmul_of_the_blocks_own_operands_is_one_fused_call_where_it_rounds_alike(
    monkeypatch, placed, rounds_alike
):
    """``acc + a @ b`` as one fused call (torch.baddbmm) in the tile's bytes, when the first of its
    layout gives the bits of the product then the sum; where it would not (as if the library
    rounded otherwise) or its tile lies half over the accumulator, the two steps. Either way each
    block's own numbers, bit for bit."""
    layouts: dict = {}
    monkeypatch.setattr(batch, "_FUSED", layouts)
    if not rounds_alike:
        monkeypatch.setattr(batch, "_same_bits", lambda x, y: False)
    walked = _walked(monkeypatch)
    prog, args = _own_weights_matmul(5, placed)
    outcomes = _three_ways(monkeypatch, prog, *args)
    assert walked == [4]
    assert list(layouts.values()) == ([] if placed == "half_over_acc" else [rounds_alike])
    _same(outcomes)
    x, w = args[0].float(), args[1].float().view(5, 64, 64)
    expected = torch.cat([x[i * 16 : (i + 1) * 16] @ w[i] for i in range(5)])
    torch.testing.assert_close(outcomes[0][1][2], expected, rtol=1e-3, atol=1e-3)


def test_a_zero_accumulator_leaves_the_fused_layout_undecided(monkeypatch):
    """A first ``acc + a @ b`` whose accumulator is zero rounds alike fused or not, whatever the
    library does: it does not decide the layout (the two steps run; a later real sum decides)."""
    layouts: dict = {}
    monkeypatch.setattr(batch, "_FUSED", layouts)
    walked = _walked(monkeypatch)
    prog, (x, y, out) = _own_weights_matmul(5, "over_acc")
    x[:, :32] = 0  # the first K step's product, the accumulator, is zero
    outcomes = _three_ways(monkeypatch, prog, x, y, out)
    assert walked == [4] and layouts == {}
    _same(outcomes)


def test_a_batch_stores_a_grid_of_tiles_a_row_of_them_at_once_as_each_block_stores_its_own(monkeypatch):
    """Block ``b`` stores its tile at ``(b // 3, b % 3)`` of a grid: no step from block to block
    over all of them, but each row of the grid is one run of blocks stored in one copy."""
    blocks, tile = 9, 16
    k = FunctionBuilder("grid_store", FunctionKind.AIV)
    a = k.param("a", tensor_t((blocks * tile, COLS)))
    out = k.param("out", tensor_t((3 * tile, 3 * COLS)), Direction.Out)
    block = k.op("block", "get_block_idx")
    x = k.op(
        "x",
        "tile.load",
        a,
        [k.scalar("scalar.mul", block, tile), 0],
        shape=(tile, COLS),
        target_memory=Mem.Vec,
    )
    row = k.op("row", "scalar.mul", k.op("i", "scalar.floordiv", block, 3), tile)
    col = k.op("col", "scalar.mul", k.op("j", "scalar.mod", block, 3), COLS)
    k.do("tile.store", k.op("y", "tile.exp", x), [row, col], out)
    params = [
        ("a", tensor_t((blocks * tile, COLS)), Direction.In),
        ("out", tensor_t((3 * tile, 3 * COLS)), Direction.Out),
    ]
    runs = []
    original = batch._store_runs
    monkeypatch.setattr(
        batch, "_store_runs", lambda *args: runs.append(len(args[0].alive)) or original(*args)
    )
    walked = _walked(monkeypatch)
    x_in = rand(blocks * tile, COLS)
    outcomes = _three_ways(
        monkeypatch, _launch(k.build(), params, blocks), x_in, torch.zeros(3 * tile, 3 * COLS)
    )
    assert walked == [blocks - 1] and runs == [blocks - 1]  # blocks 1-8: runs 1-2, 3-5, 6-8
    _same(outcomes)
    grid = x_in.exp().view(3, 3, tile, COLS).permute(0, 2, 1, 3).reshape(3 * tile, 3 * COLS)
    assert torch.equal(outcomes[0][1][1], grid)
