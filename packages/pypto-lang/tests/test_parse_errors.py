"""Structural errors: each is a ParseError at the user's line, with a caret and a hint."""

import pytest
from lang_diagnostics import header, module_at, rendered

import pypto.language as pl
from pypto.ir import ParseError, PyptoError, TypeCheckError

T64 = pl.Tensor[[64, 64], pl.FP32]
FILE = __file__


def test_parameter_without_annotation_is_named_at_its_position():
    @pl.jit
    def no_annotation(a, out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        return out

    with pytest.raises(ParseError) as info:
        no_annotation.parse()
    err = rendered(info.value)
    assert info.value.message == "Parameter 'a' missing type annotation"
    assert err.header == header(FILE, "def no_annotation(a,", "a,", "Parameter 'a' missing type annotation")
    assert err.underlined == "a"
    assert err.hint.startswith("annotate it, e.g. a: pl.Tensor[[128, 128], pl.FP32]")


def test_tensor_op_in_the_jit_body_outside_a_scope_names_the_op_and_the_fix():
    @pl.jit
    def unscoped(a: T64, b: T64, out: pl.Out[T64]):
        c = pl.add(a, b)  # no scope around it
        out[:] = c
        return out

    with pytest.raises(ParseError) as info:
        unscoped.parse()
    err = rendered(info.value)
    assert err.header == header(
        FILE,
        "c = pl.add(a, b)  # no scope",
        "pl.add",
        "pl.add outside a pl.at scope: tensor and tile operations run on a core group, "
        "not directly in the @pl.jit body",
    )
    assert err.underlined == "pl.add(a, b)"
    assert "with pl.at(level=pl.Level.CORE_GROUP):" in err.hint


def test_python_operator_on_tensors_outside_a_scope_is_the_same_error():
    @pl.jit
    def unscoped_plus(a: T64, b: T64):
        c = a * b  # operator outside a scope
        return c

    with pytest.raises(ParseError) as info:
        unscoped_plus.parse()
    assert info.value.message.startswith("pl.mul outside a pl.at scope")
    assert rendered(info.value).underlined == "a * b"


def test_region_write_outside_a_scope_is_the_same_error():
    @pl.jit
    def unscoped_write(a: T64, out: pl.Out[T64]):
        out[:] = a
        return out

    with pytest.raises(ParseError) as info:
        unscoped_write.parse()
    assert info.value.message.startswith("out[:] = ... outside a pl.at scope")


def test_unsupported_construct_is_named():
    @pl.jit
    def trying(a: T64):
        try:
            pass
        finally:
            pass

    with pytest.raises(ParseError) as info:
        trying.parse()
    err = rendered(info.value)
    assert info.value.message == "unsupported Python construct in a kernel: a try statement"
    assert err.source.strip() == "try:"


def test_a_while_loop_that_never_ends_is_named():
    @pl.jit
    def looping(a: T64):
        while True:
            pass

    with pytest.raises(ParseError) as info:
        looping.parse()
    err = rendered(info.value)
    assert info.value.message.startswith("this while loop never ends once it starts")
    assert err.source.strip() == "while True:"


def test_list_comprehension_is_named():
    @pl.jit
    def comprehension(a: T64):
        return [d * 2 for d in a.shape]  # comprehension

    with pytest.raises(ParseError, match="unsupported Python construct in a kernel: a list comprehension"):
        comprehension.parse()


def test_unknown_name_is_underlined():
    @pl.jit
    def unknown(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, undefined_tensor)  # noqa: F821
        return out

    with pytest.raises(ParseError) as info:
        unknown.parse()
    err = rendered(info.value)
    assert info.value.message == "unknown name 'undefined_tensor'"
    assert err.underlined == "undefined_tensor"
    assert err.hint is not None


def test_python_range_in_a_kernel_hints_at_pl_range():
    @pl.jit
    def python_range(a: T64, out: pl.Out[T64]):
        for _i in range(4):
            pass
        return out

    with pytest.raises(ParseError) as info:
        python_range.parse()
    err = rendered(info.value)
    assert err.underlined == "range(4)"
    assert err.hint == "use pl.range(...) (or pl.parallel / pl.unroll)"


@pytest.mark.parametrize(
    ("loop", "message"),
    [
        ("no_bounds", "pl.range() takes (stop), (start, stop) or (start, stop, step); got 0 arguments"),
        ("float_bound", "pl.range() bounds must be integers, got the float 2.5"),
        ("zero_step", "pl.range() step must not be zero"),
        ("carried", "loop-carried values are written `for i, (a, b) in pl.range(n, init_values=(a0, b0)):`"),
        ("range_as_value", "pl.range(...) cannot be used here"),
        ("not_a_range", "a kernel loop iterates over pl.range(...), pl.parallel(...) or pl.unroll(...)"),
    ],
)
def test_pl_range_misuse_is_a_parse_error(loop, message):
    @pl.jit
    def no_bounds(a: T64):
        for _i in pl.range():
            pass

    @pl.jit
    def float_bound(a: T64):
        for _i in pl.range(2.5):
            pass

    @pl.jit
    def zero_step(a: T64):
        for _i in pl.range(0, 8, 0):
            pass

    @pl.jit
    def carried(a: T64):
        for _i in pl.range(4, init_values=(a,)):
            pass

    @pl.jit
    def range_as_value(a: T64):
        return pl.range(4)

    @pl.jit
    def not_a_range(a: T64):
        for _i in a.shape:
            pass

    kernels = {k.name: k for k in (no_bounds, float_bound, zero_step, carried, range_as_value, not_a_range)}
    with pytest.raises(ParseError) as info:
        kernels[loop].parse()
    assert message in info.value.message
    assert info.value.span is not None and info.value.span.file == FILE


def test_optimizations_that_are_not_a_literal_list_fail_at_that_line():
    opts = [pl.split(pl.SplitMode.UP_DOWN)]

    @pl.jit
    def indirect(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=opts):
            out[:] = pl.exp(a)
        return out

    with pytest.raises(ParseError) as info:
        indirect.parse()
    err = rendered(info.value)
    assert info.value.message == "optimizations= must be a literal list"
    assert err.header == header(
        FILE,
        "with pl.at(level=pl.Level.CORE_GROUP, optimizations=opts)",
        "opts)",
        "optimizations= must be a literal list",
    )
    assert err.underlined == "opts"
    assert "optimizations=[pl.split(pl.SplitMode.UP_DOWN)" in err.hint


def test_bad_slot_num_is_a_value_error_with_the_span_of_the_call():
    @pl.jit
    def zero_slots(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(slot_num=0)]):
            out[:] = pl.exp(a)
        return out

    with pytest.raises(ValueError) as info:
        zero_slots.parse()
    err = info.value
    assert isinstance(err, PyptoError)
    assert err.message == "pl.cross_core_slot(slot_num=0): slot_num must be a positive int"
    assert rendered(err).underlined == "pl.cross_core_slot(slot_num=0)"


def test_a_name_made_in_a_parallel_loop_does_not_exist_after_it():
    @pl.jit
    def leaked(a: T64, out: pl.Out[T64]):
        for i in pl.parallel(4):
            offset = i * 16
        return offset + 1

    with pytest.raises(ParseError, match="'offset' is defined inside a loop") as info:
        leaked.parse()
    assert "pl.parallel" in rendered(info.value).hint


def test_op_type_errors_come_from_the_op_table_at_the_users_line():
    @pl.jit
    def mismatch(a: T64, b: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(a, b)  # shapes differ
        return out

    with pytest.raises(TypeCheckError) as info:
        mismatch.parse()
    err = rendered(info.value)
    assert info.value.message == (
        "pl.add: operand shape mismatch: Tensor[[64, 64], FP32] vs Tensor[[32, 64], FP32]"
    )
    assert err.underlined == "pl.add(a, b)"
    assert err.header.startswith(f"{FILE}:{info.value.span.line}:")


def test_scopes_do_not_nest():
    @pl.jit
    def nested(a: T64):
        with pl.at(level=pl.Level.CORE_GROUP):  # noqa: SIM117 - nesting is the error under test
            with pl.at(level=pl.Level.CORE_GROUP):
                pass

    with pytest.raises(ParseError, match=r"pl\.at scopes do not nest"):
        nested.parse()


def test_return_inside_a_scope_is_rejected():
    @pl.jit
    def early(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(a)
            return out

    with pytest.raises(ParseError, match="`return` must be the last statement"):
        early.parse()


def test_tile_annotation_that_contradicts_the_value_is_a_type_error():
    @pl.jit
    def wrong_tile(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t: pl.Tile[[64, 64], pl.FP16] = pl.load(a, [0, 0], [64, 64])
            pl.store(t, [0, 0], out)
        return out

    with pytest.raises(TypeCheckError) as info:
        wrong_tile.parse()
    assert info.value.message == (
        "'t' is annotated pl.Tile[[64, 64], pl.FP16] but the value is Tile[[64, 64], FP32, Vec]"
    )


def test_region_size_that_contradicts_the_value_is_a_type_error():
    @pl.jit
    def short_region(a: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[0:16, :] = pl.exp(a)
        return out

    with pytest.raises(
        TypeCheckError, match=r"the region \[0:16\] of dim 0 holds 16 elements but the value has 32"
    ):
        short_region.parse()


def test_rebinding_an_outer_name_in_a_run_time_if_arm_makes_the_value_leave_the_if():
    """Rebinding in one arm was an error until values could leave an if (issue #12): the arm
    that rebinds yields its value, the other the one from before the if."""

    @pl.jit
    def branchy(a: T64, flags: pl.Tensor[[4], pl.INT32], out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [64, 64])
            if pl.read(flags, [0]) > 0:
                t = pl.exp(t)
            pl.store(t, [0, 0], out)
        return out

    scope = branchy.parse().entry_function.body[0]
    load, branch, store = scope.body
    assert [r.name for r in branch.results] == ["t_2"]
    assert branch.else_yields == (load.target,)
    assert store.value.args[0] is branch.results[0]


def test_calling_an_arbitrary_python_function_is_rejected():
    @pl.jit
    def calls_print(a: T64):
        print(a)

    with pytest.raises(ParseError, match="cannot call print inside a kernel"):
        calls_print.parse()


OFFSETS = (0, 32)


def test_a_python_tuple_indexed_by_a_loop_variable_says_so():
    @pl.jit
    def tuple_by_loop(a: T64, out: pl.Out[T64]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(2):
                t = pl.load(a, [OFFSETS[i], 0], [32, 64])
                pl.store(t, [i * 32, 0], out)
        return out

    with pytest.raises(ParseError) as info:
        tuple_by_loop.parse()
    err = rendered(info.value)
    assert info.value.message.startswith(
        "OFFSETS is a Python tuple, read at compile time, but the index i is a run-time value"
    )
    assert err.underlined == "OFFSETS[i]"
    assert "pl.read(t, [i])" in err.hint


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("a.x = 1", "cannot assign to an attribute (x.attr = ...) in a kernel"),
        (
            "try:\n            pass\n        finally:\n            pass",
            "unsupported Python construct in a kernel: a try statement",
        ),
        ("x = {1: 2}", "unsupported Python construct in a kernel: a dict display"),
        ("x = 2 ** a", "operator ** is not supported on the int 2 and Tensor[[64, 64], FP32]"),
        ("x = a & a", "operator & is not supported on Tensor[[64, 64], FP32] and Tensor[[64, 64], FP32]"),
    ],
)
def test_unsupported_constructs_are_named_in_words(tmp_path, statement, message):

    path = tmp_path / "construct.py"
    module = module_at(
        path,
        "import pypto.language as pl\n\n\n@pl.jit\n"
        "def kernel(a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):\n"
        "    with pl.at(level=pl.Level.CORE_GROUP):\n"
        f"        {statement}\n"
        "    return out\n",
    )
    with pytest.raises(ParseError) as info:
        module.kernel.parse()
    assert info.value.message.startswith(message)
    assert rendered(info.value).hint
    assert not any(word in info.value.message for word in ("Assign", "BinOp", "Pow", "BitAnd", "syntax"))


def test_a_lambda_is_not_a_kernel():
    kernel = pl.jit(lambda a: a)
    with pytest.raises(ParseError) as info:
        kernel.parse()
    assert info.value.message == "@pl.jit decorates a plain def, got a lambda"
    assert info.value.hint
