"""``pl.array.create(n, dtype)``: a small array of scalars in a core's scalar memory, read
``arr[i]`` and written ``arr[i] = v`` with compile-time or run-time indices, checked against torch.

Every compile here goes through ROUNDTRIP (tests/conftest.py): the printed ``pl.array.*`` calls
and ``pl.Array[n, dtype]`` annotations read back into an equal program after each pass."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, PyptoError, TypeCheckError, print_ir, structural_diff
from pypto.ir.nodes import Call, stmt_exprs, walk_expr, walk_stmts
from pypto.ir.ops import MAX_ARRAY_SIZE, array
from pypto.runtime import RunConfig, run
from pypto_sim_a2a3 import OutOfBoundsError, ScalarRangeError
from pypto_sim_a2a3.hw.cost import CostModel
from pypto_sim_a2a3.target import A2A3_TARGET

SIM = RunConfig(platform="a2a3sim")


def _line(text: str) -> int:
    with open(__file__) as source:
        return next(n for n, line in enumerate(source, 1) if text in line)


# ---------------------------------------------------------------- offsets kept in an array


@pl.jit
def reversed_blocks(x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="reversed_blocks"):
        offsets = pl.array.create(4, pl.INDEX)
        for b in pl.range(4):
            offsets[b] = (3 - b) * 16  # the block each output block reads
        for b in pl.range(4):
            block = pl.load(x, [offsets[b], 0], [16, 32])
            pl.store(pl.mul(block, 2.0), [b * 16, 0], out)
    return out


def test_per_block_offsets_computed_into_an_array_steer_the_loads():
    x, out = torch.randn(64, 32), torch.zeros(64, 32)
    reversed_blocks(x, out, config=SIM)
    torch.testing.assert_close(out, 2 * x.reshape(4, 16, 32).flip(0).reshape(64, 32))


@pl.jit.incore
def gathered_rows(
    x: pl.Tensor[[64, 32], pl.FP32],
    rows: pl.Tensor[[4], pl.INT32],
    out: pl.Out[pl.Tensor[[4, 32], pl.FP32]],
):
    picked = pl.array.create(4, pl.INT32)
    for i in pl.range(4):
        picked[i] = pl.read(rows, [i])
    for i in pl.range(4):
        pl.store(pl.load(x, [picked[i], 0], [1, 32]), [i, 0], out)
    return out


def test_an_incore_function_loads_rows_at_int32_offsets_held_in_an_array():
    x, out = torch.randn(64, 32), torch.zeros(4, 32)
    rows = torch.tensor([5, 63, 0, 17], dtype=torch.int32)
    gathered_rows(x, rows, out, config=SIM)
    torch.testing.assert_close(out, x[rows.long()])


# ---------------------------------------------------------------- run-time indices, carried arrays


@pl.jit
def histogram(idx: pl.Tensor[[16], pl.INT32], out: pl.Out[pl.Tensor[[8, 1], pl.INT32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="histogram"):
        counts = pl.array.create(8, pl.INT32)
        for i in pl.range(16):
            bucket = pl.read(idx, [i])
            counts[bucket] = counts[bucket] + 1  # index out of range: histogram
        for b in pl.range(8):
            pl.store(pl.full([1, 1], dtype=pl.INT32, value=counts[b]), [b, 0], out)
    return out


def test_a_histogram_counts_with_run_time_indices_read_from_gm():
    idx = torch.randint(0, 8, (16,), dtype=torch.int32)
    out = torch.zeros(8, 1, dtype=torch.int32)
    histogram(idx, out, config=SIM)
    torch.testing.assert_close(out[:, 0], torch.bincount(idx.long(), minlength=8).to(torch.int32))


@pl.jit
def prefix_sums(x: pl.Tensor[[1, 8], pl.FP32], out: pl.Out[pl.Tensor[[1, 8], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="prefix_sums"):
        sums: pl.Array[8, pl.FP32] = pl.array.create(8, pl.FP32)
        total = 0.0
        for i in pl.range(8):
            total = total + pl.read(x, [0, i])
            sums[i] = total
        row = pl.full([1, 8], dtype=pl.FP32, value=0.0)
        for i in pl.range(8):  # the array written in the loop above, read after it
            row = pl.assemble(row, pl.full([1, 1], dtype=pl.FP32, value=sums[i]), [0, i])
        pl.store(row, [0, 0], out)
    return out


def test_an_array_written_in_a_loop_is_carried_and_read_after_it():
    x, out = torch.randn(1, 8), torch.zeros(1, 8)
    prefix_sums(x, out, config=SIM)
    torch.testing.assert_close(out, torch.cumsum(x, dim=1))


def test_fresh_elements_are_zero():
    @pl.jit
    def untouched(out: pl.Out[pl.Tensor[[4, 1], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="untouched"):
            values = pl.array.create(4, pl.FP32)
            values[2] = 1.5
            for i in pl.range(4):
                pl.store(pl.full([1, 1], dtype=pl.FP32, value=values[i]), [i, 0], out)
        return out

    out = torch.full((4, 1), 7.0)
    untouched(out, config=SIM)
    torch.testing.assert_close(out[:, 0], torch.tensor([0.0, 0.0, 1.5, 0.0]))


@pl.jit
def mixed_offsets(
    a: pl.Tensor[[64, 64], pl.FP16],
    b: pl.Tensor[[64, 64], pl.FP16],
    out: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.NONE)], name_hint="mixed"):
        rows = pl.array.create(2, pl.INDEX)
        rows[0] = 32
        rows[1] = 0
        for h in pl.range(2):
            lhs = pl.load(a, [rows[h], 0], [32, 64], target_memory=pl.Mem.Mat)
            rhs = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(lhs, target_memory=pl.Mem.Left), pl.move(rhs, target_memory=pl.Mem.Right))
            pl.store(pl.relu(pl.move(acc, target_memory=pl.Mem.Vec)), [h * 32, 0], out)
    return out


def test_a_mixed_kernel_split_into_cube_and_vector_keeps_the_array_on_both_sides():
    a, b = torch.randn(64, 64).half(), torch.randn(64, 64).half()
    out = torch.zeros(64, 64)
    mixed_offsets(a, b, out, config=SIM)
    want = torch.relu(a.float() @ b.float())
    torch.testing.assert_close(out, torch.cat([want[32:], want[:32]]), rtol=1e-2, atol=1e-2)


# ---------------------------------------------------------------- IR: printed form, memory, cost


def test_the_printed_form_names_the_array_ops_and_type_and_no_tile_memory_holds_the_array():
    lowered = print_ir(
        histogram.lower(torch.zeros(16, dtype=torch.int32), torch.zeros(8, 1, dtype=torch.int32))
    )
    assert "counts: pl.Array[8, pl.INT32] = pl.array.create(size=8, dtype=pl.INT32)" in lowered
    assert "pl.array.update_element(" in lowered and "pl.array.get_element(" in lowered
    plan = next(line for line in lowered.splitlines() if "memory_plan" in line)
    assert "counts" not in plan


def test_array_ops_cost_scalar_cycles():
    @pl.jit
    def one(out: pl.Out[pl.Tensor[[1, 1], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="one"):
            values = pl.array.create(2, pl.INT32)
            values[1] = 3
            pl.store(pl.full([1, 1], dtype=pl.INT32, value=values[1]), [0, 0], out)
        return out

    program = one.lower(torch.zeros(1, 1, dtype=torch.int32))
    calls = [
        e
        for kernel in program.functions.values()
        for s in walk_stmts(kernel.body)
        for x in stmt_exprs(s)
        for e in walk_expr(x)
        if isinstance(e, Call) and e.op in (array.create, array.get_element, array.update_element)
    ]
    assert {c.op for c in calls} == {array.create, array.get_element, array.update_element}
    model = CostModel(A2A3_TARGET)
    scalar_cycles = model.constant("scalar_op_cycles")
    for call in calls:
        cost = model.op_cost(call)
        assert (cost.unit, cost.cycles) == ("SCALAR", scalar_cycles)


# ---------------------------------------------------------------- errors


def _compile(body):
    return body.lower(torch.zeros(8, dtype=torch.int32), torch.zeros(8, 1, dtype=torch.int32))


@pytest.mark.parametrize("size", [0, -3, MAX_ARRAY_SIZE + 1])
def test_a_size_outside_1_to_the_limit_is_a_type_error_with_a_hint(size):
    @pl.jit
    def sized(idx: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[8, 1], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            values = pl.array.create(size, pl.INT32)  # bad size
            pl.store(pl.full([1, 1], dtype=pl.INT32, value=values[0]), [0, 0], out)
        return out

    with pytest.raises(TypeCheckError) as info:
        _compile(sized)
    assert f"the size must be an int from 1 to {MAX_ARRAY_SIZE}, got {size}" in info.value.message
    assert info.value.span.line == _line("# bad size")
    assert "pl.create_tensor" in info.value.hint


def test_a_bool_dtype_is_a_type_error():
    @pl.jit
    def flags(idx: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[8, 1], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            values = pl.array.create(4, pl.BOOL)  # bool array
            values[0] = 1
        return out

    with pytest.raises(TypeCheckError) as info:
        _compile(flags)
    assert "the elements must be an integer, float, INDEX or TASK_ID dtype" in info.value.message
    assert info.value.span.line == _line("# bool array")
    assert "pl.INT32" in info.value.hint


def test_a_compile_time_index_outside_the_array_is_a_type_error_at_the_read_and_the_write():
    @pl.jit
    def read_past(idx: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[8, 1], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            values = pl.array.create(4, pl.INT32)
            pl.store(pl.full([1, 1], dtype=pl.INT32, value=values[4]), [0, 0], out)  # read past
        return out

    @pl.jit
    def write_before(idx: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[8, 1], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            values = pl.array.create(4, pl.INT32)
            values[-1] = 2  # write before
        return out

    for kernel, index, where in ((read_past, 4, "# read past"), (write_before, -1, "# write before")):
        with pytest.raises(TypeCheckError) as info:
            _compile(kernel)
        assert f"index {index} is outside the array of 4 elements" in info.value.message
        assert info.value.span.line == _line(where)
        assert info.value.hint == "index it from 0 to 3"


def test_a_run_time_index_outside_the_array_stops_the_simulator_at_the_users_line():
    idx = torch.tensor([0, 1, 8, 2] + [0] * 12, dtype=torch.int32)
    with pytest.raises(OutOfBoundsError) as info:
        histogram(idx, torch.zeros(8, 1, dtype=torch.int32), config=SIM)
    err = info.value
    assert isinstance(err, PyptoError)
    assert "index 8 is outside the scalar array of 8 elements" in err.message
    assert err.span.line == _line("# index out of range: histogram")
    assert "from 0 to 7" in err.hint


def test_a_run_time_value_that_does_not_fit_the_elements_is_a_range_error():
    @pl.jit
    def narrow(x: pl.Tensor[[1], pl.INT32], out: pl.Out[pl.Tensor[[1, 1], pl.INT16]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            values = pl.array.create(2, pl.INT16)
            values[0] = pl.read(x, [0])  # too wide
            pl.store(pl.full([1, 1], dtype=pl.INT16, value=values[0]), [0, 0], out)
        return out

    out = torch.zeros(1, 1, dtype=torch.int16)
    narrow(torch.tensor([300], dtype=torch.int32), out, config=SIM)
    assert out.item() == 300
    with pytest.raises(ScalarRangeError) as info:
        narrow(torch.tensor([70000], dtype=torch.int32), out, config=SIM)
    assert info.value.span.line == _line("# too wide")


def test_a_float_written_into_an_integer_array_is_a_type_error():
    @pl.jit
    def floats(idx: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[8, 1], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            values = pl.array.create(4, pl.INT32)
            values[0] = 1.5  # float into int
        return out

    with pytest.raises(TypeCheckError) as info:
        _compile(floats)
    assert info.value.span.line == _line("# float into int")


def test_an_array_in_the_orchestration_body_is_a_parse_error_with_a_hint():
    @pl.jit
    def outside(idx: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[8, 1], pl.INT32]]):
        pl.array.create(4, pl.INT32)  # in orchestration
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(out, 1)
        return out

    with pytest.raises(ParseError) as info:
        _compile(outside)
    assert "pl.array.create outside a pl.at scope" in info.value.message
    assert info.value.span.line == _line("# in orchestration")
    assert "pl.at" in info.value.hint


def test_slices_and_several_indices_are_parse_errors():
    @pl.jit
    def sliced(idx: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[8, 1], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            values = pl.array.create(4, pl.INT32)
            pl.store(pl.full([1, 1], dtype=pl.INT32, value=values[0:2]), [0, 0], out)  # sliced
        return out

    with pytest.raises(ParseError) as info:
        _compile(sliced)
    assert "takes one index" in info.value.message
    assert info.value.span.line == _line("# sliced")


# ---------------------------------------------------------------- the program form


@pl.program
class ShiftRows:
    @pl.function(type=pl.FunctionType.InCore)
    def shift(self, x: pl.Tensor[[4, 32], pl.FP32], out: pl.Out[pl.Tensor[[4, 32], pl.FP32]]):
        source: pl.Array[4, pl.INDEX] = pl.array.create(4, pl.INDEX)
        for i in pl.range(4):
            source = pl.array.update_element(source, i, (i + 1) % 4)  # the printed form of source[i] = ...
        for i in pl.range(4):
            pl.store(pl.load(x, [pl.array.get_element(source, i), 0], [1, 32]), [i, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[4, 32], pl.FP32], out: pl.Out[pl.Tensor[[4, 32], pl.FP32]]):
        out = self.shift(x, out)
        return out


def test_a_program_function_spells_the_ops_by_name_and_its_printed_form_parses_back_equal():
    x, out = torch.randn(4, 32), torch.zeros(4, 32)
    run(ShiftRows, x, out, config=SIM)
    torch.testing.assert_close(out, x.roll(-1, dims=0))
    printed = print_ir(ShiftRows)
    assert "source: pl.Array[4, pl.INDEX] = pl.array.create(size=4, dtype=pl.INDEX)" in printed
    assert structural_diff(pl.parse(printed), ShiftRows) is None


def test_an_array_annotation_that_does_not_match_is_a_type_error():
    @pl.jit
    def mislabeled(idx: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[8, 1], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            values: pl.Array[4, pl.INT16] = pl.array.create(4, pl.INT32)  # mislabeled
            values[0] = 1
        return out

    with pytest.raises(TypeCheckError) as info:
        _compile(mislabeled)
    assert info.value.span.line == _line("# mislabeled")
    assert "pl.Array[4, pl.INT32]" in info.value.hint


def test_a_kernel_parameter_cannot_be_an_array():
    with pytest.raises(ParseError) as info:

        @pl.jit.incore
        def takes(values: pl.Array[4, pl.INT32], out: pl.Out[pl.Tensor[[1, 1], pl.INT32]]):
            return out

        takes.lower(torch.zeros(1, 1, dtype=torch.int32))
    assert "annotated as a scalar array" in info.value.message


def test_a_run_time_size_a_float_index_and_a_tile_value_are_errors_at_their_lines():
    @pl.jit
    def run_time_size(idx: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[8, 1], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.array.create(pl.read(idx, [0]), pl.INT32)  # run-time size
        return out

    @pl.jit
    def float_index(idx: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[8, 1], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            values = pl.array.create(4, pl.INT32)
            pl.store(pl.full([1, 1], dtype=pl.INT32, value=values[1.5]), [0, 0], out)  # float index
        return out

    @pl.jit
    def tile_value(idx: pl.Tensor[[8], pl.INT32], out: pl.Out[pl.Tensor[[8, 1], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            values = pl.array.create(4, pl.INT32)
            values[0] = pl.load(idx, [0], [8])  # tile value
        return out

    cases = (
        (run_time_size, ParseError, "size= must be known at compile time", "# run-time size"),
        (float_index, TypeCheckError, "the index must be an integer scalar", "# float index"),
        (tile_value, ParseError, "the written value must be a scalar", "# tile value"),
    )
    for kernel, error, message, where in cases:
        with pytest.raises(error) as info:
            _compile(kernel)
        assert message in info.value.message
        assert info.value.span.line == _line(where)
        assert info.value.hint
