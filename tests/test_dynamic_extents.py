"""Dynamic extents beyond one ``M`` per entry: expressions of extents (``M * 2``, ``M // 2``,
``M + 1``), callees whose ``[M, 128]`` binds ``M`` at each call (static callers included),
``x.bind_dynamic(axis, M)``, ``pl.INDEX`` tensors of ``torch.int64``, a dynamic middle dim of a
3-D tensor, and the compile cache (a dynamic dim is no part of the key)."""

import linecache

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, PyptoError, SpecializationError, TypeCheckError, structural_diff
from pypto.runtime import RunConfig, run


def sim() -> RunConfig:
    return RunConfig(platform="a2a3sim")


M = pl.dynamic("M")
N = pl.dynamic("N")
S = pl.dynamic("S")


# ---------------------------------------------------------------- expressions of extents


@pl.jit
def stacked(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M * 2, 64], pl.FP32]]):
    """``out`` holds ``x`` then ``2 * x``: its rows are ``M * 2``, its second half starts at row ``M``."""
    with pl.at(level=pl.Level.CORE_GROUP):
        for r in pl.range(0, M, 16):
            t = pl.load(x, [r, 0], [16, 64], valid_shape=[pl.min(16, M - r), 64])
            pl.store(t, [r, 0], out)
            pl.store(pl.mul(t, 2.0), [r + M, 0], out)
    return out


def test_an_extent_times_two_in_an_annotation_and_in_offsets():
    stacked.cache_clear()
    for m in (32, 20, 5):
        x, out = torch.randn(m, 64), torch.zeros(2 * m, 64)
        stacked(x, out, config=sim())
        assert torch.allclose(out, torch.cat([x, 2 * x])), m
    assert stacked.cache_info().misses == 1


def test_an_expression_extent_that_does_not_hold_is_an_error_at_the_parameter():
    with pytest.raises(SpecializationError) as err:
        stacked(torch.randn(8, 64), torch.zeros(15, 64), config=sim())
    assert err.value.message == "dim 0 of 'out' is 15, but its annotation says M * 2, which is 16 with M = 8"
    assert "out: pl.Out[pl.Tensor[[M * 2, 64], pl.FP32]]" in str(err.value)  # the line, with a caret


@pl.jit
def halves(
    x: pl.Tensor[[M, 64], pl.FP32],
    y: pl.Tensor[[M // 2, 64], pl.FP32],
    out: pl.Out[pl.Tensor[[M // 2, 64], pl.FP32]],
):
    with pl.at(level=pl.Level.CORE_GROUP):
        h = M // 2  # an extent: it sizes nothing here, it bounds the loop
        for r in pl.range(0, h, 8):
            t = pl.load(x, [r, 0], [8, 64], valid_shape=[pl.min(8, h - r), 64])
            u = pl.load(y, [r, 0], [8, 64], valid_shape=[pl.min(8, h - r), 64])
            pl.store(pl.add(t, u), [r, 0], out)
    return out


def test_a_floor_divided_extent_is_checked_against_the_extent_it_divides():
    for m in (32, 21):
        x, y, out = torch.randn(m, 64), torch.randn(m // 2, 64), torch.zeros(m // 2, 64)
        halves(x, y, out, config=sim())
        assert torch.allclose(out, x[: m // 2] + y), m
    with pytest.raises(SpecializationError, match=r"annotation says M // 2, which is 10 with M = 21"):
        halves(torch.randn(21, 64), torch.randn(11, 64), torch.zeros(10, 64), config=sim())


def test_an_extent_no_tensor_names_alone_cannot_be_told_from_a_floor_division():
    @pl.jit
    def only_half(y: pl.Tensor[[N // 2, 64], pl.FP32], out: pl.Out[pl.Tensor[[N // 2, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(y)
        return out

    with pytest.raises(
        SpecializationError, match=r"N cannot be told from its annotation N // 2 alone"
    ) as err:
        only_half(torch.randn(4, 64), torch.zeros(4, 64), config=sim())
    assert "write the extent so it can be undone" in str(err.value)


def test_an_extent_plus_one_is_solved_from_the_only_tensor_that_has_it():
    @pl.jit
    def drop_first(
        x: pl.Tensor[[N + 1, 64], pl.FP32], out: pl.Out[pl.Tensor[[N + 1, 64], pl.FP32]]
    ):  # N rows after the first
        with pl.at(level=pl.Level.CORE_GROUP):
            for r in pl.range(0, N, 8):
                t = pl.load(x, [r + 1, 0], [8, 64], valid_shape=[pl.min(8, N - r), 64])
                pl.store(pl.neg(t), [r + 1, 0], out)
        return out

    for rows in (17, 6):
        x, out = torch.randn(rows, 64), torch.zeros(rows, 64)
        drop_first(x, out, config=sim())
        assert torch.equal(out[0], torch.zeros(64)) and torch.allclose(out[1:], -x[1:]), rows


def test_an_expression_extent_prints_and_reads_back():
    program = halves.parse(torch.randn(8, 64), torch.randn(4, 64), torch.zeros(4, 64))
    text = program.as_python()
    assert "y: pl.Tensor[[M // 2, 64], pl.FP32]" in text
    assert "pl.range(0, M // 2, 8)" in text
    assert structural_diff(program, pl.parse(text)) is None


@pl.jit
def via_shape(x: pl.Tensor[[M * 2, 64], pl.FP32], out: pl.Out[pl.Tensor[[M * 2, 64], pl.FP32]]):
    rows, cols = x.shape  # rows is the extent M * 2: it sizes a tensor and bounds loops
    tmp = pl.create_tensor([rows, cols], pl.FP32)
    with pl.at(level=pl.Level.CORE_GROUP):
        for r in pl.range(0, rows, 16):
            t = pl.load(x, [r, 0], [16, 64], valid_shape=[pl.min(16, rows - r), 64])
            pl.store(pl.exp(t), [r, 0], tmp)
    with pl.at(level=pl.Level.CORE_GROUP):  # the second half, negated: rows M .. 2M
        for r in pl.range(0, M, 8):
            t = pl.load(tmp, [r, 0], [8, 64], valid_shape=[pl.min(8, M - r), 64])
            pl.store(t, [r, 0], out)
            u = pl.load(tmp, [r + M, 0], [8, 64], valid_shape=[pl.min(8, M - r), 64])
            pl.store(pl.neg(u), [r + M, 0], out)
    return out


def test_a_tensor_sized_by_an_expression_extent_and_a_scope_that_only_names_m():
    for m in (8, 13):
        x, out = torch.randn(2 * m, 64), torch.zeros(2 * m, 64)
        via_shape(x, out, config=sim())
        want = x.exp()
        want[m:] = -want[m:]
        assert torch.allclose(out, want, atol=1e-5), m


def test_a_dynamic_extent_cannot_size_a_tile():
    @pl.jit
    def block_of_m(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.full([M * 2, 64], pl.FP32, 0.0)
            pl.store(t, [0, 0], out)
        return out

    with pytest.raises(ParseError) as err:
        block_of_m(torch.randn(8, 64), torch.zeros(8, 64), config=sim())
    assert "got the dynamic extent M * 2: a tile's shape is static" in err.value.message
    assert "pl.full([M * 2, 64], pl.FP32, 0.0)" in str(err.value)
    assert "valid_shape=" in (err.value.hint or "")
    with pytest.raises(PyptoError, match="a tile's shape is static"):
        pl.Tile[[M * 2, 64], pl.FP32]


# ---------------------------------------------------------------- a callee binds its extents per call


@pl.jit.incore
def scale_rows(
    x: pl.Tensor[[M, 128], pl.FP16],
    acc: pl.InOut[pl.Tensor[[M, 128], pl.FP32]],
    factor: pl.Scalar[pl.FP32],
):
    for r in pl.range(0, M, 32):
        t = pl.cast(pl.load(x, [r, 0], [32, 128], valid_shape=[pl.min(32, M - r), 128]), pl.FP32)
        a = pl.load(acc, [r, 0], [32, 128], valid_shape=[pl.min(32, M - r), 128])
        pl.store(pl.add(a, pl.mul(t, factor)), [r, 0], acc)
    return acc


@pl.jit
def static_caller(x: pl.Tensor[[64, 128], pl.FP16], acc: pl.InOut[pl.Tensor[[64, 128], pl.FP32]]):
    acc = scale_rows(x, acc, 2.0)  # M is 64 at this call
    return acc


@pl.jit
def two_sizes(
    x: pl.Tensor[[64, 128], pl.FP16],
    y: pl.Tensor[[40, 128], pl.FP16],
    acc_x: pl.InOut[pl.Tensor[[64, 128], pl.FP32]],
    acc_y: pl.InOut[pl.Tensor[[40, 128], pl.FP32]],
):
    acc_x = scale_rows(x, acc_x, 2.0)
    acc_y = scale_rows(y, acc_y, 2.0)
    return acc_x, acc_y


def test_a_static_caller_passes_its_extent_to_a_dynamic_incore_kernel():
    x, acc = torch.randn(64, 128).half(), torch.randn(64, 128)
    want = acc + 2 * x.float()
    static_caller(x, acc, config=sim())
    assert torch.allclose(acc, want, atol=1e-3)


def test_two_calls_with_two_extents_share_one_kernel():
    x, y = torch.randn(64, 128).half(), torch.randn(40, 128).half()
    acc_x, acc_y = torch.randn(64, 128), torch.randn(40, 128)
    want_x, want_y = acc_x + 2 * x.float(), acc_y + 2 * y.float()
    two_sizes(x, y, acc_x, acc_y, config=sim())
    assert torch.allclose(acc_x, want_x, atol=1e-3) and torch.allclose(acc_y, want_y, atol=1e-3)
    program = two_sizes.parse(x, y, acc_x, acc_y)
    kernels = [name for name in program.functions if name.startswith("scale_rows")]
    assert kernels == ["scale_rows"]  # one kernel: M is bound from the tensors at each launch
    assert "x: pl.Tensor[[M, 128], pl.FP16]" in program.as_python()


@pl.jit.incore
def copy_rows(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
    pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], out)
    return out


def test_two_parameters_sharing_an_extent_must_agree_at_the_call():
    @pl.jit
    def mismatched(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        out = copy_rows(x, out)
        return out

    with pytest.raises(TypeCheckError) as err:
        mismatched(torch.randn(32, 64), torch.zeros(16, 64), config=sim())
    assert err.value.message == (
        "copy_rows(): dynamic extent M is 32 in 'x' (dim 0) but 16 in 'out' (dim 0): tensors annotated "
        "with the same M must agree"
    )
    assert "out = copy_rows(x, out)" in str(err.value)


def test_extents_known_only_at_run_time_are_checked_when_the_kernel_launches():
    @pl.jit
    def two_names(x: pl.Tensor[[N, 64], pl.FP32], out: pl.Out[pl.Tensor[[S, 64], pl.FP32]]):
        out = copy_rows(x, out)
        return out

    x, out = torch.randn(16, 64), torch.zeros(16, 64)
    two_names(x, out, config=sim())
    assert torch.allclose(out, x)
    with pytest.raises(SpecializationError, match=r"M is 16 in 'x' \(dim 0\) but 24 in 'out'") as err:
        two_names(torch.randn(16, 64), torch.zeros(24, 64), config=sim())
    assert "out = copy_rows(x, out)" in str(err.value)  # the call, where the tensors were picked


@pl.jit.incore
def both_halves(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M * 2, 64], pl.FP32]]):
    t = pl.load(x, [0, 0], [16, 64])
    pl.store(t, [0, 0], out)
    pl.store(pl.neg(t), [M, 0], out)
    return out


def test_an_expression_extent_of_a_callee_is_solved_or_checked_at_the_call():
    @pl.jit
    def fits(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        out = both_halves(x, out)
        return out

    x, out = torch.randn(16, 64), torch.zeros(32, 64)
    fits(x, out, config=sim())
    assert torch.allclose(out, torch.cat([x, -x]))

    @pl.jit
    def odd(x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[33, 64], pl.FP32]]):
        out = both_halves(x, out)
        return out

    with pytest.raises(TypeCheckError) as err:
        odd(torch.randn(16, 64), torch.zeros(33, 64), config=sim())
    assert (
        err.value.message
        == "both_halves(): dim 0 of 'out' is 33, but its annotation says M * 2, which is 32 with M = 16"
    )


def test_a_static_extent_of_a_callee_still_must_match():
    @pl.jit.incore
    def fixed(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], out)
        return out

    @pl.jit
    def wrong_columns(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]):
        out = fixed(x, out)
        return out

    with pytest.raises(
        TypeCheckError, match=r"annotated pl\.Tensor\[\[M, 64\], pl\.FP32\] \(dim 1 is 32, not 64\)"
    ):
        wrong_columns(torch.randn(16, 32), torch.zeros(16, 32), config=sim())


@pl.jit.inline
def doubled_rows(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
    for r in pl.range(0, M, 16):  # M is the extent of the caller's tensor
        t = pl.load(x, [r, 0], [16, 64])
        pl.store(pl.add(t, t), [r, 0], out)
    return out


def test_an_inline_helper_reads_its_extent_as_the_callers():
    @pl.jit
    def static_entry(x: pl.Tensor[[48, 64], pl.FP32], out: pl.Out[pl.Tensor[[48, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out = doubled_rows(x, out)
        return out

    x, out = torch.randn(48, 64), torch.zeros(48, 64)
    static_entry(x, out, config=sim())
    assert torch.allclose(out, 2 * x)
    assert "pl.range(0, 48, 16)" in static_entry.parse(x, out).as_python()


@pl.jit.opaque
def exp_rows(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for r in pl.range(0, M, 16):
            t = pl.load(x, [r, 0], [16, 64], valid_shape=[pl.min(16, M - r), 64])
            pl.store(pl.exp(t), [r, 0], out)
    return out


def test_an_opaque_helper_binds_its_extent_from_a_static_caller():
    @pl.jit
    def calls_opaque(x: pl.Tensor[[40, 64], pl.FP32], out: pl.Out[pl.Tensor[[40, 64], pl.FP32]]):
        out = exp_rows(x, out)
        return out

    x, out = torch.randn(40, 64), torch.zeros(40, 64)
    calls_opaque(x, out, config=sim())
    assert torch.allclose(out, x.exp(), atol=1e-5)


@pl.program
class StaticOverDynamic:
    @pl.function(type=pl.FunctionType.InCore)
    def negate(self, x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        for r in pl.range(0, M, 16):
            t = pl.load(x, [r, 0], [16, 64])
            out = pl.store(pl.neg(t), [r, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        out = self.negate(x, out)
        return out


def test_a_program_function_binds_its_extent_from_a_static_orchestration():
    x, out = torch.randn(64, 64), torch.zeros(64, 64)
    run(StaticOverDynamic, x, out, config=sim())
    assert torch.allclose(out, -x)


# ---------------------------------------------------------------- x.bind_dynamic(axis, M)


@pl.jit
def plus_one(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    x.bind_dynamic(0, S)
    out.bind_dynamic(0, S)
    with pl.at(level=pl.Level.CORE_GROUP):
        for r in pl.range(0, S, 16):
            t = pl.load(x, [r, 0], [16, 64], valid_shape=[pl.min(16, S - r), 64])
            pl.store(pl.add(t, 1.0), [r, 0], out)
    return out


def test_bind_dynamic_takes_a_dim_out_of_the_specialization():
    plus_one.cache_clear()
    for m in (64, 50, 7):
        x, out = torch.randn(m, 64), torch.zeros(m, 64)
        plus_one(x, out, config=sim())
        assert torch.allclose(out, x + 1), m
    assert plus_one.cache_info().misses == 1
    text = plus_one.parse(torch.randn(8, 64), torch.zeros(8, 64)).as_python()
    assert "x: pl.Tensor[[S, 64], pl.FP32]" in text and "bind_dynamic" not in text


@pl.jit
def exp_annotated(x: pl.Tensor[[128, 64], pl.FP32], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):
    x.bind_dynamic(0, S)
    out.bind_dynamic(0, S)
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(x)  # tiled over the run-time rows
    return out


def test_bind_dynamic_on_an_annotated_shape():
    exp_annotated.cache_clear()
    for m in (128, 77):
        x, out = torch.randn(m, 64), torch.zeros(m, 64)
        exp_annotated(x, out, config=sim())
        assert torch.allclose(out, x.exp(), atol=1e-5), m
    assert exp_annotated.cache_info().misses == 1
    with pytest.raises(SpecializationError, match=r"S is 16 in 'x' \(dim 0\) but 8 in 'out'"):
        exp_annotated(torch.randn(16, 64), torch.zeros(8, 64), config=sim())


def bind_dynamic_error(statement: str) -> PyptoError:
    namespace = {"pl": pl, "S": S}
    source = (
        "@pl.jit\n"
        "def k(x: pl.Tensor[[128, 64], pl.FP32], n: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor[[128, 64], pl.FP32]]):\n"
        f"    {statement}\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        "        out[:] = pl.exp(x)\n"
        "    return out\n"
    )
    path = f"<bind_dynamic {statement}>"
    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    exec(compile(source, path, "exec"), namespace)
    with pytest.raises(PyptoError) as err:
        namespace["k"](torch.randn(128, 64), 4, torch.zeros(128, 64), config=sim())
    return err.value


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        (
            "x.bind_dynamic(2, S)",
            "bind_dynamic names dim 2 of a parameter annotated pl.Tensor[[128, 64], pl.FP32], which has 2 dim(s)",
        ),
        ("x.bind_dynamic(0, 64)", "bind_dynamic's extent must be a pl.dynamic extent, got the int 64"),
        (
            "x.bind_dynamic(0.5, S)",
            "bind_dynamic's dim must be a whole number known at compile time, got the float 0.5",
        ),
        (
            "y.bind_dynamic(0, S)",
            "y.bind_dynamic(...) names no parameter: it makes a dim of a tensor parameter dynamic",
        ),
        (
            "n.bind_dynamic(0, S)",
            "n.bind_dynamic(...) names the parameter 'n', annotated pl.Scalar[pl.INDEX]",
        ),
        ("x.bind_dynamic(0)", "x.bind_dynamic() takes the dim and the extent, got x.bind_dynamic(0)"),
    ],
)
def test_a_wrong_bind_dynamic_is_an_error_at_its_line(statement: str, message: str):
    err = bind_dynamic_error(statement)
    assert isinstance(err, ParseError)
    assert err.message.startswith(message)
    assert statement in str(err) and "^" in str(err)
    assert "bind_dynamic" in (err.hint or "") or "dim from 0" in (err.hint or "")


def test_bind_dynamic_inside_a_block_is_an_error():
    err = bind_dynamic_error("for i in pl.range(2):\n        x.bind_dynamic(0, S)")
    assert "cannot stand inside a block" in err.message


# ---------------------------------------------------------------- INDEX tensors


@pl.jit
def gather_rows(
    rows: pl.Tensor[[N], pl.INDEX], x: pl.Tensor[[64, 32], pl.FP32], out: pl.Out[pl.Tensor[[N, 32], pl.FP32]]
):
    for i in pl.range(N):
        row = pl.tensor.read(rows, [i])  # an INDEX scalar: an offset as it is
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(x, [row, 0], [1, 32]), [i, 0], out)
    return out


def test_an_index_tensor_takes_int64_and_its_elements_are_offsets():
    rows = torch.tensor([3, 60, 0, 17], dtype=torch.int64)
    x, out = torch.randn(64, 32), torch.zeros(4, 32)
    gather_rows(rows, x, out, config=sim())
    assert torch.equal(out, x[rows])
    assert "rows: pl.Tensor[[N], pl.INDEX]" in gather_rows.parse(rows, x, out).as_python()


def test_an_int64_tensor_parameter_and_a_wrong_integer_width():
    @pl.jit
    def gather64(
        rows: pl.Tensor[[N], pl.INT64],
        x: pl.Tensor[[64, 32], pl.FP32],
        out: pl.Out[pl.Tensor[[N, 32], pl.FP32]],
    ):
        for i in pl.range(N):
            row = pl.tensor.read(rows, [i])
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.load(x, [row, 0], [1, 32]), [i, 0], out)
        return out

    rows, x, out = torch.tensor([5, 9], dtype=torch.int64), torch.randn(64, 32), torch.zeros(2, 32)
    gather64(rows, x, out, config=sim())
    assert torch.equal(out, x[rows])
    with pytest.raises(SpecializationError, match=r"argument 'rows' has dtype torch\.int32"):
        gather_rows(rows.int(), x, out, config=sim())


def test_one_element_of_a_1d_table_is_read_with_a_bare_index():
    @pl.jit
    def pick(
        table: pl.Tensor[[N], pl.INDEX],
        x: pl.Tensor[[64, 32], pl.FP32],
        out: pl.Out[pl.Tensor[[N, 32], pl.FP32]],
    ):
        for i in pl.range(N):
            row = pl.read(table, i)  # a 1-D tensor's offsets may be the index alone
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.load(x, [row, 0], [1, 32]), [i, 0], out)
        return out

    table, x, out = torch.tensor([7, 1, 63], dtype=torch.int64), torch.randn(64, 32), torch.zeros(3, 32)
    pick(table, x, out, config=sim())
    assert torch.equal(out, x[table])


# ---------------------------------------------------------------- a dynamic middle dim


@pl.jit
def per_batch(x: pl.Tensor[[2, S, 64], pl.FP32], out: pl.Out[pl.Tensor[[2, S, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for b in pl.range(2):
            for s in pl.range(0, S, 8):
                t = pl.load(x, [b, s, 0], [1, 8, 64], valid_shape=[1, pl.min(8, S - s), 64])
                pl.store(pl.mul(t, 3.0), [b, s, 0], out)
    return out


def test_loads_and_stores_over_a_dynamic_middle_dim():
    per_batch.cache_clear()
    for s in (16, 13):
        x, out = torch.randn(2, s, 64), torch.zeros(2, s, 64)
        per_batch(x, out, config=sim())
        assert torch.allclose(out, 3 * x), s
    assert per_batch.cache_info().misses == 1


def test_a_read_at_the_last_index_of_a_dynamic_middle_dim():
    @pl.jit
    def last_of_each(x: pl.Tensor[[2, S, 64], pl.FP32], out: pl.Out[pl.Tensor[[2, 64], pl.FP32]]):
        for b in pl.range(2):
            v = pl.tensor.read(x, [b, S - 1, 3])
            with pl.at(level=pl.Level.CORE_GROUP):
                pl.store(pl.full([1, 64], pl.FP32, v), [b, 0], out)
        return out

    x, out = torch.randn(2, 5, 64), torch.zeros(2, 64)
    last_of_each(x, out, config=sim())
    assert torch.equal(out, x[:, 4, 3:4].expand(2, 64))


def test_slices_of_static_extents_at_run_time_offsets_of_a_dynamic_middle_dim():
    @pl.jit
    def sliced(x: pl.Tensor[[2, S, 64], pl.FP32], out: pl.Out[pl.Tensor[[2, S, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for b in pl.range(2):
                for s in pl.range(0, S, 8):
                    out[b : b + 1, s : s + 8, :] = pl.exp(pl.slice(x, [1, 8, 64], [b, s, 0]))
        return out

    for s in (16, 24):
        x, out = torch.randn(2, s, 64), torch.zeros(2, s, 64)
        sliced(x, out, config=sim())
        assert torch.allclose(out, x.exp(), atol=1e-5), s


# ---------------------------------------------------------------- the compile cache


def test_a_dynamic_entry_compiles_once_and_a_static_one_is_pinned():
    @pl.jit
    def dynamic_entry(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        out = copy_rows(x, out)
        return out

    @pl.jit
    def static_entry(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        out = copy_rows(x, out)
        return out

    for m in (16, 48):
        dynamic_entry(torch.randn(m, 64), torch.zeros(m, 64), config=sim())
    assert dynamic_entry.cache_info().misses == 1
    assert dynamic_entry.compile(config=sim()) is dynamic_entry.compile(
        torch.randn(20, 64), torch.zeros(20, 64), config=sim()
    )
    static_entry(torch.randn(32, 64), torch.zeros(32, 64), config=sim())
    with pytest.raises(SpecializationError, match=r"argument 'x' has shape \[48, 64\]"):
        static_entry(torch.randn(48, 64), torch.zeros(48, 64), config=sim())


# ---------------------------------------------------------------- extents computed in an orchestration

ROWS = pl.dynamic("ROWS")
PARTS = pl.dynamic("PARTS")
Q = pl.dynamic("Q")
BLK = pl.dynamic("BLK")


@pl.function(type=pl.FunctionType.InCore)
def first_block(src: pl.Tensor[[ROWS, 64], pl.FP32], out: pl.Out[pl.Tensor[[Q, BLK], pl.FP32]]):
    out = pl.store(pl.load(src, [0, 0], [16, 64]), [0, 0], out)
    return out


@pl.function(type=pl.FunctionType.InCore)
def doubled_block(src: pl.Tensor[[Q, BLK], pl.FP32], out: pl.Out[pl.Tensor[[Q, BLK], pl.FP32]]):
    out = pl.store(pl.mul(pl.load(src, [0, 0], [16, 64]), 2.0), [0, 0], out)
    return out


@pl.program
class BlocksOfParts:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[ROWS, 64], pl.FP32],
        parts: pl.Tensor[[PARTS], pl.INT32],
        out: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
    ):
        block = pl.tensor.dim(a, 0) // pl.tensor.dim(parts, 0)  # ROWS // PARTS
        buf = pl.create_tensor([16, block], dtype=pl.FP32)
        buf = first_block(a, buf)  # Q is 16 and BLK is ROWS // PARTS at this call
        out = doubled_block(buf, out)  # Q is 16 and BLK is 64 at this one
        return out


def test_an_orchestration_sizes_a_tensor_by_extent_arithmetic_and_passes_it_on():
    assert "pl.tensor.create(shape=[16, ROWS // PARTS]" in BlocksOfParts.as_python()
    a, out = torch.randn(128, 64), torch.zeros(16, 64)
    run(BlocksOfParts, a, torch.zeros(2, dtype=torch.int32), out, config=sim())
    assert torch.allclose(out, 2 * a[:16])


def test_a_minimum_of_an_extent_sizes_a_tensor_and_reads_back():
    @pl.jit
    def head(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        rows = pl.min(M, 32)
        tmp = pl.create_tensor([rows, 64], pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(x, [0, 0], [32, 64], valid_shape=[rows, 64]), [0, 0], tmp)
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.neg(pl.load(tmp, [0, 0], [32, 64], valid_shape=[rows, 64])), [0, 0], out)
        return out

    for m in (40, 10):
        x, out = torch.randn(m, 64), torch.zeros(m, 64)
        head(x, out, config=sim())
        h = min(m, 32)
        assert torch.allclose(out[:h], -x[:h]) and not out[h:].any(), m
    program = head.parse(torch.randn(8, 64), torch.zeros(8, 64))
    assert structural_diff(program, pl.parse(program.as_python())) is None


def test_a_constant_valid_region_of_a_dynamic_tensor_is_checked_at_run_time():
    @pl.jit
    def corner(x: pl.Tensor[[M, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            pl.store(pl.load(x, [0, 0], [16, 64], valid_shape=[8, 64]), [0, 0], out)
        return out

    x, out = torch.randn(20, 64), torch.zeros(20, 64)
    corner(x, out, config=sim())
    assert torch.equal(out[:8], x[:8]) and not out[8:].any()
    with pytest.raises(PyptoError, match=r"outside dim 0 of size 4"):
        corner(torch.randn(4, 64), torch.zeros(4, 64), config=sim())


@pytest.mark.parametrize(
    ("extent", "message"),
    [
        ("M * 2.5", "M * 2.5: an extent is a whole number, and 2.5 is not one"),
        ("M + True", "M + True: an extent is a whole number, and True is not one"),
        ("M / 2", "M / 2 is no extent"),
        ("-M", "-M is no extent"),
    ],
)
def test_arithmetic_that_gives_no_extent_is_an_error_at_the_annotation(extent: str, message: str):
    source = f"@pl.jit\ndef k(x: pl.Tensor[[{extent}, 64], pl.FP32]):\n    return x\n"
    path = f"<extent {extent}>"
    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    with pytest.raises(ParseError) as err:
        exec(compile(source, path, "exec"), {"pl": pl, "M": M})
    assert err.value.message == message
    assert err.value.span is not None and err.value.span.line == 2
    assert err.value.hint
