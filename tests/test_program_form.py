"""The explicit program form: ``@pl.program`` classes of ``@pl.function`` methods, run on a2a3sim
against torch (issue #11 item 1)."""

import warnings

import pytest
import torch

import pypto.language as pl
from pypto.ir import FunctionKind, ParamRef, ParseError, Program, structural_diff
from pypto.runtime import RunConfig, compile_program, run

T = pl.Tensor[[64, 64], pl.FP32]
ROWS = 64  # a module-level name in annotations


@pl.program
class AddTwice:
    @pl.function(type=pl.FunctionType.InCore)
    def add(self, a: T, b: T, out: pl.Out[T]):
        ta: pl.Tile[[64, 64], pl.FP32] = pl.load(a, [0, 0], [64, 64])
        tb = pl.load(b, [0, 0], [64, 64])
        pl.store(pl.add(ta, tb), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: T, b: T, tmp: pl.Out[T], out: pl.Out[T]):
        tmp = self.add(a, b, tmp)
        out = self.add(tmp, b, out)
        return out


def test_a_program_class_is_an_ir_program_of_its_functions():
    assert isinstance(AddTwice, Program)
    assert AddTwice.name == "AddTwice" and AddTwice.entry == "main"
    kinds = {fn.name: fn.kind for fn in _functions(AddTwice)}
    assert kinds == {"add": FunctionKind.InCore, "main": FunctionKind.Orchestration}
    assert [p.var.name for p in AddTwice.function("add").params] == ["a", "b", "out"]  # no self
    calls = [s.value.attrs["callee"] for s in AddTwice.function("main").body if hasattr(s, "value")]
    assert calls == ["add", "add"]  # one function, called twice


def test_self_calls_run_in_order_against_torch():
    a, b = torch.randn(64, 64), torch.randn(64, 64)
    tmp, out = torch.zeros(64, 64), torch.zeros(64, 64)
    run(AddTwice, a, b, tmp, out, config=RunConfig(platform="a2a3sim"))
    assert torch.allclose(out, a + 2 * b)


@pl.program
class Forms:
    @pl.function(type=pl.FunctionType.Inline)
    def scaled(self, t, factor):
        return pl.mul(t, factor)

    @pl.function  # Opaque: called from the control plane with tile work only, it is a kernel
    def relu_scaled(self, a: pl.Tensor[[ROWS, 64], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]):
        t = pl.load(a, [0, 0], [ROWS, 64])
        pl.store(pl.relu(self.scaled(t, 3.0)), [0, 0], out)
        return out

    @pl.function  # Opaque, called by no one, dispatching: the entry, on the control plane
    def entry(self, a: pl.Tensor[[ROWS, 64], pl.FP32], out: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]):
        return self.relu_scaled(a, out)


def test_opaque_functions_take_their_plane_from_their_use_and_inline_ones_leave_none():
    kinds = {fn.name: fn.kind for fn in _functions(Forms)}
    assert kinds == {"relu_scaled": FunctionKind.InCore, "entry": FunctionKind.Orchestration}
    assert Forms.entry == "entry"
    a, out = torch.randn(64, 64), torch.zeros(64, 64)
    run(Forms, a, out)
    assert torch.allclose(out, torch.relu(a * 3.0))


# A standalone @pl.function called by its bare name joins the program that calls it.
@pl.function(type=pl.FunctionType.InCore)
def negate(a: T, out: pl.Out[T]):
    pl.store(pl.neg(pl.load(a, [0, 0], [64, 64])), [0, 0], out)
    return out


@pl.program
class UsesStandalone:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: T, out: pl.Out[T]):
        return negate(a, out)


def test_a_standalone_function_joins_the_program_calling_it():
    assert {fn.name for fn in _functions(UsesStandalone)} == {"main", "negate"}
    a, out = torch.randn(64, 64), torch.zeros(64, 64)
    run(UsesStandalone, a, out)
    assert torch.equal(out, -a)


SHAPES = (pl.Tensor[[128, 256], pl.FP16], pl.Tensor[[256, 128], pl.FP16], pl.Tensor[[128, 128], pl.FP32])
A, B, C = SHAPES


@pl.program
class HandMixed:
    """The seed's a @ b + bias written by hand as the halves the compiler makes, with explicit pipes."""

    HALF = 64  # rows per vector lane, read as self.HALF

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: A, b: B, bias: C, out: pl.Out[C]):
        pl.aic_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)
        a_left = pl.move(pl.load(a, [0, 0], [128, 256], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        b_mat = pl.load(b, [0, 0], [256, 128], target_memory=pl.Mem.Mat)
        b_right = pl.move(b_mat, target_memory=pl.Mem.Right)
        acc: pl.Tile[[128, 128], pl.FP32] = pl.matmul(a_left, b_right, out_dtype=pl.FP32)  # an Acc tile
        pl.tpush_to_aiv(acc, split=pl.SplitMode.UP_DOWN)

    @pl.function(type=pl.FunctionType.AIV)
    def vector(self, a: A, b: B, bias: C, out: pl.Out[C]):
        pl.aiv_initialize_pipe(dir_mask=1, slot_size=65536, slot_num=2)
        lane = pl.get_subblock_idx()
        bias_half = pl.load(bias, [lane * self.HALF, 0], [self.HALF, 128])  # loads while the cube works
        half = pl.tpop_from_aic(shape=[64, 128], dtype=pl.FP32, split=pl.SplitMode.UP_DOWN)
        total = pl.add(half, bias_half)
        pl.tfree_to_aic(half)
        pl.store(total, [lane * self.HALF, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def mixed(self, a: A, b: B, bias: C, out: pl.Out[C]):
        pl.func_attr({"split": pl.SplitMode.UP_DOWN})
        self.cube(a, b, bias, out)
        self.vector(a, b, bias, out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: A, b: B, bias: C, out: pl.Out[C]):
        self.mixed(a, b, bias, out)
        return out


@pl.jit
def compiled_mixed(a: A, b: B, bias: C, out: pl.Out[C]):
    with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], name_hint="mixed"):
        out[:] = pl.add(pl.matmul(a, b, out_dtype=pl.FP32), bias)
    return out


def _seed_inputs():
    torch.manual_seed(0)
    a = torch.randn(128, 256, dtype=torch.float16)
    b = torch.randn(256, 128, dtype=torch.float16)
    return a, b, torch.randn(128, 128), torch.zeros(128, 128)


def test_hand_written_aic_aiv_group_with_explicit_pipes_runs_like_the_compilers_own():
    a, b, bias, out = _seed_inputs()
    run(HandMixed, a, b, bias, out)
    assert torch.allclose(out, a.float() @ b.float() + bias, rtol=1e-2, atol=1e-2)
    hand = compile_program(HandMixed, RunConfig())
    hand.run(a, b, bias, out.zero_())
    mine = hand.last_report
    compiled_mixed(a, b, bias, out2 := torch.zeros(128, 128))
    theirs = compiled_mixed.last_report
    assert torch.equal(out, out2)
    assert mine.total_cycles == theirs.total_cycles  # the same halves, the same modeled time


def test_func_attr_sets_attributes_and_a_bare_name_means_a_parameter():
    text = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        pl.func_attr({"tiles": [64, 64], "source": a, "mode": pl.SplitMode.NONE})
        pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
        return out
"""
    fn = pl.parse(text).function("k")
    assert fn.attrs == {"tiles": (64, 64), "source": ParamRef("a"), "mode": pl.SplitMode.NONE}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('pl.func_attr({"k": 1, "k": 2})', "pl.func_attr declares 'k' twice"),
        ('pl.func_attr({"k": nothing})', "'nothing' is not a parameter"),
        ('x = 1\n        pl.func_attr({"k": 1})', "must be the first statement"),
        ("pl.func_attr(1)", "takes one dict literal"),
    ],
)
def test_func_attr_rules(body, message):
    text = f"""
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        {body}
        return out
"""
    with pytest.raises(ParseError) as info:
        pl.parse(text)
    assert message in info.value.message
    assert info.value.hint
    assert "^" in str(info.value)  # the offending line with a caret


def test_the_decorators_attrs_still_work_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="pl.func_attr"):

        @pl.program
        class Old:
            @pl.function(type=pl.FunctionType.InCore, attrs={"legacy": True})
            def k(self, a: T, out: pl.Out[T]):
                pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
                return out

    assert Old.function("k").attrs == {"legacy": True}


def test_names_bound_in_the_class_are_seen_by_annotations_and_bodies():
    text = """
import pypto.language as pl

@pl.program
class Sized:
    M = 32
    N = 64
    DT = pl.FP32

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[M, N], DT], out: pl.Out[pl.Tensor[[M, N], DT]]):
        pl.store(pl.exp(pl.load(a, [0, 0], [self.M, N])), [0, 0], out)  # self.M: the class's M
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, N], DT], out: pl.Out[pl.Tensor[[M, N], DT]]):
        return self.k(a, out)
"""
    program = pl.parse(text)
    a, out = torch.randn(32, 64), torch.zeros(32, 64)
    run(program, a, out)
    assert torch.allclose(out, torch.exp(a))


@pytest.mark.parametrize(
    ("source", "message", "hint"),
    [
        ("self.missing(a, out)", "has no attribute 'missing'", "spelling"),
        ("self.main(a, out)", "call each other in a cycle", "loop"),
    ],
)
def test_bad_calls_between_functions_are_errors_at_the_call(source, message, hint):
    text = f"""
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]):
        {source}
        return out
"""
    with pytest.raises(ParseError) as info:
        pl.parse(text)
    assert message in info.value.message and hint in (info.value.hint or "")


def test_a_kernel_cannot_call_another_kernel():
    with pytest.raises(ParseError, match="called from the control plane"):

        @pl.program
        class Nested:
            @pl.function(type=pl.FunctionType.InCore)
            def inner(self, a: T, out: pl.Out[T]):
                pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
                return out

            @pl.function(type=pl.FunctionType.InCore)
            def outer(self, a: T, out: pl.Out[T]):
                return self.inner(a, out)


def test_a_plain_method_in_a_program_class_is_an_error():
    with pytest.raises(ParseError, match=r"is not a @pl\.function") as info:

        @pl.program
        class Plain:
            def helper(self):
                return 1

    assert "decorate it with @pl.function" in info.value.hint


def test_parameters_need_a_shape_and_dtype():
    with pytest.raises(ParseError, match="fixes no shape and dtype"):

        @pl.program
        class Bare:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor, out: pl.Out[pl.Tensor]):
                return out


def test_the_program_prints_as_python_and_parses_back_equal():
    for program in (AddTwice, Forms, UsesStandalone, HandMixed):
        text = program.as_python()
        assert text == str(program)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            again = pl.parse(text)
        assert structural_diff(program, again) is None


def _functions(program):
    return list(program.functions.values())


def test_bad_decorator_arguments_are_errors_at_the_users_line():
    with pytest.raises(ParseError) as info:

        @pl.function(type="InCore")
        def k(a: T):
            pass

    assert "takes a pl.FunctionType" in info.value.message and "pl.FunctionType.InCore" in info.value.hint
    assert info.value.span.file == __file__
    with pytest.raises(ParseError, match="has no option 'strict'"):
        pl.function(type=pl.FunctionType.InCore, strict=True)
