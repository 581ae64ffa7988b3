"""Runtime scopes: ``with pl.scope():`` (AUTO: dependency tracking on) under
``@pl.jit(auto_scope=False)`` / ``@pl.function(auto_scope=False)``, and ``pl.manual_scope()`` =
``pl.scope(mode=pl.ScopeMode.MANUAL)`` (tracking off, both ways: the tasks inside take no inferred
edge, and later tasks take none from them). The manual's placement rules, each an error at its line."""

import pytest
import torch

import pypto.language as pl
from pypto.ir import ParseError, RaceError, structural_diff
from pypto.language.errors import JitOptionError
from pypto.runtime import RunConfig, compile_program

N, TR, TC = 4, 32, 64
ROWS = N * TR
T = pl.Tensor[[ROWS, TC], pl.FP32]
SIM = RunConfig(platform="a2a3sim")


def line_of(text: str) -> int:
    with open(__file__) as f:
        return next(i for i, line in enumerate(f, 1) if text in line)


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def edges(report):
    return {(e.src, e.dst): e.tensor for e in report.edges}


@pl.jit(auto_scope=False)
def placed(a: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.scope():  # tracking on: the scopes inside order through their tensors
        for i in pl.range(N):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="phase1"):
                pl.store(pl.mul(pl.load(a, [i * TR, 0], [TR, TC]), 2.0), [i * TR, 0], out)
        with pl.scope():  # noqa: SIM117 - one context per with in pl
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="phase2"):
                for i in pl.range(N):
                    pl.store(pl.add(pl.load(out, [i * TR, 0], [TR, TC]), 1.0), [i * TR, 0], out)
    return out


def test_auto_scopes_placed_by_hand_keep_tracking_on():
    a, out = rand(ROWS, TC), torch.zeros(ROWS, TC)
    placed(a, out, config=SIM)
    torch.testing.assert_close(out, a * 2 + 1)
    # phase 1's tasks chain through out (pl.range), and phase 2 waits for the last of them
    assert edges(placed.last_report) == {(1, 2): "out", (2, 3): "out", (3, 4): "out", (4, 5): "out"}
    assert placed.lower(a, out).entry_function.attrs["auto_scope"] is False


@pl.program
class ManualThenReader:
    @pl.function(type=pl.FunctionType.InCore)
    def band(self, a: T, row: pl.Scalar[pl.INDEX], out: pl.Out[T]) -> T:
        return pl.store(pl.exp(pl.load(a, [row, 0], [TR, TC])), [row, 0], out)

    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, x: T, out: pl.Out[T]) -> T:
        return pl.store(pl.load(x, [0, 0], [ROWS, TC]), [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)
    def main(self, a: T, tmp: pl.Out[T], out: pl.Out[T]) -> T:
        tids = pl.array.create(N, pl.TASK_ID)  # hoisted: the reader after the scope gates on it
        with pl.scope(mode=pl.ScopeMode.MANUAL):
            for i in pl.parallel(N):
                tmp, tid = pl.submit(self.band, a, i * TR, tmp)
                tids[i] = tid
        with pl.scope():
            out, _ = pl.submit(self.copy, tmp, out, deps=[tids])
        return out


def test_a_manual_scope_is_invisible_to_later_tasks_and_deps_orders_them():
    a, tmp, out = rand(ROWS, TC, seed=1), torch.zeros(ROWS, TC), torch.zeros(ROWS, TC)
    compiled = compile_program(ManualThenReader, SIM)
    compiled.run(a, tmp, out)
    torch.testing.assert_close(out, a.exp())
    # the reader of tmp takes no edge through it from the manual scope's writers: only deps=
    assert edges(compiled.last_report) == {(k, N + 1): None for k in range(1, N + 1)}
    text = ManualThenReader.as_python()
    assert "@pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)" in text
    assert structural_diff(pl.parse(text), ManualThenReader) is None


def test_a_task_after_a_manual_scope_that_needs_its_data_is_a_race():
    @pl.jit
    def forgot(a: T, out: pl.Out[T]):
        scratch = pl.create_tensor([ROWS, TC], pl.FP32)
        with pl.manual_scope():  # noqa: SIM117 - one context per with in pl
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="produce"):
                scratch[:] = pl.exp(a)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="consume"):
            out[:] = pl.add(scratch, 1.0)
        return out

    with pytest.raises(RaceError) as info:
        forgot(rand(ROWS, TC), torch.zeros(ROWS, TC), config=SIM)
    assert "tracking of scratch is off for task 1" in info.value.message


# ---------------------------------------------------------------- the rules


def error_of(kernel, error=ParseError):
    with pytest.raises(error) as info:
        kernel.lower(rand(ROWS, TC), torch.zeros(ROWS, TC))
    return info.value


def test_an_auto_scope_needs_auto_scope_false():
    @pl.jit
    def default(a: T, out: pl.Out[T]):
        with pl.scope():  # noqa: SIM117 (the line)
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.exp(a)
        return out

    err = error_of(default)
    assert err.message.startswith("pl.scope() (mode=AUTO) needs auto_scope=False")
    assert "@pl.jit(auto_scope=False)" in err.hint
    assert err.span.line == line_of("with pl.scope():  # noqa: SIM117 (the line)")


def test_an_auto_scope_in_a_manual_scope_is_an_error():
    @pl.jit(auto_scope=False)
    def nested(a: T, out: pl.Out[T]):
        with pl.manual_scope():  # noqa: SIM117 - one context per with in pl
            with pl.scope():  # the inner one
                with pl.at(level=pl.Level.CORE_GROUP):
                    out[:] = pl.exp(a)
        return out

    err = error_of(nested)
    assert err.message.startswith("an AUTO scope (pl.scope()) cannot nest inside a manual scope")
    assert err.span.line == line_of("with pl.scope():  # the inner one")


def test_a_manual_scope_in_a_manual_scope_is_an_error():
    @pl.jit
    def nested(a: T, out: pl.Out[T]):
        with pl.manual_scope():  # noqa: SIM117 - one context per with in pl
            with pl.scope(mode=pl.ScopeMode.MANUAL):  # the inner manual one
                with pl.at(level=pl.Level.CORE_GROUP):
                    out[:] = pl.exp(a)
        return out

    err = error_of(nested)
    assert err.message.startswith("a manual scope cannot nest inside another manual scope")
    assert err.span.line == line_of("with pl.scope(mode=pl.ScopeMode.MANUAL):  # the inner manual one")


def test_a_scope_in_kernel_code_is_an_error():
    @pl.jit(auto_scope=False)
    def inside(a: T, out: pl.Out[T]):
        with pl.at(level=pl.Level.CORE_GROUP):  # noqa: SIM117 - one context per with in pl
            with pl.scope():  # in the kernel
                out[:] = pl.exp(a)
        return out

    err = error_of(inside)
    assert err.message == "pl.scope() is a runtime scope of the orchestration: it cannot stand in kernel code"
    assert err.span.line == line_of("with pl.scope():  # in the kernel")


def test_a_bad_mode_is_an_error():
    @pl.jit(auto_scope=False)
    def bad(a: T, out: pl.Out[T]):
        with pl.scope(mode="manual"):  # noqa: SIM117 - one context per with in pl
            with pl.at(level=pl.Level.CORE_GROUP):
                out[:] = pl.exp(a)
        return out

    err = error_of(bad)
    assert err.message == "pl.scope(mode=...) takes a pl.ScopeMode, got the str 'manual'"


@pytest.mark.parametrize(
    ("decorator", "name"), [(pl.jit.incore, "pl.jit.incore"), (pl.jit.opaque, "pl.jit.opaque")]
)
def test_auto_scope_on_an_outlined_function_is_an_error(decorator, name):
    with pytest.raises(JitOptionError) as info:
        decorator(auto_scope=False)  # the decorator line
    assert info.value.message.startswith(f"@{name} does not take auto_scope=")
    assert "on the @pl.jit entry, or on a @pl.jit.inline helper" in info.value.hint


def test_auto_scope_is_taken_by_the_entry_and_inline_helpers():
    assert pl.jit(auto_scope=False) is not None and pl.jit.inline(auto_scope=True) is not None
    with pytest.raises(JitOptionError) as info:
        pl.jit(auto_scope="no")
    assert info.value.message == "@pl.jit(auto_scope=...) takes True or False, got 'no'"
    with pytest.raises(JitOptionError) as info:
        pl.jit(strict_ssa=True)
    assert info.value.message == "@pl.jit takes only auto_scope=, got strict_ssa="


def test_auto_scope_on_a_kernel_function_is_an_error():
    with pytest.raises(ParseError) as info:

        @pl.function(type=pl.FunctionType.InCore, auto_scope=False)
        def k(a: T, out: pl.Out[T]):
            pass

    assert "auto_scope= is for control-plane functions, not kernels (type=InCore)" in info.value.message
    with pytest.raises(ParseError) as info:

        @pl.function(type=pl.FunctionType.Orchestration, fast=True)
        def orch(a: T, out: pl.Out[T]):
            pass

    assert info.value.message == "pl.function() has no option 'fast'"


@pl.jit.inline(auto_scope=False)
def two_phases(a, out):
    with pl.scope():
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="first"):
            out[:] = pl.exp(a)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="second"):
            out[:] = pl.add(out, 1.0)
    return out


@pl.jit
def uses_inline(a: T, out: pl.Out[T]):
    out = two_phases(a, out)
    return out


def test_an_inline_helper_with_auto_scope_false_places_its_scopes_in_the_caller():
    a, out = rand(ROWS, TC, seed=2), torch.zeros(ROWS, TC)
    uses_inline(a, out, config=SIM)
    torch.testing.assert_close(out, a.exp() + 1)
    assert edges(uses_inline.last_report) == {(1, 2): "out"}
