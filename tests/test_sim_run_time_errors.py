"""Bad values that only show at run time on a2a3sim are user errors at the user's line, with a
hint: a loop step of 0, a cache invalidation outside its tensor, a store outside its tensor that
overlaps another lane's write, cores meeting at one barrier round with different barriers."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import MemoryBudgetError, PyptoError, VerificationError
from pypto_sim_a2a3 import (
    BarrierError,
    DivisionByZeroError,
    LoopStepError,
    OutOfBoundsError,
    ScalarRangeError,
)

T = pl.Tensor[[64, 64], pl.FP32]
STEPS = pl.Tensor[[1], pl.INT32]


@pl.jit
def kernel_step(x: T, steps: STEPS, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="kernel_step"):
        step = pl.cast(pl.read(steps, [0]), pl.INDEX)  # step source: kernel
        for i in pl.range(0, 64, step):  # loop: kernel
            pl.store(pl.load(x, [i, 0], [1, 64]), [i, 0], out)
    return out


@pl.jit
def host_step(x: T, steps: STEPS, out: pl.Out[T]):
    step = pl.cast(pl.read(steps, [0]), pl.INDEX)  # step source: host
    for i in pl.range(0, 4, step):  # loop: host
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows"):
            out[i * 16 : i * 16 + 16, :] = pl.exp(x[i * 16 : i * 16 + 16, :])
    return out


@pl.jit
def invalidate_at(x: T, rows: STEPS, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="invalidate_at"):
        row = pl.cast(pl.read(rows, [0]), pl.INDEX)
        pl.system.cacheinvalid(x, [row, 0], [16, 64])
        pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], out)
    return out


@pl.jit
def lanes_store_at(x: T, rows: STEPS, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="lanes_store_at"):
        for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            row = pl.cast(pl.read(rows, [0]), pl.INDEX) * lane
            pl.store(pl.load(x, [0, 0], [64, 64]), [row, 0], out)  # lane 1 at rows[0]
    return out


def _line(text: str) -> int:
    with open(__file__) as source:
        return next(n for n, line in enumerate(source, 1) if text in line)


def _int(value: int) -> torch.Tensor:
    return torch.tensor([value], dtype=torch.int32)


@pytest.mark.parametrize(("kernel", "where"), [(kernel_step, "kernel"), (host_step, "host")])
def test_a_run_time_loop_step_of_0_is_a_loop_step_error_naming_the_loop_and_the_steps_line(kernel, where):
    x, out = torch.randn(64, 64), torch.zeros(64, 64)
    kernel(x, _int(1), out)  # a step of 1 runs
    with pytest.raises(LoopStepError) as info:
        kernel(x, _int(0), out)
    err = info.value
    assert isinstance(err, PyptoError) and isinstance(err, ValueError)
    assert not isinstance(err, VerificationError)
    assert err.message.endswith(
        f"pl.range over i would never end: its step, the value of step from "
        f"{__file__}:{_line(f'step source: {where}')}, is 0 at run time"
    )
    assert err.span.line == _line(f"loop: {where}")
    assert (
        err.hint
        == "make the step non-zero: check where step comes from, or guard the loop with if step != 0:"
    )


@pytest.mark.parametrize("row", [56, -8])
def test_a_cache_invalidation_at_run_time_offsets_outside_the_tensor_is_out_of_bounds(row):
    with pytest.raises(OutOfBoundsError) as info:
        invalidate_at(torch.randn(64, 64), _int(row), torch.zeros(64, 64))
    assert info.value.message == (
        f"pl.system.cacheinvalid: region [{row}:{row + 16}] is outside dim 0 of size 64 (offsets [{row}, 0])"
    )
    assert info.value.span.line == _line("pl.system.cacheinvalid(x, [row, 0]")
    assert "pl.system.cacheinvalid()" in info.value.hint


def test_a_cache_invalidation_inside_the_tensor_runs():
    x, out = torch.randn(64, 64), torch.zeros(64, 64)
    invalidate_at(x, _int(48), out)
    torch.testing.assert_close(out, x)


def test_a_store_outside_the_tensor_over_another_lanes_write_is_out_of_bounds_not_a_race():
    with pytest.raises(OutOfBoundsError, match=r"pl.store: region \[16:80\] is outside dim 0 of size 64"):
        lanes_store_at(torch.randn(64, 64), _int(16), torch.zeros(64, 64))


def barrier_pair(lanes_soft: bool):
    """The cube's hard syncall and the lanes' syncall meet in round 0 of the launch's barrier."""

    @pl.jit
    def barriers(a: T, ws: pl.Tensor[[16], pl.INT32], out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="barriers"):
            mat = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(mat, target_memory=pl.Mem.Left), pl.move(mat, target_memory=pl.Mem.Right))
            pl.store(acc, [0, 0], out)
            pl.system.syncall()  # the cube's barrier
            for _lane in pl.split_aiv(2):
                if lanes_soft:
                    pl.system.syncall(mode="soft", gm_workspace=ws, used_cores=2)  # the lanes' barrier
                else:
                    pl.system.syncall()
        return out

    return barriers


def test_cores_joining_one_barrier_round_with_different_modes_is_a_barrier_error_naming_both_lines():
    a, ws, out = torch.randn(64, 64), torch.zeros(16, dtype=torch.int32), torch.zeros(64, 64)
    with pytest.raises(BarrierError) as info:
        barrier_pair(lanes_soft=True)(a, ws, out)
    cube, lanes = (f"{__file__}:{_line(text)}" for text in ("# the cube's barrier", "# the lanes' barrier"))
    assert info.value.message == (
        f'pl.system.syncall on AIC at {cube} joins round 0 of the mix barrier with mode="hard", but AIV0 '
        f'joined it at {lanes} with mode="soft", used_cores=2, gm_workspace=ws'
    )
    assert "the same mode, used_cores and gm_workspace" in info.value.hint


def test_cores_joining_one_barrier_round_with_the_same_barrier_run():
    a, ws, out = torch.randn(64, 64), torch.zeros(16, dtype=torch.int32), torch.zeros(64, 64)
    barrier_pair(lanes_soft=False)(a, ws, out)
    torch.testing.assert_close(out, a @ a, rtol=1e-4, atol=1e-4)


I8 = pl.Tensor[[64, 64], pl.INT8]


@pl.jit
def spelled(x: T, x8: I8, values: STEPS, out: pl.Out[T], out8: pl.Out[I8]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="spelled"):
        v = pl.read(values, [0])
        rows = pl.cast(v, pl.INDEX)
        if v == 1:
            pl.store(pl.add(pl.load(x8, [0, 0], [16, 64]), v * 300), [0, 0], out8)  # adds 300
        if v == 2:
            pl.store(pl.load(x, [0, 0], [16, 64], valid_shape=[rows * 16, 64]), [0, 0], out)  # valid 32
        if v == 3:
            pl.store(pl.load(x, [0, 0], [16, 64]), [64 // (rows - 3), 0], out)  # divides by 0
    return out


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (1, ScalarRangeError, "pl.add: the scalar 300 does not fit torch.int8 elements"),
        (2, OutOfBoundsError, "pl.load: valid_shape [32, 64] leaves the tile's [16, 64] in dim 0"),
        (3, DivisionByZeroError, "64 // 0: division by zero"),
    ],
)
def test_a_run_time_error_names_the_op_as_the_user_wrote_it(value, error, message):
    """pl.add with a scalar (not its internal scalar form), pl.load with a valid_shape, the // operator."""
    with pytest.raises(error) as info:
        spelled(
            torch.randn(64, 64),
            torch.ones(64, 64, dtype=torch.int8),
            _int(value),
            torch.zeros(64, 64),
            torch.zeros(64, 64, dtype=torch.int8),
        )
    assert info.value.message.startswith(message)
    assert info.value.span.line == _line({1: "# adds 300", 2: "# valid 32", 3: "# divides by 0"}[value])


@pl.jit
def rows_at(x: T, rows: STEPS, out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="rows_at"):
        row = pl.cast(pl.read(rows, [0]), pl.INDEX)
        out[0:16, :] = pl.exp(x[row : row + 16, :])  # a region of x at a run-time row
    return out


def test_a_subscript_outside_its_tensor_at_run_time_is_reported_at_the_subscript():
    """Not at the op that uses the region, nor at the region write."""
    with pytest.raises(OutOfBoundsError) as info:
        rows_at(torch.randn(64, 64), _int(56), torch.zeros(64, 64))
    assert info.value.message.startswith("pl.load: region [56:72] is outside dim 0 of size 64")
    line = _line("# a region of x at a run-time row")
    assert info.value.span.line == line
    with open(__file__) as source:
        text = source.read().splitlines()[line - 1]
    assert text[info.value.span.col : info.value.span.end_col] == "x[row : row + 16, :]"


def test_a_run_time_loop_step_of_0_underlines_the_loop_header():
    with pytest.raises(LoopStepError) as info:
        kernel_step(torch.randn(64, 64), _int(0), torch.zeros(64, 64))
    line = _line("# loop: kernel")
    with open(__file__) as source:
        text = source.read().splitlines()[line - 1]
    assert text[info.value.span.col : info.value.span.end_col] == "for i in pl.range(0, 64, step)"


@pl.jit
def float_offset(x: T, where: pl.Tensor[[1], pl.FP32], out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="float_offset"):
        row = pl.cast(pl.read(where, [0]), pl.INDEX)  # a float read as an offset
        pl.store(pl.load(x, [row, 0], [16, 64]), [0, 0], out)
    return out


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_nan_or_infinite_float_cast_to_an_index_is_a_scalar_range_error_at_the_cast(value):
    """Not a load at offset -9223372036854775808."""
    with pytest.raises(ScalarRangeError) as info:
        float_offset(torch.randn(64, 64), torch.tensor([value]), torch.zeros(64, 64))
    assert info.value.message == f"pl.cast: {value} has no pl.INDEX value"
    assert info.value.span.line == _line("# a float read as an offset")
    assert "NaN or infinite" in info.value.hint


WIDE = pl.Tensor[[1, 65536], pl.FP32]


@pl.jit
def wide_add(x: WIDE, y: WIDE, out: pl.Out[WIDE]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="wide_add"):
        out[:] = pl.add(x, y)
    return out


@pl.jit
def wide_add_by_columns(x: WIDE, y: WIDE, out: pl.Out[WIDE]):
    for c in pl.range(0, 65536, 1024):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="wide_add"):
            out[:, c : c + 1024] = pl.add(x[:, c : c + 1024], y[:, c : c + 1024])
    return out


def test_a_row_too_wide_for_vec_gets_a_hint_to_split_the_columns_and_that_split_runs():
    """Fewer rows cannot help a single row: the hint says to work on column blocks."""
    x, y = torch.randn(1, 65536), torch.randn(1, 65536)
    with pytest.raises(MemoryBudgetError) as info:
        wide_add(x, y, torch.zeros(1, 65536))
    assert "fewer rows" not in info.value.hint
    assert info.value.hint.startswith(
        "the tiles are single rows already, and one row (Tile[[1, 65536], FP32, Vec]"
    )
    assert "x[:, c : c + 1024] for c in a pl.range loop" in info.value.hint
    out = torch.zeros(1, 65536)
    wide_add_by_columns(x, y, out)
    torch.testing.assert_close(out, x + y)
