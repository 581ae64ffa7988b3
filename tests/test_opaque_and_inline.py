"""``@pl.inline`` / ``@pl.jit.inline`` splices and ``@pl.jit.opaque`` control-plane functions, run
on a2a3sim against torch: outlining inside an opaque function, task edges across its call, one
function per specialization, printing, the verifier, and the errors a user gets."""

import re
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto.ir import (
    UNIT,
    Eval,
    Function,
    FunctionKind,
    ParseError,
    Program,
    VerificationError,
    make_call,
    print_ir,
    verify_program,
)
from pypto.ir.ops import op
from pypto.runtime.reports.progress import count_tasks

R, C = 16, 64
T = pl.Tensor[[R, C], pl.FP32]
T_TALL = pl.Tensor[[4 * R, C], pl.FP32]


def functions(program: Program) -> list[Function]:
    """Every function of ``program`` (the one place that knows how a Program holds them)."""
    return list(program.functions.values())


def function_names(program: Program) -> list[str]:
    return [fn.name for fn in functions(program)]


def calls_of(fn: Function) -> list[str]:
    return [s.value.attrs["callee"] for s in fn.body if isinstance(s, Eval) and s.value.op == op.call]


def edges(report):
    return {(e.src, e.dst): e.tensor for e in report.edges}


def kernels_by_task(report):
    return {t.task_id: t.kernel for t in report.tasks}


def randn(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))


# ---------------------------------------------------------------- helpers used below


@pl.jit.incore
def add_k(x: pl.Tensor, y: pl.Tensor, out: pl.Out[pl.Tensor]):
    rows, cols = x.shape
    pl.store(pl.add(pl.load(x, [0, 0], [rows, cols]), pl.load(y, [0, 0], [rows, cols])), [0, 0], out)
    return out


@pl.inline
def doubled(t):
    return pl.add(t, t)


@pl.jit.inline
def tripled(t):
    return pl.add(pl.add(t, t), t)


@pl.jit.opaque
def exp_plus_x(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    """A scope, then a kernel call on what the scope made: out = 2 * exp(x) + x."""
    rows, cols = x.shape
    tmp = pl.create_tensor([rows, cols], dtype=x.dtype)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="twice_exp"):
        tmp[:] = doubled(pl.exp(x))
    add_k(tmp, x, out)
    return out


def exp_plus_x_ref(x):
    return 2 * torch.exp(x) + x


# ---------------------------------------------------------------- inline


def test_pl_inline_is_jit_inline_spliced_into_the_scope_leaving_no_function():
    @pl.jit
    def spliced(a: T, out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.add(doubled(a), tripled(a))
        return out

    a, out = randn(R, C), torch.zeros(R, C)
    spliced(a, out)
    torch.testing.assert_close(out, 5 * a)
    assert function_names(spliced.parse(a, out)) == ["spliced"]
    assert pl.inline(lambda t: t).kind is tripled.kind


# ---------------------------------------------------------------- opaque: running


def test_an_opaque_function_with_a_scope_and_a_kernel_call_runs_twice_as_one_function():
    @pl.jit
    def chained(a: T, b: pl.Out[T], c: pl.Out[T]):
        exp_plus_x(a, b)
        c = exp_plus_x(b, c)
        return c

    a, b, c = randn(R, C), torch.zeros(R, C), torch.zeros(R, C)
    assert chained(a, b, c) is c
    torch.testing.assert_close(b, exp_plus_x_ref(a))
    torch.testing.assert_close(c, exp_plus_x_ref(exp_plus_x_ref(a)), rtol=1e-4, atol=1e-3)

    parsed = chained.parse(a, b, c)
    assert function_names(parsed) == ["chained", "add_k", "exp_plus_x"]
    assert parsed.function("exp_plus_x").kind is FunctionKind.Opaque
    assert calls_of(parsed.function("chained")) == ["exp_plus_x", "exp_plus_x"]
    lowered = chained.lower(a, b, c)
    assert lowered.function("exp_plus_x").kind is FunctionKind.Orchestration
    assert calls_of(lowered.function("exp_plus_x")) == ["twice_exp", "add_k"]
    # Its tasks order against each other through the tensors, across the two calls: the second
    # call's scope reads b (its x), which the first call's add_k wrote (as its out).
    report = chained.last_report
    assert kernels_by_task(report) == {1: "twice_exp", 2: "add_k", 3: "twice_exp", 4: "add_k"}
    assert edges(report) == {(1, 2): "tmp", (2, 3): "x", (3, 4): "tmp"}
    assert count_tasks(lowered) == 4


@pl.jit.opaque
def row_blocks(x: pl.Tensor, scale: pl.FP32, out: pl.Out[pl.Tensor]):
    """Orchestration loops in an opaque function: a pl.parallel loop of scopes over row blocks,
    then a pl.range loop that rescales the whole output twice."""
    rows = x.shape[0]
    for i in pl.parallel(rows // R):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="block"):
            out[i * R : i * R + R, :] = pl.mul(pl.exp(x[i * R : i * R + R, :]), scale)
    for _ in pl.range(2):
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="rescale"):
            out[:] = pl.mul(out, scale)
    return out


def test_an_opaque_function_runs_parallel_and_sequential_loops_with_a_scalar_argument():
    @pl.jit
    def model(x: T_TALL, scale: pl.FP32, out: pl.Out[T_TALL]):
        row_blocks(x, scale, out)
        return out

    x, out = randn(4 * R, C), torch.zeros(4 * R, C)
    model(x, 0.5, out)
    torch.testing.assert_close(out, torch.exp(x) * 0.125)
    report = model.last_report
    blocks = [t for t, k in kernels_by_task(report).items() if k == "block"]
    assert len(blocks) == 4
    assert not any((a, b) in edges(report) for a in blocks for b in blocks)  # iterations: no edges
    # The first rescale waits for every parallel block, the second for the first.
    assert {src for src, dst in edges(report) if dst == 5} == set(blocks)
    assert edges(report)[(5, 6)] == "out"


@pl.jit.opaque
def one_block(x: pl.Tensor, row: pl.Scalar[pl.INDEX], out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="one_block"):
        out[row : row + R, :] = pl.neg(x[row : row + R, :])
    return out


def test_a_run_time_scalar_argument_reaches_the_opaque_function_from_a_loop_of_the_entry():
    @pl.jit
    def per_block(x: T_TALL, out: pl.Out[T_TALL]):
        for i in pl.range(4):
            one_block(x, i * R, out)
        return out

    x, out = randn(4 * R, C), torch.zeros(4 * R, C)
    per_block(x, out)
    torch.testing.assert_close(out, -x)
    program = per_block.lower(x, out)
    assert function_names(program).count("one_block") == 1
    assert len(per_block.last_report.tasks) == 4


def test_tasks_launched_in_an_opaque_function_order_against_the_entrys_as_if_inlined():
    @pl.jit
    def around(x: T, out: pl.Out[T]):
        before = pl.create_tensor([R, C], pl.FP32)
        middle = pl.create_tensor([R, C], pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="before"):
            before[:] = pl.add(x, 1.0)
        exp_plus_x(before, middle)  # reads the entry's task output, writes one the entry reads
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="after"):
            out[:] = pl.neg(middle)
        return out

    x, out = randn(R, C), torch.zeros(R, C)
    around(x, out)
    torch.testing.assert_close(out, -exp_plus_x_ref(x + 1))
    report = around.last_report
    assert kernels_by_task(report) == {1: "before", 2: "twice_exp", 3: "add_k", 4: "after"}
    # add_k reads `before` too, but twice_exp already waits for task 1: the nearest edge is kept.
    # An edge names the tensor as the launching call does: `before` is x inside exp_plus_x.
    assert edges(report) == {(1, 2): "x", (2, 3): "tmp", (3, 4): "middle"}


@pl.jit.opaque
def outer_block(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    rows, cols = x.shape
    mid = pl.create_tensor([rows, cols], dtype=x.dtype)
    exp_plus_x(x, mid)
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="halve"):
        out[:] = pl.mul(mid, 0.5)
    return out


def test_an_opaque_function_calls_another():
    @pl.jit
    def nested(x: T, out: pl.Out[T]):
        outer_block(x, out)
        return out

    x, out = randn(R, C), torch.zeros(R, C)
    nested(x, out)
    torch.testing.assert_close(out, exp_plus_x_ref(x) * 0.5)
    lowered = nested.lower(x, out)
    assert calls_of(lowered.function("outer_block")) == ["exp_plus_x", "halve"]
    assert edges(nested.last_report) == {(1, 2): "tmp", (2, 3): "mid"}


def test_an_opaque_function_called_from_python_runs_as_its_own_entry():
    x, out = randn(R, C), torch.zeros(R, C)
    exp_plus_x(x, out)
    torch.testing.assert_close(out, exp_plus_x_ref(x))
    assert exp_plus_x.parse(x, out).entry_function.kind is FunctionKind.Orchestration


# ---------------------------------------------------------------- specializations


@pl.jit.opaque
def neg_block(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="neg"):
        out[:] = pl.neg(x)
    return out


def test_a_helper_called_with_another_shape_is_a_second_suffixed_function():
    @pl.jit
    def two_shapes(a: T, b: T_TALL, out_a: pl.Out[T], out_b: pl.Out[T_TALL]):
        neg_block(a, out_a)
        neg_block(b, out_b)
        neg_block(a, out_a)
        return out_a, out_b

    a, b = randn(R, C), randn(4 * R, C)
    out_a, out_b = torch.zeros(R, C), torch.zeros(4 * R, C)
    two_shapes(a, b, out_a, out_b)
    torch.testing.assert_close(out_a, -a)
    torch.testing.assert_close(out_b, -b)
    program = two_shapes.lower(a, b, out_a, out_b)
    assert calls_of(program.entry_function) == ["neg_block", "neg_block_1", "neg_block"]
    assert program.function("neg_block_1").params[0].var.type.shape == (4 * R, C)
    assert [n for n in function_names(program) if n.startswith("neg_block")] == ["neg_block", "neg_block_1"]


# ---------------------------------------------------------------- printing


def test_the_printed_program_shows_the_opaque_function_and_its_calls():
    @pl.jit
    def printed(a: T, b: pl.Out[T]):
        neg_block(a, b)
        return b

    text = print_ir(printed.parse())
    body = textwrap.dedent("\n".join(text.splitlines()[3:])) + "\n"
    assert body == textwrap.dedent(
        """\
        @pl.function(type=pl.FunctionType.Orchestration)
        def printed(self, a: pl.Tensor[[16, 64], pl.FP32], b: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
            self.neg_block(a, b)
            return b

        @pl.function(type=pl.FunctionType.Opaque)
        def neg_block(self, x: pl.Tensor[[16, 64], pl.FP32], out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint='neg'):
                neg: pl.Tensor[[16, 64], pl.FP32] = pl.tensor.neg(x)
                pl.tensor.assemble(out, neg, [0, 0])
            return out
        """
    )
    lowered = print_ir(printed.lower())
    entry_at, block_at, kernel_at = (
        lowered.index(f"def {name}(self") for name in ("printed", "neg_block", "neg")
    )
    assert entry_at < block_at < kernel_at  # the entry, the control functions, then the kernels
    assert "self.neg_block(a, b)\n" in lowered  # a control call is no task: no access comment
    assert "self.neg(x, out, access=['In', 'Out'])" in lowered


# ---------------------------------------------------------------- errors


def raised(kernel, *args):
    with pytest.raises(ParseError) as info:
        kernel.parse(*args)
    return info.value


def line_of(fn, text):
    """The line number of ``text`` in ``fn``'s source file."""
    lines = Path(fn.__code__.co_filename).read_text().splitlines()
    start = fn.__code__.co_firstlineno
    return next(n for n, line in enumerate(lines, 1) if n >= start and text in line)


def test_calling_an_opaque_function_inside_a_scope_is_an_error_at_the_call_with_a_hint():
    @pl.jit
    def in_scope(a: T, out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP):
            neg_block(a, out)
        return out

    err = raised(in_scope, randn(R, C), torch.zeros(R, C))
    assert err.message == (
        "neg_block() is an @pl.jit.opaque function: it runs on the control plane and cannot be called "
        "inside a `with pl.at(...)` scope (its body runs on a core group)"
    )
    assert err.span.line == line_of(in_scope.func, "neg_block(a, out)")
    assert "outside `with pl.at(...)`" in err.hint and "@pl.jit.inline" in err.hint
    assert "^" in str(err)


def test_calling_an_opaque_function_from_an_incore_kernel_is_an_error():
    @pl.jit.incore
    def kernel(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        neg_block(x, out)
        return out

    @pl.jit
    def caller(a: T, out: pl.Out[T]):
        kernel(a, out)
        return out

    err = raised(caller, randn(R, C), torch.zeros(R, C))
    assert "cannot be called from an @pl.jit.incore kernel" in err.message
    assert err.span.line == line_of(kernel.func, "neg_block(x, out)")
    assert err.hint


def test_calling_an_opaque_function_inside_a_manual_scope_is_an_error():
    @pl.jit
    def manual(a: T, out: pl.Out[T]):
        with pl.manual_scope():
            neg_block(a, out)
        return out

    err = raised(manual, randn(R, C), torch.zeros(R, C))
    assert "cannot be called inside pl.manual_scope()" in err.message
    assert err.hint == "open pl.manual_scope() inside neg_block() around the scopes it should apply to"


def test_an_entry_calling_another_entry_keeps_its_error():
    @pl.jit
    def other(a: T, out: pl.Out[T]):
        return out

    @pl.jit
    def caller(a: T, out: pl.Out[T]):
        other(a, out)
        return out

    err = raised(caller)
    assert err.message == "other() is a @pl.jit entry and cannot be called from a kernel"
    assert err.span.line == line_of(caller.func, "other(a, out)")


@pl.jit.opaque
def forever(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    forever(x, out)
    return out


@pl.jit.opaque
def ping(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    pong(x, out)
    return out


@pl.jit.opaque
def pong(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    ping(x, out)
    return out


def test_recursion_is_an_error_not_a_hang():
    @pl.jit
    def direct(a: T, out: pl.Out[T]):
        forever(a, out)
        return out

    @pl.jit
    def mutual(a: T, out: pl.Out[T]):
        ping(a, out)
        return out

    err = raised(direct)
    assert (
        err.message
        == "@pl.jit.opaque forever() calls itself (forever -> forever); a program has no recursion"
    )
    assert err.span.line == line_of(forever.func, "forever(x, out)")
    assert "loop" in err.hint
    err = raised(mutual)
    assert "ping -> pong -> ping" in err.message
    assert err.span.line == line_of(pong.func, "ping(x, out)")
    # Called from Python, the opaque function is the entry: calling itself is caught the same way.
    assert "forever -> forever" in raised(forever, randn(R, C), torch.zeros(R, C)).message


def test_an_opaque_function_must_return_its_outputs():
    @pl.jit.opaque
    def returns_input(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        return x

    @pl.jit
    def caller(a: T, out: pl.Out[T]):
        returns_input(a, out)
        return out

    err = raised(caller)
    assert err.message == (
        "an @pl.jit.opaque function returns the pl.Out / pl.InOut tensors it writes; 'x' is not one"
    )


# ---------------------------------------------------------------- the verifier


def test_the_verifier_rejects_a_call_cycle_and_a_control_function_called_from_a_kernel():
    @pl.jit
    def entry(a: T, out: pl.Out[T]):
        neg_block(a, out)
        return out

    program = entry.lower()
    verify_program(program)
    block = program.function("neg_block")
    again = make_call(op.call, [p.var for p in block.params], {"callee": "neg_block"}, block.span, type=UNIT)
    looping = program.replace_function(
        Function(block.name, block.params, (*block.body[:-1], Eval(again), block.body[-1]), block.kind)
    )
    with pytest.raises(VerificationError, match=re.escape("neg_block -> neg_block: the functions call")):
        verify_program(looping)

    kernel = program.function("neg")
    control = Function("control", kernel.params, (), FunctionKind.Orchestration)
    launch = make_call(op.call, [p.var for p in kernel.params], {"callee": "control"}, kernel.span, type=UNIT)
    launching = program.replace_function(replace(kernel, body=(Eval(launch), *kernel.body)))
    calls_control = replace(launching, functions=(*functions(launching), control))
    with pytest.raises(VerificationError, match="control is a control function, called from AIV kernel neg"):
        verify_program(calls_control)


@pl.jit.opaque
def mixed_block(x: pl.Tensor, w: pl.Tensor, out: pl.Out[pl.Tensor]):
    """A mixed (cube + vector) scope: each specialization of the function outlines its own copy."""
    with pl.at(level=pl.Level.CORE_GROUP, name_hint="mm_relu"):
        out[:] = pl.relu(pl.matmul(x, w, out_dtype=pl.FP32))
    return out


def test_two_specializations_of_a_mixed_scope_get_their_own_aic_and_aiv_kernels():
    @pl.jit
    def two_sizes(
        x: T,
        x2: pl.Tensor[[8, C], pl.FP32],
        w: pl.Tensor[[C, C], pl.FP32],
        out: pl.Out[T],
        out2: pl.Out[pl.Tensor[[8, C], pl.FP32]],
    ):
        mixed_block(x, w, out)
        mixed_block(x2, w, out2)
        return out, out2

    x, x2, w = randn(R, C) / 4, randn(8, C) / 4, randn(C, C) / 8
    out, out2 = torch.zeros(R, C), torch.zeros(8, C)
    two_sizes(x, x2, w, out, out2)
    torch.testing.assert_close(out, torch.relu(x @ w), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(out2, torch.relu(x2 @ w), rtol=1e-3, atol=1e-3)
    names = function_names(two_sizes.lower())
    assert len(names) == len(set(names))
    assert {"mm_relu_aic", "mm_relu_aiv", "mm_relu_1_aic", "mm_relu_1_aiv"} <= set(names)
