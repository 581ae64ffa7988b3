"""The type rules of dtypes: what an integer or BOOL tile accepts, scalars that do not fit the
elements, and the one set of cast modes. Each refusal is a TypeCheckError (or a ParseError for a
bad ``mode=``) at the user's line, with a caret and a hint that says to ``pl.cast`` first."""

import itertools

import pytest
from lang_diagnostics import module_at, rendered

import pypto.language as pl
from pypto.ir import Call, CastMode, Const, DataType, ParseError, PyptoError, TypeCheckError
from pypto.ir.nodes import walk_expr, walk_stmts

_modules = itertools.count()


def tile_kernel(dtype, expr, tmp_path):
    """A kernel whose scope loads ``x`` as a [16, 16] tile ``t`` of ``dtype`` and stores ``expr``
    (the parser reads kernels from source, so the kernel is written to a module and imported)."""
    path = tmp_path / f"dtype_kernel_{next(_modules)}.py"
    module = module_at(
        path,
        "import pypto.language as pl\n\n\n"
        "@pl.jit\n"
        f"def kernel(x: pl.Tensor[[16, 16], pl.{dtype.name}], out: pl.Out[pl.Tensor[[16, 16], pl.{dtype.name}]]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        "        t = pl.load(x, [0, 0], [16, 16])\n"
        f"        pl.store({expr}, [0, 0], out)\n"
        "    return out\n",
    )
    return module.kernel


def calls(program, op):
    fn = program.entry_function
    return [
        e
        for stmt in walk_stmts(fn.body)
        for root in ([stmt.value] if hasattr(stmt, "value") else [])
        for e in walk_expr(root)
        if isinstance(e, Call) and e.op == op
    ]


def refused(kernel, error=TypeCheckError):
    with pytest.raises(error) as info:
        kernel.parse()
    err = rendered(info.value)
    assert err.hint, "every refusal has a hint"
    return info.value, err


def test_a_fractional_scalar_on_an_integer_tile_is_a_type_error(tmp_path):
    err, shown = refused(tile_kernel(pl.INT32, "pl.mul(t, 2.5)", tmp_path))
    assert err.message == (
        "pl.mul: the scalar operand is a FP32 scalar 2.5, which pl.INT32 elements cannot hold exactly"
    )
    assert shown.underlined == "pl.mul(t, 2.5)"
    assert "pl.cast(x, pl.FP32)" in shown.hint


def test_a_whole_float_on_an_integer_tile_is_that_integer(tmp_path):
    program = tile_kernel(pl.INT32, "pl.mul(t, 2.0)", tmp_path).parse()
    (muls,) = calls(program, "tile.muls")
    scalar = muls.args[1]
    assert isinstance(scalar, Const) and scalar.value == 2 and scalar.type.dtype is DataType.INT32


def test_a_scalar_outside_the_integer_range_names_the_range(tmp_path):
    err, shown = refused(tile_kernel(pl.INT8, "pl.add(t, 300)", tmp_path))
    assert err.message == "pl.add: the scalar operand 300 does not fit pl.INT8, whose range is [-128, 127]"
    assert shown.underlined == "pl.add(t, 300)"
    err, _ = refused(tile_kernel(pl.UINT8, "pl.sub(t, -1)", tmp_path))
    assert "[0, 255]" in err.message


def test_a_fill_value_outside_the_dtype_range_is_a_type_error(tmp_path):
    err, shown = refused(tile_kernel(pl.INT8, "pl.add(t, pl.full([16, 16], pl.INT8, 1000))", tmp_path))
    assert err.message == "pl.full: the fill value 1000 does not fit pl.INT8, whose range is [-128, 127]"
    assert shown.underlined == "pl.full([16, 16], pl.INT8, 1000)"
    err, _ = refused(tile_kernel(pl.INT32, "pl.add(t, pl.full([16, 16], pl.INT32, 0.5))", tmp_path))
    assert "cannot hold exactly" in err.message


@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "rsqrt", "recip"])
def test_float_only_ops_refuse_integer_tiles(op, tmp_path):
    err, shown = refused(tile_kernel(pl.INT32, f"pl.{op}(t)", tmp_path))
    assert err.message == f"pl.{op}: is defined on floats, got Tile[[16, 16], INT32, Vec]"
    assert shown.underlined == f"pl.{op}(t)"
    assert "pl.cast(x, pl.FP32)" in shown.hint


@pytest.mark.parametrize("op", ["neg", "abs", "relu"])
def test_sign_ops_work_on_integer_tiles(op, tmp_path):
    tile_kernel(pl.INT32, f"pl.{op}(t)", tmp_path).parse()


@pytest.mark.parametrize("expr", ["pl.add(t, t)", "pl.neg(t)", "pl.mul(t, 1)", "pl.row_sum(t, t)"])
def test_arithmetic_on_bool_tiles_asks_for_a_cast(expr, tmp_path):
    err, shown = refused(tile_kernel(pl.BOOL, expr, tmp_path))
    assert "computes on numbers, got Tile[[16, 16], BOOL, Vec]" in err.message
    assert "pl.cast(x, pl.INT32)" in shown.hint


def test_a_bool_scalar_is_not_a_number(tmp_path):
    err, _ = refused(tile_kernel(pl.FP32, "pl.add(t, True)", tmp_path))
    assert err.message == "pl.add: the scalar operand is a BOOL scalar True, not a number of pl.FP32"


def test_a_run_time_float_scalar_on_an_integer_tile_is_a_type_error():
    @pl.jit
    def scaled(
        x: pl.Tensor[[16, 16], pl.INT32],
        s: pl.Tensor[[1], pl.FP32],
        out: pl.Out[pl.Tensor[[16, 16], pl.INT32]],
    ):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 16])
            pl.store(pl.mul(t, pl.read(s, [0])), [0, 0], out)
        return out

    err, _ = refused(scaled)
    assert err.message == (
        "pl.mul: the scalar operand is a FP32 scalar, which pl.INT32 elements cannot hold exactly"
    )


def test_tensor_level_ops_follow_the_same_rules():
    @pl.jit
    def tensor_exp(x: pl.Tensor[[16, 16], pl.INT32], out: pl.Out[pl.Tensor[[16, 16], pl.INT32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(x)
        return out

    err, shown = refused(tensor_exp)
    assert err.message == "pl.exp: is defined on floats, got Tensor[[16, 16], INT32]"
    assert shown.underlined == "pl.exp(x)"


@pytest.mark.parametrize("mode", ["'none'", "'odd'", "'nearest'", "3"])
def test_a_cast_mode_outside_the_enum_is_refused_at_parse_time(mode, tmp_path):
    expr = f"pl.cast(pl.cast(t, pl.INT32, mode={mode}), pl.FP32)"
    err, shown = refused(tile_kernel(pl.FP32, expr, tmp_path), ParseError)
    assert err.message.startswith("pl.cast: unknown rounding mode")
    assert "'rint'" in shown.hint and "'trunc'" in shown.hint


@pytest.mark.parametrize(
    "mode", [*(f"pl.CastMode.{m.name}" for m in CastMode), *(repr(m.value) for m in CastMode)]
)
def test_cast_modes_are_one_enum_spelled_as_a_member_or_its_name(mode, tmp_path):
    expr = f"pl.cast(pl.cast(t, pl.INT32, mode={mode}), pl.FP32)"
    program = tile_kernel(pl.FP32, expr, tmp_path).parse()
    modes = [c.attrs["mode"] for c in calls(program, "tile.cast")]
    assert all(isinstance(m, CastMode) for m in modes)
    assert mode.split(".")[-1].strip("'") in modes


def test_refusals_are_pypto_errors_that_are_also_type_errors(tmp_path):
    err, _ = refused(tile_kernel(pl.INT32, "pl.exp(t)", tmp_path))
    assert isinstance(err, PyptoError) and isinstance(err, TypeError)


def test_a_float_constant_beyond_the_dtype_is_a_type_error(tmp_path):
    err, shown = refused(tile_kernel(pl.FP16, "pl.mul(t, 100000.0)", tmp_path))
    assert (
        err.message
        == "pl.mul: the scalar operand 100000.0 does not fit pl.FP16, whose largest value is 65504"
    )
    assert shown.underlined == "pl.mul(t, 100000.0)"
    err, _ = refused(tile_kernel(pl.FP32, "pl.add(t, 1e39)", tmp_path))
    assert "does not fit pl.FP32" in err.message


def test_infinity_is_a_float_constant_like_any_other(tmp_path):
    tile_kernel(pl.FP16, "pl.maximum(t, pl.full([16, 16], pl.FP16, -float('inf')))", tmp_path).parse()
    tile_kernel(pl.FP16, "pl.add(t, 65504.0)", tmp_path).parse()
