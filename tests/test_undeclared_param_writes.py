"""A tensor parameter a kernel writes without declaring it pl.Out / pl.InOut: a CompileWarning at
the parameter (its line, a caret, the fix), once per parameter per compile, whatever the route of
the write; declared parameters and read-only ones stay quiet."""

from __future__ import annotations

import warnings

import pytest
import torch

import pypto.language as pl
from pypto.ir.errors import CompileWarning

T = pl.Tensor[[64, 64], pl.FP32]
ROWS = pl.Tensor[[1, 8], pl.INT32]


def _undeclared(record: list[warnings.WarningMessage]) -> list[CompileWarning]:
    return [
        w.message
        for w in record
        if isinstance(w.message, CompileWarning) and "is not declared pl.Out or pl.InOut" in str(w.message)
    ]


def _compile_warnings(kernel, *args) -> list[CompileWarning]:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        kernel.compile(*args)
    return _undeclared(record)


@pl.jit
def by_setitem(a: T, out: T):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.exp(a)
    return out


@pl.jit
def by_store(a: T, out: T):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], out)
    return out


@pl.jit
def by_assemble(a: T, out: T):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.assemble(out, pl.add(a, 1.0), [0, 0])
    return out


@pl.jit
def by_element_write(a: T, out: T):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.write(out, [0, 5], pl.read(a, [0, 5]))
    return out


@pl.jit
def by_scatter(a: T, idx: pl.Tensor[[4], pl.INT32], out: T):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.scatter_update(out, -2, idx, pl.slice(a, [4, 64], [0, 0]))
    return out


@pl.jit
def by_view(a: T, out: T):
    with pl.at(level=pl.Level.CORE_GROUP):
        top = pl.slice(out, [32, 64], [0, 0])
        top[:] = pl.slice(a, [32, 64], [0, 0])
    return out


@pl.jit
def by_view_in_orchestration(a: T, out: T):
    top = pl.slice(out, [32, 64], [0, 0])
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(a, [0, 0], [32, 64]), [0, 0], top)
    return out


@pl.jit.incore
def copy_into(x: T, y: pl.Out[T]):
    pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], y)
    return y


@pl.jit
def by_call_to_an_out_param(a: T, out: T):
    copy_into(a, out)
    return out


@pl.jit
def by_loop_carried(a: T, out: T):
    with pl.at(level=pl.Level.CORE_GROUP):
        for r, (acc,) in pl.range(0, 64, 16, init_values=(out,)):
            acc = pl.store(pl.load(a, [r, 0], [16, 64]), [r, 0], acc)
            acc = pl.yield_(acc)
    return out


ROUTES = [
    by_setitem,
    by_store,
    by_assemble,
    by_element_write,
    by_view,
    by_view_in_orchestration,
    by_call_to_an_out_param,
    by_loop_carried,
]


@pytest.mark.parametrize("kernel", ROUTES, ids=lambda k: k.__name__)
def test_a_write_into_a_plain_tensor_parameter_warns_at_the_parameter(kernel):
    (warning,) = _compile_warnings(kernel, torch.randn(64, 64), torch.zeros(64, 64))
    text = str(warning)
    assert text.startswith(f"tensor parameter 'out' of {kernel.__name__}() is written (at line ")
    assert warning.span is not None and warning.span.file == __file__
    assert "out: T" in text and "^" in text  # the signature's line, the caret under the parameter
    assert "hint: declare it pl.Out[...] or pl.InOut[...]" in text


def test_a_scatter_into_a_plain_tensor_parameter_warns():
    idx = torch.tensor([3, 0, 9, 12], dtype=torch.int32)
    (warning,) = _compile_warnings(by_scatter, torch.randn(64, 64), idx, torch.zeros(64, 64))
    assert "'out' of by_scatter()" in str(warning)


@pl.jit.incore
def writes_its_input(x: T, y: T):
    pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], y)  # writes y


@pl.jit
def passes_to_a_function_that_writes(a: T, out: T):
    writes_its_input(a, out)
    return out


def test_an_incore_function_that_writes_its_plain_parameter_warns_there_and_at_the_caller():
    found = _compile_warnings(passes_to_a_function_that_writes, torch.randn(64, 64), torch.zeros(64, 64))
    assert sorted(str(w).splitlines()[0] for w in found) == [
        "tensor parameter 'out' of passes_to_a_function_that_writes() is written (at line "
        f"{_line('writes_its_input(a, out)')}) but is not declared pl.Out or pl.InOut",
        f"tensor parameter 'y' of writes_its_input() is written (at line {_line('pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], y)  # writes y')}) "
        "but is not declared pl.Out or pl.InOut",
    ]


def _line(snippet: str) -> int:
    with open(__file__) as source:
        return next(i for i, line in enumerate(source, 1) if line.strip() == snippet)


@pl.program
class WritesInProgramForm:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, x: T, y: T):
        pl.store(pl.load(x, [0, 0], [64, 64]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: T, y: pl.Out[T]):
        self.kernel(x, y)
        return y


def test_the_program_form_warns_at_the_function_that_writes():
    from pypto import ir

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        ir.compile(WritesInProgramForm)
    (warning,) = _undeclared(record)
    assert str(warning).startswith("tensor parameter 'y' of kernel() is written")


@pl.jit
def declared(a: T, b: pl.InOut[T], out: pl.Out[T]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(a, b)
        b[:] = pl.exp(a)
    copy_into(a, out)
    return out


def test_declared_and_read_only_parameters_do_not_warn():
    assert _compile_warnings(declared, torch.randn(64, 64), torch.randn(64, 64), torch.zeros(64, 64)) == []


def test_the_warning_comes_once_per_compile_not_per_call_of_a_cached_kernel():
    @pl.jit
    def cached(a: T, out: T):
        with pl.at(level=pl.Level.CORE_GROUP):
            out[:] = pl.exp(a)
        return out

    a, out = torch.randn(64, 64), torch.zeros(64, 64)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            cached(a, out)
    assert len(_undeclared(record)) == 1
    torch.testing.assert_close(out, torch.exp(a))  # the simulator still writes it


def test_the_warning_obeys_pythons_warning_filters():
    a, out = torch.randn(64, 64), torch.zeros(64, 64)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message="tensor parameter 'out'", category=CompileWarning)
        by_store.compile(a, out)
    assert _undeclared(record) == []
    by_store.cache_clear()  # compile again: a cached kernel does not warn twice
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        with pytest.raises(CompileWarning, match="tensor parameter 'out' of by_store"):
            by_store.compile(a, out)
