"""How the catalog's remainder, bitwise, comparison, selection, partial and reduction ops are
written in the DSL: which op a spelling builds (``pl.cmp`` with a scalar is ``cmps``, ``a < b`` on
tiles is ``cmp``, ``pl.maximums`` is the scalar form), and each misuse a PyptoError at the user's
line with a hint."""

import itertools

import pytest
from lang_diagnostics import module_at, rendered

import pypto.language as pl
from pypto.ir import Call, CmpType, DataType, ParseError, PyptoError, TypeCheckError
from pypto.ir.nodes import walk_expr, walk_stmts
from pypto.ir.printer import print_ir

_modules = itertools.count()


def kernel_with(body, tmp_path, dtype="FP32", shape="[16, 32]", out_dtype=None):
    """A kernel whose scope has tensors ``x``, ``y``, their tiles ``tx``, ``ty`` (of ``dtype``) and
    a scratch tile ``tmp``, then ``body`` (lines, indented for the scope)."""
    path = tmp_path / f"catalog_kernel_{next(_modules)}.py"
    lines = "\n".join(f"        {line}" for line in body.strip().splitlines())
    module = module_at(
        path,
        "import pypto.language as pl\n\n\n"
        "@pl.jit\n"
        f"def kernel(x: pl.Tensor[{shape}, pl.{dtype}], y: pl.Tensor[{shape}, pl.{dtype}],\n"
        f"           out: pl.Out[pl.Tensor[{shape}, pl.{out_dtype or dtype}]]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        f"        tx = pl.load(x, [0, 0], {shape})\n"
        f"        ty = pl.load(y, [0, 0], {shape})\n"
        f"        tmp = pl.create_tile({shape}, pl.{dtype})\n"
        f"{lines}\n"
        "    return out\n",
    )
    return module.kernel


def ops_of(kernel):
    fn = kernel.parse().entry_function
    found = []
    for stmt in walk_stmts(fn.body):
        for root in [stmt.value] if hasattr(stmt, "value") else []:
            found += [e for e in walk_expr(root) if isinstance(e, Call)]
    return found


def op_named(kernel, op):
    return next(c for c in ops_of(kernel) if c.op == op)


def refused(kernel, error=PyptoError):
    with pytest.raises(error) as info:
        kernel.parse()
    shown = rendered(info.value)
    assert shown.hint, "every refusal has a hint"
    return info.value, shown


# ---------------------------------------------------------------- which op a spelling builds


@pytest.mark.parametrize(
    ("expr", "op", "mode"),
    [
        ("tx < ty", "tile.cmp", CmpType.lt),
        ("tx >= 0.5", "tile.cmps", CmpType.ge),
        ("0.5 < tx", "tile.cmps", CmpType.gt),  # c < x is x > c
        ("tx == ty", "tile.cmp", CmpType.eq),
        ('pl.cmp(tx, ty, cmp_type="ne")', "tile.cmp", CmpType.ne),
        ("pl.cmp(tx, 0.0, cmp_type=4)", "tile.cmps", CmpType.gt),  # the codes follow eq, ne, lt, le, gt, ge
        ("pl.cmps(tx, 1.0, cmp_type=pl.CmpType.le)", "tile.cmps", CmpType.le),
        ("x != y", "tensor.cmp", CmpType.ne),
    ],
)
def test_a_comparison_of_tensors_or_tiles_is_a_cmp_with_its_test(expr, op, mode, tmp_path):
    kernel = kernel_with(
        f"m = {expr}\npl.store(pl.cast(pl.load(y, [0, 0], [16, 32]), pl.FP32), [0, 0], out)", tmp_path
    )
    assert op_named(kernel, op).attrs["cmp_type"] is mode


def test_a_scalar_form_spelled_at_the_top_level_dispatches_on_the_operand(tmp_path):
    kernel = kernel_with(
        "out[:] = pl.maximums(x, 0.25)\npl.store(pl.maximums(tx, 0.5), [0, 0], out)", tmp_path
    )
    assert {c.op for c in ops_of(kernel)} >= {"tensor.maximums", "tile.maximums"}


def test_a_top_level_scalar_form_with_a_tile_on_the_right_is_refused(tmp_path):
    err, shown = refused(kernel_with("pl.store(pl.maximums(tx, ty), [0, 0], out)", tmp_path), ParseError)
    assert "pl.maximums: the right operand must be a scalar, got" in err.message
    assert "pl.maximum(a, b)" in shown.hint


def test_pl_sel_with_a_scalar_third_operand_is_sels_in_the_picked_tiles_dtype(tmp_path):
    kernel = kernel_with("pl.store(pl.sel(tx > ty, tx, 0), [0, 0], out)", tmp_path)
    sels = op_named(kernel, "tile.sels")
    assert sels.args[2].type.dtype is DataType.FP32 and sels.args[0].type.dtype is DataType.BOOL


def test_bitwise_ops_keep_their_dsl_names_through_print_and_parse(tmp_path):
    kernel = kernel_with(
        "out[:] = pl.and_(x, y)\npl.store(pl.xor(pl.not_(tx), ty, tmp), [0, 0], out)", tmp_path, dtype="INT16"
    )
    text = print_ir(kernel.parse())
    assert "pl.tensor.and_(x, y)" in text and "pl.tile.not_(tx)" in text
    assert "pl.tile.xor(not_, ty, tmp)" in text
    assert print_ir(pl.parse(text)) == text


def test_a_reduction_takes_its_scratch_as_tmp_tile_and_the_old_keyword_too(tmp_path):
    kernel = kernel_with(
        "r = pl.row_sum(tx, tmp_tile=tmp)\nq = pl.row_max(tx, tmp=tmp)\nc = pl.col_sum(tx, tmp_tile=tmp)\n"
        "pl.store(pl.row_expand_sub(tx, pl.add(r, q)), [0, 0], out)",
        tmp_path,
    )
    assert len(op_named(kernel, "tile.col_sum").args) == 2


# ---------------------------------------------------------------- misuse


def test_high_precision_on_a_tile_rsqrt_is_a_type_error_naming_the_tile_path(tmp_path):
    err, shown = refused(kernel_with("pl.store(pl.rsqrt(tx, high_precision=True), [0, 0], out)", tmp_path))
    assert isinstance(err, TypeError)
    assert err.message == "pl.rsqrt: high_precision= applies to tensors, not to tiles"
    assert "pl.rsqrt(x, tmp=None)" in shown.hint
    assert shown.underlined.startswith("pl.rsqrt(")


def test_the_default_of_a_keyword_of_another_level_is_accepted(tmp_path):
    kernel = kernel_with("pl.store(pl.rsqrt(tx, high_precision=False), [0, 0], out)", tmp_path)
    assert len(op_named(kernel, "tile.rsqrt").args) == 1


def test_a_tensor_rsqrt_takes_no_scratch_tile(tmp_path):
    err, _ = refused(kernel_with("out[:] = pl.rsqrt(x, tmp)", tmp_path), TypeCheckError)
    assert "takes no scratch operand" in err.message


def test_a_chained_comparison_of_tiles_is_refused(tmp_path):
    err, _ = refused(kernel_with("m = tx < ty < tx\npl.store(tx, [0, 0], out)", tmp_path), ParseError)
    assert "only a single <, <=, >, >=, == or != compares tensors or tiles" in err.message


def test_an_unknown_comparison_names_the_tests(tmp_path):
    _, shown = refused(
        kernel_with('m = pl.cmp(tx, ty, cmp_type="bigger")\npl.store(tx, [0, 0], out)', tmp_path)
    )
    assert '"eq", "ne", "lt", "le", "gt", "ge"' in shown.hint


def test_bitwise_ops_on_floats_say_to_convert_to_integers(tmp_path):
    err, shown = refused(kernel_with("pl.store(pl.and_(tx, ty), [0, 0], out)", tmp_path), TypeCheckError)
    assert err.message.startswith("pl.and_: is defined on integers, got Tile[[16, 32], FP32")
    assert "pl.cast(x, pl.INT32)" in shown.hint


def test_bitwise_ops_do_not_broadcast_a_column(tmp_path):
    body = "tr = pl.load(x, [0, 0], [16, 1])\npl.store(pl.or_(tx, tr), [0, 0], out)"
    err, shown = refused(kernel_with(body, tmp_path, dtype="INT32"), TypeCheckError)
    assert "operand shape mismatch" in err.message and "do not broadcast" in shown.hint


def test_a_partial_op_of_a_tile_with_a_run_time_valid_shape_is_refused(tmp_path):
    body = (
        "n = pl.read(y, [0, 0])\n"
        "part = pl.load(x, [0, 0], [16, 32], valid_shape=[pl.cast(n, pl.INDEX), 32])\n"
        "pl.store(pl.part_add(tx, part), [0, 0], out)"
    )
    err, shown = refused(kernel_with(body, tmp_path, dtype="INT32"), ParseError)
    assert "valid shape is set at run time" in err.message
    assert "pl.set_validshape" in shown.hint


def test_sel_and_prelu_are_tile_ops(tmp_path):
    err, _ = refused(kernel_with("out[:] = pl.sel(x > y, x, y)", tmp_path), ParseError)
    assert "must be a tile" in err.message
